"""An `onechip up` killed while its engine boots (SIGKILL, the OOM killer, a crash, a closed terminal: SIGHUP) must
leave that engine on record. Before: engine.json was written only once the engine was ready, so the engine (detached
from `up`: tie_to_parent=False) kept running while `status` said 'no engine started by `onechip up`' and `down` said
'no engine was running'. Real `onechip` processes, the fake vLLM (tests/fakes/vllm_server.py) booting slowly."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from factories import fake_docker, onechip_process
from onechip.engines.local import free_port, group_alive

FAKE = Path(__file__).parents[2] / "fakes" / "vllm_server.py"


def _run(home: Path, *argv: str) -> tuple[int, str, str]:
    proc = onechip_process(home, *argv)
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


@contextlib.contextmanager
def _up_booting(home: Path, port: int, boot_s: float = 60) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """`onechip up` of a fake engine that boots for `boot_s` seconds; yields (the up process, the engine's pid, read
    from the engine's own log) once the engine runs. Whatever a failing test leaves is killed."""
    launcher = f"{sys.executable} {FAKE} --fake-boot-s {boot_s}"
    up = onechip_process(home, "up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                         "--port", str(port), "--launcher", launcher, "--force", "--timeout-s", "120")  # fmt: skip
    pid = None
    try:
        log = home / "engine" / "engine.log"
        deadline = time.monotonic() + 60
        while pid is None and time.monotonic() < deadline and up.poll() is None:
            text = log.read_text(errors="replace") if log.exists() else ""
            if "Initializing a V1 LLM engine" in text and (found := re.search(r"APIServer pid=(\d+)", text)):
                pid = int(found.group(1))
            time.sleep(0.1)
        assert pid is not None, up.communicate(timeout=30)
        time.sleep(0.5)  # `up` records the engine as the process starts: the log line comes later anyway
        yield up, pid
    finally:
        if up.poll() is None:
            up.kill()
        up.communicate(timeout=30)
        if pid is not None and group_alive(pid):
            os.killpg(pid, signal.SIGKILL)


def test_an_up_killed_mid_boot_leaves_an_engine_status_shows_and_down_stops(tmp_path: Path) -> None:
    home, port = tmp_path / "home", free_port()
    with _up_booting(home, port) as (up, pid):
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=30)
        assert group_alive(pid)  # the orphan: detached from `up`, it boots on
        code, out, err = _run(home, "status", "--json")
        st = json.loads(out)
        assert st["running"] and st["state"]["booting"] and st["state"]["pid"] == pid, (out, err)
        assert f"booting (pid {pid})" in st["note"]
        assert code == 1  # not healthy (yet)
        # a second `up` is refused in one line, as it is while a ready engine runs
        code, _, err = _run(home, "up", "--engine", "embedded", "--port", str(free_port()))
        assert code == 5 and err.strip() == (
            f"error: an engine is already running at http://127.0.0.1:{port}; run `onechip down` first"
        ), err
        code, out, err = _run(home, "down")
        assert code == 0 and f"stopped engine pid {pid}" in out, (out, err)
        assert not group_alive(pid)
        assert not (home / "engine.json").exists()


def test_an_engine_that_died_while_booting_orphaned_is_shown_dead_and_cleared(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _up_booting(home, free_port()) as (up, pid):
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=30)
        os.killpg(pid, signal.SIGKILL)  # the engine dies after `up` did (the OOM killer)
        time.sleep(0.5)
        code, out, err = _run(home, "status")
        assert code == 1 and f"not running: engine pid {pid} died while booting" in " ".join(out.split()), (out, err)
        code, out, err = _run(home, "down")
        assert code == 0 and "engine was already gone; state cleared" in out, (out, err)
        assert not (home / "engine.json").exists()


def test_an_orphan_that_finished_booting_is_shown_serving(tmp_path: Path) -> None:
    """An engine that comes up after its `up` was killed answers /health, yet no boot.json was written and its record
    stays booting. Before: `status` said 'healthy ... booting (pid N): `up` has not seen it ready', as of an engine
    still loading; it now says it is serving."""
    home, port = tmp_path / "home", free_port()
    with _up_booting(home, port, boot_s=5) as (up, pid):
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=30)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (code := _run(home, "status")[0]) != 0:
            time.sleep(0.5)
        code, out, err = _run(home, "status", "--json")
        st = json.loads(out)
        assert code == 0 and st["healthy"] and st["state"]["booting"], (out, err)
        assert st["note"].startswith(f"serving (pid {pid}, /health answers) but `up` has not seen it ready"), st
        assert not (home / "engine" / "boot.json").exists()
        code, out, _ = _run(home, "down")
        assert code == 0 and f"stopped engine pid {pid}" in out


def test_up_hung_up_mid_boot_stops_its_engine_and_forgets_it(tmp_path: Path) -> None:
    """A closed terminal sends `up` SIGHUP. Before: its default action killed `up` at once, leaving the engine
    booting with no record; it now takes SIGTERM's path (exit 128 + 1)."""
    home = tmp_path / "home"
    with _up_booting(home, free_port()) as (up, pid):
        up.send_signal(signal.SIGHUP)
        _, err = up.communicate(timeout=60)
        assert up.returncode == 129 and "hung up (SIGHUP)" in err, err
        assert not group_alive(pid)
        assert not (home / "engine.json").exists()  # a failed up that stopped its engine leaves no record
        code, out, _ = _run(home, "status")
        assert code == 1 and "no engine started by `onechip up`" in out


FAKE_DOCKER_PULLING = """#!/bin/sh
# a docker CLI whose `run` pulls its image for a minute; every call is logged
echo "$*" >> "$0.calls"
case "$1" in
  run) echo $$ > "$0.run.pid"; exec sleep 60 ;;
  inspect) echo false ;;
esac
"""


def test_an_up_killed_while_docker_run_pulls_leaves_the_container_name_down_removes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`docker run` pulls the image (minutes) before it prints the container id, and the daemon creates the container
    even if the CLI's caller is gone. Before: `up` recorded the engine only once `docker run` returned, so an `up`
    killed during the pull left nothing: `status` said 'no engine started', `down` did not remove the container. Its
    name (--name) is fixed beforehand, so it is recorded first."""
    home, docker = tmp_path / "home", fake_docker(tmp_path, monkeypatch, FAKE_DOCKER_PULLING)
    up = onechip_process(home, "up", "--engine", "vllm-docker", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                         "--port", str(free_port()), "--force", "--timeout-s", "120")  # fmt: skip
    pulling = Path(f"{docker}.run.pid")
    try:
        deadline = time.monotonic() + 60
        while not pulling.exists() and time.monotonic() < deadline and up.poll() is None:
            time.sleep(0.1)
        assert pulling.exists(), up.communicate(timeout=30)
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=30)
        code, out, err = _run(home, "status", "--json")
        st = json.loads(out)
        assert code == 1 and st["state"]["container"] == "onechip-vllm" and st["state"]["booting"], (out, err)
        assert st["note"] == (  # `status` cannot tell a killed `up` from one still pulling: both are said
            "container onechip-vllm does not run: the `up` that recorded it may still be starting it (an image pull); "
            "if that `up` was stopped, it died while booting or was never started, and `onechip down` clears it"
        ), st["note"]
        # a second `up` would record its own engine over it, and its container may still come: refused
        code, _, err = _run(home, "up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                            "--port", str(free_port()), "--launcher", "false", "--force")  # fmt: skip
        assert code == 5 and err.strip() == (
            "error: container onechip-vllm is on record as booting, recorded by an `up` that may still pull its image "
            "or was stopped; run `onechip down` first (it removes the container if it came)"
        ), err
        code, out, err = _run(home, "down")
        assert code == 0 and "container onechip-vllm on this machine was already gone" in out, (out, err)  # never came
        assert "rm -f onechip-vllm" in Path(f"{docker}.calls").read_text()
        assert not (home / "engine.json").exists()
    finally:
        if up.poll() is None:
            up.kill()
        up.communicate(timeout=30)
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pulling.read_text()), signal.SIGKILL)


FAKE_DOCKER_NAME_TAKEN = """#!/bin/sh
# a docker CLI beside a container named onechip-vllm that this `up` did not start (docker's own refusal)
echo "$*" >> "$0.calls"
case "$1" in
  run) echo 'docker: Error response from daemon: Conflict. The container name "/onechip-vllm" is already in use by \
container "0123456789ab". You have to remove (or rename) that container to be able to reuse that name.' >&2; exit 125 ;;
  inspect) echo true ;;
esac
"""


def test_an_up_whose_container_name_is_taken_never_removes_that_container(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`docker run --name onechip-vllm` is refused when a container of that name exists (started by another onechip
    home, or by hand). Before: the failed start was stopped as this `up`'s own engine, `docker rm -f onechip-vllm`,
    removing a container that may be serving. It is now left alone, and said in one line."""
    home, docker = tmp_path / "home", fake_docker(tmp_path, monkeypatch, FAKE_DOCKER_NAME_TAKEN)
    code, out, err = _run(home, "up", "--engine", "vllm-docker", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                          "--port", str(free_port()), "--force", "--timeout-s", "120")  # fmt: skip
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 5 and len(errors) == 1 and "Traceback" not in err, err
    assert "a container named onechip-vllm already exists" in errors[0], errors
    calls = Path(f"{docker}.calls").read_text().splitlines()
    assert not [c for c in calls if c.startswith(("rm", "stop"))], calls
    assert not (home / "engine.json").exists()


def test_an_up_killed_between_the_launch_and_the_record_leaves_no_engine_running(tmp_path: Path) -> None:
    """SIGKILL lands after the engine's process exists but before `up` has recorded it (on_launched: engine.json,
    fsynced). Before: the engine, detached from `up`, served on with nothing on record (`status`: 'no engine', `down`
    stopped nothing; 2 of 3 `up`s SIGKILLed as engine.log appeared). Now the process waits for `up`'s word, given
    only once the record is saved, and without it never runs the serve program."""
    port, pid_file = free_port(), tmp_path / "pid"
    script = f"""
import os, signal, sys
from pathlib import Path
from onechip.engines.local import LocalVllmEngine
engine = LocalVllmEngine(Path({str(tmp_path / "engine.log")!r}), "m", Path({str(tmp_path / "engine.log")!r}),
                         argv=[sys.executable, {str(FAKE)!r}, "--port", "{port}"], port={port}, tie_to_parent=False)
def killed() -> None:
    Path({str(pid_file)!r}).write_text(str(engine.pid))
    os.kill(os.getpid(), signal.SIGKILL)
engine.on_launched = killed
engine.start()
"""
    src = Path(__file__).parents[3] / "src"
    up = subprocess.run([sys.executable, "-c", script], env={**os.environ, "PYTHONPATH": str(src)}, timeout=60)
    assert up.returncode == -signal.SIGKILL
    pid = int(pid_file.read_text())
    try:
        deadline = time.monotonic() + 10
        while group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_alive(pid)
        assert "APIServer" not in (tmp_path / "engine.log").read_text()  # the serve program never ran
    finally:
        if group_alive(pid):
            os.killpg(pid, signal.SIGKILL)
