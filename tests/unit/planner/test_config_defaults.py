"""Config-class defaults (issue 27): a published config.json that leaves a field to its transformers class gets
the class default, as vLLM does when it loads the config; the table is generated from transformers' classes
(scripts/gen_config_defaults.py) and checked against the installed transformers here; the plan names the
fields; a field whose class has no default is still refused in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner.config import read_config
from onechip.planner.geometry import kv_geometry

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = ROOT / "tests" / "fixtures" / "bootlogs" / "configs"


def _config(name: str) -> dict:
    return json.loads((CONFIGS / name).read_text(encoding="utf-8"))


def _checkpoint(tmp_path: Path, config: dict) -> Path:
    """`config` with a one-tensor header-only safetensors file: enough for the planner to read."""
    directory = tmp_path / "model"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    header = json.dumps(
        {"model.language_model.layers.0.mlp.weight": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}}
    ).encode()
    (directory / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 8)
    return directory


def test_the_table_is_what_the_installed_transformers_classes_give() -> None:
    transformers = pytest.importorskip("transformers")
    table = catalog.config_defaults()
    if transformers.__version__ != table.transformers_version:
        pytest.skip(f"table generated with transformers {table.transformers_version}, {transformers.__version__} here")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_config_defaults
    finally:
        sys.path.pop(0)
    built = gen_config_defaults.build()
    generated = built["model_types"]
    assert generated == {k: v.model_dump(by_alias=True, exclude_none=True) for k, v in table.model_types.items()}
    assert built["transformers_model_types"] == table.transformers_model_types
    # what AutoTokenizer loads without a repository's code (planner.config.tokenizer_remote_code)
    assert (built["tokenizer_model_types"], built["tokenizer_classes"]) == (
        table.tokenizer_model_types,
        table.tokenizer_classes,
    )


def test_published_gemma3_4b_plans_with_gemma3_text_defaults_and_the_geometry_of_its_stated_copy() -> None:
    published = read_config(_config("google--gemma-3-4b-it.published.json"), "gemma-3-4b-it")
    # Gemma3TextConfig (transformers 5.19): head_dim 256, 8 heads, 4 KV heads, sliding_window_pattern 6
    assert {k: published.defaults_applied[k] for k in ("head_dim", "num_attention_heads", "num_key_value_heads")} == {
        "head_dim": 256,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
    }
    # the MaxText copy of the same checkpoint states those fields (configs/google--gemma-3-4b-it.json): same KV
    stated = read_config(_config("google--gemma-3-4b-it.json"), "gemma-3-4b-it (MaxText)")
    assert (
        kv_geometry(published.text, kv_dtype_bytes=2, family=published.family).kv_bytes_per_token
        == kv_geometry(stated.text, kv_dtype_bytes=2, family=stated.family).kv_bytes_per_token
    )


def test_the_plan_names_the_defaulted_fields(tmp_path: Path) -> None:
    from onechip.planner import plan_model

    directory = _checkpoint(tmp_path, _config("google--gemma-3-4b-it.published.json"))
    plan = plan_model(str(directory), "h100", max_model_len=8192)
    (warning,) = [w for w in plan.warnings if w.code == "config-class-defaults"]
    assert "head_dim=256" in warning.message and "Gemma3TextConfig" in warning.message


def test_published_gemma3_plans_at_its_class_default_positions_without_max_model_len(tmp_path: Path) -> None:
    # google/gemma-3-4b-it and 12b-it publish no max_position_embeddings; vLLM loads them through transformers'
    # Gemma3Config, whose Gemma3TextConfig default is 131,072 (transformers 5.19 configuration_gemma3.py; Gemma 3's
    # linear RoPE factor already counted, planner.core.model_positions), so the engine serves 131,072 tokens
    from onechip.planner import plan_model

    for name in ("google--gemma-3-4b-it.published.json", "google--gemma-3-12b-it.published.json"):
        assert "max_position_embeddings" not in _config(name)["text_config"]
        read = read_config(_config(name), name)
        assert read.defaults_applied["max_position_embeddings"] == 131_072
    plan = plan_model(str(_checkpoint(tmp_path, _config("google--gemma-3-4b-it.published.json"))), "h100")
    assert plan.max_model_len == 131_072
    (warning,) = [w for w in plan.warnings if w.code == "config-class-defaults"]
    assert "max_position_embeddings=131072" in warning.message


def test_positions_are_not_filled_under_a_wrapper_transformers_does_not_define() -> None:
    # Kimi-VL's remote KimiVLConfig builds its DeepSeek text config itself: DeepseekV3Config's 4,096 default is not
    # what the engine is known to get, so the plan asks for --max-model-len (its other fields still get defaults)
    config = _config("moonshotai--Kimi-VL-A3B-Instruct.json")
    assert config["model_type"] not in catalog.config_defaults().model_types
    read = read_config(config, "Kimi-VL-A3B-Instruct")
    assert "max_position_embeddings" not in read.text and "max_position_embeddings" not in read.defaults_applied


def test_a_wrapper_text_config_without_layers_gets_its_text_class_default() -> None:
    # Llava-NeXT on Mistral: text_config states model_type 'mistral' but no num_hidden_layers; MistralConfig's
    # default is 32 (transformers 5.19 configuration_mistral.py), which vLLM serves.
    config = {
        "model_type": "llava_next",
        "text_config": {"model_type": "mistral", "hidden_size": 4096, "num_attention_heads": 32},
    }
    read = read_config(config, "llava-v1.6-mistral")
    assert read.text["num_hidden_layers"] == 32 and read.text["num_key_value_heads"] == 8
    assert read.defaults_class is not None and read.defaults_class.startswith("MistralConfig")


def test_an_explicit_null_is_not_replaced_by_the_default() -> None:
    config = _config("google--gemma-3-4b-it.published.json")
    config["text_config"] = {**config["text_config"], "head_dim": None}
    with pytest.raises(ConfigError, match="field 'head_dim' is missing"):
        read_config(config, "gemma-3-4b-it")


def test_a_field_whose_class_has_no_default_is_still_refused_in_one_line() -> None:
    # Gemma4TextConfig has no global_head_dim default (None): deleting it from a Gemma 4 config is refused
    config = _config("google--gemma-4-E2B-it.json")
    text = {k: v for k, v in config["text_config"].items() if k not in ("global_head_dim", "per_layer_config")}
    assert "global_head_dim" not in catalog.config_defaults().model_types["gemma4_text"].defaults
    with pytest.raises(ConfigError, match="field 'global_head_dim' is missing") as caught:
        read_config({**config, "text_config": text}, "gemma-4-E2B-it")
    assert "\n" not in str(caught.value)


def _headers(directory: Path, config: dict, tensors: dict[str, list[int]]) -> Path:
    """config.json and one header-only bf16 safetensors file of `tensors` ({name: shape}): the planner reads headers."""
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 2 * shape[0] * (shape[1] if len(shape) > 1 else 1)
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(len(raw).to_bytes(8, "little") + raw + b"\0" * offset)
    return directory


# Qwen2.5-7B-Instruct's decoder (its published config.json: 28 layers, 28 heads, 4 KV heads of 128, hidden 3584)
QWEN25_7B = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "max_position_embeddings": 32768,
    "vocab_size": 152064, "torch_dtype": "bfloat16", "tie_word_embeddings": False,
}  # fmt: skip


def _qwen_layers(layers: int, kv_rows: int = 4 * 128) -> dict[str, list[int]]:
    tensors = {"model.embed_tokens.weight": [8, 3584]}
    for i in range(layers):
        tensors[f"model.layers.{i}.self_attn.k_proj.weight"] = [kv_rows, 8]
    return tensors


@pytest.mark.parametrize(
    ("dropped", "kv_rows", "said"),
    [
        ("num_hidden_layers", 512, "leaves num_hidden_layers to Qwen2Config (transformers 5.19.0)'s default 32, but "
         "the checkpoint holds decoder layers 0 - 27 (28)"),
        ("num_key_value_heads", 512, "leaves num_key_value_heads to Qwen2Config (transformers 5.19.0)'s default 32 "
         "(4,096 key rows at head_dim 128), but the checkpoint's k_proj has 512 rows (4 KV heads)"),
    ],
)  # fmt: skip
def test_a_class_default_the_checkpoint_contradicts_is_refused(tmp_path: Path, dropped: str, kv_rows: int, said: str):
    # a field deleted by mistake from a config whose class has a default: vLLM builds Qwen2Config's default and then
    # fails loading the 28-layer, 4-KV-head checkpoint; the plan planned the default (32 layers, 32 KV heads: 8x the KV)
    from onechip.planner import plan_model

    config = {k: v for k, v in QWEN25_7B.items() if k != dropped}
    directory = _headers(tmp_path / "m", config, _qwen_layers(28, kv_rows))
    with pytest.raises(ConfigError) as refused:
        plan_model(str(directory), "h100", max_model_len=8192)
    assert said in str(refused.value) and f"set {dropped} in config.json" in str(refused.value)


def test_a_class_default_the_checkpoint_agrees_with_is_planned(tmp_path: Path) -> None:
    from onechip.planner import plan_model

    config = {k: v for k, v in QWEN25_7B.items() if k != "num_hidden_layers"}
    plan = plan_model(str(_headers(tmp_path / "m", config, _qwen_layers(32))), "h100", max_model_len=8192)
    (warning,) = [w for w in plan.warnings if w.code == "config-class-defaults"]
    assert "num_hidden_layers=32" in warning.message


def test_dbrx_sub_config_defaults_come_from_the_table_as_transformers_classes_give_them() -> None:
    # was: planner/config.py typed DbrxAttentionConfig's / DbrxFFNConfig's defaults by hand (kv_n_heads 1,
    # moe_num_experts 4, moe_top_k 1, ffn_hidden_size 3584); they are generated into config_defaults.json
    entry = catalog.config_defaults().model_types["dbrx"]
    assert entry.sub_config_defaults is not None
    transformers = pytest.importorskip("transformers")
    subs = transformers.DbrxConfig.sub_configs  # the classes DbrxConfig loads attn_config and ffn_config with
    attn, ffn = subs["attn_config"](), subs["ffn_config"]()
    assert entry.sub_config_defaults == {
        "attn_config": {"kv_n_heads": attn.kv_n_heads},
        "ffn_config": {"ffn_hidden_size": ffn.ffn_hidden_size, "moe_num_experts": ffn.moe_num_experts,
                       "moe_top_k": ffn.moe_top_k},
    }  # fmt: skip
