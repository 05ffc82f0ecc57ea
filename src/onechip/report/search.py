"""The SLO search's report (`bench --find-max`): Markdown and self-contained HTML with the attainment plot,
written beside search.json. Pure rendering from a SearchResult, plus the write.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from onechip.paths import write_text_atomic
from onechip.report import plots
from onechip.report.html import STYLE, _img, markdown_to_html
from onechip.report.tables import md_table, num
from onechip.schemas.bench import SearchResult


def clients_answer(result: SearchResult) -> str:
    """A clients search's answer in its workload's word: 'N agents (clients)' for agent sessions, 'N clients' for the
    grid's independent requests."""
    n = result.max_clients
    s = "" if n == 1 else "s"
    return f"{n} agent{s} (client{s})" if result.workload == "agent" else f"{n} client{s}"


def probe_load_text(result: SearchResult) -> str | None:
    """A rate search's probes as the console and the report say them: 'open loop, in flight at most: none (no cap);
    measured requests per probe: 30 to 640 (...)'; 'not recorded' for a search.json saved before in_flight_cap was
    (bench.search.read_search fills it from the probes' configs when they tell); None for a clients search."""
    if result.kind != "rate":
        return None
    if "in_flight_cap" not in result.model_fields_set:  # a search.json from before in_flight_cap (bench.search)
        cap = "not recorded"
    else:
        cap = "none (no cap)" if result.in_flight_cap is None else f"{result.in_flight_cap:,} (--clients)"
    sent = sorted({p.requests_sent for p in result.probes})
    count = f"{sent[0]:,}" if len(sent) == 1 else f"{sent[0]:,} to {sent[-1]:,}" if sent else "none"
    return f"open loop, in flight at most: {cap}; measured requests per probe: {count} (every rep, set by the rate)"


def search_markdown(result: SearchResult) -> list[str]:
    """'## SLO search': the answer, why the search stopped, the KV wall, and every probe in load order."""
    slo = ", ".join(f"{k} ≤ {v:g} ms" for k, v in result.slo.items())
    unit = "clients" if result.kind == "clients" else "req/s"
    answer = clients_answer(result) if result.kind == "clients" else f"{num(result.max_rate_per_s)} req/s"
    how = "Interrupted" if result.bound_reason.startswith("interrupted") else "Stopped"  # else by an error
    lead = f"{how} before its answer: so far the largest" if result.interrupted else "Largest"
    lines = [
        "## SLO search",
        "",
        f"{lead} load meeting {slo} at p{result.percentile:g} ({result.workload} workload, "
        f"{result.context_tokens:,}-token context): **{answer}**, {num(result.output_tok_per_s)} output tok/s there "
        f"(steady window, median over reps). Stopped: {result.bound_reason}.",
        "",
    ]
    if (probes := probe_load_text(result)) is not None:
        lines += [f"Probes: {probes}.", ""]
    if result.kv_wall_clients is not None:
        lines += [f"KV wall (plan): {result.kv_wall_clients:,} clients at the longest prompt plus output.", ""]
    if result.costs:
        lines += ["At the answer's throughput:", ""] + [
            f"- {c.chip} {c.pricing} ({c.region}): ${c.usd_per_mtok:,.3f} per million output tokens, "
            f"${c.monthly_usd:,.0f}/month (price of {c.price_date})"
            for c in result.costs
        ]
        lines.append("")
    rate = result.kind == "rate"  # a rate probe's request count follows its rate: said per probe
    header = [unit, *(["requests"] * rate), "verdict", *(f"p{result.percentile:g} {k}" for k in result.slo), "met SLO"]
    header.append("output tok/s (steady)")
    lines += [
        f"Per probe: each SLO metric's p{result.percentile:g}, ms, over its measured requests of every rep together "
        "(open loop: from the intended send); met SLO: the share of those requests meeting every SLO; output tok/s: "
        "the steady window's, median over reps.",
        "",
    ]
    rows = [
        [
            f"{p.load:g}",
            *([f"{p.requests_sent:,}"] * rate),
            ("meets" if p.meets_slo else "misses")
            + ("" if p.status == "ok" else f" ({p.status})")
            + (f" ({p.requests_failed} failed)" if p.requests_failed else ""),
            *(num(p.at_percentile_ms.get(k), 0) for k in result.slo),
            "—" if p.attainment is None else f"{p.attainment:.0%}",
            num(p.output_tok_per_s),
        ]
        for p in sorted(result.probes, key=lambda p: p.load)
    ]
    return lines + md_table(header, rows)


SEARCH_FORMATS = {"md": "search.md", "html": "search.html"}  # a search's report formats and their files


def write_search_report(
    result: SearchResult, out_dir: Path, formats: Sequence[str] = tuple(SEARCH_FORMATS)
) -> list[Path]:
    """search.md and search.html (with the attainment-vs-load plot) into `out_dir`, those of `formats` (SEARCH_FORMATS)
    asked for; the paths written."""
    markdown = "\n".join(["# onechip SLO search", "", *search_markdown(result)]) + "\n"
    written = []
    for fmt in formats:
        text = markdown if fmt == "md" else _search_page(result, markdown)
        written.append(write_text_atomic(Path(out_dir) / SEARCH_FORMATS[fmt], text))
    return written


def _search_page(result: SearchResult, markdown: str) -> str:
    """search.html: `markdown` as a self-contained page, the attainment plot under its heading."""
    figure = _img(plots.attainment_png(result), "SLO attainment vs load, the answer marked")
    body = markdown_to_html(markdown, {"SLO search": figure})
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>onechip SLO search</title>'
        f"<style>{STYLE}</style></head><body>\n{body}\n</body></html>\n"
    )
