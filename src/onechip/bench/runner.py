"""The grid runner: context x clients cells, closed-loop streams, repetitions, resumable raw samples.

A cell runs `clients` closed-loop streams (each sends its next request when the last ends): first
unmeasured warm-up requests (`warmup_requests` each, or for `warmup_s` seconds), then measured ones
(`requests_per_client` each, or for `duration_s` seconds). With `rate_per_s` the measured requests arrive
open-loop instead (Poisson or constant), at most `max_in_flight` in flight (0: no cap; a run saved before it: at most
`clients`): a --rate run is vllm bench serve's --request-rate, one stream per context (open_loop). The
streams run in this process or split across `workers` client processes (bench.worker); one /tokenize check per
repetition fixes the prompt.
Raw samples go to `requests.jsonl` as each request ends (append + flush), so Ctrl-C or a crash keeps
every finished request; `summary.json` (a `BenchRun`) is rewritten after each cell. With `resume`,
(cell, rep) groups already complete in requests.jsonl, with no failed request and figures a measurement gives, are
reused; the others are
re-run (their samples move to requests.replaced.jsonl). A resume needs the same config and the same bytes in its
input files (a trace, a workload file: sha256), wherever they now are.

Workloads (`workload`): the grid above; `agent`: each stream runs sessions (bench.agent) whose shared system
prompt is the cell's context, turns growing it, per-turn statistics and cached tokens in the summary; `trace`:
a recorded trace replayed open loop (bench.trace), one cell per clients value named by its median prompt.
Open-loop requests carry their intended send time; the summary reports the slip and marks a cell whose
schedule slipped (bench.stats.schedule_slip).

A cell is `infeasible` when a plan says clients x (context + output) exceeds the KV pool, and `failed` when
most of a repetition's measured requests fail, or its streams stopped (bench.worker.FAILS_TO_STOP of its requests
failed in a row, over all its workers); it is never dropped. A refusal's Retry-After is waited by its closed-loop stream
(bench.worker.asked_wait_s), one asked at a stream's last request before the next repetition starts (_Run.carried_wait),
and the cell says how many asked and how long (CellResult.requests_asked_wait, asked_wait_s, waited_s).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import os
import platform
import random
import socket
import statistics
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import IO

from pydantic import ValidationError

from onechip import __version__
from onechip.aio import run_to_end
from onechip.bench import agent, stats, trace
from onechip.bench.client import DRAIN_S, TIMED_OUT, data_session, stream_chat
from onechip.bench.metrics import MetricsSampler, reduce_metrics, replica_served, scrape, scrape_url
from onechip.bench.prompts import PromptBuilder
from onechip.bench.worker import FAILS_TO_STOP, WorkerPool, asked_wait_s, first_line, run_job, split_streams
from onechip.engines import router
from onechip.errors import BusyError, ConfigError, EndpointError, Interrupted, OnechipError
from onechip.paths import exclusive, kind_of, read_regular, write_text_atomic
from onechip.planner.fit import blocks_for
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.bench import (
    BenchClient,
    BenchConfig,
    BenchRun,
    BenchServer,
    CellResult,
    RepJob,
    RequestSample,
    StreamOutcome,
    ms_text,
)
from onechip.schemas.common import first_problem, plural, stored_by_newer, written_by_newer
from onechip.schemas.inputs import flag_of
from onechip.schemas.plan import Plan
from onechip.schemas.run import RUN_FILES, SEARCH_FILE
from onechip.vllm.wire import (
    CONNECT_TIMEOUT_S,
    GATEWAY_STATUSES,
    WireClient,
    api_key_from_env,
    bench_chat_body,
    gateway_retried,
)

# Where a resume keeps the samples of the repetitions it measures again (unfinished, or with failures).
REPLACED_FILE = "requests.replaced.jsonl"
# Config fields that say what is measured; a resumed run must agree on them.
_RESUME_KEYS = (
    "base_url",
    "contexts",
    "clients",
    "reps",
    "model",
    "output_tokens",
    "requests_per_client",
    "duration_s",
    "warmup_requests",
    "warmup_s",
    "prefix_reuse",
    "rate_per_s",
    "max_in_flight",
    "arrivals",
    "seed",
    "workload",
    "turns",
    "user_tokens",
    "call_tokens",
    "result_tokens",
    "think_time_s",
    "sessions_per_client",
    "trace_speed",
    "bench_plan",
)
# Config fields naming a file the workload is read from. A resume compares the file's bytes (BenchConfig.input_sha256),
# not its path: a trace edited in place is another workload, whose samples must not join the first run's; the same
# bytes moved elsewhere are the same workload.
INPUT_FILES = ("trace_file", "workload_file")
# The run's note when a resumed run's summary.json (written before input_sha256 existed) has no digest of a file: its
# content could not be checked, and every later resume keeps the note (the digest saved then covers only what follows).
_UNCHECKED = "not checked on resume: "


# What the user typed for a resume key onechip sets itself (Cli hidden: no flag of its own)
_RESUME_WORDS = {
    "bench_plan": "--plan",
    "max_in_flight": "--clients (the requests in flight at most)",  # open_loop sets it from --rate's --clients
    "seed": "the arrival times' seed",
}


def _resume_value(value: object) -> str:
    """A resume key's value as the user typed it: a list comma-separated ('128,1024', as --contexts takes it), an
    object as key=value pairs (--slo), a switch on or off, None an option not given ('model was None' read as a model
    named None), a plan its model, chip and KV pool (not its whole repr), anything else as written."""
    if isinstance(value, Plan):
        return f"the plan of {value.model} on {value.chip} ({value.num_blocks:,} KV blocks)"
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, dict):  # --slo's key=value pairs
        return ",".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, bool):
        return "on" if value else "off"
    return "not given" if value is None else str(value)


def config_difference(old: BenchConfig, new: BenchConfig, also: tuple[str, ...] = ()) -> str | None:
    """'--flag was X, now Y' for the first field of _RESUME_KEYS, then of `also`, on which `old` (a saved run's config)
    and `new` differ, named as the user typed it (schemas.inputs.flag_of: '--clients', bench's argument URL; a field
    onechip sets, by _RESUME_WORDS); None when they agree on all."""
    for key in (*_RESUME_KEYS, *also):
        if _compared(getattr(old, key)) != _compared(getattr(new, key)):
            was, now = (_resume_value(getattr(c, key)) for c in (old, new))
            name = _RESUME_WORDS.get(key) or flag_of(BenchConfig, key)
            return f"{name} was {was}, now {now}" + (" (another plan)" if was == now else "")
    return None


def _compared(value: object) -> object:
    """A resume key's value as a resume compares it: a plan less where its values came from (Plan.without_provenance:
    `--tensor-parallel-size 1` typed or left at its default plan one engine), anything else as it is."""
    return value.without_provenance() if isinstance(value, Plan) else value


def input_digests(config: BenchConfig) -> dict[str, str]:
    """sha256 (hex) of the bytes of each file `config` reads its workload from (INPUT_FILES), by field; a field not
    given is left out. Raises ConfigError naming the flag and file when it cannot be read."""
    out = {}
    for field in INPUT_FILES:
        path = getattr(config, field)
        if path is None:
            continue
        try:
            out[field] = hashlib.sha256(read_regular(Path(path))).hexdigest()
        except OSError as exc:
            raise ConfigError(f"{flag_of(BenchConfig, field)} {path}: {exc.strerror or exc}") from None
    return out


RepKey = tuple[int, int, int]  # (context_tokens, clients, rep)
_STALLED = (  # the run's note when answers stalled after their finish_reason (bench.client, StreamOutcome.stalled)
    "server sent the finish_reason with usage, then no final usage chunk or [DONE] (requests.jsonl: stalled): "
    f"those answers are whole at that chunk and timed to it, each stream waiting {DRAIN_S * 1000:.0f} ms for more "
    "before its next request"
)
_COUNTED = {  # the run's note when the server sends no usage (bench.client counts the output itself)
    "tokenize": "server sent no usage: output tokens are its /tokenize count of the generated text "
    "(as vllm bench serve counts them)",
    "chunks": "server sent no usage and has no /tokenize: output tokens are counted as one per content chunk "
    "(fewer than generated when a chunk carries several)",
}


# What the probe request asks, (vLLM's min_tokens + ignore_eos, continuous usage, stream_options at all), tried in
# order until the server takes one (REFUSED_BODY): vLLM takes the first; an OpenAI-compatible server without
# vLLM's extras the third; one that predates stream_options (or a proxy checking an older OpenAI schema) the last two,
# its output then counted as a server's that sends no usage (bench.client)
PROBE_LADDER = (
    (True, True, True),
    (False, True, True),
    (False, False, True),
    (True, False, False),
    (False, False, False),
)
# The statuses of a body refused (the next rung of PROBE_LADDER is tried), not of the endpoint: 400, as vLLM answers
# an unknown or invalid field, and 422, FastAPI's answer to a body its request model refuses (RequestValidationError)
REFUSED_BODY = (400, 422)
PROBE_ATTEMPTS = 3  # a probe failing transiently (_transient) is sent again, this many times in all (a gateway error:
# for GATEWAY_WAIT_S, _try_again)...
# ...after 0.2 s, then 0.4 s, 0.2 s more each (or a refusal's Retry-After): a server's hiccup must not end the run
PROBE_BACKOFF_S = 0.2
# How long the bench's own requests (the probe's /v1/models and chat, a prompt fit's /tokenize) answered by a gateway
# error (vllm.wire.GATEWAY_STATUSES) are asked again: as long as a router keeps a dead replica in rotation, its health
# checks' interval times the failures that drop it (engines.router: 5 s x 3 = 15 s, as measured there)
GATEWAY_WAIT_S = float(router.HEALTH_CHECK_INTERVAL_S * router.HEALTH_FAILURE_THRESHOLD)


def _transient(out: StreamOutcome) -> bool:
    """A failure worth one more try: HTTP 429 or 5xx, or a 200 whose stream broke (cut, an error event); not a
    refusal (4xx), no answer at all (nothing listening), nor a timeout (it would cost the timeout again)."""
    status = out.http_status
    if out.error is None or status is None or out.error.startswith(TIMED_OUT):
        return False
    return status == 429 or status >= 500 or status == 200


def _try_again(out: StreamOutcome, attempt: int, waited_s: float) -> bool:
    """Whether a probe failing transiently (_transient) after `attempt` tries and `waited_s` seconds of waits is sent
    again: a gateway error (GATEWAY_STATUSES: a router's to a replica just killed) while GATEWAY_WAIT_S is not spent,
    any other until PROBE_ATTEMPTS tries."""
    if out.http_status in GATEWAY_STATUSES:
        return waited_s < GATEWAY_WAIT_S
    return attempt < PROBE_ATTEMPTS


def this_client() -> BenchClient:
    """The machine measuring (or predicting): hostname, Python version, CPU count."""
    return BenchClient(host=socket.gethostname(), python=platform.python_version(), cpus=os.cpu_count())


def kv_wall(plan: Plan, context_tokens: int, clients: int, output_tokens: int) -> str | None:
    """The arithmetic when one request's context + output exceeds the plan's max_model_len (the server
    answers 400), or `clients` such requests need more KV blocks than the plan's pool holds (the planner's
    blocks per request: block rounding, and sliding windows where the engine windows them); else None. A plan of
    one of N replicas (`plan --replicas N`, benched through its router) holds ceil(clients / N) of them per replica:
    clients spread evenly, as round_robin spreads them (a policy that gathers them can meet the wall sooner). An
    attention-free model's plan (Plan.state_slots: Mamba) holds that many sequences of any length, not KV blocks."""
    tokens = context_tokens + output_tokens
    if tokens > plan.max_model_len:
        return (
            f"{context_tokens:,} context + {output_tokens:,} output = {tokens:,} tokens "
            f"> max_model_len {plan.max_model_len:,} (plan)"
        )
    held = -(-clients // plan.replicas)
    spread = plural(clients, "client") + (f" over {plan.replicas} replicas: {held}" if plan.replicas > 1 else "")
    if plan.state_slots is not None:
        if held <= plan.state_slots:
            return None
        return f"{spread} > {plan.state_slots:,} sequences the recurrent state cache holds, of any length (plan)"
    per_request = blocks_for(plan, tokens)
    if held * per_request <= plan.num_blocks:
        return None
    return (
        f"{spread} x {per_request:,} blocks ({context_tokens:,} context + {output_tokens:,} output, "
        f"blocks of {plan.block_size}) = {held * per_request:,} blocks > KV pool {plan.num_blocks:,} blocks (plan)"
    )


def _trace(config: BenchConfig) -> list[trace.TraceItem]:
    """The requests of `config`'s trace, checked to be the bytes the run started with (input_sha256)."""
    assert config.trace_file is not None
    return trace.load_trace(config.trace_file, config.input_sha256.get("trace_file"))


def longest_prompt(config: BenchConfig, context_tokens: int) -> int:
    """A request's largest prompt, tokens (~): the context itself; for the agent workload the system prompt
    plus every turn's user text and all but the last turn's call and result (the last turn's prompt); for a
    trace its longest prompt."""
    if config.workload == "trace" and config.trace_file is not None:
        return max(i.input_tokens for i in _trace(config))
    if config.workload != "agent":
        return context_tokens
    per_turn = config.call_tokens + config.result_tokens
    return context_tokens + config.turns * config.user_tokens + (config.turns - 1) * per_turn


def server_len_wall(
    max_model_len: int | None, context_tokens: int, output_tokens: int, what: str = "context"
) -> str | None:
    """The arithmetic when one request's prompt (`context_tokens`, named `what`) + output exceeds the server's own
    max_model_len (from /v1/models; vLLM answers 400 to such a request); None when it fits or the server does not
    say."""
    tokens = context_tokens + output_tokens
    if max_model_len is None or tokens <= max_model_len:
        return None
    return (
        f"{context_tokens:,} {what} + {output_tokens:,} output = {tokens:,} tokens "
        f"> max_model_len {max_model_len:,} (server /v1/models)"
    )


def arrival_offsets(
    n: int | None, rate_per_s: float, arrivals: str, seed: str, duration_s: float | None = None
) -> list[float]:
    """Send times (s from the start) of open-loop requests: the first `n`, or all before `duration_s`.
    k / rate for "constant"; cumulative exponential gaps of mean 1 / rate for "poisson" (a Poisson
    process), reproducible from `seed`."""
    rng = random.Random(seed)
    out: list[float] = []
    at = 0.0
    while (n is None or len(out) < n) and (duration_s is None or at < duration_s):
        out.append(at)
        at = len(out) / rate_per_s if arrivals == "constant" else at + rng.expovariate(rate_per_s)
    return out


def open_loop(config: BenchConfig) -> BenchConfig:
    """A --rate run as vllm bench serve's --request-rate / --num-prompts / --max-concurrency: one cell per context, one
    stream numbering its requests (one warm-up), in flight at most the one --clients value given (else 0, no cap: the
    default --clients 1,4 is the closed-loop grid's), and its measured requests per rep --requests-per-client when
    given, arrivals over --duration-s, else probe_requests(rate) (~10 s of arrivals): BenchConfig.rate_requests, the
    count its bound checked. `config` as it is when closed loop, a --find-max search, or already open loop
    (max_in_flight set: a search's probe, a resumed run). What the user gave is `config`'s fields set (`simulate`
    builds its config from its request's given fields too). Raises ConfigError for several --clients values."""
    if config.rate_per_s is None or config.find_max is not None or config.max_in_flight is not None:
        return config
    given = config.model_fields_set
    if "clients" in given and len(config.clients) > 1:
        raise ConfigError("--rate: give one --clients value (the requests in flight at most; leave it out for no cap)")
    update: dict[str, object] = {"clients": [1], "max_in_flight": config.clients[0] if "clients" in given else 0}
    if config.duration_s is None:
        update["requests_per_client"] = config.rate_requests(config.rate_per_s)
    return config.model_copy(update=update)


def saved_config(out_dir: Path) -> BenchConfig | None:
    """The config of the run saved in `out_dir` (its summary.json), None when there is none yet.

    Raises ConfigError when summary.json is there but cannot be read: a folder, a broken or looping symlink."""
    saved = _resumed_run(out_dir)
    return None if saved is None else saved.config


def _resumed_run(out_dir: Path) -> BenchRun | None:
    """The run saved in `out_dir` (its summary.json, read once), None when there is none yet. Raises ConfigError as
    saved_config does."""
    path = Path(out_dir) / RUN_FILES["bench"]
    if not os.path.lexists(path):
        return None
    if (newer := stored_by_newer(path)) is not None:  # said as every stored file's reader says it, kept as it is
        raise ConfigError(
            f"cannot resume {out_dir}: {path.name} {written_by_newer(newer)}; upgrade onechip to resume it"
        )
    try:
        return BenchRun.model_validate_json(path.read_text())
    except ValidationError as exc:  # the field and why (a newer schema_version, a NaN tok/s), not pydantic's count
        said = first_problem(exc, more=False)
        raise ConfigError(f"cannot resume {out_dir}: {path.name} is unreadable ({said})") from None
    except (OSError, ValueError) as exc:
        first = str(exc).splitlines()[0]
        raise ConfigError(f"cannot resume {out_dir}: {path.name} is unreadable ({first})") from None


def saved_run(out_dir: Path) -> BenchRun | None:
    """The BenchRun saved in `out_dir`/summary.json, None when there is none or it cannot be read."""
    path = Path(out_dir) / RUN_FILES["bench"]
    try:
        return BenchRun.model_validate_json(path.read_text()) if path.is_file() else None
    except (OSError, ValueError):
        return None


def read_samples(path: Path) -> tuple[list[RequestSample], list[bytes], bool]:
    """(every RequestSample line of a requests.jsonl, the lines that are none as they are on disk: not JSON, not
    UTF-8, not a sample, and whether the last of them is the file's last line: a crash mid-write tears that one)."""
    out: list[RequestSample] = []
    unread: list[bytes] = []
    if not path.exists():
        return out, unread, False
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    for line in lines:
        try:
            out.append(RequestSample.model_validate_json(line))
        except ValueError:
            unread.append(line)
    return out, unread, bool(unread) and unread[-1] is lines[-1]


def load_samples(path: Path) -> list[RequestSample]:
    """Every RequestSample line of a requests.jsonl; a torn last line (crash mid-write) is skipped."""
    return read_samples(path)[0]


def rep_arrivals(config: BenchConfig, ctx: int, clients: int, rep: int) -> list[float] | None:
    """Open loop: the send offsets (s after warm-up) of one repetition's measured requests, reproducible from
    the config's seed (or the trace's times); request k goes to stream k % clients. None for a closed loop."""
    if config.workload == "trace" and config.trace_file is not None:
        return trace.offsets_s(_trace(config), config.trace_speed)
    if config.rate_per_s is None:
        return None
    return arrival_offsets(
        None if config.duration_s else clients * config.requests_per_client,
        config.rate_per_s,
        config.arrivals or "poisson",
        f"{config.seed}-{ctx}-{clients}-{rep}",
        config.duration_s,
    )


def _complete_groups(samples: list[RequestSample], config: BenchConfig) -> dict[RepKey, list[RequestSample]]:
    """(cell, rep) groups that hold all their measured requests, none of them failed: the known number (a
    count, or the open-loop schedule), or, for a timed closed loop, every stream's `last_in_stream` request.
    A repetition with a failed request (the server died, or was stopped, mid-run) is measured again."""
    groups: dict[RepKey, list[RequestSample]] = defaultdict(list)
    for s in samples:
        groups[(s.context_tokens, s.clients, s.rep)].append(s)
    done = {}
    for (ctx, cl, rep), group in groups.items():
        arrivals = rep_arrivals(config, ctx, cl, rep)
        measured = {(s.stream, s.seq) for s in group if not s.warmup}
        if config.workload == "agent":
            complete = len(measured) == cl * config.sessions_per_client * config.turns
        elif arrivals is not None:
            complete = len(measured) == len(arrivals)
        elif config.duration_s is not None:
            complete = len({s.stream for s in group if s.last_in_stream}) == cl
        else:
            complete = len(measured) == cl * config.requests_per_client
        if complete and not any(s.status == "failed" for s in group if not s.warmup) and _summarized(config, group):
            done[(ctx, cl, rep)] = group
    return done


def _summarized(config: BenchConfig, group: list[RequestSample]) -> bool:
    """Whether one stored repetition summarises into figures a measurement gives (finite, rates not negative,
    stats.summarize_cell); a line edited by hand (a t_done of 1e308) or written by another program does not, and its
    repetition is measured again instead of the resume stopping on it."""
    first = group[0]
    cell = CellResult(context_tokens=first.context_tokens, clients=first.clients, status="ok")
    open_loop = config.rate_per_s is not None or bool(config.trace_file)
    try:
        stats.summarize_cell(cell, {first.rep: group}, config.output_tokens, config.slo or None, open_loop=open_loop)
    except (ValueError, ArithmeticError):  # pydantic's ValidationError is a ValueError; round(inf) an OverflowError
        return False
    return True


class _Run:
    """State of one run_grid call inside its event loop."""

    def __init__(
        self,
        config: BenchConfig,
        out_dir: Path,
        plan: Plan | None,
        on_progress: ProgressFn,
        saved: BenchRun | None = None,
    ):
        self.config, self.out_dir, self.plan, self.on_progress = config, out_dir, plan, on_progress
        self.requests_path = out_dir / RUN_FILES["requests"]
        self.summary_path = out_dir / RUN_FILES["bench"]
        self.extras = True
        self.continuous_usage = True
        self.include_usage = True
        self.nonce = uuid.uuid4().hex[:8]
        self.asked_until = 0.0  # perf_counter s before which the server asked for nothing more (carried_wait)
        self.run: BenchRun | None = None
        self.saved = saved  # the run being resumed, as its summary.json last saved it (read once: run_grid)
        self.pool = WorkerPool(config.workers)
        self.server_max_len: int | None = None  # the served model's max_model_len from /v1/models
        self.unchecked: list[str] = []  # notes of input files a resume could not check (_check_inputs)

    def probe(self, wire: WireClient) -> tuple[str, str | None]:
        """Fail fast: (model, engine_version) from /v1/models and /version; raises EndpointError (the server
        is unreachable, answers malformed data, lists no model or not the configured one, or answers a gateway error for
        GATEWAY_WAIT_S: a router's to a replica just killed is asked again)."""
        timeout_s = min(CONNECT_TIMEOUT_S, self.config.request_timeout_s)
        entry = gateway_retried(lambda: wire.served_model(self.config.model, timeout_s), GATEWAY_WAIT_S, wire.sleep)
        model, self.server_max_len = entry.id, entry.max_model_len
        try:
            version = wire.version()
        except EndpointError:  # the version is informational: a server without a usable /version still runs
            version = None
        return model, version

    async def probe_extras(self, model: str, notes: list[str]) -> None:
        """One tiny request with vLLM's extras; drop those the server rejects (REFUSED_BODY; say so in `notes`),
        down PROBE_LADDER: without any stream_options the output is counted as a usage-less server's is."""
        base = self.config.base_url
        for extras, continuous, usage in PROBE_LADDER:
            body = bench_chat_body(model, "Hi", 2, extras=extras, continuous_usage=continuous, include_usage=usage)
            async with data_session(base, 1, self.config.request_timeout_s) as http:
                attempt, waited_s = 0, 0.0
                while True:
                    out = await stream_chat(http, base, body)
                    attempt += 1
                    if not _transient(out) or not _try_again(out, attempt, waited_s):
                        break
                    # at least what a refusal's Retry-After asked (as a stream waits it: worker.asked_wait_s)
                    asked_s = asked_wait_s(out, self.config.request_timeout_s)
                    wait_s = max(PROBE_BACKOFF_S * attempt, asked_s)
                    await asyncio.sleep(wait_s)
                    waited_s += wait_s
            if out.error is None:
                self.extras, self.continuous_usage, self.include_usage = extras, continuous, usage
                if not extras:
                    notes.append(
                        "server rejected min_tokens/ignore_eos: output length is max_tokens only; "
                        "requests may end early"
                    )
                if not usage:
                    notes.append(
                        "server rejected stream_options: usage was not asked for; ITL is split per chunk, not per token"
                    )
                elif not continuous:
                    notes.append("server rejected continuous_usage_stats: ITL is split per chunk, not per token")
                elif not out.chunk_tokens:
                    notes.append("server sent no per-chunk usage: ITL is split per chunk, not per token")
                if out.completion_tokens_from != "usage":
                    notes.append(_COUNTED[out.completion_tokens_from])
                return
            if out.http_status not in REFUSED_BODY:
                raise EndpointError(f"probe request to {self.config.base_url} failed: {out.error}")
        raise EndpointError(f"probe request to {self.config.base_url} failed: {out.error}")

    async def rep_jobs(self, model: str, builder: PromptBuilder, ctx: int, clients: int, rep: int) -> list[RepJob]:
        """One repetition of a cell as one RepJob per worker (streams round-robin, each its open-loop share)."""
        cfg = self.config
        agent_run = cfg.workload == "agent"
        tag = None if cfg.prefix_reuse and not agent_run else f"Request {self.nonce}-{ctx}-{clients}-{rep}"
        system_words = 0
        if tag is not None and agent_run:  # ctx: the shared system prompt, tools included; warm-ups user_tokens
            system_words, counted = await asyncio.to_thread(builder.fit, agent.system_head(tag), ctx, "system")
            filler_words = cfg.user_tokens
        else:  # every first line of the rep has the same token count (worker.first_line): check one of them
            filler_words, counted = await asyncio.to_thread(builder.fit, first_line(tag, 0, 0), ctx)
        offsets = rep_arrivals(cfg, ctx, clients, rep)
        arrivals = None if offsets is None else [(at, k % clients) for k, at in enumerate(offsets)]
        shapes = await self.trace_shapes(builder, tag) if cfg.workload == "trace" else None
        return [
            RepJob.of(
                cfg,
                model=model,
                context_tokens=ctx,
                clients=clients,
                rep=rep,
                streams=streams,
                prompt_tag=tag,
                filler_words=filler_words,
                prompt_tokens_target=counted,
                extras=self.extras,
                continuous_usage=self.continuous_usage,
                include_usage=self.include_usage,
                arrivals_s=None if arrivals is None else [a for a in arrivals if a[1] in streams],
                system_words=system_words,
                request_shapes=None
                if shapes is None or arrivals is None
                else [x for a, x in zip(arrivals, shapes, strict=True) if a[1] in streams],
            )
            for streams in split_streams(clients, cfg.workers)
        ]

    async def trace_shapes(self, builder: PromptBuilder, tag: str | None) -> list[tuple[int, int, int]]:
        """Trace replay: (filler words, output tokens, counted tokens) per trace entry; one fit per distinct
        prompt length (the builder caches it), checked on the rep's first line as the grid does."""
        assert self.config.trace_file is not None
        out = []
        for item in _trace(self.config):
            k, counted = await asyncio.to_thread(builder.fit, first_line(tag, 0, 0), item.input_tokens)
            out.append((k, item.output_tokens, counted))
        return out

    async def run_rep(
        self, model: str, builder: PromptBuilder, ctx: int, clients: int, rep: int, sink: IO[str], label: str
    ) -> list[RequestSample]:
        """Run one repetition of a cell (here or on the worker pool); every sample goes to `sink` as it ends."""
        cfg = self.config
        jobs = await self.rep_jobs(model, builder, ctx, clients, rep)
        samples: list[RequestSample] = []
        t0 = time.perf_counter()
        tokens_done = 0
        if cfg.duration_s is not None:  # seconds (the warm-up part is a guess with warmup_requests)
            total = (cfg.warmup_s or 0.0) + cfg.duration_s
        elif cfg.workload == "agent":
            total = clients * (cfg.warmup_requests + cfg.sessions_per_client * cfg.turns)
        elif jobs[0].arrivals_s is not None:  # trace replay
            total = clients * cfg.warmup_requests + sum(len(j.arrivals_s or []) for j in jobs)
        else:  # requests
            total = clients * (cfg.warmup_requests + cfg.requests_per_client)

        def emit(s: RequestSample) -> None:
            nonlocal tokens_done
            try:
                sink.write(s.model_dump_json() + "\n")
                sink.flush()
            except OSError as exc:  # a full disk's write names no file; the error line must (errors.os_error_line)
                exc.filename = exc.filename or getattr(sink, "name", None)
                raise
            samples.append(s)
            tokens_done += s.completion_tokens or 0
            elapsed = time.perf_counter() - t0
            done = elapsed if cfg.duration_s is not None else len(samples)
            eta_s = max(0.0, elapsed * (total - done) / done) if done else 0.0
            self.on_progress(
                ProgressEvent(
                    "bench",
                    f"{label}: {plural(len(samples), 'request')}, {tokens_done / elapsed:,.0f} tok/s, "
                    f"ETA {eta_s:,.0f} s",
                    done=done,
                    total=total,
                )
            )

        if cfg.workers == 1:
            await run_job(jobs[0], emit)
        else:
            await self.pool.run(jobs, emit)
        return samples

    def asked_after(self, samples: list[RequestSample]) -> list[float]:
        """When (perf_counter s) the waits asked at a stream's last request end: its rep sends nothing after it, so
        the wait (worker.asked_wait_s, RFC 9110 section 10.2.3) is carried to the next rep's first requests. Samples
        share one clock across worker processes (CLOCK_MONOTONIC: bench.worker)."""
        timeout_s = self.config.request_timeout_s
        return [
            (s.t_done or s.t_send) + asked_wait_s(s, timeout_s)
            for s in samples
            if s.last_in_stream and s.retry_after_s is not None
        ]

    async def carried_wait(self, label: str) -> None:
        """Wait out what the server asked at the last rep's last requests (asked_until), before `label`'s rep."""
        wait_s = self.asked_until - time.perf_counter()
        if wait_s > 0:
            self.on_progress(ProgressEvent("bench", f"{label}: waiting {wait_s:.1f} s the server asked (Retry-After)"))
            await asyncio.sleep(wait_s)

    async def run_cell(
        self,
        wire: WireClient,
        model: str,
        builder: PromptBuilder,
        ctx: int,
        clients: int,
        done: dict[RepKey, list[RequestSample]],
        sink: IO[str],
    ) -> CellResult:
        cfg = self.config
        cell = CellResult(context_tokens=ctx, clients=clients, status="ok")
        if cfg.workload == "agent":  # every session grows to its last turn's prompt: each would be answered 400
            last = f"prompt at a session's last turn ({ctx:,} shared prefix + {cfg.turns} turns, ~)"
            over = server_len_wall(self.server_max_len, longest_prompt(cfg, ctx), cfg.output_tokens, last)
        else:
            over = server_len_wall(self.server_max_len, ctx, cfg.output_tokens)
        if over:  # the server would answer 400 to every request (agent: every session's last): say so before sending
            return cell.model_copy(update={"status": "infeasible", "reason": over})
        if self.plan is not None:  # an open loop capped apart from its streams (max_in_flight) holds its cap at most
            held = (cfg.max_in_flight or clients) if cfg.rate_per_s is not None else clients
            wall = kv_wall(self.plan, longest_prompt(cfg, ctx), held, cfg.output_tokens)
            if wall and not cfg.force:
                return cell.model_copy(update={"status": "infeasible", "reason": wall})
            if wall:
                cell.reason = f"beyond the KV wall (--force): {wall}"
        by_rep: dict[int, list[RequestSample]] = {}
        before = await asyncio.to_thread(scrape, wire)
        replicas_before = [await asyncio.to_thread(scrape_url, url) for url in cfg.replica_urls]
        sampler = MetricsSampler(wire, cfg.metrics_interval_s)
        sampler.start()
        try:
            for rep in range(cfg.reps):
                label = f"{cfg.cell_text(ctx, clients)}, rep {rep + 1}/{cfg.reps}"
                if (ctx, clients, rep) in done:
                    by_rep[rep] = done[(ctx, clients, rep)]
                    self.on_progress(ProgressEvent("bench", f"{label}: resumed from requests.jsonl"))
                else:
                    await self.carried_wait(label)
                    self.on_progress(ProgressEvent("bench", f"{label}: starting"))
                    by_rep[rep] = await self.run_rep(model, builder, ctx, clients, rep, sink, label)
                    self.asked_until = max([self.asked_until, *self.asked_after(by_rep[rep])])
                    # what usage counted beyond the prompt fitted (prompt_tokens_target); not for agent sessions:
                    # their usage counts the history too, never the fitted system prompt alone (read as the template's,
                    # it shrank the next rep's shared prefix by the history's length)
                    off = [
                        s.prompt_tokens - s.prompt_tokens_target
                        for s in by_rep[rep]
                        if s.prompt_tokens is not None and s.prompt_tokens_target is not None
                    ]
                    if off and cfg.workload != "agent":
                        builder.calibrate(statistics.median(off))
                measured = [s for s in by_rep[rep] if not s.warmup]
                failed = [s for s in measured if s.status == "failed"]
                # streams that stopped (worker.FAILS_TO_STOP) cut the rep short: its figures are no measurement
                stopped = any(s.stopped_streams for s in by_rep[rep])
                if len(failed) * 2 > len(measured) or stopped:
                    first = (failed or [s for s in by_rep[rep] if s.status == "failed"])[0].error  # else a warm-up's
                    cell.status = "failed"
                    cell.reason = (
                        f"rep {rep + 1}/{cfg.reps}: {len(failed)} of {len(measured)} measured requests failed"
                        + (f" (the streams stopped after {FAILS_TO_STOP} requests failed in a row)" if stopped else "")
                        + f"; first: {first}"
                    )
                    break
        finally:
            sampler.stop()
        after = await asyncio.to_thread(scrape, wire)
        cell = stats.summarize_cell(
            cell,
            by_rep,
            cfg.output_tokens,
            cfg.slo or None,
            open_loop=cfg.rate_per_s is not None or bool(cfg.trace_file),
        )
        if before is not None and after is not None:
            cell.server_metrics_delta = reduce_metrics(before, after, sampler.samples)
        for k, url in enumerate(cfg.replica_urls):
            cell.replicas.append(replica_served(k, url, replicas_before[k], await asyncio.to_thread(scrape_url, url)))
        assert self.run is not None
        if any(s.stalled for rep in by_rep.values() for s in rep if not s.warmup) and _STALLED not in self.run.notes:
            self.run.notes.append(_STALLED)
        for how in sorted({s.completion_tokens_from for s in measured if s.status == "ok"} - {"usage"}):
            if _COUNTED[how] not in self.run.notes:  # the probe had usage, these requests none: say so all the same
                self.run.notes.append(_COUNTED[how])
        return self._resumed_metrics(cell, reused=sum(1 for r in range(cfg.reps) if (ctx, clients, r) in done))

    def _resumed_metrics(self, cell: CellResult, reused: int) -> CellResult:
        """A cell whose repetitions all came from requests.jsonl keeps the /metrics deltas its summary saved
        (this run sent nothing, so its own deltas are zero); a partly reused one says its deltas are partial."""
        if not reused:
            return cell
        old = next(
            (
                c
                for c in (self.saved.cells if self.saved else [])
                if (c.context_tokens, c.clients) == (cell.context_tokens, cell.clients)
            ),
            None,
        )
        if reused == self.config.reps:
            return cell.model_copy(update={"server_metrics_delta": old.server_metrics_delta if old else {}})
        note = f"/metrics deltas cover only the repetitions run after the resume ({reused} reused)"
        cell.reason = f"{cell.reason}; {note}" if cell.reason else note
        return cell

    def _check_resume(self, resume: bool) -> tuple[dict[RepKey, list[RequestSample]], list[RequestSample], list[bytes]]:
        """(the repetitions a resume reuses, every saved sample, the lines that are none); refuses a config that
        differs. Nothing is changed on disk yet (see _keep_resumed, after the server answered). Lines before the last
        that are no sample (a torn last line is a crash mid-write) are said in one progress line."""
        cfg = self.config
        if not resume:
            if self.requests_path.exists() and self.requests_path.stat().st_size > 0:
                raise ConfigError(f"{self.requests_path} already holds samples; resume it or choose another --out")
            return {}, [], []
        old = self.saved.config if self.saved is not None else None
        if self.saved is not None and self.saved.prediction is not None:  # its base_url is http://predicted...
            raise ConfigError(
                f"cannot resume {self.out_dir}: it is a predicted run (onechip simulate), not a bench run"
            )
        if old is not None:
            if old.rate_per_s is not None and old.max_in_flight is None and old.find_max is None:
                raise ConfigError(
                    f"cannot resume {self.out_dir}: it was measured before --rate was open loop (clients x "
                    "requests_per_client requests per cell, at most --clients in flight); start a new --out"
                )
            if differs := config_difference(old, cfg):
                raise ConfigError(f"cannot resume {self.out_dir}: {differs}")
            self._check_inputs(old)
        samples, unread, torn = read_samples(self.requests_path)
        inside = len(unread) - torn
        if inside:
            self.on_progress(
                ProgressEvent(
                    "bench",
                    f"resume: {inside} line{'s' * (inside > 1)} of {self.requests_path} before its last "
                    f"{'are' if inside > 1 else 'is'} no request sample (edited, or another program's?): skipped, "
                    f"kept in {REPLACED_FILE}",
                )
            )
        return _complete_groups(samples, cfg), samples, unread

    def _check_inputs(self, old: BenchConfig) -> None:
        """Refuse a resume whose input files (INPUT_FILES) are not the bytes the run started with, at whatever path;
        a summary.json that saved no digest of one (an older onechip) is resumed with a note saying so."""
        for field in INPUT_FILES:
            was, now = getattr(old, field), getattr(self.config, field)
            flag = flag_of(BenchConfig, field)
            if was is None and now is None:
                continue
            if was is None or now is None:
                said = f"{now} was not given when the run started" if was is None else f"{was} was given, not now"
                raise ConfigError(f"cannot resume {self.out_dir}: {flag} {said}")
            saved = old.input_sha256.get(field)
            if saved is None:
                note = f"{_UNCHECKED}{flag} {now}: summary.json saved no sha256 of it (an older onechip), so the "
                self.unchecked.append(note + "samples measured before the resume may be of other content")
                self.on_progress(ProgressEvent("bench", f"resume: {self.unchecked[-1]}"))
            elif saved != self.config.input_sha256[field]:
                moved = "" if Path(was) == Path(now) else f" (summary.json names {was})"
                raise ConfigError(f"cannot resume {self.out_dir}: {flag} {now} changed since the run started{moved}")

    def _keep_resumed(
        self, done: dict[RepKey, list[RequestSample]], samples: list[RequestSample], unread: list[bytes]
    ) -> None:
        """requests.jsonl keeps the reused repetitions; the others' samples, and the lines that are no sample (as
        they were), move to REPLACED_FILE."""
        keep = [s for key in sorted(done) for s in done[key]]
        replaced = [s for s in samples if (s.context_tokens, s.clients, s.rep) not in done]
        if replaced or unread:  # what is measured again is kept, not lost: the failures are a record of the first try
            with (self.out_dir / REPLACED_FILE).open("ab") as sink:
                sink.writelines(s.model_dump_json().encode() + b"\n" for s in replaced)
                sink.writelines(line + b"\n" for line in unread)
        if replaced:
            again = (
                f"resume: {plural(len(replaced), 'request')} of unfinished, failed or unusable repetitions measured "
                "again"
            )
            self.on_progress(ProgressEvent("bench", f"{again} (kept in {REPLACED_FILE})"))
        write_text_atomic(self.requests_path, "".join(s.model_dump_json() + "\n" for s in keep))

    def save(self) -> None:
        assert self.run is not None
        write_text_atomic(self.summary_path, self.run.model_dump_json(indent=2))

    async def main(self, resume: bool) -> BenchRun:
        cfg = self.config
        done, saved_samples, unread = self._check_resume(resume)
        with WireClient(cfg.base_url, timeout_s=cfg.request_timeout_s, api_key=api_key_from_env(cfg.base_url)) as wire:
            model, version = await asyncio.to_thread(self.probe, wire)
            if resume:
                self._keep_resumed(done, saved_samples, unread)
            kept = [n for n in (self.saved.notes if self.saved else []) if n.startswith(_UNCHECKED)]
            notes = list(dict.fromkeys([*kept, *self.unchecked]))
            await self.probe_extras(model, notes)
            builder = PromptBuilder(wire, model, GATEWAY_WAIT_S)
            self.run = BenchRun(
                tool_version=__version__,
                created_at=self.saved.created_at  # a resumed run keeps when it was started
                if self.saved is not None
                else dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                server=BenchServer(base_url=cfg.base_url, model=model, engine_version=version),
                client=this_client(),
                config=cfg,
                notes=notes,
            )
            if not done:  # the settings are on disk before the first request: a resume after any kill uses them
                self.save()
            cells = cfg.grid_cells()
            if cfg.trace_file is not None:  # a trace's cell is named by its median prompt length
                median = trace.median_input(_trace(cfg))
                cells = [(median, clients) for clients in cfg.clients]
            with self.requests_path.open("a") as sink:
                try:
                    for ctx, clients in cells:
                        cell = await self.run_cell(wire, model, builder, ctx, clients, done, sink)
                        self.run.cells.append(cell)
                        self.run.prompt_method = builder.method or self.run.prompt_method
                        note = _prompt_note(cell) if cfg.workload == "grid" else None  # agent prompts grow
                        if note and not any(n.startswith(note.split(":")[0] + ":") for n in self.run.notes):
                            self.run.notes.append(note)  # once per context, not once per cell
                        self.save()
                        self.on_progress(ProgressEvent("bench", _cell_line(cell, cfg)))
                finally:
                    await self.pool.close()
            if builder.method == "estimate":
                self.run.notes.append(
                    "server has no /tokenize: prompt lengths are estimates; see prompt_tokens_actual (from usage)"
                )
                self.save()
            return self.run


def _prompt_note(cell: CellResult) -> str | None:
    """A note when the server-counted prompt length (median) missed the cell's target."""
    actual, ctx = cell.prompt_tokens_actual.median, cell.context_tokens
    if actual is None or actual == ctx:
        return None
    note = f"context {ctx:,}: prompts were {actual:g} tokens (median, server usage)"
    if actual > ctx:
        note += "; the chat template plus a unique first line is longer than the target"
    return note


def _cell_line(cell: CellResult, config: BenchConfig) -> str:
    head = f"{config.cell_text(cell.context_tokens, cell.clients)}: {cell.status}"
    if cell.status != "ok":
        return f"{head} ({cell.reason})"
    return f"{head}, {cell.output_tok_per_s or 0:,.1f} tok/s, median TTFT {ms_text(cell.ttft_ms.median or 0)} ms"


def run_grid(
    config: BenchConfig,
    out_dir: Path,
    *,
    plan: Plan | None = None,
    resume: bool = False,
    on_progress: ProgressFn = no_progress,
    resume_hint: str | None = None,
) -> BenchRun:
    """Measure every (context, clients) cell of `config` against its endpoint; write requests.jsonl and
    summary.json into `out_dir` and return the `BenchRun` (also in summary.json).

    Raises EndpointError when the URL is unreachable or its probe request fails, ConfigError when `out_dir`
    already holds samples (without `resume`), a resumed run's config differs or the bytes of an input file
    (INPUT_FILES) changed, Interrupted on Ctrl-C (every finished request stays in requests.jsonl; resume
    continues). Those two messages end with `resume_hint` (how to resume; default: --resume `out_dir`). Must not be
    called from a running event loop.
    """
    if not config.contexts or not config.clients:
        raise ConfigError("bench needs at least one context and one clients value")
    if min(config.contexts) < 1 or min(config.clients) < 1:
        raise ConfigError("contexts and clients must be positive integers")
    plan = plan or config.bench_plan  # a resume without --plan: the plan the run started with (another is refused)
    # what a resume compares: the input files' bytes, and the plan the cells are judged by
    config = config.model_copy(update={"input_sha256": input_digests(config), "bench_plan": plan})
    if config.workload == "trace" and config.trace_file is not None:  # refused before any work: bounds, the bytes
        trace.offsets_s(_trace(config), config.trace_speed)  # digested above, so those checked are those compared
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"{out_dir} is {kind_of(out_dir)}, not a run directory")
    # a FIFO (or a directory, a device) there would be waited on by the resume's read or the run's append
    odd = [p for p in (out_dir / RUN_FILES["bench"], out_dir / RUN_FILES["requests"], out_dir / REPLACED_FILE)
           if p.exists() and not p.is_file()]  # fmt: skip
    if odd:
        raise ConfigError(f"{odd[0]} is not a regular file: remove it or choose another --out")
    if holds_search(out_dir):  # its probes are bench runs of their own, under it: a grid there would mix with them
        # a search resumes when run again into its directory (search.find_max), never by a resume of it as one run
        fix = f"run the same search into it again (--out {out_dir}) to resume it" if resume else "choose another --out"
        raise ConfigError(f"{out_dir} holds a --find-max search, not a bench run; {fix}")
    if resume and not (out_dir / RUN_FILES["bench"]).is_file() and not (out_dir / RUN_FILES["requests"]).is_file():
        raise ConfigError(f"cannot resume {out_dir}: no {RUN_FILES['bench']} or {RUN_FILES['requests']} there")
    busy = f"another bench is writing {out_dir}; choose another --out"
    if not resume and (out_dir / RUN_FILES["bench"]).exists():
        with exclusive(out_dir, busy):  # a bench still measuring there is busy (exit 8), not a run to resume
            raise ConfigError(
                f"{out_dir} already holds a bench run; resume it (--resume {out_dir}) or choose another --out"
            )
    resume_hint = resume_hint or f"resume it (--resume {out_dir})"
    # read once: the config decided here and the resume's checks (_Run._check_resume) judge the same bytes
    saved = _resumed_run(out_dir) if resume else None
    if not (resume and config.max_in_flight is None and saved is not None):
        config = open_loop(config)  # a resume keeps its saved config's; one saved before max_in_flight is refused
    created = create_run_dir(out_dir)
    run = _Run(config, out_dir, plan, on_progress, saved)
    try:
        with exclusive(out_dir, busy):
            if not resume and (out_dir / RUN_FILES["bench"]).exists():  # written since the check above
                raise BusyError(f"{out_dir} was just started by another bench; choose another --out")
            return run_to_end(run.main(resume))
    except BusyError:
        raise
    except EndpointError as exc:
        if run.run is None:  # failed before measuring anything: it leaves no empty directory
            if created is not None:
                remove_if_empty(out_dir, created)
            raise
        run.save()  # the server went away mid-run (stopped, died): what was measured stays, and says so
        kept = f"finished requests are in {run.requests_path}; {resume_hint}"
        raise EndpointError(f"{exc}; {kept}") from None
    except OnechipError:
        if created is not None:  # a bench that failed before measuring anything leaves no empty directory
            remove_if_empty(out_dir, created)
        raise
    except KeyboardInterrupt:
        if run.run is None and not resume:  # before summary.json: nothing to resume, and no empty directory left
            if created is not None:
                remove_if_empty(out_dir, created)
            raise Interrupted("bench interrupted before its first request; nothing was measured") from None
        if run.run is not None:
            run.save()
        raise Interrupted(f"bench interrupted; finished requests are in {run.requests_path}; {resume_hint}") from None


def holds_search(out_dir: Path) -> bool:
    """Whether `out_dir` holds a --find-max search (bench.search): its search.json, or a probe's run in a
    clients-N / rate-R folder (a search stopped before it wrote search.json)."""
    probes = [*out_dir.glob(f"clients-*/{RUN_FILES['bench']}"), *out_dir.glob(f"rate-*/{RUN_FILES['bench']}")]
    return os.path.lexists(out_dir / SEARCH_FILE) or bool(probes)


def create_run_dir(out_dir: Path) -> Path | None:
    """Create `out_dir` with its parents; return the outermost directory this made (what remove_if_empty may take
    back), None when it existed. Raises ConfigError when it cannot be made."""
    created = _first_missing(out_dir)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create {out_dir}: {exc.strerror or exc}") from None
    return created


def _first_missing(path: Path) -> Path | None:
    """The outermost directory of `path` that does not exist yet (what mkdir(parents=True) will create)."""
    missing = None
    for candidate in (path, *path.parents):
        if candidate.exists():
            break
        missing = candidate
    return missing


def remove_if_empty(out_dir: Path, created: Path) -> None:
    """Remove `out_dir` and its parents up to `created` (made by this run) while nothing but an empty
    requests.jsonl is in them."""
    requests = out_dir / RUN_FILES["requests"]
    if requests.is_file() and requests.stat().st_size == 0:
        requests.unlink()
    for directory in (out_dir, *out_dir.parents):
        try:
            directory.rmdir()  # refuses when anything is left in it
        except OSError:
            return
        if directory == created:
            return


__all__ = ["config_difference", "kv_wall", "load_samples", "run_grid", "saved_config", "saved_run"]
