"""W8A8 MoE checkpoints on vLLM's Triton experts from 0.20.0 (engines.json vllm-gpu fused_moe_buffers): the fp8 and
int8 MoE oracles (vllm/model_executor/layers/fused_moe/oracle/fp8.py, int8.py, read in the 0.20.0 - 0.34.0 sdists
the rules name) give such a checkpoint TritonExperts on the cards the rules list, and TritonExperts.workspace_shapes
is the unquantized workspace, held in the activation dtype by the persistent workspace manager. Until these rules no
fused-MoE buffers were planned for any quantized checkpoint off Marlin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.gpu_memory import quantized_moe_on_triton, select_rule
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

# Qwen3-30B-A3B: hidden 2,048, 8 of 128 experts per token, expert intermediate 768 (N = 1,536 gated rows)
WORKSPACE = 8192 * 8 * (max(768, 2048) + max(1536, 2048)) * 2  # workspace1 + workspace2, bf16, 8,192 tokens

BLOCK_FP8 = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
STATIC_FP8 = {"quant_method": "fp8", "activation_scheme": "static"}


def _ct(weights: dict[str, Any], acts: dict[str, Any] | None) -> dict[str, Any]:
    group = {"targets": ["Linear"], "weights": {"num_bits": 8, **weights}, "input_activations": acts}
    return {"quant_method": "compressed-tensors", "config_groups": {"group_0": group}}


CT_FP8_DYNAMIC = _ct({"type": "float", "strategy": "channel"}, {"num_bits": 8, "type": "float", "dynamic": True})
CT_FP8_STATIC = _ct(
    {"type": "float", "strategy": "tensor"}, {"num_bits": 8, "type": "float", "strategy": "tensor", "dynamic": False}
)
CT_INT8_DYNAMIC = _ct({"type": "int", "strategy": "channel"}, {"num_bits": 8, "type": "int", "dynamic": True})
CT_INT8_STATIC = _ct(
    {"type": "int", "strategy": "tensor"}, {"num_bits": 8, "type": "int", "strategy": "tensor", "dynamic": False}
)
CT_W8A16 = _ct({"type": "int", "strategy": "channel"}, None)


def _rule(version: str = "0.33.0") -> Any:
    return select_rule(engine_rules("vllm-gpu").fused_moe_buffers, version)


@pytest.mark.parametrize(
    ("quant", "capability", "amd", "expected"),
    [
        (BLOCK_FP8, 90, False, True),  # oracle/fp8.py: 'On Hopper for Block Fp8, prefer Triton for TP'
        (BLOCK_FP8, 89, False, True),  # Ada: FlashInfer CUTLASS needs 9.0, DeepGEMM Hopper, TRT-LLM Blackwell
        (BLOCK_FP8, None, True, True),  # ROCm: AiterExperts only with VLLM_ROCM_USE_AITER (default False)
        (BLOCK_FP8, 100, False, False),  # Blackwell: TRT-LLM fp8 experts, not planned
        (BLOCK_FP8, 80, False, False),  # Ampere: no fp8 (supports_fp8), Marlin w8a16, not planned
        (CT_FP8_DYNAMIC, 90, False, True),  # channel weights, per-token dynamic activations: not FlashInfer's
        (STATIC_FP8, 90, False, False),  # static per-tensor: FlashInferExperts on 9.0+
        (CT_FP8_STATIC, 89, False, True),
        (CT_FP8_STATIC, 90, False, False),
        (CT_INT8_DYNAMIC, 75, False, True),  # oracle/int8.py: TRITON first; int8 from capability 7.5
        (CT_INT8_DYNAMIC, 70, False, False),
        (CT_INT8_DYNAMIC, None, True, True),
        (CT_INT8_STATIC, 90, False, False),  # 'static-activation int8 is not' supported by TritonExperts
        (CT_W8A16, 90, False, False),  # weight-only: not a w8a8 scheme
    ],
)
def test_which_checkpoints_take_the_triton_experts(
    quant: dict[str, Any], capability: int | None, amd: bool, expected: bool
) -> None:
    config = {"quantization_config": quant}
    assert quantized_moe_on_triton(config, _rule(), capability=capability, amd=amd) is expected


@pytest.mark.parametrize(
    ("version", "quant", "amd", "expected"),
    [
        ("0.19.0", BLOCK_FP8, False, False),  # before 0.20.0 not read: no workspace planned, as before
        ("0.20.0", BLOCK_FP8, False, True),  # the same oracle order and Hopper clause (0.20.0 sdist)
        ("0.32.0", BLOCK_FP8, False, True),
        ("0.32.0", BLOCK_FP8, True, False),  # ROCm fp8 left to the ROCm range measured without it before 0.33.0
        ("0.26.0", CT_INT8_DYNAMIC, True, False),  # TritonExperts' int8 is CUDA-only in the 0.20.0 - 0.26.0 sdists
        ("0.28.0", CT_INT8_DYNAMIC, True, True),  # '... or current_platform.is_rocm()' (0.28.0 sdist)
    ],
)
def test_by_release(version: str, quant: dict[str, Any], amd: bool, expected: bool) -> None:
    config = {"quantization_config": quant}
    assert quantized_moe_on_triton(config, _rule(version), capability=90, amd=amd) is expected


def _activation(tmp_path: Path, quant: dict[str, Any] | None, chip: str, version: str) -> int:
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-30B-A3B.json").read_text(encoding="utf-8"))
    if quant is not None:
        config["quantization_config"] = quant
    model = sized_checkpoint(tmp_path / f"{chip}-{version}-{quant is not None}", config, 30 * GIB)
    plan = plan_model(
        str(model),
        chip,
        "vllm-gpu",
        max_model_len=4096,
        engine_version=version,
        max_num_batched_tokens=8192,
        max_num_seqs=256,
        enforce_eager=True,
    )
    return plan.memory_budget.activation_peak_bytes


@pytest.mark.parametrize(("chip", "planned"), [("h100", True), ("l40s", True), ("mi300x", True), ("b200", False)])
def test_the_block_fp8_workspace_on_0_33(tmp_path: Path, chip: str, planned: bool) -> None:
    # the fp8 checkpoint holds the unquantized workspace where it takes the Triton experts, none elsewhere
    unquantized = _activation(tmp_path, None, chip, "0.33.0")
    fp8 = _activation(tmp_path, BLOCK_FP8, chip, "0.33.0")
    assert fp8 == (unquantized if planned else unquantized - WORKSPACE)


@pytest.mark.parametrize(("version", "planned"), [("0.19.0", False), ("0.20.0", True), ("0.33.0", True)])
def test_int8_on_an_a100(tmp_path: Path, version: str, planned: bool) -> None:
    unquantized = _activation(tmp_path, None, "a100-80gb", version)
    int8 = _activation(tmp_path, CT_INT8_DYNAMIC, "a100-80gb", version)
    assert int8 == (unquantized if planned else unquantized - WORKSPACE)
