"""`cost` and `report`: pricing a throughput or a saved run, and re-rendering a run."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from pydantic import ValidationError

from onechip import bench as bench_layer
from onechip import cost as cost_layer
from onechip import planner
from onechip import report as report_layer
from onechip.errors import ConfigError
from onechip.paths import write_text_atomic
from onechip.report.search import SEARCH_FORMATS, write_search_report
from onechip.schemas import RUN_FILES
from onechip.schemas.common import first_problem
from onechip.schemas.cost import CostReport
from onechip.schemas.requests import CostRequest, ReportRequest
from onechip.schemas.run import POLICIES_FILE, SEARCH_FILE


def cost(request: CostRequest) -> CostReport:
    """Price a throughput, or every cell of a saved run, on `request.chip` from the price catalog.

    With `request.run_dir`, the bench summary there is priced cell by cell; the chip defaults to the run's
    chip and the report warns when the run was measured on another chip. `request.write` stores the result
    as `cost.json` in the run directory. Raises ConfigError for unknown chip/region/pricing, no throughput, or a
    `run_dir` that holds no run files (report.require_run_files). See onechip.cost.
    """
    files = report_layer.read_run(request.run_dir, "--run") if request.run_dir is not None else None
    measured_on = None
    if files is not None and (damaged := files.problem("bench")):  # not priced as if the run had no summary
        raise ConfigError(f"--run {request.run_dir}: {damaged}")
    if files is not None and files.bench is None and request.output_tok_per_s is None:
        comparison = (files.path / POLICIES_FILE).is_file()  # bench/simulate --router-policies: a run per policy
        raise ConfigError(
            f"--run {request.run_dir}: no bench summary there ({RUN_FILES['bench']}) to price"
            + (
                f"; a policy comparison keeps one run per policy: --run {request.run_dir}/<policy>"
                if comparison
                else ""
            )
        )
    if files is not None:
        # priced at output_tok_per_s, a directory with no run files is still no run (as `report` refuses it): a
        # typo, or one --write would make a run of by writing cost.json there
        report_layer.require_run_files(files)
        measured_on = (files.manifest.chip if files.manifest else None) or (files.plan.chip if files.plan else None)
    chip = request.chip or measured_on
    if not chip:
        raise ConfigError("give a chip to price (--chip), e.g. v5e-1")
    chip = planner.rules.chip_key(chip)  # 'L4' is the catalog's l4, priced under that key
    result = cost_layer.estimate(
        chip,
        output_tok_per_s=request.output_tok_per_s,
        bench=files.bench if files else None,
        pricing=request.pricing,
        region=request.region,
        cold_boot_s=request.cold_boot_s,
        warm_boot_s=request.warm_boot_s,
        today=request.today,
        measured_on=measured_on,
    )
    if files is not None and files.bench is not None and result.output_tok_per_s is None:
        # priced nothing: not a success with an empty table ('v5e-1 at 0.0 output tok/s', exit 0), as a run with no
        # summary is refused above; the demo prices its own bench through cost_layer.estimate, which only warns
        said = Counter("ok at no tok/s" if c.status == "ok" else c.status for c in files.bench.cells)
        cells = ", ".join(f"{n} {status}" for status, n in said.items()) or "no cells"
        raise ConfigError(
            f"--run {request.run_dir}: the bench summary has no 'ok' cell with a positive tok/s to price ({cells}); "
            "give the throughput to price with --output-tok-per-s"
        )
    if files is not None and files.bench is not None and files.bench.prediction is not None:
        result.predicted = True
        result.warnings.append(
            f"{files.path} is a prediction (onechip simulate), not a measurement: these are predicted $/M output tokens"
        )
    if request.write and files is not None:
        write_text_atomic(files.path / "cost.json", result.model_dump_json(indent=2))
    return result


def report(request: ReportRequest) -> list[Path]:
    """Re-render the saved run in `request.run_dir` (no re-running) in `request.formats` ('md', 'html',
    'json', 'serving-report'); with `request.compare`, also a side-by-side of that run against this one.
    Returns the files written. See onechip.report.

    Raises ConfigError (after writing) when a run file is damaged (truncated, not JSON, wrong shape): the
    report renders what could be read, but a report of a damaged run must not look like a good one. A
    damaged `compare` run is refused before anything is written.

    A directory `bench --find-max` wrote (search.json) is re-rendered as its search: search.md and search.html
    (_report_search)."""
    if (Path(request.run_dir) / SEARCH_FILE).is_file():
        return _report_search(request)
    if request.compare is not None:  # the other run is judged as `report` judges this one, before writing
        _refuse_damaged(
            report_layer.read_run(request.compare, "--compare").problems, f"--compare {request.compare}: ", ""
        )
    written = report_layer.write_report(request.run_dir, request.formats, compare=request.compare)
    shown = f"; the report in {written[0].parent} shows what could be read"
    _refuse_damaged(report_layer.read_run(request.run_dir).problems, "", shown)
    return written


def _report_search(request: ReportRequest) -> list[Path]:
    """Re-render the --find-max search in `request.run_dir` from its search.json as find_max renders it (search.md,
    search.html: report.search.SEARCH_FORMATS). Raises ConfigError for another format or a --compare (a search is no
    run: its probes are) and for a search.json that cannot be read as one, naming the first field that fails."""
    where = Path(request.run_dir)
    formats = report_layer.parse_formats(request.formats)
    others = [fmt for fmt in formats if fmt not in SEARCH_FORMATS]
    if others:
        raise ConfigError(
            f"{where} holds a --find-max search: its report is {' or '.join(SEARCH_FORMATS)} (search.json is its "
            f"data), not {', '.join(others)}"
        )
    if request.compare is not None:
        raise ConfigError(
            f"{where} holds a --find-max search; --compare compares two runs, such as its probes' ({where}/<probe>)"
        )
    try:
        result = bench_layer.read_search(where)
    except ValidationError as exc:  # bad JSON too (model_validate_json)
        first = first_problem(exc, root="(root)")
        raise ConfigError(f"{where / SEARCH_FILE} is not a search bench --find-max wrote: {first}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where / SEARCH_FILE} is not a search bench --find-max wrote: {exc}") from None
    return write_search_report(result, where, formats)


def _refuse_damaged(problems: list[str], prefix: str, suffix: str) -> None:
    """Raise ConfigError with the first of a run's `problems` (damaged files), if any."""
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(f"{prefix}{problems[0]}{more}{suffix}")
