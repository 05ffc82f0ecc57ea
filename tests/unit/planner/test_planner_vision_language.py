"""Vision-language wrappers as vLLM serves them (issue 27): the text model inside `text_config` gives the KV
geometry, the vision tower's weights count when multimodal is on, the encoder's profiling tensors add to the
activation peak, and an architecture vLLM dropped is refused for the versions that dropped it.

Configs are the public copies in tests/fixtures/bootlogs/configs (each file's `_source` names where it was read);
figures are the boot logs' own lines (tests/fixtures/bootlogs/corpus.json, the entries named per test).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.config import read_config
from onechip.planner.geometry import kv_geometry
from onechip.planner.gpu_memory import deepstack_buffer_bytes, encoder_profile_bytes
from onechip.planner.weights import LANGUAGE_MODEL, LM_HEAD, VISION_TOWER, component_of
from onechip.schemas.common import GIB
from onechip.vllm.flags import plan_flags

LLAVA = "h100-llava-v16-mistral-7b-len4096-v0102"
LLAVA_5080 = "rtx5080-llava-v16-mistral-7b-len4096-refused-v0110"
QWEN3_VL_MOE = "rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110"
QWEN3_VL_ASCEND = "ascend-qwen3-vl-8b-len16384-v0180"
QWEN3_VL_GPU = "gpu-qwen3-vl-8b-len4096-eager-dev15312"


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    return json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))


def _plan(tmp_path: Path, name: str, chip: str, version: str, **kw: Any) -> Any:
    """Plan a corpus entry with the log's own loaded weights per GPU x TP, served multimodal (vLLM's default)."""
    entry = corpus_entry(name)
    args = entry["engine_args"]
    tp = args["tensor_parallel_size"]
    weights = int(entry["logged"]["model_weights_gib"] * GIB) * tp
    path = sized_checkpoint(tmp_path / "m", _config(entry), weights)
    for ours, theirs in (("max_num_batched_tokens",) * 2, ("block_size",) * 2, ("dtype",) * 2, ("max_num_seqs",) * 2):
        if args.get(theirs) is not None:
            kw.setdefault(ours, args[theirs])
    plan = plan_model(
        str(path), chip, "vllm-gpu", max_model_len=args["max_model_len"], tensor_parallel_size=tp,
        engine_version=version, multimodal=True, **kw,
    )  # fmt: skip
    return entry, plan


@pytest.mark.parametrize(
    ("config_file", "tp", "bytes_per_token_per_gpu"),
    [
        # Qwen3-VL-8B text_config: 36 layers x 8 KV heads x head_dim 128 x K,V x bf16
        ("Qwen--Qwen3-VL-8B-Instruct.json", 1, 36 * 8 * 128 * 2 * 2),
        # Qwen3-VL-30B-A3B text_config: 48 layers x 4 KV heads x 128; one KV head per GPU at TP 4
        ("Qwen--Qwen3-VL-30B-A3B-Instruct.json", 4, 48 * 1 * 128 * 2 * 2),
        # llava-v1.6-mistral: Mistral-7B's 32 layers (a class default) x 8 KV heads x 4,096 / 32 heads
        ("llava-hf--llava-v1.6-mistral-7b-hf.json", 1, 32 * 8 * 128 * 2 * 2),
        # Qwen2.5-VL-7B, text fields at the top level, no head_dim: 28 layers x 4 KV heads x 3,584 / 28 heads
        # (vllm qwen2_5_vl.py builds Qwen2Model, which divides), sliding window off (use_sliding_window false)
        ("Qwen--Qwen2.5-VL-7B-Instruct.json", 1, 28 * 4 * 128 * 2 * 2),
    ],
)
def test_the_text_config_of_a_published_wrapper_gives_the_kv_geometry(
    config_file: str, tp: int, bytes_per_token_per_gpu: int
) -> None:
    config = read_config(json.loads((BOOTLOGS / "configs" / config_file).read_text(encoding="utf-8")), config_file)
    geometry = kv_geometry(config.text, kv_dtype_bytes=2, tensor_parallel_size=tp, family=config.family)
    assert geometry.kv_bytes_per_token // tp == bytes_per_token_per_gpu


def test_llava_next_text_config_without_layers_is_planned_with_mistral_defaults_and_says_so(tmp_path: Path) -> None:
    # the Hub config.json's text_config states no num_hidden_layers, hidden_size or num_attention_heads;
    # transformers 5.19 MistralConfig gives 32 / 4,096 / 32 (catalog/config_defaults.json), as vLLM loads it, and
    # tie_word_embeddings false, which the file leaves out too
    config = read_config(_config(corpus_entry(LLAVA)), "llava-v1.6-mistral-7b-hf")
    assert config.defaults_applied == {"hidden_size": 4096, "num_attention_heads": 32, "num_hidden_layers": 32,
                                       "tie_word_embeddings": False}  # fmt: skip
    _, plan = _plan(tmp_path, LLAVA, "h100", "0.10.2", utilization=0.9)
    (warning,) = [w for w in plan.warnings if w.code == "config-class-defaults"]
    assert "num_hidden_layers=32" in warning.message and "MistralConfig" in warning.message


@pytest.mark.parametrize(
    ("name", "chip", "version"),
    [
        (LLAVA, "h100", "0.10.2"),
        (QWEN3_VL_MOE, "rtx3090", "0.11.0"),
        # Ascend NPU: not a catalog card; with an explicit pool only the block size (128, logged) and geometry count
        (QWEN3_VL_ASCEND, "h100", "0.18.0"),
        # a source build of 2026-04 main on an unnamed card: planned as the release of that month
        (QWEN3_VL_GPU, "h100", "0.19.0"),
    ],
)
def test_kv_tokens_given_the_logged_pool_are_within_one_percent(
    tmp_path: Path, name: str, chip: str, version: str
) -> None:
    entry = corpus_entry(name)
    pool = int(entry["logged"]["available_kv_cache_gib"] * GIB)  # printed to 0.01 GiB
    _, plan = _plan(tmp_path, name, chip, version, kv_cache_memory_bytes=pool)
    logged = entry["logged"]["kv_cache_tokens"]
    assert abs(plan.kv_tokens_logged - logged) / logged < 0.01


def test_llava_on_h100_whole_budget_within_five_percent(tmp_path: Path) -> None:
    # the 0.10.2 log states every input: card (79.19 GiB), utilization 0.9, max_model_len 4,096, 16,384 batched
    # tokens, fp16; its 'GPU KV cache size: 451,744 tokens' comes after 14.08 + 1.97 + 0.07 GiB of overhead
    entry, plan = _plan(tmp_path, LLAVA, "h100", "0.10.2", utilization=0.9)
    logged = entry["logged"]["kv_cache_tokens"]
    assert plan.fits
    assert abs(plan.kv_tokens_logged - logged) / logged < 0.05


def test_llava_on_a_16_gb_card_at_085_is_refused_as_the_engine_refused_it(tmp_path: Path) -> None:
    # vLLM 0.11.0 on the RTX 5080: 'Available KV cache memory: -1.81 GiB', 'No available memory for the cache blocks'
    _, plan = _plan(tmp_path, LLAVA_5080, "RTX 5080", "0.11.0", utilization=0.85)
    assert not plan.fits
    assert plan.memory_budget is not None and plan.memory_budget.kv_cache_bytes < 0


def test_llava_next_encoder_profile_holds_the_items_the_logs_name() -> None:
    # vllm llava_next.py: the 672 x 672 pinpoint has the most features, 576 + 2,304 + 48 = 2,928 tokens and
    # 1 + 4 tiles of 3 x 336^2 pixel values; the logs: 5 items at a 16,384-token budget (0.10.2, 1,024 sequences),
    # 1 item at 8,192 with max_num_seqs 1 (0.11.0: 1 x max(1, 4,096 // 2,928))
    read = read_config(_config(corpus_entry(LLAVA)), "llava")
    config = {**read.data, "text_config": read.text}  # hidden_size 4,096: MistralConfig's default, as planned
    one_item = (5 * 3 * 336 * 336 + 2928 * 4096) * 2
    kw = {"dtype_bytes": 2, "max_model_len": 4096}
    assert encoder_profile_bytes(config, max_num_batched_tokens=16384, max_num_seqs=1024, **kw) == 5 * one_item
    assert encoder_profile_bytes(config, max_num_batched_tokens=8192, max_num_seqs=1, **kw) == one_item


def test_qwen_vl_encoder_profile_needs_the_image_processor_and_counts_deepstack() -> None:
    config = _config(corpus_entry(QWEN3_VL_ASCEND))
    assert encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=16384) == 0  # no processor config
    # Qwen3-VL's preprocessor_config.json size.longest_edge 16,777,216 px: 16,777,216 // 32^2 = 16,384 tokens, one
    # item at the 16,384-token budget ('budget of 16384 tokens, and profiled with 1 image items', the 0.18.0 log);
    # 65,536 patches of 3 x 2 x 16^2 pixel values and 16,384 x 4,096 x (1 + 3 DeepStack levels) outputs, bf16
    config = {**config, "image_processor_config": {"size": {"longest_edge": 16777216}}}
    expected = (65536 * 1536 + 16384 * 4096 * 4) * 2
    assert encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=16384) == expected


@pytest.mark.parametrize(
    ("name", "component"),
    [
        ("model.visual.blocks.0.attn.qkv.weight", VISION_TOWER),  # Qwen2.5-VL (transformers >= 4.52) / Qwen3-VL
        ("visual.merger.mlp.0.weight", VISION_TOWER),  # Qwen2-VL / Qwen2.5-VL as first published
        ("model.language_model.layers.0.self_attn.q_proj.weight", LANGUAGE_MODEL),
        ("image_newline", VISION_TOWER),  # Llava-NeXT's newline parameter
        ("vision_tower.vision_model.encoder.layers.0.mlp.fc1.weight", VISION_TOWER),
        ("language_model.lm_head.weight", LM_HEAD),
        ("vision_model.transformer.layers.0.mlp.fc1.weight", VISION_TOWER),  # Mllama
    ],
)
def test_vision_language_tensor_names_fall_in_their_component(name: str, component: str) -> None:
    assert component_of(name) == component


def _mllama() -> dict[str, Any]:
    # transformers 5.19 MllamaTextConfig's defaults are Llama-3.2-11B-Vision's text model: 40 layers (8 of them
    # cross-attention), 32 heads, 8 KV heads, hidden 4,096
    return {"architectures": ["MllamaForConditionalGeneration"], "model_type": "mllama",
            "text_config": {"model_type": "mllama_text_model"}}  # fmt: skip


def test_mllama_is_refused_on_versions_that_dropped_it_in_one_line(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _mllama(), 2)
    # the 0.10.2 and 0.11.0 sdists' registry.py (_VLLM_MODELS names it in 0.10.2, not in 0.11.0, whose
    # _PREVIOUSLY_SUPPORTED_MODELS does: catalog/vllm_architectures.json)
    with pytest.raises(
        ConfigError, match="vLLM 0.19.0 no longer serves MllamaForConditionalGeneration: last in 0.10.2 "
    ) as caught:
        plan_model(str(path), "h100", "vllm-gpu", max_model_len=8192, engine_version="0.19.0")
    assert "\n" not in str(caught.value) and str(caught.value).endswith("plan --engine-version 0.10.2")
    with pytest.raises(ConfigError, match=r"the newest vLLM \(0.32.0\) no longer serves"):
        plan_model(str(path), "h100", "vllm-gpu", max_model_len=8192)


def test_mllama_on_v0_sizes_blocks_over_every_layer_cross_attention_included() -> None:
    # the V0 log of vllm PR #12126 (corpus h100-llama32-11b-vision-len65536-eager-v0): 14.65 GiB of KV in 6,001
    # blocks of 16, i.e. 40 layers x 8 KV heads x 128 x K,V x bf16 per token (self- and cross-attention layers alike)
    config = read_config(_mllama(), "Llama-3.2-11B-Vision")
    per_token = kv_geometry(config.text, kv_dtype_bytes=2, family=config.family).kv_bytes_per_token
    assert per_token == 40 * 8 * 128 * 2 * 2
    assert (
        round(14.65 * GIB / (16 * per_token))
        == corpus_entry("h100-llama32-11b-vision-len65536-eager-v0")["logged"]["num_gpu_blocks"]
    )


def test_an_explicit_null_head_dim_in_a_qwen3_vl_text_config_is_refused_in_one_line() -> None:
    # Qwen3VLTextConfig defaults head_dim to 128, but a key present with null stays null (transformers keeps it)
    config = _config(corpus_entry(QWEN3_VL_ASCEND))
    config["text_config"] = {**config["text_config"], "head_dim": None}
    with pytest.raises(ConfigError, match="field 'head_dim' is missing") as caught:
        read_config(config, "Qwen3-VL-8B-Instruct")
    assert "\n" not in str(caught.value)


def _checkpoint(directory: Path, config: dict[str, Any], tensors: dict[str, int]) -> Path:
    """config.json and a header-only safetensors file: BF16 tensors of the given element counts."""
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    header, offset = {}, 0
    for name, numel in tensors.items():
        header[name] = {"dtype": "BF16", "shape": [numel], "data_offsets": [offset, offset + 2 * numel]}
        offset += 2 * numel
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw)
    return directory


@pytest.mark.parametrize(
    ("version", "architecture", "tower_counted"),
    [
        ("0.10.0", "LlavaNextForConditionalGeneration", True),
        ("0.10.1", "LlavaNextForConditionalGeneration", True),
        ("0.14.0", "LlavaNextForConditionalGeneration", True),
        ("0.10.1", "LlavaForConditionalGeneration", False),
        ("0.19.0", "LlavaNextForConditionalGeneration", False),
    ],
)
def test_text_only_drops_the_tower_from_the_release_that_skips_loading_it(
    tmp_path: Path, version: str, architecture: str, tower_counted: bool
) -> None:
    # vllm PR #22299 (first in v0.10.1): --limit-mm-per-prompt 0 for every modality builds no encoder, in the classes
    # that test the limit in their own __init__ (llava.py's LlavaForConditionalGeneration does; llava_next.py's
    # LlavaNextForConditionalGeneration calls init_vision_tower_for_llava unconditionally in the 0.10.1 and 0.14.0
    # sdists); from 0.16.0 every class, through interfaces.py _mark_tower_model. Before 0.10.1 every tower was loaded
    tower, text = 300_000_000, 7_000_000_000
    path = _checkpoint(
        tmp_path / "llava",
        {**_config(corpus_entry(LLAVA)), "architectures": [architecture]},
        {"vision_tower.vision_model.embeddings.patch_embedding.weight": tower,
         "language_model.model.all_weights": text},
    )  # fmt: skip
    plan = plan_model(str(path), "h100", "vllm-gpu", max_model_len=4096, engine_version=version, multimodal=False)
    assert plan.weights_bytes == 2 * (text + tower * tower_counted)
    assert ("the plan counts them" in plan.serve.multimodal.reason) is tower_counted


def test_qwen3_vl_deepstack_buffers_follow_the_batched_tokens_as_the_two_logs_load() -> None:
    # vllm qwen3_vl.py: 3 DeepStack levels x [max_num_batched_tokens, 4,096] in bf16, counted in the loaded figure;
    # Qwen3-VL-8B loads 16.957 GiB at 16,384 batched tokens (vLLM-Ascend 0.18.0) and 16.78 GiB at 8,192 (2026-04
    # main): both printed to 0.01 GiB, so their difference is known to about +-0.01 GiB
    read = read_config(_config(corpus_entry(QWEN3_VL_ASCEND)), "Qwen3-VL-8B")
    config = {**read.data, "text_config": read.text}
    at_16k, at_8k = (deepstack_buffer_bytes(config, dtype_bytes=2, max_num_batched_tokens=n) for n in (16384, 8192))
    logged = (
        corpus_entry(QWEN3_VL_ASCEND)["logged"]["model_weights_gib"]
        - corpus_entry(QWEN3_VL_GPU)["logged"]["model_weights_gib"]
    )
    assert at_16k == 3 * 16384 * 4096 * 2
    assert abs((at_16k - at_8k) / GIB - logged) < 0.015
    no_deepstack = {
        **config,
        "vision_config": {k: v for k, v in config["vision_config"].items() if k != "deepstack_visual_indexes"},
    }
    assert deepstack_buffer_bytes(no_deepstack, dtype_bytes=2, max_num_batched_tokens=8192) == 0


@pytest.mark.parametrize(
    ("published", "stated", "log", "defaulted"),
    [
        # 4b: no head_dim, no head counts; 12b: no head_dim (configs/*.published.json name their public copies)
        ("google--gemma-3-4b-it.published.json", "google--gemma-3-4b-it.json", "h100-gemma3-4b-v0190",
         {"head_dim": 256, "num_attention_heads": 8, "num_key_value_heads": 4}),
        ("google--gemma-3-12b-it.published.json", "google--gemma-3-12b-it.json", "h100-gemma3-12b-v0190",
         {"head_dim": 256}),
    ],
)  # fmt: skip
def test_gemma3_published_configs_plan_the_logged_pool_as_their_stated_copies(
    tmp_path: Path, published: str, stated: str, log: str, defaulted: dict[str, int]
) -> None:
    # Gemma3TextConfig (transformers 5.19) fills what the Hub files leave out; the MaxText copies state every field.
    # Given the 0.19.0 log's pool ('Available KV cache memory'), the token line comes out within 1% either way.
    configs = {
        name: json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8")) for name in (published, stated)
    }
    read = read_config(configs[published], published)
    assert {k: read.defaults_applied[k] for k in defaulted} == defaulted
    entry = corpus_entry(log)
    pool = int(entry["logged"]["available_kv_cache_gib"] * GIB)
    tokens = []
    for name, config in configs.items():
        path = sized_checkpoint(tmp_path / name, config, 2)
        plan = plan_model(str(path), "h100", "vllm-gpu", max_model_len=8192, engine_version="0.19.0",
                          kv_cache_memory_bytes=pool)  # fmt: skip
        tokens.append(plan.kv_tokens_logged)
    assert tokens[0] == tokens[1]
    assert abs(tokens[0] - entry["logged"]["kv_cache_tokens"]) / entry["logged"]["kv_cache_tokens"] < 0.01


def test_a_tower_whose_profiling_cannot_be_sized_is_said_in_the_plan(tmp_path: Path) -> None:
    # Qwen3-VL-8B's config.json has no image processor: its encoder profiling term is 0 and the plan says so;
    # Llava-NeXT's pinpoints size it, so no such warning there
    _, qwen = _plan(tmp_path / "q", QWEN3_VL_GPU, "h100", "0.19.0", utilization=0.85)
    _, llava = _plan(tmp_path / "l", LLAVA, "h100", "0.10.2", utilization=0.9)
    assert "encoder-profile-not-modelled" in {w.code for w in qwen.warnings}
    assert "encoder-profile-not-modelled" not in {w.code for w in llava.warnings}


def test_qwen3_vl_moe_on_0110_plans_the_video_item_0130_the_image(tmp_path: Path) -> None:
    # engines.json encoder_profile_rules: 0.11.0 profiles Qwen3-VL's 153,600-token video (the log: 'budget of 153600
    # tokens, and profiled with 1 video items') and pads its 12,288 x 8,192 output to the budget; 0.13.0 (the same
    # 0.11.0 - 0.15.x memory rule otherwise) profiles the 16,384-token image, unpadded
    # the log's install has no FlashInfer (corpus notes), so both releases warm the sort-based sampler up
    _, video = _plan(tmp_path / "a", QWEN3_VL_MOE, "rtx3090", "0.11.0", flashinfer=False)
    _, image = _plan(tmp_path / "b", QWEN3_VL_MOE, "rtx3090", "0.13.0", flashinfer=False)
    assert video.memory_budget is not None and image.memory_budget is not None
    held_video = (49152 * 1536 + (153600 + 12288) * 8192) * 2
    held_image = (65536 * 1536 + 16384 * 8192) * 2
    got = video.memory_budget.activation_peak_bytes - image.memory_budget.activation_peak_bytes
    assert got == held_video - held_image


def _llava(tmp_path: Path, version: str, **kw: Any) -> Any:
    tower, text = 300_000_000, 7_000_000_000
    path = _checkpoint(
        tmp_path / f"llava-{len(list(tmp_path.iterdir()))}",
        _config(corpus_entry(LLAVA)),
        {"vision_tower.vision_model.embeddings.patch_embedding.weight": tower,
         "language_model.model.all_weights": text},
    )  # fmt: skip
    return plan_model(str(path), "h100", "vllm-gpu", max_model_len=4096, engine_version=version, **kw)


def test_limit_zero_for_every_modality_loses_the_tower_and_the_encoder_profiling(tmp_path: Path) -> None:
    # vLLM 0.19.0: interfaces.py _mark_tower_model builds no vision tower when image (Llava's one modality) is 0, and
    # encoder_budget.py MultiModalBudget profiles only modalities above 0, so the dummy images go too; the plan is then
    # the --text-only one. The profiled batch with images on: 8,192 // 2,928 = 2 items of 5 x 3 x 336^2 pixel values
    # and 2,928 x 4,096 outputs, bf16 (test_llava_next_encoder_profile_holds_the_items_the_logs_name)
    served = _llava(tmp_path, "0.19.0")
    off = _llava(tmp_path, "0.19.0", limit_mm_per_prompt={"image": 0})
    text_only = _llava(tmp_path, "0.19.0", multimodal=False)
    assert served.memory_budget is not None and off.memory_budget is not None
    assert served.weights_bytes - off.weights_bytes == 2 * 300_000_000
    one_item = (5 * 3 * 336 * 336 + 2928 * 4096) * 2
    assert served.memory_budget.activation_peak_bytes - off.memory_budget.activation_peak_bytes == 2 * one_item
    assert off.kv_tokens == text_only.kv_tokens
    assert ("--limit-mm-per-prompt", '{"image":0}') in {(f.flag, f.value) for f in plan_flags(off)}


def test_limit_zero_before_the_skip_release_keeps_the_tower_but_not_the_profiling(tmp_path: Path) -> None:
    # vLLM 0.10.0 loads the tower whatever the limits (PR #22299 is first in 0.10.1), but its V1 profile_run already
    # profiles only modalities above 0 (vllm/multimodal/registry.py get_max_tokens_per_item_by_nonzero_modality, 0.8.5
    # - 0.10.0 sdists)
    served = _llava(tmp_path, "0.10.0")
    off = _llava(tmp_path, "0.10.0", limit_mm_per_prompt={"image": 0})
    assert served.weights_bytes == off.weights_bytes
    assert served.memory_budget is not None and off.memory_budget is not None
    assert off.memory_budget.activation_peak_bytes < served.memory_budget.activation_peak_bytes


def test_the_image_count_caps_the_profiled_items_as_the_qwen3_vl_log_prints() -> None:
    # gpu-qwen3-vl-8b-len4096-eager-dev15312: max_pixels 1,003,520 -> 980 tokens an image; 'Encoder cache will be
    # initialized with a budget of 8192 tokens, and profiled with 5 image items' = min(8,192 // 980,
    # max_num_seqs 5 x max(1, min(limit 1, 4,096 // 980))) (vllm/multimodal/encoder_budget.py _get_max_items, 0.19.0)
    entry = corpus_entry(QWEN3_VL_GPU)
    args, logged = entry["engine_args"], entry["logged"]
    config = {**_config(entry), "image_processor_config": {"max_pixels": args["mm_processor_kwargs"]["max_pixels"]}}
    kw = {"dtype_bytes": 2, "max_num_batched_tokens": 8192, "max_num_seqs": 5, "max_model_len": 4096}
    one_item = (980 * 4 * 1536 + 980 * 4096 * 4) * 2  # 980 x 2^2 patches of 3 x 2 x 16^2, DeepStack outputs
    limited = encoder_profile_bytes(
        config, mm_counts={"image": args["limit_mm_per_prompt"]["image"], "video": 999}, **kw
    )
    assert limited == logged["encoder_profile_items"] * one_item
    assert encoder_profile_bytes(config, **kw) == 8 * one_item  # vLLM's default of 999 images a prompt
    # the video at 0 changes nothing from 0.13.0 on (the image's 980 tokens beat the video's there); the image at 0
    # with the video on leaves a video this rule does not size
    assert encoder_profile_bytes(config, mm_counts={"image": 1, "video": 0}, **kw) == limited
    assert encoder_profile_bytes(config, mm_counts={"image": 0, "video": 999}, **kw) == 0
