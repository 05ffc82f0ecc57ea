"""Boot logs of vLLM 0.22 - 0.23 found for issue 27 (logsa63): a negative CUDA-graph estimate, which vLLM subtracts
from the pool as printed, and a --quantization the checkpoint was not made for. Each log is a real one of
tests/fixtures/bootlogs (corpus.json names its source)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"


def _read(name: str) -> Any:
    return read_boot_log((BOOTLOGS / f"{name}.log").read_text(encoding="utf-8"), "vllm", "m")


def test_a_negative_cuda_graph_estimate_is_read_with_its_sign() -> None:
    # 'Estimated CUDA graph memory: -0.81 GiB total' (vLLM 0.23.1rc1.dev531, Qwen3.6-27B-NVFP4 with MTP 2 on an arm64
    # host): gpu_worker.py determine_available_memory subtracts the estimate whatever its sign (requested -
    # non-KV - estimate, 0.34.0 sdist), so the pool holds 0.81 GiB more; the reader had dropped the line
    record = _read("gpu-arm64-qwen36-27b-nvfp4-mtp2-kvfp8-len262144-util070-v0231dev531")
    assert record.cuda_graph_estimated_gib == -0.81
    assert record.kv_cache_gib == 48.6  # 'Available KV cache memory: 48.6 GiB'


def test_a_quantization_without_its_config_file_is_named() -> None:
    # vLLM 0.23.0, --quantization awq_marlin on /models/Qwen3-Coder-Next: 'pydantic_core._pydantic_core.ValidationError:
    # 1 validation error for VllmConfig' / 'Value error, Cannot find the config file for awq_marlin [type=value_error,
    # ...': the cause was the pydantic wrapper's header, which says nothing; get_quant_config (weight_utils.py, 0.34.0
    # sdist) raises it when config.json has no quantization_config and no file the method names is in the folder
    cause = _read("gpu-qwen3-coder-next-awq-marlin-kvfp8-len32768-util064-refused-v0230").failure_cause
    assert cause is not None
    assert cause.startswith("--quantization awq_marlin names a method the checkpoint was not quantized with")


def test_the_cuda_image_banner_is_no_engine_version() -> None:
    # Modal's log of vLLM 0.18.0 on an L40S opens with the CUDA base image's banner '== CUDA == CUDA Version 12.8.1'
    # (NVIDIA's CUDA container entrypoint) before '(EngineCore pid=75) Initializing a V1 LLM engine (v0.18.0)': the
    # version read was 12.8.1, the CUDA toolkit's
    assert _read("l40s-qwen35-9b-kvfp8-len65536-modal-v0180").engine_version == "0.18.0"


def test_the_served_architecture_is_not_the_drafters() -> None:
    # vLLM 0.22.0 with --speculative-config '{"method":"mtp",...}': 'Resolved architecture:
    # Qwen3_5MoeForConditionalGeneration' (the target's ModelConfig), then 'Resolved architecture: Qwen3_5MoeMTP' (the
    # draft's, which SpeculativeConfig builds after it); the drafter's was read as the log's architecture
    record = _read("gpu-qwen36-35b-a3b-prismaquant-mtp3-len200000-util085-v0220")
    assert record.logged["architecture"] == "Qwen3_5MoeForConditionalGeneration"
    assert record.logged["max_model_len"] == "200000"  # 'Using max model len 200000'; the drafter's 262144 is cut to it
    record = _read("gpu-arm64-qwen36-27b-nvfp4-mtp2-kvfp8-len262144-util070-v0231dev531")
    assert record.logged["architecture"] == "Qwen3_5ForConditionalGeneration"  # then 'Qwen3_5MTP'
