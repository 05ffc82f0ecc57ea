"""Fixtures for the MCP server tests: an isolated ONECHIP_HOME, and the test's tmp_path as the one folder MCP
calls may name files in (the one fake vLLM server is tests/fakes)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def onechip_home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    monkeypatch.setenv("ONECHIP_MCP_FILES", str(tmp_path))
    return home
