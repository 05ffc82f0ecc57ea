"""vLLM's -O0 given through `--set optimization-level=0` (qa71b): from 0.12.0, -ON is --optimization-level N
(vllm/utils/argparse_utils.py FlexibleArgumentParser, 0.12.0 - 0.34.0 sdists), and at O0 with no compilation mode
given VllmConfig sets compilation mode NONE and OPTIMIZATION_LEVEL_00 cudagraph_mode NONE, so custom_ops gets 'all'
(vllm/config/vllm.py of the 0.19.0 sdist, __post_init__), as --enforce-eager does: no CUDA graph is profiled or
captured (gpu_worker.py, gpu_model_runner.py profile_cudagraph_memory 'No CUDA graphs will be captured') and the
DeepSeek YaRN RoPE cache stays float32 under FlashInfer's rotary op. Before this, the plan sized a compiled engine:
0.86 GiB of CUDA graphs for Llama-3.1-8B at 0.20.0 on an H100 (449,344 KV tokens where vLLM holds 456,192)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.schemas.requests import PlanRequest
from onechip.vllm.flag_table import parse_sets


def _plan(model: Path, version: str, **fields: Any):  # noqa: ANN202 (the planner's Plan)
    return plan_model(PlanRequest(model=str(model), chip="h100", engine_version=version, max_model_len=8192, **fields))


def _llama(tmp_path: Path) -> Path:
    config = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / "llama", config, 16_060_522_496)


def test_o0_plans_what_enforce_eager_plans(tmp_path: Path) -> None:
    """At 0.20.0 (CUDA graphs subtracted from the pool) -O0 holds the eager pool, and the command says so."""
    model = _llama(tmp_path)
    eager = _plan(model, "0.20.0", enforce_eager=True)
    o0 = _plan(model, "0.20.0", sets=["optimization-level=0"])
    assert o0.memory_budget is not None and o0.memory_budget.cuda_graph_bytes == 0
    assert o0.kv_tokens == eager.kv_tokens
    assert o0.serve.enforce_eager is not None and o0.serve.enforce_eager.value is True  # the command says it
    assert any(w.code == "optimization-level-0-eager" for w in o0.warnings)


def test_other_levels_and_older_releases_stay_compiled(tmp_path: Path) -> None:
    """-O1 compiles; before 0.12.0 vLLM has no --optimization-level (its -O is --compilation-config)."""
    model = _llama(tmp_path)
    compiled = _plan(model, "0.20.0")
    assert _plan(model, "0.20.0", sets=["optimization-level=1"]).kv_tokens == compiled.kv_tokens
    old = _plan(model, "0.11.0", sets=["optimization-level=0"])
    assert not any(w.code == "optimization-level-0-eager" for w in old.warnings)


def test_o0_keeps_the_deepseek_yarn_cache_float32(tmp_path: Path) -> None:
    """DeepSeek-V2-Lite with DeepSeek-R1's YaRN (factor 40, original 4,096) at 0.19.0: 4,096 x 40 x 64 x 4 B."""
    config = json.loads((BOOTLOGS / "configs" / "deepseek-ai--DeepSeek-V2-Lite-Chat.json").read_text(encoding="utf-8"))
    r1 = json.loads((BOOTLOGS / "configs" / "deepseek-ai--DeepSeek-R1.json").read_text(encoding="utf-8"))
    model = sized_checkpoint(tmp_path / "dsv2", config | {"rope_scaling": r1["rope_scaling"]}, 31_138_512_870)
    compiled = _plan(model, "0.19.0")
    o0 = _plan(model, "0.19.0", sets=["optimization-level=0"])
    assert o0.memory_budget is not None and compiled.memory_budget is not None
    assert o0.memory_budget.weights_bytes - compiled.memory_budget.weights_bytes == 4096 * 40 * 64 * 2


@pytest.mark.parametrize("item", ["-O0", "-O3", "-O=0"])
def test_the_o_shorthand_names_its_long_flag(item: str) -> None:
    """`--set=-O0` said "write o0=VALUE" (no such vLLM flag); it names --optimization-level and --compilation-config."""
    with pytest.raises(ConfigError, match="optimization-level=") as raised:
        parse_sets([item])
    assert "compilation-config" in str(raised.value) and "o0=" not in str(raised.value)
