"""`onechip bench URL`: parse flags, build a BenchConfig, call onechip.api.bench (or api.find_max with
--find-max), draw the article tables, the agent turns, the open-loop slip and the SLO search."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from onechip import api
from onechip.cli.options import on_command_line, options_from
from onechip.cli.render import console, live_progress, print_json, print_whole, print_written, said, titled_table
from onechip.errors import ConfigError
from onechip.paths import ctrl_c_says_what_is_kept, run_dir
from onechip.report.markdown_bench import waits_text
from onechip.report.search import (
    at_percentile_text,
    clients_answer,
    cost_share_text,
    probe_load_text,
    probe_verdict,
    seeds_range_text,
)
from onechip.schemas import BenchConfig, BenchRun, Plan
from onechip.schemas.bench import LATE_SEND_MS, TTFT_CONVENTION, PolicyComparison, SearchResult, ms_text
from onechip.schemas.common import plural
from onechip.schemas.inputs import build_request
from onechip.schemas.run import BENCH_FILES

PLAN_HELP = "Plan JSON from `onechip plan --json`: cells beyond its KV pool or max_model_len are recorded infeasible."
OUT_HELP = "Directory for requests.jsonl and summary.json (default: a new runs/<run-id>/ per run)."
RESUME_HELP = "Continue the run saved in this directory, with its settings (complete repetitions are kept)."


def _load_plan(path: Path | None) -> Plan | None:
    if path is None:
        return None
    return Plan.from_file(path)


def _grid(run: BenchRun, title: str, value: str, fmt: str | Callable[[float], str]) -> Table:
    """One article table: rows = context tokens, columns = clients; infeasible/failed cells say so."""
    clients = sorted({c.clients for c in run.cells})
    table = titled_table(title, title_justify="left")
    table.add_column("context", justify="right")
    for n in clients:  # open loop: the rate and the in-flight cap (a --rate run's one stream is no client)
        name = f"{n} client{'' if n == 1 else 's'}" if run.config.rate_per_s is None else run.config.load_text(n)
        table.add_column(name, justify="right")
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
                text = fmt if callable(fmt) else fmt.format
                row.append((text(v) if v is not None else "-") + cv)
        table.add_row(*row)
    return table


def bench_tables(run: BenchRun) -> list[Table]:
    """The seed article's three tables: aggregate output tok/s (median over reps, ± CV; the steady window,
    then the whole-run figure peers report), median TTFT ms, per-stream tok/s. Reusable by `onechip demo`."""
    return [
        _grid(run, "aggregate output tok/s, steady window (median of reps, ± CV)", "output_tok_per_s", "{:,.1f}"),
        _grid(
            run, "whole-run output tok/s (as vllm bench serve / GuideLLM / AIPerf)", "whole_run_tok_per_s", "{:,.1f}"
        ),
        _grid(run, "median TTFT ms", "ttft", ms_text),
        _grid(run, "per-stream tok/s (1000 / TPOT)", "per_stream_tok_per_s", "{:,.1f}"),
    ] + (
        [_grid(run, f"goodput requests/s ({run.config.slo_text()})", "goodput_per_s", "{:,.2f}")]
        if run.config.slo
        else []
    )


def print_run(run: BenchRun, out: Console) -> None:
    for table in bench_tables(run):
        print_whole(table, out)
    for cell in run.cells:
        label = run.config.cell_label(cell.context_tokens, cell.clients)
        if cell.reason:
            out.print(f"[yellow]{label}[/]: {said(cell.reason)}")
        if cell.status == "ok" and cell.requests_failed:
            measured = cell.requests_failed + sum(r.requests_ok for r in cell.reps)
            out.print(
                f"[red]{label}[/]: {cell.requests_failed} of {measured} measured "
                f"requests failed (their tokens are not counted); first: {said(cell.first_error)}"
            )
        if cell.requests_asked_wait:
            out.print(f"[yellow]{label}[/]: the server asked for waits (Retry-After): {waits_text(cell)}")
        if cell.requests_ended_early:
            out.print(
                f"[yellow]{label}[/]: {cell.requests_ended_early} "
                "requests ended before --output-tokens (server stopped early)"
            )
        if cell.requests_over_max_tokens:
            out.print(
                f"[red]{label}[/]: {cell.requests_over_max_tokens} "
                "requests got more tokens than max_tokens (server usage; the server did not honour it)"
            )
    for table in turn_tables(run) + replica_tables(run):
        print_whole(table, out)
    if (schedule := run.config.open_loop_text()) is not None:
        out.print(schedule)
    for line in slip_lines(run):
        out.print(line)
    for note in run.notes:
        out.print(f"[yellow]note[/] {said(note)}")
    out.print(f"[dim]{TTFT_CONVENTION}; ITL convention: {run.itl_convention}[/]")


def turn_tables(run: BenchRun) -> list[Table]:
    """Agent workload: one table per cell, a row per turn: prompt and cached tokens, cached share, TTFT, TPOT."""
    tables = []
    for cell in run.cells:
        if not cell.turns:
            continue
        hit = cell.server_metrics_delta.get("prefix_cache_hit_rate")
        server = f", server prefix-cache hit rate {hit:.0%}" if hit is not None else ""
        table = titled_table(
            f"agent sessions: {cell.context_tokens:,}-token shared prefix x {plural(cell.clients, 'client')}{server}",
            title_justify="left",
        )
        for name in ("turn", "requests", "prompt tok", "cached tok", "cached", "TTFT ms p50", "TTFT p90", "TPOT ms"):
            table.add_column(name, justify="right")
        for t in cell.turns:
            table.add_row(
                str(t.turn + 1),
                str(t.requests) + (f" ({t.requests_failed} failed)" if t.requests_failed else ""),
                _num(t.prompt_tokens.median, "{:,.0f}"),
                _num(t.cached_tokens.median, "{:,.0f}"),
                _num(t.cached_share, "{:.0%}"),
                _ms(t.ttft_ms.median),
                _ms(t.ttft_ms.p90),
                _ms(t.tpot_ms.median),
            )
        tables.append(table)
    return tables


def replica_tables(run: BenchRun) -> list[Table]:
    """Behind a router: per cell, what each replica served (its own /metrics) beside the aggregate, and
    requests sent = ok + failed."""
    tables = []
    for c in run.cells:
        if not c.replicas:
            continue
        sent = f"; sent {c.requests_sent} = ok {c.requests_ok} + failed {c.requests_failed}" if c.requests_sent else ""
        table = titled_table(
            f"replicas: {c.context_tokens:,} x {plural(c.clients, 'client')}, aggregate "
            f"{_num(c.output_tok_per_s, '{:,.1f}')} tok/s{sent}", title_justify="left",
        )  # fmt: skip
        for name in ("replica", "URL", "requests", "prompt tok", "output tok", "prefix-cache hits"):
            table.add_column(name, justify="right")
        for r in c.replicas:
            table.add_row(
                str(r.index), r.url, _num(r.requests, "{:,.0f}") if r.answered else "[red]no /metrics[/]",
                _num(r.prompt_tokens, "{:,.0f}"), _num(r.generation_tokens, "{:,.0f}"),
                _num(r.prefix_cache_hit_rate, "{:.0%}"),
            )  # fmt: skip
        tables.append(table)
    return tables


def policy_table(result: PolicyComparison) -> Table:
    """`--router-policies`: one row per policy and cell: cache hit share, throughput, TTFT per turn."""
    table = titled_table(f"routing policies through {result.base_url}", title_justify="left")
    for name in ("policy", "cell", "cached share", "server hit rate", "tok/s", "TTFT ms p50 by turn", "per replica"):
        table.add_column(name, justify="right")
    for run in result.runs:
        for c in run.cells:
            table.add_row(
                run.policy, f"{c.context_tokens:,} x {c.clients}", _num(c.cached_share, "{:.0%}"),
                _num(c.server_hit_rate, "{:.0%}"), _num(c.output_tok_per_s, "{:,.1f}"),
                " / ".join(_ms(t) for t in c.ttft_ms_by_turn),
                " / ".join(_num(n, "{:,.0f}") for n in c.requests_by_replica),
            )  # fmt: skip
    return table


def print_policies(result: PolicyComparison, out_dir: Path, as_json: bool) -> None:
    """A policy comparison (bench or simulate --router-policies): its JSON, or the table and where its runs are."""
    if as_json:
        print_json(result)
    else:
        print_whole(policy_table(result))
    print_written(f"{out_dir}/policies.json; each run under {out_dir}/<policy>/", as_json)


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def _ms(value: float | None) -> str:
    return "-" if value is None else ms_text(value)


def slip_lines(run: BenchRun) -> list[str]:
    """Open loop: a warning per cell whose schedule slipped (the server could not keep up)."""
    out = []
    rate = run.config.rate_per_s
    schedule = "" if rate is not None else " replaying the trace"  # a rate is in cell_text
    for c in run.cells:
        if not c.schedule_slipped:
            continue
        out.append(
            f"[red]schedule slipped[/] {run.config.cell_text(c.context_tokens, c.clients)}{schedule}: "
            f"{c.late_share or 0:.0%} of requests sent >{LATE_SEND_MS:g} ms late (slip p50 "
            f"{_num(c.slip_ms.median, '{:,.0f}')} ms, p99 {_num(c.slip_ms.p99, '{:,.0f}')} ms); the server "
            f"served {_num(c.request_rate_per_s, '{:.2f}')} req/s. TTFT from the intended send: p50 "
            f"{_ms(c.ttft_from_intended_ms.median)} ms (vs {_ms(c.ttft_ms.median)} ms "
            "from the actual send)"
        )
    return out


def search_table(result: SearchResult) -> Table:
    """`--find-max`: every probe, in load order, with its verdict and the SLO metrics at the percentile."""
    unit = "clients" if result.kind == "clients" else "req/s"
    table = titled_table(f"SLO search ({_slo_of(result.slo)} at p{result.percentile:g})", title_justify="left")
    rate = result.kind == "rate"  # a rate probe's request count follows its rate: said per probe
    names = (unit, *(["requests"] * rate), "verdict", *(f"p{result.percentile:g} {k}" for k in result.slo), "met SLO")
    for name in (*names, "tok/s steady"):
        table.add_column(name, justify="right")
    for p in sorted(result.probes, key=lambda p: p.load):
        verdict = escape(probe_verdict(result, p))
        verdict = verdict.replace("meets", "[green]meets[/]", 1) if p.meets_slo else f"[red]{verdict}[/]"
        table.add_row(
            f"{p.load:g}",
            *([f"{p.requests_sent:,}"] * rate),
            verdict.replace("cannot tell", "[yellow]cannot tell[/]")
            + (" [yellow]slipped[/]" if p.schedule_slipped else ""),
            *(escape(at_percentile_text(result, p, k)) for k in result.slo),
            _num(p.attainment, "{:.0%}"),
            _num(p.output_tok_per_s, "{:,.1f}"),
        )
    return table


def _slo_of(slo: dict[str, float]) -> str:
    return ", ".join(f"{k} <= {v:g}" for k, v in slo.items())


def print_search(result: SearchResult, out: Console) -> None:
    print_whole(search_table(result), out)
    what = clients_answer(result) if result.kind == "clients" else f"{result.max_rate_per_s:g} requests/s"
    at = f", {result.output_tok_per_s:,.1f} output tok/s there (steady window)" if result.output_tok_per_s else ""
    predicted = " (predicted)" if result.prediction is not None else ""
    out.print(f"[bold]max load meeting the SLOs{predicted}: {what}[/]{at}; stopped: {said(result.bound_reason)}")
    if (seeds := seeds_range_text(result)) is not None:
        out.print(seeds)
    if (probes := probe_load_text(result)) is not None:
        out.print(f"probes: {probes}")
    if (share := cost_share_text(result)) is not None:
        out.print(f"priced per chip: {share}")
    for c in result.costs:
        out.print(
            f"  {c.chip} {c.pricing} ({c.region}): ${c.usd_per_mtok:,.3f}/Mtok output, ${c.monthly_usd:,.0f}/month"
        )
    if result.kv_wall_clients is not None:
        out.print(f"KV wall (plan): {plural(result.kv_wall_clients, 'client')} at the longest prompt + output")
    if result.prediction is None:
        out.print("[dim]one measurement per load on this machine: neighbours of the answer are in the table[/]")
    else:
        out.print(f"[dim]every seed's requests together judge a probe, as bench's reps; \\[lowest-highest] over one "
                  f"seed's requests; {result.prediction.note}[/]")  # fmt: skip
    for note in result.notes:
        out.print(f"note: {said(note)}")


def _search(config: BenchConfig, out: Path, plan: Path | None, json_out: bool) -> None:
    with live_progress(transient=True) as on_progress:
        result = api.find_max(config, on_progress, out_dir=out, plan=_load_plan(plan))
    if json_out:
        print_json(result)
    else:
        print_search(result, console)
    print_written(f"{out}/search.json, one run per probe under {out}/", json_out)


def _measure(config: BenchConfig, out_dir: Path, plan: Path | None, json_out: bool, resume: bool) -> None:
    """Measure `config` into `out_dir` (continuing its run when `resume`) and print it; then raises what
    api.bench_unmeasured says of a run that measured nothing (every cell failed, or none could run)."""
    if config.router_policies:
        with live_progress(transient=True) as on_progress:
            result = api.compare_policies(config, on_progress, out_dir=out_dir, plan=_load_plan(plan))
        print_policies(result, out_dir, json_out)
        return
    with live_progress(transient=True) as on_progress:
        run = api.bench(config, on_progress, out_dir=out_dir, plan=_load_plan(plan), resume=resume)
    if json_out:
        print_json(run)
    else:
        print_run(run, console)
    print_written(f"{out_dir}/summary.json, {out_dir}/requests.jsonl", json_out)
    if (error := api.bench_unmeasured(run, out_dir)) is not None:
        raise error


BENCH_HELP = (
    "Measure a context x clients grid (or agent sessions, or a trace): aggregate tok/s, TTFT, TPOT, ITL, per-stream "
    f"tok/s, /metrics; --find-max searches the largest load meeting --slo.\n\n{TTFT_CONVENTION}."
)


def register(app: typer.Typer) -> None:
    @app.command(help=BENCH_HELP)
    @options_from(BenchConfig, optional={"base_url"})
    def bench(
        ctx: typer.Context,
        plan: Annotated[Path | None, typer.Option("--plan", help=PLAN_HELP)] = None,
        out: Annotated[Path | None, typer.Option("--out", help=OUT_HELP)] = None,
        resume: Annotated[Path | None, typer.Option("--resume", help=RESUME_HELP)] = None,
        json_out: bool = typer.Option(False, "--json", help="Print the BenchRun as JSON."),
        **fields: Any,
    ) -> None:
        """Measure a context x clients grid (or agent sessions, or a trace): aggregate tok/s, TTFT, TPOT, ITL,
        per-stream tok/s, /metrics; --find-max searches the largest load meeting --slo."""
        given = on_command_line(ctx)
        if resume is not None and "out" in given:
            raise ConfigError("give --out or --resume, not both")
        saved = api.saved_bench_config(resume) if resume is not None else None
        if saved is not None:  # the saved run decides; flags given now must agree (the runner checks)
            config = BenchConfig.resumed(saved, {k: v for k, v in fields.items() if k in given})
        elif fields.get("base_url") is None:
            if resume is not None:
                raise ConfigError(api.nothing_to_resume(resume))
            raise ConfigError("bench needs the server URL (or --resume DIR of a run that saved its summary)")
        else:
            config = build_request(BenchConfig, fields)
        if config.find_max is not None:
            if resume is not None:
                raise ConfigError("--find-max resumes when run again into the same --out: give --out, not --resume")
            with run_dir(out) as out_dir, ctrl_c_says_what_is_kept("bench", out_dir, *BENCH_FILES):
                return _search(config, out_dir, plan, json_out)
        # --resume's run, else --out, else a new runs/<run-id>/ per run (removed again when nothing was written in it)
        picked = nullcontext(resume) if resume is not None else run_dir(out)
        with picked as out_dir, ctrl_c_says_what_is_kept("bench", out_dir, *BENCH_FILES):
            _measure(config, out_dir, plan, json_out, resume is not None)
