"""The seed article's cost section (article-en-single-tpu-agent-backend, v5e-1, us-west4), as tests.

Each value is the article's, rounded the way the article prints it; where the article's figure and the
arithmetic could disagree the test computes the arithmetic and checks the article's rounding of it.
"""

from __future__ import annotations

import pytest

from onechip.cost import arithmetic, break_evens, cost_lines, estimate, find_prices, restart_costs
from onechip.errors import ConfigError
from onechip.schemas import BenchRun

TODAY = "2026-11-29"

# Article table "workload | tok/s | spot | flex-start | on-demand" ($/M output tokens).
ARTICLE_TABLE = [
    (1496.5, 0.107, 0.111, 0.223),  # 128 ctx, 64 clients
    (1258.7, 0.128, 0.132, 0.265),  # 1K ctx, 64 clients
    (991.0, 0.162, 0.168, 0.336),  # 1K ctx, 16 clients
    (399.6, 0.402, 0.417, 0.834),  # 8K ctx, 16 clients
    (123.7, 1.298, 1.347, 2.695),  # 1 client (any ctx)
]


@pytest.mark.parametrize(("tok_s", "spot", "flex", "on_demand"), ARTICLE_TABLE)
def test_usd_per_mtok_matches_article_table(tok_s: float, spot: float, flex: float, on_demand: float) -> None:
    lines = {line.pricing: line for line in cost_lines("v5e-1", tok_s, today=TODAY)}
    assert round(lines["spot"].usd_per_mtok, 3) == spot
    assert round(lines["flex-start"].usd_per_mtok, 3) == flex
    assert round(lines["on-demand"].usd_per_mtok, 3) == on_demand


def test_usd_per_mtok_formula() -> None:
    # 0.5779 $/h over 1,496.5 tok/s x 3,600 s = 5,387,400 tok/h -> 0.10727 $/M
    assert arithmetic.usd_per_mtok(0.5779, 1496.5) == pytest.approx(0.5779 / 5.3874, rel=1e-12)


def test_monthly_cost_at_730_hours() -> None:
    # Article: "Running one chip 24/7: $422/month on spot, $438 on flex-start, $876 on-demand."
    lines = {line.pricing: line for line in cost_lines("v5e-1", 1496.5, today=TODAY)}
    assert round(lines["spot"].monthly_usd) == 422
    assert round(lines["flex-start"].monthly_usd) == 438
    assert round(lines["on-demand"].monthly_usd) == 876
    assert lines["spot"].monthly_usd == pytest.approx(421.867)


def test_pricing_columns_vs_spot() -> None:
    # Article price table "vs spot": 3y -6.6%, flex-start +3.8%, 1y +45%, on-demand +108%,
    # and "the 2.08x between on-demand and spot".
    prices = {p.pricing: p.usd_per_chip_hour for p in find_prices("v5e-1", region="us-west4")}
    spot = prices["spot"]
    assert round((prices["3y"] / spot - 1) * 100, 1) == -6.6
    assert round((prices["flex-start"] / spot - 1) * 100, 1) == 3.8
    assert round((prices["1y"] / spot - 1) * 100) == 45
    assert round((prices["on-demand"] / spot - 1) * 100) == 108
    assert round(prices["on-demand"] / spot, 2) == 2.08


def test_batching_beats_pricing() -> None:
    # Article: going from 1 client to 64 at short context is a 12.1x cost reduction per token.
    lines_1 = cost_lines("v5e-1", 123.7, pricing="spot", today=TODAY)
    lines_64 = cost_lines("v5e-1", 1496.5, pricing="spot", today=TODAY)
    assert round(lines_1[0].usd_per_mtok / lines_64[0].usd_per_mtok, 1) == 12.1


def test_restart_cost_cold_and_warm_at_spot() -> None:
    # Article: "Measured rebuild cost: $0.1376 cold, $0.0798 warm" -- 0.5779 x 857/3600 and x 497/3600.
    spot = find_prices("v5e-1", pricing=["spot"])
    by_kind = {r.kind: r for r in restart_costs(spot, cold_boot_s=857, warm_boot_s=497)}
    assert round(by_kind["cold"].usd, 4) == 0.1376
    assert round(by_kind["warm"].usd, 4) == 0.0798
    # The article's prose rounds the cold one to "$0.138".
    assert round(by_kind["cold"].usd, 3) == 0.138


def test_break_even_spot_vs_flex_start() -> None:
    # Article: flex-start premium $0.0221/hour; spot wins only while preemptions are less frequent than
    # every 6.2 h (cold, 857 s) or 3.6 h (warm, 497 s).
    prices = find_prices("v5e-1", pricing=["spot", "flex-start"])
    by_kind = {b.kind: b for b in break_evens(prices, cold_boot_s=857, warm_boot_s=497)}
    assert by_kind["cold"].premium_usd_per_hour == pytest.approx(0.0221)
    assert by_kind["cold"].hours == pytest.approx(0.5779 * 857 / 3600 / 0.0221)
    assert round(by_kind["cold"].hours, 1) == 6.2
    assert round(by_kind["warm"].hours, 1) == 3.6
    assert by_kind["cold"].region == "us-west4"


def test_break_even_none_when_flex_start_is_cheaper() -> None:
    # v6e us-east5: flex-start $1.35 is below spot $1.4033 (survey: flex-start "can be below spot").
    prices = find_prices("v6e-1", pricing=["spot", "flex-start"], region="us-east5")
    (only,) = break_evens(prices, cold_boot_s=857)
    assert only.premium_usd_per_hour < 0
    assert only.hours is None


def test_forgotten_weekend() -> None:
    # Article: "One forgotten weekend on a spot node ($0.58 x 60 h ~ $35)".
    assert round(arithmetic.monthly_usd(0.5779, hours=60)) == 35


def test_non_positive_throughput_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="positive"):
        arithmetic.usd_per_mtok(0.5779, 0)
    with pytest.raises(ConfigError, match="negative"):
        arithmetic.restart_usd(-1, 0.5779)


@pytest.mark.parametrize("tok_per_s", [float("nan"), float("inf")])
def test_nan_or_infinite_throughput_is_a_config_error(tok_per_s: float) -> None:
    # `onechip cost --output-tok-per-s nan` printed "$nan" per million tokens with exit 0.
    with pytest.raises(ConfigError, match="finite"):
        arithmetic.usd_per_mtok(0.5779, tok_per_s)


@pytest.mark.parametrize("boot_s", [float("nan"), float("inf")])
def test_nan_or_infinite_boot_time_is_a_config_error(boot_s: float) -> None:
    with pytest.raises(ConfigError, match="finite"):
        arithmetic.restart_usd(boot_s, 0.5779)


def test_estimate_assembles_everything() -> None:
    report = estimate(
        "v5e-1", 1496.5, pricing="spot,flex-start,on-demand", cold_boot_s=857, warm_boot_s=497, today=TODAY
    )
    assert [line.pricing for line in report.lines] == ["spot", "flex-start", "on-demand"]
    assert {(b.kind, round(b.hours, 1)) for b in report.break_even} == {("cold", 6.2), ("warm", 3.6)}
    # Restarts are priced where preemption forces them: at spot, as the article does.
    assert [(r.kind, r.pricing, round(r.usd, 4)) for r in report.restarts] == [
        ("cold", "spot", 0.1376),
        ("warm", "spot", 0.0798),
    ]
    assert report.today == TODAY


def test_estimate_needs_a_throughput() -> None:
    with pytest.raises(ConfigError, match="output-tok-per-s"):
        estimate("v5e-1", today=TODAY)


def _bench(cells: list[dict]) -> BenchRun:
    """A bench summary holding `cells` (summary.json as `onechip.report.rundir` loads it)."""
    return BenchRun.model_validate(
        {"tool_version": "0.1.0", "created_at": TODAY, "config": {"base_url": "http://127.0.0.1:8000"}, "cells": cells}
    )


def test_estimate_prices_every_bench_cell_and_keeps_failed_ones() -> None:
    bench = _bench(
        [
            {"context_tokens": 128, "clients": 64, "status": "ok", "output_tok_per_s": 1496.5},
            {"context_tokens": 128, "clients": 1, "status": "ok", "output_tok_per_s": 123.7},
            {"context_tokens": 8192, "clients": 64, "status": "infeasible", "reason": "beyond the KV pool"},
            {"context_tokens": 1024, "clients": 64, "status": "failed", "output_tok_per_s": None},
        ]
    )
    report = estimate("v5e-1", bench=bench, pricing="spot", today=TODAY, measured_on="cpu")
    assert report.output_tok_per_s == 1496.5  # the best ok cell
    assert [round(c.usd_per_mtok.get("spot", 0), 3) for c in report.cells] == [0.107, 1.298, 0, 0]
    assert [c.status for c in report.cells] == ["ok", "ok", "infeasible", "failed"]
    assert any("measured on cpu" in w for w in report.warnings)


def test_cells_across_regions_are_labelled_by_region() -> None:
    # v6e-1 has spot in two regions (us-east5 1.4033, europe-west4 1.782): each cell keeps both apart.
    bench = _bench([{"context_tokens": 1024, "clients": 16, "status": "ok", "output_tok_per_s": 1283.3}])
    report = estimate("v6e-1", bench=bench, pricing="spot", today=TODAY)
    (cell,) = report.cells
    assert cell.usd_per_mtok["spot (us-east5)"] == pytest.approx(1.4033 / (1283.3 * 3600) * 1e6)
    assert cell.usd_per_mtok["spot (europe-west4)"] == pytest.approx(1.782 / (1283.3 * 3600) * 1e6)
