"""The `onechip` console script: one typer app; each command lives in its own module, loaded on first use
(onechip.cli.commands).

Every OnechipError becomes one line on stderr and its exit code; a file-system error (OSError) one line with
the path and the OS's reason, exit 1; anything else (a bug) one line naming it, exit 1. A stop by signal exits
128 + its number, the shell's convention: Ctrl-C (SIGINT) 130, SIGTERM 143, SIGHUP (a closed terminal) 129; all take
the same path, so what was measured is kept and a bench resumes alike. Never a traceback (unless ONECHIP_DEBUG is set).

A reader that closed the pipe onechip writes to (`onechip plan ... | head -1`) ends the command quietly, exit 141: the
status the shell gives a writer its reader left (128 + SIGPIPE, 13), as `cat`, `git log` or `seq` get it, so a script
under `set -o pipefail` can tell a cut-short output from a whole one (click and rich exited 1, a failure's status).
A stdout closed before onechip started (`>&-`) is a file-system error at the first write ('stdout: Bad file
descriptor'), exit 1, as coreutils say it; a closed stderr takes what is said there nowhere.
SIGPIPE itself stays ignored, Python's default: its default action would kill onechip at a write to any closed socket,
mid-bench or mid-`up`, skipping the finally-blocks that stop engines (the Python docs' note on SIGPIPE).
"""

from __future__ import annotations

import errno
import functools
import json
import os
import signal
import sys
from typing import Any

import click
import typer
import typer.rich_utils
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.table import Column, Table
from rich.text import Text

from onechip import __version__
from onechip.cli.commands import LazyGroup
from onechip.cli.entry import before_it_ran, ignored_at_start
from onechip.cli.render import new_console
from onechip.errors import Interrupted, OnechipError, error_line, exit_codes_line, internal_error_line, os_error_line

app = typer.Typer(
    cls=LazyGroup,
    name="onechip",
    help="Plan, launch, check, benchmark and price a lite agent backend on one accelerator.",
    epilog=exit_codes_line(),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = new_console(stderr=True)
DEBUG_ENV = "ONECHIP_DEBUG"  # set: an unexpected exception (a bug) shows its traceback instead of one line


def _negatives_under_their_flag(panel: Any) -> Any:
    """typer's options panel (rich_utils._print_options_panel) with a --flag/--no-flag pair's negative printed under
    its flag instead of in a column of its own: that column (26 characters for --no-enable-prefix-caching) left plan's
    and up's --help on an 80-column terminal or a pipe no room for the flag names, which rich cut ('--tensor-paralle…',
    '--gpu-memory-uti…'). Only the help's layout changes: each parameter's opts are restored after the panel."""

    @functools.wraps(panel)
    def print_panel(*, params: Any, console: Console, **kwargs: Any) -> Any:
        paired = [(p, p.opts, p.secondary_opts) for p in params if p.secondary_opts and len(p.opts) == 1]
        for param, opts, negatives in paired:
            param.opts, param.secondary_opts = ["\n".join([*opts, *negatives])], []
        try:
            return panel(params=params, console=_NamesWhole(console), **kwargs)
        finally:
            for param, opts, negatives in paired:
                param.opts, param.secondary_opts = opts, negatives

    return print_panel


class _NamesWhole:
    """The console typer's options panel prints on, which lays the panel's table out with every name whole: each
    parameter's names, then its type under them, in one column that never wraps nor cuts, and its help, folded, in
    the rest. Typer's own columns (long names, short names, negatives, type, help) left a 50-column --help
    (COLUMNS=40: render.MIN_WIDTH) a 10-character name column: '--router-p…', '--tensor-p…'."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console, name)

    def print(self, *renderables: Any, **kwargs: Any) -> None:
        for panel in renderables:
            if isinstance(panel, Panel) and isinstance(panel.renderable, Table):
                _names_over_types(panel.renderable, self.console.width)
        self.console.print(*renderables, **kwargs)


def _names_over_types(table: Table, width: int) -> None:
    """Typer's options table ([required,] long, short, negative long, negative short, type, help:
    typer.rich_utils._print_options_panel) as [required,] names over type, help, where its names and types side by
    side would take more than half of `width` (the help keeps the other half); any other table is left as it is."""
    first = len(table.columns) - 6
    if first not in (0, 1):
        return
    names, *rest, types, helps = table.columns[first:]
    for cell in helps._cells:  # noqa: SLF001 (rich keeps a column's cells there; Table has no setter)
        for text in getattr(cell, "renderables", [cell]):
            if isinstance(text, Text):
                text.overflow = "fold"  # a word longer than the column ('Comma-separated.') wraps, never ends in '…'
    if sum(_widest(col) + 2 for col in (names, *rest, types)) <= width // 2:  # each column padded 1 a side
        return
    for row in range(len(names._cells)):  # noqa: SLF001
        parts = [col._cells[row] for col in (names, *rest, types)]  # noqa: SLF001
        said = [part for part in parts if isinstance(part, Text) and part.plain]
        names._cells[row] = Text("\n").join(said)  # noqa: SLF001
    del table.columns[first + 1 : first + 5]
    names.no_wrap = True
    names.min_width = _widest(names)


def _widest(column: Column) -> int:
    """The widest line of a column's text cells."""
    cells = column._cells  # noqa: SLF001
    return max((len(line) for cell in cells if isinstance(cell, Text) for line in cell.plain.split("\n")), default=0)


if hasattr(typer.rich_utils, "_print_options_panel"):  # typer is not pinned: a release may rename it
    typer.rich_utils._print_options_panel = _negatives_under_their_flag(typer.rich_utils._print_options_panel)  # noqa: SLF001


def _version(value: bool) -> None:
    if value:
        typer.echo(f"onechip {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print version."),
) -> None:
    """onechip: plan it, launch it, prove it, price it."""


_stopped_by = [signal.SIGINT]  # the signal that stopped this command: Ctrl-C unless _terminate saw SIGTERM or SIGHUP


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM takes the same path as Ctrl-C: finally-blocks stop engines and keep what was measured; only the
    # exit code says which signal it was
    _stopped_by[0] = signal.Signals(signum)
    raise KeyboardInterrupt


# typer >= 0.2x vendors click (typer._click) and raises its own classes, which `click.ClickException` does
# not catch; older typer raised click's own. Both are usage errors: a bad flag, a missing argument.
_USAGE_ERRORS: tuple[type[Exception], ...] = (click.ClickException, getattr(typer, "TyperException", Exception))


_said = [""]  # the last line _error or _interrupted printed: a --json command's error object (main) carries it


def _error(message: str) -> None:
    """One line on stderr (errors.error_line: a newline or escape sequence in a value it echoes is not one; at most
    MAX_LINE_CHARS), escaped (a '[/x]' in user input is not rich markup) and never hard-wrapped."""
    _said[0] = error_line(message)
    err_console.print(f"[bold red]error:[/] {escape(_said[0])}", highlight=False, soft_wrap=True)


class _Watched:
    """stdout as a command writes it, noting whether anything was written (main's error object for --json)."""

    def __init__(self, stream: Any) -> None:
        self.stream, self.written = stream, False

    def write(self, text: str) -> int:
        self.written = self.written or bool(text)
        return self.stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _ReaderGone(BaseException):
    """The reader of stdout or stderr closed its pipe: a stop, as a signal is, that no `except Exception` takes for an
    error to report and that click and rich do not turn into exit 1 (they catch BrokenPipeError, an OSError)."""

    def __init__(self, fd: int) -> None:
        super().__init__(fd)
        self.fd = fd  # the file descriptor whose reader left


class _Piped:
    """stdout or stderr as a command writes it (`name`): a BrokenPipeError of a write or flush is _ReaderGone; any
    other OSError that names no file names the stream (`> out.txt` on a full disk said 'file-system error: No space
    left on device', no path); a character the stream's encoding cannot spell (PYTHONIOENCODING=ascii: a price
    source's CJK name, simulate's '±') is written as a backslash escape, as Python writes it to stderr
    (sys.stderr's errors='backslashreplace'), where it was an internal error."""

    def __init__(self, stream: Any, name: str) -> None:
        self.stream, self.name = stream, name

    def write(self, text: str) -> int:
        try:
            try:
                return int(self.stream.write(text))
            except UnicodeEncodeError as exc:  # the encoder refused the whole text before anything was buffered
                return int(self.stream.write(text.encode(exc.encoding, "backslashreplace").decode(exc.encoding)))
        except BrokenPipeError:  # of either write: the escaped one meets a reader gone as well (`| head -1`)
            raise _ReaderGone(self.stream.fileno()) from None
        except OSError as exc:
            raise self._named(exc) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise _ReaderGone(self.stream.fileno()) from None
        except OSError as exc:
            raise self._named(exc) from None

    def _named(self, exc: OSError) -> OSError:
        return exc if exc.filename is not None else OSError(exc.errno, exc.strerror or str(exc), self.name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


SIGPIPE_EXIT = 128 + int(signal.SIGPIPE)  # 141: the shell's status of a writer its reader left


class _Closed:
    """stdout closed before onechip started (`onechip plan ... >&-`), where Python leaves sys.stdout None: a write
    of any text raises OSError EBADF for main to say on one line, exit 1, as coreutils do ('write error: Bad file
    descriptor'); a command that writes nothing to stdout is not refused (`true >&-` succeeds)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream  # the /dev/null standing in at the closed descriptor (_standard_stream)

    def write(self, text: str) -> int:
        if text:
            raise OSError(errno.EBADF, f"{os.strerror(errno.EBADF)} (it is closed)", "stdout")
        return 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _standard_stream(stream: Any, fd: int) -> Any:
    """`stream` (sys.stdout, fd 1, or sys.stderr, fd 2), or where it was closed before onechip started (None) os.devnull
    at `fd`: no file onechip opens later then takes that descriptor, for an engine or docker it starts to write into
    (glibc's __libc_check_standard_fds does the same for a set-user-ID program). Closed stdout is _Closed; stderr
    writes nowhere, there being nowhere to say anything, while the exit code still says how the command ended."""
    if stream is not None:
        return stream
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)
    null = open(fd, "w", closefd=False)  # noqa: SIM115 (stands in for the standard stream as long as the process runs)
    return _Closed(null) if fd == 1 else null


def main(argv: list[str] | None = None) -> None:
    """Run the command line `argv` (default sys.argv[1:]). With --json, a command that fails before it printed its
    JSON prints {"error": its line, "exit_code": N} on stdout too, so stdout is JSON on every exit (it was empty: a
    caller parsing it got a decode error, not the reason); one that printed its JSON and then exits non-zero (check's
    10, status's 1) adds nothing. A reader that closed stdout's or stderr's pipe ends it quietly, exit SIGPIPE_EXIT."""
    streams = sys.stdout, sys.stderr
    sys.stdout = _Piped(_standard_stream(sys.stdout, 1), "stdout")
    sys.stderr = _Piped(_standard_stream(sys.stderr, 2), "stderr")
    try:
        _json_or_plain(argv)
    except _ReaderGone as gone:
        # what is still buffered for that pipe goes nowhere: flushed at exit to the closed pipe, Python would print
        # 'Exception ignored ... BrokenPipeError' and exit 120
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, gone.fd)
        os.close(devnull)
        sys.exit(SIGPIPE_EXIT)
    finally:
        sys.stdout, sys.stderr = streams


def _json_or_plain(argv: list[str] | None) -> None:
    """main without its pipe guard."""
    args = sys.argv[1:] if argv is None else argv
    if "--json" not in args:
        _main(args, argv)
        return
    watched = _Watched(sys.stdout)
    sys.stdout = watched
    _said[0] = ""
    try:
        _main(args, argv)
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1 if stop.code else 0
        if code and not watched.written:
            try:
                watched.stream.write(json.dumps({"error": _said[0] or f"exit {code}", "exit_code": code}) + "\n")
                watched.stream.flush()
            except OSError:  # a closed stdout (_Closed): the error's line on stderr says it
                pass
        raise
    finally:
        sys.stdout = watched.stream


def _usage_error(exc: Exception) -> int:
    """Print a typer/click usage error as one line (or the help, for a bare group); return its exit code."""
    code = int(getattr(exc, "exit_code", 2))
    message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
    if type(exc).__name__ == "NoArgsIsHelpError":  # `onechip` alone: typer has printed the help already
        if message.strip():
            typer.echo(message, err=True)
        return code
    ctx = getattr(exc, "ctx", None)
    hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
    through_set = _through_set(exc, ctx)
    _error(f"No such option: {through_set}" if through_set else " ".join(message.split()) + hint)
    return code


def _through_set(exc: Exception, ctx: Any) -> str | None:
    """For an unknown option that is a vLLM serve flag onechip writes (vllm.flag_table.spec: `up --max-model-len`),
    given to a command that takes such flags through --set, the rest of its line saying so; click's own suggestions
    ('Possible options: --language-model-only, --model') named none of that. None otherwise."""
    # loaded here, not at start: `onechip --version` pays for typer alone (cli.commands), a usage error for the table
    from onechip.vllm import flag_table

    name = getattr(exc, "option_name", None)
    if type(exc).__name__ != "NoSuchOption" or not name or ctx is None or flag_table.spec(name) is None:
        return None
    if not any("--set" in param.opts for param in ctx.command.params):
        return None
    return f"{name} is vLLM's serve flag: give it as --set {name.removeprefix('--')}=VALUE"


def _main(args: list[str], argv: list[str] | None) -> None:
    _stopped_by[0] = signal.SIGINT
    # SIGHUP, a closed terminal: as SIGTERM, never a sudden death mid-`up`; from here a Ctrl-C is a KeyboardInterrupt
    # said below (cli.entry said it on its own while the CLI was imported). Each unless it was ignored when onechip
    # started (a background job's SIGINT, nohup's SIGHUP: entry.ignored_at_start)
    for sig, handler in ((signal.SIGTERM, _terminate), (signal.SIGHUP, _terminate),
                         (signal.SIGINT, signal.default_int_handler)):  # fmt: skip
        if not ignored_at_start(sig):
            signal.signal(sig, handler)
    help_width = typer.rich_utils.MAX_WIDTH
    try:
        command = typer.main.get_command(app)
        # --help is laid out at the width of the rest of onechip's output (render.new_console: COLUMNS=0 or 5 read as
        # unknown or the narrowest), unless typer's own TERMINAL_WIDTH sets it; typer's console took COLUMNS as it came
        typer.rich_utils.MAX_WIDTH = help_width or new_console().width
        rc = command.main(args=argv, prog_name="onechip", standalone_mode=False)
    except OnechipError as exc:
        _error(str(exc))
        sys.exit(_signal_exit_code() if isinstance(exc, Interrupted) else exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort, typer.Abort):
        _interrupted(args)
    except (click.exceptions.Exit, typer.Exit) as exc:
        sys.exit(exc.exit_code)
    except _USAGE_ERRORS as exc:
        sys.exit(_usage_error(exc))
    except OSError as exc:  # a read-only directory, a file where a directory should be, a missing program
        _error(os_error_line(exc))
        sys.exit(1)
    except Exception as exc:  # noqa: BLE001 (a bug: still one line, as over MCP; ONECHIP_DEBUG=1 for the traceback)
        if os.environ.get(DEBUG_ENV):
            raise
        _error(internal_error_line(exc))
        sys.exit(1)
    finally:
        typer.rich_utils.MAX_WIDTH = help_width
    if rc == Interrupted.exit_code:  # typer >= 0.29 turns KeyboardInterrupt into Exit(130) and returns it here
        _interrupted(args)
    sys.exit(rc if isinstance(rc, int) else 0)


def _signal_exit_code() -> int:
    """128 + the number of the signal that stopped the command (SIGINT 130, SIGTERM 143, SIGHUP 129)."""
    return 128 + int(_stopped_by[0])


def leave_interrupted(argv: list[str]) -> None:
    """Say so and exit as _interrupted does, but at once (os._exit, once stderr is flushed), without interpreter
    shutdown: `onechip mcp` over stdio, whose SDK reads stdin in a thread that is no daemon and returns only at EOF, so
    that shutdown waited on it for as long as the client held stdin open (mcp.server.StdioStopped)."""
    try:
        _interrupted(argv)
    except SystemExit as stop:
        sys.stderr.flush()
        os._exit(int(stop.code or 0))


def _interrupted(argv: list[str]) -> None:
    """Say that the command was stopped, and for one that measures that it had measured and written nothing (a Ctrl-C
    once it runs says what it kept: paths.ctrl_c_says_what_is_kept); exit 128 + the signal's number."""
    said = {signal.SIGTERM: "terminated (SIGTERM)", signal.SIGHUP: "hung up (SIGHUP)"}.get(
        _stopped_by[0], "interrupted"
    )
    kept = before_it_ran(argv)
    _said[0] = f"{said}{kept}"
    err_console.print(f"[bold red]{said}[/]{kept}")
    sys.exit(_signal_exit_code())
