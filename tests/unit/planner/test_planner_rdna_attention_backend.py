"""RDNA 3 / RDNA 4 Radeon cards at vLLM 0.34.0: the first attention backend, and so the block, depends on the gfx id.

Read in the vllm 0.34.0 sdist: vllm/platforms/rocm.py RocmPlatform.get_valid_backends swaps ROCM_ATTN and TRITON_ATTN
in _get_backend_priorities' list 'On gfx1201 and gfx1100' unless the KV cache dtype is fp8_e5m2 (on_gfx1201() /
on_gfx1100(): the gfx name in the device's gcnArchName, not a capability test); ROCM_ATTN's get_preferred_block_size
returns 16 (vllm/v1/attention/backends/rocm_attn.py), TRITON_ATTN declares [MultipleOf(16)] and takes
CacheConfig.DEFAULT_BLOCK_SIZE, 64 (vllm/config/cache.py). gfx1100 is the RX 7900 XTX / XT / GRE and PRO W7900 / W7800,
gfx1201 the RX 9070 / 9070 XT / GRE; the other RDNA 3 (gfx1101, gfx1102) and RDNA 4 (gfx1200) parts keep ROCM_ATTN
(llvm/docs/AMDGPUUsage.rst processor table). The GPU database gives an architecture ('RDNA 3.0', 'RDNA 4.0'), not a
gfx id, so both blocks are planned and the fewer KV tokens kept, with a warning giving both.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import smollm2_checkpoint
from onechip.planner import plan_model
from onechip.planner.geometry import cdiv
from onechip.schemas.common import GIB

POOL = 4 * GIB
LEN = 8192  # SmolLM2's max_position_embeddings


def _logged(block: int) -> int:
    """The 0.34.0 token line by hand over a pinned 4 GiB pool: SmolLM2-135M, 30 layers x 3 KV heads x 64 x 2 x 2 B =
    23,040 B a token; POOL // (block x 23,040) blocks over cdiv(8,192, block) a request, int(concurrency x length)."""
    return int(POOL // (block * 23_040) / cdiv(LEN, block) * LEN)


# 64-token blocks: 2,912 blocks / 128 = 22.75 -> 186,368 tokens; 16: 11,650 / 512 -> 186,400. TRITON_ATTN's 64 is
# the fewer, so it is planned; the range spans both, and the warning names both figures.
@pytest.mark.parametrize("chip", ["rx7900xtx", "w7900", "rx9070xt"])
def test_rdna_plans_the_fewer_tokens_of_both_backends(chip: str, tmp_path: Path) -> None:
    path = smollm2_checkpoint(tmp_path / "m")
    plan = plan_model(str(path), chip, "vllm-gpu", engine_version="0.34.0", kv_cache_memory_bytes=POOL)
    assert (_logged(64), _logged(16)) == (186_368, 186_400)
    assert plan.block_size == 64 and plan.kv_bytes_per_token == 23_040
    assert plan.kv_tokens_logged == _logged(64) and plan.kv_tokens_range == (_logged(64), _logged(16))
    warning = {w.code: w.message for w in plan.warnings}["rocm-attention-backend-by-gfx"]
    assert "186,368 KV tokens" in warning and "186,400 KV tokens" in warning and "\n" not in warning
    # fp8_e5m2 keeps ROCM_ATTN on every part; a --block-size is kept as given; 0.33.0 has no swap (16 either way)
    e5m2 = plan_model(str(path), chip, "vllm-gpu", engine_version="0.34.0", kv_cache_dtype="fp8_e5m2")
    assert e5m2.block_size == 16 and "rocm-attention-backend-by-gfx" not in {w.code for w in e5m2.warnings}
    pinned = plan_model(str(path), chip, "vllm-gpu", engine_version="0.34.0", block_size=16)
    assert pinned.block_size == 16 and "rocm-attention-backend-by-gfx" not in {w.code for w in pinned.warnings}
    older = plan_model(str(path), chip, "vllm-gpu", engine_version="0.33.0")
    assert older.block_size == 16 and "rocm-attention-backend-by-gfx" not in {w.code for w in older.warnings}


# CDNA (MI300X: gfx942) is neither gfx1100 nor gfx1201: ROCM_ATTN's 16, no warning.
def test_cdna_keeps_rocm_attn(tmp_path: Path) -> None:
    path = smollm2_checkpoint(tmp_path / "m")
    plan = plan_model(str(path), "mi300x", "vllm-gpu", engine_version="0.34.0", kv_cache_memory_bytes=POOL)
    assert plan.block_size == 16 and plan.kv_tokens_logged == _logged(16)
    assert "rocm-attention-backend-by-gfx" not in {w.code for w in plan.warnings}
