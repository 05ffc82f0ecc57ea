"""vllm-tpu on models other than Gemma (issue 27), against the corpus's tpu-inference logs of Llama and Qwen
(tests/fixtures/bootlogs/corpus.json): the pool rule of tpu-inference 0.11.1 - 0.25.x, TP fewer than a slice's
chips, and the head_dim padding of the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB


def _plan(tmp_path: Path, name: str, chip: str, given_pool: bool, **extra: Any) -> tuple[Any, dict[str, Any]]:
    """The corpus entry's deployment planned with its logged weights (per chip x TP), or given its logged pool."""
    entry = corpus_entry(name)
    args, logged = entry["engine_args"], entry["logged"]
    tp = args["tensor_parallel_size"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text())
    path = sized_checkpoint(tmp_path / name, config, int(logged["hbm_used_after_model_gib_per_chip"] * GIB) * tp)
    kw: dict[str, Any] = {
        "max_model_len": args["max_model_len"],
        "tensor_parallel_size": tp,
        "block_size": args["block_size"],
        "engine_version": entry.get("rule_version") or "0.18.2",
        "multimodal": False,
    }
    if args["gpu_memory_utilization"] is not None:
        kw["utilization"] = args["gpu_memory_utilization"]
    if given_pool:
        kw["kv_cache_memory_bytes"] = int(logged["available_kv_cache_gib"] * GIB / tp)
    return plan_model(str(path), chip, "vllm-tpu", **(kw | extra)), logged


def test_from_0111_the_pool_is_the_capped_total_less_what_is_used(tmp_path: Path) -> None:
    # tpu-inference PR #734 (commit 6d0a9c190fe1, 2025-09-25, first tagged in v0.11.1): determine_available_memory
    # returns total x utilization - used ('Memory statistics' line), no longer (total - used) x utilization.
    # tpu-inference PR #1643's log (corpus tpu-v6e1-llama3-8b-util080-len1024-v0111), Meta-Llama-3-8B on one v6e
    # chip at 0.8: cap 25.0 GiB, 14.96 used, 10.04 available, 1,284 blocks of 64 = 82,176 tokens.
    plan, logged = _plan(tmp_path, "tpu-v6e1-llama3-8b-util080-len1024-v0111", "v6e-1", given_pool=False)
    table = 256 * -(-plan.max_model_len // plan.block_size) * 4  # the runner's block table (planner.runner_tables)
    assert plan.kv_pool_bytes == plan.cap_bytes - plan.weights_bytes - table
    assert plan.kv_pool_bytes / GIB == pytest.approx(logged["available_kv_cache_gib"], abs=0.01)
    assert plan.kv_bytes_per_token == 32 * 8 * 128 * 2 * 2
    assert plan.kv_tokens == pytest.approx(logged["kv_cache_tokens"], rel=0.001)


def test_the_018_default_utilization_is_090(tmp_path: Path) -> None:
    # vLLM's --gpu-memory-utilization default 0.9 on the 0.18.2rc1 core of tpu-inference PR #2115's run (corpus
    # tpu-v7x-llama32-1b-len1024-v0182): 'total_hbm_limit_cap_gb=85.27GiB' of 94.75 on one v7x device
    plan, logged = _plan(tmp_path, "tpu-v7x-llama32-1b-len1024-v0182", "tpu7x", given_pool=False)
    assert plan.utilization == 0.9
    assert plan.cap_bytes / GIB == pytest.approx(logged["total_hbm_limit_cap_gib"], abs=0.005)
    assert plan.kv_tokens == pytest.approx(logged["kv_cache_tokens"], rel=0.001)


def test_head_dim_64_is_not_padded_since_0120(tmp_path: Path) -> None:
    # tpu_inference/utils.py get_padded_head_dim keeps 64 (PR #1064, commit 88f207126, 2025-11-10, in v0.12.0) and
    # pads any other head_dim to a multiple of 128; runner/kv_cache_manager.py get_kv_cache_spec applies it to
    # every layer. Llama-3.2-1B (16 layers x 8 KV heads x 64) on v7x: 82.97 GiB -> 42,480 blocks of 64 =
    # 2,718,720 tokens, 32,768 B/token ('Init kv-cache ... regular_attn_shape=(num_blocks, (64, 4, 2, 128))').
    plan, logged = _plan(tmp_path, "tpu-v7x-llama32-1b-len1024-v0182", "tpu7x", given_pool=True)
    assert plan.kv_bytes_per_token == 16 * 8 * 64 * 2 * 2 == 32_768
    assert plan.num_blocks == logged["num_blocks"] == 42_480
    assert plan.kv_tokens == logged["kv_cache_tokens"] == 2_718_720
    # tpu-inference v0.11.1's get_padded_head_dim pads 64 to 128 as well: twice the bytes
    old, _ = _plan(tmp_path / "old", "tpu-v7x-llama32-1b-len1024-v0182", "tpu7x", True, engine_version="0.11.1")
    assert old.kv_bytes_per_token == 2 * plan.kv_bytes_per_token


def test_a_head_dim_off_128_is_padded_up_to_it(tmp_path: Path) -> None:
    # get_padded_head_dim: (head_dim + 127) // 128 * 128 for anything but 64 (tpu_inference/utils.py at
    # vllm-project/tpu-inference@b8692ff01fa1): a head_dim of 80 caches as 128 on vllm-tpu, as 80 on vLLM GPU
    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 80,
        "hidden_size": 640,
        "vocab_size": 1000,
        "max_position_embeddings": 4096,
    }
    path = sized_checkpoint(tmp_path / "m", config, 2 * GIB)
    kw: dict[str, Any] = {"max_model_len": 4096, "multimodal": False}
    for version in ("0.11.1", "0.18.0", "0.29.1"):
        tpu = plan_model(str(path), "v6e-1", "vllm-tpu", engine_version=version, **kw)
        assert tpu.kv_bytes_per_token == 4 * 2 * 128 * 2 * 2
        assert {layer.head_dim for layer in tpu.layers} == {128}
    gpu = plan_model(str(path), "h100", "vllm-gpu", **kw)
    assert gpu.kv_bytes_per_token == 4 * 2 * 80 * 2 * 2


def test_tp_below_the_slice_takes_tp_chips(tmp_path: Path) -> None:
    # tpu_inference/worker/tpu_worker.py init_device: self.devices = jax.devices()[:sharding_config.total_devices],
    # so TP 2 on a v6e-8 host sizes its pool on 2 chips ('Creating new model mesh | devices=2', 'total_hbm_limit_gb=
    # 62.49GiB'), not 8. Qwen2.5-1.5B-Instruct (corpus tpu-v6e2-qwen25-1.5b-tp2-util080-len1024-v0111): 47.1 GiB
    # over both chips, 28 x 2 x 128 x 2 x 2 B = 28,672 B/token, 27,561 blocks of 64 = 1,763,904 tokens.
    plan, logged = _plan(tmp_path, "tpu-v6e2-qwen25-1.5b-tp2-util080-len1024-v0111", "v6e-8", given_pool=False)
    assert plan.devices == 2
    # 2 x the catalog's 31.24 GiB v6e chip (later logs; this older libtpu reports 31.25)
    assert plan.memory_bytes / GIB == pytest.approx(logged["total_hbm_limit_gib"], abs=0.02)
    assert plan.kv_bytes_per_token == 28 * 2 * 128 * 2 * 2
    assert plan.kv_tokens == pytest.approx(logged["kv_cache_tokens"], rel=0.001)
    given, _ = _plan(tmp_path / "pool", "tpu-v6e2-qwen25-1.5b-tp2-util080-len1024-v0111", "v6e-8", given_pool=True)
    assert given.kv_tokens == pytest.approx(logged["kv_cache_tokens"], rel=0.0001)


def test_a_tp_that_does_not_divide_the_attention_heads_is_refused_on_tpu(tmp_path: Path) -> None:
    # Since TP may now be fewer than a slice's chips, TP 3 or 8 of a v6e-8 is a plan a user asks for. vLLM core's
    # ModelConfig.verify_with_parallel_config (vllm/config/model.py, run by VllmConfig on every platform) refuses
    # 'Total number of attention heads (12) must be divisible by tensor parallel size (8)' before tpu-inference
    # starts (engines.json vllm-tpu tp_heads_divide). Qwen2.5-1.5B-Instruct's published config: 12 heads, 2 KV.
    from onechip.errors import ConfigError

    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen2.5-1.5B-Instruct.json").read_text())
    assert (config["num_attention_heads"], config["num_key_value_heads"]) == (12, 2)
    path = str(sized_checkpoint(tmp_path / "qwen", config, 3 * 10**9))
    for tp in (8, 5):
        with pytest.raises(ConfigError, match=rf"num_attention_heads 12 is not divisible by it.*\({tp}\)'\)$"):
            plan_model(path, "v6e-8", "vllm-tpu", tensor_parallel_size=tp, max_model_len=1024)
    # a TP beyond the slice is said as that, before the heads
    with pytest.raises(ConfigError, match=r"^tensor_parallel_size 8 must be between 1 and the 4 chip\(s\) of v6e-4$"):
        plan_model(path, "v6e-4", "vllm-tpu", tensor_parallel_size=8, max_model_len=1024)
    # TP 4 divides the 12 heads; the 2 KV heads pad up to 4 (get_padded_num_heads), no KV-head check on TPU
    assert plan_model(path, "v6e-8", "vllm-tpu", tensor_parallel_size=4, max_model_len=1024).devices == 4
