"""vLLM's batch defaults on a card NVML gives no memory for (unified memory: GB10). vllm/engine/arg_utils.py
get_batch_defaults reads the card's memory through NVML (vllm/platforms/cuda.py NvmlCudaPlatform.
get_device_total_memory, vLLM 0.27.1 sdist) and takes it as 0 when that raises, so a 121.69 GiB GB10 gets the
small defaults (256 sequences, 2,048 tokens), not the >= 70 GiB ones (accelerators.json gb10 nvml_memory_info)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.gpu_memory import cuda_graph_sizes
from onechip.planner.rules import accelerator

GB10 = "gb10-qwen3-0.6b-util060-v0271"


def _plan(model: Path, **batch: int) -> Any:
    return plan_model(str(model), "gb10", "vllm-gpu", utilization=0.6, engine_version="0.27.1", **batch)


def test_gb10_is_a_card_nvml_gives_no_memory_for() -> None:
    assert accelerator("gb10").nvml_memory_info is False
    assert accelerator("h100").nvml_memory_info is True


def test_gb10_plans_with_the_small_batch_defaults(tmp_path: Path) -> None:
    entry = corpus_entry(GB10)  # Qwen3-0.6B at 0.6, as the 0.27.1 GB10 boot
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    model = sized_checkpoint(tmp_path / "m", config, entry["weights_total_bytes"])
    default = _plan(model).memory_budget
    small = _plan(model, max_num_seqs=256, max_num_batched_tokens=2048).memory_budget
    large = _plan(model, max_num_seqs=1024, max_num_batched_tokens=8192).memory_budget
    assert default.model_dump() == small.model_dump()
    assert default.activation_peak_bytes < large.activation_peak_bytes


def test_the_small_defaults_capture_the_graphs_the_gb10_boot_reports() -> None:
    # the 0.27.1 GB10 note: 'CUDA グラフ捕捉成功 (PIECEWISE 51 + FULL 35)'; 1,024 sequences would give FULL 51
    assert cuda_graph_sizes(max_num_seqs=256, max_num_batched_tokens=2048, max_capture_size=512) == (51, 35)
    assert cuda_graph_sizes(max_num_seqs=1024, max_num_batched_tokens=8192, max_capture_size=512) == (51, 51)


def test_gb10_plans_say_the_profiler_counts_host_memory(tmp_path: Path) -> None:
    # vllm/utils/mem_utils.py (0.27.1 sdist): free memory on an integrated GPU is psutil's available host memory, so the
    # GB10 boot's 'consumed' 3.35 GiB holds host allocations no plan term has (accelerators.json gb10)
    entry = corpus_entry(GB10)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    model = sized_checkpoint(tmp_path / "m", config, entry["weights_total_bytes"])
    codes = {w.code for w in _plan(model).warnings}
    assert "unified-memory-pool" in codes
    h100 = plan_model(str(model), "h100", "vllm-gpu", utilization=0.6, engine_version="0.27.1")
    assert "unified-memory-pool" not in {w.code for w in h100.warnings}


def test_a_pinned_pool_on_unified_memory_is_not_told_to_pin_it(tmp_path: Path) -> None:
    # with --kv-cache-memory vLLM takes the pool as given (no profiled pool to move from boot to boot), so the
    # warning's 'pin it with --kv-cache-memory' was said to a plan that had
    entry = corpus_entry(GB10)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    model = sized_checkpoint(tmp_path / "m", config, entry["weights_total_bytes"])
    pinned = plan_model(str(model), "gb10", "vllm-gpu", engine_version="0.27.1", kv_cache_memory_bytes=20 * 2**30)
    assert "unified-memory-pool" not in {w.code for w in pinned.warnings}
