"""cloud.billing.refresh: a catalog read that prices some chips and not others keeps, for each one it does not price,
the last live price (an earlier read's, with its read time and source), never prices.json's older snapshot."""

from __future__ import annotations

import pytest

from fakes.billing_catalog import RECORDED, FakeBillingCatalog
from onechip.cloud import billing

SPOT = ("v5e-1", "us-west4", "spot")


@pytest.fixture
def fake(monkeypatch):
    with FakeBillingCatalog() as catalog:
        monkeypatch.setenv(billing.ENDPOINT_ENV, catalog.url)
        yield catalog


def _known() -> dict[tuple[str, str, str], billing.Price]:
    return {(p.chip, p.region, p.pricing): p for p in billing.known_prices()}


def test_a_read_that_misses_a_chips_price_keeps_the_last_live_one_and_says_so(fake) -> None:
    # Before: the second read replaced the first wholesale, and v5e-1 spot fell back to prices.json's 0.5779 (the
    # seed's snapshot) where the catalog had said 0.4942 that morning
    first = billing.refresh()
    fake.skus = [s for s in RECORDED if s["skuId"] != "TEST-V5E-SP"]  # the spot SKU missing from this answer
    second = billing.refresh()
    assert SPOT not in {(p.chip, p.region, p.pricing) for p in second.prices}
    row = _known()[SPOT]
    assert row.usd_per_chip_hour == 0.4942 and row.sku_id == "TEST-V5E-SP" and row.date == first.read_at[:10]
    assert row.source.startswith(f"{billing.LAST_LIVE} {first.read_at}: {billing.SOURCE} ")
    assert row.note.startswith(f"the catalog read of {second.read_at} did not price it (no SKU described as ")
    assert _known()["v5e-1", "us-west4", "on-demand"].source.startswith(billing.SOURCE)  # this read's: said so
    third = billing.refresh()  # still missing: the same live price, from the first read, not re-dated
    assert _known()[SPOT].source == row.source and third.kept == second.kept
    fake.skus = RECORDED
    billing.refresh()  # priced again: this read's price, nothing kept
    assert _known()[SPOT].source.startswith(billing.SOURCE) and not billing.stored_read().kept


def test_a_read_a_newer_onechip_stored_is_never_written_over(fake) -> None:
    # Before: refresh renamed its read over billing_catalog.json whatever wrote it: a newer onechip's read was lost
    # (the rule of every stored file: schemas.common.stored_by_newer)
    import json

    from onechip.errors import ConfigError
    from onechip.schemas.common import SCHEMA_VERSION

    billing.refresh()
    path = billing.store_path()
    newer = json.dumps({**json.loads(path.read_text()), "schema_version": "99"})
    path.write_text(newer)
    asked = len(fake.requests)
    with pytest.raises(ConfigError) as info:
        billing.refresh()
    assert str(info.value) == (
        f"cannot store the catalog read at {path}: it was written by a newer onechip (schema_version 99; this "
        f"onechip reads {SCHEMA_VERSION}); upgrade onechip to refresh it"
    )
    assert path.read_text() == newer and len(fake.requests) == asked  # kept, and nothing was read


def test_a_newer_onechip_storing_its_read_during_this_read_is_not_written_over(fake, monkeypatch) -> None:
    # the first check runs before the read, which takes minutes against Google's catalog: a newer onechip may store
    # its own read meanwhile (qa67b)
    import json

    from onechip.errors import ConfigError

    billing.refresh()
    path = billing.store_path()
    newer = json.dumps({**json.loads(path.read_text()), "schema_version": "99"})
    listed = billing.list_skus

    def list_then_newer_stored(*args, **kwargs):
        got = listed(*args, **kwargs)
        path.write_text(newer)
        return got

    monkeypatch.setattr(billing, "list_skus", list_then_newer_stored)
    with pytest.raises(ConfigError, match="was written by a newer onechip"):
        billing.refresh()
    assert path.read_text() == newer
