"""The CUDA-graph term of the vLLM GPU budget (from 0.20.0: estimated at boot and subtracted from the KV pool),
against the boot-log corpus (tests/fixtures/bootlogs/corpus.json): how many graphs vLLM captures, and the
held-out vLLM 0.30.0 L4 log's 'CUDA graph pool memory: ... 0.12 GiB (estimated)'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip import catalog
from onechip.planner import plan_model
from onechip.planner.gpu_memory import cuda_graph_count
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest

L4 = "l4-gemma4-26b-a4b-w4a16-len2048-v0300"


@pytest.mark.parametrize(
    ("seqs", "tokens", "graphs"),
    [
        # l4-...-v0300.log: 'cudagraph_capture_sizes': [1, 2, 4, 8, 16, 24, 32]; the capture prints
        # 'Capturing CUDA graphs (PIECEWISE): 7/7' then '(FULL): 5/5' (max_num_seqs 16, 2,048 tokens)
        (16, 2048, 7 + 5),
        # the 0.19.0 H100 sweep (max_num_seqs 1024, 8,192 tokens): 'PIECEWISE=51 (largest=512), FULL=51'
        (1024, 8192, 51 + 51),
        # rtx3090ti-gemma4-e4b-len32768-v0221.log (256 sequences, 2,048 tokens on a card under 70 GiB):
        # 'Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)'
        (256, 2048, 51 + 35),
    ],
)
def test_graph_count_is_the_one_the_logs_print(seqs: int, tokens: int, graphs: int) -> None:
    assert cuda_graph_count(max_num_seqs=seqs, max_num_batched_tokens=tokens, max_capture_size=512) == graphs


def test_capture_sizes_never_exceed_the_batch() -> None:
    # vllm/config/vllm.py _set_cudagraph_sizes: the ceiling min(2 x 32, 512) is cut to max_num_batched_tokens
    # 40: sizes 1, 2, 4, 8, 16, 24, 32, 40 (PIECEWISE); FULL for the 7 that 32 sequences can fill
    assert cuda_graph_count(max_num_seqs=32, max_num_batched_tokens=40, max_capture_size=512) == 8 + 7


def _l4_plan(tmp_path: Path) -> Any:
    entry = corpus_entry(L4)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    weights = int(entry["logged"]["model_weights_gib"] * GIB)  # 'Model loading took 14.8 GiB memory'
    return plan_model(
        str(sized_checkpoint(tmp_path / "m", config, weights)),
        "l4",
        "vllm-gpu",
        max_model_len=2048,
        utilization=0.92,
        max_num_seqs=16,
        engine_version="0.30.0",
        multimodal=False,
    )


def test_graph_term_on_the_held_out_l4_log(tmp_path: Path) -> None:
    # Held out: the per-graph range comes from the 0.19.0 sweep only (engines.json). The log:
    # 'CUDA graph pool memory: 0.06 GiB (actual), 0.12 GiB (estimated)'; the estimate is what is subtracted
    # ('--gpu-memory-utilization=0.9200 is equivalent to ... 0.9145': 0.0055 x 22.03 GiB = 0.12 GiB).
    budget = _l4_plan(tmp_path).memory_budget
    assert budget is not None
    logged = corpus_entry(L4)["logged"]["cuda_graph_pool_estimated_gib"]
    assert budget.cuda_graph_bytes / GIB == pytest.approx(logged, abs=0.03)


def test_activation_peak_of_the_v2_runner_on_the_l4_log(tmp_path: Path) -> None:
    # The log's final line prints 'peak activation' = the profiling run's transient peak + the CUDA-graph
    # estimate (vllm 0.32.0 gpu_worker.py): 1.34 - 0.12 = 1.22 GiB, and 20.27 - 15.13 - 1.22 - 0.12 = 3.80 =
    # 'Available KV cache memory: 3.8 GiB'. Text-only ('All limits of multimodal modalities ... set to 0'), so the
    # token ids enter the compiled graph and the cold compile ('compilation: 84.25 s') benchmarks the embedding
    # gather on a copy of the 262,144 x 2,816 bf16 table plus its [2,048, 2,816] output
    # (planner.gpu_memory.cold_compile_bytes: torch 2.13.0 Inductor codegen_kernel_benchmark's rand_strided
    # arguments, inside vLLM 0.30.0's profiling window). The Marlin MoE workspace (MarlinExperts.workspace_shapes,
    # 2 x 2,048 x 8 x 2,816 x 2 B, vllm 0.30.0 marlin_moe.py) is taken after the compile and kept, so vLLM counts it
    # in 'consumed', not in the transient; the planner's activation term holds both.
    budget = _l4_plan(tmp_path).memory_budget
    assert budget is not None
    copy = (262_144 + 2048) * 2816 * 2
    workspace = 2 * 2048 * 8 * 2816 * 2
    assert budget.activation_peak_bytes == copy
    logged = corpus_entry(L4)["logged"]
    transient = logged["activation_peak_gib"] - logged["cuda_graph_pool_estimated_gib"]
    assert (copy - workspace) / GIB == pytest.approx(transient, abs=0.015)  # 1.214 against 1.22 (2-decimal figures)
    # a second boot on a warm compile cache benchmarks nothing: the plan's high end leaves the copy out
    assert budget.dominant_uncertainty == "torch.compile cache (cold on a first boot)"


# Every CUDA log of a release that subtracts the estimate (0.20.0 and later) and prints the graph sizes, with its
# sequences and batched tokens; the per-graph range comes from the 0.19.0 H100 sweep only, so all are held out.
HELD_OUT = (
    ("rtx3090ti-gemma4-e4b-len32768-v0221", 256, 2048),
    ("l4-gemma4-e2b-w4a16-len8192-v0300", 256, 2048),
    ("t4-gemma4-e2b-w4a16-text-emb4-fp16-len8192-v0300", 256, 2048),
    (L4, 16, 2048),
)


@pytest.mark.parametrize(("name", "seqs", "tokens"), HELD_OUT)
def test_each_held_out_estimate_per_size_is_inside_the_measured_range(name: str, seqs: int, tokens: int) -> None:
    # What one capture size costs depends on the kernels the model's layers launch (tests/fixtures/bootlogs/
    # README.md 'CUDA-graph memory across the corpus'), so the rule carries a range; a held-out log outside it
    # would mean the range does not describe the releases it is applied to.
    entry = corpus_entry(name)
    (rule,) = (r for r in catalog.engines().engines["vllm-gpu"].memory_rules if r.covers(entry["vllm_version"]))
    assert rule.cuda_graphs_subtracted
    low, high = rule.cuda_graph_bytes_per_graph
    graphs = cuda_graph_count(max_num_seqs=seqs, max_num_batched_tokens=tokens, max_capture_size=512)
    per_size = entry["logged"]["cuda_graph_pool_estimated_gib"] * GIB / graphs
    assert low <= per_size <= high


@pytest.mark.parametrize(("version", "subtracted"), [("0.19.1", False), ("0.20.0", True), ("0.20.1", True)])
def test_the_estimate_is_subtracted_from_0_20_0(version: str, subtracted: bool) -> None:
    # VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS's default in vllm/envs.py: os.getenv(..., "0") in the vllm-0.19.1
    # sdist, os.getenv(..., "1") in the vllm-0.20.0 sdist (whose comment still says 'Enabled by default as of
    # v0.21.0'); gpu_worker.py determine_available_memory subtracts cudagraph_memory_estimate_applied in both
    (rule,) = (r for r in catalog.engines().engines["vllm-gpu"].memory_rules if r.covers(version))
    assert rule.cuda_graphs_subtracted is subtracted


def test_the_rtx5090_qwen35_pool_is_inside_the_graph_terms_range(tmp_path: Path) -> None:
    # rtx5090-qwen35-9b-tp1-len4096-v0200 (vLLM 0.20.0, `vllm bench latency`: 256 sequences, 8,192 tokens, compiled
    # and graphed: 'torch.compile took 29.12 seconds'): 51 PIECEWISE + 35 FULL graphs are estimated and subtracted.
    # The excerpt prints no graph line, so the per-graph cost is not read from it; the logged pool ('Available KV
    # cache memory: 6.56 GiB') must lie between the plans at the top and the bottom of the measured range.
    name = "rtx5090-qwen35-9b-tp1-len4096-v0200"
    entry = corpus_entry(name)
    args = entry["engine_args"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    weights = entry["weights_total_bytes"] - 486_581_248  # the MTP block vLLM 0.20.0 does not load (corpus notes)
    request = PlanRequest(
        model=str(sized_checkpoint(tmp_path / "m", config, weights)),
        chip="rtx5090",
        engine="vllm-gpu",
        engine_version=entry["vllm_version"],
        max_model_len=args["max_model_len"],
        utilization=args["gpu_memory_utilization"],
        max_num_batched_tokens=args["max_num_batched_tokens"],
        max_num_seqs=args["max_num_seqs"],
    )
    budget = plan_model(request).memory_budget
    assert budget is not None
    low, high = next(
        r for r in catalog.engines().engines["vllm-gpu"].memory_rules if r.covers("0.20.0")
    ).cuda_graph_bytes_per_graph
    assert budget.cuda_graph_bytes == (51 + 35) * (low + high) // 2
    logged = entry["logged"]["available_kv_cache_gib"] * GIB
    assert budget.kv_cache_low_bytes <= logged <= budget.kv_cache_high_bytes
