"""cli/report_cmd.py: `onechip report DIR` on a directory with no run files is a one-line error naming the
directory and the files it looked for (it used to write an empty report and exit 0)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factories import one_error_line
from onechip.errors import ConfigError
from onechip.report.rundir import JSON_KINDS
from onechip.report.search import search_markdown
from onechip.schemas.bench import SearchProbe, SearchResult
from onechip.schemas.run import RUN_FILES, SEARCH_FILE


def test_empty_directory_is_a_one_line_config_error(run, tmp_path) -> None:
    empty = tmp_path / "not-a-run"
    empty.mkdir()
    (empty / "notes.txt").write_text("no run here")
    code, out, err = run("report", str(empty))
    assert code == ConfigError.exit_code == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert f"{empty} holds no run files" in err
    # the files of the run layout (schemas/run.py), not the rendered report.md
    for name in ("run.json", "plan.json", "summary.json", "checks.json", "requests.jsonl"):
        assert name in err
    assert RUN_FILES["report_md"] not in err
    assert out == "" and sorted(p.name for p in empty.iterdir()) == ["notes.txt"]  # nothing written


def test_a_previous_report_alone_is_not_a_run(run, tmp_path) -> None:
    (tmp_path / RUN_FILES["report_md"]).write_text("# an old empty report\n")
    code, _, err = run("report", str(tmp_path), "--format", "md,json")
    assert code == 2 and "holds no run files" in err
    assert not (tmp_path / "report.json").exists()


@pytest.mark.parametrize("kind", ["requests", "engine_log"])
def test_any_one_run_file_is_enough(run, tmp_path, kind) -> None:
    (tmp_path / RUN_FILES[kind]).write_text("")
    code, out, err = run("report", str(tmp_path))
    assert code == 0, err
    assert out.strip() == str(tmp_path / "report.md") and (tmp_path / "report.md").is_file()


@pytest.mark.parametrize(
    "content",
    ['{"tool_version": "0.1", "cells": [', "{}", "[1, 2]", "<html>"],
    ids=["truncated", "empty", "list", "html"],
)
def test_a_damaged_summary_is_rendered_but_exits_non_zero(run, tmp_path, content) -> None:
    """Issue 17: `report` on a truncated summary.json exited 0 and printed only a path."""
    (tmp_path / RUN_FILES["bench"]).write_text(content)
    code, out, err = run("report", str(tmp_path))
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and "summary.json" in err
    assert (tmp_path / "report.md").is_file()  # what could be read is still rendered


def test_a_summary_that_is_not_a_regular_file_is_named_not_called_missing(run, tmp_path) -> None:
    # was '<dir> holds no run files': a FIFO or a directory named summary.json is a damaged run, said as one
    os.mkfifo(tmp_path / RUN_FILES["bench"])
    code, _, err = run("report", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1 and "holds no run files" not in err
    assert "summary.json could not be read" in err and "not a regular file" in err, err


@pytest.mark.parametrize("kind", JSON_KINDS)
@pytest.mark.parametrize(
    ("link", "why"),
    [("itself", "Too many levels of symbolic links"), ("gone", "No such file or directory"),
     ("folder", "is not a regular file")],
)  # fmt: skip
def test_a_run_file_that_is_a_broken_symlink_is_named_and_exits_non_zero(run, tmp_path, kind, link, why) -> None:
    # `ln -s summary.json summary.json`: Path.exists() follows the link, so the file was taken for absent and the
    # report exited 0; a link to a missing file or to a directory is as damaged, and so is one standing alone
    name = RUN_FILES[kind]
    (tmp_path / "folder").mkdir()
    (tmp_path / name).symlink_to({"itself": name, "gone": "nowhere.json", "folder": "folder"}[link])
    for alone in (True, False):
        if not alone:
            (tmp_path / RUN_FILES["engine_log"]).write_text("")  # a run file that reads
        code, _, err = run("report", str(tmp_path))
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert f"error: {name} could not be read: " in err and why in err, err


def test_compare_against_an_empty_directory_is_an_error(run, tmp_path) -> None:
    this = tmp_path / "this"
    this.mkdir()
    (this / RUN_FILES["manifest"]).write_text('{"run_id": "this"}')
    other = tmp_path / "other"
    other.mkdir()
    code, _, err = run("report", str(this), "--compare", str(other))
    assert code == 2 and f"{other} holds no run files" in err


@pytest.mark.parametrize(
    ("kept", "said"), [("policies.json", "a policy comparison keeps one run per policy: {}/<policy>")]
)
def test_a_directory_of_runs_is_named_for_what_it_is(run, tmp_path, kept, said) -> None:
    # was 'pass a run directory such as runs/<run-id>/' for the directory `--router-policies` wrote (found by helper
    # break3); the directory `--find-max` writes is rendered as the search it holds (below)
    (tmp_path / kept).write_text("{}")
    code, _, err = run("report", str(tmp_path))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.strip().endswith(said.format(tmp_path))


def _saved_search(directory: Path) -> SearchResult:
    """A clients search as bench --find-max saves it: search.json, its answer 4 clients (probe 8 missed)."""
    result = SearchResult(
        kind="clients", context_tokens=128, workload="grid", slo={"ttft_ms": 500.0}, percentile=90.0,
        bound_reason="8 clients missed the SLO", max_clients=4,
        probes=[
            SearchProbe(load=4, run_dir="clients-4", status="ok", meets_slo=True, at_percentile_ms={"ttft_ms": 310.0}),
            SearchProbe(load=8, run_dir="clients-8", status="ok", meets_slo=False, at_percentile_ms={"ttft_ms": 900.0}),
        ],
    )  # fmt: skip
    directory.mkdir(parents=True, exist_ok=True)
    (directory / SEARCH_FILE).write_text(result.model_dump_json(indent=2))
    return result


@pytest.mark.parametrize(
    ("formats", "written"), [((), ["search.md"]), (("--format", "md,html"), ["search.md", "search.html"])]
)
def test_report_re_renders_a_saved_search(run, tmp_path, formats, written) -> None:
    # measure once, render many: `report DIR` refused the directory `bench --find-max` wrote ('holds no run files'),
    # so a search's report could only be had by measuring again; it renders search.json as find_max renders it
    result = _saved_search(tmp_path / "search")
    code, out, err = run("report", str(tmp_path / "search"), *formats)
    assert code == 0, err
    assert out.splitlines() == [str(tmp_path / "search" / name) for name in written]
    markdown = (tmp_path / "search" / "search.md").read_text()
    assert markdown == "\n".join(["# onechip SLO search", "", *search_markdown(result)]) + "\n"
    assert "**4 clients**" in markdown  # the answer search.json holds


@pytest.mark.parametrize(
    ("argv", "said"),
    [(("--format", "json"), "holds a --find-max search: its report is md or html (search.json is its data), not json"),
     (("--compare", "."), "holds a --find-max search; --compare compares two runs, such as its probes' ({}/<probe>)")],
)  # fmt: skip
def test_report_of_a_search_refuses_what_a_search_has_not(run, tmp_path, argv, said) -> None:
    _saved_search(tmp_path / "search")
    line = one_error_line(run, "report", str(tmp_path / "search"), *argv)
    assert line == f"{tmp_path / 'search'} {said.format(tmp_path / 'search')}"


def test_report_of_a_damaged_search_is_one_line_naming_it(run, tmp_path) -> None:
    (tmp_path / SEARCH_FILE).write_text("{}")
    line = one_error_line(run, "report", str(tmp_path))
    assert line.startswith(f"{tmp_path / SEARCH_FILE} is not a search bench --find-max wrote: ")
    assert "kind: Field required" in line  # the first field search.json lacks (SearchResult)
