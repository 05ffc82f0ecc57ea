"""Export a run in the serving-report JSON layout (schema_version 1.1, issue 6).

The layout is the pydantic model `onechip.schemas.serving_report.ServingReport`; `SCHEMA` is the JSON
Schema generated from it (never written by hand). `build` fills the model from the run's result
models, `export` returns it as a validated JSON document. Print the schema with
`python -m onechip.report.serving_report`.

Honesty rules: `accelerator_count` comes from the plan (see `_accelerators`), and a price or
throughput the run does not have is null with a reason, never 0.0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from onechip import catalog
from onechip.errors import ConfigError, MissingDependencyError
from onechip.report.markdown_bench import WINDOW_NOTE
from onechip.report.rundir import RunFiles
from onechip.report.tables import cells_of, first, flag_words, serve_flags, state_slots
from onechip.schemas import BenchRun, CellResult, CostLine, CostReport, Dist, Plan
from onechip.schemas.bench import BenchClient, BenchServer
from onechip.schemas.common import GIB
from onechip.schemas.serving_report import (
    SERVING_REPORT_VERSION,
    Capability,
    Cost,
    CostPerMTok,
    DistInfo,
    Hardware,
    HostInfo,
    Memory,
    ModelInfo,
    PriceInfo,
    RunInfo,
    ServingReport,
    Software,
    Startup,
    StartupEvent,
    SweepCell,
    Throughput,
    Workload,
    serving_report_schema,
)

SCHEMA: dict[str, Any] = serving_report_schema()

__all__ = ["SCHEMA", "SERVING_REPORT_VERSION", "build", "export", "validate"]


def _catalog_chips(chip: str) -> int | None:
    """Chips in the slice of catalog key `chip` (catalog/accelerators.json), None when unknown. Read
    from the catalog file, not through onechip.planner, whose import pulls in the Hub client."""
    entry = catalog.accelerators().accelerators.get(chip)
    return entry.chips if entry is not None else None


def _accelerators(run: RunFiles) -> tuple[int | None, str]:
    """Chips the engine ran on and where that number comes from: the larger of the plan's
    tensor_parallel_size (x pipeline_parallel_size) and the chips of its chip key (catalog/accelerators.json);
    without a plan, the chips of the run's chip key; else None with the reason."""
    plan, chip = run.plan, first(run.plan and run.plan.chip, run.manifest and run.manifest.chip)
    chips = _catalog_chips(chip) if chip else None
    if plan is not None:
        # pipeline stages each hold tensor_parallel_size GPUs
        used = plan.tensor_parallel_size * plan.pipeline_parallel_size
        what = "plan tensor_parallel_size" + (" x pipeline_parallel_size" if plan.pipeline_parallel_size > 1 else "")
        if chips is not None and chips > used:
            return chips, f"chips of {chip} in the accelerator catalog ({what} {used})"
        return used, what
    if chips is not None:
        return chips, f"chips of {chip} in the accelerator catalog (no plan in this run)"
    return None, "unknown: the run has no plan and no known chip"


def _hardware(run: RunFiles, lines: list[CostLine]) -> Hardware:
    m = run.manifest
    client = run.bench.client if run.bench else BenchClient()  # `bench` writes no run.json: its summary names it
    count, source = _accelerators(run)
    return Hardware(
        accelerator=first(m and m.chip, run.plan and run.plan.chip),
        accelerator_count=count,
        accelerator_count_source=source,
        host=HostInfo(
            name=first(m and m.host, client.host),
            python=first(m and m.python, client.python),
            cpus=first(m and m.cpus, client.cpus),
        ),
        pricing=[
            PriceInfo(
                model=c.pricing,
                region=c.region or None,
                usd_per_chip_hour=c.usd_per_chip_hour,
                price_date=c.price_date,
                stale=c.stale,
                source=c.source or None,
            )
            for c in lines
        ],
    )


def _software(run: RunFiles) -> Software:
    plan, boot = run.plan, run.boot
    server = run.bench.server if run.bench else BenchServer()
    flags, source = serve_flags(plan)
    return Software(
        engine=first(boot and boot.engine, plan and plan.engine),
        engine_version=first(boot and boot.engine_version, server.engine_version),
        serve_args=flag_words(flags),
        serve_args_source=source,
        serve_command=plan.serve_command.shell or None if plan and plan.serve_command else None,
    )


def _dist(d: Dist) -> DistInfo:
    return DistInfo(mean=d.mean, median=d.median, p90=d.p90, p99=d.p99)


def _sweep_cell(c: CellResult, output_len: int | None) -> SweepCell:
    reason = c.reason
    if c.output_tok_per_s is None and reason is None:
        reason = f"no throughput recorded for this {c.status} cell"
    return SweepCell(
        concurrency=c.clients,
        input_len=c.context_tokens,
        output_len=output_len,
        status=c.status,
        reason=reason,
        output_tok_per_s=c.output_tok_per_s,
        whole_run_tok_per_s=c.whole_run_tok_per_s,
        request_rate_per_s=c.request_rate_per_s,
        whole_run_request_rate_per_s=c.whole_run_request_rate_per_s,
        cv_output_tok_per_s=c.cv_output_tok_per_s,
        per_stream_tok_per_s=c.per_stream_tok_per_s,
        ttft_ms=_dist(c.ttft_ms),
        tpot_ms=_dist(c.tpot_ms),
        itl_ms=_dist(c.itl_ms),
        e2e_ms=_dist(c.e2e_ms),
        requests_sent=c.requests_sent,
        requests_failed=c.requests_failed,
    )


def _throughput(bench: BenchRun | None) -> Throughput:
    if bench is None:
        return Throughput(workload=Workload(), sweep=[])
    config = bench.config
    output_len = config.output_tokens
    return Throughput(
        workload=Workload(
            output_len=output_len,
            reps=config.reps,
            prefix_reuse=config.prefix_reuse,
            itl_convention=bench.itl_convention,
            tok_per_s_windows=WINDOW_NOTE.replace("**", ""),
        ),
        sweep=[_sweep_cell(c, output_len) for c in cells_of(bench)],
    )


def _memory(run: RunFiles) -> Memory:
    plan, boot, cross = run.plan, run.boot, run.crosscheck
    slots = state_slots(plan, boot, cross)  # attention-free (Mamba): sequences, and no KV tokens to give
    planned_kv = None if slots else first(plan and plan.kv_tokens, cross and cross.planned_kv_tokens)
    reported_kv = None if slots else first(boot and boot.kv_cache_tokens, cross and cross.reported_kv_tokens)
    return Memory(
        weights_gib_planned=plan.weights_bytes / GIB if plan else None,
        weights_gib_reported=boot.weights_gib if boot else None,
        kv_bytes_per_token=plan.kv_bytes_per_token if plan else None,
        block_size=plan.block_size if plan else None,
        gpu_memory_utilization=plan.utilization if plan else None,
        kv_pool_tokens_planned=planned_kv,
        kv_pool_tokens_reported=reported_kv,
        state_slots_planned=slots[0] if slots else None,
        state_slots_reported=slots[1] if slots else None,
        plan_agrees=cross.agrees if cross else None,
    )


def _startup(run: RunFiles) -> Startup:
    boot = run.boot
    if boot is None:
        return Startup()
    return Startup(
        ready_s=boot.ready_s,
        weight_load_s=boot.weight_load_s,
        events=[StartupEvent(name=e.name, t_s=e.t_s) for e in boot.events],
    )


def _per_mtok(c: CostLine) -> CostPerMTok:
    # A stored CostLine always carries a price and a positive throughput (cost.arithmetic refuses
    # anything else), so no figure here is ever a default 0.
    return CostPerMTok(
        pricing=c.pricing,
        region=c.region or None,
        usd_per_chip_hour=c.usd_per_chip_hour,
        output_tok_per_s=c.output_tok_per_s,
        usd_per_m_output_tokens=c.usd_per_mtok,
        monthly_usd=c.monthly_usd,
    )


def _cost(cost: CostReport | None) -> Cost:
    if cost is None:
        return Cost(per_m_output_tokens=[], reason="no cost.json in this run (onechip cost --run DIR --write)")
    if not cost.lines:
        why = "; ".join(cost.warnings) or "the cost report has no priced throughput"
        return Cost(per_m_output_tokens=[], reason=f"nothing priced per token: {why}")
    return Cost(per_m_output_tokens=[_per_mtok(c) for c in cost.lines])


def build(run: RunFiles) -> dict[str, Any]:
    """The serving-report document for already-read run files, as a JSON-ready dict (not yet checked
    against SCHEMA). Raises pydantic.ValidationError only on a bug in this module."""
    m, plan, boot, bench = run.manifest, run.plan, run.boot, run.bench
    server = bench.server if bench else BenchServer()
    lines = run.cost.lines if run.cost else []
    report = ServingReport(
        schema_version=SERVING_REPORT_VERSION,
        run=RunInfo(
            id=first(m and m.run_id, run.path.name),
            tool_version=first(m and m.tool_version, bench and bench.tool_version),
            created_at=first(m and m.created_at, bench and bench.created_at),
            command=m.command if m else None,
            status=m.status if m else None,
        ),
        hardware=_hardware(run, lines),
        model=_model(plan, first(boot and boot.model, plan and plan.model, server.model)),
        software=_software(run),
        throughput=_throughput(bench),
        capabilities=[
            Capability(name=r.domain, verdict=r.verdict, conditions=r.conditions)
            for r in (run.checks.results if run.checks else [])
        ],
        memory=_memory(run),
        startup=_startup(run),
        cost=_cost(run.cost),
    )
    return report.model_dump(mode="json")


def _model(plan: Plan | None, model_id: str | None) -> ModelInfo:
    if plan is None:
        return ModelInfo(id=model_id)
    return ModelInfo(
        id=model_id,
        architecture=plan.architecture,
        dtype=plan.dtype,
        kv_cache_dtype=plan.kv_cache_dtype,
        max_model_len=plan.max_model_len,
    )


def validate(document: Mapping[str, Any]) -> None:
    """Validate against `SCHEMA`. Raises ConfigError naming the first violation's path and message."""
    try:
        import jsonschema
    except ImportError:  # pragma: no cover - jsonschema is a dependency of the report
        raise MissingDependencyError("the serving-report export needs jsonschema: pip install jsonschema") from None
    validator = jsonschema.Draft202012Validator(SCHEMA)
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        first_error = errors[0]
        where = "/".join(str(p) for p in first_error.absolute_path) or "(root)"
        raise ConfigError(f"serving-report export does not match its schema at {where}: {first_error.message}")


def export(run: RunFiles) -> dict[str, Any]:
    """The validated serving-report document for `run`."""
    document = build(run)
    validate(document)
    return document


if __name__ == "__main__":  # python -m onechip.report.serving_report > serving-report-1.1.schema.json
    print(json.dumps(SCHEMA, indent=2))
