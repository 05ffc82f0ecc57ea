"""cli/render.py titled_table: a title longer than its columns stays on one line (issue 17: "table titles wrap
mid-phrase", e.g. `checks: SmolLM2-135M-Instruct at http://127.0.0.1:40325` over a three-column table)."""

from __future__ import annotations

import os
import subprocess
import sys

from rich.console import Console
from rich.table import Table

from onechip.cli.render import print_whole, titled_table

TITLE = "checks: SmolLM2-135M-Instruct at http://127.0.0.1:40325"


def _render(table: Table, width: int) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(table)
    return [line.strip() for line in console.export_text().splitlines()]


def test_a_long_title_is_one_line_when_the_terminal_has_room() -> None:
    table = titled_table(TITLE, "domain", "verdict", "probes")
    table.add_row("chat", "pass", "1/1")
    assert TITLE in _render(table, 100)
    plain = Table("domain", "verdict", "probes", title=TITLE)  # what wrapped before
    plain.add_row("chat", "pass", "1/1")
    assert TITLE not in _render(plain, 100)


def test_a_narrow_terminal_still_bounds_the_table() -> None:
    table = titled_table(TITLE, "domain")
    assert all(len(line) <= 30 for line in _render(table, 30))


def test_a_table_wider_than_the_terminal_keeps_every_word_whole(run, offline_home, monkeypatch) -> None:
    """At COLUMNS=40, plan's layer table was printed with console.print, which cut every cell to fit ('la…', 'co…');
    and print_whole, printing at the table's measured minimum, still cut 'slidi…' and 'B/tok…': rich shrinks the
    widest columns first, below their longest word. Every table of plan, bench, check, prices, cloud probe and demo
    goes through print_whole, which prints at the least width that cuts no word."""
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, err = run("plan", "google/gemma-4-E2B-it", "--chip", "v5e-1")
    assert code == 0, err
    assert "…" not in out and "sliding" in out and "B/token" in out, out
    code, out, err = run("prices")
    assert code == 0 and "…" not in out, out


def test_columns_0_is_read_as_an_unknown_width_not_as_no_room(run, offline_home, monkeypatch) -> None:
    """COLUMNS=0 (`COLUMNS=$(tput cols)` where the terminal reports no size, as under `docker exec` before it is
    sized): rich took it as 0 columns and printed no text, so plan showed its tables alone (no budget, command or
    verdict) and a refused input exited 2 with no error line. The error console is made at import: a fresh process."""
    monkeypatch.setenv("COLUMNS", "0")
    monkeypatch.setenv("NO_COLOR", "1")
    code, out, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4")
    assert code == 0, err
    assert "verdict: fits" in out and "\ncommand:\n" in out, out
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    refused = subprocess.run(
        [sys.executable, "-m", "onechip", "plan", "SmolLM2-135M-Instruct", "--chip", "nochip"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert refused.returncode == 2 and refused.stderr.startswith("error: unknown chip 'nochip' (--chip)"), refused


def test_a_title_wider_than_the_console_wraps_instead_of_widening_the_table() -> None:
    """`cost --run` titles its table 'v5e-1 at 573.0 output tok/s (the best measured cell, 1,024 ctx x 4 clients,
    steady window)', 87 characters over seven short columns: print_whole took the title's width (titled_table's
    min_width) as a least width of the columns and printed a 90-column table on an 80-column terminal, which the
    terminal then wraps line by line. Only the columns' words bound the table; the title wraps (rich's own rule)."""
    title = "v5e-1 at 573.0 output tok/s (the best measured cell, 1,024 ctx x 4 clients, steady window)"
    table = titled_table(title, "pricing", "region", "$/chip-h")
    table.add_row("on-demand", "us-west4", "1.2000")
    console = Console(width=80, record=True, color_system=None)
    print_whole(table, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80, text  # the console's width, given above
    assert "on-demand" in text and "…" not in text
