"""CLI rough edges (helper cli59): a COLUMNS no terminal can have, a stdin, stdout or stderr closed before onechip
starts, and a --launcher whose #! line the kernel reads otherwise than a shell would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from onechip.cli import render

SRC = Path(__file__).resolve().parents[3] / "src"


def _onechip(*argv: str, env: dict[str, str] | None = None, close: str = "", **kwargs) -> subprocess.CompletedProcess:
    """`python -m onechip ARGV`, with `close` ('>&-', '2>&-') applied by a shell as a user's line would."""
    environ = {**os.environ, "PYTHONPATH": str(SRC), **(env or {})}
    line = f'exec "$@" {close}'
    return subprocess.run(
        ["sh", "-c", line, "sh", sys.executable, "-m", "onechip", *argv],
        env=environ, text=True, timeout=120, **kwargs,
    )  # fmt: skip


@pytest.mark.parametrize("argv", [("--help",), ("plan", "--help")])
def test_a_columns_wider_than_any_terminal_is_the_widest_a_terminal_reports(argv) -> None:
    # COLUMNS=99999999999: rich laid the help panels out that wide and onechip said 'internal error (MemoryError)';
    # a terminal reports its width in struct winsize's ws_col, an unsigned short (TIOCGWINSZ, ioctl_tty(2)), so no
    # terminal is wider than 65,535 columns (render.MAX_COLUMNS)
    done = _onechip(*argv, env={"COLUMNS": "99999999999"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (0, "")
    assert max(len(line) for line in done.stdout.splitlines()) == getattr(render, "MAX_COLUMNS", None) == 2**16 - 1
