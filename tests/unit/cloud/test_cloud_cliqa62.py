"""`cloud up --model` refusing a plan that does not fit (helper cliqa62): it names the longest length that fits, as
`plan`'s refusal does, and how to serve it (cloud up takes no --set)."""

from __future__ import annotations

import pytest
import test_cloud_failures as failures
from test_cloud_failures import P

from onechip import api
from onechip.errors import ConfigError
from onechip.schemas.cloud import CloudUpRequest
from onechip.schemas.requests import PlanRequest

fast = failures.fast  # the fake TPU API at its quickest
SPARE = "asia-east1-c"  # a zone of the fake with no rule: grants everything


def test_cloud_up_of_a_model_that_does_not_fit_names_the_longest_length_that_fits(fast, monkeypatch):
    # 'the plan says gemma-4-E4B-it does not fit one replica on v5e-1 (...); nothing was created' left the user to
    # find the length; the plan knows it (longest_fit_max_model_len, 4,608 tokens: the KV pool holds 4,864)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    longest = api.plan(PlanRequest(model="gemma-4-E4B-it", chip="v5e-1")).longest_fit_max_model_len
    assert longest is not None
    request = CloudUpRequest.model_validate(
        {"project": P, "zones": [SPARE], "provisioning": "spot", "max_hours": 1.0, "model": "gemma-4-E4B-it"}
    )
    with pytest.raises(ConfigError) as info:
        api.cloud_up(request)
    said = str(info.value)
    assert f"--set max-model-len={longest}, the longest length that fits" in said, said
    assert said.endswith("; nothing was created") and "\n" not in said
    assert not [p for m, p, _ in fast.requests if m == "POST"]  # nothing created
