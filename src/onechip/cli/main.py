"""The `onechip` console script: one typer app; each command lives in its own module and registers itself.

Every OnechipError becomes one line on stderr and its exit code; Ctrl-C exits 130. Never a traceback.
"""

from __future__ import annotations

import signal
import sys

import click
import typer
from rich.console import Console

from onechip import __version__
from onechip.cli import commands
from onechip.errors import OnechipError, redact

app = typer.Typer(
    name="onechip",
    help="Plan, launch, check, benchmark and price a lite agent backend on one accelerator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"onechip {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print version."),
) -> None:
    """onechip: plan it, launch it, prove it, price it."""


for _module in commands.MODULES:
    _module.register(app)


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM takes the same path as Ctrl-C: finally-blocks stop engines and keep what was measured.
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    signal.signal(signal.SIGTERM, _terminate)
    command = typer.main.get_command(app)
    try:
        rc = command.main(args=argv, prog_name="onechip", standalone_mode=False)
    except OnechipError as exc:
        err_console.print(f"[bold red]error:[/] {redact(str(exc))}", highlight=False)
        sys.exit(exc.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort):
        err_console.print("[bold red]interrupted[/] (what was measured is kept on disk)")
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(rc if isinstance(rc, int) else 0)
