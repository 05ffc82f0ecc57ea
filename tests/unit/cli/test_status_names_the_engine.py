"""`onechip status` of an engine in a container or on an SSH host named it '(pid 0, up N s)': EngineState.pid is a local
process group's leader, 0 for a container (remote.HostEngine.state); the line names what `down` stops, as its note
does ('stopped container c1 on this machine', 'process group N on HOST')."""

from __future__ import annotations

from factories import engine_state, fake_docker
from onechip.engines import state as engine_state_store
from onechip.engines.local import free_port

DOCKER = '#!/bin/sh\n[ "$1" = inspect ] && echo true\n'  # container c1 runs (docker inspect -f '{{.State.Running}}')


def test_status_of_a_container_names_the_container_not_pid_0(run, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    fake_docker(tmp_path, monkeypatch, DOCKER)
    engine_state_store.save(engine_state(engine="vllm-docker", mode="docker", container="c1", pid=0,
                                         base_url=f"http://127.0.0.1:{free_port()}"))  # fmt: skip
    code, out, err = run("status")
    assert code == 1 and "Traceback" not in err, err  # running, not healthy: nothing answers on its port
    assert "(container c1, up " in " ".join(out.split()) and "pid 0" not in out, out
