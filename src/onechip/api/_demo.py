"""`demo` on the embedded engine: up, plan + cross-check, checks, bench grid, report, down."""

from __future__ import annotations

import typing
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from onechip import bench as bench_layer
from onechip import planner
from onechip import report as report_layer
from onechip.api._checks import check
from onechip.api._demo_host import demo_on_host
from onechip.api._run import DEMO_CHECKS, DEMO_GRIDS, new_manifest, timed_stage
from onechip.engines import EmbeddedEngine, model_store
from onechip.errors import Interrupted, OnechipError
from onechip.paths import new_run_dir, write_text_atomic
from onechip.progress import ProgressFn, no_progress
from onechip.schemas import RUN_FILES, BenchConfig, BootRecord, Plan, RunManifest
from onechip.schemas.common import GIB
from onechip.schemas.requests import CheckRequest, DemoRequest, PlanRequest
from onechip.vllm import bootlog


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
        return demo_on_host(request, on_progress, on_stage_done)
    run_dir = request.out_dir or new_run_dir(request.runs_root)
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = new_manifest(run_dir, request.quick)
    done = on_stage_done or (lambda stage, path: None)

    def stage(name: str) -> AbstractContextManager[None]:
        return timed_stage(manifest, name, run_dir, on_progress)

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
