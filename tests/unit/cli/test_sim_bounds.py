"""`simulate` and `advise` refuse, before simulating anything, work the simulated engine cannot finish within the
simulator's step limit or more than one call may simulate (api._sim_bounds): one line, exit 2, and over MCP a
tool error, where they ran for minutes (a 30,000 x 4,096 x 100,000-token cell) and held the MCP server."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client

from onechip.api import _predict, _sim_bounds
from onechip.mcp.server import build_server
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
    from onechip.schemas import BenchConfig, Plan

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
