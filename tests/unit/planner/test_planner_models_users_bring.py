"""Configs of recent model families vLLM serves, planned as a user brings them (issue 27, 'any model vLLM serves').
The configs are abridged to the fields the planner reads and were typed after the published files, not copied from
them (Qwen3-Omni's text config was checked against a public copy; InternVL3-8B's and Qwen2.5-Omni-7B's were not
checked field by field): they test how the planner finds the decoder ('llm_config', 'thinker_config'), not one
release's numbers. The expected KV bytes per token are computed by hand from vLLM's model code (file and release
named at each test), not read back from the planner.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.config import remote_code_model_type
from onechip.planner.modalities import model_modalities
from onechip.planner.source import config_from_dict

# OpenGVLab/InternVL3-8B's config.json (remote-code InternVLChatConfig): the decoder under 'llm_config', a Qwen2 of 28
# layers, 28 query heads over hidden_size 3,584 (head_dim 128), 4 KV heads; vision_config an InternViT
INTERNVL3_8B = {
    "architectures": ["InternVLChatModel"], "model_type": "internvl_chat", "downsample_ratio": 0.5,
    "force_image_size": 448, "template": "internvl2_5", "select_layer": -1, "ps_version": "v2",
    "torch_dtype": "bfloat16",
    "llm_config": {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
                   "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4,
                   "num_hidden_layers": 28, "max_position_embeddings": 32768, "max_window_layers": 70,
                   "rope_theta": 1000000.0, "sliding_window": 32768, "use_sliding_window": False, "vocab_size": 151674,
                   "torch_dtype": "bfloat16", "tie_word_embeddings": False},
    "vision_config": {"architectures": ["InternVisionModel"], "model_type": "intern_vit_6b", "hidden_size": 1024,
                      "num_hidden_layers": 24, "num_attention_heads": 16, "image_size": 448, "patch_size": 14,
                      "intermediate_size": 4096},
}  # fmt: skip
# its checkpoint's module prefixes: the decoder 'language_model.', the InternViT 'vision_model.', the projector 'mlp1.'
INTERNVL_NAMES = [
    "language_model.model.embed_tokens.weight", "language_model.model.layers.0.self_attn.q_proj.weight",
    "language_model.lm_head.weight", "vision_model.embeddings.patch_embedding.weight",
    "vision_model.encoder.layers.0.attn.qkv.weight", "mlp1.0.weight", "mlp1.1.weight", "mlp1.3.weight",
]  # fmt: skip


def test_internvl_decoder_is_read_from_llm_config(tmp_path: Path) -> None:
    # vLLM renames a config's 'llm_config' to 'text_config' when it loads it (vllm/transformers_utils/config.py
    # _CONFIG_ATTRS_MAPPING / _maybe_remap_hf_config_attrs, 0.10.2 - 0.34.0 sdists), and InternVLChatModel builds its
    # language model from config.text_config (vllm/model_executor/models/internvl.py, 0.34.0), a Qwen2 here: 28 layers
    # x 4 KV heads x 128 x (K, V) x 2 B = 57,344 B a token. The planner refused it: "field 'model_type' =
    # 'internvl_chat' (InternVLChatModel): an architecture the planner does not model".
    for chip in ("h100", "l4"):
        plan = plan_model(str(one_element_checkpoint(tmp_path / chip, INTERNVL3_8B, INTERNVL_NAMES)), chip, "vllm-gpu")
        assert plan.kv_bytes_per_token == 28 * 4 * 128 * 2 * 2 == 57_344
        assert [layer.head_dim for layer in plan.layers] == [128] * 28
        # 'mlp1.' is the projector InternVLChatModel builds beside vision_model as its tower (internvl.py
        # _mark_tower_model), so it is counted with the vision weights: 3 projector + 2 ViT one-element bf16 tensors
        assert plan.weights_by_component["vision_tower"] == 5 * 2
        assert plan.weights_by_component["language_model"] == 2


def test_llm_config_does_not_replace_a_text_config(tmp_path: Path) -> None:
    # _maybe_remap_hf_config_attrs sets text_config from llm_config only when the config has none
    config = {**INTERNVL3_8B, "text_config": {**INTERNVL3_8B["llm_config"], "num_key_value_heads": 2}}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "ckpt", config, INTERNVL_NAMES)), "h100", "vllm-gpu")
    assert plan.kv_bytes_per_token == 28 * 2 * 128 * 2 * 2


def test_an_llm_config_that_is_no_object_is_refused_by_its_name(tmp_path: Path) -> None:
    config = {**INTERNVL3_8B, "llm_config": "qwen2"}
    with pytest.raises(ConfigError, match=r"field 'llm_config' must be an object, got 'qwen2'"):
        plan_model(str(one_element_checkpoint(tmp_path / "ckpt", config, INTERNVL_NAMES)), "h100", "vllm-gpu")


# Qwen/Qwen3-Omni-30B-A3B-Instruct's config.json (transformers Qwen3OmniMoeConfig), the parts the plan reads: the
# decoder at thinker_config.text_config (48 layers, head_dim 128, 4 KV heads, 128 experts), the thinker's vision and
# audio encoders, and the talker the speech output runs on
QWEN3_OMNI = {
    "architectures": ["Qwen3OmniMoeForConditionalGeneration"], "model_type": "qwen3_omni_moe",
    "enable_audio_output": True, "torch_dtype": "bfloat16",
    "thinker_config": {
        "model_type": "qwen3_omni_moe_thinker", "audio_token_id": 151675, "image_token_id": 151655,
        "video_token_id": 151656,
        "text_config": {"model_type": "qwen3_omni_moe_text", "head_dim": 128, "hidden_size": 2048,
                        "intermediate_size": 768, "max_position_embeddings": 65536, "moe_intermediate_size": 768,
                        "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8,
                        "num_hidden_layers": 48, "num_key_value_heads": 4, "vocab_size": 152064,
                        "rope_theta": 1000000, "sliding_window": None, "use_sliding_window": False,
                        "rope_scaling": {"interleaved": True, "mrope_interleaved": True, "mrope_section": [24, 20, 20],
                                         "rope_type": "default", "type": "default"}},
        "vision_config": {"model_type": "qwen3_omni_moe_vision_encoder", "depth": 27, "hidden_size": 1152,
                          "out_hidden_size": 2048},
        "audio_config": {"model_type": "qwen3_omni_moe_audio_encoder", "d_model": 1280, "encoder_layers": 32,
                         "output_dim": 2048},
    },
    "talker_config": {"text_config": {"hidden_size": 1024, "num_hidden_layers": 20}},
}  # fmt: skip
QWEN3_OMNI_NAMES = [
    "thinker.model.embed_tokens.weight", "thinker.model.layers.0.self_attn.q_proj.weight", "thinker.lm_head.weight",
    "thinker.visual.blocks.0.attn.qkv.weight", "thinker.audio_tower.layers.0.fc1.weight",
    "talker.model.layers.0.mlp.gate.weight", "talker.codec_head.weight", "code2wav.decoder.0.conv.weight",
]  # fmt: skip


def test_qwen3_omni_plans_its_thinker(tmp_path: Path) -> None:
    # vLLM serves Qwen3OmniMoeForConditionalGeneration as Qwen3OmniMoeThinkerForConditionalGeneration
    # (vllm/model_executor/models/registry.py, 0.11.1 - 0.34.0): its config is hf_config.thinker_config, its language
    # model a Qwen3MoeLLMForCausalLM of thinker_config.text_config, every layer full attention of head_dim over the
    # KV heads (qwen3_omni_moe_thinker.py, qwen3_moe.py Qwen3MoeAttention, 0.34.0 sdist): 48 x 4 x 128 x (K, V) x 2 B
    # = 98,304 B a token. The planner refused it: "field 'model_type' = 'qwen3_omni_moe' ... does not model".
    for chip in ("h100", "l4"):
        plan = plan_model(str(one_element_checkpoint(tmp_path / chip, QWEN3_OMNI, QWEN3_OMNI_NAMES)), chip, "vllm-gpu")
        assert plan.kv_bytes_per_token == 48 * 4 * 128 * 2 * 2 == 98_304
        assert plan.architecture == "qwen3_omni_moe_text"
        # the thinker's towers load; the talker and code2wav do not (its hf_to_vllm_mapper maps them to None)
        assert plan.weights_by_component == {
            "embeddings": 2, "language_model": 2, "lm_head": 2, "vision_tower": 2, "audio_tower": 2,
        }  # fmt: skip


def test_qwen3_omni_modalities_are_the_thinkers() -> None:
    # the processor vLLM runs for it takes image, video and audio (Qwen3OmniMoeThinkerProcessingInfo); the plan reads
    # them from the thinker's vision_config, video_token_id and audio_config
    assert model_modalities(config_from_dict(QWEN3_OMNI, "config.json").data) == ("image", "video", "audio")


# Qwen/Qwen2.5-Omni-7B's config.json (transformers Qwen2_5OmniConfig), typed after the published file's layout and
# numbers, not checked field by field: the decoder at thinker_config.text_config (a Qwen2 of 28 layers, 28 query
# heads over hidden_size 3,584, so head_dim 128, 4 KV heads, no head_dim field), the thinker's vision and audio
# encoders, and the talker and token2wav the speech output runs on. tie_word_embeddings false is stated here (the 7B
# checkpoint carries its own 'thinker.lm_head.weight'); transformers 5.19's Qwen2_5OmniTextConfig defaults it true.
QWEN2_5_OMNI = {
    "architectures": ["Qwen2_5OmniModel"], "model_type": "qwen2_5_omni", "enable_audio_output": True,
    "torch_dtype": "bfloat16",
    "thinker_config": {
        "model_type": "qwen2_5_omni_thinker", "audio_token_index": 151646, "image_token_index": 151655,
        "video_token_index": 151656,
        "text_config": {"model_type": "qwen2_5_omni_text", "hidden_size": 3584, "intermediate_size": 18944,
                        "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4,
                        "max_position_embeddings": 32768, "max_window_layers": 28, "rope_theta": 1000000.0,
                        "sliding_window": 32768, "use_sliding_window": False, "vocab_size": 152064,
                        "tie_word_embeddings": False,
                        "rope_scaling": {"mrope_section": [16, 24, 24], "rope_type": "default", "type": "default"}},
        "vision_config": {"model_type": "qwen2_5_omni_vision_encoder", "depth": 32, "hidden_size": 1280,
                          "out_hidden_size": 3584},
        "audio_config": {"model_type": "qwen2_5_omni_audio_encoder", "d_model": 1280, "encoder_layers": 32,
                         "output_dim": 3584},
    },
    "talker_config": {"model_type": "qwen2_5_omni_talker", "hidden_size": 896, "num_hidden_layers": 24},
    "token2wav_config": {"model_type": "qwen2_5_omni_token2wav"},
}  # fmt: skip
QWEN2_5_OMNI_NAMES = [
    "thinker.model.embed_tokens.weight", "thinker.model.layers.0.self_attn.q_proj.weight", "thinker.lm_head.weight",
    "thinker.visual.blocks.0.attn.qkv.weight", "thinker.audio_tower.layers.0.fc1.weight",
    "talker.model.layers.0.mlp.gate_proj.weight", "talker.codec_head.weight",
    "token2wav.code2wav_dit_model.time_embed.weight",
]  # fmt: skip


def test_qwen2_5_omni_plans_its_thinker_as_qwen2(tmp_path: Path) -> None:
    # vLLM serves Qwen2_5OmniModel / Qwen2_5OmniForConditionalGeneration as Qwen2_5OmniThinkerForConditionalGeneration
    # (registry.py, 0.10.1.1 and 0.34.0 sdists), whose language model is Qwen2ForCausalLM of thinker_config.text_config
    # (qwen2_5_omni_thinker.py); qwen2.py Qwen2Attention takes head_dim = hidden_size // num_heads = 3584 // 28 = 128,
    # and with use_sliding_window false every layer is full: 28 x 4 x 128 x (K, V) x 2 B = 57,344 B a token. The
    # planner refused it: "field 'model_type' = 'qwen2_5_omni_text' (Qwen2_5OmniModel): an architecture the planner
    # does not model".
    for chip in ("h100", "l4"):
        plan = plan_model(
            str(one_element_checkpoint(tmp_path / chip, QWEN2_5_OMNI, QWEN2_5_OMNI_NAMES)), chip, "vllm-gpu"
        )
        assert plan.kv_bytes_per_token == 28 * 4 * 128 * 2 * 2 == 57_344
        assert plan.architecture == "qwen2_5_omni_text"
        assert [layer.head_dim for layer in plan.layers] == [128] * 28
        # the thinker's towers load; the talker and token2wav do not (its hf_to_vllm_mapper maps them to None, 0.34.0;
        # load_weights skips them, 0.10.1.1)
        assert plan.weights_by_component == {
            "embeddings": 2, "language_model": 2, "lm_head": 2, "vision_tower": 2, "audio_tower": 2,
        }  # fmt: skip


def test_qwen2_5_omni_modalities_are_the_thinkers() -> None:
    # Qwen2_5OmniThinkerProcessingInfo takes image, video and audio; the thinker names its video token
    # 'video_token_index'
    assert model_modalities(config_from_dict(QWEN2_5_OMNI, "config.json").data) == ("image", "video", "audio")


# InternVL3-8B's config.json names its repository's code (auto_map), as the published file does
INTERNVL_AUTO_MAP = {
    "AutoConfig": "configuration_internvl_chat.InternVLChatConfig",
    "AutoModel": "modeling_internvl_chat.InternVLChatModel",
    "AutoModelForCausalLM": "modeling_internvl_chat.InternVLChatModel",
}


def test_a_config_only_its_repositorys_code_loads_gets_a_remote_code_warning(tmp_path: Path) -> None:
    # vLLM loads config.json with AutoConfig.from_pretrained(trust_remote_code=False) unless it registers the
    # model_type itself (vllm/transformers_utils/config.py HFConfigParser.parse, 0.34.0); 'internvl_chat' is neither
    # transformers' nor vLLM's, so without --trust-remote-code it stops at 'Failed to load the model config'. The plan
    # said nothing and its command never carried the flag.
    config = {**INTERNVL3_8B, "auto_map": INTERNVL_AUTO_MAP}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "internvl", config, INTERNVL_NAMES)), "h100", "vllm-gpu")
    (warning,) = [w for w in plan.warnings if w.code == "remote-code"]
    assert "'internvl_chat'" in warning.message and "--set trust-remote-code" in warning.message
    # an auto_map beside a model_type transformers defines (Phi-3's and Qwen2's files carry one) loads without it,
    # as does a model_type vLLM registers a config class for (kimi_k2: DeepseekV3Config, config.py 0.34.0)
    known = {**INTERNVL3_8B["llm_config"], "auto_map": INTERNVL_AUTO_MAP}
    plan = plan_model(
        str(one_element_checkpoint(tmp_path / "qwen2", known, ["model.embed_tokens.weight"])), "h100", "vllm-gpu"
    )
    assert "remote-code" not in {w.code for w in plan.warnings}
    assert remote_code_model_type({"model_type": "kimi_k2", "auto_map": INTERNVL_AUTO_MAP}) is None
    assert remote_code_model_type(INTERNVL3_8B) is None  # no auto_map: no code of its own to run
