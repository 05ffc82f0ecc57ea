"""A tiny random-weight Gemma 4 checkpoint built and saved by transformers itself (issue 3): KV sharing,
two head dims, per-layer embeddings, double-wide MLPs and both towers, at toy sizes. The planner must
read it like the real one: geometry from config.json, weights from the saved safetensors header."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers

from onechip.planner import plan_model

TEXT = {
    "model_type": "gemma4_text",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 5,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "head_dim": 32,
    "global_head_dim": 64,
    "sliding_window": 16,
    "vocab_size": 256,
    "vocab_size_per_layer_input": 256,
    "hidden_size_per_layer_input": 8,
    "num_kv_shared_layers": 2,
    "use_double_wide_mlp": True,
    "max_position_embeddings": 2048,
    "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "sliding_attention", "full_attention"],
}
VISION = {
    "model_type": "gemma4_vision",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "global_head_dim": 16,
    "patch_size": 4,
    "pooling_kernel_size": 2,
    "position_embedding_size": 64,
}
AUDIO = {
    "model_type": "gemma4_audio",
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "subsampling_conv_channels": [8, 4],
    "output_proj_dims": 64,
}


@pytest.fixture(scope="module")
def tiny_gemma4(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, torch.nn.Module]:
    torch.manual_seed(0)
    config = transformers.Gemma4Config(text_config=TEXT, vision_config=VISION, audio_config=AUDIO)
    model = transformers.Gemma4ForConditionalGeneration(config).to(torch.bfloat16)
    path = tmp_path_factory.mktemp("tiny-gemma4")
    model.save_pretrained(path)
    return path, model


def test_tiny_gemma4_geometry(tiny_gemma4) -> None:
    path, _ = tiny_gemma4
    plan = plan_model(str(path), "cpu", "vllm-cpu", max_model_len=2048)
    # Layers 0-2 own a cache; 3 (sliding) reads layer 2, 4 (full) reads layer 1 (last earlier layer of the
    # same type, seed article fact 3). KV heads 1; bf16 (the saved dtype, 'auto').
    assert [(lay.owns_cache, lay.shares_from) for lay in plan.layers] == [
        (True, None),
        (True, None),
        (True, None),
        (False, 2),
        (False, 1),
    ]
    assert plan.kv_bytes_per_token == 2 * (1 * 32 * 2 * 2) + 1 * (1 * 64 * 2 * 2)


def test_tiny_gemma4_weights_equal_what_transformers_saved(tiny_gemma4) -> None:
    path, model = tiny_gemma4
    plan = plan_model(str(path), "cpu", "vllm-cpu", max_model_len=2048)
    saved = model.state_dict()
    # the tied LM head is saved once (as the embedding)
    expected = sum(t.numel() * t.element_size() for n, t in saved.items() if n != "lm_head.weight")
    assert plan.weights_bytes == expected
    per_layer = saved["model.language_model.embed_tokens_per_layer.weight"]
    assert plan.weights_by_component["per_layer_embeddings"] == per_layer.numel() * 2
    towers = sum(
        t.numel() * t.element_size()
        for n, t in saved.items()
        if n.startswith(("model.vision_tower.", "model.embed_vision."))
    )
    assert plan.weights_by_component["vision_tower"] == towers
    text_only = plan_model(str(path), "cpu", "vllm-cpu", max_model_len=2048, multimodal=False)
    assert "vision_tower" not in text_only.weights_by_component
    assert "audio_tower" not in text_only.weights_by_component
