"""`logs --follow` on a UTF-8 character split between two writes (helper safety69, 2026-12-07): the follow reads to the
end of what is written (TextIOWrapper.readline), and at the end of the file the text decoder was told the input was
over (final), so the first bytes of a character the engine had not finished writing were decoded then, as U+FFFD each,
and its last bytes at the next read as more of them. The incomplete bytes are kept for the next read now."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_follow_files68 import _engine_log, _followed


def _append_bytes(path: Path, data: bytes):
    def write() -> None:
        with path.open("ab") as handle:
            handle.write(data)

    return write


@pytest.mark.parametrize("cut", [1, 2, 3])
def test_a_character_split_between_two_writes_is_shown_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: int
) -> None:
    text = "INFO 12-07 [x.py:1] prompt: 🦙 llama\nafter\n"  # U+1F999: 4 bytes in UTF-8
    data = text.encode()
    at = data.index("🦙".encode()) + cut
    log = tmp_path / "engine.log"
    log.write_bytes(b"")
    _engine_log(tmp_path, monkeypatch, log, "")
    log.write_bytes(data[:at])
    seen = _followed(monkeypatch, [_append_bytes(log, data[at:])])
    assert seen == ["INFO 12-07 [x.py:1] prompt: 🦙 llama", "after"]


def test_a_character_split_where_no_line_ends_yet_is_shown_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = "é".encode()  # 2 bytes, the first written alone, then the second and the line's end
    log = tmp_path / "engine.log"
    _engine_log(tmp_path, monkeypatch, log, "")
    log.write_bytes(b"a" + data[:1])
    seen = _followed(monkeypatch, [_append_bytes(log, data[1:] + b"\n"), _append_bytes(log, b"b\n")])
    assert seen == ["aé", "b"]


def test_bytes_that_are_no_utf8_still_read_as_replacement_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "engine.log"
    _engine_log(tmp_path, monkeypatch, log, "")
    log.write_bytes(b"bad \xff byte\n")
    seen = _followed(monkeypatch, [_append_bytes(log, b"cut \xe2\x82\n")])
    assert seen == ["bad \ufffd byte", "cut \ufffd"]
