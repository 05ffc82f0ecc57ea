"""MiniMax lightning attention (planner.recurrent LIGHTNING_FAMILIES): MiniMax-M1's linear layers hold one state of
heads / TP x head_dim x head_dim in the model dtype, its full layers a KV cache, and the attention block is raised to
hold one state page.

Expected figures are the engine's arithmetic as read in the vllm sdists 0.10.2, 0.20.0 and 0.22.0:
vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.linear_attention_state_shape
((num_heads // tp_size, head_dim, head_dim)), MambaStateDtypeCalculator.linear_attention_state_dtype (mamba_cache_dtype,
'auto': the model dtype), vllm/model_executor/models/minimax_text_01.py (attn_type_list: 0 linear, 1 full) and
vllm/model_executor/models/config.py HybridAttentionMambaModelConfig (16 x cdiv(state, 16 x attention bytes/token)).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.recurrent import layer_roles, state_bytes, state_elements
from onechip.schemas.common import GIB


def _minimax_m1() -> dict[str, Any]:
    """Typed after the published MiniMaxAI/MiniMax-M1-80k config.json (fields abridged; the sizing ones as published):
    80 layers, every 8th full attention (attn_type_list 0 x 7, 1), 64 heads of 128, 8 KV heads."""
    return {
        "architectures": ["MiniMaxM1ForCausalLM"], "model_type": "minimax_m1", "attn_type_list": ([0] * 7 + [1]) * 10,
        "head_dim": 128, "hidden_size": 6144, "intermediate_size": 9216, "max_position_embeddings": 10240000,
        "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "num_local_experts": 32,
        "num_experts_per_tok": 2, "rotary_dim": 64, "rope_theta": 10000000, "sliding_window": None,
        "vocab_size": 200064, "torch_dtype": "bfloat16",
    }  # fmt: skip


# linear_attention_state_shape: (64 / TP) x 128 x 128, no conv state; bf16 model dtype -> 64 x 128 x 128 x 2 =
# 2,097,152 B per layer per request at TP 1, 524,288 at TP 4. --mamba-ssm-cache-dtype is not read for it.
def test_lightning_state_is_heads_by_head_dim_squared_in_the_model_dtype() -> None:
    cfg = _minimax_m1()
    assert state_elements(cfg, "minimax_m1", 1) == (64 * 128 * 128, 0)
    assert state_elements(cfg, "minimax_m1", 4) == (16 * 128 * 128, 0)
    arch = cfg["architectures"]
    assert state_bytes(cfg, "minimax_m1", arch, model_dtype_bytes=2, tensor_parallel_size=1) == 2_097_152
    assert state_bytes(cfg, "minimax_m1", arch, model_dtype_bytes=2, tensor_parallel_size=4,
                       mamba_ssm_cache_dtype="float32") == 524_288  # fmt: skip
    roles = layer_roles(cfg, "minimax_m1")
    assert [i for i, (attention, _) in enumerate(roles) if attention] == list(range(7, 80, 8))
    assert sum(state for _, state in roles) == 70 and not any(a and s for a, s in roles)


def test_lightning_config_errors_are_one_line() -> None:
    cfg = _minimax_m1()
    with pytest.raises(ConfigError, match="num_attention_heads 64 is not divisible by TP 3"):
        state_elements(cfg, "minimax_m1", 3)
    for bad in ({"attn_type_list": [0] * 79}, {"attn_type_list": [0, 2] * 40}, {"attn_type_list": None}):
        with pytest.raises(ConfigError, match="'attn_type_list' must give 0 .linear. or 1") as caught:
            layer_roles({**cfg, **bad}, "minimax_m1")
        assert "\n" not in str(caught.value)
    with pytest.raises(ConfigError, match="'head_dim' is missing"):  # the state shape reads hf_config.head_dim
        state_elements({k: v for k, v in cfg.items() if k != "head_dim"}, "minimax_m1", 1)


# TP 4, bf16 KV: attention 8 / 4 KV heads x 128 x 2 (K, V) x 2 B = 1,024 B/token; block 16 x cdiv(524,288, 16 x
# 1,024) = 512 tokens, page 512 x 1,024 = 524,288 B (the state exactly). 10 full + 70 linear layers: group size 10,
# 8 groups; 40 GiB / (524,288 x 10) = 8,192 blocks -> the token line 8,192 // 8 x 512 = 524,288. A 131,072-token
# request: cdiv(131,072, 512) = 256 attention pages + 7 state pages (0.10.2, prefix caching off) -> 8,192 / 263; from
# 0.20.0 prefix caching is on by default and 'align' mode keeps 2 pages per state group -> 8,192 / 270.
def test_minimax_m1_plan_raises_the_block_to_one_state_page(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _minimax_m1(), 50 * GIB)
    for version, pages in (("0.10.2", 263), ("0.20.0", 270)):
        plan = plan_model(
            str(path), "h200", "vllm-gpu", engine_version=version, max_model_len=131072, tensor_parallel_size=4,
            max_num_seqs=8, kv_cache_memory_bytes=40 * GIB, multimodal=False,
        )  # fmt: skip
        assert plan.memory_budget is not None and plan.memory_budget.min_block_size == 512
        assert plan.kv_tokens_logged == 524_288
        assert plan.max_concurrency == pytest.approx(8192 / pages)
    with pytest.raises(ConfigError, match="no longer serves MiniMaxM1ForCausalLM: last in 0.23.0"):
        plan_model(str(path), "h200", "vllm-gpu", engine_version="0.24.0", max_model_len=8192, tensor_parallel_size=4,
                   multimodal=False)  # fmt: skip


def test_minimax_text_01_is_planned_as_minimax_m1(tmp_path: Path) -> None:
    # MiniMaxAI/MiniMax-Text-01's config.json (model_type 'minimax_text_01', MiniMaxText01ForCausalLM, the same
    # attn_type_list / head_dim / KV heads as M1's) is built by the class M1's is (vllm/model_executor/models/
    # registry.py, 0.22.0 sdist: both minimax_text_01.MiniMaxText01ForCausalLM); it was refused as an unmodelled type
    m1 = sized_checkpoint(tmp_path / "m1", _minimax_m1(), 50 * GIB)
    text01 = {**_minimax_m1(), "architectures": ["MiniMaxText01ForCausalLM"], "model_type": "minimax_text_01"}
    path = sized_checkpoint(tmp_path / "t01", text01, 50 * GIB)
    fields = {"engine_version": "0.20.0", "max_model_len": 131072, "tensor_parallel_size": 4, "max_num_seqs": 8,
              "kv_cache_memory_bytes": 40 * GIB, "multimodal": False}  # fmt: skip
    plan, expected = (
        plan_model(str(path), "h200", "vllm-gpu", **fields),
        plan_model(str(m1), "h200", "vllm-gpu", **fields),
    )
    assert plan.kv_tokens_logged == expected.kv_tokens_logged == 524_288
    assert plan.max_concurrency == pytest.approx(8192 / 270)
    with pytest.raises(ConfigError, match="no longer serves MiniMaxText01ForCausalLM: last in 0.23.0"):
        plan_model(str(path), "h200", "vllm-gpu", **{**fields, "engine_version": "0.24.0", "max_model_len": 8192})
