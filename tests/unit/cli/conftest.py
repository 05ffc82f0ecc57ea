"""Fixtures the CLI tests share."""

from __future__ import annotations

import pytest

# The seed's deployment: gemma-4-E2B-it on v5e-1 at max_model_len 32,768 (5,055 blocks of 64 tokens, 323,520 KV
# tokens), as `onechip plan --json` writes it.
SEED_PLAN = ["google/gemma-4-E2B-it", "--chip", "v5e-1", "--max-model-len", "32768", "--json"]


@pytest.fixture
def plan_file(run, tmp_path):
    """The seed's plan, written by `onechip plan` to tmp_path/plan.json (run inside the test's $ONECHIP_HOME)."""
    code, out, err = run("plan", *SEED_PLAN)
    assert code == 0, err
    path = tmp_path / "plan.json"
    path.write_text(out)
    return path
