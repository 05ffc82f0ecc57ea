"""`onechip demo`: the whole pipeline, rendered stage by stage: on the embedded engine, on a host you have
(--engine vllm|vllm-docker --host), or on a Cloud TPU it provisions first (--cloud gcp)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from onechip import api, paths
from onechip.cli.bench_cmd import bench_tables
from onechip.cli.check_cmd import check_tables
from onechip.cli.cloud_cmd import YES, ask_up
from onechip.cli.engine_cmds import print_boot
from onechip.cli.options import options_from
from onechip.cli.render import console, live_progress, print_whole, said, titled_table
from onechip.paths import ctrl_c_says_what_is_kept
from onechip.schemas import RUN_FILES, BenchRun, BootRecord, CheckReport, CrossCheck, Plan
from onechip.schemas.cloud import CloudNameRequest
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import DemoRequest


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
        console.print(f"  {said(cross.note)}")


def _render_stage(stage: str, run_dir: Path) -> None:
    def read(key: str) -> str:
        return (run_dir / RUN_FILES[key]).read_text()

    if stage == "boot":
        print_boot(BootRecord.model_validate_json(read("boot")))
    elif stage == "plan":
        print_crosscheck(Plan.model_validate_json(read("plan")), CrossCheck.model_validate_json(read("crosscheck")))
    elif stage == "check":
        for table in check_tables(CheckReport.model_validate_json(read("checks"))):
            print_whole(table)
    elif stage == "bench":
        for table in bench_tables(BenchRun.model_validate_json(read("bench"))):
            print_whole(table)


def register(app: typer.Typer) -> None:
    @app.command()
    @options_from(DemoRequest)
    def demo(yes: bool = YES, **fields: Any) -> None:
        """The whole job end to end: up, plan, check, benchmark, price, report, down (embedded engine by
        default; --engine vllm|vllm-docker --host on your host; --cloud gcp on a TPU it gets and deletes)."""
        request = build_request(DemoRequest, fields)
        # a TPU is created (or onechip's live one resumed) and billed: asked first, as `cloud up` asks
        if request.cloud and not request.again:
            ask_up(api.demo_cloud_request(request), yes, to_stderr=True, purpose=" for the demo")
        # --out, else a new runs/<run-id>/ (removed again when nothing was written in it): a Ctrl-C then says where
        picked = paths.run_dir(request.out_dir, request.runs_root)
        with picked as out_dir, ctrl_c_says_what_is_kept("demo", out_dir, RUN_FILES["manifest"]):
            with live_progress() as on_progress:
                in_out_dir = request.model_copy(update={"out_dir": out_dir})
                manifest = api.demo(in_out_dir, on_progress, on_stage_done=_render_stage)
            table = titled_table("stage timings (s)")
            for name in manifest.stage_timings_s:
                table.add_column(name, justify="right")
            table.add_row(*(f"{v:.1f}" for v in manifest.stage_timings_s.values()))
            print_whole(table)
            console.print(f"[bold green]done[/]: report {out_dir / RUN_FILES['report_md']}")
            if request.cloud and request.keep:
                print_kept(request)


def print_kept(request: DemoRequest) -> None:
    """After `demo --cloud gcp --keep`: what is still billing, and the command that deletes it."""
    name = api.tpu_name(api.demo_cloud_request(request))
    for st in api.cloud_status(CloudNameRequest(name=name)):
        r = st.resource
        console.print(f"[yellow]kept[/] {r.kind} {r.name} ({r.zone}, {r.provisioning}), billing; delete it: "
                      f"onechip cloud down --name {r.name} --zone {r.zone} --project {r.project} --yes",
                      highlight=False, soft_wrap=True)  # fmt: skip
