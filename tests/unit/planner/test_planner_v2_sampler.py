"""The V2 model runner's sampler warm-up (vLLM 0.29.0 - 0.32.x: engines.json v2_runner_rules 'sampler_logits_only'),
against the issue-27 GPU boots of tests/fixtures/bootlogs: the dummy requests carry no sampling parameters, so the
warm-up holds compute_logits' output in the model dtype (twice with Gemma's final_logit_softcapping) and no fp32
copies (vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run, vllm/v1/worker/gpu/sample/sampler.py, read in the
0.29.0 wheel and the 0.30.0 - 0.33.0 sdists), and the >= 160 GiB batch defaults (from 0.28.0). From 0.33.0 a second
pass with SamplingParams.for_sampler_warmup holds an fp32 copy of the logits and, on FlashInfer, two more (engines.json
v2_runner_rules param_pass_fp32_copies / flashinfer_fp32_copies, read in the 0.33.0 and 0.34.0 sdists)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.gpu_memory import rotary_cache_bytes, select_rule, v2_param_pass_bytes, v2_sampler_bytes
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

L4_E2B = "l4-gemma4-e2b-w4a16-len8192-v0300"
MI300X_AITER = "mi300x-gemma4-12b-fp8-aiter-len32768-v0311"


def _gpu_rules() -> Any:
    return engine_rules("vllm-gpu").memory_rules


def test_the_rule_changes_at_0_29_0() -> None:
    # vllm/config/vllm.py use_v2_model_runner: the 0.25.0 - 0.27.1 and 0.28.0 sdists keep MoE and hybrid models on
    # the V1 runner (_is_default_v2_model_runner_model); from the 0.29.0 sdist every model runs V2, whose sampler
    # warms up on logits only until 0.33.0 adds its warm-up-parameter pass
    rules = engine_rules("vllm-gpu").v2_runner_rules
    assert select_rule(rules, "0.28.0").models == "dense_or_listed"
    assert select_rule(rules, "0.29.0").models == "every_model"
    assert select_rule(rules, "0.32.0").sampler_logits_only
    assert not select_rule(rules, "0.33.0").sampler_logits_only


def test_the_160_gib_batch_defaults_start_at_0_28_0() -> None:
    # vllm/engine/arg_utils.py get_batch_defaults: 'device_memory >= 160 * GiB_bytes' -> 16384 tokens / 1024
    # sequences for the OpenAI server in the 0.28.0 wheel, absent from the 0.27.1 sdist
    rules = _gpu_rules()
    assert select_rule(rules, "0.27.1").huge_gpu_defaults is None
    assert select_rule(rules, "0.28.0").huge_gpu_defaults == (1024, 16384)
    assert select_rule(rules, "0.32.0").huge_gpu_defaults == (1024, 16384)


@pytest.mark.parametrize(
    ("text", "tp", "expected"),
    [
        ({"final_logit_softcapping": 30.0}, 1, 4.0),  # Gemma: 'logits / soft_cap', tanh, '* soft_cap' out of place
        ({"final_logit_softcapping": None}, 1, 2.0),  # the LM head's bf16 output alone
        ({}, 2, 3.0),  # TP 2: the [rows, vocab / 2] shard and the gathered [rows, vocab]
    ],
)
def test_bytes_per_logit_element(text: dict[str, Any], tp: int, expected: float) -> None:
    assert v2_sampler_bytes(text, 2, tp) == expected


@pytest.mark.parametrize(
    ("dtype_bytes", "copies", "expected"),
    [
        (2, 3, 14.0),  # bf16 logits + the fp32 copy + top_k_mask_logits' output + its softmax (FlashInfer)
        (2, 1, 6.0),  # bf16 logits + the fp32 copy, masked in place by the Triton top-k/top-p
        (4, 3, 16.0),  # fp32: apply_sampling_params copies even fp32 logits (torch.empty_like(...).copy_)
    ],
)
def test_bytes_per_element_of_the_0_33_param_pass(dtype_bytes: int, copies: int, expected: float) -> None:
    assert v2_param_pass_bytes({}, dtype_bytes, 1, copies) == expected


def test_the_param_pass_is_never_below_compute_logits() -> None:
    # fp32 with Gemma's soft cap: compute_logits holds two fp32 [rows, vocab] tensors before the sampler runs
    assert v2_param_pass_bytes({"final_logit_softcapping": 30.0}, 4, 1, 0) == 8.0


@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_the_param_pass_rule(version: str) -> None:
    # 0.33.0 / 0.34.0 sdists: sampler.py apply_sampling_params' fp32 copy; flashinfer-python top_k_top_p_sampling_from
    # _logits' masked logits and softmax; FlashInferBackend.supports_compute_capability: 8.0 <= capability <= 12.1
    rule = select_rule(engine_rules("vllm-gpu").v2_runner_rules, version)
    assert (rule.param_pass_fp32_copies, rule.flashinfer_fp32_copies) == (1, 2)
    assert rule.flashinfer_capability == (80, 121)


@pytest.mark.parametrize(
    ("chip", "per_element"),
    [("h100", 14), ("rtx5090", 14), ("a100-80gb", 14), ("mi300x", 6), ("t4", 6), ("v100-32gb", 6)],
)
@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_the_param_pass_by_card(chip: str, per_element: int, version: str) -> None:
    # flashinfer_sampler_supported: CUDA and compute capability 8.0 - 12.1 (Hopper, Blackwell 2.0, Ampere) sample on
    # FlashInfer; ROCm (MI300X), Turing (T4) and Volta (V100) on the Triton top-k/top-p. Eager, so no cold compile;
    # 1,024 rows of Llama-3.1-8B's 128,256-entry vocab dominate the 2,048-token forward. The peak also holds the dummy
    # forward's hidden states, one [rows, hidden] copy (sample_hidden_states) and the memory rule's base.
    plan = plan_model(
        "meta-llama/Llama-3.1-8B-Instruct",
        chip,
        "vllm-gpu",
        max_model_len=4096,
        engine_version=version,
        max_num_seqs=1024,
        max_num_batched_tokens=2048,
        enforce_eager=True,
    )
    base = select_rule(_gpu_rules(), version).activation_base_bytes
    held = (2048 + 1024) * 4096 * 2
    assert plan.memory_budget.activation_peak_bytes == base + held + 1024 * 128_256 * per_element


def _plan(tmp_path: Path, name: str, chip: str, **fields: Any) -> Any:
    entry = corpus_entry(name)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    # 'Model loading took ... GiB' holds the RoPE caches the planner adds back (as benchmarks/planner_accuracy.py)
    rope = rotary_cache_bytes(config.get("text_config") or config, dtype_bytes=2)
    weights = int(entry["logged"]["model_weights_gib"] * GIB) - rope
    return plan_model(
        str(sized_checkpoint(tmp_path / "m", config, weights)),
        chip,
        "vllm-gpu",
        max_model_len=entry["engine_args"]["max_model_len"],
        utilization=entry["engine_args"]["gpu_memory_utilization"],
        engine_version="0.30.0",
        **fields,
    )


def test_activation_peak_on_the_l4_e2b_log(tmp_path: Path) -> None:
    # the log: 'Actual usage is 8.38 GiB for consumed memory (weights + non-torch), 0.79 GiB for peak activation'
    # with 'CUDA graph pool memory: 0.28 GiB (actual), 0.53 GiB (estimated)', the estimate inside the 0.79
    # (vllm 0.32.0 gpu_worker.py, see the 26B-A4B L4 fixture): 0.26 GiB transient. 256 rows x 262,144 x 2 B x 2 =
    # 0.25 GiB of logits, the rest the encoder outputs, held hidden states and the V1-fitted base (0.08 GiB).
    plan = _plan(tmp_path, L4_E2B, "l4", multimodal=True)
    logged = (0.79 - 0.53) * GIB
    assert plan.memory_budget.activation_peak_bytes == pytest.approx(logged, abs=0.1 * GIB)


def test_whole_budget_on_the_l4_e2b_log(tmp_path: Path) -> None:
    # 'Available KV cache memory: 10.66 GiB' (every input logged: weights 8.01 GiB, 0.9, 8,192, bf16): within 5%;
    # the V1 sampler figure (14.17 B per element at 256 rows) planned 9.61 GiB (-9.8%)
    plan = _plan(tmp_path, L4_E2B, "l4", multimodal=True)
    assert plan.memory_budget.kv_cache_bytes / GIB == pytest.approx(10.66, rel=0.05)


def test_the_dummy_forward_outweighs_the_logits_on_the_mi300x_log(tmp_path: Path) -> None:
    # 1,024 rows x 262,144 x 2 B x 2 = 1.0 GiB of logits, under the 16,384-token forward; the log's transient peak:
    # 'Actual usage is 14.29 GiB for consumed memory ..., 7.18 GiB for peak activation' less '5.25 GiB (estimated)'
    plan = _plan(tmp_path, MI300X_AITER, "mi300x", max_num_batched_tokens=16384, multimodal=False)
    assert plan.memory_budget.activation_peak_bytes == pytest.approx((7.18 - 5.25) * GIB, rel=0.15)


def test_the_mi300x_e2b_token_line_given_its_pool() -> None:
    # xbill9/amd-gputools devto-gemma4-mi300x-vllm.md: 'Current kv cache memory in use is 155.04 GiB', 'GPU KV cache
    # size: 9,026,017 tokens', 'Maximum concurrency for 32,768 tokens per request: 275.45x' (vLLM 0.29.1rc1 on an
    # MI300X VF of 191.69 GiB); the >= 160 GiB defaults put 16,384 tokens in flight per sliding layer
    plan = plan_model(
        "google/gemma-4-E2B-it",
        "mi300x",
        "vllm-gpu",
        max_model_len=32768,
        utilization=0.9,
        engine_version="0.29.1",
        multimodal=True,
        kv_cache_memory_bytes=int(155.04 * GIB),
    )
    assert plan.in_flight_tokens == 2 * 16384  # two batches under async scheduling
    assert round(plan.max_concurrency, 2) == 275.45
    assert plan.kv_tokens_logged == pytest.approx(9_026_017, rel=0.001)
