"""`onechip up` refuses a launch its own plan says cannot fit, before anything boots (a TPU boot costs
minutes of billed time: seed article, 0.95 utilization failing 691 s in)."""

from __future__ import annotations

import pytest

from onechip import api
from onechip.errors import ConfigError
from onechip.schemas.requests import UpRequest


def test_up_refuses_a_plan_that_does_not_fit(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    # v5e-1: 15.75 GiB visible x 0.1 = 1.6 GiB cap, below E2B's ~8.97 GiB of weights (seed article)
    args = dict(model="gemma-4-E2B-it", chip="v5e-1", sets=["--gpu-memory-utilization=0.1"])
    with pytest.raises(ConfigError, match="does not fit"):
        api.up(UpRequest(engine="vllm", **args))
    assert not (tmp_path / "engine.json").exists()
    assert api.up(UpRequest(engine="vllm", dry_run=True, **args)).dry_run  # a dry run still shows the command
