"""tests/fakes/fake_docker.py follows real docker where onechip reads it: `docker logs -f` of a container streams
until the container stops, then ends (exit 0); of a container already stopped it prints the log and ends; of one
removed (`docker rm -f`) it fails with 'Error response from daemon: No such container: NAME', exit 1 (Docker CLI
reference, `docker container logs`; moby#7020: 'the streaming stops when the container stops'). The fake's
`tail -F` never ended, so no test could see a follow end with its container."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from factories import engine_state, fake_docker
from onechip.engines import state as engine_state_store
from onechip.engines.local import free_port

FAKE = Path(__file__).resolve().parent / "fake_docker.py"
WAIT_S = 30  # a bound on a follow that should end at once: reached only when it does not end at all


@pytest.fixture
def docker(tmp_path, monkeypatch):
    """The fake docker as `docker` first on PATH, its state under tmp_path, its containers serving at once."""
    monkeypatch.setenv("FAKE_DOCKER_STATE", str(tmp_path / "docker-state"))
    monkeypatch.setenv("FAKE_DOCKER_BOOT_DELAY_S", "0")
    fake_docker(tmp_path, monkeypatch, f'#!/bin/sh\nexec {sys.executable} {FAKE} "$@"\n')

    def _docker(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=WAIT_S)

    yield _docker
    _docker("rm", "-f", "c1")


def _run(docker) -> None:
    done = docker("run", "-d", "--name", "c1", "vllm/vllm-tpu:fake", "vllm", "serve", "m", "--port", str(free_port()))
    assert done.returncode == 0, done.stderr


def test_logs_follow_ends_when_the_container_stops(docker):
    _run(docker)
    follow = subprocess.Popen(["docker", "logs", "-f", "c1"], stdout=subprocess.PIPE, text=True)
    try:
        assert docker("stop", "c1").returncode == 0
        follow.wait(timeout=WAIT_S)
    finally:
        follow.kill()
        follow.communicate()
    assert follow.returncode == 0


def test_logs_follow_of_a_stopped_container_prints_it_and_ends(docker):
    _run(docker)
    assert docker("stop", "c1").returncode == 0
    done = docker("logs", "-f", "c1")
    assert done.returncode == 0 and done.stdout == docker("logs", "c1").stdout


def test_logs_of_a_removed_container_say_no_such_container(docker):
    _run(docker)
    assert docker("rm", "-f", "c1").returncode == 0
    for argv in (["logs", "c1"], ["logs", "-f", "c1"]):
        done = docker(*argv)
        assert (done.returncode, done.stderr) == (1, "Error response from daemon: No such container: c1\n"), argv


def test_onechip_logs_follow_across_down_ends_with_the_container(docker, tmp_path, monkeypatch):
    # `logs --follow` in one shell, `down` (docker rm -f) in another: the follow ends, without an error, as it does
    # with real docker (state.log_lines; test_logs_after_remote_down has it with a docker of a few shell lines)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    _run(docker)
    engine_state_store.save(engine_state(engine="vllm-docker", mode="docker", container="c1", pid=0,
                                         log_path=str(tmp_path / "engine.log")))  # fmt: skip
    lines = engine_state_store.log_lines(follow=True)
    next(lines)  # the follow reads
    assert "stopped container c1" in engine_state_store.down(grace_s=5).note
    rest = list(lines)  # ended, no EngineError
    assert all("No such container" not in line for line in rest), rest
