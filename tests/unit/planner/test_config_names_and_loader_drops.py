"""Five planner defects, each pinned to the source that decides it.

- A refusal names the field as the file spells it: a field the planner reads under its standard name (GPT2Config's
  attribute_map, vLLM's ChatGLMConfig and RWConfig, transformers' FalconConfig n_embed) is named by the file's name,
  where 'field num_key_value_heads' was named for ChatGLM's multi_query_group_num.
- Cohere2's sliding layers attend sliding_window + 1 tokens from vLLM 0.29.0: a version-ranged rule of engines.json
  (sliding_window_extra), no family branch in planner.core.
- A config that leaves out tie_word_embeddings is served with its class default (GPT2Config: true), read from
  catalog/config_defaults.json (scripts/gen_config_defaults.py), where the planner read false.
- Tensors the model's loader drops by name are not weighed: ERNIE-4.5 MoE's MTP layers, GPT-2's and GPT-J's attention
  masks, every model's stored RoPE inv_freq (vllm 0.32.0 sdist: ernie45_moe.py, gpt2.py, gpt_j.py, utils.py).
- Qwen2/Qwen3 max_window_layers 0 slides every layer (Qwen2Config.__post_init__ 'i >= self.max_window_layers', any int
  accepted), where the planner refused it as not positive.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest

from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.config import read_config
from onechip.planner.geometry import kv_geometry
from onechip.planner.rules import engine_rules
from onechip.planner.source import config_from_dict, text_config_of
from onechip.planner.weights import (
    Tensor,
    decode_bytes_per_step,
    dropped_names,
    offloaded_layers,
    weights_by_component,
    weights_by_stage,
)

# openai-community/gpt2's field names (GPT2Config.attribute_map: n_embd, n_head, n_layer, n_positions)
GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 2,
        "n_positions": 1024, "vocab_size": 50257}  # fmt: skip
# THUDM/glm-4-9b-chat's names as vLLM's ChatGLMConfig reads them (num_layers, multi_query_group_num, seq_length)
CHATGLM = {"architectures": ["ChatGLMModel"], "model_type": "chatglm", "hidden_size": 4096, "kv_channels": 128,
           "multi_query_attention": True, "multi_query_group_num": 2, "num_attention_heads": 32, "num_layers": 2,
           "padded_vocab_size": 151552, "seq_length": 131072, "torch_dtype": "bfloat16"}  # fmt: skip
# tiiuae/falcon-40b's RefinedWeb names (vLLM's RWConfig: n_head, n_head_kv, n_layer; n_embed over hidden_size)
FALCON_40B = {"architectures": ["RWForCausalLM"], "model_type": "RefinedWeb", "n_embed": 8192, "n_head": 128,
              "n_head_kv": 8, "n_layer": 2, "new_decoder_architecture": True, "vocab_size": 65024}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({**GPT2, "n_head": "two"}, "n_head"),  # GPT2Config.attribute_map num_attention_heads -> n_head
        ({**GPT2, "n_layer": 0}, "n_layer"),
        ({**CHATGLM, "multi_query_group_num": "two"}, "multi_query_group_num"),  # chatglm.py GLMAttention's KV heads
        ({**CHATGLM, "num_layers": "x"}, "num_layers"),  # ChatGLMConfig attribute_map num_hidden_layers -> num_layers
        ({**CHATGLM, "seq_length": -1}, "seq_length"),  # ChatGLMConfig max_position_embeddings = seq_length
        ({**FALCON_40B, "n_head_kv": "x"}, "n_head_kv"),  # RWConfig attribute_map num_kv_heads -> n_head_kv
        ({**FALCON_40B, "n_embed": "x"}, "n_embed"),  # RWConfig: hidden_size = n_embed when given
        ({**FALCON_40B, "n_head": 0}, "n_head"),
        ({**FALCON_40B, "model_type": "falcon", "num_kv_heads": "x"}, "num_kv_heads"),  # FalconConfig's own name
    ],
    ids=["gpt2-n_head", "gpt2-n_layer", "chatglm-groups", "chatglm-layers", "chatglm-seq", "rw-n_head_kv",
         "rw-n_embed", "rw-n_head", "falcon-num_kv_heads"],
)  # fmt: skip
def test_a_bad_field_is_named_as_the_file_spells_it(config: dict[str, Any], field: str) -> None:
    # the old code named the standard name it copied the value into ('num_key_value_heads', 'num_attention_heads',
    # 'num_hidden_layers', 'hidden_size', 'max_position_embeddings'), a field the file does not have
    with pytest.raises(ConfigError, match=rf"^config.json: field '{field}' must be a positive integer"):
        read_config(config, "config.json")


@pytest.mark.parametrize(
    ("config", "field"),
    [({**CHATGLM, "num_layers": None}, "num_layers"), ({**GPT2, "n_head": None}, "n_head"),
     ({**FALCON_40B, "n_layer": None}, "n_layer")],
    ids=["chatglm-num_layers", "gpt2-n_head", "rw-n_layer"],
)  # fmt: skip
def test_a_null_required_field_is_named_as_the_file_spells_it(config: dict[str, Any], field: str) -> None:
    # the missing-field line named the standard name ('num_hidden_layers' of a ChatGLM file that spells num_layers)
    with pytest.raises(ConfigError, match=rf"^config.json: field '{field}' is missing; the KV geometry needs it$"):
        read_config(config, "config.json")


def test_a_group_count_the_heads_do_not_divide_is_named_as_the_file_spells_it() -> None:
    # vLLM's Attention asserts num_heads % num_kv_heads == 0; ChatGLM's KV heads are multi_query_group_num (chatglm.py)
    with pytest.raises(ConfigError, match=r"field 'multi_query_group_num' is 3: num_attention_heads \(32\)"):
        read_config({**CHATGLM, "multi_query_group_num": 3}, "config.json")


def test_a_falcon_file_naming_its_width_n_embed_is_read_as_falcon_config_reads_it() -> None:
    # transformers 5.19 FalconConfig.__post_init__ ('Backward compatibility with n_embed kwarg'): hidden_size =
    # n_embed when given; the planner kept the class default 4544 for model_type 'falcon' (4544 // 64 = 71)
    config = {"architectures": ["FalconForCausalLM"], "model_type": "falcon", "n_embed": 4096,
              "num_attention_heads": 64, "num_hidden_layers": 2, "vocab_size": 65024}  # fmt: skip
    text = text_config_of(config_from_dict(config, "config.json"))
    assert (text["hidden_size"], text["head_dim"]) == (4096, 64)


COHERE2 = {"architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 4, "sliding_window": 4096,
           "sliding_window_pattern": 4, "max_position_embeddings": 8192, "vocab_size": 256000}  # fmt: skip


@pytest.mark.parametrize("engine", ["vllm-gpu", "vllm-cpu", "vllm-tpu", "vllm-ascend"])
def test_cohere2_window_extra_is_a_ranged_engine_rule(engine: str) -> None:
    # vllm commandr.py: per_layer_sliding_window = sliding_window + 1 from 0.29.0 (0.29.0 - 0.32.0 sdists), 0.28.0 adds
    # nothing; None is the newest release; another model type gets no extra token
    rules = engine_rules(engine)
    extra = {v: rules.sliding_window_extra_tokens("cohere2", v) for v in ("0.28.0", "0.29.0", "0.32.0", None)}
    assert extra == {"0.28.0": 0, "0.29.0": 1, "0.32.0": 1, None: 1}
    assert rules.sliding_window_extra_tokens("gemma2", "0.32.0") == 0


def test_planner_core_has_no_cohere2_branch() -> None:
    # the rule lives in engines.json sliding_window_extra; core reads it for any model type
    source = (Path(__file__).resolve().parents[3] / "src" / "onechip" / "planner" / "core.py").read_text("utf-8")
    assert "cohere2" not in source


def _header_only(directory: Path, config: dict[str, Any], tensors: dict[str, list[int]]) -> Path:
    """config.json and a model.safetensors header of bf16 tensors of the given shapes (no data is read)."""
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2 * math.prod(shape)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)
    return directory


def test_gpt2_without_tie_word_embeddings_is_served_tied() -> None:
    # GPT2Config (transformers 5.19 configuration_gpt2.py): tie_word_embeddings: bool = True; vLLM's gpt2.py ties
    # lm_head to wte when config.tie_word_embeddings. LlamaConfig's default is False
    assert read_config(GPT2, "config.json").tie_word_embeddings is True
    assert read_config({**GPT2, "tie_word_embeddings": False}, "config.json").tie_word_embeddings is False
    llama = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
    assert read_config(llama, "config.json").tie_word_embeddings is False
    with pytest.raises(ConfigError, match="field 'tie_word_embeddings' must be true or false, got None"):
        read_config({**GPT2, "tie_word_embeddings": None}, "config.json")  # stated null: no default fills it


def test_gpt2_tied_by_its_class_default_streams_its_embedding_each_decode_step(tmp_path: Path) -> None:
    # tied: the LM head reads the whole wte matrix each step (planner.weights.decode_bytes_per_step); untied (the old
    # reading) the step counted the decoder alone. wte 64 x 8 bf16 = 1,024 B; one decoder weight 8 x 8 = 128 B
    config = {**GPT2, "n_embd": 8, "n_head": 2, "vocab_size": 64}
    tensors = {"wte.weight": [64, 8], "h.0.attn.c_attn.weight": [8, 8], "h.1.attn.c_attn.weight": [8, 8]}
    plan = plan_model(str(_header_only(tmp_path / "ckpt", config, tensors)), "h100", "vllm-gpu")
    assert plan.decode_bytes_per_step == 64 * 8 * 2 + 2 * 8 * 8 * 2
    (warning,) = [w for w in plan.warnings if w.code == "config-class-defaults"]  # the plan names the default
    assert "tie_word_embeddings=True" in warning.message and "GPT2Config" in warning.message


def _t(name: str, n: int = 1024) -> Tensor:
    return Tensor(name=name, shape=(n,), dtype="BF16")


@pytest.mark.parametrize(
    ("architecture", "kept", "dropped"),
    [
        # gpt2.py GPT2Model.hf_to_vllm_mapper: {".attn.bias": None, ".attn.masked_bias": None}; c_attn.bias is kept
        ("GPT2LMHeadModel", ["h.0.attn.c_attn.weight", "h.0.attn.c_attn.bias"],
         ["h.0.attn.bias", "h.0.attn.masked_bias", "transformer.h.1.attn.bias"]),
        # gpt_j.py GPTJForCausalLM.hf_to_vllm_mapper: {"attn.bias": None, "attn.masked_bias": None}
        ("GPTJForCausalLM", ["transformer.h.0.attn.q_proj.weight"],
         ["transformer.h.0.attn.bias", "transformer.h.0.attn.masked_bias"]),
        # ernie45_moe.py Ernie4_5_MoeModel.hf_to_vllm_mapper: {"mtp": None}; the names are those ernie_mtp.py ErnieMTP
        # remaps ('MTP weights are stored under a flat `mtp_*.0.` block in the checkpoint')
        ("Ernie4_5_MoeForCausalLM", ["model.layers.0.mlp.gate.weight"],
         ["model.mtp_block.0.self_attn.q_proj.weight", "model.mtp_linear_proj.0.weight",
          "model.mtp_emb_norm.0.weight", "model.mtp_hidden_norm.0.weight"]),
        # utils.py AutoWeightsLoader REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER: every model
        ("LlamaForCausalLM", ["model.layers.0.self_attn.q_proj.weight"],
         ["model.layers.0.self_attn.rotary_emb.inv_freq"]),
    ],
    ids=["gpt2", "gptj", "ernie45-moe", "llama-inv-freq"],
)  # fmt: skip
def test_tensors_the_loader_drops_are_not_weighed(architecture: str, kept: list[str], dropped: list[str]) -> None:
    tensors = [_t(n) for n in kept + dropped]
    skip = dropped_names([architecture])
    stored = sum(t.nbytes() for t in tensors)
    loaded = len(kept) * 2048
    assert sum(weights_by_component(tensors, None).values()) == stored  # the old count
    assert sum(weights_by_component(tensors, None, dropped=skip).values()) == loaded
    assert decode_bytes_per_step(tensors, None, False, dropped=skip) == loaded
    assert sum(weights_by_stage(tensors, None, [range(0, 1), range(1, 2)], dropped=skip)) == loaded
    offload = offloaded_layers(tensors, budget_bytes=10**9, served_dtype=None, tensor_parallel_size=1, dropped=skip)
    assert offload.offloaded_bytes == loaded


def test_gpt2_checkpoint_with_attention_masks_plans_without_them(tmp_path: Path) -> None:
    # openai-community/gpt2's model.safetensors stores h.N.attn.bias [1, 1, 1024, 1024] beside the weights; vLLM's
    # gpt2.py drops it, so the plan weighs the rest: wte 64 x 8 + one 8 x 8 layer weight each, bf16
    config = {**GPT2, "n_embd": 8, "n_head": 2, "vocab_size": 64, "tie_word_embeddings": False}
    tensors = {"wte.weight": [64, 8], "h.0.attn.c_attn.weight": [8, 8], "h.1.attn.c_attn.weight": [8, 8],
               "h.0.attn.bias": [1024, 1024], "h.1.attn.bias": [1024, 1024]}  # fmt: skip
    plan = plan_model(str(_header_only(tmp_path / "ckpt", config, tensors)), "h100", "vllm-gpu")
    assert plan.weights_bytes == (64 * 8 + 2 * 8 * 8) * 2


QWEN2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4,
         "num_key_value_heads": 2, "num_hidden_layers": 3, "use_sliding_window": True, "sliding_window": 32,
         "vocab_size": 128, "max_position_embeddings": 256}  # fmt: skip


@pytest.mark.parametrize("model_type", ["qwen2", "qwen3"])
@pytest.mark.parametrize(
    ("first", "kinds"), [(0, ["sliding"] * 3), (-1, ["sliding"] * 3), (2, ["full"] * 2 + ["sliding"])]
)
def test_max_window_layers_of_zero_or_less_slides_every_layer(model_type: str, first: int, kinds: list[str]) -> None:
    # Qwen2Config / Qwen3Config (transformers 5.19): max_window_layers: int, layer_types 'sliding_attention' if
    # sliding_window is not None and i >= self.max_window_layers; Qwen2Config(max_window_layers=0 or -1,
    # use_sliding_window=True, sliding_window=64, num_hidden_layers=4) loads with every layer sliding. The planner
    # refused 0 ('must be a positive integer')
    config = {**QWEN2, "model_type": model_type, "head_dim": 16, "max_window_layers": first}
    text = text_config_of(config_from_dict(config, "config.json"))
    assert [layer.attention_type for layer in kv_geometry(text, kv_dtype_bytes=2).layers] == kinds


@pytest.mark.parametrize("value", ["0", 1.5, True])
def test_max_window_layers_that_is_no_integer_is_refused(value: Any) -> None:
    # Qwen2Config's strict dataclass: "Field 'max_window_layers' expected int, got str"
    with pytest.raises(ConfigError, match="field 'max_window_layers' must be an integer"):
        read_config({**QWEN2, "max_window_layers": value}, "config.json")


def test_a_config_without_a_length_is_planned_at_vllms_assumed_2048(tmp_path: Path) -> None:
    # GPT-2 states its length as n_positions (GPT2Config.attribute_map); with it null (as BLOOM, whose files state no
    # length field at all) vLLM serves max_model_len 2048 ('Assuming the model's maximum length is 2048.',
    # vllm/config/model.py _get_and_verify_max_len, 0.34.0 sdist), where the plan was refused ('states none of the
    # length fields vLLM reads ...; pass --max-model-len'); the plan says which length it assumed
    (tmp_path / "config.json").write_text(json.dumps({**GPT2, "n_positions": None}), encoding="utf-8")
    tensor = {"dtype": "BF16", "shape": [8], "data_offsets": [0, 16]}
    header = json.dumps({"lm_head.weight": tensor}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + bytes(16))
    plan = plan_model(str(tmp_path), "h100")
    assert plan.max_model_len == 2048
    said = [w.message for w in plan.warnings if w.code == "assumed-max-model-len"]
    assert len(said) == 1 and "n_positions" in said[0] and "2,048" in said[0]
    given = plan_model(str(tmp_path), "h100", max_model_len=4096)  # a given length is taken as it is, unwarned
    assert given.max_model_len == 4096 and "assumed-max-model-len" not in {w.code for w in given.warnings}
