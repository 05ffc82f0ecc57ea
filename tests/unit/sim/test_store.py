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


def test_simulate_and_advise_take_the_calibration_of_the_plans_engine_version(seed_plan, tmp_path, monkeypatch) -> None:
    """store.find prefers the given engine version's calibration, but simulate and advise never gave it one: a
    calibration of another vLLM stored later won over the plan's own (SmolLM2 on l4: one of 0.20.0 predicted 7
    tok/s where the stored 0.32.0 fit predicts 48, still marked calibrated +-13%)."""
    from onechip.api._predict import _advice_terms, calibration_for

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    assert seed_plan.engine_version
    terms = StepTerms(fixed_s=0.005, per_token_s=3e-5, per_kv_token_s=5e-8, request_overhead_s=0.007)
    own = Calibration(key=key_of(seed_plan), step_model=STEP_MODEL, terms=terms, created_at="2026-12-01T00:00:00")
    other_key = own.key.model_copy(update={"engine_version": "0.1.0"})
    other = own.model_copy(update={"key": other_key, "created_at": "2026-12-02T00:00:00",
                                   "terms": terms.model_copy(update={"fixed_s": 0.05})})  # fmt: skip
    calibration_store.save(own)
    calibration_store.save(other)
    assert calibration_for(seed_plan, None) == own
    assert _advice_terms(seed_plan)[0] == own


def test_simulate_says_when_its_calibration_was_fitted_on_another_engine_version(seed_plan, tmp_path, monkeypatch, run):
    """With no calibration of the plan's engine version stored, simulate takes another version's (store.find), and
    says so: the fit's host terms belong to that engine build."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    terms = StepTerms(fixed_s=0.005, per_token_s=3e-5, per_kv_token_s=5e-8, request_overhead_s=0.007)
    key = key_of(seed_plan).model_copy(update={"engine_version": "0.1.0"})
    calibration_store.save(Calibration(key=key, step_model=STEP_MODEL, terms=terms, cells=["128x1"]))
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan.model_dump_json(), encoding="utf-8")
    code, out, err = run("simulate", "--plan", str(plan), "--contexts", "128", "--clients", "1", "--reps", "1",
                         "--out", str(tmp_path / "sim"))  # fmt: skip
    assert code == 0, err
    assert f"fitted on engine version 0.1.0; the plan is for {seed_plan.engine_version}" in " ".join(out.split())


@pytest.mark.parametrize("search", [[], ["--find-max", "clients", "--slo", "tpot_ms=20", "--find-max-limit", "2"]])
@pytest.mark.parametrize("version", ["0.1.0", None])
def test_simulate_names_the_engine_version_its_calibration_was_measured_on(
    seed_plan, tmp_path, monkeypatch, run, search, version
):
    """A grid and a --find-max search name the engine version of the calibration they rest on (its key's: the
    measured run's server, sim.calibrate.key_of), and say when it is not the plan's (None: the plan's own)."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    terms = StepTerms(fixed_s=0.005, per_token_s=3e-5, per_kv_token_s=5e-8, request_overhead_s=0.007)
    key = key_of(seed_plan).model_copy(update={"engine_version": version or seed_plan.engine_version})
    calibration_store.save(Calibration(key=key, step_model=STEP_MODEL, terms=terms, cells=["128x1"]))
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan.model_dump_json(), encoding="utf-8")
    code, out, err = run("simulate", "--plan", str(plan), "--contexts", "128", "--reps", "2", *search,
                         *(["--clients", "1"] if not search else []), "--out", str(tmp_path / "sim"))  # fmt: skip
    assert code == 0, err
    said = " ".join(out.split())
    assert f"measured on engine version {key.engine_version}" in said
    other = f"fitted on engine version 0.1.0; the plan is for {seed_plan.engine_version}"
    assert (other in said) == (version is not None)


def test_a_stored_calibration_of_a_newer_schema_is_not_reused(seed_plan, tmp_path, monkeypatch) -> None:
    """A calibration a newer onechip stored (its schema_version '2') was read as this onechip's: its terms may mean
    what this one cannot tell. Its schema_version is now read as every stored result's (schemas.common.known_schema):
    the file is skipped as an unreadable one is, and one without a version (written before) is read as version 1."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    terms = StepTerms(fixed_s=0.005, per_token_s=3e-5, per_kv_token_s=5e-8, request_overhead_s=0.007)
    path = calibration_store.save(Calibration(key=key_of(seed_plan), step_model=STEP_MODEL, terms=terms))
    data = json.loads(path.read_text())
    path.write_text(json.dumps({**data, "schema_version": "2"}))
    assert calibration_store.find(seed_plan.model, seed_plan.chip, seed_plan.engine) is None
    path.write_text(json.dumps({k: v for k, v in data.items() if k != "schema_version"}))
    found = calibration_store.find(seed_plan.model, seed_plan.chip, seed_plan.engine)
    assert found is not None and found.schema_version == "1"
