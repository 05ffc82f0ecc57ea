"""Versions said out loud (issue 27): the plan names the vLLM version and the rule it plans under, and a V0
release plans a text-only model without towers even when --multimodal is left at its default."""

from __future__ import annotations

import json
from pathlib import Path

from factories import sized_checkpoint
from onechip.planner import plan_model

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
LLAMA = json.loads((CONFIGS / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
LLAMA_8B_BYTES = 16_060_522_496  # safetensors total of meta-llama/Llama-3.1-8B-Instruct (its model card index)


def test_v0_text_only_model_keeps_chunked_prefill_with_the_default_multimodal(tmp_path: Path) -> None:
    # vLLM V0 (0.6.x) turns chunked prefill on above 32K tokens for models that are not multimodal
    # (vllm/engine/arg_utils.py of that era); the default --multimodal must not switch it off for Llama.
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    kwargs = {"max_model_len": 65536, "engine_version": "0.6.3", "utilization": 0.9}
    default = plan_model(str(path), "h100", **kwargs)
    text_only = plan_model(str(path), "h100", multimodal=False, **kwargs)
    assert default.kv_tokens == text_only.kv_tokens and default.fits


def test_the_plan_names_the_version_and_its_rule(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    (line,) = [w for w in plan_model(str(path), "h100", max_model_len=8192, engine_version="0.8.5").warnings
               if w.code == "engine-version"]  # fmt: skip
    assert "vLLM 0.8.5" in line.message and "0.8.0 - 0.15.x" in line.message
    (newest,) = [w for w in plan_model(str(path), "h100", max_model_len=8192).warnings if w.code == "engine-version"]
    assert "no --engine-version" in newest.message
