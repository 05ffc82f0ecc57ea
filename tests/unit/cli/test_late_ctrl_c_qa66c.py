"""A Ctrl-C that lands once a command has finished (qa66c): `onechip report` had written report.md and printed its
path, and the process died by SIGINT with no line at all (a shell's 130, -2 to a parent). Python's interpreter
shutdown puts SIG_DFL back for every signal with a Python handler before it tears the modules down (CPython 3.11
Python/pylifecycle.c Py_FinalizeEx: _PySignal_Fini, then finalize_modules), which took 0.4-0.9 s after report's last
line on this machine (strace: 'rt_sigaction(SIGINT, SIG_DFL)' 0.2 ms after the write, exit_group 0.9 s later). The rule
(cli.entry): once the command's end is said, a stop signal changes nothing; the process exits with its own status."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from onechip.schemas.run import RUN_FILES

ROOT = Path(__file__).resolve().parents[3]

# `python -m onechip ARGV` with an object that, torn down with the modules at interpreter shutdown, says so on stdout
# and holds there: the test's Ctrl-C lands where the real one did, with no race against a loaded machine
_HELD_AT_SHUTDOWN = """
import os, runpy, sys, time, types

class Hold:
    def __del__(self, write=os.write, sleep=time.sleep):
        write(1, b"shutting down\\n")
        sleep(3)

held = types.ModuleType("held_at_shutdown")
held.hold = Hold()
sys.modules[held.__name__] = held
sys.argv = ["onechip", *sys.argv[2:]]
runpy.run_module("onechip", run_name="__main__")
"""


def test_ctrl_c_after_report_finished_exits_with_reports_own_status(tmp_path: Path) -> None:
    (tmp_path / RUN_FILES["requests"]).write_text("")  # a run: any one run file (test_report_cmd)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}
    with subprocess.Popen([sys.executable, "-c", _HELD_AT_SHUTDOWN, "onechip", "report", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as proc:  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdout.readline() == f"{tmp_path / 'report.md'}\n"
        assert proc.stdout.readline() == "shutting down\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (0, "", "")
    assert (tmp_path / "report.md").is_file()


# `python -m onechip ARGV` whose typer.echo, once it has printed a line, says so and holds: a Ctrl-C lands after report
# wrote every file and printed its path, before the command returned (it said 'interrupted', exit 130, 5 of 8 tries
# with the Ctrl-C sent as the path was read)
_HELD_AFTER_PRINTING = """
import runpy, sys, time
import typer

printed = typer.echo

def echo(*args, **kwargs):
    printed(*args, **kwargs)
    printed("printed")
    sys.stdout.flush()
    time.sleep(3)

typer.echo = echo
sys.argv = ["onechip", *sys.argv[2:]]
runpy.run_module("onechip", run_name="__main__")
"""


def test_ctrl_c_while_report_prints_what_it_wrote_exits_with_reports_own_status(tmp_path: Path) -> None:
    (tmp_path / RUN_FILES["requests"]).write_text("")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}
    with subprocess.Popen([sys.executable, "-c", _HELD_AFTER_PRINTING, "onechip", "report", str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as proc:  # fmt: skip
        assert proc.stdout is not None
        assert proc.stdout.readline() == f"{tmp_path / 'report.md'}\n"
        assert proc.stdout.readline() == "printed\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (0, "", "")
