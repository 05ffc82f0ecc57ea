"""Model types vLLM serves that the planner refused as unmodelled until 2026-12-06, part 2 (issue 27, "any model vLLM
serves"; part 1: test_planner_families59.py).

Each config is a copy of a published config.json (or of the fields a public source pins from it), its source named
above it. The expected KV bytes per token (and a hybrid's state bytes per request) are worked by hand from the vLLM
model file that builds the type's layers (vllm 0.34.0 sdist unless said), file and line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factories import one_element_checkpoint
from onechip.planner import plan_model

_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]


def _plan_layers(tmp_path: Path, config: dict[str, Any]) -> list[tuple[str, int, int, int, int]]:
    """(kind, KV heads, head_dim, KV bytes per token, state bytes per request) per layer of the plan vLLM 0.34.0 on one
    H100 gets for `config` (bf16 weights, the KV cache and states in the model dtype)."""
    tmp_path.mkdir(exist_ok=True)
    directory = one_element_checkpoint(tmp_path / "ckpt", config, _NAMES)
    plan = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0")
    return [(x.attention_type, x.kv_heads, x.head_dim, x.bytes_per_token, x.state_bytes) for x in plan.layers]


# allenai/Olmo-Hybrid-7B's shape as a public benchmark writes its config kwargs (search-index file id 30518758314,
# HYBRID_CONFIG_KWARGS; transformers 5.19's OlmoHybridConfig, whose defaults 'yield a similar configuration to that of
# the allenai/Olmo-Hybrid-7B model', gives the same figures): 32 layers, every 4th full attention, GDN elsewhere
OLMO_HYBRID = {"architectures": ["OlmoHybridForCausalLM"], "model_type": "olmo_hybrid", "vocab_size": 100352,
               "hidden_size": 3840, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 30,
               "num_key_value_heads": 30, "hidden_act": "silu", "max_position_embeddings": 32768,
               "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
               "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 8,
               "linear_num_key_heads": 30, "linear_num_value_heads": 30, "linear_key_head_dim": 96,
               "linear_value_head_dim": 192, "linear_conv_kernel_dim": 4, "linear_use_gate": True,
               "linear_allow_neg_eigval": True, "torch_dtype": "bfloat16"}  # fmt: skip
# olmo_hybrid.py OlmoHybridAttention (lines 94-103): KV heads num_key_value_heads or the query heads = 30, head_dim
# hidden_size // heads = 3840 // 30 = 128 whatever the file says: 2 x 30 x 128 x 2 B = 15,360 B a full layer
OLMO_KV_LAYER = 2 * 30 * 128 * 2
# OlmoHybridForCausalLM.get_mamba_state_shape_from_config (lines 453-473) -> mamba_utils.py
# gated_delta_net_state_shape (lines 280-301): conv (96 x 30 x 2 + 192 x 30) x (4 - 1) = 34,560 elements, temporal
# 30 x 192 x 96 = 552,960; gated_delta_net_state_dtype (line 446): both in the model dtype under 'auto' (bf16, 2 B)
OLMO_STATE = ((96 * 30 * 2 + 192 * 30) * 3 + 30 * 192 * 96) * 2


def test_olmo_hybrid_is_planned_with_its_gated_deltanet_layers(tmp_path: Path) -> None:
    layers = _plan_layers(tmp_path, OLMO_HYBRID)
    full = [x for x in layers if x[0] == "full"]
    assert [x[0] == "full" for x in layers] == [i % 4 == 3 for i in range(32)]
    assert {x[1:] for x in full} == {(30, 128, OLMO_KV_LAYER, 0)}
    assert sum(x[3] for x in layers) == 8 * OLMO_KV_LAYER == 122_880
    assert {x[4] for x in layers if x[0] != "full"} == {OLMO_STATE} == {1_175_040}


def test_olmo_hybrid_fields_left_out_are_derived_as_its_class_does(tmp_path: Path) -> None:
    # transformers 5.19 OlmoHybridConfig.__post_init__: layer_types full where i % 4 == 3, linear_num_key_heads and
    # linear_num_value_heads the query heads (30), linear_key_head_dim int(0.75 x 3840 / 30) = 96, linear_value_head_dim
    # 2 x 96 = 192: Olmo-Hybrid-7B's own figures, so the same plan
    derived = ("layer_types", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
               "linear_value_head_dim")  # fmt: skip
    bare = {k: v for k, v in OLMO_HYBRID.items() if k not in derived}
    assert _plan_layers(tmp_path / "bare", bare) == _plan_layers(tmp_path / "full", OLMO_HYBRID)
    # fewer than four layers: the class makes the last one full attention
    two = {**bare, "num_hidden_layers": 2}
    assert [x[0] for x in _plan_layers(tmp_path / "two", two)] == ["mamba", "full"]
