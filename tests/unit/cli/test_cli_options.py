"""cli/options.py: each command's options are generated from its request model (flag, --help text and
default declared once, on the field), and each command body stays a thin shell (<= 40 lines)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
import typer
from pydantic import BaseModel

from onechip.cli.main import app
from onechip.schemas.bench import BenchConfig
from onechip.schemas.inputs import cli_of, flag_of
from onechip.schemas.requests import CheckRequest, CostRequest, DemoRequest, PlanRequest, ReportRequest, UpRequest

CLI = Path(__file__).parents[3] / "src" / "onechip" / "cli"
COMMANDS: dict[str, type[BaseModel]] = {
    "plan": PlanRequest, "up": UpRequest, "check": CheckRequest, "bench": BenchConfig, "cost": CostRequest,
    "report": ReportRequest, "demo": DemoRequest,
}  # fmt: skip


def _params(name: str) -> dict[str, Any]:
    # typer >= 0.2x vendors click: its classes are not click's, so read them by attribute
    group = typer.main.get_command(app)
    command = group.get_command(typer.Context(group), name)  # type: ignore[attr-defined]
    return {p.name: p for p in command.params if p.name}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_options_come_from_the_request_model(name: str) -> None:
    model, params = COMMANDS[name], _params(name)
    visible = [f for f in model.model_fields if not cli_of(model, f).hidden]
    assert visible and set(visible) <= set(params)
    for field in visible:
        param = params[field]
        # --help text = the description, then how the command line writes the value (cli.options._help)
        assert (getattr(param, "help", None) or "").startswith(model.model_fields[field].description or "")
        # a field with no default is required on the command line too (bench's URL may come from --resume)
        assert param.required == (model.model_fields[field].is_required() and (name, field) != ("bench", "base_url"))
        if param.param_type_name == "option":
            assert flag_of(model, field) in param.opts
        else:
            assert cli_of(model, field).argument


def test_flags_a_user_knows_are_kept() -> None:
    for name, flag in [("plan", "--gpu-memory-utilization"), ("plan", "--kv-cache-memory"), ("plan", "--text-only"),
                       ("bench", "--rate"), ("bench", "--timeout-s"), ("up", "--set"), ("up", "--ssh-opt"),
                       ("cost", "--run"), ("cost", "--no-write"), ("report", "--format"), ("check", "--out"),
                       ("demo", "--out"), ("check", "--needle-depths")]:  # fmt: skip
        opts = {o for p in _params(name).values() for o in [*p.opts, *p.secondary_opts]}
        assert flag in opts, (name, flag)


def _is_command(node: ast.FunctionDef) -> bool:
    names = [ast.unparse(d) for d in node.decorator_list]
    return any("command" in d or "options_from" in d for d in names)


def test_every_command_body_is_at_most_40_lines() -> None:
    long = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and _is_command(node):
                body = (node.end_lineno or 0) - node.body[0].lineno + 1  # docstring to last line
                if body > 40:
                    long.append(f"{path.name}:{node.name} {body} lines")
    assert not long, long
