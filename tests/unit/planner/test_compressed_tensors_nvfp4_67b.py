"""A compressed-tensors NVFP4 checkpoint ('nvfp4-pack-quantized') on the cards vLLM serves it on (planfuzz67b).

vLLM's CompressedTensorsConfig accepts any card of compute capability 7.0 (get_min_capability 70), but then checks the
scheme each layer resolves to: weights in NVFP4 format (float, 4 bits, tensor_group, group_size 16, symmetric) are
CompressedTensorsW4A4Fp4 whatever the activations (use_a16 without them), whose get_min_capability is 75, and
get_scheme raises 'Quantization scheme is not supported for the current GPU. Min capability: 75. Current
capability: 70.' (_check_scheme_supported; vllm/model_executor/layers/quantization/compressed_tensors/
compressed_tensors.py and schemes/compressed_tensors_w4a4_nvfp4.py, 0.25.0 and 0.27.1 sdists and the 0.32.0 wheel).
Before: a V100 plan said it fits. The weights are held as stored: weight_packed uint8 [out, in / 2], weight_scale
float8_e4m3fn [out, in / 16], two float32 global scales (the scheme's create_weights).
The quantization_config is a public Qwen3-Next NVFP4 export's as a C++ test quotes it (search-index file id
70106050264), over Llama-3-8B-Instruct's geometry (configs/NousResearch--Meta-Llama-3-8B-Instruct.bnb-4bit.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, header_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model

LLAMA3 = json.loads(
    (BOOTLOGS / "configs" / "NousResearch--Meta-Llama-3-8B-Instruct.bnb-4bit.json").read_text(encoding="utf-8")
)
NVFP4 = {
    "config_groups": {"group_0": {"format": "nvfp4-pack-quantized", "weights": {
        "dynamic": False, "num_bits": 4, "type": "float", "group_size": 16, "strategy": "tensor_group",
        "symmetric": True}, "targets": ["Linear"]}},
    "format": "nvfp4-pack-quantized", "kv_cache_scheme": None, "quant_method": "compressed-tensors",
    "quantization_status": "compressed", "sparsity_config": {}, "transform_config": {},
}  # fmt: skip
CONFIG = {**{k: v for k, v in LLAMA3.items() if k != "_source"}, "quantization_config": NVFP4}
HIDDEN, INTER, VOCAB = 4096, 14336, 128256
LINEAR = [("self_attn.q_proj", HIDDEN, HIDDEN), ("self_attn.k_proj", 1024, HIDDEN), ("self_attn.v_proj", 1024, HIDDEN),
          ("self_attn.o_proj", HIDDEN, HIDDEN), ("mlp.gate_proj", INTER, HIDDEN), ("mlp.up_proj", INTER, HIDDEN),
          ("mlp.down_proj", HIDDEN, INTER)]  # fmt: skip


def _checkpoint(directory: Path) -> Path:
    shapes: dict[str, list[int] | tuple[str, list[int]]] = {
        "model.embed_tokens.weight": [VOCAB, HIDDEN], "lm_head.weight": [VOCAB, HIDDEN], "model.norm.weight": [HIDDEN]
    }  # fmt: skip
    for i in range(32):
        for module, out, inp in LINEAR:
            at = f"model.layers.{i}.{module}"
            shapes |= {f"{at}.weight_packed": ("U8", [out, inp // 2]),
                       f"{at}.weight_scale": ("F8_E4M3", [out, inp // 16]),
                       f"{at}.weight_global_scale": ("F32", [1])}  # fmt: skip
        for norm in ("input_layernorm", "post_attention_layernorm"):
            shapes[f"model.layers.{i}.{norm}.weight"] = [HIDDEN]
    return header_checkpoint(directory, CONFIG, shapes)


def test_nvfp4_scheme_is_refused_below_compute_capability_75(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"Min capability: 75\. Current capability: 70") as err:
        plan_model(str(_checkpoint(tmp_path / "m")), "v100-32gb", "vllm-gpu", engine_version="0.32.0",
                   max_model_len=8192)  # fmt: skip
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("chip", ["t4", "h100", "b200"])
def test_nvfp4_weights_are_held_as_stored_from_75(tmp_path: Path, chip: str) -> None:
    plan = plan_model(str(_checkpoint(tmp_path / "m")), chip, "vllm-gpu", engine_version="0.32.0", max_model_len=8192)
    quantized = 32 * sum(out * inp for _, out, inp in LINEAR)
    bf16 = 2 * (2 * VOCAB * HIDDEN + HIDDEN + 32 * 2 * HIDDEN)
    assert plan.weights_bytes == bf16 + quantized // 2 + quantized // 16 + 32 * len(LINEAR) * 4
