"""--kv-cache-dtype auto on a ModelOpt checkpoint that states its KV cache quantization: vLLM 0.14.0 on serves the KV
cache in that dtype unasked (vllm/engine/arg_utils.py create_engine_config -> resolve_kv_cache_dtype_string,
vllm/utils/torch_utils.py get_kv_cache_quant_algo_string: 'fp8' -> fp8_e4m3, 'nvfp4' from 0.20.0), so the plan does
(planner.core._checkpoint_kv_cache_dtype). Found by the plan break pass of 2026-12-05: the plan sized a bf16 KV
cache, half the tokens the engine holds."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, smollm2_checkpoint

pytestmark = pytest.mark.usefixtures("offline_home")

FP8_KV = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
# ModelOpt 0.29 and before: hf_quant_config.json's shape (vLLM sets quant_method from the producer)
PRODUCER = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}}
SCHEME = {"quant_method": "modelopt", "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"}}


def _plan(run, tmp_path: Path, quant: dict[str, Any] | None, *argv: str) -> dict[str, Any]:
    config = {**copy.deepcopy(SMOLLM2_CONFIG), **({"quantization_config": quant} if quant else {})}
    directory = tmp_path / f"ckpt-{len(list(tmp_path.glob('ckpt-*')))}"
    code, out, err = run("plan", str(smollm2_checkpoint(directory, config)), "--chip", "h100", "--json", *argv)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("quant", [FP8_KV, PRODUCER, SCHEME], ids=["kv_cache_quant_algo", "producer", "scheme"])
@pytest.mark.parametrize("version", [[], ["--engine-version", "0.14.0"]], ids=["newest", "0.14.0"])
def test_auto_is_planned_as_the_fp8_kv_cache_vllm_serves(run, tmp_path: Path, quant, version) -> None:
    plan = _plan(run, tmp_path, quant, *version)
    asked = _plan(run, tmp_path, None, "--kv-cache-dtype", "fp8_e4m3", *version)
    plain = _plan(run, tmp_path, None, *version)
    assert plan["kv_cache_dtype"] == "fp8_e4m3"
    assert plan["kv_bytes_per_token"] == asked["kv_bytes_per_token"] == plain["kv_bytes_per_token"] // 2
    assert plan["serve"]["kv_cache_dtype"]["source"] == "model"


def test_before_0_14_auto_keeps_the_model_dtype(run, tmp_path: Path) -> None:
    plan = _plan(run, tmp_path, FP8_KV, "--engine-version", "0.13.0")
    plain = _plan(run, tmp_path, None, "--engine-version", "0.13.0")
    assert plan["kv_cache_dtype"] == "auto" and plan["kv_bytes_per_token"] == plain["kv_bytes_per_token"]


def test_a_kv_cache_dtype_asked_for_is_kept(run, tmp_path: Path) -> None:
    plan = _plan(run, tmp_path, FP8_KV, "--kv-cache-dtype", "bfloat16")
    assert plan["kv_cache_dtype"] == "bfloat16" and plan["serve"]["kv_cache_dtype"]["source"] == "request"


def test_another_method_stating_a_kv_scheme_keeps_auto(run, tmp_path: Path) -> None:
    # get_kv_cache_quant_algo_string reads the KV algorithm of a quant_method starting 'modelopt' only
    plan = _plan(run, tmp_path, {"quant_method": "fp8", "kv_cache_quant_algo": "FP8"})
    assert plan["kv_cache_dtype"] == "auto"


def test_an_nvfp4_kv_cache_is_refused_in_one_line_where_vllm_maps_it(run, tmp_path: Path) -> None:
    quant = {"quant_method": "modelopt_fp4", "quant_algo": "NVFP4", "kv_cache_quant_algo": "NVFP4"}
    config = {**copy.deepcopy(SMOLLM2_CONFIG), "quantization_config": quant}
    model = smollm2_checkpoint(tmp_path / "nvfp4", config)
    line = one_error_line(run, "plan", str(model), "--chip", "b200", "--engine-version", "0.20.0")
    assert line.startswith(
        "the checkpoint's quantization_config states an NVFP4 KV cache (ModelOpt), which vLLM 0.20.0"
    )
    code, out, err = run("plan", str(model), "--chip", "b200", "--engine-version", "0.19.0", "--json")
    assert code == 0 and json.loads(out)["kv_cache_dtype"] == "auto", err  # 0.19.0 maps fp8 only: 'auto' stays
