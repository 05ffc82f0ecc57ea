"""A secret cut by a wrap whose two lines a follow reads in two reads (helper safety70, 2026-12-07): `logs --follow`
of a local engine redacted each read's lines with the line after them (errors.LinesRedactor.each) but the last, which
it gave with none: the first part of a token whose rest the next read brought showed ('INFO using token hf_Zq'). The
last line of a read is now held for the next read (LinesRedactor.held) and given at the next poll where none came (at
most one poll, state.FOLLOW_POLL_S, late). The writes are injected at the follow's own sleep, never raced."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import EngineError
from wrapped_secrets import CASES, PEM


def _follow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, at_sleeps: list[Callable[[], None]]):
    """The lines a follow of a log holding `text` shows, and how many it had shown at each sleep; `at_sleeps[i]` runs at
    its i-th sleep, and the engine dies once they are all run."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    log.write_text(text)
    state.save(engine_state(log_path=str(log)))
    seen: list[str] = []
    shown_at_sleep: list[int] = []

    def sleep(_: float) -> None:
        shown_at_sleep.append(len(seen))
        at_sleeps[len(shown_at_sleep) - 1]()

    monkeypatch.setattr(state, "engine_alive", lambda _: len(shown_at_sleep) < len(at_sleeps))
    monkeypatch.setattr(state, "log_writer_note", lambda _: None)
    monkeypatch.setattr(state.time, "sleep", sleep)
    with pytest.raises(EngineError, match="exited"):
        for line in state.log_lines(follow=True):
            seen.append(line)
    return seen, shown_at_sleep


def _append(log: Path, text: str) -> Callable[[], None]:
    def write() -> None:
        with log.open("a") as out:
            out.write(text)

    return write


@pytest.mark.parametrize("case", CASES)
def test_a_secret_cut_by_a_wrap_whose_lines_come_in_two_reads_shows_no_part(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, secret, after = CASES[case]
    line = before + secret + after
    for at in range(len(before) + 1, len(before) + len(secret)):
        rest = _append(tmp_path / "engine.log", line[at:] + "\nINFO next\n")
        seen, _ = _follow(tmp_path, monkeypatch, "INFO start\n" + line[:at] + "\n", [rest, lambda: None])
        assert seen == ["INFO start", before + "***", "***" + after, "INFO next"], at


def test_a_pem_block_split_between_two_reads_at_every_position_is_hidden(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for at in range(len(PEM) + 1):
        rest = _append(tmp_path / "engine.log", PEM[at:] + "INFO next\n")
        seen, _ = _follow(tmp_path, monkeypatch, PEM[:at], [rest, lambda: None])
        assert seen == ["-----BEGIN PRIVATE KEY-----", "***", "***", "-----END PRIVATE KEY-----", "INFO next"], at


def test_a_quiet_log_still_shows_its_last_line_at_the_next_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "engine.log"
    seen, shown_at_sleep = _follow(
        tmp_path, monkeypatch, "INFO one\nINFO two\n", [lambda: None, _append(log, "INFO three\n"), lambda: None]
    )
    assert seen == ["INFO one", "INFO two", "INFO three"]
    # 'two' is held for the line after it through one poll (0.5 s), then shown though none came; 'three' likewise
    assert shown_at_sleep == [1, 2, 2]
