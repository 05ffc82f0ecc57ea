"""Fixtures every unit test shares (tests/conftest.py holds those the integration tests share too)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _onechip_home_outside_the_real_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every unit test, and every process it starts, keeps onechip's stores (engine.json, measured boots,
    calibrations, locks) in an empty home of its own under pytest's temporary root, never the real
    ~/.cache/onechip: a test that saved an engine record without its own ONECHIP_HOME left engine.json there for
    the user's next `onechip status` to read. A test that needs a home at a path it names still sets ONECHIP_HOME
    (offline_home); the integration tests are not under this folder, as their engine shares the real home's
    converted model (tests/integration/conftest.py)."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path_factory.mktemp("onechip-home")))
