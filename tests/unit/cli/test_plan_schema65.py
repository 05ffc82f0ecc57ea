"""A plan file names the version of its layout (helper twins65, 2026-12-07), as every other result onechip stores
does (schemas.common.StoredSchemaVersion): a plan written before it is read as version 1, and one a newer onechip
wrote is refused in one line by every command that reads a plan file, not read as if its fields meant what they
mean here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import one_error_line
from onechip.schemas import Plan
from onechip.schemas.common import SCHEMA_VERSION

pytestmark = pytest.mark.usefixtures("offline_home")

# schemas.common.known_schema's words for a stored file of a newer layout, as summary.json's refusal says them
NEWER = f"schema_version '2' is newer than the '{SCHEMA_VERSION}' this onechip reads; upgrade onechip to read it"
READERS = [
    ("up", "--dry-run", "--engine", "vllm", "--plan"),
    ("simulate", "--plan"),
    ("bench", "http://127.0.0.1:9", "--out", "out", "--plan"),  # port 9 (discard): the plan is read first
]


def _written(tmp_path: Path, plan_file: Path, **edit: object) -> Path:
    """The seed's plan with `edit` applied (a key given None is removed), saved as tmp_path/edited.json."""
    doc = {**json.loads(plan_file.read_text()), **edit}
    path = tmp_path / "edited.json"
    path.write_text(json.dumps({k: v for k, v in doc.items() if v is not None}, indent=2))
    return path


def test_the_plan_onechip_writes_names_its_schema_version(plan_file) -> None:
    # the version every stored result writes (schemas.common.SCHEMA_VERSION), first as in summary.json and run.json
    doc = json.loads(plan_file.read_text())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert next(iter(doc)) == "schema_version"


def test_a_plan_written_without_one_is_read_as_version_1(run, tmp_path, plan_file) -> None:
    old = _written(tmp_path, plan_file, schema_version=None)
    assert "schema_version" not in json.loads(old.read_text())
    assert Plan.from_file(old).schema_version == "1"  # the layout plans had before they named one
    code, _, err = run("up", "--dry-run", "--engine", "vllm", "--plan", str(old))
    assert code == 0, err


@pytest.mark.parametrize("argv", READERS)
def test_a_plan_of_a_newer_schema_is_refused_in_one_line(run, tmp_path, plan_file, argv) -> None:
    # was read as this onechip's plan and acted on (`up --plan` printed its dry run, exit 0)
    newer = _written(tmp_path, plan_file, schema_version="2")
    assert one_error_line(run, *argv, str(newer)) == f"--plan {newer}: {NEWER}"
