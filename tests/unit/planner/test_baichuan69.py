"""Baichuan (BaichuanForCausalLM, BaiChuanForCausalLM; model_type 'baichuan') on the releases that serve it (vLLM's
registry names both up to 0.24.0: catalog/vllm_architectures.json).

vllm/model_executor/models/baichuan.py (0.24.0 sdist): BaiChuanAttention takes head_dim = hidden_size //
num_attention_heads (no head_dim field read) and builds Attention(num_heads, head_dim, ...) with no num_kv_heads:
plain multi-head, one full-attention cache per layer. BaichuanForCausalLM uses RoPE when hidden_size is 4096
('baichuan2 7b': get_rope(head_dim, max_position=max_position_embeddings or 8192)) and ALiBi otherwise (13B: alibi
slopes, no rotary embedding, so no cos/sin cache); BaiChuanForCausalLM (Baichuan-7B) always RoPE."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip.planner import plan_model

# A Baichuan2-7B config as transformers logged it (search-index file id 3881833864) and Baichuan2-13B-Chat's
# config.json as a fine-tune's README copies it (file id 45597557903; its vocab_size as that copy states it)
BAICHUAN2_7B = {
    "architectures": ["BaichuanForCausalLM"], "model_type": "baichuan", "hidden_act": "silu", "hidden_size": 4096,
    "intermediate_size": 11008, "max_position_embeddings": 4096, "model_max_length": 4096, "num_attention_heads": 32,
    "num_hidden_layers": 32, "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
    "vocab_size": 125696,
}  # fmt: skip
BAICHUAN2_13B = {
    "architectures": ["BaichuanForCausalLM"], "model_type": "baichuan", "hidden_act": "silu", "hidden_size": 5120,
    "intermediate_size": 13696, "model_max_length": 4096, "num_attention_heads": 40, "num_hidden_layers": 40,
    "rms_norm_eps": 1e-06, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 64000,
}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "layers", "heads"), [(BAICHUAN2_7B, 32, 32), (BAICHUAN2_13B, 40, 40)], ids=["7b", "13b"]
)
def test_baichuan_caches_every_head_of_every_layer(tmp_path: Path, config: dict, layers: int, heads: int) -> None:
    path = sized_checkpoint(tmp_path / "m", config, 14_000_000_000)
    plan = plan_model(str(path), "h100", engine_version="0.24.0")
    assert plan.kv_bytes_per_token == layers * heads * 128 * 2 * 2  # K and V, head_dim 128, bf16
    assert plan.serve.max_model_len.value == 4096  # max_position_embeddings, or model_max_length for the 13B


def test_alibi_baichuan_holds_no_rope_cache(tmp_path: Path) -> None:
    # the same 13B file with a max_position_embeddings: still ALiBi (hidden_size 5120), so no cos/sin cache; a
    # BaiChuanForCausalLM of that width would rope: 4,096 x 128 x 2 B = 1 MiB
    config = {**BAICHUAN2_13B, "max_position_embeddings": 4096}
    kw = {"max_model_len": 4096, "engine_version": "0.24.0"}
    alibi = plan_model(str(sized_checkpoint(tmp_path / "a", config, 26_000_000_000)), "h100", **kw)
    rope = {**config, "architectures": ["BaiChuanForCausalLM"]}
    roped = plan_model(str(sized_checkpoint(tmp_path / "r", rope, 26_000_000_000)), "h100", **kw)
    assert alibi.memory_budget is not None and roped.memory_budget is not None
    assert roped.memory_budget.weights_bytes - alibi.memory_budget.weights_bytes == 4096 * 128 * 2
