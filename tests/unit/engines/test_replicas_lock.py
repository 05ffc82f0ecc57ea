"""Issue 23 with issue 25's lock: `up --replicas N` takes the engine-state lock as a single `up` does (after every
input check, around the running check, the boot and the saved state), with real `onechip` processes on one
ONECHIP_HOME, the fake vLLM (tests/fakes/vllm_server.py) as each replica and the real vllm-router in front:
a second `up --replicas` while one is starting is refused in one line with BusyError's exit code and starts
nothing; a refused input takes no lock and writes nothing."""

from __future__ import annotations

import json
import shutil
import socket
import sys
from pathlib import Path

import pytest
from test_state_concurrency import FAKE, _done, _last_line

from factories import onechip_process
from onechip.engines import router
from onechip.engines.local import free_port, group_alive
from onechip.errors import BusyError
from onechip.paths import exclusive

pytestmark = pytest.mark.skipif(
    shutil.which(router.router_program()) is None and not Path(router.router_program()).is_file(),
    reason="vllm-router is not installed",
)
BUSY = (
    "error: another onechip `up` or `down` is changing the engine state in {home}; wait for it, then `onechip status`"
)


def _ports(n: int, *avoid: int) -> int:
    """A port P with P .. P+n-1 free (replica K listens on P + K), clear of every port in `avoid` (ports picked
    before it that nothing listens on yet: the other set's replicas, a router's)."""
    while True:
        port = free_port()
        clear = not any(port <= a < port + n for a in avoid)
        if clear and port + n < 65535 and not any(_listening(port + k) for k in range(n)):
            return port


def _up_replicas(home: Path, port: int, router_port: int, *fake: str) -> object:
    launcher = " ".join([sys.executable, str(FAKE), *fake])
    return onechip_process(home, "up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                           "--replicas", "2", "--port", str(port), "--router-port", str(router_port), "--launcher",
                           launcher, "--force", "--timeout-s", "60")  # fmt: skip


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_up_replicas_while_another_up_holds_the_lock_is_refused_and_starts_nothing(tmp_path: Path) -> None:
    home, port = tmp_path / "home", _ports(2)
    home.mkdir()
    with exclusive(home / "engine.lock", "held by this test"):  # an `up` in the middle of its boot
        code, err = _done(_up_replicas(home, port, _ports(1, port, port + 1)))
    assert code == BusyError.exit_code, err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1
    assert _last_line(err) == BUSY.format(home=home)
    assert not _listening(port) and not _listening(port + 1)
    assert not (home / "replicas.json").exists() and not (home / "engine.json").exists()


def test_two_up_replicas_at_once_start_one_set_and_refuse_the_other(tmp_path: Path) -> None:
    home = tmp_path / "home"
    first = _ports(2)
    ports = [first, _ports(2, first, first + 1)]
    taken = [p + k for p in ports for k in range(2)]
    routers = [_ports(1, *taken)]
    routers.append(_ports(1, *taken, routers[0]))
    procs = [
        _up_replicas(home, port, router, "--fake-boot-s", "5") for port, router in zip(ports, routers, strict=True)
    ]
    results = [_done(p, 180) for p in procs]
    winners = [i for i, (code, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results
    code, err = results[1 - winners[0]]
    # the other came while the first was booting (5 s): refused by the lock, in one line
    assert code == BusyError.exit_code, err
    assert _last_line(err) == BUSY.format(home=home)
    saved = json.loads((home / "replicas.json").read_text())
    urls = [r["base_url"] for r in saved["replicas"]]
    won = ports[winners[0]]
    # replica 1 on won + 1, or the next port up that was free when `up` looked: these ports are in the kernel's
    # ephemeral range, where any process's outgoing connection can hold one for a moment (CI once saw + 2)
    assert urls[0] == f"http://127.0.0.1:{won}" and won < int(urls[1].rsplit(":", 1)[1]) <= won + 8, urls
    lost = ports[1 - winners[0]]
    assert not _listening(lost) and not _listening(lost + 1)  # the refused one started nothing
    pids = [r["pid"] for r in saved["replicas"]] + [saved["router"]["pid"]]
    code, err = _done(onechip_process(home, "down"))
    assert code == 0, err
    assert not any(group_alive(pid) for pid in pids)


def test_a_refused_replica_input_takes_no_lock_and_writes_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with exclusive(home / "engine.lock", "held by this test"):  # the input is refused before the lock is asked for
        proc = onechip_process(home, "up", "--engine", "vllm-docker", "--model", "google/gemma-4-E2B-it", "--chip",
                               "v5e-4", "--replicas", "3", "--host", "u@h")  # fmt: skip
        code, err = _done(proc)
    assert code == 2 and "does not split 4 chip" in _last_line(err), err
    assert sorted(p.name for p in home.iterdir()) == ["engine.lock"]


@pytest.fixture(autouse=True)
def _no_engine_left(tmp_path: Path):
    yield
    if (tmp_path / "home" / "engine.json").is_file():  # a failed test still stops what it started
        _done(onechip_process(tmp_path / "home", "down"))
