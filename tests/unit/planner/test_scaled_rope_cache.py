"""vLLM's RoPE cos/sin caches of scaled-RoPE models (issue 27, planfix70e): each rope_scaling kind get_rope maps
(vllm/model_executor/layers/rotary_embedding/__init__.py) and the rows its class's _compute_cos_sin_cache makes,
read in the 0.5.0 - 0.34.0 sdists; the dtype is get_rope's (the model dtype; gpt_oss.py passes torch.float32).
Every expected value is rows x rotary_dim x bytes, the rows written as the source's own expression."""

from __future__ import annotations

import json
from typing import Any

import pytest

from factories import BOOTLOGS
from onechip.planner.core import rope_cache_rule
from onechip.planner.gpu_memory import rotary_cache_bytes
from onechip.planner.rules import engine_rules


def _config(name: str) -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _llama(scaling: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A Llama-like text config: head_dim 128, 4,096 positions, the given rope_scaling."""
    config = {"hidden_size": 4096, "num_attention_heads": 32, "max_position_embeddings": 4096, "rope_scaling": scaling}
    return config | extra


def test_yarn_cache_is_original_positions_x_factor_in_float32_for_gpt_oss() -> None:
    """YaRNScalingRotaryEmbedding: torch.arange(max_position_embeddings * scaling_factor), get_rope passing
    original_max_position_embeddings (yarn_scaling_rope.py, 0.5.0 - 0.34.0); gpt_oss.py passes dtype=torch.float32."""
    gpt_oss = _config("openai--gpt-oss-20b.json")  # yarn factor 32, original 4,096, head_dim 64
    assert rotary_cache_bytes(gpt_oss, dtype_bytes=4) == 4096 * 32 * 64 * 4  # 32 MiB
    rule = rope_cache_rule(engine_rules("vllm-gpu"), "0.19.0")
    assert rule is not None and "GptOssForCausalLM" in rule.float32_architectures


def test_olmo3_sliding_layers_keep_a_plain_cache_beside_the_yarn_one() -> None:
    """olmo2.py (0.11.0 - 0.34.0): 'Rope scaling is only applied on full attention layers', the sliding ones
    get_rope(rope_type 'default'): two caches, positions x 128 and original x factor x 128."""
    olmo3 = _config("allenai--Olmo-3-1025-7B.json")  # yarn factor 8, original 8,192, 65,536 positions, head 128
    assert rotary_cache_bytes(olmo3, dtype_bytes=2) == 8192 * 8 * 128 * 2
    assert rotary_cache_bytes(olmo3, dtype_bytes=2, sliding_default_rope=True) == (65536 + 8192 * 8) * 128 * 2
    rule = rope_cache_rule(engine_rules("vllm-gpu"), "0.34.0")
    assert rule is not None and "Olmo3ForCausalLM" in rule.sliding_default_rope_architectures


def test_linear_cache_is_positions_x_factor() -> None:
    """LinearScalingRotaryEmbedding: max_len = self.max_position_embeddings * scaling_factor (0.5.0 - 0.34.0)."""
    assert rotary_cache_bytes(_llama({"type": "linear", "factor": 4.0}), dtype_bytes=2) == 4096 * 4 * 128 * 2


@pytest.mark.parametrize(("version", "rows"), [("0.8.5", 4096 * 2), ("0.21.0", 4096 * 2), ("0.22.0", 4096)])
def test_dynamic_cache_rows_by_release(version: str, rows: int) -> None:
    """DynamicNTKScalingRotaryEmbedding: 'max_len = self.max_position_embeddings * self.scaling_factor' up to the
    0.21.0 sdist, torch.arange(self.max_position_embeddings) from 0.22.0 (dynamic_ntk_scaling_rope.py)."""
    rule = rope_cache_rule(engine_rules("vllm-gpu"), version)
    assert rule is not None
    config = _llama({"rope_type": "dynamic", "factor": 2.0})
    assert rotary_cache_bytes(config, dtype_bytes=2, dynamic_factor_rows=rule.dynamic_factor_rows) == rows * 128 * 2


@pytest.mark.parametrize(("version", "rows"), [("0.9.1", 32768 * 2), ("0.9.2", 32768)])
def test_dynamic_alpha_cache_keeps_its_positions_from_0_9_2(version: str, rows: int) -> None:
    """DynamicNTKAlphaRotaryEmbedding (0.9.2 on, get_rope's "alpha" branch first): max_len =
    self.max_position_embeddings; before it 'dynamic' is DynamicNTKScaling by its factor (2 here, Hunyuan's own 1)."""
    rule = rope_cache_rule(engine_rules("vllm-gpu"), version)
    assert rule is not None
    hunyuan = _config("tencent--Hunyuan-A13B-Instruct.json")  # 'dynamic' with alpha 1000, 32,768 positions, head 128
    hunyuan["rope_scaling"] = {**hunyuan["rope_scaling"], "factor": 2.0}
    got = rotary_cache_bytes(
        hunyuan, dtype_bytes=2, dynamic_factor_rows=rule.dynamic_factor_rows, dynamic_alpha=rule.dynamic_alpha
    )
    assert got == rows * 128 * 2


def test_ntk_cache_keeps_its_positions() -> None:
    """NTKScalingRotaryEmbedding scales the base only; the base class's torch.arange(max_position_embeddings)."""
    assert rotary_cache_bytes(_llama({"rope_type": "ntk", "factor": 4.0}), dtype_bytes=2) == 4096 * 128 * 2


@pytest.mark.parametrize("kind", ["longrope", "su"])
def test_longrope_keeps_a_short_and_a_long_cache(kind: str) -> None:
    """Phi3LongRoPEScaledRotaryEmbedding: short_cache of original_max_position_embeddings rows and long_cache of
    max_position_embeddings rows, both .to(dtype), concatenated (phi3_long_rope_scaled_rope.py, 0.5.0 - 0.34.0);
    Phi-3-mini-128k: head 3072 / 32 = 96, original 4,096 (also at the config's top level, as llama.py copies it in)."""
    scaling = {"type": kind, "short_factor": [1.0] * 48, "long_factor": [2.0] * 48}
    phi3 = {
        "hidden_size": 3072,
        "num_attention_heads": 32,
        "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": scaling,
    }
    assert rotary_cache_bytes(phi3, dtype_bytes=2) == (4096 + 131072) * 96 * 2


def test_dual_chunk_keeps_four_chunk_caches_and_a_key_cache() -> None:
    """DualChunkRotaryEmbedding (0.9.0 on): q, qc, qc_no_clamp and q_inter caches of chunk_size - local_size rows,
    k of max_position_embeddings rows, each .to(self.dtype) (dual_chunk_rope.py); Qwen2.5-7B-Instruct-1M's config."""
    config = _llama(
        None,  # type: ignore[arg-type]
        max_position_embeddings=1010000,
        hidden_size=3584,
        num_attention_heads=28,
        dual_chunk_attention_config={
            "chunk_size": 262144,
            "local_size": 8192,
            "original_max_position_embeddings": 262144,
        },
    )
    assert rotary_cache_bytes(config, dtype_bytes=2, dual_chunk=True) == (4 * (262144 - 8192) + 1010000) * 128 * 2
    assert rotary_cache_bytes(config, dtype_bytes=2, dual_chunk=False) == 1010000 * 128 * 2  # before 0.9.0


def test_unmodelled_kinds_count_nothing() -> None:
    """deepseek_yarn (MLA models; DeepseekScalingRotaryEmbedding's dtype hangs on FlashInfer) and a yarn kind without
    its original_max_position_embeddings (get_rope's KeyError) stay 0."""
    assert rotary_cache_bytes(_llama({"rope_type": "deepseek_yarn", "factor": 4.0}), dtype_bytes=2) == 0
    assert rotary_cache_bytes(_llama({"rope_type": "yarn", "factor": 4.0}), dtype_bytes=2) == 0


@pytest.mark.parametrize(
    ("name", "head_dim"), [("google--gemma-3-4b-it.json", 256), ("google--gemma-3-27b-it.json", 128)]
)
def test_gemma3_holds_a_local_plain_cache_and_a_global_linear_one(name: str, head_dim: int) -> None:
    """gemma3.py Gemma3Attention (0.8.0 - 0.34.0): sliding layers get_rope(rope_type 'default',
    base=rope_local_base_freq), full layers the config's rope_scaling, linear x 8 here: 131,072 + 131,072 x 8 rows.
    The logs agree: gemma-3-4b-it's 8,600,158,944-byte checkpoint loads as 'Model loading took 8.58 GiB' on 0.19.0
    (h100-gemma3-4b-v0190), 8.0095 GiB + 576 MiB = 8.572 GiB."""
    config = _config(name)
    text = {**config["text_config"], "max_position_embeddings": 131072}  # Gemma3TextConfig's default
    text["layer_types"] = ["sliding_attention"] * 5 + ["full_attention"]
    assert rotary_cache_bytes(text, dtype_bytes=2) == 0  # a second RoPE with no rule: not modelled
    got = rotary_cache_bytes(text, dtype_bytes=2, sliding_default_rope=True)
    assert got == (131072 + 131072 * 8) * head_dim * 2
    rule = rope_cache_rule(engine_rules("vllm-gpu"), "0.19.0")
    assert rule is not None and "Gemma3ForConditionalGeneration" in rule.sliding_default_rope_architectures


def test_gemma3_1b_keeps_two_plain_caches_of_two_bases() -> None:
    """Gemma-3-1B has no rope_scaling: full layers get_rope(base 1e6), sliding ones base 1e4, two get_rope keys."""
    text = {
        "hidden_size": 1152,
        "num_attention_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rope_local_base_freq": 10000.0,
        "layer_types": ["sliding_attention", "full_attention"],
    }
    assert rotary_cache_bytes(text, dtype_bytes=2, sliding_default_rope=True) == 2 * 32768 * 256 * 2
    same = text | {"rope_local_base_freq": 1000000.0}  # one base: get_rope returns the same instance
    assert rotary_cache_bytes(same, dtype_bytes=2, sliding_default_rope=True) == 32768 * 256 * 2
