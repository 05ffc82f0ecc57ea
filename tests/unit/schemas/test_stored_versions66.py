"""Every file onechip writes names its layout's version (files66): boot.json, crosscheck.json, the engine state,
a measured boot, a cloud record and probe.json named none, so a newer onechip's file was read as this one's; and a
file without the field read as whatever version the reading onechip writes, where it was written before the field
existed (version 1)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from onechip.schemas import common
from onechip.schemas.bench import SearchProbe
from onechip.schemas.boot import BootRecord, EngineState
from onechip.schemas.cloud import CloudResource
from onechip.schemas.plan import CrossCheck, MeasuredBoot
from onechip.schemas.run import RunManifest

STATE = {"engine": "vllm", "pid": 7, "base_url": "http://127.0.0.1:8000", "model": "m", "started_at": "t",
         "log_path": "/tmp/engine.log"}  # fmt: skip
# the fields each file needs, as an older onechip wrote it: no schema_version
FILES: list[tuple[type[BaseModel], dict[str, Any]]] = [
    (BootRecord, {"engine": "vllm", "model": "m"}),
    (CrossCheck, {"planned_kv_tokens": 1, "planned_max_concurrency": 1.0, "agrees": True}),
    (EngineState, STATE),
    (
        MeasuredBoot,
        {
            "key": "k",
            "date": "2026-01-01",
            "utilization": 0.9,
            "requested_bytes": 3,
            "weights_bytes": 1,
            "kv_cache_bytes": 1,
            "kv_cache_tokens": 16,
            "overhead_bytes": 1,
        },
    ),  # fmt: skip
    (
        CloudResource,
        {
            "name": "n",
            "kind": "node",
            "node_id": "n",
            "project": "p",
            "zone": "z",
            "chip": "v5e-1",
            "accelerator_type": "v5litepod-1",
            "runtime_version": "r",
            "provisioning": "spot",
            "created_at": "t",
        },
    ),  # fmt: skip
    (SearchProbe, {"load": 1.0, "run_dir": "r", "status": "ok", "meets_slo": True}),
    (RunManifest, {"run_id": "r", "created_at": "t", "tool_version": "0", "python": "3", "host": "h", "command": "c"}),
]
IDS = [model.__name__ for model, _ in FILES]


@pytest.fixture
def bumped(monkeypatch: pytest.MonkeyPatch) -> str:
    """This onechip as it will be after a bump of SCHEMA_VERSION to 2."""
    monkeypatch.setattr(common, "SCHEMA_VERSION", "2")
    monkeypatch.setattr(common, "_SCHEMA", (2,))
    return "2"


@pytest.mark.parametrize(("model", "fields"), FILES, ids=IDS)
def test_a_record_made_here_names_the_version_this_onechip_writes(model, fields, bumped: str) -> None:
    made = model(**fields)
    assert made.model_dump(mode="json")["schema_version"] == bumped
    assert model.model_validate_json(made.model_dump_json()).schema_version == bumped


@pytest.mark.parametrize(("model", "fields"), FILES, ids=IDS)
def test_a_file_without_schema_version_reads_as_version_1(model, fields, bumped: str) -> None:
    assert model.model_validate(fields).schema_version == "1"
    assert model.model_validate_json(model.model_validate(fields).model_dump_json()).schema_version == "1"


@pytest.mark.parametrize(("model", "fields"), FILES, ids=IDS)
def test_a_file_of_a_newer_version_is_refused(model, fields) -> None:
    with pytest.raises(ValidationError) as refused:
        model.model_validate({**fields, "schema_version": "2"})
    assert common.newer_schema(refused.value) == (
        "schema_version '2' is newer than the '1' this onechip reads; upgrade onechip to read it"
    )
