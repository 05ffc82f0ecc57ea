"""Nemotron NAS (DeciLMForCausalLM, model_type 'nemotron-nas': Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-Ultra-
253B), which the planner refused as unmodelled until 2026-12-06 though vLLM serves it.

The configs are the published config.json files as NVIDIA's Megatron-Bridge copies them whole
(tests/fixtures/bootlogs/configs/nvidia--*.json, `_source` naming the file and commit). The expected figures are worked
by hand from vllm/model_executor/models/nemotron_nas.py of the vllm 0.34.0 sdist, lines named.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.source import config_from_dict
from onechip.schemas.plan import Plan

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
SUPER = json.loads((CONFIGS / "nvidia--Llama-3_3-Nemotron-Super-49B-v1.json").read_text(encoding="utf-8"))
ULTRA = json.loads((CONFIGS / "nvidia--Llama-3_1-Nemotron-Ultra-253B-v1.json").read_text(encoding="utf-8"))
_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]


def _plan(tmp_path: Path, config: dict[str, Any], **kwargs: Any) -> Plan:
    """vLLM 0.34.0's plan on H100 for `config` (one-element bf16 tensors: the KV geometry alone)."""
    tmp_path.mkdir(exist_ok=True)
    directory = one_element_checkpoint(tmp_path / "ckpt", config, _NAMES)
    return plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", **kwargs)


def _attention(config: dict[str, Any]) -> list[bool]:
    return [not block["attention"]["no_op"] for block in config["block_configs"]]


# nemotron_nas.py DeciLMDecoderLayer (lines 140-160): a layer whose block_configs[i].attention.no_op is false builds
# DeciLMAttention (a LlamaAttention) of num_attention_heads // n_heads_in_group KV heads; a no_op layer builds none,
# so it has no Attention and no KV cache spec. LlamaAttention (llama.py lines 158-159): head_dim = config.head_dim or
# hidden_size // num_attention_heads. Super-49B: 49 of its 80 layers attend, 64 // 8 = 8 KV heads of 8192 // 64 = 128;
# a token takes K and V of 8 x 128 bf16 on each: 49 x 2 x 8 x 128 x 2 B
SUPER_KV_BYTES = 49 * 2 * 8 * 128 * 2


def test_super_49b_caches_only_its_attention_layers(tmp_path: Path) -> None:
    plan = _plan(tmp_path, SUPER, max_model_len=8192)
    assert sum(_attention(SUPER)) == 49
    layers = [(x.attention_type, x.owns_cache, x.kv_heads, x.bytes_per_token) for x in plan.layers]
    assert layers == [("full", True, 8, 8 * 128 * 2 * 2) if a else ("none", False, 0, 0) for a in _attention(SUPER)]
    assert plan.kv_bytes_per_token == SUPER_KV_BYTES == 200_704


def test_ultra_253b_kv_bytes(tmp_path: Path) -> None:
    # 64 of 162 layers attend, 128 // 16 = 8 KV heads of 16384 // 128 = 128
    plan = _plan(tmp_path, ULTRA, max_model_len=8192)
    assert sum(_attention(ULTRA)) == 64
    assert plan.kv_bytes_per_token == 64 * 2 * 8 * 128 * 2 == 262_144


def _group(config: dict[str, Any], layer: int, n_heads_in_group: int) -> dict[str, Any]:
    blocks = [dict(b) for b in config["block_configs"]]
    blocks[layer] = {**blocks[layer], "attention": {**blocks[layer]["attention"], "n_heads_in_group": n_heads_in_group}}
    return {**config, "block_configs": blocks}


def test_kv_heads_per_rank_follow_llama_attention(tmp_path: Path) -> None:
    # LlamaAttention (llama.py lines 147-156): KV heads >= TP are split (and must divide by it), fewer are replicated
    # (TP must divide by them), max(1, heads // TP) a rank. Layer 0 at n_heads_in_group 64: 1 KV head, replicated on
    # each of 2 ranks (2 heads in all); the other 48 attention layers 8 heads split 4 and 4
    one = _group(SUPER, 0, 64)
    plan = _plan(tmp_path / "tp2", one, max_model_len=8192, tensor_parallel_size=2)
    assert plan.layers[0].kv_heads == 2 and plan.layers[1].kv_heads == 8
    assert plan.kv_bytes_per_token == (48 * 8 + 2) * 2 * 128 * 2
    # a layer whose KV heads neither divide TP nor are divided by it fails LlamaAttention's assert at load: refused in
    # one line naming that layer's field. 48 query heads: layer 0 at n_heads_in_group 8 has 6 (split 3 and 3 at TP 2),
    # layer 1 at 16 has 3
    odd = {**_group(SUPER, 0, 8), "num_attention_heads": 48, "hidden_size": 6144}
    odd = _group(odd, 1, 16)
    with pytest.raises(ConfigError, match=r"block_configs\[1\]\.attention\.n_heads_in_group") as caught:
        _plan(tmp_path / "odd", odd, max_model_len=8192, tensor_parallel_size=2)
    assert "\n" not in str(caught.value)


def test_blocks_vllm_cannot_build_are_refused_naming_the_field() -> None:
    # DeciLMDecoderLayer reads config.block_configs[layer_idx] for each of num_hidden_layers layers (line 132)
    with pytest.raises(ConfigError, match="'block_configs'"):
        config_from_dict({k: v for k, v in SUPER.items() if k != "block_configs"}, "config.json")
    with pytest.raises(ConfigError, match="'block_configs'"):
        config_from_dict({**SUPER, "block_configs": SUPER["block_configs"][:79]}, "config.json")
    # an attention layer divides num_attention_heads by n_heads_in_group (line 142): null cannot be served
    with pytest.raises(ConfigError, match=r"'block_configs\[0\]\.attention\.n_heads_in_group'"):
        config_from_dict(_group(SUPER, 0, None), "config.json")  # type: ignore[arg-type]
    # 64 // 3 = 21 KV heads, which do not group the 64 query heads: Attention asserts num_heads % num_kv_heads
    with pytest.raises(ConfigError, match=r"'block_configs\[2\]\.attention\.n_heads_in_group' is 21 \(layer 2\)"):
        config_from_dict(_group(SUPER, 2, 3), "config.json")
    # replace_with_linear: DeciLMDecoderLayer reads only no_op (lines 133-134) and builds the full attention / MLP,
    # whose q/k/v (gate/up/down) weights such a checkpoint does not have
    blocks = [dict(b) for b in SUPER["block_configs"]]
    blocks[3] = {**blocks[3], "attention": {**blocks[3]["attention"], "replace_with_linear": True}}
    with pytest.raises(ConfigError, match=r"'block_configs\[3\]\.attention\.replace_with_linear'"):
        config_from_dict({**SUPER, "block_configs": blocks}, "config.json")


def test_the_widest_mlp_sizes_the_forward(tmp_path: Path) -> None:
    # _ffn_mult_to_intermediate_size (lines 59-62): int(2 x ffn_mult x hidden / 3) rounded up to a multiple of 256;
    # Super-49B's widest block (ffn_mult 5.25): int(2 x 5.25 x 8192 / 3) = 28,672, already a multiple of 256
    config = config_from_dict(SUPER, "config.json")
    assert config.text["intermediate_size"] == 28_672


def test_pipeline_stages_split_the_attention_layers(tmp_path: Path) -> None:
    # no-op layers read no other layer's cache: PP is planned, each stage caching its own attention layers
    # (vLLM's get_num_layers_by_block_type counts `not bc.attention.no_op` over the stage's layers, config/model.py
    # lines 1772-1774); make_layers splits the 80 layers 40 / 40 (get_pp_indices), the first stage holding 37 of the
    # 49 attention layers, the second 12. The first binds: its block of 64 tokens (config/cache.py DEFAULT_BLOCK_SIZE)
    # is 64 x 37 x 2 x 8 x 128 x 2 B
    plan = _plan(tmp_path, SUPER, max_model_len=8192, pipeline_parallel_size=2)
    assert sum(_attention(SUPER)[:40]) == 37 and sum(_attention(SUPER)[40:]) == 12
    assert plan.kv_bytes_per_token == SUPER_KV_BYTES and plan.block_size == 64
    assert plan.memory_budget is not None and plan.memory_budget.block_bytes == 64 * 37 * 2 * 8 * 128 * 2


def _full_checkpoint(directory: Path, config: dict[str, Any]) -> Path:
    """A header-only checkpoint of the tensors nemotron_nas.py loads, at their shapes (bf16): embeddings, per layer
    input_layernorm + q/k/v/o where attention is not no_op, post_attention_layernorm + gate/up/down of the block's
    intermediate size, the final norm and lm_head (untied)."""
    hidden, heads, vocab = config["hidden_size"], config["num_attention_heads"], config["vocab_size"]
    dim = hidden // heads
    shapes: dict[str, list[int]] = {"model.embed_tokens.weight": [vocab, hidden], "model.norm.weight": [hidden],
                                    "lm_head.weight": [vocab, hidden]}  # fmt: skip
    for i, block in enumerate(config["block_configs"]):
        p = f"model.layers.{i}."
        if not block["attention"]["no_op"]:
            kv = heads // block["attention"]["n_heads_in_group"] * dim
            shapes |= {p + "input_layernorm.weight": [hidden], p + "self_attn.q_proj.weight": [hidden, hidden],
                       p + "self_attn.k_proj.weight": [kv, hidden], p + "self_attn.v_proj.weight": [kv, hidden],
                       p + "self_attn.o_proj.weight": [hidden, hidden]}  # fmt: skip
        if not block["ffn"]["no_op"]:
            inter = -(-int(2 * block["ffn"]["ffn_mult"] * hidden / 3) // 256) * 256
            shapes |= {p + "post_attention_layernorm.weight": [hidden], p + "mlp.gate_proj.weight": [inter, hidden],
                       p + "mlp.up_proj.weight": [inter, hidden],
                       p + "mlp.down_proj.weight": [hidden, inter]}  # fmt: skip
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


def test_super_49b_fits_two_h100s_not_one(tmp_path: Path) -> None:
    checkpoint = _full_checkpoint(tmp_path / "super", SUPER)
    # the shapes above add up to 49,867,145,216 parameters, the Hub model card's '49B' (Llama-3.3-70B's 70.6B less
    # the removed attention and MLP width)
    one = plan_model(str(checkpoint), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192)
    assert not one.fits
    for tp in (2, 4):
        plan = plan_model(str(checkpoint), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192,
                          tensor_parallel_size=tp)  # fmt: skip
        assert plan.fits and plan.kv_bytes_per_token == SUPER_KV_BYTES


def test_the_compiled_graph_is_cut_at_attention_layers_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # vllm/compilation/backends.py split_graph cuts the compiled model at each attention op; a no-op layer calls none
    # (DeciLMDecoderLayer.forward skips self_attn, nemotron_nas.py lines 191-203), so Super-49B's 80 layers make 49
    # cuts and 50 PIECEWISE pieces
    from onechip.planner import gpu_plan

    seen: list[tuple[int, int | None]] = []
    real = gpu_plan.cuda_graph_estimate

    def spy(rule: Any, **kwargs: Any) -> tuple[int, int, int]:
        seen.append((kwargs["layers"], kwargs["split_layers"]))
        return real(rule, **kwargs)

    monkeypatch.setattr(gpu_plan, "cuda_graph_estimate", spy)
    _plan(tmp_path, SUPER, max_model_len=8192)
    assert seen and set(seen) == {(80, 49)}
