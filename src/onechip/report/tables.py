"""Small pure helpers the renderers share: number formatting, Markdown tables, the bench grid and the
workload guidance derived from a run's own plan. Inputs are plain mappings as read from run files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

GIB = 1024**3
KV_RULE_FRACTION = 0.78  # seed article: "keep clients x context < 250,000 tokens -- about 78% of the KV pool"


def num(value: Any, digits: int = 1, unit: str = "") -> str:
    """A number with thousands separators and `digits` decimals; '—' for None or non-numbers."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "—" if value is None else str(value)
    text = f"{value:,.{digits}f}" if isinstance(value, float) or digits else f"{value:,}"
    return f"{text}{unit}"


def gib(value_bytes: Any, digits: int = 2) -> str:
    """Bytes as GiB (2**30), or '—'."""
    if isinstance(value_bytes, int | float) and not isinstance(value_bytes, bool):
        return f"{value_bytes / GIB:,.{digits}f} GiB"
    return "—"


def md_escape(text: Any) -> str:
    """Make a value safe inside a Markdown table cell (pipes and newlines)."""
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A GitHub-flavoured Markdown table as lines."""
    out = ["| " + " | ".join(md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_escape(c) for c in row) + " |" for row in rows]
    return out


def get(data: Any, *keys: str, default: Any = None) -> Any:
    """Nested lookup in mappings: get(cell, 'ttft_ms', 'median')."""
    for key in keys:
        if not isinstance(data, Mapping) or key not in data:
            return default
        data = data[key]
    return data


def cells_of(bench: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The cell mappings of a bench summary (summary.json), or []."""
    cells = get(bench, "cells", default=[]) or []
    return [c for c in cells if isinstance(c, Mapping)]


def grid_axes(cells: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[int]]:
    """Sorted distinct contexts (rows) and clients (columns) of the cells."""
    contexts = sorted({int(c.get("context_tokens", 0)) for c in cells})
    clients = sorted({int(c.get("clients", 0)) for c in cells})
    return contexts, clients


def cell_at(cells: Sequence[Mapping[str, Any]], context: int, clients: int) -> Mapping[str, Any] | None:
    for cell in cells:
        if int(cell.get("context_tokens", -1)) == context and int(cell.get("clients", -1)) == clients:
            return cell
    return None


def grid_rows(
    cells: Sequence[Mapping[str, Any]], value: Callable[[Mapping[str, Any]], str]
) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a context x clients grid. `value(cell)` renders an 'ok' cell; infeasible and
    failed cells read 'infeasible' / 'failed', absent ones '—'."""
    contexts, clients = grid_axes(cells)
    header = ["context \\ clients"] + [str(n) for n in clients]
    rows = []
    for ctx in contexts:
        row = [f"{ctx:,}"]
        for n in clients:
            cell = cell_at(cells, ctx, n)
            status = None if cell is None else cell.get("status", "ok")
            row.append("—" if cell is None else value(cell) if status == "ok" else str(status))
        rows.append(row)
    return header, rows


def kv_pool_tokens(
    plan: Mapping[str, Any] | None, boot: Mapping[str, Any] | None, crosscheck: Mapping[str, Any] | None
) -> tuple[int | None, str]:
    """KV pool tokens for the workload rule and where they came from: the engine's reported figure
    when there is one (it is what the engine actually allocated), else the plan's."""
    for value, origin in (
        (get(boot, "kv_cache_tokens"), "reported by the engine at boot"),
        (get(crosscheck, "reported_kv_tokens"), "reported by the engine at boot"),
        (get(plan, "kv_tokens"), "planned"),
    ):
        if isinstance(value, int | float) and value > 0:
            return int(value), origin
    return None, ""


def guidance(cells: Sequence[Mapping[str, Any]], kv_tokens: int | None) -> list[tuple[str, str, str]]:
    """(workload, cell, why) suggestions from the measured ok cells.

    - under the KV rule: clients x context <= 78% of the KV pool (seed article's rule of thumb);
    - interactive agents: the most clients at a context whose per-stream tok/s is still at least half
      of that context's single-client per-stream tok/s, under the rule;
    - batch / offline: the highest aggregate tok/s under the rule;
    - long documents: the highest aggregate tok/s at the largest measured context, under the rule.
    """
    ok = [
        c
        for c in cells
        if c.get("status", "ok") == "ok" and isinstance(c.get("output_tok_per_s"), int | float)
    ]
    limit = KV_RULE_FRACTION * kv_tokens if kv_tokens else None

    def under(c: Mapping[str, Any]) -> bool:
        return limit is None or int(c["context_tokens"]) * int(c["clients"]) <= limit

    def label(c: Mapping[str, Any]) -> str:
        return f"{int(c['context_tokens']):,} ctx × {int(c['clients'])} clients"

    fits = [c for c in ok if under(c)]
    out: list[tuple[str, str, str]] = []
    interactive = []
    for c in fits:
        single = next(
            (s for s in ok if s["context_tokens"] == c["context_tokens"] and s["clients"] == 1), None
        )
        mine, base = c.get("per_stream_tok_per_s"), get(single, "per_stream_tok_per_s")
        if (
            isinstance(mine, int | float)
            and isinstance(base, int | float)
            and base > 0
            and mine >= 0.5 * base
        ):
            interactive.append(c)
    if interactive:
        best = max(interactive, key=lambda c: (c["clients"], c["output_tok_per_s"]))
        out.append(
            (
                "interactive agents",
                label(best),
                f"{num(best.get('per_stream_tok_per_s'))} tok/s per stream (≥ half of one client's), "
                f"median TTFT {num(get(best, 'ttft_ms', 'median'), 0)} ms",
            )
        )
    if fits:
        best = max(fits, key=lambda c: c["output_tok_per_s"])
        out.append(("batch / offline", label(best), f"{num(best['output_tok_per_s'])} tok/s aggregate"))
        longest = max(int(c["context_tokens"]) for c in fits)
        best = max(
            (c for c in fits if int(c["context_tokens"]) == longest), key=lambda c: c["output_tok_per_s"]
        )
        out.append(
            (
                "long documents",
                label(best),
                f"{num(best['output_tok_per_s'])} tok/s aggregate at the longest context that fits the rule",
            )
        )
    return out
