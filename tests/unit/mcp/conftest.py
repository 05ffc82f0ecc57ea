"""Fixtures for the MCP server tests: an isolated ONECHIP_HOME (the one fake vLLM server is tests/fakes)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def onechip_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    return home
