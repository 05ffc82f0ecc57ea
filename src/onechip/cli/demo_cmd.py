"""`onechip demo`: the whole pipeline on the embedded engine, rendered stage by stage."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from onechip import api
from onechip.cli.bench_cmd import bench_tables
from onechip.cli.check_cmd import check_tables
from onechip.cli.engine_cmds import print_boot
from onechip.cli.render import console, live_progress
from onechip.schemas import RUN_FILES, BenchRun, BootRecord, CheckReport, CrossCheck, Plan


def print_crosscheck(plan: Plan, cross: CrossCheck) -> None:
    mark = "[bold green]agrees[/]" if cross.agrees else "[bold red]DISAGREES[/]"
    console.print(
        f"KV cache planned {cross.planned_kv_tokens:,} tokens ({plan.num_blocks:,} blocks x {plan.block_size}, "
        f"{plan.kv_bytes_per_token:,} B/token), engine reported "
        f"{cross.reported_kv_tokens if cross.reported_kv_tokens is None else f'{cross.reported_kv_tokens:,}'} "
        f"tokens; max concurrency planned {cross.planned_max_concurrency:.2f}x, reported "
        f"{cross.reported_max_concurrency}x at {plan.max_model_len:,} tokens: {mark}"
    )
    if cross.note:
        console.print(f"  {cross.note}")


def _render_stage(stage: str, run_dir: Path) -> None:
    def read(key: str) -> str:
        return (run_dir / RUN_FILES[key]).read_text()

    if stage == "boot":
        print_boot(BootRecord.model_validate_json(read("boot")))
    elif stage == "plan":
        print_crosscheck(Plan.model_validate_json(read("plan")), CrossCheck.model_validate_json(read("crosscheck")))
    elif stage == "check":
        for table in check_tables(CheckReport.model_validate_json(read("checks"))):
            console.print(table)
    elif stage == "bench":
        for table in bench_tables(BenchRun.model_validate_json(read("bench"))):
            console.print(table)


def register(app: typer.Typer) -> None:
    @app.command()
    def demo(
        quick: bool = typer.Option(False, "--quick", help="The smallest grid and checks (under 5 min here)."),
        out: Path = typer.Option(None, "--out", help="Run directory (default: runs/<run-id>/)."),
        kv_cache_space_gib: int = typer.Option(2, min=1, help="VLLM_CPU_KVCACHE_SPACE, GiB of KV cache."),
        port: int = typer.Option(None, min=1, max=65535, help="Engine port on 127.0.0.1 (default: a free one)."),
    ) -> None:
        """Start the embedded engine, plan, check, benchmark, report, stop: the whole job, end to end."""
        with live_progress() as on_progress:
            manifest = api.demo(quick=quick, out_dir=out, kv_cache_space_gib=kv_cache_space_gib, port=port,
                                on_progress=on_progress, on_stage_done=_render_stage)
        table = Table(title="stage timings (s)")
        for name in manifest.stage_timings_s:
            table.add_column(name, justify="right")
        table.add_row(*(f"{v:.1f}" for v in manifest.stage_timings_s.values()))
        console.print(table)
        run_dir = out or Path("runs") / manifest.run_id
        console.print(f"[bold green]done[/]: report {run_dir / RUN_FILES['report_md']}")
