"""What a pre-quantized bitsandbytes checkpoint needs on vLLM's command, release by release (vllm/engine/arg_utils.py
of each sdist read): 0.5.4 - 0.8.1 load it only with --quantization bitsandbytes and --load-format bitsandbytes
together (create_engine_config raises for either alone; with neither the default loader meets the quant-state
tensors: "KeyError: 'layers.0.mlp.down_proj.weight.absmax'", vllm-project/vllm issue #11010, 0.6.6.post1); 0.8.2 -
0.8.3 set the load format from --quantization bitsandbytes (create_load_config); 0.8.4 on set both from the model
config. 0.5.0 - 0.5.3.post1 load none: BitsAndBytesConfig.from_config asks the quantization_config for
adapter_name_or_path ('Cannot find any of ['adapter_name_or_path'] in the model's quantization config')."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_quantization import LLAMA, llama_layout

from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.vllm import flags


def _bnb4(tmp_path: Path) -> str:
    quant = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    return str(llama_layout(tmp_path / "bnb4", {**LLAMA, "quantization_config": quant}))


def _command(tmp_path: Path, version: str) -> dict[str, str | None]:
    plan = plan_model(_bnb4(tmp_path), "h100", max_model_len=8192, engine_version=version)
    return {f.flag: f.value for f in flags.plan_flags(plan)}


@pytest.mark.parametrize(
    ("version", "quantization", "load_format"),
    [
        ("0.5.4", "bitsandbytes", "bitsandbytes"),
        ("0.6.2", "bitsandbytes", "bitsandbytes"),
        ("0.8.1", "bitsandbytes", "bitsandbytes"),
        ("0.8.2", "bitsandbytes", None),
        ("0.8.3", "bitsandbytes", None),
        ("0.8.4", None, None),
        ("0.27.1", None, None),
    ],
)
def test_the_command_carries_what_the_release_needs_to_load_it(
    tmp_path: Path, version: str, quantization: str | None, load_format: str | None
) -> None:
    command = _command(tmp_path, version)
    assert command.get("--quantization") == quantization and command.get("--load-format") == load_format, command


def test_the_settings_say_why_and_that_the_checkpoint_asks_it(tmp_path: Path) -> None:
    plan = plan_model(_bnb4(tmp_path), "h100", max_model_len=8192, engine_version="0.7.3")
    quantization, load_format = plan.serve.quantization, plan.serve.load_format
    assert quantization is not None and quantization.source == "model" and "0.8.4" in quantization.reason
    assert load_format is not None and load_format.source == "model"
    assert "'bitsandbytes' load format" in load_format.reason


def test_an_unquantized_checkpoint_gets_neither(tmp_path: Path) -> None:
    plan = plan_model(str(llama_layout(tmp_path / "bf16", LLAMA)), "h100", max_model_len=8192, engine_version="0.7.3")
    assert plan.serve.quantization is None and plan.serve.load_format is None


def test_a_release_that_loads_no_prequantized_checkpoint_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        plan_model(_bnb4(tmp_path), "h100", max_model_len=8192, engine_version="0.5.3.post1")
    said = str(info.value)
    assert "\n" not in said and "adapter_name_or_path" in said and "0.5.4 or later" in said, said
