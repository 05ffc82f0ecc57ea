"""vLLM's start-up check counts the memory in use when the worker takes its init snapshot (issue 27, planfix70a):
vllm/v1/worker/utils.py request_memory of the vllm-0.19.0 sdist asks ceil(total x gpu_memory_utilization) and raises
'Free memory on device ... on startup is less than desired GPU memory utilization' when the snapshot's free memory is
less; init_device (vllm/v1/worker/gpu_worker.py) takes that snapshot after the CUDA context and, at TP x PP >= 2,
NCCL's communicators. The KV budget does not subtract it (requested - weights - activation - non-torch increase):
h100-llama31-8b-tp1-v0190 prints 75.23 - 17.12 = 58.11 GiB with 0.51 GiB in use at start. Figures: the 0.19.0 H100
logs' 'worker init memory snapshot' lines (tests/fixtures/bootlogs, corpus.json init_free_memory_gib)."""

from __future__ import annotations

import json
from pathlib import Path

from factories import sized_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CORPUS = {e["name"]: e for e in json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))}


def _llama(tmp_path: Path) -> str:
    config = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
    return str(sized_checkpoint(tmp_path / "llama", config, 16_060_522_496))


def test_tp2_request_above_free_memory_at_start_is_refused(tmp_path: Path) -> None:
    # h100x2-llama31-8b-tp2-v0190: 'free_memory=77.66GiB' of 79.19 at the init snapshot (1.53 GiB in use: the context
    # and NCCL's communicators); h100x2-llama31-8b-pp2-v0190, the least in use at two ranks: 77.76 GiB free.
    # utilization 0.99 asks 78.40 GiB: more than either had free, so vLLM 0.19.0 refuses at start
    assert CORPUS["h100x2-llama31-8b-tp2-v0190"]["logged"]["init_free_memory_gib"] == 77.66
    assert CORPUS["h100x2-llama31-8b-pp2-v0190"]["logged"]["init_free_memory_gib"] == 77.76
    path = _llama(tmp_path)
    common = {"max_model_len": 8192, "engine_version": "0.19.0", "tensor_parallel_size": 2}
    refused = plan_model(path, "h100", utilization=0.99, **common)
    assert not refused.fits and refused.binding_limit == "free-memory-at-start"
    assert "--gpu-memory-utilization 0.98 or less" in refused.verdict
    # 0.98 asks 77.61 GiB: under the 77.76 the PP 2 log had free, over the 77.12 the Llama-4-Scout TP 4 log had
    # (h100x4-llama4-scout-tp4-v0190, 2.07 GiB in use: a MoE model's second communicator, the EP group)
    warned = plan_model(path, "h100", utilization=0.98, **common)
    assert warned.fits and "free-memory-at-start" in [w.code for w in warned.warnings]
    calm = plan_model(path, "h100", utilization=0.97, **common)
    assert calm.fits and "free-memory-at-start" not in [w.code for w in calm.warnings]


def test_tp1_request_above_free_memory_at_start_is_refused(tmp_path: Path) -> None:
    # h100-llama31-8b-tp1-v0190: 'free_memory=78.68GiB' at the init snapshot (0.51 GiB: the CUDA context), so 0.99
    # (78.40 GiB) passes the check and 0.995 (78.79 GiB) does not
    assert CORPUS["h100-llama31-8b-tp1-v0190"]["logged"]["init_free_memory_gib"] == 78.68
    path = _llama(tmp_path)
    passed = plan_model(path, "h100", max_model_len=8192, engine_version="0.19.0", utilization=0.99)
    assert passed.fits and "free-memory-at-start" not in [w.code for w in passed.warnings]
    refused = plan_model(path, "h100", max_model_len=8192, engine_version="0.19.0", utilization=0.995)
    assert not refused.fits and refused.binding_limit == "free-memory-at-start"
    assert refused.memory_budget is not None and round(refused.memory_budget.requested_bytes / GIB, 2) == 78.79


def test_budget_does_not_subtract_memory_in_use_at_start(tmp_path: Path) -> None:
    # the pool is requested - (weights + activation + non-torch increase): 0.51 GiB in use at start is not taken
    path = _llama(tmp_path)
    plan = plan_model(path, "h100", max_model_len=8192, engine_version="0.19.0", utilization=0.95)
    assert plan.memory_budget is not None
    logged = CORPUS["h100-llama31-8b-tp1-v0190"]["logged"]
    assert abs(plan.memory_budget.kv_cache_bytes / GIB - logged["available_kv_cache_gib"]) < 0.02


def test_one_figure_in_use_is_said_once(tmp_path: Path) -> None:
    # every TP 1 log of the 0.19.0 H100 sweep had 0.51 GiB in use at the snapshot: one figure, not a '0.51 - 0.51' range
    refused = plan_model(_llama(tmp_path), "h100", max_model_len=8192, engine_version="0.19.0", utilization=0.995)
    assert "(0.51 GiB of 79.19 in use" in refused.verdict and "0.51 - 0.51" not in refused.verdict
