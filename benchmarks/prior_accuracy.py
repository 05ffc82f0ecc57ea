"""Priors from measurements, validated leave one chip out. Not a test: it prints figures.

    python benchmarks/prior_accuracy.py

(1) What the corpus (catalog/serving_measurements.json `grids`, each with its source) gives per chip
(sim.priors): the achieved fraction of HBM bandwidth in decode (one-client cells), of dense peak FLOPS in
prefill (the slope of one-client TTFT over context, up to 16,384 tokens), and the host cost of each
deployment (TPOT = fixed + per_seq x batch through its host-bound short-context cells at 2-16 clients: TPOT
above the step's device time by more than the TPOT noise floor), beside the datasheet; and, per grid with no
host line, why (device-bound, one host-bound batch size, no device time, no async scheduling).

(2) Leave one chip out, one client: each chip's one-client decode rate predicted from the other chips' mean
fraction, beside the datasheet roofline and the survey's cross-chip band (corpus `decode_tok_per_s_per_tb_s`;
in sample: it was measured on v5e-1, v6e-1 and L4).

(3) Every simulable corpus cell from priors alone (no calibration), per chip: leaving the chip out (its
fractions and host cost come from the other chips: what a chip with no measurement gets; out of sample), and
with the chip's own efficiencies (in sample: fitted on these grids' one-client and short-context cells, so
scored apart). Output tok/s is scored twice: on each grid's published figure (whole-run for vllm bench serve's) and
on the steady window `advise` ranks and prices on (steady_output_tok_per_s, against sim_accuracy.measured_steady).
Printed: MAPE per figure per chip and per grid, beside the noise floor (two measurements of one
v5e-1 deployment), and the measured / predicted range (the band `advise` gives a prior row, corpus
`prediction_error.prior` and `prior_measured_chip`). Each grid is served at its own settings where the corpus
states them (sim_accuracy.plan_for), every stream 1 warm-up + 3 measured requests (the grids' own workloads, no
warm-up where stated, put a simulated cold start into the whole-run tok/s: v6e-1's in-sample tok/s MAPE goes from
6.4% to 10.4%, measured 2026-12-02, so the one workload is kept).
Grids that publish no output length are not simulated; grids the planner cannot plan and chips with no roofline
are skipped with the reason printed (clients above the deployment's --max-num-seqs queue in the simulated server,
as in vLLM's).
"""

from __future__ import annotations

import statistics

from sim_accuracy import STEADY, measured_steady, plan_for

from onechip import catalog, planner
from onechip.bench import stats
from onechip.errors import ConfigError
from onechip.schemas.bench import BenchConfig, CellResult
from onechip.sim import roofline_priors, simulate_cell
from onechip.sim.priors import (
    basis,
    decode_fractions,
    distinct_grids,
    host_line_gaps,
    host_lines,
    measured_priors,
    prefill_fractions,
)

CORPUS = catalog.serving_measurements()
NOISE = CORPUS.prediction_error["noise"]
FIGURES = ("output_tok_per_s", STEADY, "ttft_ms", "tpot_ms")


def _mape(values: list[float]) -> str:
    return f"{statistics.fmean(values):6.1f}% over {len(values):>2} cells" if values else "no cells"


def efficiencies() -> None:
    print("(1) per chip, from the corpus (sim.priors)")
    print(f"{'chip':>10} {'decode BW fraction':>20} {'prefill FLOPS fraction':>24}  cells")
    chips = sorted({c for _, c, _, _ in decode_fractions()} | {c for _, c, _, _ in prefill_fractions()})
    for chip in chips:
        dec = [f for _, c, _, f in decode_fractions() if c == chip]
        pre = [f for _, c, _, f in prefill_fractions() if c == chip]
        d = f"{statistics.fmean(dec):.1%} ({min(dec):.0%}-{max(dec):.0%})" if dec else "-"
        p = f"{statistics.fmean(pre):.1%} ({min(pre):.0%}-{max(pre):.0%})" if pre else "- (mean of others)"
        print(f"{chip:>10} {d:>20} {p:>24}  {len(dec)} decode, {len(pre)} prefill")
    print("  host cost per deployment (host CPU of the chip's VM, engine build):")
    for h in host_lines():
        print(f"    {h.grid:>36} {h.chip:>6} {h.engine} {h.engine_version[:36]:<36} fixed {h.fixed_s * 1e3:5.2f} ms "
              f"+ {h.per_seq_s * 1e3:.3f} ms/sequence")  # fmt: skip
    print("  no host line (its cells measured no host cost that can be separated):")
    for grid, why in host_line_gaps():
        print(f"    {grid:>36} {why}")


def one_client() -> None:
    band = CORPUS.decode_tok_per_s_per_tb_s
    errs: dict[str, list[float]] = {"leave chip out": [], "roofline (datasheet)": [], "survey band mid": []}
    print("\n(2) one client, leave one chip out: decode tok/s (1 / TPOT where published, else tok/s)")
    print(f"{'grid':>36} {'chip':>9} {'ctx':>6} {'meas':>7} {'fraction':>9} {'LOO':>7} {'roofline':>9} {'band':>7}")
    for grid, chip, ctx, fraction in decode_fractions():
        cell = next(
            c for g in CORPUS.grids if g.name == grid for c in g.cells if c.clients == 1 and c.context_tokens == ctx
        )
        meas = 1000 / cell.tpot_ms if cell.tpot_ms else cell.output_tok_per_s
        others = basis(chip, "", exclude_chip=chip).bandwidth_fraction
        roofline = meas / fraction
        bandwidth = planner.rules.accelerator(chip).bandwidth_bytes_per_s or 0.0
        pred = {
            "leave chip out": roofline * others if others else None,
            "roofline (datasheet)": roofline,
            "survey band mid": (band.low + band.high) / 2 * bandwidth / 1e12,
        }
        for name, v in pred.items():
            if v is not None:
                errs[name].append(abs(v / meas - 1) * 100)
        shown = " ".join(f"{v:>7.1f}" if v is not None else f"{'-':>7}" for v in pred.values())
        print(f"{grid:>36} {chip:>9} {ctx:>6,} {meas:>7.1f} {fraction:>9.1%} {shown}")
    for name, values in errs.items():
        print(f"  MAPE {name:>22}: {_mape(values)} (noise floor {100 * NOISE.output_tok_per_s:.1f}%)")
    print(f"  (the survey band is in sample: measured on {', '.join(band.chips)}; it is E2B-only)")


def _predict(grid, plan, terms) -> dict[tuple[int, int], CellResult]:  # type: ignore[no-untyped-def]
    out = {}
    for c in grid.cells:
        config = BenchConfig(base_url="http://prior", contexts=[c.context_tokens], clients=[c.clients],
                             output_tokens=grid.output_tokens, requests_per_client=3, reps=1)  # fmt: skip
        p = simulate_cell(plan, terms, config, c.context_tokens, c.clients, 1)
        if not p.infeasible:
            cell = CellResult(context_tokens=c.context_tokens, clients=c.clients, status="ok")
            out[(c.context_tokens, c.clients)] = stats.summarize_cell(cell, p.samples_by_seed, grid.output_tokens)
    return out


def whole_grids() -> dict[str, dict[str, tuple[float, float]]]:
    """Prints (3); returns, per kind of prior, the measured / predicted factor range per figure."""
    print("\n(3) every simulable corpus cell from priors alone (3 measured requests a stream after 1 warm-up; tok/s "
          "by the whole-run definition, as vllm bench serve reports it, except the seed article's grid)")  # fmt: skip
    errs: dict[tuple[str, str], dict[str, list[float]]] = {}
    per_grid: dict[tuple[str, str], dict[str, list[float]]] = {}
    factors: dict[str, dict[str, list[float]]] = {}
    for grid in distinct_grids():  # a grid marked duplicate_of is not scored
        if grid.output_tokens is None:
            continue
        try:
            plan = plan_for(grid)
            kinds = {"datasheet roofline": roofline_priors(plan),
                     "leave chip out": measured_priors(plan, exclude_chip=grid.chip),
                     "own chip (in sample)": measured_priors(plan)}  # fmt: skip
        except ConfigError as exc:
            print(f"  {grid.name}: not simulated ({exc})")
            continue
        whole_run = grid.name != "seed-v5e-1"
        for kind, terms in kinds.items():
            for (ctx, n), p in _predict(grid, plan, terms).items():
                c = next(x for x in grid.cells if (x.context_tokens, x.clients) == (ctx, n))
                got = {"output_tok_per_s": p.whole_run_tok_per_s if whole_run else p.output_tok_per_s,
                       STEADY: p.output_tok_per_s,
                       "ttft_ms": p.ttft_ms.median, "tpot_ms": p.tpot_ms.median}  # fmt: skip
                steady = measured_steady(c.output_tok_per_s, c.ttft_ms, c.tpot_ms, c.clients, grid.output_tokens,
                                         whole_run)  # fmt: skip
                for name, pred in got.items():
                    meas = steady if name == STEADY else getattr(c, name)
                    if meas is None or not pred:
                        continue
                    errs.setdefault((kind, grid.chip), {}).setdefault(name, []).append(abs(pred / meas - 1) * 100)
                    per_grid.setdefault((grid.name, kind), {}).setdefault(name, []).append(abs(pred / meas - 1) * 100)
                    factors.setdefault(kind, {}).setdefault(name, []).append(meas / pred)
    print(f"  {'priors':>22} {'chip':>6}  " + "  ".join(f"{f:>26}" for f in FIGURES))
    for (kind, chip), by_figure in sorted(errs.items()):
        shown = "  ".join(f"{_mape(by_figure.get(f, [])):>26}" for f in FIGURES)
        print(f"  {kind:>22} {chip:>6}  {shown}")
    noise = "  ".join(f"{100 * getattr(NOISE, f.replace(STEADY, 'output_tok_per_s')):25.1f}%" for f in FIGURES)
    print(f"  {'noise floor':>22} {'':>6}  {noise}")
    print("  per grid:")
    for (name, kind), by_figure in sorted(per_grid.items()):
        shown = "  ".join(f"{_mape(by_figure.get(f, [])):>26}" for f in FIGURES)
        print(f"    {name:>36} {kind:>22}  {shown}")
    print("  measured / predicted, lowest to highest (the band a prior row gets):")
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for kind, by_figure in factors.items():
        all_errs = {f: [e for (k, _), d in errs.items() if k == kind for e in d.get(f, [])] for f in FIGURES}
        shown = "; ".join(f"{f} {min(v):.2f}-{max(v):.2f}x (MAPE {statistics.fmean(all_errs[f]):.1f}%)"
                          for f, v in by_figure.items())  # fmt: skip
        print(f"    {kind:>22}: {shown}")
        out[kind] = {f: (min(v), max(v)) for f, v in by_figure.items()}
    return out


if __name__ == "__main__":
    efficiencies()
    one_client()
    whole_grids()
