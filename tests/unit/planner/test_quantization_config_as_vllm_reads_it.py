"""A checkpoint's quantization config as vLLM reads it before any quantization rule does (planner.config
_normalized_quantization): quant_method lower-cased with 'compressed_tensors' spelled 'compressed-tensors', the
compression_config key of older compressed-tensors checkpoints, and a ModelOpt producer's quant_algo made its
quant_method (vllm/config/model.py _parse_quant_hf_config / _verify_quantization of the 0.13.0 sdist;
model_arch_config_convertor.py _normalize_quantization_config of the 0.34.0 sdist). Found by the plan break pass of
2026-12-05."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, smollm2_checkpoint
from onechip.planner.config import read_config

pytestmark = pytest.mark.usefixtures("offline_home")

W4A16 = {
    "format": "pack-quantized",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group", "group_size": 128},
            "input_activations": None,
        }
    },
    "ignore": ["lm_head"],
}


def _with(**fields) -> dict:
    return {**copy.deepcopy(SMOLLM2_CONFIG), **fields}


@pytest.mark.parametrize("method", ["compressed_tensors", "Compressed-Tensors", "COMPRESSED_TENSORS"])
def test_a_compressed_tensors_method_spelled_otherwise_is_planned_as_vllm_normalizes_it(run, tmp_path: Path, method):
    # was: 'quantization_config.quant_method 'compressed_tensors' is not a method vllm-gpu registers; the engine
    # refuses it at start', exit 2: vLLM lower-cases the method and replaces compressed_tensors before its registry
    # is asked, and serves the checkpoint as compressed-tensors
    spelled = smollm2_checkpoint(tmp_path / "spelled", _with(quantization_config={**W4A16, "quant_method": method}))
    plain = smollm2_checkpoint(
        tmp_path / "plain", _with(quantization_config={**W4A16, "quant_method": "compressed-tensors"})
    )
    figures = ("weights_bytes", "memory_budget", "kv_pool_bytes", "num_blocks", "verdict", "warnings")
    plans = []
    for model in (spelled, plain):
        code, out, err = run("plan", str(model), "--chip", "l4", "--json")
        assert code == 0, err
        plans.append({key: json.loads(out)[key] for key in figures})
    assert plans[0] == plans[1]


def test_a_modelopt_producer_config_is_the_modelopt_method(run, tmp_path: Path) -> None:
    # was: planned on a TPU with exit 0 as an unquantized checkpoint (no quant_method in the file), where vLLM sets
    # quant_method 'modelopt' from producer.name and quantization.quant_algo, and the TPU platform refuses it
    quant = {"producer": {"name": "modelopt", "version": "0.19.0"}, "quantization": {"quant_algo": "FP8"}}
    model = smollm2_checkpoint(tmp_path / "modelopt", _with(quantization_config=quant))
    line = one_error_line(run, "plan", str(model), "--chip", "v5e-4")
    assert line.startswith("quantization_config.quant_method 'modelopt': vllm-tpu serves "), line


def test_compression_config_is_read_where_quantization_config_is_absent() -> None:
    config = read_config(_with(compression_config={**W4A16, "quant_method": "compressed_tensors"}), "config.json")
    assert config.data["quantization_config"]["quant_method"] == "compressed-tensors"
    both = read_config(
        _with(quantization_config={"quant_method": "fp8"}, compression_config={**W4A16, "quant_method": "x"}), "c"
    )
    assert both.data["quantization_config"] == {"quant_method": "fp8"}  # vLLM reads compression_config only without


def test_the_file_read_is_left_as_it_was() -> None:
    data = _with(quantization_config={"quant_method": "FP8"})
    read_config(data, "config.json")
    assert data["quantization_config"] == {"quant_method": "FP8"}


def test_a_compression_config_that_is_not_an_object_is_one_line(run, tmp_path: Path) -> None:
    model = smollm2_checkpoint(tmp_path / "list", _with(compression_config=["x"]))
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert line == f"{model}/config.json: field 'compression_config' must be an object, got ['x']"


@pytest.mark.parametrize(
    "quant",
    [
        {"quant_method": "modelopt", "quant_algo": "FP8"},
        {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8"}},
    ],
    ids=["method", "producer"],
)
def test_a_modelopt_fp8_checkpoint_below_compute_capability_80_is_refused(run, tmp_path: Path, quant) -> None:
    # was planned on a T4 with exit 0: ModelOptFp8Config.get_min_capability() is 80 (vllm/model_executor/layers/
    # quantization/modelopt.py of the 0.33.0 and 0.34.0 sdists), and VllmConfig refuses the card at start
    model = smollm2_checkpoint(tmp_path / "modelopt", _with(quantization_config=quant))
    line = one_error_line(run, "plan", str(model), "--chip", "t4")
    assert line == (
        "quantization modelopt on t4 (Turing, compute capability 7.5): the engine refuses it ('The quantization method "
        "modelopt is not supported for the current GPU. Minimum capability: 80. Current capability: 75.')"
    )
    code, _, err = run("plan", str(model), "--chip", "a100-80gb")
    assert code == 0, err
