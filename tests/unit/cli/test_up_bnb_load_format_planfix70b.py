"""`up --set` that takes a pre-quantized bitsandbytes checkpoint's loader flags away on a release that needs them
(planner.core.BNB_FLAGS): vLLM 0.5.4 - 0.8.1's EngineArgs.create_load_config raises when --quantization bitsandbytes
and --load-format bitsandbytes do not go together ("BitsAndBytes quantization and QLoRA adapter only support
'bitsandbytes' load format, but got auto"; "BitsAndBytes load format and QLoRA adapter only support 'bitsandbytes'
quantization, but got None": vllm/engine/arg_utils.py of the 0.5.4, 0.6.1.post2, 0.8.1 sdists), and 0.8.2 - 0.8.3
without --quantization bitsandbytes take the default loader, which fails on the quant-state tensors (vLLM issue
#11010). Said in one line before vLLM says it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, planner_accuracy_module

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))


def _bnb4(tmp_path: Path) -> str:
    """A header-only Llama-3.1-8B layout with a bitsandbytes NF4 quantization_config."""
    config = {**LLAMA, "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}
    accuracy = planner_accuracy_module()
    accuracy.write_layout(tmp_path / "bnb4", config, accuracy.llama_layout(config))
    return str(tmp_path / "bnb4")


def _up(run, tmp_path: Path, version: str, *sets: str) -> str:
    argv = ["up", "--engine", "vllm-docker", "--model", _bnb4(tmp_path), "--chip", "h100", "--engine-version", version]
    code, out, err = run(*argv, "--dry-run", *(a for s in ("max-model-len=8192", *sets) for a in ("--set", s)))
    assert code == 0 and "Traceback" not in err, err
    return " ".join((out + err).split())


@pytest.mark.parametrize(
    ("version", "item", "said"),
    [
        ("0.7.3", "load-format=auto", "only support 'bitsandbytes' load format, but got auto"),
        ("0.5.4", "load-format=", "only support 'bitsandbytes' load format, but got auto"),
        ("0.8.1", "quantization=", "only support 'bitsandbytes' quantization, but got None"),
        ("0.8.3", "quantization=", "the default loader fails on its quant-state tensors"),
    ],
)
def test_a_set_that_takes_the_bnb_loader_away_is_said_in_one_line(
    run, tmp_path: Path, version: str, item: str, said: str
) -> None:
    text = _up(run, tmp_path, version, item)
    assert said in text, text
    assert text.count(said) == 1


@pytest.mark.parametrize(("version", "item"), [("0.8.2", "load-format=auto"), ("0.8.4", "load-format=auto")])
def test_a_release_that_sets_the_loader_itself_is_not_warned(run, tmp_path: Path, version: str, item: str) -> None:
    # 0.8.2 - 0.8.3: create_load_config sets load_format 'bitsandbytes' from --quantization bitsandbytes; 0.8.4 on:
    # create_engine_config sets both from the checkpoint (vllm/engine/arg_utils.py of those sdists)
    text = _up(run, tmp_path, version, item)
    assert "bitsandbytes' load format" not in text and "quant-state" not in text, text


def test_a_quantization_given_by_hand_still_needs_the_load_format(run, tmp_path: Path) -> None:
    text = _up(run, tmp_path, "0.7.3", "quantization=bitsandbytes", "load-format=auto")
    assert text.count("only support 'bitsandbytes' load format, but got auto") == 1, text
