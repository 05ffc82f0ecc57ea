"""The Markdown report of a run directory: identity, the serve command, memory budget (planned vs
reported), the three bench grids, workload guidance, capability verdicts, cost and boot timeline.

Pure rendering from `RunFiles` (result models, see `rundir`); sections whose files are absent say so
in one line. The bench grids live in `markdown_bench`, the cost section in `markdown_cost`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from onechip.errors import redact
from onechip.report.markdown_bench import grids, workload_guidance
from onechip.report.markdown_cost import cost_section
from onechip.report.rundir import RunFiles, read_run
from onechip.report.tables import (
    Markdown,
    first,
    flag_words,
    gib,
    md_code,
    md_escape,
    md_table,
    md_text,
    num,
    serve_flags,
    state_slots,
    unfinished_cells,
)
from onechip.schemas import BootRecord, CheckReport, CheckResult, CrossCheck, Plan
from onechip.schemas.bench import BenchClient, BenchServer
from onechip.schemas.common import GIB


def render_markdown(run_dir: Path | str) -> str:
    """Markdown for the run in `run_dir`. Raises ConfigError when `run_dir` is not a directory."""
    return render_markdown_files(read_run(run_dir))


def render_markdown_files(run: RunFiles) -> str:
    """Markdown for already-read run files, secrets redacted (errors.redact): a run's files hold text onechip did not
    write (a server's error, a model's answer, a boot line) or came from an onechip that did not redact it, and the
    HTML report is made from this text."""
    sections = [
        _identity(run),
        _serve_command(run.plan, run.boot),
        _memory(run),
        grids(run.bench),
        workload_guidance(run),
        _checks(run),
        cost_section(run.cost),
        _boot(run.boot),
    ]
    return redact("\n".join(line for section in sections for line in [*section, ""]).rstrip() + "\n")


def _identity_rows(run: RunFiles) -> list[tuple[str, Any]]:
    m, plan, boot, bench, checks = run.manifest, run.plan, run.boot, run.bench, run.checks
    server = bench.server if bench else BenchServer()
    client = bench.client if bench else BenchClient()
    engine = first(boot and boot.engine, plan and plan.engine)
    version = first(boot and boot.engine_version, server.engine_version)
    return [
        ("status", _status(run)),
        ("created", first(m and m.created_at, bench and bench.created_at, checks and checks.started_at)),
        ("command", m and m.command),
        ("model", first(boot and boot.model, plan and plan.model, server.model, checks and checks.model)),
        ("engine", f"{engine} {version}" if engine and version else engine or version),
        ("chip", first(m and m.chip, plan and plan.chip)),
        ("dtype / KV cache dtype", f"{plan.dtype} / {plan.kv_cache_dtype}" if plan else None),
        ("endpoint", first(boot and boot.base_url, server.base_url, checks and checks.base_url)),
        ("onechip", first(m and m.tool_version, bench and bench.tool_version)),
        ("python", first(m and m.python, client.python)),
        ("host", first(m and m.host, client.host)),
    ]


def _status(run: RunFiles) -> str | None:
    """The status of a run: run.json's, else what its files tell of how it ended (`bench` and `check` write no
    run.json): a check run stopped before every domain ran (checks.json `interrupted`), and the cells of the bench
    grid with no result, those an interrupted or still running bench had not reached (tables.unfinished_cells);
    None when nothing tells it (a trace replay's summary, a finished check run alone)."""
    if run.manifest is not None:
        return run.manifest.status
    said = ["check run stopped before every domain ran"] if run.checks is not None and run.checks.interrupted else []
    bench, missing = run.bench, unfinished_cells(run.bench)
    if bench is not None and missing:
        total = len(dict.fromkeys(bench.config.grid_cells()))
        said.append(f"bench stopped or still running: {len(missing)} of {total} cells of the grid have no result")
    elif missing == []:
        said.append("bench finished (summary.json holds every cell of the grid)")
    return "; ".join(said) + " (no run.json)" if said else None


def _identity(run: RunFiles) -> list[str]:
    run_id = first(run.manifest and run.manifest.run_id, run.path.name)
    rows = [("run", run_id), *_identity_rows(run)]
    lines = [f"# onechip report: {md_escape(run_id)}", ""]
    lines += md_table(["", ""], [(k, "—" if v in (None, "") else v) for k, v in rows])
    if run.manifest and run.manifest.error:
        lines += ["", f"**Run error:** {md_text(run.manifest.error)}"]
    if run.problems:
        lines += ["", *[f"- ⚠ {md_text(p)}" for p in run.problems]]
    missing = [k for k in ("plan", "boot", "checks", "bench", "cost") if getattr(run, k) is None]
    if missing:
        lines += ["", "Not in this run: " + ", ".join(missing) + "."]
    return lines


def _code_block(text: str) -> list[str]:
    return ["```sh", text, "```"]


def _serve_command(plan: Plan | None, boot: BootRecord | None) -> list[str]:
    """The command the engine ran (plan.serve_command) with each flag's reason; for an older run that
    did not record it, the planner's recommended flags, said to be only that."""
    lines = ["## Serve command", ""]
    flags, source = serve_flags(plan)
    rows = [(md_code(word), f.reason) for word, f in zip(flag_words(flags), flags, strict=True)]
    if plan is not None and plan.serve_command is not None:
        command = plan.serve_command
        lines += ["The command the engine ran:", "", *_code_block(command.shell or shlex.join(command.argv))]
        if command.flags:
            lines += ["", *md_table(["flag", "why"], rows)]
        return lines
    if source == "plan":
        lines += [
            "This run did not record the command the engine ran; these are the flags of the plan's own serve "
            "settings (plan.json `serve`), not necessarily the command that ran.",
            "",
            "**Serve flags:** " + " ".join(md_code(word, cell=False) for word in flag_words(flags)),
            "",
            *md_table(["flag", "why"], rows),
        ]
    if boot is not None and boot.command:
        lines += ([""] if len(lines) > 2 else []) + ["The launch command recorded at boot (boot.json):", ""]
        lines += _code_block(shlex.join(boot.command))
    if len(lines) == 2:
        lines.append("No serve command in this run (no plan.json serve_command, serve settings or boot command).")
    return lines


def _memory_rows(plan: Plan | None, boot: BootRecord | None, cross: CrossCheck | None) -> list[tuple[str, str, str]]:
    p = plan
    reported_tokens = first(boot and boot.kv_cache_tokens, cross and cross.reported_kv_tokens)
    reported_conc = first(boot and boot.max_concurrency, cross and cross.reported_max_concurrency)
    conc_ctx = first(p and p.max_model_len, boot and boot.max_concurrency_context)
    weights_reported = boot.weights_gib if boot else None
    rows = [
        ("visible device memory", gib(p and p.memory_bytes), "—"),
        ("gpu_memory_utilization", num(p and p.utilization, 2), "—"),
        ("cap (memory × utilization)", gib(p and p.cap_bytes), "—"),
        ("weights", gib(p and p.weights_bytes), "—" if weights_reported is None else f"{weights_reported:,.2f} GiB"),
        ("KV pool", gib(p and p.kv_pool_bytes), "—"),
        ("KV bytes per token", num(p and p.kv_bytes_per_token, 0), "—"),
        ("block size (tokens)", num(p and p.block_size, 0), "—"),
        ("KV blocks", num(p and p.num_blocks, 0), "—"),
        (
            "KV pool tokens",
            num(first(p and p.kv_tokens, cross and cross.planned_kv_tokens), 0),
            num(reported_tokens, 0),
        ),
        (
            f"max concurrency at {num(conc_ctx, 0)} tokens",
            num(first(p and p.max_concurrency, cross and cross.planned_max_concurrency), 2),
            num(reported_conc, 2),
        ),
    ]
    slots = state_slots(p, boot, cross)
    if slots is not None:  # attention-free (Mamba): its pool counts sequences, not tokens
        rows[-2] = (
            "sequences the state cache holds (attention-free: no KV tokens)",
            num(slots[0], 0),
            num(slots[1], 0),
        )
    return [r for r in rows if r[1] != "—" or r[2] != "—"]


def _memory(run: RunFiles) -> list[str]:
    plan, boot, cross = run.plan, run.boot, run.crosscheck
    lines = ["## Memory budget (planned vs reported)", ""]
    if not (plan or boot or cross):
        return lines + ["No plan, boot record or cross-check in this run."]
    lines += md_table(["quantity", "planned", "reported by engine"], _memory_rows(plan, boot, cross))
    if cross:
        verdict = "agrees" if cross.agrees else "DISAGREES"
        lines += [
            "",
            f"**Cross-check:** plan {verdict} with the engine." + (f" {md_text(cross.note)}" if cross.note else ""),
        ]
    if plan and plan.tpot_floor_ms is not None:
        lines += [
            "",
            f"TPOT floor from bandwidth: {plan.tpot_floor_ms:.2f} ms "
            f"({gib(plan.decode_bytes_per_step)} per decode step).",
        ]
    if plan and plan.warnings:
        lines += ["", "Plan warnings:"] + [
            f"- **{md_escape(w.code)}**: {md_text(w.message)} (source: {md_text(w.source)})" for w in plan.warnings
        ]
    return lines


def _check_row(r: CheckResult) -> tuple[str, ...]:
    conditions = ", ".join(f"{k}={v}" for k, v in r.conditions.items())
    notes = "; ".join(p.note for p in r.probes if p.note and p.verdict != "pass")  # a server's or a model's words
    return (r.domain, Markdown(f"**{r.verdict}**"), r.probes_passed(), conditions or "—", md_text(notes[:200]) or "—")


def _checks(run: RunFiles) -> list[str]:
    lines = ["## Capability checks", ""]
    if run.checks is None or not run.checks.results:
        return lines + ["No capability checks in this run."]
    rows = [_check_row(r) for r in run.checks.results]
    lines += md_table(["domain", "verdict", "probes passed", "conditions", "notes"], rows)
    return lines + _check_run_end(run.checks)


def _check_run_end(checks: CheckReport) -> list[str]:
    """What `check` said on the terminal of how its run ended, kept in checks.json: stopped before every domain ran
    (the table then holds only those that finished), an endpoint that failed every request (the verdicts say nothing
    of the model), a server that stayed busy."""
    said = [
        "The check run was stopped (Ctrl-C or SIGTERM) before every domain ran: the table holds only those that "
        "finished."
        if checks.interrupted
        else None,
        checks.endpoint_failing,
        checks.server_busy,
    ]
    return [line for text in said if text for line in ("", md_text(text))]


def _boot(boot: BootRecord | None) -> list[str]:
    lines = ["## Boot timeline", ""]
    if boot is None:
        return lines + ["No boot record in this run."]
    summary = [
        f"ready after {num(boot.ready_s)} s" if boot.ready_s is not None else None,
        f"weights loaded in {num(boot.weight_load_s)} s" if boot.weight_load_s is not None else None,
    ]
    summary_text = "; ".join(s for s in summary if s)
    if summary_text:
        lines += [summary_text[0].upper() + summary_text[1:] + ".", ""]
    if boot.events:
        rows, previous = [], 0.0
        for e in boot.events:  # log order; a line without a time stamp (uvicorn's) keeps its place
            delta = e.t_s - previous if e.t_s is not None else None
            previous = e.t_s if e.t_s is not None else previous
            line = e.line or ""
            rows.append((e.name, num(e.t_s), num(delta), md_code(line[:120]) if line else "—"))
        lines += md_table(["stage", "t (s)", "Δ (s)", "log line"], rows)
    for kind, items in (("warning", boot.warnings), ("error", boot.errors)):
        if items:
            lines += ["", f"{len(items)} {kind} line(s) in the boot log; first: {md_code(items[0][:160], cell=False)}"]
    return lines


__all__ = ["GIB", "render_markdown", "render_markdown_files"]
