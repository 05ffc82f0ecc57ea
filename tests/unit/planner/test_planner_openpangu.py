"""openPangu-Embedded (PanguEmbeddedForCausalLM, model_type PanguEmbedded), which the planner refused as unmodelled
though vLLM serves it (vllm/model_executor/models/registry.py line 196, 0.34.0 sdist).

The config is FreedomIntelligence/openPangu-Embedded-7B's config.json, field for field as a public converter's test
reproduces 'the fields of the real openPangu-Embedded-7B config.json' (search-index file id 62448714441,
pangu_config). Expected figures are worked by hand from vllm/model_executor/models/openpangu.py of the 0.34.0 sdist,
lines named. openPangu's Ultra-MoE and Pro-MoE V2 files (MLA, and sink attention with sliding windows) stay refused:
no published config of theirs was found.
"""

from __future__ import annotations

from typing import Any

import pytest

from onechip.errors import ConfigError
from onechip.planner.geometry import kv_geometry
from onechip.planner.source import config_from_dict, text_config_of

PANGU_EMBEDDED_7B = {"architectures": ["PanguEmbeddedForCausalLM"], "model_type": "PanguEmbedded",
                     "auto_map": {"AutoConfig": "configuration_openpangu_dense.PanguEmbeddedConfig",
                                  "AutoModelForCausalLM": "modeling_openpangu_dense.PanguEmbeddedForCausalLM"},
                     "bias": True, "attention_dropout": 0.0, "bos_token_id": 1, "pad_token_id": 0,
                     "eos_token_id": 45892, "hidden_act": "silu", "hidden_size": 4096, "intermediate_size": 12800,
                     "max_position_embeddings": 32768, "num_attention_heads": 32, "num_hidden_layers": 34,
                     "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_theta": 16000000.0,
                     "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 153376}  # fmt: skip


def _layers(config: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    text = text_config_of(config_from_dict(config, "config.json"))
    geometry = kv_geometry(text, kv_dtype_bytes=2, tensor_parallel_size=1)
    return [(layer.attention_type, layer.kv_heads, layer.head_dim, layer.bytes_per_token) for layer in geometry.layers]


def test_openpangu_embedded_7b_caches_8_kv_heads_of_128_on_34_layers() -> None:
    # OpenPanguDecoderLayer (lines 789-880): no MLA fields and no param_sink_number, so OpenPanguEmbeddedAttention over
    # getattr(config, 'num_key_value_heads', num_attention_heads) = 8 KV heads of getattr(config, 'head_dim') or
    # hidden_size // heads = 4096 // 32 = 128 (lines 434-436), every layer full (no interleaved_sliding_window):
    # 34 x 2 x 8 x 128 x 2 B = 139,264 B a token
    layers = _layers(PANGU_EMBEDDED_7B)
    assert layers == [("full", 8, 128, 2 * 8 * 128 * 2)] * 34
    assert sum(b for *_, b in layers) == 139_264


def test_openpangu_embedded_windows_are_refused_naming_the_field() -> None:
    # lines 463-476: interleaved_sliding_window gives a layer a window (an int, or a list cycled by layer index),
    # which the planner does not model
    with pytest.raises(ConfigError, match="'interleaved_sliding_window'"):
        config_from_dict({**PANGU_EMBEDDED_7B, "interleaved_sliding_window": 4096}, "config.json")


@pytest.mark.parametrize("value", [False, None, 0])
def test_openpangu_embedded_not_causal_by_any_false_value_is_refused(value: Any) -> None:
    # lines 859-866: 'if getattr(config, "is_causal", True)' builds decoder attention, else ENCODER_ONLY (no KV cache):
    # a stated null or 0 is false there too, where the planner refused `false` alone and planned the others' KV
    with pytest.raises(ConfigError, match="'is_causal'"):
        config_from_dict({**PANGU_EMBEDDED_7B, "is_causal": value}, "config.json")


def test_openpangu_embedded_window_stated_null_is_refused() -> None:
    # lines 463-474: 'if hasattr(config, "interleaved_sliding_window")' takes an int or a list, and raises ValueError
    # ('... for interleaved_sliding_window is not supported') on anything else: a stated null does not start, where
    # the planner planned it as no windows
    with pytest.raises(ConfigError, match="'interleaved_sliding_window'"):
        config_from_dict({**PANGU_EMBEDDED_7B, "interleaved_sliding_window": None}, "config.json")


@pytest.mark.parametrize(
    ("architecture", "model_type", "file"),
    [
        ("PanguUltraMoEForCausalLM", "pangu_ultra_moe", "openpangu.py"),
        ("PanguProMoEV2ForCausalLM", "pangu_pro_moe_v2", "openpangu.py"),
        ("BailingMoeV2_5ForCausalLM", "bailing_hybrid", "bailing_moe_linear.py"),
        ("HunYuanVLForConditionalGeneration", "hunyuan_vl", "the Transformers backend"),
    ],
)
def test_served_models_without_a_published_config_say_what_is_missing(
    architecture: str, model_type: str, file: str
) -> None:
    # vLLM 0.34.0 serves each (registry.py lines 81, 196-198; HunyuanOCR through TransformersMultiModalForCausalLM,
    # lines 816-819), but no published config.json of theirs was found
    # to check their cache layout against: the refusal says so and names the model file
    data = {"architectures": [architecture], "model_type": model_type, "hidden_size": 1024,
            "num_attention_heads": 8, "num_hidden_layers": 2}  # fmt: skip
    with pytest.raises(ConfigError, match=rf"vLLM serves it \({file}.*no published config\.json"):
        config_from_dict(data, "config.json")
