"""vLLM's V2 model runner in 0.25.0 - 0.28.x (engines.json memory_rules `v2_runner_dense`). The release serves a model
with no MoE experts and no recurrent state on it by default (vllm/config/vllm.py _is_default_v2_model_runner_model,
0.25.0 - 0.28.0 sdists), and that runner's profile_cudagraph_memory returns 0, so no CUDA-graph
estimate is subtracted, while its sampler warms up on logits only (vllm/v1/worker/gpu/model_runner.py,
gpu/sample/sampler.py).
MoE models not in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES and hybrid models stay on the V1 runner and its estimate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB

GB10 = "gb10-qwen3-0.6b-util060-v0271"
MOE = "h100-qwen3-30b-a3b-moe-v0190"


def _checkpoint(tmp_path: Path, name: str) -> Path:
    entry = corpus_entry(name)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / name, config, entry["weights_total_bytes"])


def _budget(model: Path, version: str, chip: str = "gb10", **fields: Any) -> Any:
    plan = plan_model(str(model), chip, "vllm-gpu", utilization=0.6, engine_version=version, **fields)
    return plan.memory_budget


def test_a_dense_model_on_0_27_subtracts_no_cuda_graph_estimate(tmp_path: Path) -> None:
    model = _checkpoint(tmp_path, GB10)
    assert _budget(model, "0.27.1").cuda_graph_bytes == 0
    assert _budget(model, "0.25.0").cuda_graph_bytes == 0
    assert _budget(model, "0.26.0").cuda_graph_bytes == 0
    assert _budget(model, "0.28.0").cuda_graph_bytes == 0
    # 0.30.0's V2 runner estimates its graphs again (vllm/v1/worker/gpu/model_runner.py _profile_cudagraph_memory)
    assert _budget(model, "0.30.0").cuda_graph_bytes > 0


def test_the_gb10_boot_leaves_what_the_v2_runner_plans_for_activation_and_graphs(tmp_path: Path) -> None:
    # the 0.27.1 GB10 note: requested 73.01 GiB, 'Actual usage is 3.35 GiB for consumed memory', 69.4 GiB of KV:
    # 0.26 GiB for the transient peak and the graph estimate together (0.01 GiB figures)
    budget = _budget(_checkpoint(tmp_path, GB10), "0.27.1")
    left_gib = 73.01 - 3.35 - 69.4
    planned_gib = (budget.activation_peak_bytes + budget.cuda_graph_bytes) / GIB
    assert abs(planned_gib - left_gib) < 0.05


def test_a_moe_model_on_0_27_keeps_the_v1_runner_and_its_estimate(tmp_path: Path) -> None:
    # Qwen3MoeForCausalLM is MoE and not in 0.27.x's DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    budget = _budget(_checkpoint(tmp_path, MOE), "0.27.1", chip="h100", max_model_len=4096)
    assert budget.cuda_graph_bytes > 0


def test_prompt_embeds_keep_the_v1_runner(tmp_path: Path) -> None:
    # 'prompt embeds' is in _get_v2_model_runner_unsupported_features (0.27.1 sdist)
    model = _checkpoint(tmp_path, GB10)
    assert _budget(model, "0.27.1", enable_prompt_embeds=True).cuda_graph_bytes > 0
