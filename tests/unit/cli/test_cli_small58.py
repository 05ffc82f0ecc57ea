"""CLI rough edges a user hits (helper small58a): an unknown --slo key refused at parse time."""

from __future__ import annotations

import pytest

from factories import one_error_line
from onechip.bench import stats
from onechip.schemas.bench import SLO_KEYS


@pytest.mark.parametrize("extra", [(), ("--find-max", "clients")])
def test_an_unknown_slo_key_is_refused_before_the_search_or_grid_starts(run, extra) -> None:
    # bench.runner.run_grid refused it only once the search had begun ('[bench] find-max: measuring clients-1' first);
    # the keys are the SLO metrics bench.stats computes (SLO_METRICS)
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--slo", "foo_ms=100", *extra)
    assert line.startswith(
        "Invalid value for '--slo': slo: unknown SLO key(s) ['foo_ms']; use e2e_ms, tpot_ms, ttft_ms"
    )


def test_the_slo_keys_the_schema_takes_are_the_metrics_bench_computes() -> None:
    assert set(SLO_KEYS) == set(stats.SLO_METRICS)
