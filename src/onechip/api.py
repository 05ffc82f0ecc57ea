"""One function per job. The CLI and the MCP server are thin shells over these.

plan()  up() status() logs() down()  check()  bench()  cost()  report()  demo()
"""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from onechip import __version__, checks, planner
from onechip import bench as bench_layer
from onechip import cost as cost_layer
from onechip import report as report_layer
from onechip.engines import EmbeddedEngine, embedded, launch, model_store, remote, startup
from onechip.engines import state as engine_state
from onechip.engines.launch import UpResult
from onechip.errors import ConfigError, EngineBootError, EngineError, Interrupted, OnechipError
from onechip.paths import new_run_dir, onechip_home, write_text_atomic
from onechip.planner.rules import accelerator
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import (
    RUN_FILES,
    BenchConfig,
    BenchRun,
    BootRecord,
    CheckReport,
    EngineState,
    EngineStatus,
    Plan,
    RunManifest,
)
from onechip.schemas.cost import CostReport
from onechip.vllm import bootlog, flags


def _rules_for(chip: str) -> str:
    """The engine rules a chip runs under by default: vllm-tpu, vllm-gpu or vllm-cpu (ConfigError if unknown)."""
    return {"tpu": "vllm-tpu", "gpu": "vllm-gpu", "cpu": "vllm-cpu"}[accelerator(chip).kind]


def plan(
    model: str,
    chip: str,
    engine: str | None = None,
    *,
    max_model_len: int | None = None,
    dtype: str | None = None,
    kv_cache_dtype: str = "auto",
    utilization: float | None = None,
    tensor_parallel_size: int = 1,
    block_size: int | None = None,
    kv_cache_memory_bytes: int | None = None,
    contexts: list[int] | None = None,
    multimodal: bool = True,
    max_num_batched_tokens: int | None = None,
    against: Path | str | None = None,
    launch: str | None = None,
    host: str | None = None,
    port: int | None = None,
    image: str | None = None,
    sets: list[str] | None = None,
    hf_token_file: Path | str | None = None,
) -> Plan:
    """Plan `model` on `chip` under `engine` rules (default: the chip's kind, as `up` does). See
    onechip.planner.plan_model (raises ConfigError).

    launch, host, port, image, sets, hf_token_file: what `up --engine LAUNCH` takes; `serve_command` is then
    the command `up` runs with the same options, built by the same code (engines.startup). LAUNCH defaults
    to 'vllm-docker' where the rules have a default image (vllm-tpu, vllm-gpu: the seed's way) and to
    'vllm' otherwise; 'embedded' plans the bundled model as the embedded engine serves it (MODEL must name
    it, CHIP must be cpu).
    against: a vLLM boot log; the plan's `crosscheck` then holds planned vs reported allocation.
    """
    rules = engine or _rules_for(chip)
    launch = launch or ("vllm-docker" if rules in flags.DEFAULT_IMAGES else "vllm")
    startup.check_engine_args(launch, host=host, image=image, hf_token_file=hf_token_file, sets=sets)
    if launch == "embedded":
        result = _embedded_plan(model, chip, engine, max_model_len, kv_cache_memory_bytes, port)
    else:
        kwargs = dict(
            max_model_len=max_model_len, dtype=dtype, kv_cache_dtype=kv_cache_dtype, utilization=utilization,
            tensor_parallel_size=tensor_parallel_size, block_size=block_size,
            kv_cache_memory_bytes=kv_cache_memory_bytes, contexts=contexts, multimodal=multimodal,
            max_num_batched_tokens=max_num_batched_tokens,
        )  # fmt: skip
        result = planner.plan_model(model, chip, rules, **(kwargs | _planner_sets(sets)))  # type: ignore[arg-type]
        prepared = startup.prepare(
            result, launch, host=host, port=port, image=image, sets=sets, hf_token_file=hf_token_file
        )  # fmt: skip
        result.serve_command = prepared.spec.command
    if against is not None:
        try:
            text = Path(against).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(f"--against {against}: cannot read: {exc.strerror}") from None
        boot = bootlog.read_boot_log(text, result.engine, result.serve_model or result.model)
        result.crosscheck = bootlog.crosscheck(result, boot)
    return result


def _embedded_plan(
    model: str, chip: str, engine: str | None, max_model_len: int | None, kv_bytes: int | None, port: int | None
) -> Plan:
    """The embedded engine's own plan and command (startup.embedded_launch). Raises ConfigError unless
    `model` names the bundled model on chip 'cpu' under vllm-cpu rules with a whole-GiB KV pool."""
    bundled = {embedded.CATALOG_MODEL.lower(), model_store.MODEL_SLUG, model_store.SERVED_NAME.lower()}
    if model.lower() not in bundled and Path(model).name != model_store.MODEL_SLUG:
        raise ConfigError(f"--launch embedded serves the bundled {embedded.CATALOG_MODEL}, not {model!r}")
    if chip != "cpu" or engine not in (None, "vllm-cpu") or (kv_bytes or 0) % GIB:
        raise ConfigError("--launch embedded runs on --chip cpu under vllm-cpu rules, with a whole-GiB KV pool")
    kv_gib = kv_bytes // GIB if kv_bytes else embedded.DEFAULT_KV_CACHE_SPACE_GIB
    the_plan, _ = startup.embedded_launch(port, kv_gib, max_model_len or embedded.DEFAULT_MAX_MODEL_LEN)
    return the_plan


def check(
    base_url: str,
    model: str | None = None,
    only: list[str] | None = None,
    out_dir: Path | None = None,
    on_progress: ProgressFn = no_progress,
    **options: object,
) -> CheckReport:
    """Run capability probes against an OpenAI-compatible endpoint; see onechip.checks.run_checks.

    `only`: smoke, tools, agent, needle, determinism (None = all). `options`: CheckOptions fields
    (agent_cases, needle_lengths, needle_depths, kv_tokens, ...). Writes checks.json into `out_dir`
    when given. Raises ConfigError (bad names/options) and EndpointError (endpoint unreachable).
    """
    return checks.run_checks(base_url, model, only, out_dir=out_dir, on_progress=on_progress, **options)


def bench(
    config: BenchConfig,
    out_dir: Path,
    plan: Plan | None = None,
    resume: bool = False,
    on_progress: ProgressFn = no_progress,
) -> BenchRun:
    """Measure a context x clients grid against `config.base_url`; writes `out_dir`/requests.jsonl and
    summary.json and returns the BenchRun. Raises EndpointError (unreachable URL, probe failed), ConfigError
    (out_dir holds another run; resumed config differs), Interrupted (Ctrl-C; finished requests kept).
    See onechip.bench.run_grid."""
    return bench_layer.run_grid(config, Path(out_dir), plan=plan, resume=resume, on_progress=on_progress)


def saved_bench_config(run_dir: Path) -> BenchConfig | None:
    """The BenchConfig a bench run in `run_dir` was started with (None if it saved none); what `--resume`
    continues. Raises ConfigError when its summary.json is unreadable."""
    return bench_layer.saved_config(Path(run_dir))


# --- cost and report (issue 6).


def cost(
    chip: str | None = None,
    output_tok_per_s: float | None = None,
    run_dir: Path | str | None = None,
    pricing: list[str] | str | None = None,
    region: str | None = None,
    cold_boot_s: float | None = None,
    warm_boot_s: float | None = None,
    today: date | str | None = None,
    write: bool = False,
) -> CostReport:
    """Price a throughput, or every cell of a saved run, on `chip` from the price catalog.

    With `run_dir`, the bench summary there is priced cell by cell; `chip` defaults to the run's chip
    and the report warns when the run was measured on another chip. `write=True` stores the result as
    `cost.json` in `run_dir`. Raises ConfigError for unknown chip/region/pricing or no throughput.
    See onechip.cost.
    """
    if write and run_dir is None:
        raise ConfigError("writing cost.json needs a run directory (--run DIR)")
    files = report_layer.read_run(run_dir) if run_dir is not None else None
    measured_on = None
    if files is not None:
        measured_on = (files.manifest or {}).get("chip") or (files.plan or {}).get("chip")
    chip = chip or measured_on
    if not chip:
        raise ConfigError("give a chip to price (--chip), e.g. v5e-1")
    result = cost_layer.estimate(
        chip,
        output_tok_per_s=output_tok_per_s,
        bench=files.bench if files else None,
        pricing=pricing,
        region=region,
        cold_boot_s=cold_boot_s,
        warm_boot_s=warm_boot_s,
        today=today,
        measured_on=measured_on,
    )
    if write and files is not None:
        write_text_atomic(files.path / "cost.json", result.model_dump_json(indent=2))
    return result


def report(
    run_dir: Path | str, formats: list[str] | tuple[str, ...] | str = ("md",), compare: Path | str | None = None
) -> list[Path]:
    """Re-render the saved run in `run_dir` (no re-running) in `formats` ('md', 'html', 'json',
    'serving-report'); with `compare`, also a side-by-side of that run against this one. Returns the
    files written. See onechip.report."""
    return report_layer.write_report(run_dir, formats, compare=compare)


# --- engines and the demo (issue 2); real accelerator hosts (issue 7).


# --set flags the planner takes as inputs: planning with them keeps the plan true to the launch.
_PLANNER_SETS = {
    "--max-model-len": ("max_model_len", int), "--gpu-memory-utilization": ("utilization", float),
    "--kv-cache-dtype": ("kv_cache_dtype", str), "--tensor-parallel-size": ("tensor_parallel_size", int),
    "--block-size": ("block_size", int), "--max-num-batched-tokens": ("max_num_batched_tokens", int),
    "--dtype": ("dtype", str), "--kv-cache-memory": ("kv_cache_memory_bytes", int),
}  # fmt: skip


def _plan_for_up(
    plan: Plan | Path | str | None, model: str | None, chip: str | None, sets: list[str] | None = None
) -> Plan:
    """The Plan `up` launches from: a saved plan file, or planned now for --model on --chip (with the
    planner-input --set values, e.g. max-model-len, as planner arguments)."""
    if isinstance(plan, Plan):
        return plan
    if plan is not None:
        try:
            return Plan.model_validate_json(Path(plan).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"--plan {plan}: cannot read: {exc.strerror}") from None
        except ValueError:
            raise ConfigError(f"--plan {plan}: not a plan JSON (see `onechip plan --json`)") from None
    if not model or not chip:
        raise ConfigError("give --plan PLAN.json, or --model and --chip to plan now")
    return planner.plan_model(model, chip, _rules_for(chip), **_planner_sets(sets))


def _planner_sets(sets: list[str] | None) -> dict[str, Any]:
    """The planner-input --set values (e.g. max-model-len) as plan_model keyword arguments."""
    kwargs: dict[str, Any] = {}
    for override in flags.parse_sets(sets):
        if override.name in _PLANNER_SETS and override.value is not None:
            key, kind = _PLANNER_SETS[override.name]
            try:
                kwargs[key] = kind(override.value)
            except ValueError:
                what = f"--set {override.name}={override.value}"
                raise ConfigError(f"{what}: expected {kind.__name__}") from None
    return kwargs


def up(
    engine: str = "embedded",
    *,
    host: str | None = None,
    model: str | None = None,
    chip: str | None = None,
    plan: Plan | Path | str | None = None,
    image: str | None = None,
    port: int | None = None,
    tunnel_port: int | None = None,
    hf_token_file: Path | str | None = None,
    sets: list[str] | None = None,
    dry_run: bool = False,
    ssh_options: list[str] | None = None,
    launcher: str | None = None,
    kv_cache_space_gib: int = 2,
    timeout_s: float = 600.0,
    force: bool = False,
    on_progress: ProgressFn = no_progress,
) -> UpResult:
    """Start a serving engine detached (it outlives this process) and record it for status/logs/down.

    engine: 'embedded' (vLLM-CPU + SmolLM2, the default), 'vllm' (`vllm serve` from a plan, as a managed
    process here or on `host`) or 'vllm-docker' (`docker run` here or on `host`). The plan comes from
    `plan` (a Plan or a plan JSON file) or is made now for `model` on `chip`. `host` ('user@addr') runs it
    over plain ssh (`ssh_options`: `-o` values such as 'Port=2222'), tunnelled from 127.0.0.1:`tunnel_port`.
    `sets`: --set overrides (see vllm.flags.parse_sets). A plan that does not fit is refused unless
    `force`. The HF token comes from `hf_token_file` or HF_TOKEN and never appears in an argv, log, report
    or exception. `dry_run`: build and return the launch, run nothing. Engine-kind choices (ports, tunnel,
    token wording, local process or host) live in engines.startup. Raises ConfigError, EngineError
    (already running, ssh/docker failed), PortInUseError, EngineBootError (one-line cause + log path),
    MissingDependencyError.
    """
    startup.check_engine_args(
        engine, host=host, model=model, chip=chip, plan=plan, image=image, hf_token_file=hf_token_file,
        launcher=launcher, sets=sets,
    )  # fmt: skip
    current = None if dry_run else engine_state.status()
    if current is not None and current.running and current.state is not None:
        raise EngineError(f"an engine is already running at {current.state.base_url}; run `onechip down` first")
    if engine == "embedded":
        return _up_embedded(port, kv_cache_space_gib, dry_run, timeout_s, on_progress)
    the_plan = _plan_for_up(plan, model, chip, None if plan is not None else sets)
    if not the_plan.fits and not (force or dry_run):
        # catching this before a boot (minutes on a TPU, billed) is what the plan is for
        raise ConfigError(f"the plan says this does not fit ({the_plan.verdict}); change the flags, or --force")
    prepared = startup.prepare(
        the_plan, engine, host=host, port=port, tunnel_port=tunnel_port, image=image, sets=sets,
        hf_token_file=hf_token_file, ssh_options=ssh_options, launcher=launcher,
    )  # fmt: skip
    if dry_run:
        return UpResult(dry_run=True, launch=prepared.spec)
    the_plan.serve_command = prepared.spec.command  # plan.json records what ran
    engine_dir = onechip_home() / "engine"
    running = prepared.engine(engine_dir / "engine.log")
    boot = _start(running, engine_dir, the_plan, prepared.token, timeout_s, on_progress)
    cross = bootlog.crosscheck(the_plan, boot)
    (engine_dir / "crosscheck.json").write_text(cross.model_dump_json(indent=2))
    return UpResult(dry_run=False, launch=prepared.spec, boot=boot, crosscheck=cross)


def _up_embedded(
    port: int | None, kv_cache_space_gib: int, dry_run: bool, timeout_s: float, on_progress: ProgressFn
) -> UpResult:
    """The embedded engine on the port its launch names (chosen before the command is built)."""
    _, spec = startup.embedded_launch(port, kv_cache_space_gib)
    if dry_run:
        return UpResult(dry_run=True, launch=spec)
    engine_dir = onechip_home() / "engine"
    local = EmbeddedEngine(
        engine_dir / "engine.log", kv_cache_space_gib=kv_cache_space_gib, port=spec.port, tie_to_parent=False
    )
    boot = _start(local, engine_dir, None, None, timeout_s, on_progress)
    return UpResult(dry_run=False, launch=spec, boot=boot)


def _start(
    engine: Any,
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


def _boot(engine: Any, timeout_s: float, on_progress: ProgressFn) -> BootRecord:
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
    engine: Any, boot: BootRecord, engine_dir: Path, the_plan: Plan | None, token: launch.Secret | None
) -> BootRecord:
    """Write boot.json (and plan.json) and the state file `status`/`logs`/`down` read."""
    boot_path = engine_dir / "boot.json"
    text = boot.model_dump_json(indent=2)
    boot_path.write_text(token.scrub(text) if token else text)
    if the_plan is not None:
        (engine_dir / "plan.json").write_text(the_plan.model_dump_json(indent=2))
    if isinstance(engine, remote.HostEngine):
        state = engine.state()
        state.boot_path = str(boot_path)
    else:
        state = EngineState(
            engine=engine.kind,
            pid=engine.pid or 0,
            base_url=engine.base_url,
            model=engine.served_name,
            started_at=boot.started_at or "",
            log_path=str(engine.log_path),
            boot_path=str(boot_path),
            mode=engine.mode,
        )
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
DEMO_GRIDS: dict[bool, dict[str, Any]] = {
    True: dict(
        contexts=[128, 1024], clients=[1, 4], reps=2, output_tokens=32, requests_per_client=1, warmup_requests=1
    ),
    False: dict(
        contexts=[128, 1024], clients=[1, 4, 8], reps=3, output_tokens=64, requests_per_client=1, warmup_requests=1
    ),
}
DEMO_CHECKS: dict[bool, dict[str, Any]] = {
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


def _demo_plan(engine: EmbeddedEngine, boot: BootRecord, contexts: list[int], run_dir: Path) -> Plan:
    """Plan the model directory the engine loaded, with the command it ran, and cross-check it against
    the boot; writes plan.json and crosscheck.json into `run_dir`."""
    the_plan = planner.plan_model(
        str(engine.model_path),
        chip="cpu",
        engine="vllm-cpu",
        dtype="float32",
        max_model_len=engine.max_model_len,
        kv_cache_memory_bytes=engine.kv_cache_space_gib * GIB,
        contexts=sorted({*contexts, engine.max_model_len}),
    )
    the_plan.serve_command = engine.serve  # the command the engine ran (report.md renders it)
    cross = bootlog.crosscheck(the_plan, boot)
    write_text_atomic(run_dir / RUN_FILES["plan"], the_plan.model_dump_json(indent=2))
    write_text_atomic(run_dir / RUN_FILES["crosscheck"], cross.model_dump_json(indent=2))
    return the_plan


def demo(
    quick: bool = False,
    out_dir: Path | None = None,
    runs_root: Path = Path("runs"),
    kv_cache_space_gib: int = 2,
    port: int | None = None,
    boot_timeout_s: float = 600.0,
    on_progress: ProgressFn = no_progress,
    on_stage_done: Callable[[str, Path], None] | None = None,
) -> RunManifest:
    """The main job on the embedded engine: up, plan + cross-check, checks, bench grid, report, down.

    Writes everything into `out_dir` (default: a new `runs/<run-id>/`); see schemas.run for the files.
    `on_stage_done(stage, run_dir)` is called after each stage so a shell can render it at once.
    The engine is stopped on every exit path. Ctrl-C raises Interrupted after saving what was measured;
    an engine that dies raises EngineBootError; both leave run.json with status and error.
    """
    run_dir = Path(out_dir) if out_dir else new_run_dir(runs_root)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(
        run_id=run_dir.name,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tool_version=__version__,
        python=platform.python_version(),
        host=socket.gethostname(),
        cpus=os.cpu_count(),
        command="demo --quick" if quick else "demo",
        chip="cpu",
    )
    done = on_stage_done or (lambda stage, path: None)
    engine: EmbeddedEngine | None = None
    try:
        with _stage(manifest, "model", run_dir, on_progress):
            engine = EmbeddedEngine(
                run_dir / RUN_FILES["engine_log"],
                kv_cache_space_gib=kv_cache_space_gib,
                port=port,
                model_path=model_store.ensure_model(),
            )
        with _stage(manifest, "boot", run_dir, on_progress):
            engine.start()
            boot = engine.wait_ready(boot_timeout_s, on_progress)
            write_text_atomic(run_dir / RUN_FILES["boot"], boot.model_dump_json(indent=2))
        done("boot", run_dir)
        with _stage(manifest, "plan", run_dir, on_progress):
            grid = DEMO_GRIDS[quick]
            the_plan = _demo_plan(engine, boot, grid["contexts"], run_dir)
        done("plan", run_dir)
        with _stage(manifest, "check", run_dir, on_progress):
            checks.run_checks(
                engine.base_url,
                engine.served_name,
                out_dir=run_dir,
                on_progress=on_progress,
                kv_tokens=boot.kv_cache_tokens,
                **DEMO_CHECKS[quick],
            )
        done("check", run_dir)
        with _stage(manifest, "bench", run_dir, on_progress):
            config = BenchConfig(base_url=engine.base_url, model=engine.served_name, **grid)
            bench_layer.run_grid(config, run_dir, plan=the_plan, on_progress=on_progress)
        done("bench", run_dir)
        manifest.status = "ok"
        with _stage(manifest, "report", run_dir, on_progress):
            report_layer.write_report(run_dir, ("md", "html", "serving-report"))
    except (KeyboardInterrupt, Interrupted):
        manifest.status, manifest.error = "interrupted", "interrupted by the user"
        raise Interrupted(f"demo interrupted; what was measured is in {run_dir}") from None
    except OnechipError as exc:
        manifest.status, manifest.error = "failed", str(exc)
        raise
    finally:
        if engine is not None:
            with _stage(manifest, "down", run_dir, on_progress):
                engine.stop()
        write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))
    return manifest
