"""`logs --follow` on files written while read and moved under it (helper safety68, 2026-12-07): a last line the
engine had not ended when the follow read it was shown then, and its rest as a line of its own at the next read (one
line shown cut in two); a log that is a symlink whose target changes (a launcher pointing engine.log at each run's
file) is followed to the new target. The writes are injected at the follow's own sleep, never raced."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import EngineError
from onechip.vllm.log_summary import MAX_LINE_CHARS


def _engine_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log: Path, text: str) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log.write_text(text)
    state.save(engine_state(log_path=str(log)))


def _followed(monkeypatch: pytest.MonkeyPatch, at_sleeps: list) -> list[str]:
    """The lines a follow shows, `at_sleeps[i]` run at its i-th sleep; the engine dies once they are all run."""
    calls: list[int] = []

    def sleep(_: float) -> None:
        at_sleeps[len(calls)]()
        calls.append(1)

    monkeypatch.setattr(state, "engine_alive", lambda _: len(calls) < len(at_sleeps))
    monkeypatch.setattr(state, "log_writer_note", lambda _: None)
    monkeypatch.setattr(state.time, "sleep", sleep)
    seen: list[str] = []
    with pytest.raises(EngineError, match="exited"):
        seen.extend(state.log_lines(follow=True))
    return seen


def _append(log: Path, text: str):
    def write() -> None:
        with log.open("a") as out:
            out.write(text)

    return write


def test_a_line_not_ended_when_read_is_shown_once_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "engine.log"
    _engine_log(tmp_path, monkeypatch, log, "before\nINFO 321,376 tok")
    seen = _followed(monkeypatch, [_append(log, "ens of KV cache\nafter\n"), _append(log, "last words")])
    assert seen == ["before", "INFO 321,376 tokens of KV cache", "after", "last words"]


def test_a_symlinked_log_whose_target_changes_is_followed_to_the_new_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, log = tmp_path / "run1.log", tmp_path / "run2.log", tmp_path / "engine.log"
    first.write_text("")
    log.symlink_to(first)
    _engine_log(tmp_path, monkeypatch, first, "one\n")

    def repoint() -> None:
        _append(first, "one more\n")()
        second.write_text("two\n")
        tmp = tmp_path / "engine.log.tmp"
        tmp.symlink_to(second)
        tmp.replace(log)  # ln -sfn's atomic swap

    state.save(engine_state(log_path=str(log)))
    assert _followed(monkeypatch, [repoint]) == ["one", "one more", "two"]


@pytest.mark.parametrize(
    ("start", "later"),
    [
        ("a" * (MAX_LINE_CHARS - 10), ["b" * 20, "c" * 30 + "\nafter\n"]),  # held, then past the limit in two reads
        ("a" * (MAX_LINE_CHARS + 5), ["tail of the long line\nafter\n"]),  # cut at once, its end written later
        ("a" * MAX_LINE_CHARS, ["\nafter\n"]),  # exactly the limit, its line end written later
    ],
)
def test_a_line_past_max_line_chars_written_in_pieces_is_one_line_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: str, later: list[str]
) -> None:
    """A line of MAX_LINE_CHARS or more is shown cut there (log_summary.read_lines), its rest read past up to its end
    even when the engine writes that rest after the follow's read (qa68a): the rest was shown as a line of its own
    ('cccc...', 'tail of the long line', and an empty line for a line end written alone)."""
    log = tmp_path / "engine.log"
    _engine_log(tmp_path, monkeypatch, log, "before\n" + start)
    seen = _followed(monkeypatch, [_append(log, text) for text in later])
    assert seen == ["before", (start + "".join(later))[:MAX_LINE_CHARS], "after"]
