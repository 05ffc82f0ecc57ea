"""`onechip report RUN`: re-render a saved run directory without re-running anything."""

from __future__ import annotations

from typing import Any

import typer

from onechip import api
from onechip.cli.entry import finished
from onechip.cli.options import options_from
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import ReportRequest


def register(app: typer.Typer) -> None:
    app.command("report")(report)


@options_from(ReportRequest)
def report(**fields: Any) -> None:
    """Render a saved run (or a --find-max search) as a report beside its files."""
    written = api.report(build_request(ReportRequest, fields))
    finished()  # every file is written: a Ctrl-C while the paths are printed leaves report's own status
    for path in written:
        typer.echo(str(path))
