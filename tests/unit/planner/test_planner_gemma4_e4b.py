"""Gemma 4 E4B from the catalog (catalog/models.json 'gemma-4-E4B-it' and its generated inventory).

Source of the geometry: the published text config as reproduced in public test fixtures (42 layers in
[5 sliding, 1 full] x 7, 18 KV-shared, 2 KV heads, head_dim 256 / global_head_dim 512); one fixture also
states the derived counts this test checks: 24 cache-owning layers, 35 sliding and 7 full.
"""

from __future__ import annotations

from onechip.planner import plan_model
from onechip.planner.gpu_memory import per_layer_embeddings_buffer_bytes
from onechip.schemas.common import GIB


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


def test_the_mi300x_e4b_boot_given_its_pool() -> None:
    # tests/fixtures/bootlogs/mi300x-gemma4-e4b-len32768-v0311.log (xbill9/gemma4-dev@f9fbf3dd, vLLM 0.31.1rc1 ROCm on
    # an MI300X VF): 'Available KV cache memory: 149.34 GiB', 'GPU KV cache size: 2,794,448 tokens, Maximum
    # concurrency for 32,768 tokens per request: 85.28x', 'kv cache group sizes [32, 32, 32, 32, 32, 16]'
    plan = plan_model(
        "google/gemma-4-E4B-it",
        "mi300x-vf",
        "vllm-gpu",
        max_model_len=32768,
        utilization=0.9,
        engine_version="0.31.1",
        multimodal=True,
        kv_cache_memory_bytes=int(149.34 * GIB),
    )
    assert plan.in_flight_tokens == 2 * 16384  # >= 160 GiB card: 16,384 batched tokens, two batches in flight
    assert round(plan.max_concurrency, 2) == 85.28
    assert abs(plan.kv_tokens_logged - 2_794_448) / 2_794_448 < 0.0001
    # the pool's own token figure: a block index spans 5 sliding blocks of 32 tokens and 1 full block of 16 (one
    # 64 KiB page each), so a token takes 5/32 + 1/16 = 7/32 of a block index; num_blocks // 6 x 16 (vLLM 0.19's
    # 'groups' line) would count 16 tokens a block in every group (about 1.63M here)
    assert plan.num_blocks == int(149.34 * GIB) // (4 * 65536)
    assert plan.kv_tokens == plan.num_blocks * 32 // 7
    assert abs(plan.kv_tokens - int(149.34 * GIB) // 57_344) < 32  # = pool / bytes per token, to one block


def test_the_per_layer_embedding_buffer_is_planned_beside_the_weights() -> None:
    # vllm/model_executor/models/gemma4_mm.py (0.20.0, 0.22.1, 0.30.0 sdists): Gemma4ForConditionalGeneration
    # makes torch.zeros(max_num_batched_tokens, num_hidden_layers, hidden_size_per_layer_input) in the model dtype
    # on the GPU, counted in 'Model loading took'; the text-only Gemma4ForCausalLM makes none.
    def weights(batched: int) -> int:
        plan = plan_model(
            "gemma-4-E4B-it", "rtx-3090-ti", "vllm-gpu", max_model_len=8192, max_num_batched_tokens=batched
        )
        assert plan.memory_budget is not None
        return plan.memory_budget.weights_bytes

    assert weights(4096) - weights(2048) == 2048 * 42 * 256 * 2
    text = {"num_hidden_layers": 42, "hidden_size_per_layer_input": 256}
    wrapped = {"architectures": ["Gemma4ForConditionalGeneration"], "text_config": text}
    assert per_layer_embeddings_buffer_bytes(wrapped, dtype_bytes=2, max_num_batched_tokens=2048) == 44_040_192
    causal = {"architectures": ["Gemma4ForCausalLM"], **text}
    assert per_layer_embeddings_buffer_bytes(causal, dtype_bytes=2, max_num_batched_tokens=2048) == 0
