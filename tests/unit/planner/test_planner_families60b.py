"""Model types vLLM serves that the planner refused until 2026-12-06, part 4 (issue 27, "any model vLLM serves";
part 3: test_planner_families60.py).

Each config is a copy of a published config.json (or of the fields a public source pins from it), its source named
above it. The expected KV bytes per token are worked by hand from the vLLM model file that builds the type's layers
(vllm 0.34.0 sdist), file and line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.source import config_from_dict
from onechip.planner.weights import AUDIO_TOWER, EMBEDDINGS, LANGUAGE_MODEL, LM_HEAD, VISION_TOWER, component_of
from onechip.schemas.plan import Plan

_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]


def _plan(tmp_path: Path, config: dict[str, Any], **kwargs: Any) -> Plan:
    """The plan vLLM 0.34.0 on one H100 gets for `config` (bf16 weights, the KV cache in the model dtype)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
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


# openbmb/MiniCPM-V-4_5's config.json, as a public copy of the checkpoint keeps it (PcOffeeP/FineTune_MLLM
# Model/MiniCPM-VL-4.5/config.json, '_name_or_path': 'openbmb/MiniCPM-V-4_5'; '_name_or_path' left out here)
MINICPM_V_4_5 = {"version": 4.5, "architectures": ["MiniCPMV"],
                 "auto_map": {"AutoConfig": "configuration_minicpm.MiniCPMVConfig",
                              "AutoModel": "modeling_minicpmv.MiniCPMV",
                              "AutoModelForCausalLM": "modeling_minicpmv.MiniCPMV"},
                 "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
                 "head_dim": 128, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
                 "intermediate_size": 12288, "max_position_embeddings": 40960, "max_window_layers": 36,
                 "num_attention_heads": 32, "num_hidden_layers": 36, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
                 "rope_scaling": None, "rope_theta": 1000000, "sliding_window": None, "tie_word_embeddings": False,
                 "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": True,
                 "use_sliding_window": False, "vocab_size": 151748, "batch_vision_input": True,
                 "batch_3d_resampler": True, "drop_vision_last_layer": False, "image_size": 448,
                 "model_type": "minicpmv", "patch_size": 14, "query_num": 64,
                 "slice_config": {"max_slice_nums": 9, "patch_size": 14, "model_type": "minicpmv"}, "slice_mode": True,
                 "vision_config": {"hidden_size": 1152, "image_size": 980, "intermediate_size": 4304,
                                   "model_type": "siglip", "num_attention_heads": 16, "num_hidden_layers": 27,
                                   "patch_size": 14}}  # fmt: skip


def test_minicpm_v_4_5_is_planned_as_the_qwen3_decoder_its_version_selects(tmp_path: Path) -> None:
    # minicpmv.py MiniCPMV.__new__ (lines 2455-2470) dispatches on str(config.version) -> (4, 5): MiniCPMV4_5, whose
    # init_llm builds Qwen3ForCausalLM over the file's config (lines 2348-2353; _SUPPORT_VERSION, lines 2434-2440);
    # qwen3.py Qwen3Attention: head_dim 128 over num_key_value_heads 8, every layer full (use_sliding_window false):
    # 2 x 8 x 128 x 2 B a layer, 36 layers
    plan = _plan(tmp_path, MINICPM_V_4_5, max_model_len=8192)
    assert {(x.attention_type, x.kv_heads, x.head_dim, x.sliding_window) for x in plan.layers} == {
        ("full", 8, 128, None)
    }
    assert plan.kv_bytes_per_token == 36 * 2 * 8 * 128 * 2 == 147_456


def test_minicpm_v_2_6_divides_as_qwen2_and_an_unserved_version_is_refused(tmp_path: Path) -> None:
    # (2, 6): MiniCPMV2_6.init_llm builds Qwen2ForCausalLM (lines 2148-2153): head_dim hidden_size // heads = 3584 // 28
    # = 128 (qwen2.py line 150) over 4 KV heads; the fields are MiniCPM-V 2.6's Qwen2-7B decoder (openbmb/MiniCPM-V-2_6
    # config.json: hidden 3584, 28 heads, 4 KV heads, 28 layers)
    v26 = {k: v for k, v in MINICPM_V_4_5.items() if k != "head_dim"} | {
        "version": 2.6, "hidden_size": 3584, "num_attention_heads": 28, "num_key_value_heads": 4,
        "num_hidden_layers": 28, "intermediate_size": 18944, "vocab_size": 151666}  # fmt: skip
    plan = _plan(tmp_path / "v26", v26, max_model_len=8192)
    assert plan.kv_bytes_per_token == 28 * 2 * 4 * 128 * 2
    # MiniCPMV.__new__ raises 'Currently, MiniCPMV only supports versions 2.0, 2.5, 2.6, 4.0, 4.5. Got version: ...'
    with pytest.raises(ConfigError, match=r"field 'version' = 4\.6: vLLM's MiniCPMV serves versions 2\.0, 2\.5"):
        config_from_dict({**MINICPM_V_4_5, "version": 4.6}, "config.json")


def test_minicpm_v_weights_are_read_by_their_module_names(tmp_path: Path) -> None:
    # minicpmv.py MiniCPMVBaseModel.__init__ (lines 1247-1267): the decoder under 'llm' (init_llm(prefix='llm')), the
    # vision tower 'vpm' and its resampler 'resampler' inside _mark_tower_model(vllm_config, {'image', 'video'}), which
    # builds no tower when those modalities are limited to 0; the published checkpoint names its tensors
    # 'llm.model.embed_tokens.weight', 'llm.model.layers.0.self_attn.q_proj.weight', ... (PcOffeeP/FineTune_MLLM
    # Model/MiniCPM-VL-4.5/model.safetensors.index.json)
    llm = ["llm.model.embed_tokens.weight", "llm.model.layers.0.self_attn.q_proj.weight", "llm.lm_head.weight"]
    towers = ["vpm.encoder.layers.0.self_attn.q_proj.weight", "resampler.query"]
    directory = one_element_checkpoint(tmp_path / "ckpt", MINICPM_V_4_5, llm + towers)
    for multimodal, names in ((True, llm + towers), (False, llm)):
        plan = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", multimodal=multimodal,
                          max_model_len=8192)  # fmt: skip
        assert plan.weights_bytes == 2 * len(names)  # one bf16 element each


def test_kimi_k2_5_projector_is_part_of_its_vision_tower() -> None:
    # kimi_k25.py KimiK25ForConditionalGeneration (0.34.0 sdist): the checkpoint's 'mm_projector.proj.0' / '.proj.2'
    # tensors (hf_to_vllm_mapper, lines 311-318) load into self.mm_projector, built with the vision tower inside
    # _mark_tower_model(vllm_config, 'vision_chunk') (lines 349-372); its decoder is 'language_model.' (line 376)
    assert component_of("mm_projector.proj.0.weight") == VISION_TOWER
    assert component_of("vision_tower.encoder.blocks.0.wqkv.weight") == VISION_TOWER
    assert component_of("language_model.model.layers.0.self_attn.kv_a_proj_with_mqa.weight") == LANGUAGE_MODEL


# PaddlePaddle/PaddleOCR-VL: the flat layout of its config.json (text fields at the top, vision_config beside them) as a
# public converter's tiny copy spells it (search-index file id 70290682601), with the decoder of ERNIE-4.5-0.3B that
# the model card names, whose sizes transformers 5.19's PaddleOCRTextConfig takes as its defaults (vocab 103424,
# hidden 1024, 18 layers, 16 heads over 2 KV heads of 128: models/paddleocr_vl/configuration_paddleocr_vl.py)
PADDLEOCR_VL = {"architectures": ["PaddleOCRVLForConditionalGeneration"], "model_type": "paddleocr_vl",
                "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "intermediate_size": 3072,
                "max_position_embeddings": 131072, "num_attention_heads": 16, "num_hidden_layers": 18,
                "num_key_value_heads": 2, "rms_norm_eps": 1e-05, "rope_theta": 500000, "tie_word_embeddings": False,
                "torch_dtype": "bfloat16", "use_bias": False, "vocab_size": 103424,
                "rope_scaling": {"mrope_section": [16, 24, 24], "rope_type": "default", "type": "default"},
                "vision_config": {"architectures": ["PaddleOCRVisionModel"], "model_type": "paddleocr_vl",
                                  "hidden_size": 1152, "intermediate_size": 4304, "num_attention_heads": 16,
                                  "num_hidden_layers": 27, "patch_size": 14, "spatial_merge_size": 2}}  # fmt: skip


def test_paddleocr_vl_is_planned_as_the_ernie_decoder_vllm_builds(tmp_path: Path) -> None:
    # paddleocr_vl.py PaddleOCRVLForConditionalGeneration.__init__ (lines 958-985): text_config merged into the
    # config, then Ernie4_5ForCausalLM (a LlamaForCausalLM, ernie45.py) over it: head_dim 128 over 2 KV heads, every
    # layer full (llama.py lines 158-161): 2 x 2 x 128 x 2 B a layer, 18 layers; transformers 5.19 saves the same
    # fields under text_config (model_type paddleocr_vl_text), which vLLM merges alike
    flat = _plan(tmp_path / "flat", PADDLEOCR_VL, max_model_len=8192)
    assert flat.kv_bytes_per_token == 18 * 2 * 2 * 128 * 2 == 18_432
    text = {k: v for k, v in PADDLEOCR_VL.items() if k not in ("architectures", "model_type", "vision_config")}
    nested = {"architectures": PADDLEOCR_VL["architectures"], "model_type": "paddleocr_vl",
              "text_config": {**text, "model_type": "paddleocr_vl_text"},
              "vision_config": PADDLEOCR_VL["vision_config"]}  # fmt: skip
    assert _plan(tmp_path / "nested", nested, max_model_len=8192).kv_bytes_per_token == 18_432


def test_paddleocr_vl_projector_is_part_of_its_vision_tower() -> None:
    # paddleocr_vl.py (lines 972-979): self.visual (SiglipVisionModel) and self.mlp_AR (Projector) are built inside
    # _mark_tower_model(vllm_config, 'image'); the decoder's 'model.' / 'lm_head.' names map to language_model
    # (hf_to_vllm_mapper, lines 944-948)
    assert component_of("mlp_AR.linear_1.weight") == VISION_TOWER
    assert component_of("visual.vision_model.encoder.layers.0.self_attn.q_proj.weight") == VISION_TOWER


def test_paddleocr_vl_vision_head_is_not_weighed(tmp_path: Path) -> None:
    # paddleocr_vl.py, the vision model's hf_to_vllm_mapper (lines 882-888): 'head.attention', 'head.layernorm',
    # 'head.mlp', 'head.probe' and 'packing_position_embedding' map to None ('present in the checkpoint but absent from
    # this vision tower'): not loaded
    kept = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight",
            "visual.vision_model.encoder.layers.0.self_attn.q_proj.weight", "mlp_AR.linear_1.weight"]  # fmt: skip
    dropped = ["visual.vision_model.head.mlp.fc1.weight", "visual.vision_model.head.probe",
               "visual.vision_model.embeddings.packing_position_embedding.weight"]  # fmt: skip
    directory = one_element_checkpoint(tmp_path / "ckpt", PADDLEOCR_VL, kept + dropped)
    plan = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", max_model_len=8192)
    assert plan.weights_bytes == 2 * len(kept)  # one bf16 element each


def test_nemotron_nano_vl_decoder_and_sound_encoder_names_are_read() -> None:
    # nano_nemotron_vl.py NemotronH_Nano_VL_V2 (0.34.0 sdist): the checkpoint's 'language_model.backbone' names load
    # into language_model.model (hf_to_vllm_mapper, lines 951-953), nemotron_h.py's 'backbone.embeddings' being its
    # embedding table; vision_model, mlp1 and the sound_encoder of a file with a sound_config are built inside
    # _mark_tower_model(vllm_config, {'image', 'video', 'audio'}) (lines 998-1052)
    assert component_of("language_model.backbone.embeddings.weight") == EMBEDDINGS
    assert component_of("language_model.backbone.layers.0.mixer.in_proj.weight") == LANGUAGE_MODEL
    assert component_of("language_model.lm_head.weight") == LM_HEAD
    assert component_of("sound_encoder.encoder.layers.0.feed_forward1.linear1.weight") == AUDIO_TOWER
    assert component_of("mlp1.0.weight") == VISION_TOWER
