"""A user's whole workflow chained, each command handed another's file (helper workflow64, 2026-12-06): one
regression test per finding, each failing before its fix."""

from __future__ import annotations

import json

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")

# vLLM's JSON logging writes one record a line with a 'message' (vllm/logging_utils/formatter.py JSON_FORMAT,
# 0.34): such a file is a log, read as the text lines vLLM would print (bootlog._json_record)
JSON_LOG_RECORD = {"asctime": "2026-12-06 23:23:49", "levelname": "INFO", "message": "vLLM API server version 0.32.0"}


def _run_files(tmp_path, plan_text: str) -> dict[str, str]:
    """Files onechip itself writes, none a log: `plan --json`'s plan (indented), a bench run's summary.json (one
    indented object) and a line of its requests.jsonl (a compact object with no 'message')."""
    files = {
        "plan.json": plan_text,
        "summary.json": json.dumps({"schema_version": "1", "cells": []}, indent=2) + "\n",
        "requests.jsonl": json.dumps({"context_tokens": 128, "clients": 1, "ttft_ms": 1.5}) + "\n",
        "list.json": "[\n  1,\n  2\n]\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return files


def test_a_json_document_given_as_a_log_is_refused_in_one_line(run, tmp_path, plan_file) -> None:
    # `onechip logs plan.json` summarized the plan as a log: 'no verdict: the log ends before the engine said it was
    # ready ...; vLLM 0.32.0' (the version read from the plan's "engine_version" line) and a TPU trap (from a
    # warning's text), exit 0; `plan --against plan.json` said 'against the boot log (0.32.0): nothing to compare'.
    # A JSON document (onechip's --json output, a run's files) is no log: one line naming what it is
    for name in _run_files(tmp_path, plan_file.read_text()):
        line = one_error_line(run, "logs", name)
        assert line == f"{name}: a JSON document, not a log (a log is text lines, or vLLM's JSON records)", line
        line = one_error_line(run, "plan", "google/gemma-4-E2B-it", "--chip", "l4", "--against", name)
        assert line.startswith(f"--against {name}: a JSON document, not a log"), line


def test_a_json_log_of_records_is_still_read(run, tmp_path) -> None:
    # the refusal above must not take vLLM's own JSON logging for a document: a record with a 'message' is a log line
    (tmp_path / "json.log").write_text(json.dumps(JSON_LOG_RECORD) + "\n")
    code, out, err = run("logs", "json.log")
    assert code == 0 and "vLLM 0.32.0" in out, (out, err)


def test_a_cell_without_a_measured_rate_is_priced_as_not_measured_not_as_zero(run, measured_run) -> None:
    # `cost --run` on a summary.json whose 'ok' cell holds no output_tok_per_s (a cell of no reps: bench/stats.py
    # summarize_cell's None; a hand-edited file) showed it as '0.0' tok/s, a measurement of nothing, where
    # `report` of the same run shows '—'; the cell now reads '—' in cost's table too
    measured = measured_run("output_tok_per_s", "", None)
    code, out, err = run("cost", "--chip", "v5e-1", "--run", str(measured))
    assert code == 0, err
    rows = [line.split("│")[1:-1] for line in out.splitlines() if line.startswith("│")]
    first = next(cells for cells in rows if [c.strip() for c in cells[:2]] == ["128", "1"])
    assert first[2].strip() == "—", first  # not measured; and priced at none (cost.estimate: priced only when > 0)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        # one field removed by hand: the field pydantic names (Plan.kv_tokens is required)
        (
            lambda text: json.dumps({k: v for k, v in json.loads(text).items() if k != "kv_tokens"}),
            "kv_tokens: Field required",
        ),
        # a field of the wrong type
        (lambda text: json.dumps({**json.loads(text), "max_model_len": "long"}), "max_model_len: Input should be"),
        # a plan cut short, as by an interrupted `onechip plan --json > plan.json`: pydantic's 'Invalid JSON'
        (lambda text: text[: len(text) // 2], "Invalid JSON: EOF while parsing"),
    ],
)
def test_a_damaged_plan_file_is_refused_saying_what_is_wrong_with_it(run, tmp_path, plan_file, edit, said) -> None:
    # `up --plan` / `simulate --plan` / `bench --plan` on a plan with one field removed, a value of the wrong type or
    # a file cut short all said only 'not a plan JSON (see `onechip plan --json`)': the user could not tell which
    # field, or that the file was truncated; the line now names the first problem, as `report` does for a run's files
    bad = tmp_path / "bad.json"
    bad.write_text(edit(plan_file.read_text()))
    line = one_error_line(run, "simulate", "--plan", str(bad))
    assert line.startswith(f"--plan {bad}: not a plan JSON ("), line
    assert said in line and line.endswith("; see `onechip plan --json`)"), line
