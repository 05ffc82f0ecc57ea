"""Issue 25, state under concurrency, with real `onechip` processes on one ONECHIP_HOME and the one fake vLLM
(tests/fakes/vllm_server.py) as the engine `up` launches: two `up` at once start one engine and refuse the
other in one line; two `bench` on one --out measure once; `down` during a `bench` leaves every request on
disk, failures included, and `bench --resume` measures the failed repetitions again."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factories import onechip_process
from fakes.vllm_server import FakeVllm
from onechip.engines.local import free_port, group_alive
from onechip.errors import BusyError, EndpointError
from onechip.paths import exclusive

FAKE = Path(__file__).parents[2] / "fakes" / "vllm_server.py"


def _done(proc: subprocess.Popen[str], timeout_s: float = 120) -> tuple[int, str]:
    _, err = proc.communicate(timeout=timeout_s)
    return proc.returncode, err


def _up(home: Path, port: int, *fake: str) -> subprocess.Popen[str]:
    launcher = " ".join([sys.executable, str(FAKE), *fake])
    return onechip_process(home, "up", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4",
                           "--port", str(port), "--launcher", launcher, "--force", "--timeout-s", "60")  # fmt: skip


def _last_line(err: str) -> str:
    return [line for line in err.splitlines() if line.strip()][-1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _state(home: Path) -> dict:
    return json.loads((home / "engine.json").read_text())


def test_two_up_at_once_start_one_engine_and_refuse_the_other(tmp_path: Path) -> None:
    home, ports = tmp_path / "home", [free_port(), free_port()]
    procs = [_up(home, port, "--fake-boot-s", "3") for port in ports]
    results = [_done(p) for p in procs]
    winners = [i for i, (code, _) in enumerate(results) if code == 0]
    assert len(winners) == 1, results
    code, err = results[1 - winners[0]]
    # refused while the first was starting (the lock), or after it was up (the saved state): one line either way
    assert code in (BusyError.exit_code, 5), err
    assert len([line for line in err.splitlines() if line.startswith("error:")]) == 1, err
    assert _last_line(err) in (
        f"error: another onechip `up` or `down` is changing the engine state in {home}; wait for it, then "
        "`onechip status`",
        f"error: an engine is already running at http://127.0.0.1:{ports[winners[0]]}; run `onechip down` first",
    )
    state = _state(home)
    assert state["base_url"].endswith(f":{ports[winners[0]]}")
    assert not _listening(ports[1 - winners[0]])  # the refused one started nothing
    code, err = _done(onechip_process(home, "down"))
    assert code == 0, err
    assert not group_alive(state["pid"]) and not _listening(ports[winners[0]])


def test_down_while_an_up_is_starting_is_refused_and_stops_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with exclusive(home / "engine.lock", "held by this test"):  # an `up` in the middle of its boot
        code, err = _done(onechip_process(home, "down"))
    assert code == BusyError.exit_code and _last_line(err).startswith("error: another onechip `up` or `down`")


def test_two_bench_on_one_out_measure_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    grid = ["--contexts", "16", "--clients", "2", "--reps", "2", "--output-tokens", "8", "--out", str(out)]
    with FakeVllm(itl_s=0.02) as srv:
        procs = [onechip_process(tmp_path / "home", "bench", srv.url, *grid) for _ in range(2)]
        results = [_done(p) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes[0] == 0 and codes[1] in (BusyError.exit_code, 2), results
    refused = next(err for code, err in results if code != 0)
    assert "another bench is writing" in refused or "already holds a bench run" in refused, refused
    samples = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    # 2 reps x 2 streams x (1 warm-up + 2 measured): one run's requests, none twice
    assert len(samples) == 12
    assert len({(s["rep"], s["stream"], s["seq"], s["warmup"]) for s in samples}) == 12


def test_down_during_bench_keeps_every_request_and_resume_measures_the_failed_reps(tmp_path: Path) -> None:
    home, port, out = tmp_path / "home", free_port(), tmp_path / "run"
    code, err = _done(_up(home, port, "--fake-itl-s", "0.01"))
    assert code == 0, err
    url = f"http://127.0.0.1:{port}"
    # 3 reps x 2 streams x 21 requests of 20 tokens 10 ms apart: ~13 s, so `down` (a new process) lands mid-run
    grid = ["--contexts", "16", "--clients", "2", "--reps", "3", "--requests-per-client", "20", "--output-tokens", "20"]
    bench = onechip_process(home, "bench", url, *grid, "--out", str(out))
    requests = out / "requests.jsonl"
    deadline = time.monotonic() + 60
    while (not requests.is_file() or len(requests.read_text().splitlines()) < 14) and time.monotonic() < deadline:
        time.sleep(0.05)  # into the second repetition
    # held there while `down` runs: a loaded machine started `down` so late that the bench ended first, exit 0 (2 of 2
    # copies beside CPU burners); stopped, it finds its server gone when it goes on
    bench.send_signal(signal.SIGSTOP)
    try:
        assert _done(onechip_process(home, "down"))[0] == 0
    finally:
        bench.send_signal(signal.SIGCONT)
    code, err = _done(bench)
    assert code == EndpointError.exit_code, err
    # the server went away mid-cell (a failed cell) or between repetitions (the next request could not start)
    assert _last_line(err).startswith("error: ") and f"--resume {out}" in _last_line(err), err
    first = [json.loads(line) for line in requests.read_text().splitlines()]
    failed = [s for s in first if s["status"] == "failed"]
    assert failed and len(first) >= 14  # what was measured, failures included, is on disk
    # resume with the server still gone: refused, nothing on disk changes
    before = requests.read_text()
    assert _done(onechip_process(home, "bench", "--resume", str(out)))[0] == EndpointError.exit_code
    assert requests.read_text() == before and not (out / "requests.replaced.jsonl").exists()
    # the engine back on the same port: the failed and unfinished repetitions are measured again
    assert _done(_up(home, port, "--fake-itl-s", "0.01"))[0] == 0
    try:
        code, err = _done(onechip_process(home, "bench", "--resume", str(out)))
    finally:
        _done(onechip_process(home, "down"))
    assert code == 0, err
    final = [json.loads(line) for line in requests.read_text().splitlines()]
    assert len(final) == 3 * 2 * 21 and all(s["status"] == "ok" for s in final)
    replaced = [json.loads(line) for line in (out / "requests.replaced.jsonl").read_text().splitlines()]
    assert len([s for s in replaced if s["status"] == "failed"]) == len(failed)  # the failures kept, not lost
    summary = json.loads((out / "summary.json").read_text())
    assert [(c["status"], len(c["reps"])) for c in summary["cells"]] == [("ok", 3)]


@pytest.fixture(autouse=True)
def _no_engine_left(tmp_path: Path):
    yield
    state = tmp_path / "home" / "engine.json"
    if state.is_file():  # a failed test still stops what it started
        _done(onechip_process(tmp_path / "home", "down"))


def test_status_while_an_up_holds_the_lock_says_so_not_no_engine(tmp_path: Path) -> None:
    # an `up` planning or pulling (the lock held, no engine.json yet) was reported as "no engine started by
    # `onechip up`", so a user started a second one; status now says the lock is held
    home = tmp_path / "home"
    home.mkdir()
    with exclusive(home / "engine.lock", "busy"):  # what a concurrent `up` holds before its engine exists
        proc = onechip_process(home, "status")
        out, err = proc.communicate(timeout=60)
    out = " ".join(out.split())  # rich wraps at its width
    assert proc.returncode == 1 and "holds the engine lock" in out and "no engine started" not in out, (out, err)
    out, _ = onechip_process(home, "status").communicate(timeout=60)  # the lock freed, its file left behind
    assert "no engine started by `onechip up`" in out, out
