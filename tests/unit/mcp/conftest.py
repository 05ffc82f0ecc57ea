"""Fixtures for the MCP server tests: an in-process MCP client over onechip's server, an isolated
ONECHIP_HOME, and the project's fake vLLM servers (bench's streaming one, checks' scripted one)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

UNIT = Path(__file__).parents[1]
for _helper in ("bench", "checks"):
    if str(UNIT / _helper) not in sys.path:
        sys.path.insert(0, str(UNIT / _helper))


@pytest.fixture(autouse=True)
def onechip_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    return home
