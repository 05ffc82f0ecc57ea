"""vLLM 0.17.0 - 0.19.x's sampler warm-up counted from the sources on a card whose SM count is known, in place of the
14.17 B per (row x vocab) element and the 80.6 MiB base fitted on two 0.19.0 H100 logs (engines.json memory_rules
'0.17.0 - 0.19.x' triton_topk_sampler, planner.gpu_memory.triton_topk_sampler_rule).

Read in the vllm-0.19.0 sdist (PyPI): vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run keeps the model-dtype
logits of compute_logits while it calls the sampler; vllm/v1/sample/sampler.py Sampler.forward takes
'logits.to(torch.float32)'; apply_temperature divides in place; vllm/v1/sample/ops/topk_topp_sampler.py forward_native
masks in place ('if HAS_TRITON and logits.shape[0] >= 8: return apply_top_k_top_p_triton(logits, k, p)'), then
'probs = logits.softmax(dim=-1, dtype=torch.float32)' and random_sample's 'q = torch.empty_like(probs)': at that point
2 + 4 + 4 + 4 = 14 B per element in bf16 (an fp32 model's .to(float32) is no copy: 12). topk_topp_triton.py
apply_top_k_top_p_triton caches one fp32 [min(next_power_of_2(min(SMs, rows)), SMs), vocab] buffer per device
(_TRITON_BUFFER_CACHE, 'buffer = logits.new_empty((size, vocab_size))', num_compute_units = torch's
multi_processor_count), alive through the warm-up. The base is torch 2.10.0's cuBLAS workspace (requirements/cuda.txt
of the 0.19.0 sdist pins torch==2.10.0): 32 MiB on compute capability 9.0 (tests/unit/planner/test_cublas_workspace.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import sized_checkpoint
from onechip.planner.core import plan_model
from onechip.planner.gpu_memory import select_rule, triton_topk_buffer_bytes, triton_topk_sampler_rule
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
RULE = select_rule(engine_rules("vllm-gpu").memory_rules, "0.19.0")
CUBLAS_SM90 = 4096 * 8 * 1024  # torch 2.10.0 CublasHandlePool.cpp: 4,096 KiB x 8 on capability 9.0


@pytest.mark.parametrize(("rows", "programs"), [(1024, 132), (132, 132), (100, 128), (8, 8), (5, 8)])
def test_the_buffer_has_a_row_per_program(rows: int, programs: int) -> None:
    # NUM_PROGRAMS = min(num_sm, batch_size); size = min(next_power_of_2(NUM_PROGRAMS), num_sm)
    assert triton_topk_buffer_bytes(sm_count=132, rows=rows, vocab=1000) == programs * 1000 * 4


def test_the_count_replaces_the_fit_only_where_the_sms_are_known() -> None:
    counted, buffer = triton_topk_sampler_rule(
        RULE, compute_capability=90, sm_count=132, dtype_bytes=2, rows=1024, vocab=256_000
    )
    assert (counted.sampler_bytes_per_seq_vocab, counted.activation_base_bytes) == (14, CUBLAS_SM90)
    assert buffer == 132 * 256_000 * 4
    fp32, _ = triton_topk_sampler_rule(RULE, compute_capability=90, sm_count=132, dtype_bytes=4, rows=1024, vocab=9)
    assert fp32.sampler_bytes_per_seq_vocab == 12  # fp32 logits: no fp32 copy
    # unknown SMs, or fewer than 8 rows (the PyTorch sort path): the fitted terms
    for sms, rows in ((None, 1024), (132, 4)):
        kept, none = triton_topk_sampler_rule(
            RULE, compute_capability=90, sm_count=sms, dtype_bytes=2, rows=rows, vocab=256_000
        )
        assert (kept, none) == (RULE, 0)
    assert RULE.sampler_bytes_per_seq_vocab == 14.17  # the fallback stays the fitted figure


def _peak(tmp_path: Path, config: str, version: str = "0.19.0") -> float:
    path = sized_checkpoint(tmp_path / "m", json.loads((CONFIGS / config).read_text(encoding="utf-8")), 2**30)
    plan = plan_model(str(path), "h100", engine_version=version, max_model_len=8192, utilization=0.95)
    assert plan.memory_budget is not None
    return plan.memory_budget.activation_peak_bytes


# Hand-worked at 1,024 sequences and 8,192 batched tokens (the sweep's defaults), bf16: 1,024 x vocab x 14 + 132 x
# vocab x 4 + 32 MiB + the held hidden states (8,192 + 2 x 1,024) x hidden x 2 B; the sampler is the peak on each.
# Against 'torch peak memory increase' of tests/fixtures/bootlogs/h100-*-v0190.log (printed to 0.01 GiB).
@pytest.mark.parametrize(
    ("config", "vocab", "hidden", "logged_gib"),
    [
        ("google--gemma-2-9b-it.json", 256_000, 3584, 3.65),  # 3,912,138,752 B = 3.6434 GiB (fitted: 3.6065)
        ("google--gemma-2-2b-it.json", 256_000, 2304, 3.62),  # 3,885,924,352 B = 3.6191 GiB (fitted: 3.5821)
        ("meta-llama--Llama-3.1-8B-Instruct.json", 128_256, 4096, 1.89),  # 2,023,706,624 B = 1.8847 GiB
        ("Qwen--Qwen3-8B.json", 151_936, 4096, 2.21),  # 2,375,735,296 B = 2.2126 GiB
    ],
)
def test_the_0190_h100_sampler_peaks_as_counted(
    tmp_path: Path, config: str, vocab: int, hidden: int, logged_gib: float
) -> None:
    hand = 1024 * vocab * 14 + 132 * vocab * 4 + CUBLAS_SM90 + (8192 + 2 * 1024) * hidden * 2
    peak = _peak(tmp_path, config)
    assert peak == hand
    # within the print's 0.005 GiB and the 0.002 GiB the count leaves under two of the logs (allocator tails of the
    # 501 MiB fp32 tensors of Llama's vocab, small per-row tensors: not counted)
    assert peak / GIB == pytest.approx(logged_gib, abs=0.0075)


def _assert_counted_on_h100(version: str) -> Any:
    """Assert `version`'s rule counts the sampler on an H100 (132 SMs, bf16, 1,024 rows of a 256,000 vocab) as 0.19.0
    does: 14 B per element, torch's 32 MiB sm90 cuBLAS workspace, the Triton buffer of 132 fp32 rows; the rule."""
    rule = select_rule(engine_rules("vllm-gpu").memory_rules, version)
    counted, buffer = triton_topk_sampler_rule(
        rule, compute_capability=90, sm_count=132, dtype_bytes=2, rows=1024, vocab=256_000
    )
    assert (counted.sampler_bytes_per_seq_vocab, counted.activation_base_bytes, buffer) == (
        14,
        CUBLAS_SM90,
        132 * 256_000 * 4,
    )
    return rule


# vLLM 0.20.0 - 0.20.2 sample as 0.19.0 does (read in their sdists: topk_topp_sampler.py and topk_topp_triton.py are
# 0.19.0's byte for byte; sampler.py adds only logprob_token_ids, which _dummy_sampler_run sets to None) and pin torch
# 2.11.0 (requirements/cuda.txt), cut before pytorch PR #175344: the same 32 MiB workspace on capability 9.0.
# Hand-worked for Gemma-2-9B on H100 at 1,024 sequences: 1,024 x 256,000 x 14 + 132 x 256,000 x 4 + 32 MiB +
# (8,192 + 2 x 1,024) x 3,584 x 2 = 3,912,138,752 B, as on 0.19.0 (the fitted terms: 3.6065 GiB).
@pytest.mark.parametrize("version", ["0.20.0", "0.20.1", "0.20.2"])
def test_the_020_releases_count_the_same_sampler(tmp_path: Path, version: str) -> None:
    rule = _assert_counted_on_h100(version)
    assert (
        triton_topk_sampler_rule(rule, compute_capability=80, sm_count=108, dtype_bytes=2, rows=1024, vocab=9)[
            0
        ].activation_base_bytes
        == 4096 * 1024 * 2 + 16 * 1024 * 8
    )  # ':4096:2:16:8' off Hopper (Blackwell too)
    assert _peak(tmp_path, "google--gemma-2-9b-it.json", version) == 3_912_138_752


# vLLM 0.21.0 - 0.25.x warm up FlashInfer first on a card it supports, then the native path again with a per-request
# generator (_dummy_sampler_run's second call, read in their sdists): the native path's peak, the same Triton buffer,
# 14 B per element and torch 2.11.0's workspace; Gemma-2-9B on H100 hand-worked as above: 3,912,138,752 B. On 0.25.x
# a dense model runs the V2 model runner (engines.json v2_runner_rules), whose warm-up is its own: the rule only.
@pytest.mark.parametrize(("version", "v1_runner"), [("0.21.0", True), ("0.23.0", True), ("0.25.1", False)])
def test_the_021_to_025_releases_peak_on_the_native_warm_up(tmp_path: Path, version: str, v1_runner: bool) -> None:
    _assert_counted_on_h100(version)
    if v1_runner:
        assert _peak(tmp_path, "google--gemma-2-9b-it.json", version) == 3_912_138_752
