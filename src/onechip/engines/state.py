"""The record `onechip up` keeps of a detached engine, so `status` and `down` work from another shell."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import httpx

from onechip.engines.local import group_alive, stop_group
from onechip.paths import onechip_home
from onechip.schemas import EngineState, EngineStatus


def state_path() -> Path:
    return onechip_home() / "engine.json"


def save(state: EngineState) -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(state.model_dump_json(indent=2))
    tmp.replace(path)


def load() -> EngineState | None:
    try:
        return EngineState.model_validate_json(state_path().read_text())
    except (FileNotFoundError, ValueError):
        return None


def status() -> EngineStatus:
    """Health, model, port and uptime of the engine `up` started, if any."""
    state = load()
    if state is None:
        return EngineStatus(running=False, note="no engine started by `onechip up`")
    if not group_alive(state.pid):
        return EngineStatus(running=False, state=state, note="engine process is gone (stale state)")
    try:
        healthy = httpx.get(f"{state.base_url}/health", timeout=3.0).status_code == 200
    except httpx.HTTPError:
        healthy = False
    uptime = (datetime.now(UTC) - datetime.fromisoformat(state.started_at)).total_seconds()
    return EngineStatus(running=True, healthy=healthy, state=state, uptime_s=round(uptime, 1))


def down(grace_s: float = 20.0) -> EngineStatus:
    """Stop the engine `up` started and forget it. Idempotent: no engine is not an error."""
    state = load()
    if state is None:
        return EngineStatus(running=False, note="no engine was running")
    was_alive = group_alive(state.pid)
    if was_alive:
        stop_group(state.pid, grace_s)
    state_path().unlink(missing_ok=True)
    note = f"stopped engine pid {state.pid}" if was_alive else "engine was already gone; state cleared"
    return EngineStatus(running=False, state=state, note=note)
