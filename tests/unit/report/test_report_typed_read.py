"""report/rundir.py loads each run file into its result model: a renamed or dropped field is a problem
line in the report (never a silently blank cell), and the renderers read model attributes, so a field
renamed in a schema breaks rendering loudly instead of blanking it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import create_model
from seed_run_files import seed_files, write_run

from onechip.report import read_run, render_markdown, write_report
from onechip.report.markdown import render_markdown_files
from onechip.report.serving_report import build
from onechip.schemas import BenchRun, BootRecord, CellResult, CostReport, Plan, ResultModel


def test_the_seed_run_loads_every_file_into_its_model(seed_run: Path) -> None:
    files = read_run(seed_run)
    assert files.problems == []
    assert files.present == ["manifest", "plan", "crosscheck", "boot", "checks", "bench", "cost"]
    assert isinstance(files.plan, Plan) and files.plan.kv_tokens == 321344
    assert isinstance(files.bench, BenchRun) and files.bench.cells[1].output_tok_per_s == 1496.5
    assert isinstance(files.boot, BootRecord) and isinstance(files.cost, CostReport)


def test_a_renamed_required_field_is_listed_and_the_file_is_left_out(tmp_path: Path) -> None:
    files = seed_files()
    files["plan.json"]["kv_pool_tokens"] = files["plan.json"].pop("kv_tokens")  # renamed by a newer writer
    del files["boot.json"]["engine"]  # dropped
    run = write_run(tmp_path / "renamed", files)
    loaded = read_run(run)
    assert loaded.plan is None and loaded.boot is None
    assert any(
        p.startswith("plan.json does not match Plan; ignored: kv_tokens: Field required") for p in loaded.problems
    )
    assert any(
        p.startswith("boot.json does not match BootRecord; ignored: engine: Field required") for p in loaded.problems
    )
    md = render_markdown(run)  # the report still renders, and says what was wrong
    assert "- ⚠ plan.json does not match Plan; ignored: kv_tokens: Field required" in md
    assert "Not in this run: plan, boot." in md


def test_a_renamed_optional_field_is_listed_not_blanked_silently(tmp_path: Path) -> None:
    files = seed_files()
    cell = files["summary.json"]["cells"][1]
    cell["agg_tok_per_s"] = cell.pop("output_tok_per_s")
    run = write_run(tmp_path / "renamed-optional", files)
    loaded = read_run(run)
    assert loaded.bench is not None and loaded.bench.cells[1].output_tok_per_s is None
    assert loaded.problems == ["summary.json: unknown field(s) cells.1.agg_tok_per_s ignored"]
    assert "- ⚠ summary.json: unknown field(s) cells.1.agg_tok_per_s ignored" in render_markdown(run)


def test_unknown_keys_in_a_strict_nested_model_are_dropped_with_a_problem(tmp_path: Path) -> None:
    # BenchConfig is a strict input model; a summary written by another onechip may carry a knob this
    # one does not know. The summary still loads, without that key.
    files = seed_files()
    files["summary.json"]["config"]["new_knob"] = 3
    loaded = read_run(write_run(tmp_path / "newer", files))
    assert loaded.bench is not None and loaded.bench.config.reps == 3
    assert loaded.problems == ["summary.json: unknown field(s) config.new_knob ignored"]


def test_an_older_cost_json_list_loads_as_a_cost_report(tmp_path: Path) -> None:
    lines = seed_files()["cost.json"]["lines"]
    loaded = read_run(write_run(tmp_path / "old-cost", {"cost.json": lines}))
    assert isinstance(loaded.cost, CostReport) and loaded.problems == []
    assert [line.pricing for line in loaded.cost.lines] == ["spot", "flex-start", "on-demand"]
    assert loaded.cost.chip == "v5e-1"


def _renamed_cell_model() -> type[ResultModel]:
    """CellResult as it would be if `output_tok_per_s` were renamed in schemas/bench.py."""
    fields = {name: (f.annotation, f) for name, f in CellResult.model_fields.items() if name != "output_tok_per_s"}
    return create_model("CellResult", __base__=ResultModel, agg_tok_per_s=(float | None, None), **fields)  # type: ignore[call-overload]


def test_a_field_renamed_in_the_schema_breaks_rendering_instead_of_blanking_it(seed_run: Path) -> None:
    renamed = _renamed_cell_model()
    files = read_run(seed_run)
    assert files.bench is not None
    files.bench.cells = [renamed.model_validate(c.model_dump()) for c in files.bench.cells]  # type: ignore[misc]
    with pytest.raises(AttributeError, match="output_tok_per_s"):
        render_markdown_files(files)
    with pytest.raises(AttributeError, match="output_tok_per_s"):
        build(files)


def test_report_json_holds_the_models_and_the_problems(tmp_path: Path) -> None:
    files = seed_files()
    del files["boot.json"]["model"]
    (path,) = write_report(write_run(tmp_path / "r", files), "json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["boot"] is None and doc["problems"][0].startswith("boot.json does not match BootRecord")
    assert doc["plan"]["tensor_parallel_size"] == 1  # as loaded: the model's default is filled in
