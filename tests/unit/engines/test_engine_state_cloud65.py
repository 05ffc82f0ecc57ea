"""engines/state.log_lines, found at stop 64 (helper cloud65, 2026-12-07): `logs --follow` of an engine whose log is
rotated, after which the engine dies, between the follow's two checks (its read to the end, then whether the engine
is alive). The rotation and the death are injected at the check itself, never raced with a sleep."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import EngineError


def test_follow_reads_the_new_log_of_an_engine_rotated_then_dead_between_its_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: on the death the follow read the rest of the file it had open (the renamed one) and stopped, so what the
    # engine wrote to the new file at the log's name ('after', its last words) was never shown
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    log.write_text("before\n")
    state.save(engine_state(log_path=str(log)))
    checks: list[int] = []

    def rotated_then_dead(_: object) -> bool:  # logrotate's 'create' (renamed, a new file made), then the death
        if not checks:
            log.rename(tmp_path / "engine.log.1")
            log.write_text("after\n")
        checks.append(1)
        return False

    monkeypatch.setattr(state, "engine_alive", rotated_then_dead)
    seen: list[str] = []
    with pytest.raises(EngineError, match="exited"):
        for line in state.log_lines(follow=True):
            seen.append(line)
    assert seen == ["before", "after"]
