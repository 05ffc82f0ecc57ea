"""schemas.bench BenchConfig._bounded: the bound on a cell's requests (MAX_REQUESTS, all reps) counts what the run
will send: a --rate run one stream of --requests-per-client (vllm bench serve's --num-prompts), probe_requests(rate) or
rate x --duration-s arrivals per rep (bench.runner.open_loop); a --find-max search its largest probe; `simulate` the
same, by the same rule (tests/unit/cli/test_sim_open_loop.py)."""

from __future__ import annotations

from typing import Any

import pytest

from onechip.bench.runner import open_loop
from onechip.errors import ConfigError
from onechip.schemas import BenchConfig
from onechip.schemas.bench import MAX_REQUESTS, probe_requests
from onechip.schemas.inputs import build_request

URL = {"base_url": "http://127.0.0.1:9"}


def _typed(**typed: Any) -> BenchConfig:
    """A config as the CLI builds it (build_request: the fields typed are the fields set)."""
    return build_request(BenchConfig, {**URL, **typed})


def test_a_rate_run_is_bounded_by_what_it_sends_not_clients_times_requests():
    # was: refused as 'a cell would send 25,600,000 requests (reps x clients x per stream)': with --rate, --clients is
    # the in-flight cap and --requests-per-client the requests of the one stream per rep (vllm bench serve's
    # --num-prompts), so it sends 2 reps x 200,000
    cfg = open_loop(_typed(rate_per_s=10, clients="64", requests_per_client=200_000))
    assert (cfg.clients, cfg.max_in_flight, cfg.requests_per_client, cfg.reps) == ([1], 64, 200_000, 2)
    assert cfg.rate_requests(10.0) == 200_000  # a rep; 2 reps: 400,000, within MAX_REQUESTS


@pytest.mark.parametrize(
    ("typed", "sent"),
    [
        # 11 reps x 1,000,000 requests of the one stream
        ({"rate_per_s": 10, "requests_per_client": 1_000_000, "reps": 11}, 11_000_000),
        # 2 reps x ~1,000 req/s x 10,000 s of arrivals (bench.runner.arrival_offsets: mean rate x duration)
        ({"rate_per_s": 1000, "duration_s": 10_000}, 2 * 10_000_000),
        # 1,001 reps x probe_requests(1,000 req/s) = 10,000 (PROBE_MAX_REQUESTS)
        ({"rate_per_s": 1000, "reps": 1001}, 1001 * probe_requests(1000.0)),
        # a rate search: its largest probe, at --find-max-limit, sends probe_requests(limit) a rep
        ({"find_max": "rate", "slo": "ttft_ms=500", "find_max_limit": 1000, "reps": 1001}, 1001 * 10_000),
        # a clients search: its largest probe runs --find-max-limit streams (was counted at max(--clients) = 4)
        (
            {"find_max": "clients", "slo": "ttft_ms=500", "find_max_limit": 4096, "requests_per_client": 1250},
            2 * 4096 * 1250,
        ),
    ],
)
def test_what_a_cell_would_send_past_the_bound_is_refused_in_one_line(typed, sent):
    assert sent > MAX_REQUESTS
    with pytest.raises(ConfigError) as info:
        _typed(**typed)
    assert f"would send {sent:,} requests" in str(info.value) and "\n" not in str(info.value), info.value
