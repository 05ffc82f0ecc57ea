"""A token that straddles LINE_MAX (64 KiB) of a line without an end, in the log writer (helper qa70b, 2026-12-07):
_Copier.release writes a long line's start and holds back its last SECRET_SPAN bytes for the rest to complete a
secret there, but what it holds back is already redacted (the token's first part, long enough to match alone, is
'***' in it), so the token's rest, in the next read, is redacted with '***' before it, matches nothing, and reaches
engine.log (measured: ' token ***sR6qP5oN4mL3kJ2iH1gF0eDc tail', 22 of the token's 37 characters).
Fixed (safety70c): the held part stays raw, and the cut between the part written and the part held falls where no secret
crosses it (_Copier._cut: before the spaces before the run the cut falls in, back past a bearer header's words where its
value crosses)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_logpump_wraps_safety70 import _copied

from onechip import errors, logpump
from wrapped_secrets import CASES, HF


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


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("mark", [logpump.LINE_MAX, logpump.LINE_MAX - logpump.SECRET_SPAN])
def test_a_secret_across_a_long_lines_marks_at_every_position_reaches_no_log(case: str, mark: int) -> None:
    """The secret (its words and lead too: a bearer header's, a URL's user) across the end of what the writer holds
    when it writes a long line's start (LINE_MAX), or across where it would cut what it holds back (SECRET_SPAN before
    it), at every position: the line on disk is the line redacted whole."""
    before, secret, after = CASES[case]
    line = before + secret + after
    for at in range(len(before) + len(secret) + 1):
        start = "x" * (mark - at - 1) + " "
        data = f"{start}{line}\nINFO next\n".encode()
        logged = _copied([data[read : read + 4096] for read in range(0, len(data), 4096)])
        assert logged.decode() == f"{start}{errors.redact(line)}\nINFO next\n", at
