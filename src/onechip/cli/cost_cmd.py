"""`onechip cost`: $/M output tokens per pricing model, monthly cost, restart cost, spot vs flex-start."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from onechip import api
from onechip.cli.options import options_from
from onechip.cli.render import new_console, print_json, print_whole, titled_table
from onechip.schemas.common import figures
from onechip.schemas.cost import CostReport
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import CostRequest


def register(app: typer.Typer) -> None:
    app.command("cost")(cost)


@options_from(CostRequest)
def cost(
    as_json: Annotated[bool, typer.Option("--json", help="Print the CostReport as JSON.")] = False, **fields: Any
) -> None:
    """Price a throughput or a saved run on a chip, per pricing model."""
    result = api.cost(build_request(CostRequest, fields))
    if as_json:
        print_json(result)
        return
    _render(result, new_console())


def _render(result: CostReport, console: Console) -> None:
    billed = f" (billed as {result.billed_chips} × {result.billed_as})" if result.billed_as else ""
    taken = f" ({result.output_tok_per_s_from})" if result.output_tok_per_s_from not in (None, "given") else ""
    table = titled_table(f"{result.chip}{billed} at {figures(result.output_tok_per_s or 0)} output tok/s{taken}")
    hourly = "$/slice-h" if result.billed_as else "$/chip-h"
    for name in ("pricing", "region", hourly, "$/M tok", "month", "stops", "price read"):
        left = name in ("pricing", "region", "price read")
        table.add_column(name, justify="left" if left else "right", no_wrap=True)
    for line in result.lines:
        table.add_row(
            line.pricing,
            line.region,
            f"{line.usd_per_chip_hour:.4f}",
            f"${line.usd_per_mtok:,.3f}",
            f"${line.monthly_usd:,.0f}",
            "yes" if line.stops_itself else "no",
            line.price_date + ("[yellow]*[/]" if line.stale else ""),
        )
    print_whole(table, console)
    for line in result.lines:
        stale = f" [yellow]stale: {line.price_age_days} days old[/]" if line.stale else ""
        per_chip = (
            f"{result.billed_chips} × {result.billed_as} at ${line.usd_per_chip_hour / result.billed_chips:.4f} "
            "per chip-hour; " if result.billed_as else ""
        )  # fmt: skip
        console.print(f"[dim]{line.pricing} {line.region}: {per_chip}{line.source}, read {line.price_date}[/]{stale}",
                      highlight=False)  # fmt: skip
    if result.cells:
        names = list(dict.fromkeys(k for c in result.cells for k in c.usd_per_mtok))
        cells = titled_table(f"$/M output tokens per {'predicted' if result.predicted else 'measured'} cell "
                             "(at its steady-window output tok/s)")  # fmt: skip
        for name in ("context", "clients", "tok/s", *names):
            cells.add_column(name, justify="right")
        for c in result.cells:
            # an ok cell that counted no output tokens is 0.0 tok/s (its price '—'), not 'ok' in the tok/s column;
            # one that holds no rate (no reps: bench.stats.summarize_cell's None) is '—', as `report` shows it
            rate = "—" if c.output_tok_per_s is None else f"{c.output_tok_per_s:,.1f}"
            tok = rate if c.status == "ok" else c.status
            cells.add_row(
                f"{c.context_tokens:,}",
                str(c.clients),
                tok,
                *[f"${c.usd_per_mtok[n]:.3f}" if n in c.usd_per_mtok else "—" for n in names],
            )
        print_whole(cells, console)
    for r in result.restarts:
        console.print(f"{r.kind} restart ({r.boot_s:,.0f} s) at {r.pricing} {r.region}: ${r.usd:.4f}")
    for b in result.break_even:
        if b.hours is None:
            console.print(f"{b.region}: flex-start is not dearer than spot; spot never wins on price")
        else:
            console.print(
                f"{b.region}: spot beats flex-start only while preemptions come less often than every "
                f"[bold]{b.hours:.1f} h[/] ({b.kind} restart ${b.restart_usd:.4f} ÷ "
                f"${b.premium_usd_per_hour:.4f}/h premium)"
            )
    for w in result.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    stale = "; * = price read more than 90 days ago" if any(line.stale for line in result.lines) else ""
    console.print(f"$/M tok = USD per million output tokens; month = 730 h running 24/7; stops = billing ends on its "
                  f"own{stale}")  # fmt: skip
