"""The record `onechip up` keeps of a detached engine, so `status`, `logs` and `down` work from another shell.

Modes (EngineState.mode): 'process' (a local process group: the embedded engine or local vLLM),
'remote-process' (a process group on an SSH host, reached through a local ssh tunnel) and 'docker'
(a container, local or on an SSH host). Remote modes delegate to engines.remote.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx

from onechip.engines import remote
from onechip.engines.local import group_alive, stop_group
from onechip.errors import EngineError, redact
from onechip.paths import onechip_home, write_text_atomic
from onechip.schemas import EngineState, EngineStatus


def state_path() -> Path:
    return onechip_home() / "engine.json"


def save(state: EngineState) -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, state.model_dump_json(indent=2))


def load() -> EngineState | None:
    try:
        return EngineState.model_validate_json(state_path().read_text())
    except (FileNotFoundError, ValueError):
        return None


def _host_alive(state: EngineState) -> tuple[bool, str]:
    return remote.host_status(state)


def status() -> EngineStatus:
    """Health, model, port and uptime of the engine `up` started, if any."""
    state = load()
    if state is None:
        return EngineStatus(running=False, note="no engine started by `onechip up`")
    note = ""
    if state.mode != "process":
        alive, note = _host_alive(state)
        if not alive:
            note = note or "engine is gone on its host (stale state)"
            return EngineStatus(running=False, state=state, note=note)
    elif not group_alive(state.pid):
        return EngineStatus(running=False, state=state, note="engine process is gone (stale state)")
    try:
        healthy = httpx.get(f"{state.base_url}/health", timeout=3.0).status_code == 200
    except httpx.HTTPError:
        healthy = False
    uptime = (datetime.now(UTC) - datetime.fromisoformat(state.started_at)).total_seconds()
    return EngineStatus(running=True, healthy=healthy, state=state, uptime_s=round(uptime, 1), note=note)


def down(grace_s: float = 20.0) -> EngineStatus:
    """Stop the engine `up` started and forget it. Idempotent: no engine is not an error."""
    state = load()
    if state is None:
        return EngineStatus(running=False, note="no engine was running")
    if state.mode != "process":
        remote.stop_host_engine(remote.shell_for(state), state, grace_s)
        remote.stop_tunnel(state)
        state_path().unlink(missing_ok=True)
        where = state.host or "this machine"
        what = f"process group {state.remote_pid}"
        if state.mode == "docker":
            what = f"container {state.container}"
        return EngineStatus(running=False, state=state, note=f"stopped {what} on {where}; tunnel closed")
    was_alive = group_alive(state.pid)
    if was_alive:
        stop_group(state.pid, grace_s)
    state_path().unlink(missing_ok=True)
    note = f"stopped engine pid {state.pid}" if was_alive else "engine was already gone; state cleared"
    return EngineStatus(running=False, state=state, note=note)


def log_lines(follow: bool = False) -> Iterator[str]:
    """The engine log of the engine `up` started, line by line, secrets redacted; with `follow`, keep
    reading until interrupted. Raises EngineError when no engine was started."""
    state = load()
    if state is None:
        raise EngineError("no engine started by `onechip up`")
    if state.mode != "process":
        argv = remote.shell_for(state).argv(remote.logs_command(state, follow))
        with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,  # noqa: S603
                              stdin=subprocess.DEVNULL) as proc:
            assert proc.stdout is not None
            try:
                for raw in proc.stdout:
                    yield redact(raw.decode(errors="replace").rstrip("\n"))
            finally:
                if proc.poll() is None:
                    proc.terminate()
        return
    path = Path(state.log_path)
    with path.open(encoding="utf-8", errors="replace") as handle:
        while True:
            line = handle.readline()
            if line:
                yield redact(line.rstrip("\n"))
            elif not follow:
                return
            else:
                time.sleep(0.5)
