"""The command modules, loaded when a command runs (or `--help` lists them), not at start: `onechip
--version` and a shell's completion then pay for typer alone, not for every job's dependencies (issue "One
source for every vLLM fact": start-up 1.27 s; benchmarks/cli_start.py measures it).

COMMANDS maps each command name to the module whose `register(app)` defines it; the order is the order of
`onechip --help`. LazyGroup is the click group that resolves a name to its module on first use.
"""

from __future__ import annotations

import importlib
import inspect
from difflib import get_close_matches
from functools import cache
from typing import Any

import typer
import typer.core
import typer.main

from onechip.errors import exit_codes_line

COMMANDS = {
    "demo": "demo_cmd", "plan": "plan_cmd", "up": "engine_cmds", "logs": "engine_cmds",
    "status": "engine_cmds", "down": "engine_cmds", "check": "check_cmd", "bench": "bench_cmd",
    "cost": "cost_cmd", "prices": "prices_cmd", "report": "report_cmd", "simulate": "sim_cmd", "advise": "sim_cmd",
    "cloud": "cloud_cmd", "deploy": "deploy_cmd", "mcp": "mcp_cmd",
}  # fmt: skip


@cache
def _module_group(module: str) -> typer.core.TyperGroup:
    """The click group of the commands one module registers (imported now, once)."""
    sub = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    importlib.import_module(f"onechip.cli.{module}").register(sub)
    group = typer.main.get_group(sub)
    assert isinstance(group, typer.core.TyperGroup)
    return group


def _flags_take_no_value(params: list[Any]) -> list[Any]:
    """`params`, each flag's metavar set to '' so --help shows none: typer 0.29 printed '--help <bool>', 'status --json
    <bool>' as if a flag took a value (`--json true` is refused). options_from does so for the options it makes."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    return params


def _listed_help(command: Any) -> None:
    """Give `command` the line a listing (`onechip --help`, `onechip cloud --help`) shows for it, when it has none of
    its own: its help's first paragraph with the docstring's line breaks as spaces, as typer's own _get_help_text
    writes a command's help at the top of its --help, and click's listing does (typer 0.29's rich listing,
    _make_command_help, kept those breaks, '... (embedded engine by' / 'default; --engine ...')."""
    if command.short_help is None and command.help:
        paragraph = inspect.cleandoc(command.help).partition("\f")[0].split("\n\n")[0]
        command.short_help = " ".join(paragraph.split())


def _says_exit_codes(command: Any) -> None:
    """Give `command` the exit codes of every command (errors.EXIT_CODES) as its --help's epilog, unless its help or
    epilog lists its own (check's, cloud's, prices'): bench, report, simulate and the rest said none."""
    if "Exit codes" not in f"{command.help or ''} {command.epilog or ''}":
        command.epilog = exit_codes_line()


def _as_shown(command: Any, ctx: Any) -> Any:
    """`command` and every command under it (cloud's, deploy's), their flags and --help taking no value shown, each
    with its line for a listing (_listed_help) and its exit codes (_says_exit_codes)."""
    _flags_take_no_value([*command.params, command.get_help_option(ctx)])
    _listed_help(command)
    _says_exit_codes(command)
    for sub in getattr(command, "commands", {}).values():
        _as_shown(sub, ctx)
    return command


class LazyGroup(typer.core.TyperGroup):
    """A typer group whose subcommands are imported by name when click asks for one."""

    # ctx and the command are typer's vendored click classes (typer._click), typed as Any here
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        module = COMMANDS.get(cmd_name)
        command = None if module is None else _module_group(module).get_command(ctx, cmd_name)
        return None if command is None else _as_shown(command, ctx)

    def get_params(self, ctx: Any) -> list[Any]:
        return _flags_take_no_value(super().get_params(ctx))  # onechip's own --version and --help

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """typer's, with its "Did you mean" for a typo'd command: typer (0.29 TyperGroup.resolve_command) draws the
        names from the group's `commands` dict, which is empty here (the names are COMMANDS), so `onechip plna`
        got no suggestion while `onechip cloud stauts` did."""
        try:
            return super().resolve_command(ctx, args)
        except typer.core._click.exceptions.UsageError as exc:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if matches and "Did you mean" not in exc.message:
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {', '.join(map(repr, matches))}?"
            raise
