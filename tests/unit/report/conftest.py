"""Fixtures for the report tests: the seed article's run directory (see seed_run_files.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from seed_run_files import seed_files, write_run


@pytest.fixture
def seed_run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "seed-v5e", seed_files())
