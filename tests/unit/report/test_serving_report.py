"""The serving-report document: its JSON Schema is generated from the pydantic model, the accelerator
count comes from the plan, a missing price or throughput is null with a reason (never "$0"), and the
report shows the serve command the engine ran (or says it only has the planner's flags)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from seed_run_files import seed_files, write_run

from onechip.report import read_run, render_markdown, write_report
from onechip.report.serving_report import SCHEMA, build, export
from onechip.schemas import ServeCommand, ServeFlag, ServeTarget
from onechip.schemas.serving_report import ServingReport

SHELL = "vllm serve google/gemma-4-E2B-it --max-model-len 32768 --enable-auto-tool-choice --tool-call-parser gemma4"


def _serving_report(tmp_path: Path, files: dict[str, Any], name: str = "r") -> dict[str, Any]:
    (path,) = write_report(write_run(tmp_path / name, files), "serving-report")
    return json.loads(path.read_text(encoding="utf-8"))


def test_schema_is_generated_from_the_model() -> None:
    assert SCHEMA == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **ServingReport.model_json_schema(mode="serialization"),
    }
    assert SCHEMA["$id"] == "https://onechip.dev/schemas/serving-report-1.4.json"
    assert SCHEMA["required"] == [
        "schema_version", "run", "hardware", "model", "software", "throughput", "capabilities", "memory",
        "startup", "cost",
    ]  # fmt: skip
    assert SCHEMA["additionalProperties"] is False


def test_schema_can_be_regenerated_from_the_command_line() -> None:
    printed = subprocess.run(
        [sys.executable, "-m", "onechip.report.serving_report"], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(printed) == SCHEMA


def test_an_export_round_trips_through_the_model(seed_run: Path) -> None:
    doc = export(read_run(seed_run))
    assert ServingReport.model_validate(doc).model_dump(mode="json") == doc


@pytest.mark.parametrize(
    ("chip", "tensor_parallel_size", "count", "source"),
    [
        ("v5e-1", 1, 1, "plan tensor_parallel_size"),
        ("h100", 4, 4, "plan tensor_parallel_size"),  # catalog h100 is one GPU; the plan used four
        ("v5e-4", 1, 4, "chips of v5e-4 in the accelerator catalog"),  # a v5e-4 slice bills four chips
    ],
)
def test_accelerator_count_comes_from_the_plan(
    tmp_path: Path, chip: str, tensor_parallel_size: int, count: int, source: str
) -> None:
    files = seed_files()
    files["plan.json"].update(chip=chip, tensor_parallel_size=tensor_parallel_size)
    files["run.json"]["chip"] = chip
    doc = _serving_report(tmp_path, files)
    assert doc["hardware"]["accelerator_count"] == count
    assert doc["hardware"]["accelerator_count_source"].startswith(source)


def test_accelerator_count_without_a_plan(tmp_path: Path) -> None:
    files = seed_files()
    del files["plan.json"]
    files["run.json"]["chip"] = "v5e-4"
    assert _serving_report(tmp_path, files, "a")["hardware"]["accelerator_count"] == 4
    only_bench = {"summary.json": seed_files()["summary.json"]}
    hardware = _serving_report(tmp_path, only_bench, "b")["hardware"]
    assert hardware["accelerator_count"] is None
    assert hardware["accelerator_count_source"] == "unknown: the run has no plan and no known chip"


def test_a_bench_run_without_run_json_names_the_client_that_measured_it(tmp_path: Path) -> None:
    """`bench` writes no run.json; its summary.json names the client (BenchRun.client), which report.md's host and
    python rows show: serving-report.json's hardware.host, "the client machine that measured the run", said null."""
    files = {"summary.json": seed_files()["summary.json"]}
    files["summary.json"]["client"] = {"host": "bench-box", "python": "3.11.7", "cpus": 2}  # as bench.runner writes it
    host = _serving_report(tmp_path, files)["hardware"]["host"]
    assert host == {"name": "bench-box", "python": "3.11.7", "cpus": 2}


def test_a_run_without_cost_has_null_cost_with_the_reason(tmp_path: Path) -> None:
    files = seed_files()
    del files["cost.json"]
    doc = _serving_report(tmp_path, files)
    assert doc["cost"] == {
        "per_m_output_tokens": [],
        "reason": "no cost.json in this run (onechip cost --run DIR --write)",
    }
    assert doc["hardware"]["pricing"] == []


def test_a_cost_without_throughput_says_why_and_never_prints_zero(tmp_path: Path) -> None:
    files = seed_files()
    files["cost.json"].update(lines=[], output_tok_per_s=None, warnings=["the bench summary has no 'ok' cell"])
    for cell in files["cost.json"]["cells"]:
        cell["usd_per_mtok"] = {}
    doc = _serving_report(tmp_path, files)
    assert doc["cost"]["per_m_output_tokens"] == []
    assert doc["cost"]["reason"] == "nothing priced per token: the bench summary has no 'ok' cell"
    cost_md = render_markdown(tmp_path / "r").split("## Cost", 1)[1].split("## Boot", 1)[0]
    assert not re.search(r"\$0(\.0+)?(?![\d.])", cost_md) and "| 8,192 | 16 | 399.6 |" in cost_md


def test_a_cell_without_throughput_is_null_with_a_reason(tmp_path: Path) -> None:
    files = seed_files()
    cell = files["summary.json"]["cells"][0]
    del cell["output_tok_per_s"]
    doc = _serving_report(tmp_path, files)
    sweep = doc["throughput"]["sweep"][0]
    assert sweep["output_tok_per_s"] is None and sweep["reason"] == "no throughput recorded for this ok cell"
    # The failed and infeasible cells keep their own reasons.
    assert [s["reason"] for s in doc["throughput"]["sweep"] if s["status"] != "ok"] == [
        "64 x 8,192 tokens exceeds the 321,344-token KV pool",
        "connection reset",
    ]


def test_a_cell_with_failed_requests_says_how_many_and_its_e2e(tmp_path: Path) -> None:
    """A cell where 4 of 20 measured requests failed (HTTP 500s: their figures are over the 16 that answered) says
    so in the sweep, with its E2E latency beside TTFT and TPOT: the export left out both, so a reader of
    serving-report.json saw a clean cell."""
    files = seed_files()
    cell = files["summary.json"]["cells"][0]
    e2e = {"n": 16, "mean": 241.5, "median": 241.0, "p90": 244.0, "p99": 246.0}  # TTFT 100 ms + 7 x 20 ms ITL
    cell.update(requests_sent=20, requests_ok=16, requests_failed=4, first_error="HTTP 500: boom", e2e_ms=e2e)
    sweep = _serving_report(tmp_path, files)["throughput"]["sweep"][0]
    assert (sweep["requests_sent"], sweep["requests_failed"]) == (20, 4)
    assert sweep["e2e_ms"] == {k: e2e[k] for k in ("mean", "median", "p90", "p99")}


def _serve_command() -> dict[str, Any]:
    command = ServeCommand(
        target=ServeTarget(kind="vllm"),
        model="google/gemma-4-E2B-it",
        served_name="google/gemma-4-E2B-it",
        flags=[
            ServeFlag(flag="--max-model-len", value="32768", reason="agent context"),
            ServeFlag(flag="--enable-auto-tool-choice", reason="agents call tools", origin="family"),
            ServeFlag(flag="--tool-call-parser", value="gemma4", reason="Gemma 4 tool-call format", origin="family"),
        ],
        argv=SHELL.split(),
        shell=SHELL,
    )
    return command.model_dump(mode="json")


def test_the_report_shows_the_serve_command_that_ran(tmp_path: Path) -> None:
    files = seed_files()
    files["plan.json"]["serve_command"] = _serve_command()
    run = write_run(tmp_path / "with-command", files)
    assert read_run(run).problems == []
    md = render_markdown(run)
    assert f"The command the engine ran:\n\n```sh\n{SHELL}\n```" in md
    assert "| `--tool-call-parser gemma4` | Gemma 4 tool-call format |" in md
    assert "recommended flags" not in md
    (page,) = write_report(run, "html")
    assert f"<pre><code>{SHELL}</code></pre>" in page.read_text(encoding="utf-8")
    software = build(read_run(run))["software"]
    assert software["serve_command"] == SHELL and software["serve_args_source"] == "serve_command"
    assert software["serve_args"] == ["--max-model-len 32768", "--enable-auto-tool-choice", "--tool-call-parser gemma4"]


def test_an_older_run_says_its_flags_are_only_the_planners(seed_run: Path) -> None:
    md = render_markdown(seed_run)
    assert "the flags of the plan's own serve settings (plan.json `serve`), not necessarily the command" in md
    assert "| `--max-model-len 32768` | agent context |" in md
    software = build(read_run(seed_run))["software"]
    assert software["serve_args_source"] == "plan" and software["serve_command"] is None


def test_the_boot_command_is_shown_when_no_serve_command_was_recorded(tmp_path: Path) -> None:
    files = seed_files()
    files["boot.json"]["command"] = ["vllm", "serve", "google/gemma-4-E2B-it", "--max-model-len", "32768"]
    md = render_markdown(write_run(tmp_path / "boot-cmd", files))
    assert "The launch command recorded at boot (boot.json):\n\n```sh\nvllm serve google/gemma-4-E2B-it" in md
