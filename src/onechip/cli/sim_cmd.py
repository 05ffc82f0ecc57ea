"""`onechip simulate` and `onechip advise`: predict a grid, or the cheapest chip, before renting one."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from onechip import api
from onechip.cli.bench_cmd import print_run
from onechip.cli.options import options_from
from onechip.cli.render import console, live_progress, titled_table
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import AdviseRequest, SimulateRequest


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
    app.command("advise")(advise)


@options_from(SimulateRequest)
def simulate(
    as_json: Annotated[bool, typer.Option("--json", help="Print the predicted BenchRun as JSON.")] = False,
    **fields: Any,
) -> None:
    """Predict a context x clients grid from a plan and a few measured calibration cells."""
    request = build_request(SimulateRequest, fields)
    with live_progress(transient=True) as on_progress:
        run = api.simulate(request, on_progress)
    if as_json:
        typer.echo(run.model_dump_json(indent=2))
        return
    prediction = run.prediction
    if prediction is not None and prediction.calibration is not None:
        cal = prediction.calibration
        console.print(
            f"[bold]predicted[/] from calibration on {', '.join(cal.cells)} ({cal.source_run}); "
            f"terms the cells pinned: {', '.join(cal.fitted) or 'none'}"
        )
    else:
        console.print("[bold yellow]predicted from roofline priors only[/] (no calibration)")
    print_run(run, console)
    console.print(
        f"[dim]{request.out_dir}/summary.json (compare: onechip report MEASURED --compare {request.out_dir})[/]"
    )


@options_from(AdviseRequest)
def advise(
    as_json: Annotated[bool, typer.Option("--json", help="Print the Advice as JSON.")] = False,
    **fields: Any,
) -> None:
    """Every chip MODEL fits on for one workload: predicted cell, $/M output tokens, ranked."""
    request = build_request(AdviseRequest, fields)
    with live_progress(transient=True) as on_progress:
        advice = api.advise(request, on_progress)
    if as_json:
        typer.echo(advice.model_dump_json(indent=2))
        return
    wl = advice.workload
    table = titled_table(
        f"{advice.model}: {wl['ctx']:,.0f} tokens x {wl['clients']:.0f} clients, "
        f"{wl['output_tokens']:.0f} output tokens",
        title_justify="left",
    )
    for name in ("chip", "engines", "tok/s [range]", "TTFT ms", "TPOT ms", "$/h", "$/M tok", "SLO", "from"):
        table.add_column(name, justify="left" if name in ("chip", "engines", "from") else "right")
    for r in advice.rows:
        if not r.fits:
            continue
        low, high = r.output_tok_per_s_range or (0.0, 0.0)
        table.add_row(
            r.chip,
            f"{r.engines} x TP={r.tensor_parallel_size}",
            f"{r.output_tok_per_s or 0:,.0f} [{low:,.0f}-{high:,.0f}]",
            f"{r.ttft_ms or 0:,.1f}",
            f"{r.tpot_ms or 0:,.2f}",
            f"{r.usd_per_hour:.2f} {r.pricing}" if r.usd_per_hour is not None else "no price",
            f"${r.usd_per_mtok:.3f}" if r.usd_per_mtok is not None else "—",
            {True: "meets", False: "[red]misses[/]", None: ""}[r.meets_slo],
            "calibrated" if r.calibrated else "[yellow]priors[/]",
        )
    console.print(table)
    for r in advice.rows:
        if not r.fits:
            console.print(f"[dim]{r.chip} ({r.engines} x TP={r.tensor_parallel_size}): {r.verdict}[/]")
    for note in advice.notes:
        console.print(f"[yellow]note[/] {note}")
