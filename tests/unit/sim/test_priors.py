"""Priors from published measurements (sim.priors): each efficiency from the cells that isolate it, leave one
chip out, and a calibration carried to another chip by measured efficiencies and host costs, not datasheet
ratios. Every expected figure is a published cell of catalog/serving_measurements.json, named."""

from __future__ import annotations

import statistics

import pytest

from onechip import planner
from onechip.schemas.requests import PlanRequest
from onechip.schemas.sim import Calibration, StepTerms
from onechip.sim import key_of, priors, roofline_priors, uncertainty
from onechip.sim.steptime import STEP_MODEL

V5E_BANDWIDTH = 858_993_459_200  # accelerators.json v5e-1 (800 GiB/s)


@pytest.fixture(scope="module")
def v6e_plan():
    return planner.plan_model(
        PlanRequest(model="google/gemma-4-E2B-it", chip="v6e-1", max_model_len=32768, max_num_batched_tokens=4096)
    )


def test_decode_fraction_is_the_step_read_over_bandwidth_per_tpot(seed_plan) -> None:
    # seed article, 128 x 1: TPOT 8.0 ms (1000 / 125 per-stream tok/s)
    fractions = {(g, ctx): f for g, _, ctx, f in priors.one_client_fractions()}
    step_bytes = seed_plan.decode_bytes_per_step + seed_plan.kv_bytes_per_token * 128
    assert fractions[("seed-v5e-1", 128)] == pytest.approx(step_bytes / V5E_BANDWIDTH / 0.008)
    # a grid that states its bytes is read at them: the H100 Llama-3.1-8B cell, TPOT 6.48 ms
    h100 = fractions[("inferencebench-h100-llama31-8b", 0)]
    assert h100 == pytest.approx(15_009_849_344 / 3.35e12 / 0.00648)


def test_a_host_bound_one_client_step_gives_no_decode_fraction() -> None:
    # async scheduling: a step takes max(host, device). The seed grid's host line (TPOT 8.93 / 13.16 ms at 4 / 16
    # clients, 128 tokens; 9.17 / 14.49 at 1,024) says 7.86 ms at one sequence, within the 8.8% TPOT noise of its
    # 8.0 ms 128 x 1 TPOT: that time may be the host's, so it is not read as the weights' bandwidth
    line = next(h for h in priors.host_lines() if h.grid == "seed-v5e-1")
    assert line.fixed_s + line.per_seq_s == pytest.approx(0.00786, abs=5e-5)
    kept = {(g, ctx) for g, _, ctx, _ in priors.decode_fractions()}
    assert ("seed-v5e-1", 128) not in kept and ("seed-v5e-1", 128) in {
        (g, c) for g, _, c, _ in priors.one_client_fractions()
    }
    # MI300X E2B: line 3.38 ms at one client over its 2.85 ms TPOT at 128 x 1; its 8,192 x 1 TPOT (3.91 ms) is above
    # the line by more than the noise: the device's, kept
    assert ("gemma4dev-mi300x-e2b-2026-09-17", 128) not in kept
    assert ("gemma4dev-mi300x-e2b-2026-09-17", 8192) in kept
    # config-validation v6e-1: line 3.84 ms at one client, TPOT 4.72 ms at 128 x 1: device-bound, kept
    assert ("gemma4dev-v6e-1-config-validation", 128) in kept


def test_gpu_grids_of_gemma4dev_measure_mi300x_l4_and_t4() -> None:
    # xbill9/gemma4-dev vllm bench serve runs (serving_measurements.json, each grid's source): MI300X E2B 128 x 1
    # TPOT 2.85 ms (5.3 TB/s), L4 E2B 1,024 x 1 TPOT 19.84 ms (300 GB/s); T4 E2B 512 x 1 TPOT 23.38 ms (320 GB/s)
    fractions = {(g, ctx): f for g, _, ctx, f in priors.one_client_fractions()}
    for grid, chip, ctx, tpot_s, bandwidth in (
        ("gemma4dev-mi300x-e2b-2026-09-17", "mi300x", 128, 0.00285, 5.3e12),
        ("gemma4dev-l4-g6-e2b-2026-08-30", "l4", 1024, 0.01984, 300e9),
        ("gemma4dev-t4-g4dn-e2b-2026-08-30", "t4", 512, 0.02338, 320e9),
    ):
        plan = planner.plan_model(
            PlanRequest(model="google/gemma-4-E2B-it", chip=chip, max_model_len=32768, max_num_batched_tokens=4096)
        )
        step = plan.decode_bytes_per_step + plan.kv_bytes_per_token * ctx
        assert fractions[(grid, ctx)] == pytest.approx(step / bandwidth / tpot_s)
        assert priors.basis(chip, "vllm-gpu").own_decode
    # the 12B FP8 W8A8 grid (catalog gemma-4-12B-it-qat-q4_0-fp8-text): its 128 x 1 TPOT 6.55 ms reads its FP8
    # bytes; its 8,192 x 1 TTFT gives no prefill fraction (quantized: its bytes do not count its parameters)
    fp8 = planner.plan_model(
        PlanRequest(model="xbill9/gemma-4-12B-it-qat-q4_0-fp8-text", chip="mi300x", max_model_len=32768)
    )
    step = fp8.decode_bytes_per_step + fp8.kv_bytes_per_token * 128
    assert fractions[("gemma4dev-mi300x-12b-fp8-2026-10-09", 128)] == pytest.approx(step / 5.3e12 / 0.00655)
    assert not any(g == "gemma4dev-mi300x-12b-fp8-2026-10-09" for g, _, _, _ in priors.prefill_fractions())


def test_prefill_fraction_from_the_slope_of_one_client_ttft(seed_plan) -> None:
    # seed article, one client: TTFT 15.9, 40.3, 289.4 ms at 128, 1,024, 8,192 tokens; v5e-1 dense bf16 peak 197
    # TFLOPS. The line's intercept holds the request's overhead, its slope the prefill rate
    params = seed_plan.decode_bytes_per_step / 2
    slope, intercept = statistics.linear_regression([128, 1024, 8192], [0.0159, 0.0403, 0.2894])
    fractions = {(g, ctx): f for g, _, ctx, f in priors.prefill_fractions()}
    assert fractions[("seed-v5e-1", 8192)] == pytest.approx(2 * params / 197e12 / slope)
    assert intercept > 0.005  # TTFT / context would have counted it as prefill (0.655 of peak, the slope's 0.676)
    assert 2 * params * 8192 / 197e12 / 0.2894 < fractions[("seed-v5e-1", 8192)]
    # v6e-1 sweep, 2,048 to 16,384 tokens and 128: one line; 32,768 is past MAX_PREFILL_CONTEXT (attention grows)
    assert ("gemma4dev-v6e-1-sweep-one-client", 16384) in fractions
    assert not any(ctx > priors.MAX_PREFILL_CONTEXT for _, _, ctx, _ in priors.prefill_fractions())
    # a grid with one one-client TTFT (gke v6e-1: 1,024 x 1 only) cannot separate the two: no fraction
    assert not any(g == "gke-v6e-1-2026-08-25" for g in (r[0] for r in priors.prefill_fractions()))


def test_request_overhead_is_ttft_less_the_first_step_at_the_shortest_one_client_cell() -> None:
    # gemma4dev MI300X, 128 x 1: E2B TTFT 13.14 / TPOT 2.85 ms, E4B 15.19 / 4.16, 12B FP8 17.07 / 6.55; a 128-token
    # prompt's compute at MI300X's prefill fraction takes about one decode step (E4B: 4.17 ms), so the overhead is
    # TTFT less about TPOT
    assert priors.request_overheads("mi300x") == pytest.approx([0.01029, 0.01103, 0.01052], abs=2e-5)
    # seed v5e-1 128 x 1: 15.9 - 8.0 ms
    assert priors.request_overheads("v5e-1") == pytest.approx([0.0079])
    # a grid left out does not count
    assert priors.request_overheads("v5e-1", frozenset({"seed-v5e-1"})) == []


def test_host_line_through_the_short_context_cells() -> None:
    # seed article TPOT at 4 and 16 clients: 8.929 / 13.158 ms (128 tokens), 9.174 / 14.493 ms (1,024 tokens)
    line = next(h for h in priors.host_lines() if h.grid == "seed-v5e-1")
    slope = ((13.158 + 14.493) / 2 - (8.929 + 9.174) / 2) / 12 / 1000
    assert line.per_seq_s == pytest.approx(slope)
    assert line.fixed_s == pytest.approx((8.929 + 9.174) / 2 / 1000 - 4 * slope)


def test_host_lines_only_from_host_bound_cells() -> None:
    # L4 (gemma4dev g6, vLLM 0.28.0): TPOT 19.84 -> 21.70 ms at 1 -> 8 clients, 1,024 tokens, within the 8.8%
    # TPOT noise floor (corpus prediction_error.noise) of its device time: its step is device-bound, so it
    # measured no host cost (the old line through every cell called 20.4 ms of its device time "fixed" host)
    gaps = dict(priors.host_line_gaps())
    assert "device-bound" in gaps["gemma4dev-l4-g6-e2b-2026-08-30"]
    # H100 (InferenceBench, vLLM 0.21.0): TPOT 6.48, 6.59, 10.94 ms at 1, 4, 16 clients: host-bound at 16 only
    assert "at 16 clients only" in gaps["inferencebench-h100-llama31-8b"]
    # T4 (g4dn, vLLM 0.28.0): TPOT 23.4 -> 32.2 ms at 1 -> 8 clients, above a device time that has its compute at
    # the dense peak (65 TFLOPS fp16, NVIDIA's T4 datasheet) because the T4 has no prefill line of its own: that
    # time is a lower bound, so no line; one would read a 23.6 ms "host" cost and carry it to every GPU with none
    assert "no measured compute efficiency on t4" in gaps["gemma4dev-t4-g4dn-e2b-2026-08-30"]
    assert all(h.chip != "t4" for h in priors.host_lines())
    # the MI300X E2B report prints vLLM 0.3.1.dev3 (a ROCm nightly; by the number, before engines.json
    # async_scheduling_from 0.14.0), but the run served --async-scheduling (the grid's note): its line is measured,
    # through 128 / 1,024 tokens at 4 and 16 clients
    assert "gemma4dev-mi300x-e2b-2026-09-17" not in gaps
    mi300x = next(h for h in priors.host_lines() if h.grid == "gemma4dev-mi300x-e2b-2026-09-17")
    assert mi300x.fixed_s > 0
    assert not {h.grid for h in priors.host_lines()} & set(gaps)
    # the seed v5e-1 grid: TPOT 8.93 ms at 4 clients is 11% over its 8.07 ms device time: host-bound (line below)
    assert "seed-v5e-1" in {h.grid for h in priors.host_lines()}


def test_leave_one_chip_out_uses_only_the_other_chips(seed_plan) -> None:
    own, out = priors.basis("v5e-1", "vllm-tpu"), priors.basis("v5e-1", "vllm-tpu", exclude_chip="v5e-1")
    assert own.measured and not out.measured
    assert all(h.chip != "v5e-1" for h in out.host) and all(h.chip == "v5e-1" for h in own.host)
    terms, roof = priors.measured_priors(seed_plan, exclude_chip="v5e-1"), roofline_priors(seed_plan)
    assert terms.weights_s == pytest.approx(roof.weights_s / (out.bandwidth_fraction or 0))
    assert terms.per_token_s == pytest.approx(roof.per_token_s / (out.compute_fraction or 0))
    # the v6e-1 deployments' host cost: the mean of their lines (config-validation, gce and gke grids)
    assert len(out.host) == 3
    assert terms.fixed_s == pytest.approx(sum(h.fixed_s for h in out.host) / len(out.host))


def test_a_chip_with_no_measurement_says_so() -> None:
    # b200: no grid in the corpus (mi300x has two since the gemma4-dev MI300X sweeps were added)
    b = priors.basis("b200", "vllm-gpu")
    assert not b.measured and b.host
    assert "no serving measurement of b200" in priors.describe(b)
    # the host cost is that of the vllm-gpu deployments that measured a host line (the MI300X E2B sweep, served
    # with --async-scheduling; test above), named with its engine build, never a GPU's device time
    gpu_lines = [h for h in priors.host_lines() if h.engine == "vllm-gpu"]
    assert [h.grid for h in gpu_lines] == ["gemma4dev-mi300x-e2b-2026-09-17"] and set(b.host) == set(gpu_lines)
    assert all(f"{h.grid} ({h.engine} {h.engine_version})" in priors.describe(b) for h in b.host)


def test_an_unmeasured_chip_takes_its_architecture_familys_fractions() -> None:
    # RTX 4090 and L40S are Ada Lovelace, as the measured L4 is: they take its fractions, not NVIDIA's mean
    l4 = priors.basis("l4", "vllm-gpu")
    for chip in ("rtx4090", "l40s"):
        b = priors.basis(chip, "vllm-gpu")
        assert (b.decode_kin, b.prefill_kin, b.decode_level, b.prefill_level) == (("l4",), ("l4",), "family", "family")
        assert (b.bandwidth_fraction, b.compute_fraction) == (l4.bandwidth_fraction, l4.compute_fraction)
        assert "NVIDIA Ada Lovelace: l4" in priors.describe(b)
    # the MI325X is CDNA 3.0 as the MI300X is; the B200 (Blackwell) has no measured family: NVIDIA's others
    assert priors.basis("mi325x", "vllm-gpu").decode_level == "family"
    b200 = priors.basis("b200", "vllm-gpu")
    assert b200.decode_level == "maker" and "no NVIDIA Blackwell chip is measured" in priors.describe(b200)


def test_a_chip_whose_family_no_one_measured_says_so_and_gets_the_leave_chip_out_range() -> None:
    # the Radeon PRO W7900 is RDNA 3.0: no RDNA chip is measured, so it takes AMD's other architecture's (the
    # MI300X, CDNA 3.0), says so, and gets the error measured leaving a chip out (`prior`), never the narrower
    # `prior_measured_chip`
    b = priors.basis("radeon-pro-w7900", "vllm-gpu")
    assert not b.measured and not b.complete and (b.decode_level, b.prefill_level) == ("maker", "maker")
    assert b.decode_kin == ("mi300x",)
    assert "AMD's other architectures (mi300x): no AMD RDNA 3.0 chip is measured" in priors.describe(b)
    assert uncertainty.error_key("prior", b.complete) == "prior"


def test_carry_scales_device_terms_by_measured_efficiency_not_the_datasheet(seed_plan, v6e_plan) -> None:
    src_roof = roofline_priors(seed_plan)
    fitted = src_roof.model_copy(update={"fixed_s": 0.005, "per_seq_s": 0.0006, "request_overhead_s": 0.007})
    cal = Calibration(key=key_of(seed_plan), step_model=STEP_MODEL, terms=fitted, priors=src_roof)
    carried = priors.carry(cal, v6e_plan)
    v5e, v6e = priors.basis("v5e-1", "vllm-tpu"), priors.basis("v6e-1", "vllm-tpu")
    dst_roof = roofline_priors(v6e_plan)
    measured_ratio = (dst_roof.per_token_s / (v6e.compute_fraction or 0)) / (
        src_roof.per_token_s / (v5e.compute_fraction or 0)
    )
    assert carried.terms.per_token_s == pytest.approx(fitted.per_token_s * measured_ratio)
    # the datasheet says v6e prefills 4.66x faster; the measured efficiencies say less
    assert src_roof.per_token_s / dst_roof.per_token_s == pytest.approx(918 / 197)
    assert fitted.per_token_s / carried.terms.per_token_s < 918 / 197

    # host: every host term by one ratio, the two deployments' measured host lines (host CPU and engine build) at
    # 16 sequences: v5e-1's seed line against the mean of v6e-1's
    def at16(lines: tuple[priors.HostLine, ...]) -> float:
        return sum(h.fixed_s + h.per_seq_s * 16 for h in lines) / len(lines)

    host = at16(v6e.host) / at16(v5e.host)
    assert 0.6 < host < 0.75  # v6e-1's host does a 16-sequence step in about two thirds of v5e-1's time
    assert carried.terms.fixed_s == pytest.approx(0.005 * host)
    assert "host cost" in carried.measured
    # the request overhead is the target's own measured one (TTFT less the first step at one client: config
    # validation 12.24 - 4.72 ms, gce 11.52 - 4.72, sweep 12 - 4.7, gke 15.68 ms at 1,024 tokens less its prefill)
    own = priors.request_overheads("v6e-1")
    assert carried.terms.request_overhead_s == pytest.approx(sum(own) / len(own))
    assert sorted(own)[1:] == pytest.approx([0.0068, 0.0073, 0.00752])
    # with every v6e-1 grid left out (no TTFT, no host line of its own), the calibration's, kept
    v6e_grids = frozenset(g.name for g in priors.distinct_grids() if g.chip == "v6e-1")
    assert priors.carry(cal, v6e_plan, exclude_grids=v6e_grids).terms.request_overhead_s == pytest.approx(0.007)


@pytest.fixture(scope="module")
def l4_plan():  # the L4 grid's deployment (gemma4dev-l4-g6-e2b-2026-08-30: max-model-len 16384, max-num-seqs 8)
    return planner.plan_model(
        PlanRequest(model="google/gemma-4-E2B-it", chip="l4", max_model_len=16384, max_num_seqs=8)
    )


@pytest.fixture(scope="module")
def mi300x_plan():
    return planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="mi300x", max_model_len=32768))


def _calibration(plan, pinned: list[str], **terms: float) -> Calibration:  # type: ignore[no-untyped-def]
    roof = roofline_priors(plan)
    return Calibration(key=key_of(plan), step_model=STEP_MODEL, terms=roof.model_copy(update=terms), priors=roof,
                       fitted=pinned)  # fmt: skip


def test_a_pinned_weight_read_keeps_its_efficiency_under_the_targets_measured_step(l4_plan, mi300x_plan) -> None:
    # L4's read pinned at 1.29 x its roofline (device-bound: TPOT 19.84 ms at 1,024 x 1), its decode fraction 0.76;
    # carried to the MI300X by the two chips' decode fractions (MI300X 0.35, from its device-bound one-client cells),
    # at most the MI300X's own read (roofline / its fraction)
    l4_roof, mi_roof = roofline_priors(l4_plan), roofline_priors(mi300x_plan)
    cal = _calibration(l4_plan, ["weights_s"], weights_s=1.29 * l4_roof.weights_s)
    carried = priors.carry(cal, mi300x_plan).terms
    l4, mi = priors.basis("l4", "vllm-gpu"), priors.basis("mi300x", "vllm-gpu")
    ratio = (l4.bandwidth_fraction or 0) / (mi.bandwidth_fraction or 1)
    own = mi_roof.weights_s / (mi.bandwidth_fraction or 1)
    assert carried.weights_s == pytest.approx(min(1.29 * mi_roof.weights_s * ratio, own))
    assert carried.weights_s <= own


def test_a_read_on_a_target_with_no_measured_read_is_its_familys_else_its_makers(l4_plan, mi300x_plan) -> None:
    # L4 left out (its one grid): no read measured on it; a MI300X fit's read split (fits trade the read for fixed
    # host work) is not carried; no other Ada Lovelace chip is measured, so NVIDIA's other architectures' mean
    # decode fraction is (A100-40GB, H100, T4: 0.61-0.73), and the basis says so
    cal = _calibration(mi300x_plan, ["weights_s"], weights_s=2.8 * roofline_priors(mi300x_plan).weights_s)
    l4_out = frozenset({"gemma4dev-l4-g6-e2b-2026-08-30"})
    b = priors.basis("l4", "vllm-gpu", exclude_grids=l4_out)
    assert not b.own_decode and b.decode_level == "maker" and b.decode_kin == ("a100-40gb", "h100", "t4")
    assert 0.6 < (b.bandwidth_fraction or 0) < 0.75
    carried = priors.carry(cal, l4_plan, exclude_grids=l4_out).terms
    assert carried.weights_s == pytest.approx(roofline_priors(l4_plan).weights_s / (b.bandwidth_fraction or 1))


def test_a_read_the_calibration_did_not_pin_is_the_targets_measured_one(l4_plan, mi300x_plan) -> None:
    # the MI300X fits leave the read unpinned (one-client step host-bound); on L4 the read is its own measured one
    cal = _calibration(mi300x_plan, ["per_token_s"], weights_s=0.5 * roofline_priors(mi300x_plan).weights_s)
    carried = priors.carry(cal, l4_plan).terms
    l4 = priors.basis("l4", "vllm-gpu")
    assert carried.weights_s == pytest.approx(roofline_priors(l4_plan).weights_s / (l4.bandwidth_fraction or 1))
    assert carried.weights_s == pytest.approx(0.0198, rel=0.03)  # L4 1,024 x 1: TPOT 19.84 ms, device-bound


def test_an_unpinned_read_is_not_taken_from_a_host_bound_one_client_step(mi300x_plan) -> None:
    # MI300X E2B: host line 3.38 ms at one client over a 2.85 ms TPOT at 128 x 1; its decode fraction is the host's,
    # so an unpinned read carried to E4B on the same chip keeps the calibration's efficiency (the datasheet ratio)
    e4b = planner.plan_model(PlanRequest(model="google/gemma-4-E4B-it", chip="mi300x", max_model_len=32768))
    cal = _calibration(mi300x_plan, ["per_token_s"], weights_s=1.1 * roofline_priors(mi300x_plan).weights_s)
    carried = priors.carry(cal, e4b, exclude_grids=frozenset({"gemma4dev-mi300x-e4b-2026-10-07"})).terms
    assert carried.weights_s == pytest.approx(1.1 * roofline_priors(e4b).weights_s)


def test_host_work_the_calibration_did_not_pin_is_bounded_by_the_targets_cells(l4_plan, mi300x_plan) -> None:
    # L4's host terms are pinned by none of its cells (every one device-bound); its request overhead and API
    # server terms as an L4 fit gave them (33.9 ms; 0.28 ms a chunk and a token at 360 tok/s)
    cal = _calibration(l4_plan, ["weights_s", "request_overhead_s"], fixed_s=0.00464, per_seq_s=0.000266,
                       request_overhead_s=0.0339, per_stream_chunk_s=0.00028, per_output_token_s=0.00028)  # fmt: skip
    t = priors.carry(cal, mi300x_plan).terms
    # gemma4dev MI300X grids: E2B 128 x 1 TPOT 2.85 ms, 128 x 64 4.97 ms; TTFT 13.14 ms at 128 x 1; E4B 7,989.52 tok/s
    assert t.fixed_s <= 0.00285 + 1e-12
    assert t.fixed_s + 64 * t.per_seq_s <= 0.00497 + 1e-12
    assert t.per_stream_chunk_s + t.per_output_token_s == pytest.approx(1 / 7989.52)
    # the request overhead is the MI300X's own (its three grids' TTFT less the first step at 128 x 1: 10.3-11.0
    # ms), not the L4 host's 33.9 ms; left out, a grid does not give its own prediction's: E4B's and 12B's do
    assert t.request_overhead_s == pytest.approx(sum(priors.request_overheads("mi300x")) / 3)
    e2b = frozenset({"gemma4dev-mi300x-e2b-2026-09-17"})
    assert priors.carry(cal, mi300x_plan, exclude_grids=e2b).terms.request_overhead_s == pytest.approx(
        (0.01103 + 0.01052) / 2, abs=2e-5
    )


def test_carry_to_a_chip_without_measurements_keeps_host_and_says_so(seed_plan) -> None:
    h100 = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="b200", max_model_len=32768))
    src_roof = roofline_priors(seed_plan)
    cal = Calibration(key=key_of(seed_plan), step_model=STEP_MODEL,
                      terms=src_roof.model_copy(update={"fixed_s": 0.005}), priors=src_roof)  # fmt: skip
    carried = priors.carry(cal, h100)
    assert carried.terms.fixed_s == pytest.approx(0.005)
    assert any("host cost" in a for a in carried.assumed) and "decode bandwidth" in carried.assumed


def test_measured_priors_add_host_cost_only_where_host_and_device_overlap(seed_plan) -> None:
    terms = priors.measured_priors(seed_plan)
    assert terms.fixed_s > 0 and terms.per_seq_s > 0  # vllm-tpu 0.26 runs async scheduling
    assert isinstance(terms, StepTerms)


def test_a_borrowed_host_line_stays_under_the_chips_own_tpot() -> None:
    # MI300X without its E2B grid (the one with a host line): no line of its own; E4B 128 x 1 TPOT 4.16 ms
    # (gemma4dev-mi300x-e4b-2026-10-07) is a step with host work in it, so the borrowed TPU lines are scaled to
    # reach at most that at every own cell
    b = priors.basis("mi300x", "vllm-gpu", exclude_grids=frozenset({"gemma4dev-mi300x-e2b-2026-09-17"}))
    assert not b.own_host and b.host_scale < 1
    fixed = sum(h.fixed_s for h in b.host) / len(b.host) * b.host_scale
    per_seq = sum(h.per_seq_s for h in b.host) / len(b.host) * b.host_scale
    assert fixed + per_seq <= 0.00416 + 1e-12
    assert "scaled by" in priors.describe(b)
    # left out, its own cells bound nothing: the validation's unmeasured chip gets the line as measured
    assert priors.basis("mi300x", "vllm-gpu", exclude_chip="mi300x").host_scale == 1.0
    # a chip whose own cells sit above the line keeps it whole (L4: TPOT 19.84 ms at 1 client)
    assert priors.basis("l4", "vllm-gpu").host_scale == 1.0
