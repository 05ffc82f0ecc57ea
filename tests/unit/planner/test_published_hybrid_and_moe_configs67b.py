"""Published configs planned for the first time (planfuzz67b): Falcon-H1-7B (parallel Mamba2 + attention), Jamba-1.5-
Mini (Mamba1 + attention + MoE), Phi-3.5-MoE and Seed-OSS-36B. The planner got them right before this file; these are
guards, each figure derived from the engine's source, not read off the planner.

Weights are each model's parameter count at bf16 (transformers 5.19 on the meta device, scripts/gen_inventory.py's
way: FalconH1ForCausalLM 7,585,513,568; JambaForCausalLM 51,570,323,328; PhimoeForCausalLM 41,872,793,600;
SeedOssForCausalLM 36,151,104,512), given as one tensor (factories.sized_checkpoint).

- Falcon-H1 (vllm/model_executor/models/falcon_h1.py, 0.32.0 wheel): every layer holds an attention KV of
  num_key_value_heads x head_dim and a Mamba2 state, mamba2_state_shape(intermediate = mamba_d_ssm, n_groups, heads
  mamba_n_heads, head_dim mamba_d_head, state mamba_d_state, conv mamba_d_conv), in the model dtype
  (mamba2_state_dtype 'auto'); groups rounded up to TP (extra_groups_for_head_shards).
- Jamba (jamba.py, 0.32.0 wheel): attention where i % attn_layer_period == attn_layer_offset, a Mamba1 state
  elsewhere: mamba1_state_shape(intermediate = mamba_expand x hidden_size, state mamba_d_state, conv mamba_d_conv).
- The hybrid page: the attention block is raised to a multiple of the kernel alignment (16) that holds the state
  (vllm/platforms/interface.py _align_hybrid_block_size; planner.kv_groups).
- Phi-3.5-MoE (phimoe.py): head_dim hidden_size // heads = 128 over 8 KV heads; Seed-OSS (seed_oss.py): head_dim 128
  over 8 KV heads, 64 layers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.planner import plan_model


def _config(name: str) -> dict:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _plan(tmp_path: Path, name: str, params: int, chip: str = "h100", **kwargs):  # type: ignore[no-untyped-def]
    path = sized_checkpoint(tmp_path / "m", _config(name), 2 * params)
    return plan_model(str(path), chip, "vllm-gpu", engine_version="0.32.0", **kwargs)


def test_falcon_h1_7b_every_layer_holds_kv_and_a_mamba2_state(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "tiiuae--Falcon-H1-7B-Instruct.partial.json", 7_585_513_568, max_model_len=8192)
    assert plan.kv_bytes_per_token == 44 * 2 * 128 * 2 * 2 == 45_056
    conv, ssm = (3072 + 2 * 1 * 256) * (4 - 1), 24 * 128 * 256
    assert {layer.state_bytes for layer in plan.layers} == {(conv + ssm) * 2} == {1_594_368}
    # 1,594,368 B of state over 1,024 B a token of one layer's KV: 16 x cdiv(1,594,368, 16 x 1,024) = 1,568 tokens
    assert plan.memory_budget.min_block_size == 1568
    assert plan.fits


def test_falcon_h1_7b_state_at_tp2_pads_its_one_group(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "tiiuae--Falcon-H1-7B-Instruct.partial.json", 7_585_513_568, max_model_len=8192,
                 tensor_parallel_size=2)  # fmt: skip
    # n_groups 1 -> 2 at TP 2; conv (3072 + 2 x 2 x 256) / 2 x 3, SSM 24 / 2 heads x 128 x 256 per GPU: 798,720 B,
    # and the plan's state_bytes is over all TP ranks (schemas.plan LayerPlan), 3,072 B more than at TP 1
    per_gpu = ((4096 // 2) * 3 + 12 * 128 * 256) * 2
    assert {layer.state_bytes for layer in plan.layers} == {2 * per_gpu} == {2 * 798_720}


def test_jamba_15_mini_mamba1_layers_and_four_attention_layers(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "ai21labs--AI21-Jamba-1.5-Mini.json", 51_570_323_328, chip="h200", max_model_len=65536)
    attention = [layer.index for layer in plan.layers if layer.bytes_per_token]
    assert attention == [4, 12, 20, 28]
    assert plan.kv_bytes_per_token == 4 * 8 * 128 * 2 * 2 == 16_384
    states = {layer.state_bytes for layer in plan.layers if not layer.bytes_per_token}
    assert states == {(8192 * 3 + 8192 * 16) * 2} == {311_296}
    assert plan.memory_budget.min_block_size == 80  # 16 x cdiv(311,296, 16 x 4,096)
    assert plan.fits  # 96.05 GiB of weights on a 139.8 GiB H200 at 0.92
    h100 = _plan(tmp_path / "h100", "ai21labs--AI21-Jamba-1.5-Mini.json", 51_570_323_328, max_model_len=65536)
    assert not h100.fits  # 96.05 GiB of weights over a 72.85 GiB cap


@pytest.mark.parametrize(("tp", "fits"), [(1, False), (2, True)])
def test_phi35_moe_needs_two_h100s(tmp_path: Path, tp: int, fits: bool) -> None:
    plan = _plan(tmp_path, "microsoft--Phi-3.5-MoE-instruct.partial.json", 41_872_793_600, max_model_len=32768,
                 tensor_parallel_size=tp)  # fmt: skip
    assert plan.kv_bytes_per_token == 32 * 8 * (4096 // 32) * 2 * 2 == 131_072
    assert plan.fits is fits  # 78.0 GiB of weights: over one H100's 72.85 GiB cap, 39.0 GiB a GPU at TP 2


def test_seed_oss_36b_at_32k_needs_two_h100s(tmp_path: Path) -> None:
    one = _plan(tmp_path / "a", "ByteDance-Seed--Seed-OSS-36B-Instruct.partial.json", 36_151_104_512,
                max_model_len=32768)  # fmt: skip
    assert one.kv_bytes_per_token == 64 * 8 * 128 * 2 * 2 == 262_144
    # 67.34 GiB of weights leave a pool of under 8 GiB, where one 32,768-token request needs 8 GiB of KV
    assert not one.fits and one.longest_fit_max_model_len is not None and one.longest_fit_max_model_len < 32768
    two = _plan(tmp_path / "b", "ByteDance-Seed--Seed-OSS-36B-Instruct.partial.json", 36_151_104_512,
                max_model_len=32768, tensor_parallel_size=2)  # fmt: skip
    assert two.fits
