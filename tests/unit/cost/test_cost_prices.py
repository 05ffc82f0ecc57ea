"""The price catalog: every issue-#6 price is there with its source and date; staleness; lookup errors."""

from __future__ import annotations

from datetime import date

import pytest

from onechip.cost import all_prices, cost_lines, estimate, find_prices, is_stale
from onechip.errors import ConfigError

# Issue #6 price list (from the seeds): (chip, region, pricing, USD per chip-hour).
ISSUE_PRICES = [
    ("v5e-1", "us-west4", "spot", 0.5779),
    ("v5e-1", "us-west4", "flex-start", 0.60),
    ("v5e-1", "us-west4", "on-demand", 1.20),
    ("v5e-1", "us-west4", "1y", 0.84),
    ("v5e-1", "us-west4", "3y", 0.54),
    ("v6e-1", "us-east5", "flex-start", 1.35),
    ("v6e-1", "europe-west4", "spot", 1.782),
    ("v6e-1", "us-east5", "spot", 1.4033),
    ("v6e-1", "us", "on-demand", 2.70),
    ("v6e-1", "europe-west4", "on-demand", 2.97),
    ("l4", "us", "on-demand", 0.71),
]


@pytest.mark.parametrize(("chip", "region", "pricing", "usd"), ISSUE_PRICES)
def test_issue_prices_are_in_the_catalog(chip: str, region: str, pricing: str, usd: float) -> None:
    (price,) = find_prices(chip, pricing=[pricing], region=region)
    assert price.usd_per_chip_hour == usd


def test_every_price_has_source_and_iso_date() -> None:
    for price in all_prices():
        assert price.source.strip()
        date.fromisoformat(price.date)


def test_only_flex_start_stops_itself_and_only_spot_is_preemptible() -> None:
    for price in all_prices():
        assert price.stops_itself == (price.pricing == "flex-start")
        assert price.preemptible == (price.pricing == "spot")


def test_staleness_over_90_days() -> None:
    (spot,) = find_prices("v5e-1", pricing=["spot"])  # read 2026-08-09
    assert is_stale(spot, date(2026, 11, 29))  # 112 days
    assert not is_stale(spot, date(2026, 11, 7))  # exactly 90 days: not yet stale
    assert is_stale(spot, date(2026, 11, 8))  # 91 days
    (v6e,) = find_prices("v6e-1", pricing=["flex-start"])  # read 2026-10-25
    line = cost_lines("v6e-1", 1000.0, pricing="flex-start", today="2026-11-29")[0]
    assert not is_stale(v6e, date(2026, 11, 29)) and not line.stale and line.price_age_days == 35


def test_stale_prices_are_warned_about() -> None:
    report = estimate("v5e-1", 1496.5, pricing="spot", today="2026-11-29")
    assert report.lines[0].stale
    assert any("112 days ago" in w for w in report.warnings)


def test_unknown_chip_lists_known_chips() -> None:
    with pytest.raises(ConfigError, match="known chips: .*v5e-1"):
        find_prices("v9z-1")


def test_unknown_region_lists_known_regions() -> None:
    with pytest.raises(ConfigError, match="known regions: europe-west4, us, us-east5"):
        find_prices("v6e-1", region="mars-north1")


def test_unknown_pricing_model_lists_known_models() -> None:
    with pytest.raises(ConfigError, match="unknown pricing model 'cheap'; known: spot, flex-start"):
        find_prices("v5e-1", pricing=["cheap"])


def test_pricing_model_missing_for_chip() -> None:
    with pytest.raises(ConfigError, match="no spot price for l4; known: on-demand"):
        find_prices("l4", pricing=["spot"])


def test_lines_follow_requested_order() -> None:
    lines = cost_lines("v5e-1", 1496.5, pricing=["on-demand", "spot"], today="2026-11-29")
    assert [line.pricing for line in lines] == ["on-demand", "spot"]
