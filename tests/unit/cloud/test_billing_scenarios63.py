"""Billing Catalog SKUs as another server may send them: several pricingInfo entries in any order (the latest
effectiveTime prices), and tiers that start above 0 units."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from onechip.cloud import billing


def _sku(*infos: dict) -> dict:
    return {"skuId": "V5E-OD", "description": "TpuV5e running in Las Vegas", "serviceRegions": ["us-west4"],
            "category": {"usageType": "OnDemand"}, "pricingInfo": list(infos)}  # fmt: skip


def _info(when: str, *tiers: tuple[float, str, int]) -> dict:
    rates = [{"startUsageAmount": start, "unitPrice": {"currencyCode": "USD", "units": units, "nanos": nanos}}
             for start, units, nanos in tiers]  # fmt: skip
    return {"effectiveTime": when, "pricingExpression": {"usageUnit": "h", "tieredRates": rates}}


def _price(sku: dict) -> float:
    prices, *_ = billing.match([billing.Sku.model_validate(sku)], datetime(2026, 12, 6, tzinfo=UTC))
    (price,) = [p for p in prices if (p.chip, p.region, p.pricing) == ("v5e-1", "us-west4", "on-demand")]
    return price.usd_per_chip_hour


def test_a_sku_whose_pricing_infos_come_newest_first_is_priced_by_its_latest_effective_time():
    # PricingInfo.effectiveTime: 'The timestamp from which this pricing was effective'; a server that lists the
    # timeline newest first priced the chip at its old rate (the last entry was taken as the latest)
    new = _info("2026-06-01T00:00:00Z", (0, "1", 200000000))  # $1.20 an hour
    old = _info("2024-01-01T00:00:00Z", (0, "0", 900000000))  # $0.90 an hour
    assert _price(_sku(new, old)) == pytest.approx(1.2)
    assert _price(_sku(old, new)) == pytest.approx(1.2)


def test_tiers_that_start_above_zero_units_price_the_dearest_and_units_as_a_string_read():
    # TierRate.startUsageAmount: 'Usage is priced at this rate only after this amount'; a first tier from 730 h up
    # (none below) and int64 units as a JSON string ("1")
    info = _info("2026-06-01T00:00:00Z", (730, "1", 500000000), (2000, "1", 0))
    assert _price(_sku(info)) == pytest.approx(1.5)
