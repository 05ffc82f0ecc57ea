"""`--find-max` against a fast server: its SLO figures are latencies in ms, shown as every other latency is
(schemas.bench.ms_text, 0.1 ms), so a sub-millisecond TPOT SLO reads as what was measured, not '0'."""

from __future__ import annotations

from rich.console import Console

from onechip.bench.search import probe_line
from onechip.cli.bench_cmd import search_table
from onechip.report.search import at_percentile_text, search_markdown
from onechip.schemas.bench import SearchProbe, SearchResult


def _search() -> SearchResult:
    """A clients search with --slo tpot_ms=0.4 at p99: 1 client's p99 TPOT 0.36 ms meets it, 2 clients' 0.44 misses
    (a local engine a few hundred us per token: llama.cpp on a GPU, the fake servers here)."""
    return SearchResult(
        kind="clients", context_tokens=128, workload="grid", slo={"tpot_ms": 0.4}, percentile=99.0,
        bound_reason="2 clients missed the SLO", max_clients=1,
        probes=[
            SearchProbe(load=1, run_dir="clients-1", status="ok", meets_slo=True, at_percentile_ms={"tpot_ms": 0.36}),
            SearchProbe(load=2, run_dir="clients-2", status="ok", meets_slo=False, at_percentile_ms={"tpot_ms": 0.44}),
        ],
    )  # fmt: skip


def test_a_sub_millisecond_slo_metric_reads_as_measured_in_every_place_it_is_shown() -> None:
    result = _search()
    meets, misses = result.probes
    # 0.36 and 0.44 both read '0.4' at ms_text's 0.1 ms, the bound itself: one more digit tells them from it
    assert [at_percentile_text(result, p, "tpot_ms") for p in result.probes] == ["0.36", "0.44"]
    # the progress line of each probe (bench.search) and the console's table (cli.bench_cmd)
    assert probe_line(meets, 99.0, result.slo) == "meets (ok; p99 tpot_ms 0.36)"
    assert probe_line(misses, 99.0, result.slo) == "misses (ok; p99 tpot_ms 0.44)"
    console = Console(width=200, record=True, color_system=None)
    console.print(search_table(result))
    rows = [line for line in console.export_text().splitlines() if "meets" in line or "misses" in line]
    assert len(rows) == 2 and all(" 0 " not in row for row in rows), rows
    assert " 0.36 " in rows[0] and " 0.44 " in rows[1], rows
    md = "\n".join(search_markdown(result))
    assert "| 0.36 |" in md and "| 0.44 |" in md and "| 0 |" not in md


def test_a_range_over_seeds_and_figures_far_from_the_bound_keep_ms_text_digits() -> None:
    # a predicted probe's range over its seeds: '0.31 [0.2-0.5]', not '0 [0-0]' (which also hid that they differ)
    result = _search()
    p = SearchProbe(load=1, run_dir="clients-1", status="ok", meets_slo=True, at_percentile_ms={"tpot_ms": 0.31},
                    at_percentile_range_ms={"tpot_ms": (0.24, 0.47)})  # fmt: skip
    assert at_percentile_text(result, p, "tpot_ms") == "0.3 [0.2-0.5]"
    same = p.model_copy(update={"at_percentile_range_ms": {"tpot_ms": (0.301, 0.309)}})
    assert at_percentile_text(result, same, "tpot_ms") == "0.3"  # a range that reads as one figure is not shown
    slow = result.model_copy(update={"slo": {"ttft_ms": 500.0}})
    q = SearchProbe(load=1, run_dir="clients-1", status="ok", meets_slo=False, at_percentile_ms={"ttft_ms": 500.04})
    assert at_percentile_text(slow, q, "ttft_ms") == "500.04"  # misses by 40 us: not '500.0'
    assert at_percentile_text(slow, q.model_copy(update={"at_percentile_ms": {"ttft_ms": 1234.56}}), "ttft_ms") == (
        "1,234.6"
    )
