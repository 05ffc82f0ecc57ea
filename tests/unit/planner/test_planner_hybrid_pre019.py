"""Hybrid attention + recurrent-state models on vLLM 0.10.2 - 0.18.x (engines.json hybrid_rules before 0.19.0).

Expected figures come from the 2x H200 Qwen3-Next-80B-A3B boot log of the corpus (vLLM 0.10.2,
tests/fixtures/bootlogs/h200x2-qwen3-next-80b-a3b-tp2-v0102.log) or from the engine's source of the release named in
each test, read in the vllm sdists from PyPI (0.15.x: the wheels): vllm/model_executor/models/config.py
HybridAttentionMambaModelConfig and MambaModelConfig, vllm/v1/kv_cache_interface.py MambaSpec,
vllm/v1/core/kv_cache_utils.py and vllm/model_executor/layers/mamba/mamba_utils.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import kv_geometry
from onechip.planner.kv_groups import StateCache, hybrid_block_size, kv_layout
from onechip.planner.recurrent import state_bytes, state_dtype_bytes
from onechip.schemas.common import GIB

NEXT = "h200x2-qwen3-next-80b-a3b-tp2-v0102"
ARCH = ["Qwen3NextForCausalLM"]


def _next_config() -> dict[str, Any]:
    return json.loads((BOOTLOGS / corpus_entry(NEXT)["config_file"]).read_text(encoding="utf-8"))


def _plan(tmp_path: Path, version: str, **kwargs: Any) -> Any:
    path = tmp_path / "m"
    if not path.exists():
        path = sized_checkpoint(path, _next_config(), 74 * GIB)
    args: dict[str, Any] = {"chip": "gpu:1024GiB", "tensor_parallel_size": 2, "max_model_len": 262144}
    args.update(kwargs)
    chip = args.pop("chip")
    return plan_model(str(path), chip, "vllm-gpu", engine_version=version, multimodal=False, **args)


# vLLM 0.10.2 gated_delta_net_state_shape at TP 2: conv (2 x 16 x 128 + 32 x 128) / 2 x (4 - 1), temporal
# 32 / 2 x 128 x 128, both in the model dtype (gated_delta_net_state_dtype(model_dtype, mamba_cache_dtype)):
# 548,864 B. The log: 'Setting attention block size to 544 tokens' (1 KV head x 256 x 2 x 2 B = 1,024 B/token:
# 16 x cdiv(548,864, 16 x 1,024)) and 'Padding mamba page size by 1.49%' (544 x 1,024 = 557,056 B).
def test_qwen3_next_state_block_and_padding_as_logged() -> None:
    text = _next_config()
    state = state_bytes(text, "qwen3_next", ARCH, model_dtype_bytes=2, tensor_parallel_size=2)
    assert state == 24_576 + 524_288 == 548_864
    cache = StateCache("none", 16, 2048, 262144, user_block_aligns=False)
    assert hybrid_block_size(1024, state, 16, cache) == 544
    assert round(100 * (544 * 1024 - state) / state, 2) == 1.49
    # 0.10.2: 'cache_config.block_size is None or cache_config.block_size < attn_block_size' -> a larger block
    # is kept as given, a smaller one replaced by the 16-aligned figure (not re-aligned to the user's block)
    assert hybrid_block_size(1024, state, 1000, cache) == 1000
    assert hybrid_block_size(1024, state, 96, cache) == 544


# The log's pool ('Available KV cache memory: 44.59 GiB') gives its lines: 12 attention + 36 GDN layers in groups
# of 12 (4 groups), 44.59 GiB // (12 x 557,056 B) = 7,162 blocks (num_gpu_blocks); 'GPU KV cache size: 973,760
# tokens' (7,162 // 4 x 544); 'Maximum concurrency for 262,144 tokens per request: 14.77x' (7,162 / (482 + 3)).
def test_qwen3_next_0102_log_given_the_logged_pool(tmp_path: Path) -> None:
    logged = corpus_entry(NEXT)["logged"]
    plan = _plan(tmp_path, "0.10.2", kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB))
    assert plan.kv_tokens_logged == logged["kv_cache_tokens"] == 973_760
    assert round(plan.max_concurrency, 2) == logged["max_concurrency"] == 14.77
    assert plan.memory_budget is not None and plan.memory_budget.min_block_size == 544


# Prefix caching by release (model config.py MambaModelConfig, kv_cache_interface.py MambaSpec):
#  - 0.10.2: 'disabling prefix caching since it is not yet supported' for every hybrid -> 1 state page per request;
#  - 0.11.1: kept only for a class with supports_mamba_prefix_caching (not Qwen3-Next) -> still 1 page;
#  - 0.16.0: mamba_cache_mode 'align' for such a class -> 2 pages per state group: 482 + 2 x 3 = 488.
def test_prefix_caching_of_a_gdn_model_by_release(tmp_path: Path) -> None:
    pool = int(44.59 * GIB)
    for version, pages in (("0.10.2", 485), ("0.11.1", 485), ("0.16.0", 488)):
        plan = _plan(tmp_path, version, kv_cache_memory_bytes=pool, enable_prefix_caching=True)
        assert round(plan.max_concurrency, 2) == round(7162 / pages, 2), version


# kv_cache_utils.py _get_kv_cache_groups_uniform_page_size: layers per group = min over specs in 0.10.2 - 0.11.x;
# the most when 'max_num_layers < min_num_layers * 1.25' in 0.12.0 - 0.17.x; '* 1.5' from 0.18.0. 4 attention and
# 5 Mamba2 layers: 4 per group (1 + cdiv(5, 4) = 3 groups) before 0.18, 5 per group (2 groups) from it.
def test_group_size_rule_by_release() -> None:
    text = {"num_hidden_layers": 9, "hybrid_override_pattern": "M*M*M*M*M", "mamba_num_heads": 8,
            "mamba_head_dim": 64, "n_groups": 1, "ssm_state_size": 128, "conv_kernel": 4, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 128, "hidden_size": 1024}  # fmt: skip
    state = state_bytes(text, "nemotron_h", ["NemotronHForCausalLM"], model_dtype_bytes=2, tensor_parallel_size=1)
    geometry = kv_geometry(text, kv_dtype_bytes=2, family="nemotron_h", state_bytes_per_gpu=state)
    for ratio, groups, size in ((1.0, 3, 4), (1.25, 3, 4), (1.5, 2, 5)):
        layout = kv_layout(geometry, 16, 1, StateCache("none", 16, 128, 4096), group_size_max_ratio=ratio)
        assert (len(layout.groups), layout.group_size) == (groups, size), ratio


# State dtypes by release (mamba_utils.py MambaStateDtypeCalculator, config.py MODELS_CONFIG_MAP):
#  - gated_delta_net_state_dtype takes no SSM dtype before 0.17.0: --mamba-ssm-cache-dtype float32 leaves a GDN
#    temporal state in the conv dtype; from 0.17.0 it is float32 (24,576 + 2 x 524,288 B at TP 2);
#  - NemotronHForCausalLMConfig (from 0.13.0) turns an 'auto' SSM dtype into the config's, else float16; before
#    0.13.0 there is no such entry and 'auto' is the conv dtype.
def test_state_dtypes_by_release(tmp_path: Path) -> None:
    text = _next_config()
    kw: dict[str, Any] = {"model_dtype_bytes": 2, "tensor_parallel_size": 2, "mamba_ssm_cache_dtype": "float32"}
    assert state_bytes(text, "qwen3_next", ARCH, gdn_ssm_dtype_flag=False, **kw) == 548_864
    assert state_bytes(text, "qwen3_next", ARCH, **kw) == 24_576 + 2 * 524_288
    for default, ssm in ((None, 2), ("float16", 2), ("float32", 4)):
        assert state_dtype_bytes({}, "nemotron_h", [], 2, nemotron_h_ssm_default=default) == (2, ssm)
    stated = {"mamba_ssm_cache_dtype": "float32"}  # the config's field wins over the default
    assert state_dtype_bytes(stated, "nemotron_h", [], 2, nemotron_h_ssm_default="float16") == (2, 4)
    pool = int(44.59 * GIB)
    old = _plan(tmp_path, "0.16.0", kv_cache_memory_bytes=pool, mamba_ssm_cache_dtype="float32")
    new = _plan(tmp_path, "0.17.0", kv_cache_memory_bytes=pool, mamba_ssm_cache_dtype="float32")
    assert old.memory_budget is not None and old.memory_budget.min_block_size == 544
    # 0.17.0: 16 x cdiv(1,073,152, 16 x 1,024) = 1,056
    assert new.memory_budget is not None and new.memory_budget.min_block_size == 1056


# HybridAttentionMambaModelConfig: kernel_block_alignment_size 32 instead of 16 for head_size 256 on SM 10.x with
# FlashInfer (or no backend chosen) in 0.11.1 - 0.17.x (flashinfer#1993), gone in 0.18.0. With fp8 KV at TP 2
# (512 B/token) Qwen3-Next's block is 32 x cdiv(548,864, 32 x 512) = 1,088 on a B200, 16 x 67 = 1,072 elsewhere.
def test_blackwell_head256_alignment_by_release(tmp_path: Path) -> None:
    pool = int(40 * GIB)
    for chip, version, block in (("b200", "0.12.0", 1088), ("h200", "0.12.0", 1072), ("b200", "0.18.0", 1072),
                                 ("b200", "0.10.2", 1072)):  # fmt: skip
        plan = _plan(tmp_path, version, chip=chip, kv_cache_dtype="fp8", kv_cache_memory_bytes=pool)
        assert plan.memory_budget is not None and plan.memory_budget.min_block_size == block, (chip, version)


def test_pre_019_refusals_are_one_line(tmp_path: Path) -> None:
    # vLLM's model registry has Qwen3-Next first in 0.10.2 (catalog/vllm_architectures.json, generated from the
    # sdists: not in 0.10.1.1's), as the hybrid rules have its state from 0.10.2 on
    with pytest.raises(ConfigError, match="does not serve Qwen3NextForCausalLM: .*first in vLLM 0.10.2") as caught:
        _plan(tmp_path, "0.10.1", max_model_len=8192)
    assert "\n" not in str(caught.value)
    # MambaSpec.max_memory_usage_bytes leaves out num_speculative_blocks before 0.15.0: not modelled
    with pytest.raises(ConfigError, match="speculative decoding of a hybrid model is planned from vLLM 0.15.0"):
        _plan(tmp_path, "0.14.0", max_model_len=8192, num_speculative_tokens=2)


def test_qwen3_next_mtp_layers_are_vllms_default_when_its_config_names_none(tmp_path: Path) -> None:
    # Qwen3-Next's published config.json (configs/Qwen--Qwen3-Next-80B-A3B-Instruct.json) has no MTP field; vLLM's
    # qwen3_next_mtp.py Qwen3NextMultiTokenPredictor reads getattr(config, 'num_nextn_predict_layers', 1): one MTP
    # layer, whose attention joins the KV layout (as the Qwen3.5 corpus row's 'one MTP attention layer')
    config = _next_config()
    assert "mtp_num_hidden_layers" not in config and "num_nextn_predict_layers" not in config
    plain = _plan(tmp_path, "0.19.0", max_model_len=8192)
    spec = _plan(tmp_path, "0.19.0", max_model_len=8192, num_speculative_tokens=2)
    assert len(spec.layers) == len(plain.layers) + 1
    two = tmp_path / "two"
    sized_checkpoint(two, {**config, "num_nextn_predict_layers": 2}, 74 * GIB)
    both = plan_model(str(two), "gpu:1024GiB", "vllm-gpu", engine_version="0.19.0", multimodal=False,
                      tensor_parallel_size=2, max_model_len=8192, num_speculative_tokens=2)  # fmt: skip
    assert len(both.layers) == len(plain.layers) + 2
    with pytest.raises(ConfigError, match="num_nextn_predict_layers"):
        bad = tmp_path / "bad"
        sized_checkpoint(bad, {**config, "num_nextn_predict_layers": 0}, 74 * GIB)
        plan_model(str(bad), "gpu:1024GiB", "vllm-gpu", engine_version="0.19.0", multimodal=False,
                   tensor_parallel_size=2, max_model_len=8192, num_speculative_tokens=2)  # fmt: skip
