"""A GPU fault the device runtime reports and then aborts on is a failed boot, read with its reason.

ROCm's runtime (ROCR-Runtime src/core/runtime/runtime.cpp, its VM fault handler; search-index file ids 1254024261 and
5138422984) prints 'Memory access fault by GPU node-%u (Agent handle: %p) on address %p%s. Reason: %s.' to stderr and
calls std::abort(): no Python traceback follows. tests/fixtures/bootlogs/gfx1151-granite4-h-350m-len32768-gpu-fault-
v0111rc2-rocm (ROCm/ROCm#5724, a Strix Halo on vLLM 0.11.1rc2) ends on that line, which read as 'no verdict: the log
ends before the engine said it was ready or why it did not start'."""

from __future__ import annotations

from pathlib import Path

from onechip.vllm.log_summary import summarize, verdict_line

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
LOG = BOOTLOGS / "gfx1151-granite4-h-350m-len32768-gpu-fault-v0111rc2-rocm.log"


def test_a_rocm_memory_access_fault_is_a_failed_boot_with_its_reason() -> None:
    summary = summarize(LOG.read_text(encoding="utf-8"), LOG.name)
    boot = summary.boot
    assert boot is not None and boot.outcome == "did not start"
    assert boot.cause is not None
    # the runtime's own reason, after 'Reason: '
    assert "GPU memory access fault" in boot.cause and "Page not present or supervisor privilege" in boot.cause
    assert verdict_line(boot).startswith("did not start")


def test_the_fault_line_is_kept_among_the_lines_shown() -> None:
    summary = summarize(LOG.read_text(encoding="utf-8"), LOG.name)
    assert any("Memory access fault by GPU node-1" in line.text for line in summary.lines)
