"""How well `onechip simulate` predicts cells it was not calibrated on. Not a test: it prints figures.

    python benchmarks/sim_accuracy.py seed                 # (1) the seed article's v5e-1 grid
    python benchmarks/sim_accuracy.py embedded RUN_ROOT    # (2) runs measured on the embedded engine

(1) The grid of seeds/article-en-single-tpu-agent-backend.md ('Aggregate output tokens/sec', 'Median
time-to-first-token', 'Per-stream tokens/sec'; gemma-4-E2B-it on one v5e chip, vLLM TPU, max-model-len 32768,
max-num-batched-tokens 4096, 3 reps). Calibrated on the single-client cells plus 128 x 64, predicted on the
other eight. TPOT is 1000 / per-stream tok/s (bench's definition of per-stream tok/s). The article does not
state the output length or requests per client: assumed 128 output tokens (the survey seed's `vllm bench
serve` runs use 128) and 1 warm-up + 3 measured requests per client; the printout says so.

(2) RUN_ROOT holds what `benchmarks/embedded_grid.sh` measured on this machine: `calibration/` (from
`onechip bench --calibration`), `predicted/` (from `onechip simulate --calibrate calibration/`, written
before the grid was measured) and `measured/` (the grid). It prints the same figures for the predicted
cells that are not calibration cells.

Printed: MAPE of output tok/s, median TTFT and median TPOT over the validation cells, the worst cell, and
per cell measured vs predicted (median over seeds, with the seeds' range).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from onechip import planner
from onechip.bench import stats
from onechip.report.rundir import read_run
from onechip.schemas.bench import BenchConfig, BenchRun, CellResult, Dist
from onechip.schemas.requests import PlanRequest
from onechip.sim.calibrate import calibrate
from onechip.sim.predict import simulate_grid

# seeds/article-en-single-tpu-agent-backend.md, the 12-cell grid (3 reps each)
SEED_CONTEXTS = [128, 1024, 8192]
SEED_CLIENTS = [1, 4, 16, 64]
SEED_TOK_PER_S = [[123.7, 433.9, 1152.5, 1496.5], [120.4, 415.4, 991.0, 1258.7], [94.2, 254.4, 399.6, 324.3]]
SEED_TTFT_MS = [[15.9, 31.8, 98.8, 247.3], [40.3, 51.5, 170.1, 421.7], [289.4, 304.2, 594.4, 11734.0]]
SEED_PER_STREAM = [[125, 112, 76, 25], [124, 109, 69, 21], [119, 71, 27, 10]]
SEED_CALIBRATION = [(128, 1), (1024, 1), (8192, 1), (128, 64)]
SEED_WORKLOAD = dict(output_tokens=128, warmup_requests=1, requests_per_client=3, reps=3)
# The article's client is not `onechip bench` and its stream starts are not stated. Its 4-client TTFTs sit
# close to one client's (1,024 tokens: 51.5 vs 40.3 ms), which streams started together could not give (four
# 1,024-token prompts arriving together share one 4,096-token step): assumed staggered, each stream's start
# drawn over one request's duration (CellSimulation start_spread_s=None); the printout says so.
SEED_START_SPREAD = None
SEEDS = 5


def seed_run() -> BenchRun:
    """The seed's grid as a BenchRun (medians only)."""
    config = BenchConfig(base_url="http://seed-v5e-1", contexts=SEED_CONTEXTS, clients=SEED_CLIENTS, **SEED_WORKLOAD)  # type: ignore[arg-type]
    cells = [
        CellResult(
            context_tokens=ctx,
            clients=n,
            status="ok",
            output_tok_per_s=SEED_TOK_PER_S[i][j],
            ttft_ms=Dist(n=1, median=SEED_TTFT_MS[i][j]),
            tpot_ms=Dist(n=1, median=1000.0 / SEED_PER_STREAM[i][j]),
        )
        for i, ctx in enumerate(SEED_CONTEXTS)
        for j, n in enumerate(SEED_CLIENTS)
    ]
    return BenchRun(
        tool_version="seed",
        created_at="2026-08-09",
        config=config,
        cells=cells,
        server={"engine_version": "0.26.1rc1.dev125+ga7a204cc6"},
    )


def seed_plan():  # type: ignore[no-untyped-def]
    return planner.plan_model(
        PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=32768, max_num_batched_tokens=4096)
    )


def _pred_cells(plan, terms, config: BenchConfig, spread: float | None = 0.0) -> dict[tuple[int, int], CellResult]:  # type: ignore[no-untyped-def]
    out = {}
    for p in simulate_grid(plan, terms, config, SEEDS, start_spread_s=spread):
        cell = CellResult(context_tokens=p.context_tokens, clients=p.clients, status="ok")
        if p.infeasible:
            out[(p.context_tokens, p.clients)] = cell.model_copy(
                update={"status": "infeasible", "reason": p.infeasible}
            )
            continue
        out[(p.context_tokens, p.clients)] = stats.summarize_cell(cell, p.samples_by_seed, config.output_tokens)
    return out


def _ape(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or not meas else abs(pred - meas) / meas * 100.0


def report(measured: BenchRun, predicted: dict[tuple[int, int], CellResult], calibration_cells: set) -> None:  # type: ignore[type-arg]
    """Print per-cell figures and the MAPEs over cells not used for calibration."""
    errs: dict[str, list[tuple[float, str]]] = {"output_tok_per_s": [], "ttft_ms": [], "tpot_ms": []}
    print(
        f"{'cell':>12} {'tok/s meas':>10} {'pred [range]':>24} {'TTFT meas':>10} {'pred':>9} "
        f"{'TPOT meas':>9} {'pred':>7}  use"
    )
    for m in measured.cells:
        p = predicted.get((m.context_tokens, m.clients))
        key = f"{m.context_tokens}x{m.clients}"
        used = (m.context_tokens, m.clients) in calibration_cells
        if p is None or p.status != "ok":
            print(f"{key:>12} {'':>10} {p.status if p else 'absent':>24}")
            continue
        rates = [r.output_tok_per_s for r in p.reps]
        rng = f"{p.output_tok_per_s:,.1f} [{min(rates):,.0f}-{max(rates):,.0f}]"
        print(
            f"{key:>12} {m.output_tok_per_s:>10,.1f} {rng:>24} {m.ttft_ms.median:>10,.1f} {p.ttft_ms.median:>9,.1f} "
            f"{m.tpot_ms.median:>9.2f} {p.tpot_ms.median:>7.2f}  {'calibration' if used else 'validation'}"
        )
        if used:
            continue
        for name, (pv, mv) in {
            "output_tok_per_s": (p.output_tok_per_s, m.output_tok_per_s),
            "ttft_ms": (p.ttft_ms.median, m.ttft_ms.median),
            "tpot_ms": (p.tpot_ms.median, m.tpot_ms.median),
        }.items():
            e = _ape(pv, mv)
            if e is not None:
                errs[name].append((e, key))
    print()
    for name, values in errs.items():
        if values:
            worst = max(values)
            print(
                f"MAPE {name:>16}: {statistics.fmean(v for v, _ in values):6.1f}%  over {len(values)} "
                f"validation cells; worst {worst[1]} ({worst[0]:.1f}%)"
            )


def run_seed(extra: list[tuple[int, int]]) -> None:
    plan, measured = seed_plan(), seed_run()
    calibration_cells = SEED_CALIBRATION + extra
    print(
        "(1) seed v5e-1 grid: gemma-4-E2B-it, vLLM TPU; assumed workload",
        SEED_WORKLOAD,
        "and stream starts staggered over one request's duration",
    )
    print(
        f"plan: {plan.kv_tokens:,} KV tokens (seed measured 321,344), block {plan.block_size}, "
        f"budget 4096; calibration cells {SEED_CALIBRATION}"
    )
    cal = calibrate(
        plan, measured, cells=calibration_cells, source_run="seed article grid", start_spread_s=SEED_START_SPREAD
    )
    print("fitted terms:", cal.terms.model_dump(), "pinned:", cal.fitted)
    print("calibration residuals %:", cal.residuals_pct)
    report(measured, _pred_cells(plan, cal.terms, measured.config, SEED_START_SPREAD), set(calibration_cells))
    wall_config = measured.config.model_copy(update={"contexts": [8192], "clients": [16, 64]})
    wall = _pred_cells(plan, cal.terms, wall_config, SEED_START_SPREAD)
    w16, w64 = wall[(8192, 16)], wall[(8192, 64)]
    print(
        f"KV wall 8192x64: predicted {w64.output_tok_per_s:,.1f} tok/s vs {w16.output_tok_per_s:,.1f} at 16 "
        f"clients ({'below' if w64.output_tok_per_s < w16.output_tok_per_s else 'NOT below'}); "
        f"median TTFT {w64.ttft_ms.median:,.0f} ms ({'seconds' if w64.ttft_ms.median >= 1000 else 'NOT seconds'})"
    )
    run_replicas(cal)


# seeds/article-zh-v5e-v6e-gemma4-survey.txt: on a v5e-4, four one-chip E2B engines give 1.39x / 2.52x / 3.36x
# the output of one TP=4 engine at 16 / 64 / 256 streams (workload not stated; 1,024 + 128 tokens assumed, the
# survey's `vllm bench serve` setting)
SURVEY_REPLICA_RATIO = {16: 1.39, 64: 2.52, 256: 3.36}


def run_replicas(cal) -> None:  # type: ignore[no-untyped-def]
    """The replica question with the seed calibration carried to v5e-4 (TP=4, and 4 engines of TP=1)."""
    from onechip.sim import transfer

    print("\nreplicas vs tensor parallel on v5e-4 (seed calibration carried over; survey ratios measured):")
    config = seed_run().config.model_copy(update={"contexts": [1024], "requests_per_client": 2})
    for streams, measured in SURVEY_REPLICA_RATIO.items():
        rates = {}
        for engines, tp in ((1, 4), (4, 1)):
            plan = planner.plan_model(
                PlanRequest(
                    model="google/gemma-4-E2B-it",
                    chip="v5e-4",
                    tensor_parallel_size=tp,
                    max_model_len=32768,
                    max_num_batched_tokens=4096,
                )
            )
            cell = _pred_cells(plan, transfer(cal, plan), config.model_copy(update={"clients": [streams // engines]}))
            rates[engines] = next(iter(cell.values())).output_tok_per_s * engines
        print(
            f"  {streams:>3} streams: 4 x TP=1 {rates[4]:,.0f} tok/s, 1 x TP=4 {rates[1]:,.0f} tok/s: "
            f"ratio {rates[4] / rates[1]:.2f} (survey {measured:.2f})"
        )


def run_embedded(root: Path, refit: bool) -> None:
    cal_dir, pred_dir, meas_dir = root / "calibration", root / "predicted", root / "measured"
    predicted, measured, calibration = read_run(pred_dir), read_run(meas_dir), read_run(cal_dir).bench
    if predicted.bench is None or measured.bench is None:
        sys.exit(f"{root}: needs predicted/summary.json and measured/summary.json")
    if refit:  # today's model on the same measurements: fit calibration/ again, predict the measured grid
        if calibration is None or measured.plan is None:
            sys.exit(f"{root}: --refit needs calibration/summary.json and measured/plan.json")
        cal = calibrate(measured.plan, calibration, source_run=str(cal_dir))
        pred = _pred_cells(measured.plan, cal.terms, measured.bench.config)
    else:
        prediction = predicted.bench.prediction
        cal = prediction.calibration if prediction else None  # type: ignore[assignment]
        pred = {(c.context_tokens, c.clients): c for c in predicted.bench.cells}
    print(f"(2) embedded engine: calibration {cal_dir}, cells {cal.cells if cal else '?'}{' (refitted)' * refit}")
    if cal is not None:
        print("fitted terms:", cal.terms.model_dump(), "pinned:", cal.fitted)
    used = {tuple(int(v) for v in c.split("x")) for c in (cal.cells if cal else [])}
    report(measured.bench, pred, used)
    if calibration is not None:
        noise_floor(calibration, measured.bench)


def noise_floor(first: BenchRun, second: BenchRun) -> None:
    """The same cells measured twice (the calibration run, then the grid): how far apart two measurements
    of one cell are on this machine, as the MAPE of the second against the first."""
    again = {(c.context_tokens, c.clients): c for c in second.cells}
    errs: dict[str, list[float]] = {"output_tok_per_s": [], "ttft_ms": [], "tpot_ms": []}
    for c in first.cells:
        g = again.get((c.context_tokens, c.clients))
        if g is None or c.status != "ok" or g.status != "ok":
            continue
        for name, (a, b) in {
            "output_tok_per_s": (c.output_tok_per_s, g.output_tok_per_s),
            "ttft_ms": (c.ttft_ms.median, g.ttft_ms.median),
            "tpot_ms": (c.tpot_ms.median, g.tpot_ms.median),
        }.items():
            e = _ape(b, a)
            if e is not None:
                errs[name].append(e)
    print("\nnoise floor: the calibration cells measured again in the grid run (same engine, minutes apart):")
    for name, values in errs.items():
        if values:
            print(f"  re-measurement MAPE {name:>16}: {statistics.fmean(values):6.1f}% over {len(values)} cells")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["seed", "embedded"])
    parser.add_argument("root", nargs="?", type=Path)
    parser.add_argument(
        "--also", default="", help="seed: more calibration cells, CTXxCLIENTS comma-separated (e.g. 1024x16)"
    )
    parser.add_argument(
        "--refit", action="store_true", help="embedded: fit calibration/ and predict again with today's model"
    )
    args = parser.parse_args()
    if args.which == "seed":
        run_seed([(int(a), int(b)) for a, b in (c.split("x") for c in args.also.split(",") if c)])
    elif args.root is None:
        sys.exit("embedded: give the directory benchmarks/embedded_grid.sh wrote")
    else:
        run_embedded(args.root, args.refit)


if __name__ == "__main__":
    main()
