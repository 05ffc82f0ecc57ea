"""--help as each command shows it (helper cli59): a listing without the docstrings' line breaks, and an option's
help naming the flags a user types, not the request fields the MCP tools take."""

from __future__ import annotations

import inspect

import pytest
import typer

from onechip.cli.main import app


def _first_paragraph(command) -> str:
    """A command's help as a listing shows it: its docstring's first paragraph, line breaks as spaces."""
    return " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())


@pytest.mark.parametrize("group", [(), ("cloud",)])
def test_a_listing_shows_each_commands_help_without_the_docstrings_line_breaks(run, group, monkeypatch) -> None:
    # typer's rich help kept a docstring's single line breaks in the Commands panel ('...(embedded engine by' /
    # 'default; --engine ...'), where its own _get_help_text and click's listing join them
    root = typer.main.get_command(app)
    ctx = root.make_context("onechip", [*group, "--help"], resilient_parsing=True)
    listed = root if not group else root.get_command(ctx, group[0])
    monkeypatch.setenv("COLUMNS", "400")  # wide enough for every help on one line
    code, out, _ = run(*group, "--help")
    assert code == 0
    rows = [" ".join(line.strip("│ ").split()) for line in out.splitlines()]
    for name in listed.list_commands(ctx):
        assert f"{name} {_first_paragraph(listed.get_command(ctx, name))}" in rows, name


def test_bench_help_names_the_flags_a_user_types(run, monkeypatch) -> None:
    # BenchConfig's descriptions, shared with the MCP bench tool, said 'unless duration_s' and 'Instead of
    # requests_per_client' where bench's options are --duration-s and --requests-per-client
    monkeypatch.setenv("COLUMNS", "400")  # each option's help on one line
    code, out, _ = run("bench", "--help")
    assert code == 0
    for field in ("duration_s", "requests_per_client", "warmup_s", "warmup_requests"):
        assert field not in out, field
    assert "(unless --duration-s)" in out and "Instead of --requests-per-client:" in out
