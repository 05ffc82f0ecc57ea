"""The W7900 row of the corpus (w7900-llama3-8b-len8192-v041-rocm, +13.5% out of sample) against its CUDA twin.

The same notes (search-index file id 43436877435: lhl's 2024-05 W7900 notes) run the same command on an RTX 3090
the same day: 'Initializing an LLM engine (v0.4.1)' (a build whose line numbers differ from the ROCm image's by one:
llm_engine.py:98 against :99), NousResearch/Meta-Llama-3-8B, benchmark_throughput.py defaults (max_seq_len 8192,
gpu_memory_utilization 0.9, bf16, CUDA graphs), 'Loading model weights took 14.9595 GB', and log '# GPU blocks: 2354,
# CPU blocks: 2048' (W7900: 12,003). The V0 rule of 0.4.1
(vllm/worker/worker.py determine_num_available_blocks of the 0.4.1 sdist: total x utilization - (free at
init_device - free after profile_run)) holds on the CUDA card, so the W7900's miss is on the ROCm side.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model

W7900 = "w7900-llama3-8b-len8192-v041-rocm"
BLOCK_BYTES = 32 * 8 * 128 * 2 * 2 * 16  # Meta-Llama-3-8B: layers x KV heads x head_dim x (K,V) x bf16 x 16 tokens
TWIN_BLOCKS = 2354  # the RTX 3090 run of the same notes: '# GPU blocks: 2354, # CPU blocks: 2048'


def _plan(tmp_path: Path, chip: str):  # type: ignore[no-untyped-def]
    entry = corpus_entry(W7900)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / chip, config, entry["weights_total_bytes"])
    return plan_model(
        str(path), chip, "vllm-gpu", max_model_len=8192, utilization=0.9, engine_version="0.4.1", multimodal=False
    )


def test_the_041_rule_holds_on_the_cuda_twin(tmp_path: Path) -> None:
    # 4 GiB of swap (EngineArgs.swap_space) over 2,048 CPU blocks: the block is 2 MiB on both cards
    assert 4 * 2**30 // BLOCK_BYTES == 2048
    plan = _plan(tmp_path, "rtx3090")
    budget = plan.memory_budget
    assert budget is not None
    logged_pool = TWIN_BLOCKS * BLOCK_BYTES  # 4.60 GiB
    assert budget.kv_cache_low_bytes <= logged_pool <= budget.kv_cache_high_bytes
    assert plan.kv_tokens_logged == pytest.approx(TWIN_BLOCKS * 16, rel=0.02)  # 38,112 planned, 37,664 logged


@pytest.mark.xfail(
    strict=True,
    reason="not settled: the W7900 run under ROCm 6.0 holds about 3.1 GiB more after profiling than the rule "
    "(and than the CUDA twin), or its card reported about 44.5 GiB, not the catalog's 47.98; the log prints neither",
)
def test_the_041_rule_on_the_w7900(tmp_path: Path) -> None:
    budget = _plan(tmp_path, "radeon-pro-w7900").memory_budget
    assert budget is not None
    logged_pool = corpus_entry(W7900)["logged"]["num_gpu_blocks"] * BLOCK_BYTES  # 23.44 GiB
    assert budget.kv_cache_low_bytes <= logged_pool <= budget.kv_cache_high_bytes
