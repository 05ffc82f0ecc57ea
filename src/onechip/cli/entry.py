"""The entry of the `onechip` console script and of `python -m onechip`: the CLI (cli.main) imported under a Ctrl-C
handler of its own.

Importing the CLI (typer, rich, pydantic) takes about a second, before cli.main has set up its error handling: a
Ctrl-C there (or a second one, pressed again as the first seemed slow) printed Python's bare KeyboardInterrupt
traceback and the process died by SIGINT (-2 to a parent, not the 130 of every other Ctrl-C). Until cli.main takes
SIGINT back (cli.main._main, just before it runs the command) a Ctrl-C says 'interrupted' on one line, with what the
commands that measure say of a Ctrl-C before they ran, and exits 130 at once: nothing was started that would need
stopping.

A signal ignored when onechip started stays ignored (ignored_at_start): SIGINT in a job a shell without job control
runs in the background (POSIX Shell Command Language, 2.11 'Signals and Error Handling'), SIGHUP under nohup. Python's
own KeyboardInterrupt handler is installed only where SIGINT was not ignored (docs.python.org/3/library/signal.html),
and onechip takes neither back: a Ctrl-C at the terminal or a closed terminal does not stop such a job.

Once cli.main has run the command and said how it ended, a stop signal (SIGINT, SIGHUP, SIGTERM) changes nothing: it
is ignored from then on (finished), and the process exits with the command's own status. Python's shutdown puts SIG_DFL
back for every signal with a Python handler before it tears the modules down (CPython 3.11 pylifecycle.c
Py_FinalizeEx: _PySignal_Fini, then finalize_modules), which took 0.4-0.9 s after `report` printed its last line here:
a Ctrl-C then killed a finished `report` by SIGINT with no line at all (qa66c; SIG_IGN is what shutdown keeps).
"""

from __future__ import annotations

import os
import signal
import sys

# the commands that measure: a Ctrl-C before their own body ran (onechip's imports, their flags) measured and wrote
# nothing, which their line says; from then on each says what it kept (paths.ctrl_c_says_what_is_kept)
MEASURING = frozenset({"bench", "check", "demo"})
NOTHING_YET = " (nothing measured yet; nothing written)"


def before_it_ran(argv: list[str]) -> str:
    """What a Ctrl-C before the command of `argv` (its first word that is no flag) ran leaves, as the end of the line
    'interrupted': NOTHING_YET for a command of MEASURING, '' for any other (it measures nothing)."""
    command = next((arg for arg in argv if not arg.startswith("-")), "")
    return NOTHING_YET if command in MEASURING else ""


def ignored_at_start(sig: signal.Signals) -> bool:
    """True when `sig` is ignored (SIG_IGN) as this process found it: a handler onechip installs replaces only a
    signal it was left to act on (SIGINT, SIGHUP, SIGTERM), never one its parent set to be ignored."""
    return signal.getsignal(sig) is signal.SIG_IGN


def main() -> None:
    """Import the CLI under _stopped_at_start (unless SIGINT is ignored), then run it (cli.main.main on sys.argv)."""
    if not ignored_at_start(signal.SIGINT):
        signal.signal(signal.SIGINT, _stopped_at_start)
    from onechip.cli import main as cli  # noqa: PLC0415 (imported under the handler above: what this module is for)

    try:
        cli.main()
    finally:
        finished()


def finished() -> None:
    """The command's work is done (cli.main has said how it ended, or a command such as `report` has written all its
    files and only prints their paths): a stop signal from here on is ignored (module docstring). A Ctrl-C between
    report's last write and its exit said 'interrupted', exit 130, of a report written whole."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)


def _stopped_at_start(signum: int, frame: object) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C while the first is said
    try:
        os.write(2, f"interrupted{before_it_ran(sys.argv[1:])}\n".encode())
    except OSError:  # a closed stderr: the exit code still says it
        pass
    os._exit(128 + signum)  # nothing to clean up yet; unwinding the imports could be interrupted again
