"""schemas.bench BenchConfig._bounded: a clients search's --find-max-limit is a client count, 1 to MAX_CLIENTS.
Below 1 the search's bracket (bench.search.LoadSearch: loads doubling from 1 below the limit, then the limit as
int(limit)) probed 0 clients: bench measured 'clients-0' and failed 'contexts and clients must be positive integers',
simulate failed 'internal error (IndexError ...)'; a fractional one was cut to int(limit) unsaid (the CLI's
refusal: tests/unit/cli/test_sim_find_max_cli.py)."""

from __future__ import annotations

import pytest

from onechip.errors import ConfigError
from onechip.schemas import BenchConfig
from onechip.schemas.inputs import build_request

SEARCH = {"base_url": "http://127.0.0.1:9", "find_max": "clients", "slo": "tpot_ms=20"}


@pytest.mark.parametrize("limit", ["0.5", "1.5", "63.9"])
def test_a_clients_search_limit_that_is_not_a_whole_client_count_is_refused(limit: str) -> None:
    with pytest.raises(ConfigError, match=rf"--find-max-limit {limit}: a clients search's limit is a whole number of "
                                          r"clients, 1 to 4,096"):  # fmt: skip
        build_request(BenchConfig, {**SEARCH, "find_max_limit": limit})


@pytest.mark.parametrize("limit", ["1", "64", "4096"])
def test_a_whole_clients_limit_is_taken(limit: str) -> None:
    assert build_request(BenchConfig, {**SEARCH, "find_max_limit": limit}).find_max_limit == float(limit)


def test_a_rate_search_limit_below_one_is_taken() -> None:
    # requests/s, not a count: 0.5 req/s is a rate (MIN_RATE is its floor)
    config = build_request(BenchConfig, {**SEARCH, "find_max": "rate", "find_max_limit": "0.5"})
    assert config.find_max_limit == 0.5
