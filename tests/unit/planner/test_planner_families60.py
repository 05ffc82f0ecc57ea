"""Model types vLLM serves that the planner refused or read wrong until 2026-12-06, part 3 (issue 27, "any model vLLM
serves"; parts 1 and 2: test_planner_families59.py, test_planner_families59b.py).

Each config is a copy of a published config.json (or of the fields a public source pins from it), its source named
above it. The expected KV bytes per token are worked by hand from the vLLM model file that builds the type's layers and
the KV cache spec it returns (vllm 0.34.0 sdist), file and line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import kv_geometry
from onechip.planner.source import config_from_dict
from onechip.schemas.plan import Plan

_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]


def _plan(tmp_path: Path, config: dict[str, Any], **kwargs: Any) -> Plan:
    """The plan vLLM 0.34.0 on one H100 gets for `config` (bf16 weights, the KV cache in the model dtype)."""
    tmp_path.mkdir(exist_ok=True)
    directory = one_element_checkpoint(tmp_path / "ckpt", config, _NAMES)
    return plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", **kwargs)


# XiaomiMiMo/MiMo-V2-Flash's text fields as two public loaders' tests pin them from the published config.json
# (search-index file ids 70913730321, mimo_v2_flash_hub_config: 48 layers, full attention at layer 0 and where
# (i + 1) % 6 == 0, sliding elsewhere; and 55001597284, the Megatron bridge's copy with attention_chunk_size 128):
# 64 query heads over 4 KV heads of K 192 / V 128 on the full layers, 64 over 8 of 192 / 128 on the sliding ones,
# a 128-token window
_PATTERN = [0 if i == 0 or (i + 1) % 6 == 0 else 1 for i in range(48)]
MIMO_V2_FLASH = {"architectures": ["MiMoV2FlashForCausalLM"], "model_type": "mimo_v2_flash", "vocab_size": 152576,
                 "hidden_size": 4096, "num_hidden_layers": 48, "num_attention_heads": 64, "num_key_value_heads": 4,
                 "head_dim": 192, "v_head_dim": 128, "swa_num_attention_heads": 64, "swa_num_key_value_heads": 8,
                 "swa_head_dim": 192, "swa_v_head_dim": 128, "partial_rotary_factor": 0.334, "rope_theta": 5000000,
                 "swa_rope_theta": 10000, "sliding_window": 128, "sliding_window_size": 128,
                 "attention_chunk_size": 128, "hybrid_layer_pattern": _PATTERN,
                 "moe_layer_freq": [0 if i == 0 else 1 for i in range(48)], "add_swa_attention_sink_bias": True,
                 "add_full_attention_sink_bias": False, "intermediate_size": 16384, "n_routed_experts": 256,
                 "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "routed_scaling_factor": None,
                 "scoring_func": "sigmoid", "topk_method": "noaux_tc", "n_group": 1, "norm_topk_prob": True,
                 "layernorm_epsilon": 1e-05, "attention_value_scale": 0.707, "max_position_embeddings": 262144,
                 "tie_word_embeddings": False, "torch_dtype": "bfloat16"}  # fmt: skip
# mimo_v2.py MiMoV2FlashDecoderLayer (lines 421-456): a layer whose hybrid_layer_pattern entry is 1 builds
# MiMoV2Attention over swa_num_key_value_heads, swa_head_dim, swa_v_head_dim and sliding_window_size; the others over
# num_key_value_heads, head_dim, v_head_dim, no window. Attention(head_size_v=v_head_dim) (lines 358-371) ->
# attention.py get_kv_cache_spec (lines 694-712): SlidingWindowSpec / FullAttentionSpec with head_size_v; a token takes
# KV heads x (head_size + head_size_v) x dtype bytes (kv_cache_interface.py state_content_size_bytes, line 601):
# full 4 x (192 + 128) x 2 = 2,560 B, sliding 8 x 320 x 2 = 5,120 B
MIMO_FULL, MIMO_SLIDING = 4 * (192 + 128) * 2, 8 * (192 + 128) * 2


def test_mimo_v2_flash_is_planned_with_its_per_layer_heads_and_v_width(tmp_path: Path) -> None:
    plan = _plan(tmp_path, MIMO_V2_FLASH)
    layers = [(x.attention_type, x.kv_heads, x.head_dim, x.v_head_dim, x.sliding_window, x.bytes_per_token)
              for x in plan.layers]  # fmt: skip
    assert layers == [("full", 4, 192, 128, None, MIMO_FULL) if p == 0 else ("sliding", 8, 192, 128, 128, MIMO_SLIDING)
                      for p in _PATTERN]  # fmt: skip
    assert plan.kv_bytes_per_token == 9 * MIMO_FULL + 39 * MIMO_SLIDING == 222_720
    # kv_cache_planning.py unify_kv_cache_spec_page_size (lines 437-441): the sliding page at the primary block 64
    # (config/cache.py DEFAULT_BLOCK_SIZE, line 185; attention.py _largest_kernel_block_within keeps it,
    # FlashAttention's MultipleOf(16) dividing 64) is 327,680 B, twice the full one, so the full spec's block doubles
    # to 128; 9 full and 39 sliding layers: group size 9 (39 >= 1.5 x 9), the sliding layers in cdiv(39, 9) = 5
    # groups, 6 groups of 9 tensors of one 327,680 B page
    budget = plan.memory_budget
    assert plan.block_size == 64 and budget is not None
    assert (budget.kv_groups, budget.group_layers, budget.block_bytes) == (6, 9, 9 * 64 * MIMO_SLIDING)
    assert budget.min_block_size == 64


def test_mimo_v2_reads_the_same_fields_and_names_what_it_lacks(tmp_path: Path) -> None:
    # MiMoV2ForCausalLM (model_type 'mimo_v2', MiMo-V2.5) is the same model file (registry.py lines 187-188)
    v25 = {**MIMO_V2_FLASH, "model_type": "mimo_v2", "architectures": ["MiMoV2ForCausalLM"]}
    assert _plan(tmp_path / "v25", v25).kv_bytes_per_token == 222_720
    # a missing swa_v_head_dim is the K width (MiMoV2Attention: v_head_dim None -> head_dim, line 253)
    no_v = config_from_dict({k: v for k, v in MIMO_V2_FLASH.items() if k != "swa_v_head_dim"}, "config.json")
    layers = kv_geometry(no_v.text, kv_dtype_bytes=2, family=no_v.family).layers
    assert {(x.attention_type, x.v_head_dim, x.bytes_per_token) for x in layers} == {
        ("full", 128, MIMO_FULL),
        ("sliding", None, 8 * (192 + 192) * 2),
    }
    # the decoder layer reads config.swa_num_key_value_heads and config.hybrid_layer_pattern[layer_id] with no default
    for field in ("swa_num_key_value_heads", "hybrid_layer_pattern", "sliding_window_size"):
        with pytest.raises(ConfigError, match=f"'{field}'"):
            config_from_dict({k: v for k, v in MIMO_V2_FLASH.items() if k != field}, "config.json")
    with pytest.raises(ConfigError, match="'hybrid_layer_pattern'"):
        config_from_dict({**MIMO_V2_FLASH, "hybrid_layer_pattern": _PATTERN[:40]}, "config.json")


# deepseek-ai/deepseek-moe-16b-base's config.json shape (DeepseekForCausalLM, model_type 'deepseek', remote code;
# the fields tests/unit/planner/test_planner_families59.py reads from it), here without num_key_value_heads
DEEPSEEK_MOE = {"architectures": ["DeepseekForCausalLM"], "model_type": "deepseek",
                "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekConfig"}, "vocab_size": 102400,
                "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
                "num_hidden_layers": 28, "num_attention_heads": 16, "n_routed_experts": 64, "n_shared_experts": 2,
                "num_experts_per_tok": 6, "first_k_dense_replace": 1, "max_position_embeddings": 4096,
                "torch_dtype": "bfloat16"}  # fmt: skip


def test_deepseek_v1_takes_its_remote_class_kv_heads(tmp_path: Path) -> None:
    # DeepSeek-MoE's configuration_deepseek.py DeepseekConfig.__init__ (lines 107-179 as search-index file id
    # 42145297239 quotes it): num_key_value_heads=32 when the file leaves it out, and 'for backward compatibility'
    # num_attention_heads when the file gives null. deepseek_v2.py DeepseekAttention (lines 170-180) caches
    # config.num_key_value_heads heads of hidden_size // heads = 128: with null, 28 x 2 x 16 x 128 x 2 B a token
    nulled = _plan(tmp_path / "null", {**DEEPSEEK_MOE, "num_key_value_heads": None})
    assert {(x.kv_heads, x.head_dim) for x in nulled.layers} == {(16, 128)}
    assert nulled.kv_bytes_per_token == 28 * 2 * 16 * 128 * 2 == 229_376
    # left out: the class's 32, more KV heads than the file's 16 query heads, which the engine cannot build
    # (attention.py: num_heads % num_kv_heads); refused naming the class default the field took
    with pytest.raises(ConfigError, match=r"leaves num_key_value_heads to DeepseekConfig .*'s default 32"):
        _plan(tmp_path / "left", DEEPSEEK_MOE)
    thirty_two = {**DEEPSEEK_MOE, "num_attention_heads": 32, "hidden_size": 4096}
    planned = config_from_dict(thirty_two, "config.json")
    assert planned.defaults_applied.get("num_key_value_heads") == 32


# inclusionAI/Ling-lite's config.json shape (BailingMoeForCausalLM, remote code), here without num_key_value_heads
LING_LITE = {"architectures": ["BailingMoeForCausalLM"], "model_type": "bailing_moe",
             "auto_map": {"AutoConfig": "configuration_bailing_moe.BailingMoeConfig"}, "vocab_size": 126464,
             "hidden_size": 2048, "num_hidden_layers": 28, "num_attention_heads": 16, "intermediate_size": 5632,
             "moe_intermediate_size": 1408, "num_experts": 64, "num_experts_per_tok": 6,
             "max_position_embeddings": 16384, "torch_dtype": "bfloat16"}  # fmt: skip


def test_a_class_default_that_cannot_be_served_names_the_field_the_file_lacks() -> None:
    # BailingMoeConfig's num_key_value_heads defaults to 0 (planner.config.REMOTE_CONFIG_CLASSES, its source named
    # there): the file never said 0, so the line says the field is missing and where the 0 came from
    with pytest.raises(ConfigError) as caught:
        config_from_dict(LING_LITE, "config.json")
    line = str(caught.value)
    assert "'num_key_value_heads' is missing" in line and "BailingMoeConfig" in line and "default 0" in line
    assert "\n" not in line
    # a 0 the file states itself is still its own value
    with pytest.raises(ConfigError, match="'num_key_value_heads' must be a positive integer, got 0"):
        config_from_dict({**LING_LITE, "num_key_value_heads": 0}, "config.json")


def test_the_plan_table_shows_k_and_v_widths(tmp_path: Path) -> None:
    # a layer whose V is narrower than its K (MiMo-V2: 192 / 128) prints both, so the row's bytes per token reads as
    # heads x (K + V) x 2 B, not heads x 2 x 192 x 2 B
    from rich.console import Console

    from onechip.cli.plan_cmd import render

    console = Console(record=True, width=300)
    render(_plan(tmp_path, MIMO_V2_FLASH), console)
    rows = [line for line in console.export_text().splitlines() if "own" in line]
    assert any("full" in r and "192 (V 128)" in r and "2,560" in r for r in rows)
    assert any("sliding" in r and "192 (V 128)" in r and "5,120" in r for r in rows)
