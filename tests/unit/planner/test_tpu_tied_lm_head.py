"""A tied LM head is resident twice on vllm-tpu's torchax path (planner.gpu_memory.tpu_tied_lm_head_bytes).

Sources: vLLM ties the head by sharing the embedding's Parameter (ParallelLMHead.tie_weights, vllm/model_executor/
layers/vocab_parallel_embedding.py, 0.33.0 sdist) and process_weights_after_loading visits both modules
(vllm/model_executor/model_loader/utils.py); tpu-inference's
VllmUnquantizedEmbeddingMethod.process_weights_after_loading puts each module's weight on the TPU as its own array
(tpu_inference/layers/vllm/quantization/unquantized.py, custom_ops/embedding.py,
vllm-project/tpu-inference@b8692ff01fa1; before PR #1782 cleanup_sharding.py _shard_lm_head,
'TODO(qihqi): currently this is not handling case of tie_word_weights=True'). Seen on
tests/fixtures/bootlogs/tpu-v6e1-gemma4-12b-len2048-v0291.log (Gemma4UnifiedForConditionalGeneration, torchax):
24.56 GiB resident after the load against a 22.28 GiB checkpoint.
"""

from __future__ import annotations

from pathlib import Path

from factories import MISTRAL_LIKE, sized_checkpoint, tpu_pool_rules
from onechip.planner import plan_model
from onechip.planner.gpu_memory import tpu_rope_cache_bytes, tpu_tied_lm_head_bytes

# google/gemma-4-12B-it's text geometry (tests/fixtures/bootlogs/configs/google--gemma-4-12B-it.json): tied,
# 262,144 x 3,840
GEMMA4_12B_TEXT = {"vocab_size": 262144, "hidden_size": 3840, "tie_word_embeddings": True}
UNIFIED = {"architectures": ["Gemma4UnifiedForConditionalGeneration"], "text_config": GEMMA4_12B_TEXT}

# A Mistral-7B-shaped decoder with tied embeddings (geometry only), run through torchax
TIED_MISTRAL_LIKE = MISTRAL_LIKE | {"tie_word_embeddings": True}


def test_a_torchax_run_tied_model_holds_its_embedding_twice() -> None:
    rule = tpu_pool_rules()["0.29.0"]
    copy = tpu_tied_lm_head_bytes(rule, UNIFIED, GEMMA4_12B_TEXT, tie_word_embeddings=True, dtype_bytes=2)
    assert copy == 262144 * 3840 * 2  # the embedding table once more, bf16: 1.875 GiB


def test_untied_jax_native_and_the_old_runner_hold_no_copy() -> None:
    rules = tpu_pool_rules()
    untied = tpu_tied_lm_head_bytes(rules["0.29.0"], UNIFIED, GEMMA4_12B_TEXT, tie_word_embeddings=False, dtype_bytes=2)
    native = {"architectures": ["Gemma4ForConditionalGeneration"], "text_config": GEMMA4_12B_TEXT}
    jax = tpu_tied_lm_head_bytes(rules["0.29.0"], native, GEMMA4_12B_TEXT, tie_word_embeddings=True, dtype_bytes=2)
    old = tpu_tied_lm_head_bytes(rules[None], UNIFIED, GEMMA4_12B_TEXT, tie_word_embeddings=True, dtype_bytes=2)
    assert (untied, jax, old) == (0, 0, 0)


def test_the_copy_comes_out_of_the_tpu_pool(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", TIED_MISTRAL_LIKE, 4 * 2**30)
    plan = plan_model(str(path), "v5e-1", "vllm-tpu", max_model_len=4096, engine_version="0.26.0", multimodal=False)
    assert plan.cap_bytes is not None
    rope = tpu_rope_cache_bytes(
        tpu_pool_rules()["0.26.0"], TIED_MISTRAL_LIKE, dtype_bytes=2, max_model_len=4096, env={}
    )
    table = 256 * -(-4096 // plan.block_size) * 4  # the runner's block table, 256 default sequences
    # total x 0.92 - weights - RoPE cache - the head's copy (32,768 x 4,096 x bf16) - table
    assert plan.kv_pool_bytes == plan.cap_bytes - plan.weights_bytes - rope - 32768 * 4096 * 2 - table
