"""The longest max_model_len vLLM accepts: max_position_embeddings scaled by the RoPE factor as vLLM's
_get_and_verify_max_len does (planner.core.model_positions; vllm/config/model.py in the 0.8.5 - 0.34.0 sdists)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.core import model_positions

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs" / "configs"
# Qwen2.5's model cards: 'For supported frameworks, you could add the following to config.json to enable YaRN'
QWEN25_YARN = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}


def _limit(text: dict, model_type: str, version: str | None) -> int:
    got = model_positions(text, model_type, version)
    assert got is not None
    return got.limit


def _config(name: str) -> dict:
    return {k: v for k, v in json.loads((CONFIGS / name).read_text(encoding="utf-8")).items() if not k.startswith("_")}


def test_yarn_stretches_the_positions_up_to_0_29_and_not_from_0_30() -> None:
    text = _config("Qwen--Qwen2.5-1.5B-Instruct.json") | {"rope_scaling": QWEN25_YARN}
    # up to 0.29.0: original_max_position_embeddings x factor = 32,768 x 4
    got = model_positions(text, "qwen2", "0.29.0")
    assert got is not None and (got.limit, got.default) == (131072, 131072)
    assert got.said == "131,072 positions (original_max_position_embeddings 32768 x its yarn RoPE factor 4)"
    # from 0.30.0 the stated positions hold (transformers 5 takes them as already scaled)
    assert _limit(text, "qwen2", "0.30.0") == 32768
    assert _limit(text, "qwen2", None) == 32768


def test_positions_a_published_config_already_counts() -> None:
    # gpt-oss-120b: yarn 4,096 x 32 = its stated 131,072; DeepSeek-R1: 4,096 x 40 = 163,840; Llama 3.2's 'llama3'
    # type is already counted (131,072)
    for name, model_type, want in [
        ("openai--gpt-oss-120b.json", "gpt_oss", 131072),
        ("deepseek-ai--DeepSeek-R1.json", "deepseek_v3", 163840),
        ("meta-llama--Llama-3.2-1B-Instruct.json", "llama", 131072),
    ]:
        text = _config(name)
        assert _limit(text, model_type, "0.19.0") == want, name
        assert _limit(text, model_type, "0.34.0") == want, name


def test_a_linear_factor_stretches_them_in_every_release() -> None:
    # lmsys/vicuna-7b-v1.5-16k config.json: max_position_embeddings 4096, rope_scaling {"factor": 4.0, "type": "linear"}
    text = {"max_position_embeddings": 4096, "rope_scaling": {"factor": 4.0, "type": "linear"}}
    assert _limit(text, "llama", "0.8.5") == _limit(text, "llama", "0.34.0") == 16384
    # Gemma 3's positions are already scaled (vLLM skips gemma3 model types)
    gemma = {"max_position_embeddings": 131072, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}
    assert _limit(gemma, "gemma3_text", "0.19.0") == 131072


def test_the_plan_follows_the_engines_rule(tmp_path: Path) -> None:
    config = _config("Qwen--Qwen2.5-1.5B-Instruct.json") | {"rope_scaling": QWEN25_YARN}
    path = sized_checkpoint(tmp_path / "q", config, 3_087_467_008)
    planned = plan_model(str(path), "h100", max_model_len=131072, engine_version="0.29.0")
    assert planned.max_model_len == 131072
    assert plan_model(str(path), "h100", engine_version="0.29.0").max_model_len == 131072  # vLLM's default too
    with pytest.raises(ConfigError, match=r"131072 exceeds the model's max_position_embeddings 32768; "):
        plan_model(str(path), "h100", max_model_len=131072, engine_version="0.30.0")
    with pytest.raises(ConfigError, match=r"262144 exceeds the model's 131,072 positions \(original_max_position"):
        plan_model(str(path), "h100", max_model_len=262144, engine_version="0.29.0")


def test_per_layer_type_rope_and_longrope_default() -> None:
    # nested rope_parameters (transformers 5, one per layer type): the factor of any scaled type stretches them all
    nested = {
        "max_position_embeddings": 32768,
        "rope_parameters": {
            "full_attention": {"rope_type": "linear", "factor": 8.0},
            "sliding_attention": {"rope_type": "default"},
        },
    }
    assert _limit(nested, "qwen3", "0.34.0") == 262144
    # LongRoPE (Phi-3-mini-128k-instruct: max_position_embeddings 131072, original 4096): its positions are already
    # scaled, and vLLM serves original_max_position_embeddings when no max_model_len is given
    phi = {
        "max_position_embeddings": 131072,
        "rope_scaling": {
            "type": "longrope",
            "original_max_position_embeddings": 4096,
            "long_factor": [1.0],
            "short_factor": [1.0],
        },
    }
    got = model_positions(phi, "phi3", "0.19.0")
    assert got is not None and (got.limit, got.default) == (131072, 4096)


@pytest.mark.parametrize(
    ("rope", "field"),
    [
        ({"type": "linear", "factor": 1e400}, "factor"),
        ({"type": "linear", "factor": 1e308}, "factor"),  # finite, but 32,768 x 1e308 is not: an internal error
        ({"type": "linear", "factor": 0}, "factor"),
        ({"type": "linear", "factor": "4"}, "factor"),
        ({"type": "linear", "factor": True}, "factor"),
        ({"type": "yarn", "factor": 4.0, "original_max_position_embeddings": -1}, "original_max_position_embeddings"),
        (
            {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": "32768"},
            "original_max_position_embeddings",
        ),
    ],
)
def test_a_rope_scale_that_sizes_nothing_is_one_line(tmp_path: Path, rope: dict, field: str) -> None:
    config = _config("Qwen--Qwen2.5-1.5B-Instruct.json") | {"rope_scaling": rope}
    path = sized_checkpoint(tmp_path / "q", config, 3_087_467_008)
    with pytest.raises(ConfigError, match=rf"rope_scaling\.{field}.*must be a positive"):
        plan_model(str(path), "h100", engine_version="0.29.0")


@pytest.mark.parametrize(
    ("rope", "refused"),
    [
        ({"rope_type": "yarn", "type": "linear", "factor": 4.0}, True),  # vLLM: 'Found conflicts between ...'
        ({"rope_type": "longrope", "type": "su", "long_factor": [1.0], "short_factor": [1.0]}, False),
        ({"rope_type": "default", "type": "mrope", "mrope_section": [16, 24, 24]}, False),
        ({"rope_type": "linear", "type": "linear", "factor": 2.0}, False),
    ],
)
def test_a_legacy_type_naming_another_rope_kind_is_refused_as_vllm_does(
    tmp_path: Path, rope: dict, refused: bool
) -> None:
    # vllm/transformers_utils/config.py patch_legacy_rope_type (0.16.0 and 0.34.0 sdists) raises ValueError on a
    # 'rope_type' and a legacy 'type' that differ, except su/longrope and mrope/default
    config = _config("Qwen--Qwen2.5-1.5B-Instruct.json") | {"rope_scaling": rope}
    path = sized_checkpoint(tmp_path / "q", config, 3_087_467_008)
    if refused:
        with pytest.raises(ConfigError, match=r"rope_scaling\.rope_type' 'yarn' conflicts with its legacy 'type'"):
            plan_model(str(path), "h100", max_model_len=4096)
    else:
        assert plan_model(str(path), "h100", max_model_len=4096).max_model_len == 4096


@pytest.mark.parametrize("rope", [{"rope_type": "yarn", "type": ["linear"]}, {"rope_type": {"a": 1}, "type": "yarn"}])
def test_a_rope_kind_that_is_not_a_string_is_one_config_error(tmp_path: Path, rope: dict) -> None:
    # the conflict check looked the (type, rope_type) pair up in a set: a list or object there was a TypeError
    config = _config("Qwen--Qwen2.5-1.5B-Instruct.json") | {"rope_scaling": rope | {"factor": 2.0}}
    path = sized_checkpoint(tmp_path / "q", config, 3_087_467_008)
    with pytest.raises(ConfigError, match=r"rope_scaling\.(rope_type|type)' must be a string, got"):
        plan_model(str(path), "h100", max_model_len=4096)


def test_positions_past_what_is_planned_ask_for_max_model_len(tmp_path: Path) -> None:
    config = _config("Qwen--Qwen2.5-1.5B-Instruct.json") | {
        "rope_scaling": {"type": "linear", "factor": 4096}
    }  # 32,768 x 4,096 > 2^26
    path = sized_checkpoint(tmp_path / "q", config, 3_087_467_008)
    with pytest.raises(ConfigError, match=r"the longest max_model_len planned; pass --max-model-len$"):
        plan_model(str(path), "h100")
    assert plan_model(str(path), "h100", max_model_len=4096).max_model_len == 4096


@pytest.mark.parametrize("value", ["1", "true", " True "])
def test_a_length_past_the_positions_is_planned_where_the_engine_is_told_to_allow_it(tmp_path: Path, value) -> None:
    # vllm/config/model.py _get_and_verify_max_len: above the derived length it raises 'To allow overriding this
    # maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1' unless envs.VLLM_ALLOW_LONG_MAX_MODEL_LEN, which
    # vllm/envs.py reads as os.environ.get(..., "0").strip().lower() in ("1", "true"); then it only logs a warning
    # and serves the length. `--set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1` puts it in the engine's environment, and the
    # plan refused the length all the same
    config = _config("Qwen--Qwen2.5-1.5B-Instruct.json")
    path = sized_checkpoint(tmp_path / "q", config, 3_087_467_008)
    sets = [f"VLLM_ALLOW_LONG_MAX_MODEL_LEN={value}"]
    planned = plan_model(str(path), "h100", max_model_len=65536, sets=sets)
    assert planned.max_model_len == 65536
    (said,) = [w.message for w in planned.warnings if w.code == "long-max-model-len"]
    assert said.startswith("max_model_len 65536 exceeds the model's max_position_embeddings 32768")


@pytest.mark.parametrize("value", ["0", "yes", "false"])
def test_the_length_stays_refused_where_vllm_reads_the_variable_as_off(tmp_path: Path, value) -> None:
    # 'yes' is none of ("1", "true"): vLLM refuses the length, and the refusal names the variable that allows it
    config = _config("Qwen--Qwen2.5-1.5B-Instruct.json")
    path = sized_checkpoint(tmp_path / "q", config, 3_087_467_008)
    with pytest.raises(ConfigError, match=r"exceeds the model's max_position_embeddings 32768; .*ALLOW_LONG_MAX_MODE"):
        plan_model(str(path), "h100", max_model_len=65536, sets=[f"VLLM_ALLOW_LONG_MAX_MODEL_LEN={value}"])
