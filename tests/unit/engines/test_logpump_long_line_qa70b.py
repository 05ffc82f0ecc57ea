"""A token that straddles LINE_MAX (64 KiB) of a line without an end, in the log writer (helper qa70b, 2026-12-07):
_Copier.release writes a long line's start and holds back its last SECRET_SPAN bytes for the rest to complete a
secret there, but what it holds back is already redacted (the token's first part, long enough to match alone, is
'***' in it), so the token's rest, in the next read, is redacted with '***' before it, matches nothing, and reaches
engine.log (measured: ' token ***sR6qP5oN4mL3kJ2iH1gF0eDc tail', 22 of the token's 37 characters). NOT FIXED: the
held part must stay raw, and the cut between the part written and the part held must fall where no secret crosses
it (a bearer header's words before it and its value after it leak the same way); left to a follow-up."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from onechip import logpump
from wrapped_secrets import HF


@pytest.mark.xfail(strict=True, reason="logpump holds back a long line's redacted tail, not its raw one (qa70b)")
def test_a_token_across_a_long_lines_line_max_reaches_no_log(tmp_path: Path) -> None:
    source, into = os.pipe()
    log = tmp_path / "engine.log"
    out = os.open(log, os.O_WRONLY | os.O_CREAT, 0o600)
    copier = logpump._Copier(source, out)
    data = b"x" * (logpump.LINE_MAX - 20) + f" token {HF} tail\nINFO next\n".encode()
    try:
        for at in range(0, len(data), 4096):  # reads of 4 KiB: the 64 KiB mark falls inside the token
            os.write(into, data[at : at + 4096])
            assert copier.read()
        os.close(into)
        assert not copier.read()
    finally:
        for fd in (source, out):
            os.close(fd)
    written = log.read_bytes()
    assert written.endswith(b" token *** tail\nINFO next\n"), written[-80:]
    assert not any(HF[i : i + 8].encode() in written for i in range(len(HF) - 7))
