"""`simulate --find-max` stopped before its answer resumes as `bench --find-max` does (bench.search's module docstring):
run the same search into the same directory again and every probe it finished is read back, not simulated again, a
probe stopped mid-way is simulated again, and the answer is the uninterrupted search's; another search there is
refused in one line, as bench refuses it. The pooled answer lies inside its range over the seeds whatever the seeds
give (a property over random seeds), and the answer is priced as `onechip cost` prices a throughput."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from onechip import api, cost, planner, sim
from onechip.api import _sim_search
from onechip.errors import ConfigError
from onechip.progress import ProgressEvent
from onechip.schemas.bench import RequestSample, SearchResult
from onechip.schemas.inputs import build_request
from onechip.schemas.plan import Plan
from onechip.schemas.requests import PlanRequest, SimulateRequest
from onechip.sim.predict import CellPrediction

TYPED = {"contexts": "1024", "find_max": "clients", "slo": "tpot_ms=15"}  # the knee inside the search (n + 1 missed)


def _request(plan_file: Path, out: Path, **typed: str) -> SimulateRequest:
    return build_request(SimulateRequest, {"plan": str(plan_file), "output_tokens": "32", "reps": "3",
                                           "out_dir": str(out), **(TYPED | typed)})  # fmt: skip


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The clients of every cell simulated from here on (sim.simulate_cell, as the search calls it)."""
    asked: list[int] = []
    real = sim.simulate_cell

    def counted(*args: Any, **kwargs: Any) -> CellPrediction:
        asked.append(args[4])  # (plan, terms, config, context, clients, seeds, ...)
        return real(*args, **kwargs)

    monkeypatch.setattr(sim, "simulate_cell", counted)
    return asked


def _same(a: SearchResult, b: SearchResult) -> None:
    """Two searches that took the same path to the same answer: its probes in order, their verdicts and figures."""
    assert (a.max_clients, a.max_load_range, a.bound_reason) == (b.max_clients, b.max_load_range, b.bound_reason)
    skip = {"run_dir"}
    assert [p.model_dump(exclude=skip) for p in a.probes] == [p.model_dump(exclude=skip) for p in b.probes]
    assert a.cells == b.cells


def test_an_interrupt_at_a_probe_boundary_resumes_without_simulating_a_probe_again(
    seed_plan_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = api.simulate_find_max(_request(seed_plan_file, tmp_path / "whole"))
    asked = _counting(monkeypatch)
    judged = 0

    def stop_after_three(event: ProgressEvent) -> None:  # Ctrl-C as the third probe's verdict is said
        nonlocal judged
        judged += event.message.startswith("find-max: clients-") and ": m" in event.message
        if judged == 3:
            raise KeyboardInterrupt

    out = tmp_path / "s"
    with pytest.raises(KeyboardInterrupt):
        api.simulate_find_max(_request(seed_plan_file, out), stop_after_three)
    partial = SearchResult.model_validate_json((out / "search.json").read_text())
    assert partial.interrupted and len(partial.probes) == 3 and partial.prediction is not None
    assert (
        partial.bound_reason
        == f"interrupted after 3 probes; run the same --find-max search into {out} again to resume it"
    )
    assert (out / "search.md").is_file()  # rendered as bench renders its stopped search
    said: list[str] = []
    resumed = api.simulate_find_max(_request(seed_plan_file, out), lambda e: said.append(e.message))
    _same(resumed, whole)
    assert sorted(asked) == sorted(int(p.load) for p in whole.probes)  # each probe simulated once over both calls
    assert sum("read back" in s for s in said) == 3


def test_an_interrupt_mid_probe_simulates_that_probe_again_and_keeps_the_others(
    seed_plan_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = api.simulate_find_max(_request(seed_plan_file, tmp_path / "whole"))
    asked = _counting(monkeypatch)
    real, written = _sim_search.write_predicted, []

    def torn(run: Any, plan: Any, where: Path) -> None:  # the fourth probe's run written, its verdict not yet
        real(run, plan, where)
        written.append(where.name)
        if len(written) == 4:
            raise KeyboardInterrupt

    out = tmp_path / "s"
    monkeypatch.setattr(_sim_search, "write_predicted", torn)
    with pytest.raises(KeyboardInterrupt):
        api.simulate_find_max(_request(seed_plan_file, out))
    monkeypatch.setattr(_sim_search, "write_predicted", real)
    assert (out / written[3] / "summary.json").is_file()
    partial = SearchResult.model_validate_json((out / "search.json").read_text())
    assert [f"clients-{int(p.load)}" for p in partial.probes] == written[:3]
    resumed = api.simulate_find_max(_request(seed_plan_file, out))
    _same(resumed, whole)
    torn_load = int(written[3].removeprefix("clients-"))
    # every probe once, and the torn one a second time
    assert sorted(asked) == sorted([*(int(p.load) for p in whole.probes), torn_load])


def test_another_search_into_a_stopped_one_is_refused_as_bench_refuses_it(
    seed_plan_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = tmp_path / "s"
    api.simulate_find_max(_request(seed_plan_file, out, find_max_limit="4"))
    asked = _counting(monkeypatch)
    where = f"cannot resume the SLO search in {out}"
    with pytest.raises(ConfigError) as slo:
        api.simulate_find_max(_request(seed_plan_file, out, find_max_limit="4", slo="tpot_ms=20"))
    assert (
        str(slo.value)
        == f"{where} (clients-1): --slo was tpot_ms=15.0, now tpot_ms=20.0; run it as it was, or choose another --out"
    )
    with pytest.raises(ConfigError) as kind:
        api.simulate_find_max(_request(seed_plan_file, out, find_max="rate", slo="ttft_ms=200"))
    assert str(kind.value) == f"{where}: clients-1 is a --find-max clients probe, now --find-max rate"
    with pytest.raises(ConfigError) as seeds:  # the seeds are the prediction's, not a flag of the probe's config
        api.simulate_find_max(_request(seed_plan_file, out, find_max_limit="4", reps="2"))
    assert str(seeds.value).startswith(f"{where} (clients-1): --reps was 3, now 2")
    assert not asked


def _random_cell(rng: random.Random, context: int, clients: int, seeds: int) -> CellPrediction:
    """A cell whose seeds' TTFTs are drawn from a few values (ms): each seed alone and all together straddle a bound
    in every way a linear-interpolated percentile allows (stats.percentile)."""
    cell = CellPrediction(context, clients)
    n = rng.randint(1, 5)
    for seed in range(seeds):
        cell.samples_by_seed[seed] = [
            RequestSample(context_tokens=context, clients=clients, rep=seed, stream=i, seq=0, t_send=0.0,
                          t_first=rng.choice((2, 3, 5)) / 1000, t_last=0.1, t_done=0.1, completion_tokens=32)
            for i in range(n)
        ]  # fmt: skip
    return cell


def test_the_answer_lies_within_its_range_over_the_seeds_whatever_they_give(
    seed_plan_file: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a percentile over every seed's requests together can miss where each seed's own meets: TTFTs [2, 3, 5] and
    # [2, 2, 5] ms have p75 4.0 and 3.5 (stats.percentile, linear), together 4.5 over a 4 ms bound; the search's
    # answer must still lie between the range's ends (every seed meets up to the low one, some seed up to the high)
    rng = random.Random(61)
    monkeypatch.setattr(sim, "simulate_cell", lambda plan, terms, config, context, clients, seeds, *a, **k:
                        _random_cell(rng, context, clients, seeds))  # fmt: skip
    for world in range(100):  # world 80 is one such (before the answer was forced inside: 2 clients, range 3-16)
        request = _request(seed_plan_file, tmp_path / f"w{world}", slo="ttft_ms=4", slo_percentile="75",
                           find_max_limit="16", reps=str(rng.randint(2, 3)))  # fmt: skip
        result = api.simulate_find_max(request)
        low, high = result.max_load_range or (None, None)
        assert low is not None and high is not None
        assert low <= (result.max_clients or 0) <= high, (world, result.max_clients, low, high)


def test_the_answer_is_priced_as_cost_prices_its_throughput(
    seed_plan_file: Path,
    tmp_path: Path,
) -> None:
    # `onechip cost`'s lines for the plan's chip at the answer's tok/s (cost.cost_lines), every pricing model the
    # catalog has for v5e-1; two replicas: each engine's chip at its half of the tok/s
    one = api.simulate_find_max(_request(seed_plan_file, tmp_path / "one"))
    assert one.output_tok_per_s and one.costs
    assert one.costs == cost.cost_lines("v5e-1", one.output_tok_per_s)
    two = api.simulate_find_max(_request(seed_plan_file, tmp_path / "two", replicas="2", find_max_limit="8"))
    assert two.output_tok_per_s and two.costs == cost.cost_lines("v5e-1", two.output_tok_per_s / 2)
    # search.md says the price, what the prediction rests on (the calibration's engine version) and, over replicas,
    # that a line is one engine's chip
    report = " ".join((tmp_path / "two" / "search.md").read_text().split())
    line = two.costs[0]
    assert f"${line.usd_per_mtok:,.3f} per million output tokens" in report
    assert "each of the 2 engines on its own chip, at its 1/2 of the output tok/s" in report
    version = one.prediction.calibration.key.engine_version if one.prediction and one.prediction.calibration else ""
    assert version and f"calibration measured on engine version {version}" in report


def test_a_probe_torn_between_its_run_and_its_plan_is_predicted_again(
    seed_plan_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # write_predicted writes summary.json, then plan.json: a kill between the two leaves a run without its plan, an
    # unfinished probe (no probe.json) to predict again, not a probe 'predicted for another plan' to refuse
    out = tmp_path / "s"
    whole = api.simulate_find_max(_request(seed_plan_file, out))
    torn = out / "clients-2"
    for name in ("plan.json", "probe.json"):
        (torn / name).unlink()
    asked = _counting(monkeypatch)
    _same(api.simulate_find_max(_request(seed_plan_file, out)), whole)
    assert asked == [2]


def test_a_tensor_parallel_plan_is_priced_on_every_chip_its_engine_holds(tmp_path: Path) -> None:
    # an engine of a --tensor-parallel-size 2 plan on l4 holds 2 L4s (Plan.devices; advise bills engines x TP chips,
    # api._predict): the answer's $/M is 2 chip-hours' price over its tok/s, cost.cost_lines at half the tok/s a chip
    plan = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="l4", tensor_parallel_size=2))
    assert plan.devices == 2
    path = tmp_path / "plan.json"
    path.write_text(plan.model_dump_json())
    typed = {"slo": "tpot_ms=30", "find_max_limit": "4", "reps": "2"}
    one = api.simulate_find_max(_request(path, tmp_path / "one", **typed))
    assert one.output_tok_per_s and one.costs
    assert one.costs == cost.cost_lines("l4", one.output_tok_per_s / 2)
    two = api.simulate_find_max(_request(path, tmp_path / "two", replicas="2", **typed))
    assert two.output_tok_per_s and two.costs == cost.cost_lines("l4", two.output_tok_per_s / 4)
    report = " ".join((tmp_path / "two" / "search.md").read_text().split())
    assert "each of the 4 chips (2 engines x 2), at its 1/4 of the output tok/s" in report


@pytest.mark.parametrize(
    ("chip", "tp", "chips"),
    # accelerators.json: v5e-4 is a slice of 4 chips priced as 4 x v5e-1 (price_chip), so its TP-4 engine is one
    # priced entry; an l4 is one card, so a TP-2 engine holds two; a TPU7x chip shows 2 devices (devices_per_chip)
    [("v5e-4", 4, 1), ("l4", 2, 2), ("l4", 1, 1), ("tpu7x-1", 2, 1)],
)
def test_an_engine_holds_its_devices_in_whole_priced_entries(chip: str, tp: int, chips: int) -> None:
    plan = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip=chip, tensor_parallel_size=tp))
    assert _sim_search.chips_per_engine(plan) == chips


def test_a_plan_that_differs_only_in_where_a_setting_came_from_resumes(
    seed_plan_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `plan --tensor-parallel-size 1` (source 'request') and the default 1 (source 'planner') plan the same engine:
    # the search was refused ('--plan: it was predicted for another plan') for a setting's provenance alone
    out = tmp_path / "s"
    whole = api.simulate_find_max(_request(seed_plan_file, out))
    default = Plan.model_validate_json(seed_plan_file.read_text())
    explicit = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=32768,
                                              max_num_batched_tokens=4096, tensor_parallel_size=1))  # fmt: skip
    assert default.serve.tensor_parallel_size is not None and explicit.serve.tensor_parallel_size is not None
    assert explicit.serve.tensor_parallel_size.source == "request" != default.serve.tensor_parallel_size.source
    path = tmp_path / "explicit.json"
    path.write_text(explicit.model_dump_json())
    asked = _counting(monkeypatch)
    _same(api.simulate_find_max(_request(path, out)), whole)
    assert asked == []  # every probe read back
    wider = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=16384,
                                           max_num_batched_tokens=4096))  # fmt: skip
    path.write_text(wider.model_dump_json())
    with pytest.raises(ConfigError, match="it was predicted for another plan"):  # a value that differs still does
        api.simulate_find_max(_request(path, out))


def test_a_probe_a_newer_onechip_finished_is_refused_in_one_line_and_kept(seed_plan_file: Path, tmp_path: Path) -> None:
    # files66: probe.json named no schema_version, so a newer onechip's verdict was read back as this one's; one this
    # onechip could not read was simulated again, its files deleted and written over
    def stop_after_one(event: ProgressEvent) -> None:
        if event.message.startswith("find-max: clients-") and ": m" in event.message:
            raise KeyboardInterrupt

    out = tmp_path / "s"
    with pytest.raises(KeyboardInterrupt):
        api.simulate_find_max(_request(seed_plan_file, out), stop_after_one)
    partial = SearchResult.model_validate_json((out / "search.json").read_text())
    probe = Path(partial.probes[0].run_dir) / "probe.json"
    text = probe.read_text().replace('"schema_version": "1"', '"schema_version": "2"', 1)
    assert text != probe.read_text()
    probe.write_text(text)
    with pytest.raises(ConfigError) as refused:
        api.simulate_find_max(_request(seed_plan_file, out))
    assert str(refused.value) == (
        f"cannot resume {out}: {probe} was written by a newer onechip (schema_version 2; this onechip reads 1); "
        "give another --out"
    )
    assert probe.read_text() == text


@pytest.mark.parametrize("name", ["plan.json", "summary.json"])
def test_a_probe_file_a_newer_onechip_wrote_is_refused_as_newer_not_as_another_plan(
    seed_plan_file: Path, tmp_path: Path, name: str
) -> None:
    # files66b: a newer onechip's plan.json of a finished probe was first read by the 'same plan?' check, which could
    # not read it and refused with '--plan: it was predicted for another plan': the plan given was the same one
    def stop_after_one(event: ProgressEvent) -> None:
        if event.message.startswith("find-max: clients-") and ": m" in event.message:
            raise KeyboardInterrupt

    out = tmp_path / "s"
    with pytest.raises(KeyboardInterrupt):
        api.simulate_find_max(_request(seed_plan_file, out), stop_after_one)
    partial = SearchResult.model_validate_json((out / "search.json").read_text())
    newer = Path(partial.probes[0].run_dir) / name
    text = newer.read_text().replace('"schema_version": "1"', '"schema_version": "2"', 1)
    assert text != newer.read_text()
    newer.write_text(text)
    with pytest.raises(ConfigError) as refused:
        api.simulate_find_max(_request(seed_plan_file, out))
    assert str(refused.value) == (
        f"cannot resume {out}: {newer} was written by a newer onechip (schema_version 2; this onechip reads 1); "
        "give another --out"
    )
    assert newer.read_text() == text
