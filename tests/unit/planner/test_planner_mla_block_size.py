"""An MLA model's KV block size without --block-size on NVIDIA cards, by release (engines.json `mla_block_sizes`;
planner.rules.EngineRules.block_size_for), read in the vllm sdists on PyPI.

0.8.0 - 0.17.x: vllm/platforms/cuda.py CudaPlatformBase.check_and_update_config forces the block size of the MLA
backend it defaults to: FLASHMLA 64 on compute capability 9.x whatever the KV cache dtype ('Forcing kv cache block
size to 64 for FlashMLA backend.'), CUTLASS_MLA 128 on 10.0 from 0.10.1 (10.x from 0.13.0), FLASHINFER_MLA 64 on 10.x
for qk_nope_head_dim 128 from 0.15.x. 0.18.0 on: the backend is the first of _get_backend_priorities whose
validate_configuration passes, and Platform.update_block_size_for_backend sets its get_preferred_block_size(16):
on 9.x FLASH_ATTN_MLA (auto / float16 / bfloat16 KV only, [MultipleOf(16)]) keeps 16 and an fp8 cache goes to
FLASHMLA ([64]) -> 64; on 10.x FLASHINFER_MLA ([32, 64]) -> 32, or CUTLASS_MLA ([128]) -> 128 for a
qk_nope_head_dim FlashInfer MLA refuses. Other cards (Ampere, Ada: TRITON_MLA) keep the release's default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import MLA_LIKE, sized_checkpoint
from onechip.planner import plan_model

POOL = 8 * 2**30  # an explicit pool: the blocks follow from the block size alone


def _block(tmp_path: Path, chip: str, version: str, kv: str = "auto", **config: int) -> int:
    path = tmp_path / f"mla-{'-'.join(f'{k}{v}' for k, v in config.items())}"
    if not path.exists():
        sized_checkpoint(path, {**MLA_LIKE, **config}, 2 * 2**30)
    plan = plan_model(str(path), chip, "vllm-gpu", max_model_len=4096, multimodal=False, engine_version=version,
                      kv_cache_memory_bytes=POOL, kv_cache_dtype=kv)  # fmt: skip
    return plan.block_size


@pytest.mark.parametrize("kv", ["auto", "fp8"])
def test_0_18_to_0_33_an_h100_takes_64_with_an_fp8_cache_only(tmp_path, kv) -> None:
    """Compute capability 9.0: FLASH_ATTN_MLA's supported_kv_cache_dtypes are auto, float16, bfloat16 (0.18.0,
    0.25.0, 0.33.0 sdists), so an fp8 cache goes to FLASHMLA, kernel block sizes [64]: get_preferred_block_size(16)
    = 64. A bf16 cache stays at 16 (the H100 DeepSeek-V2-Lite log of 0.19.0: 1,505,552 tokens in 94,097 blocks)."""
    want = 64 if kv == "fp8" else 16
    assert [_block(tmp_path, "h100", v, kv) for v in ("0.18.0", "0.25.0", "0.33.0")] == [want] * 3


def test_0_18_to_0_33_a_b200_takes_flashinfer_mla_32_or_cutlass_mla_128(tmp_path) -> None:
    """Compute capability 10.0: FLASHINFER_MLA first, [32, 64] -> 32; its supports_combination refuses a
    qk_nope_head_dim outside [64, 128] (0.18.0) / [64, 128, 192] (0.19.0 on), which leaves CUTLASS_MLA, [128]."""
    assert _block(tmp_path, "b200", "0.18.0") == _block(tmp_path, "b200", "0.33.0", "fp8") == 32
    assert _block(tmp_path, "b200", "0.18.0", qk_nope_head_dim=192) == 128
    assert _block(tmp_path, "b200", "0.25.0", qk_nope_head_dim=192) == 32
    assert _block(tmp_path, "b200", "0.33.0", qk_nope_head_dim=96) == 128


def test_before_0_18_check_and_update_config_forces_the_mla_block(tmp_path) -> None:
    """FlashMLA's 64 on 9.x from 0.8.0, whatever the KV dtype; on 10.0 none in 0.10.0, CUTLASS_MLA's 128 in
    0.10.1 - 0.14.x, FLASHINFER_MLA's 64 for qk_nope_head_dim 128 in 0.15.x - 0.17.x (CUTLASS_MLA's 128 else).
    Before FlashMLA (0.7.3: the 8x H200 DeepSeek-R1 log's 18,418 blocks are of 16 tokens) nothing is forced."""
    assert [_block(tmp_path, "h100", v) for v in ("0.7.3", "0.8.5", "0.11.0", "0.17.1")] == [16, 64, 64, 64]
    assert _block(tmp_path, "h100", "0.14.0", "fp8") == 64
    assert [_block(tmp_path, "b200", v) for v in ("0.10.0", "0.11.0", "0.14.0", "0.17.1")] == [16, 128, 128, 64]
    assert _block(tmp_path, "b200", "0.17.1", qk_nope_head_dim=64) == 128


def test_0_34_keeps_64_but_cutlass_mla_takes_128(tmp_path) -> None:
    """0.34.0's default 64 suits FLASH_ATTN_MLA, FLASHMLA and FLASHINFER_MLA; CUTLASS_MLA's [128] raises it."""
    assert _block(tmp_path, "h100", "0.34.0") == _block(tmp_path, "b200", "0.34.0") == 64
    assert _block(tmp_path, "b200", "0.34.0", qk_nope_head_dim=96) == 128


def test_other_cards_keep_the_release_default(tmp_path) -> None:
    """TRITON_MLA ([MultipleOf(16)]) on an A100 or L40S: no MLA backend forces a size there."""
    assert _block(tmp_path, "a100-80gb", "0.11.0") == _block(tmp_path, "l40s", "0.33.0", "fp8") == 16
    assert _block(tmp_path, "l40s", "0.34.0") == 64


def _given(tmp_path: Path, chip: str, version: str, block: int, **config: int):
    path = tmp_path / f"mla-given-{'-'.join(f'{k}{v}' for k, v in config.items())}"
    if not path.exists():
        sized_checkpoint(path, {**MLA_LIKE, **config}, 2 * 2**30)
    return plan_model(str(path), chip, "vllm-gpu", max_model_len=4096, multimodal=False, engine_version=version,
                      kv_cache_memory_bytes=POOL, block_size=block)  # fmt: skip


def test_before_0_18_a_given_block_the_mla_backend_cannot_use_is_replaced(tmp_path) -> None:
    """check_and_update_config runs on the CLI's --block-size too (vllm/platforms/cuda.py, read in the sdists):
    'cache_config.block_size != 64' -> 64 for FlashMLA through 0.11.0, '% 64 != 0' from 0.11.1 (0.11.1, 0.12.0,
    0.14.0, 0.15.1, 0.16.0, 0.17.1); CUTLASS_MLA '!= 128' through 0.11.0, '% 128 != 0' from 0.11.1; FlashInfer MLA
    keeps 32 and multiples of 64. From 0.18.0 a given size goes to backend selection and is kept."""
    assert [_given(tmp_path, "h100", v, 16).block_size for v in ("0.8.5", "0.11.0", "0.11.1", "0.17.1")] == [64] * 4
    assert [_given(tmp_path, "h100", v, 128).block_size for v in ("0.10.1", "0.11.0", "0.11.1", "0.14.0")] == [
        64, 64, 128, 128,
    ]  # fmt: skip
    assert _given(tmp_path, "b200", "0.11.0", 64).block_size == 128
    assert _given(tmp_path, "b200", "0.12.0", 256).block_size == 256  # 0.11.1 - 0.17.x parsers take 256
    assert [_given(tmp_path, "b200", "0.17.1", b).block_size for b in (16, 32, 128)] == [64, 32, 128]
    assert [_given(tmp_path, v, "0.19.0", 16).block_size for v in ("h100", "b200")] == [16, 16]
    assert _given(tmp_path, "a100-80gb", "0.14.0", 16).block_size == 16  # TRITON_MLA: nothing forced


def test_a_replaced_block_is_said_and_launched_as_the_engine_runs_it(tmp_path) -> None:
    plan = _given(tmp_path, "h100", "0.14.0", 16)
    note = next(w for w in plan.warnings if w.code == "mla-block-size-replaced")
    assert "--block-size 16" in note.message and "FLASHMLA" in note.message and "64" in note.message
    assert plan.serve.block_size is not None and plan.serve.block_size.value == 64
    assert not [w for w in _given(tmp_path, "h100", "0.19.0", 16).warnings if w.code == "mla-block-size-replaced"]
