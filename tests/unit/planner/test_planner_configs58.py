"""Boot logs the corpus held with no model config until 2026-12-06 (issue 27, 'every log planned'), planned from the
config copies now in tests/fixtures/bootlogs/configs (each file's _source): the figures each log prints about its own
cache come out of those fields, which is what says the copy is the served model's geometry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.kv_groups import StateCache, hybrid_block_size
from onechip.planner.recurrent import layer_roles, state_bytes
from onechip.schemas.common import GIB

NEMOTRON_4B = "gb10-nemotron3-nano-4b-fp8-kvfp8-len8192-util015-v0130nv"
CODER_480B = (
    "h20-qwen3-coder-480b-fp8-dp8-len262144-refused-v0101dev",
    "h20-qwen3-coder-480b-fp8-dp8-util095-len262144-refused-v0101dev",
)


def _config(entry: dict[str, Any]) -> dict[str, Any]:
    assert entry["config_file"], f"{entry['name']}: no config in the corpus"
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    return {k: v for k, v in config.items() if not k.startswith("_")}


# nvidia/NVIDIA-Nemotron-3-Nano-4B on vLLM 0.13.0 (NVIDIA's 26.01 container, GB10) with fp8 KV logs 'Updating
# mamba_ssm_cache_dtype to 'float16'' (no dtype in the config: 0.13.0 - 0.19.1 default), 'Setting attention block
# size to 992 tokens' and 'Padding mamba page size by 0.35%': conv (96 x 80 + 2 x 8 x 128) x 3 x 2 B + temporal
# 96 x 80 x 128 x 2 B = 2,024,448 B; an fp8 attention page is 8 KV heads x 128 x 2 x 1 B = 2,048 B a token, so
# 16 x cdiv(2,024,448, 16 x 2,048) = 992 tokens. 4 attention and 21 Mamba layers ('4 GQA + 21 Mamba-2', the model card).
def test_nemotron3_nano_4b_state_and_block_from_its_log() -> None:
    text = _config(corpus_entry(NEMOTRON_4B)) | {"mamba_ssm_cache_dtype": "float16"}
    state = state_bytes(text, "nemotron_h", ["NemotronHForCausalLM"], model_dtype_bytes=2, tensor_parallel_size=1)
    assert state == 9728 * 3 * 2 + 96 * 80 * 128 * 2 == 2_024_448
    assert hybrid_block_size(8 * 128 * 2 * 1, state, 16, StateCache("none", 16, 128, 131072)) == 992
    assert round(100 * (992 * 2048 - state) / state, 2) == 0.35
    roles = layer_roles(text, "nemotron_h")
    assert sum(a for a, _ in roles) == 4 and sum(s for _, s in roles) == 21


def test_nemotron3_nano_4b_given_its_logged_pool(tmp_path: Path) -> None:
    # 'Available KV cache memory: 11.15 GiB', 'GPU KV cache size: 208,320 tokens' (210 blocks of 992) and
    # 'Maximum concurrency for 8,192 tokens per request: 98.20x'; the card's memory sizes nothing scored here
    entry = corpus_entry(NEMOTRON_4B)
    args, logged = entry["engine_args"], entry["logged"]
    path = sized_checkpoint(tmp_path / "m", _config(entry), int(logged["model_weights_gib"] * GIB))
    plan = plan_model(
        str(path), "gb10", "vllm-gpu", engine_version=entry["vllm_version"], max_model_len=args["max_model_len"],
        kv_cache_dtype=args["kv_cache_dtype"], max_num_batched_tokens=args["max_num_batched_tokens"],
        enable_prefix_caching=args["enable_prefix_caching"], multimodal=False,
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB),
    )  # fmt: skip
    assert plan.kv_tokens_logged == logged["kv_cache_tokens"] == 208_320
    assert plan.max_concurrency == pytest.approx(logged["max_concurrency"], abs=0.01)


@pytest.mark.parametrize("name", CODER_480B)
def test_qwen3_coder_480b_refused_given_its_logged_pool(tmp_path: Path, name: str) -> None:
    # vllm-project/recipes#12: data-parallel ranks each hold the whole attention stack, so the pool is per rank at the
    # full geometry: '62.00 GiB KV cache is needed' for 262,144 tokens is 253,952 B a token (62 layers x 8 KV heads x
    # 128 x 2 x 2 B); the engine's estimate of what fits is the largest length in 16-token blocks under the pool it
    # printed to 2 decimals (so within one block of it)
    entry = corpus_entry(name)
    logged, args = entry["logged"], entry["engine_args"]
    path = sized_checkpoint(tmp_path / "m", _config(entry), 2)
    plan = plan_model(
        str(path), "gpu:1024GiB", max_model_len=args["max_model_len"], engine_version="0.10.1",
        kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), multimodal=False,
    )  # fmt: skip
    assert plan.kv_bytes_per_token == round(logged["kv_needed_one_request_gib"] * GIB / 262_144) == 253_952
    assert plan.max_concurrency < 1  # refused, as the engine did
    assert abs(plan.kv_tokens_logged - logged["estimated_max_model_len_tokens"]) <= 16
