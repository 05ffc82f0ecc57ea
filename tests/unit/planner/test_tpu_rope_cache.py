"""RoPE caches in HBM on vllm-tpu (catalog/engines.json pool_rules: jax_native_architectures, slice_rope_cache_env).

Sources, read at vllm-project/tpu-inference@c90cece0be50 (v0.26.0) and @b8692ff01fa1: models/common/model_loader.py
runs the _MODEL_REGISTRY architectures in JAX (Gemma 4 computes RoPE per call, layers/jax/rope_interface.py); any
other architecture runs vLLM's PyTorch model through torchax, whose rotary_emb.cos_sin_cache buffers are replicated on
every chip and cut to max_model_len rows when SLICE_ROPE_CACHE is set (models/vllm/vllm_model_wrapper.py).
"""

from __future__ import annotations

from pathlib import Path

from factories import MISTRAL_LIKE, sized_checkpoint, tpu_pool_rules
from onechip.planner import plan_model
from onechip.planner.gpu_memory import tpu_rope_cache_bytes


def test_a_torchax_run_model_keeps_its_rope_cache_unless_sliced() -> None:
    rule = tpu_pool_rules()["0.26.0"]
    full = tpu_rope_cache_bytes(rule, MISTRAL_LIKE, dtype_bytes=2, max_model_len=4096, env={})
    assert full == 32768 * 128 * 2  # max_position_embeddings x rotary_dim x bf16
    sliced = tpu_rope_cache_bytes(
        rule,
        MISTRAL_LIKE,
        dtype_bytes=2,
        max_model_len=4096,
        env={"SLICE_ROPE_CACHE": "1"},
    )
    assert sliced == 4096 * 128 * 2


def test_jax_native_gemma4_and_the_old_runner_hold_none() -> None:
    gemma4 = {"architectures": ["Gemma4ForConditionalGeneration"], "text_config": MISTRAL_LIKE}
    assert tpu_rope_cache_bytes(tpu_pool_rules()["0.29.0"], gemma4, dtype_bytes=2, max_model_len=8192, env={}) == 0
    assert tpu_rope_cache_bytes(tpu_pool_rules()[None], MISTRAL_LIKE, dtype_bytes=2, max_model_len=8192, env={}) == 0


def test_the_cache_comes_out_of_the_tpu_pool(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", MISTRAL_LIKE, 4 * 2**30)
    plan = plan_model(str(path), "v5e-1", "vllm-tpu", max_model_len=4096, engine_version="0.26.0", multimodal=False)
    assert plan.cap_bytes is not None
    table = 256 * -(-4096 // plan.block_size) * 4  # the runner's block table, 256 default sequences
    # total x 0.92 - weights - cache - table
    assert plan.kv_pool_bytes == plan.cap_bytes - plan.weights_bytes - 32768 * 128 * 2 - table
