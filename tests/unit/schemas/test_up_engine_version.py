"""`up --engine-version` (new-user test: `up` could not run the release `plan --engine-version` planned for)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from onechip.schemas.requests import UpRequest


def test_up_plans_model_for_the_release_it_is_given() -> None:
    up = UpRequest(engine="vllm-docker", model="m", chip="h100", engine_version="0.19.0")
    planned = up.plan_request()
    assert planned is not None and planned.engine_version == "0.19.0" and planned.launch == "vllm-docker"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"engine": "vllm", "plan": Path("plan.json")}, "a --plan records the version it was made for"),
        ({"engine": "embedded"}, "--engine-version/--image/--set/--hf-token-file need --engine vllm or vllm-docker"),
    ],
)
def test_engine_version_without_a_model_to_plan_is_refused(fields: dict[str, object], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        UpRequest(engine_version="0.19.0", **fields)  # type: ignore[arg-type]
