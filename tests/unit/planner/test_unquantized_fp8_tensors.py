"""A checkpoint without a quantization method whose tensors are stored in an 8-bit float format: vLLM creates the
model's parameters in the served dtype and copies the stored tensors into them, so they are resident at the served
dtype, not at one byte.

vLLM 0.34.0 sdist: an unquantized layer's create_weights makes its parameters with `dtype=params_dtype` (the model
dtype; vllm/model_executor/layers/fused_moe/unquantized_fused_moe_method.py lines 88-101, and
UnquantizedLinearMethod), and the weight loaders fill them with `dst.copy_(src)` (vllm/model_executor/utils.py
copy_weight_, lines 79-103; gpt_oss.py _copy_to_expert, lines 215-222), which converts the dtype.

The config and inventory are a 'gpt-oss-20b-bf16' directory as a model_inspector.py report lists them (search-index
file id 62846485754): GptOssConfig as transformers 5.7 saves it, no quantization_config, dtype bfloat16, the experts'
gate_up_proj [32, 2880, 5760] and down_proj [32, 2880, 2880] stored as torch.float8_e5m2, everything else bf16;
20,914,757,184 parameters in 21.16 GiB of files.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from factories import BOOTLOGS
from onechip.planner import plan_model

CONFIG = json.loads((BOOTLOGS / "configs" / "gpt-oss-20b-bf16.model-inspector.json").read_text(encoding="utf-8"))
PARAMETERS = 20_914_757_184  # the report's '参数总量'


def _inventory() -> list[tuple[str, list[int], str]]:
    """The report's 411 tensors (its table folds the 24 layers into one row per name)."""
    tensors = [("lm_head.weight", [201088, 2880], "BF16"), ("model.embed_tokens.weight", [201088, 2880], "BF16"),
               ("model.norm.weight", [2880], "BF16")]  # fmt: skip
    per_layer = [
        ("input_layernorm.weight", [2880], "BF16"), ("post_attention_layernorm.weight", [2880], "BF16"),
        ("mlp.experts.down_proj", [32, 2880, 2880], "F8_E5M2"), ("mlp.experts.down_proj_bias", [32, 2880], "BF16"),
        ("mlp.experts.gate_up_proj", [32, 2880, 5760], "F8_E5M2"),
        ("mlp.experts.gate_up_proj_bias", [32, 5760], "BF16"),
        ("mlp.router.bias", [32], "BF16"), ("mlp.router.weight", [32, 2880], "BF16"),
        ("self_attn.k_proj.bias", [512], "BF16"), ("self_attn.k_proj.weight", [512, 2880], "BF16"),
        ("self_attn.o_proj.bias", [2880], "BF16"), ("self_attn.o_proj.weight", [2880, 4096], "BF16"),
        ("self_attn.q_proj.bias", [4096], "BF16"), ("self_attn.q_proj.weight", [4096, 2880], "BF16"),
        ("self_attn.sinks", [64], "BF16"), ("self_attn.v_proj.bias", [512], "BF16"),
        ("self_attn.v_proj.weight", [512, 2880], "BF16"),
    ]  # fmt: skip
    for layer in range(24):
        tensors += [(f"model.layers.{layer}.{name}", shape, dtype) for name, shape, dtype in per_layer]
    return tensors


def _checkpoint(directory: Path, config: dict) -> Path:
    header, offset = {}, 0
    for name, shape, dtype in _inventory():
        size = math.prod(shape) * (1 if dtype == "F8_E5M2" else 2)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return directory


def test_the_inventory_is_the_reports() -> None:
    tensors = _inventory()
    assert len(tensors) == 411
    assert sum(math.prod(shape) for _, shape, _ in tensors) == PARAMETERS


def test_fp8_stored_experts_of_an_unquantized_checkpoint_are_resident_at_the_served_dtype(tmp_path) -> None:
    # every parameter at bf16: 20,914,757,184 x 2 B = 41,829,514,368 B (38.96 GiB); the planner counted the files'
    # 22,719,216,768 B (21.16 GiB), so an H100 plan's KV pool was ~19 GB too large and a v6e-1 plan 'fit'
    plan = plan_model(str(_checkpoint(tmp_path / "ckpt", CONFIG)), "h100", "vllm-gpu", max_model_len=8192)
    assert plan.weights_bytes == 2 * PARAMETERS == 41_829_514_368


def test_a_quantized_checkpoint_keeps_its_fp8_bytes(tmp_path) -> None:
    # with a quantization method the experts stay as stored: one byte each (the method creates its own fp8 parameters)
    config = {**CONFIG, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic"}}
    plan = plan_model(str(_checkpoint(tmp_path / "ckpt", config)), "h100", "vllm-gpu", max_model_len=8192)
    experts = 24 * 32 * (2880 * 2880 + 2880 * 5760)
    assert plan.weights_bytes == 2 * (PARAMETERS - experts) + experts
