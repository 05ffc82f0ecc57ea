"""`onechip mcp`: serve every onechip job as MCP tools (stdio by default; streamable HTTP with --http).

The MCP SDK is imported when the command runs, never at CLI start (tests/unit/cli/test_cli_imports.py).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from onechip.errors import ConfigError, MissingDependencyError
from onechip.paths import read_key_file

TOKEN_ENV = "ONECHIP_MCP_TOKEN"


def _token(token_file: Path | None) -> str | None:
    """The bearer token from --token-file or $ONECHIP_MCP_TOKEN (never echoed), or None."""
    if token_file is None:
        return os.environ.get(TOKEN_ENV) or None
    token = read_key_file(token_file, "--token-file")[0].strip()
    if not token:
        raise ConfigError(f"--token-file {token_file} is empty")
    return token


def _closed_stdio() -> str:
    """'stdin is', 'stdout is' or 'stdin and stdout are' where they were closed before onechip started (`<&-`, `>&-`:
    Python's original streams are then None), else '': over a closed stdin the SDK's stdio server waited, silent, and
    over a closed stdout it answered into nothing."""
    closed = [name for name, stream in (("stdin", sys.__stdin__), ("stdout", sys.__stdout__)) if stream is None]
    return f"{' and '.join(closed)} {'is' if len(closed) == 1 else 'are'}" if closed else ""


HTTP_HOST, HTTP_PORT = "127.0.0.1", 8765  # the streamable-HTTP server's defaults


def register(app: typer.Typer) -> None:
    @app.command()
    def mcp(
        read_only: Annotated[bool, typer.Option("--read-only", help="Only tools that change nothing.")] = False,
        http: Annotated[bool, typer.Option("--http", help="Streamable HTTP at /mcp instead of stdio.")] = False,
        host: Annotated[
            str, typer.Option("--host", help="HTTP bind address; off 127.0.0.1 a token is required.")
        ] = HTTP_HOST,
        port: Annotated[int, typer.Option("--port", help="HTTP port.", min=1, max=65535)] = HTTP_PORT,
        token_file: Annotated[
            Path | None, typer.Option("--token-file", help=f"File with the bearer token (or ${TOKEN_ENV}).")
        ] = None,
    ) -> None:
        """Serve every job (plan, up, check, bench, simulate, advise, cost, prices, report, cloud_*, ...) as MCP
        tools for an agent (docs/mcp-tools.md lists them)."""
        if not http and (host != HTTP_HOST or port != HTTP_PORT or token_file is not None):  # stdio would ignore them
            raise ConfigError("--host, --port and --token-file set up the HTTP server: give --http too (stdio without)")
        if not http and (closed := _closed_stdio()):
            raise ConfigError(
                f"{closed} closed: an MCP client runs `onechip mcp` with pipes on its stdin and stdout (or serve over "
                "--http)"
            )
        try:
            from onechip.mcp.server import StdioStopped, serve
        except ImportError as exc:
            raise MissingDependencyError(
                f"onechip mcp needs the MCP SDK ({exc.name or 'mcp'} is missing): pip install 'mcp>=2.3,<3'"
            ) from None
        try:
            serve(read_only, "streamable-http" if http else "stdio", host, port, _token(token_file))
        except StdioStopped:  # a signal, the jobs done: leave now, not on the client's EOF
            from onechip.cli.main import leave_interrupted

            leave_interrupted(["mcp"])
