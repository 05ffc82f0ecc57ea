"""The activation base of the V2 model runner's profiling as torch's cuBLAS workspace for the card, where the release
pins a torch whose workspace is read (engines.json v2_runner_rules `cublas_workspace`; issue 27, the RTX 3050 row).

The V2 runner's warm-up is counted from the sources (logits only before 0.33.0: v2_runner_rules), so the 0.19.0
intercept fitted beside the V1 runner's 14.17 B per element (activation_base_bytes, 84,488,246 B) has no fitted term
to pair with: what stays in the torch peak beside the forward and the logits is the workspace torch takes from its
caching allocator at the first GEMM (aten/src/ATen/cuda/CublasHandlePool.cpp getNewWorkspace), ':4096:2:16:8' by
default and 32 MiB on compute capability 9.0 in torch 2.10.0 - 2.11.0 (before pytorch PR #175344, merged
2026-02-19, gave capability 10.x and 12.x 32 MiB too). vLLM 0.22.0 - 0.26.x pin torch==2.11.0
(requirements/cuda.txt of the 0.25.0 and 0.26.0 sdists; 0.21.0 - 0.25.1 as the 0.21.0 - 0.25.x memory rule's
triton_topk_sampler reads them); 0.27.0 pins torch==2.13.0, whose workspace (thread-local workspaces, pytorch PR
#180283; Blackwell's 32 MiB) is not read here, so it keeps the fitted base."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model

RTX3050 = "rtx3050-6gb-qwen3-0.6b-len2048-util060-eager-v0260"
TORCH_2_11_WORKSPACE = 4096 * 1024 * 2 + 16 * 1024 * 8  # ':4096:2:16:8' = 8,519,680 B
TORCH_2_11_SM90_WORKSPACE = 4096 * 1024 * 8  # 32 MiB on compute capability 9.0
FITTED_BASE = 84_488_246  # engines.json memory_rules 0.26.0 - 0.27.x activation_base_bytes (the 0.19.0 fit)


def _qwen3_0_6b(tmp_path: Path) -> Path:
    entry = corpus_entry(RTX3050)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / "qwen3-0.6b", config, entry["weights_total_bytes"])


def _activation(model: Path, chip: str, version: str) -> int:
    plan = plan_model(
        str(model), chip, "vllm-gpu", engine_version=version, max_model_len=2048, utilization=0.6, enforce_eager=True
    )
    assert plan.memory_budget is not None
    assert "on the V2 model runner" in plan.memory_budget.rule_versions  # Qwen3ForCausalLM, dense (0.25.0 on)
    return plan.memory_budget.activation_peak_bytes


# Qwen3-0.6B (configs/Qwen--Qwen3-0.6B.json: hidden 1,024, vocab 151,936) at the small-card defaults of
# vllm/engine/arg_utils.py get_batch_defaults (0.26.0 sdist: 256 sequences, 2,048 batched tokens for the OpenAI
# server under 70 GiB): the logits-only warm-up holds 256 x 151,936 bf16 logits, the dummy forward's
# [2,048, 1,024] hidden states and one [256, 1,024] copy (v2_runner_rules; vllm/v1/worker/gpu/model_runner.py
# profile_run), more than the eager forward's 2,048 x 2 x (3 x 3,072 + 3 x 1,024) B
SAMPLER_PEAK = 256 * 151_936 * 2 + 2048 * 1024 * 2 + 256 * 1024 * 2
# an H100 (80 GiB, over 70 GiB) gets 1,024 sequences and 8,192 batched tokens there
H100_SAMPLER_PEAK = 1024 * 151_936 * 2 + 8192 * 1024 * 2 + 1024 * 1024 * 2


def test_the_v2_runner_of_0_26_takes_the_cards_cublas_workspace(tmp_path: Path) -> None:
    model = _qwen3_0_6b(tmp_path)
    assert _activation(model, "rtx3050-6gb", "0.26.0") == SAMPLER_PEAK + TORCH_2_11_WORKSPACE  # Ampere, 8.6
    assert _activation(model, "h100", "0.26.0") == H100_SAMPLER_PEAK + TORCH_2_11_SM90_WORKSPACE  # Hopper, 9.0


@pytest.mark.parametrize("version", ["0.27.1"])
def test_a_release_whose_torch_workspace_is_not_read_keeps_the_fitted_base(tmp_path: Path, version: str) -> None:
    assert _activation(_qwen3_0_6b(tmp_path), "rtx3050-6gb", version) == SAMPLER_PEAK + FITTED_BASE


# a card whose compute capability the catalog does not give keeps the fitted base: a card known by its memory only
# ('gpu:24GiB'), and an AMD card (accelerators.json architecture_compute_capability lists no AMD architecture; a ROCm
# build keeps hipBLAS / hipBLASLt handles, aten/src/ATen/cuda/CublasHandlePool.cpp Note [hipblaslt handles], whose
# workspace the rule does not read)
@pytest.mark.parametrize("chip", ["gpu:24GiB", "radeon-pro-w7900"])
def test_a_card_of_unknown_capability_keeps_the_fitted_base(tmp_path: Path, chip: str) -> None:
    assert _activation(_qwen3_0_6b(tmp_path), chip, "0.26.0") == SAMPLER_PEAK + FITTED_BASE  # both under 70 GiB
