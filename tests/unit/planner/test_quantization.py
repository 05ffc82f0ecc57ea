"""Weights as loaded (issue 27): runtime --quantization fp8 on a bf16 checkpoint, and the checkpoint's own
quantization_config method checked against the methods the engine registers."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from onechip.errors import ConfigError
from onechip.planner import plan_model

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
GiB = 2**30


def llama_layout(directory: Path, config: dict) -> Path:
    """config.json and a header-only safetensors file with Llama's tensors by name and shape (bf16), so the
    planner can tell linear weights from embeddings, LM head and norms."""
    h, i, v, n = config["hidden_size"], config["intermediate_size"], config["vocab_size"], config["num_hidden_layers"]
    kv = config["num_key_value_heads"] * (h // config["num_attention_heads"])
    shapes = {"model.embed_tokens.weight": [v, h], "lm_head.weight": [v, h], "model.norm.weight": [h]}
    for layer in range(n):
        p = f"model.layers.{layer}."
        shapes |= {
            p + "self_attn.q_proj.weight": [h, h], p + "self_attn.k_proj.weight": [kv, h],
            p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, h],
            p + "mlp.gate_proj.weight": [i, h], p + "mlp.up_proj.weight": [i, h], p + "mlp.down_proj.weight": [h, i],
            p + "input_layernorm.weight": [h], p + "post_attention_layernorm.weight": [h],
        }  # fmt: skip
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return directory


def test_the_layout_is_the_checkpoint_of_the_model_card(tmp_path: Path) -> None:
    plan = plan_model(str(llama_layout(tmp_path / "llama", LLAMA)), "h100", max_model_len=8192)
    assert plan.weights_bytes == 16_060_522_496  # Llama-3.1-8B-Instruct's safetensors total (issue 12)


def test_online_fp8_matches_the_h100_log_out_of_sample(tmp_path: Path) -> None:
    # llm-d-planner sweep, vLLM 0.19.0, H100, --quantization fp8 (tests/fixtures/bootlogs/
    # h100-llama31-8b-qfp8-v0190.log): 'Model loading took 8.49 GiB', 'GPU KV cache size: 529,248 tokens'.
    entry = next(e for e in json.loads((BOOTLOGS / "corpus.json").read_text()) if e["name"].endswith("qfp8-v0190"))
    path = llama_layout(tmp_path / "llama", LLAMA)
    plan = plan_model(
        str(path), "h100", max_model_len=8192, utilization=0.95, max_num_seqs=1024, max_num_batched_tokens=8192,
        engine_version="0.19.0", quantization="fp8", multimodal=False,
    )  # fmt: skip
    assert plan.weights_bytes / GiB == pytest.approx(entry["logged"]["model_weights_gib"], abs=0.06)
    logged = entry["logged"]["kv_cache_tokens"]
    assert abs(plan.kv_tokens_logged - logged) / logged < 0.01
    assert any(a.flag == "--quantization" and a.value == "fp8" for a in plan.serve_args)  # the command serves it


def test_an_unknown_quant_method_is_refused_as_the_engine_refuses_it(tmp_path: Path) -> None:
    config = {**LLAMA, "quantization_config": {"quant_method": "frobquant"}}
    path = llama_layout(tmp_path / "frob", config)
    with pytest.raises(ConfigError, match=r"'frobquant' is not a method vllm-gpu registers.*Unknown quantization"):
        plan_model(str(path), "h100", max_model_len=8192)


def test_runtime_fp8_on_a_quantized_checkpoint_is_refused(tmp_path: Path) -> None:
    config = {**LLAMA, "quantization_config": {"quant_method": "awq"}}
    path = llama_layout(tmp_path / "awq", config)
    with pytest.raises(ConfigError, match="already quantized"):
        plan_model(str(path), "h100", max_model_len=8192, quantization="fp8")
