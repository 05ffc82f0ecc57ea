"""vLLM 0.33.0 and later with prefix caching (its default): mamba_cache_mode 'align' with prefill checkpoint pages.

Expected figures are derived here from the vllm 0.33.0 and 0.34.0 sdists (the same rule in both):
vllm/platforms/interface.py Platform._align_hybrid_block_size (in 'align' mode the alignment is
lcm(max(16, --block-size), get_mamba_prefill_checkpoint_alignment)), vllm/model_executor/layers/mamba/gdn/
qwen_gdn_linear_attn.py (a GDN layer whose prefill runs on FlashInfer -- 'auto' on SM 9.0 -- declares
FLASHINFER_GDN_CHECKPOINT_ALIGNMENT = 64 and num_prefill_checkpoint_blocks=1), vllm/v1/kv_cache_interface.py
MambaSpec.max_memory_usage_bytes ('align': 2 + num_speculative_blocks + num_prefill_checkpoint_blocks pages) and
vllm/v1/core/kv_cache_utils.py get_kv_cache_capacity (tokens printed: int(concurrency x max_model_len)).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import cdiv
from onechip.schemas.common import GIB

NEXT = "h200x2-qwen3-next-80b-a3b-tp2-v0102"
POOL = int(44.59 * GIB)
LEN = 262144


def _path(tmp_path: Path) -> Path:
    config = json.loads((BOOTLOGS / corpus_entry(NEXT)["config_file"]).read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / "m", config, 74 * GIB)


def _plan(path: Path, chip: str, version: str | None, **kwargs: Any) -> Any:
    return plan_model(str(path), chip, "vllm-gpu", engine_version=version, tensor_parallel_size=2, max_model_len=LEN,
                      kv_cache_memory_bytes=POOL, multimodal=False, **kwargs)  # fmt: skip


# Qwen3-Next-80B at TP 2: a GDN state of 548,864 B per GPU, 1,024 attention B/token (test_planner_hybrid_pre019).
# On an H200 (SM 9.0, FlashInfer GDN prefill) the alignment is lcm(16, 64) = 64: block 64 x cdiv(548,864, 64 x
# 1,024) = 576 (Triton: 16 x cdiv(548,864, 16 x 1,024) = 544). 12 attention + 36 GDN layers, groups of 12: one
# attention and three state groups. A 262,144-token request takes cdiv(262,144, 576) = 456 attention pages and 3 x
# (2 + 1 checkpoint) state pages; the pool holds POOL // (576 x 1,024) // 12 blocks.
@pytest.mark.parametrize("version", ["0.33.0", "0.34.0"])
def test_qwen3_next_align_mode_on_hopper(tmp_path: Path, version: str) -> None:
    plan = _plan(_path(tmp_path), "h200", version)
    block = 64 * cdiv(548_864, 64 * 1024)
    blocks, per_request = POOL // (block * 1024) // 12, cdiv(LEN, block) + 3 * 3
    assert (block, per_request) == (576, 465)
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == block
    assert plan.max_concurrency == pytest.approx(blocks / per_request)
    assert plan.kv_tokens_logged == int(blocks / per_request * LEN)


# On an A100 (SM 8.0) the GDN prefill runs on Triton: no checkpoint alignment, no checkpoint page (2 per state).
# vLLM 0.33.0's default block (16, test_planner_default_block_size) is the alignment: 16 x cdiv(548,864, 16 x 1,024).
def test_qwen3_next_align_mode_with_triton_prefill(tmp_path: Path) -> None:
    plan = _plan(_path(tmp_path), "a100-80gb", "0.33.0")
    block = 16 * cdiv(548_864, 16 * 1024)
    blocks, per_request = POOL // (block * 1024) // 12, cdiv(LEN, block) + 3 * 2
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == block == 544
    assert plan.max_concurrency == pytest.approx(blocks / per_request)


# On SM 10.x / 12.x 'auto' runs the GDN prefill on FlashInfer only with a CUDA 13 runtime (linear_key_head_dim 128
# here), which a plan does not know: both outcomes are planned and the one with fewer KV tokens kept. At 0.34.0 the
# default block is 64 (test_planner_default_block_size), so both give 64 x cdiv(548,864, 64 x 1,024) = 576-token
# blocks; FlashInfer takes 456 + 3 x 3 = 465 pages per request, Triton 456 + 3 x 2 = 462: FlashInfer is planned
# (fewer tokens) and kv_tokens_range runs from its figure to Triton's (the pool is pinned: no budget range).
def test_blackwell_gdn_align_mode_plans_the_fewer_tokens_of_both_kernels(tmp_path: Path) -> None:
    path = _path(tmp_path)
    plan = _plan(path, "b200", "0.34.0")
    blocks = POOL // (576 * 1024) // 12
    flashinfer, triton = int(blocks / 465 * LEN), int(blocks / 462 * LEN)
    assert plan.memory_budget is not None and plan.memory_budget.blocks_per_request == 465
    assert plan.kv_tokens_logged == flashinfer and plan.kv_tokens_range == (flashinfer, triton)
    warning = {w.code: w.message for w in plan.warnings}["gdn-prefill-backend"]
    assert f"{flashinfer:,} KV tokens" in warning and f"{triton:,} KV tokens" in warning and "\n" not in warning
    assert "gdn-prefill-backend=triton" in warning
    newest = _plan(path, "b200", None)  # the newest rule plans it: no fall-back to the 0.32 rule
    assert "hybrid-rule" not in {w.code for w in newest.warnings}
    off = _plan(path, "b200", "0.33.0", enable_prefix_caching=False)
    assert off.memory_budget is not None and off.memory_budget.min_block_size == 544


# --gdn-prefill-backend triton (vllm/engine/arg_utils.py, additional_config['gdn_prefill_backend']) makes
# _resolve_gdn_prefill_backend return Triton on any card: no checkpoint pages, on Blackwell and on Hopper alike.
@pytest.mark.parametrize("chip", ["b200", "h200"])
def test_pinned_triton_gdn_prefill_has_no_checkpoint_pages(tmp_path: Path, chip: str) -> None:
    plan = _plan(_path(tmp_path), chip, "0.34.0", sets=["gdn-prefill-backend=triton"])
    blocks = POOL // (576 * 1024) // 12
    assert plan.memory_budget is not None and plan.memory_budget.blocks_per_request == 462
    assert plan.kv_tokens_logged == int(blocks / 462 * LEN)
    assert "gdn-prefill-backend" not in {w.code for w in plan.warnings}


# A Mamba2 hybrid (the Nemotron-H geometry of tests/fixtures/bootlogs, fp8 KV: 2 KV heads x 128 x 2 x 1 B = 512
# B/token; conv (4,096 + 2 x 8 x 128) x 3 x 2 B + temporal 64 x 64 x 128 x 4 B = 2,134,016 B, its config's float32)
# on vLLM 0.34.0: 'align' mode (no 'all' mode from 0.32.0); MambaMixer2 declares no checkpoint alignment, so the
# block is 0.34.0's default 64 x cdiv(2,134,016, 64 x 512) = 4,224, and each state takes 2 + 1 checkpoint pages.
# 6 attention and 23 Mamba2 layers: 23 >= 1.5 x 6, so groups of 6 -- 1 attention and cdiv(23, 6) = 4 state groups.
def test_mamba2_hybrid_align_mode_on_0_34(tmp_path: Path) -> None:
    config = json.loads(
        (BOOTLOGS / corpus_entry("gpu94g-nemotron-cascade2-30b-nvfp4-kvfp8-len262144-v0191")["config_file"]).read_text(
            encoding="utf-8"
        )
    )
    path = sized_checkpoint(tmp_path / "m", config, 18 * GIB)
    plan = plan_model(str(path), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=131072,
                      kv_cache_dtype="fp8", kv_cache_memory_bytes=40 * GIB, multimodal=False)  # fmt: skip
    block = 64 * cdiv(2_134_016, 64 * 512)
    blocks, per_request = 40 * GIB // (block * 512) // 6, cdiv(131072, block) + 4 * 3
    assert (block, per_request) == (4224, 44)
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == block
    assert plan.max_concurrency == pytest.approx(blocks / per_request)


# vllm/engine/arg_utils.py (0.33.0, 0.34.0 sdists) declares --gdn-prefill-backend with argparse choices, no 'auto',
# lower case; 'garbage' and 'TRITON' were planned as Triton (no checkpoint pages, no warning) and 'auto' as vLLM's own
# pick, each a command that `vllm serve` stops on with 'invalid choice'
@pytest.mark.parametrize(("value", "version"), [("garbage", "0.34.0"), ("TRITON", "0.34.0"), ("auto", "0.34.0"),
                                                (None, "0.34.0"), ("hip", "0.33.0")])  # fmt: skip
def test_a_gdn_prefill_backend_vllm_refuses_is_refused(tmp_path: Path, value: str | None, version: str) -> None:
    item = "gdn-prefill-backend" if value is None else f"gdn-prefill-backend={value}"
    with pytest.raises(ConfigError, match=r"^--set gdn-prefill-backend.*: vLLM takes one of flashinfer, triton, "):
        _plan(_path(tmp_path), "b200", version, sets=[item])


def test_a_gdn_prefill_backend_vllm_takes_is_planned(tmp_path: Path) -> None:
    assert _plan(_path(tmp_path), "b200", "0.34.0", sets=["gdn-prefill-backend=hip"]).fits


def _qwen35_27b(tmp_path: Path) -> Path:
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3.5-27B.json").read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / "q35", config, 52 * GIB)


def _activation(path: Path, chip: str, tp: int, batch: int, **kwargs: Any) -> int:
    plan = plan_model(str(path), chip, "vllm-gpu", engine_version="0.34.0", tensor_parallel_size=tp,
                      max_model_len=32768, max_num_batched_tokens=batch, multimodal=False, **kwargs)  # fmt: skip
    assert plan.memory_budget is not None
    return plan.memory_budget.activation_peak_bytes


# The checkpoints' buffer in the profile (vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py
# _checkpoint_buffer_spec, sized by current_workspace_manager().get_simultaneous in _warmup_prefill_kernels on the
# profile run's forward; vllm/v1/worker/workspace.py rounds a view up to 256 B; 0.33.0 and 0.34.0 sdists): float32,
# cdiv(max_num_batched_tokens, mamba_block_size) x linear_num_value_heads / TP x linear_value_head_dim x
# linear_key_head_dim. Qwen3.5-27B (dense; 48 value heads, 16 key heads, 128 x 128, kernel 4, float32 SSM state by its
# mamba_ssm_dtype): state (16 x 128 x 2 + 48 x 128) x 3 x 2 + 48 x 128 x 128 x 4 = 3,207,168 B, 4 KV heads x 256 x 2 x
# 2 = 4,096 attention B/token, block 64 x cdiv(3,207,168, 64 x 4,096) = 832 on an H200 (FlashInfer prefill, 64-token
# checkpoint alignment). 8,192 batched tokens: cdiv(8,192, 832) = 10 grid steps x 48 x 128 x 128 x 4 = 30 MiB more
# than the same plan without prefix caching ('none' mode: no checkpoints); TP 2 halves the heads; 2,048 tokens: 3
# steps. A dense model has no fused-MoE workspace, so the buffer is all the scratch holds.
@pytest.mark.parametrize(("tp", "batch"), [(1, 8192), (2, 8192), (1, 2048)])
def test_gdn_checkpoint_buffer_is_in_the_profile(tmp_path: Path, tp: int, batch: int) -> None:
    path = _qwen35_27b(tmp_path)
    state = (16 * 128 * 2 + 48 * 128) * 3 * 2 + 48 * 128 * 128 * 4
    block = 64 * cdiv(state, 64 * 4096)
    assert (state, block) == (3_207_168, 832)
    buffer = cdiv(batch, block) * (48 // tp) * 128 * 128 * 4
    align = _activation(path, "h200", tp, batch)
    assert align - _activation(path, "h200", tp, batch, enable_prefix_caching=False) == buffer
    # Triton prefill (pinned, or an A100's): no checkpoints, no buffer
    assert _activation(path, "h200", tp, batch, sets=["gdn-prefill-backend=triton"]) == align - buffer
    a100 = _activation(path, "a100-80gb", tp, batch)
    assert a100 == _activation(path, "a100-80gb", tp, batch, enable_prefix_caching=False)


# Qwen3-Next-80B (MoE) shares the scratch with its fused-MoE workspace, 8,192 x 10 experts x (2,048 + 2,048) x 2 B =
# 640 MiB at TP 2 (planner.gpu_memory.moe_workspace_bytes), far above its checkpoint buffer (cdiv(8,192, 576) = 15 x 16
# x 128 x 128 x 4 = 15 MiB): the scratch, and the profile, stay the workspace's. Where a buffer is the larger
# request, the scratch is the buffer (activation_bytes takes the larger of the two, not their sum).
def test_gdn_checkpoint_buffer_shares_the_moe_workspace(tmp_path: Path) -> None:
    from onechip.planner.gpu_memory import activation_bytes, moe_workspace_bytes, select_rule
    from onechip.planner.rules import engine_rules

    path = _path(tmp_path)
    align = _activation(path, "h200", 2, 8192)
    assert align == _activation(path, "h200", 2, 8192, sets=["gdn-prefill-backend=triton"])
    text = json.loads((BOOTLOGS / corpus_entry(NEXT)["config_file"]).read_text(encoding="utf-8"))
    rule = select_rule(engine_rules("vllm-gpu").memory_rules, "0.34.0")
    moe = moe_workspace_bytes(text, dtype_bytes=2, tensor_parallel_size=2, tokens=8192)
    assert moe == 8192 * 10 * (2048 + 2048) * 2

    def act(scratch: int) -> int:
        return activation_bytes(rule, text, dtype_bytes=2, tensor_parallel_size=2, max_num_seqs=256,
                                max_num_batched_tokens=8192, scratch_bytes=scratch)  # fmt: skip

    assert act(15 * 2**20) == act(0) and act(moe + GIB) == act(0) + GIB
