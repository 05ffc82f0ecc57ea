"""ERNIE-4.5-VL (Ernie4_5_VLMoeForConditionalGeneration, model_type ernie4_5_moe_vl), which the planner refused as
unmodelled though vLLM serves it (vllm/model_executor/models/registry.py line 407, 0.34.0 sdist).

No copy of baidu/ERNIE-4.5-VL-28B-A3B-PT's config.json was found; the text fields below are what two public loaders'
tests pin as that checkpoint's (search-index file ids 54802996906, 'The 28B-A3B checkpoint': hidden 2560, 28 layers,
20 query and 4 KV heads, vocab 103,424, moe_num_experts [64, 64], moe_k 6, moe_intermediate_size [1536, 512],
head_dim 128; and 69587620302, the same hidden, layers, heads and vocab). Expected figures are worked by hand from
vllm/model_executor/models/ernie45_vl_moe.py of the 0.34.0 sdist, lines named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factories import one_element_checkpoint
from onechip.planner import plan_model
from onechip.schemas.plan import Plan

ERNIE_VL = {"architectures": ["Ernie4_5_VLMoeForConditionalGeneration"], "model_type": "ernie4_5_moe_vl",
            "hidden_size": 2560, "intermediate_size": 12288, "num_hidden_layers": 28, "num_attention_heads": 20,
            "num_key_value_heads": 4, "vocab_size": 103424, "moe_num_experts": [64, 64], "moe_k": 6,
            "moe_intermediate_size": [1536, 512], "moe_layer_start_index": [1, 1], "moe_layer_end_index": [29, 28],
            "moe_layer_interval": 1, "moe_num_shared_experts": 2}  # fmt: skip
_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.qkv_proj.weight", "lm_head.weight",
          "vision_model.blocks.0.attn.qkv.weight", "model.resampler_model.mlp.weight"]  # fmt: skip


def _plan(tmp_path: Path, **kwargs: Any) -> Plan:
    tmp_path.mkdir(exist_ok=True)
    directory = one_element_checkpoint(tmp_path / "ckpt", ERNIE_VL, _NAMES)
    return plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192,
                      dtype="bfloat16", **kwargs)  # fmt: skip


# Ernie4_5_VLMoeDecoderLayer (lines 399-411) builds Ernie4_5_VLMoeAttention over num_key_value_heads and
# getattr(config, 'head_dim', None), which falls to hidden_size // num_attention_heads = 2560 // 20 = 128
# (line 126); every layer full attention: K and V of 4 heads x 128, bf16
LAYER_BYTES = 4 * 2 * 128 * 2


def test_ernie45_vl_caches_four_kv_heads_of_128_on_every_layer(tmp_path: Path) -> None:
    plan = _plan(tmp_path / "tp1")
    assert {(x.attention_type, x.kv_heads, x.head_dim) for x in plan.layers} == {("full", 4, 128)}
    assert plan.kv_bytes_per_token == 28 * LAYER_BYTES == 57_344
    # at TP 4 each rank holds one KV head (num_kv_heads = max(1, 4 // 4), line 125): bytes over the ranks unchanged
    assert _plan(tmp_path / "tp4", tensor_parallel_size=4).kv_bytes_per_token == 57_344


def test_ernie45_vl_reads_the_text_experts_and_the_wider_intermediate() -> None:
    # Ernie4_5_VLMoeMoE (lines 257-306): a text FusedMoE of moe_num_experts[0] x moe_intermediate_size[0] and a vision
    # one of [1]; both route moe_k tokens
    from onechip.planner.source import config_from_dict

    config = config_from_dict(ERNIE_VL, "config.json")
    assert config.text["num_experts"] == 64 and config.text["moe_intermediate_size"] == 1536
    assert config.text["num_experts_per_tok"] == 6


def test_ernie45_vl_without_its_kv_heads_is_refused_naming_them() -> None:
    import pytest

    from onechip.errors import ConfigError
    from onechip.planner.source import config_from_dict

    lean = {k: v for k, v in ERNIE_VL.items() if k != "num_key_value_heads"}
    with pytest.raises(ConfigError, match="'num_key_value_heads' is missing; ERNIE-4.5-VL's remote"):
        config_from_dict(lean, "config.json")
    # stated null is no figure either: ernie45_vl_moe.py passes config.num_key_value_heads as it is to
    # Ernie4_5_VLMoeAttention, whose 'self.total_num_kv_heads >= tp_size' (lines 116-117, 0.34.0 sdist) fails on None,
    # where the planner read the 20 query heads as KV heads (5 x the cache of the published 4)
    with pytest.raises(ConfigError, match="'num_key_value_heads' is null; ERNIE-4.5-VL's remote"):
        config_from_dict({**ERNIE_VL, "num_key_value_heads": None}, "config.json")


def test_ernie45_vl_tower_holds_its_resampler_and_text_only_drops_both(tmp_path: Path) -> None:
    # vision_model and resampler_model are built inside _mark_tower_model (lines 1404-1418 of ernie45_vl.py), the
    # checkpoint's 'vision_model.' and 'model.resampler_model.' (hf_to_vllm_mapper, lines 1367-1373); the fixture's
    # tensors are one bf16 element each (2 B). vision_config: the checkpoint's tower as a public loader's test pins it
    # (search-index file id 60812045278: depth 32, embed_dim 1280)
    config = {**ERNIE_VL, "vision_config": {"depth": 32, "embed_dim": 1280}}
    directory = one_element_checkpoint(tmp_path / "ckpt", config, _NAMES)
    served = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192,
                        dtype="bfloat16", multimodal=True)  # fmt: skip
    assert served.weights_by_component["vision_tower"] == 2 * 2
    text_only = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192,
                           dtype="bfloat16", multimodal=False)  # fmt: skip
    assert "vision_tower" not in text_only.weights_by_component
    assert text_only.weights_by_component["language_model"] == served.weights_by_component["language_model"] == 2
