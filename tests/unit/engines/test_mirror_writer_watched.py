"""The writer of a host engine's log mirror (remote.HostEngine._start_mirror: a local.LogWriter) was on no record:
`status` could not say it was gone (killed: the local copy `logs` reads after `down` grew no more), and `down` returned
without waiting for it to write the mirror's last lines. `down` of a replica set waited for each replica's writer in
turn, up to LOG_SYNC_S (5 s) each: N replicas, N x 5 s."""

from __future__ import annotations

import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

import factories
from factories import engine_state
from onechip.engines import local, remote, replicas, startup, state
from onechip.engines.local import free_port
from onechip.procs import start_ticks

# a docker CLI whose container runs: `docker logs -f` gives one line and waits, inspect says it runs, stop and rm work
FAKE_DOCKER = """#!/bin/sh
case "$1" in
  logs) echo 'INFO serving'; [ "$2" = -f ] && exec sleep 600 ;;
  inspect) echo true ;;
esac
"""


def _gone_pid() -> tuple[int, int | None]:
    """The pid and start time of a process that has exited (a writer killed), reaped."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    started = start_ticks(proc.pid)
    proc.kill()
    proc.wait()
    return proc.pid, started


def _container(tmp_path: Path, **fields) -> object:
    return engine_state(
        engine="vllm-docker", mode="docker", container="onechip-vllm", log_path=str(tmp_path / "engine.log"), **fields
    )


def test_a_host_engine_s_record_names_its_mirror_s_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    factories.fake_docker(tmp_path, monkeypatch, FAKE_DOCKER)
    ready = startup.prepare(
        factories.embedded_plan(), "vllm-docker", port=free_port(), image="vllm/vllm-openai:v0.32.0"
    )
    engine = ready.engine(tmp_path / "engine.log")
    assert isinstance(engine, remote.HostEngine)
    engine._start_mirror()
    try:
        assert engine.mirror_writer is not None
        writer = engine.mirror_writer.process
        recorded = engine.state()
        assert (recorded.log_writer_pid, recorded.log_writer_started) == (writer.pid, start_ticks(writer.pid))
    finally:
        engine._stop_mirror()


def test_status_says_a_host_engine_s_mirror_writer_is_gone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    factories.fake_docker(tmp_path, monkeypatch, FAKE_DOCKER)
    mirror = subprocess.Popen(["sleep", "600"], start_new_session=True)  # the mirror copies on
    writer, started = _gone_pid()
    try:
        state.save(
            _container(tmp_path, mirror_pid=mirror.pid, mirror_started=start_ticks(mirror.pid),
                       log_writer_pid=writer, log_writer_started=started)
        )  # fmt: skip
        note = state.status().note
    finally:
        mirror.kill()
        mirror.wait()
    assert f"the log writer (pid {writer}) is gone: {tmp_path / 'engine.log'} no longer grows" in note, note


def test_down_of_a_host_engine_waits_for_its_mirror_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer here writes the mirror's last line 1 s after the mirror exits (a writer with lines to copy yet)."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    factories.fake_docker(tmp_path, monkeypatch, FAKE_DOCKER)
    log = tmp_path / "engine.log"
    log.write_text("")
    mirror = subprocess.Popen(["sleep", "600"], start_new_session=True)
    script = f'while kill -0 {mirror.pid} 2>/dev/null; do sleep 0.1; done; sleep 1; echo "last words" >> {log}'
    writer = subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True)
    state.save(
        _container(tmp_path, mirror_pid=mirror.pid, mirror_started=start_ticks(mirror.pid),
                   log_writer_pid=writer.pid, log_writer_started=start_ticks(writer.pid))
    )  # fmt: skip
    try:
        state.down()
        assert log.read_text() == "last words\n"  # the local copy `logs` reads after `down`
    finally:
        for proc in (mirror, writer):
            proc.kill()
            proc.wait()


def test_down_of_a_replica_set_waits_for_its_writers_together(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three replicas whose writers never exit (a process left holding the output): `down` gives them LOG_SYNC_S in
    all, on a clock of the test's own (local.time: its sleeps advance it), not 3 x LOG_SYNC_S."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    clock = SimpleNamespace(now=0.0)

    def sleep(seconds: float) -> None:
        clock.now += seconds

    monkeypatch.setattr(local, "time", SimpleNamespace(monotonic=lambda: clock.now, sleep=sleep))

    def stop_group(pgid: int, *_: object) -> None:  # each engine gone at once: the clock counts the writers' wait
        for proc in engines:
            if proc.pid == pgid:
                proc.kill()
                proc.wait()

    for module in (state, replicas):
        if hasattr(module, "stop_group"):
            monkeypatch.setattr(module, "stop_group", stop_group)
    procs = [subprocess.Popen(["sleep", "600"], start_new_session=True) for _ in range(6)]
    engines, writers = procs[:3], procs[3:]
    try:
        launch_set = replicas.prepare_replicas(factories.embedded_plan(), "embedded", 3, share=1, cores=[0, 0, 0])[0]
        recorded = [
            engine_state(pid=e.pid, pid_started=start_ticks(e.pid), log_writer_pid=w.pid,
                         log_writer_started=start_ticks(w.pid))
            for e, w in zip(engines, writers, strict=True)
        ]  # fmt: skip
        replicas.save(replicas.ReplicaSetState(launch=launch_set, replicas=recorded, router=engine_state()))
        notes = replicas.down()
        waited_s = clock.now
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    assert all("stopped pid" in note for note in notes[:3]), notes
    assert local.LOG_SYNC_S <= waited_s < local.LOG_SYNC_S + 0.5, waited_s  # one bound for the three, not three
