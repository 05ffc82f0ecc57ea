"""The console script's entry (pyproject's [project.scripts], and `python -m onechip`): a Ctrl-C while onechip's
imports run, before cli.main has set up its error handling, is one line and exit 130, as every other Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from onechip.errors import Interrupted

ROOT = Path(__file__).resolve().parents[3]

# Holds the import of typer (the CLI's first heavy import, cli.main's and cli.commands') until the process is stopped,
# saying on stdout when it got there: the test's two Ctrl-Cs land inside onechip's imports, with no race against a
# loaded machine. Then runs the entry as its console script does (pip's generated script: `from MODULE import FUNC;
# sys.exit(FUNC())`) or as `python -m onechip` does.
_HELD_AT_IMPORT = """
import importlib.abc, runpy, sys, time

class HoldTyper(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            print("importing typer", flush=True)
            time.sleep(60)
        return None

sys.meta_path.insert(0, HoldTyper())
sys.argv = ["onechip", *sys.argv[2:]]
entry = {entry!r}
if entry:
    module, func = entry.split(":")
    sys.exit(getattr(__import__(module, fromlist=[func]), func)())
runpy.run_module("onechip", run_name="__main__")
"""


def _console_script() -> str:
    """The `onechip` entry point pyproject.toml declares: 'module:function'."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["onechip"]


@pytest.mark.parametrize("entry", ["console script", "python -m onechip"])
@pytest.mark.parametrize(("argv", "said"), [(["bench", "http://127.0.0.1:9"], "interrupted (nothing measured yet; "
                                             "nothing written)"), (["plan", "x"], "interrupted")])  # fmt: skip
def test_ctrl_c_twice_while_onechip_imports_is_one_line_and_exit_130(entry: str, argv: list[str], said: str) -> None:
    # it printed Python's KeyboardInterrupt traceback and died by SIGINT (-2): cli.main's handling was not set up yet
    script = _HELD_AT_IMPORT.format(entry=_console_script() if entry == "console script" else "")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}
    with subprocess.Popen([sys.executable, "-c", script, "onechip", *argv], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env) as proc:  # fmt: skip
        assert proc.stdout is not None and proc.stdout.readline() == "importing typer\n"
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)  # a second Ctrl-C, pressed as the first seemed slow
        out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out, err) == (Interrupted.exit_code, "", f"{said}\n")  # 130: 128 + SIGINT's 2


# Holds two imports for HOLD_S each, saying on stdout when it got to each: typer's (cli.entry's handler in place) and
# `plan`'s command module, which the CLI's LazyGroup imports once cli.main has taken SIGINT and SIGHUP for the command
_HELD_TWICE = """
import importlib.abc, runpy, sys, time

class Hold(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in ("typer", "onechip.cli.plan_cmd"):
            print("importing", name, flush=True)
            time.sleep({hold_s})
        return None

sys.meta_path.insert(0, Hold())
sys.argv = ["onechip", *sys.argv[2:]]
runpy.run_module("onechip", run_name="__main__")
"""
HOLD_S = 2


def _ignoring(*signals: signal.Signals) -> None:
    for sig in signals:
        signal.signal(sig, signal.SIG_IGN)


def test_signals_ignored_when_onechip_started_stay_ignored() -> None:
    # a job a shell without job control starts in the background ignores SIGINT (POSIX Shell Command Language, 2.11
    # 'Signals and Error Handling'), and one under nohup ignores SIGHUP (POSIX nohup): a Ctrl-C at the terminal, or
    # the terminal closed, must not stop it, as Python's own SIGINT rule has it (its KeyboardInterrupt handler is
    # installed only where SIGINT was not ignored: docs.python.org/3/library/signal.html) and onechip mcp's does
    # (mcp.server.serve). cli.entry's handler and cli.main's took both back: 'interrupted', exit 130, at the first
    # Ctrl-C; 'hung up (SIGHUP)', 129, at the hang-up. The command now runs to its own end: plan's usage error, 2.
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}"}
    script = _HELD_TWICE.format(hold_s=HOLD_S)
    with subprocess.Popen([sys.executable, "-c", script, "onechip", "plan", "x"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env,
                          preexec_fn=lambda: _ignoring(signal.SIGINT, signal.SIGHUP)) as proc:  # fmt: skip
        assert proc.stdout is not None
        for held in ("typer", "onechip.cli.plan_cmd"):
            assert proc.stdout.readline() == f"importing {held}\n"
            proc.send_signal(signal.SIGINT)
            proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (2, ""), err  # 2: ConfigError's, the missing --chip
    assert "Missing option '--chip'" in err, err
