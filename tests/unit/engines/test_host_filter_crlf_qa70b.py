"""A secret cut by a wrap in an engine output whose lines end with CRLF, through the host's log filter (helper qa70b,
2026-12-07): serve.sh's `tr '\\r' '\\n'` made each CRLF two line ends, so the perl filter read an empty line between
the wrap's two lines ahead instead of the second (as onechip.logpump did: test_logpump_crlf_qa70b.py), and the rest
of the token reached the host's log ('INFO using token ***' then a blank line then '5oN4mL3kJ2iH1gF0eDc for the
download'; a JWT whole); each CRLF line also became two lines there. The filter now reads a CRLF as one line end, a
'\\r' alone as one (a progress bar's), and writes each '\\n' (log_summary.LINE_END)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from factories import through_host_filter
from onechip.engines import remote
from onechip.errors import HOLD_AHEAD_S
from wrapped_secrets import CASES


@pytest.mark.parametrize("case", CASES)
def test_a_secret_cut_by_a_wrap_between_crlf_lines_reaches_no_host_log(case: str, tmp_path: Path) -> None:
    before, secret, after = CASES[case]
    line = before + secret + after
    for at in (len(before) + 1, len(before) + len(secret) // 2, len(before) + len(secret) - 1):
        text = f"INFO start\r\n{line[:at]}\r\n{line[at:]}\r\nINFO next\r\n"
        assert through_host_filter(tmp_path, text, {}) == f"INFO start\n{before}***\n***{after}\nINFO next\n", at


def test_a_progress_bars_lone_cr_ends_a_line_at_once(tmp_path: Path) -> None:
    assert through_host_filter(tmp_path, "10%\r20%\rdone\r\n\r\nlast", {}) == "10%\n20%\ndone\n\nlast"
    script = tmp_path / "filter.sh"
    script.write_text("\n".join([*remote.REDACTED_OUTPUT, "exec cat"]) + "\n")
    env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    with subprocess.Popen(["bash", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as proc:  # noqa: S603, S607
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"INFO loading 10%\r")  # then quiet: the update still reaches the log
        proc.stdin.flush()
        sent = time.monotonic()
        assert proc.stdout.readline() == b"INFO loading 10%\n"
        assert time.monotonic() - sent < 10 * HOLD_AHEAD_S
        proc.stdin.close()
        assert proc.stdout.read() == b""
