"""Fixtures the CLI tests share."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

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


@pytest.fixture
def measured_run(run, tmp_path: Path, plan_file: Path) -> Callable[[str, str, float | None], Path]:
    """damaged(figure, stat, value): a simulated calibration grid saved as a measured run (no prediction), its
    first cell's `figure` (its `stat`, '' for a plain number) set to `value` (None: not measured)."""

    def damaged(figure: str, stat: str, value: float | None) -> Path:
        made = tmp_path / "made"
        code, _, err = run("simulate", "--plan", str(plan_file), "--contexts", "128,1024", "--clients", "1,8",
                           "--reps", "1", "--out", str(made))  # fmt: skip
        assert code == 0, err
        summary = json.loads((made / "summary.json").read_text())
        summary["prediction"] = None  # read as a measured run (bench writes none)
        cell = summary["cells"][0]
        if stat:
            cell[figure][stat] = value
        else:
            cell[figure] = value
        measured = tmp_path / "measured"
        measured.mkdir()
        (measured / "summary.json").write_text(json.dumps(summary))
        return measured

    return damaged
