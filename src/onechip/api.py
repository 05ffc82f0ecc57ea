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
         contexts: list[int] | None = None, multimodal: bool = True) -> Plan:
    """Plan `model` on `chip` under `engine` rules. See onechip.planner.plan_model (raises ConfigError)."""
    from onechip import planner  # lead: hoist to the module imports (kept here to touch only plan())

    return planner.plan_model(model, chip, engine, max_model_len=max_model_len, dtype=dtype,
                              kv_cache_dtype=kv_cache_dtype, utilization=utilization,
                              tensor_parallel_size=tensor_parallel_size, block_size=block_size,
                              kv_cache_memory_bytes=kv_cache_memory_bytes, contexts=contexts,
                              multimodal=multimodal)


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
