"""The bench sections of the Markdown report: the context x clients grids (aggregate tok/s with CV, whole-run
tok/s, median TTFT, per-stream tok/s, and goodput when the run had SLOs), the cells not measured, with failed
requests or asked to wait, and the workload guidance drawn from the run's own KV pool. Pure rendering from the
result models.
"""

from __future__ import annotations

from collections.abc import Callable

from onechip.report import tables
from onechip.report.rundir import RunFiles
from onechip.report.tables import KV_RULE_FRACTION, cells_of, grid_rows, guidance, kv_pool_tokens, md_table, ms, num
from onechip.schemas import BenchRun, CellResult
from onechip.schemas.bench import TTFT_CONVENTION, BenchConfig
from onechip.schemas.common import plural


def _aggregate(c: CellResult) -> str:
    text = num(c.output_tok_per_s)
    cv = c.cv_output_tok_per_s
    return f"{text} (CV {cv * 100:.0f}%)" if cv is not None else text


WINDOW_NOTE = (
    "Two tok/s definitions: the **steady window** (onechip's: from when every stream has sent its first "
    "measured request to when the first stream finished its last one, so ramp-up and drain are left out; open "
    "loop: first measured send to last completion) and the **whole run** (all measured output tokens / (last "
    "completion - first send), what vllm bench serve, GuideLLM and AIPerf report; lower by the ramp and the "
    "drain). At the steady window's edges a chunk's tokens count by the share of the gap since the chunk "
    "before that lies inside it; requests/s counts each request by the share of its tokens inside the window."
)

GRIDS: tuple[tuple[str, Callable[[CellResult], str]], ...] = (
    ("Aggregate output tok/s (steady window)", _aggregate),
    ("Whole-run output tok/s (vllm bench serve / GuideLLM / AIPerf definition)", lambda c: num(c.whole_run_tok_per_s)),
    ("Median TTFT (ms)", lambda c: ms(c.ttft_ms.median)),
    ("Per-stream output tok/s", lambda c: num(c.per_stream_tok_per_s)),
)


def _goodput(c: CellResult) -> str:
    return num(c.goodput_per_s, 2)  # requests/s: 2 decimals, as the console's grid


def _unmeasured(config: BenchConfig, cells: list[CellResult]) -> list[str]:
    """Bullets for infeasible and failed cells, for ok cells that lost requests, and for ok cells whose server
    ended requests early or sent more than max_tokens."""
    lines: list[str] = []

    def name(c: CellResult) -> str:
        return config.cell_label(c.context_tokens, c.clients, report=True)

    notes = [c for c in cells if c.status != "ok"]
    if notes:
        lines += ["Cells not measured:"] + [
            f"- {name(c)}: **{c.status}** — " + tables.md_text(c.reason or "no reason recorded") for c in notes
        ]
    partial = [c for c in cells if c.status == "ok" and c.requests_failed]
    if partial:
        lines += ["", "Cells with failed requests (their tokens are not counted):"] + [
            f"- {name(c)}: {c.requests_failed} failed; first: {tables.md_text(c.first_error or 'no error recorded')}"
            for c in partial
        ]
    asked = [c for c in cells if c.requests_asked_wait]
    if asked:
        lines += ["", "Cells whose server asked for waits (Retry-After, HTTP 429 / 503):"] + [
            f"- {name(c)}: {waits_text(c)}" for c in asked
        ]
    lengths = [c for c in cells if c.status == "ok" and (c.requests_ended_early or c.requests_over_max_tokens)]
    if lengths:
        lines += ["", "Cells whose output length was not the one asked for:"] + [
            f"- {name(c)}: "
            + "; ".join(
                text
                for n, text in (
                    (c.requests_ended_early, f"{c.requests_ended_early} ended before max_tokens (server stopped)"),
                    (c.requests_over_max_tokens, f"{c.requests_over_max_tokens} got more than max_tokens (usage)"),
                )
                if n
            )
            for c in lengths
        ]
    return lines


def waits_text(c: CellResult) -> str:
    """What the server asked `c`'s streams to wait and what they waited (CellResult.requests_asked_wait): the report's
    and the console's words."""
    n = c.requests_asked_wait
    return (
        f"{n:,} refused request{'s' * (n != 1)} asked {c.asked_wait_s:,.1f} s of waits in all; the streams waited "
        f"{c.waited_s:,.1f} s before their next requests (bounded by the request timeout and the cell's time; "
        "an open loop keeps its schedule), in no latency"
    )


def _not_run(bench: BenchRun) -> list[str]:
    """Bullets for the cells of the run's grid (BenchConfig.grid_cells) with no result in summary.json. bench
    rewrites summary.json after each cell it finishes, so a bench interrupted (or still running) holds only the
    cells before; its report read as a finished run of fewer cells. A trace replay's cell is named by the trace's
    median prompt, which the summary alone does not give: not listed (tables.unfinished_cells)."""
    missing = tables.unfinished_cells(bench)
    if not missing:
        return []
    return [f"Cells of the grid with no result ({len(missing)} of {len(bench.config.grid_cells())}: the bench "
            "stopped before them, or is still running; `onechip bench URL --resume RUN_DIR` measures them):"] + [
        f"- {bench.config.cell_label(ctx, clients, report=True)}" for ctx, clients in missing
    ]  # fmt: skip


def grids(bench: BenchRun | None) -> list[str]:
    """The '## Benchmark' section: one grid per GRIDS entry (and goodput's with SLOs), contexts as rows, clients as
    columns, then the cells not measured (_unmeasured) and those of the grid the summary has no result for
    (_not_run)."""
    cells = cells_of(bench)
    lines = ["## Benchmark", ""]
    if bench is None:
        return lines + ["No benchmark summary in this run."]
    if not cells:  # bench writes its settings before the first request: a run stopped in its first cell
        return lines + ["The bench summary holds no finished cell."] + _not_run(bench)
    config = bench.config
    if bench.prediction is not None:
        cal = bench.prediction.calibration
        origin = (
            f"calibrated on {tables.md_text(', '.join(cal.cells))} of {tables.md_text(cal.source_run)}"
            if cal
            else "roofline priors only"
        )
        lines += [f"**Predicted, not measured** (`onechip simulate`, {origin}; reps are simulation seeds). "
                  f"{tables.md_text(bench.prediction.note)}", ""]  # fmt: skip
    schedule = config.open_loop_text()
    columns = "concurrent clients are columns" if schedule is None else f"{tables.md_text(schedule)}"
    lines += [
        f"Contexts are rows; {columns}. Output {num(config.output_tokens, 0)} "
        f"tokens per request, {num(config.reps, 0)} reps per cell; values are medians over reps.",
        "",
        WINDOW_NOTE,
        "",
    ]
    goodput = (f"Goodput requests/s meeting every SLO ({config.slo_text()}; steady window)", _goodput)
    for title, render in GRIDS + ((goodput,) if config.slo else ()):
        header, rows = grid_rows(cells, render, None if schedule is None else config.load_text)
        lines += [f"### {title}", "", *md_table(header, rows), ""]
    said = _unmeasured(config, cells)
    not_run = _not_run(bench)
    tail = said + ([""] if said and not_run else []) + not_run + _slipped(bench)
    return lines + tail + ([""] if tail else []) + _how_measured(bench) + agent_turns(cells)


def _how_measured(bench: BenchRun) -> list[str]:
    """The run's notes (BenchRun.notes: how its tokens were counted, a server without usage or /tokenize, answers that
    stalled, prompt lengths estimated...) and its ITL convention, as the console says them after the grids."""
    notes = [f"- {tables.md_text(note)}" for note in bench.notes]
    return (["Notes on this run:", *notes, ""] if notes else []) + [
        f"{TTFT_CONVENTION}.",
        "",
        f"ITL convention: {bench.itl_convention}",
    ]


def _slipped(bench: BenchRun) -> list[str]:
    """Open loop: a bullet per cell whose schedule slipped (latency from the late send hides the wait)."""
    slipped = [c for c in bench.cells if c.schedule_slipped]
    if not slipped:
        return []
    rate = bench.config.rate_per_s
    schedule = f"{num(rate)} req/s" if rate is not None else "the trace's send times"
    return [
        "",
        f"Open-loop schedule slipped (the server could not keep up with {schedule}):",
    ] + [
        f"- {bench.config.cell_label(c.context_tokens, c.clients, report=True)}: "
        f"{num((c.late_share or 0) * 100, 0)}% of "
        f"requests sent late, slip p50 {num(c.slip_ms.median, 0)} ms, p99 {num(c.slip_ms.p99, 0)} ms; TTFT from "
        f"the intended send p50 {ms(c.ttft_from_intended_ms.median)} ms vs {ms(c.ttft_ms.median)} ms from "
        "the actual send"
        for c in slipped
    ]


def agent_turns(cells: list[CellResult]) -> list[str]:
    """Agent workload: per cell, a table of turns: prompt and cached tokens, cached share, TTFT, TPOT."""
    lines: list[str] = []
    for c in cells:
        if not c.turns:
            continue
        hit = c.server_metrics_delta.get("prefix_cache_hit_rate")
        lines += [
            "",
            f"### Agent sessions: {c.context_tokens:,}-token shared prefix × {plural(c.clients, 'client')}",
            "",
            f"Prompt tokens served from the prefix cache: {_share(c.cached_share)} (usage), "
            f"{_share(hit)} (server /metrics).",
            "",
        ]
        header = ["turn", "requests", "prompt tokens", "cached tokens", "cached", "TTFT p50 ms", "TTFT p90 ms"]
        rows = [
            [
                str(t.turn + 1),
                str(t.requests) + (f" ({t.requests_failed} failed)" if t.requests_failed else ""),
                num(t.prompt_tokens.median, 0),
                num(t.cached_tokens.median, 0),
                _share(t.cached_share),
                ms(t.ttft_ms.median),
                ms(t.ttft_ms.p90),
            ]
            for t in c.turns
        ]
        lines += md_table(header, rows)
    return lines


def _share(x: float | None) -> str:
    return "not reported" if x is None else f"{x:.0%}"


def workload_guidance(run: RunFiles) -> list[str]:
    """The '## Workload guidance' section (empty without bench cells): the seed article's 78% rule on
    the run's KV pool (reported by the engine when it did, else planned) and the picks of
    `tables.guidance`. Both pick a number of clients, which a closed-loop grid measures: an open-loop run (--rate, one
    stream numbering its requests per context) has none to pick, and the section says so."""
    cells = cells_of(run.bench)
    if not cells:
        return []
    if run.bench is not None and run.bench.config.rate_per_s is not None:
        load = run.bench.config.load_text(cells[0].clients)
        return [
            "## Workload guidance",
            "",
            f"This run is open loop ({load}): it measures a request rate, not a number of clients. The clients × "
            "context rule and the picks per workload read a closed-loop grid (`onechip bench URL --clients 1,4,8`); "
            "`onechip bench URL --find-max rate --slo ...` finds the highest rate that meets an SLO.",
        ]
    kv, origin = kv_pool_tokens(run.plan, run.boot, run.crosscheck)
    lines = ["## Workload guidance", ""]
    if kv:
        lines += [
            f"Rule of thumb (seed article): keep clients × context under {KV_RULE_FRACTION:.0%} of the "
            f"KV pool = {int(KV_RULE_FRACTION * kv):,} tokens of this run's {kv:,} ({origin}).",
            "",
        ]
    else:
        why = origin or "no plan or boot record"
        lines += [f"No KV pool size in this run ({why}): the clients × context rule is not applied.", ""]
    suggestions = guidance(cells, kv)
    if not suggestions:
        return lines + ["No measured cell qualifies."]
    return lines + md_table(["workload", "cell", "why"], suggestions)
