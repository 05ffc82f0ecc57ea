"""A replica set's `down` releases the port claims (engines.port_claims) of the replicas it stopped, as it does the
router's (state.down; its metrics port's, replicas.down). Before, each replica's claim file, naming its stopped pid,
stayed until the next claim of any port swept it, so `down` of a set left N dead claims behind it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from factories import embedded_plan, engine_state
from onechip import api
from onechip.engines import port_claims, replicas
from onechip.engines import state as engine_state_file
from onechip.engines.local import free_port, group_alive
from onechip.engines.router import METRICS_HOST
from onechip.procs import start_ticks
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import UpRequest


def _sleeper() -> subprocess.Popen[bytes]:
    """A process group standing in for a replica's engine (what down stops by its group)."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)


def test_down_of_a_replica_set_releases_each_replica_s_port_claim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv(port_claims.CLAIMS_ENV, str(tmp_path / "claims"))  # this test's claims alone
    ports = [free_port(), free_port()]
    fields = {"engine": "vllm", "plan": embedded_plan(), "replicas": 2, "port": ports[0], "launcher": "true",
              "router_port": free_port(), "dry_run": True}  # fmt: skip
    launch = api.up(build_request(UpRequest, fields, user_input=False)).replica_set
    assert launch is not None
    members = [_sleeper(), _sleeper(), _sleeper()]  # the replicas, then the router
    try:
        states = []
        ports = [(spec.port, "127.0.0.1") for spec in launch.replicas] + [(launch.router.port, "127.0.0.1")]
        for member, (port, host) in zip(members, ports, strict=True):
            port_claims.claim(host, port, member.pid, start_ticks(member.pid))  # as its start() left it
            states.append(engine_state(engine="vllm", pid=member.pid, pid_started=start_ticks(member.pid),
                                       base_url=f"http://{host}:{port}"))  # fmt: skip
        router = members[-1]  # and its metrics port, handed to it by RouterEngine.start
        port_claims.claim(METRICS_HOST, launch.router.metrics_port, router.pid, start_ticks(router.pid))
        replicas.save(replicas.ReplicaSetState(launch=launch, replicas=states[:2], router=states[2]))
        engine_state_file.save(states[2].model_copy(update={"engine": "vllm-router"}))  # engine.json: the router
        notes = api.down().note or ""
        assert all(f"replica {k}: stopped pid {m.pid}" in notes for k, m in enumerate(members[:2])), notes
        assert not any(group_alive(m.pid) for m in members)
        left = sorted(p.name for p in (tmp_path / "claims").glob("*:*"))
        assert left == [], left  # each claim named a replica down stopped
    finally:
        for member in members:
            if member.poll() is None:
                os.killpg(member.pid, signal.SIGKILL)
            member.wait()
