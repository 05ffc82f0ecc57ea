"""`bench` and `find_max`: measuring a grid, and the SLO search over it."""

from __future__ import annotations

from pathlib import Path

from onechip import bench as bench_layer
from onechip import cost as cost_layer
from onechip.paths import write_text_atomic
from onechip.progress import ProgressFn, no_progress
from onechip.report.search import write_search_report
from onechip.schemas import BenchConfig, BenchRun, Plan
from onechip.schemas.bench import SearchResult


def bench(
    config: BenchConfig, on_progress: ProgressFn = no_progress, *, out_dir: Path, plan: Plan | None = None,
    resume: bool = False,
) -> BenchRun:  # fmt: skip
    """Measure a context x clients grid against `config.base_url`; writes `out_dir`/requests.jsonl and
    summary.json and returns the BenchRun. Raises EndpointError (unreachable URL, probe failed), ConfigError
    (out_dir holds another run; resumed config differs), Interrupted (Ctrl-C; finished requests kept).
    See onechip.bench.run_grid."""
    return bench_layer.run_grid(config, out_dir, plan=plan, resume=resume, on_progress=on_progress)


def find_max(
    config: BenchConfig, on_progress: ProgressFn = no_progress, *, out_dir: Path, plan: Plan | None = None
) -> SearchResult:
    """`bench --find-max`: the largest load (clients or requests/s) whose measured cell meets `config.slo` at
    `config.slo_percentile`; one bench run per probe under `out_dir`, and `out_dir`/search.json (with the
    answer priced on `config.chip`), search.md and search.html. Raises what `bench` raises, and ConfigError
    for an unknown chip or pricing model (before measuring). See onechip.bench.search."""
    if config.chip is not None:  # an unknown chip or pricing model fails before anything is measured
        cost_layer.cost_lines(config.chip, 1.0, config.pricing)
    result = bench_layer.find_max(config, out_dir, plan=plan, on_progress=on_progress)
    if config.chip is not None and result.output_tok_per_s:
        result.costs = cost_layer.cost_lines(config.chip, result.output_tok_per_s, config.pricing)
        write_text_atomic(Path(out_dir) / "search.json", result.model_dump_json(indent=2))
    write_search_report(result, Path(out_dir))
    return result


def saved_bench_config(run_dir: Path) -> BenchConfig | None:
    """The BenchConfig a bench run in `run_dir` was started with (None if it saved none); what `--resume`
    continues. Raises ConfigError when its summary.json is unreadable."""
    return bench_layer.saved_config(Path(run_dir))
