"""A ModelOpt checkpoint's hf_quant_config.json (ModelOpt 0.29 and before wrote its quantization config there, not in
config.json): vLLM loads it as config.json's quantization_config where config.json states none
(vllm/transformers_utils/config.py get_config, 0.34.0 sdist), so the plan does (planner.source.with_hf_quant_config).
Found by the plan break pass of 2026-12-05: such a checkpoint was planned as unquantized, with a bf16 KV cache where
vLLM 0.14.0 on serves the fp8 one it states."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import huggingface_hub
import pytest
from huggingface_hub.errors import RemoteEntryNotFoundError

from factories import SMOLLM2_CONFIG, SMOLLM2_TINY_TENSORS, one_error_line, smollm2_checkpoint
from onechip.planner import source

pytestmark = pytest.mark.usefixtures("offline_home")

HF_QUANT = {
    "producer": {"name": "modelopt", "version": "0.19.0"},
    "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8", "exclude_modules": ["lm_head"]},
}


def _checkpoint(tmp_path: Path, quant_file: Any, config: dict[str, Any] | None = None) -> Path:
    directory = smollm2_checkpoint(tmp_path / "ckpt", config or copy.deepcopy(SMOLLM2_CONFIG))
    (directory / "hf_quant_config.json").write_text(json.dumps(quant_file), encoding="utf-8")
    return directory


def _kv_dtype(run, model: str, chip: str = "h100") -> str:
    code, out, err = run("plan", model, "--chip", chip, "--json")
    assert code == 0, err
    return json.loads(out)["kv_cache_dtype"]


def test_a_local_hf_quant_config_is_the_quantization_config(run, tmp_path: Path) -> None:
    model = _checkpoint(tmp_path, HF_QUANT)
    assert _kv_dtype(run, str(model)) == "fp8_e4m3"  # its kv_cache_quant_algo, as vLLM resolves 'auto'
    line = one_error_line(run, "plan", str(model), "--chip", "v5e-4")  # quant_method modelopt: the TPU refuses it
    assert line.startswith("quantization_config.quant_method 'modelopt': vllm-tpu serves "), line


def test_config_json_s_own_quantization_config_wins(run, tmp_path: Path) -> None:
    config = {**copy.deepcopy(SMOLLM2_CONFIG), "quantization_config": {"quant_method": "fp8"}}
    model = _checkpoint(tmp_path, HF_QUANT, config)
    assert _kv_dtype(run, str(model)) == "auto"


def test_an_hf_quant_config_that_is_not_an_object_is_one_line(run, tmp_path: Path) -> None:
    model = _checkpoint(tmp_path, ["FP8"])
    line = one_error_line(run, "plan", str(model), "--chip", "h100")
    assert line == f"{model}/hf_quant_config.json: must be a JSON object, got list"


def test_a_hub_checkpoint_s_hf_quant_config_is_read(run, tmp_path: Path, monkeypatch) -> None:
    files = {"config.json": copy.deepcopy(SMOLLM2_CONFIG), "hf_quant_config.json": HF_QUANT}

    def download(repo_id: str, filename: str, **_: Any) -> str:
        if filename not in files:
            url = f"https://huggingface.co/{repo_id}/resolve/main/{filename}"
            response = httpx.Response(404, request=httpx.Request("GET", url))
            raise RemoteEntryNotFoundError("404 Entry Not Found", response=response)
        path = tmp_path / filename
        path.write_text(json.dumps(files[filename]), encoding="utf-8")
        return str(path)

    tensors = {n: SimpleNamespace(shape=list(s), dtype="BF16") for n, s in SMOLLM2_TINY_TENSORS.items()}
    metadata = SimpleNamespace(files_metadata={"model.safetensors": SimpleNamespace(tensors=tensors)})

    class Api:
        def __init__(self, **_: Any) -> None:
            pass

        def get_safetensors_metadata(self, repo_id: str) -> SimpleNamespace:
            return metadata

    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setattr(source, "check_hub_reachable", lambda *a, **k: None)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", download)
    monkeypatch.setattr(huggingface_hub, "HfApi", Api)
    assert _kv_dtype(run, "someone/llama-fp8") == "fp8_e4m3"
    del files["hf_quant_config.json"]  # none on the Hub (its 404): planned from config.json alone
    assert _kv_dtype(run, "someone/llama-fp8") == "auto"
