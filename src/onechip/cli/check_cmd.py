"""`onechip check URL`: capability probes with verdicts, drawn as a table (or printed as JSON)."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from onechip import api
from onechip.cli.options import float_list, int_list
from onechip.cli.render import console, live_progress
from onechip.schemas.checks import CheckReport, CheckResult

VERDICT_STYLE = {
    "pass": "green",
    "partial": "yellow",
    "fail": "red",
    "blocked": "magenta",
    "not_tested": "dim",
}


def check_tables(report: CheckReport) -> list[Table]:
    """The verdict table (one row per domain) and, when the agent ran, the seed demo's agent table."""
    verdicts = Table(title=f"checks: {report.model} at {report.base_url}")
    for col in ("domain", "verdict", "probes passed", "note"):
        verdicts.add_column(col)
    for r in report.results:
        counted = [p for p in r.probes if not p.informational]
        passed = f"{sum(p.verdict == 'pass' for p in counted)}/{len(counted)}"
        style = VERDICT_STYLE.get(r.verdict, "")
        verdicts.add_row(r.domain, f"[{style}]{r.verdict}[/]", passed, r.note[:90])
    tables = [verdicts]
    for r in report.results:
        if r.agent_table is not None and r.agent_table.runs:
            t = r.agent_table
            agent = Table(title="agent (MCP count_ids)")
            for col in ("runs", "correct", "right-filter", "errors", "median s", "filters sent"):
                agent.add_column(col)
            median = f"{t.median_s:.2f}" if t.median_s is not None else "-"
            agent.add_row(
                str(t.runs),
                f"{t.correct}/{t.runs}",
                f"{t.right_filter}/{t.runs}",
                str(t.errors),
                median,
                "; ".join(t.filters_sent)[:80],
            )
            tables.append(agent)
        if r.domain == "long_context":
            tables.append(_needle_table(r))
    return tables


def _needle_table(result: CheckResult) -> Table:
    """One row per long-context probe: prompt tokens, seconds, prompt tok/s (as the seed's longctx.py)."""
    table = Table(title=f"long context (cap {result.conditions.get('cap_tokens', '?')} tokens)")
    for col in ("probe", "verdict", "prompt tokens", "seconds", "prompt tok/s", "note"):
        table.add_column(col)
    for p in result.probes:
        obs = p.observed if isinstance(p.observed, dict) else {}
        secs = obs.get("seconds", round(p.latency_ms / 1000, 3) if p.latency_ms is not None else None)
        style = VERDICT_STYLE.get(p.verdict, "")
        seconds = "-" if secs is None else f"{secs:.2f}"
        table.add_row(p.name, f"[{style}]{p.verdict}[/]", str(obs.get("prompt_tokens", "-")), seconds,
                      str(obs.get("prompt_tok_per_s") or "-"), p.note[:60])
    return table


def register(app: typer.Typer) -> None:
    @app.command()
    def check(
        url: str = typer.Argument(..., help="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000."),
        model: str = typer.Option(None, help="Served model name (default: the first in /v1/models)."),
        only: str = typer.Option(None, help="Comma-separated: smoke,tools,agent,needle,determinism."),
        agent_cases: int = typer.Option(None, help="Agent cases: the seed case, then seeded phrasings."),
        agent_runs: int = typer.Option(None, help="Runs per agent case (the seed demo ran 3)."),
        needle_lengths: str = typer.Option(None, help="Needle prompt lengths in tokens, e.g. 2000,8000."),
        needle_depths: str = typer.Option(None, help="Needle depths 0..1, e.g. 0.1,0.5,0.9."),
        kv_tokens: int = typer.Option(None, help="Engine KV cache tokens (caps needle lengths)."),
        tool_choice: str = typer.Option(None, help="tool_choice modes to probe: auto,named,required."),
        strict_tools: bool = typer.Option(False, "--strict-tools", help="Send tools with `strict: true`."),
        agent_tool_choice: str = typer.Option(None, help="Agent turns: auto, or required-first."),
        out: str = typer.Option(None, "--out", help="Write checks.json and agent transcripts here."),
        json_out: bool = typer.Option(False, "--json", help="Print the CheckReport as JSON."),
    ) -> None:
        """Probe chat, tool calling, an MCP agent, long context and determinism; print verdicts."""
        options = {
            "agent_cases": agent_cases,
            "agent_runs": agent_runs,
            "kv_tokens": kv_tokens,
            "tool_choice": [x.strip() for x in tool_choice.split(",")] if tool_choice else None,
            "strict_tools": True if strict_tools else None,
            "agent_tool_choice": agent_tool_choice,
            "needle_lengths": int_list("--needle-lengths", needle_lengths),
            "needle_depths": float_list("--needle-depths", needle_depths),
        }
        names = [x.strip() for x in only.split(",")] if only else None
        with live_progress(transient=True) as on_progress:
            report = api.check(
                url,
                model=model,
                only=names,
                out_dir=Path(out) if out else None,
                on_progress=on_progress,
                **{k: v for k, v in options.items() if v is not None},
            )
        if json_out:
            typer.echo(report.model_dump_json(indent=2))
            return
        for table in check_tables(report):
            console.print(table)
