"""`simulate` and `advise`: predicting a grid from a plan and a calibration, and choosing a chip."""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from onechip import __version__, planner, sim
from onechip import cost as cost_layer
from onechip import report as report_layer
from onechip.api._plan import PLAN_LENGTH
from onechip.bench import stats as bench_stats
from onechip.bench.runner import open_loop, this_client
from onechip.bench.search import probe_dirs
from onechip.errors import ConfigError, DoesNotFit
from onechip.paths import exclusive, run_dir, write_text_atomic
from onechip.planner.chips import LOCAL_WHERE
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import RUN_FILES, BenchConfig, BenchRun, Plan
from onechip.schemas.bench import AGENT_ONLY, BenchServer, CellResult
from onechip.schemas.common import GIB, model_key, plural
from onechip.schemas.inputs import describe
from onechip.schemas.replicas import RouterPolicy
from onechip.schemas.requests import AdviseRequest, PlanRequest, SimulateRequest, refuse_existing_run
from onechip.schemas.run import SEARCH_FILE
from onechip.schemas.sim import Advice, AdviceRow, Calibration, Prediction, StepTerms
from onechip.sim import priors, uncertainty
from onechip.sim import store as calibration_store
from onechip.sim.predict import START_SPREAD_S
from onechip.sim.uncertainty import Source

from ._advise_rank import ADVISE_NOTE, rank, rank_note
from ._sim_bounds import (
    refuse_search_unfinishable,
    refuse_too_much,
    refuse_unfinishable,
    step_limit_reason,
    work,
)

SIM_NOTE = (
    "simulated: vLLM V1 scheduler (continuous batching, chunked prefill, KV blocks, recompute preemption) with "
    "fitted step times and the API server's output rounds; the agent workload's prefix-cache hits and its "
    "routing over replicas by sim.routing; not modelled: speculative decoding, several KV-cache groups"
)
PRIORS_NOTE = (
    "priors from published measurements only (no calibration: sim.priors.measured_priors, the roofline at the "
    "efficiencies and host cost measured on this chip where the corpus has them, else on other chips); "
    "calibrate with `onechip simulate --calibrate RUN_DIR` (a `bench --calibration` run on this chip)"
)


def predicted_url(chip: str) -> str:
    """The base URL a prediction records for `chip` (BenchConfig requires a server URL; nothing is asked there):
    http://predicted.<chip>, each run of characters a host name cannot hold made one '-' (`gpu:24GiB` ->
    predicted.gpu-24GiB: the ':' read as a port, and an unsupported chip name was an internal error)."""
    return f"http://predicted.{re.sub(r'[^A-Za-z0-9.-]+', '-', chip).strip('-.') or 'chip'}"


def _read_plan(path: Path) -> Plan:
    """The plan to simulate (Plan.from_file); a plan that does not fit has nothing to predict: refused, saying what
    to plan instead as `plan`'s own refusal does (Plan.fit_hint: the longest length that fits, where it knows it)."""
    the_plan = Plan.from_file(path)
    if not the_plan.fits:
        raise ConfigError(
            f"--plan {path}: the plan does not fit ({the_plan.verdict}); nothing to predict: plan it again and "
            f"{the_plan.fit_hint(PLAN_LENGTH)}"
        )
    return the_plan


def _served_matches(plan: Plan, served: str | None) -> bool:
    """Whether a run's served model name can be the plan's model (names compared by their last part)."""
    if not served:
        return True
    return model_key(served) in {model_key(n) for n in (plan.model, plan.serve_model or "") if n}


def calibration_for(plan: Plan, run_dir: Path | None, on_progress: ProgressFn = no_progress) -> Calibration | None:
    """Fit (and store) a calibration from the bench run in `run_dir`, or the stored one for `plan` when
    `run_dir` is None (None when none is stored; the plan's engine version's first, sim.store.find). Raises
    ConfigError when the run is not a bench run, was measured on another model or chip than `plan`'s, is itself a
    prediction (`simulate`'s output: fitting it would store a calibration no measurement backs), or lacks the cells
    the fit needs."""
    if run_dir is None:
        return calibration_store.find(plan.model, plan.chip, plan.engine, plan.engine_version)
    files = report_layer.read_run(run_dir, "--calibrate")
    if files.bench is None:
        why = files.problem("bench") or "no bench summary.json there (run `onechip bench --calibration`)"
        raise ConfigError(f"--calibrate {run_dir}: {why}")
    if files.bench.prediction is not None:
        raise ConfigError(
            f"--calibrate {run_dir} is a predicted run (onechip simulate), not a measured one; "
            "calibrate on a run of `onechip bench --calibration`"
        )
    if files.plan is not None and (model_key(files.plan.model), files.plan.chip) != (model_key(plan.model), plan.chip):
        raise ConfigError(
            f"--calibrate {run_dir} was measured for {files.plan.model} on {files.plan.chip}; "
            f"the plan is for {plan.model} on {plan.chip}"
        )
    if not _served_matches(plan, files.bench.server.model):
        raise ConfigError(f"--calibrate {run_dir} served {files.bench.server.model}; the plan is for {plan.model}")
    calibration = sim.calibrate(
        plan, files.bench, source_run=str(run_dir), on_progress=on_progress, start_spread_s=START_SPREAD_S
    )
    calibration_store.save(calibration)
    return calibration


def predicted_cells(
    plan: Plan,
    terms: StepTerms,
    config: BenchConfig,
    seeds: int,
    on_progress: ProgressFn = no_progress,
    replicas: int = 1,
    policy: RouterPolicy = "cache_aware",
    whole_run: bool = True,
) -> list[CellResult]:
    """Every cell of `config` on `replicas` engines (agent sessions routed by `policy`) simulated `seeds`
    times and summarised by bench's statistics (predicted_cell); `whole_run` False: the whole-run figures left as the
    drawn-start runs give them, their second run skipped (sim.simulate_cell), for a caller that reads none."""
    grid = sim.simulate_grid(plan, terms, config, seeds, on_progress, START_SPREAD_S, replicas=replicas, policy=policy,
                             whole_run=whole_run)  # fmt: skip
    return [predicted_cell(p, config, seeds, replicas, policy) for p in grid]


def predicted_cell(
    p: sim.CellPrediction, config: BenchConfig, seeds: int, replicas: int = 1, policy: RouterPolicy = "cache_aware"
) -> CellResult:
    """One simulated cell summarised by bench's statistics (the seeds are the reps: median and CV over seeds; goodput
    under config.slo when given, as bench's; the reason says the seeds' range and any preemptions; an agent cell also
    its prefix-cache hit share as the engines' /metrics count it, in server_metrics_delta, and the requests each engine
    got)."""
    cell = CellResult(context_tokens=p.context_tokens, clients=p.clients, status="ok")
    if p.infeasible:
        return cell.model_copy(update={"status": "infeasible", "reason": p.infeasible})
    cell = bench_stats.summarize_cell(cell, p.samples_by_seed, config.output_tokens, config.slo or None,
                                      config.rate_per_s is not None)  # fmt: skip
    cell = sim.with_whole_run(cell, p)
    rates = [r.output_tok_per_s for r in cell.reps]
    reason = f"predicted over {seeds} seeds: {min(rates):,.1f}-{max(rates):,.1f} output tok/s"
    if p.preemptions:
        reason += f"; beyond the KV wall ({p.preemptions} preemptions by recompute)"
    if replicas > 1 and not p.routings:
        reason += f"; clients split over {replicas} engines (unique prompts: every policy spreads them alike)"
    update: dict[str, object] = {"reason": reason}
    if p.routings:
        hits = [r.server_hit_rate() or 0.0 for r in p.routings]
        update["server_metrics_delta"] = {"prefix_cache_hit_rate": statistics.median(hits)}
        update["replicas"] = sim.routing.served(p.routings)
        update["reason"] = f"{reason}; prefix-cache hit share {min(hits):.0%}-{max(hits):.0%} over seeds " + (
            f"(warm-ups included; {policy} over {replicas} engines)" if replicas > 1 else "(warm-ups included)"
        )
    return cell.model_copy(update=update)


def simulate(request: SimulateRequest, on_progress: ProgressFn = no_progress) -> BenchRun:
    """Predict a context x clients grid for the plan in `request.plan`: calibrated on `request.calibrate`
    (a measured bench run; the fit is stored per model, chip, engine and version), else a stored
    calibration, else priors from published measurements (said in the run's notes). Writes
    `request.out_dir` (None: a new runs/<run-id>/, paths.run_dir)/summary.json (a BenchRun with `prediction`
    set), requests.jsonl is not written
    (simulated samples are not measurements), and plan.json. Raises ConfigError (bad plan, calibration for
    another model, missing cells, a chip with no roofline figures and no calibration), and, the run written,
    when no cell of the grid is feasible (simulate_unserved's line: the CLI's exit 2 and the MCP tool's error,
    so a pipeline or an agent never reads an all-infeasible grid as a prediction)."""
    run, out_dir = predicted_run(request, on_progress)
    if unserved := simulate_unserved(run, out_dir):
        raise ConfigError(unserved)
    return run


def predicted_run(request: SimulateRequest, on_progress: ProgressFn = no_progress) -> tuple[BenchRun, Path]:
    """simulate without its all-infeasible refusal (simulate_policies refuses once, over every policy's run):
    the predicted run and the directory it was written in. Raises what simulate raises before writing."""
    if request.find_max is not None:  # a search's result is not a run (simulate_find_max)
        raise ConfigError("simulate --find-max searches the load: its result is a search (api.simulate_find_max)")
    the_plan, config, calibration, terms = prepared(request, on_progress)
    policy = request.router_policies[0]
    cells = predicted_cells(the_plan, terms, config, request.reps, on_progress, request.replicas, policy)
    run = predicted_bench_run(request, the_plan, config, cells, calibration, terms)
    with run_dir(request.out_dir) as out_dir:
        write_predicted(run, the_plan, out_dir)
    return run, out_dir


def prepared(
    request: SimulateRequest, on_progress: ProgressFn = no_progress
) -> tuple[Plan, BenchConfig, Calibration | None, StepTerms]:
    """(the plan, the BenchConfig bench would run with the same flags, the calibration or None, the step-time terms)
    of a simulate call, every bound checked (_sim_bounds; a --find-max search over its probes) before a calibration
    is fitted and stored. Raises ConfigError for an out_dir holding a run, a search or a search's probes, several
    router policies, a plan that does not fit or is another's, and what calibration_for raises (a --find-max search
    is let into a directory holding a search: api._sim_search resumes it or refuses it)."""
    # an earlier prediction or a measured run there is never overwritten (as bench refuses); a search's search.json
    # and probes are another --find-max search's to resume (api._sim_search checks they are this one's)
    search = request.find_max is not None
    try:
        refuse_existing_run(request.out_dir, (*RUN_FILES.values(), *((SEARCH_FILE,) * (not search))))
    except ValueError as exc:
        raise ConfigError(f"--out {exc}") from None
    out = request.out_dir
    if not search and out is not None and out.is_dir() and (held := probe_dirs(out)):
        # a search stopped before its search.json (Ctrl-C) left its probes' runs, which are never written over nor
        # joined by a grid (bench refuses a grid there too)
        raise ConfigError(f"--out {out} already holds a search's probes ({held[0].name}); choose a new directory")
    if len(request.router_policies) > 1:  # one run is one policy (ConfigError): never the first, the rest dropped
        raise ConfigError(
            "simulate predicts one routing policy per run: call it once per policy (the CLI's --router-policies "
            "a,b does, into OUT/<policy>/ with OUT/policies.json)"
        )
    the_plan = _read_plan(request.plan)
    the_plan.refuse_other_replicas(request.replicas, f"--plan {request.plan}")
    _refuse_pipeline_parallel(the_plan)
    # the fields given, as bench's config holds what was typed (its bound and open_loop read which were: a --rate
    # run's count is --requests-per-client only when given); reps always, simulate's default being its own
    given = {"contexts", "clients", "output_tokens", "requests_per_client", "warmup_requests", "rate_per_s",
             "workload", "slo", "find_max", "slo_percentile", "find_max_limit",
             *(AGENT_ONLY if request.workload == "agent" else ())} & request.model_fields_set  # fmt: skip
    fields = request.model_dump(include={"reps", *given})
    try:
        config = BenchConfig.model_validate({"base_url": predicted_url(the_plan.chip),
                                             "model": the_plan.model, **fields})  # fmt: skip
    except ValidationError as exc:
        raise ConfigError(describe(SimulateRequest, exc)) from None
    config = open_loop(config)  # --rate: the schedule `bench --rate` sends (issue 22)
    bounded = refuse_unfinishable if config.find_max is None else refuse_search_unfinishable
    bounded(the_plan, config, request.replicas)  # before a calibration is fitted and stored
    calibration = calibration_for(the_plan, request.calibrate, on_progress)
    terms = calibration.terms if calibration else priors.measured_priors(the_plan)
    if config.rate_per_s is not None or config.find_max == "rate":  # open loop: how many run at once depends on the
        bounded(the_plan, config, request.replicas, terms)  # step times (min_steps)
    return the_plan, config, calibration, terms


def predicted_bench_run(
    request: SimulateRequest,
    the_plan: Plan,
    config: BenchConfig,
    cells: list[CellResult],
    calibration: Calibration | None,
    terms: StepTerms,
) -> BenchRun:
    """The BenchRun of `cells` predicted for `config` on `the_plan`, marked predicted (its `prediction`)."""
    return BenchRun(
        tool_version=__version__, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        server=BenchServer(model=the_plan.model, engine_version=the_plan.engine_version,
                           engine=f"predicted {the_plan.engine}"),
        client=this_client(),
        config=config, prompt_method="simulated", cells=cells,
        notes=[SIM_NOTE, *([] if calibration else [PRIORS_NOTE]),
               *calibration_store.newer_notes(the_plan.model, the_plan.chip, the_plan.engine)],
        prediction=prediction_of(request, calibration, terms, the_plan),
    )  # fmt: skip


def prediction_of(
    request: SimulateRequest, calibration: Calibration | None, terms: StepTerms, the_plan: Plan
) -> Prediction:
    """What a prediction of `request` for `the_plan` rests on: the calibration (or priors), the terms, the seeds, the
    replicas, the engine version it predicts for (the plan's), and how far the calibration misses its own cells."""
    policy = request.router_policies[0]
    return Prediction(calibration=calibration, terms=terms, seeds=request.reps,
                      note=SIM_NOTE if calibration else PRIORS_NOTE, replicas=request.replicas,
                      calibration_misfit=uncertainty.misfit_note(calibration),
                      router_policy=policy if request.replicas > 1 else None,
                      engine_version=the_plan.engine_version)  # fmt: skip


def _refuse_pipeline_parallel(the_plan: Plan) -> None:
    """The step-time model and the scheduler simulate one engine whose chips split each layer (tensor
    parallel); a pipeline-parallel plan's stages run in turn with several batches in flight, which they do not
    model. Raises ConfigError in one line rather than predicting it as if PP were 1."""
    if the_plan.pipeline_parallel_size > 1:
        raise ConfigError(
            f"the plan has pipeline_parallel_size {the_plan.pipeline_parallel_size}: simulate and advise model "
            "one pipeline stage (tensor parallel only); plan with --pipeline-parallel-size 1"
        )


def write_predicted(run: BenchRun, the_plan: Plan, out_dir: Path) -> None:
    """Write the predicted run into `out_dir`, which is locked as bench locks its run (paths.exclusive) and checked
    again to hold no run: a run written there since predicted_run's first check (a second simulate call into the
    same out_dir at once, over MCP) is kept and this one refused, not written over it."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {out_dir}: {exc.strerror or exc}") from None
    with exclusive(out_dir, f"another run is being written in {out_dir}; choose another --out"):
        try:
            refuse_existing_run(out_dir, tuple(RUN_FILES.values()))
        except ValueError as exc:
            raise ConfigError(f"--out {exc}") from None
        write_text_atomic(out_dir / RUN_FILES["bench"], run.model_dump_json(indent=2))
        write_text_atomic(out_dir / RUN_FILES["plan"], the_plan.model_dump_json(indent=2))


def _deployments(request: AdviseRequest) -> list[tuple[str, int, int]]:
    """(chip, engines, tensor-parallel size) to consider: each chip as one engine over all its chips, a
    multi-chip slice also as one engine per chip (replicas), and a one-chip chip also as two of it (a second
    chip, replicas behind a round-robin balancer) when there are clients to split, so the advice says when a
    second chip beats a bigger slice. TP counts devices: a chip of several (TPU v7x, one per TensorCore) is used
    whole, TP 2 per v7x chip. Raises ConfigError for an unknown chip."""
    chips = request.chips or _default_chips()
    out = []
    # 'V5E-1' is v5e-1 (its prices, priors and calibrations), and a chip named twice ('v5e-1,V5E-1') is one row
    for chip in dict.fromkeys(map(planner.rules.chip_key, chips)):
        acc = planner.rules.accelerator(chip, "--chips")  # raises ConfigError naming the flag
        # a chip of several devices (TPU v7x: one per TensorCore) is used whole by TP over its devices
        n, per_chip = acc.chips, acc.devices_per_chip
        out.append((chip, 1, n * per_chip))
        if n > 1:
            out.append((chip, n, per_chip))
        elif request.workload["clients"] >= 2:
            out.append((chip, 2, per_chip))
    return out


def _default_chips() -> list[str]:
    """The catalog chips advise compares when none are named: all but CPU hosts, one key per GPU card (a card the
    catalog holds under two deployments, mi300x and its SR-IOV virtual function mi300x-vf, is one card to
    `chips.card_of` and one row, its first key); a TPU generation's slices stay apart, as each is a deployment."""
    out: dict[str, str] = {}
    for chip in planner.rules.known_accelerators():
        kind = planner.rules.accelerator(chip).kind
        if kind != "cpu":
            out.setdefault((planner.chips.card_of(chip) or chip) if kind == "gpu" else chip, chip)
    return list(out.values())


def _agent(request: AdviseRequest) -> BenchConfig | None:
    """advise's agent cell when the workload has turns: bench's agent workload (its user, call and result
    sizes) at that shape. Raises ConfigError when bench would refuse it (too many requests, too long)."""
    if "turns" not in request.workload:
        return None
    ctx, clients, out, turns = (int(request.workload[k]) for k in ("ctx", "clients", "output_tokens", "turns"))
    try:
        return BenchConfig(base_url="http://predicted", workload="agent", contexts=[ctx], clients=[clients],
                           output_tokens=out, turns=turns, reps=request.reps)  # fmt: skip
    except ValidationError as exc:
        raise ConfigError(f"--workload: {exc.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def _advice_price(chip: str, pricing: list[str]) -> tuple[str, float, str, str, bool] | str:
    """(pricing, USD per chip-hour, source, read date, stale) for `chip` from the freshest prices (the last
    Cloud Billing Catalog read, else prices.json), under the chip named by its accelerators.json `price_chip`
    (a slice: its one-chip sibling), for the first model of `pricing` it has a price for (parse_pricing's list:
    'SPOT' and 'spot,on-demand' matched no price, so every row fell to its cheapest price of any model), else
    another pricing model, its source then starting 'no spot price: '; the cheapest region, a fresh price before
    a stale one. A price with no source or no date is never used. A string (why there is none: the chip's
    `price_note`, or no sourced price) when nothing is left."""
    entry = planner.rules.accelerator(chip)
    key = cost_layer.billed_as(chip)[0]  # `advise` counts the chips it bills itself (engines x TP)
    prices = [p for p in cost_layer.all_prices() if p.chip == key and p.source.strip() and p.date.strip()]
    if not prices:
        return entry.price_note or f"no price with a source and a date for {key}: no price"
    today = cost_layer.utc_today()
    have = {p.pricing for p in prices}
    chosen = next(([p for p in prices if p.pricing == name] for name in pricing if name in have), prices)
    best = min(chosen, key=lambda p: (cost_layer.is_stale(p, today), p.usd_per_chip_hour))
    other = "" if best.pricing in pricing else f"no {' or '.join(pricing)} price: "
    where = f"{other}{key} {best.region} {best.pricing}: {best.source}, read {best.date}"  # staleness: its own field
    return best.pricing, best.usd_per_chip_hour, where, best.date, cost_layer.is_stale(best, today)


def _advice_terms(the_plan: Plan) -> tuple[Calibration | None, StepTerms, Source, priors.Basis]:
    """A stored calibration of this chip, else one carried over from another chip (sim.priors.carry), else
    priors from published measurements (sim.priors.measured_priors), with what the chip's efficiencies rest on.
    Raises ConfigError when none applies and the chip has no roofline figures."""
    basis = priors.basis(the_plan.chip, the_plan.engine)
    own = calibration_store.find(the_plan.model, the_plan.chip, the_plan.engine, the_plan.engine_version)
    if own is not None:
        return own, own.terms, "calibrated", basis
    other = calibration_store.find_elsewhere(the_plan.model, the_plan.chip, the_plan.engine)
    if other is not None:
        return other, priors.carry(other, the_plan).terms, "carried", basis
    return None, priors.measured_priors(the_plan), "prior", basis


def engine_loads(clients: int, engines: int) -> list[tuple[int, int]]:
    """(clients on one engine, engines with that many) for `clients` independent streams spread over `engines` as
    evenly as they go (a balancer's round robin), busiest first; an engine with none is left out: 5 over 2 is
    [(3, 1), (2, 1)], 8 over 4 [(2, 4)], 1 over 4 [(1, 1)]."""
    q, r = divmod(clients, engines)
    return [(n, k) for n, k in ((q + 1, r), (q, engines - r)) if n and k]


def _advice_config(request: AdviseRequest, agent: BenchConfig | None, chip: str, engines: int) -> BenchConfig:
    """The cell advise simulates for one deployment: the agent sessions over every engine, else one engine with
    the busiest engine's share of the clients (engine_loads; requests per client and warm-up: bench's defaults,
    what bench would run)."""
    if agent is not None:
        return agent
    ctx, clients, out = (int(request.workload[k]) for k in ("ctx", "clients", "output_tokens"))
    share = planner.geometry.cdiv(clients, engines)
    return BenchConfig(
        base_url=predicted_url(chip), contexts=[ctx], clients=[share], output_tokens=out, reps=request.reps
    )


def advice_max_model_len(longest: int, positions: int | None) -> int:
    """The max_model_len advise plans a deployment at for requests of up to `longest` tokens (prompt + output):
    the power of two above it, at least 2,048, but never past the model's `positions` (planner.source_positions,
    None: not stated) when the requests fit in them (Qwen3's 40,960 holds a 32,768 + 256 request; 65,536 is refused
    by the planner). A request longer than `positions` is planned at its own length, so the planner's refusal names
    what the workload asks for, not a rounded figure."""
    rounded = max(2048, 1 << (longest - 1).bit_length())
    return rounded if positions is None else max(longest, min(rounded, positions))


def _advice_row(
    request: AdviseRequest, agent: BenchConfig | None, chip: str, engines: int, tp: int, positions: int | None
) -> AdviceRow:
    """Plan, predict and price one deployment (`agent`: the workload's sessions, else independent requests;
    `positions`: the model's positions, see advice_max_model_len)."""
    ctx, clients, out = (int(request.workload[k]) for k in ("ctx", "clients", "output_tokens"))
    policy = request.router_policy if agent is not None and engines > 1 else None
    row = AdviceRow(chip=chip, engines=engines, tensor_parallel_size=tp, fits=False, router_policy=policy)
    last = None if agent is None else sim.agent_shape(agent, ctx, clients).prompt_tokens(agent.turns - 1)
    max_len = advice_max_model_len((last or ctx) + out, positions)
    try:
        fields: dict[str, Any] = {"model": request.model, "chip": chip, "tensor_parallel_size": tp,
                                  "max_model_len": max_len, "contexts": [ctx]}  # fmt: skip
        the_plan = planner.plan_model(PlanRequest(**fields))
        if "free-memory-at-start" in [the_plan.binding_limit, *(w.code for w in the_plan.warnings)]:
            # the engine's default utilization may not start on this host: plan at the one every measured host passed
            util = planner.start_utilization(planner.rules.accelerator(chip))
            the_plan = planner.plan_model(PlanRequest(**fields, utilization=util))
            row = row.model_copy(update={"utilization": util})
        unsupported = [w.message for w in the_plan.warnings if w.code == "platform-unsupported"]
        row = row.model_copy(update={"platform_unsupported": unsupported[0] if unsupported else None,  # plan's word
                                     "planned_fits": the_plan.fits})  # fmt: skip
        if not the_plan.fits:
            return row.model_copy(update={"verdict": the_plan.verdict})
        row = row.model_copy(update={"kv_tokens": the_plan.kv_tokens})  # planned: kept if the prediction fails
        calibration, terms, source, basis = _advice_terms(the_plan)
        simulated = _advice_config(request, agent, chip, engines)
        why = step_limit_reason(the_plan, simulated, ctx, simulated.clients[0], engines if agent else 1)
        if why is not None:
            return row.model_copy(update={"verdict": f"not simulated: {why}", "kv_tokens": the_plan.kv_tokens})
        if agent is not None:  # sessions: every engine simulated, turns routed (the cell is the deployment's)
            parts = [(1, predicted_cells(the_plan, terms, agent, request.reps, replicas=engines,
                                         policy=request.router_policy)[0])]  # fmt: skip
        else:  # independent requests: each engine load simulated once, its tok/s times the engines that carry it
            # (the busiest first: its cell gives the row's latencies); 1 client over 4 engines is one engine's tok/s,
            # where the busiest engine's times the engines read 4 x it, and 5 over 2 read 2 x 3 clients' tok/s. A row
            # reads the steady window and the latencies, no whole-run figure: its second run is not simulated
            parts = [(k, predicted_cells(the_plan, terms, simulated.model_copy(update={"clients": [n]}),
                                         request.reps, whole_run=False)[0])
                     for n, k in engine_loads(clients, engines)]  # fmt: skip
    except ConfigError as exc:
        return row.model_copy(update={"verdict": str(exc)})
    cell = parts[0][1]
    if bad := next((c for _, c in parts if c.status != "ok" or not c.output_tok_per_s), None):
        return row.model_copy(update={"verdict": bad.reason or bad.status, "kv_tokens": the_plan.kv_tokens})
    # a partly measured chip, or a tensor-parallel engine (its communication is not modelled), gets the wider error
    # (a calibration that pinned no term: a prior's); a calibrated row's never narrower than its fit's miss on the
    # fit's own cells (a carried row's terms are rescaled to the target's measurements, sim.priors.carry: its error is
    # the one measured for carried rows)
    key = uncertainty.error_key(source, basis.complete and tp == 1, calibration)
    own = calibration if source == "calibrated" else None
    total = sum(k * (c.output_tok_per_s or 0.0) for k, c in parts)
    rates = [sum(k * c.reps[i].output_tok_per_s for k, c in parts) for i in range(min(len(c.reps) for _, c in parts))]
    tok = uncertainty.figure_range(key, uncertainty.STEADY, total, (min(rates), max(rates)) if rates else None,
                                   uncertainty.own_factors(own, uncertainty.STEADY))  # fmt: skip
    latency = {
        name: uncertainty.figure_range(key, name, value, own=uncertainty.own_factors(own, name))
        for name, value in (("ttft_ms", cell.ttft_ms.median), ("tpot_ms", cell.tpot_ms.median))
        if value is not None
    }
    row = row.model_copy(update={
        "fits": True, "calibrated": source == "calibrated", "kv_tokens": the_plan.kv_tokens, "source": source,
        "calibrated_on": calibration.key.chip if calibration else None, "chip_measured": basis.measured,
        "error_source": f"{uncertainty.error_source(key)}; {priors.describe(basis)}",
        "output_tok_per_s": total, "output_tok_per_s_range": (tok.low, tok.high),
        "calibration_misfit": uncertainty.misfit_note(calibration, source),
        "prefix_cache_hit_share": cell.server_metrics_delta.get("prefix_cache_hit_rate"),
        "ttft_ms": cell.ttft_ms.median, "tpot_ms": cell.tpot_ms.median,
        **{f"{name}_range": (r.low, r.high) for name, r in latency.items()},
    })  # fmt: skip
    if request.slo:
        row.slo_verdict = uncertainty.slo_verdict(latency, request.slo)
        row.meets_slo = {"pass": True, "fail": False, "cannot tell": None}[row.slo_verdict]
    price = _advice_price(chip, cost_layer.parse_pricing(request.pricing) or ["spot"])
    if isinstance(price, str):
        row.price_source = price
    else:
        # a slice's chips, or one-chip replicas each on its own chip (TP counts devices: two per v7x chip)
        chips = engines * tp / planner.rules.accelerator(chip).devices_per_chip
        row.pricing, row.usd_per_hour, row.price_source = price[0], price[1] * chips, price[2]
        row.price_date, row.price_stale = price[3], price[4]
        row.usd_per_mtok = cost_layer.usd_per_mtok(row.usd_per_hour, row.output_tok_per_s or 0.0)
        if tok.low > 0:
            row.usd_per_mtok_range = (
                cost_layer.usd_per_mtok(row.usd_per_hour, tok.high),
                cost_layer.usd_per_mtok(row.usd_per_hour, tok.low),
            )
    return row


def simulate_unserved(run: BenchRun, out_dir: Path, *, policies: Sequence[str] | None = None) -> str | None:
    """simulate's line when no cell of `run` is feasible (simulate and simulate_policies raise it: the CLI's exit
    2 and the MCP tool's error, as advise's when no chip serves; the run is written to `out_dir` all the same):
    the first infeasible cell and its reason, and where the run is. With `policies` (simulate_policies: `run` is
    the first policy's, each policy's run in out_dir/<policy>/) the line says no policy's grid has one. None when
    a cell is served."""
    if any(c.status == "ok" for c in run.cells) or not run.cells:
        return None
    c = run.cells[0]
    under, where = ("", out_dir / RUN_FILES["bench"])
    if policies:
        under, where = (f" under {' or '.join(policies)}", out_dir / "<policy>" / RUN_FILES["bench"])
    load = (
        f"x {plural(c.clients, 'client')}" if run.config.rate_per_s is None else f"at {run.config.load_text(c.clients)}"
    )
    return (
        f"no cell of the grid is feasible{under} ({c.context_tokens:,} tokens {load}: {c.reason}); "
        f"the predicted run{'s are' if policies else ' is'} in {where}"
    )


def advise_unserved(advice: Advice) -> str:
    """advise's line when no row is served (the CLI's error, the MCP summary; each row's verdict says why). It
    counts deployments (one per engine count on a chip) and tells a workload no chip fits from plans that fit but
    could not be predicted (a chip with no roofline figures: GB10), which 'fits no chip' had misstated."""
    n = len(advice.rows)
    planned = sum(r.kv_tokens is not None for r in advice.rows)
    what = "fits" if not planned else f"could be predicted ({planned} fit)"
    return f"{advice.model}: none of the {n} deployment{'s' * (n != 1)} considered {what}"


def advise_unserved_error(advice: Advice, line: str) -> ConfigError | DoesNotFit:
    """The error for an Advice that serves no row, saying `line`, with `plan`'s exit code for the same plans:
    DoesNotFit (exit 10, the advice its result) where no deployment's plan fits and one was planned 'does not fit';
    ConfigError (exit 2) where plans fit but none could be predicted (a chip without the figures a prediction needs:
    advise_unserved), or every plan was refused as `plan` refuses bad input (a length past the model's positions)."""
    if any(r.kv_tokens is not None for r in advice.rows) or not any(r.planned_fits is False for r in advice.rows):
        return ConfigError(line)
    return DoesNotFit(line, advice)


def advise(request: AdviseRequest, on_progress: ProgressFn = no_progress) -> Advice:
    """For `request.model` and one workload cell, every catalog chip (or `request.chips`) it fits on: its plan,
    the predicted cell (stored calibration, else one carried from another chip, else priors from published
    measurements) with its measured-error range, the price and $/M output tokens, ranked by what holds within
    the ranges (`_advise_rank.rank`). Its tok/s, and the $/M priced at it, is the steady window (every stream
    busy: what the chip sustains under this load, so what an hour rented for it buys), not the whole-run figure
    vllm bench serve, GuideLLM and AIPerf report, which a short run's ramp and drain pull down (bench's 2 requests
    a stream at 1,024 + 32 tokens, from priors: 20% on v5e-1 at 16 clients, 549 against 442 tok/s); its range
    is the error measured on that same steady figure (sim.uncertainty.STEADY); multi-chip slices also as one
    engine per chip (replicas vs tensor parallel). Raises ConfigError for an unknown chip or pricing model, or a
    model that cannot be read at all (before any chip is tried)."""
    cost_layer.parse_pricing(request.pricing)
    found = planner.source_positions(planner.resolve_model(request.model), None)
    positions = found.limit if found is not None else None
    deployments = _deployments(request)
    agent = _agent(request)
    sizes = [
        work(_advice_config(request, agent, chip, n), request.reps, n if agent else 1) for chip, n, _ in deployments
    ]
    keys = "clients, output_tokens or turns" if agent else "clients or output_tokens"  # a session's turns: requests
    refuse_too_much(sum(t for t, _ in sizes), sum(s for _, s in sizes),
                    f"fewer --chips or --reps, or fewer {keys} in --workload",
                    f", over {len(deployments)} deployments")  # fmt: skip
    rows = []
    for i, (chip, engines, tp) in enumerate(deployments):
        what = f"{chip}: {engines} engine(s) x TP={tp}"
        on_progress(ProgressEvent("advise", what, done=i, total=len(deployments)))
        rows.append(_advice_row(request, agent, chip, engines, tp, positions))
    on_progress(ProgressEvent("advise", "ranked", done=len(deployments), total=len(deployments)))

    wanted = cost_layer.parse_pricing(request.pricing) or ["spot"]
    return Advice(model=request.model, workload=request.workload, slo=request.slo, pricing=wanted, rows=rank(rows),
                  notes=[*cost_layer.unusable_read(), *calibration_store.newer_notes(request.model), ADVISE_NOTE,
                         rank_note(), *_pricing_note(wanted, rows),
                         *_local_note(request.chips or []), *_misfit_notes(rows)])  # fmt: skip


def _misfit_notes(rows: list[AdviceRow]) -> list[str]:
    """One note per chip whose rows rest on a calibration that misses its own cells or pinned no term
    (AdviceRow.calibration_misfit): its ranges are wider than the source's measured error says."""
    said = dict.fromkeys((r.chip, r.calibrated_on, r.calibration_misfit) for r in rows if r.calibration_misfit)
    return [f"{chip}{f' (carried from {on})' if on and on != chip else ''}: {note}" for chip, on, note in said]


def _pricing_note(wanted: list[str], rows: list[AdviceRow]) -> list[str]:
    """advise's note when some rows are priced at a model other than the one asked to rank by (a chip with no such
    price: `_advice_price`): which chips at which model, so a spot row is never read beside an on-demand one as
    like for like (each row's pricing, and its price_source, name its own)."""
    other: dict[str, list[str]] = {}
    for row in rows:
        if row.pricing and row.pricing not in wanted and row.chip not in other.get(row.pricing, []):
            other.setdefault(row.pricing, []).append(row.chip)
    if not other:
        return []
    said = "; ".join(f"{', '.join(chips)} at {kind}" for kind, chips in other.items())
    asked = " or ".join(wanted)
    return [f"ranked on {asked} prices; priced otherwise, having no {asked} price: {said} (each row's $/h names "
            "its pricing model: those rows are not like for like)"]  # fmt: skip


def _local_note(chips: list[str]) -> list[str]:
    """advise's note when `local` is among `chips`: which card(s) it read and where, since an MCP client's `local`
    is the server's machine, not the client's (planner.chips.local_entry: NVML, else amdsmi), and the catalog key
    its rows go under when the catalog has the card (planner.rules.chip_key)."""
    if not any(map(planner.chips.is_local, chips)):
        return []
    card = planner.rules.accelerator("local", "--chips")  # read already by _deployments: it raised there if at all
    memory = f"{card.memory_bytes / GIB:.2f} GiB" if card.memory_bytes else "no memory figure"
    return [
        f"local: the card NVML or amdsmi reported {LOCAL_WHERE}: {card.resolved_as or 'a card with no name'}, "
        f"{card.host_cards} card(s) there; planned at {memory} a card, its rows under "
        f"{planner.rules.chip_key('local')}"
    ]
