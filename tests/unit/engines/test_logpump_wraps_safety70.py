"""A secret cut by a wrap whose two lines the log writer (onechip.logpump) reads in two reads (helper safety70,
2026-12-07): it redacted each read's lines with the line after them but the last, which it wrote with none, so the
first part of a token whose rest came in the next read reached engine.log ('INFO using token hf_Zq'). The last line
of a read now waits for the next read (errors.LinesRedactor.held), at most errors.HOLD_AHEAD_S, or to a sync or the
input's end."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from onechip import errors, logpump
from wrapped_secrets import CASES, PEM

SRC = str(Path(logpump.__file__).parents[1])  # the folder onechip is imported from


def _copied(pieces: list[bytes]) -> bytes:
    """What the writer's copier puts in the log for `pieces`, each (but an empty one) read by a read of its own, then
    the input's end. The log is a file, not a pipe, which would fill at 64 KiB and block the copier; every descriptor
    is closed, the pipe's read end too (one was left open per case: safety70c)."""
    source, into = os.pipe()
    try:
        with tempfile.TemporaryFile() as log:
            copier = logpump._Copier(source, log.fileno())
            for piece in filter(None, pieces):
                os.write(into, piece)
                assert copier.read()
            os.close(into)
            into = -1
            assert not copier.read()
            log.seek(0)
            return log.read()
    finally:
        for fd in (source, into):
            if fd >= 0:
                os.close(fd)


@pytest.mark.parametrize("case", CASES)
def test_a_secret_cut_by_a_wrap_whose_lines_come_in_two_reads_reaches_no_log(case: str) -> None:
    before, secret, after = CASES[case]
    line = before + secret + after
    for at in range(len(before) + 1, len(before) + len(secret)):
        logged = _copied([f"INFO start\n{line[:at]}\n".encode(), f"{line[at:]}\nINFO next\n".encode()])
        assert logged.decode() == f"INFO start\n{before}***\n***{after}\nINFO next\n", at


def test_a_pem_block_split_between_two_reads_at_every_position_reaches_no_log() -> None:
    for at in range(len(PEM) + 1):
        logged = _copied([PEM[:at].encode(), PEM[at:].encode() + b"INFO next\n"])
        assert logged == b"-----BEGIN PRIVATE KEY-----\n***\n***\n-----END PRIVATE KEY-----\nINFO next\n", at


def test_a_quiet_pipe_still_gets_its_last_line_written(tmp_path: Path) -> None:
    output, into_log = os.pipe()
    ask_r, ask_w = os.pipe()
    answer_r, answer_w = os.pipe()
    log_path = tmp_path / "engine.log"
    with log_path.open("wb") as log:
        writer = subprocess.Popen(  # noqa: S603 - argv list, no shell
            [sys.executable, "-m", "onechip.logpump", str(ask_r), str(answer_w)],
            stdin=output, stdout=log, env={**os.environ, "PYTHONPATH": SRC}, pass_fds=(ask_r, answer_w),
        )  # fmt: skip
    for fd in (output, ask_r, answer_w):
        os.close(fd)
    try:
        os.write(ask_w, b"?")  # started and in its loop
        assert os.read(answer_r, 1) == b"."
        os.write(into_log, b"INFO one\nINFO last\n")
        written = time.monotonic()
        while b"INFO last" not in log_path.read_bytes() and time.monotonic() < written + 30:
            time.sleep(0.05)
        waited_s = time.monotonic() - written
        assert log_path.read_bytes() == b"INFO one\nINFO last\n"  # the input still open: no end, no sync asked
        assert waited_s >= errors.HOLD_AHEAD_S * 0.9  # held for a line after it that did not come
    finally:
        for fd in (into_log, ask_w, answer_r):
            os.close(fd)
        assert writer.wait(60) == 0
