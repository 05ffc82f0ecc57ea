"""`simulate --find-max` (api.simulate_find_max) is bench's search over predicted cells: on the seed's v5e-1
calibration its answer agrees with the simulated grid's cells either side of it (the answer's cell meets the SLO, the
next load's does not), for clients and for rate; each probe is said 'cannot tell' where its seeds disagree, and the
answer's range over the seeds holds it. bench.search.worst_case_loads bounds what any search probes."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip import api
from onechip.bench.search import LoadSearch, worst_case_loads
from onechip.report.search import probe_verdict
from onechip.schemas import BenchConfig
from onechip.schemas.bench import CellResult, SearchProbe
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import SimulateRequest


def _request(plan_file: Path, out: Path, **typed: str) -> SimulateRequest:
    """A simulate call as the CLI builds it (build_request: the fields typed are the fields set)."""
    return build_request(SimulateRequest, {"plan": str(plan_file), "output_tokens": "32", "reps": "3",
                                           "out_dir": str(out), **typed})  # fmt: skip


def test_found_max_clients_agrees_with_the_grid_either_side(seed_plan_file: Path, tmp_path: Path) -> None:
    search = api.simulate_find_max(
        _request(seed_plan_file, tmp_path / "s", contexts="1024", find_max="clients", slo="tpot_ms=15")
    )
    n = search.max_clients
    assert search.prediction is not None and search.prediction.calibration is not None  # the seed's, not priors
    assert n is not None and 1 < n < 64, search.bound_reason  # a knee inside the search, not its ends
    assert search.bound_reason == f"{n + 1} clients missed the SLOs"
    # the grid simulate predicts at the answer and one more client, judged by its cells' p90 TPOT (every seed's
    # requests together, as bench's summary over its reps)
    grid = api.simulate(_request(seed_plan_file, tmp_path / "g", contexts="1024", clients=f"{n},{n + 1}"))
    at, above = (c.tpot_ms.p90 for c in grid.cells)
    assert at is not None and above is not None and at <= 15.0 < above
    low, high = search.max_load_range or (0, 0)
    assert low <= n <= high


def test_found_max_rate_agrees_with_simulate_rate_either_side(seed_plan_file: Path, tmp_path: Path) -> None:
    search = api.simulate_find_max(
        _request(
            seed_plan_file, tmp_path / "s", contexts="1024", find_max="rate", slo="ttft_ms=200", find_max_limit="64"
        )  # fmt: skip
    )
    rate = search.max_rate_per_s
    assert rate is not None and 4 <= rate < 64, search.bound_reason
    miss = min(p.load for p in search.probes if p.load > rate and not p.meets_slo)
    assert miss <= rate * 1.15  # bench's resolution (bench.search.RATE_RESOLUTION)
    # `simulate --rate` at the answer and at its miss (the schedule bench --rate sends), judged by its cell's p90 TTFT
    # (a simulated request's TTFT runs from its arrival, the intended send: sim.scheduler)
    ttfts = []
    for i, r in enumerate((rate, miss)):
        (cell,) = api.simulate(_request(seed_plan_file, tmp_path / f"r{i}", contexts="1024", rate_per_s=f"{r:g}")).cells
        ttfts.append(cell.ttft_ms.p90)
    assert ttfts[0] is not None and ttfts[1] is not None and ttfts[0] <= 200.0 < ttfts[1]


def test_probes_where_seeds_disagree_say_cannot_tell(seed_plan_file: Path, tmp_path: Path) -> None:
    search = api.simulate_find_max(
        _request(seed_plan_file, tmp_path / "s", contexts="1024", find_max="clients", slo="tpot_ms=15", reps="5")
    )
    low, high = search.max_load_range or (0, 0)
    for p in search.probes:
        span = p.at_percentile_range_ms["tpot_ms"]
        assert p.seeds_meeting is not None and span is not None
        # a seed meets when its own p90 is within the bound: none when the lowest is over it, all when the highest is in
        if span[0] > 15.0:
            assert p.seeds_meeting == 0
        if span[1] <= 15.0:
            assert p.seeds_meeting == 5
        assert ("cannot tell" in probe_verdict(search, p)) == (0 < p.seeds_meeting < 5)
        assert p.load <= low or p.seeds_meeting < 5  # every seed meets up to the range's low end, not beyond it
        assert p.load > high or p.seeds_meeting > 0 or p.load > low  # beyond its high end no seed does


@pytest.mark.parametrize("kind", ["clients", "rate"])
@pytest.mark.parametrize("limit", [1.0, 5.0, 64.0, 100.0, 4096.0])
def test_no_search_probes_more_than_its_worst_case(kind: str, limit: float) -> None:
    # worst_case_loads bounds what simulate may simulate before it starts: every search, whatever its knee, probes
    # no more loads, and no more load in all, than it lists
    cfg = BenchConfig(base_url="http://127.0.0.1:9", contexts=[16], find_max=kind, slo={"ttft_ms": 100.0},
                      find_max_limit=limit, **({"clients": [1]} if kind == "rate" else {}))  # type: ignore[arg-type]  # fmt: skip
    worst = worst_case_loads(cfg)
    knees = sorted({0.0, limit, *(limit * k / 97 for k in range(1, 97))})
    for knee in knees:
        asked: list[float] = []

        def source(load: float, knee: float = knee, asked: list[float] = asked) -> tuple[SearchProbe, CellResult]:
            asked.append(load)
            cell = CellResult(context_tokens=16, clients=1, status="ok")
            return SearchProbe(load=load, run_dir="", status="ok", meets_slo=load <= knee), cell

        LoadSearch(cfg, source).search()
        assert len(asked) <= len(worst) and sum(asked) <= sum(worst), (knee, asked, worst)
        assert max(asked) <= max(worst)


def test_simulate_slo_gives_each_predicted_cell_bench_goodput(seed_plan_file: Path, tmp_path: Path) -> None:
    # --slo without --find-max is bench's goodput objective (requests/s meeting every SLO): a bound every predicted
    # request meets keeps them all, one none meets (1 ms of TPOT: a step's fixed host cost alone is SEED_TERMS.fixed_s,
    # 5.3 ms) none; without it, unset
    def goodput(i: int, **slo: str) -> float | None:
        run = api.simulate(_request(seed_plan_file, tmp_path / f"g{i}", contexts="1024", clients="4", **slo))
        return run.cells[0].goodput_per_s

    loose, tight, unset = goodput(0, slo="tpot_ms=10000"), goodput(1, slo="tpot_ms=1"), goodput(2)
    assert loose is not None and loose > 0 and tight == 0 and unset is None


def test_the_kv_wall_of_a_search_over_replicas_is_every_engines(seed_plan_file: Path, tmp_path: Path) -> None:
    # bench.search.kv_wall_clients counts plan.replicas engines (a plan of one of N replicas); simulate --replicas N
    # runs N engines of a one-engine plan, each its whole KV pool, and its search said one engine's wall
    typed = {"contexts": "1024", "find_max": "clients", "slo": "tpot_ms=15", "find_max_limit": "2"}
    one = api.simulate_find_max(_request(seed_plan_file, tmp_path / "one", **typed))
    two = api.simulate_find_max(_request(seed_plan_file, tmp_path / "two", replicas="2", **typed))
    assert one.kv_wall_clients is not None and two.kv_wall_clients == 2 * one.kv_wall_clients
