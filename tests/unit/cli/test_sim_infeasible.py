"""`simulate` of a grid with no feasible cell (every context beyond the plan's max_model_len): the run is written,
as any prediction, but the CLI exits 2 with one line naming the first cell's reason, and the MCP tool returns a
tool error, as `advise` does when no chip serves; a grid with one feasible cell stays a result."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from onechip.mcp.server import build_server

# the seed's plan (conftest SEED_PLAN): max_model_len 32,768; simulate's default output is 32 tokens
BEYOND = "100000 + 32 tokens exceed max_model_len 32768"


def _unserved(out) -> str:
    """The one line api.simulate raises for the grid below, the CLI's and the MCP tool's alike."""
    return (f"no cell of the grid is feasible (100,000 tokens x 1 client: {BEYOND}); the predicted run is in "
            f"{out}/summary.json")  # fmt: skip


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ONECHIP_MCP_FILES", str(tmp_path))


def test_a_grid_with_no_feasible_cell_is_written_and_exits_2(run, plan_file, tmp_path):
    out = tmp_path / "p"
    code, _, err = run("simulate", "--plan", str(plan_file), "--contexts", "100000", "--clients", "1,4",
                       "--out", str(out))  # fmt: skip
    assert code == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == f"error: {_unserved(out)}"
    cells = json.loads((out / "summary.json").read_text())["cells"]  # kept: the data the refusal names
    assert [c["status"] for c in cells] == ["infeasible", "infeasible"]


def test_a_grid_with_one_feasible_cell_exits_0(run, plan_file, tmp_path):
    code, _, err = run("simulate", "--plan", str(plan_file), "--contexts", "128,100000", "--clients", "1",
                       "--output-tokens", "8", "--reps", "1", "--out", str(tmp_path / "p"))  # fmt: skip
    assert code == 0, err


def test_mcp_simulate_of_no_feasible_cell_is_a_tool_error(plan_file, tmp_path):
    async def go():
        async with Client(build_server(False)) as client:
            return await client.call_tool(
                "simulate", {"plan": str(plan_file), "contexts": [100000], "out_dir": str(tmp_path / "m")}
            )

    result = anyio.run(go)
    assert result.is_error and result.content[0].text == _unserved(tmp_path / "m")  # the CLI's line, no prefix
    assert (tmp_path / "m" / "summary.json").is_file()


def test_api_simulate_refuses_no_feasible_cell_after_writing_the_run(plan_file, tmp_path):
    # the one place the CLI and the MCP tool get the refusal from (it was checked in each of them)
    from onechip import api
    from onechip.errors import ConfigError
    from onechip.schemas.requests import SimulateRequest

    with pytest.raises(ConfigError) as info:
        api.simulate(SimulateRequest(plan=plan_file, contexts=[100000], out_dir=tmp_path / "a"))
    assert str(info.value) == _unserved(tmp_path / "a")
    assert (tmp_path / "a" / "summary.json").is_file()


def test_policies_with_no_feasible_cell_are_written_and_exit_2(run, plan_file, tmp_path):
    """`--router-policies a,b` runs one prediction per policy (api.simulate_policies): it exited 0 with every
    policy's every cell infeasible, as the one-policy path had (found by helper break3)."""
    out = tmp_path / "pol"
    code, _, err = run("simulate", "--plan", str(plan_file), "--workload", "agent", "--contexts", "100000",
                       "--clients", "2", "--turns", "2", "--replicas", "2",
                       "--router-policies", "round_robin,cache_aware", "--out", str(out))  # fmt: skip
    assert code == 2 and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: no cell of the grid is feasible under round_robin or cache_aware (100,000 tokens "
                           "x 2 clients: a session's last turn needs")  # fmt: skip
    assert line.endswith(f"the predicted runs are in {out}/<policy>/summary.json")
    for policy in ("round_robin", "cache_aware"):  # kept: the data the refusal names
        cells = json.loads((out / policy / "summary.json").read_text())["cells"]
        assert [c["status"] for c in cells] == ["infeasible"]
    assert (out / "policies.json").is_file()


def test_an_open_loop_grid_with_no_feasible_cell_says_its_rate(run, plan_file, tmp_path):
    # simulate --rate: the one cell per context is one stream numbering its requests, not '1 clients' (the line said
    # '100,000 tokens x 1 clients' under a run with no in-flight cap)
    out = tmp_path / "p"
    code, _, err = run("simulate", "--plan", str(plan_file), "--contexts", "100000", "--rate", "2", "--out", str(out))
    assert code == 2
    said = f"no cell of the grid is feasible (100,000 tokens at 2 req/s, no in-flight cap: {BEYOND}); "
    assert err.strip().splitlines()[-1].startswith(f"error: {said}"), err
