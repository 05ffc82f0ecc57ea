"""An `onechip up --replicas N` killed while its replicas boot (SIGKILL, the OOM killer, a crash) must leave them on
record. Before: replicas.json (and engine.json, the router) were written only once the router was ready, so the
replicas (detached from `up`) kept running while `status` said 'no engine started by `onechip up`', `down` said 'no
engine was running' and stopped none of them, and a second `up --replicas N` booted another set beside them. Real
`onechip` processes, the fake vLLM (tests/fakes/vllm_server.py) booting slowly as each replica, the real vllm-router."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_replicas_lock import _ports
from test_up_killed_mid_boot import FAKE, _run

from factories import onechip_process
from onechip.engines import router
from onechip.engines.local import free_port, group_alive

pytestmark = pytest.mark.skipif(
    shutil.which(router.router_program()) is None and not Path(router.router_program()).is_file(),
    reason="vllm-router is not installed",
)


def _up_replicas(home: Path, port: int, *more: str) -> subprocess.Popen[str]:
    launcher = f"{sys.executable} {FAKE} --fake-boot-s 60"
    return onechip_process(home, "up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                           "--replicas", "2", "--port", str(port), "--router-port", str(free_port()), "--launcher",
                           launcher, "--force", "--timeout-s", "120", *more)  # fmt: skip


def _pid(log: Path) -> int | None:
    text = log.read_text(errors="replace") if log.exists() else ""
    found = re.search(r"APIServer pid=(\d+)", text)
    return int(found.group(1)) if found and "Initializing a V1 LLM engine" in text else None


@contextlib.contextmanager
def _replicas_booting(home: Path) -> Iterator[tuple[subprocess.Popen[str], list[int]]]:
    """`up --replicas 2` of fake engines that boot for 60 s; yields (the up process, each replica's pid, read from its
    own log) once both run. Whatever a failing test leaves is killed (only the pids this test started)."""
    up = _up_replicas(home, _ports(2))
    pids: list[int | None] = [None, None]
    try:
        deadline = time.monotonic() + 60
        while None in pids and time.monotonic() < deadline and up.poll() is None:
            pids = [_pid(home / "replicas" / f"replica-{k}.log") for k in range(2)]
            time.sleep(0.1)
        assert None not in pids, up.communicate(timeout=30)
        time.sleep(0.5)  # `up` records each replica as its process starts: the log line comes later anyway
        yield up, [pid for pid in pids if pid is not None]
    finally:
        if up.poll() is None:
            up.kill()
        up.communicate(timeout=30)
        for pid in pids:
            if pid is not None and group_alive(pid):
                os.killpg(pid, signal.SIGKILL)


def test_an_up_replicas_killed_mid_boot_leaves_a_set_status_shows_and_down_stops(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _replicas_booting(home) as (up, pids):
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=30)
        assert all(group_alive(pid) for pid in pids)  # the orphans: detached from `up`, they boot on
        code, out, err = _run(home, "status", "--json")
        st = json.loads(out)
        assert code == 1 and st["running"], (out, err)
        assert st["note"].startswith("replica set booting (2 of its processes run)"), st["note"]
        assert [r["pid"] for r in st["replicas"]] == pids and all(r["alive"] for r in st["replicas"])
        assert all(r["note"].startswith("booting: `up` has not seen it ready") for r in st["replicas"])
        assert st["router"]["pid"] is None and not st["router"]["alive"]
        # a second `up --replicas 2` is refused in one line, not adopted as a ready set (revive); so is a single up
        expected = ("error: a set of 2 replicas recorded while booting by an `up` that is gone (2 of its processes "
                    "still boot); run `onechip down` first")  # fmt: skip
        for again in (_up_replicas(home, _ports(2)), onechip_process(home, "up", "--port", str(free_port()))):
            _, err = again.communicate(timeout=60)
            assert again.returncode == 5 and err.strip() == expected, err
        code, out, err = _run(home, "down")
        assert code == 0, (out, err)
        assert " ".join(out.split()) == (
            f"replica 0: stopped pid {pids[0]}; replica 1: stopped pid {pids[1]}; router: never started"
        ), out
        assert not any(group_alive(pid) for pid in pids)
        assert not (home / "replicas.json").exists() and not (home / "engine.json").exists()


def test_replicas_that_died_while_booting_orphaned_are_shown_dead_and_cleared(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _replicas_booting(home) as (up, pids):
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=30)
        for pid in pids:  # they die after `up` did (the OOM killer)
            os.killpg(pid, signal.SIGKILL)
        time.sleep(0.5)
        code, out, err = _run(home, "status")
        text = " ".join(out.split())
        assert code == 1 and "not running: replica set died while booting (stale state)" in text, (out, err)
        assert text.count("died while booting") == 3, text  # the set, then each replica
        code, out, err = _run(home, "down")
        assert code == 0 and "replica 0: was already gone; replica 1: was already gone" in out, (out, err)
        assert not (home / "replicas.json").exists()


def test_an_up_replicas_stopped_mid_boot_stops_every_replica_and_forgets_them(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with _replicas_booting(home) as (up, pids):
        assert (home / "replicas.json").exists()  # recorded while booting
        up.send_signal(signal.SIGTERM)
        up.communicate(timeout=60)
        assert up.returncode == 128 + signal.SIGTERM
        assert not any(group_alive(pid) for pid in pids)
        assert not (home / "replicas.json").exists() and not (home / "engine.json").exists()
        code, out, _ = _run(home, "status")
        assert code == 1 and "no engine started by `onechip up`" in out


def test_an_up_replicas_killed_while_it_brings_a_replica_back_leaves_it_on_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`up --replicas N` over a saved set brings back the replicas that died (replicas.revive). Before, the replica it
    started was recorded only once every member was back: an `up` killed meanwhile (minutes, a real boot) left it
    running on no record, `down` said 'replica 0: was already gone' and it served on, holding its port."""
    from factories import embedded_plan, engine_state
    from onechip import api
    from onechip.engines import replicas
    from onechip.schemas.inputs import build_request
    from onechip.schemas.requests import UpRequest

    home = tmp_path / "home"
    home.mkdir()
    launcher = f"{sys.executable} {FAKE} --fake-boot-s 60"
    fields = {"engine": "vllm", "plan": embedded_plan(), "replicas": 2, "port": _ports(2), "launcher": launcher,
              "router_port": free_port(), "dry_run": True}  # fmt: skip
    launch = api.up(build_request(UpRequest, fields, user_input=False)).replica_set
    assert launch is not None
    dead = engine_state(engine="vllm", log_path=str(home / "replicas" / "replica-0.log"))  # every member died
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    replicas.save(replicas.ReplicaSetState(launch=launch, replicas=[dead, dead], router=dead))
    up = onechip_process(home, "up", "--replicas", "2", "--timeout-s", "120")
    pid = None
    try:
        deadline = time.monotonic() + 60
        while pid is None and time.monotonic() < deadline and up.poll() is None:
            pid = _pid(home / "replicas" / "replica-0.log")
            time.sleep(0.1)
        assert pid is not None, up.communicate(timeout=30)
        time.sleep(0.5)
        up.send_signal(signal.SIGKILL)
        up.wait(timeout=30)
        assert group_alive(pid)  # the orphan boots on
        saved = json.loads((home / "replicas.json").read_text())
        assert saved["replicas"][0]["pid"] == pid and saved["replicas"][0]["booting"], saved["replicas"][0]
        code, out, err = _run(home, "down")
        assert code == 0 and f"replica 0: stopped pid {pid}" in out, (out, err)
        assert not group_alive(pid)
    finally:
        if up.poll() is None:
            up.kill()
        up.communicate(timeout=30)
        if pid is not None and group_alive(pid):
            os.killpg(pid, signal.SIGKILL)
