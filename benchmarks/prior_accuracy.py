"""Priors from measurements, validated leave one chip out. Not a test: it prints figures.

    python benchmarks/prior_accuracy.py

(1) For every one-client cell of the measurement corpus (catalog/serving_measurements.json `grids`), the achieved
fraction of HBM bandwidth (sim.priors.one_client_fractions). Leaving each chip out in turn, its one-client
tok/s is predicted from the other chips' mean fraction, beside the datasheet roofline (fraction 1) and the
survey's cross-chip band (122-154 tok/s per TB/s, corpus `decode_tok_per_s_per_tb_s`; in sample: it was
measured on these chips).

(2) Every corpus cell simulated from priors alone (no calibration): the datasheet roofline and the measured
priors (sim.priors.measured_priors, its chip left out of the fraction). Printed: MAPE per figure and the
range of measured / predicted tok/s and predicted / measured latency: how optimistic a prior is, the band
`advise` gives a prior-only row (corpus `prediction_error.prior`).

Every predicted row is out of sample: its chip's cells are not in what it is predicted with. The noise floor
(two measurements of one v5e-1 deployment) is printed beside the MAPEs.
"""

from __future__ import annotations

import statistics

from onechip import catalog, planner
from onechip.bench import stats
from onechip.schemas.bench import BenchConfig, CellResult
from onechip.schemas.requests import PlanRequest
from onechip.sim import roofline_priors, simulate_cell
from onechip.sim.priors import bandwidth_fraction, measured_priors, one_client_fractions

CORPUS = catalog.serving_measurements()
NOISE = CORPUS.prediction_error["noise"]


def _mape(values: list[float]) -> str:
    return f"{statistics.fmean(values):6.1f}% over {len(values)} cells" if values else "no cells"


def one_client() -> None:
    band = CORPUS.decode_tok_per_s_per_tb_s
    cells = {(g.name, c.context_tokens): c.output_tok_per_s for g in CORPUS.grids for c in g.cells if c.clients == 1}
    errs: dict[str, list[float]] = {"measured fraction": [], "roofline (datasheet)": [], "survey band mid": []}
    print("(1) one client: achieved fraction of HBM bandwidth, and leave-one-chip-out predictions of tok/s")
    print(
        f"{'grid':>22} {'chip':>6} {'ctx':>6} {'tok/s':>7} {'fraction':>9} {'LOO pred':>9} {'roofline':>9} {'band':>7}"
    )
    for grid, chip, ctx, fraction in one_client_fractions():
        tok = cells[(grid, ctx)]
        others = bandwidth_fraction(exclude_chip=chip)
        bandwidth = planner.rules.accelerator(chip).bandwidth_bytes_per_s or 0.0
        roofline = tok / fraction  # fraction = tok / roofline tok/s
        pred = {
            "measured fraction": roofline * others if others else None,
            "roofline (datasheet)": roofline,
            "survey band mid": (band.low + band.high) / 2 * bandwidth / 1e12,
        }
        for name, v in pred.items():
            if v is not None:
                errs[name].append(abs(v / tok - 1) * 100)
        shown = " ".join(f"{v:>9.1f}" if v is not None else f"{'-':>9}" for v in pred.values())
        print(f"{grid:>22} {chip:>6} {ctx:>6,} {tok:>7.1f} {fraction:>9.1%} {shown}")
    for name, values in errs.items():
        print(f"  MAPE {name:>22}: {_mape(values)} (noise floor {100 * NOISE.output_tok_per_s:.1f}%)")
    print(f"  (the survey band is in sample: measured on {', '.join(band.chips)})")


def whole_grids() -> None:
    print("\n(2) every corpus cell from priors alone (1,024 + 128 tokens where stated; 1 warm-up, 3 measured "
          "requests a stream; the survey grids' tok/s compared by the whole-run definition)")  # fmt: skip
    errs: dict[str, dict[str, list[float]]] = {}
    optimism: dict[str, dict[str, list[float]]] = {}
    for grid in CORPUS.grids:
        plan = planner.plan_model(
            PlanRequest(model=grid.model, chip=grid.chip, max_model_len=32768, max_num_batched_tokens=4096)
        )
        whole_run = grid.name != "seed-v5e-1"
        for kind, terms in (("roofline", roofline_priors(plan)), ("measured", measured_priors(plan, grid.chip))):
            for c in grid.cells:
                config = BenchConfig(base_url="http://prior", contexts=[c.context_tokens], clients=[c.clients],
                                     output_tokens=grid.output_tokens, requests_per_client=3, reps=1)  # fmt: skip
                p = simulate_cell(plan, terms, config, c.context_tokens, c.clients, 1)
                if p.infeasible:
                    continue
                cell = stats.summarize_cell(
                    CellResult(context_tokens=c.context_tokens, clients=c.clients, status="ok"),
                    p.samples_by_seed, grid.output_tokens,
                )  # fmt: skip
                got = {
                    "output_tok_per_s": cell.whole_run_tok_per_s if whole_run else cell.output_tok_per_s,
                    "ttft_ms": cell.ttft_ms.median,
                    "tpot_ms": cell.tpot_ms.median,
                }
                for name, pred in got.items():
                    meas = getattr(c, name)
                    if meas is None or not pred:
                        continue
                    errs.setdefault(kind, {}).setdefault(name, []).append(abs(pred / meas - 1) * 100)
                    ratio = meas / pred if name == "output_tok_per_s" else pred / meas
                    optimism.setdefault(kind, {}).setdefault(name, []).append(ratio)
    for kind in errs:
        print(f"  {kind} priors:")
        for name, values in errs[kind].items():
            r = optimism[kind][name]
            what = "measured / predicted" if name == "output_tok_per_s" else "predicted / measured"
            print(f"    MAPE {name:>16}: {_mape(values)} (noise floor {100 * getattr(NOISE, name):.1f}%); "
                  f"{what} {min(r):.2f} to {max(r):.2f}")  # fmt: skip


if __name__ == "__main__":
    one_client()
    whole_grids()
