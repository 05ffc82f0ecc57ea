"""`simulate --find-max` over MCP: the simulate_find_max tool takes simulate's arguments with the search's (find_max,
slo, slo_percentile, find_max_limit) and returns bench's find_max result (WrittenSearch), marked predicted, with its
range over the seeds; the simulate tool, whose result is a run, refuses find_max in one line naming the tool that
searches, as bench and find_max split it."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from mcp import Client

from onechip import api
from onechip.mcp.server import build_server
from onechip.schemas.requests import PlanRequest


def call(name: str, args: dict):
    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


@pytest.fixture
def plan_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    plan = api.plan(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1"))
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    return {"plan": "plan.json", "contexts": [1024], "output_tokens": 32, "reps": 3}


def test_simulate_find_max_returns_the_predicted_search(plan_here: dict, tmp_path: Path) -> None:
    args = {**plan_here, "find_max": "clients", "slo": {"tpot_ms": 20}, "out_dir": "s"}
    result = call("simulate_find_max", args)
    assert not result.is_error, result.content[0].text
    got = result.structured_content
    assert got["run_dir"] == "s" and (tmp_path / "s" / "search.json").is_file()
    assert got["prediction"]["seeds"] == 3 and got["kind"] == "clients"
    low, high = got["max_load_range"]
    assert low <= got["max_clients"] <= high
    line = result.content[0].text
    assert "\n" not in line and line.startswith(f"s: predicted {got['max_clients']} clients (")


@pytest.mark.parametrize(
    ("tool", "args", "said"),
    [
        ("simulate", {"find_max": "clients", "slo": {"tpot_ms": 20}},
         "simulate predicts a grid; to search the most load under slo call simulate_find_max"),
        ("simulate_find_max", {}, "simulate_find_max needs find_max: clients or rate (and slo)"),
        ("simulate_find_max", {"find_max": "clients"},
         "find_max searches for the largest load meeting an SLO: give slo too"),
        ("simulate_find_max", {"find_max": "rate", "slo": {"ttft_ms": 500}, "rate_per_s": 4},
         "find_max rate chooses the rate: drop rate_per_s (find_max_limit bounds it)"),
    ],
)  # fmt: skip
def test_a_search_asked_of_the_wrong_tool_or_without_its_slo_is_refused_in_one_line(
    plan_here: dict, tool: str, args: dict, said: str
) -> None:
    result = call(tool, {**plan_here, **args})
    assert result.is_error and result.content[0].text == said


def test_bench_refuses_find_max_rather_than_measuring_a_grid() -> None:
    # bench's tool ran api.bench on a config with find_max (a plain grid at the default clients, the search dropped
    # unsaid); the search is find_max's tool, as simulate's is simulate_find_max's
    result = call("bench", {"base_url": "http://127.0.0.1:9", "find_max": "rate", "slo": {"ttft_ms": 500}})
    assert result.is_error and result.content[0].text == (
        "bench measures a grid; to search the most load under slo call find_max"
    )
