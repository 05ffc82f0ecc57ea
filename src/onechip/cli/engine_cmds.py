"""`onechip up`, `status`, `logs`, `down`: a serving engine as a detached service (embedded, vllm,
docker; here or over SSH)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, BinaryIO

import typer
from rich.markup import escape

from onechip import api
from onechip.cli.options import options_from
from onechip.cli.plan_cmd import print_crosscheck, print_serve_command
from onechip.cli.render import console, live_progress, print_json, said
from onechip.engines.launch import LaunchSpec, ReplicaSetLaunch, UpResult
from onechip.errors import ConfigError, one_line
from onechip.schemas import BootRecord, EngineState, EngineStatus
from onechip.schemas.common import plural
from onechip.schemas.inputs import build_request
from onechip.schemas.logs import LogSummary, SummarizeLogsRequest
from onechip.schemas.requests import UpRequest
from onechip.vllm.bootlog import stage_durations
from onechip.vllm.log_summary import NO_VERDICT, verdict_line


def print_boot(boot: BootRecord) -> None:
    console.print(
        f"[bold green]ready[/] {boot.model} at {boot.base_url}  (vLLM {boot.engine_version}, "
        f"healthy after {boot.ready_s} s)"
    )
    if boot.kv_cache_tokens is not None:
        console.print(
            f"KV cache: {boot.kv_cache_tokens:,} tokens; max concurrency {boot.max_concurrency}x "
            f"at {boot.max_concurrency_context:,} tokens per request"
        )
    console.print(f"log: {boot.log_path}")


def print_log_summary(summary: LogSummary) -> None:
    """The summary as `logs --summary` prints it: the source and the boot's verdict (log_summary.verdict_line, the
    words MCP summarize_logs says), the traps, then each kept line with its number and kind."""
    verdict = verdict_line(summary.boot) if summary.boot is not None else NO_VERDICT
    typer.echo(f"{summary.source}: {plural(summary.total_lines, 'line')}\n{verdict}")
    for trap in summary.traps:
        typer.echo(f"trap: {trap}")
    cut = summary.dropped + summary.dropped_errors
    if summary.lines:
        typer.echo(f"kept lines ({cut:,} cut from the middle):" if cut else "kept lines:")
    for line in summary.lines:
        typer.echo(f"{line.number:>7} {line.kind:<8} {line.text}")


def print_launch(spec: LaunchSpec) -> None:
    """The serve command as `plan` prints it (flags and reasons, then its shell line), the warnings, then
    the exact shell lines run (docker/SSH wrap the command; locally they are its line) - no secret in any."""
    print_serve_command(spec.command, console)
    _print_warnings_and_commands(spec.warnings, spec.commands)


def print_replica_launch(launch: ReplicaSetLaunch) -> None:
    """Each replica's pins, the router's flags with reasons, then every shell line `up` runs."""
    console.print(
        f"[bold]{len(launch.replicas)} x {launch.engine}[/], {launch.chips_per_replica} chip(s)/core(s) each, "
        f"behind vllm-router ({launch.router.policy}) at {launch.router.url}"
    )
    for k, pin in enumerate(launch.pins):
        pinned = " ".join(f"{key}={value}" for key, value in pin.items()) or "a host of its own"
        console.print(f"  replica {k}: port {launch.replicas[k].port}; {pinned}", highlight=False)
    for item in launch.router.flags:
        console.print(f"  router {item.flag} {' '.join(item.values)}  # {item.reason}", highlight=False)
    _print_warnings_and_commands(launch.warnings, launch.commands)


def _print_warnings_and_commands(warnings: list[str], commands: list[str]) -> None:
    """A launch's warnings, then every shell line `up` runs (plain, so they can be copied)."""
    for warning in warnings:
        console.print(f"[yellow]warning[/] {escape(warning)}", highlight=False)
    console.print("[bold]commands:[/]")
    for line in commands:
        typer.echo(line)


def print_replicas(st: EngineStatus) -> None:
    """The router, then one line per replica: URL, process, health, KV cache, requests served."""
    if st.router is None:
        return
    r = st.router
    health = "[green]healthy[/]" if r.healthy else "[red]not healthy[/]"
    where = f"pid {r.pid}" if r.pid is not None else "not started"
    console.print(f"router {health} {r.url} ({r.policy}, {where})  log: {r.log_path}", highlight=False)
    for rep in st.replicas:
        mark = "[green]healthy[/]" if rep.healthy else ("[red]dead[/]" if not rep.alive else "[red]not healthy[/]")
        where = f"container {rep.container}" if rep.container else f"pid {rep.pid}"
        kv = f"KV {rep.kv_cache_usage_perc:.0%}" if rep.kv_cache_usage_perc is not None else "KV -"
        served = f"{rep.requests_served:.0f}" if rep.requests_served is not None else "-"
        routed = f"{rep.routed_requests:.0f}" if rep.routed_requests is not None else "-"
        note = f"  ({said(rep.note)})" if rep.note else ""
        console.print(
            f"  replica {rep.index} {mark} {rep.url} ({where}) {kv}; served {served}, routed {routed}{note}",
            highlight=False,
        )


def engine_words(state: EngineState) -> str:
    """What runs the engine `state` records, as `down` names what it stops: 'pid N' (a local process group), 'container
    C[ on HOST]', 'pid N on HOST' (EngineState.pid is 0 for the last two: no local process)."""
    where = f" on {state.host}" if state.host else ""
    if state.mode == "docker":
        return f"container {state.container}{where}"
    if state.mode == "remote-process":
        return f"pid {state.remote_pid}{where}" if state.remote_pid is not None else f"process group{where}"
    return f"pid {state.pid}"


def print_up(result: UpResult) -> None:
    if result.replica_set is not None:
        for k, boot in enumerate(result.boots):
            console.print(f"replica {k}: ", end="")
            print_boot(boot)
        console.print(f"[bold green]router[/] {result.replica_set.router.url} ({result.replica_set.router.policy})")
        return
    if result.boot is None:
        return
    print_boot(result.boot)
    boot = result.boot
    if boot.hbm_gib:
        hbm = ", ".join(f"{k} {v:.2f}" for k, v in boot.hbm_gib.items())
        console.print(f"HBM (GiB): {hbm}", highlight=False)
    stages = stage_durations(boot)
    if stages:
        # signed by the format ('z': a step that rounds to 0 is '+0', not '-0'), so a line stamped before the one above
        # it (two processes logging) is '-2 s', never '+-2 s'
        console.print("timeline: " + ", ".join(f"{name} {s:+z.0f} s" for name, s in stages), highlight=False)
    if result.crosscheck is not None:
        print_crosscheck(result.crosscheck, "plan vs boot log", console)


def _piped_stdin() -> BinaryIO:
    """The byte stream `onechip logs -` reads: stdin, when a log is piped in. Raises ConfigError when stdin is
    closed (no stream to read) or a terminal (it would wait, silent, for a paste ended by Ctrl-D)."""
    stdin = sys.stdin
    why = "closed" if stdin is None else "a terminal" if stdin.isatty() else None
    if stdin is None or why is not None:
        raise ConfigError(
            f"-: nothing piped in (standard input is {why}): pipe a log in (`kubectl logs POD | onechip logs -`) "
            "or give the log's FILE"
        )
    return stdin.buffer


def register(app: typer.Typer) -> None:
    @app.command()
    @options_from(UpRequest)
    def up(as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."), **fields: Any) -> None:
        """Start a serving engine: embedded (default), vllm or vllm-docker, here or on --host over SSH."""
        request = build_request(UpRequest, fields)
        if request.dry_run:
            result = api.up(request)
        else:
            with live_progress(transient=True) as on_progress:
                result = api.up(request, on_progress)
        for warning in result.warnings:  # on stderr, so --json keeps stdout to the JSON (which holds them too)
            typer.echo(f"warning: {one_line(warning)}", err=True)
        if as_json:
            print_json(result)
            return
        if result.replanned_with:
            sets = [item for item in result.replanned_with if not item.startswith("--")]
            given = ([f"--set {' '.join(sets)}"] if sets else []) + [
                i for i in result.replanned_with if i.startswith("--")
            ]
            console.print(f"re-planned from the plan's request with {escape(' '.join(given))}")
        if result.dry_run and result.replica_set is not None:
            print_replica_launch(result.replica_set)
        elif result.dry_run and result.launch is not None:
            print_launch(result.launch)
        else:
            print_up(result)

    @app.command()
    def logs(
        file: Path | None = typer.Argument(
            None,
            metavar="FILE",
            help="A vLLM log to summarize (a boot log from anywhere; - reads it from stdin); implies --summary.",
        ),
        follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
        replica: int | None = typer.Option(None, "--replica", min=0, help="Replica K's log (up --replicas N)."),
        summary: bool = typer.Option(
            False, "--summary", help="The log distilled: the boot's verdict, then the lines that matter."
        ),
        as_json: bool = typer.Option(False, "--json", help="The summary as JSON (MCP summarize_logs' result)."),
        max_lines: int = typer.Option(80, "--max-lines", min=10, max=2000, help="Most non-error lines kept."),
    ) -> None:
        """Print the log of the engine from `onechip up` (secrets redacted; the router's with replicas), or summarize
        it or a log FILE: started or not and why, length, KV cache, concurrency, version, card."""
        if file is None and not (summary or as_json):
            for line in api.logs(follow, replica):
                typer.echo(line)
            if note := api.logs_note(replica):  # on stderr: stdout holds the log's lines alone
                typer.echo(f"warning: {one_line(note)}", err=True)
            return
        if follow or replica is not None:
            raise ConfigError(
                "--follow and --replica print the running engine's log; a summary (FILE, --summary, "
                "--json) reads a log once: give one or the other"
            )
        piped = _piped_stdin() if file == Path("-") else None  # `logs -`: a log piped in
        request = SummarizeLogsRequest(path=None if piped else file, max_lines=max_lines)
        result = api.summarize_logs(request, piped)
        if as_json:
            print_json(result)
        else:
            print_log_summary(result)

    @app.command()
    def status(json_out: bool = typer.Option(False, "--json", help="Print the status as JSON.")) -> None:
        """Is the engine from `onechip up` running and healthy? Model, URL, uptime."""
        st = api.status()
        if json_out:
            print_json(st)
        elif st.running and st.state:
            health = "[green]healthy[/]" if st.healthy else "[red]not healthy[/]"
            booting = f"  [yellow]{said(st.note)}[/]" if st.note else ""  # booting, a tunnel or log writer gone
            console.print(
                f"{health} {st.state.model} at {st.state.base_url} ({escape(engine_words(st.state))}, "
                f"up {st.uptime_s:.0f} s)  log: {st.state.log_path}{booting}"
            )
        else:  # running with no engine state: replicas booting before their router (api.status)
            console.print(said(st.note) if st.running else f"not running: {said(st.note)}")
        if not json_out:
            print_replicas(st)
        if not st.running or not st.healthy or not all(r.healthy for r in st.replicas):  # a dead replica: 1
            raise typer.Exit(1)

    @app.command()
    def down() -> None:
        """Stop the engine from `onechip up`. Safe to run when nothing is running."""
        with live_progress(transient=True) as on_progress:
            result = api.down(on_progress)
        console.print(said(result.note))
