"""`bench --find-max clients|rate`: the largest load whose measured cell meets the SLOs.

Bracket, then bisect: loads double from the first (1 client, or the limit / RATE_START_DIVISOR
requests/s) until a probe misses the SLOs, is infeasible (the plan's KV wall) or the limit is reached (a
rate whose first load misses halves down instead, at most RATE_HALVINGS times, until one meets them); then
the gap between the last load that met them and the first that did not is halved until it closes
(clients: adjacent integers; rate: within RATE_RESOLUTION of each other). Each probe is a one-cell bench
run (`reps` repetitions) in its own directory under the search's, so every answer can be re-read and
re-rendered. A rate probe is open loop as vllm bench serve's (--request-rate, --num-prompts, --max-concurrency) and
GuideLLM's poisson/constant rates are: its request count follows its rate (probe_requests, or arrivals over
--duration-s), never an in-flight cap, and it has none unless --clients N is given (then at most N in flight:
a client-side limit, its waits counted as late sends). A probe meets the SLOs when no measured request failed and
each SLO metric at `slo_percentile` over its measured requests is within its bound (open loop: TTFT and E2E from the
intended send time, so a schedule the server could not keep up with misses).

An interrupted search (Ctrl-C, SIGTERM, the server gone) resumes when the same search is run into the same
directory again: a probe that finished without a failed request is read back from its directory, not measured
again; an unfinished one (or one with failed requests) is resumed as `bench --resume` resumes a grid (its complete
repetitions kept, the others measured again, their samples moved to requests.replaced.jsonl); the verdicts are
judged again from the samples, so the search takes the path and reaches the answer it would have uninterrupted.
A directory holding another search's probes (another kind, SLO, limit, workload...) or a bench run is refused.

Latency does not grow smoothly with load on a shared machine: a probe is one measurement, and the answer is
the load that met the SLOs next to one that did not, both kept in `probes`. The search assumes that
meeting the SLOs is monotone in load; a noisy miss below the answer would show in `probes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from onechip.bench import stats
from onechip.bench.runner import (
    config_difference,
    create_run_dir,
    input_digests,
    load_samples,
    longest_prompt,
    remove_if_empty,
    run_grid,
    saved_config,
    saved_run,
)
from onechip.errors import ConfigError, Interrupted, OnechipError
from onechip.paths import exclusive, kind_of, write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.bench import (
    MIN_RATE,
    BenchConfig,
    BenchRun,
    CellResult,
    RequestSample,
    SearchProbe,
    SearchResult,
    slo_ms_text,
)
from onechip.schemas.common import plural
from onechip.schemas.inputs import flag_of
from onechip.schemas.plan import Plan
from onechip.schemas.run import RUN_FILES, SEARCH_FILE

RATE_START_DIVISOR = 16  # a rate search starts at limit / 16 (4 req/s for the default limit of 64)
RATE_HALVINGS = 6  # ... and goes down to limit / 1,024 (not below MIN_RATE) when even the first rate misses
RATE_RESOLUTION = 1.15  # a rate search stops when the passing and failing rates are within 15%
# What a resumed search's saved probes must agree on besides what a resumed grid does (runner.config_difference):
# how a probe is judged, where the search stops, and whether cells beyond the plan's KV wall are measured.
SEARCH_KEYS = ("slo", "slo_percentile", "find_max_limit", "force")


def judge(cell: CellResult, run_dir: Path, slo: dict[str, float], percentile: float) -> SearchProbe:
    """A measured probe's verdict from its cell and the raw samples in `run_dir` (judge_samples)."""
    return judge_samples(cell, load_samples(run_dir / RUN_FILES["requests"]), slo, percentile).model_copy(
        update={"run_dir": str(run_dir)}
    )


def judge_samples(
    cell: CellResult, samples: Sequence[RequestSample], slo: dict[str, float], percentile: float
) -> SearchProbe:
    """A probe's verdict from its cell and its samples (every rep's, or every seed's for a predicted one; warm-ups
    left out): each SLO metric at `percentile` over the measured requests (ms), the share that met every SLO, and
    whether the cell meets the SLOs. `run_dir` is left empty for the caller."""
    measured = [s for s in samples if not s.warmup]
    at: dict[str, float | None] = {}
    for name in slo:
        values = sorted(v for v in (stats.slo_value(name, s) for s in measured if s.status == "ok") if v is not None)
        at[name] = stats.percentile(values, percentile) if values else None
    attained = sum(1 for s in measured if stats.meets_slo(s, slo)) / len(measured) if measured else None
    meets = (
        cell.status == "ok"
        and bool(measured)
        and cell.requests_failed == 0
        and all(v is not None and v <= slo[k] for k, v in at.items())
    )
    return SearchProbe(
        load=0.0,
        run_dir="",
        status=cell.status,
        reason=cell.reason,
        meets_slo=meets,
        at_percentile_ms=at,
        attainment=attained,
        output_tok_per_s=cell.output_tok_per_s,
        goodput_per_s=cell.goodput_per_s,
        schedule_slipped=cell.schedule_slipped,
        requests_sent=len(measured),
        requests_failed=cell.requests_failed,
        first_error=cell.first_error,
    )


def kv_wall_clients(plan: Plan | None, config: BenchConfig, context_tokens: int) -> int | None:
    """Clients the plan's KV pool holds when every one has its longest prompt plus output in cache (times N for a
    plan of one of N replicas, clients spread evenly: runner.kv_wall); an attention-free model's (Plan.state_slots)
    holds that many, whatever their length."""
    if plan is None:
        return None
    if plan.state_slots is not None:
        return plan.replicas * plan.state_slots
    return plan.replicas * (plan.kv_tokens // (longest_prompt(config, context_tokens) + config.output_tokens))


def rate_search_cap(config: BenchConfig) -> int | None:
    """A rate search's requests in flight at most in each probe: the one --clients value when given (set by the
    caller: BenchConfig.model_fields_set), else None, no cap (the default --clients 1,4 is the grid's, not a cap)."""
    return config.clients[0] if "clients" in config.model_fields_set else None


def _next_loads(kind: str, limit: float) -> tuple[float, Callable[[float, float], float | None]]:
    """The first load, and the bisection step (lo, hi) -> next load, None when the gap is closed. A rate starts no
    lower than MIN_RATE (--rate's floor) and bisects at the geometric mean to 3 significant digits, strictly between
    lo and hi (rounded to 3 decimals, 0.004 - 0.005 req/s gave 0.004 again: the search measured nothing and never
    ended)."""
    if kind == "clients":
        return 1, lambda lo, hi: None if hi - lo <= 1 else float((int(lo) + int(hi)) // 2)
    first = max(limit / RATE_START_DIVISOR, MIN_RATE)
    return first, lambda lo, hi: None if hi <= lo * RATE_RESOLUTION else float(f"{(lo * hi) ** 0.5:.3g}")


def probe_config(config: BenchConfig, load: float) -> tuple[str, BenchConfig]:
    """(the directory name, the one-cell bench config) of the probe at `load` of the search `config` asks for (its
    find_max kind; a rate probe in flight at most rate_search_cap): `bench --find-max` measures it, `simulate
    --find-max` predicts it."""
    update: dict[str, object]
    if (config.find_max or "clients") == "clients":
        name, update = f"clients-{int(load)}", {"clients": [int(load)]}
    else:  # one stream numbers the requests (one warm-up); the count follows the rate, the cap is apart
        cap = rate_search_cap(config)
        name, update = f"rate-{load:g}", {"rate_per_s": load, "clients": [1], "max_in_flight": cap or 0}
        if config.duration_s is None:
            update["requests_per_client"] = config.rate_requests(load)
    return name, config.model_copy(update={**update, "contexts": [config.contexts[0]], "find_max": None})


# A probe's source: the load -> its verdict (SearchProbe, `load` set by the search) and its cell. bench measures it
# (_Measured), simulate predicts it (api); the search over loads is one.
ProbeSource = Callable[[float], tuple[SearchProbe, CellResult]]


class LoadSearch:
    """Bracket, then bisect the loads of `config`'s search (module docstring), each probe from `source`, once per
    load, its verdict said to `on_progress` under `stage`. search()'s `meets` judges a probe (default: its meets_slo,
    bench's rule); a predicted search searches again judging by every seed and by any seed (api.simulate_find_max),
    over the probes already taken."""

    def __init__(
        self,
        config: BenchConfig,
        source: ProbeSource,
        on_progress: ProgressFn = no_progress,
        stage: str = "bench",
    ):
        self.config, self.source, self.on_progress, self.stage = config, source, on_progress, stage
        self.kind = config.find_max or "clients"
        self.cap = rate_search_cap(config) if self.kind == "rate" else None
        self.context = config.contexts[0]
        self.probes: dict[float, SearchProbe] = {}
        self.cells: list[CellResult] = []

    def probe(self, load: float) -> SearchProbe:
        """The probe at `load`, from the source once (a load already probed is not asked again)."""
        if load in self.probes:
            return self.probes[load]
        verdict, cell = self.source(load)
        verdict = verdict.model_copy(update={"load": load})
        self.probes[load] = verdict
        self.cells.append(cell)
        name = probe_config(self.config, load)[0]
        line = f"find-max: {name}: {probe_line(verdict, self.config.slo_percentile, self.config.slo)}"
        self.on_progress(ProgressEvent(self.stage, line))
        return verdict

    def search(self, meets: Callable[[SearchProbe], bool] = lambda p: p.meets_slo) -> tuple[float, float | None, str]:
        """(highest load that met the SLOs (0 = none), lowest that did not (None = none), why it stopped), a probe
        judged by `meets`."""
        limit = self.config.find_max_limit
        first, halve = _next_loads(self.kind, limit)
        bracket, load = [], first
        while load < limit:
            bracket.append(load)
            load *= 2
        bracket.append(limit if self.kind == "rate" else float(int(limit)))
        lo, hi = 0.0, None
        for load in bracket:  # bracket: double until a miss
            if not meets(self.probe(load)):
                hi = load
                break
            lo = load
        if hi is None:
            return lo, None, f"met the SLOs up to the limit (--find-max-limit {limit:g})"
        if lo == 0 and self.kind == "rate":  # even the first rate missed: halve down to one that meets them
            for _ in range(RATE_HALVINGS):
                if hi <= MIN_RATE:  # as slow as --rate goes
                    break
                load = max(round(hi / 2, 6), MIN_RATE)
                if meets(self.probe(load)):
                    lo = load
                    break
                hi = load
        while lo > 0 and (mid := halve(lo, hi)) is not None:  # bisect between the last pass and the first miss
            if meets(self.probe(mid)):
                lo = mid
            else:
                hi = mid
        miss, at = self.probes[hi], self.load_text(hi)
        if miss.status != "ok":
            return lo, hi, f"{at}: {miss.status} ({miss.reason})"
        if miss.requests_failed:  # not the latency: the server failed requests (it died, refused, cut streams)
            failed = f"{plural(miss.requests_failed, 'measured request')} failed"
            return lo, hi, f"{at}: {failed} (first: {miss.first_error}), a miss whatever the latency"
        if lo == 0 and hi != first:  # a rate search halved down from its first load, every one missing
            return lo, hi, f"every load from the first ({self.load_text(first)}) down to {at} missed the SLOs"
        if lo == 0:
            return lo, hi, f"the first load ({at}) missed the SLOs"
        return lo, hi, f"{at} missed the SLOs"

    def load_text(self, load: float) -> str:
        """A load as the reasons say it: '1 client', '6 clients', '0.5 req/s'."""
        return plural(int(load), "client") if self.kind == "clients" else f"{load:g} req/s"

    def result(self, plan: Plan | None, lo: float, why: str, *, interrupted: bool = False) -> SearchResult:
        """The SearchResult of this search whose highest load meeting the SLOs is `lo` (0: none), stopped for
        `why`."""
        config, best = self.config, self.probes.get(lo)
        return SearchResult(
            kind=self.kind,
            context_tokens=self.context,
            workload=config.workload,
            slo=config.slo,
            percentile=config.slo_percentile,
            max_clients=int(lo) if self.kind == "clients" else None,
            max_rate_per_s=lo if self.kind == "rate" else None,
            in_flight_cap=self.cap,
            bound_reason=why,
            kv_wall_clients=kv_wall_clients(plan, config, self.context),
            output_tok_per_s=best.output_tok_per_s if best else None,
            goodput_per_s=best.goodput_per_s if best else None,
            probes=list(self.probes.values()),
            cells=self.cells,
            interrupted=interrupted,
        )


def worst_case_loads(config: BenchConfig) -> list[float]:
    """Loads whose probes cost at least what the most probes `config`'s search can ask cost (a bound on its work,
    found before it runs): every load of the bracket, then the limit once for each bisection the widest gap of the
    bracket can take (each bisected load is below the first miss, at most the limit), and for a rate search the
    first load once for each halving (RATE_HALVINGS)."""
    kind, limit = config.find_max or "clients", config.find_max_limit
    first, halve = _next_loads(kind, limit)
    bracket, load = [], first
    while load < limit:
        bracket.append(load)
        load *= 2
    bracket.append(limit if kind == "rate" else float(int(limit)))
    gaps = [(a, b) for a, b in zip(bracket, bracket[1:], strict=False)] + [(bracket[0] / 2, bracket[0])] * (
        kind == "rate"
    )
    most = 0
    for lo, hi in gaps:
        for move_up in (True, False):  # every pass, and every miss: the two ends of the bisection
            a, b, steps = lo, hi, 0
            while (mid := halve(a, b)) is not None and a < mid < b:
                a, b, steps = (mid, b, steps + 1) if move_up else (a, mid, steps + 1)
            most = max(most, steps)
    halvings = [first] * (RATE_HALVINGS if kind == "rate" else 0)
    return [*bracket, *[bracket[-1]] * most, *halvings]


def refuse_other_search(config: BenchConfig, out_dir: Path) -> None:
    """Refuse (ConfigError, one line) a search's `out_dir` holding a bench run, or a probe the search `config` asks for
    would not take as its own (another --find-max kind, another config: the first difference named, runner's resume
    keys and SEARCH_KEYS), before anything is sent or simulated: `bench --find-max` and `simulate --find-max` resume
    only the search they started."""
    where = f"cannot resume the SLO search in {out_dir}"
    if saved_config(out_dir) is not None:
        raise ConfigError(f"{where}: it holds a bench run, not a --find-max search; choose another --out")
    kind = config.find_max or "clients"
    digests = input_digests(config)
    for run_dir in probe_dirs(out_dir):
        old = saved_config(run_dir)
        if old is None:
            continue
        was = "rate" if old.rate_per_s is not None else "clients"
        if was != kind:
            raise ConfigError(f"{where}: {run_dir.name} is a --find-max {was} probe, now --find-max {kind}")
        _, now = probe_config(config, old.rate_per_s if old.rate_per_s is not None else old.clients[0])
        edited = [flag_of(BenchConfig, f) for f, d in digests.items() if old.input_sha256.get(f, d) != d]
        differs = config_difference(old, now, SEARCH_KEYS) or (edited and f"{edited[0]} changed since it started")
        if differs:
            raise ConfigError(f"{where} ({run_dir.name}): {differs}; run it as it was, or choose another --out")


class _Measured:
    """bench's probe source: each probe a one-cell bench run in its directory under `out_dir` (resumed there)."""

    def __init__(self, config: BenchConfig, out_dir: Path, plan: Plan | None, on_progress: ProgressFn):
        self.config, self.out_dir, self.plan, self.on_progress = config, out_dir, plan, on_progress
        self.kind = config.find_max or "clients"

    def check_saved(self) -> None:
        """Refuse a directory holding a bench run or another search's probes (refuse_other_search)."""
        refuse_other_search(self.config, self.out_dir)

    def __call__(self, load: float) -> tuple[SearchProbe, CellResult]:
        """Measure one load (one measured before an interruption, without a failed request, is read back from its
        directory)."""
        cfg = self.config
        name, probe_cfg = probe_config(cfg, load)
        run_dir = self.out_dir / name
        saved = saved_run(run_dir)
        if saved is not None and _finished(saved, probe_cfg):
            cell = saved.cells[0]
            self.on_progress(ProgressEvent("bench", f"find-max: {name} read back from {run_dir}"))
        else:
            resume = saved is not None  # unfinished or with failures: resumed as a grid is, complete reps kept
            self.on_progress(ProgressEvent("bench", f"find-max: {'resuming' if resume else 'measuring'} {name}"))
            again = f"run the same --find-max search into {self.out_dir} again to resume it"
            run: BenchRun = run_grid(
                probe_cfg, run_dir, plan=self.plan, resume=resume, on_progress=self.on_progress, resume_hint=again
            )
            cell = run.cells[0]
        return judge(cell, run_dir, cfg.slo, cfg.slo_percentile), cell


def probe_dirs(out_dir: Path) -> list[Path]:
    """The probes' folders in a search's `out_dir` (clients-N, rate-R), sorted."""
    return sorted([*out_dir.glob("clients-*"), *out_dir.glob("rate-*")])


def _saved_plan(out_dir: Path) -> Plan | None:
    """The plan (--plan) the probes saved in `out_dir` were judged by, None when none was (or nothing is saved)."""
    plans = (saved_config(d) for d in probe_dirs(out_dir))
    return next((c.bench_plan for c in plans if c is not None and c.bench_plan is not None), None)


def _finished(saved: BenchRun, probe_cfg: BenchConfig) -> bool:
    """Whether a probe's saved run is that probe measured to the end without a failed request (a resumed grid measures
    a repetition with a failed request again; so does a resumed search)."""
    cell = saved.cells[0] if saved.cells else None
    done = cell is not None and cell.status != "failed" and not cell.requests_failed
    return done and config_difference(saved.config, probe_cfg) is None


def read_search(out_dir: Path) -> SearchResult:
    """`out_dir`/search.json. A rate search's saved before in_flight_cap existed has none: its probes ran with their
    --clients value in flight at most (no max_in_flight then), which each probe's saved config tells; when every
    probe's does, the same value is its cap, else it stays unset (the report says 'not recorded', not 'none')."""
    result = SearchResult.model_validate_json((out_dir / SEARCH_FILE).read_text(encoding="utf-8"))
    if result.kind != "rate" or "in_flight_cap" in result.model_fields_set:
        return result
    configs = [saved_config(d) for d in probe_dirs(out_dir)]
    caps = {c.clients[0] if c.max_in_flight is None else c.max_in_flight or None for c in configs if c is not None}
    if not configs or None in configs or len(caps) != 1:
        return result
    return result.model_copy(update={"in_flight_cap": caps.pop()})


def probe_line(p: SearchProbe, percentile: float, slo: dict[str, float]) -> str:
    """'meets' / 'misses' and each SLO metric at the percentile (ms, schemas.bench.slo_ms_text against its bound in
    `slo`), one line."""
    values = ", ".join(
        f"p{percentile:g} {k} {'-' if v is None else slo_ms_text(v, slo.get(k))}"
        for k, v in sorted(p.at_percentile_ms.items())
    )
    verdict = "meets" if p.meets_slo else "misses"
    failed = f", {p.requests_failed} failed" if p.requests_failed else ""
    return f"{verdict} ({p.status}{failed}; {values})" + (" [schedule slipped]" if p.schedule_slipped else "")


def find_max(
    config: BenchConfig, out_dir: Path, *, plan: Plan | None = None, on_progress: ProgressFn = no_progress
) -> SearchResult:
    """Search the largest load meeting `config.slo` at `config.slo_percentile` (module docstring); write
    `out_dir`/search.json and one bench run per probe under `out_dir`, and return the SearchResult.

    Raises what run_grid raises (EndpointError, ConfigError, Interrupted: the probes finished so far stay, and the
    same search into `out_dir` resumes), ConfigError when `out_dir` holds a bench run or another search, and BusyError
    while another search or bench writes `out_dir` (the search holds its lock, exclusive, from start to end; each
    probe's run_grid holds its own directory's). A search stopped before its answer, interrupted (KeyboardInterrupt,
    Interrupted) or by an error once a probe was judged (the server gone mid-probe), first writes search.json with the
    probes judged so far, `interrupted` set, its bound_reason saying why, and its answer the highest load that met the
    SLOs so far (a lower bound)."""
    out_dir = Path(out_dir)
    if plan is None and config.bench_plan is None and (plan := _saved_plan(out_dir)) is not None:
        on_progress(ProgressEvent("bench", "find-max: --plan not given: the plan the search started with is used"))
    plan = plan or config.bench_plan
    # kept in each probe's config: a resumed search judges by it
    config = config.model_copy(update={"bench_plan": plan})
    measured = _Measured(config, out_dir, plan, on_progress)
    measured.check_saved()
    s = LoadSearch(config, measured, on_progress)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} is {kind_of(out_dir)}, not a run directory")
    created = create_run_dir(out_dir)
    try:
        with exclusive(out_dir, f"another bench is writing {out_dir}; choose another --out"):
            measured.check_saved()  # again under the lock: a search or bench may have written there since
            result = _search_to_end(s, plan, out_dir)
    except OnechipError:
        if created is not None and not s.probes:  # nothing measured: no empty directory left
            remove_if_empty(out_dir, created)
        raise
    return result


def stopped_result(
    s: LoadSearch, plan: Plan | None, out_dir: Path, exc: KeyboardInterrupt | OnechipError
) -> SearchResult | None:
    """The SearchResult of search `s` stopped by `exc` before its answer (interrupted: KeyboardInterrupt, Interrupted;
    else an error once a probe was judged): the probes judged so far, `interrupted` set, its bound_reason saying why
    and how to resume it into `out_dir`, its answer the highest load that met the SLOs so far (a lower bound). None
    for an error before any probe was judged (no search to say anything of)."""
    again = f"run the same --find-max search into {out_dir} again to resume it"
    stopped = isinstance(exc, KeyboardInterrupt | Interrupted)
    if not stopped and not s.probes:
        return None
    met = [load for load, p in s.probes.items() if p.meets_slo]
    how = "interrupted" if stopped else f"stopped by an error ({exc})"
    why = f"{how} after {plural(len(s.probes), 'probe')}" + ("" if again in how else f"; {again}")  # run_grid's
    return s.result(plan, max(met, default=0.0), why, interrupted=True)  # error may say it already


def _search_to_end(s: LoadSearch, plan: Plan | None, out_dir: Path) -> SearchResult:
    """Run search `s` and write its search.json; a search stopped before its answer (interrupted, or an error: the
    server gone mid-probe) first writes the probes judged so far, `interrupted` set (find_max)."""
    try:
        lo, _, why = s.search()
    except (KeyboardInterrupt, OnechipError) as exc:
        if (partial := stopped_result(s, plan, out_dir, exc)) is not None:
            write_text_atomic(out_dir / SEARCH_FILE, partial.model_dump_json(indent=2))
        raise
    result = s.result(plan, lo, why)
    write_text_atomic(out_dir / SEARCH_FILE, result.model_dump_json(indent=2))
    return result


__all__ = [
    "SEARCH_FILE",
    "LoadSearch",
    "ProbeSource",
    "find_max",
    "judge",
    "judge_samples",
    "probe_config",
    "probe_dirs",
    "probe_line",
    "read_search",
    "refuse_other_search",
    "stopped_result",
    "worst_case_loads",
]
