"""A measured boot a newer onechip stored (loose65): this onechip's next `plan --against` (api.remember_boot) wrote
over it, its data lost."""

from __future__ import annotations

import json
from pathlib import Path

from onechip import api
from onechip.mcp import tools
from onechip.planner import calibration
from onechip.schemas.common import SCHEMA_VERSION
from onechip.schemas.requests import PlanRequest

NEWER = str(int(SCHEMA_VERSION.split(".")[0]) + 1)  # one major version past what this onechip writes


def test_a_boot_never_overwrites_a_newer_onechips_measured_boot(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    request = PlanRequest(model="SmolLM2-135M-Instruct", chip="a100-80gb")
    first = api.plan(request)
    log = tmp_path / "boot.log"
    log.write_text(f"INFO GPU KV cache size: {first.kv_tokens:,} tokens\n")  # the plan's own figure: it learns
    api.plan(request.model_copy(update={"against": log}))
    assert first.deployment_key is not None
    path = api.measured_boots_dir() / calibration.file_name(first.deployment_key)
    text = json.dumps({**json.loads(path.read_text()), "schema_version": NEWER})
    path.write_text(text)
    again = api.plan(request.model_copy(update={"against": log}))
    assert path.read_text() == text  # as the newer onechip wrote it
    assert again.crosscheck is not None and again.crosscheck.not_stored is not None
    assert str(path) in again.crosscheck.not_stored and f"schema_version {NEWER}" in again.crosscheck.not_stored


def test_a_plan_never_reads_a_newer_onechips_measured_boot(tmp_path: Path, monkeypatch) -> None:
    # files66: a measured boot named no schema_version, so a newer onechip's (whose terms may mean other things) set
    # this onechip's plans of the deployment as if it were its own
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    request = PlanRequest(model="SmolLM2-135M-Instruct", chip="a100-80gb")
    first = api.plan(request)
    log = tmp_path / "boot.log"
    log.write_text(f"INFO GPU KV cache size: {first.kv_tokens:,} tokens\n")
    api.plan(request.model_copy(update={"against": log}))
    assert api.plan(request).calibrated_from is not None  # read: this onechip's own
    assert first.deployment_key is not None
    path = api.measured_boots_dir() / calibration.file_name(first.deployment_key)
    stored = json.loads(path.read_text())
    assert stored["schema_version"] == SCHEMA_VERSION  # it names the version it was written as
    path.write_text(json.dumps({**stored, "schema_version": NEWER}))
    assert api.plan(request).calibrated_from is None


def test_a_plan_says_once_that_a_newer_measured_boot_is_not_used(tmp_path: Path, monkeypatch, run) -> None:
    # files66b: the plan dropped a newer onechip's measured boot without a word (its overhead the rule's estimate, as
    # if no boot were stored), where simulate and advise say so of a newer calibration (schemas.common.newer_note)
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    request = PlanRequest(model="SmolLM2-135M-Instruct", chip="a100-80gb")
    first = api.plan(request)
    log = tmp_path / "boot.log"
    log.write_text(f"INFO GPU KV cache size: {first.kv_tokens:,} tokens\n")
    api.plan(request.model_copy(update={"against": log}))
    assert first.deployment_key is not None and api.plan(request).notes == []  # its own boot: read, nothing to say
    path = api.measured_boots_dir() / calibration.file_name(first.deployment_key)
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": NEWER}))
    (note,) = api.plan(request).notes
    assert str(path) in note and f"schema_version {NEWER}" in note and f"this onechip reads {SCHEMA_VERSION}" in note
    code, out, err = run("plan", request.model, "--chip", request.chip)
    assert code == 0, err
    # rich folds a path longer than the console's width: compared without spaces, as test_store_loose65 does
    assert " ".join(out.split()).count(f"schema_version {NEWER}") == 1 and path.name in "".join(out.split()), out
    summary = tools._plan_summary(tools._plan(request, lambda _: None))
    assert summary.count(f"schema_version {NEWER}") == 1 and str(path) in summary, summary
