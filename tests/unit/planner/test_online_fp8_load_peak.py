"""The load peak of runtime --quantization fp8 on a 16-bit checkpoint (issue 27, fp8load69). vLLM builds each
quantized layer's parameters in the checkpoint's dtype and quantizes them after they load; what the load holds at its
peak depends on the release (engines.json online_fp8_load_rules, read in the vllm sdists and the 0.15.1 wheel):
up to 0.12.x every 16-bit weight (process_weights_after_loading runs once load_weights has returned); 0.13.0 - 0.15.x
every 16-bit weight and every fp8 copy (PR #29196 quantizes each layer as its last chunk loads, but the model's
load_weights holds every original parameter in its params_dict: PR #31914, 'did not actually reduce peak memory');
from 0.16.0 the fp8 weights and one layer in 16 bits (PR #31914: created on device 'meta', materialized just in
time). vllm-project/vllm#32773 (2026-01-21): Qwen3-30B-A3B starts on one 80 GB H100 in bf16 but runs out of memory
loading with --quantization fp8 on 0.13.0 and 0.14.0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import header_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
QWEN3_MOE = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-30B-A3B.json").read_text(encoding="utf-8"))


def _qwen3_30b_a3b(directory: Path) -> Path:
    """Qwen3-30B-A3B's bf16 tensors by name and shape (48 layers of 128 experts; untied head): 30,532,122,624
    parameters, the model card's 30.5B."""
    c = QWEN3_MOE
    hidden, inter, heads, kv = c["hidden_size"], c["moe_intermediate_size"], c["num_attention_heads"], 4
    dim = c["head_dim"]
    shapes: dict[str, list[int] | tuple[str, list[int]]] = {
        "model.embed_tokens.weight": [c["vocab_size"], hidden],
        "lm_head.weight": [c["vocab_size"], hidden],
        "model.norm.weight": [hidden],
    }
    for i in range(c["num_hidden_layers"]):
        p = f"model.layers.{i}."
        shapes |= {
            p + "self_attn.q_proj.weight": [heads * dim, hidden],
            p + "self_attn.k_proj.weight": [kv * dim, hidden],
            p + "self_attn.v_proj.weight": [kv * dim, hidden],
            p + "self_attn.o_proj.weight": [hidden, heads * dim],
            p + "self_attn.q_norm.weight": [dim],
            p + "self_attn.k_norm.weight": [dim],
            p + "mlp.gate.weight": [c["num_experts"], hidden],
            p + "input_layernorm.weight": [hidden],
            p + "post_attention_layernorm.weight": [hidden],
        }
        for e in range(c["num_experts"]):
            q = f"{p}mlp.experts.{e}."
            shapes |= {q + "gate_proj.weight": [inter, hidden], q + "up_proj.weight": [inter, hidden],
                       q + "down_proj.weight": [hidden, inter]}  # fmt: skip
    return header_checkpoint(directory, c, shapes)


@pytest.fixture(scope="module")
def qwen3_moe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _qwen3_30b_a3b(tmp_path_factory.mktemp("fp8load") / "qwen3-30b-a3b")


def _plan(path: Path, version: str, **extra: object):  # type: ignore[no-untyped-def]
    return plan_model(str(path), "h100", max_model_len=8192, engine_version=version, quantization="fp8", **extra)


def test_bf16_fits_the_h100_load(qwen3_moe: Path) -> None:
    # the baseline: 61.06 GB (56.87 GiB) of bf16 weights load on the 79.19 GiB card
    plan = plan_model(str(qwen3_moe), "h100", max_model_len=8192, engine_version="0.14.0")
    assert plan.fits, plan.verdict


def test_streaming_releases_hold_the_bf16_and_the_fp8_copies_and_run_out_of_memory(qwen3_moe: Path) -> None:
    for version in ("0.13.0", "0.14.0", "0.15.1"):
        plan = _plan(qwen3_moe, version)
        assert not plan.fits and plan.binding_limit == "weights-load", (version, plan.verdict)
        # 61,064,245,248 B of bf16 (56.87 GiB) beside the fp8 copies of the 18,672 decoder matrices (29,861,584,896
        # elements + 4 B of scale each: 27.86 GiB), and the bf16 RoPE cos/sin cache (40,960 positions x 128: 10 MiB),
        # 84.74 GiB at the load's peak
        assert "84.74 GiB" in plan.verdict and "79.19 GiB" in plan.verdict, plan.verdict
        assert "--quantization fp8" in plan.verdict


def test_releases_before_streaming_hold_the_bf16_weights_only(qwen3_moe: Path) -> None:
    plan = _plan(qwen3_moe, "0.12.0")
    assert plan.fits, plan.verdict
    note = next(w for w in plan.warnings if w.code == "online-fp8-load-peak")
    assert "56.87 GiB" in note.message and "0.12" in note.source


def test_meta_device_releases_load_the_fp8_weights(qwen3_moe: Path) -> None:
    for version in ("0.16.0", "0.19.0", "0.34.0"):
        plan = _plan(qwen3_moe, version)
        assert plan.fits, (version, plan.verdict)
        assert not any(w.code == "online-fp8-load-peak" for w in plan.warnings)


def test_a_dense_model_whose_bf16_exceeds_the_card_is_refused_before_streaming(tmp_path: Path) -> None:
    # Llama-3.3-70B at TP 1: 131.42 GiB of bf16 on a 79.19 GiB card (vllm-project/vllm#7200: an fp16 model loaded
    # with --quantization fp8 on an 80 GB A800, vLLM 0.5.4, out of memory); its fp8 weights alone would load
    config = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.3-70B-Instruct.json").read_text(encoding="utf-8"))
    hidden, inter, layers = config["hidden_size"], config["intermediate_size"], config["num_hidden_layers"]
    kv = config["num_key_value_heads"] * hidden // config["num_attention_heads"]
    shapes: dict[str, list[int] | tuple[str, list[int]]] = {
        "model.embed_tokens.weight": [config["vocab_size"], hidden],
        "lm_head.weight": [config["vocab_size"], hidden],
        "model.norm.weight": [hidden],
    }
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes |= {p + "self_attn.q_proj.weight": [hidden, hidden], p + "self_attn.k_proj.weight": [kv, hidden],
                   p + "self_attn.v_proj.weight": [kv, hidden], p + "self_attn.o_proj.weight": [hidden, hidden],
                   p + "mlp.gate_proj.weight": [inter, hidden], p + "mlp.up_proj.weight": [inter, hidden],
                   p + "mlp.down_proj.weight": [hidden, inter], p + "input_layernorm.weight": [hidden],
                   p + "post_attention_layernorm.weight": [hidden]}  # fmt: skip
    path = header_checkpoint(tmp_path / "llama70b", config, shapes)
    old = plan_model(str(path), "h100", max_model_len=4096, engine_version="0.8.5", quantization="fp8")
    assert not old.fits and old.binding_limit == "weights-load", old.verdict
    rope_cache = config["max_position_embeddings"] * 128 * 2  # the bf16 RoPE cos/sin cache, on the GPU as it loads
    assert f"{(sum(2 * _n(s) for s in shapes.values()) + rope_cache) / GIB:.2f} GiB" in old.verdict  # 131.45
    new = plan_model(str(path), "h100", max_model_len=4096, engine_version="0.19.0", quantization="fp8")
    assert new.binding_limit != "weights-load", new.verdict


def _n(shape: list[int] | tuple[str, list[int]]) -> int:
    n = 1
    for d in shape if isinstance(shape, list) else shape[1]:
        n *= d
    return n
