"""EmbeddingGemma (architecture Gemma3TextModel, use_bidirectional_attention true): vLLM serves it as an encoder-only
embedding model, which caches no KV, and the planner planned a KV cache and concurrency for it.

vLLM registers Gemma3TextModel among its embedding models (vllm/model_executor/models/registry.py _EMBEDDING_MODELS,
'"Gemma3TextModel": ("gemma3", "Gemma3Model")'), and its Gemma3TextModelConfig sets 'hf_config.is_causal = not
hf_config.use_bidirectional_attention' (vllm/model_executor/models/config.py; read in the 0.25.0, 0.32.0 and 0.34.0
sdists); Gemma3Attention then builds EncoderOnlyAttention with AttentionType.ENCODER_ONLY where 'getattr(config,
"is_causal", True)' is false (vllm/model_executor/models/gemma3.py, lines 165-173 of 0.34.0), and an encoder-only
layer has no KV cache spec. The config is google/embeddinggemma-300m's Gemma3TextConfig as transformers 4.56 prints
it (search-index file id 43135651834).
"""

from __future__ import annotations

import json

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.source import config_from_dict

EMBEDDING_GEMMA = json.loads(
    (BOOTLOGS / "configs" / "google--embeddinggemma-300m.transformers-4.56.json").read_text(encoding="utf-8")
)


def test_embedding_gemma_is_refused_as_encoder_only(tmp_path) -> None:
    # before: planned with 24 x 1 x 256 x 2 x 2 = 24,576 B a token of KV (3,081,344 tokens on an H100)
    path = sized_checkpoint(tmp_path / "ckpt", EMBEDDING_GEMMA, 4 * 268_098_176)
    with pytest.raises(ConfigError, match=r"field 'use_bidirectional_attention' .*encoder-only.*no KV") as err:
        plan_model(str(path), "h100", "vllm-gpu")
    assert "\n" not in str(err.value)


def test_gemma3_text_model_without_bidirectional_attention_is_planned() -> None:
    # is_causal = not False: decoder attention, a cache of 1 KV head of 256 on each of the 24 layers
    config = config_from_dict({**EMBEDDING_GEMMA, "use_bidirectional_attention": False}, "config.json")
    assert config.text["num_key_value_heads"] == 1 and config.text["head_dim"] == 256


def test_a_gemma3_config_stating_is_causal_false_is_refused() -> None:
    # gemma3.py reads 'getattr(config, "is_causal", True)' for every Gemma 3 architecture; false as Python reads it
    config = {**EMBEDDING_GEMMA, "architectures": ["Gemma3ForCausalLM"], "use_bidirectional_attention": False}
    for value in (False, None, 0):
        with pytest.raises(ConfigError, match=r"field 'is_causal' .*encoder-only"):
            config_from_dict({**config, "is_causal": value}, "config.json")
