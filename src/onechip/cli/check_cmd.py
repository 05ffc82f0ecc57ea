"""`onechip check URL`: capability probes with verdicts, drawn as a table (or printed as JSON).

Exit codes, so a pipeline can gate on it (also in `onechip check --help` and the README):
    0   every domain passed (or has a verdict given to --allow)
    10  a domain did not pass: fail, blocked, partial or not_tested (the table/JSON is printed first)
    6   could not run: the endpoint is unreachable, timed out (--timeout-s), answered garbage, or failed every
        probe's request (5xx or no answer; the verdicts are printed and saved first), or stayed busy (429/503 on
        every retry) for probes that are then not_tested while no other verdict failed
    2   bad input (a flag, --out onto an earlier run)      130  interrupted (finished domains kept in --out)
    143 stopped by SIGTERM (kept as on Ctrl-C)
"""

from __future__ import annotations

from typing import Any

import typer
from rich.table import Table

from onechip import api
from onechip.cli.options import options_from
from onechip.cli.render import console, live_progress, print_json, print_whole, said, titled_table
from onechip.errors import EndpointError
from onechip.paths import ctrl_c_says_what_is_kept
from onechip.schemas.checks import CheckReport, CheckResult
from onechip.schemas.common import cut_at_word
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import CheckRequest
from onechip.schemas.run import RUN_FILES

VERDICT_STYLE = {
    "pass": "green",
    "partial": "yellow",
    "fail": "red",
    "blocked": "magenta",
    "not_tested": "dim",
}

# The most characters of a note the verdict table and the needle table show (the cuts they had); checks.json and the
# report keep each note whole
NOTE_CHARS, PROBE_NOTE_CHARS = 90, 60


def check_tables(report: CheckReport) -> list[Table]:
    """The verdict table (one row per domain) and, when the agent ran, the seed demo's agent table."""
    verdicts = titled_table(f"checks: {report.model} at {report.base_url}")
    for col in ("domain", "verdict", "probes passed", "note"):
        verdicts.add_column(col)
    for r in report.results:
        style = VERDICT_STYLE.get(r.verdict, "")
        verdicts.add_row(r.domain, f"[{style}]{r.verdict}[/]", r.probes_passed(), said(cut_at_word(r.note, NOTE_CHARS)))
    tables = [verdicts]
    for r in report.results:
        if r.agent_table is not None and r.agent_table.runs:
            t = r.agent_table
            agent = titled_table("agent (MCP count_ids)")
            for col in ("backend", "runs", "correct", "right-filter", "errors", "median s", "filters sent"):
                agent.add_column(col)
            median = f"{t.median_s:.2f}" if t.median_s is not None else "-"
            agent.add_row(
                report.options.get("agent", "loop"),
                str(t.runs),
                f"{t.correct}/{t.runs}",
                f"{t.right_filter}/{t.runs}",
                str(t.errors),
                median,
                said("; ".join(t.filters_sent)[:80]),
            )
            tables.append(agent)
        if r.domain == "long_context":
            tables.append(_needle_table(r))
    return tables


def _needle_table(result: CheckResult) -> Table:
    """One row per long-context probe: prompt tokens, seconds, prompt tok/s (as the seed's longctx.py)."""
    table = titled_table(f"long context (cap {result.conditions.get('cap_tokens', '?')} tokens)")
    for col in ("probe", "verdict", "prompt tokens", "seconds", "prompt tok/s", "note"):
        table.add_column(col)
    for p in result.probes:
        obs = p.observed if isinstance(p.observed, dict) else {}
        secs = obs.get("seconds", round(p.latency_ms / 1000, 3) if p.latency_ms is not None else None)
        style = VERDICT_STYLE.get(p.verdict, "")
        seconds = "-" if secs is None else f"{secs:.2f}"
        table.add_row(
            p.name,
            f"[{style}]{p.verdict}[/]",
            str(obs.get("prompt_tokens", "-")),
            seconds,
            str(obs.get("prompt_tok_per_s") or "-"),
            said(cut_at_word(p.note, PROBE_NOTE_CHARS)),
        )
    return table


def register(app: typer.Typer) -> None:
    @app.command()
    @options_from(CheckRequest)
    def check(
        json_out: bool = typer.Option(False, "--json", help="Print the CheckReport as JSON."), **fields: Any
    ) -> None:
        """Probe chat, tool calling, an MCP agent, long context and determinism; print verdicts.

        Exit 0: all pass (or --allow'ed); 10: a verdict did not pass; 6: could not run (endpoint down,
        timed out, garbage answers, every probe's request failed at the server, or it stayed busy: 429/503 on
        every retry, nothing else failed); 2: bad input;
        130: interrupted (finished domains kept in --out); 143: stopped by SIGTERM (the same).
        """
        request = build_request(CheckRequest, fields)
        with ctrl_c_says_what_is_kept("check", request.out_dir, RUN_FILES["checks"]):
            with live_progress(transient=True) as on_progress:
                report = api.check(request, on_progress)
            if json_out:
                print_json(report)
            else:
                for table in check_tables(report):
                    print_whole(table)
            failure = api.check_failure(request, report)
            if report.server_busy and not isinstance(failure, EndpointError) and not json_out:
                console.print(f"[yellow]{said(report.server_busy)}[/]")
        if failure is not None:
            raise failure
