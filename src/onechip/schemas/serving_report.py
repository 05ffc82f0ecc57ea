"""The serving-report document (schema_version 1.4, issue 6; 1.2 adds each cell's whole-run tok/s and both request
rates beside the steady window's, and the workload's tok/s definitions; 1.3 an attention-free model's state slots in
memory, where its KV pool tokens are null; 1.4 each cell's measured requests sent and failed, and its E2E latency):
one JSON file a reader can compare across tools and runs. Sections: run, hardware (host, pricing), model, software
(serve args), throughput (workload, sweep[]), capabilities[], memory, startup, cost (per_m_output_tokens[]).

This model is the only definition of the layout: its JSON Schema (`serving_report_schema()`, draft
2020-12) is generated from it, never written by hand. Every model forbids unknown fields, so the
schema says `additionalProperties: false` throughout. A number onechip does not have is null with a
`*reason` field saying why, never 0 (a reader must not see "$0" for a missing price).
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

SERVING_REPORT_VERSION: Final = "1.4"
SCHEMA_ID = "https://onechip.dev/schemas/serving-report-1.4.json"

Verdict = Literal["pass", "partial", "fail", "blocked", "not_tested"]


class _Doc(BaseModel):
    """A part of the serving report: written by onechip, so unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")


class RunInfo(_Doc):
    """Which run the report describes: its id, the tool and version that wrote it, the command and status."""

    id: str = Field(description="Run id (run.json run_id, else the directory name).")
    tool: Literal["onechip"] = Field(default="onechip", description="The tool that wrote the report.")
    tool_version: str | None = Field(description="onechip version that measured the run.")
    created_at: str | None = Field(default=None, description="ISO-8601 UTC.")
    command: str | None = Field(default=None, description="The onechip job, e.g. 'demo --quick'.")
    status: str | None = Field(default=None, description="'running', 'ok', 'failed', 'interrupted'.")


class HostInfo(_Doc):
    """The client machine that measured the run."""

    name: str | None = Field(default=None, description="Client hostname.")
    python: str | None = Field(default=None, description="Python version of the client.")
    cpus: int | None = Field(default=None, description="CPU count of the client.")


class PriceInfo(_Doc):
    """One catalog price the run was costed at, with its date and source."""

    model: str = Field(description="Pricing model: 'spot', 'flex-start', 'on-demand', ...")
    region: str | None = Field(default=None, description="Cloud region of the price.")
    usd_per_chip_hour: float = Field(ge=0, description="USD per chip-hour.")
    price_date: str | None = Field(default=None, description="ISO date the price was read.")
    stale: bool = Field(default=False, description="Price read more than 90 days before the cost run.")
    source: str | None = Field(default=None, description="Where the price was read.")


class Hardware(_Doc):
    """The accelerator the engine ran on, how many chips, the client host and the prices applied."""

    accelerator: str | None = Field(description="Accelerator catalog key, e.g. 'v5e-1'.")
    accelerator_count: int | None = Field(
        ge=1,
        description="Chips the engine ran on: the plan's tensor_parallel_size or the chips of its chip "
        "key, whichever is larger; null when the run has neither plan nor chip.",
    )
    accelerator_count_source: str = Field(description="Where accelerator_count came from, or why it is null.")
    host: HostInfo = Field(description="The client machine.")
    pricing: list[PriceInfo] = Field(description="Catalog prices the run was costed at.")


class ModelInfo(_Doc):
    """The model as served: id, architecture, dtypes and maximum length."""

    id: str | None = Field(description="Model as served.")
    architecture: str | None = Field(default=None, description="Config model_type, e.g. 'gemma4'.")
    dtype: str | None = Field(default=None, description="Weight/compute dtype.")
    kv_cache_dtype: str | None = Field(default=None, description="KV cache dtype ('auto' = model dtype).")
    max_model_len: int | None = Field(default=None, description="Maximum tokens per request.")


class Software(_Doc):
    """The engine, its version and the serve flags it ran with (and where they were read from)."""

    engine: str | None = Field(description="Engine kind, e.g. 'vllm-tpu'.")
    engine_version: str | None = Field(default=None, description="Engine version.")
    serve_args: list[str] = Field(
        description="Serve flags, 'FLAG VALUE' or 'FLAG': those of the command that ran when the run "
        "recorded it, else the planner's recommended flags (see serve_args_source)."
    )
    serve_args_source: Literal["serve_command", "plan", "none"] = Field(
        default="none",
        description="'serve_command' (the command the engine ran), 'plan' (the planner's recommended "
        "flags: an older run that did not record the command) or 'none'.",
    )
    serve_command: str | None = Field(default=None, description="The exact shell line that ran, when recorded.")


class Workload(_Doc):
    """What every cell of the sweep sent: output length, reps, prefix reuse, the ITL convention."""

    output_len: int | None = Field(default=None, description="max_tokens per request.")
    reps: int | None = Field(default=None, description="Repetitions per cell.")
    prefix_reuse: bool | None = Field(default=None, description="Prefix-cache reuse was allowed.")
    itl_convention: str | None = Field(default=None, description="How ITL is split over multi-token chunks.")
    tok_per_s_windows: str | None = Field(
        default=None,
        description="The two windows a cell's tok/s and requests/s are over: the steady window (output_tok_per_s, "
        "request_rate_per_s) and the whole run (whole_run_tok_per_s, whole_run_request_rate_per_s).",
    )


class DistInfo(_Doc):
    """A latency distribution in the report, ms: mean, median, p90, p99."""

    mean: float | None = Field(description="Arithmetic mean, ms.")
    median: float | None = Field(description="50th percentile, ms.")
    p90: float | None = Field(description="90th percentile, ms.")
    p99: float | None = Field(description="99th percentile, ms.")


class SweepCell(_Doc):
    """One context x concurrency cell of the sweep: status, output tok/s and its CV, TTFT, TPOT, ITL and E2E, and the
    measured requests sent and failed (the figures are over those that succeeded)."""

    concurrency: int = Field(ge=1, description="Concurrent client streams.")
    input_len: int = Field(ge=0, description="Prompt tokens.")
    output_len: int | None = Field(description="max_tokens per request.")
    status: Literal["ok", "infeasible", "failed"] = Field(description="Cell status; cells are never dropped.")
    reason: str | None = Field(
        default=None, description="Why infeasible/failed, a caveat, or why output_tok_per_s is null."
    )
    output_tok_per_s: float | None = Field(
        description="Median aggregate output tok/s over the steady window (every stream running: ramp-up and drain "
        "left out; see workload.tok_per_s_windows); null when not measured."
    )
    whole_run_tok_per_s: float | None = Field(
        default=None,
        description="Median whole-run output tok/s: measured output tokens / (last completion - first send), what "
        "vllm bench serve, GuideLLM and AIPerf report; null when not measured.",
    )
    request_rate_per_s: float | None = Field(
        default=None, description="Median requests/s over the steady window (each request by its tokens' share in it)."
    )
    whole_run_request_rate_per_s: float | None = Field(
        default=None, description="Median whole-run requests/s: ok requests / (last completion - first send)."
    )
    cv_output_tok_per_s: float | None = Field(default=None, description="CV of tok/s across reps.")
    per_stream_tok_per_s: float | None = Field(description="Median per-stream decode tok/s.")
    ttft_ms: DistInfo = Field(description="Time to first token, ms.")
    tpot_ms: DistInfo = Field(description="Time per output token, ms.")
    itl_ms: DistInfo = Field(description="Inter-token latency, ms.")
    e2e_ms: DistInfo | None = Field(
        default=None, description="End-to-end latency to the last token, ms (vllm bench serve's E2EL)."
    )
    requests_sent: int | None = Field(
        default=None, ge=0, description="Measured requests sent, all reps (null: a run that did not record it)."
    )
    requests_failed: int = Field(
        default=0, ge=0, description="Measured requests that failed, all reps: in no figure of the cell."
    )


class Throughput(_Doc):
    """The measured sweep and the workload it ran."""

    workload: Workload = Field(description="What every cell sent.")
    sweep: list[SweepCell] = Field(description="One entry per context x clients cell, grid order.")


class Capability(_Doc):
    """One capability domain's verdict and the conditions it depends on."""

    name: str = Field(description="Capability domain, e.g. 'tool_calling'.")
    verdict: Verdict = Field(description="Verdict of the domain.")
    conditions: dict[str, str] = Field(default_factory=dict, description="What the verdict depends on.")


class Memory(_Doc):
    """Planned against reported memory: weights, KV bytes per token, block size, the KV pool and the cross-check."""

    weights_gib_planned: float | None = Field(default=None, description="Planned resident weights, GiB (2**30).")
    weights_gib_reported: float | None = Field(default=None, description="Weights the engine logged, GiB.")
    kv_bytes_per_token: int | None = Field(default=None, description="Planned KV bytes per token.")
    block_size: int | None = Field(default=None, description="KV block size, tokens.")
    gpu_memory_utilization: float | None = Field(default=None, description="gpu_memory_utilization.")
    kv_pool_tokens_planned: int | None = Field(
        default=None, description="Planned KV pool, tokens; null for an attention-free model (state_slots_planned)."
    )
    kv_pool_tokens_reported: int | None = Field(
        default=None, description="KV pool the engine logged, tokens; null for an attention-free model."
    )
    state_slots_planned: int | None = Field(
        default=None,
        description="An attention-free model's (Mamba) planned state cache, in sequences of any length up to "
        "max_model_len; it holds no KV tokens. Null for a model with attention.",
    )
    state_slots_reported: int | None = Field(
        default=None,
        description="The sequences an attention-free model's state cache holds as the engine logged them (its "
        "maximum concurrency), sequences.",
    )
    plan_agrees: bool | None = Field(default=None, description="The cross-check's verdict, when one ran.")


class StartupEvent(_Doc):
    """One boot stage and its time since the engine process started."""

    name: str = Field(description="Boot stage.")
    t_s: float | None = Field(description="Seconds since the engine process started.")


class Startup(_Doc):
    """How the engine started: seconds to ready, seconds loading weights, and the boot timeline."""

    ready_s: float | None = Field(default=None, description="Seconds from process start to healthy.")
    weight_load_s: float | None = Field(default=None, description="Seconds the engine logged for weights.")
    events: list[StartupEvent] = Field(default_factory=list, description="Boot timeline.")


class CostPerMTok(_Doc):
    """USD per million output tokens for one measured cell under one pricing model."""

    pricing: str = Field(description="Pricing model.")
    region: str | None = Field(default=None, description="Region of the price.")
    usd_per_chip_hour: float | None = Field(ge=0, description="USD per chip-hour; null when unknown.")
    output_tok_per_s: float | None = Field(gt=0, description="Aggregate tok/s priced; null when unknown.")
    usd_per_m_output_tokens: float | None = Field(
        ge=0, description="USD per million output tokens; null when price or throughput is missing."
    )
    monthly_usd: float | None = Field(default=None, description="USD for one chip 24/7 for 730 h.")
    reason: str | None = Field(default=None, description="Why a figure above is null.")


class Cost(_Doc):
    """The cost section: $/M output tokens per cell and pricing model, or why there is none."""

    per_m_output_tokens: list[CostPerMTok] = Field(description="One entry per price.")
    reason: str | None = Field(default=None, description="Why per_m_output_tokens is empty, when it is.")


class ServingReport(_Doc):
    """The whole document (serving-report.json)."""

    model_config = ConfigDict(extra="forbid", title="serving-report", json_schema_extra={"$id": SCHEMA_ID})

    schema_version: Literal["1.4"] = Field(description="Layout version of this document.")
    run: RunInfo
    hardware: Hardware
    model: ModelInfo
    software: Software
    throughput: Throughput
    capabilities: list[Capability] = Field(description="One verdict per capability domain checked.")
    memory: Memory
    startup: Startup
    cost: Cost


def serving_report_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ServingReport, generated from the model."""
    schema = ServingReport.model_json_schema(mode="serialization")
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
