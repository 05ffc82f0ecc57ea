"""The Markdown report of a run directory: identity, memory budget (planned vs reported), the three
bench grids, workload guidance, capability verdicts, cost and boot timeline.

Pure rendering from `RunFiles`; sections whose files are absent say so in one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onechip.report.rundir import RunFiles, read_run
from onechip.report.tables import (
    GIB,
    KV_RULE_FRACTION,
    cells_of,
    get,
    gib,
    grid_rows,
    guidance,
    kv_pool_tokens,
    md_table,
    num,
)


def render_markdown(run_dir: Path | str) -> str:
    """Markdown for the run in `run_dir`. Raises ConfigError when `run_dir` is not a directory."""
    return render_markdown_files(read_run(run_dir))


def render_markdown_files(run: RunFiles) -> str:
    """Markdown for already-read run files."""
    sections = [
        _identity(run),
        _memory(run),
        _grids(run),
        _guidance(run),
        _checks(run),
        _cost(run),
        _boot(run),
    ]
    return "\n".join(line for section in sections for line in [*section, ""]).rstrip() + "\n"


def _identity(run: RunFiles) -> list[str]:
    m, plan, boot, bench = run.manifest or {}, run.plan or {}, run.boot or {}, run.bench or {}
    run_id = m.get("run_id") or run.path.name
    engine = boot.get("engine") or plan.get("engine")
    version = boot.get("engine_version") or get(bench, "server", "engine_version")
    rows = [
        ("run", run_id),
        ("status", m.get("status")),
        ("created", m.get("created_at") or bench.get("created_at")),
        ("command", m.get("command")),
        ("model", boot.get("model") or plan.get("model") or get(bench, "server", "model")),
        ("engine", f"{engine} {version}" if engine and version else engine or version),
        ("chip", m.get("chip") or plan.get("chip")),
        (
            "dtype / KV cache dtype",
            f"{plan['dtype']} / {plan.get('kv_cache_dtype', '—')}" if "dtype" in plan else None,
        ),
        ("endpoint", boot.get("base_url") or get(bench, "server", "base_url")),
        ("onechip", m.get("tool_version") or bench.get("tool_version")),
        ("python", m.get("python") or get(bench, "client", "python")),
        ("host", m.get("host") or get(bench, "client", "host")),
    ]
    lines = [f"# onechip report: {run_id}", ""]
    lines += md_table(["", ""], [(k, "—" if v in (None, "") else v) for k, v in rows])
    if m.get("error"):
        lines += ["", f"**Run error:** {m['error']}"]
    flags = _flags(plan, boot)
    if flags:
        lines += ["", "**Serve flags:** " + " ".join(f"`{f}`" for f in flags)]
    if run.problems:
        lines += ["", *[f"- ⚠ {p}" for p in run.problems]]
    missing = [k for k in ("plan", "boot", "checks", "bench", "cost") if getattr(run, k) is None]
    if missing:
        lines += ["", "Not in this run: " + ", ".join(missing) + "."]
    return lines


def _flags(plan: Mapping[str, Any], boot: Mapping[str, Any]) -> list[str]:
    args = plan.get("serve_args") or []
    flags = [
        f"{a['flag']} {a['value']}" if a.get("value") is not None else str(a["flag"])
        for a in args
        if isinstance(a, Mapping) and "flag" in a
    ]
    if flags:
        return flags
    command = boot.get("command") or []
    # The boot command starts with the interpreter and module; flags are what begins with '--'.
    out: list[str] = []
    for token in command:
        token = str(token)
        if token.startswith("--"):
            out.append(token)
        elif out and not out[-1].count(" "):
            out[-1] = f"{out[-1]} {token}"
    return out


def _memory(run: RunFiles) -> list[str]:
    plan, boot, cross = run.plan or {}, run.boot or {}, run.crosscheck or {}
    lines = ["## Memory budget (planned vs reported)", ""]
    if not (plan or boot or cross):
        return lines + ["No plan, boot record or cross-check in this run."]
    weights_reported = boot.get("weights_gib")
    reported_tokens = boot.get("kv_cache_tokens", cross.get("reported_kv_tokens"))
    reported_conc = boot.get("max_concurrency", cross.get("reported_max_concurrency"))
    conc_ctx = boot.get("max_concurrency_context")
    rows = [
        ("visible device memory", gib(plan.get("memory_bytes")), "—"),
        ("gpu_memory_utilization", num(plan.get("utilization"), 2), "—"),
        ("cap (memory × utilization)", gib(plan.get("cap_bytes")), "—"),
        (
            "weights",
            gib(plan.get("weights_bytes")),
            f"{weights_reported:,.2f} GiB" if isinstance(weights_reported, int | float) else "—",
        ),
        ("KV pool", gib(plan.get("kv_pool_bytes")), "—"),
        ("KV bytes per token", num(plan.get("kv_bytes_per_token"), 0), "—"),
        ("block size (tokens)", num(plan.get("block_size"), 0), "—"),
        ("KV blocks", num(plan.get("num_blocks"), 0), "—"),
        (
            "KV pool tokens",
            num(plan.get("kv_tokens", cross.get("planned_kv_tokens")), 0),
            num(reported_tokens, 0),
        ),
        (
            f"max concurrency at {num(plan.get('max_model_len', conc_ctx), 0)} tokens",
            num(plan.get("max_concurrency", cross.get("planned_max_concurrency")), 2),
            num(reported_conc, 2),
        ),
    ]
    rows = [r for r in rows if r[1] != "—" or r[2] != "—"]
    lines += md_table(["quantity", "planned", "reported by engine"], rows)
    if cross:
        verdict = "agrees" if cross.get("agrees") else "DISAGREES"
        lines += [
            "",
            f"**Cross-check:** plan {verdict} with the engine."
            + (f" {cross['note']}" if cross.get("note") else ""),
        ]
    if isinstance(plan.get("tpot_floor_ms"), int | float):
        lines += [
            "",
            f"TPOT floor from bandwidth: {plan['tpot_floor_ms']:.2f} ms "
            f"({gib(plan.get('decode_bytes_per_step'))} per decode step).",
        ]
    warnings = [w for w in plan.get("warnings") or [] if isinstance(w, Mapping)]
    if warnings:
        lines += ["", "Plan warnings:"] + [
            f"- **{w.get('code', '')}**: {w.get('message', '')} (source: {w.get('source', '—')})"
            for w in warnings
        ]
    return lines


def _grids(run: RunFiles) -> list[str]:
    cells = cells_of(run.bench)
    lines = ["## Benchmark", ""]
    if not cells:
        return lines + ["No benchmark summary in this run."]
    config = get(run.bench, "config", default={}) or {}
    lines += [
        f"Contexts are rows, concurrent clients are columns. Output {num(config.get('output_tokens'), 0)} "
        f"tokens per request, {num(config.get('reps'), 0)} reps per cell; values are medians over reps.",
        "",
    ]

    def agg(c: Mapping[str, Any]) -> str:
        cv = c.get("cv_output_tok_per_s")
        text = num(c.get("output_tok_per_s"))
        return f"{text} (CV {cv * 100:.0f}%)" if isinstance(cv, int | float) else text

    for title, render in (
        ("Aggregate output tok/s", agg),
        ("Median TTFT (ms)", lambda c: num(get(c, "ttft_ms", "median"), 0)),
        ("Per-stream output tok/s", lambda c: num(c.get("per_stream_tok_per_s"))),
    ):
        header, rows = grid_rows(cells, render)
        lines += [f"### {title}", "", *md_table(header, rows), ""]
    notes = [c for c in cells if c.get("status", "ok") != "ok"]
    if notes:
        lines += ["Cells not measured:"] + [
            f"- {int(c.get('context_tokens', 0)):,} ctx × {c.get('clients')} clients: "
            f"**{c.get('status')}** — {c.get('reason') or 'no reason recorded'}"
            for c in notes
        ]
    partial = [c for c in cells if c.get("status", "ok") == "ok" and c.get("requests_failed")]
    if partial:
        lines += ["", "Cells with failed requests (their tokens are not counted):"] + [
            f"- {int(c.get('context_tokens', 0)):,} ctx × {c.get('clients')} clients: {c['requests_failed']} "
            f"failed; first: {c.get('first_error') or 'no error recorded'}"
            for c in partial
        ]
    return lines


def _guidance(run: RunFiles) -> list[str]:
    cells = cells_of(run.bench)
    if not cells:
        return []
    kv, origin = kv_pool_tokens(run.plan, run.boot, run.crosscheck)
    lines = ["## Workload guidance", ""]
    if kv:
        lines += [
            f"Rule of thumb (seed article): keep clients × context under {KV_RULE_FRACTION:.0%} of the "
            f"KV pool = {int(KV_RULE_FRACTION * kv):,} tokens of this run's {kv:,} ({origin}).",
            "",
        ]
    else:
        lines += [
            "No KV pool size in this run (no plan or boot record): the clients × context rule is "
            "not applied.",
            "",
        ]
    suggestions = guidance(cells, kv)
    if not suggestions:
        return lines + ["No measured cell qualifies."]
    return lines + md_table(["workload", "cell", "why"], suggestions)


def _checks(run: RunFiles) -> list[str]:
    lines = ["## Capability checks", ""]
    results = [r for r in get(run.checks, "results", default=[]) or [] if isinstance(r, Mapping)]
    if not results:
        return lines + ["No capability checks in this run."]
    rows = []
    for r in results:
        probes = [p for p in r.get("probes") or [] if isinstance(p, Mapping)]
        passed = sum(1 for p in probes if p.get("verdict") == "pass")
        conditions = ", ".join(f"{k}={v}" for k, v in (r.get("conditions") or {}).items())
        notes = "; ".join(str(p.get("note")) for p in probes if p.get("note") and p.get("verdict") != "pass")
        rows.append(
            (
                r.get("domain", "—"),
                f"**{r.get('verdict', '—')}**",
                f"{passed}/{len(probes)}",
                conditions or "—",
                notes[:200] or "—",
            )
        )
    return lines + md_table(["domain", "verdict", "probes passed", "conditions", "notes"], rows)


def _cost(run: RunFiles) -> list[str]:
    lines = ["## Cost", ""]
    cost = run.cost
    if isinstance(cost, list):  # older layout: a bare list of CostLine
        cost = {"lines": cost}
    if not isinstance(cost, Mapping) or not (cost.get("lines") or cost.get("cells")):
        return lines + ["No cost in this run (price it with `onechip cost --run DIR --chip CHIP --write`)."]
    cost_lines = [c for c in cost.get("lines") or [] if isinstance(c, Mapping)]
    if cost_lines:
        tok_s = cost.get("output_tok_per_s", cost_lines[0].get("output_tok_per_s"))
        lines += [
            f"Chip **{cost.get('chip', cost_lines[0].get('chip', '—'))}** at {num(tok_s)} output tok/s "
            f"(prices judged on {cost.get('today', '—')}).",
            "",
        ]
        lines += md_table(
            [
                "pricing",
                "region",
                "$/chip-hour",
                "$/M output tokens",
                "month 24/7 (730 h)",
                "stops itself",
                "price read",
            ],
            [
                (
                    c.get("pricing"),
                    c.get("region", "—"),
                    f"{c.get('usd_per_chip_hour', 0):.4f}",
                    f"${c.get('usd_per_mtok', 0):.3f}",
                    f"${c.get('monthly_usd', 0):,.0f}",
                    "yes" if c.get("stops_itself") else "no",
                    f"{c.get('price_date', '—')}" + (" ⚠ stale" if c.get("stale") else ""),
                )
                for c in cost_lines
            ],
        )
    cells = [c for c in cost.get("cells") or [] if isinstance(c, Mapping)]
    if cells:
        names = list(dict.fromkeys(k for c in cells for k in (c.get("usd_per_mtok") or {})))
        rows = []
        for c in cells:
            prices = c.get("usd_per_mtok") or {}
            rows.append(
                (
                    f"{int(c.get('context_tokens', 0)):,}",
                    c.get("clients"),
                    num(c.get("output_tok_per_s")) if c.get("status") == "ok" else c.get("status"),
                    *[f"${prices[n]:.3f}" if n in prices else "—" for n in names],
                )
            )
        lines += [
            "",
            "$/M output tokens per measured cell:",
            "",
            *md_table(["context", "clients", "tok/s", *names], rows),
        ]
    restarts = [r for r in cost.get("restarts") or [] if isinstance(r, Mapping)]
    if restarts:
        lines += [
            "",
            "Restart cost (the chip bills while the engine boots):",
            "",
            *md_table(
                ["restart", "boot (s)", "pricing", "USD"],
                [
                    (r.get("kind"), num(r.get("boot_s"), 0), r.get("pricing"), f"${r.get('usd', 0):.4f}")
                    for r in restarts
                ],
            ),
        ]
    bullets = []
    for b in [b for b in cost.get("break_even") or [] if isinstance(b, Mapping)]:
        if isinstance(b.get("hours"), int | float):
            bullets.append(
                f"- Spot beats flex-start ({b.get('region', '')}) only while preemptions come less often "
                f"than every **{b['hours']:.1f} h** ({b.get('kind')} restart ${b.get('restart_usd', 0):.4f} "
                f"÷ flex-start premium ${b.get('premium_usd_per_hour', 0):.4f}/h)."
            )
        else:
            bullets.append(
                f"- Flex-start ({b.get('region', '')}) is not dearer than spot: spot never wins on price."
            )
    if bullets:
        lines += ["", *bullets]
    warnings = cost.get("warnings") or []
    if warnings:
        lines += ["", *[f"- ⚠ {w}" for w in warnings]]
    return lines


def _boot(run: RunFiles) -> list[str]:
    boot = run.boot or {}
    lines = ["## Boot timeline", ""]
    events = [e for e in boot.get("events") or [] if isinstance(e, Mapping)]
    if not boot:
        return lines + ["No boot record in this run."]
    summary = [
        f"ready after {num(boot.get('ready_s'))} s" if boot.get("ready_s") is not None else None,
        f"weights loaded in {num(boot.get('weight_load_s'))} s"
        if boot.get("weight_load_s") is not None
        else None,
    ]
    summary_text = "; ".join(s for s in summary if s)
    if summary_text:
        lines += [summary_text[0].upper() + summary_text[1:] + ".", ""]
    if events:
        rows, previous = [], 0.0
        for e in events:  # log order; a line without a time stamp (uvicorn's) keeps its place
            t = e.get("t_s")
            delta = t - previous if isinstance(t, int | float) else None
            previous = t if isinstance(t, int | float) else previous
            line = str(e.get("line") or "")
            rows.append((e.get("name"), num(t), num(delta), f"`{line[:120]}`" if line else "—"))
        lines += md_table(["stage", "t (s)", "Δ (s)", "log line"], rows)
    for kind in ("warnings", "errors"):
        items = boot.get(kind) or []
        if items:
            lines += ["", f"{len(items)} {kind[:-1]} line(s) in the boot log; first: `{str(items[0])[:160]}`"]
    return lines


__all__ = ["GIB", "render_markdown", "render_markdown_files"]
