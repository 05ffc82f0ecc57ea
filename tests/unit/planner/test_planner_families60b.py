"""Model types vLLM serves that the planner refused until 2026-12-06, part 4 (issue 27, "any model vLLM serves";
part 3: test_planner_families60.py).

Each config is a copy of a published config.json (or of the fields a public source pins from it), its source named
above it. The expected KV bytes per token are worked by hand from the vLLM model file that builds the type's layers
(vllm 0.34.0 sdist), file and line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factories import one_element_checkpoint
from onechip.planner import plan_model
from onechip.schemas.plan import Plan

_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]


def _plan(tmp_path: Path, config: dict[str, Any], **kwargs: Any) -> Plan:
    """The plan vLLM 0.34.0 on one H100 gets for `config` (bf16 weights, the KV cache in the model dtype)."""
    directory = one_element_checkpoint(tmp_path / "ckpt", config, _NAMES)
    return plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", **kwargs)


# rednote-hilab/dots.ocr's config.json: the text decoder's fields as a walk-through of the published file lists them
# (search-index file id 62165326923), the vision_config as mlx-community/dots.mocr-4bit's copy of it gives it
# (search-index file id 61051606353)
DOTS_OCR = {"architectures": ["DotsOCRForCausalLM"], "model_type": "dots_ocr", "hidden_size": 1536,
            "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12, "num_key_value_heads": 2,
            "max_position_embeddings": 131072, "sliding_window": 131072, "use_sliding_window": False,
            "rope_theta": 1000000, "vocab_size": 151936, "image_token_id": 151665, "video_token_id": 151656,
            "hidden_act": "silu", "attention_bias": True, "attention_dropout": 0.0, "torch_dtype": "bfloat16",
            "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
            "vision_config": {"embed_dim": 1536, "hidden_size": 1536, "intermediate_size": 4224,
                              "num_hidden_layers": 42, "num_attention_heads": 12, "num_channels": 3, "patch_size": 14,
                              "post_norm": True, "rms_norm_eps": 1e-05, "spatial_merge_size": 2,
                              "temporal_patch_size": 1, "use_bias": False}}  # fmt: skip


def test_dots_ocr_is_planned_as_the_qwen2_decoder_vllm_builds(tmp_path: Path) -> None:
    # dots_ocr.py DotsOCRForConditionalGeneration (lines 654-660) builds its language model as Qwen2ForCausalLM over
    # the file's own config (hf_config=self.config), which vLLM's DotsOCRConfig makes a Qwen2Config
    # (transformers_utils/configs/dotsocr.py line 53); qwen2.py Qwen2Attention: head_dim = hidden_size // heads = 128
    # (line 150) over num_key_value_heads = 2 (line 278), no window (use_sliding_window false): 2 x 2 x 128 x 2 B a
    # layer, 28 layers
    plan = _plan(tmp_path, DOTS_OCR, max_model_len=8192)
    assert [(x.attention_type, x.kv_heads, x.head_dim, x.sliding_window) for x in plan.layers] == [
        ("full", 2, 128, None)
    ] * 28
    assert plan.kv_bytes_per_token == 28 * 2 * 2 * 128 * 2 == 28_672
