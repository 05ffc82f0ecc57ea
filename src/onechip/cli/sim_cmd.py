"""`onechip simulate` and `onechip advise`: predict a grid, or the cheapest chip, before renting one."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from onechip import api
from onechip.cli.bench_cmd import print_run
from onechip.cli.options import options_from
from onechip.cli.render import console, live_progress
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import SimulateRequest


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)


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
        console.print(f"[bold]predicted[/] from calibration on {', '.join(cal.cells)} ({cal.source_run}); "
                      f"terms the cells pinned: {', '.join(cal.fitted) or 'none'}")  # fmt: skip
    else:
        console.print("[bold yellow]predicted from roofline priors only[/] (no calibration)")
    print_run(run, console)
    console.print(f"[dim]{request.out_dir}/summary.json (compare: onechip report MEASURED --compare "
                  f"{request.out_dir})[/]")  # fmt: skip
