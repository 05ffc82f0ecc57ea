"""A run's plan.json of a newer schema than this onechip reads is refused in one line by `report`, as its summary.json
is (test_stored_results_checked), not rendered as if its sizes meant what they mean here (helper twins65)."""

from __future__ import annotations

from pathlib import Path

from seed_run_files import seed_files, write_run

from onechip.errors import ConfigError
from onechip.schemas.common import SCHEMA_VERSION


def _run_dir(tmp_path: Path, version: str | None) -> Path:
    files = seed_files()
    if version is None:
        files["plan.json"].pop("schema_version", None)
    else:
        files["plan.json"]["schema_version"] = version
    return write_run(tmp_path / "edited", files)


def test_report_refuses_a_plan_of_a_newer_schema_in_one_line(run, tmp_path: Path) -> None:
    directory = _run_dir(tmp_path, "2")
    code, _, err = run("report", str(directory))
    # schemas.common.known_schema's words, as for summary.json
    said = f"plan.json: schema_version '2' is newer than the '{SCHEMA_VERSION}' this onechip reads; upgrade onechip"
    said += " to read it"
    assert code == ConfigError.exit_code
    assert err.splitlines() == [f"error: {said}; the report in {directory} shows what could be read"], err


def test_report_reads_a_plan_written_before_plans_named_a_version(run, tmp_path: Path) -> None:
    code, _, err = run("report", str(_run_dir(tmp_path, None)))
    assert code == 0 and err == "", err
