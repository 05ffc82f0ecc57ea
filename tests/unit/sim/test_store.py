"""Stored calibrations: one of another step-time model (sim.steptime.STEP_MODEL) is not reused."""

from __future__ import annotations

import json

import pytest

from onechip.schemas.sim import Calibration, StepTerms
from onechip.sim import key_of
from onechip.sim import store as calibration_store
from onechip.sim.steptime import STEP_MODEL


def test_a_calibration_of_an_older_step_model_is_not_reused(seed_plan, tmp_path, monkeypatch) -> None:
    # sim.steptime.STEP_MODEL: terms fitted under another version of the step model belong to another simulation
    # (store.stored skips them), so `simulate` and `advise` fit again (or fall back) rather than read them
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    terms = StepTerms(fixed_s=0.005, per_token_s=3e-5, per_kv_token_s=5e-8, request_overhead_s=0.007)
    old = Calibration(key=key_of(seed_plan), step_model=STEP_MODEL - 1, terms=terms)
    calibration_store.save(old)
    assert calibration_store.stored() == []
    assert calibration_store.find(seed_plan.model, seed_plan.chip, seed_plan.engine) is None
    current = old.model_copy(update={"step_model": STEP_MODEL})
    calibration_store.save(current)
    assert calibration_store.find(seed_plan.model, seed_plan.chip, seed_plan.engine) == current


@pytest.mark.parametrize("bad", ["NaN", "-1.0", "Infinity"])
def test_a_stored_calibration_with_a_term_no_fit_gives_is_not_reused(seed_plan, tmp_path, monkeypatch, bad) -> None:
    """A stored calibration edited to a NaN, negative or infinite term was read: the step time's max(...) and
    comparisons dropped the term, so advise and simulate printed a 'calibrated' (+-13%) prediction made as if it
    were 0 (SmolLM2 on l4 at 512 x 4: 94 tok/s, where the stored fit predicts 48). A term is a time (finite, not
    below 0): the file is skipped as an unreadable one is."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    terms = StepTerms(fixed_s=0.005, per_token_s=3e-5, per_kv_token_s=5e-8, request_overhead_s=0.007)
    path = calibration_store.save(Calibration(key=key_of(seed_plan), step_model=STEP_MODEL, terms=terms))
    assert calibration_store.find(seed_plan.model, seed_plan.chip, seed_plan.engine) is not None
    data = json.loads(path.read_text())
    data["terms"]["per_token_s"] = "__bad__"
    path.write_text(json.dumps(data).replace('"__bad__"', bad))
    assert calibration_store.find(seed_plan.model, seed_plan.chip, seed_plan.engine) is None
