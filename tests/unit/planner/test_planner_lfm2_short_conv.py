"""LiquidAI LFM2 (model_type 'lfm2', Lfm2ForCausalLM): short-convolution layers beside full-attention layers.

Expected figures are derived here from the vLLM sdists (0.10.2 - 0.34.0 read, the same in each):
vllm/model_executor/models/lfm2.py Lfm2ForCausalLM.get_mamba_state_shape_from_config ->
vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.short_conv_state_shape (one conv state of
conv_dim / TP x (conv_L_cache - 1)) and short_conv_state_dtype (mamba_cache_dtype; 'auto': the model dtype);
Lfm2Attention (head_dim hidden_size // num_attention_heads over num_key_value_heads); a layer is attention when its
layer_types entry is 'full_attention' (transformers Lfm2Config.__post_init__ derives layer_types from
full_attn_idxs). The hybrid block and groups are planner.kv_groups' (tests/unit/planner/test_planner_hybrid_*).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import cdiv
from onechip.planner.recurrent import layer_roles, state_bytes
from onechip.schemas.common import GIB

_TYPES = ["conv", "conv", "full_attention"] * 3 + ["conv", "full_attention"] * 3 + ["conv"]


def _lfm2() -> dict[str, Any]:
    """Typed after the published LiquidAI/LFM2-1.2B config.json (by hand, fields abridged; the sizing ones as
    published): 16 layers, attention at 2, 5, 8, 10, 12, 14 (0-based), 32 heads of 2,048 / 32 = 64 over 8 KV heads,
    conv_dim 2,048, conv_L_cache 3."""
    return {
        "architectures": ["Lfm2ForCausalLM"], "model_type": "lfm2", "torch_dtype": "bfloat16", "hidden_size": 2048,
        "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8, "conv_dim": 2048,
        "conv_L_cache": 3, "layer_types": _TYPES, "max_position_embeddings": 128000, "vocab_size": 65536,
        "block_ff_dim": 12288, "tie_embedding": True, "rope_theta": 1000000.0,
    }  # fmt: skip


# conv 2,048 / TP x (3 - 1) elements in the model dtype (bf16, 2 B): 8,192 B on one GPU, 4,096 B each at TP 2; no
# SSM state, whatever --mamba-ssm-cache-dtype says. full_attn_idxs (older files) gives the same layer roles.
def test_lfm2_state_is_one_short_conv_in_the_model_dtype() -> None:
    text = _lfm2()
    arch = ["Lfm2ForCausalLM"]
    assert state_bytes(text, "lfm2", arch, model_dtype_bytes=2, tensor_parallel_size=1) == 2048 * 2 * 2 == 8192
    assert state_bytes(text, "lfm2", arch, model_dtype_bytes=2, tensor_parallel_size=2,
                       mamba_ssm_cache_dtype="float32") == 1024 * 2 * 2  # fmt: skip
    roles = layer_roles(text, "lfm2")
    assert sum(a for a, _ in roles) == 6 and sum(s for _, s in roles) == 10 and not any(a and s for a, s in roles)
    older = {k: v for k, v in text.items() if k != "layer_types"} | {"full_attn_idxs": [2, 5, 8, 10, 12, 14]}
    assert layer_roles(older, "lfm2") == roles


# tests/fixtures/bootlogs/gpu16g-sm90-lfm25-1.2b-int4-kvfp8-len32768-util095-v0260-container-oom.log (LFM2.5-1.2B,
# whose config the corpus lacks; the geometry above is LFM2-1.2B's, which the log's lines bear out: 'Padding mamba
# page size by 100.00%', 'Add 2 padding layers, may waste at most 20.00%'). vLLM 0.26.0, float16, fp8 KV: attention
# 2 x 8 x 64 x 1 B = 1,024 B/token; state 8,192 B: block 16 x cdiv(8,192, 16 x 1,024) = 16, page 16,384 B (the state
# padded by 100%). 6 attention and 10 conv layers: 10 >= 1.5 x 6, so groups of 6 -- 1 attention and cdiv(10, 6) = 2
# state groups (12 slots, 2 padding layers). Prefix caching on ('align', 2 pages per state): a 32,768-token request
# takes 2,048 + 2 x 2 = 2,052 pages; the logged 13.33 GiB holds 13.33 GiB // 16,384 // 6 blocks. Logged: 2,324,244
# tokens, 70.93x; 13.33 is rounded to 2 decimals (13.325 GiB gives 2,324,164 and 70.93): within 0.05%.
def test_lfm2_plan_given_the_logged_pool(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _lfm2(), 2 * GIB)
    plan = plan_model(str(path), "h100", "vllm-gpu", engine_version="0.26.0", dtype="float16", max_model_len=32768,
                      kv_cache_dtype="fp8", block_size=16, max_num_batched_tokens=1024, enable_prefix_caching=True,
                      kv_cache_memory_bytes=int(13.33 * GIB), multimodal=False)  # fmt: skip
    blocks = int(13.33 * GIB) // 16384 // 6
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == 16
    assert plan.memory_budget.kv_groups == 3 and plan.memory_budget.blocks_per_request == 2052
    assert plan.kv_tokens_logged == int(blocks / 2052 * 32768)
    assert plan.kv_tokens_logged == pytest.approx(2_324_244, rel=5e-4) and abs(plan.max_concurrency - 70.93) < 0.05


# vLLM 0.34.0 (default block 64): ShortConv declares no prefill checkpoint, so 'align' mode adds no alignment and no
# page: bf16 KV 2 x 8 x 64 x 2 B = 2,048 B/token, block 64 x cdiv(8,192, 64 x 2,048) = 64, 2 pages per state.
def test_lfm2_align_mode_on_0_34_has_no_checkpoint_pages(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _lfm2(), 2 * GIB)
    plan = plan_model(str(path), "b200", "vllm-gpu", engine_version="0.34.0", max_model_len=32768,
                      kv_cache_memory_bytes=8 * GIB, multimodal=False)  # fmt: skip
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == 64
    assert plan.memory_budget.blocks_per_request == cdiv(32768, 64) + 2 * 2
    assert plan.max_concurrency == pytest.approx(8 * GIB // (64 * 2048) // 6 / (512 + 4))


def test_lfm2_bad_layer_types_is_one_line(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", {**_lfm2(), "layer_types": ["conv"] * 15 + ["mamba"]}, 2 * GIB)
    with pytest.raises(ConfigError, match="'layer_types' must give 'full_attention' or 'conv'") as caught:
        plan_model(str(path), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192, multimodal=False)
    assert "\n" not in str(caught.value)


# vllm-cpu resets --mamba-ssm-cache-dtype to float32 on an AVX-512 BF16 host (vllm/platforms/cpu.py, 0.34.0), but
# LFM2's one state is in mamba_cache_dtype: the plan says nothing of an SSM state it does not have.
def test_lfm2_on_an_avx512_bf16_host_has_no_ssm_dtype_warning(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _lfm2(), 2 * GIB)
    plan = plan_model(str(path), "cpu-amx", "vllm-cpu", max_model_len=8192, multimodal=False)
    assert "host-ssm-dtype" not in {w.code for w in plan.warnings}


# LFM2-MoE (model_type 'lfm2_moe', Lfm2MoeForCausalLM; vllm/model_executor/models/lfm2_moe.py, 0.13.0 - 0.34.0 sdists):
# LFM2's layers with MoE feed-forwards, but get_mamba_state_shape_from_config passes hidden_size to
# short_conv_state_shape, not conv_dim: hidden_size / TP x (conv_L_cache - 1) in the model dtype.
_MOE_TYPES = ["conv", "conv", "full_attention", "conv"] * 6


def _lfm2_moe() -> dict[str, Any]:
    """Shaped after LiquidAI/LFM2-8B-A1B's config.json (by hand, abridged; a layer_types of its shape, 6 attention
    layers of 24): hidden 2,048, 32 heads of 64 over 8 KV heads, conv_L_cache 3, 32 experts of 1,792 (top 4); the
    conv_dim 4,096 here is a decoy vLLM does not read for this class."""
    return {
        "architectures": ["Lfm2MoeForCausalLM"], "model_type": "lfm2_moe", "torch_dtype": "bfloat16",
        "hidden_size": 2048, "num_hidden_layers": 24, "num_attention_heads": 32, "num_key_value_heads": 8,
        "conv_L_cache": 3, "conv_dim": 4096, "layer_types": _MOE_TYPES, "max_position_embeddings": 128000,
        "vocab_size": 65536, "intermediate_size": 7168, "moe_intermediate_size": 1792, "num_experts": 32,
        "num_experts_per_tok": 4, "num_dense_layers": 2, "tie_embedding": True,
    }  # fmt: skip


# State 2,048 x 2 x 2 B = 8,192 B. vLLM 0.34.0 (block 64, 'align'): bf16 KV 2 x 8 x 64 x 2 B = 2,048 B/token, block
# 64 x cdiv(8,192, 64 x 2,048) = 64; 6 attention and 18 conv layers (18 >= 1.5 x 6): groups of 6, 1 attention and 3
# state groups; a 32,768-token request takes 512 + 3 x 2 = 518 pages; 8 GiB holds 8 GiB // 131,072 // 6 = 10,922.
def test_lfm2_moe_state_is_a_short_conv_over_hidden_size(tmp_path: Path) -> None:
    text = _lfm2_moe()
    assert state_bytes(text, "lfm2_moe", [], model_dtype_bytes=2, tensor_parallel_size=1) == 2048 * 2 * 2
    path = sized_checkpoint(tmp_path / "m", text, 16 * GIB)
    plan = plan_model(str(path), "b200", "vllm-gpu", engine_version="0.34.0", max_model_len=32768,
                      kv_cache_memory_bytes=8 * GIB, multimodal=False)  # fmt: skip
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == 64
    assert plan.memory_budget.kv_groups == 4 and plan.memory_budget.blocks_per_request == 518
    assert {layer.head_dim for layer in plan.layers if layer.kv_heads} == {64}
    assert plan.max_concurrency == pytest.approx(8 * GIB // (64 * 2048) // 6 / 518)


def test_lfm2_moe_without_layer_types_is_one_line(tmp_path: Path) -> None:
    # transformers' Lfm2MoeConfig derives no layer_types (unlike Lfm2Config), and vLLM indexes them per layer
    text = {k: v for k, v in _lfm2_moe().items() if k != "layer_types"} | {"full_attn_idxs": [2, 8, 14, 20]}
    path = sized_checkpoint(tmp_path / "m", text, 16 * GIB)
    with pytest.raises(ConfigError, match="'layer_types' must give 'full_attention' or 'conv'") as caught:
        plan_model(str(path), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192, multimodal=False)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("text", [_lfm2(), _lfm2_moe()], ids=["lfm2", "lfm2_moe"])
def test_lfm2_on_a_tpu_is_refused_for_its_short_convolutions(tmp_path: Path, text: dict[str, Any]) -> None:
    # it said 'tpu-inference has no Mamba mixer', a layer LFM2 does not have
    path = sized_checkpoint(tmp_path / "m", text, 4 * GIB)
    with pytest.raises(ConfigError, match="tpu-inference has no short-convolution layer") as caught:
        plan_model(str(path), "v6e-8", "vllm-tpu", max_model_len=4096, multimodal=False)
    assert "Mamba" not in str(caught.value) and "\n" not in str(caught.value)
