"""Benchmark config, raw per-request samples (requests.jsonl lines) and per-cell summaries (summary.json).

Times in `RequestSample` are seconds on the client's monotonic clock (`time.perf_counter`); durations in
summaries carry their unit in the name (`ttft_ms`, `window_s`, `output_tok_per_s`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from onechip.errors import ConfigError
from onechip.schemas.common import SCHEMA_VERSION, ResultModel, StrictModel, base_root
from onechip.schemas.inputs import Cli, RequestModel, build_request, comma_list, flag_of, given, key_values

ITL_CONVENTION = (
    "per-token: when the server sends continuous usage, a chunk carrying k tokens contributes k gaps of "
    "(gap / k); otherwise each content-chunk gap is one ITL sample and tokens come only from final usage"
)


# Flags a user may not give together, and flags that need another (checked on what was typed: a stored
# config carries every field, its defaults included).
EXCLUSIVE = [("requests_per_client", "duration_s"), ("warmup_requests", "warmup_s")]
NEEDS = {"arrivals": ("rate_per_s", "--arrivals shapes open-loop arrivals: give --rate too")}


# Bounds that refuse a typo before any work starts (a 10**23-token context is built in memory otherwise).
# MAX_TOKENS is above every served context window we know (Llama 4 Scout: 10M); the others are far above
# anything one accelerator serves, but keep a run finite.
MAX_TOKENS = 1 << 24  # 16,777,216 tokens per request (context or output)
MAX_CLIENTS = 4096
MAX_SECONDS = 7 * 86_400.0


class BenchConfig(RequestModel):
    """The request of `onechip bench`: one context x clients grid against one server."""

    base_url: Annotated[
        str,
        Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000 (a trailing / or /v1 is dropped)."),
        Cli("url", argument=True),
    ]
    model: str | None = Field(default=None, description="Served model name; None = first from /v1/models.")
    contexts: Annotated[
        list[Annotated[int, Field(ge=1, le=MAX_TOKENS)]],
        comma_list(int),
        Field(min_length=1),
    ] = Field(default=[128, 1024], description="Prompt lengths in tokens, as the server counts, comma-separated.")
    clients: Annotated[
        list[Annotated[int, Field(ge=1, le=MAX_CLIENTS)]],
        comma_list(int),
        Field(min_length=1),
    ] = Field(default=[1, 4], description="Closed-loop concurrent streams per cell, comma-separated.")
    reps: int = Field(default=2, ge=1, le=10_000, description="Repetitions per cell.")
    output_tokens: int = Field(
        default=32, ge=1, le=MAX_TOKENS, description="max_tokens per request (min_tokens too, if accepted)."
    )
    requests_per_client: int = Field(
        default=2, ge=1, le=1_000_000, description="Measured requests each stream sends per rep (unless duration_s)."
    )
    duration_s: Annotated[float | None, Cli("--duration-s")] = Field(
        default=None,
        gt=0,
        le=MAX_SECONDS,
        description="Instead of requests_per_client: each stream sends measured requests until this many "
        "seconds after its warm-up (open loop: arrivals over this many seconds).",
    )
    warmup_requests: int = Field(
        default=1, ge=0, le=1_000_000, description="Unmeasured requests per stream before the window (unless warmup_s)."
    )
    warmup_s: Annotated[float | None, Cli("--warmup-s")] = Field(
        default=None,
        ge=0,
        le=MAX_SECONDS,
        description="Instead of warmup_requests: each stream sends unmeasured requests until this many "
        "seconds after the repetition starts.",
    )
    workers: int = Field(
        default=1,
        ge=1,
        le=256,
        description="Client processes a cell's streams are split across (round-robin); 1 = this process.",
    )
    prefix_reuse: bool = Field(default=False, description="Allow prefix-cache reuse (no unique first line).")
    request_timeout_s: Annotated[float, Cli("--timeout-s")] = Field(
        default=300.0, gt=0, le=MAX_SECONDS, description="Per-request timeout, seconds."
    )
    force: bool = Field(
        default=False,
        description="Run cells the plan says exceed the KV pool (reported as beyond the KV wall).",
    )
    rate_per_s: Annotated[float | None, Cli("--rate")] = Field(
        default=None,
        ge=0.001,
        le=1_000_000,
        description="Open loop: arrivals per second, at most `clients` in flight; None = closed loop.",
    )
    arrivals: Literal["poisson", "constant"] = Field(
        default="poisson", description="Open-loop inter-arrival times: exponential (Poisson) or constant."
    )
    seed: Annotated[int, Cli(hidden=True)] = Field(
        default=0, description="Seed of the Poisson arrival times (reproducible schedules)."
    )
    slo: Annotated[dict[str, float], BeforeValidator(key_values)] = Field(
        default_factory=dict,
        description="Goodput objectives, ms upper bounds: any of ttft_ms, tpot_ms, e2e_ms (ttft_ms=500,tpot_ms=50).",
    )
    metrics_interval_s: Annotated[float, Cli(hidden=True)] = Field(
        default=0.5, gt=0, description="Seconds between /metrics samples during a cell (KV usage peak)."
    )

    @field_validator("base_url")
    @classmethod
    def _root(cls, value: str) -> str:
        return base_root(value)

    @model_validator(mode="before")
    @classmethod
    def _exclusions(cls, data: Any, info: ValidationInfo) -> Any:
        if given(info.context) and isinstance(data, dict):
            check_exclusions(cls, data)
        return data

    @classmethod
    def resumed(cls, saved: BenchConfig, overrides: Mapping[str, Any]) -> BenchConfig:
        """`bench --resume`: the saved config, with the fields the user typed again (`overrides`, field ->
        value; None = not given) put over it. The runner then refuses any that differ from the saved run
        (complete repetitions are kept only for the same grid). Raises ConfigError naming the flag."""
        typed = {k: v for k, v in overrides.items() if v is not None}
        try:
            check_exclusions(cls, typed)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        return build_request(cls, {**saved.model_dump(), **typed}, user_input=False)


def check_exclusions(model: type[BenchConfig], data: Mapping[str, Any]) -> None:
    """Raise ValueError when `data` (what the user typed) holds two flags of an EXCLUSIVE pair, or a flag
    without the one it NEEDS."""
    present = {k for k, v in data.items() if v is not None}
    for a, b in EXCLUSIVE:
        if a in present and b in present:
            raise ValueError(f"give {flag_of(model, a)} or {flag_of(model, b)}, not both")
    for field, (needed, message) in NEEDS.items():
        if field in present and needed not in present:
            raise ValueError(message)


class RequestSample(ResultModel):
    """One request, as one line of requests.jsonl. Times are seconds on the client's monotonic clock."""

    context_tokens: int = Field(description="Target prompt length of the cell, tokens.")
    clients: int = Field(description="Concurrent streams of the cell.")
    rep: int = Field(description="Repetition index, from 0.")
    stream: int = Field(description="Client stream index within the cell.")
    seq: int = Field(description="Request index within the stream (warm-up requests first).")
    warmup: bool = Field(default=False, description="True for warm-up requests, excluded from every statistic.")
    t_send: float = Field(description="When the request was sent, s.")
    t_first: float | None = Field(default=None, description="First chunk carrying generated content, s.")
    t_last: float | None = Field(default=None, description="Last chunk carrying generated content or tokens, s.")
    t_done: float | None = Field(default=None, description="When the stream ended (or failed), s.")
    prompt_tokens_target: int | None = Field(default=None, description="Prompt tokens the client aimed for.")
    prompt_tokens: int | None = Field(default=None, description="usage.prompt_tokens from the server.")
    completion_tokens: int | None = Field(default=None, description="usage.completion_tokens from the server.")
    chunk_times: list[float] = Field(default_factory=list, description="Arrival time of each content chunk, s.")
    chunk_tokens: list[int] = Field(
        default_factory=list,
        description="Tokens each content chunk carried (continuous usage); empty when the server sent none.",
    )
    finish_reason: str | None = Field(default=None, description="finish_reason of the last choice chunk.")
    http_status: int | None = Field(default=None, description="HTTP status of the response, if one came.")
    status: Literal["ok", "failed"] = "ok"
    error: str | None = Field(default=None, description="The server's message or the transport error.")
    last_in_stream: bool = Field(
        default=False, description="The last request of its stream in this repetition to end (resume)."
    )

    @classmethod
    def of(cls, job: RepJob, outcome: Any, **request: Any) -> RequestSample:
        """The sample of one request of `job`: the cell's fields from `job` (context_tokens, clients, rep,
        prompt_tokens_target), the timings and tokens from `outcome` (bench.client.StreamOutcome, a
        dataclass whose fields are fields of this model), `request` (stream, seq, warmup) the rest."""
        measured = dataclasses.asdict(outcome)
        cell = job.model_dump(include=cls.model_fields.keys() & RepJob.model_fields.keys())
        return cls(**cell, **measured, **request, status="ok" if measured["error"] is None else "failed")


class RepJob(StrictModel):
    """One repetition's share of a cell for one client worker: the streams it runs and how.

    The worker builds each prompt itself: `prompt_tag`-<stream>-<seq>. + `filler_words` filler words (fixed
    width numbers, so every prompt has the token count the runner checked with /tokenize). Sent as one JSON
    line to a worker process (bench.worker.WORKER_ARGV).
    """

    base_url: str = Field(description="Server base URL, no trailing slash.")
    model: str = Field(description="Served model name.")
    context_tokens: int = Field(description="Target prompt length of the cell, tokens.")
    clients: int = Field(description="Concurrent streams of the whole cell.")
    rep: int = Field(description="Repetition index, from 0.")
    streams: list[int] = Field(description="Stream indices this worker runs.")
    prompt_tag: str | None = Field(description="First-line prefix; None = no unique line (prefix reuse).")
    filler_words: int = Field(ge=0, description="Filler words after the first line.")
    prompt_tokens_target: int | None = Field(description="Counted prompt tokens (server /tokenize or estimate).")
    output_tokens: int = Field(description="max_tokens (and min_tokens with extras).")
    extras: bool = Field(description="Send vLLM's min_tokens + ignore_eos.")
    continuous_usage: bool = Field(description="Ask for usage on every chunk.")
    request_timeout_s: float = Field(description="Per-request timeout, seconds.")
    warmup_requests: int = Field(description="Warm-up requests per stream (when warmup_s is None).")
    warmup_s: float | None = Field(description="Warm-up seconds per stream from the job's start.")
    requests_per_client: int = Field(description="Measured requests per stream (when duration_s is None).")
    duration_s: float | None = Field(description="Measured seconds per stream after its warm-up.")
    arrivals_s: list[tuple[float, int]] | None = Field(
        default=None,
        description="Open loop: (send offset s after warm-up, stream) per measured request; None = closed loop.",
    )

    @classmethod
    def of(cls, config: BenchConfig, **cell: Any) -> RepJob:
        """A job of `config`: the fields RepJob shares with BenchConfig by name and meaning (base_url,
        output_tokens, request_timeout_s, the warm-up and window) come from `config`; `cell` gives the rest
        (the resolved model, this cell's clients, the streams, the prompt), and wins where both name one."""
        shared = (cls.model_fields.keys() & BenchConfig.model_fields.keys()) - cell.keys()
        return cls(**config.model_dump(include=shared), **cell)


class Dist(ResultModel):
    n: int = Field(default=0, description="Number of samples.")
    mean: float | None = Field(default=None, description="Arithmetic mean.")
    median: float | None = Field(default=None, description="50th percentile (linear interpolation).")
    p90: float | None = Field(default=None, description="90th percentile (linear interpolation).")
    p99: float | None = Field(default=None, description="99th percentile (linear interpolation).")


class RepResult(ResultModel):
    rep: int = Field(description="Repetition index, from 0.")
    window_s: float = Field(
        description="Measured window. Closed loop: from when every stream has sent its first measured "
        "request to when the first stream finished its last one (all streams busy). Open loop: first "
        "measured send to last measured completion."
    )
    output_tokens: int = Field(description="Completion tokens that arrived inside the window.")
    output_tok_per_s: float = Field(description="output_tokens / window_s.")
    requests_ok: int = Field(description="Measured requests that succeeded.")
    requests_failed: int = Field(description="Measured requests that failed.")
    requests_in_window: int = Field(default=0, description="Measured requests that completed inside the window.")
    goodput_per_s: float | None = Field(
        default=None,
        description="Requests meeting every SLO completed in the window / window_s (SLOs given).",
    )


class CellResult(ResultModel):
    context_tokens: int = Field(description="Target prompt length, tokens.")
    clients: int = Field(description="Concurrent closed-loop streams.")
    status: Literal["ok", "infeasible", "failed"] = Field(description="ok | infeasible | failed; never dropped.")
    reason: str | None = Field(default=None, description="Why infeasible/failed, or a caveat (beyond the KV wall).")
    reps: list[RepResult] = Field(default_factory=list, description="One entry per finished repetition.")
    output_tok_per_s: float | None = Field(default=None, description="Median over reps of aggregate tok/s.")
    cv_output_tok_per_s: float | None = Field(default=None, description="stdev/mean of tok/s across reps.")
    per_stream_tok_per_s: float | None = Field(
        default=None, description="Median of per-request decode tok/s = 1000 / TPOT ms."
    )
    goodput_per_s: float | None = Field(
        default=None,
        description="Median over reps of goodput (requests/s meeting every SLO); None without SLOs.",
    )
    request_rate_per_s: float | None = Field(default=None, description="Median over reps of requests/s in window.")
    ttft_ms: Dist = Field(default_factory=Dist, description="Time to first content chunk, ms.")
    tpot_ms: Dist = Field(default_factory=Dist, description="(t_last - t_first) / (completion_tokens - 1), ms.")
    itl_ms: Dist = Field(default_factory=Dist, description="Inter-token latency, ms (see itl_convention).")
    e2e_ms: Dist = Field(default_factory=Dist, description="t_done - t_send, ms.")
    prompt_tokens_actual: Dist = Field(default_factory=Dist, description="usage.prompt_tokens, tokens.")
    requests_failed: int = Field(default=0, description="Measured requests that failed, all reps.")
    requests_ended_early: int = Field(
        default=0,
        description="Measured requests with completion_tokens < output_tokens (server stopped early).",
    )
    first_error: str | None = Field(default=None, description="The first failed request's message.")
    server_metrics_delta: dict[str, float] = Field(
        default_factory=dict, description="Counter deltas and gauge peaks from /metrics over the cell."
    )


class BenchRun(ResultModel):
    schema_version: str = SCHEMA_VERSION
    tool_version: str = Field(description="onechip version.")
    created_at: str = Field(description="ISO-8601 UTC.")
    server: dict[str, str | None] = Field(default_factory=dict, description="base_url, model, engine_version.")
    client: dict[str, str | int | None] = Field(default_factory=dict, description="host, python, cpus.")
    config: BenchConfig
    itl_convention: str = Field(
        default=ITL_CONVENTION,
        description="How inter-token latency is split when a chunk carries several tokens.",
    )
    prompt_method: str = Field(
        default="tokenize",
        description="'tokenize' (server /tokenize with the chat template) or 'estimate' (no /tokenize).",
    )
    notes: list[str] = Field(default_factory=list, description="Caveats found while measuring.")
    cells: list[CellResult] = Field(default_factory=list, description="One per (context, clients), grid order.")
