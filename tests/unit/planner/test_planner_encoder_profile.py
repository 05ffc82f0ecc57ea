"""The multimodal encoder's profiling tensors in vLLM's activation peak (planner.gpu_memory.encoder_profile_bytes).

Shapes from vLLM's V1 profile_run (vllm/v1/worker/gpu_model_runner.py, vllm 0.32.0 wheel): encoder budget //
tokens per item images of the tower's native size in the model dtype, plus their outputs (tokens x the decoder's
hidden size), alive through the text dummy forward and the sampler warm-up; and the Qwen3-VL tower's own forward
peak (planner.gpu_memory.qwen3_vl_tower_peak_bytes: vllm 0.20.0 sdist qwen3_vl.py / qwen2_5_vl.py, eager), which
bounds the activation from below. Configs: tests/fixtures/bootlogs/configs (each names its public source)."""

from __future__ import annotations

import json
from pathlib import Path

from factories import sized_checkpoint
from onechip.catalog.files import EncoderProfileRule
from onechip.planner import plan_model
from onechip.planner.gpu_memory import (
    _qwen3_vl_video,
    encoder_profile_bytes,
    qwen3_vl_tower_peak_bytes,
    rotary_cache_bytes,
    select_rule,
)
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest

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


def _profile_rule(version: str) -> EncoderProfileRule:
    rules = engine_rules("vllm-gpu").encoder_profile_rules
    return select_rule(rules, version)


QWEN3_VL_30B = "Qwen--Qwen3-VL-30B-A3B-Instruct.json"


def test_qwen3_vl_on_0110_profiles_the_153600_token_video_the_log_prints() -> None:
    # vllm 0.11.0 qwen3_vl.py: 65,536 tokens of max_model_len let the dummy video reach _MAX_FRAMES_PER_VIDEO 24,576
    # frames, video-smart-resized to 32 x 32 (25,165,824 px / 24,576 frames): 12,288 x 2 x 2 patches, 12,288 vision
    # tokens, x 12.5 = 153,600 tokens per item: 'budget of 153600 tokens, and profiled with 1 video items' in
    # tests/fixtures/bootlogs/rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110.log (a check: nothing here is fitted)
    config = _config(QWEN3_VL_30B)
    vision, rule = config["vision_config"], _profile_rule("0.11.0")
    video = _qwen3_vl_video(vision, config["image_processor_config"], config["video_processor_config"], rule, 65536)
    assert video == (49152, 12288, 153600)
    # at 4,096 tokens the frame search stops at its start: 2 frames (one temporal patch) of 3,520^2, 220 x 220
    # patches, 12,100 tokens, 151,250 per item (still above the image's 16,384, so the video is profiled)
    assert _qwen3_vl_video(vision, config["image_processor_config"], config["video_processor_config"], rule, 4096) == (
        48400,
        12100,
        151250,
    )


def test_qwen3_vl_on_0110_holds_the_video_its_padded_outputs_and_the_original() -> None:
    # gpu_model_runner.py 0.11.0 profile_run: the 12,288 x 8,192 output (2,048 x (1 + 3 DeepStack levels)) is
    # copied into zeros of [encoder budget 153,600, 8,192]; the loop variable keeps the original; the dummy batch
    # holds 49,152 patches of 3 x 2 x 16^2 bf16 pixel values
    config = _config(QWEN3_VL_30B)
    kw = {"dtype_bytes": 2, "max_num_batched_tokens": 2048, "max_num_seqs": 256, "max_model_len": 65536}
    got = encoder_profile_bytes(config, profile_rule=_profile_rule("0.11.0"), **kw)
    assert got == (49152 * 1536 + (153600 + 12288) * 8192) * 2
    assert encoder_profile_bytes(config, profile_rule=_profile_rule("0.12.0"), **kw) == got  # padded to the item
    # 0.13.0 on: no 12.5 factor, the 16,384-token image beats the <= 12,288-token video; nothing padded
    image = (65536 * 1536 + 16384 * 8192) * 2
    assert encoder_profile_bytes(config, profile_rule=_profile_rule("0.13.0"), **kw) == image
    assert encoder_profile_bytes(config, **kw) == image


def test_0110_pads_each_output_to_the_encoder_budget() -> None:
    # 0.11.x profile_run: an output shorter than the encoder budget is copied into zeros of [budget, width];
    # Llava-NeXT's 2,928-token item at an 8,192-token budget (the RTX 5080 0.11.0 log: 1 image item)
    config = _config("llava-hf--llava-v1.6-mistral-7b-hf.json")
    config = {**config, "text_config": {**(config.get("text_config") or {}), "hidden_size": 4096}}
    kw = {"dtype_bytes": 2, "max_num_batched_tokens": 8192, "max_num_seqs": 1, "max_model_len": 4096}
    assert (
        encoder_profile_bytes(config, profile_rule=_profile_rule("0.11.0"), **kw)
        == (5 * 3 * 336 * 336 + (8192 + 2928) * 4096) * 2
    )
    # 0.12.0 pads to the item's own most tokens (its embeddings here): nothing added; 0.10.2 neither
    for version in ("0.12.0", "0.10.2"):
        assert (
            encoder_profile_bytes(config, profile_rule=_profile_rule(version), **kw)
            == (5 * 3 * 336 * 336 + 2928 * 4096) * 2
        )


QWEN35_9B = "Qwen--Qwen3.5-9B.json"


def test_qwen35_9b_tower_peak_is_eleven_hidden_rows_over_its_largest_image() -> None:
    # vllm 0.20.0 qwen3_vl.py / qwen2_5_vl.py (engines.json encoder_profile_rules 0.15.0 on): one 16,384-token image
    # (longest_edge 16,777,216 // 32^2) of 65,536 patches; u = 65,536 x 1,152. At proj: x, norm1(x), qkv (3u),
    # the contiguous q/k (2u), the rotated q/k (2u), the flash output (u), proj's output (u) = 11u, above the MLP's
    # 2u + 2 x 65,536 x 4,304; plus pos_embeds (u) and the 65,536 x 3 x 2 x 16^2 pixel values, bf16
    config = _config(QWEN35_9B)
    kw = {"dtype_bytes": 2, "max_num_batched_tokens": 8192, "max_num_seqs": 256, "max_model_len": 4096}
    u = 65536 * 1152
    pixels = 65536 * 1536
    got = qwen3_vl_tower_peak_bytes(config, profile_rule=_profile_rule("0.20.0"), **kw)
    assert got == (pixels + u + 11 * u) * 2  # 1.875 GiB
    # TP 2 splits qkv, the q/k copies and the flash output; x, norm1(x) and proj's output stay whole, and the
    # all-reduce of proj's partial sum makes a second whole output (vllm 0.20.0 parallel_state.py
    # GroupCoordinator.all_reduce, always out of place; pynccl.py all_reduce: torch.empty_like): 3u + 8u / 2 + u
    tp2 = qwen3_vl_tower_peak_bytes(config, profile_rule=_profile_rule("0.20.0"), tensor_parallel_size=2, **kw)
    assert tp2 == (pixels + u + 8 * u) * 2
    # what stays through the text forward is the pixel values and the 16,384 x 4,096 output (no DeepStack)
    assert encoder_profile_bytes(config, profile_rule=_profile_rule("0.20.0"), **kw) == (pixels + 16384 * 4096) * 2


def test_the_tower_peak_is_modelled_only_where_its_code_was_read() -> None:
    # 0.13.0 / 0.14.0 build q, k and v otherwise (engines.json encoder_profile_rules); no rule: not modelled
    config = _config(QWEN35_9B)
    kw = {"dtype_bytes": 2, "max_num_batched_tokens": 8192, "max_num_seqs": 256, "max_model_len": 4096}
    assert qwen3_vl_tower_peak_bytes(config, profile_rule=_profile_rule("0.14.0"), **kw) == 0
    assert qwen3_vl_tower_peak_bytes(config, **kw) == 0
    # a Qwen2.5-VL tower (no num_position_embeddings) is not this tower
    vision = {k: v for k, v in config["vision_config"].items() if k != "num_position_embeddings"}
    assert (
        qwen3_vl_tower_peak_bytes({**config, "vision_config": vision}, profile_rule=_profile_rule("0.20.0"), **kw) == 0
    )


def test_qwen3_vl_tower_peak_holds_its_deepstack_features() -> None:
    # Qwen3-VL-30B-A3B at 0.20.0, TP 4: the 16,384-token image (the video is 12,100 tokens from 0.13.0); the three
    # DeepStack mergers' [16,384, 2,048] outputs are alive by the last blocks
    config = _config(QWEN3_VL_30B)
    kw = {"dtype_bytes": 2, "max_num_batched_tokens": 2048, "max_num_seqs": 256, "max_model_len": 65536}
    u = 65536 * 1152
    got = qwen3_vl_tower_peak_bytes(config, profile_rule=_profile_rule("0.20.0"), tensor_parallel_size=4, **kw)
    assert got == (65536 * 1536 + u + 6 * u + 3 * 16384 * 2048) * 2  # 3u + 8u / 4 + the all-reduce's output u


def test_the_plan_takes_the_tower_peak_where_it_beats_the_text_forward(tmp_path: Path) -> None:
    # profile_run's torch peak is max(the tower's forward, the text forward + sampler + what the encoder keeps):
    # Qwen3.5-9B at vLLM 0.20.0 on one RTX 5090 (the rtx5090-qwen35-9b-tp1 log's deployment) plans the tower's
    # 1.875 GiB; text-only it plans the text terms alone, which are smaller. Eager both times: text-only, a cold
    # compile's embedding copy would bound the peak instead (planner.gpu_memory.cold_compile_bytes)
    path = sized_checkpoint(tmp_path / "m", _config(QWEN35_9B), 18 * GIB)
    fields = {"model": str(path), "chip": "rtx5090", "engine": "vllm-gpu", "engine_version": "0.20.0"}
    fields |= {"max_model_len": 4096, "max_num_batched_tokens": 8192, "max_num_seqs": 256, "enforce_eager": True}
    budgets = {}
    for multimodal in (True, False):
        plan = plan_model(PlanRequest(**fields, multimodal=multimodal))
        assert plan.memory_budget is not None
        budgets[multimodal] = plan.memory_budget.activation_peak_bytes
    assert budgets[True] == (65536 * 1536 + 12 * 65536 * 1152) * 2
    assert budgets[False] + (65536 * 1536 + 16384 * 4096) * 2 < budgets[True]
