"""V0's CacheEngine pads an MLA latent entry to 256 bytes of the model dtype (vllm/worker/cache_engine.py
get_cache_block_size, align_to_256bytes when use_mla on CUDA; engines.json mla_entry_align_bytes); V1 does not.
Checked on the V0 L40S DeepSeek-Coder-V2-Lite log of vllm#15196 (tests/fixtures/bootlogs, corpus.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from factories import sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.geometry import mla_geometry
from onechip.planner.gpu_plan import kv_layout_uniform
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
V2_LITE = json.loads((BOOTLOGS / "configs" / "deepseek-ai--DeepSeek-V2-Lite-Chat.json").read_text(encoding="utf-8"))
LOG = (BOOTLOGS / "l40s-deepseek-coder-v2-lite-cpuoffload30-len100000-v0.log").read_text(encoding="utf-8")


def test_a_bf16_latent_of_576_takes_640_elements_in_v0() -> None:
    geometry = mla_geometry(V2_LITE, kv_dtype_bytes=2, tensor_parallel_size=1, family="deepseek_v2")
    assert kv_layout_uniform(geometry, 16, 1).page_bytes == 27 * 576 * 2 * 16  # no alignment: V1's layout
    assert kv_layout_uniform(geometry, 16, 1, 256, 2).page_bytes == 27 * 640 * 2 * 16
    # fp8 KV of a bf16 model: aligned in model-dtype elements (128), stored at one byte each
    fp8 = mla_geometry(V2_LITE, kv_dtype_bytes=1, tensor_parallel_size=1, family="deepseek_v2")
    assert kv_layout_uniform(fp8, 16, 1, 256, 2).page_bytes == 27 * 640 * 16


def test_the_v0_l40s_log_blocks_follow_from_its_pool(tmp_path: Path) -> None:
    pool_gib = float(re.search(r"reserved for KV Cache is ([\d.]+)GiB", LOG).group(1))  # type: ignore[union-attr]
    logged_blocks = int(re.search(r"# CUDA blocks: (\d+)", LOG).group(1))  # type: ignore[union-attr]
    path = sized_checkpoint(tmp_path / "v2-lite", V2_LITE, 2 * GIB)
    plan = plan_model(
        str(path), "l40s", engine_version="0.7.2", max_model_len=100000, max_num_batched_tokens=40000,
        enforce_eager=True, utilization=0.45, kv_cache_memory_bytes=int(pool_gib * GIB),
    )  # fmt: skip
    blocks = plan.kv_tokens_logged // 16
    assert abs(blocks - logged_blocks) <= logged_blocks * 0.001  # the pool is printed to 0.01 GiB
