"""Benchmark config, raw per-request samples (requests.jsonl lines) and per-cell summaries (summary.json).

Times in `RequestSample` are seconds on the client's monotonic clock (`time.perf_counter`); durations in
summaries carry their unit in the name (`ttft_ms`, `window_s`, `output_tok_per_s`).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from onechip import jsontext
from onechip.errors import ConfigError
from onechip.paths import open_regular
from onechip.schemas.common import (
    Finite,
    Measured,
    Name,
    ResultModel,
    Said,
    StoredResult,
    StrictModel,
    base_root,
    openai_base_url,
    plural,
)
from onechip.schemas.cost import CostLine
from onechip.schemas.inputs import (
    MAX_TEXT,
    TOKEN_COUNTS,
    Cli,
    RequestModel,
    build_request,
    comma_list,
    flag_of,
    given,
    key_values,
    shown,
)
from onechip.schemas.plan import Plan
from onechip.schemas.replicas import RouterPolicy
from onechip.schemas.sim import Prediction

LATE_SEND_MS = 50.0  # open loop: a send this much behind its intended time is late (timer jitter stays below)
SLIPPED_SHARE = 0.05  # open loop: a cell with this share of late sends is marked schedule_slipped

# A --find-max rate probe's measured requests per rep (probe_requests), when --duration-s is not given; here, below
# bench.search, so that the refusal of --requests-per-client states them too. Arrivals over PROBE_S at the rate: a
# server 15% over its capacity (the search's resolution) builds 1.5 s of backlog in 10 s, which the last requests
# wait and the percentile sees; at least PROBE_MIN_REQUESTS, so the p90 is not the slowest request's (p90 of 30
# interpolates the 27th and 28th); their arrivals lasting PROBE_MAX_S at most (a slow rate sends fewer, at least 1),
# and PROBE_MAX_REQUESTS at most (a limit of 1e6 req/s would send 10 M): a probe's schedule lasts 30 s at most, 10 s
# from 3 req/s up to 1,000 req/s, and a search of ~8 probes x 2 reps measures ~3 minutes plus the drain.
PROBE_S = 10.0
PROBE_MIN_REQUESTS = 30
PROBE_MAX_S = 30.0
PROBE_MAX_REQUESTS = 10_000

MS_DIGITS = (
    1  # decimals of a latency in ms (TTFT, TPOT): a local engine's TTFT is a few ms, which whole ms rounds apart
)


def ms_text(value: float) -> str:
    """A latency in ms as the CLI and report.md both show it: MS_DIGITS decimals, thousands separators ('4.6',
    '1,234.5'; '0.0', not '-0.0')."""
    return f"{value:z,.{MS_DIGITS}f}"


SLO_MS_DIGITS_MAX = 3  # 1 us: the most a figure is refined to tell it from its SLO bound (the client's stamps are
# time.perf_counter, ns; a chunk's arrival is known to tens of us on a loaded 2-core machine, tests/unit/bench)


def slo_ms_text(value: float, bound_ms: float | None) -> str:
    """A latency in ms measured against an SLO bound (`--find-max`): ms_text, refined digit by digit up to
    SLO_MS_DIGITS_MAX decimals while it reads as the bound without being it, so a probe that misses never shows the
    bound it missed ('0.44' against 0.4, not '0.4'; '412.0' against 500)."""
    digits = MS_DIGITS
    while (
        bound_ms is not None
        and value != bound_ms
        and digits < SLO_MS_DIGITS_MAX
        and f"{value:z,.{digits}f}" == f"{bound_ms:z,.{digits}f}"
    ):
        digits += 1
    return f"{value:z,.{digits}f}"


TTFT_CONVENTION = (
    "TTFT ends at the first chunk carrying a generated token: content (an empty-content chunk without the role too: "
    "a token that decoded to no text; after the first token, with the role too, as TGI repeats it), reasoning or a "
    "tool call; never the role-only opening chunk (vllm bench serve 0.34's rule). A thinking model's first reasoning "
    "token ends it: the server has answered and streams its thinking (its answer's first content comes later by the "
    "reasoning)"
)
ITL_CONVENTION = (
    "per-token: when the server sends continuous usage, a chunk carrying k tokens contributes k gaps of "
    "(gap / k); otherwise each content-chunk gap is one ITL sample and tokens come only from final usage"
)


# Flags a user may not give together, and flags that need another (checked on what was typed: a stored
# config carries every field, its defaults included).
EXCLUSIVE = [("requests_per_client", "duration_s"), ("warmup_requests", "warmup_s")]
NEEDS = {
    "arrivals": ("rate_per_s", "--arrivals shapes open-loop arrivals: give --rate too"),
    "find_max": ("slo", "--find-max searches for the largest load meeting an SLO: give --slo too"),
}
# (--calibration too: simulate cannot calibrate on a trace replay, sim.calibrate.check_cells)
TRACE_EXCLUDES = ("rate_per_s", "duration_s", "requests_per_client", "contexts", "arrivals", "find_max", "calibration")
AGENT_ONLY = ("turns", "user_tokens", "call_tokens", "result_tokens", "think_time_s", "sessions_per_client")


# Bounds that refuse a typo before any work starts (a 10**23-token context is built in memory otherwise).
# MAX_TOKENS is above every served context window we know (Llama 4 Scout: 10M); the others are far above
# anything one accelerator serves, but keep a run finite.
MAX_TOKENS = 1 << 24  # 16,777,216 tokens per request (context or output)
MAX_CLIENTS = 4096
MAX_SECONDS = 7 * 86_400.0
MAX_TURNS = 1000  # turns per agent session (a coding agent's longest sessions are a few hundred tool calls)
MAX_THINK_S = 3600.0  # an hour between an answer and the next turn
MAX_REQUESTS = 10_000_000  # measured requests in one cell, all repetitions: weeks of work at 10 requests/s
MAX_RATE = 1_000_000.0  # arrivals per second (open loop)
MIN_RATE = 0.001  # arrivals per second: one request in 1,000 s, the slowest open loop (--rate, a rate search's probes)


# The metrics a bench --slo bounds, ms: those bench.stats.SLO_METRICS computes per request (a test keeps the two equal)
SLO_KEYS = ("e2e_ms", "tpot_ms", "ttft_ms")


def bench_slo(value: dict[str, float]) -> dict[str, float]:
    """`value` (SLO key -> bound, ms) when every key is one bench computes (SLO_KEYS) and every bound positive and
    finite (slo_bounds); raises ValueError naming the first that is not (bench's and simulate's --slo)."""
    unknown = sorted(set(value) - set(SLO_KEYS))
    if unknown:
        raise ValueError(f"unknown SLO key(s) {unknown}; use {', '.join(SLO_KEYS)}")
    return slo_bounds(value)


def slo_bounds(value: dict[str, float]) -> dict[str, float]:
    """`value` (SLO key -> bound, ms) when every bound is positive and finite; raises ValueError naming the rest
    (bench's and advise's --slo)."""
    bad = [k for k, v in value.items() if not (0 < v < math.inf)]
    if bad:
        raise ValueError(f"{', '.join(bad)} must be positive, finite milliseconds")
    return value


def slo_text(slo: dict[str, float]) -> str:
    """SLOs (key -> bound, ms) as --slo takes them: 'ttft_ms=500,tpot_ms=20' (a bound as %g: 500, 2.5)."""
    return ",".join(f"{key}={bound:g}" for key, bound in slo.items())


def probe_requests(rate_per_s: float) -> int:
    """Measured requests per rep of a rate probe at `rate_per_s` (req/s) without --duration-s: PROBE_S of arrivals, at
    least PROBE_MIN_REQUESTS, at most PROBE_MAX_S of arrivals (at least 1) and PROBE_MAX_REQUESTS; never the in-flight
    cap's business (vllm bench serve's --num-prompts is apart from its --max-concurrency too)."""
    wanted = max(PROBE_MIN_REQUESTS, math.ceil(rate_per_s * PROBE_S))
    return max(1, min(wanted, math.floor(rate_per_s * PROBE_MAX_S), PROBE_MAX_REQUESTS))


class BenchConfig(RequestModel):
    """The request of `onechip bench`: one context x clients grid against one server."""

    base_url: Annotated[
        str,
        Field(description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000 (a trailing / or /v1 is dropped)."),
        Cli("url", argument=True),
        AfterValidator(openai_base_url),
    ]
    model: Name | None = Field(default=None, description="Served model name; not given: the first from /v1/models.")
    contexts: Annotated[
        list[Annotated[int, Field(ge=1, le=MAX_TOKENS)]],
        TOKEN_COUNTS,
        Field(min_length=1),
    ] = Field(
        default=[128, 1024],
        description="Prompt lengths in tokens, as the server counts.",
    )
    clients: Annotated[
        list[Annotated[int, Field(ge=1, le=MAX_CLIENTS)]],
        comma_list(int),
        Field(min_length=1),
    ] = Field(
        default=[1, 4],
        description="Closed-loop concurrent streams per cell. With --rate or --find-max rate: one "
        "value, the requests in flight at most (vllm bench serve's --max-concurrency; default: no cap).",
    )
    reps: int = Field(default=2, ge=1, le=10_000, description="Repetitions per cell.")
    output_tokens: int = Field(
        default=32, ge=1, le=MAX_TOKENS, description="max_tokens per request (min_tokens too, if accepted)."
    )
    requests_per_client: int = Field(
        default=2,
        ge=1,
        le=1_000_000,
        description="Measured requests each stream sends per rep (unless --duration-s). With --rate: the measured "
        f"requests per rep, all together (vllm bench serve's --num-prompts; default ~{PROBE_S:g} s of arrivals, at "
        f"least {PROBE_MIN_REQUESTS}, at most {PROBE_MAX_S:g} s).",
    )
    duration_s: Annotated[float | None, Cli("--duration-s")] = Field(
        default=None,
        gt=0,
        le=MAX_SECONDS,
        description="Instead of --requests-per-client: each stream sends measured requests until this many "
        "seconds after its warm-up (open loop: arrivals over this many seconds).",
    )
    warmup_requests: int = Field(
        default=1,
        ge=0,
        le=1_000_000,
        description="Unmeasured requests per stream before the window (unless --warmup-s).",
    )
    warmup_s: Annotated[float | None, Cli("--warmup-s")] = Field(
        default=None,
        ge=0,
        le=MAX_SECONDS,
        description="Instead of --warmup-requests: each stream sends unmeasured requests until this many "
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
        ge=MIN_RATE,
        le=MAX_RATE,
        description="Open loop (vllm bench serve's --request-rate): arrivals per second, one cell per context, in "
        "flight at most --clients when given (else no cap); not given: closed loop.",
    )
    max_in_flight: Annotated[int | None, Cli(hidden=True)] = Field(
        default=None,
        ge=0,
        le=MAX_REQUESTS,
        description="Open loop: requests in flight at most, apart from `clients` (which then only numbers the streams, "
        "each with its warm-up); 0 = no cap: every arrival is sent at its time whatever is in flight (vllm bench serve "
        "without --max-concurrency); None = `clients`. Per client process (`workers`). Set by --find-max rate for "
        "its probes and by a --rate run (bench.runner.open_loop: one stream, one process).",
    )
    arrivals: Literal["poisson", "constant"] | None = Field(
        default=None,
        description="Open-loop inter-arrival times (--rate, or each --find-max rate probe): exponential (poisson, the "
        "default) or constant.",
    )
    seed: Annotated[int, Cli(hidden=True)] = Field(
        default=0, description="Seed of the Poisson arrival times (reproducible schedules)."
    )
    slo: Annotated[dict[str, float], BeforeValidator(key_values)] = Field(
        default_factory=dict,
        description="Goodput objectives, ms upper bounds: any of ttft_ms, tpot_ms, e2e_ms (ttft_ms=500,tpot_ms=50).",
    )
    workload: Literal["grid", "agent", "trace"] = Field(
        default="grid",
        description="grid: independent single-turn requests per context. agent: sessions sharing a system "
        "prompt + tool schemas of each --contexts length, turns growing the context (user text, a replayed "
        "tool call, its result). trace: replay the --trace file at its recorded times.",
    )
    trace_file: Annotated[Path | None, Cli("--trace")] = Field(
        default=None,
        description="Trace replay: JSONL of requests, {timestamp (ms), input_length, output_length} per line "
        "(AIPerf/Mooncake shape; prompt_tokens/output_tokens and timestamp_s accepted).",
    )
    workload_file: Path | None = Field(
        default=None,
        description="A JSON or YAML object giving the agent workload's shape (workload, contexts, clients, "
        "output_tokens, turns, user_tokens, call_tokens, result_tokens, think_time_s, sessions_per_client); flags "
        "typed win.",
    )
    input_sha256: Annotated[dict[str, str], Cli(hidden=True)] = Field(
        default_factory=dict,
        description="sha256 (hex) of the bytes of each file the workload is read from, by field (trace_file, "
        "workload_file); set by bench when it starts. A resume compares these, not the paths: the same path with "
        "other bytes is another workload (refused), the same bytes at another path the same one.",
    )
    bench_plan: Annotated[Plan | None, Cli(hidden=True)] = Field(
        default=None,
        description="The plan (`bench --plan`) whose KV pool and max_model_len cells were judged infeasible by; set "
        "by bench when it starts, so a resumed run or --find-max search judges its cells by the same plan.",
    )
    trace_speed: Annotated[float, Field(ge=1e-3, le=1e3)] = Field(
        default=1.0, description="Trace replay: time scale (2 = send twice as fast as recorded), 0.001 to 1000."
    )
    turns: Annotated[int, Field(ge=1, le=MAX_TURNS)] = Field(
        default=4, description="Agent workload: turns per session."
    )
    user_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] = Field(
        default=32, description="Agent workload: user text per turn, tokens (filler words, ~1 token each)."
    )
    call_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] = Field(
        default=24,
        description="Agent workload: the assistant tool call replayed after each turn, tokens (~, JSON arguments).",
    )
    result_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] = Field(
        default=64, description="Agent workload: the tool result fed back after each turn, tokens (~)."
    )
    think_time_s: Annotated[float, Field(ge=0, le=MAX_THINK_S)] = Field(
        default=0.0, description="Agent workload: pause between a turn's answer and the next turn, seconds."
    )
    sessions_per_client: Annotated[int, Field(ge=1, le=10_000)] = Field(
        default=1, description="Agent workload: sessions each client runs one after the other per rep."
    )
    find_max: Literal["clients", "rate"] | None = Field(
        default=None,
        description="Search the largest load meeting --slo at --slo-percentile: clients (closed loop) or rate "
        "(open loop, requests/s: each probe sends ~10 s of arrivals, or --duration-s; in flight at most --clients, "
        "default no cap).",
    )
    slo_percentile: Annotated[float, Field(gt=0, le=100)] = Field(
        default=90.0, description="--find-max: the percentile of each SLO metric that must meet its bound."
    )
    find_max_limit: Annotated[float, Field(gt=0, le=MAX_RATE)] = Field(
        default=64.0,
        description=f"--find-max: the largest load tried (clients, at most {MAX_CLIENTS:,}; or requests/s).",
    )
    chip: Name | None = Field(
        default=None, description="--find-max: price the answer's tok/s on this chip (price catalog), e.g. v5e-1."
    )
    pricing: Annotated[list[str] | None, comma_list(str)] = Field(
        default=None, description="--find-max with --chip: the pricing models (spot, on-demand, ...)."
    )
    # bounded: a wait past the OS's time_t crashed the sampler thread (OverflowError); a near-0 one scraped /metrics
    # without a pause all through the cell (load on the server measured), 0.01 s is 100 scrapes/s at most
    metrics_interval_s: Annotated[float, Cli(hidden=True)] = Field(
        default=0.5, ge=0.01, le=MAX_SECONDS,
        description="Seconds between /metrics samples during a cell (KV usage peak), 0.01 to 604,800.",
    )  # fmt: skip
    router_policies: Annotated[list[RouterPolicy] | None, comma_list(str)] = Field(
        default=None,
        description="Behind `up --replicas N`: run the workload once per vllm-router policy (the router restarts "
        "between runs) and compare them, e.g. round_robin,cache_aware.",
    )
    replica_urls: Annotated[list[str], Cli(hidden=True)] = Field(
        default_factory=list,
        description="Replicas behind the router at base_url (set by api.bench from `up --replicas N`): each "
        "one's /metrics is read before and after every cell.",
    )
    calibration: bool = Field(
        default=False,
        description="Measure only the cells that pin `onechip simulate`: the shortest and the next-to-longest "
        "of --contexts, each at 1 client and at the most of --clients (a 2 x 2 grid), and the longest at 1 "
        "client (the long-context cell: prefill and decode at long context without queueing); with two "
        "--contexts, the 2 x 2 grid of both.",
    )

    @field_validator("base_url")
    @classmethod
    def _root(cls, value: str) -> str:
        return base_root(value)

    @field_validator("contexts", "clients")
    @classmethod
    def _distinct(cls, value: list[int]) -> list[int]:
        """A grid value named twice is refused: its cell was measured once and summary.json listed it as many
        times as it was named (4 cells for `--contexts 16,16 --clients 1,1`)."""
        named = Counter(value)  # one pass: value.count per value took minutes for 200,000 contexts over MCP
        twice = next((v for v in value if named[v] > 1), None)
        if twice is not None:
            raise ValueError(f"names {twice} twice; give each value once (--reps repeats a cell)")
        return value

    @field_validator("slo")
    @classmethod
    def _slo_bounds(cls, value: dict[str, float]) -> dict[str, float]:
        """An SLO bound no request can meet is refused before any request: it measured a whole grid at goodput 0,
        and --find-max searched for a load that cannot exist. So is a key bench does not compute (SLO_KEYS): it was
        refused by run_grid, once a --find-max search had begun."""
        return bench_slo(value)

    @model_validator(mode="after")
    def _calibration_grid(self) -> BenchConfig:
        if self.calibration:
            if len(set(self.contexts)) < 2 or max(self.clients) < 2:
                raise ValueError("--calibration needs two --contexts and --clients above 1 (e.g. 128,1024 and 1,8)")
            distinct = sorted(set(self.contexts))
            self.contexts = [distinct[0], *distinct[-2:]] if len(distinct) > 2 else distinct
            self.clients = [1, max(self.clients)]
        return self

    def grid_cells(self) -> list[tuple[int, int]]:
        """The (context, clients) cells measured, in order: every context x clients, except under
        --calibration with three contexts, where the longest is measured at 1 client only (5 cells)."""
        cells = [(ctx, n) for ctx in self.contexts for n in self.clients]
        if self.calibration and len(self.contexts) == 3:
            return [(ctx, n) for ctx, n in cells if ctx != self.contexts[-1] or n == 1]
        return cells

    def load_text(self, clients: int) -> str:
        """A cell's load as the progress lines, the console and the report say it: 'N clients' closed loop; open loop
        (--rate, a --find-max rate probe) '20 req/s, at most 4 in flight' or '20 req/s, no in-flight cap' (a run from
        before max_in_flight: at most its `clients`)."""
        if self.rate_per_s is None:
            return plural(clients, "client")
        cap = self.in_flight_cap(clients)
        return f"{self.rate_per_s:g} req/s, " + (f"at most {cap:,} in flight" if cap else "no in-flight cap")

    def in_flight_cap(self, clients: int) -> int:
        """Open loop: the requests a cell of `clients` streams has in flight at most, 0 = no cap: max_in_flight, or
        the cell's `clients` for a run saved before it (bench.worker.in_flight_cap holds a client process to it; the
        simulator, sim.scheduler, holds a simulated cell to it)."""
        return clients if self.max_in_flight is None else self.max_in_flight

    def cell_text(self, context: int, clients: int) -> str:
        """'context 16 x 4 clients' closed loop, 'context 16 at 20 req/s, no in-flight cap' open loop (load_text)."""
        return f"context {context:,} {'x' if self.rate_per_s is None else 'at'} {self.load_text(clients)}"

    def cell_label(self, context: int, clients: int, report: bool = False) -> str:
        """A cell as a line about it names it: closed loop '16 x 4' (`report`: report.md's '16 ctx × 4 clients'), open
        loop '16 at 40 req/s, no in-flight cap' ('16 ctx at ...'), whose one stream (clients 1) only numbers its
        requests (load_text)."""
        at = f"{context:,} ctx" if report else f"{context:,}"
        if self.rate_per_s is None:
            return f"{at} × {plural(clients, 'client')}" if report else f"{at} x {clients}"
        return f"{at} at {self.load_text(clients)}"

    def slo_text(self) -> str:
        """The --slo bounds as the console and report say them: 'ttft_ms <= 500, tpot_ms <= 50' ('' without)."""
        return ", ".join(f"{k} <= {v:g}" for k, v in self.slo.items())

    def open_loop_text(self) -> str | None:
        """A --rate run's schedule, as the console and report say it: 'open loop at 20 req/s (poisson arrivals), in
        flight at most: none (no cap); 200 measured requests per rep'; None closed loop (a trace replay too)."""
        if self.rate_per_s is None:
            return None
        cap = (
            "each cell's clients (a run from before --rate was open loop)"
            if self.max_in_flight is None
            else f"{self.max_in_flight:,} (--clients)"
            if self.max_in_flight
            else "none (no cap)"
        )
        per = "" if self.max_in_flight is not None else " per client"
        count = (
            f"arrivals over {self.duration_s:g} s per rep"
            if self.duration_s is not None
            else f"{self.requests_per_client:,} measured requests{per} per rep"
        )
        arrivals = self.arrivals or "poisson"
        return f"open loop at {self.rate_per_s:g} req/s ({arrivals} arrivals), in flight at most: {cap}; {count}"

    @model_validator(mode="after")
    def _bounded(self) -> BenchConfig:
        """The whole job within bounds before any work: an agent session's last prompt fits MAX_TOKENS, a
        cell sends at most MAX_REQUESTS (counted as it will be sent: _cell_requests), a clients search stops at
        MAX_CLIENTS and at a whole number of clients, at least 1 (bench.search.LoadSearch probes int(limit) last:
        below 1 it probed 0 clients, a fraction was cut unsaid)."""
        if self.find_max == "clients" and self.find_max_limit > MAX_CLIENTS:
            raise ValueError(f"--find-max-limit {self.find_max_limit:g}: at most {MAX_CLIENTS:,} clients")
        if self.find_max == "clients" and (self.find_max_limit < 1 or not self.find_max_limit.is_integer()):
            raise ValueError(
                f"--find-max-limit {self.find_max_limit:g}: a clients search's limit is a whole number of clients, "
                f"1 to {MAX_CLIENTS:,}"
            )
        if self.find_max == "rate" and self.find_max_limit < MIN_RATE:
            raise ValueError(
                f"--find-max-limit {self.find_max_limit:g}: a rate search probes at least {MIN_RATE:g} req/s"
            )
        per_turn = self.user_tokens + self.call_tokens + self.result_tokens + self.output_tokens
        if self.workload == "agent" and max(self.contexts) + self.turns * per_turn > MAX_TOKENS:
            raise ValueError(
                f"an agent session grows to {max(self.contexts) + self.turns * per_turn:,} tokens "
                f"(--contexts + --turns x per-turn tokens); at most {MAX_TOKENS:,}"
            )
        sent = self._cell_requests()
        if sent is not None and sent[0] > MAX_REQUESTS:
            raise ValueError(f"a cell would send {sent[0]:,} requests ({sent[1]}); at most {MAX_REQUESTS:,}")
        return self

    def rate_requests(self, rate_per_s: float) -> int:
        """Measured requests one rep of an open-loop cell at `rate_per_s` (req/s) sends, one stream numbering them, as
        bench.runner.open_loop shapes a --rate run and bench.search a --find-max rate probe: the arrivals over
        duration_s (rate x duration_s rounded up, the mean count of bench.runner.arrival_offsets), else
        requests_per_client when given (vllm bench serve's --num-prompts; a search's probes take no such flag),
        else probe_requests(rate) (~PROBE_S of arrivals)."""
        if self.duration_s is not None:
            return math.ceil(rate_per_s * self.duration_s)
        if self.find_max is None and "requests_per_client" in self.model_fields_set:
            return self.requests_per_client
        return probe_requests(rate_per_s)

    def _cell_requests(self) -> tuple[int, str] | None:
        """(the measured requests the largest cell of this run sends, all reps; how they are counted), as the run
        will send them; None when only time bounds them (closed loop with duration_s) or a trace file sets them.
        Open loop (--rate): one stream of rate_requests a rep (open_loop sets clients to 1, --clients being the
        in-flight cap); a --find-max search: its largest probe (find_max_limit req/s, probe_requests growing with
        the rate; or find_max_limit clients); closed loop: the most clients x each stream's requests."""
        if self.workload == "trace":
            return None
        if self.find_max == "rate":
            return self.reps * self.rate_requests(self.find_max_limit), "reps x the largest rate probe's requests"
        if self.rate_per_s is not None:
            # reshaped by open_loop (max_in_flight set) the streams are 1; only a config built by hand numbers more
            streams = 1 if self.max_in_flight is None or self.duration_s is not None else max(self.clients)
            return self.reps * streams * self.rate_requests(self.rate_per_s), "reps x measured requests per rep"
        if self.duration_s is not None:
            return None
        streams = int(self.find_max_limit) if self.find_max == "clients" else max(self.clients)
        per_stream = self.sessions_per_client * self.turns if self.workload == "agent" else self.requests_per_client
        return self.reps * streams * per_stream, "reps x clients x per stream"

    @model_validator(mode="before")
    @classmethod
    def _exclusions(cls, data: Any, info: ValidationInfo) -> Any:
        if given(info.context) and isinstance(data, dict):
            data = with_workload_file(data)
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


WORKLOAD_FILE_KEYS = ("workload", "contexts", "clients", "output_tokens", *AGENT_ONLY)
# The most of a --workload-file read: its ten keys, written by hand, fill a few hundred bytes; 1 MiB bounds the
# read of what is no workload file (/dev/zero, a log passed by mistake), which was read whole into memory.
MAX_WORKLOAD_FILE_BYTES = 1 << 20


def with_workload_file(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (what the user typed) with the fields of its `workload_file` under it: a typed flag wins; the
    file's workload defaults to agent. Raises ValueError (one line) for an unreadable file or unknown key."""
    path = data.get("workload_file")
    if not isinstance(path, (str, Path)):  # None, or a value of the wrong type: the field's validation refuses it
        return data
    if len(str(path)) > MAX_TEXT:  # read before the field's own bound: the OS's refusal echoed all of it
        raise ValueError(f"--workload-file is longer than {MAX_TEXT:,} characters (got {shown(str(path))})")
    shape = _workload_shape(Path(path))
    if not isinstance(shape, dict):
        raise ValueError(f"--workload-file {path}: must hold an object of workload keys (JSON or YAML), e.g. turns: 4")
    unknown = sorted(set(shape) - set(WORKLOAD_FILE_KEYS), key=repr)  # YAML keys need not be text: 1, null
    if unknown:
        raise ValueError(f"--workload-file {path}: unknown key {unknown[0]!r}; use {', '.join(WORKLOAD_FILE_KEYS)}")
    # no key takes a boolean, which validation would read as 1 or 0 (YAML reads yes, no, on, off as booleans)
    said = [(k, v) for k, v in shape.items() if any(isinstance(x, bool) for x in (v if isinstance(v, list) else [v]))]
    if said:
        key, value = said[0]
        raise ValueError(
            f"--workload-file {path}: {key} is {json.dumps(value, default=str)}, a boolean (YAML reads yes, no, on "
            "and off as true or false); give a number"
        )
    for key, value in shape.items():  # a bad value is the file's, not a flag the user never typed ('--turns')
        field = BenchConfig.model_fields[key]
        kind: Any = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
        try:
            TypeAdapter(kind).validate_python(value)
        except ValidationError as exc:
            msg = exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
            raise ValueError(f"--workload-file {path}: {key}: {msg} (got {shown(value)})") from None
    return {"workload": "agent", **shape, **{k: v for k, v in data.items() if v is not None}}


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that names a key twice (safe_load keeps the last one silently:
    `turns: 4` then `turns: 8` ran 8 turns)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, Hashable):
                continue  # the base loader refuses it ('found unhashable key')
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"key {key!r} given twice", key_node.start_mark)
            seen.add(key)
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


def _workload_shape(path: Path) -> Any:
    """The workload file at `path` parsed as JSON, else as YAML (a superset people write by hand). Raises
    ValueError in one line naming the file and, for a syntax error, the line and column and what is wrong there:
    the JSON parser's when the file looks like JSON ({ or [ first), else the YAML parser's."""
    try:
        with open_regular(path) as file:
            data = file.read(MAX_WORKLOAD_FILE_BYTES + 1)
        text = data.decode("utf-8")
    except OSError as exc:
        raise ValueError(f"--workload-file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"--workload-file {path}: not UTF-8 text (a JSON or YAML object of workload keys)") from None
    if len(data) > MAX_WORKLOAD_FILE_BYTES:
        raise ValueError(
            f"--workload-file {path}: larger than {MAX_WORKLOAD_FILE_BYTES:,} bytes; a workload file holds a few "
            "workload keys, e.g. turns: 4"
        )
    if not text.strip():
        raise ValueError(
            f"--workload-file {path}: is empty; give a JSON or YAML object of workload keys, e.g. turns: 4"
        )
    try:
        return jsontext.loads(text, unique_keys=True)
    except json.JSONDecodeError as exc:
        if isinstance(exc, jsontext.NoPosition) or exc.msg.endswith(" given twice"):  # the same in YAML
            raise ValueError(f"--workload-file {path}: not valid JSON: {exc.msg}") from None
        as_json = exc
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except RecursionError:  # PyYAML's composer recurses once per level of nesting too ('x: [[[...]]]')
        raise ValueError(f"--workload-file {path}: not valid YAML: {jsontext.TOO_DEEP}") from None
    except yaml.YAMLError as exc:
        if text.lstrip().startswith(("{", "[")):
            where, what = f"line {as_json.lineno}, column {as_json.colno}", as_json.msg
            raise ValueError(f"--workload-file {path}: not valid JSON at {where}: {what}") from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        what = " ".join(str(getattr(exc, "problem", None) or exc).split())
        opened = getattr(exc, "context_mark", None)
        if getattr(exc, "context", None) and opened is not None and opened.line != getattr(mark, "line", None):
            what += f" ({exc.context} from line {opened.line + 1}, column {opened.column + 1})"
        raise ValueError(f"--workload-file {path}: not valid YAML{where}: {what}") from None


def check_exclusions(model: type[BenchConfig], data: Mapping[str, Any]) -> None:
    """Raise ValueError when `data` (what the user typed) holds two flags of an EXCLUSIVE pair, or a flag
    without the one it NEEDS."""
    present = {k for k, v in data.items() if v is not None}
    for a, b in EXCLUSIVE:
        if a in present and b in present:
            raise ValueError(f"give {flag_of(model, a)} or {flag_of(model, b)}, not both")
    for field, (needed, message) in NEEDS.items():
        # a rate search chooses each probe's rate (a clients search refuses --arrivals: _check_search)
        chosen = field == "arrivals" and data.get("find_max") is not None
        if field in present and needed not in present and not chosen:
            raise ValueError(message)
    check_agent(model, data, present)
    _check_rate(model, data, present)
    check_search(model, data, present)
    _check_trace(model, data, present)


def _check_trace(model: type[BenchConfig], data: Mapping[str, Any], present: set[str]) -> None:
    replay = data.get("workload") == "trace"
    if replay and "trace_file" not in present:
        raise ValueError("--workload trace replays a file: give --trace FILE")
    for field in ("trace_file", "trace_speed"):
        if field in present and not replay:
            raise ValueError(f"{flag_of(model, field)} is for trace replay: give --workload trace too")
    for field in TRACE_EXCLUDES:
        if replay and field in present:
            raise ValueError(f"--workload trace sends what the trace holds: {flag_of(model, field)} does not apply")


def _many(value: Any) -> bool:
    """More than one value in a list field as typed ('1,4') or as a list."""
    return len(value) > 1 if isinstance(value, list) else "," in str(value)


def check_agent(model: type[BaseModel], data: Mapping[str, Any], present: set[str]) -> None:
    """Raise ValueError when a field of `present` (the fields given) shapes agent sessions without
    data['workload'] 'agent', or an open-loop or timed one is given with it (sessions run whole, closed loop):
    bench's rule, and simulate's (SimulateRequest), each naming `model`'s flags."""
    agent_flags = [flag_of(model, f) for f in AGENT_ONLY if f in present]
    if agent_flags and data.get("workload") != "agent":
        raise ValueError(f"{agent_flags[0]} shapes agent sessions: give --workload agent too")
    if data.get("workload") == "agent":
        for field in ("rate_per_s", "duration_s", "warmup_s", "requests_per_client"):
            if field in present:
                raise ValueError(f"--workload agent runs whole sessions: {flag_of(model, field)} does not apply")


def _check_rate(model: type[BenchConfig], data: Mapping[str, Any], present: set[str]) -> None:
    """A plain --rate run is one open-loop cell per context (bench.runner.open_loop): --clients is its in-flight cap,
    one value; --calibration's closed-loop cells at 1 and N clients are not what it measures."""
    if "rate_per_s" not in present or data.get("find_max") is not None:
        return
    if "calibration" in present:
        raise ValueError("--calibration measures closed-loop cells at 1 and N clients: drop --rate")
    if "clients" in present and _many(data["clients"]):
        raise ValueError("--rate: give one --clients value (the requests in flight at most; leave it out for no cap)")
    if "workers" in present and data["workers"] not in (1, "1"):  # its one stream runs in one process
        raise ValueError("--rate sends every arrival from one process (vllm bench serve's): --workers does not apply")


def check_search(model: type[BaseModel], data: Mapping[str, Any], present: set[str]) -> None:
    """Raise ValueError when the --find-max search of `data` (the fields `present` given) is one bench refuses: a
    flag tuning a search not asked for, or one the search's kind sets or cannot take; bench's rule and simulate's
    (SimulateRequest), each naming `model`'s flags."""
    find = data.get("find_max")
    if find is None:
        for field in ("slo_percentile", "find_max_limit", "chip", "pricing"):
            if field in present:
                raise ValueError(f"{flag_of(model, field)} tunes the SLO search: give --find-max too")
        return
    if "router_policies" in present:  # a search runs api.bench per probe, on whatever policy the router has
        raise ValueError(
            "--find-max searches the load on one router policy: --router-policies does not apply "
            "(compare policies in a bench without --find-max)"
        )
    if "pricing" in present and "chip" not in present:
        raise ValueError("--pricing prices the answer on a chip: give --chip too")
    if "calibration" in present:  # it rewrote --clients to 1,<most>: a rate search ran with 1 request in flight
        raise ValueError("--find-max measures its own loads at one context: --calibration does not apply")
    if find == "rate" and data.get("workload") == "agent":
        raise ValueError("--find-max rate is open loop; agent sessions are closed loop: use --find-max clients")
    if find == "clients" and "arrivals" in present:
        raise ValueError("--find-max clients searches closed-loop streams: --arrivals shapes open-loop (rate) arrivals")
    if find == "clients" and "rate_per_s" in present:
        raise ValueError("--find-max clients searches closed-loop streams: drop --rate (or use --find-max rate)")
    if find == "clients" and "clients" in present:
        raise ValueError("--find-max clients chooses the clients: drop --clients (--find-max-limit bounds it)")
    if find == "rate" and "rate_per_s" in present:
        raise ValueError("--find-max rate chooses the rate: drop --rate (--find-max-limit bounds it)")
    if find == "rate" and "clients" in present and _many(data["clients"]):
        raise ValueError("--find-max rate: give one --clients value (requests in flight at most)")
    if find == "rate" and "requests_per_client" in present:  # a probe's count follows its rate, not its cap
        timed = "; --duration-s sets how long each probe's arrivals last" if "duration_s" in model.model_fields else ""
        raise ValueError(
            f"--find-max rate sends each probe ~{PROBE_S:g} s of arrivals at its rate (at least {PROBE_MIN_REQUESTS} "
            f"requests, at most {PROBE_MAX_S:g} s): --requests-per-client does not apply{timed}"
        )
    if "contexts" in present and _many(data["contexts"]):
        raise ValueError("--find-max searches one context: give one --contexts value")


class StreamOutcome(ResultModel):
    """What one streamed request measured on the wire: bench/client.py fills it as the chunks arrive, and
    RequestSample (the same fields and the cell's) carries it to requests.jsonl and the statistics. Times are
    seconds on the client's monotonic clock (time.perf_counter)."""

    t_send: float = Field(description="When the request was sent, s.")
    t_first: float | None = Field(default=None, description="First chunk carrying generated content, s.")
    t_last: float | None = Field(
        default=None,
        description="Last chunk carrying generated content or tokens, or the finish chunk without output at the "
        "EOS's step that usage counts (bench.client `_Timing.time_stop_step`; not in chunk_times), s.",
    )
    t_done: float | None = Field(default=None, description="When the stream ended (or failed), s.")
    prompt_tokens: int | None = Field(default=None, description="usage.prompt_tokens from the server.")
    completion_tokens: int | None = Field(
        default=None, description="Output tokens: usage.completion_tokens, or counted (completion_tokens_from)."
    )
    completion_tokens_from: Literal["usage", "tokenize", "chunks"] = Field(
        default="usage",
        description="Where completion_tokens came from: the server's usage; or, from a server that sends none, "
        "its /tokenize of the generated text (vllm bench serve's fallback) or, without /tokenize, one token per "
        "content chunk (a lower bound when chunks carry several tokens).",
    )
    cached_tokens: int | None = Field(
        default=None,
        description="usage.prompt_tokens_details.cached_tokens: prompt tokens served from the prefix cache "
        "(None when the server does not report it; vLLM needs --enable-prompt-tokens-details).",
    )
    chunk_times: list[float] = Field(default_factory=list, description="Arrival time of each content chunk, s.")
    chunk_tokens: list[int] = Field(
        default_factory=list,
        description="Tokens each content chunk carried (continuous usage); empty when the server sent none.",
    )
    finish_reason: str | None = Field(default=None, description="finish_reason of the last choice chunk.")
    http_status: int | None = Field(default=None, description="HTTP status of the response, if one came.")
    error: Said | None = Field(default=None, description="The server's message or the transport error (redacted).")
    retry_after_s: float | None = Field(
        default=None,
        description="An HTTP 429 or 503 answer: the wait its Retry-After asked for before the next request, s "
        "(retry_after.retry_after_s: RFC 9110 section 10.2.3, either form); None without one.",
    )
    stalled: bool = Field(
        default=False,
        description="The finish_reason came with usage, then nothing more (no final usage chunk, no [DONE], no "
        "end of the body) for the client's DRAIN_S: the answer counted whole, t_done at the finish chunk.",
    )


def usage_below_zero(counts: Mapping[str, object]) -> str | None:
    """The error of a request whose usage counts tokens below 0 (`counts`: usage field -> value, e.g.
    'completion_tokens' -> -5), None when none is: no generation gives such a count, so the request is failed (a
    rep of -5 tok/s is no measurement); bench/client.py fails a live answer by it, RequestSample a stored one."""
    negative = next((f"usage.{k} {v}" for k, v in counts.items() if isinstance(v, int | float) and v < 0), None)
    return f"{negative}: the server's usage counts no tokens below 0" if negative is not None else None


class RequestSample(StreamOutcome):
    """One request, as one line of requests.jsonl: what the wire measured (StreamOutcome) and where in the
    grid it was sent. Times are seconds on the client's monotonic clock."""

    context_tokens: int = Field(description="Target prompt length of the cell, tokens.")
    clients: int = Field(description="Concurrent streams of the cell.")
    rep: int = Field(description="Repetition index, from 0.")
    stream: int = Field(description="Client stream index within the cell.")
    seq: int = Field(description="Request index within the stream (warm-up requests first).")
    warmup: bool = Field(default=False, description="True for warm-up requests, excluded from every statistic.")
    t_intended: float | None = Field(
        default=None,
        description="Open loop: when the schedule meant to send it, s (t_send - t_intended = slip). None closed.",
    )
    session: int | None = Field(default=None, description="Agent workload: session index within the stream.")
    turn: int | None = Field(default=None, description="Agent workload: turn index within the session, from 0.")
    prompt_tokens_target: int | None = Field(default=None, description="Prompt tokens the client aimed for.")
    output_tokens_target: int | None = Field(
        default=None, description="Trace replay: the entry's output tokens (else the config's output_tokens)."
    )
    status: Literal["ok", "failed"] = Field(default="ok", description="'failed' when the request has an error.")
    last_in_stream: bool = Field(
        default=False, description="The last request of its stream in this repetition to end (resume)."
    )
    waited_s: float = Field(
        default=0.0,
        description="Closed loop: how long its stream waited after it, before its next request, as its retry_after_s "
        "asked (bounded: bench.worker.asked_wait_s), s; in no latency and no think time.",
    )
    stopped_streams: bool = Field(
        default=False,
        description="Its streams stopped after it: bench.worker.FAILS_TO_STOP requests in a row had failed; the "
        "repetition was cut short and its cell is failed.",
    )

    @model_validator(mode="after")
    def _no_count_below_zero(self) -> RequestSample:
        """A line an older onechip stored as 'ok' with a usage count below 0 (its client kept the server's -3) is read
        as the client records that answer now: failed, the error naming the count (usage_below_zero; its counts are
        kept as stored, and no figure reads a failed request's), so `bench --resume` measures its repetition again
        instead of summarising -3 tokens; per-chunk counts below 0 (a cumulative count that fell) are dropped, the
        total spread over the chunks, as the client drops them."""
        counts = {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens}
        error = usage_below_zero({**counts, "prompt_tokens_details.cached_tokens": self.cached_tokens})
        if self.status == "ok" and error is not None:
            self.status, self.error = "failed", error
        if any(k < 0 for k in self.chunk_tokens):
            self.chunk_tokens = []
        return self

    @classmethod
    def of(cls, job: RepJob, outcome: StreamOutcome, **request: Any) -> RequestSample:
        """The sample of one request of `job`: the cell's fields from `job` (context_tokens, clients, rep,
        prompt_tokens_target), the wire's from `outcome`, `request` (stream, seq, warmup) the rest and wins
        (a trace entry's own prompt_tokens_target)."""
        cell = job.model_dump(include=cls.model_fields.keys() & RepJob.model_fields.keys())
        status: Literal["ok", "failed"] = "ok" if outcome.error is None else "failed"
        return cls(**{**cell, **outcome.model_dump(), **request}, status=status)


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
    include_usage: bool = Field(
        default=True, description="Send stream_options to ask for usage; False: the server refuses them."
    )
    request_timeout_s: float = Field(description="Per-request timeout, seconds.")
    warmup_requests: int = Field(description="Warm-up requests per stream (when warmup_s is None).")
    warmup_s: float | None = Field(description="Warm-up seconds per stream from the job's start.")
    requests_per_client: int = Field(description="Measured requests per stream (when duration_s is None).")
    duration_s: float | None = Field(description="Measured seconds per stream after its warm-up.")
    arrivals_s: list[tuple[float, int]] | None = Field(
        default=None,
        description="Open loop: (send offset s after warm-up, stream) per measured request; None = closed loop.",
    )
    max_in_flight: int | None = Field(
        default=None,
        description="Open loop: this job's requests in flight at most; 0 = no cap; None = one per stream of the job.",
    )
    workload: Literal["grid", "agent", "trace"] = Field(
        default="grid", description="grid, agent or trace (see BenchConfig)."
    )
    turns: int = Field(default=1, description="Agent: turns per session.")
    user_tokens: int = Field(default=0, description="Agent: user text per turn, ~tokens.")
    call_tokens: int = Field(default=0, description="Agent: replayed tool call per turn, ~tokens.")
    result_tokens: int = Field(default=0, description="Agent: tool result per turn, ~tokens.")
    think_time_s: float = Field(default=0.0, description="Agent: pause between turns, seconds.")
    sessions_per_client: int = Field(default=1, description="Agent: sessions per stream.")
    system_words: int = Field(
        default=0, ge=0, description="Agent: filler words of the shared system prompt (fitted to context_tokens)."
    )
    request_shapes: list[tuple[int, int, int]] | None = Field(
        default=None,
        description="Trace replay: (filler words, output tokens, counted prompt tokens) per entry of arrivals_s.",
    )

    @classmethod
    def of(cls, config: BenchConfig, **cell: Any) -> RepJob:
        """A job of `config`: the fields RepJob shares with BenchConfig by name and meaning (base_url,
        output_tokens, request_timeout_s, the warm-up and window) come from `config`; `cell` gives the rest
        (the resolved model, this cell's clients, the streams, the prompt), and wins where both name one."""
        shared = (cls.model_fields.keys() & BenchConfig.model_fields.keys()) - cell.keys()
        return cls(**config.model_dump(include=shared), **cell)


class Dist(ResultModel):
    """A latency distribution over a cell's measured requests (bench/stats.py), ms: count, mean and percentiles."""

    n: int = Field(default=0, description="Number of samples.")
    mean: Finite | None = Field(default=None, description="Arithmetic mean.")
    median: Finite | None = Field(default=None, description="50th percentile (linear interpolation).")
    p90: Finite | None = Field(default=None, description="90th percentile (linear interpolation).")
    p99: Finite | None = Field(default=None, description="99th percentile (linear interpolation).")


class RepResult(ResultModel):
    """One repetition of a cell: its measurement window, output tokens and tok/s, and its requests (ok, failed,
    inside the window)."""

    rep: int = Field(description="Repetition index, from 0.")
    window_s: Measured = Field(
        description="Measured window. Closed loop: from when every stream has sent its first measured "
        "request to when the first stream finished its last one (all streams busy). Open loop: first "
        "measured send to last measured completion."
    )
    output_tokens: int = Field(
        description="Completion tokens produced inside the window (rounded): a read's tokens spread over the gap "
        "since the read before, the first read's at its arrival (schemas/figures.py tokens_between)."
    )
    output_tok_per_s: Measured = Field(description="output_tokens / window_s.")
    requests_ok: int = Field(description="Measured requests that succeeded.")
    requests_failed: int = Field(description="Measured requests that failed.")
    requests_in_window: int = Field(default=0, description="Measured requests that completed inside the window.")
    request_share_in_window: Measured = Field(
        default=0.0,
        description="Measured requests counted by the share of their output tokens produced inside the "
        "window (fractional at its edges), so requests/s = this / window_s agrees with tok/s / tokens per request.",
    )
    whole_run_s: Measured = Field(
        default=0.0,
        description="Whole-run duration: last measured completion - first measured send, s (the denominator "
        "vllm bench serve, GuideLLM and AIPerf use; ramp and drain included).",
    )
    whole_run_output_tokens: int = Field(default=0, description="Completion tokens of every measured request.")
    whole_run_tok_per_s: Measured = Field(default=0.0, description="whole_run_output_tokens / whole_run_s.")
    goodput_per_s: Measured | None = Field(
        default=None,
        description="Requests meeting every SLO, counted as request_share_in_window counts them (by their share of "
        "output tokens inside the window), / window_s (SLOs given; open loop: TTFT and E2E from the intended send).",
    )

    @model_validator(mode="after")
    def _rate_is_tokens_over_window(self) -> RepResult:
        """output_tok_per_s is output_tokens / window_s (bench/stats.py rep_result; output_tokens rounded): a stored
        rep where it is not was edited by hand, and what it would render or price was never measured."""
        if self.window_s > 0 and abs(self.output_tok_per_s * self.window_s - self.output_tokens) > 0.5 + 1e-6:
            raise PydanticCustomError(
                "not_measured",
                "output_tok_per_s {rate} is not output_tokens / window_s ({tokens} / {window} s)",
                {"rate": f"{self.output_tok_per_s:g}", "tokens": self.output_tokens, "window": f"{self.window_s:g}"},
            )
        return self


class TurnResult(ResultModel):
    """Agent workload: one turn index over every session of a cell (all reps)."""

    turn: int = Field(description="Turn index within a session, from 0.")
    requests: int = Field(description="Successful measured requests at this turn.")
    requests_failed: int = Field(default=0, description="Failed measured requests at this turn (not in the figures).")
    prompt_tokens: Dist = Field(default_factory=Dist, description="usage.prompt_tokens, tokens.")
    cached_tokens: Dist = Field(
        default_factory=Dist, description="usage.prompt_tokens_details.cached_tokens, tokens (where reported)."
    )
    cached_share: float | None = Field(
        default=None, description="Sum of cached_tokens / sum of prompt_tokens over requests that report both."
    )
    ttft_ms: Dist = Field(default_factory=Dist, description=f"Time to first token, ms: {TTFT_CONVENTION}.")
    tpot_ms: Dist = Field(default_factory=Dist, description="Time per output token after the first, ms.")
    e2e_ms: Dist = Field(default_factory=Dist, description="Last token chunk - t_send, ms (vllm bench serve's E2EL).")


class ReplicaServed(ResultModel):
    """What one replica behind the router served during a cell: its own /metrics, after - before."""

    index: int = Field(description="Replica number K, from 0.")
    url: str = Field(description="The replica's base URL.")
    answered: bool = Field(default=True, description="Its /metrics answered before and after the cell.")
    requests: float | None = Field(default=None, description="vllm:request_success_total delta.")
    prompt_tokens: float | None = Field(default=None, description="vllm:prompt_tokens_total delta.")
    generation_tokens: float | None = Field(default=None, description="vllm:generation_tokens_total delta.")
    prefix_cache_hits: float | None = Field(default=None, description="vllm:prefix_cache_hits_total delta, tokens.")
    prefix_cache_queries: float | None = Field(
        default=None, description="vllm:prefix_cache_queries_total delta, tokens."
    )
    prefix_cache_hit_rate: float | None = Field(default=None, description="hits / queries over the cell.")


class CellResult(ResultModel):
    """One context x clients cell of a bench grid (or a predicted one): its status, the reps' median figures and
    CV, TTFT, TPOT and ITL distributions, failures, open-loop slip and the server's /metrics deltas."""

    # bench's bounds (BenchConfig): a stored cell outside them was edited, and `report` stopped on an internal error
    context_tokens: int = Field(ge=1, le=MAX_TOKENS, description="Target prompt length, tokens.")
    clients: int = Field(ge=1, le=MAX_CLIENTS, description="Concurrent closed-loop streams.")
    status: Literal["ok", "infeasible", "failed"] = Field(description="ok | infeasible | failed; never dropped.")
    reason: str | None = Field(default=None, description="Why infeasible/failed, or a caveat (beyond the KV wall).")
    reps: list[RepResult] = Field(default_factory=list, description="One entry per finished repetition.")
    output_tok_per_s: Measured | None = Field(
        default=None,
        description="Median over reps of aggregate tok/s in the steady window (every stream busy; RepResult.window_s).",
    )
    cv_output_tok_per_s: Measured | None = Field(default=None, description="stdev/mean of tok/s across reps.")
    per_stream_tok_per_s: Measured | None = Field(
        default=None, description="Median of per-request decode tok/s = 1000 / TPOT ms."
    )
    goodput_per_s: Measured | None = Field(
        default=None,
        description="Median over reps of goodput (requests/s meeting every SLO); None without SLOs.",
    )
    request_rate_per_s: Measured | None = Field(
        default=None,
        description="Median over reps of requests/s in the steady window (request_share_in_window / window_s).",
    )
    whole_run_tok_per_s: Measured | None = Field(
        default=None,
        description="Median over reps of the whole-run output tok/s (all measured output tokens / (last "
        "completion - first send)): the figure vllm bench serve, GuideLLM and AIPerf report.",
    )
    whole_run_request_rate_per_s: Measured | None = Field(
        default=None, description="Median over reps of measured ok requests / whole-run duration."
    )
    ttft_ms: Dist = Field(default_factory=Dist, description=f"Time to first token, ms: {TTFT_CONVENTION}.")
    tpot_ms: Dist = Field(default_factory=Dist, description="(t_last - t_first) / (completion_tokens - 1), ms.")
    itl_ms: Dist = Field(default_factory=Dist, description="Inter-token latency, ms (see itl_convention).")
    itl_chunk_ms: Dist = Field(
        default_factory=Dist,
        description="Inter-chunk latency, ms: one sample per gap between consecutive content chunks, whatever "
        "they carry (vllm bench serve's ITL, vllm/benchmarks/lib/endpoint_request_func.py 0.11.0); equal to "
        "itl_ms when every chunk carries one token.",
    )
    e2e_ms: Dist = Field(default_factory=Dist, description="Last token chunk - t_send, ms (vllm bench serve's E2EL).")
    prompt_tokens_actual: Dist = Field(default_factory=Dist, description="usage.prompt_tokens, tokens.")
    requests_failed: int = Field(default=0, description="Measured requests that failed, all reps.")
    requests_sent: int | None = Field(
        default=None, description="Measured requests sent, all reps: requests_ok + requests_failed, none lost."
    )
    requests_ok: int | None = Field(default=None, description="Measured requests that succeeded, all reps.")
    requests_ended_early: int = Field(
        default=0,
        description="Measured requests with completion_tokens < output_tokens (server stopped early); a count made "
        "by the client (completion_tokens_from) with finish_reason 'length' reached max_tokens (stats.ended_early).",
    )
    requests_over_max_tokens: int = Field(
        default=0,
        description="Measured requests whose server-reported usage.completion_tokens exceeds the max_tokens "
        "sent (the server did not honour it; their tokens are counted as reported).",
    )
    first_error: Said | None = Field(default=None, description="The first failed request's message (redacted).")
    requests_asked_wait: int = Field(
        default=0, description="Measured requests refused with a Retry-After (HTTP 429 or 503), all reps."
    )
    asked_wait_s: float = Field(default=0.0, description="The waits those Retry-After headers asked for, in all, s.")
    waited_s: float = Field(
        default=0.0,
        description="The waits the closed-loop streams kept before their next requests, in all, s (bounded by the "
        "request timeout and the cell's time; an open loop keeps its schedule: 0).",
    )
    slip_ms: Dist = Field(
        default_factory=Dist, description="Open loop: actual send - intended send, ms (queueing in the client)."
    )
    late_share: Measured | None = Field(
        default=None, description="Open loop: share of measured requests sent more than LATE_SEND_MS late."
    )
    schedule_slipped: bool = Field(
        default=False,
        description="Open loop: the schedule slipped (late_share >= SLIPPED_SHARE): the server could not keep "
        "up and latency from the actual send hides the wait; see ttft_from_intended_ms.",
    )
    ttft_from_intended_ms: Dist = Field(
        default_factory=Dist, description="Open loop: first content chunk - intended send, ms (queueing included)."
    )
    e2e_from_intended_ms: Dist = Field(
        default_factory=Dist, description="Open loop: last token chunk - intended send, ms (queueing included)."
    )
    turns: list[TurnResult] = Field(default_factory=list, description="Agent workload: statistics per turn.")
    cached_share: Measured | None = Field(
        default=None,
        description="Agent workload: cached / prompt tokens from usage over the cell (where the server reports).",
    )
    server_metrics_delta: dict[str, float] = Field(
        default_factory=dict, description="Counter deltas and gauge peaks from /metrics over the cell."
    )
    replicas: list[ReplicaServed] = Field(
        default_factory=list, description="Behind a router (`up --replicas N`): what each replica served."
    )

    @model_validator(mode="after")
    def _rate_is_its_reps_median(self) -> CellResult:
        """output_tok_per_s is the median of its reps' (bench/stats.py summarize_cell): a stored cell where it is not
        was edited by hand (1e308 tok/s over reps that measured 120), and its report or price would be made up."""
        rates = [rep.output_tok_per_s for rep in self.reps]
        if rates and self.output_tok_per_s is not None:
            median = statistics.median(rates)
            if not math.isclose(self.output_tok_per_s, median, rel_tol=1e-9, abs_tol=1e-9):
                raise PydanticCustomError(
                    "not_measured",
                    "output_tok_per_s {rate} is not the median of its reps' tok/s ({median})",
                    {"rate": f"{self.output_tok_per_s:g}", "median": f"{median:g}"},
                )
        return self


class BenchServer(ResultModel):
    """The endpoint a bench run measured, as the run found it (for a prediction: what it stands for)."""

    base_url: str | None = Field(default=None, description="OpenAI-compatible base URL; None on a prediction.")
    model: str | None = Field(default=None, description="Served model name (/v1/models), or the plan's model.")
    engine_version: str | None = Field(default=None, description="Engine version /version reported, if any.")
    engine: str | None = Field(default=None, description="Set on predicted runs: 'predicted ENGINE'.")


class BenchClient(ResultModel):
    """The machine that sent the requests."""

    host: str | None = Field(default=None, description="Client hostname.")
    python: str | None = Field(default=None, description="Python version of the client.")
    cpus: int | None = Field(default=None, description="CPU count of the client.")


class BenchRun(StoredResult):
    """A bench run as summary.json stores it: tool and schema versions, the server and client it ran between, the
    config, every cell (measured, or predicted when `prediction` is set) and the notes that qualify them."""

    tool_version: str = Field(description="onechip version.")
    created_at: str = Field(description="ISO-8601 UTC.")
    server: BenchServer = Field(default_factory=BenchServer, description="The endpoint measured.")
    client: BenchClient = Field(default_factory=BenchClient, description="The machine that measured it.")
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
    prediction: Prediction | None = Field(
        default=None, description="Set when `onechip simulate` wrote this run: predicted, not measured."
    )


class SearchProbe(StoredResult):
    """One load the SLO search measured (a one-cell bench run in its own directory)."""

    load: float = Field(description="Clients (closed loop) or requests/s (open loop) of this probe.")
    run_dir: str = Field(description="The probe's bench run directory (requests.jsonl, summary.json).")
    status: Literal["ok", "infeasible", "failed"] = Field(description="The cell's status.")
    reason: str | None = Field(default=None, description="Why infeasible/failed, or a caveat.")
    meets_slo: bool = Field(description="Every SLO metric's percentile within its bound, no failed requests.")
    at_percentile_ms: dict[str, float | None] = Field(
        default_factory=dict,
        description="Each SLO metric at the search's percentile, ms, over the measured requests of every rep together "
        "(open loop: TTFT and E2E from the intended send).",
    )
    attainment: float | None = Field(
        default=None, description="Share of measured requests that met every SLO (failed ones do not)."
    )
    output_tok_per_s: float | None = Field(
        default=None, description="The cell's aggregate output tok/s in the steady window, median over reps."
    )
    goodput_per_s: float | None = Field(
        default=None,
        description="The cell's goodput (requests/s meeting every SLO) in the steady window, median over reps.",
    )
    schedule_slipped: bool = Field(default=False, description="Open loop: the cell's schedule slipped.")
    requests_sent: int = Field(
        default=0,
        ge=0,
        description="Measured requests the probe sent, every rep together (a rate probe: set by its rate, "
        "bench.search.probe_requests, or --duration-s; not by its in-flight cap).",
    )
    requests_failed: int = Field(
        default=0, ge=0, description="Measured requests that failed (each one misses the SLOs, whatever its latency)."
    )
    first_error: Said | None = Field(default=None, description="The first failed request's message (redacted).")
    seeds_meeting: int | None = Field(
        default=None,
        ge=0,
        description="Predicted (simulate --find-max): the seeds whose requests alone meet the SLOs at the percentile, "
        "of the prediction's seeds; all: pass, none: fail, else cannot tell. None when measured.",
    )
    at_percentile_range_ms: dict[str, tuple[float, float] | None] = Field(
        default_factory=dict,
        description="Predicted: each SLO metric at the percentile over one seed's requests, lowest and highest over "
        "the seeds, ms (empty when measured).",
    )


class SearchResult(StoredResult):
    """`bench --find-max`: the largest load whose measured cell met the SLOs, and every probe; `simulate --find-max`:
    the same search over predicted cells (`prediction` set)."""

    kind: Literal["clients", "rate"] = Field(description="What was searched.")
    context_tokens: int = Field(description="Context (agent: shared prefix) of every probe, tokens.")
    workload: Literal["grid", "agent", "trace"] = Field(description="The probes' workload.")
    slo: dict[str, float] = Field(description="SLO bounds, ms.")
    percentile: float = Field(description="The percentile each SLO metric must meet.")
    max_clients: int | None = Field(
        default=None, description="clients search: the most clients (agents) that met the SLOs; 0 = not even 1."
    )
    max_rate_per_s: float | None = Field(
        default=None, description="rate search: the highest requests/s that met the SLOs; 0 = not even the first."
    )
    in_flight_cap: int | None = Field(
        default=None,
        ge=1,
        description="rate search: requests in flight at most in every probe (--clients); None = no cap, every arrival "
        "sent at its time (a clients search: its load is the streams in flight).",
    )
    bound_reason: str = Field(
        description="Why the search stopped where it did (SLO miss, KV wall, limit; 'interrupted after N probes')."
    )
    interrupted: bool = Field(
        default=False,
        description="Stopped (Ctrl-C, SIGTERM, a cancelled MCP call, or an error: the server gone mid-probe; "
        "bound_reason says which) before its answer: the probes so far, and "
        "max_clients / max_rate_per_s the highest load that met the SLOs so far (a lower bound). The same search "
        "into the directory resumes.",
    )
    kv_wall_clients: int | None = Field(
        default=None, description="Clients the plan's KV pool holds at the longest prompt + output (with --plan)."
    )
    output_tok_per_s: float | None = Field(
        default=None, description="Aggregate output tok/s at the answer, in the steady window, median over reps."
    )
    goodput_per_s: float | None = Field(
        default=None,
        description="Goodput at the answer (requests/s meeting every SLO), steady window, median over reps.",
    )
    costs: list[CostLine] = Field(
        default_factory=list,
        description="The answer's tok/s priced on --chip (one line per catalog price); predicted: on the plan's chip, "
        "each chip of prediction.replicas engines (a tensor-parallel engine holds several) at its share of the tok/s.",
    )
    max_load_range: tuple[float, float] | None = Field(
        default=None,
        description="Predicted (simulate --find-max): the answer over the seeds, the highest load every seed (and "
        "all together) met the SLOs at and the highest any seed (or all together) did (clients or requests/s); the "
        "answer lies within it; between them: cannot tell. None when measured.",
    )
    prediction: Prediction | None = Field(
        default=None, description="Set when `onechip simulate --find-max` wrote this search: predicted, not measured."
    )
    probes: list[SearchProbe] = Field(default_factory=list, description="Every probe, in the order measured.")
    cells: list[CellResult] = Field(
        default_factory=list, description="Each probe's measured cell (its summary), in the order measured."
    )
    notes: list[str] = Field(
        default_factory=list,
        description="Caveats of the whole search, as a run's notes: a stored calibration a newer onechip wrote, not "
        "used (sim.store.newer_notes).",
    )


class PolicyCell(ResultModel):
    """One cell of one routing policy's run, as the comparison shows it."""

    context_tokens: int = Field(description="Target prompt length (agent: the shared prefix), tokens.")
    clients: int = Field(description="Concurrent sessions.")
    status: str = Field(description="The cell's status.")
    cached_share: float | None = Field(default=None, description="cached / prompt tokens from usage over the cell.")
    server_hit_rate: float | None = Field(
        default=None, description="Prefix-cache hits / queries summed over the replicas' /metrics."
    )
    output_tok_per_s: float | None = Field(default=None, description="Median over reps of aggregate tok/s.")
    ttft_ms_by_turn: list[float | None] = Field(default_factory=list, description="Median TTFT per turn, ms.")
    requests_by_replica: list[float | None] = Field(
        default_factory=list, description="Requests each replica served (its vllm:request_success_total delta)."
    )
    requests_sent: int | None = Field(default=None, description="Measured requests sent.")
    requests_ok: int | None = Field(default=None, description="Measured requests that succeeded.")


class PolicyRun(ResultModel):
    """One routing policy: where its bench run is, and its cells."""

    policy: str = Field(description="vllm-router --policy.")
    run_dir: str = Field(description="The bench run directory (requests.jsonl, summary.json).")
    cells: list[PolicyCell] = Field(default_factory=list, description="One per cell, grid order.")


class PolicyComparison(StoredResult):
    """`bench --router-policies a,b`: the same workload through the router under each policy in turn."""

    base_url: str = Field(description="The router URL.")
    runs: list[PolicyRun] = Field(default_factory=list, description="One per policy, in the order given.")
    note: str = Field(
        default="each run has its own prefix tag (bench's per-run nonce), so no run reads another's cache; the "
        "replicas are not restarted between runs",
        description="How the runs were kept apart.",
    )
