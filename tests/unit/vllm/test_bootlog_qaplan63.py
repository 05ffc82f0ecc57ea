"""Boot logs that broke what landed for issue 27 (qaplan63): a collect_env or container banner pasted before the log
was read as vLLM's version, and a second boot in one log took the first boot's architecture. The logs are real ones
of tests/fixtures/bootlogs (corpus.json names their sources), and the lines pasted before them are quoted from the
sources named beside each."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"

# vLLM 0.10.1.1's API server: 'vLLM API server version 0.10.1.1' (a100-qwen2-7b-util025-v01011, line 1)
_LOG_V01011 = (BOOTLOGS / "a100-qwen2-7b-util025-v01011.log").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "pasted",
    [
        # vLLM's bug template asks for collect_env's output above the log: 'CMake version : version 3.22.1'
        # (vllm-project/vllm#18946; vllm/collect_env.py prints cmake's own 'version X' after its label)
        "CMake version                : version 3.22.1\nPyTorch version              : 2.7.0+cu126\n",
        # the older collect_env layout ('CMake version: version 3.31.4', vllm/collect_env.py before 0.9)
        "CMake version: version 3.31.4\n",
        # NVIDIA's PyTorch container banner ('NVIDIA Release 25.01 (build 134983853)' / 'PyTorch Version
        # 2.6.0a0+ecf3bae', an NGC pytorch:25.01 pod's kubectl logs)
        "== PyTorch ==\n\nNVIDIA Release 25.01 (build 134983853)\nPyTorch Version 2.6.0a0+ecf3bae\n",
    ],
)
def test_a_banner_pasted_before_the_log_is_not_vllms_version(pasted: str) -> None:
    # vLLM prints its version as 'vLLM API server version X', 'vLLM server version X, serving model M' or the logo's
    # '█ ▀▄▀ █  version X' (vllm/entrypoints/utils.py log_version_and_model) and 'Initializing a V1 LLM engine (vX)':
    # another product's 'version X' before them was taken for it
    assert read_boot_log(pasted + _LOG_V01011, "vllm", "m").engine_version == "0.10.1.1"


def test_a_second_boot_in_one_log_takes_its_own_architecture() -> None:
    # two runs of the offline engine in one log (a notebook: LLM() of a Nemotron checkpoint at vLLM 0.19.1, then of
    # LLaVA-NeXT, which the engine refused): each run logs 'non-default args', then its ModelConfig's 'Resolved
    # architecture' (vllm/engine/arg_utils.py create_engine_config builds the model config first, then the draft's,
    # 0.8 - 0.34 sources), so the first architecture after a run's args is its model's; the first of the log was
    # kept, the earlier run's 'NemotronHForCausalLM' beside the later run's model
    text = "".join(
        (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
        for name in (
            "gpu94g-nemotron-cascade2-30b-nvfp4-kvfp8-len262144-v0191",
            "rtx5080-llava-v16-mistral-7b-len4096-refused-v0110",
        )
    )
    record = read_boot_log(text, "vllm", "m")
    assert record.logged["model"] == "llava-hf/llava-v1.6-mistral-7b-hf"  # rtx5080-... line 6, 'with config: model='
    assert record.logged["architecture"] == "LlavaNextForConditionalGeneration"  # rtx5080-... line 2
