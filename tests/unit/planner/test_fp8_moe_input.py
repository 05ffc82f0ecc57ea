"""The fp8 (w8a8) fused MoE of the V0 releases: the same per-call caches as an unquantized checkpoint plus the fp8
copy invoke_fused_moe_kernel makes of a GEMM's input (issue 27), engines.json `fused_moe_buffers` fp8_input_copy.

Expected values come from the vLLM 0.7.3 sdist (also read in 0.6.6): vllm/model_executor/layers/quantization/fp8.py
Fp8MoEMethod.apply calls fused_experts(..., use_fp8_w8a8=True, block_shape=weight_block_size);
vllm/model_executor/layers/fused_moe/fused_moe.py invoke_fused_moe_kernel quantizes A with
per_token_group_quant_fp8(A, block_k) (block) or ops.scaled_fp8_quant(A, A_scale) (one scale);
vllm/model_executor/layers/quantization/utils/fp8_utils.py per_token_group_quant_fp8 allocates an fp8 tensor like A
and float32 scales of [rows, cols // group_size]. DeepSeek-R1's quantization_config is its config.json's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from onechip.planner.gpu_memory import fp8_moe_block, moe_call_bytes, select_rule
from onechip.planner.rules import engine_rules
from onechip.schemas.common import GIB

ROOT = Path(__file__).resolve().parents[3]
RULES = engine_rules("vllm-gpu")
CONFIG = ROOT / "tests" / "fixtures" / "bootlogs" / "configs" / "deepseek-ai--DeepSeek-R1.json"
R1: dict[str, Any] = {k: v for k, v in json.loads(CONFIG.read_text(encoding="utf-8")).items() if k[0] != "_"}
UNQUANTIZED = {k: v for k, v in R1.items() if k != "quantization_config"}
TP8 = {"dtype_bytes": 2, "tensor_parallel_size": 8, "tokens": 32_000}


def test_which_configs_are_fp8_and_their_scale_groups() -> None:
    assert fp8_moe_block(R1) == 128  # weight_block_size [128, 128]: one fp32 scale per 128 columns of a row
    assert fp8_moe_block({"quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}) == 0
    assert fp8_moe_block({"quantization_config": {"quant_method": "compressed-tensors"}}) is None
    assert fp8_moe_block(UNQUANTIZED) is None


def test_the_r1_row_gets_the_caches_and_gemm_1s_fp8_input() -> None:
    v0 = select_rule(RULES.fused_moe_buffers, "0.7.3")
    assert v0.fp8_input_copy
    caches = 32_000 * 8 * (512 + 256 + 7_168) * 2  # cache1 + cache2 + cache3, bf16 (N = 2 x 2,048 / 8)
    # gemm 1's input [32,000, 7,168] as fp8 + 56 fp32 scales a row, larger than gemm 2's [256,000, 256] + 2 a row
    gemm1 = 32_000 * 7_168 + 32_000 * 56 * 4
    gemm2 = 32_000 * 8 * 256 + 32_000 * 8 * 2 * 4
    assert gemm1 > gemm2
    got = moe_call_bytes(R1, v0, **TP8)
    assert got == caches + gemm1
    assert round((got - moe_call_bytes(UNQUANTIZED, v0, **TP8)) / GIB, 2) == 0.22


def test_one_scale_per_tensor_without_a_block_shape() -> None:
    v0 = select_rule(RULES.fused_moe_buffers, "0.7.3")
    per_tensor = {**R1, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
    assert moe_call_bytes(per_tensor, v0, **TP8) - moe_call_bytes(UNQUANTIZED, v0, **TP8) == 32_000 * 7_168 + 4


def test_later_releases_plan_no_buffers_for_an_fp8_checkpoint() -> None:
    # 0.8.0 and later pick among several fp8 MoE kernels by card and flags (not read per release): unchanged
    for version in ("0.8.5", "0.10.2"):
        rule = select_rule(RULES.fused_moe_buffers, version)
        assert not rule.fp8_input_copy
        assert moe_call_bytes(R1, rule, **TP8) == 0
