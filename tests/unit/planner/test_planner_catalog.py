"""Catalog data the planner reads: every entry carries a source and a date (STYLE.md "Data");
the chip figures the seed article measured are the ones stored."""

from __future__ import annotations

import ast
import re
from datetime import date
from pathlib import Path

import pytest

import onechip.planner
from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner.rules import accelerator, engine_rules

GiB = 2**30


@pytest.mark.parametrize(("name", "table"), [("accelerators", "accelerators"), ("engines", "engines"),
                                              ("models", "models")])
def test_every_entry_has_a_source_and_an_iso_date(name: str, table: str) -> None:
    entries = catalog.load(name)[table]
    assert entries
    for key, entry in entries.items():
        assert entry.get("source"), f"{name}.json[{key}] has no source"
        date.fromisoformat(entry["date"])


def test_visible_hbm_is_the_measured_figure() -> None:
    # seed article: v5e 15.75 GiB visible (boot log); issue 3: v6e 31.24 GiB
    assert accelerator("v5e-1").memory_bytes == int(15.75 * GiB)
    assert accelerator("v6e-1").memory_bytes == int(31.24 * GiB)


def test_bandwidth_units_are_normalised() -> None:
    # seed article 'unit traps': v5e is quoted in GiB/s (800 GiBps), v6e in GB/s (1640 GBps): ~1.9x
    ratio = accelerator("v6e-1").bandwidth_bytes_per_s / accelerator("v5e-1").bandwidth_bytes_per_s
    assert ratio == pytest.approx(1.91, abs=0.01)


def test_every_catalog_entry_validates() -> None:
    for key in catalog.load("accelerators")["accelerators"]:
        accelerator(key)
    for key in catalog.load("engines")["engines"]:
        engine_rules(key)


def test_unknown_chip_and_engine_name_the_flag() -> None:
    with pytest.raises(ConfigError, match=r"unknown chip 'v9x' \(--chip\)"):
        accelerator("v9x")
    with pytest.raises(ConfigError, match=r"unknown engine 'tgi' \(--engine\)"):
        engine_rules("tgi")


def test_planner_never_imports_the_cli_stack() -> None:
    # STYLE.md: the core never imports typer/rich/mcp.
    root = Path(onechip.planner.__file__).parent
    banned = re.compile(r"^(typer|rich|mcp|click)(\.|$)")
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(banned.match(n) for n in names), f"{path.name} imports {names}"
