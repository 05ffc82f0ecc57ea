"""A secret the engine writes in two pieces never reaches engine.log in pieces: the writer (onechip.logpump) redacts a
line at a time, so a piece it wrote before the rest came (a sync asked by `up` mid-line, or a line past LINE_MAX
without an end) matched no secret and went to the disk as it was, both halves of the token with it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from onechip import logpump

SRC = str(Path(logpump.__file__).parents[1])  # the folder onechip is imported from
TOKEN = "tok-noshape-0123456789"  # a Hugging Face token of no known shape: known only as HF_TOKEN's value
SHAPED = "hf_" + "a1" * 17  # a token of Hugging Face's shape (errors.HF_TOKEN_SHAPE: hf_ and 34 letters and digits)


SYNC, ENDED = "?", "!"  # a sync as `up` asks one (LogWriter.sync), and as it asks once the engine has exited


def _logged(tmp_path: Path, pieces: list[bytes | str], synced: list[bytes] | None = None) -> bytes:
    """What the writer puts in its log for the engine output `pieces`, written in order; a str: that sync (SYNC,
    ENDED), answered before the next piece is written, the log as it is then appended to `synced`."""
    output, into_log = os.pipe()
    ask_r, ask_w = os.pipe()
    answer_r, answer_w = os.pipe()
    log_path = tmp_path / "engine.log"
    with log_path.open("wb") as log:
        writer = subprocess.Popen(  # noqa: S603 - argv list, no shell
            [sys.executable, "-m", "onechip.logpump", str(ask_r), str(answer_w)],
            stdin=output, stdout=log, env={**os.environ, "HF_TOKEN": TOKEN, "PYTHONPATH": SRC},
            pass_fds=(ask_r, answer_w),
        )  # fmt: skip
    for fd in (output, ask_r, answer_w):
        os.close(fd)
    try:
        for piece in pieces:
            if isinstance(piece, str):
                os.write(ask_w, piece.encode())
                assert os.read(answer_r, 1) == b"."
                (synced if synced is not None else []).append(log_path.read_bytes())
            else:
                os.write(into_log, piece)
    finally:
        for fd in (into_log, ask_w, answer_r):
            os.close(fd)
        assert writer.wait(60) == 0
    return log_path.read_bytes()


def test_a_secret_split_by_a_sync_is_redacted_whole(tmp_path: Path) -> None:
    logged = _logged(tmp_path, [b"HF_TOKEN is " + TOKEN[:14].encode(), SYNC, TOKEN[14:].encode() + b" ok\n"])
    assert logged == b"HF_TOKEN is *** ok\n"  # the line whole, its token redacted (errors.redactor)


def test_a_shaped_token_split_by_a_sync_is_redacted_whole(tmp_path: Path) -> None:
    logged = _logged(tmp_path, [b"token " + SHAPED[:6].encode(), SYNC, SHAPED[6:].encode() + b"\n"])
    assert logged == b"token ***\n"


def test_a_secret_across_line_max_of_a_line_without_end_is_redacted_whole(tmp_path: Path) -> None:
    # the writer cuts a line with no end at LINE_MAX bytes; the token stands across that cut
    head = b"x" * (logpump.LINE_MAX - 10)
    logged = _logged(tmp_path, [head + TOKEN.encode() + b" done\n"])
    assert logged == head + b"*** done\n"


def test_a_long_line_without_end_is_written_before_its_end_comes(tmp_path: Path) -> None:
    # what no secret can stand across is written at a sync: a line of dots with no end (a progress bar's) is in the
    # log but for its last SECRET_SPAN bytes, which may be the start of one
    dots = b"." * (2 * logpump.LINE_MAX)
    synced: list[bytes] = []
    logged = _logged(tmp_path, [dots, SYNC], synced)
    assert synced == [dots[: -logpump.SECRET_SPAN]]
    assert logged == dots  # all of it at the end of the input


def test_invalid_utf8_and_carriage_returns_are_kept_as_written(tmp_path: Path) -> None:
    raw = b"\xff\xfe bad bytes \xe2\x82\n 10%\r 50% " + TOKEN.encode() + b"\r 100%\r\n"
    assert _logged(tmp_path, [raw[:7], SYNC, raw[7:]]) == raw.replace(TOKEN.encode(), b"***")


def test_a_sync_once_the_engine_has_exited_writes_the_line_held_whole(tmp_path: Path) -> None:
    # its last line will not be ended by it: the reason it died, which `up` reads from the log's tail
    synced: list[bytes] = []
    _logged(tmp_path, [b"last words " + TOKEN.encode(), ENDED], synced)
    assert synced == [b"last words ***"]
