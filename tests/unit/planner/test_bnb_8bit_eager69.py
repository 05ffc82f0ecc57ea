"""A bitsandbytes 8-bit checkpoint runs eager: vLLM's ModelConfig._verify_bnb_config sets enforce_eager when the
checkpoint's quantization_config is bitsandbytes with load_in_8bit ('CUDA graph is not supported on BitsAndBytes 8bit
yet, fallback to the eager mode.', 'BitAndBytes' before 0.8.3), in every release from 0.6.2 (vllm/config.py; absent
from 0.6.1.post2's) to 0.27.1 (vllm/config/model.py; 0.28.0 moved bitsandbytes out of tree and has no such check):
sdists 0.6.2, 0.6.3, 0.7.0, 0.8.5, 0.9.2, 0.10.0, 0.10.1, 0.11.0, 0.13.0, 0.14.0, 0.16.0, 0.17.0, 0.18.0, 0.20.0,
0.24.0, 0.27.1 read. So no CUDA graphs are captured and none take memory from the pool."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_quantization import LLAMA, llama_layout

from onechip.planner import plan_model
from onechip.vllm import flags


def _bnb(tmp_path: Path, bits: int) -> str:
    quant = {"quant_method": "bitsandbytes", f"load_in_{bits}bit": True}
    return str(llama_layout(tmp_path / f"bnb{bits}", {**LLAMA, "quantization_config": quant}))


@pytest.mark.parametrize("version", ["0.10.1", "0.27.1"])
def test_an_8bit_checkpoint_is_planned_eager_as_vllm_runs_it(tmp_path: Path, version: str) -> None:
    path, kw = _bnb(tmp_path, 8), {"max_model_len": 8192, "engine_version": version}
    plan, eager = plan_model(path, "h100", **kw), plan_model(path, "h100", enforce_eager=True, **kw)
    assert plan.memory_budget == eager.memory_budget and plan.kv_tokens == eager.kv_tokens
    assert plan.serve.enforce_eager is not None and plan.serve.enforce_eager.source == "model"
    assert "BitsAndBytes 8bit" in plan.serve.enforce_eager.reason
    assert any(w.code == "bnb-8bit-eager" for w in plan.warnings)
    assert any(f.flag == "--enforce-eager" for f in flags.plan_flags(plan))  # the command says what the engine does


def _graphs_counted(path: str, version: str) -> bool:
    """The plan at `version` leaves the pool less than an --enforce-eager plan (0.26.0 on subtract graph memory)."""
    kw = {"max_model_len": 8192, "engine_version": version}
    return plan_model(path, "h100", **kw).kv_tokens < plan_model(path, "h100", enforce_eager=True, **kw).kv_tokens


def test_a_4bit_checkpoint_keeps_its_cuda_graphs(tmp_path: Path) -> None:
    path = _bnb(tmp_path, 4)
    plan = plan_model(path, "h100", max_model_len=8192, engine_version="0.27.1")
    assert _graphs_counted(path, "0.27.1")
    assert plan.serve.enforce_eager is None


def test_8bit_keeps_its_cuda_graphs_where_vllm_has_no_such_check(tmp_path: Path) -> None:
    # 0.28.0 serves bitsandbytes through an out-of-tree plugin (a quantization-release warning); the check is gone
    path = _bnb(tmp_path, 8)
    plan = plan_model(path, "h100", max_model_len=8192, engine_version="0.28.0")
    assert _graphs_counted(path, "0.28.0")
    assert plan.serve.enforce_eager is None


@pytest.mark.parametrize(
    ("version", "said"),
    [
        # vllm/config.py ModelConfig._verify_bnb_config: 'BitAndBytes' in the 0.6.2 - 0.8.2 sdists (0.6.2, 0.6.3,
        # 0.7.0, 0.7.3, 0.8.0, 0.8.1, 0.8.2 read), 'BitsAndBytes' from 0.8.3 (0.8.3, 0.8.4, 0.8.5, 0.27.1 read)
        ("0.6.2", "CUDA graph is not supported on BitAndBytes 8bit yet, fallback to the eager mode."),
        ("0.8.2", "CUDA graph is not supported on BitAndBytes 8bit yet, fallback to the eager mode."),
        ("0.8.3", "CUDA graph is not supported on BitsAndBytes 8bit yet, fallback to the eager mode."),
        ("0.27.1", "CUDA graph is not supported on BitsAndBytes 8bit yet, fallback to the eager mode."),
    ],
)
def test_the_plan_quotes_what_the_planned_release_prints(tmp_path: Path, version: str, said: str) -> None:
    plan = plan_model(_bnb(tmp_path, 8), "h100", max_model_len=8192, engine_version=version)
    assert plan.serve.enforce_eager is not None and f"'{said}'" in plan.serve.enforce_eager.reason
    assert [f"'{said}'" in w.message for w in plan.warnings if w.code == "bnb-8bit-eager"] == [True]
