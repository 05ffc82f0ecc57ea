"""vLLM's start-up checks that refuse a deployment before anything loads, read as a verdict that says what to change
(vllm/bootlog.failure_cause), from the real lines users pasted (tests/fixtures/bootlogs, corpus.json names each
source): the free-memory check of vllm/v1/worker/utils.py request_memory and the head-count check of
vllm/config/model.py verify_with_parallel_config (both read in the 0.33.0 sdist)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.vllm.bootlog import failure_cause, read_boot_log
from onechip.vllm.log_summary import boot_verdict

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"


def _log(name: str) -> str:
    return (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")


# request_memory raises where free < ceil(total x utilization), so the highest utilization the card's free memory at
# start still covers is free / total, rounded down to the flag's two decimals: 48.48 / 178.35 = 0.2718 -> 0.27,
# 41.24 / 178.35 = 0.2312 -> 0.23, 16.17 / 44.39 = 0.3643 -> 0.36 (each pair as the line prints it)
@pytest.mark.parametrize(
    ("name", "said", "highest"),
    [
        # a Markdown code block, the line hard-wrapped after 'is less' (a verl note on 8x B200)
        (
            "b200-qwen3-4b-instruct-2507-util070-free-memory-refused-v0191",
            "48.48 of 178.35 GiB free at start, less than --gpu-memory-utilization 0.7 asks (124.85 GiB)",
            "0.27",
        ),
        # a Markdown quote of inline code, wrapped inside it: the closing backtick is no part of the figures
        (
            "b200-gemma4-31b-util093-free-memory-refused",
            "41.24 of 178.35 GiB free at start, less than --gpu-memory-utilization 0.93 asks (165.87 GiB)",
            "0.23",
        ),
        # the message alone in inline code, without 'ValueError:' (a training note on L40S cards)
        (
            "l40s-qwen25-coder-14b-util060-free-memory-refused",
            "16.17 of 44.39 GiB free at start, less than --gpu-memory-utilization 0.6 asks (26.64 GiB)",
            "0.36",
        ),
    ],
)
def test_the_free_memory_check_says_the_utilization_that_passes(name: str, said: str, highest: str) -> None:
    cause = failure_cause(_log(name))
    assert cause is not None and said in cause
    assert f"at most {highest}" in cause
    assert "`" not in cause
    assert boot_verdict(read_boot_log(_log(name), "vllm", "m")).outcome == "did not start"


def test_the_head_count_check_names_the_sizes_that_divide() -> None:
    # 'Total number of attention heads (40) must be divisible by tensor parallel size (3)' (3x L40S, Qwen2.5-Coder-14B):
    # the TP sizes that pass are the divisors of the 40 heads
    name = "l40sx3-qwen25-coder-14b-tp3-heads-refused"
    cause = failure_cause(_log(name))
    assert cause is not None
    assert "--tensor-parallel-size 3 does not divide the model's 40 attention heads" in cause
    assert "1, 2, 4, 5, 8, 10, 20 or 40" in cause
    assert boot_verdict(read_boot_log(_log(name), "vllm", "m")).outcome == "did not start"


def test_the_checks_read_behind_vllms_own_head() -> None:
    # as vLLM's EngineCore logs the exception under its traceback ('ERROR ... [core.py:N] ValueError: ...')
    line = (
        "(EngineCore_DP0 pid=1) ERROR 07-10 10:00:00 [core.py:708] ValueError: Free memory on device cuda:0 "
        "(7.19/44.39 GiB) on startup is less than desired GPU memory utilization (0.82, 36.4 GiB). Decrease GPU memory "
        "utilization or reduce GPU memory used by other processes."
    )
    cause = failure_cause(line)
    assert cause is not None and "at most 0.16" in cause  # 7.19 / 44.39 = 0.162


def _raise_timeout(signum: int, frame: object) -> None:
    raise TimeoutError("the verdict took more than 5 s")


@pytest.mark.parametrize(
    ("line", "said"),
    [
        # a total of 0 GiB (a mangled paste, or a device that reports none): no utilization passes, nothing to divide
        (
            "ValueError: Free memory on device (0.0/0.0 GiB) on startup is less than desired GPU memory utilization "
            "(0.9, 0.0 GiB).",
            "0.0 of 0.0 GiB free at start",
        ),
        # a figure cut to its dot ('(./44.39 GiB)': a paste that lost the digits) is no number
        (
            "ValueError: Free memory on device (./44.39 GiB) on startup is less than desired GPU memory utilization "
            "(0.9, 40.0 GiB).",
            None,
        ),
    ],
)
def test_the_free_memory_check_of_figures_it_cannot_divide_is_a_verdict_not_a_crash(line: str, said: str | None):
    cause = failure_cause(line)  # a ZeroDivisionError / ValueError (float('.')) before: 'internal error', exit 1
    if said is None:
        assert cause is None or "at most" not in cause
    else:
        assert cause is not None and said in cause and "at most" not in cause


def test_the_head_count_check_of_zero_heads_is_a_verdict_not_a_crash() -> None:
    # 0 heads has no divisor to list (an IndexError before: 'internal error', exit 1)
    cause = failure_cause(
        "ValueError: Total number of attention heads (0) must be divisible by tensor parallel size (4)."
    )
    assert cause is not None and "--tensor-parallel-size 4 does not divide the model's 0 attention heads" in cause


def test_the_head_count_check_of_a_huge_count_answers_at_once() -> None:
    # the divisors were found by trying every number up to the count: 10**18 heads (no model's; a mangled paste)
    # never answered. SIGALRM bounds the test itself at 5 s.
    import signal

    old = signal.signal(signal.SIGALRM, _raise_timeout)
    signal.alarm(5)
    try:
        cause = failure_cause(
            f"ValueError: Total number of attention heads ({10**18}) must be divisible by tensor parallel size (7)."
        )
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert cause is not None and f"does not divide the model's {10**18} attention heads" in cause


def test_an_allocation_larger_than_the_whole_card_is_not_told_to_lower_the_utilization() -> None:
    # torch's OOM message (c10/cuda/CUDACachingAllocator.cpp: 'Tried to allocate X. GPU N has a total capacity of Y of
    # which Z is free.'): where X is more than Y, no --gpu-memory-utilization can make room for it; the tensor is sized
    # by the deployment (tests/fixtures/bootlogs/rocm80gib-qwen38-27b-len262144-mmprofile-oom-v01dev: 256 GiB on an
    # 80 GiB card, vLLM's multimodal encoder profiling batch at --max-model-len 262144)
    huge = (
        "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 256.00 GiB. GPU 0 has a total capacity of 80.00 "
        "GiB of which 25.38 GiB is free."
    )
    cause = failure_cause(huge)
    assert cause is not None
    assert "256.00 GiB" in cause and "80.00 GiB" in cause
    assert "lower --gpu-memory-utilization" not in cause
    # an allocation that fits the card but not what is free keeps the usual advice
    small = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.72 GiB. GPU 0 has a total capacity of 22.06 "
        "GiB of which 947.44 MiB is free."
    )
    assert failure_cause(small) == (
        "the accelerator ran out of memory: lower --gpu-memory-utilization or --max-model-len, or re-plan"
    )


def test_an_allocation_larger_than_the_card_in_torch_2_0s_words_is_read_so() -> None:
    # torch 2.0 and before, which V0 vLLM ran on, wrote the OOM as 'Tried to allocate 36.00 MiB (GPU 0; 7.93 GiB total
    # capacity; 130.35 MiB already allocated; ...)' (a real message, quoted in inha15/Camera_YOLOv5-HJ
    # E2E_Camera/scripts/clean_cache.py): the same two figures, so the same rule
    huge = (
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 128.00 GiB (GPU 0; 79.35 GiB total "
        "capacity; 14.20 GiB already allocated; 63.84 GiB free; 14.52 GiB reserved in total by PyTorch)"
    )
    cause = failure_cause(huge)
    assert cause is not None and "128.00 GiB" in cause and "79.35 GiB" in cause, cause
    assert "lower --gpu-memory-utilization" not in cause
    small = huge.replace("128.00 GiB (GPU", "36.00 MiB (GPU")
    assert failure_cause(small) == (
        "the accelerator ran out of memory: lower --gpu-memory-utilization or --max-model-len, or re-plan"
    )


def test_weights_that_do_not_load_are_not_told_to_lower_the_utilization_or_the_length() -> None:
    # vLLM 0.19.0 gpu_model_runner.py load_model: the OOM came while building the model's parameters, which no
    # --gpu-memory-utilization or --max-model-len sizes (tests/fixtures/bootlogs r9700x2-llama-pllum-70b-base-bf16-
    # tp2-len8192-eager-load-oom-v0190-rocm: 65.7 GiB of bf16 weights a rank on a 31.86 GiB card)
    record = read_boot_log(_log("r9700x2-llama-pllum-70b-base-bf16-tp2-len8192-eager-load-oom-v0190-rocm"), "vllm", "m")
    assert record.failure_cause is not None
    assert "loading the weights" in record.failure_cause and "raise --tensor-parallel-size" in record.failure_cause
    assert "lower --gpu-memory-utilization" not in record.failure_cause
