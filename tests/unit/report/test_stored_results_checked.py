"""Stored bench results are read leniently, but not blindly: a summary.json of a newer schema than this onechip
knows, or a cell whose measured figure is not a number a measurement gives (NaN, negative, or not what its reps
measured: a hand edit), is one line naming the file and the field and a non-zero exit from `report` and
`cost --run`, never a report or a price made of it. An older known schema still reads."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from seed_run_files import seed_files, write_run

from onechip.errors import ConfigError
from onechip.schemas.common import SCHEMA_VERSION

Edit = Callable[[dict[str, Any]], None]


def _cell(value: float) -> Edit:
    """The seed's 128 x 64 cell (reps measured 1,496.5 tok/s median) with its tok/s hand-edited to `value`."""
    return lambda files: files["summary.json"]["cells"][1].__setitem__("output_tok_per_s", value)


def _schema(version: str) -> Edit:
    return lambda files: files["summary.json"].__setitem__("schema_version", version)


def _run_dir(tmp_path: Path, edit: Edit) -> Path:
    files = seed_files()
    edit(files)
    return write_run(tmp_path / "edited", files)


BAD = {
    "newer schema": (
        _schema("99"),
        f"summary.json: schema_version '99' is newer than the '{SCHEMA_VERSION}' this onechip reads; "
        "upgrade onechip to read it",
    ),
    # text that is no version is not called newer (it was "schema_version 'v1' is newer than the '1'")
    "not a version": (
        _schema("v1"),
        f"summary.json: schema_version 'v1' is not a version (this onechip writes '{SCHEMA_VERSION}')",
    ),  # fmt: skip
    "NaN": (
        _cell(math.nan),
        "summary.json does not match BenchRun; ignored: cells.1.output_tok_per_s: Input should be a finite number",
    ),  # fmt: skip
    "negative": (
        _cell(-5.0),
        "summary.json does not match BenchRun; ignored: cells.1.output_tok_per_s: "
        "Input should be greater than or equal to 0",
    ),  # fmt: skip
    "1e308": (
        _cell(1e308),
        "summary.json does not match BenchRun; ignored: cells.1: output_tok_per_s 1e+308 is "
        "not the median of its reps' tok/s (1496.5)",
    ),  # fmt: skip
}


@pytest.mark.parametrize("case", list(BAD))
def test_report_refuses_a_summary_it_cannot_trust_in_one_line(run, tmp_path: Path, case: str) -> None:
    edit, said = BAD[case]
    directory = _run_dir(tmp_path, edit)
    code, _, err = run("report", str(directory))
    assert code == ConfigError.exit_code and code != 0
    assert err.splitlines() == [f"error: {said}; the report in {directory} shows what could be read"], (
        err
    )  # one line: the file, the field, both versions


@pytest.mark.parametrize("case", list(BAD))
def test_cost_run_refuses_to_price_a_summary_it_cannot_trust(run, tmp_path: Path, case: str) -> None:
    edit, said = BAD[case]
    directory = _run_dir(tmp_path, edit)
    code, out, err = run("cost", "--run", str(directory))
    assert code == ConfigError.exit_code and out == ""
    assert err.splitlines() == [f"error: --run {directory}: {said}"], err


def test_a_rep_edited_consistently_with_its_cell_is_still_refused(run, tmp_path: Path) -> None:
    # the figure and the rep it came from both edited: the rep's tok/s is still not its tokens over its window
    def edit(files: dict[str, Any]) -> None:
        cell = files["summary.json"]["cells"][1]
        cell["output_tok_per_s"] = cell["reps"][0]["output_tok_per_s"] = 1e308
        cell["reps"] = cell["reps"][:1]

    code, _, err = run("cost", "--run", str(_run_dir(tmp_path, edit)))
    assert code == ConfigError.exit_code
    assert "ignored: cells.1.reps.0: output_tok_per_s 1e+308 is not output_tokens / window_s (" in err, err


@pytest.mark.parametrize("version", ["0", f"{SCHEMA_VERSION}.0", f"{SCHEMA_VERSION}.0.0"])
def test_an_older_or_the_same_schema_version_still_reads(run, tmp_path: Path, version: str) -> None:
    # '1.0' is the version '1' onechip writes, written longer (it was refused as "newer than the '1'")
    code, out, err = run("cost", "--run", str(_run_dir(tmp_path, _schema(version))))
    assert code == 0, err
    assert "1,496.5" in out or "1496.5" in out, out  # the seed's 128 x 64 cell, priced as read


@pytest.mark.parametrize("name", ["summary.json", "run.json", "cost.json", "checks.json"])
@pytest.mark.parametrize("version", [1, 1.0])
def test_a_schema_version_written_as_a_json_number_reads_as_its_text(
    run, tmp_path: Path, name: str, version: float
) -> None:
    # "schema_version": 1 (by hand, or a tool that took it for a number) was refused as 'Input should be a valid
    # string', while "1" and "1.0" read: it is the version '1' onechip writes
    directory = _run_dir(tmp_path, lambda files: files[name].__setitem__("schema_version", version))
    code, _, err = run("report", str(directory))
    assert code == 0 and err == "", err
    code, _, err = run("cost", "--run", str(directory))
    assert code == 0, err


def test_a_schema_version_that_is_a_boolean_or_a_newer_number_is_still_refused(run, tmp_path: Path) -> None:
    code, _, err = run("report", str(_run_dir(tmp_path, _schema(99))))  # type: ignore[arg-type]
    assert code == ConfigError.exit_code and "summary.json: schema_version '99' is newer than the" in err, err
    code, _, err = run("report", str(_run_dir(tmp_path / "b", _schema(True))))  # type: ignore[arg-type]
    assert code == ConfigError.exit_code and "schema_version: Input should be a valid string" in err, err


def _set(name: str, where: str, value: float) -> Edit:
    """files[name] with the field at `where` ('cells.0.clients') set to `value`."""

    def edit(files: dict[str, Any]) -> None:
        *path, key = where.split(".")
        node: Any = files[name]
        for part in path:
            node = node[int(part)] if part.isdigit() else node[part]
        node[key] = value

    return edit


OUT_OF_BOUNDS = {  # each was an internal error from `report` (the serving report's own bounds, or numpy's log2)
    "clients below 1": (_set("summary.json", "cells.0.clients", -1), "summary.json does not match BenchRun; "
                        "ignored: cells.0.clients: Input should be greater than or equal to 1"),
    "context past bench's bound": (_set("summary.json", "cells.0.context_tokens", 10**19), "summary.json does not "
                                   "match BenchRun; ignored: cells.0.context_tokens: Input should be less than or "
                                   "equal to 16777216"),
    "clients past bench's bound": (_set("summary.json", "cells.0.clients", 10**19), "summary.json does not match "
                                   "BenchRun; ignored: cells.0.clients: Input should be less than or equal to 4096"),
    "negative price": (_set("cost.json", "lines.0.usd_per_chip_hour", -1), "cost.json does not match CostReport; "
                       "ignored: lines.0.usd_per_chip_hour: Input should be greater than or equal to 0"),
    "NaN tok/s": (_set("cost.json", "lines.0.output_tok_per_s", math.nan), "cost.json does not match CostReport; "
                  "ignored: lines.0.output_tok_per_s: Input should be a finite number"),
    "negative $/M": (_set("cost.json", "lines.0.usd_per_mtok", -1), "cost.json does not match CostReport; "
                     "ignored: lines.0.usd_per_mtok: Input should be greater than or equal to 0"),
}  # fmt: skip


@pytest.mark.parametrize("case", list(OUT_OF_BOUNDS))
def test_a_stored_figure_outside_what_onechip_writes_is_one_line_not_an_internal_error(
    run, tmp_path: Path, case: str
) -> None:
    # the bounds are bench's (BenchConfig: contexts <= MAX_TOKENS, clients <= MAX_CLIENTS) and cost.arithmetic's (a
    # price not below 0, a positive finite tok/s)
    edit, said = OUT_OF_BOUNDS[case]
    directory = _run_dir(tmp_path, edit)
    code, _, err = run("report", str(directory), "--format", "md,serving-report")
    assert code == ConfigError.exit_code
    assert err.splitlines() == [f"error: {said}; the report in {directory} shows what could be read"], err
