"""zones-used.json and zones-observed.json (cloud.records) are caches, no schema_version (files66b): what a newer or
damaged file holds that this onechip cannot read is dropped, entry by entry, never a crash, never the rest lost."""

from __future__ import annotations

import json

import pytest

from onechip.cloud import records
from onechip.schemas.cloud import ZoneOffer

SEEN = {"chip": "v5e-1", "provisioning": "spot", "outcome": "available", "source": "onechip cloud probe"}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "cloud").mkdir(parents=True)
    return tmp_path / "home" / "cloud"


def test_a_cache_nested_past_the_parser_is_dropped_not_a_crash(home) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # json.loads raised RecursionError: a traceback out of every cloud command
    (home / "zones-used.json").write_text(deep)
    (home / "zones-observed.json").write_text(deep)
    assert records.zones_used([]) == [] and records.observed() == []


def test_an_observation_this_onechip_cannot_read_drops_that_entry_alone(home) -> None:
    # one entry a newer onechip wrote (an outcome this one does not know) dropped every observation, and the next
    # probe's observe() wrote the file over with its own alone; a zone not in the API's shape is no zone to try
    ours = {**SEEN, "zone": "us-west4-a", "date": "2026-12-01"}
    newer = {**SEEN, "zone": "us-east1-d", "outcome": "reserved", "date": "2026-12-02"}
    odd = {**SEEN, "zone": "../../x", "date": "2026-12-03"}
    (home / "zones-observed.json").write_text(json.dumps([newer, ours, odd, "not an entry"]))
    assert records.observed() == [ZoneOffer.model_validate(ours)]
    records.observe(ZoneOffer.model_validate({**ours, "zone": "europe-west4-b", "date": "2026-12-04"}))
    assert [o.zone for o in records.observed()] == ["europe-west4-b", "us-west4-a"]


def test_a_zone_pair_this_onechip_cannot_read_drops_that_entry_alone(home) -> None:
    (home / "zones-used.json").write_text(json.dumps([["proj-1", "us-west4-a", "new-field"], ["proj-1", "us-east1-d"]]))
    assert records.zones_used([]) == [("proj-1", "us-east1-d")]


def test_observe_keeps_the_entries_it_cannot_read_as_they_were(home) -> None:
    # files67: observe() wrote the file over with the entries it could read: a newer onechip's observations (an
    # outcome this one does not know) were lost at this one's next probe, where a newer stored file is never
    # written over (schemas.common.stored_by_newer)
    ours = {**SEEN, "zone": "us-west4-a", "date": "2026-12-01", "note": ""}
    newer = {**SEEN, "zone": "us-east1-d", "outcome": "reserved", "date": "2026-12-02", "reservation": "r-1"}
    (home / "zones-observed.json").write_text(json.dumps([newer, ours, "not an entry"]))
    again = {**ours, "outcome": "stockout", "date": "2026-12-04"}
    records.observe(ZoneOffer.model_validate(again))
    assert json.loads((home / "zones-observed.json").read_text()) == [again, newer, "not an entry"]


def test_use_zone_keeps_the_pairs_it_cannot_read_as_they_were(home) -> None:
    (home / "zones-used.json").write_text(json.dumps([["proj-1", "us-west4-a", "new-field"], ["proj-1", "us-east1-d"]]))
    records.use_zone("proj-2", "europe-west4-b")
    assert json.loads((home / "zones-used.json").read_text()) == [
        ["proj-1", "us-west4-a", "new-field"], ["proj-1", "us-east1-d"], ["proj-2", "europe-west4-b"]
    ]  # fmt: skip


def test_a_cache_a_newer_onechip_made_no_list_is_not_written_over(home) -> None:
    newer = {"schema_version": "99", "observed": []}  # not the list this onechip writes: another's layout
    (home / "zones-observed.json").write_text(json.dumps(newer))
    records.observe(ZoneOffer.model_validate({**SEEN, "zone": "us-west4-a", "date": "2026-12-01"}))
    assert json.loads((home / "zones-observed.json").read_text()) == newer
