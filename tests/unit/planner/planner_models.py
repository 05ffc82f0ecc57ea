"""Published model configs the planner tests use, each with its source."""

from __future__ import annotations

# SmolLM2-135M-Instruct's published config.json geometry (HuggingFaceTB/SmolLM2-135M-Instruct; the same
# values are in the converted checkpoint the embedded engine serves, DESIGN.md "embedded default").
SMOLLM2_CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
    "intermediate_size": 1536, "num_hidden_layers": 30, "num_attention_heads": 9,
    "num_key_value_heads": 3, "head_dim": 64, "max_position_embeddings": 8192, "vocab_size": 49152,
    "tie_word_embeddings": True, "rms_norm_eps": 1e-5, "dtype": "bfloat16",
}
