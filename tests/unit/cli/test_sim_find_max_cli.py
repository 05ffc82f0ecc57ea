"""`simulate --find-max clients|rate --slo ...`: bench's SLO search over predicted cells (issue 22: ask the simulator
how many clients, or what rate, a chip holds under an SLO before renting it), refused as bench refuses it, its
answer with its range over the seeds, and bounded before any simulation as simulate bounds a grid."""

from __future__ import annotations

import json

import pytest

from onechip.api import _sim_bounds
from onechip.schemas.bench import SearchResult


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))


# a 1,024-token context, the seed's, 32 output tokens: a search of a few seconds on priors
SEARCH = ["--contexts", "1024", "--output-tokens", "32", "--reps", "3", "--find-max", "clients", "--slo", "tpot_ms=20"]


def test_simulate_find_max_prints_the_search_and_writes_it(run, plan_file, tmp_path):
    out = tmp_path / "s"
    code, stdout, err = run("simulate", "--plan", str(plan_file), *SEARCH, "--out", str(out))
    assert code == 0, err
    result = SearchResult.model_validate_json((out / "search.json").read_text())
    assert result.prediction is not None and result.prediction.seeds == 3  # marked predicted, with its seeds
    assert result.kind == "clients" and result.max_clients is not None and result.max_clients >= 1
    # bench's report beside it, and one predicted run per probe where the probe says it is
    assert (out / "search.md").is_file() and (out / "search.html").is_file()
    for probe in result.probes:
        assert (out / f"clients-{int(probe.load)}" / "summary.json").is_file()
        assert probe.run_dir == str(out / f"clients-{int(probe.load)}")
    assert f"max load meeting the SLOs (predicted): {result.max_clients} clients" in " ".join(stdout.split())
    low, high = result.max_load_range or (None, None)
    assert low is not None and high is not None and low <= result.max_clients <= high
    # one table row per probe, in load order: each load starts a row (the answer's and its miss's among them)
    rows = [line.split("│")[1].strip() for line in stdout.splitlines() if line.startswith("│")]
    loads = [int(r) for r in rows if r]
    assert loads == sorted(int(p.load) for p in result.probes)


def test_simulate_find_max_json_is_the_search(run, plan_file, tmp_path):
    code, stdout, err = run("simulate", "--plan", str(plan_file), *SEARCH, "--out", str(tmp_path / "s"), "--json")
    assert code == 0, err
    printed = json.loads(stdout[: stdout.rindex("}") + 1])
    assert printed == json.loads((tmp_path / "s" / "search.json").read_text())


@pytest.mark.parametrize(
    "flags",
    [
        ["--find-max", "clients"],  # no --slo
        ["--find-max", "clients", "--slo", "foo_ms=1"],  # a metric bench does not compute
        ["--find-max", "rate", "--rate", "4", "--slo", "ttft_ms=500"],  # both --rate and --find-max rate
        ["--find-max", "clients", "--rate", "4", "--slo", "ttft_ms=500"],
        ["--slo-percentile", "50"],  # tunes a search not asked for
        ["--find-max-limit", "8"],
        ["--find-max", "clients", "--clients", "4", "--slo", "ttft_ms=500"],
        ["--find-max", "rate", "--clients", "1,4", "--slo", "ttft_ms=500"],
        ["--find-max", "clients", "--contexts", "128,1024", "--slo", "ttft_ms=500"],
        ["--find-max", "clients", "--find-max-limit", "5000", "--slo", "ttft_ms=500"],  # over MAX_CLIENTS
        ["--find-max", "rate", "--find-max-limit", "0.0005", "--slo", "ttft_ms=500"],  # under MIN_RATE
        # not a client count: below 1 the search probed 0 clients (simulate: 'internal error (IndexError ...)',
        # bench: 'contexts and clients must be positive integers' after 'measuring clients-0'); 1.5 was cut to 1
        ["--find-max", "clients", "--find-max-limit", "0.5", "--slo", "ttft_ms=500"],
        ["--find-max", "clients", "--find-max-limit", "1.5", "--slo", "ttft_ms=500"],
        ["--find-max", "clients", "--slo", "ttft_ms=0"],  # a bound no request meets
    ],
)
def test_bad_find_max_is_refused_in_one_line_as_bench_refuses_it(run, plan_file, tmp_path, flags):
    code, stdout, err = run("simulate", "--plan", str(plan_file), *flags, "--out", str(tmp_path / "s"))
    bench_code, _, bench_err = run("bench", "http://127.0.0.1:9", *flags)  # refused before it connects
    assert (code, bench_code) == (2, 2), (stdout, err)
    (line,) = err.strip().splitlines()
    assert line == bench_err.strip() and "Traceback" not in err
    assert not (tmp_path / "s").exists()


def test_find_max_rate_with_requests_per_client_names_no_flag_simulate_lacks(run, plan_file):
    # bench's refusal also says --duration-s sets each probe's length: simulate has no --duration-s
    code, _, err = run("simulate", "--plan", str(plan_file), "--find-max", "rate", "--slo", "ttft_ms=500",
                       "--requests-per-client", "5")  # fmt: skip
    assert code == 2 and "--requests-per-client does not apply" in err and "--duration-s" not in err


def test_a_search_over_the_call_bound_is_refused_before_simulating(run, plan_file, tmp_path, monkeypatch):
    # its largest probe (4,096 clients x 3 requests x 256 tokens, one seed: 3.1M tokens) is within the 20M tokens one
    # call may simulate, but the most probes the search can take are not (the bracket 1..4,096, then 11 bisections
    # of at most 4,096 clients): refused before anything runs, as bench refuses a search by its requests
    simulated = []
    monkeypatch.setattr("onechip.sim.simulate_cell", lambda *a, **k: simulated.append(a))
    code, _, err = run("simulate", "--plan", str(plan_file), "--find-max", "clients", "--slo", "ttft_ms=500",
                       "--find-max-limit", "4096", "--output-tokens", "256", "--reps", "1",
                       "--out", str(tmp_path / "s"))  # fmt: skip
    assert code == 2 and not simulated
    (line,) = err.strip().splitlines()
    assert "over the most probes the search can take" in line
    assert f"at most {_sim_bounds.MAX_SIMULATED_TOKENS:,}" in line and "--find-max-limit" in line


def test_an_out_dir_holding_a_search_takes_the_same_search_again_and_refuses_others(run, plan_file, tmp_path):
    # as bench: the same search into its directory reads every probe back (nothing simulated again) and gives the same
    # answer; another search, or a grid, is refused in one line before anything is simulated
    out = tmp_path / "s"
    code, first, err = run("simulate", "--plan", str(plan_file), *SEARCH, "--out", str(out), "--json")
    assert code == 0, err
    code, again, err = run("simulate", "--plan", str(plan_file), *SEARCH, "--out", str(out), "--json")
    assert code == 0, err
    keep = ("max_clients", "max_load_range", "bound_reason", "probes", "cells")
    before, after = (json.loads(text[: text.rindex("}") + 1]) for text in (first, again))
    assert {k: before[k] for k in keep} == {k: after[k] for k in keep}
    other = [*SEARCH[:-1], "tpot_ms=30"]
    code, _, err = run("simulate", "--plan", str(plan_file), *other, "--out", str(out))
    assert code == 2 and err.strip() == (
        f"error: cannot resume the SLO search in {out} (clients-1): --slo was tpot_ms=20.0, now tpot_ms=30.0; run it "
        "as it was, or choose another --out"
    )
    code, _, err = run("simulate", "--plan", str(plan_file), "--contexts", "128", "--out", str(out))
    assert code == 2 and "already holds a run (search.json)" in err, err


def test_an_out_dir_holding_a_stopped_searchs_probes_resumes_it(run, plan_file, tmp_path, monkeypatch):
    # a search killed before its search.json (SIGKILL: nothing written but its probes) resumed from its probes alone:
    # its finished ones read back, none simulated again
    out = tmp_path / "s"
    assert run("simulate", "--plan", str(plan_file), *SEARCH, "--out", str(out))[0] == 0
    (out / "search.json").unlink()
    simulated = []
    monkeypatch.setattr("onechip.sim.simulate_cell", lambda *a, **k: simulated.append(a))
    code, _, err = run("simulate", "--plan", str(plan_file), *SEARCH, "--out", str(out))
    assert code == 0 and not simulated, err
    assert (out / "search.json").is_file()


def test_find_max_over_replicas_searches_under_the_one_router_policy_given(run, plan_file, tmp_path):
    # simulate models the router (api._sim_search: each probe under router_policies[0]), so one --router-policies is
    # the policy the search is predicted under; it was refused as bench's (whose search runs on whatever policy the
    # router has), so an agent search over replicas could only be predicted under cache_aware
    agent = ["--contexts", "512", "--output-tokens", "16", "--reps", "2", "--workload", "agent", "--turns", "2",
             "--replicas", "2", "--find-max", "clients", "--slo", "ttft_ms=500", "--find-max-limit", "8"]  # fmt: skip
    out = tmp_path / "s"
    code, _, err = run(
        "simulate", "--plan", str(plan_file), *agent, "--router-policies", "round_robin", "--out", str(out)
    )
    assert code == 0, err
    result = SearchResult.model_validate_json((out / "search.json").read_text())
    assert result.prediction is not None and result.prediction.router_policy == "round_robin"
    # several are several searches: refused in one line naming simulate's way to compare them
    code, _, err = run("simulate", "--plan", str(plan_file), *agent, "--router-policies", "round_robin,cache_aware",
                       "--out", str(tmp_path / "t"))  # fmt: skip
    assert code == 2 and err.strip() == (
        "error: --find-max searches the load under one router policy: give one --router-policies value (compare "
        "policies in a simulate without --find-max)"
    )


def test_one_seed_says_it_gives_no_range_over_seeds(run, plan_file, tmp_path):
    # the range over the seeds (max_load_range) needs two seeds to say anything; with --reps 1 it was printed as
    # 'every one of the 1 seed gives N clients', agreement where nothing was compared
    one = [*SEARCH[: SEARCH.index("--reps")], "--reps", "1", *SEARCH[SEARCH.index("--reps") + 2 :]]
    code, stdout, err = run("simulate", "--plan", str(plan_file), *one, "--out", str(tmp_path / "s"))
    assert code == 0, err
    said = " ".join(stdout.split())
    assert "every one of the 1 seed" not in said
    assert "one seed: no range over the seeds (--reps 2 or more gives one)" in said


def test_a_grid_is_not_predicted_into_a_stopped_searchs_probes(run, plan_file, tmp_path):
    # a search stopped before its search.json (Ctrl-C) leaves its probes' runs; bench refuses a grid there ('holds a
    # --find-max search, not a bench run') and simulate --find-max refuses it, but a plain simulate wrote its
    # summary.json beside them
    out = tmp_path / "s"
    code, _, err = run("simulate", "--plan", str(plan_file), *SEARCH, "--out", str(out))
    assert code == 0, err
    for name in ("search.json", "search.md", "search.html"):  # as a search interrupted after its probes
        (out / name).unlink()
    code, _, err = run("simulate", "--plan", str(plan_file), "--out", str(out))
    assert code == 2 and err.strip().startswith(f"error: --out {out} already holds a search's probes (clients-")
    assert not (out / "summary.json").exists()
