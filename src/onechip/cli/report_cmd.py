"""`onechip report RUN`: re-render a saved run directory without re-running anything."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from onechip import api


def register(app: typer.Typer) -> None:
    app.command("report")(report)


def report(
    run: Annotated[Path, typer.Argument(help="Run directory, e.g. runs/<run-id>.")],
    formats: Annotated[
        str, typer.Option("--format", help="Comma list: md, html, json, serving-report.")
    ] = "md",
    compare: Annotated[Path | None, typer.Option(help="Another run directory to compare against.")] = None,
) -> None:
    """Render a saved run as a report beside its files."""
    for path in api.report(run, formats=formats, compare=compare):
        typer.echo(str(path))
