"""Zamba2 (model_type 'zamba2', Zamba2ForCausalLM): a Mamba2 mixer in every layer, and in each 'hybrid' layer the shared
attention block with a KV cache of its own.

Expected figures are derived here from the vLLM sdists (0.10.2, 0.13.0, 0.16.0, 0.25.0 and 0.34.0):
vllm/model_executor/models/zamba2.py Zamba2ForCausalLM.get_mamba_state_shape_from_config ->
vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.mamba2_state_shape(mamba_expand x
hidden_size, mamba_ngroups, n_mamba_heads, mamba_headdim, mamba_d_state, mamba_d_conv) in mamba2_state_dtype;
Zamba2Attention builds one Attention(num_attention_heads, attention_head_dim) per hybrid layer ('KV cache is unique
for every attention layer'); transformers 5.19 Zamba2Config.__post_init__ sets attention_head_dim = 2 x hidden_size
// num_attention_heads and mamba_headdim = mamba_expand x hidden_size // n_mamba_heads whatever the file says. The
hybrid block and groups are planner.kv_groups' (tests/unit/planner/test_planner_hybrid_*).
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

_LAYERS = ["mamba"] + (["mamba"] * 5 + ["hybrid"]) * 7 + ["mamba"] * 4 + ["hybrid"] + ["mamba"] * 3 + ["hybrid"]
_LAYERS += ["mamba"] * 2


def _zamba2_2_7b() -> dict[str, Any]:
    """Shaped after Zyphra/Zamba2-2.7B's config.json (by hand, abridged): 54 layers, hybrid at 6, 12, ..., 42, 47
    and 51 (Zamba2Config's default pattern, in the older 'mamba' names), hidden 2,560, 32 attention heads, 80 Mamba
    heads, 1 group, state 64, conv 4, expand 2. The attention_head_dim 999 is a decoy the config class overwrites."""
    return {
        "architectures": ["Zamba2ForCausalLM"], "model_type": "zamba2", "torch_dtype": "bfloat16",
        "hidden_size": 2560, "num_hidden_layers": 54, "num_attention_heads": 32, "attention_head_dim": 999,
        "n_mamba_heads": 80, "mamba_ngroups": 1, "mamba_d_state": 64, "mamba_d_conv": 4, "mamba_expand": 2,
        "num_mem_blocks": 2, "layers_block_type": _LAYERS, "max_position_embeddings": 4096, "vocab_size": 32000,
        "intermediate_size": 10240, "use_shared_attention_adapter": True, "adapter_rank": 128,
    }  # fmt: skip


# State: conv (5,120 + 2 x 1 x 64) x 3 = 15,744, temporal 80 x 64 x 64 = 327,680 (mamba_headdim 5,120 // 80 = 64):
# 686,848 B in bf16. TP 2: the one group is extended to 2 (extra_groups_for_head_shards): conv (5,120 + 2 x 2 x 64)
# / 2 x 3 = 8,064, temporal 40 x 64 x 64 = 163,840: 343,808 B.
def test_zamba2_state_and_layer_roles() -> None:
    text = _zamba2_2_7b()
    assert state_bytes(text, "zamba2", [], model_dtype_bytes=2, tensor_parallel_size=1) == 686_848
    assert state_bytes(text, "zamba2", [], model_dtype_bytes=2, tensor_parallel_size=2) == (8_064 + 163_840) * 2
    roles = layer_roles(text, "zamba2")
    assert [i for i, (attention, _) in enumerate(roles) if attention] == [6, 12, 18, 24, 30, 36, 42, 47, 51]
    assert all(state for _, state in roles)
    assert layer_roles({k: v for k, v in text.items() if k != "layers_block_type"}, "zamba2") == roles  # the default


# vLLM 0.34.0 (block 64): attention 32 x 160 x 2 x 2 B = 20,480 B/token (head_dim 2 x 2,560 // 32 = 160, every head);
# block 64 x cdiv(686,848, 64 x 20,480) = 64, page 1,310,720 B. 9 attention and 54 state layers (54 >= 1.5 x 9): groups
# of 9, 1 attention and 6 state groups; 8 GiB // 1,310,720 // 9 = 728 blocks. Prefix caching off: a 4,096-token
# request takes 64 + 6 pages; on ('align'): 64 + 6 x 3 (MambaMixer2's checkpoint page).
def test_zamba2_plan(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _zamba2_2_7b(), 5 * GIB)
    plan = plan_model(str(path), "h100", "vllm-gpu", engine_version="0.34.0", kv_cache_memory_bytes=8 * GIB,
                      enable_prefix_caching=False, multimodal=False)  # fmt: skip
    assert plan.max_model_len == 4096
    assert {(layer.kv_heads, layer.head_dim) for layer in plan.layers if layer.kv_heads} == {(32, 160)}
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == 64
    assert plan.memory_budget.kv_groups == 7 and plan.memory_budget.group_layers == 9
    blocks = 8 * GIB // (64 * 20480) // 9
    assert blocks == 728 and plan.memory_budget.blocks_per_request == cdiv(4096, 64) + 6
    assert plan.max_concurrency == pytest.approx(blocks / 70)
    cached = plan_model(str(path), "h100", "vllm-gpu", engine_version="0.34.0", kv_cache_memory_bytes=8 * GIB,
                        multimodal=False)  # fmt: skip
    assert cached.memory_budget is not None and cached.memory_budget.blocks_per_request == 64 + 6 * 3


def test_zamba2_bad_layers_block_type_is_one_line(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", {**_zamba2_2_7b(), "layers_block_type": ["mamba"] * 53}, 5 * GIB)
    with pytest.raises(ConfigError, match="'layers_block_type' must give 'hybrid' or 'mamba'") as caught:
        plan_model(str(path), "h100", "vllm-gpu", engine_version="0.34.0", multimodal=False)
    assert "\n" not in str(caught.value)
