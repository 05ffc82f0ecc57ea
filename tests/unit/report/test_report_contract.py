"""The report reads files written from the real result models (BenchRun, BootRecord, CheckReport,
RunManifest, CostReport), so a renamed field in a schema shows up here rather than as a blank cell."""

from __future__ import annotations

import json
from pathlib import Path

from onechip.cost import estimate
from onechip.report import render_markdown, write_report
from onechip.schemas import (
    BenchConfig,
    BenchRun,
    BootEvent,
    BootRecord,
    CellResult,
    CheckReport,
    CheckResult,
    Dist,
    RunManifest,
)


def test_report_from_model_dumps(tmp_path: Path) -> None:
    run = tmp_path / "demo"
    run.mkdir()
    manifest = RunManifest(
        run_id="demo-1",
        created_at="2026-11-29T10:00:00+00:00",
        tool_version="0.1.0",
        python="3.12",
        host="box",
        command="demo --quick",
        chip="cpu",
        status="ok",
    )
    # DESIGN.md: the embedded default logs a 46,592-token KV cache and ~7.5 / ~24 tok/s at 1 / 4 clients.
    boot = BootRecord(
        engine="embedded-vllm-cpu",
        engine_version="0.32.0",
        model="smollm2-135m",
        ready_s=70.0,
        kv_cache_tokens=46592,
        max_concurrency=5.69,
        max_concurrency_context=8192,
        events=[BootEvent(name="process_start", t_s=0.0), BootEvent(name="ready", t_s=70.0)],
    )
    bench = BenchRun(
        tool_version="0.1.0",
        created_at="2026-11-29T10:05:00+00:00",
        config=BenchConfig(base_url="http://127.0.0.1:8000", contexts=[128], clients=[1, 4], output_tokens=32),
        cells=[
            CellResult(
                context_tokens=128,
                clients=1,
                status="ok",
                output_tok_per_s=7.5,
                per_stream_tok_per_s=7.5,
                cv_output_tok_per_s=0.03,
                ttft_ms=Dist(n=2, median=310.0),
            ),
            CellResult(
                context_tokens=128,
                clients=4,
                status="ok",
                output_tok_per_s=24.0,
                per_stream_tok_per_s=6.1,
                cv_output_tok_per_s=0.05,
                ttft_ms=Dist(n=8, median=520.0),
            ),
        ],
    )
    checks = CheckReport(
        base_url="http://127.0.0.1:8000",
        model="smollm2-135m",
        results=[CheckResult(domain="tool_calling", verdict="fail")],
    )
    cost = estimate("v5e-1", bench=bench, pricing="spot", today="2026-11-29", measured_on="cpu")
    for name, model in (
        ("run.json", manifest),
        ("boot.json", boot),
        ("summary.json", bench),
        ("checks.json", checks),
        ("cost.json", cost),
    ):
        (run / name).write_text(model.model_dump_json(), encoding="utf-8")

    md = render_markdown(run)
    assert "| engine | embedded-vllm-cpu 0.32.0 |" in md
    assert "| KV pool tokens | — | 46,592 |" in md
    assert "| 128 | 7.5 (CV 3%) | 24.0 (CV 5%) |" in md
    assert "| 128 | 310.0 | 520.0 |" in md  # median TTFT, ms to 0.1 (schemas.bench.ms_text)
    assert "| tool_calling | **fail** |" in md
    assert "measured on cpu, priced as v5e-1: the figures are hypothetical" in md
    (path,) = write_report(run, "serving-report")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert [s["output_tok_per_s"] for s in doc["throughput"]["sweep"]] == [7.5, 24.0]
