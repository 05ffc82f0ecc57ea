"""Two runs side by side (e.g. bf16 vs fp8 KV cache): what differs in their setup, and per cell the
ratio of aggregate tok/s and median TTFT, with a note when the difference is inside the runs' own noise.
When one of the two was predicted (`onechip simulate`), a section shows predicted next to measured, cell by
cell, with the error of each figure ((predicted - measured) / measured) and the mean absolute error (MAPE)
over the cells the prediction was not calibrated on.

Noise: each cell carries the coefficient of variation of tok/s across its reps; the ratio of two
independent measurements has a CV of about sqrt(cv_a^2 + cv_b^2), and a ratio within that of 1.0 is
reported as "within CV" rather than as a difference.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, TypeGuard

from onechip.errors import ConfigError, redact
from onechip.report.rundir import RunFiles, read_run
from onechip.report.tables import (
    cell_at,
    cells_of,
    first,
    flag_words,
    md_escape,
    md_table,
    num,
    serve_flags,
    state_slots,
    unfinished_cells,
)
from onechip.schemas import CellResult
from onechip.schemas.bench import BenchServer
from onechip.schemas.common import model_key


def _name(run: RunFiles) -> str:
    return (run.manifest.run_id if run.manifest else "") or run.path.name


def _server(run: RunFiles) -> BenchServer:
    """What the bench summary recorded of the server (`bench` without --plan writes no plan.json)."""
    return run.bench.server if run.bench else BenchServer()


def _model(run: RunFiles) -> str | None:
    return (run.boot.model if run.boot else None) or (run.plan.model if run.plan else None) or _server(run).model


def _setup(run: RunFiles) -> dict[str, str]:
    plan, boot = run.plan, run.boot
    engine = (boot.engine if boot else None) or (plan.engine if plan else None)
    version = (boot.engine_version if boot else None) or _server(run).engine_version
    kv_tokens = boot.kv_cache_tokens if boot and boot.kv_cache_tokens is not None else None
    slots = state_slots(plan, boot, run.crosscheck)  # attention-free (Mamba): no KV tokens, sequences
    kv_pool = num(kv_tokens if kv_tokens is not None else plan.kv_tokens if plan else None, 0)
    if slots is not None:
        kv_pool = f"none: attention-free, {num(first(slots[1], slots[0]), 0)} sequences of any length"
    values = {
        "model": _model(run),
        "chip": (run.manifest.chip if run.manifest else None) or (plan.chip if plan else None),
        "engine": engine,  # a bench alone records the version (/version), not the kind: a row of its own each
        "engine version": version,
        "dtype": plan.dtype if plan else None,
        "KV cache dtype": plan.kv_cache_dtype if plan else None,
        "KV pool tokens": kv_pool,
        "serve flags": " ".join(flag_words(serve_flags(plan)[0])),
    }
    return {k: "—" if v in (None, "") else str(v) for k, v in values.items()}


def _differs(key: str, a: str, b: str) -> str:
    """The Setup table's last column for row `key`: a value one run did not record is not a difference, nor a
    model named by another path to it (model_key, the rule check_comparable matches a prediction to a run with:
    a plan of the catalog's Llama-3.1-8B-Instruct against a server of meta-llama/Llama-3.1-8B-Instruct)."""
    if a == b:
        return ""
    if "—" in (a, b):
        return "not recorded in one run"
    return "same model, named differently" if key == "model" and model_key(a) == model_key(b) else "differs"


def check_comparable(a: RunFiles, b: RunFiles) -> None:
    """Raise ConfigError when the two are one run directory (every ratio would be 1.000×, within CV, and the
    comparison said nothing of it), or when one run is a prediction and the two served different models (names
    compared by their last part): errors and MAPE of a prediction for another model measure nothing."""
    if a.path.resolve() == b.path.resolve():
        raise ConfigError(f"--compare {b.path} is the run itself ({a.path}): compare it with another run directory")
    predicted = [r for r in (a, b) if r.bench is not None and r.bench.prediction is not None]
    if len(predicted) != 1:
        return
    pred = predicted[0]
    meas = b if pred is a else a
    measured_model = _model(meas)
    names = {model_key(n) for n in (_model(pred), pred.plan.serve_model if pred.plan else None) if n}
    if measured_model and names and model_key(measured_model) not in names:
        raise ConfigError(
            f"{pred.path} predicts {_model(pred)} but {meas.path} measured {measured_model}: "
            "compare a prediction with a run of the same model"
        )


def within_noise(ratio: float, cv_a: Any, cv_b: Any) -> bool | None:
    """True when |ratio - 1| <= sqrt(cv_a^2 + cv_b^2); None when the ratio or either CV is unknown or not
    a finite number (a NaN is never "beyond CV")."""
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in (ratio, cv_a, cv_b)):
        return None
    return abs(ratio - 1.0) <= math.hypot(cv_a, cv_b)


def _positive(value: float | None) -> TypeGuard[float]:
    """A figure a ratio can be taken of: a finite number above 0 (a damaged run may hold NaN)."""
    return value is not None and math.isfinite(value) and value > 0


def _failures(named: tuple[tuple[str, CellResult | None], ...]) -> str:
    """'; r2: 1 of 4 requests failed (tokens not counted)' for each run whose cell lost requests: its tok/s counts
    only the others' tokens, so a ratio set against it is not of like with like ('' when none did)."""
    return "".join(
        f"; {name}: {c.requests_failed} of {c.requests_sent or '?'} request{'' if c.requests_sent == 1 else 's'} "
        "failed (tokens not counted)"
        for name, c in named
        if c is not None and c.requests_failed
    )


def _cell_row(
    ctx: int,
    clients: int,
    ca: CellResult | None,
    cb: CellResult | None,
    names: tuple[str, str] = ("a", "b"),
    unfinished: tuple[set[tuple[int, int]], set[tuple[int, int]]] = (set(), set()),
) -> tuple[Any, ...]:
    """One row of the per-cell table: both tok/s, their ratio, the TTFT ratio and the noise note (and which run's
    cell lost requests: _failures; which run stopped before the cell, one of its `unfinished` cells of the grid)."""
    stopped = "".join(
        f"; {name} stopped before this cell (interrupted, or still running)"
        for name, cell, missing in zip(names, (ca, cb), unfinished, strict=True)
        if cell is None and (ctx, clients) in missing
    )
    failed = _failures(((names[0], ca), (names[1], cb))) + stopped
    sa = "absent" if ca is None else ca.status
    sb = "absent" if cb is None else cb.status
    ta = ca.output_tok_per_s if ca else None
    tb = cb.output_tok_per_s if cb else None
    if ca is None or cb is None or sa != "ok" or sb != "ok" or not _positive(ta) or not _positive(tb):
        return (f"{ctx:,}", clients, num(ta) if sa == "ok" else sa, num(tb) if sb == "ok" else sb, "—", "—",
                "not comparable" + failed)  # fmt: skip
    ratio = tb / ta
    noise = within_noise(ratio, ca.cv_output_tok_per_s, cb.cv_output_tok_per_s)
    note = {True: "within CV", False: "beyond CV", None: "no CV recorded"}[noise]
    fa, fb = ca.ttft_ms.median, cb.ttft_ms.median
    ttft = f"{fb / fa:.2f}×" if _positive(fa) and _positive(fb) else "—"
    return (f"{ctx:,}", clients, num(ta), num(tb), f"{ratio:.3f}×", ttft, note + failed)


FIGURES = (("output tok/s", "output_tok_per_s"), ("median TTFT ms", "ttft_ms"), ("median TPOT ms", "tpot_ms"))


def _figure(cell: CellResult, name: str) -> float | None:
    return cell.output_tok_per_s if name == "output_tok_per_s" else getattr(cell, name).median


def _error(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or not meas else (pred - meas) / meas * 100.0


# the per-request workload a prediction must share with the measured run for its errors to mean anything
_WORKLOAD = (("output_tokens", "--output-tokens"), ("requests_per_client", "--requests-per-client"),
             ("warmup_requests", "--warmup-requests"), ("rate_per_s", "--rate"))  # fmt: skip


def _workload_mismatch(measured: RunFiles, predicted: RunFiles) -> list[str]:
    """A warning per workload setting the prediction was made with differently from the measured run (e.g.
    32 output tokens predicted against 64 measured: the errors are then mostly that difference)."""
    if measured.bench is None or predicted.bench is None:
        return []
    out = []
    for field, flag in _WORKLOAD:
        m, p = getattr(measured.bench.config, field), getattr(predicted.bench.config, field)
        if m != p:
            out.append(f"- **warning**: predicted with {field} {p}, measured with {m}: rerun simulate with {flag} {m}")
    return [*out, ""] if out else []


def _predicted_section(measured: RunFiles, predicted: RunFiles) -> list[str]:
    """Predicted vs measured per cell, with errors and MAPE over cells not used for calibration."""
    pred_bench = predicted.bench
    cal = pred_bench.prediction.calibration if pred_bench and pred_bench.prediction else None
    used = set(cal.cells) if cal else set()
    origin = f"calibrated on {', '.join(cal.cells)}" if cal else "roofline priors only (optimistic bound)"
    lines = ["", f"## Predicted vs measured ({_name(predicted)}: {origin})", "",
             "Output tok/s is the steady window's on both sides; TTFT and TPOT are medians over reps, ms; err is "
             "(predicted - measured) / measured.", ""]  # fmt: skip
    lines += _workload_mismatch(measured, predicted)
    header = ["context", "clients"] + [f"{label} {kind}" for label, _ in FIGURES for kind in ("meas", "pred", "err")]
    rows: list[list[Any]] = []
    errors: dict[str, list[float]] = {name: [] for _, name in FIGURES}
    for m in cells_of(measured.bench):
        p = cell_at(cells_of(pred_bench), m.context_tokens, m.clients)
        key = f"{m.context_tokens}x{m.clients}"
        row: list[Any] = [f"{m.context_tokens:,}", m.clients]
        for _, name in FIGURES:
            mv = _figure(m, name) if m.status == "ok" else None
            pv = _figure(p, name) if p is not None and p.status == "ok" else None
            err = _error(pv, mv)
            row += [num(mv) if m.status == "ok" else m.status, num(pv) if p and p.status == "ok" else
                    (p.status if p else "absent"), "—" if err is None else f"{err:+.1f}%"]  # fmt: skip
            if err is not None and key not in used:
                errors[name].append(abs(err))
        rows.append(row if key not in used else [*row[:-1], f"{row[-1]} (calibration)"])
    lines += md_table(header, rows)
    lines.append("")
    for label, name in FIGURES:
        values = errors[name]
        mape = f"{sum(values) / len(values):.1f}% over {len(values)} cells" if values else "no cells"
        lines.append(f"- MAPE {label} (cells not used for calibration): {mape}")
    return lines


def render_compare_files(a: RunFiles, b: RunFiles) -> str:
    """Markdown comparing run `b` against run `a` (ratios are b / a), secrets redacted as in the report."""
    name_a, name_b = _name(a), _name(b)
    setup_a, setup_b = _setup(a), _setup(b)
    lines = [f"# onechip comparison: {md_escape(name_b)} vs {md_escape(name_a)}", "", "## Setup", ""]
    lines += md_table(
        ["", name_a, name_b, ""],
        [(k, setup_a[k], setup_b[k], _differs(k, setup_a[k], setup_b[k])) for k in setup_a],
    )
    cells_a, cells_b = cells_of(a.bench), cells_of(b.bench)
    keys = sorted({(c.context_tokens, c.clients) for c in cells_a + cells_b})
    lines += ["", "## Per cell", ""]
    without = [md_escape(name) for name, cells in ((name_a, cells_a), (name_b, cells_b)) if not cells]
    if without:  # a table of 'absent / not comparable' rows said it less plainly
        lines.append(
            f"No cell to compare: {' and '.join(without)} {'has' if len(without) == 1 else 'have'} no measured cell "
            "(no bench summary, or a bench stopped in its first cell)."
        )
        return redact("\n".join(lines) + "\n")
    lines += [
        f"tok/s is the aggregate output tok/s of the steady window (the report's first grid; the whole-run figure "
        f"peers report is lower by the ramp and the drain), median over reps. Ratios are {md_escape(name_b)} ÷ "
        f"{md_escape(name_a)}. A "
        "tok/s difference is called *within CV* when it is no larger than the two cells' combined coefficient of "
        "variation across reps.",
        "",
    ]
    unfinished = (set(unfinished_cells(a.bench) or ()), set(unfinished_cells(b.bench) or ()))
    rows = [
        _cell_row(ctx, n, cell_at(cells_a, ctx, n), cell_at(cells_b, ctx, n), (name_a, name_b), unfinished)
        for ctx, n in keys
    ]
    header = ["context", "clients", f"tok/s {name_a}", f"tok/s {name_b}", "tok/s ratio", "median TTFT ratio",
              "note"]  # fmt: skip
    lines += md_table(header, rows)
    predicted_a = a.bench is not None and a.bench.prediction is not None
    predicted_b = b.bench is not None and b.bench.prediction is not None
    if predicted_a != predicted_b:
        lines += _predicted_section(b if predicted_a else a, a if predicted_a else b)
    return redact("\n".join(lines) + "\n")


def render_compare(run_dir: Path | str, other_dir: Path | str) -> str:
    """Markdown comparing the run in `other_dir` against the run in `run_dir`.
    Raises ConfigError when either is not a directory."""
    return render_compare_files(read_run(run_dir), read_run(other_dir))
