"""Two weight-side terms of issue 27: vLLM's M-RoPE cos/sin cache (engines.json mrope_cache_rules) and the MTP
layers DeepSeek-V3 / R1 checkpoints store as decoder layers past the model's own (planner.weights.nextn_layers).

Checkpoints here are header-only safetensors files (the planner reads headers, never tensor data).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS
from onechip.planner import plan_model
from onechip.planner.core import mrope_positions_factor
from onechip.planner.gpu_memory import rotary_cache_bytes
from onechip.planner.rules import engine_rules
from onechip.planner.weights import (
    DTYPE_BYTES,
    MTP,
    decode_bytes_per_step,
    nextn_layers,
    offloaded_layers,
    read_safetensors_header,
    weights_by_component,
    weights_by_stage,
)
from onechip.schemas.common import GIB


def _config(name: str) -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _header_only(path: Path, tensors: dict[str, tuple[str, int]]) -> Path:
    """A safetensors file of 1-D tensors name -> (dtype, bytes), headers only."""
    header, offset = {}, 0
    for name, (dtype, size) in tensors.items():
        numel = int(size / DTYPE_BYTES[dtype])  # the format requires shape x dtype size == the offsets' span
        header[name] = {"dtype": dtype, "shape": [numel], "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(len(raw).to_bytes(8, "little") + raw)
    return path


# vllm/model_executor/layers/rotary_embedding/mrope.py MRotaryEmbedding: max_position_embeddings x 4 rows from 0.7.2
# (0.7.1 passes the positions as they are); from 0.32.0 the Qwen3-VL / Qwen3.5 decoder layers pass a factor of 1
# unless video pruning is on (models/qwen3_vl.py mrope_positions_factor), Qwen2-VL / Qwen2.5-VL keep 4.
@pytest.mark.parametrize(
    ("version", "architecture", "factor"),
    [
        ("0.7.1", "Qwen2_5_VLForConditionalGeneration", 1),
        ("0.7.2", "Qwen2_5_VLForConditionalGeneration", 4),
        ("0.20.0", "Qwen3_5ForConditionalGeneration", 4),
        ("0.31.0", "Qwen3VLMoeForConditionalGeneration", 4),
        ("0.32.0", "Qwen3VLForConditionalGeneration", 1),
        ("0.34.0", "Qwen3_5ForCausalLM", 1),
        ("0.34.0", "Qwen2_5_VLForConditionalGeneration", 4),
    ],
)
def test_mrope_positions_factor_by_release_and_architecture(version: str, architecture: str, factor: int) -> None:
    assert mrope_positions_factor(engine_rules("vllm-gpu"), version, [architecture]) == factor


def test_mrope_cache_is_positions_x_factor_x_rotary_dim_in_the_model_dtype() -> None:
    qwen35 = _config("Qwen--Qwen3.5-9B.json")["text_config"]  # head_dim 256 x partial_rotary_factor 0.25 = 64
    assert rotary_cache_bytes(qwen35, dtype_bytes=2, mrope_positions_factor=4) == 262_144 * 4 * 64 * 2  # 0.125 GiB
    assert rotary_cache_bytes(qwen35, dtype_bytes=2, mrope_positions_factor=1) == 262_144 * 64 * 2
    assert rotary_cache_bytes(qwen35, dtype_bytes=2) == 0  # no rule: not counted
    qwen25_vl = _config("Qwen--Qwen2.5-VL-7B-Instruct.json")  # rope_scaling type 'mrope', head 3584 / 28 = 128
    assert rotary_cache_bytes(qwen25_vl, dtype_bytes=2, mrope_positions_factor=4) == 128_000 * 4 * 128 * 2
    yarn = {**qwen35, "rope_parameters": {**qwen35["rope_parameters"], "rope_type": "yarn", "factor": 4.0}}
    assert rotary_cache_bytes(yarn, dtype_bytes=2, mrope_positions_factor=4) == 0  # YaRN M-RoPE: not modelled


def test_the_plan_holds_qwen35_mrope_cache_on_every_gpu(tmp_path: Path) -> None:
    """The budget's weights are the checkpoint's plus the cache, at TP 1 and at TP 2 alike (a buffer on every GPU):
    4 x 262,144 x 64 x 2 B on vLLM 0.20.0, a quarter of it on 0.32.0 (factor 1). Before the rule: 0."""
    (tmp_path / "config.json").write_text(json.dumps(_config("Qwen--Qwen3.5-9B.json")), encoding="utf-8")
    _header_only(tmp_path / "model.safetensors", {"model.language_model.layers.0.mlp.w": ("BF16", 17 * GIB)})
    for version, cache in (("0.20.0", 262_144 * 4 * 64 * 2), ("0.32.0", 262_144 * 64 * 2)):
        for tp in (1, 2):
            plan = plan_model(str(tmp_path), "rtx5090", engine_version=version, max_model_len=4096, multimodal=False,
                              tensor_parallel_size=tp)  # fmt: skip
            assert plan.memory_budget is not None
            assert plan.memory_budget.weights_bytes == 17 * GIB // tp + cache


# DeepSeek-V3 / R1 store their MTP layer as model.layers.{num_hidden_layers}.* (num_nextn_predict_layers 1);
# vLLM's DeepseekV2ForCausalLM.load_weights skips it (get_spec_layer_idx_from_weight_name, deepseek_v2.py 0.19.0 and
# 0.34.0) and only the MTP drafter loads it. Before planner.weights.nextn_layers the planner counted it as a
# decoder layer of the target model (and refused the checkpoint under pipeline parallelism: a layer past every stage).
def test_deepseek_v3_nextn_layer_weighs_only_under_mtp(tmp_path: Path) -> None:
    text = {"num_hidden_layers": 2, "num_nextn_predict_layers": 1}
    layer_bytes = 64 * 2**20
    tensors = read_safetensors_header(
        _header_only(
            tmp_path / "model.safetensors",
            {
                "model.embed_tokens.weight": ("BF16", layer_bytes),
                "model.layers.0.mlp.down_proj.weight": ("BF16", layer_bytes),
                "model.layers.1.mlp.down_proj.weight": ("BF16", layer_bytes),
                "model.layers.2.mlp.down_proj.weight": ("BF16", layer_bytes),  # the MTP layer
                "model.layers.2.shared_head.head.weight": ("BF16", layer_bytes),
                "lm_head.weight": ("BF16", layer_bytes),
            },
        )
    )
    nextn = nextn_layers(text)
    assert nextn == range(2, 3) and nextn_layers({"num_hidden_layers": 2}) == range(2, 2)
    plain = weights_by_component(tensors, None, nextn=nextn)
    assert sum(plain.values()) == 4 * layer_bytes and MTP not in plain
    spec = weights_by_component(tensors, None, nextn=nextn, mtp=True)
    assert spec[MTP] == 2 * layer_bytes and sum(spec.values()) == 6 * layer_bytes
    assert weights_by_stage(tensors, None, [range(0, 1), range(1, 2)], nextn=nextn) == [2 * layer_bytes] * 2
    # nor is it streamed by a decode step, nor offloaded by --cpu-offload-gb
    assert decode_bytes_per_step(tensors, None, False, nextn) == 3 * layer_bytes
    offload = offloaded_layers(tensors, budget_bytes=10 * layer_bytes, served_dtype=None, tensor_parallel_size=1,
                               nextn=nextn)  # fmt: skip
    assert offload.offloaded_bytes == 2 * layer_bytes
