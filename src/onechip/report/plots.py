"""Plots of a bench grid drawn with matplotlib's object API (no pyplot, no global state, no display),
returned as PNG bytes: a heatmap of aggregate tok/s over context x clients, tok/s vs clients per
context (log x) with each context's KV wall marked, and median TTFT vs clients.

matplotlib is imported lazily: it is only needed for HTML reports.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Sequence
from typing import Any

from onechip.errors import MissingDependencyError
from onechip.report.tables import KV_RULE_FRACTION, cell_at, grid_axes
from onechip.schemas import CellResult
from onechip.schemas.bench import SearchResult
from onechip.schemas.common import plural

Pick = Callable[[CellResult], float | None]


def _tok_s(cell: CellResult) -> float | None:
    return cell.output_tok_per_s


def _ttft_median(cell: CellResult) -> float | None:
    return cell.ttft_ms.median


def _figure(width: float = 6.4, height: float = 4.0) -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:  # pragma: no cover - matplotlib is installed with the report extra
        raise MissingDependencyError("HTML reports need matplotlib: pip install matplotlib") from None
    return Figure(figsize=(width, height), dpi=100, layout="constrained")


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _value(cell: CellResult | None, pick: Pick) -> float | None:
    """`pick(cell)` for an 'ok' cell, else None (absent, infeasible and failed cells are not drawn)."""
    if cell is None or cell.status != "ok":
        return None
    return pick(cell)


def heatmap_png(cells: Sequence[CellResult]) -> bytes:
    """Aggregate output tok/s over contexts (rows) x clients (columns); non-ok cells are labelled."""
    contexts, clients = grid_axes(cells)
    fig = _figure()
    ax = fig.add_subplot()
    data = [[_value(cell_at(cells, ctx, n), _tok_s) for n in clients] for ctx in contexts]
    masked = [[math.nan if v is None else v for v in row] for row in data]
    image = ax.imshow(masked, cmap="viridis", aspect="auto")
    fig.colorbar(image, ax=ax, label="aggregate output tok/s")
    ax.set_xticks(range(len(clients)), [str(n) for n in clients])
    ax.set_yticks(range(len(contexts)), [f"{c:,}" for c in contexts])
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("context tokens")
    for i, ctx in enumerate(contexts):
        for j, n in enumerate(clients):
            cell = cell_at(cells, ctx, n)
            if data[i][j] is not None:
                ax.text(j, i, f"{data[i][j]:,.0f}", ha="center", va="center", color="white", fontsize=8)
            else:  # masked cells are drawn blank: label them in dark text
                label = "—" if cell is None else cell.status
                ax.text(j, i, label, ha="center", va="center", color="#b00020", fontsize=8)
    ax.set_title("Aggregate output tok/s")
    return _png(fig)


def _per_context_lines(ax: Any, cells: Sequence[CellResult], pick: Pick) -> list[tuple[int, str]]:
    contexts, clients = grid_axes(cells)
    drawn = []
    for ctx in contexts:
        points = [(n, _value(cell_at(cells, ctx, n), pick)) for n in clients]
        points = [(n, v) for n, v in points if v is not None]
        if points:
            (line,) = ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{ctx:,} ctx")
            drawn.append((ctx, line.get_color()))
    ax.set_xscale("log", base=2)
    ax.set_xticks(clients, [str(n) for n in clients])
    ax.minorticks_off()
    ax.set_xlabel("concurrent clients (log scale)")
    ax.grid(True, alpha=0.3)
    return drawn


def throughput_png(cells: Sequence[CellResult], kv_tokens: int | None) -> bytes:
    """Aggregate tok/s vs clients, one line per context; dotted verticals mark each context's KV wall
    (clients x context = KV pool) and dashed ones the 78% rule, where they fall inside the plot."""
    fig = _figure()
    ax = fig.add_subplot()
    drawn = _per_context_lines(ax, cells, _tok_s)
    if kv_tokens:
        _, clients = grid_axes(cells)
        lo, hi = min(clients) / 1.5, max(clients) * 1.5
        for ctx, color in drawn:
            for fraction, style in ((1.0, ":"), (KV_RULE_FRACTION, "--")):
                wall = fraction * kv_tokens / ctx if ctx else None
                if wall and lo <= wall <= hi:
                    ax.axvline(wall, color=color, linestyle=style, alpha=0.7)
        ax.plot([], [], color="grey", linestyle=":", label="KV wall (clients × ctx = pool)")
        ax.plot([], [], color="grey", linestyle="--", label=f"{KV_RULE_FRACTION:.0%} of the pool")
    ax.set_ylabel("aggregate output tok/s")
    ax.set_title("Throughput vs clients")
    ax.legend(fontsize=8)
    return _png(fig)


def ttft_png(cells: Sequence[CellResult]) -> bytes:
    """Median TTFT (ms) vs clients, one line per context."""
    fig = _figure()
    ax = fig.add_subplot()
    _per_context_lines(ax, cells, _ttft_median)
    ax.set_ylabel("median TTFT (ms)")
    ax.set_title("Time to first token vs clients")
    ax.legend(fontsize=8)
    return _png(fig)


def turn_ttft_png(cells: Sequence[CellResult]) -> bytes:
    """Agent workload: median TTFT (ms) per turn, one line per cell, with each turn's cached share (usage)
    written beside its point where the server reported it."""
    fig = _figure()
    ax = fig.add_subplot()
    for c in cells:
        turns = [t for t in c.turns if t.ttft_ms.median is not None]
        if c.status != "ok" or not turns:
            continue
        xs, ys = [t.turn + 1 for t in turns], [t.ttft_ms.median for t in turns]
        ax.plot(xs, ys, marker="o", label=f"{c.context_tokens:,}-token prefix × {plural(c.clients, 'client')}")
        for t, x, y in zip(turns, xs, ys, strict=True):
            if t.cached_share is not None:
                ax.annotate(f"{t.cached_share:.0%} cached", (x, y), textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel("turn")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.15)  # headroom for the cached-share labels
    ax.set_ylabel("median TTFT (ms)")
    ax.set_title("Agent sessions: TTFT per turn")
    ax.legend(fontsize="small")
    return _png(fig)


def attainment_png(result: SearchResult) -> bytes:
    """SLO search: share of requests meeting every SLO vs load, the target percentile as a line, the answer
    marked, misses in red."""
    fig = _figure()
    ax = fig.add_subplot()
    probes = sorted((p for p in result.probes if p.attainment is not None), key=lambda p: p.load)
    xs, ys = [p.load for p in probes], [100 * (p.attainment or 0) for p in probes]
    ax.plot(xs, ys, color="0.6", zorder=1)
    ax.scatter(xs, ys, c=["tab:green" if p.meets_slo else "tab:red" for p in probes], zorder=2)
    ax.axhline(result.percentile, linestyle="--", color="0.4", label=f"target p{result.percentile:g}")
    best = result.max_clients if result.kind == "clients" else result.max_rate_per_s
    if best:
        ax.axvline(best, color="tab:green", alpha=0.5, label=f"answer: {best:g}")
    if result.kv_wall_clients and result.kind == "clients":
        ax.axvline(result.kv_wall_clients, color="tab:purple", linestyle=":", label="KV wall (plan)")
    if result.kind == "clients":
        ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel("clients" if result.kind == "clients" else "requests/s")
    ax.set_ylabel("requests meeting every SLO (%)")
    ax.set_ylim(0, 105)
    ax.set_title("SLO attainment vs load")
    ax.legend(fontsize="small")
    return _png(fig)
