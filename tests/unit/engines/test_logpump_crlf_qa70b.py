"""A secret cut by a wrap in a log whose lines end with CRLF (helper qa70b, 2026-12-07): the log writer
(onechip.logpump) ended a line at the '\\r' and again at the '\\n', so an empty line stood between the wrap's two
lines, and the line read ahead (errors.LinesRedactor.held) was that empty one: the rest of a token on the next line
reached engine.log ('INFO using token ***\\r\\n5oN4mL3kJ2iH1gF0eDc for the download'), a JWT whole. A CRLF is one
line end, as log_summary.read_lines reads it, also where a read ends between its '\\r' and its '\\n'."""

from __future__ import annotations

import os

import pytest

from onechip import logpump
from wrapped_secrets import CASES


def _copied(pieces: list[bytes]) -> bytes:
    """What the writer's copier puts in the log for `pieces`, each read by a read of its own, then the input's end."""
    source, into = os.pipe()
    sink, out = os.pipe()
    copier = logpump._Copier(source, out)
    for piece in pieces:
        os.write(into, piece)
        assert copier.read()
    os.close(into)
    assert not copier.read()
    for fd in (source, out):
        os.close(fd)
    with os.fdopen(sink, "rb") as logged:
        return logged.read()


@pytest.mark.parametrize("case", CASES)
def test_a_secret_cut_by_a_wrap_between_crlf_lines_reaches_no_log(case: str) -> None:
    before, secret, after = CASES[case]
    line = before + secret + after
    for at in range(len(before) + 1, len(before) + len(secret)):
        text = f"INFO start\r\n{line[:at]}\r\n{line[at:]}\r\nINFO next\r\n".encode()
        expected = f"INFO start\r\n{before}***\r\n***{after}\r\nINFO next\r\n".encode()
        assert _copied([text]) == expected, at
        # the two lines in two reads, and the first's CRLF cut between them
        cut = text.index(b"\r\n", len("INFO start\r\n")) + 1
        assert _copied([text[:cut], text[cut:]]) == expected, at
        assert _copied([text[: cut + 1], text[cut + 1 :]]) == expected, at


def test_a_progress_bars_lone_cr_still_ends_a_line_and_a_crlf_after_a_quiet_pipe_is_kept() -> None:
    assert _copied([b"10%\r20%\r", b"done\r\n"]) == b"10%\r20%\rdone\r\n"
    assert _copied([b"INFO a\r", b"\nINFO b\r\n"]) == b"INFO a\r\nINFO b\r\n"
