"""Priors from measurements, validated leave one chip out. Not a test: it prints figures.

    python benchmarks/prior_accuracy.py

For every one-client cell of the measurement corpus (catalog/serving_measurements.json `grids`), the achieved
fraction of HBM bandwidth: tok/s x bytes one decode step reads (the plan's streamed weights plus the KV of the
context) / the chip's bandwidth (accelerators.json). Then, leaving each chip out in turn, its one-client tok/s
predicted from the other chips' mean fraction, beside the datasheet roofline (fraction 1) and the survey's
cross-chip band (122-154 tok/s per TB/s, corpus `decode_tok_per_s_per_tb_s`). Every predicted row is out of
sample: its chip's cells are not in the fraction it is predicted with. The noise floor (two measurements of
one v5e-1 deployment) is printed beside the MAPEs.
"""

from __future__ import annotations

import statistics

from onechip import catalog, planner
from onechip.schemas.requests import PlanRequest

CORPUS = catalog.load("serving_measurements")


def one_client_cells() -> list[tuple[str, str, int, float, float]]:
    """(grid, chip, context, measured tok/s, bytes a decode step reads) for every one-client cell."""
    out = []
    for grid in CORPUS["grids"]:
        plan = planner.plan_model(
            PlanRequest(model=grid["model"], chip=grid["chip"], max_model_len=32768, max_num_batched_tokens=4096)
        )
        for c in grid["cells"]:
            if c["clients"] == 1:
                step_bytes = plan.decode_bytes_per_step + plan.kv_bytes_per_token * c["context_tokens"]
                out.append((grid["name"], grid["chip"], c["context_tokens"], c["output_tok_per_s"], step_bytes))
    return out


def main() -> None:
    cells = one_client_cells()
    bandwidth = {chip: planner.rules.accelerator(chip).bandwidth_bytes_per_s or 0.0 for _, chip, *_ in cells}
    fraction = {(g, ctx): tok * b / bandwidth[chip] for g, chip, ctx, tok, b in cells}
    print(f"{'grid':>22} {'chip':>6} {'ctx':>6} {'tok/s':>7} {'fraction of HBM bandwidth':>26}")
    for g, chip, ctx, tok, _ in cells:
        print(f"{g:>22} {chip:>6} {ctx:>6,} {tok:>7.1f} {fraction[(g, ctx)]:>26.1%}")
    band = CORPUS["decode_tok_per_s_per_tb_s"]
    errs: dict[str, list[float]] = {"measured fraction": [], "roofline (datasheet)": [], "survey band mid": []}
    print(f"\nleave one chip out (out of sample): predicted one-client tok/s\n{'':>22} {'chip':>6} {'ctx':>6} "
          f"{'meas':>7} {'fraction':>9} {'roofline':>9} {'band mid':>9}")  # fmt: skip
    for g, chip, ctx, tok, b in cells:
        others = [f for (og, octx), f in fraction.items() if next(c for c in cells if c[0] == og)[1] != chip]
        if not others:
            print(f"{g:>22} {chip:>6} {ctx:>6,} {tok:>7.1f}  no other chip measured: no prior from measurements")
            continue
        pred = {
            "measured fraction": statistics.fmean(others) * bandwidth[chip] / b,
            "roofline (datasheet)": bandwidth[chip] / b,
            "survey band mid": (band["low"] + band["high"]) / 2 * bandwidth[chip] / 1e12,
        }
        for name, v in pred.items():
            errs[name].append(abs(v / tok - 1) * 100)
        print(f"{g:>22} {chip:>6} {ctx:>6,} {tok:>7.1f} " + " ".join(f"{v:>9.1f}" for v in pred.values()))
    noise = CORPUS["prediction_error"]["noise"]["output_tok_per_s"]
    print()
    for name, values in errs.items():
        if values:
            print(f"MAPE {name:>22}: {statistics.fmean(values):6.1f}% over {len(values)} cells "
                  f"(noise floor {100 * noise:.1f}%)")  # fmt: skip
    print(f"(the survey band itself includes every chip here, so its row is in sample: {', '.join(band['chips'])})")


if __name__ == "__main__":
    main()
