"""A follow interrupted while it holds a line for the one after it (helper qa70b, 2026-12-07): `logs --follow` keeps
the last line of a read back for the next read (errors.LinesRedactor.held, at most one poll, HOLD_AHEAD_S), and a
Ctrl-C in that poll lost it from what the user saw: the engine's last line before the interrupt (its error, say) was
in the file and never on the screen, where `tail -f` shows it. The line held is now given, redacted with none after
it, before the interrupt goes on; a local log's and a host's (the reader's thread) alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from wrapped_secrets import HF


def test_a_local_follow_interrupted_in_its_poll_shows_the_line_it_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    log.write_text(f"INFO one\nERROR CUDA out of memory token={HF}\n")
    state.save(engine_state(log_path=str(log)))

    def sleep(_: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(state, "engine_alive", lambda _: True)
    monkeypatch.setattr(state, "log_writer_note", lambda _: None)
    monkeypatch.setattr(state.time, "sleep", sleep)
    seen: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        for line in state.log_lines(follow=True):
            seen.append(line)
    assert seen == ["INFO one", "ERROR CUDA out of memory token=***"]


def test_a_host_follow_interrupted_while_it_waits_shows_the_line_it_held(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float | None] = []

    class Interrupting(state.queue.Queue):  # type: ignore[type-arg]
        def get(self, block: bool = True, timeout: float | None = None):  # type: ignore[no-untyped-def]
            if len(waits) == 2:  # both lines taken: the second is held, and the user presses Ctrl-C
                raise KeyboardInterrupt
            waits.append(timeout)
            return super().get(block, timeout)

    monkeypatch.setattr(state.queue, "Queue", Interrupting)
    seen: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        for line in state._held_ahead(iter(["INFO one", f"ERROR died, token {HF}"]), state.lines_redactor()):
            seen.append(line)
    assert seen == ["INFO one", "ERROR died, token ***"]
