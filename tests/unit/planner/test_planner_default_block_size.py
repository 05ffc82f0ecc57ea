"""The KV block size vLLM takes when --block-size is not given, by release (engines.json block_size_choices
`default` / `rocm_default`; planner.rules.EngineRules.block_size_for).

Read in the vllm sdists on PyPI: vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE is 16 in 0.18.0 - 0.33.0
and 64 in 0.34.0, and CacheConfig._apply_block_size_default sets block_size to it when none is given.
vllm/platforms/interface.py Platform.update_block_size_for_backend then asks the attention backend
(get_preferred_block_size, vllm/v1/attention/backend.py): the default is kept when a declared kernel block size
divides it. On CUDA every backend the platform puts first divides 64 (FLASH_ATTN, TRITON_ATTN, FLASH_ATTN_MLA,
TRITON_MLA MultipleOf(16); FLASHINFER [16, 32, 64]; FLASHMLA [64]; FLASHINFER_MLA [32, 64]), and each divides 16
in 0.33.0 (FLASH_ATTN_MLA is first for MLA on compute capability 9.0 with a bf16 KV cache). On ROCm a non-MLA
model gets ROCM_ATTN first, whose get_preferred_block_size returns 16 in 0.34.0; ROCm's MLA backend
(TRITON_MLA, MultipleOf(16)) keeps 64. A --block-size is kept (user_specified_block_size).
"""

from __future__ import annotations

from pathlib import Path

from factories import MLA_LIKE, SMOLLM2_CONFIG, sized_checkpoint
from onechip.planner import plan_model

# Llama-3-8B's attention on four layers: 8 KV heads x 128, bf16: 4 x 2 x 8 x 128 x 2 B = 16,384 B per token
LLAMA_LIKE = {**SMOLLM2_CONFIG, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
              "head_dim": 128, "num_hidden_layers": 4, "vocab_size": 128256}  # fmt: skip
POOL = 8 * 2**30  # an explicit pool: the blocks follow from the block size alone


def _plan(tmp_path: Path, chip: str, version: str, config: dict | None = None, **fields):  # type: ignore[no-untyped-def]
    path = tmp_path / "mla" if config is MLA_LIKE else tmp_path / "dense"
    if not path.exists():
        sized_checkpoint(path, config or LLAMA_LIKE, 2 * 2**30)
    return plan_model(str(path), chip, "vllm-gpu", max_model_len=4096, multimodal=False, engine_version=version,
                      kv_cache_memory_bytes=POOL, **fields)  # fmt: skip


def test_a_dense_model_takes_16_at_0_33_and_64_at_0_34(tmp_path) -> None:
    """DEFAULT_BLOCK_SIZE 16 (0.33.0 sdist) -> 64 (0.34.0 sdist); FLASH_ATTN on the H100 takes either (MultipleOf(16)).
    The pool holds POOL / (block x 16,384 B) blocks: 32,768 of 16 tokens, 8,192 of 64, the same 524,288 tokens."""
    old, new = _plan(tmp_path, "h100", "0.33.0"), _plan(tmp_path, "h100", "0.34.0")
    assert (old.block_size, old.num_blocks, old.kv_tokens) == (16, 32_768, 524_288)
    assert (new.block_size, new.num_blocks, new.kv_tokens) == (64, 8_192, 524_288)
    # 0.32.0, the release the rules were read from, is what a plan without a version takes
    assert _plan(tmp_path, "h100", "0.32.0").block_size == 16


def test_a_block_size_given_is_kept_at_0_34(tmp_path) -> None:
    """_apply_block_size_default marks a given size user_specified_block_size, and update_block_size_for_backend
    skips its phase 1 for it."""
    assert _plan(tmp_path, "h100", "0.34.0", block_size=16).block_size == 16


def test_rocm_keeps_16_for_a_dense_model_and_64_for_mla_at_0_34(tmp_path) -> None:
    """vllm/platforms/rocm.py _get_backend_priorities puts ROCM_ATTN first for non-MLA models, and
    rocm_attn.py get_preferred_block_size returns 16 (0.34.0 sdist); MLA goes to TRITON_MLA, MultipleOf(16): 64."""
    assert _plan(tmp_path, "mi300x", "0.34.0").block_size == 16
    assert _plan(tmp_path, "mi300x", "0.34.0", MLA_LIKE).block_size == 64


def test_an_mla_model_takes_the_release_default_on_cuda(tmp_path) -> None:
    """On an H100 (compute capability 9.0) the first MLA backend is FLASH_ATTN_MLA, MultipleOf(16): vLLM keeps the
    release's default, 16 in 0.33.0 and 64 in 0.34.0; FLASHMLA [64] and FLASHINFER_MLA [32, 64], behind it, take 64
    too. An MLA entry is 576 elements x 2 B x 4 layers = 4,608 B per token: 8 GiB holds 116,508 blocks of 16 or
    29,127 of 64 (1,864,128 and 1,864,128 tokens)."""
    old = _plan(tmp_path, "h100", "0.33.0", MLA_LIKE)
    new = _plan(tmp_path, "h100", "0.34.0", MLA_LIKE)
    assert (old.block_size, old.num_blocks) == (16, POOL // (16 * 4_608))
    assert (new.block_size, new.num_blocks) == (64, POOL // (64 * 4_608))


# Gemma 4 E2B (configs/google--gemma-4-E2B-it.json): 15 cache-owning layers, 12 sliding (1 KV head x 256, window
# 512: 1,024 B/token) and 3 full (1 x 512: 2,048 B/token), group size 3: 4 sliding groups + 1 full group
T4 = dict(
    max_model_len=16384, utilization=0.9, max_num_seqs=8, dtype="float16", engine_version="0.34.0", multimodal=True
)


def test_a_sliding_window_model_at_0_34_counts_64_token_blocks() -> None:
    """At 0.34.0 the full group's block is 64 tokens (2,048 B x 64 = 128 KiB pages); vLLM's
    unify_kv_cache_spec_page_size (vllm/v1/core/kv_cache_planning.py) scales the sliding groups' block by the page
    ratio to 128 tokens (1,024 B x 128). A 16,384-token request takes 16,384 / 64 = 256 full blocks and, per
    sliding group, SlidingWindowSpec.max_admission_blocks_per_request = cdiv(min(512 - 1 + 2 x 2,048, 16,384), 128)
    + 1 = 37 (two batches in flight under async scheduling with PP 1, VllmConfig.max_concurrent_batches = PP + 1;
    the T4's 2,048 batched tokens): 256 + 4 x 37 = 404 blocks of 3 x 128 KiB (1,604 of 96 KiB at 16 tokens). The
    T4 log's pool (tests/unit/planner/test_planner_gemma4_gpu.py: 32,266 x 96 KiB) holds 8,066 such blocks:
    8,066 / 404 = 19.97x where 0.28.0's 16-token blocks print 20.12x."""
    pool = 32_266 * 3 * 32 * 1024
    plan = plan_model("google/gemma-4-E2B-it", "t4", "vllm-gpu", kv_cache_memory_bytes=pool, **T4)
    assert plan.memory_budget is not None
    assert plan.block_size == 64
    assert plan.memory_budget.block_bytes == 3 * 64 * 2048
    assert plan.memory_budget.blocks_per_request == 16384 // 64 + 4 * (-(-(512 - 1 + 2 * 2048) // 128) + 1) == 404
    assert plan.num_blocks == pool // (3 * 64 * 2048) == 8_066
    assert round(plan.max_concurrency, 2) == round(8_066 / 404, 2) == 19.97
