"""`onechip logs` after `down` of an engine in a container or on an SSH host: as after `down` of a local engine
(tests/unit/cli/test_bad_input.py test_logs_after_down_still_shows_the_file), the log of the engine it stopped, read
from the local copy `up`'s log mirror kept (EngineState.log_path); where that copy is gone, one line saying that the
engine is down and where its log was. Before, `down` kept no record of a remote engine and `logs` said 'no engine'."""

from __future__ import annotations

import pytest

from factories import embedded_plan, engine_state, fake_docker, one_error_line
from onechip import api
from onechip.engines import state as engine_state_store
from onechip.engines.local import free_port
from onechip.errors import EngineBootError
from onechip.schemas.requests import UpRequest

# a docker CLI whose container c1 runs until stopped: `inspect` says true, `stop` and `rm -f` succeed, and `logs` of a
# removed container fails as docker's does (moby: 'Error response from daemon: No such container: c1', exit 1)
DOCKER = """#!/bin/sh
case "$1" in
  inspect) echo true ;;
  logs) echo "Error response from daemon: No such container: c1" >&2; exit 1 ;;
esac
"""


def _docker_on_record(tmp_path, monkeypatch, mirror_text: str | None):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    fake_docker(tmp_path, monkeypatch, DOCKER)
    mirror = tmp_path / "engine.log"  # what `up`'s `docker logs -f` mirror copied (remote.HostEngine._start_mirror)
    if mirror_text is not None:
        mirror.write_text(mirror_text)
    engine_state_store.save(
        engine_state(engine="vllm-docker", mode="docker", container="c1", pid=0, log_path=str(mirror))
    )
    return mirror


@pytest.mark.parametrize("argv", [("logs",), ("logs", "--follow")])
def test_logs_after_down_of_a_container_shows_its_last_log(run, tmp_path, monkeypatch, argv) -> None:
    _docker_on_record(tmp_path, monkeypatch, "INFO started\nINFO Uvicorn running on http://0.0.0.0:8000\n")
    code, out, err = run("down")
    assert code == 0 and "stopped container c1 on this machine" in out, (out, err)
    code, out, err = run(*argv)
    assert code == 0 and out.splitlines() == ["INFO started", "INFO Uvicorn running on http://0.0.0.0:8000"], err


def test_logs_summary_after_down_of_a_container_names_the_local_copy(run, tmp_path, monkeypatch) -> None:
    mirror = _docker_on_record(tmp_path, monkeypatch, "INFO started\n")
    assert run("down")[0] == 0
    code, out, err = run("logs", "--summary")
    assert code == 0 and str(mirror) in out, (out, err)


def test_logs_after_down_of_a_container_whose_copy_is_gone_says_it_is_down(run, tmp_path, monkeypatch) -> None:
    mirror = _docker_on_record(tmp_path, monkeypatch, None)
    assert run("down")[0] == 0
    line = one_error_line(run, "logs", code=5)
    assert line.startswith("the engine (container c1) is down (`onechip down` stopped it):"), line
    assert str(mirror) in line and "Traceback" not in line, line


def test_logs_after_down_of_an_engine_on_a_host_shows_its_last_log(run, tmp_path, monkeypatch) -> None:
    # this machine's shell (no --host): the process group on record is gone, so `down` says so and keeps the record
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    mirror = tmp_path / "engine.log"
    mirror.write_text("INFO loading\nERROR out of memory\n")
    host_log = tmp_path / "host" / "engine.log"
    engine_state_store.save(engine_state(engine="vllm", mode="remote-process", pid=0, remote_pid=2**22 + 11,
                                         remote_log=str(host_log), log_path=str(mirror)))  # fmt: skip
    code, out, err = run("down")
    assert code == 0 and "was already gone" in out, (out, err)
    code, out, err = run("logs")
    assert code == 0 and out.splitlines() == ["INFO loading", "ERROR out of memory"], err


# a docker CLI whose container dies while booting: `run -d` prints its id, `inspect` says it does not run, and its log
# holds vLLM's last words
DYING = """#!/bin/sh
case "$1" in
  run) echo 4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f4f ;;
  inspect) echo false ;;
  logs) echo "INFO loading"; echo "ERROR CUDA out of memory" ;;
esac
"""


def test_logs_after_a_failed_up_in_a_container_shows_its_log(run, tmp_path, monkeypatch) -> None:
    # as after a local engine's failed boot (state.remember_stopped): the boot's log, from the mirror's local copy
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    fake_docker(tmp_path, monkeypatch, DYING)
    with pytest.raises(EngineBootError, match="engine exited during boot"):
        api.up(UpRequest(engine="vllm-docker", plan=embedded_plan(), image="vllm/vllm-openai:v0.32.0",
                         port=free_port(), timeout_s=30))  # fmt: skip
    code, out, err = run("logs")
    assert code == 0 and out.splitlines() == ["INFO loading", "ERROR CUDA out of memory"], err


def test_logs_follow_of_a_container_across_down_ends_without_an_error(tmp_path, monkeypatch) -> None:
    # a docker CLI whose `logs -f` ends once the container is stopped, as docker's does; `down` in another shell stops
    # it while `logs --follow` reads. Before: 'the engine (container c1) exited; ... (`onechip down` clears its
    # record)', exit 5, of a container `down` had stopped and whose record it had already cleared
    stopped = tmp_path / "stopped"
    script = f"""#!/bin/sh
case "$1" in
  inspect) if [ -e {stopped} ]; then echo false; else echo true; fi ;;
  stop) touch {stopped} ;;
  logs) echo ready; while [ ! -e {stopped} ]; do sleep 0.05; done ;;
esac
"""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    fake_docker(tmp_path, monkeypatch, script)
    engine_state_store.save(engine_state(engine="vllm-docker", mode="docker", container="c1", pid=0,
                                         log_path=str(tmp_path / "engine.log")))  # fmt: skip
    lines = engine_state_store.log_lines(follow=True)
    assert next(lines) == "ready"
    assert "stopped container c1" in engine_state_store.down(grace_s=1).note
    assert list(lines) == []  # ended, no EngineError
