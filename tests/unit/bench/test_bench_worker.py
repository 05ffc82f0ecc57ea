"""Client workers and time-boxed cells: streams split across processes, --duration-s / --warmup-s, resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from test_bench_known_timings import ATTEMPTS
from test_bench_runner import config

from fakes.vllm_server import FakeVllm
from onechip.bench import run_grid, worker
from onechip.bench.runner import arrival_offsets, load_samples
from onechip.bench.worker import WorkerPool, split_streams
from onechip.errors import Interrupted, OnechipError
from onechip.progress import ProgressEvent
from onechip.schemas.bench import RepJob

# The worker's clocks start a little before the first send it records (session set-up) and each deadline is
# checked a little before the next send; on a loaded 2-core machine "a little" can reach a few ms.
SLACK_S = 0.02


def worker_children() -> list[int]:
    """Pids of live `onechip.bench.worker` processes whose parent is this test process (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"onechip.bench.worker" in cmdline and ppid == os.getpid():
            found.append(int(entry.name))
    return found


def test_split_streams_is_round_robin_and_never_empty() -> None:
    assert split_streams(5, 2) == [[0, 2, 4], [1, 3]]
    assert split_streams(2, 4) == [[0], [1]]
    assert split_streams(1, 1) == [[0]]


def test_two_workers_measure_the_same_grid_as_one_process(fake_server: FakeVllm, tmp_path: Path) -> None:
    fake_server.itl_s = 0.001
    run = run_grid(config(fake_server, contexts=[16], clients=[1, 3], reps=2, workers=2), tmp_path)
    samples = load_samples(tmp_path / "requests.jsonl")
    # (1 + 3 clients) x 2 reps x (1 warm-up + 2 measured), every one exact
    assert len(samples) == 4 * 2 * 3
    assert all(s.status == "ok" and s.completion_tokens == 5 and s.prompt_tokens == 16 for s in samples)
    three = [s for s in samples if s.clients == 3 and s.rep == 0]
    assert sorted({s.stream for s in three}) == [0, 1, 2]
    assert sorted(s.stream for s in three if s.last_in_stream) == [0, 1, 2]
    assert [c.status for c in run.cells] == ["ok", "ok"] and run.cells[1].ttft_ms.n == 3 * 2 * 2
    assert worker_children() == []  # the pool is reaped when the run ends


def test_the_pool_starts_only_the_workers_a_cell_uses(fake_server: FakeVllm, tmp_path: Path, monkeypatch) -> None:
    # --workers 123 --clients 1 started 123 client processes (30 s and ~5 GiB on 2 cores) to use one of them:
    # a cell's streams go to min(clients, workers) workers (split_streams), so the pool starts that many, no more
    started: list[int] = []
    spawn = asyncio.create_subprocess_exec

    async def counted(*args, **kwargs):
        started.append(1)
        return await spawn(*args, **kwargs)

    monkeypatch.setattr(worker.asyncio, "create_subprocess_exec", counted)
    run = run_grid(config(fake_server, contexts=[16], clients=[1, 2], reps=1, workers=8), tmp_path)
    assert [c.status for c in run.cells] == ["ok", "ok"]
    assert len(started) == len(split_streams(2, 8)) == 2  # the largest cell's share, started as it came
    assert worker_children() == []


def test_duration_and_warmup_seconds_bound_each_stream(fake_server: FakeVllm, tmp_path: Path) -> None:
    # each request: 10 tokens, 1 ms apart (~12 ms); warm-up 0.1 s, then measured requests for 0.3 s
    fake_server.itl_s = 0.001
    cfg = config(fake_server, contexts=[16], clients=[2], reps=1, output_tokens=10, duration_s=0.3, warmup_s=0.1)
    run = run_grid(cfg, tmp_path)
    samples = load_samples(tmp_path / "requests.jsonl")
    start = min(s.t_send for s in samples)
    begins = []
    for stream in (0, 1):
        warm = [s for s in samples if s.stream == stream and s.warmup]
        measured = sorted((s for s in samples if s.stream == stream and not s.warmup), key=lambda s: s.t_send)
        # warm-up requests are sent only in the first 0.1 s; the first one after it is measured
        assert warm and all(s.t_send < start + 0.1 + SLACK_S for s in warm)
        assert measured[0].t_send >= start + 0.1 - SLACK_S
        # measured requests are sent until 0.3 s after the warm-up ended, and the last one says so
        begin = measured[0].t_send
        begins.append(begin)
        assert all(s.t_send < begin + 0.3 + SLACK_S for s in measured)
        assert measured[-1].t_done is not None and measured[-1].t_done >= begin + 0.3 - SLACK_S
        assert [s.last_in_stream for s in measured] == [False] * (len(measured) - 1) + [True]
    cell = run.cells[0]
    # the window (all streams busy) starts when the later stream's warm-up ends
    assert cell.status == "ok" and 0.3 - (max(begins) - min(begins)) - SLACK_S <= cell.reps[0].window_s < 0.4


def test_a_torn_timed_rep_is_rerun_on_resume(fake_server: FakeVllm, tmp_path: Path) -> None:
    fake_server.itl_s = 0.001
    cfg = config(fake_server, contexts=[16], clients=[2], reps=2, duration_s=0.1, warmup_requests=0)
    run_grid(cfg, tmp_path)
    path = tmp_path / "requests.jsonl"
    lines = path.read_text().splitlines()
    rep0 = [x for x in lines if json.loads(x)["rep"] == 0]
    # a crash before stream 1 of rep 1 ended: its last request is missing
    rep1 = [
        x
        for x in lines
        if json.loads(x)["rep"] == 1 and not (json.loads(x)["stream"] == 1 and json.loads(x)["last_in_stream"])
    ]
    path.write_text("\n".join(rep0 + rep1) + "\n")
    sent = len(fake_server.chat_requests)
    run = run_grid(cfg, tmp_path, resume=True)
    again = [s for s in load_samples(path) if s.rep == 1]
    assert sorted(s.stream for s in again if s.last_in_stream) == [0, 1]  # rep 1 ran again, whole
    assert len(fake_server.chat_requests) - sent == 1 + len(again)  # probe + rep 1 only
    assert [x for x in path.read_text().splitlines() if json.loads(x)["rep"] == 0] == rep0
    assert run.cells[0].status == "ok" and len(run.cells[0].reps) == 2


def test_open_loop_duration_sends_every_arrival_before_the_end() -> None:
    assert arrival_offsets(None, 20.0, "constant", "s", duration_s=0.5) == pytest.approx(
        [0.0, 0.05, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45]
    )
    poisson = arrival_offsets(None, 100.0, "poisson", "s", duration_s=2.0)
    assert poisson and max(poisson) < 2.0 and 140 < len(poisson) < 260  # Poisson(200): +-4 sigma


def test_a_worker_that_dies_mid_job_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    die = "import sys; sys.stdin.readline(); sys.stderr.write('worker exploded\\n'); sys.exit(3)"
    monkeypatch.setattr(worker, "WORKER_ARGV", [sys.executable, "-c", die])
    job = RepJob(
        base_url="http://127.0.0.1:9",
        model="m",
        context_tokens=16,
        clients=1,
        rep=0,
        streams=[0],
        prompt_tag="t",
        filler_words=1,
        prompt_tokens_target=16,
        output_tokens=1,
        extras=True,
        continuous_usage=True,
        request_timeout_s=1.0,
        warmup_requests=0,
        warmup_s=None,
        requests_per_client=1,
        duration_s=None,
    )

    async def go() -> None:
        pool = WorkerPool(1)
        try:
            await pool.run([job], lambda s: None)
        finally:
            await pool.close()

    with pytest.raises(OnechipError, match=r"exited with 3 mid-job: worker exploded"):
        asyncio.run(go())


def test_ctrl_c_with_workers_keeps_requests_and_leaves_no_worker(fake_server: FakeVllm, tmp_path: Path) -> None:
    fake_server.itl_s = 0.002
    cfg = config(fake_server, contexts=[16], clients=[2], reps=2, workers=2)  # 2 reps x 2 streams x 3 requests
    sent: list[int] = []

    def ctrl_c_at_the_eighth(event: ProgressEvent) -> None:  # a real SIGINT, as the terminal sends it
        if not sent and len(load_samples(tmp_path / "requests.jsonl")) == 8:
            sent.append(1)
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(Interrupted):
        run_grid(cfg, tmp_path, on_progress=ctrl_c_at_the_eighth)
    kept = len(load_samples(tmp_path / "requests.jsonl"))
    assert 8 <= kept < 12
    assert worker_children() == []
    run = run_grid(cfg, tmp_path, resume=True)
    assert run.cells[0].status == "ok" and len(load_samples(tmp_path / "requests.jsonl")) == 12


def test_open_loop_workers_share_one_schedule(fake_server: FakeVllm, tmp_path: Path) -> None:
    # constant 20/s over 4 streams on 2 workers: the 8 measured sends, merged, are still 50 ms apart (max_in_flight
    # set: the runner's own open-loop form, which bench.runner.open_loop leaves as it is; a typed --rate is one stream).
    # One shared schedule: every send sits at its 50 ms slot k from one origin, give or take the lateness a loaded
    # 2-core machine adds (two workers on their own clocks would drift apart by their start skew, in every attempt);
    # a fresh clone's `make test` beside other test suites (load 9) sent one late in 1 of 1 runs: measured again,
    # ATTEMPTS times at most, as test_bench_known_timings does
    fake_server.ttft_s, fake_server.itl_s = 0.010, 0.001
    cfg = config(fake_server, contexts=[16], clients=[4], reps=1, rate_per_s=20.0, arrivals="constant", workers=2)
    cfg = cfg.model_copy(update={"max_in_flight": 4})
    spreads = []
    for attempt in range(ATTEMPTS):
        run_grid(cfg, tmp_path / f"a{attempt}")
        sends = sorted(s.t_send for s in load_samples(tmp_path / f"a{attempt}" / "requests.jsonl") if not s.warmup)
        assert len(sends) == 8
        gaps = [b - a for a, b in zip(sends, sends[1:], strict=False)]
        offsets = [at - k * 0.050 for k, at in enumerate(sends)]
        if max(offsets) - min(offsets) < 0.030 and statistics.median(gaps) == pytest.approx(0.050, abs=0.005):
            return
        spreads.append((round(max(offsets) - min(offsets), 4), round(statistics.median(gaps), 4)))
    pytest.fail(f"(offset spread s, median gap s) in all {ATTEMPTS} attempts: {spreads}")


def test_a_worker_process_starts_silently() -> None:
    # its stderr tail is what a crash reports, so a start-up warning there would hide the real cause
    done = subprocess.run(worker.WORKER_ARGV, input=b"", capture_output=True, timeout=60)
    assert (done.returncode, done.stderr) == (0, b"")
