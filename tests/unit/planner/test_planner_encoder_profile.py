"""The multimodal encoder's profiling tensors in vLLM's activation peak (planner.gpu_memory.encoder_profile_bytes).

Shapes from vLLM's V1 profile_run (vllm/v1/worker/gpu_model_runner.py, vllm 0.32.0 wheel): encoder budget //
tokens per item images of the tower's native size in the model dtype, plus their outputs (tokens x the decoder's
hidden size), alive through the text dummy forward and the sampler warm-up. Configs: tests/fixtures/bootlogs/configs
(each names its public source)."""

from __future__ import annotations

import json
from pathlib import Path

from onechip.planner.gpu_memory import encoder_profile_bytes, rotary_cache_bytes

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


def test_the_v2_runner_keeps_only_the_outputs() -> None:
    # vllm/v1/worker/gpu/mm/encoder_runner.py: execute_mm_encoder batches the inputs itself and frees them
    got = encoder_profile_bytes(
        _config("google--gemma-3-27b-it.json"), dtype_bytes=2, max_num_batched_tokens=8192, inputs=False
    )
    assert got == 32 * 256 * 5376 * 2


def test_gemma4_rope_caches_one_per_layer_type() -> None:
    # vllm gemma4.py: get_rope(head_dim of the layer type, rope_parameters[layer_type]); sliding 'default' 256
    # wide, full 'proportional' head_size (global_head_dim 512) wide whatever partial_rotary_factor (0.25) says
    text = _config("google--gemma-4-E2B-it.json")["text_config"]
    assert rotary_cache_bytes(text, dtype_bytes=2) == 131072 * (256 + 512) * 2


def test_flat_rope_parameters_read_like_rope_scaling() -> None:
    text = {"max_position_embeddings": 4096, "head_dim": 128, "num_attention_heads": 8}
    flat = {**text, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5}}
    assert rotary_cache_bytes(flat, dtype_bytes=2) == 4096 * 64 * 2
    yarn = {**text, "rope_parameters": {"rope_type": "yarn", "factor": 4.0}}
    assert rotary_cache_bytes(yarn, dtype_bytes=2) == 0


def test_llama4_profiles_three_items_of_seventeen_tiles() -> None:
    # vllm mllama4.py: a 16:1 dummy image -> 16 tiles + the global tile of 336^2 pixels, 24^2 x 0.5^2 = 144
    # embeddings per tile (2,448 per item); 8,192 // 2,448 = 3 items; outputs 5,120 wide (text hidden_size)
    config = _config("meta-llama--Llama-4-Scout-17B-16E-Instruct.json")
    got = encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=8192)
    assert got == 3 * (17 * 3 * 336 * 336 + 2448 * 5120) * 2
    # max_patches is a preprocessor_config.json field: without it the tower is not modelled
    assert (
        encoder_profile_bytes({**config, "image_processor_config": {}}, dtype_bytes=2, max_num_batched_tokens=8192) == 0
    )


def test_kimi_vl_profiles_seven_moonvit_images_and_keeps_the_rope_grid() -> None:
    # vllm kimi_vl.py: the 1,024^2 dummy image has 73^2 = 5,329 patches > in_token_limit 4,096, so it is scaled by
    # sqrt(4,096 / 5,329) to 897 px and padded to 924 (a multiple of 2 x 14): 66^2 = 4,356 patches of 3 x 14^2
    # pixels, 33^2 = 1,089 merged tokens; 8,192 // 1,089 = 7 items; outputs 2,048 wide (text hidden_size).
    # moonvit.py MoonVitEncoder: Rope2DPosEmb(1,152 // 16, 512, 512) keeps a complex64 [512, 512, 36] cache.
    config = _config("moonshotai--Kimi-VL-A3B-Instruct.json")
    rope = 512 * 512 * 36 * 8
    got = encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=8192)
    assert got == 7 * (4356 * 3 * 14 * 14 + 1089 * 2048) * 2 + rope
    # the V2 runner frees the inputs; the RoPE cache stays either way
    assert encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=8192, inputs=False) == (
        7 * 1089 * 2048 * 2 + rope
    )
    # in_token_limit is a preprocessor_config.json field: without it MoonViT is not modelled
    bare = {k: v for k, v in config.items() if k != "image_processor_config"}
    assert encoder_profile_bytes(bare, dtype_bytes=2, max_num_batched_tokens=8192) == 0
