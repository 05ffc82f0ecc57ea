"""`advise` ranks by what holds within the measured ranges: a calibrated row before prior-only rows, the
flip said, SLO verdicts pass / fail / cannot tell (sim.uncertainty)."""

from __future__ import annotations

import pytest

from onechip import api, planner
from onechip.schemas.requests import AdviseRequest, PlanRequest
from onechip.schemas.sim import Calibration, StepTerms
from onechip.sim import key_of, roofline_priors, uncertainty
from onechip.sim import store as calibration_store
from onechip.sim.steptime import STEP_MODEL

# The terms `python benchmarks/sim_accuracy.py seed` fitted on the seed's v5e-1 grid (calibration cells 128x1,
# 1024x1, 8192x1, 128x64), rounded; its 1,024 x 16 prediction is 742 tok/s (measured 991).
SEED_TERMS = StepTerms(
    fixed_s=0.00531, weights_s=0.00799, per_seq_s=0.000641, per_token_s=3.15e-05, per_kv_token_s=5.62e-08,
    per_attn_pair_s=6.66e-10, request_overhead_s=0.00723, per_stream_chunk_s=0.000266, per_output_token_s=0.000413,
)  # fmt: skip


@pytest.fixture
def seed_calibration(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    plan = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=2048))
    calibration_store.save(
        Calibration(key=key_of(plan), step_model=STEP_MODEL, terms=SEED_TERMS, priors=roofline_priors(plan))
    )


def test_calibrated_v5e1_ranks_above_gpu_priors_and_says_they_could_flip(seed_calibration) -> None:
    # The survey seed (step 8): at 1,024 + 128 tokens, v5e at spot leads up to 16 streams.
    advice = api.advise(
        AdviseRequest(
            model="google/gemma-4-E2B-it",
            workload={"ctx": 1024, "clients": 16, "output_tokens": 128},
            chips=["mi300x", "b200", "rtx-pro-6000", "v5e-1"],
            reps=1,
        )
    )
    rows = [r for r in advice.rows if r.fits]
    assert rows[0].chip == "v5e-1" and rows[0].source == "calibrated"
    calibrated = [r for r in rows if r.source == "calibrated"]
    assert rows[: len(calibrated)] == calibrated and {r.source for r in rows[len(calibrated) :]} == {"prior"}
    # the GPUs have no serving measurement in the corpus, and say so
    assert all("no serving measurement of" in (r.error_source or "") for r in rows if r.source == "prior")
    # a second v5e-1 (two engines, 8 clients each) is priced as two chips
    one, two = (next(r for r in calibrated if r.engines == n) for n in (1, 2))
    assert two.usd_per_hour == pytest.approx(2 * (one.usd_per_hour or 0))
    # the priors' optimistic $/M is below the calibrated row's pessimistic one: the ranking says so
    assert any("(priors)" in name for name in rows[0].could_flip_with)
    low, high = rows[0].output_tok_per_s_range or (0, 0)
    e = uncertainty.relative_error("calibrated", "output_tok_per_s")
    assert low == pytest.approx(rows[0].output_tok_per_s * (1 - e))
    assert high == pytest.approx(rows[0].output_tok_per_s * (1 + e))


def test_carried_rows_are_told_apart(seed_calibration) -> None:
    advice = api.advise(
        AdviseRequest(model="google/gemma-4-E2B-it", workload={"ctx": 1024, "clients": 4}, chips=["v6e-1"], reps=1)
    )
    row = advice.rows[0]
    assert row.fits and row.source == "carried" and row.calibrated_on == "v5e-1" and not row.calibrated


def test_slo_verdict_from_the_range() -> None:
    r = {"tpot_ms": uncertainty.figure_range("calibrated", "tpot_ms", 10.0)}  # 7.4 .. 12.6 ms (26%)
    assert uncertainty.slo_verdict(r, {"tpot_ms": 13.0}) == "pass"
    assert uncertainty.slo_verdict(r, {"tpot_ms": 7.0}) == "fail"
    assert uncertainty.slo_verdict(r, {"tpot_ms": 10.0}) == "cannot tell"
    # a prior's range is the measured factors (benchmarks/prior_accuracy.py): TPOT 0.84x to 3.7x the prediction
    prior = uncertainty.figure_range("prior", "tpot_ms", 10.0)
    assert (prior.low, prior.high) == pytest.approx((8.4, 37.0))


def test_measured_priors_read_weights_at_the_measured_bandwidth_fraction(seed_plan) -> None:
    from onechip.sim.priors import bandwidth_fraction, measured_priors, one_client_fractions

    # the seed's 128 x 1 cell: 123.7 tok/s; the plan's bytes per step at the v5e's 819 GB/s give the fraction
    fractions = {(g, ctx): f for g, _, ctx, f in one_client_fractions()}
    roofline = roofline_priors(seed_plan)
    step_s = roofline.weights_s + roofline.per_kv_token_s * 128  # the step's reads at full bandwidth
    assert fractions[("seed-v5e-1", 128)] == pytest.approx(123.7 * step_s)
    # leave-one-chip-out: v5e-1 predicted from v6e-1's cells alone
    only_v6e = bandwidth_fraction(exclude_chip="v5e-1")
    assert only_v6e == pytest.approx(fractions[("survey-v6e-1-dollars", 1024)])
    measured = measured_priors(seed_plan, exclude_chip="v5e-1")
    assert measured.weights_s == pytest.approx(roofline.weights_s / only_v6e)
    assert measured.per_token_s == roofline.per_token_s  # compute is not what the cells measured
