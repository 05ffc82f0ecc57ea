"""The cost section of the Markdown report: $/M output tokens per pricing model, per cell (measured or predicted),
restart cost and the spot-vs-flex-start break-even, from the run's `CostReport` (cost.json).
Pure rendering; an older cost.json (a bare list of CostLine) arrives here as a CostReport too.
"""

from __future__ import annotations

from onechip.report.tables import md_escape, md_table, md_text, num
from onechip.schemas import BreakEven, CellCost, CostLine, CostReport, RestartCost

LINE_HEADER = [
    "pricing",
    "region",
    "$/chip-hour",
    "$/M output tokens",
    "month 24/7 (730 h)",
    "stops itself",
    "price read",
]


def _line_row(c: CostLine) -> tuple[str, ...]:
    return (
        c.pricing,
        c.region or "—",
        f"{c.usd_per_chip_hour:.4f}",
        f"${c.usd_per_mtok:.3f}",
        f"${c.monthly_usd:,.0f}",
        "yes" if c.stops_itself else "no",
        f"{c.price_date}" + (" ⚠ stale" if c.stale else ""),
    )


def _lines(cost: CostReport) -> list[str]:
    if not cost.lines:
        return []
    first = cost.lines[0]
    tok_s = cost.output_tok_per_s if cost.output_tok_per_s is not None else first.output_tok_per_s
    taken = f", {cost.output_tok_per_s_from}" if cost.output_tok_per_s_from not in (None, "given") else ""
    return [
        f"Chip **{md_escape(cost.chip or first.chip or '—')}** at {num(tok_s)} output tok/s{taken} "
        f"(prices judged on {cost.today or '—'}).",
        "",
        *md_table(LINE_HEADER, [_line_row(c) for c in cost.lines]),
    ]


def _cells(cells: list[CellCost], predicted: bool) -> list[str]:
    if not cells:
        return []
    names = list(dict.fromkeys(k for c in cells for k in c.usd_per_mtok))
    rows = [
        (
            f"{c.context_tokens:,}",
            c.clients,
            num(c.output_tok_per_s) if c.status == "ok" else c.status,
            *[f"${c.usd_per_mtok[n]:.3f}" if n in c.usd_per_mtok else "—" for n in names],
        )
        for c in cells
    ]
    title = f"$/M output tokens per {'predicted' if predicted else 'measured'} cell (at its steady-window tok/s):"
    return ["", title, "", *md_table(["context", "clients", "tok/s", *names], rows)]


def _restarts(restarts: list[RestartCost]) -> list[str]:
    if not restarts:
        return []
    rows = [(r.kind, num(r.boot_s, 0), r.pricing, f"${r.usd:.4f}") for r in restarts]
    return [
        "",
        "Restart cost (the chip bills while the engine boots):",
        "",
        *md_table(["restart", "boot (s)", "pricing", "USD"], rows),
    ]


def _break_even(b: BreakEven) -> str:
    if b.hours is None:
        return f"- Flex-start ({b.region}) is not dearer than spot: spot never wins on price."
    return (
        f"- Spot beats flex-start ({b.region}) only while preemptions come less often "
        f"than every **{b.hours:.1f} h** ({b.kind} restart ${b.restart_usd:.4f} "
        f"÷ flex-start premium ${b.premium_usd_per_hour:.4f}/h)."
    )


def cost_section(cost: CostReport | None) -> list[str]:
    """The '## Cost' section; one line saying how to price the run when it has no cost.json."""
    lines = ["## Cost", ""]
    if cost is None or not (cost.lines or cost.cells):
        return lines + ["No cost in this run (price it with `onechip cost --run DIR --chip CHIP --write`)."]
    lines += _lines(cost) + _cells(cost.cells, cost.predicted) + _restarts(cost.restarts)
    if cost.break_even:
        lines += ["", *[_break_even(b) for b in cost.break_even]]
    if cost.warnings:
        lines += ["", *[f"- ⚠ {md_text(w)}" for w in cost.warnings]]
    return lines
