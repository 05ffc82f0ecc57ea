"""A load-OOM boot's summary gives one piece of advice (helper qa69b, 2026-12-07): its verdict says the weights do
not fit the card whatever --gpu-memory-utilization or --max-model-len (corpus69d), but the trap line under it, the
generic out-of-memory one that 'HIP out of memory' matched, said to lower those two: advice that cannot help a load
that builds every parameter on the card before any utilization applies (tests/fixtures/bootlogs
r9700x2-llama-pllum-70b-*-bf16-tp2-len8192-eager-load-oom-v0190-rocm)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.vllm.log_summary import summarize

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
LOAD_OOM = sorted(BOOTLOGS.glob("*load-oom*.log"))


@pytest.mark.parametrize("path", LOAD_OOM, ids=lambda p: p.name)
def test_a_load_oom_summary_names_one_cause_and_no_advice_against_it(path: Path) -> None:
    summary = summarize(path.read_text(encoding="utf-8"), path.name)
    assert summary.boot is not None and "loading the weights" in (summary.boot.cause or "")
    assert summary.traps == [summary.boot.cause]  # the verdict's cause, said once
    assert not any("lower --gpu-memory-utilization" in (line.trap or "") for line in summary.lines)


def test_the_generic_out_of_memory_trap_stays_for_a_profiling_oom() -> None:
    # an OOM after the load (the profiling run's, the sampler warm-up's) is bounded by the utilization and the length
    line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
    assert summarize(line + "\n", "x").traps == [
        "out of accelerator memory: lower --gpu-memory-utilization or --max-model-len, or re-plan"
    ]


def test_three_load_oom_boots_are_read() -> None:
    assert len(LOAD_OOM) == 3
