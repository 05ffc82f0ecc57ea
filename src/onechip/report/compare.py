"""Two runs side by side (e.g. bf16 vs fp8 KV cache): what differs in their setup, and per cell the
ratio of aggregate tok/s and median TTFT, with a note when the difference is inside the runs' own noise.

Noise: each cell carries the coefficient of variation of tok/s across its reps; the ratio of two
independent measurements has a CV of about sqrt(cv_a^2 + cv_b^2), and a ratio within that of 1.0 is
reported as "within CV" rather than as a difference.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onechip.report.rundir import RunFiles, read_run
from onechip.report.tables import cell_at, cells_of, get, md_table, num


def _name(run: RunFiles) -> str:
    return str(get(run.manifest, "run_id") or run.path.name)


def _setup(run: RunFiles) -> dict[str, str]:
    plan, boot = run.plan or {}, run.boot or {}
    flags = [
        f"{a['flag']} {a['value']}" if a.get("value") is not None else str(a["flag"])
        for a in plan.get("serve_args") or []
        if isinstance(a, Mapping) and "flag" in a
    ]
    values = {
        "model": boot.get("model") or plan.get("model"),
        "chip": get(run.manifest, "chip") or plan.get("chip"),
        "engine": " ".join(
            str(v) for v in (boot.get("engine") or plan.get("engine"), boot.get("engine_version")) if v
        ),
        "dtype": plan.get("dtype"),
        "KV cache dtype": plan.get("kv_cache_dtype"),
        "KV pool tokens": num(boot.get("kv_cache_tokens", plan.get("kv_tokens")), 0),
        "serve flags": " ".join(flags),
    }
    return {k: "—" if v in (None, "") else str(v) for k, v in values.items()}


def within_noise(ratio: float, cv_a: Any, cv_b: Any) -> bool | None:
    """True when |ratio - 1| <= sqrt(cv_a^2 + cv_b^2); None when either CV is unknown."""
    if not isinstance(cv_a, int | float) or not isinstance(cv_b, int | float):
        return None
    return abs(ratio - 1.0) <= math.hypot(cv_a, cv_b)


def render_compare_files(a: RunFiles, b: RunFiles) -> str:
    """Markdown comparing run `b` against run `a` (ratios are b / a)."""
    name_a, name_b = _name(a), _name(b)
    setup_a, setup_b = _setup(a), _setup(b)
    lines = [f"# onechip comparison: {name_b} vs {name_a}", "", "## Setup", ""]
    lines += md_table(
        ["", name_a, name_b, ""],
        [(k, setup_a[k], setup_b[k], "" if setup_a[k] == setup_b[k] else "differs") for k in setup_a],
    )
    cells_a, cells_b = cells_of(a.bench), cells_of(b.bench)
    keys = sorted({(int(c.get("context_tokens", 0)), int(c.get("clients", 0))) for c in cells_a + cells_b})
    lines += [
        "",
        "## Per cell",
        "",
        f"Ratios are {name_b} ÷ {name_a}. A tok/s difference is called *within CV* "
        "when it is no larger than the two cells' combined coefficient of variation across reps.",
        "",
    ]
    rows = []
    for ctx, clients in keys:
        ca, cb = cell_at(cells_a, ctx, clients), cell_at(cells_b, ctx, clients)
        sa = "absent" if ca is None else str(ca.get("status", "ok"))
        sb = "absent" if cb is None else str(cb.get("status", "ok"))
        ta, tb = get(ca, "output_tok_per_s"), get(cb, "output_tok_per_s")
        if sa == sb == "ok" and isinstance(ta, int | float) and isinstance(tb, int | float) and ta > 0:
            ratio = tb / ta
            noise = within_noise(ratio, get(ca, "cv_output_tok_per_s"), get(cb, "cv_output_tok_per_s"))
            note = {True: "within CV", False: "beyond CV", None: "no CV recorded"}[noise]
            fa, fb = get(ca, "ttft_ms", "median"), get(cb, "ttft_ms", "median")
            ttft = (
                f"{fb / fa:.2f}×"
                if isinstance(fa, int | float) and isinstance(fb, int | float) and fa
                else "—"
            )
            rows.append((f"{ctx:,}", clients, num(ta), num(tb), f"{ratio:.3f}×", ttft, note))
        else:
            rows.append(
                (
                    f"{ctx:,}",
                    clients,
                    num(ta) if sa == "ok" else sa,
                    num(tb) if sb == "ok" else sb,
                    "—",
                    "—",
                    "not comparable",
                )
            )
    lines += md_table(
        [
            "context",
            "clients",
            f"tok/s {name_a}",
            f"tok/s {name_b}",
            "tok/s ratio",
            "median TTFT ratio",
            "note",
        ],
        rows,
    )
    return "\n".join(lines) + "\n"


def render_compare(run_dir: Path | str, other_dir: Path | str) -> str:
    """Markdown comparing the run in `other_dir` against the run in `run_dir`.
    Raises ConfigError when either is not a directory."""
    return render_compare_files(read_run(run_dir), read_run(other_dir))
