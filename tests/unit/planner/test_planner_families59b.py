"""Model types vLLM serves that the planner refused as unmodelled until 2026-12-06, part 2 (issue 27, "any model vLLM
serves"; part 1: test_planner_families59.py).

Each config is a copy of a published config.json (or of the fields a public source pins from it), its source named
above it. The expected KV bytes per token (and a hybrid's state bytes per request) are worked by hand from the vLLM
model file that builds the type's layers (vllm 0.34.0 sdist unless said), file and line named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.source import config_from_dict

_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "lm_head.weight"]


def _plan_layers(tmp_path: Path, config: dict[str, Any]) -> list[tuple[str, int, int, int, int]]:
    """(kind, KV heads, head_dim, KV bytes per token, state bytes per request) per layer of the plan vLLM 0.34.0 on one
    H100 gets for `config` (bf16 weights, the KV cache and states in the model dtype)."""
    tmp_path.mkdir(exist_ok=True)
    directory = one_element_checkpoint(tmp_path / "ckpt", config, _NAMES)
    plan = plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0")
    return [(x.attention_type, x.kv_heads, x.head_dim, x.bytes_per_token, x.state_bytes) for x in plan.layers]


# allenai/Olmo-Hybrid-7B's shape as a public benchmark writes its config kwargs (search-index file id 30518758314,
# HYBRID_CONFIG_KWARGS; transformers 5.19's OlmoHybridConfig, whose defaults 'yield a similar configuration to that of
# the allenai/Olmo-Hybrid-7B model', gives the same figures): 32 layers, every 4th full attention, GDN elsewhere
OLMO_HYBRID = {"architectures": ["OlmoHybridForCausalLM"], "model_type": "olmo_hybrid", "vocab_size": 100352,
               "hidden_size": 3840, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 30,
               "num_key_value_heads": 30, "hidden_act": "silu", "max_position_embeddings": 32768,
               "rms_norm_eps": 1e-06, "tie_word_embeddings": False,
               "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"] * 8,
               "linear_num_key_heads": 30, "linear_num_value_heads": 30, "linear_key_head_dim": 96,
               "linear_value_head_dim": 192, "linear_conv_kernel_dim": 4, "linear_use_gate": True,
               "linear_allow_neg_eigval": True, "torch_dtype": "bfloat16"}  # fmt: skip
# olmo_hybrid.py OlmoHybridAttention (lines 94-103): KV heads num_key_value_heads or the query heads = 30, head_dim
# hidden_size // heads = 3840 // 30 = 128 whatever the file says: 2 x 30 x 128 x 2 B = 15,360 B a full layer
OLMO_KV_LAYER = 2 * 30 * 128 * 2
# OlmoHybridForCausalLM.get_mamba_state_shape_from_config (lines 453-473) -> mamba_utils.py
# gated_delta_net_state_shape (lines 280-301): conv (96 x 30 x 2 + 192 x 30) x (4 - 1) = 34,560 elements, temporal
# 30 x 192 x 96 = 552,960; gated_delta_net_state_dtype (line 446): both in the model dtype under 'auto' (bf16, 2 B)
OLMO_STATE = ((96 * 30 * 2 + 192 * 30) * 3 + 30 * 192 * 96) * 2


def test_olmo_hybrid_is_planned_with_its_gated_deltanet_layers(tmp_path: Path) -> None:
    layers = _plan_layers(tmp_path, OLMO_HYBRID)
    full = [x for x in layers if x[0] == "full"]
    assert [x[0] == "full" for x in layers] == [i % 4 == 3 for i in range(32)]
    assert {x[1:] for x in full} == {(30, 128, OLMO_KV_LAYER, 0)}
    assert sum(x[3] for x in layers) == 8 * OLMO_KV_LAYER == 122_880
    assert {x[4] for x in layers if x[0] != "full"} == {OLMO_STATE} == {1_175_040}


def test_olmo_hybrid_fields_left_out_are_derived_as_its_class_does(tmp_path: Path) -> None:
    # transformers 5.19 OlmoHybridConfig.__post_init__: layer_types full where i % 4 == 3, linear_num_key_heads and
    # linear_num_value_heads the query heads (30), linear_key_head_dim int(0.75 x 3840 / 30) = 96, linear_value_head_dim
    # 2 x 96 = 192: Olmo-Hybrid-7B's own figures, so the same plan
    derived = ("layer_types", "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim",
               "linear_value_head_dim")  # fmt: skip
    bare = {k: v for k, v in OLMO_HYBRID.items() if k not in derived}
    assert _plan_layers(tmp_path / "bare", bare) == _plan_layers(tmp_path / "full", OLMO_HYBRID)
    # fewer than four layers: the class makes the last one full attention
    two = {**bare, "num_hidden_layers": 2}
    assert [x[0] for x in _plan_layers(tmp_path / "two", two)] == ["mamba", "full"]


# stepfun-ai/Step-3.5-Flash's text fields as a public loader's test pins them from the published config.json
# (search-index file id 58138225755, t_real_config_parses and its Step-3.7 twin: hidden 4096, 45 layers, 64 heads, 96 on
# the sliding layers, num_attention_groups 8 of head_dim 128, sliding_window 512, per-layer lists 48 long with the 3
# MTP layers' entries after the 45 decoder layers', full attention where i % 4 == 0, per-layer rope_theta and
# partial_rotary_factors); the per-layer lists are written out here over all 48 entries
_STEP_TYPES = ["full_attention" if i % 4 == 0 else "sliding_attention" for i in range(48)]
STEP3P5 = {"architectures": ["Step3p5ForCausalLM"], "model_type": "step3p5", "hidden_size": 4096,
           "num_hidden_layers": 45, "num_nextn_predict_layers": 3, "vocab_size": 128896, "rms_norm_eps": 1e-5,
           "head_dim": 128, "num_attention_groups": 8, "num_attention_heads": 64, "intermediate_size": 11264,
           "moe_num_experts": 288, "moe_top_k": 8, "moe_intermediate_size": 1280, "share_expert_dim": 1280,
           "moe_router_scaling_factor": 3.0, "use_moe_router_bias": True, "moe_layers_enum": "3,4,5",
           "sliding_window": 512, "attention_other_setting": {"attention_type": "sliding_attention",
                                                              "num_attention_heads": 96, "num_attention_groups": 8,
                                                              "head_dim": 128},
           "layer_types": _STEP_TYPES, "partial_rotary_factors": [0.5 if t == "full_attention" else 1.0
                                                                  for t in _STEP_TYPES],
           "rope_theta": [5000000.0 if t == "full_attention" else 10000.0 for t in _STEP_TYPES],
           "yarn_only_types": ["full_attention"], "max_position_embeddings": 262144, "att_impl_type": "GQA",
           "use_head_wise_attn_gate": True, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}  # fmt: skip


def test_step3p5_is_planned_over_its_decoder_layers(tmp_path: Path) -> None:
    # step3p5.py Step3p5DecoderLayer (lines 439-452): Step3p5Attention(num_kv_heads=config.num_attention_groups = 8,
    # head_dim=config.head_dim = 128 (line 219: or hidden // heads), sliding_window=config.sliding_window on the layers
    # _get_layer_type (lines 65-68) calls 'sliding_attention'); the model builds config.num_hidden_layers = 45 layers
    # (line 534), and vLLM loads the file with transformers' Step3p7TextConfig (vllm/transformers_utils/config.py
    # line 171), whose __post_init__ moves the 3 MTP entries of a 48-long layer_types to mtp_layer_types. Every layer:
    # 2 x 8 x 128 x 2 B = 4,096 B a token; 45 x 4,096 = 184,320
    layers = _plan_layers(tmp_path, STEP3P5)
    assert [x[0] for x in layers] == ["full" if i % 4 == 0 else "sliding" for i in range(45)]
    assert {x[1:4] for x in layers} == {(8, 128, 2 * 8 * 128 * 2)}
    assert sum(x[3] for x in layers) == 184_320


def test_step3p5_kv_heads_are_its_num_attention_groups(tmp_path: Path) -> None:
    # transformers 5.19 Step3p7TextConfig.attribute_map: num_attention_groups -> num_key_value_heads, so a file's
    # num_attention_groups sets the KV heads (its class default 8 only where the file has neither); a variant of 4
    # groups caches 2 x 4 x 128 x 2 B = 2,048 B a layer
    four = {**STEP3P5, "num_attention_groups": 4}
    assert {x[1:4] for x in _plan_layers(tmp_path, four)} == {(4, 128, 2 * 4 * 128 * 2)}


# deepseek-ai/deepseek-moe-16b-base's config.json as a public parameter counter's test copies it (search-index file id
# 1570491832, deepseek_v3_config, which is this model_type 'deepseek' file: DeepseekForCausalLM, 28 layers, 64 routed
# experts; https://huggingface.co/deepseek-ai/deepseek-moe-16b-base/blob/main/config.json)
DEEPSEEK_MOE = {"architectures": ["DeepseekForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
                "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekConfig",
                             "AutoModel": "modeling_deepseek.DeepseekModel",
                             "AutoModelForCausalLM": "modeling_deepseek.DeepseekForCausalLM"},
                "bos_token_id": 100000, "eos_token_id": 100001, "first_k_dense_replace": 1, "hidden_act": "silu",
                "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 10944,
                "max_position_embeddings": 4096, "model_type": "deepseek", "moe_intermediate_size": 1408,
                "moe_layer_freq": 1, "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": False,
                "num_attention_heads": 16, "num_experts_per_tok": 6, "num_hidden_layers": 28,
                "num_key_value_heads": 16, "pretraining_tp": 1, "rms_norm_eps": 1e-06, "rope_scaling": None,
                "rope_theta": 10000, "scoring_func": "softmax", "tie_word_embeddings": False,
                "torch_dtype": "bfloat16", "transformers_version": "4.36.0", "use_cache": True,
                "vocab_size": 102400}  # fmt: skip


def test_deepseek_v1_is_planned_with_its_multi_head_attention(tmp_path: Path) -> None:
    # deepseek_v2.py DeepseekV2DecoderLayer (lines 1280-1288): model_type 'deepseek' takes DeepseekAttention, whatever
    # MLA fields the file has; DeepseekAttention (lines 170-180): total_num_kv_heads = num_key_value_heads = 16,
    # head_dim = hidden_size // heads = 2048 // 16 = 128 whatever the file says. 28 x 2 x 16 x 128 x 2 B = 229,376
    layers = _plan_layers(tmp_path / "a", DEEPSEEK_MOE)
    assert {x[1:4] for x in layers} == {(16, 128, 2 * 16 * 128 * 2)}
    assert sum(x[3] for x in layers) == 229_376
    stated = {**DEEPSEEK_MOE, "head_dim": 64, "kv_lora_rank": 512, "qk_rope_head_dim": 64}
    assert _plan_layers(tmp_path / "b", stated) == layers
    # a file without num_key_value_heads: DeepseekAttention reads the field as the remote DeepseekConfig gives it, its
    # default 32 (planner.config.REMOTE_CONFIG_CLASSES; refused against 16 query heads when planned:
    # test_planner_families60.py)
    left_out = config_from_dict({k: v for k, v in DEEPSEEK_MOE.items() if k != "num_key_value_heads"}, "config.json")
    assert left_out.defaults_applied["num_key_value_heads"] == 32


# Ling-3.0-tiny's config.json as a public loader's test decodes it (search-index file id 65882770861,
# decodesLingConfiguration: 'These assertions intentionally cover the values used by Ling-3.0-tiny'):
# BailingMoeV3ForCausalLM under model_type 'bailing_hybrid', KDA layers beside MLA ones
LING3_TINY = {"architectures": ["BailingMoeV3ForCausalLM"], "model_type": "bailing_hybrid", "hidden_size": 1536,
              "intermediate_size": 4608, "num_hidden_layers": 24, "num_attention_heads": 16,
              "num_key_value_heads": 16, "head_dim": 128, "vocab_size": 157184, "max_position_embeddings": 131072,
              "rms_norm_eps": 0.000001, "rope_theta": 6000000, "tie_word_embeddings": False, "layer_group_size": 4,
              "short_conv_kernel_size": 4, "no_kda_lora": True, "kda_safe_gate": True, "kda_lower_bound": -5,
              "gated_attention_proj_granularity_type": "head_wise", "qk_head_dim": 192, "qk_nope_head_dim": 128,
              "qk_rope_head_dim": 64, "v_head_dim": 128, "q_lora_rank": 256, "kv_lora_rank": 512,
              "rope_interleave": True, "use_qk_norm": True, "first_k_dense_replace": 1, "num_experts": 128,
              "num_experts_per_tok": 8, "num_shared_experts": 1, "moe_intermediate_size": 512,
              "moe_shared_expert_intermediate_size": 512, "n_group": 8, "topk_group": 4, "norm_topk_prob": True,
              "routed_scaling_factor": 2.5, "moe_router_enable_expert_bias": True}  # fmt: skip


def test_ling3_is_planned_with_kda_states_beside_mla_latents(tmp_path: Path) -> None:
    # bailing_moe_v3.py (vLLM 0.34.0 sdist) _is_kda_layer (lines 131-137): KDA unless (i + 1) % layer_group_size == 0 or
    # i falls in a trailing partial group: 18 KDA and 6 MLA layers of 24. BailingMoeV3MLAAttention (lines 458-607): a
    # latent of kv_lora_rank + qk_rope_head_dim = 576 elements (model_arch_config_convertor.py is_deepseek_mla lists
    # 'bailing_hybrid'), 1,152 B a token in bf16. _get_kda_state_shape_for_config (lines 140-157) ->
    # mamba_utils.py kda_state_shape (lines 304-327): conv (16 x 128 + 2 x 16 x 128) x (4 - 1) = 18,432 elements in the
    # model dtype, recurrent 16 x 128 x 128 = 262,144 in float32 (kda_state_dtype, lines 141-156, 'auto' as the model
    # class passes it): 36,864 + 1,048,576 = 1,085,440 B a KDA layer
    layers = _plan_layers(tmp_path, LING3_TINY)
    assert [x[0] == "full" for x in layers] == [i % 4 == 3 for i in range(24)]
    assert {x[3] for x in layers if x[0] == "full"} == {576 * 2}
    assert sum(x[3] for x in layers) == 6 * 1_152 == 6_912
    assert {x[4] for x in layers if x[0] != "full"} == {3 * 16 * 128 * 3 * 2 + 16 * 128 * 128 * 4} == {1_085_440}
    # the same model type under BailingMoeV2_5ForCausalLM is bailing_moe_linear.py's linear attention beside MLA
    # (registry.py), which the planner does not model: refused, not planned as Ling 3.0
    v25 = {**LING3_TINY, "architectures": ["BailingMoeV2_5ForCausalLM"]}
    with pytest.raises(ConfigError, match="'bailing_hybrid' .BailingMoeV2_5ForCausalLM.: an architecture the planner"):
        config_from_dict(v25, "config.json")


def test_a_per_layer_rope_theta_is_read_only_for_step3p5() -> None:
    # only Step3p7TextConfig pops a per-layer rope_theta list (config.PER_LAYER_ROPE_THETA); a Llama file's list is
    # still refused in one line, as its LlamaConfig refuses it
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
             "num_hidden_layers": 2, "num_attention_heads": 32, "rope_theta": [10000.0, 10000.0]}  # fmt: skip
    with pytest.raises(ConfigError, match="'rope_theta' must be a number"):
        config_from_dict(llama, "config.json")
    with pytest.raises(ConfigError, match=r"'rope_theta\[1\]' must be a number"):
        config_from_dict({**STEP3P5, "rope_theta": [5000000.0, "x"] + [1.0] * 46}, "config.json")


# Tele-AI/TeleChat2's 115B config.json as the model's own repository publishes it (Tele-AI/TeleChat2
# model/115B/config.json, commit f2864e8d; search-index file id 14096628988): model_type 'telechat', n_layer / n_head
TELECHAT2_115B = {"apply_residual_connection_post_layernorm": False, "architectures": ["TelechatForCausalLM"],
                  "auto_map": {"AutoConfig": "configuration_telechat.TelechatConfig",
                               "AutoModelForCausalLM": "modeling_telechat.TelechatForCausalLM"},
                  "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bias_dropout_fusion": True,
                  "bos_token_id": 1, "eos_token_id": 2, "hidden_dropout": 0.0, "hidden_size": 8192,
                  "initializer_range": 0.02, "layer_norm_epsilon": 1e-08, "masked_softmax_fusion": True,
                  "model_type": "telechat", "n_head": 64, "n_inner": None, "num_key_value_heads": 8, "n_layer": 96,
                  "pad_token_id": 3, "pretraining_tp": 2, "skip_bias_add": False, "skip_bias_add_qkv": False,
                  "slow_but_exact": False, "unk_token_id": 0, "use_cache": True, "vocab_size": 131072,
                  "ffn_hidden_size": 40960, "flash_attn": True, "tie_word_embeddings": False, "training_seqlen": 8192,
                  "base_seqlen": 8192, "seq_length": 8192}  # fmt: skip


def test_telechat2_is_planned_over_its_n_layer_and_n_head(tmp_path: Path) -> None:
    # telechat2.py TeleChat2Model (lines 27-33): LlamaModel over the remote TelechatConfig, whose attribute_map reads
    # n_layer / n_head as num_hidden_layers / num_attention_heads; llama.py LlamaDecoderLayer (lines 289-290)
    # num_key_value_heads = 8, LlamaAttention (lines 158-159) head_dim or 8192 // 64 = 128:
    # 96 x 2 x 8 x 128 x 2 B = 393,216 B a token. vLLM serves the file under TeleChat2ForCausalLM, the architecture
    # Tele-AI's own AWQ script writes into it 'in order to use VLLM inference' (autoAWQ/telechat_quant.py, search-index
    # file id 14381823743); its TelechatForCausalLM is no vLLM architecture
    served = {**TELECHAT2_115B, "architectures": ["TeleChat2ForCausalLM"]}
    layers = _plan_layers(tmp_path, served)
    assert {x[:4] for x in layers} == {("full", 8, 128, 2 * 8 * 128 * 2)} and len(layers) == 96
    assert sum(x[3] for x in layers) == 393_216
    # TelechatConfig.__init__ sets num_key_value_heads = kwargs.pop('num_key_value_heads', None): a file without it
    # gives LlamaAttention None KV heads, which it cannot build, so the planner names the field
    with pytest.raises(ConfigError, match="'num_key_value_heads' is missing"):
        config_from_dict({k: v for k, v in served.items() if k != "num_key_value_heads"}, "config.json")
