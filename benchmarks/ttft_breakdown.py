"""Where the calibrated held-out TTFT error comes from, cell by cell, beside the noise of the same cell. Not a test: it
prints figures, in a second, from stored files (no simulation).

    python benchmarks/ttft_breakdown.py            # the 'calibrated' ttft_ms rows of catalog/prediction_ranges.json
    python benchmarks/ttft_breakdown.py --figure tpot_ms   # another figure of the same rows
    python benchmarks/ttft_breakdown.py --cells PATH       # the cells a `sim_accuracy.py corpus --cells PATH` run wrote
    python benchmarks/ttft_breakdown.py --split            # where a TTFT error goes: the closed loop's cycle, by regime

The error: catalog/prediction_ranges.json holds, per figure, every held-out cell of the corpus leave-one-grid-out run
(`python benchmarks/sim_accuracy.py corpus --advised --write-ranges`, its source and commit in the file) as measured /
predicted; the predicted value is the cell's measured one (catalog/serving_measurements.json) over that factor, so the
table is that run's, cell for cell, without running it again (41 min on an idle machine).

The noise: a cell that more than one corpus grid measured on the same chip and model (duplicates included: one
deployment measured again is what noise is) has, against each of its measurements, the error the other measurement
makes when taken as the prediction, |other - this| / this, averaged over the others (cell_noise). The other
measurement is marked 'same day' where both grids are dated alike (config-validation and gce: one build, one
run_cells.py, 2026-08-10), else 'other day' (another build or cache state). A cell no other grid measured has no noise
of its own; the issue's floor (serving_measurements.json prediction_error noise: two measurements of one v5e-1
deployment) stands in for it, said as such.

The split (--split): in a closed loop each stream's request takes TTFT + (output_tokens - 1) x TPOT, its cycle (vllm
bench serve's TPOT is (latency - TTFT) / (output_tokens - 1), as bench's figures.tpot_ms), and the cell's tok/s is
clients x output_tokens over it (Little's law). A TTFT predicted low with the cycle right is time the model charges to
the running streams' TPOT instead of to the request's wait for its first token; with the cycle low too, time it does
not charge at all. Per regime: the signed errors of TTFT, TPOT and the cycle, and the median TTFT missing (ms) beside
the median (output_tokens - 1) x TPOT in excess (ms), over the cells with both figures predicted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sim_accuracy  # noqa: E402  (the corpus, regime() and the ranges file's path, as the corpus mode reads them)

from onechip.catalog.files import MeasuredGrid  # noqa: E402
from onechip.sim.steptime import budget_tokens  # noqa: E402

# each figure's name in the JSON lines `sim_accuracy.py corpus --cells` writes ('<name>_meas', '<name>_pred'; tok/s
# by the grid's published definition, as the ranges file's output_tok_per_s)
CELLS_KEY = {"ttft_ms": "ttft", "tpot_ms": "tpot", "output_tok_per_s": "tok"}
# measured TTFT bands (ms): where a few ms of host time is a large share (under 50) and where it is not
SIZE_BANDS_MS = (50.0, 200.0, 1000.0)


def measurements(grids: Iterable[MeasuredGrid], figure: str) -> dict[tuple[str, str, int, int], list[MeasuredGrid]]:
    """Every grid that measured `figure` at a cell, keyed (chip, model, context, clients)."""
    out: dict[tuple[str, str, int, int], list[MeasuredGrid]] = {}
    for g in grids:
        for c in g.cells:
            if getattr(c, figure, None) is not None:
                out.setdefault((g.chip, g.model, c.context_tokens, c.clients), []).append(g)
    return out


def value(grid: MeasuredGrid, key: str, figure: str) -> float:
    """`figure` of `grid`'s cell 'CONTEXTxCLIENTS'."""
    context, clients = (int(v) for v in key.split("x"))
    return next(getattr(c, figure) for c in grid.cells if (c.context_tokens, c.clients) == (context, clients))


def cell_noise(grid: MeasuredGrid, others: list[MeasuredGrid], key: str, figure: str) -> dict[str, float]:
    """The noise of `grid`'s measurement of cell `key`: the mean |other - this| / this (a fraction) over the other
    grids that measured it, apart for those dated as `grid` ('same day') and the rest ('other day'); empty where no
    other grid measured it."""
    this = value(grid, key, figure)
    by: dict[str, list[float]] = {}
    for o in others:
        if o.name != grid.name:
            by.setdefault("same day" if _same_day(o, grid) else "other day", []).append(
                abs(value(o, key, figure) - this) / this
            )
    return {kind: statistics.fmean(v) for kind, v in by.items()}


def own_noise(noise: dict[str, float]) -> float | None:
    """The noise a cell's error is held against: that of a measurement the same day where there is one (the same
    build and client), else another day's (another build or cache state: 1,024 x 16 across builds is a cached against
    a cold prompt, 74 - 285%), else None."""
    return noise.get("same day", noise.get("other day"))


def _same_day(a: MeasuredGrid, b: MeasuredGrid) -> bool:
    """Whether `a` and `b` measured one deployment on one day: dated alike, or one marked duplicate_of the other (the
    same deployment, engine build and day, published again: its date is the publication's)."""
    return a.date == b.date or a.duplicate_of == b.name or b.duplicate_of == a.name


def within_noise(apes: list[float], noises: list[float]) -> float:
    """The part of the mean error (same unit as `apes`) that lies within each cell's own noise: mean of min(error,
    noise). The rest, MAPE less this, is the error beyond what two measurements of the cell agree to."""
    return statistics.fmean(min(a, n) for a, n in zip(apes, noises, strict=True)) if apes else 0.0


def cells_rows(text: str, figure: str) -> list[tuple[str, str, str, float]]:
    """(fit, grid, 'CONTEXTxCLIENTS', predicted `figure`) of each held-out 'calibrated' cell in `text`, the JSON lines
    `sim_accuracy.py corpus --cells` writes."""
    short = CELLS_KEY[figure]
    out = []
    for line in text.splitlines():
        c = json.loads(line)
        if c["how"] == "calibrated" and not c["in_sample"] and c.get(f"{short}_pred") is not None:
            out.append((c["fit"], c["grid"], f"{c['context']}x{c['clients']}", float(c[f"{short}_pred"])))
    return out


def cycle_rows(
    ttft: list[tuple[str, str, str, float]], tpot: list[tuple[str, str, str, float]], grids: dict[str, MeasuredGrid]
) -> list[dict[str, object]]:
    """Each (fit, grid, cell) with both a predicted TTFT (`ttft`) and TPOT (`tpot`), ms, beside the grid's measured
    ones and the closed loop's cycle, TTFT + (output_tokens - 1) x TPOT, measured and predicted (the module's
    docstring); its regime as sim_accuracy.regime names it."""
    tpots = {(fit, name, key): p for fit, name, key, p in tpot}
    out: list[dict[str, object]] = []
    for fit, name, key, ttft_pred in ttft:
        if (tpot_pred := tpots.get((fit, name, key))) is None:
            continue
        grid = grids[name]
        context, clients = (int(v) for v in key.split("x"))
        steps = (grid.output_tokens or 1) - 1
        ttft_meas, tpot_meas = value(grid, key, "ttft_ms"), value(grid, key, "tpot_ms")
        out.append({
            "fit": fit, "grid": name, "cell": key, "ttft": (ttft_meas, ttft_pred), "tpot": (tpot_meas, tpot_pred),
            "cycle": (ttft_meas + steps * tpot_meas, ttft_pred + steps * tpot_pred), "steps": steps,
            "regime": sim_accuracy.regime(context, clients, grid.output_tokens or 0,
                                          budget_tokens(sim_accuracy.plan_for(grid))),
        })  # fmt: skip
    return out


def cycle_split(rows: list[dict[str, object]]) -> dict[str, float]:
    """For `rows` (cycle_rows): the mean signed error % of TTFT, TPOT and the cycle (predicted / measured - 1), the
    median TTFT missing, ms (measured - predicted), and the median TPOT time in excess over a request's decode, ms
    ((output_tokens - 1) x (predicted - measured) TPOT)."""

    def signed(figure: str) -> float:
        return statistics.fmean(100 * (p / m - 1) for m, p in (r[figure] for r in rows))  # type: ignore[misc]

    return {
        "ttft_pct": signed("ttft"),
        "tpot_pct": signed("tpot"),
        "cycle_pct": signed("cycle"),
        "ttft_missing_ms": statistics.median(m - p for m, p in (r["ttft"] for r in rows)),  # type: ignore[misc]
        "tpot_excess_ms": statistics.median(
            r["steps"] * (r["tpot"][1] - r["tpot"][0])  # type: ignore[index,operator]
            for r in rows
        ),
    }


def print_split(rows: list[dict[str, object]], source: str) -> None:
    """The cycle split (cycle_split) over all `rows` and by regime."""
    print(f"where the TTFT error goes: {len(rows)} held-out cells with TTFT and TPOT predicted, {source}")
    print(f"{'':>28} {'cells':>5} {'TTFT %':>7} {'TPOT %':>7} {'cycle %':>8} {'TTFT missing ms':>16} "
          f"{'(out-1) x TPOT excess ms':>25}")  # fmt: skip
    groups: dict[str, list[dict[str, object]]] = {"all": rows}
    for r in rows:
        groups.setdefault(str(r["regime"]), []).append(r)
    for name, rs in groups.items():
        s = cycle_split(rs)
        print(f"{name:>28} {len(rs):>5} {s['ttft_pct']:>+7.1f} {s['tpot_pct']:>+7.1f} {s['cycle_pct']:>+8.1f} "
              f"{s['ttft_missing_ms']:>16,.1f} {s['tpot_excess_ms']:>25,.1f}")  # fmt: skip


def band(ms: float) -> str:
    low = 0.0
    for edge in SIZE_BANDS_MS:
        if ms < edge:
            return f"{low:>5,.0f} - {edge:>5,.0f} ms"
        low = edge
    return f"{low:>5,.0f} ms and over"


def predicted_rows(
    cells: Path | None, key: str, figure: str, grids: dict[str, MeasuredGrid]
) -> tuple[list[tuple[str, str, str, float]], str]:
    """(fit, grid, cell, predicted `figure`) of each held-out row, from `cells` (cells_rows) or else the `key` rows
    of prediction_ranges.json (measured / factor); and where they came from."""
    if cells:
        return cells_rows(cells.read_text(encoding="utf-8"), figure), str(cells)
    ranges = json.loads(sim_accuracy.RANGES_FILE.read_text(encoding="utf-8"))
    held = ranges["ranges"][key]["figures"][figure]["held_out"]
    rows = [(fit, name, cell, value(grids[name], cell, figure) / factor) for fit, name, cell, factor in held]
    return rows, f"{key} rows of {ranges['source']}"


def _short(name: str) -> str:
    return name.removeprefix("gemma4dev-").removesuffix("-2026-08-10").removesuffix("-2026-08-25")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--figure", default="ttft_ms", choices=sorted(CELLS_KEY))
    parser.add_argument("--key", default="calibrated", help="prediction_ranges.json error key (calibrated, carried)")
    parser.add_argument(
        "--cells", type=Path, help="read the cells `sim_accuracy.py corpus --cells PATH` wrote (its 'calibrated' ones)"
    )
    parser.add_argument("--split", action="store_true", help="the closed loop's cycle split by regime (docstring)")
    args = parser.parse_args()
    figure = args.figure
    grids = {g.name: g for g in sim_accuracy.CORPUS.grids}
    rows, source = predicted_rows(args.cells, args.key, figure, grids)
    if args.split:
        print_split(cycle_rows(rows, predicted_rows(args.cells, args.key, "tpot_ms", grids)[0], grids), source)
        return
    seen = measurements(grids.values(), figure)
    floor = float(getattr(sim_accuracy.NOISE, figure))
    print(f"{figure}: {len(rows)} held-out cells, {source}")
    print(f"noise floor where a cell has no other measurement: {100 * floor:.1f}% ({sim_accuracy.NOISE.source})\n")
    table = []
    for fit, name, key, predicted in rows:
        grid = grids[name]
        context, clients = (int(v) for v in key.split("x"))
        measured = value(grid, key, figure)
        noise = cell_noise(grid, seen[(grid.chip, grid.model, context, clients)], key, figure)
        budget = budget_tokens(sim_accuracy.plan_for(grid))
        table.append({
            "fit": fit, "grid": name, "cell": key, "context": context, "clients": clients,
            "regime": sim_accuracy.regime(context, clients, grid.output_tokens or 0, budget),
            "measured": measured, "predicted": predicted, "ape": 100 * abs(predicted - measured) / measured,
            "signed": 100 * (predicted / measured - 1), "noise": {k: 100 * v for k, v in noise.items()},
            "pair": "same day" if _same_day(grids[fit], grid) else "other day",
        })  # fmt: skip
    table.sort(key=lambda r: -r["ape"])
    total = sum(r["ape"] for r in table)
    print(f"{'fit':>22} {'grid':>22} {'cell':>10} {'regime':>26} {'meas ms':>9} {'pred ms':>9} {'err %':>7} "
          f"{'share':>6}  noise of the cell (other measurements)")  # fmt: skip
    for r in table:
        noise = ", ".join(f"{k} {v:.1f}%" for k, v in sorted(r["noise"].items())) or "-"
        print(f"{_short(r['fit']):>22} {_short(r['grid']):>22} {r['cell']:>10} {r['regime']:>26} "
              f"{r['measured']:>9,.1f} {r['predicted']:>9,.1f} {r['signed']:>+7.1f} {100 * r['ape'] / total:>5.1f}%  "
              f"{noise}")  # fmt: skip
    mape = total / len(table)
    low = sum(r["signed"] < 0 for r in table)
    print(f"\nMAPE {mape:.1f}% over {len(table)} cells; predicted low in {low}, median measured / predicted "
          f"{statistics.median(r['measured'] / r['predicted'] for r in table):.2f}")  # fmt: skip

    unit = "ms" if figure.endswith("_ms") else "tok/s"

    def group(title: str, by) -> None:  # type: ignore[no-untyped-def]
        print(f"\nby {title} (MAPE; share of the summed error; cells predicted low; median |error| {unit}):")
        groups: dict[str, list[dict]] = {}  # type: ignore[type-arg]
        for r in table:
            groups.setdefault(by(r), []).append(r)
        for name, rs in sorted(groups.items()):
            apes = [r["ape"] for r in rs]
            ms = statistics.median(abs(r["predicted"] - r["measured"]) for r in rs)
            print(f"  {name:>48}: {statistics.fmean(apes):6.1f}% over {len(rs):>3}, {100 * sum(apes) / total:5.1f}%, "
                  f"low {sum(r['signed'] < 0 for r in rs):>3}, {ms:>8,.1f} {unit}")  # fmt: skip

    print("\nMAPE with the cells of a regime left out (what the rest would score):")
    for name in sorted({r["regime"] for r in table}):
        rest = [r["ape"] for r in table if r["regime"] != name]
        print(f"  {name:>48}: {statistics.fmean(rest) if rest else 0.0:6.1f}% over {len(rest):>3}")
    group("predicted grid", lambda r: _short(r["grid"]))
    group("fit", lambda r: _short(r["fit"]))
    group("fit and grid dated alike (same build and day) or not", lambda r: r["pair"])
    group("regime (sim_accuracy.regime)", lambda r: r["regime"])
    group("context", lambda r: f"{r['context']:>6,} tokens")
    group("clients", lambda r: f"{r['clients']:>4} clients")
    if figure.endswith("_ms"):
        group("measured TTFT" if figure == "ttft_ms" else f"measured {figure}", lambda r: band(r["measured"]))

    print("\nthe error against the same cell's noise (mean of min(error, noise): the part of the MAPE two "
          "measurements of the cell would make too; the rest is the model's; 'any': the same day's where measured, "
          "else another's):")  # fmt: skip
    for kind in ("same day", "other day", "any"):
        rs = [r for r in table if (r["noise"] if kind == "any" else kind in r["noise"])]
        if not rs:
            continue
        apes = [r["ape"] for r in rs]
        noises = [own_noise(r["noise"]) if kind == "any" else r["noise"][kind] for r in rs]
        part = within_noise(apes, noises)
        inside = sum(a <= n for a, n in zip(apes, noises, strict=True))
        print(f"  cells another {kind + ' ' if kind != 'any' else ''}measurement has: {len(rs):>3}; model MAPE "
              f"{statistics.fmean(apes):5.1f}%, noise {statistics.fmean(noises):5.1f}%; within noise {part:5.1f} "
              f"points, beyond {statistics.fmean(apes) - part:5.1f}; {inside:>3} "
              f"cells within their noise")  # fmt: skip
    noises = [n if (n := own_noise(r["noise"])) is not None else 100 * floor for r in table]
    part = within_noise([r["ape"] for r in table], noises)
    print(f"  all {len(table)} cells, each its own noise where measured twice, else the floor {100 * floor:.1f}%: "
          f"MAPE {mape:.1f}% = {part:.1f} within noise + {mape - part:.1f} beyond; "
          f"{sum(r['ape'] <= n for r, n in zip(table, noises, strict=True)):>3} cells within")  # fmt: skip


if __name__ == "__main__":
    main()
