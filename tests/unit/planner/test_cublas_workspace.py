"""The activation base of vLLM 0.11.0 - 0.15.x as torch's cuBLAS workspace, and the sort-based sampler warm-up counted
from the sources (engines.json memory_rules '0.11.0 - 0.15.x', planner.gpu_memory.cublas_workspace_rule; issue 27).

torch 2.8.0 - 2.9.x (what these releases pin: requirements/cuda.txt of the 0.11.0, 0.12.0 and 0.14.0 sdists)
aten/src/ATen/cuda/CublasHandlePool.cpp parseChosenWorkspaceSize: ':4096:2:16:8' by default, 4,096 KiB x 8 when
'properties->major == 9 && properties->minor == 0'; getNewWorkspace takes it from the caching allocator at a
handle's first GEMM on a stream, so profile_run's first GEMM puts it in the torch peak vLLM counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip.planner.core import plan_model
from onechip.planner.gpu_memory import cublas_workspace_rule, select_rule
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
RULE = select_rule(engine_rules("vllm-gpu").memory_rules, "0.11.0")


def test_the_workspace_sizes_are_torchs_defaults() -> None:
    assert RULE.cublas_workspace_bytes == 4096 * 1024 * 2 + 16 * 1024 * 8  # 8,519,680: ':4096:2:16:8'
    assert RULE.cublas_workspace_sm90_bytes == 4096 * 8 * 1024  # 32 MiB on compute capability 9.0


@pytest.mark.parametrize(
    ("capability", "base"),
    [(90, 33_554_432), (86, 8_519_680), (80, 8_519_680), (120, 8_519_680), (None, RULE.activation_base_bytes)],
)
def test_the_activation_base_is_the_cards_workspace(capability: int | None, base: int) -> None:
    # Blackwell (10.x, 12.x) keeps the small default until pytorch PR #175344 (2026-02), after torch 2.9.x; a card
    # whose capability the catalog does not know (AMD: hipBLAS / hipBLASLt workspaces, not read) keeps the fitted base
    assert cublas_workspace_rule(RULE, capability).activation_base_bytes == base


def test_a_rule_without_a_workspace_keeps_its_base() -> None:
    old = select_rule(engine_rules("vllm-gpu").memory_rules, "0.10.2")
    assert old.cublas_workspace_bytes is None
    assert cublas_workspace_rule(old, 90) is old


def test_the_sampler_term_is_the_sort_count() -> None:
    # bf16 logits held (2) + Sampler.forward's fp32 copy (4) + the sort's fp32 values and int64 indices (12) + the
    # int64 reverse_indices of torch's segmented_sort_pairs (8) + CUB's alternate key and value buffers (12)
    assert RULE.sampler_bytes_per_seq_vocab == 2 + 4 + 12 + 8 + 12


# llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md @ 259334868c5075da530cc6c90b43fceb11b6e6a7:
# 'Peak Activation (GiB)' of H100 80GB runs of a 0.11.0 - 0.15.x image (1,024 sequences, 8,192 batched tokens,
# max_model_len 16,000); the sampler and base terms were not fitted on them (checked; printed to two decimals)
LLM_D_H100 = [
    ("meta-llama--Llama-3.1-8B-Instruct.json", 1, 4.76),
    ("Qwen--Qwen3-0.6B.json", 1, 5.56),
    ("meta-llama--Llama-3.3-70B-Instruct.json", 2, 4.84),  # the run is the FP8-dynamic export: same dims
    ("openai--gpt-oss-20b.json", 1, 7.38),
    ("openai--gpt-oss-120b.json", 1, 7.38),
]


@pytest.mark.parametrize(("config", "tp", "logged_gib"), LLM_D_H100)
def test_the_h100_runs_peak_as_counted(tmp_path: Path, config: str, tp: int, logged_gib: float) -> None:
    path = sized_checkpoint(tmp_path / "m", json.loads((CONFIGS / config).read_text(encoding="utf-8")), 2**30)
    plan = plan_model(
        str(path), "h100", engine_version="0.11.0", max_model_len=16000, tensor_parallel_size=tp, flashinfer=False
    )
    assert plan.memory_budget is not None
    # within the two-decimal print and the 0.003 - 0.006 GiB the count leaves under each (the 0.19.0 intercept of
    # 0.079 GiB with the fitted 37.77 B planned up to 0.017 GiB over)
    assert plan.memory_budget.activation_peak_bytes / GIB == pytest.approx(logged_gib, abs=0.008)


# The Triton top-k/top-p kernel is first in the vllm-0.17.0 sdist: vllm/v1/sample/ops/topk_topp_triton.py, and
# topk_topp_sampler.py apply_top_k_top_p 'if HAS_TRITON and logits.shape[0] >= 8: return apply_top_k_top_p_triton(...)'.
# The 0.16.0 sdist has no such file and sorts ('logits_sort, logits_idx = logits.sort(dim=-1, descending=False)', the
# same topk_topp_sampler.py as the 0.15.1 wheel), its FlashInfer sampler is opt-in (VLLM_USE_FLASHINFER_SAMPLER), and
# it pins torch==2.9.1 (requirements/cuda.txt; 0.17.0 pins 2.10.0): the sort count and the cuBLAS base hold there too.
@pytest.mark.parametrize(
    ("version", "sorts"), [("0.15.1", True), ("0.16.0", True), ("0.17.0", False), ("0.19.1", False)]
)
def test_the_sort_based_sampler_holds_until_the_triton_kernel_in_0_17_0(version: str, sorts: bool) -> None:
    rule = select_rule(engine_rules("vllm-gpu").memory_rules, version)
    assert (rule.sampler_bytes_per_seq_vocab == 38.0) is sorts
    assert (rule.cublas_workspace_sm90_bytes == 33_554_432) is sorts
