"""`simulate --rate` predicts what `bench --rate` with the same flags measures (issue 22: one definition): one
open-loop cell per context, in flight at most --clients when given (else no cap), probe_requests(rate) measured
requests per rep unless --requests-per-client, labelled as bench labels it (BenchConfig.load_text)."""

from __future__ import annotations

import pytest

from factories import simulated_engine_steps
from onechip import api
from onechip.api import _sim_bounds
from onechip.bench.runner import open_loop
from onechip.errors import ConfigError
from onechip.schemas import BenchConfig, Plan
from onechip.schemas.bench import probe_requests
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import SimulateRequest
from onechip.sim import priors


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))


WORKLOAD = {"contexts": "128", "output_tokens": "32", "rate_per_s": "20"}


def _simulated(plan_file, tmp_path, **typed: str):
    """A simulate call as the CLI builds it (build_request: the fields typed are the fields set)."""
    fields = {"plan": str(plan_file), "reps": "1", "out_dir": str(tmp_path / "p"), **WORKLOAD, **typed}
    return api.simulate(build_request(SimulateRequest, fields))


def _bench_config(**typed: str) -> BenchConfig:
    """What `onechip bench URL` with the same flags runs (bench.runner.open_loop on the typed config)."""
    return open_loop(build_request(BenchConfig, {"base_url": "http://127.0.0.1:8000", **WORKLOAD, **typed}))


@pytest.mark.parametrize(
    ("typed", "label"),
    [
        ({}, "20 req/s, no in-flight cap"),
        ({"clients": "4"}, "20 req/s, at most 4 in flight"),
        ({"requests_per_client": "50"}, "20 req/s, no in-flight cap"),
    ],
)
def test_simulate_rate_runs_bench_rates_schedule(plan_file, tmp_path, typed, label):
    """The simulator read --rate as the closed-loop grid's clients (1 and 4 by default), each capped in flight at
    its clients and sending clients x 2 requests; bench sends one cell of probe_requests(20) = 200 arrivals (10 s
    of them, schemas.bench.PROBE_S), no cap unless --clients."""
    run = _simulated(plan_file, tmp_path, **typed)
    bench = _bench_config(**typed)
    for field in ("clients", "max_in_flight", "requests_per_client", "rate_per_s"):
        assert getattr(run.config, field) == getattr(bench, field), field
    expected = int(typed.get("requests_per_client", probe_requests(20.0)))
    assert [(c.context_tokens, c.clients) for c in run.cells] == [(128, 1)]
    assert run.cells[0].reps[0].requests_ok == expected
    assert run.config.load_text(1) == bench.load_text(1) == label


def test_simulate_rate_refuses_several_clients_as_bench_does(run, plan_file, tmp_path):
    code, _, err = run("simulate", "--plan", str(plan_file), "--rate", "20", "--clients", "1,4",
                       "--out", str(tmp_path / "p"))  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "--rate: give one --clients value" in err


def test_the_open_loop_bound_counts_an_uncapped_stream_as_many_in_flight(plan_file):
    """A bench --rate cell is one stream with no in-flight cap: the bound on its steps counted the one stream as
    one request at a time (300 requests x 200 tokens = 60,000 steps) and so could refuse a call the simulator
    finishes in far fewer; it must never exceed the steps simulated."""
    plan = Plan.from_file(plan_file)
    terms = priors.measured_priors(plan)
    config = open_loop(build_request(BenchConfig, {"base_url": "http://x", "contexts": "128", "output_tokens": "200",
                                                   "rate_per_s": "30"}))  # fmt: skip
    assert (config.clients, config.max_in_flight, config.requests_per_client) == ([1], 0, probe_requests(30.0))
    bound = _sim_bounds.min_steps(plan, config, 128, 1, terms=terms)[0]
    assert bound <= min(simulated_engine_steps(plan, terms, config, seed) for seed in range(2))


def test_simulate_bounds_a_rate_runs_requests_as_bench_does(plan_file, tmp_path):
    # was: simulate built its BenchConfig from every field, so the bound (schemas.bench MAX_REQUESTS) counted its
    # default --requests-per-client 2 over --clients 1,4 where open_loop then sends probe_requests(1,000) = 10,000 a
    # rep, 1,001 reps; bench refused the same flags as 10,010,000 requests
    typed = {"rate_per_s": "1000", "reps": "1001"}
    with pytest.raises(ConfigError) as bench_said:
        _bench_config(**typed)
    with pytest.raises(ConfigError) as simulate_said:
        _simulated(plan_file, tmp_path, **typed)
    said = f"would send {1001 * probe_requests(1000.0):,} requests"
    assert said in str(bench_said.value) and said in str(simulate_said.value), (bench_said.value, simulate_said.value)
