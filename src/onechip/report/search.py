"""The SLO search's report (`bench --find-max`, or `simulate --find-max` predicted): Markdown and self-contained HTML
with the attainment plot, written beside search.json. Pure rendering from a SearchResult, plus the write.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from onechip.paths import write_text_atomic
from onechip.report import plots
from onechip.report.html import STYLE, _img, markdown_to_html
from onechip.report.tables import md_table, md_text, num
from onechip.schemas.bench import SearchProbe, SearchResult, slo_ms_text
from onechip.schemas.common import plural


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


def probe_verdict(result: SearchResult, p: SearchProbe) -> str:
    """A probe's verdict words: 'meets' / 'misses' (with its status when not ok, and its failed requests); a predicted
    probe whose seeds disagree adds 'cannot tell: 3 of 5 seeds meet' (the seeds' range straddles the SLO)."""
    words = ("meets" if p.meets_slo else "misses") + ("" if p.status == "ok" else f" ({p.status})")
    words += f" ({p.requests_failed} failed)" if p.requests_failed else ""
    seeds = result.prediction.seeds if result.prediction is not None else None
    if seeds is not None and p.seeds_meeting is not None and 0 < p.seeds_meeting < seeds:
        words += f"; cannot tell: {p.seeds_meeting} of {seeds} seeds meet"
    return words


def at_percentile_text(result: SearchResult, p: SearchProbe, metric: str) -> str:
    """A probe's SLO metric at the percentile, ms (schemas.bench.slo_ms_text against the metric's bound: '412.0',
    '0.44' against 0.4), with its range over the seeds when predicted and they differ ('412.0 [380.2-450.7]'); '-'
    when none."""
    bound = result.slo.get(metric)
    value, span = p.at_percentile_ms.get(metric), p.at_percentile_range_ms.get(metric)
    text = "-" if value is None else slo_ms_text(value, bound)
    if span is not None and (low := slo_ms_text(span[0], bound)) != (high := slo_ms_text(span[1], bound)):
        text += f" [{low}-{high}]"
    return text


def seeds_range_text(result: SearchResult) -> str | None:
    """A predicted search's answer over its seeds: 'every one of the 5 seeds gives 6 clients', or 'over the 5 seeds:
    every seed meets the SLOs up to 11 clients, some seed up to 13 clients; cannot tell between the two'; with one
    seed, that there is no range (one seed agrees with itself); of a search stopped before its answer (its
    max_load_range None), that the range over its seeds comes with the answer; None when measured."""
    if result.prediction is None:
        return None
    n = result.prediction.seeds
    if n == 1:
        return "one seed: no range over the seeds (--reps 2 or more gives one)"
    if result.max_load_range is None:  # answer_and_range runs once the search has its answer
        return f"over the {n} seeds: no range before the answer (it stopped first)"
    low, high = (
        plural(int(x), "client") if result.kind == "clients" else f"{x:g} req/s" for x in result.max_load_range
    )
    if low == high:
        return f"every one of the {plural(n, 'seed')} gives {low}"
    some = f"some seed up to {high}; cannot tell between the two"
    return f"over the {n} seeds: every seed meets the SLOs up to {low}, {some}"


def basis_text(result: SearchResult) -> str:
    """What a predicted search rests on: 'calibration measured on engine version V (the plan is for W)', or 'roofline
    priors only (no calibration)'."""
    prediction = result.prediction
    if prediction is None or prediction.calibration is None:
        return "roofline priors only (no calibration)"
    measured_on = prediction.calibration.key.engine_version or "not recorded"
    planned = f" (the plan is for {prediction.engine_version})" if prediction.engine_version != measured_on else ""
    return f"calibration measured on engine version {measured_on}{planned}"


def cost_share_text(result: SearchResult) -> str | None:
    """Whose share of the answer's tok/s a cost line prices, when not all of it (api._sim_search.answer_costs: one
    chip each): 'each of the 2 engines on its own chip, at its 1/2 of the output tok/s', or over the chips a
    tensor-parallel engine holds, 'each of the 4 chips (2 engines x 2), at its 1/4 of the output tok/s'; else None."""
    engines = result.prediction.replicas if result.prediction is not None else 1
    if not result.costs or not result.output_tok_per_s:
        return None
    chips = round(result.output_tok_per_s / result.costs[0].output_tok_per_s)  # an integer share (answer_costs)
    if chips <= 1:
        return None
    if chips == engines:
        return f"each of the {engines} engines on its own chip, at its 1/{engines} of the output tok/s"
    per = f"{plural(engines, 'engine')} x {chips // engines}"
    return f"each of the {chips} chips ({per}), at its 1/{chips} of the output tok/s"


def search_markdown(result: SearchResult) -> list[str]:
    """'## SLO search': the answer, why the search stopped, its notes, the KV wall, and every probe in load order."""
    slo = ", ".join(f"{k} ≤ {v:g} ms" for k, v in result.slo.items())
    unit = "clients" if result.kind == "clients" else "req/s"
    answer = clients_answer(result) if result.kind == "clients" else f"{num(result.max_rate_per_s)} req/s"
    how = "Interrupted" if result.bound_reason.startswith("interrupted") else "Stopped"  # else by an error
    lead = f"{how} before its answer: so far the largest" if result.interrupted else "Largest"
    predicted = result.prediction is not None
    reps = "seeds" if predicted else "reps"
    lines = [
        "## SLO search" + (" (predicted)" if predicted else ""),
        "",
        f"{lead} load meeting {slo} at p{result.percentile:g} ({result.workload} workload, "
        f"{result.context_tokens:,}-token context): **{answer}**, {num(result.output_tok_per_s)} output tok/s there "
        f"(steady window, median over {reps}). Stopped: {result.bound_reason}.",
        "",
    ]
    if (seeds := seeds_range_text(result)) is not None:
        lines += [f"Predicted by simulate, not measured: {seeds}; {basis_text(result)}.", ""]
    if (probes := probe_load_text(result)) is not None:
        lines += [f"Probes: {probes}.", ""]
    if result.notes:  # a stored calibration not used (SearchResult.notes), as the CLI and the MCP summary say it
        lines += ["Notes on this search:", *(f"- {md_text(note)}" for note in result.notes), ""]
    if result.kv_wall_clients is not None:
        lines += [f"KV wall (plan): {result.kv_wall_clients:,} clients at the longest prompt plus output.", ""]
    if result.costs:
        share = cost_share_text(result)
        lines += [f"At the answer's throughput{f' ({share})' if share else ''}:", ""] + [
            f"- {c.chip} {c.pricing} ({c.region}): ${c.usd_per_mtok:,.3f} per million output tokens, "
            f"${c.monthly_usd:,.0f}/month (price of {c.price_date})"
            for c in result.costs
        ]
        lines.append("")
    rate = result.kind == "rate"  # a rate probe's request count follows its rate: said per probe
    header = [unit, *(["requests"] * rate), "verdict", *(f"p{result.percentile:g} {k}" for k in result.slo), "met SLO"]
    header.append("output tok/s (steady)")
    lines += [
        f"Per probe: each SLO metric's p{result.percentile:g}, ms, over its "
        f"{'predicted' if predicted else 'measured'} requests of every {reps[:-1]} "
        "together (open loop: from the intended send)"
        + (", [its lowest-highest over one seed's requests]" if predicted else "")
        + "; met SLO: the share of those requests meeting every SLO; output tok/s: "
        f"the steady window's, median over {reps}.",
        "",
    ]
    rows = [
        [
            f"{p.load:g}",
            *([f"{p.requests_sent:,}"] * rate),
            probe_verdict(result, p),
            *(at_percentile_text(result, p, k) for k in result.slo),
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
