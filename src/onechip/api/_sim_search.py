"""`simulate --find-max`: bench's SLO search (bench.search.LoadSearch: the same bracket and bisection, the same probe
configs and verdicts) over cells the simulator predicts instead of cells bench measures, with the answer's range
over the seeds, priced as `onechip cost` prices a throughput, and resumed as bench resumes a search."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from onechip import cost as cost_layer
from onechip import sim
from onechip.bench.runner import saved_run
from onechip.bench.search import (
    LoadSearch,
    judge_samples,
    probe_config,
    probe_dirs,
    refuse_other_search,
    stopped_result,
)
from onechip.errors import ConfigError, OnechipError
from onechip.paths import exclusive, run_dir, write_text_atomic
from onechip.planner.rules import accelerator
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.report.search import write_search_report
from onechip.schemas import RUN_FILES, BenchConfig, Plan
from onechip.schemas.bench import CellResult, RequestSample, SearchProbe, SearchResult
from onechip.schemas.common import stored_by_newer, written_by_newer
from onechip.schemas.cost import CostLine
from onechip.schemas.requests import SimulateRequest
from onechip.schemas.run import PROBE_FILE, SEARCH_FILE
from onechip.schemas.sim import Calibration, Prediction, StepTerms
from onechip.sim import store as calibration_store
from onechip.sim.predict import START_SPREAD_S

from ._predict import predicted_bench_run, predicted_cell, prediction_of, prepared, write_predicted


def predicted_verdict(
    cell: CellResult, samples_by_seed: Mapping[int, Sequence[RequestSample]], slo: dict[str, float], percentile: float
) -> SearchProbe:
    """A predicted probe's verdict: bench's (bench.search.judge_samples) over every seed's requests together, as over
    every rep's, with how many seeds alone meet the SLOs and each SLO metric's range over the seeds (ms)."""
    alone = [judge_samples(cell, samples, slo, percentile) for samples in samples_by_seed.values()]
    ranges: dict[str, tuple[float, float] | None] = {}
    for metric in slo:
        values = [v for v in (a.at_percentile_ms.get(metric) for a in alone) if v is not None]
        ranges[metric] = (min(values), max(values)) if values else None
    pooled = [s for samples in samples_by_seed.values() for s in samples]
    return judge_samples(cell, pooled, slo, percentile).model_copy(
        update={"seeds_meeting": sum(a.meets_slo for a in alone), "at_percentile_range_ms": ranges}
    )


def answer_and_range(search: LoadSearch, seeds: int) -> tuple[float, str, tuple[float, float]]:
    """(the answer: bench's search judging every seed's requests together; why it stopped; its range over the seeds:
    the same search judging a probe met where every seed alone and all together meet it, and where some seed or all
    together do). A percentile over every seed's requests can miss where each seed's own meets (linear interpolation,
    bench.stats.percentile: TTFTs [2, 3, 5] and [2, 2, 5] ms have p75 4.0 and 3.5, together 4.5), so the range's rules
    each hold the pooled verdict: a probe the low end's rule meets the answer's meets, and one the answer's meets the
    high end's does. The search (LoadSearch.search) never ends lower under a rule met wherever another is: while the
    two agree they probe the same loads, and where first they disagree the laxer one goes up from a load the other
    goes down from; so low <= answer <= high, whatever the seeds give."""
    lo, _, why = search.search()
    every = search.search(lambda p: p.meets_slo and p.seeds_meeting == seeds)[0]
    some = search.search(lambda p: p.meets_slo or bool(p.seeds_meeting))[0]
    return lo, why, (every, some)


class _Predicted:
    """simulate's probe source: each probe's cell simulated once per seed and judged by predicted_verdict, its predicted
    run written to `out_dir`/<probe> (summary.json, plan.json) as bench writes a measured one, then its verdict
    (PROBE_FILE): a probe finished before an interruption is read back from there, not simulated again."""

    def __init__(
        self,
        request: SimulateRequest,
        plan: Plan,
        config: BenchConfig,
        calibration: Calibration | None,
        terms: StepTerms,
        out_dir: Path,
        on_progress: ProgressFn,
    ):
        self.request, self.plan, self.config = request, plan, config
        self.calibration, self.terms, self.out_dir = calibration, terms, out_dir
        self.prediction, self.on_progress = prediction_of(request, calibration, terms, plan), on_progress

    def check_saved(self) -> None:
        """Refuse (ConfigError, one line) an `out_dir` holding a probe this search would not take as its own, before
        anything is simulated: a probe file a newer onechip wrote (_refuse_newer), then a measured probe (bench
        --find-max's), then what bench refuses (another --find-max kind or config: bench.search.refuse_other_search),
        then a finished probe predicted for another plan, replicas, router policy or step-time terms (another
        calibration, or priors)."""
        where = f"cannot resume the SLO search in {self.out_dir}"
        for d in probe_dirs(self.out_dir):  # first: the checks below cannot read a newer file, and take it for another
            self._refuse_newer(d)  # plan's probe ('--plan: it was predicted for another plan') or unreadable
        saved = [(d, saved_run(d)) for d in probe_dirs(self.out_dir)]
        for d, run in saved:
            if run is not None and run.prediction is None:
                raise ConfigError(f"{where}: {d.name} is a measured probe (bench --find-max); choose another --out")
        refuse_other_search(self.config, self.out_dir)
        for d, run in saved:
            if run is None or run.prediction is None or not (d / PROBE_FILE).is_file():
                continue  # unfinished (its plan.json may be missing too): predicted again, nothing of it kept
            if differs := self._differs(d, run.prediction):
                raise ConfigError(f"{where} ({d.name}): {differs}; run it as it was, or choose another --out")

    def _differs(self, probe_dir: Path, was: Prediction) -> str | None:
        """What a saved probe was predicted with that this search would not be ('--replicas was 1, now 2'), else
        None."""
        now = self.prediction
        for flag, old, new in (("--replicas", was.replicas, now.replicas),
                               ("--router-policies", was.router_policy, now.router_policy)):  # fmt: skip
            if old != new:
                return f"{flag} was {old}, now {new}"
        try:
            plan = Plan.model_validate_json((probe_dir / RUN_FILES["plan"]).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            plan = None
        if plan is None or plan.without_provenance() != self.plan.without_provenance():
            return "--plan: it was predicted for another plan"  # not where a setting's value came from
        if was.terms != now.terms:
            return "its step-time terms were others (another calibration, or priors)"
        return None

    def _refuse_newer(self, probe_dir: Path) -> None:
        """Refuse (ConfigError, one line) a probe whose file a newer onechip wrote: never read back, nor written over
        (a probe this one cannot read back is predicted again, its files deleted)."""
        for file in (PROBE_FILE, RUN_FILES["bench"], RUN_FILES["plan"]):
            if (newer := stored_by_newer(probe_dir / file)) is not None:
                raise ConfigError(
                    f"cannot resume {self.out_dir}: {probe_dir / file} {written_by_newer(newer)}; give another --out"
                )

    def __call__(self, load: float) -> tuple[SearchProbe, CellResult]:
        """The probe at `load`: read back from its directory when finished there, else predicted (a probe stopped
        mid-way is predicted again, its run written over)."""
        name, probe = probe_config(self.config, load)
        where = self.out_dir / name
        self._refuse_newer(where)
        if (back := _read_back(where)) is not None:
            self.on_progress(ProgressEvent("simulate", f"find-max: {name} read back from {where}"))
            return back
        for file in (PROBE_FILE, RUN_FILES["bench"], RUN_FILES["plan"]):  # a probe stopped mid-way: predicted again
            (where / file).unlink(missing_ok=True)
        (context, clients), *_ = probe.grid_cells()
        seeds, replicas, policy = self.request.reps, self.request.replicas, self.request.router_policies[0]
        p = sim.simulate_cell(self.plan, self.terms, probe, context, clients, seeds, START_SPREAD_S,
                              replicas=replicas, policy=policy)  # fmt: skip
        cell = predicted_cell(p, probe, seeds, replicas, policy)
        verdict = predicted_verdict(cell, p.samples_by_seed, self.config.slo, self.config.slo_percentile)
        verdict = verdict.model_copy(update={"run_dir": str(where)})
        run = predicted_bench_run(self.request, self.plan, probe, [cell], self.calibration, self.terms)
        write_predicted(run, self.plan, where)
        write_text_atomic(where / PROBE_FILE, verdict.model_dump_json(indent=2))  # last: the probe is finished
        return verdict, cell


def _read_back(probe_dir: Path) -> tuple[SearchProbe, CellResult] | None:
    """A finished probe's verdict and cell from `probe_dir` (its PROBE_FILE and summary.json; _Predicted.check_saved
    checked it is this search's), None when it is not finished there."""
    run = saved_run(probe_dir)
    try:
        verdict = SearchProbe.model_validate_json((probe_dir / PROBE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if run is None or not run.cells:
        return None
    return verdict.model_copy(update={"run_dir": str(probe_dir)}), run.cells[0]


def answer_costs(plan: Plan, output_tok_per_s: float | None, replicas: int) -> list[CostLine]:
    """`onechip cost`'s lines (cost.cost_lines, every pricing model the catalog has for `plan.chip`) at the answer's
    output tok/s: each of `replicas` engines on chips_per_engine(plan) of its own, each priced at its share of the
    tok/s (the same $/M as all the chips over all the tok/s). None when there is no answer, or the catalog has no
    price for the chip."""
    if not output_tok_per_s:
        return []
    try:
        return cost_layer.cost_lines(plan.chip, output_tok_per_s / (replicas * chips_per_engine(plan)))
    except ConfigError:  # a chip with no price in the catalog (a CPU host, an unnamed card): nothing to price
        return []


def chips_per_engine(plan: Plan) -> int:
    """How many of `plan.chip` (a priced catalog entry: one card, or one slice, billed_as) one engine of `plan`
    holds: its devices (tensor x pipeline parallel, Plan.devices) over the devices an entry shows (its chips x
    devices_per_chip, accelerators.json), whole entries, at least one: an engine of TP 2 on l4 holds 2 L4s, as
    advise bills engines x TP chips (api._predict), where a v5e-4 slice of TP 4 is one entry of 4 chips."""
    acc = accelerator(plan.chip)
    return max(1, math.ceil(plan.devices / (acc.chips * acc.devices_per_chip)))


def simulate_find_max(request: SimulateRequest, on_progress: ProgressFn = no_progress) -> SearchResult:
    """`simulate --find-max`: the largest load (clients or requests/s) whose predicted cell meets `request.slo` at
    `request.slo_percentile`, found by bench's search (bench.search.LoadSearch) judging every seed's requests
    together, as bench judges every rep's, with its range over the seeds (answer_and_range; loads between its ends:
    cannot tell), priced on the plan's chip (answer_costs). Writes `request.out_dir` (None: a new runs/<run-id>/)
    /search.json, search.md, search.html and one predicted run per probe (<probe>/summary.json, plan.json, and its
    verdict, probe.json), and returns the SearchResult, marked predicted. A search stopped before its answer
    (KeyboardInterrupt, Interrupted, an error once a probe was judged) first writes search.json and its report with
    the probes so far, `interrupted` set (bench.search.stopped_result), and resumes as bench's does when the same
    search is run into the same out_dir again: each finished probe read back, a probe stopped mid-way predicted
    again. Raises ConfigError as simulate does (a bad plan or calibration, an out_dir holding a run, another search's
    probes or a measured search, a search whose probes would simulate more than one call may: api._sim_bounds)."""
    if request.find_max is None:
        raise ConfigError("simulate_find_max needs --find-max clients or rate (and --slo)")
    the_plan, config, calibration, terms = prepared(request, on_progress)
    with run_dir(request.out_dir) as out_dir:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"cannot create {out_dir}: {exc.strerror or exc}") from None
        with exclusive(out_dir, f"another run is being written in {out_dir}; choose another --out"):
            source = _Predicted(request, the_plan, config, calibration, terms, out_dir, on_progress)
            source.check_saved()
            search = LoadSearch(config, source, on_progress, stage="simulate")
            # its KV wall is every engine's: --replicas N engines of the plan (a plan of one of N replicas says N
            # itself: Plan.refuse_other_replicas), as bench.search.kv_wall_clients counts plan.replicas
            deployed = the_plan.model_copy(update={"replicas": request.replicas})
            said = {"prediction": source.prediction,  # what simulate and advise say of the calibrations it read
                    "notes": calibration_store.newer_notes(the_plan.model, the_plan.chip, the_plan.engine)}  # fmt: skip
            try:
                lo, why, span = answer_and_range(search, request.reps)
            except (KeyboardInterrupt, OnechipError) as exc:
                if (partial := stopped_result(search, deployed, out_dir, exc)) is not None:
                    _write(partial.model_copy(update=said), out_dir)
                raise
            result = search.result(deployed, lo, why)
            costs = answer_costs(the_plan, result.output_tok_per_s, request.replicas)
            result = result.model_copy(update={"max_load_range": span, "costs": costs, **said})
            _write(result, out_dir)
    return result


def _write(result: SearchResult, out_dir: Path) -> None:
    """search.json, search.md and search.html of `result` into `out_dir`."""
    write_text_atomic(out_dir / SEARCH_FILE, result.model_dump_json(indent=2))
    write_search_report(result, out_dir)
