"""One function per job. The CLI and the MCP server are thin shells over these.

Each helper-owned function below delegates to its layer; the demo wires them together.
"""

from __future__ import annotations

from pathlib import Path

from onechip.progress import ProgressFn, no_progress
from onechip.schemas import BenchConfig, BenchRun, CheckReport, Plan


def plan(model: str, chip: str, engine: str, *, max_model_len: int | None = None, dtype: str | None = None,
         kv_cache_dtype: str = "auto", utilization: float | None = None, tensor_parallel_size: int = 1,
         block_size: int | None = None, kv_cache_memory_bytes: int | None = None,
         contexts: list[int] | None = None, multimodal: bool = True,
         max_num_batched_tokens: int | None = None, against: Path | str | None = None) -> Plan:
    """Plan `model` on `chip` under `engine` rules. See onechip.planner.plan_model (raises ConfigError).

    against: a vLLM boot log; the plan's `crosscheck` then holds planned vs reported allocation.
    """
    from onechip import planner  # lead: hoist to the module imports (kept here to touch only plan())
    from onechip.errors import ConfigError

    result = planner.plan_model(model, chip, engine, max_model_len=max_model_len, dtype=dtype,
                              kv_cache_dtype=kv_cache_dtype, utilization=utilization,
                              tensor_parallel_size=tensor_parallel_size, block_size=block_size,
                              kv_cache_memory_bytes=kv_cache_memory_bytes, contexts=contexts,
                              multimodal=multimodal, max_num_batched_tokens=max_num_batched_tokens)
    if against is not None:
        try:
            text = Path(against).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ConfigError(f"--against {against}: cannot read: {exc.strerror}") from None
        result.crosscheck = planner.crosscheck_log(result, text)
    return result


def check(base_url: str, model: str | None = None, only: list[str] | None = None,
          out_dir: Path | None = None, on_progress: ProgressFn = no_progress,
          **options: object) -> CheckReport:
    """Run capability probes against an OpenAI-compatible endpoint; see onechip.checks.run_checks.

    `only`: smoke, tools, agent, needle, determinism (None = all). `options`: CheckOptions fields
    (agent_cases, needle_lengths, needle_depths, kv_tokens, ...). Writes checks.json into `out_dir`
    when given. Raises ConfigError (bad names/options) and EndpointError (endpoint unreachable).
    """
    from onechip.checks import run_checks  # TODO(lead): move to the module's imports

    return run_checks(base_url, model, only, out_dir=out_dir, on_progress=on_progress, **options)


def bench(config: BenchConfig, out_dir: Path, plan: Plan | None = None, resume: bool = False,
          on_progress: ProgressFn = no_progress) -> BenchRun:
    """Measure a context x clients grid against `config.base_url`; writes `out_dir`/requests.jsonl and
    summary.json and returns the BenchRun. Raises EndpointError (unreachable URL, probe failed), ConfigError
    (out_dir holds another run; resumed config differs), Interrupted (Ctrl-C; finished requests kept).
    See onechip.bench.run_grid."""
    from onechip.bench import run_grid  # the bench layer imports httpx; keep `import onechip.api` light

    return run_grid(config, Path(out_dir), plan=plan, resume=resume, on_progress=on_progress)


# --- cost and report (issue 6). The imports sit here so this block can be appended without touching the
# lines above while other work edits them; they can move to the top of the module.
from datetime import date  # noqa: E402

from onechip import cost as cost_layer  # noqa: E402
from onechip import report as report_layer  # noqa: E402
from onechip.errors import ConfigError  # noqa: E402
from onechip.schemas.cost import CostReport  # noqa: E402


def cost(chip: str | None = None, output_tok_per_s: float | None = None, run_dir: Path | str | None = None,
         pricing: list[str] | str | None = None, region: str | None = None,
         cold_boot_s: float | None = None, warm_boot_s: float | None = None,
         today: date | str | None = None, write: bool = False) -> CostReport:
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
        chip, output_tok_per_s=output_tok_per_s, bench=files.bench if files else None, pricing=pricing,
        region=region, cold_boot_s=cold_boot_s, warm_boot_s=warm_boot_s, today=today, measured_on=measured_on,
    )
    if write and files is not None:
        report_layer.write_text_atomic(files.path / "cost.json", result.model_dump_json(indent=2))
    return result


def report(run_dir: Path | str, formats: list[str] | tuple[str, ...] | str = ("md",),
           compare: Path | str | None = None) -> list[Path]:
    """Re-render the saved run in `run_dir` (no re-running) in `formats` ('md', 'html', 'json',
    'serving-report'); with `compare`, also a side-by-side of that run against this one. Returns the
    files written. See onechip.report."""
    return report_layer.write_report(run_dir, formats, compare=compare)


# --- engines and the demo (issue 2).
from onechip.engines import EmbeddedEngine  # noqa: E402
from onechip.engines import state as engine_state  # noqa: E402
from onechip.paths import onechip_home  # noqa: E402
from onechip.schemas import BootRecord, EngineState, EngineStatus  # noqa: E402
from onechip.errors import EngineError  # noqa: E402


def up(port: int | None = None, kv_cache_space_gib: int = 2, timeout_s: float = 600.0,
       on_progress: ProgressFn = no_progress) -> BootRecord:
    """Start the embedded engine detached (it outlives this process) and record it for `status`/`down`.

    Raises EngineError when one is already running, PortInUseError, EngineBootError (with the log tail),
    MissingDependencyError. Its log is `<onechip home>/engine/engine.log`.
    """
    current = engine_state.status()
    if current.running and current.state is not None:
        raise EngineError(f"an engine is already running at {current.state.base_url}; run `onechip down` first")
    engine_dir = onechip_home() / "engine"
    engine_dir.mkdir(parents=True, exist_ok=True)
    log_path = engine_dir / "engine.log"
    log_path.unlink(missing_ok=True)
    engine = EmbeddedEngine(log_path, kv_cache_space_gib=kv_cache_space_gib, port=port, tie_to_parent=False)
    engine.start()
    try:
        boot = engine.wait_ready(timeout_s, on_progress)
    except BaseException:
        engine.stop()
        raise
    boot_path = engine_dir / "boot.json"
    boot_path.write_text(boot.model_dump_json(indent=2))
    engine_state.save(EngineState(
        engine=engine.kind, pid=engine.pid or 0, base_url=engine.base_url, model=engine.served_name,
        started_at=boot.started_at or "", log_path=str(log_path), boot_path=str(boot_path),
    ))
    return boot


def status() -> EngineStatus:
    """Health, model, port and uptime of the engine `up` started."""
    return engine_state.status()


def down() -> EngineStatus:
    """Stop the engine `up` started; idempotent."""
    return engine_state.down()


# --- the demo: every stage on the embedded engine (issue 2).
import os  # noqa: E402
import platform  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from datetime import UTC, datetime  # noqa: E402

from onechip import __version__  # noqa: E402
from onechip import bench as bench_layer  # noqa: E402
from onechip import checks as checks_layer  # noqa: E402
from onechip import planner as planner_layer  # noqa: E402
from onechip.engines import model_store  # noqa: E402
from onechip.errors import Interrupted, OnechipError  # noqa: E402
from onechip.paths import new_run_dir  # noqa: E402
from onechip.progress import ProgressEvent  # noqa: E402
from onechip.schemas import RUN_FILES, CrossCheck, RunManifest  # noqa: E402

GIB = 1 << 30

# The demo grids. Quick: the example grid (contexts 128/1,024 x clients 1/4, 2 reps, 32 output
# tokens), one measured request per stream. Full: a third context and 16 clients, more requests, 3 reps.
DEMO_GRIDS = {
    True: dict(contexts=[128, 1024], clients=[1, 4], reps=2, output_tokens=32, requests_per_client=1,
               warmup_requests=1),
    False: dict(contexts=[128, 1024, 4096], clients=[1, 4, 16], reps=3, output_tokens=64,
                requests_per_client=2, warmup_requests=1),
}
DEMO_CHECKS = {True: ["smoke", "tools", "determinism"], False: ["smoke", "tools", "agent", "determinism", "needle"]}


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


@contextmanager
def _stage(manifest: RunManifest, name: str, run_dir: Path, on_progress: ProgressFn) -> Iterator[None]:
    """Time a stage into the manifest (saved after every stage, so an interrupted run keeps its timings)."""
    on_progress(ProgressEvent("demo", f"stage: {name}"))
    started = time.monotonic()
    try:
        yield
    finally:
        manifest.stage_timings_s[name] = round(time.monotonic() - started, 2)
        _write(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))


def demo(quick: bool = False, out_dir: Path | None = None, runs_root: Path = Path("runs"),
         kv_cache_space_gib: int = 2, port: int | None = None, boot_timeout_s: float = 600.0,
         on_progress: ProgressFn = no_progress,
         on_stage_done: Callable[[str, Path], None] | None = None) -> RunManifest:
    """The main job on the embedded engine: up -> plan + cross-check -> checks -> bench grid -> report -> down.

    Writes everything into `out_dir` (default: a new `runs/<run-id>/`); see schemas.run for the files.
    `on_stage_done(stage, run_dir)` is called after each stage so a shell can render it at once.
    The engine is stopped on every exit path. Ctrl-C raises Interrupted after saving what was measured;
    an engine that dies raises EngineBootError; both leave run.json with status and error.
    """
    run_dir = Path(out_dir) if out_dir else new_run_dir(runs_root)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = RunManifest(
        run_id=run_dir.name, created_at=datetime.now(UTC).isoformat(timespec="seconds"), tool_version=__version__,
        python=platform.python_version(), host=socket.gethostname(), cpus=os.cpu_count(),
        command="demo --quick" if quick else "demo", chip="cpu",
    )
    done = on_stage_done or (lambda stage, path: None)
    engine: EmbeddedEngine | None = None
    try:
        with _stage(manifest, "model", run_dir, on_progress):
            engine = EmbeddedEngine(run_dir / RUN_FILES["engine_log"], kv_cache_space_gib=kv_cache_space_gib,
                                    port=port, model_path=model_store.ensure_model())
        with _stage(manifest, "boot", run_dir, on_progress):
            engine.start()
            boot = engine.wait_ready(boot_timeout_s, on_progress)
            _write(run_dir / RUN_FILES["boot"], boot.model_dump_json(indent=2))
        done("boot", run_dir)
        with _stage(manifest, "plan", run_dir, on_progress):
            grid = DEMO_GRIDS[quick]
            the_plan = planner_layer.plan_model(
                str(engine.model_path), chip="cpu", engine="vllm-cpu", dtype="float32",
                max_model_len=engine.max_model_len, kv_cache_memory_bytes=kv_cache_space_gib * GIB,
                contexts=sorted({*grid["contexts"], engine.max_model_len}),
            )
            cross = planner_layer.crosscheck(the_plan, boot)
            _write(run_dir / RUN_FILES["plan"], the_plan.model_dump_json(indent=2))
            _write(run_dir / RUN_FILES["crosscheck"], cross.model_dump_json(indent=2))
        done("plan", run_dir)
        with _stage(manifest, "check", run_dir, on_progress):
            checks_layer.run_checks(engine.base_url, engine.served_name, DEMO_CHECKS[quick], out_dir=run_dir,
                                    on_progress=on_progress)
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
        _write(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))
    return manifest
