"""The multimodal encoder's profiling tensors in vLLM's activation peak (planner.gpu_memory.encoder_profile_bytes).

Shapes from vLLM's V1 profile_run (vllm/v1/worker/gpu_model_runner.py, vllm 0.32.0 wheel): encoder budget //
tokens per item images of the tower's native size in the model dtype, plus their outputs (tokens x the decoder's
hidden size), alive through the text dummy forward and the sampler warm-up. Configs: tests/fixtures/bootlogs/configs
(each names its public source)."""

from __future__ import annotations

import json
from pathlib import Path

from onechip.planner.gpu_memory import encoder_profile_bytes

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text(encoding="utf-8"))


def test_gemma3_27b_profiles_32_images_of_896_pixels() -> None:
    # 8,192-token budget // 256 tokens per image = 32 images; 3 x 896 x 896 bf16 pixels and 256 x 5,376 outputs each
    got = encoder_profile_bytes(_config("google--gemma-3-27b-it.json"), dtype_bytes=2, max_num_batched_tokens=8192)
    assert got == 32 * (3 * 896 * 896 + 256 * 5376) * 2


def test_mistral3_profiles_two_pixtral_images_of_1540_pixels() -> None:
    # (1540 // (14 x 2))^2 = 3,025 image embeddings per item; 8,192 // 3,025 = 2 items
    config = _config("RedHatAI--Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8.json")
    got = encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=8192)
    assert got == 2 * (3 * 1540 * 1540 + 3025 * 5120) * 2


def test_one_item_at_least_when_the_budget_is_below_an_item() -> None:
    # compute_mm_encoder_budget: the budget is max(max_num_batched_tokens, tokens per item)
    config = _config("RedHatAI--Mistral-Small-3.1-24B-Instruct-2503-quantized.w8a8.json")
    got = encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=2048)
    assert got == (3 * 1540 * 1540 + 3025 * 5120) * 2


def test_text_only_and_unmodelled_towers_add_nothing() -> None:
    assert encoder_profile_bytes({"hidden_size": 4096}, dtype_bytes=2, max_num_batched_tokens=8192) == 0
    gemma4 = _config("google--gemma-4-E2B-it.json")  # Gemma 4's tower: no fixed image size in its config
    assert encoder_profile_bytes(gemma4, dtype_bytes=2, max_num_batched_tokens=8192) == 0
