"""vllm-tpu: `--set max-model-len=auto` and hybrid recurrent-state models, each against the engine's source.

Auto-fit is vLLM's engine core, not the platform's: vllm/v1/engine/core.py passes the worker's
determine_available_memory to vllm/v1/core/kv_cache_utils.py get_kv_cache_configs, whose _auto_fit_max_model_len
runs on TPU as on GPU (tpu-inference's TPUWorker.determine_available_memory, tpu_inference/worker/tpu_worker.py,
sums the slice's HBM: one worker), the null block held back from 0.29.0. TpuPlatform.check_and_update_config has
already chosen the block size from the derived length. Hybrids: tpu-inference (read at b8692ff01fa1) runs Qwen's
gated delta net (tpu_inference/layers/common/gdn_attention.py, PR #2004, first tagged v0.18.0) and no Mamba mixer.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.rules import engine_rules


def _config(name: str) -> dict:
    return json.loads((BOOTLOGS / "configs" / f"{name}.json").read_text(encoding="utf-8"))


def test_auto_fit_on_a_tpu_lowers_the_length_to_the_pool_less_the_null_block(tmp_path: Path) -> None:
    # Llama-3.1-8B bf16 on v6e-1 (vllm-tpu 0.30.0): one 131,072-token request needs 16 GiB of KV, the pool less so
    llama = _config("meta-llama--Llama-3.1-8B-Instruct")
    path = sized_checkpoint(tmp_path / "m", llama, 16_060_522_496)
    plan = plan_model(str(path), "v6e", "vllm-tpu", sets=["max-model-len=auto"])
    block = engine_rules("vllm-tpu").block_size_for(llama["max_position_embeddings"], None)
    assert plan.block_size == block  # chosen for the derived length, kept after the fit
    assert plan.fits and plan.max_model_len == (plan.num_blocks - 1) * block < llama["max_position_embeddings"]
    said = [w.message for w in plan.warnings if w.code == "max-model-len-auto-fit"]
    assert len(said) == 1 and f"lowers max_model_len to {plan.max_model_len:,}" in said[0]
    assert plan.serve.max_model_len is not None and plan.serve.max_model_len.value == plan.max_model_len


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("ibm-granite--granite-4.0-h-1b", "tpu-inference has no Mamba mixer"),
        ("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B", "tpu-inference has no Mamba mixer"),
        ("Qwen--Qwen3.5-4B", "tpu-inference serves it from 0.18.0"),
        ("Qwen--Qwen3-Next-80B-A3B-Instruct", "_maybe_set_compact_mamba_num_blocks_override"),
    ],
)
def test_a_hybrid_on_a_tpu_is_refused_with_what_the_engine_lacks(tmp_path: Path, config: str, said: str) -> None:
    path = sized_checkpoint(tmp_path / "m", _config(config), 2_000_000_000)
    with pytest.raises(ConfigError, match=said) as err:
        plan_model(str(path), "v6e-8", "vllm-tpu", max_model_len=4096)
    assert "\n" not in str(err.value)


def test_auto_fit_with_no_pool_says_none_not_a_negative_size(tmp_path: Path) -> None:
    # Llama-3.1-8B bf16 (14.96 GiB) on v5e-1: 15.75 GiB x 0.92 = 14.49 GiB cap, so the weights leave no pool; the
    # note said 'the pool holds -0.50 GiB' (the shortfall less the null block), a size no pool has
    llama = _config("meta-llama--Llama-3.1-8B-Instruct")
    path = sized_checkpoint(tmp_path / "m", llama, 16_060_522_496)
    plan = plan_model(str(path), "v5e", "vllm-tpu", sets=["max-model-len=auto"])
    assert not plan.fits
    said = [w.message for w in plan.warnings if w.code == "max-model-len-auto-fit"]
    assert len(said) == 1 and "holds no room for a request; not one token fits" in said[0] and "-0." not in said[0]


def test_auto_fit_on_a_pinned_pool_smaller_than_the_null_block_says_no_room(tmp_path: Path) -> None:
    # --kv-cache-memory 1,000,000 B on an H100: less than the one 16-token block (2 MiB of Llama-3.1-8B's KV) vLLM
    # holds back from 0.29.0, so what a request can use is below zero, said as no room (it was '-0.00 GiB')
    llama = _config("meta-llama--Llama-3.1-8B-Instruct")
    path = sized_checkpoint(tmp_path / "m", llama, 16_060_522_496)
    plan = plan_model(str(path), "h100", "vllm-gpu", sets=["max-model-len=auto"], kv_cache_memory_bytes=1_000_000)
    said = [w.message for w in plan.warnings if w.code == "max-model-len-auto-fit"]
    assert len(said) == 1 and "holds no room for a request; not one token fits" in said[0] and "-0." not in said[0]
