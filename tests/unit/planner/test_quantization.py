"""Weights as loaded (issue 27): runtime --quantization fp8 on a bf16 checkpoint, and the checkpoint's own
quantization_config method checked against the methods the engine registers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.schemas.common import GIB
from onechip.vllm import flags

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))


def llama_layout(directory: Path, config: dict) -> Path:
    """A header-only Llama-layout checkpoint (benchmarks/planner_accuracy.py writes the same for the corpus)."""
    sys.path.insert(0, str(BOOTLOGS.parents[2] / "benchmarks"))
    try:
        import planner_accuracy
    finally:
        sys.path.pop(0)
    planner_accuracy.write_layout(directory, config, planner_accuracy.llama_layout(config))
    return directory


def test_the_layout_is_the_checkpoint_of_the_model_card(tmp_path: Path) -> None:
    plan = plan_model(str(llama_layout(tmp_path / "llama", LLAMA)), "h100", max_model_len=8192)
    assert plan.weights_bytes == 16_060_522_496  # Llama-3.1-8B-Instruct's safetensors total (issue 12)


def test_online_fp8_matches_the_h100_log_out_of_sample(tmp_path: Path) -> None:
    # llm-d-planner sweep, vLLM 0.19.0, H100, --quantization fp8 (tests/fixtures/bootlogs/
    # h100-llama31-8b-qfp8-v0190.log): 'Model loading took 8.49 GiB', 'GPU KV cache size: 529,248 tokens'.
    entry = next(e for e in json.loads((BOOTLOGS / "corpus.json").read_text()) if e["name"].endswith("qfp8-v0190"))
    path = llama_layout(tmp_path / "llama", LLAMA)
    plan = plan_model(
        str(path), "h100", max_model_len=8192, utilization=0.95, max_num_seqs=1024, max_num_batched_tokens=8192,
        engine_version="0.19.0", quantization="fp8", multimodal=False,
    )  # fmt: skip
    assert plan.weights_bytes / GIB == pytest.approx(entry["logged"]["model_weights_gib"], abs=0.06)
    logged = entry["logged"]["kv_cache_tokens"]
    assert abs(plan.kv_tokens_logged - logged) / logged < 0.01
    assert plan.serve.quantization is not None and plan.serve.quantization.value == "fp8"
    assert any(f.flag == "--quantization" and f.value == "fp8" for f in flags.plan_flags(plan))  # the command serves it


def test_an_unknown_quant_method_is_refused_as_the_engine_refuses_it(tmp_path: Path) -> None:
    config = {**LLAMA, "quantization_config": {"quant_method": "frobquant"}}
    path = llama_layout(tmp_path / "frob", config)
    with pytest.raises(ConfigError, match=r"'frobquant' is not a method vllm-gpu registers.*Unknown quantization"):
        plan_model(str(path), "h100", max_model_len=8192)


def test_runtime_fp8_on_a_quantized_checkpoint_is_refused(tmp_path: Path) -> None:
    config = {**LLAMA, "quantization_config": {"quant_method": "awq"}}
    path = llama_layout(tmp_path / "awq", config)
    with pytest.raises(ConfigError, match="already quantized"):
        plan_model(str(path), "h100", max_model_len=8192, quantization="fp8")
