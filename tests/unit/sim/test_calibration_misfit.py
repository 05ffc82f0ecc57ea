"""A calibration's own misfit widens its ranges (helper workflow64, 2026-12-06): `simulate --calibrate` on a run a
fake server streamed at a token every 2 ms, fitted against gemma-4-E2B-it on v5e-1 (one weight read 5.31 ms at the
datasheet's 819 GB/s, the floor the fit keeps its device terms above), pinned no term and missed its own cells by
35-60%, and `advise` then quoted the chip 'calibrated +-10%'. A calibrated range is now never narrower than the
fit's miss on the cells it was fitted on, and a fit that pinned no term is ranged as a prior."""

from __future__ import annotations

import json

import pytest

from onechip import api, planner
from onechip.schemas.bench import BenchConfig, BenchRun
from onechip.schemas.requests import AdviseRequest, PlanRequest
from onechip.schemas.sim import Calibration, StepTerms
from onechip.sim import key_of, priors, uncertainty
from onechip.sim import store as calibration_store
from onechip.sim.calibrate import calibrate, pinned_terms

# what a fake server (or speculative decoding) serves: a token every 2 ms, below gemma-4-E2B-it's one weight read on
# v5e-1 (5.31 ms: steptime.roofline_priors at accelerators.json's 819 GB/s), which the fit cannot go under
FAST = StepTerms(fixed_s=0.002, per_token_s=1e-7, per_kv_token_s=1e-10, request_overhead_s=0.001)
# bench's defaults for requests per client and warm-up, as advise simulates its cell: the cells below are advise's
CONFIG = BenchConfig(base_url="http://fake", contexts=[128, 1024], clients=[1, 4], output_tokens=16, reps=1)
# the workload advise predicts: the calibration's own 128 x 1 cell
WORKLOAD = {"ctx": 128, "clients": 1, "output_tokens": 16}


@pytest.fixture(scope="module")
def fast_fit() -> tuple[BenchRun, Calibration]:
    plan = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=2048))
    run = BenchRun(tool_version="t", created_at="t", config=CONFIG,
                   cells=api.predicted_cells(plan, FAST, CONFIG, seeds=1))  # fmt: skip
    return run, calibrate(plan, run, source_run="fake server")


def _advise(tmp_path, monkeypatch, calibration: Calibration):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    calibration_store.save(calibration)
    return api.advise(AdviseRequest(model="google/gemma-4-E2B-it", workload=WORKLOAD, chips=["v5e-1"], reps=1))


def test_a_calibrated_range_covers_the_cells_the_fit_missed(fast_fit, tmp_path, monkeypatch) -> None:
    run, calibration = fast_fit
    cell = next(c for c in run.cells if (c.context_tokens, c.clients) == (128, 1))
    # the fit cannot reach the 2 ms step: it misses its own cell far beyond the calibrated error (+-9.6% TPOT)
    assert calibration.residuals_pct["128x1 tpot_ms"] > 100
    advice = _advise(tmp_path, monkeypatch, calibration)
    row = advice.rows[0]
    assert row.fits and row.source == "calibrated"
    # the measured figures of the very cell advise predicts lie inside its ranges
    for measured, (low, high) in [
        (cell.output_tok_per_s, row.output_tok_per_s_range),
        (cell.ttft_ms.median, row.ttft_ms_range),
        (cell.tpot_ms.median, row.tpot_ms_range),
    ]:
        assert low <= measured <= high, (measured, low, high)
    worst = max(calibration.residuals_pct.items(), key=lambda kv: abs(kv[1]))
    said = [n for n in advice.notes if "misses its own cells" in n]
    assert len(said) == 1 and f"up to {abs(worst[1]):,.0f}% ({worst[0]})" in said[0], advice.notes


def test_a_fit_that_pinned_no_term_is_ranged_as_a_prior(fast_fit, tmp_path, monkeypatch) -> None:
    _, calibration = fast_fit
    assert calibration.fitted == [] and calibration.unseparated == [] and pinned_terms(calibration) == set()
    # its residuals left out, the range is the prior's on this chip (serving_measurements.json prediction_error), as
    # a row with no calibration gets it, not the calibrated +-10.3%
    row = _advise(tmp_path, monkeypatch, calibration.model_copy(update={"residuals_pct": {}})).rows[0]
    key = uncertainty.error_key("prior", priors.basis("v5e-1", "vllm-tpu").complete)
    prior = uncertainty.figure_range(key, uncertainty.STEADY, row.output_tok_per_s or 0.0)
    assert row.output_tok_per_s_range == pytest.approx((prior.low, prior.high))
    assert (row.error_source or "").startswith(uncertainty.error_source(key))


def test_an_older_calibration_reads_as_today() -> None:
    # a calibration stored before its pinning was judged jointly (no pinning_judged) and naming no pinned term is
    # read, as before, as every term pinned (sim.priors.carry); one without residuals has no own-cell factors, so
    # its range is the calibrated error alone
    plan = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=2048))
    stored = json.loads(Calibration(key=key_of(plan), terms=FAST).model_dump_json())
    for name in ("pinning_judged", "residuals_pct"):
        stored.pop(name, None)
    loaded = Calibration.model_validate(stored)
    assert pinned_terms(loaded) == set(StepTerms.model_fields)
    assert uncertainty.own_factors(loaded, uncertainty.STEADY) is None


def test_a_fit_that_pinned_no_term_carries_nothing_of_its_own(fast_fit, tmp_path, monkeypatch) -> None:
    # carried to v6e-1, the judged fit that pinned no term was read as the legacy 'every term pinned' (fitted and
    # unseparated both empty), so its unpinned weight read and host line were carried (sim.priors.carry takes them
    # only where pinned); now they are the target's own, and the row is ranged as a prior
    _, calibration = fast_fit
    target = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="v6e-1", max_model_len=2048))
    tripled = calibration.terms.model_copy(update={n: 3 * v for n, v in calibration.terms.model_dump().items()})
    names = ("weights_s", "fixed_s", "per_seq_s")
    carried = [priors.carry(c, target).terms for c in (calibration, calibration.model_copy(update={"terms": tripled}))]
    assert [getattr(carried[0], n) for n in names] == [getattr(carried[1], n) for n in names]
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    calibration_store.save(calibration)
    advice = api.advise(AdviseRequest(model="google/gemma-4-E2B-it", workload=WORKLOAD, chips=["v6e-1"], reps=1))
    row = advice.rows[0]
    assert row.source == "carried" and row.calibrated_on == "v5e-1"
    key = uncertainty.error_key("prior", priors.basis("v6e-1", "vllm-tpu").complete)
    prior = uncertainty.figure_range(key, uncertainty.STEADY, row.output_tok_per_s or 0.0)
    assert row.output_tok_per_s_range == pytest.approx((prior.low, prior.high))
    assert any(n.startswith("v6e-1 (carried from v5e-1): the calibration on") and "pinned no term" in n
               for n in advice.notes), advice.notes  # fmt: skip
