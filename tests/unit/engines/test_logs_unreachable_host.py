"""`onechip logs` and `down` of an engine `up` started on an SSH host that does not answer: a one-line error naming
the host and how to retry, never ssh's own complaint printed (or summarized) as the engine's log."""

from __future__ import annotations

import pytest

from factories import engine_state, fake_docker, one_error_line
from onechip.engines import state as engine_state_store
from onechip.engines.local import free_port


@pytest.mark.parametrize("argv", [("logs",), ("logs", "--summary"), ("logs", "--follow")])
def test_logs_of_an_engine_on_an_unreachable_host_is_one_error_line(run, tmp_path, monkeypatch, argv) -> None:
    # was 'ssh: connect to host 127.0.0.1 port N: Connection refused' printed as the log, exit 0; --summary read
    # it as a 1-line log of the local log_path: '/nonexistent/engine.log: 1 line / no verdict', exit 0
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    closed = free_port()  # nothing listens: ssh is refused at once, as by a host that is down
    engine_state_store.save(engine_state(engine="vllm@ssh", mode="remote-process", host="u@127.0.0.1",
                                         ssh_options=[f"Port={closed}"], remote_pid=4242,
                                         remote_log="~/.onechip/engine/engine.log"))  # fmt: skip
    line = one_error_line(run, *argv, code=5)
    assert line.startswith("cannot read the engine log on u@127.0.0.1: ssh u@127.0.0.1: "), line
    assert "Connection refused" in line and line.endswith("run `onechip logs` again once u@127.0.0.1 answers")


def test_down_of_an_engine_on_an_unreachable_host_says_it_is_kept_and_how_to_retry(run, tmp_path, monkeypatch) -> None:
    # was 'ssh u@127.0.0.1: ssh: connect to host ...: Connection refused' alone: neither that the engine may still run
    # on record nor what to do, where `down` of a replica on such a host says both (replicas.down)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    closed = free_port()
    away = engine_state(engine="vllm@ssh", mode="remote-process", host="u@127.0.0.1", ssh_options=[f"Port={closed}"],
                        remote_pid=4242, remote_log="~/.onechip/engine/engine.log")  # fmt: skip
    engine_state_store.save(away)
    line = one_error_line(run, "down", code=5)
    assert line.startswith("engine on u@127.0.0.1: not stopped (ssh u@127.0.0.1: "), line
    assert line.endswith("it stays on record: run `onechip down` again once u@127.0.0.1 answers"), line
    assert engine_state_store.load() == away


# docker's own answer when it cannot read a container's log (on its stderr, exit 1), which `docker logs N 2>&1`
# (remote.logs_command) merges into what is read: the daemon down, or the container removed
NO_CONTAINER = "Error response from daemon: No such container: c1"


@pytest.mark.parametrize("argv", [("logs",), ("logs", "--summary")])
@pytest.mark.parametrize("where", ["container", "host file"])
def test_logs_whose_reader_fails_is_an_error_not_the_engine_log(run, tmp_path, monkeypatch, argv, where) -> None:
    # was the reader's complaint printed (or summarized) as the engine's log, exit 0: `docker logs` of a removed
    # container ('container c1: 1 line, no verdict') and `tail` of a host log that is not there, as ssh's own was
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    if where == "container":
        fake_docker(tmp_path, monkeypatch, f'#!/bin/sh\necho "{NO_CONTAINER}" >&2\nexit 1\n')
        engine_state_store.save(engine_state(engine="vllm-docker", mode="docker", container="c1"))
        said = NO_CONTAINER
    else:  # this machine's shell (no --host), the log on record gone: tail's 'cannot open ...', exit 1
        gone = tmp_path / "engine.log"
        engine_state_store.save(engine_state(engine="vllm", mode="remote-process", remote_log=str(gone)))
        said = f"tail: cannot open '{gone}' for reading: No such file or directory"
    line = one_error_line(run, *argv, code=5)
    assert line.startswith("cannot read the engine log") and line.endswith(said), line
