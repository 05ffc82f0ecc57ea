"""`onechip bench URL`: parse flags, build a BenchConfig, call onechip.api.bench, draw the article tables."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.table import Table

from onechip import api
from onechip.cli.options import int_list
from onechip.cli.render import console, live_progress
from onechip.errors import ConfigError, EndpointError
from onechip.schemas import BenchConfig, BenchRun, Plan

PLAN_HELP = "Plan JSON from `onechip plan --json`: cells beyond its KV pool or max_model_len are recorded infeasible."
OUT_HELP = "Directory for requests.jsonl and summary.json."
RESUME_HELP = "Continue the run saved in this directory, with its settings (complete repetitions are kept)."
DEFAULT_OUT = Path("runs/bench")


def _ints(flag: str, text: str) -> list[int]:
    values = int_list(flag, text)
    if not values or min(values) < 1:
        raise ConfigError(f"{flag} needs positive integers, got {text!r}")
    return values


def _slo(text: str | None) -> dict[str, float]:
    """'ttft_ms=500,tpot_ms=50' -> {'ttft_ms': 500.0, 'tpot_ms': 50.0}."""
    if not text:
        return {}
    try:
        return {k.strip(): float(v) for k, v in (part.split("=", 1) for part in text.split(",") if part.strip())}
    except ValueError:
        raise ConfigError(f"--slo must look like ttft_ms=500,tpot_ms=50, got {text!r}") from None


def _arrivals(text: str) -> Literal["poisson", "constant"]:
    if text not in ("poisson", "constant"):
        raise ConfigError(f"--arrivals must be poisson or constant, got {text!r}")
    return "poisson" if text == "poisson" else "constant"


def _load_plan(path: Path | None) -> Plan | None:
    if path is None:
        return None
    try:
        return Plan.model_validate_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--plan {path}: not a readable Plan JSON ({str(exc).splitlines()[0]})") from None


def _grid(run: BenchRun, title: str, value: str, fmt: str) -> Table:
    """One article table: rows = context tokens, columns = clients; infeasible/failed cells say so."""
    clients = sorted({c.clients for c in run.cells})
    table = Table(title=title, title_justify="left")
    table.add_column("context", justify="right")
    for n in clients:
        table.add_column(f"{n} client{'' if n == 1 else 's'}", justify="right")
    for ctx in sorted({c.context_tokens for c in run.cells}):
        row = [f"{ctx:,}"]
        for n in clients:
            cell = next((c for c in run.cells if c.context_tokens == ctx and c.clients == n), None)
            if cell is None:
                row.append("")
            elif cell.status != "ok":
                row.append(f"[red]{cell.status}[/]" if cell.status == "failed" else f"[dim]{cell.status}[/]")
            else:
                v = cell.ttft_ms.median if value == "ttft" else getattr(cell, value)
                cv = (
                    f" [dim]±{cell.cv_output_tok_per_s:.0%}[/]"
                    if value == "output_tok_per_s" and cell.cv_output_tok_per_s is not None
                    else ""
                )
                row.append((fmt.format(v) if v is not None else "-") + cv)
        table.add_row(*row)
    return table


def bench_tables(run: BenchRun) -> list[Table]:
    """The seed article's three tables: aggregate output tok/s (median over reps, ± CV), median TTFT ms,
    per-stream tok/s. Reusable by `onechip demo`."""
    return [
        _grid(run, "aggregate output tok/s (median of reps, ± CV)", "output_tok_per_s", "{:,.1f}"),
        _grid(run, "median TTFT ms", "ttft", "{:,.1f}"),
        _grid(run, "per-stream tok/s (1000 / TPOT)", "per_stream_tok_per_s", "{:,.1f}"),
    ] + ([_grid(run, f"goodput requests/s ({_slo_text(run)})", "goodput_per_s", "{:,.2f}")] if run.config.slo else [])


def _slo_text(run: BenchRun) -> str:
    return ", ".join(f"{k} <= {v:g}" for k, v in run.config.slo.items())


def print_run(run: BenchRun, out: Console) -> None:
    for table in bench_tables(run):
        out.print(table)
    for cell in run.cells:
        if cell.reason:
            out.print(f"[yellow]{cell.context_tokens:,} x {cell.clients}[/]: {cell.reason}")
        if cell.status == "ok" and cell.requests_failed:
            measured = cell.requests_failed + sum(r.requests_ok for r in cell.reps)
            out.print(
                f"[red]{cell.context_tokens:,} x {cell.clients}[/]: {cell.requests_failed} of {measured} measured "
                f"requests failed (their tokens are not counted); first: {cell.first_error}"
            )
        if cell.requests_ended_early:
            out.print(
                f"[yellow]{cell.context_tokens:,} x {cell.clients}[/]: {cell.requests_ended_early} "
                "requests ended before --output-tokens (server stopped early)"
            )
    for note in run.notes:
        out.print(f"[yellow]note[/] {note}")
    out.print(f"[dim]ITL convention: {run.itl_convention}[/]")


# CLI parameter -> BenchConfig field, where the names differ; parameters that are not config are left out
_FIELD = {"url": "base_url", "rate": "rate_per_s", "timeout_s": "request_timeout_s"}
_NOT_CONFIG = {"plan", "out", "resume", "json_out"}


def _on_command_line(ctx: typer.Context) -> set[str]:
    """Parameters the user set on the command line (not left at their defaults)."""
    # by name: typer may hand over its own copy of click's ParameterSource enum
    return {name for name in ctx.params if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"}


def register(app: typer.Typer) -> None:
    @app.command()
    def bench(
        ctx: typer.Context,
        url: str = typer.Argument(None, help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000."),
        model: str = typer.Option(None, help="Served model name (default: first from /v1/models)."),
        contexts: str = typer.Option("128,1024", help="Prompt lengths in tokens, comma-separated."),
        clients: str = typer.Option("1,4", help="Concurrent closed-loop streams, comma-separated."),
        reps: int = typer.Option(2, min=1, help="Repetitions per cell."),
        output_tokens: int = typer.Option(32, min=1, help="Output tokens per request."),
        requests_per_client: int = typer.Option(None, min=1, help="Measured requests per stream per rep [2]."),
        duration_s: float = typer.Option(
            None, "--duration-s", min=0.001, help="Instead: each stream sends measured requests for S seconds."
        ),
        warmup_requests: int = typer.Option(None, min=0, help="Unmeasured requests per stream before the window [1]."),
        warmup_s: float = typer.Option(None, "--warmup-s", min=0, help="Instead: each stream warms up for S seconds."),
        workers: int = typer.Option(1, min=1, help="Client processes the streams are split across."),
        prefix_reuse: bool = typer.Option(False, "--prefix-reuse", help="No unique first line per request."),
        rate: float = typer.Option(None, "--rate", min=0.001, help="Open loop: arrivals/s (clients = max in flight)."),
        arrivals: str = typer.Option(None, "--arrivals", help="Open-loop arrivals: poisson (the default) or constant."),
        slo: str = typer.Option(None, "--slo", help="Goodput objectives, e.g. ttft_ms=500,tpot_ms=50."),
        plan: Annotated[Path | None, typer.Option("--plan", help=PLAN_HELP)] = None,
        force: bool = typer.Option(False, "--force", help="Run cells the plan says are beyond the KV pool."),
        timeout_s: float = typer.Option(300.0, min=0.001, help="Per-request timeout, seconds."),
        out: Annotated[Path, typer.Option("--out", help=OUT_HELP)] = DEFAULT_OUT,
        resume: Annotated[Path | None, typer.Option("--resume", help=RESUME_HELP)] = None,
        json_out: bool = typer.Option(False, "--json", help="Print the BenchRun as JSON."),
    ) -> None:
        """Measure a context x clients grid: aggregate tok/s, TTFT, TPOT, ITL, per-stream tok/s, /metrics."""
        if requests_per_client is not None and duration_s is not None:
            raise ConfigError("give --requests-per-client or --duration-s, not both")
        if warmup_requests is not None and warmup_s is not None:
            raise ConfigError("give --warmup-requests or --warmup-s, not both")
        if arrivals is not None and rate is None:
            raise ConfigError("--arrivals shapes open-loop arrivals: give --rate too")
        given = _on_command_line(ctx)
        if resume is not None and "out" in given:
            raise ConfigError("give --out or --resume, not both")
        saved = api.saved_bench_config(resume) if resume is not None else None
        if url is None and saved is None:
            raise ConfigError("bench needs the server URL (or --resume DIR of a run that saved its summary)")
        optional = {
            "requests_per_client": requests_per_client,
            "warmup_requests": warmup_requests,
            "arrivals": _arrivals(arrivals) if arrivals else None,
        }
        config = BenchConfig(
            base_url=url or (saved.base_url if saved else ""),
            model=model,
            contexts=_ints("--contexts", contexts),
            clients=_ints("--clients", clients),
            reps=reps,
            output_tokens=output_tokens,
            duration_s=duration_s,
            warmup_s=warmup_s,
            workers=workers,
            prefix_reuse=prefix_reuse,
            request_timeout_s=timeout_s,
            force=force,
            slo=_slo(slo),
            rate_per_s=rate,
            **{k: v for k, v in optional.items() if v is not None},  # unset: BenchConfig's defaults
        )
        if saved is not None:  # the saved run decides; flags given now must agree (the runner checks)
            config = saved.model_copy(
                update={_FIELD.get(n, n): getattr(config, _FIELD.get(n, n)) for n in given - _NOT_CONFIG}
            )
        out_dir = resume or out
        with live_progress(transient=True) as on_progress:
            run = api.bench(config, out_dir, plan=_load_plan(plan), resume=resume is not None, on_progress=on_progress)
        if json_out:
            typer.echo(run.model_dump_json(indent=2))
        else:
            print_run(run, console)
            console.print(f"[dim]{out_dir}/summary.json, {out_dir}/requests.jsonl[/]")
        failed = [c for c in run.cells if c.status == "failed"]
        if failed and not any(c.status == "ok" for c in run.cells):
            raise EndpointError(f"every measured cell failed; first: {failed[0].reason}")
