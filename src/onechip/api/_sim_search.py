"""`simulate --find-max`: bench's SLO search (bench.search.LoadSearch: the same bracket and bisection, the same probe
configs and verdicts) over cells the simulator predicts instead of cells bench measures, with the answer's range
over the seeds."""

from __future__ import annotations

from pathlib import Path

from onechip import sim
from onechip.bench.search import LoadSearch, judge_samples, probe_config
from onechip.errors import ConfigError
from onechip.paths import exclusive, run_dir, write_text_atomic
from onechip.progress import ProgressFn, no_progress
from onechip.report.search import write_search_report
from onechip.schemas import BenchConfig, Plan
from onechip.schemas.bench import CellResult, SearchProbe, SearchResult
from onechip.schemas.requests import SimulateRequest
from onechip.schemas.run import SEARCH_FILE
from onechip.schemas.sim import Calibration, StepTerms
from onechip.sim.predict import START_SPREAD_S

from ._predict import predicted_bench_run, predicted_cell, prediction_of, prepared, write_predicted


class _Predicted:
    """simulate's probe source: each probe's cell simulated once per seed and judged as bench judges a measured one
    (bench.search.judge_samples over every seed's requests together, as over every rep's), each seed also alone;
    its predicted run written to `out_dir`/<probe> (summary.json, plan.json) as bench writes a measured one."""

    def __init__(
        self,
        request: SimulateRequest,
        plan: Plan,
        config: BenchConfig,
        calibration: Calibration | None,
        terms: StepTerms,
        out_dir: Path,
    ):
        self.request, self.plan, self.config = request, plan, config
        self.calibration, self.terms, self.out_dir = calibration, terms, out_dir

    def __call__(self, load: float) -> tuple[SearchProbe, CellResult]:
        """The probe at `load`, predicted: its verdict (every seed's requests together, as bench's reps), how many
        seeds alone meet the SLOs and each metric's range over the seeds, and its cell."""
        name, probe = probe_config(self.config, load)
        (context, clients), *_ = probe.grid_cells()
        seeds, replicas, policy = self.request.reps, self.request.replicas, self.request.router_policies[0]
        p = sim.simulate_cell(self.plan, self.terms, probe, context, clients, seeds, START_SPREAD_S,
                              replicas=replicas, policy=policy)  # fmt: skip
        cell = predicted_cell(p, probe, seeds, replicas, policy)
        slo, percentile = self.config.slo, self.config.slo_percentile
        alone = [judge_samples(cell, samples, slo, percentile) for samples in p.samples_by_seed.values()]
        ranges: dict[str, tuple[float, float] | None] = {}
        for metric in slo:
            values = [v for v in (a.at_percentile_ms.get(metric) for a in alone) if v is not None]
            ranges[metric] = (min(values), max(values)) if values else None
        where = self.out_dir / name
        run = predicted_bench_run(self.request, self.plan, probe, [cell], self.calibration, self.terms)
        write_predicted(run, self.plan, where)
        pooled = [s for samples in p.samples_by_seed.values() for s in samples]
        verdict = judge_samples(cell, pooled, slo, percentile).model_copy(
            update={"run_dir": str(where), "seeds_meeting": sum(a.meets_slo for a in alone),
                    "at_percentile_range_ms": ranges}
        )  # fmt: skip
        return verdict, cell


def simulate_find_max(request: SimulateRequest, on_progress: ProgressFn = no_progress) -> SearchResult:
    """`simulate --find-max`: the largest load (clients or requests/s) whose predicted cell meets `request.slo` at
    `request.slo_percentile`, found by bench's search (bench.search.LoadSearch) judging every seed's requests
    together, as bench judges every rep's; then the same search judging each probe by every seed alone and by any
    seed alone gives the answer's range over the seeds (max_load_range; loads between its ends: cannot tell).
    Writes `request.out_dir` (None: a new runs/<run-id>/)/search.json, search.md, search.html and one predicted run
    per probe (<probe>/summary.json, plan.json), and returns the SearchResult, marked predicted. Raises ConfigError
    as simulate does (a bad plan or calibration, an out_dir holding a run or a search, a search whose probes would
    simulate more than one call may: api._sim_bounds)."""
    if request.find_max is None:
        raise ConfigError("simulate_find_max needs --find-max clients or rate (and --slo)")
    the_plan, config, calibration, terms = prepared(request, on_progress)
    seeds = request.reps
    with run_dir(request.out_dir) as out_dir:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create {out_dir}: {exc.strerror or exc}") from None
        with exclusive(out_dir, f"another run is being written in {out_dir}; choose another --out"):
            source = _Predicted(request, the_plan, config, calibration, terms, out_dir)
            search = LoadSearch(config, source, on_progress, stage="simulate")
            lo, _, why = search.search()
            every = search.search(lambda p: p.seeds_meeting == seeds)[0]
            some = search.search(lambda p: bool(p.seeds_meeting))[0]
            # its KV wall is every engine's: --replicas N engines of the plan (a plan of one of N replicas says N
            # itself: Plan.refuse_other_replicas), as bench.search.kv_wall_clients counts plan.replicas
            deployed = the_plan.model_copy(update={"replicas": request.replicas})
            result = search.result(deployed, lo, why).model_copy(
                update={"max_load_range": (every, some), "prediction": prediction_of(request, calibration, terms)}
            )
            write_text_atomic(out_dir / SEARCH_FILE, result.model_dump_json(indent=2))
            write_search_report(result, out_dir)
    return result
