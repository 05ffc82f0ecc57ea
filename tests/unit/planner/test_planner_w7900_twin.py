"""The W7900 row of the corpus (w7900-llama3-8b-len8192-v041-rocm: +13.5% out of sample at 47.98 GiB, +2.0% at the
44.98 GiB vLLM printed on the same owner's W7900, accelerators.json radeon-pro-w7900) against its CUDA twin.

The same notes (search-index file id 43436877435: lhl's 2024-05 W7900 notes) run the same command on an RTX 3090
the same day: 'Initializing an LLM engine (v0.4.1)' (a build whose line numbers differ from the ROCm image's by one:
llm_engine.py:98 against :99), NousResearch/Meta-Llama-3-8B, benchmark_throughput.py defaults (max_seq_len 8192,
gpu_memory_utilization 0.9, bf16, CUDA graphs), 'Loading model weights took 14.9595 GB', and log '# GPU blocks: 2354,
# CPU blocks: 2048' (W7900: 12,003). The V0 rule of 0.4.1
(vllm/worker/worker.py determine_num_available_blocks of the 0.4.1 sdist: total x utilization - (free at
init_device - free after profile_run)) holds on the CUDA card; on the W7900 most of the miss was the card's total.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.rules import accelerator
from onechip.schemas.common import GIB

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


def test_the_041_rule_on_the_w7900_states_a_range_that_holds_the_log(tmp_path: Path) -> None:
    # No rocm_rules cover 0.4.1, so the estimate stays on the rule's CUDA figures and the range's low end carries
    # the most non-torch memory a ruled ROCm release took (planner.core._rocm_unruled_bytes): 23.44 GiB is inside it
    budget = _plan(tmp_path, "radeon-pro-w7900").memory_budget
    assert budget is not None
    logged_pool = corpus_entry(W7900)["logged"]["num_gpu_blocks"] * BLOCK_BYTES  # 23.44 GiB
    assert budget.kv_cache_low_bytes <= logged_pool <= budget.kv_cache_high_bytes


def test_the_041_rule_estimates_the_w7900_pool_at_the_total_its_owner_measured(tmp_path: Path) -> None:
    # accelerators.json radeon-pro-w7900 plans at 44.98 GiB, the 'total_gpu_memory=44.98GiB' vLLM 0.6.4 printed on the
    # same owner's W7900 (lhl's 'vLLM on RDNA3' notes; corpus w7900-llama31-8b-len131072-v064dev-rocm, scored apart):
    # 23.91 GiB planned against the 23.44 GiB its 12,003 blocks hold, +2.0% (+13.5% at the other host's 47.98 GiB)
    plan = _plan(tmp_path, "radeon-pro-w7900")
    budget = plan.memory_budget
    assert budget is not None
    logged_pool = corpus_entry(W7900)["logged"]["num_gpu_blocks"] * BLOCK_BYTES  # 23.44 GiB
    assert budget.kv_cache_bytes == pytest.approx(logged_pool * 1.020, rel=0.001)
    assert "memory-measured-range" in {w.code for w in plan.warnings}


# ROCR-Runtime rocm-6.0.0 (the runtime of vLLM 0.4.1's Dockerfile.rocm base, rocm/pytorch:rocm6.0 ... pytorch_2.1.1):
# src/core/util/flag.h DEFAULT_SCRATCH_SINGLE_LIMIT, reserved once per process per GPU at the first queue
# (amd_aql_queue.cpp -> GpuAgent::ReserveScratch); src/core/runtime/amd_gpu_agent.cpp InitScratchPool caps the
# scratch aperture at 4 GiB and AcquireQueueScratch keeps at most pool >> 3 bound to queues as "small" scratch.
# Larger scratch is single-use and goes back to the scratch cache, whose free bytes HSA_AMD_AGENT_INFO_MEMORY_AVAIL
# adds back to the available memory that hipMemGetInfo reports (clr rocm-6.0.0 rocdevice.cpp globalFreeMemory).
ROCR60_SCRATCH_RESERVE = 146800640
ROCR60_SCRATCH_APERTURE = 4 * 2**30


def test_at_its_owners_measured_total_the_w7900_holds_what_rocr_scratch_can_beyond_its_cuda_twin() -> None:
    weights = 14.9595 * GIB  # 'Loading model weights took 14.9595 GB' on both cards (V0 prints GB for GiB)
    # the lesser of the W7900's two measured totals (accelerators.json radeon-pro-w7900 memory_visible_source):
    # vLLM's 'total_gpu_memory=44.98GiB' on the same owner's card; hipMemGetInfo's total under ROCm 6.0 is the KFD
    # VRAM size (clr rocm-6.0.0 hip_memory.cpp: *total = info().globalMemSize_; ROCR rocm-6.0.0
    # amd_memory_region.cpp GetPhysicalSize()), so a card that reports less VRAM reports a smaller total
    w7900 = accelerator("radeon-pro-w7900").memory_bytes
    rtx3090 = accelerator("rtx3090").memory_bytes
    assert w7900 == pytest.approx(44.98 * GIB, abs=0.005 * GIB)
    held_w7900 = 0.9 * w7900 - weights - corpus_entry(W7900)["logged"]["num_gpu_blocks"] * BLOCK_BYTES
    held_twin = 0.9 * rtx3090 - weights - TWIN_BLOCKS * BLOCK_BYTES
    gap = held_w7900 - held_twin
    assert gap == pytest.approx(0.41 * GIB, abs=0.01 * GIB)  # 2.08 - 1.66 GiB held beyond the weights (3.12 at 47.98)
    scratch_most = ROCR60_SCRATCH_RESERVE + (ROCR60_SCRATCH_APERTURE >> 3)  # 0.64 GiB
    assert gap < scratch_most
