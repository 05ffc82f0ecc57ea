"""`up --engine vllm-docker`: `docker run` (with its image pull, minutes on a fresh host) runs under the user's
--timeout-s, and a start that outruns it says that limit."""

from __future__ import annotations

import time

from factories import fake_docker, one_error_line
from onechip.engines.local import free_port

# a `docker` whose `run` pulls for PULL_S, then fails; every other command (inspect, stop, rm) does nothing
PULL_S = 60
SLOW_DOCKER = f"""#!/bin/bash
case "$1" in
  run) sleep {PULL_S}; echo "docker: the pull ended" >&2; exit 1;;
  *) exit 0;;
esac
"""


def test_a_docker_run_slower_than_up_timeout_s_fails_at_that_limit_naming_it(tmp_path, monkeypatch, run):
    """Before: `docker run` had a fixed 300 s of its own, apart from --timeout-s: a pull longer than 300 s failed
    `up --timeout-s 1800` ('command timed out after 300 s'), and here `up --timeout-s 2` waited out the pull."""
    fake_docker(tmp_path, monkeypatch, SLOW_DOCKER)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    began = time.monotonic()
    message = one_error_line(run, "up", "--engine", "vllm-docker", "--model", "gemma-4-E2B-it", "--chip", "h100",
                             "--port", str(free_port()), "--timeout-s", "2", code=5)  # fmt: skip
    # the 2 s limit and room for a loaded machine (the rest of `up` took ~1 s more under load here; 4.5 s over a 5-s
    # pull left 2.5 s for it): the pull lasts 60 s, so an `up` that waits it out still fails
    assert time.monotonic() - began < PULL_S / 2
    image = "vllm/vllm-openai:v0.32.0"
    assert message == (
        f"local shell: `docker run` (with its pull of {image}) timed out after 2 s (the limit of up --timeout-s); "
        f"give a longer --timeout-s, or `docker pull {image}` on this machine first"
    ), message


def test_a_docker_run_that_timed_out_is_killed_and_never_starts_its_container(tmp_path, monkeypatch, run):
    """Before: only the process the start ran (bash, or ssh) was killed at the time-out; `docker run` under it (under
    `sudo`, here under the fake `docker`) pulled on, then started its container after `up` had stopped nothing and
    forgotten it: an engine running with nothing on record."""
    started = tmp_path / "container-started"
    # its run's client is a child of the `docker` killed, as `docker run` is of `sudo docker run` (a host's docker)
    fake_docker(tmp_path, monkeypatch, f'#!/bin/bash\n[ "$1" = run ] && {{ sleep 3; touch {started}; }} & wait\n')
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    message = one_error_line(run, "up", "--engine", "vllm-docker", "--model", "gemma-4-E2B-it", "--chip", "h100",
                             "--port", str(free_port()), "--timeout-s", "1", code=5)  # fmt: skip
    assert "timed out after 1 s" in message, message
    time.sleep(3.5)
    assert not started.exists()
    assert not (tmp_path / "home" / "engine.json").exists()
