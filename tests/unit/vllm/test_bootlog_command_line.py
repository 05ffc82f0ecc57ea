"""The command line a paste starts with, where no 'non-default args' line follows: the model and the memory flags read
with the engine's own argument rules (vllm/utils/argparse_utils.py FlexibleArgumentParser.parse_args, 0.34.0 sdist:
'--flag=value' and '--flag value', underscores in a flag's name made dashes, `vllm serve`'s positional model_tag and
its '--model' moved in front of the rest; vllm/engine/arg_utils.py add_cli_args: '--quantization' / '-q',
'--kv-cache-dtype'), and a later 'non-default args' line winning. The logs are real ones of tests/fixtures/bootlogs
(corpus.json names each source); the short lines are the engine's forms, not a log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"


def _read(name: str) -> Any:
    return read_boot_log((BOOTLOGS / f"{name}.log").read_text(encoding="utf-8"), "vllm", "m")


@pytest.mark.parametrize(
    ("name", "model"),
    [
        # '(.venv) root@run-...:~# vllm serve google/gemma-4-26B-A4B   --port 10000   --max-model-len 131072 ...'
        ("a100-gemma4-26b-a4b-len131072-eager", "google/gemma-4-26B-A4B"),
        # '`vllm serve Qwen3.5-27B --trust-remote-code --max-model-len 32768 ...`' (a Markdown code span)
        ("h20-qwen35-27b-len32768-dummy-v0190", "Qwen3.5-27B"),
        # '  vllm serve deepseek-ai/DeepSeek-V4-Pro --dtype auto -tp 8 \' (a wrapped command)
        ("mi300xx8-deepseek-v4-pro-tp8-len1048576-refused-rocm", "deepseek-ai/DeepSeek-V4-Pro"),
        # '# vllm serve /tmp/model/Qwen3-Coder-480B-A35B-Instruct-FP8 --served-model-name ... -dp=8 ...' (a root prompt)
        ("h20-qwen3-coder-480b-fp8-dp8-len262144-refused-v0101dev", "/tmp/model/Qwen3-Coder-480B-A35B-Instruct-FP8"),
        # gpustack's 'command: [vllm serve /var/lib/gpustack/cache/huggingface/shawnw3i/Qwen3.6-27B-AWQ-MTP ...'
        (
            "gpu24gx2-qwen36-27b-awq-mtp3-tp2-len262144-util082-v0271-gpustack",
            "/var/lib/gpustack/cache/huggingface/shawnw3i/Qwen3.6-27B-AWQ-MTP",
        ),
        # '$ docker run --gpus '"device=1"' ... vllm/vllm-openai:latest Qwen/Qwen3-32B \': the image's ENTRYPOINT is
        # ["vllm", "serve"] (docker/Dockerfile of the 0.28.0 - 0.34.0 sdists), so the word after it is the model_tag
        ("rtxpro6000-qwen3-32b-tp1-util0426-len32768-refused-v0271", "Qwen/Qwen3-32B"),
        # 'vllm serve meta-llama/Llama-3.1-8B-Instruct --num-scheduler-step 1 --served_model_name llama3.1-8b'
        ("w7900-llama31-8b-len131072-v064dev-rocm", "meta-llama/Llama-3.1-8B-Instruct"),
    ],
)
def test_the_model_of_the_command_a_paste_starts_with_is_read(name: str, model: str) -> None:
    assert _read(name).logged.get("model") == model


@pytest.mark.parametrize(
    ("line", "key", "value"),
    [
        (
            "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen2.5-7B-Instruct --port 8000",
            "model",
            "Qwen/Qwen2.5-7B-Instruct",
        ),
        ("vllm serve --model=Qwen/Qwen2.5-7B-Instruct -tp 2", "model", "Qwen/Qwen2.5-7B-Instruct"),
        ("    --model facebook/opt-125m \\", "model", "facebook/opt-125m"),  # a wrapped command's own line
        ("vllm serve Qwen/Qwen3-8B --kv_cache_dtype=fp8_e5m2", "kv_cache_dtype", "fp8_e5m2"),
        ("vllm serve Qwen/Qwen3-8B --kv-cache-dtype fp8", "kv_cache_dtype", "fp8"),
        ("vllm serve Qwen/Qwen3-8B --quantization fp8", "quantization", "fp8"),
        ("vllm serve Qwen/Qwen3-8B -q=awq_marlin", "quantization", "awq_marlin"),
        ("vllm serve Qwen/Qwen3-8B --max_model_len=16384", "max_model_len", "16384"),
        # a prose line naming the command reads no model: no word of it is a model reference
        ("To start it, run vllm serve with the flags below.", "model", None),
        ("vllm serve ${MODEL_PATH} \\", "model", None),  # a shell variable, not a model
    ],
)
def test_a_command_line_flag_is_read_as_the_engine_parses_it(line: str, key: str, value: str | None) -> None:
    assert read_boot_log(line + "\n", "vllm", "m").logged.get(key) == value


def test_a_later_non_default_args_line_wins_over_the_command() -> None:
    # vLLM's own line is what it parsed (arg_utils 'non-default args'), the command what the paste says was typed
    text = (
        "vllm serve Qwen/Qwen3-8B --max-model-len 8192 --kv-cache-dtype fp8 --quantization fp8\n"
        "INFO 05-01 10:00:02 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-4B', 'model': "
        "'Qwen/Qwen3-4B', 'max_model_len': 4096, 'kv_cache_dtype': 'auto', 'quantization': 'awq'}\n"
    )
    logged = read_boot_log(text, "vllm", "m").logged
    assert (logged["model"], logged["max_model_len"]) == ("Qwen/Qwen3-4B", "4096")
    assert (logged["kv_cache_dtype"], logged["quantization"]) == ("auto", "awq")


def test_fp8_on_the_command_line_is_the_fp8_kv_cache() -> None:
    record = read_boot_log("vllm serve Qwen/Qwen3-8B --kv-cache-dtype fp8_e4m3\n", "vllm", "m")
    assert record.fp8_kv_cache_dtype == "fp8_e4m3"


def test_an_abbreviated_flag_argparse_takes_is_read() -> None:
    # vllm-project/vllm#28228 (Kimi-Linear-48B-A3B AWQ on 2x RTX 3090, the command, verbatim):
    # '--tensor_parallel 2' is '--tensor-parallel' once FlexibleArgumentParser makes underscores dashes, a prefix
    # argparse expands to the one option it starts (ArgumentParser's allow_abbrev, True unless set; vLLM never sets it,
    # and '--tensor-parallel-size' is the only option so named in vllm/engine/arg_utils.py of the 0.34.0 sdist); the
    # issue's boot ran at TP 2
    text = (
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True VLLM_USE_V1=1 CUDA_VISIBLE_DEVICES=0,1 \\\n"
        "      vllm serve cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit \\\n"
        "      --port 8111--gpu-memory-utilization 0.95 --max_model_len 120000 --tensor_parallel 2 "
        "--enable_prefix_caching \\\n"
    )
    logged = read_boot_log(text, "vllm", "m").logged
    assert logged["model"] == "cyankiwi/Kimi-Linear-48B-A3B-Instruct-AWQ-4bit"
    assert (logged["tensor_parallel_size"], logged["max_model_len"]) == ("2", "120000")
    # '8111--gpu-memory-utilization' is one word, --port's value (no space before the flag): no utilization is read
    assert "gpu_memory_utilization" not in logged


@pytest.mark.parametrize(
    "text",
    [
        # `vllm bench serve` (vllm/entrypoints/cli/benchmark/serve.py, vllm.benchmarks.serve's arguments) and the script
        # before it (benchmarks/benchmark_serving.py) are clients of a running server: their --model is the name their
        # requests ask for (a --served-model-name, or a path the server was given), not what a server loaded
        "vllm bench serve --model Qwen/Qwen3-4B-served --num-prompts 10\n",
        "python3 benchmarks/benchmark_serving.py --backend vllm --model=Qwen/Qwen3-4B-served\n",
        # the same command wrapped with shell continuations, as a paste shows it
        "vllm bench serve \\\n  --backend vllm \\\n  --model Qwen/Qwen3-4B-served \\\n  --num-prompts 10\n",
    ],
)
def test_a_serving_benchmarks_model_is_not_the_servers(text: str) -> None:
    args = (
        "INFO 05-01 10:00:02 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-4B', 'model': "
        "'Qwen/Qwen3-4B', 'max_model_len': 4096}\n"
    )
    assert read_boot_log(text, "vllm", "m").logged.get("model") is None
    # pasted after the server's log, it no longer replaces the model the server's own line names
    assert read_boot_log(args + text, "vllm", "m").logged.get("model") == "Qwen/Qwen3-4B"
    # and a server's command wrapped the same way is still read
    served = text.replace("vllm bench serve", "vllm serve").replace(
        "benchmarks/benchmark_serving.py", "-m vllm.entrypoints.openai.api_server"
    )
    assert read_boot_log(served, "vllm", "m").logged.get("model") == "Qwen/Qwen3-4B-served"


@pytest.mark.parametrize(
    "line",
    [
        # options before `vllm serve`'s positional model_tag: argparse takes each option's value with it and the first
        # other word as the model (flags that take a value and switches as vLLM 0.34.0's parser declares them:
        # catalog/vllm_flags.json switches, scripts/gen_vllm_flags.py)
        "vllm serve --tokenizer meta-llama/Llama-3.1-8B-Instruct Qwen/Qwen3-8B --max-model-len 4096",
        "vllm serve --served-model-name my-model Qwen/Qwen3-8B",
        "vllm serve --download-dir /data/hf --revision 3a2b1c Qwen/Qwen3-8B",
        "vllm serve --chat-template ./tool_chat.jinja Qwen/Qwen3-8B --enable-auto-tool-choice",
        "vllm serve --served_model_name=my-model --trust-remote-code --enforce-eager Qwen/Qwen3-8B",
        'vllm serve --speculative-config \'{"method": "mtp", "num_speculative_tokens": 2}\' Qwen/Qwen3-8B',
        "docker run --gpus all vllm/vllm-openai:v0.34.0 --tokenizer other/tok Qwen/Qwen3-8B",
        # a switch of an older release that 0.34.0 dropped (--enable-reasoning, 0.8 - 0.9's reasoning switch) is
        # unknown to the switches list, but argparse never takes an option as a value: it takes none here (qa64a read
        # the model as 'deepseek_r1')
        "vllm serve --enable-reasoning --reasoning-parser deepseek_r1 Qwen/Qwen3-8B",
        # a negative number is a value, not an option (argparse _negative_number_matcher)
        "vllm serve --max-model-len -1 Qwen/Qwen3-8B",
    ],
)
def test_options_before_the_positional_model_are_read_with_their_values(line: str) -> None:
    assert read_boot_log(line + "\n", "vllm", "m").logged.get("model") == "Qwen/Qwen3-8B"


def test_a_switch_before_a_placeholder_names_no_model() -> None:
    # '--enforce-eager' takes no value, so the word after it is the positional: a shell variable, not a model
    assert "model" not in read_boot_log("vllm serve --enforce-eager ${MODEL} --port 8000\n", "vllm", "m").logged


def test_the_model_of_a_command_continued_over_lines_is_read() -> None:
    # the shell joins a line ending in '\\' with the next (bash's line continuation), so `vllm serve \` with the model
    # on the next line is `vllm serve M ...`, as users paste a long command (vLLM's docs write it so)
    text = (
        "$ vllm serve \\\n"
        "    --tensor-parallel-size 2 \\\n"
        "    meta-llama/Llama-3.1-8B-Instruct \\\n"
        "    --kv-cache-dtype fp8\n"
    )
    logged = read_boot_log(text, "vllm", "m").logged
    assert (logged.get("model"), logged.get("tensor_parallel_size")) == ("meta-llama/Llama-3.1-8B-Instruct", "2")


@pytest.mark.parametrize(
    ("flag", "key", "value"),
    [
        ('--max-model-len="8192"', "max_model_len", "8192"),
        ("--max-num-seqs '64'", "max_num_seqs", "64"),
        ('--tensor-parallel-size="2"', "tensor_parallel_size", "2"),
        ("-tp '2'", "tensor_parallel_size", "2"),
        ("--gpu-memory-utilization='0.85'", "gpu_memory_utilization", "0.85"),
    ],
)
def test_a_quoted_number_is_the_number_the_shell_passes(flag: str, key: str, value: str) -> None:
    # the shell removes the quotes before vLLM's parser sees the word (POSIX quote removal), so '--max-model-len="8192"'
    # reaches FlexibleArgumentParser as '--max-model-len=8192'
    assert read_boot_log(f"vllm serve Qwen/Qwen3-8B {flag}\n", "vllm", "m").logged.get(key) == value


def test_the_command_typed_before_a_restart_is_the_restarts() -> None:
    # a real 0.19.0 boot that came up, pasted twice, each after the command that started it; without its 'non-default
    # args' line the second boot's max_num_seqs is only on its own command (the log is read from its last boot on)
    log = "".join(
        line
        for line in (BOOTLOGS / "h100-llama31-8b-kvfp8-v0190.log").read_text(encoding="utf-8").splitlines(True)
        if "non-default args" not in line
    )
    text = (
        "$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 8\n" + log
        + "$ vllm serve meta-llama/Llama-3.1-8B-Instruct --max-num-seqs 16\n" + log
    )  # fmt: skip
    assert read_boot_log(text, "vllm", "m").logged.get("max_num_seqs") == "16"


@pytest.mark.parametrize(
    ("value", "tokens"),
    [
        # vLLM's human_readable_int_or_auto, the type of --max-model-len (vllm/utils/argparse_utils.py and
        # engine/arg_utils.py of the 0.34.0 sdist): 'k' decimal (1,000), 'K' binary (1,024), decimals with a decimal
        # multiplier only
        ("32k", "32000"),
        ("32K", "32768"),
        ("25.6k", "25600"),
        ("1M", "1048576"),
        ("1.5K", None),  # 'Decimals are not allowed with binary suffixes': the engine refuses it, so no length
    ],
)
def test_a_human_readable_max_model_len_is_the_number_vllm_reads(value: str, tokens: str | None) -> None:
    text = f"vllm serve Qwen/Qwen3-8B --max-model-len {value}\n"
    assert read_boot_log(text, "vllm", "m").logged.get("max_model_len") == tokens
