"""`simulate` and `advise` refuse, before simulating anything, work the simulated engine cannot finish within the
simulator's step limit or more than one call may simulate (api._sim_bounds): one line, exit 2, and over MCP a
tool error, where they ran for minutes (a 30,000 x 4,096 x 100,000-token cell) and held the MCP server."""

from __future__ import annotations

import re

import anyio
import pytest
from mcp import Client

from factories import simulated_engine_steps
from onechip import api
from onechip.api import _predict, _sim_bounds
from onechip.errors import ConfigError
from onechip.mcp.server import build_server
from onechip.schemas import BenchConfig, Plan
from onechip.schemas.requests import SimulateRequest
from onechip.sim import priors
from onechip.sim.scheduler import MAX_STEPS


@pytest.fixture(autouse=True)
def nothing_simulated(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ONECHIP_MCP_FILES", str(tmp_path))

    def simulated(*args, **kwargs):
        raise AssertionError("simulated work that should have been refused before any simulation")

    monkeypatch.setattr(_predict, "predicted_cells", simulated)


def _refused(run, *args: str) -> str:
    code, out, err = run(*args)
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_cell_the_engine_cannot_finish_within_the_step_limit_is_refused(run, plan_file, tmp_path):
    # 4,096 clients x 3 requests (one warm-up) of 1,000 + 30,000 tokens: each holds >= 1,000 + k tokens of the
    # 323,520-token pool while it emits its k-th token, so the steps are at least
    # 12,288 x sum(1,000 + k for k = 1..30,000) / 323,520 = 18,232,024 (not max_num_seqs' 12,288 x 30,000 / 256)
    err = _refused(run, "simulate", "--plan", str(plan_file), "--contexts", "1000", "--clients", "4096",
                   "--output-tokens", "30000", "--out", str(tmp_path / "p"))  # fmt: skip
    assert "1,000 tokens x 4,096 clients: 12,288 requests x 30,000 output tokens take at least 18,232,024 engine" in err
    assert "KV pool of 323,520 tokens" in err and f"the simulator stops at {MAX_STEPS:,}" in err
    assert "give fewer --clients, --output-tokens or --requests-per-client" in err
    assert not (tmp_path / "p").exists()


def test_a_cell_beyond_max_model_len_costs_nothing_and_stays_infeasible(plan_file):
    plan = Plan.from_file(plan_file)
    config = BenchConfig(base_url="http://x", contexts=[30000], clients=[4096], output_tokens=100000)
    assert _sim_bounds.min_steps(plan, config, 30000, 4096) == (0, "")  # the simulator refuses it at once
    assert _sim_bounds.work(config, 5, plan=plan) == (0, 0)


def test_a_call_over_the_simulated_tokens_or_steps_is_refused(run, plan_file, tmp_path):
    # 20 seeds x 64 clients x 3 requests x 8,000 tokens = 30,720,000 output tokens
    err = _refused(run, "simulate", "--plan", str(plan_file), "--contexts", "100", "--clients", "64",
                   "--output-tokens", "8000", "--reps", "20", "--out", str(tmp_path / "p"))  # fmt: skip
    assert "this would simulate 30,720,000 output tokens" in err and "at most 20,000,000 in one call" in err
    # one client: a token a step, 100 seeds x 3 requests x 8,000 tokens = 2,400,000 steps (2,400,000 tokens)
    err = _refused(run, "simulate", "--plan", str(plan_file), "--contexts", "100", "--clients", "1",
                   "--output-tokens", "8000", "--reps", "100", "--out", str(tmp_path / "p"))  # fmt: skip
    assert "this would simulate at least 2,400,000 engine steps" in err and f"at most {MAX_STEPS:,} in one" in err
    assert "give fewer --reps, --contexts, --clients, --output-tokens or --requests-per-client" in err


def test_advise_refuses_up_front_what_it_would_simulate_over_its_deployments(run):
    # Llama 3.1 8B on h100: one engine of 4,096 clients, and two engines of 2,048 of which one is simulated (the
    # other is its copy): 3 seeds x (4,096 + 2,048) clients x 3 requests x 100,000 tokens
    err = _refused(run, "advise", "meta-llama/Llama-3.1-8B-Instruct", "--chips", "h100",
                   "--workload", "ctx=30000,clients=4096,output_tokens=100000")  # fmt: skip
    assert "this would simulate 5,529,600,000 output tokens" in err and "over 2 deployments" in err
    assert "give fewer --chips or --reps, or fewer clients or output_tokens in --workload" in err


def test_advise_row_the_engine_cannot_finish_says_why_and_is_not_simulated(run, monkeypatch):
    monkeypatch.setattr(_sim_bounds, "MAX_STEPS", 1000)  # 3 requests x 512 tokens a stream, streams at once: 1,536
    code, out, err = run("advise", "meta-llama/Llama-3.1-8B-Instruct", "--chips", "h100",
                         "--workload", "ctx=100,clients=4,output_tokens=512")  # fmt: skip
    assert code == 2 and "none of the 2 deployments considered could be predicted" in err, err
    said = " ".join(out.split())  # the table's notes wrap at 80 columns
    assert (
        "h100 (1 x TP=1): not simulated: 100 tokens x 4 clients: 12 requests x 512 output tokens take at least 1,536"
        in said
    )
    assert (
        "h100 (2 x TP=1): not simulated: 100 tokens x 2 clients: 6 requests x 512 output tokens take at least 1,536"
        in said
    )


def _call(name: str, args: dict):
    async def go():
        async with Client(build_server(False)) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


def test_mcp_simulate_and_advise_refuse_the_same_as_a_tool_error(plan_file, tmp_path):
    result = _call("simulate", {"plan": str(plan_file), "contexts": [1000], "clients": [4096],
                                "output_tokens": 30000, "out_dir": str(tmp_path / "p")})  # fmt: skip
    line = result.content[0].text
    assert result.is_error and "\n" not in line and "take at least 18,232,024 engine steps" in line
    result = _call("advise", {"model": "meta-llama/Llama-3.1-8B-Instruct", "chips": ["h100"],
                              "workload": {"ctx": 30000, "clients": 4096, "output_tokens": 100000}})  # fmt: skip
    assert result.is_error and "this would simulate 5,529,600,000 output tokens" in result.content[0].text


# Open loop at 0.01 arrivals/s on the seed's plan: a request of 128 + 400 tokens runs a few seconds, so the next
# arrives ~100 s later, mostly to an idle engine, and 6,400 requests x 400 tokens take about a step a token.
# Counted by the in-flight cap (--clients 64) running at once, as in closed loop, this was 40,000 steps and passed;
# it then ran until the simulator's MAX_STEPS (20 s on the 2-core dev machine, 2026-12-03) and ended 'did not
# finish'. (--requests-per-client with --rate is the measured requests of the one cell, as bench's.)
LOW_RATE = ["--contexts", "128", "--clients", "64", "--requests-per-client", "6400", "--output-tokens", "400",
            "--rate", "0.01"]  # fmt: skip
ONE_AT_A_TIME_STEPS = 64 * 100 * 400  # each request alone: one engine step a token (sim.scheduler)


def _steps_said(err: str) -> int:
    return int(re.search(r"take at least ([\d,]+) engine steps", err).group(1).replace(",", ""))


def test_open_loop_at_a_low_rate_counts_the_requests_that_run_at_once(run, plan_file, tmp_path):
    err = _refused(run, "simulate", "--plan", str(plan_file), *LOW_RATE, "--reps", "1", "--out", str(tmp_path / "p"))
    assert "128 tokens at 0.01 req/s, at most 64 in flight: 6,400 requests x 400 output tokens take at least" in err
    # about one at a time: more steps than the simulator allows, never more than one request at a time takes
    assert MAX_STEPS < _steps_said(err) <= ONE_AT_A_TIME_STEPS
    assert "0.01 arrivals/s" in err and "run at once" in err and f"the simulator stops at {MAX_STEPS:,}" in err
    assert err.rstrip().endswith("give fewer --clients, --output-tokens or --requests-per-client, or a higher --rate")
    assert not (tmp_path / "p").exists()


def test_api_simulate_refuses_a_low_open_loop_rate_before_simulating(plan_file, tmp_path):
    request = SimulateRequest(plan=plan_file, contexts=[128], clients=[64], requests_per_client=1280,
                              output_tokens=400, rate_per_s=0.01, reps=5, out_dir=tmp_path / "p")  # fmt: skip
    # 5 seeds x 1,280 x 400 = 2,560,000 tokens, about a step each; counted with 64 at once it passed and ran
    # 55 s (2-core dev machine, 2026-12-03)
    with pytest.raises(ConfigError, match=r"^this would simulate at least [\d,]+ engine steps .* a higher --rate$"):
        api.simulate(request)
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("rate", [0.01, 0.3, 3.0, 300.0])
def test_the_open_loop_bound_never_exceeds_the_steps_the_simulator_runs(plan_file, rate):
    """The refusal is a true 'too much': at every rate the bound is at most the steps simulated (Poisson
    arrivals, three seeds), and at a low rate, where requests run one at a time, within 5% of them."""
    plan = Plan.from_file(plan_file)
    terms = priors.measured_priors(plan)  # what simulate uses without a calibration
    config = BenchConfig(base_url="http://x", contexts=[128], clients=[16], requests_per_client=4,
                         output_tokens=200, rate_per_s=rate, arrivals="poisson")  # fmt: skip
    bound = _sim_bounds.min_steps(plan, config, 128, 16, terms=terms)[0]
    simulated = [simulated_engine_steps(plan, terms, config, seed) for seed in range(3)]
    assert bound <= min(simulated)
    if rate == 0.01:
        assert bound >= 0.95 * max(simulated), (bound, simulated)


def test_a_high_open_loop_rate_is_not_refused(plan_file):
    """The low-rate call above at 100 arrivals/s runs 64 at once: 40,000 steps, well within the limits."""
    plan = Plan.from_file(plan_file)
    config = BenchConfig(base_url="http://x", contexts=[128], clients=[64], requests_per_client=100,
                         output_tokens=400, rate_per_s=100.0, reps=1)  # fmt: skip
    terms = priors.measured_priors(plan)
    assert _sim_bounds.min_steps(plan, config, 128, 64, terms=terms) == (40_000, "at most 64 run at once (in flight)")
    _sim_bounds.refuse_unfinishable(plan, config, 1, terms)
