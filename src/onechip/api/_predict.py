"""`simulate` and `advise`: predicting a grid from a plan and a calibration, and choosing a chip."""

from __future__ import annotations

import os
import platform
import socket
from datetime import UTC, datetime
from pathlib import Path

from onechip import __version__, planner, sim
from onechip import cost as cost_layer
from onechip import report as report_layer
from onechip.bench import stats as bench_stats
from onechip.errors import ConfigError
from onechip.paths import write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import RUN_FILES, BenchConfig, BenchRun, Plan
from onechip.schemas.bench import CellResult
from onechip.schemas.common import model_key
from onechip.schemas.requests import AdviseRequest, PlanRequest, SimulateRequest
from onechip.schemas.sim import Advice, AdviceRow, Calibration, Prediction, StepTerms
from onechip.sim import store as calibration_store

SIM_NOTE = (
    "simulated: vLLM V1 scheduler (continuous batching, chunked prefill, KV blocks, recompute preemption) with "
    "fitted step times and the API server's output rounds; not modelled: prefix caching, speculative decoding, "
    "several KV-cache groups"
)
PRIORS_NOTE = (
    "roofline priors only (no calibration): an optimistic bound, fixed host cost is missing "
    "(the seed's v5e-1 measured 8.02 ms TPOT against a 3.94 ms floor); calibrate with --calibrate RUN_DIR"
)


def _read_plan(path: Path) -> Plan:
    """The plan to simulate (Plan.from_file); a plan that does not fit has nothing to predict: refused."""
    the_plan = Plan.from_file(path)
    if not the_plan.fits:
        raise ConfigError(f"--plan {path}: the plan does not fit ({the_plan.verdict}); nothing to predict")
    return the_plan


def _served_matches(plan: Plan, served: str | None) -> bool:
    """Whether a run's served model name can be the plan's model (names compared by their last part)."""
    if not served:
        return True
    return model_key(served) in {model_key(n) for n in (plan.model, plan.serve_model or "") if n}


def calibration_for(plan: Plan, run_dir: Path | None, on_progress: ProgressFn = no_progress) -> Calibration | None:
    """Fit (and store) a calibration from the bench run in `run_dir`, or the stored one for `plan` when
    `run_dir` is None (None when none is stored). Raises ConfigError when the run is not a bench run, was
    measured on another model or chip than `plan`'s, is itself a prediction (`simulate`'s output: fitting it
    would store a calibration no measurement backs), or lacks the cells the fit needs."""
    if run_dir is None:
        return calibration_store.find(plan.model, plan.chip, plan.engine)
    files = report_layer.read_run(run_dir)
    if files.bench is None:
        raise ConfigError(f"--calibrate {run_dir}: no bench summary.json there (run `onechip bench --calibration`)")
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
    if not _served_matches(plan, files.bench.server.get("model")):
        raise ConfigError(
            f"--calibrate {run_dir} served {files.bench.server.get('model')}; the plan is for {plan.model}"
        )
    calibration = sim.calibrate(plan, files.bench, source_run=str(run_dir), on_progress=on_progress)
    calibration_store.save(calibration)
    return calibration


def predicted_cells(
    plan: Plan, terms: StepTerms, config: BenchConfig, seeds: int, on_progress: ProgressFn = no_progress
) -> list[CellResult]:
    """Every cell of `config` simulated `seeds` times and summarised by bench's statistics (the seeds are
    the reps: median and CV over seeds; the reason says the seeds' range and any preemptions)."""
    out = []
    for p in sim.simulate_grid(plan, terms, config, seeds, on_progress):
        cell = CellResult(context_tokens=p.context_tokens, clients=p.clients, status="ok")
        if p.infeasible:
            out.append(cell.model_copy(update={"status": "infeasible", "reason": p.infeasible}))
            continue
        cell = bench_stats.summarize_cell(cell, p.samples_by_seed, config.output_tokens, None,
                                                config.rate_per_s is not None)  # fmt: skip
        rates = [r.output_tok_per_s for r in cell.reps]
        reason = f"predicted over {seeds} seeds: {min(rates):,.1f}-{max(rates):,.1f} output tok/s"
        if p.preemptions:
            reason += f"; beyond the KV wall ({p.preemptions} preemptions by recompute)"
        out.append(cell.model_copy(update={"reason": reason}))
    return out


def simulate(request: SimulateRequest, on_progress: ProgressFn = no_progress) -> BenchRun:
    """Predict a context x clients grid for the plan in `request.plan`: calibrated on `request.calibrate`
    (a measured bench run; the fit is stored per model, chip, engine and version), else a stored
    calibration, else roofline priors (said in the run's notes). Writes `request.out_dir`/summary.json (a
    BenchRun with `prediction` set), requests.jsonl is not written (simulated samples are not measurements),
    and plan.json. Raises ConfigError (bad plan, calibration for another model, missing cells, a chip with
    no roofline figures and no calibration)."""
    the_plan = _read_plan(request.plan)
    calibration = calibration_for(the_plan, request.calibrate, on_progress)
    terms = calibration.terms if calibration else sim.roofline_priors(the_plan)
    fields = request.model_dump(include={"contexts", "clients", "output_tokens", "reps", "requests_per_client",
                                         "warmup_requests", "rate_per_s"})  # fmt: skip
    config = BenchConfig.model_validate({"base_url": f"http://predicted.{the_plan.chip}", "model": the_plan.model,
                                         **fields})  # fmt: skip
    cells = predicted_cells(the_plan, terms, config, request.reps, on_progress)
    run = BenchRun(
        tool_version=__version__, created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        server={"base_url": None, "model": the_plan.model, "engine_version": the_plan.engine_version,
                "engine": f"predicted {the_plan.engine}"},
        client={"host": socket.gethostname(), "python": platform.python_version(), "cpus": os.cpu_count()},
        config=config, prompt_method="simulated", cells=cells,
        notes=[SIM_NOTE] + ([] if calibration else [PRIORS_NOTE]),
        prediction=Prediction(calibration=calibration, terms=terms, seeds=request.reps,
                              note=SIM_NOTE if calibration else PRIORS_NOTE),
    )  # fmt: skip
    _write_predicted(run, the_plan, request.out_dir)
    return run


def _write_predicted(run: BenchRun, the_plan: Plan, out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {out_dir}: {exc.strerror or exc}") from None
    if (out_dir / RUN_FILES["requests"]).exists():
        raise ConfigError(f"{out_dir} holds a measured run (requests.jsonl); give another --out")
    write_text_atomic(out_dir / RUN_FILES["bench"], run.model_dump_json(indent=2))
    write_text_atomic(out_dir / RUN_FILES["plan"], the_plan.model_dump_json(indent=2))


ADVISE_NOTE = (
    "predicted, not measured: a chip with a stored calibration (onechip simulate --calibrate) is marked "
    "calibrated; one calibrated on another chip of the same model keeps its host costs and scales its device "
    "costs by the chips' rooflines (tensor-parallel communication not modelled); the others use roofline "
    "priors, an optimistic bound (fixed host cost missing; the seed's v5e-1 measured ~2x its TPOT floor). "
    "Prices are per chip-hour times the chips of the slice."
)


def _deployments(request: AdviseRequest) -> list[tuple[str, int, int]]:
    """(chip, engines, tensor-parallel size) to consider: each chip as one engine over all its chips, and a
    multi-chip slice also as one engine per chip (replicas). Raises ConfigError for an unknown chip."""
    known = planner.rules.known_accelerators()
    chips = request.chips or [c for c in known if planner.rules.accelerator(c).kind != "cpu"]
    out = []
    for chip in chips:
        n = planner.rules.accelerator(chip).chips  # raises ConfigError naming the known chips
        out.append((chip, 1, n))
        if n > 1:
            out.append((chip, n, 1))
    return out


def _advice_price(chip: str, pricing: str) -> tuple[str, float, str] | str:
    """(pricing, USD per chip-hour, source) for `chip` from the price catalog, under the chip named by its
    accelerators.json `price_chip` (a slice: its one-chip sibling), for `pricing`, else the cheapest other
    pricing model; the chip's `price_note` (why there is none) when the catalog has no price."""
    entry = planner.rules.accelerator(chip)
    key = entry.price_chip or chip
    prices = [p for p in cost_layer.all_prices() if p.chip == key]
    if not prices:
        return entry.price_note or f"no price for {key} in prices.json"
    chosen = [p for p in prices if p.pricing == pricing] or prices
    best = min(chosen, key=lambda p: p.usd_per_chip_hour)
    return best.pricing, best.usd_per_chip_hour, f"{key} {best.region} {best.pricing}, read {best.date}"


def _advice_terms(the_plan: Plan) -> tuple[Calibration | None, StepTerms]:
    """A stored calibration of this chip, else one carried over from another chip, else roofline priors.
    Raises ConfigError when none applies and the chip has no roofline figures."""
    own = calibration_store.find(the_plan.model, the_plan.chip, the_plan.engine)
    if own is not None:
        return own, own.terms
    other = calibration_store.find_elsewhere(the_plan.model, the_plan.chip, the_plan.engine)
    if other is not None:
        return other, sim.transfer(other, the_plan)
    return None, sim.roofline_priors(the_plan)


def _advice_row(request: AdviseRequest, chip: str, engines: int, tp: int) -> AdviceRow:
    """Plan, predict and price one deployment."""
    ctx, clients, out = (int(request.workload[k]) for k in ("ctx", "clients", "output_tokens"))
    row = AdviceRow(chip=chip, engines=engines, tensor_parallel_size=tp, fits=False)
    max_len = max(2048, 1 << (ctx + out - 1).bit_length())
    try:
        the_plan = planner.plan_model(PlanRequest(model=request.model, chip=chip, tensor_parallel_size=tp,
                                                  max_model_len=max_len, contexts=[ctx]))  # fmt: skip
        if not the_plan.fits:
            return row.model_copy(update={"verdict": the_plan.verdict})
        calibration, terms = _advice_terms(the_plan)
        config = BenchConfig(
            base_url=f"http://predicted.{chip}", contexts=[ctx], clients=[-(-clients // engines)],
            output_tokens=out, requests_per_client=2, warmup_requests=1, reps=request.reps,
        )  # fmt: skip
        cell = predicted_cells(the_plan, terms, config, request.reps)[0]
    except ConfigError as exc:
        return row.model_copy(update={"verdict": str(exc)})
    if cell.status != "ok" or not cell.output_tok_per_s:
        return row.model_copy(update={"verdict": cell.reason or cell.status, "kv_tokens": the_plan.kv_tokens})
    rates = [r.output_tok_per_s * engines for r in cell.reps]
    row = row.model_copy(update={
        "fits": True, "calibrated": calibration is not None, "kv_tokens": the_plan.kv_tokens,
        "calibrated_on": calibration.key.chip if calibration else None,
        "output_tok_per_s": cell.output_tok_per_s * engines, "output_tok_per_s_range": (min(rates), max(rates)),
        "ttft_ms": cell.ttft_ms.median, "tpot_ms": cell.tpot_ms.median,
    })  # fmt: skip
    if request.slo:
        got = {"ttft_ms": row.ttft_ms, "tpot_ms": row.tpot_ms}
        row.meets_slo = all(got[k] is not None and got[k] <= v for k, v in request.slo.items())  # type: ignore[operator]
    price = _advice_price(chip, request.pricing)
    if isinstance(price, str):
        row.price_source = price
    else:
        chips = planner.rules.accelerator(chip).chips
        row.pricing, row.usd_per_hour, row.price_source = price[0], price[1] * chips, price[2]
        row.usd_per_mtok = cost_layer.usd_per_mtok(row.usd_per_hour, row.output_tok_per_s or 0.0)
    return row


def advise(request: AdviseRequest, on_progress: ProgressFn = no_progress) -> Advice:
    """For `request.model` and one workload cell, every catalog chip (or `request.chips`) it fits on: its plan,
    the predicted cell (stored calibration, else roofline priors), the price and $/M output tokens, ranked:
    meeting the SLO first, then cheapest per token; multi-chip slices also as one engine per chip (replicas
    vs tensor parallel). Raises ConfigError for an unknown chip or pricing model, or a model that cannot be
    read at all (before any chip is tried)."""
    cost_layer.parse_pricing(request.pricing)
    planner.resolve_model(request.model)
    deployments = _deployments(request)
    rows = []
    for i, (chip, engines, tp) in enumerate(deployments):
        what = f"{chip}: {engines} engine(s) x TP={tp}"
        on_progress(ProgressEvent("advise", what, done=i, total=len(deployments)))
        rows.append(_advice_row(request, chip, engines, tp))
    on_progress(ProgressEvent("advise", "ranked", done=len(deployments), total=len(deployments)))

    def rank(r: AdviceRow) -> tuple[bool, bool, bool, float]:
        return (not r.fits, r.meets_slo is False, r.usd_per_mtok is None, r.usd_per_mtok or -(r.output_tok_per_s or 0))

    return Advice(model=request.model, workload=request.workload, slo=request.slo, rows=sorted(rows, key=rank),
                  notes=[ADVISE_NOTE])  # fmt: skip
