"""Gemma 4 E4B from the catalog (catalog/models.json 'gemma-4-E4B-it' and its generated inventory).

Source of the geometry: the published text config as reproduced in public test fixtures (42 layers in
[5 sliding, 1 full] x 7, 18 KV-shared, 2 KV heads, head_dim 256 / global_head_dim 512); one fixture also
states the derived counts this test checks: 24 cache-owning layers, 35 sliding and 7 full.
"""

from __future__ import annotations

from onechip.planner import plan_model


def test_e4b_geometry_24_cache_layers_and_57344_bytes_per_token() -> None:
    plan = plan_model("google/gemma-4-E4B-it", "v6e-1", "vllm-tpu", max_model_len=32768)
    assert (plan.num_layers, plan.cache_layers) == (42, 24)
    assert sum(lay.attention_type == "sliding" for lay in plan.layers) == 35
    owners = [lay for lay in plan.layers if lay.owns_cache]
    sliding = sum(lay.attention_type == "sliding" for lay in owners)
    full = sum(lay.attention_type == "full" for lay in owners)
    assert (sliding, full) == (20, 4)
    # 20 x 2 heads x (K,V) x 256 x 2 B + 4 x 2 x 2 x 512 x 2 B (bf16)
    assert plan.kv_bytes_per_token == 20 * 2 * 2 * 256 * 2 + 4 * 2 * 2 * 512 * 2 == 57_344


def test_e4b_per_layer_embeddings_are_vocab_x_256_x_layers() -> None:
    plan = plan_model("gemma-4-E4B-it", "v6e-1", "vllm-tpu", max_model_len=32768)
    # embed_tokens_per_layer: vocab_size_per_layer_input x (hidden_size_per_layer_input x layers), bf16
    assert plan.weights_by_component["per_layer_embeddings"] == 262_144 * 256 * 42 * 2
