"""TPU pool rules by tpu-inference version (issue 12: the rule changed between versions; a plan names the
version it applies), checked against the corpus's TPU boot logs (tests/fixtures/bootlogs/corpus.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.gpu_memory import tpu_moe_w13_padding_bytes
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB


def test_the_old_jax_runner_took_utilization_of_what_the_weights_left(tmp_path: Path) -> None:
    # tpu-inference PR #145 on v6e x4, TP 4: 3.74 GiB per chip after weights; its cache shape is 32 layers
    # x 8 KV heads (K and V) x 128, the Llama-3.1-8B geometry; 3,168 blocks x 256 = 811,008 tokens.
    entry = corpus_entry("tpu-v6e4-tp4-len4096")
    config = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text())
    weights = int(entry["logged"]["hbm_used_after_model_gib_per_chip"] * GIB) * 4
    path = sized_checkpoint(tmp_path / "llama", config, weights)
    old = plan_model(
        str(path),
        "v6e-4",
        "vllm-tpu",
        max_model_len=4096,
        tensor_parallel_size=4,
        block_size=256,
        engine_version="0.11.0",  # before tpu-inference v0.11.1 (PR #734): the (free x util) rule
        multimodal=False,
    )
    assert old.utilization == 0.9
    assert old.kv_tokens == pytest.approx(entry["logged"]["kv_cache_tokens"], rel=0.005)
    new = plan_model(
        str(path),
        "v6e-4",
        "vllm-tpu",
        max_model_len=4096,
        tensor_parallel_size=4,
        block_size=256,
        engine_version="0.29.1",
        multimodal=False,
    )
    table = 256 * (4096 // 256) * 4  # the runner's block table, 256 default sequences (planner.runner_tables)
    assert new.kv_pool_bytes == new.cap_bytes - new.weights_bytes - table  # total x util - weights - table
    assert new.kv_tokens != old.kv_tokens


def test_kv_heads_pad_to_tp_in_the_cache_from_029_too(tmp_path: Path) -> None:
    # tpu_inference/runner/kv_cache_manager.py get_kv_cache_spec (vllm-project/tpu-inference@b8692ff01fa1) pads a
    # layer's KV heads up to the TP size when fewer (utils.get_padded_num_heads); the 0.29.1 'num_kv_heads=2 is not
    # divisible by TP size 4' warning (corpus tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291) is about the k/v
    # projection weights, not the cache. 2 KV heads at TP 4 cache as 4, as under the 0.26 rule.
    config = {
        "model_type": "qwen3",
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 128,
        "hidden_size": 1024,
        "vocab_size": 1000,
        "max_position_embeddings": 4096,
    }
    path = sized_checkpoint(tmp_path / "q", config, 2 * GIB)
    kw: dict[str, Any] = {"max_model_len": 4096, "tensor_parallel_size": 4, "multimodal": False}
    new = plan_model(str(path), "v6e-4", "vllm-tpu", engine_version="0.29.1", **kw)
    old = plan_model(str(path), "v6e-4", "vllm-tpu", engine_version="0.26.1", **kw)
    assert new.kv_bytes_per_token == old.kv_bytes_per_token == 4 * 4 * 128 * 2 * 2


def _gemma4_plan(
    tmp_path: Path, name: str, tp: int, given_pool: bool, version: str = "0.29.1"
) -> tuple[Any, dict[str, Any]]:
    entry = corpus_entry(name)
    logged = entry["logged"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text())
    # the logged HBM holds the experts' gate/up padding, which the plan adds back (tpu_moe_w13_padding_bytes)
    rule = next(r for r in engine_rules("vllm-tpu").pool_rules if r.covers(version))
    text = config.get("text_config") or config
    padding = tpu_moe_w13_padding_bytes(rule, text, dtype_bytes=2, tensor_parallel_size=tp)
    weights = int(logged["hbm_used_after_model_gib_per_chip"] * GIB) * tp - padding
    path = sized_checkpoint(tmp_path / name, config, weights)
    kw: dict[str, Any] = (
        {"kv_cache_memory_bytes": int(logged["available_kv_cache_gib"] * GIB / tp)} if given_pool else {}
    )
    plan = plan_model(
        str(path),
        f"v6e-{tp}",
        "vllm-tpu",
        max_model_len=2048,
        tensor_parallel_size=tp,
        block_size=128,
        max_num_seqs=16,
        engine_version=version,
        multimodal=False,
        **kw,
    )
    return plan, logged


def test_at_tp4_the_two_head_full_layers_pad_to_the_sliding_layers_size(tmp_path: Path) -> None:
    # 0.29.1rc1 on v6e-4, Gemma 4 26B-A4B (corpus tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291, config copied from
    # a public copy of the Hub file): 'Init kv-cache | num_total_layers=30 | ... regular_attn_shape=(num_blocks,
    # (128, 8, 2, 256))'; the 5 full layers (2 KV heads x 512) pad to 4 heads at TP 4, as big as a sliding layer
    # (8 x 256): 30 x 8 x 2 x 256 x 2 B = 245,760 B/token, and 'TPU KV cache size: 235,008 tokens' (1,836 x 128).
    plan, logged = _gemma4_plan(tmp_path, "tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291", 4, given_pool=False)
    assert plan.kv_bytes_per_token == 30 * 8 * 2 * 256 * 2 == 245_760
    assert {layer.bytes_per_token for layer in plan.layers} == {8 * 2 * 256 * 2}
    assert plan.num_blocks == logged["num_blocks"] == 1836
    assert plan.kv_tokens == logged["kv_cache_tokens"] == 235_008


def test_the_026_image_sizes_each_layer_at_its_own_shape_too(tmp_path: Path) -> None:
    # vllm/vllm-tpu:v0.26.0 on v6e-4, Gemma 4 31B bf16 at TP 4 (corpus tpu-v6e4-gemma4-31b-tp4-len2048-v0231-tpu0260):
    # 56.58 GiB over the chips -> 526 blocks of 128 ('GPU KV cache size: 67,328 tokens'): 50 x 16 x 256 + 10 x 4 x 512,
    # K and V, bf16 = 901,120 B/token. One (128, 16, 2, 256) page for all 60 layers would give 482 blocks.
    plan, logged = _gemma4_plan(
        tmp_path, "tpu-v6e4-gemma4-31b-tp4-len2048-v0231-tpu0260", 4, given_pool=False, version="0.26.0"
    )
    assert plan.kv_bytes_per_token == (50 * 16 * 256 + 10 * 4 * 512) * 2 * 2 == 901_120
    assert plan.num_blocks == logged["num_blocks"] == 526
    assert plan.kv_tokens == logged["kv_cache_tokens"] == 67_328


def test_at_tp1_each_layer_keeps_its_own_shape(tmp_path: Path) -> None:
    # The same model at TP 1 (corpus tpu-v6e1-gemma4-26b-a4b-fp8dyn-len2048-v0291, 0.29.1rc1 on v6e-1): 0.75 GiB
    # of cache gives 27 blocks of 128 ('TPU KV cache size: 3,456 tokens'): 25 x 8 x 256 + 5 x 2 x 512, K and V,
    # bf16 = 225,280 B/token (27.5 MiB a block). One (128, 8, 2, 256) page for every layer would give 25 blocks.
    plan, logged = _gemma4_plan(tmp_path, "tpu-v6e1-gemma4-26b-a4b-fp8dyn-len2048-v0291", 1, given_pool=True)
    assert plan.kv_bytes_per_token == (25 * 8 * 256 + 5 * 2 * 512) * 2 * 2 == 225_280
    assert plan.num_blocks == logged["num_blocks"] == 27
    assert plan.kv_tokens == logged["kv_cache_tokens"] == 3_456
    # Gemma 4 12B (Gemma4UnifiedForConditionalGeneration, run through torchax; corpus
    # tpu-v6e1-gemma4-12b-len2048-v0291): 40 x 8 x 256 + 8 x 1 x 512 (attention_k_eq_v, one global KV head) =
    # 344,064 B/token; 4.19 GiB -> 102 blocks, 13,056 tokens
    plan, logged = _gemma4_plan(tmp_path, "tpu-v6e1-gemma4-12b-len2048-v0291", 1, given_pool=True)
    assert plan.kv_bytes_per_token == (40 * 8 * 256 + 8 * 1 * 512) * 2 * 2 == 344_064
    assert plan.kv_tokens == logged["kv_cache_tokens"] == 13_056


def test_a_v7x_chip_is_two_devices_and_tp_takes_them_one_by_one(tmp_path: Path) -> None:
    # tpu-inference#2803 (corpus tpu-v7x-qwen3-vl-8b-len4096-vmem-oom): TP 1 on a v7x sizes its pool on ONE
    # JAX device of 94.75 GiB ('total_hbm_limit'), cap 80.53 at 0.85, 16.58 GiB used after the model, 63.95
    # GiB of KV, 465,664 tokens; tpu-inference PR #903: the device limit is 96, not 192 GB.
    entry = corpus_entry("tpu-v7x-qwen3-vl-8b-len4096-vmem-oom")
    logged = entry["logged"]
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-VL-8B-Instruct.json").read_text())
    path = sized_checkpoint(tmp_path / "qwen3vl", config, int(logged["hbm_used_after_model_gib_per_chip"] * GIB))
    kw: dict[str, Any] = {"max_model_len": 4096, "utilization": 0.85, "multimodal": False}
    one = plan_model(str(path), "tpu7x", "vllm-tpu", **kw)
    assert one.memory_bytes / GIB == pytest.approx(logged["total_hbm_limit_gib"], abs=0.005)
    assert one.cap_bytes / GIB == pytest.approx(logged["total_hbm_limit_cap_gib"], abs=0.01)
    assert one.kv_tokens == pytest.approx(logged["kv_cache_tokens"], rel=0.001)
    assert any(w.code == "devices-per-chip" for w in one.warnings)
    both = plan_model(str(path), "tpu7x", "vllm-tpu", tensor_parallel_size=2, **kw)
    assert both.memory_bytes == 2 * one.memory_bytes
    assert not any(w.code == "devices-per-chip" for w in both.warnings)
    with pytest.raises(ConfigError, match="between 1 and the 2 devices"):
        plan_model(str(path), "tpu7x", "vllm-tpu", tensor_parallel_size=4, **kw)


def test_a_v7x_plan_says_tp_counts_devices_not_chips(tmp_path: Path) -> None:
    # accelerators.json tpu7x-1 memory_visible_source: one chip shows 2 JAX devices (tpu-inference#2803), so TP 2
    # is the two TensorCores of one chip, not two chips
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-VL-8B-Instruct.json").read_text())
    path = sized_checkpoint(tmp_path / "qwen3vl", config, 16 * GIB)
    both = plan_model(str(path), "tpu7x", "vllm-tpu", tensor_parallel_size=2, max_model_len=4096, multimodal=False)
    assert both.serve.tensor_parallel_size.reason.startswith("2 device(s) (TensorCores) of the plan")
    v5e = plan_model(str(path), "v5e-4", "vllm-tpu", tensor_parallel_size=4, max_model_len=4096, multimodal=False)
    assert v5e.serve.tensor_parallel_size.reason.startswith("4 chip(s) of the plan")
