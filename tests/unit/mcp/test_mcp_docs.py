"""docs/mcp-tools.md is generated from the server's own tool list and must be current
(regenerate: `PYTHONPATH=src python -m onechip.mcp.docs > docs/mcp-tools.md`)."""

from __future__ import annotations

from pathlib import Path

from onechip.mcp.docs import render
from onechip.mcp.tools import TOOLS

DOC = Path(__file__).parents[3] / "docs" / "mcp-tools.md"


def test_docs_are_current():
    assert DOC.read_text() == render(), "docs/mcp-tools.md is stale: python -m onechip.mcp.docs > docs/mcp-tools.md"


def test_docs_name_every_tool_and_the_confirm_argument():
    text = DOC.read_text()
    for spec in TOOLS:
        assert f"## `{spec.name}`" in text
    assert "| `confirm` | boolean | `false` |" in text
