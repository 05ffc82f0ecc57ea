"""Fixtures for the bench tests: a fake streaming server on 127.0.0.1 port 0 (see fake_server.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_server import FakeServer  # noqa: E402


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    srv = FakeServer().start()
    try:
        yield srv
    finally:
        srv.stop()
