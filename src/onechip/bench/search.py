"""`bench --find-max clients|rate`: the largest load whose measured cell meets the SLOs.

Bracket, then bisect: loads double from the first (1 client, or the limit / RATE_START_DIVISOR
requests/s) until a probe misses the SLOs, is infeasible (the plan's KV wall) or the limit is reached (a
rate whose first load misses halves down instead, at most RATE_HALVINGS times, until one meets them); then
the gap between the last load that met them and the first that did not is halved until it closes
(clients: adjacent integers; rate: within RATE_RESOLUTION of each other). Each probe is a one-cell bench
run (`reps` repetitions) in its own directory under the search's, so every answer can be re-read and
re-rendered. A probe meets the SLOs when no measured request failed and each SLO metric at
`slo_percentile` over its measured requests is within its bound (open loop: TTFT and E2E from the intended
send time, so a schedule the server could not keep up with misses).

Latency does not grow smoothly with load on a shared machine: a probe is one measurement, and the answer is
the load that met the SLOs next to one that did not, both kept in `probes`. The search assumes that
meeting the SLOs is monotone in load; a noisy miss below the answer would show in `probes`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from onechip.bench import stats
from onechip.bench.runner import load_samples, longest_prompt, run_grid
from onechip.paths import write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.bench import BenchConfig, BenchRun, CellResult, SearchProbe, SearchResult
from onechip.schemas.plan import Plan
from onechip.schemas.run import RUN_FILES, SEARCH_FILE

RATE_START_DIVISOR = 16  # a rate search starts at limit / 16 (4 req/s for the default limit of 64)
RATE_HALVINGS = 6  # ... and goes down to limit / 1,024 when even the first rate misses
RATE_RESOLUTION = 1.15  # a rate search stops when the passing and failing rates are within 15%


def judge(cell: CellResult, run_dir: Path, slo: dict[str, float], percentile: float) -> SearchProbe:
    """A probe's verdict from its cell and raw samples: each SLO metric at `percentile` over the measured
    requests (ms), the share that met every SLO, and whether the cell meets the SLOs."""
    measured = [s for s in load_samples(run_dir / RUN_FILES["requests"]) if not s.warmup]
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
        run_dir=str(run_dir),
        status=cell.status,
        reason=cell.reason,
        meets_slo=meets,
        at_percentile_ms=at,
        attainment=attained,
        output_tok_per_s=cell.output_tok_per_s,
        goodput_per_s=cell.goodput_per_s,
        schedule_slipped=cell.schedule_slipped,
    )


def kv_wall_clients(plan: Plan | None, config: BenchConfig, context_tokens: int) -> int | None:
    """Clients the plan's KV pool holds when every one has its longest prompt plus output in cache (times N for a
    plan of one of N replicas, clients spread evenly: runner.kv_wall)."""
    if plan is None:
        return None
    return plan.replicas * (plan.kv_tokens // (longest_prompt(config, context_tokens) + config.output_tokens))


def _next_loads(kind: str, limit: float) -> tuple[float, Callable[[float, float], float | None]]:
    """The first load, and the bisection step (lo, hi) -> next load, None when the gap is closed."""
    if kind == "clients":
        return 1, lambda lo, hi: None if hi - lo <= 1 else float((int(lo) + int(hi)) // 2)
    first = limit / RATE_START_DIVISOR
    return first, lambda lo, hi: None if hi <= lo * RATE_RESOLUTION else round((lo * hi) ** 0.5, 3)


class _Search:
    def __init__(self, config: BenchConfig, out_dir: Path, plan: Plan | None, on_progress: ProgressFn):
        self.config, self.out_dir, self.plan, self.on_progress = config, out_dir, plan, on_progress
        self.kind = config.find_max or "clients"
        self.context = config.contexts[0]
        self.probes: dict[float, SearchProbe] = {}
        self.cells: list[CellResult] = []

    def probe(self, load: float) -> SearchProbe:
        """Measure one load (once: a load already measured is not run again)."""
        if load in self.probes:
            return self.probes[load]
        cfg = self.config
        update: dict[str, object]
        if self.kind == "clients":
            name, update = f"clients-{int(load)}", {"clients": [int(load)]}
        else:
            name, update = f"rate-{load:g}", {"rate_per_s": load, "clients": cfg.clients[:1]}
        probe_cfg = cfg.model_copy(update={**update, "contexts": [self.context], "find_max": None})
        self.on_progress(ProgressEvent("bench", f"find-max: measuring {name}"))
        run: BenchRun = run_grid(probe_cfg, self.out_dir / name, plan=self.plan, on_progress=self.on_progress)
        verdict = judge(run.cells[0], self.out_dir / name, cfg.slo, cfg.slo_percentile).model_copy(
            update={"load": load}
        )
        self.probes[load] = verdict
        self.cells.append(run.cells[0])
        self.on_progress(ProgressEvent("bench", f"find-max: {name}: {probe_line(verdict, cfg.slo_percentile)}"))
        return verdict

    def search(self) -> tuple[float, float | None, str]:
        """(highest load that met the SLOs (0 = none), lowest that did not (None = none), why it stopped)."""
        limit = self.config.find_max_limit
        first, halve = _next_loads(self.kind, limit)
        bracket, load = [], first
        while load < limit:
            bracket.append(load)
            load *= 2
        bracket.append(limit if self.kind == "rate" else float(int(limit)))
        lo, hi = 0.0, None
        for load in bracket:  # bracket: double until a miss
            if not self.probe(load).meets_slo:
                hi = load
                break
            lo = load
        if hi is None:
            return lo, None, f"met the SLOs up to the limit (--find-max-limit {limit:g})"
        if lo == 0 and self.kind == "rate":  # even the first rate missed: halve down to one that meets them
            for _ in range(RATE_HALVINGS):
                load = round(hi / 2, 6)
                if self.probe(load).meets_slo:
                    lo = load
                    break
                hi = load
        while lo > 0 and (mid := halve(lo, hi)) is not None:  # bisect between the last pass and the first miss
            if self.probe(mid).meets_slo:
                lo = mid
            else:
                hi = mid
        miss = self.probes[hi]
        if miss.status != "ok":
            return lo, hi, f"{hi:g} {self.kind}: {miss.status} ({miss.reason})"
        if lo == 0:
            return lo, hi, f"the first load ({hi:g} {self.kind}) missed the SLOs"
        return lo, hi, f"{hi:g} {self.kind} missed the SLOs"


def probe_line(p: SearchProbe, percentile: float) -> str:
    """'meets' / 'misses' and each SLO metric at the percentile, one line."""
    values = ", ".join(
        f"p{percentile:g} {k} {'-' if v is None else f'{v:,.0f}'}" for k, v in sorted(p.at_percentile_ms.items())
    )
    verdict = "meets" if p.meets_slo else "misses"
    return f"{verdict} ({p.status}; {values})" + (" [schedule slipped]" if p.schedule_slipped else "")


def find_max(
    config: BenchConfig, out_dir: Path, *, plan: Plan | None = None, on_progress: ProgressFn = no_progress
) -> SearchResult:
    """Search the largest load meeting `config.slo` at `config.slo_percentile` (module docstring); write
    `out_dir`/search.json and one bench run per probe under `out_dir`, and return the SearchResult.

    Raises what run_grid raises (EndpointError, ConfigError, Interrupted: the probes finished so far stay)."""
    out_dir = Path(out_dir)
    s = _Search(config, out_dir, plan, on_progress)
    lo, hi, why = s.search()
    best = s.probes.get(lo)
    result = SearchResult(
        kind=s.kind,
        context_tokens=s.context,
        workload=config.workload,
        slo=config.slo,
        percentile=config.slo_percentile,
        max_clients=int(lo) if s.kind == "clients" else None,
        max_rate_per_s=lo if s.kind == "rate" else None,
        bound_reason=why,
        kv_wall_clients=kv_wall_clients(plan, config, s.context),
        output_tok_per_s=best.output_tok_per_s if best else None,
        goodput_per_s=best.goodput_per_s if best else None,
        probes=list(s.probes.values()),
        cells=s.cells,
    )
    write_text_atomic(out_dir / SEARCH_FILE, result.model_dump_json(indent=2))
    return result


__all__ = ["SEARCH_FILE", "find_max", "judge", "probe_line"]
