"""`onechip simulate --workload agent --replicas N --router-policies a,b` and `advise --workload ...,turns=N`:
the routing policies' predicted prefix-cache hit share beside TTFT per turn (sim.routing), written and printed
as `bench --router-policies` writes and prints measured ones."""

from __future__ import annotations

import json

import pytest

from onechip.schemas.bench import PolicyComparison


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))


AGENT = ["--workload", "agent", "--contexts", "2048", "--clients", "8", "--turns", "4", "--reps", "2"]


def test_simulate_compares_policies_over_replicas(run, tmp_path, plan_file):
    out_dir = tmp_path / "pred"
    code, out, err = run("simulate", "--plan", str(plan_file), *AGENT, "--replicas", "2",
                         "--router-policies", "round_robin,cache_aware", "--out", str(out_dir))  # fmt: skip
    assert code == 0, err
    assert "routing policies" in out and "round_r" in out and "cache_a" in out
    result = PolicyComparison.model_validate_json((out_dir / "policies.json").read_text())
    cells = {r.policy: r.cells[0] for r in result.runs}
    assert cells["cache_aware"].server_hit_rate > cells["round_robin"].server_hit_rate
    for cell in cells.values():
        assert len(cell.ttft_ms_by_turn) == 4 and all(t and t > 0 for t in cell.ttft_ms_by_turn)
        assert len(cell.requests_by_replica) == 2 and sum(cell.requests_by_replica) == 8 * (1 + 4)
    run_dir = json.loads((out_dir / "cache_aware" / "summary.json").read_text())
    assert run_dir["prediction"]["replicas"] == 2 and run_dir["prediction"]["router_policy"] == "cache_aware"
    assert run_dir["config"]["workload"] == "agent" and len(run_dir["cells"][0]["turns"]) == 4


def test_simulate_one_policy_prints_turns_and_replicas(run, tmp_path, plan_file):
    code, out, err = run("simulate", "--plan", str(plan_file), *AGENT, "--replicas", "2", "--out", str(tmp_path / "p"))
    assert code == 0, err
    text = " ".join(out.split())
    assert "agent sessions" in text and "prefix-cache hit share" in text and "cache_aware over 2 engines" in text
    assert "replicas: 2,048 x 8 clients" in text


@pytest.mark.parametrize(
    "args,message",
    [
        (["--router-policies", "consistent_hash"], "consistent_hash is not modelled"),
        (["--router-policies", "round_robin,round_robin"], "named twice"),
        (["--replicas", "0"], "--replicas"),
        (["--turns", "0"], "--turns"),
    ],
)
def test_simulate_refuses_bad_replica_options_in_one_line(run, tmp_path, plan_file, args, message):
    code, _, err = run("simulate", "--plan", str(plan_file), *AGENT, *args, "--out", str(tmp_path / "x"))
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_advise_predicts_agent_sessions_with_the_policys_hit_share(run):
    args = ["advise", "google/gemma-4-E2B-it", "--chips", "v5e-1", "--workload", "ctx=2048,clients=8,turns=4",
            "--json"]  # fmt: skip
    shares = {}
    for policy in ("round_robin", "cache_aware"):
        code, out, err = run(*args, "--router-policy", policy)
        assert code == 0, err
        rows = {r["engines"]: r for r in json.loads(out)["rows"]}
        assert rows[1]["router_policy"] is None and rows[2]["router_policy"] == policy
        shares[policy] = rows[2]["prefix_cache_hit_share"]
        # one engine holds every session's prefix: its hit share is a replica pair's at best
        assert rows[1]["prefix_cache_hit_share"] >= shares[policy]
    assert shares["cache_aware"] > shares["round_robin"]


def test_advise_refuses_a_policy_it_does_not_model(run):
    code, _, err = run("advise", "google/gemma-4-E2B-it", "--workload", "turns=2", "--router-policy", "power_of_two")
    assert code == 2 and "power_of_two is not modelled" in err


def test_advise_refuses_sessions_bench_would_refuse_in_one_line(run):
    # bench's bound (schemas.bench MAX_REQUESTS): 3 reps x 4,096 clients x 1,000 turns is past 10,000,000
    code, _, err = run("advise", "google/gemma-4-E2B-it", "--workload", "ctx=1000,clients=4096,turns=1000")
    assert code == 2 and "would send 12,288,000 requests" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_the_simulate_job_refuses_several_policies_rather_than_dropping_some(tmp_path, plan_file):
    # over MCP simulate returns one run: two policies are refused, never predicted as the first alone
    from onechip import api
    from onechip.errors import ConfigError
    from onechip.schemas.requests import SimulateRequest

    request = SimulateRequest(plan=plan_file, workload="agent", replicas=2, out_dir=tmp_path / "o",
                              router_policies=["round_robin", "cache_aware"])  # fmt: skip
    with pytest.raises(ConfigError, match="one routing policy per run"):
        api.simulate(request)
    assert not (tmp_path / "o").exists()


def test_router_policies_without_agent_sessions_over_replicas_are_refused() -> None:
    from onechip.errors import ConfigError
    from onechip.schemas.inputs import build_request
    from onechip.schemas.requests import SimulateRequest

    for given in ({"replicas": 2}, {"workload": "agent"}):
        with pytest.raises(ConfigError, match="routing is predicted for agent sessions over replicas"):
            build_request(SimulateRequest, {"plan": "p.json", "router_policies": ["round_robin"], **given})
    build_request(
        SimulateRequest, {"plan": "p.json", "workload": "agent", "replicas": 2, "router_policies": ["random"]}
    )
