"""engines/state.py: what `onechip logs` does with a saved engine state whose log file is gone."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import EngineError


def test_logs_of_a_removed_log_file_is_an_engine_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: FileNotFoundError escaped as a traceback from `onechip logs`.
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    gone = tmp_path / "engine" / "engine.log"
    state.save(engine_state(log_path=str(gone)))
    with pytest.raises(EngineError, match="engine log .* is gone"):
        list(state.log_lines())


def _save(tmp_path: Path, pid: int) -> None:
    state.save(engine_state(pid=pid, log_path=str(tmp_path / "engine.log")))


def test_down_never_signals_a_reused_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a reboot the recorded pid may lead someone else's process group; `down` must not kill it."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        _save(tmp_path, other.pid)
        assert not state.status().running
        assert "already gone" in state.down().note
        assert other.poll() is None  # still running: not ours, not signalled
        assert state.load() is None
    finally:
        other.kill()
        other.wait()


def test_unreadable_state_is_an_error_not_no_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    state.state_path().write_text("{not json")
    with pytest.raises(EngineError, match="unreadable"):
        state.status()
    with pytest.raises(EngineError, match="unreadable"):
        state.down()
