"""`onechip simulate` and `onechip advise`: predict a grid, or the cheapest chip, before renting one."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.text import Text

from onechip import api
from onechip.cli.bench_cmd import print_policies, print_run, print_search
from onechip.cli.options import options_from
from onechip.cli.render import console, live_progress, print_json, print_whole, print_written, titled_table
from onechip.paths import run_dir
from onechip.schemas import BenchRun
from onechip.schemas.bench import PolicyComparison, SearchResult
from onechip.schemas.common import plural
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import AdviseRequest, SimulateRequest
from onechip.schemas.sim import Advice, Prediction


def register(app: typer.Typer) -> None:
    app.command("simulate")(simulate)
    app.command("advise")(advise)


@options_from(SimulateRequest)
def simulate(
    as_json: Annotated[bool, typer.Option("--json", help="Print the predicted BenchRun as JSON.")] = False,
    **fields: Any,
) -> None:
    """Predict a context x clients grid from a plan and a few measured calibration cells; --find-max searches the
    largest load whose predicted cell meets --slo, as bench --find-max does."""
    request = build_request(SimulateRequest, fields)
    # --out, else a new runs/<run-id>/ per call, as bench over MCP (removed again when nothing was written in it)
    with run_dir(request.out_dir) as out_dir, live_progress(transient=True) as on_progress:
        request = request.model_copy(update={"out_dir": out_dir})
        if request.find_max is not None:
            result: BenchRun | PolicyComparison | SearchResult = api.simulate_find_max(request, on_progress)
        elif len(request.router_policies) > 1:
            result = api.simulate_policies(request, on_progress)
        else:
            result = api.simulate(request, on_progress)
    if isinstance(result, SearchResult):
        if as_json:
            print_json(result)
        else:
            _print_basis(result.prediction, result.prediction.engine_version if result.prediction else None)
            print_search(result, console)
        print_written(f"{out_dir}/search.json, one predicted run per probe under {out_dir}/", as_json)
        return
    if isinstance(result, PolicyComparison):
        print_policies(result, out_dir, as_json)
        return
    run = result
    written = f"{out_dir}/summary.json (compare: onechip report MEASURED --compare {out_dir})"
    if as_json:
        print_json(run)
    else:
        _print_simulated(run)
    print_written(written, as_json)


def _print_simulated(run: BenchRun) -> None:
    """What the prediction rests on (the calibration's cells and pinned terms, or priors), then the grid."""
    _print_basis(run.prediction, run.server.engine_version)
    print_run(run, console)


def _print_basis(prediction: Prediction | None, planned: str | None) -> None:
    """What a prediction rests on: the calibration's cells, the engine version they were measured on and its pinned
    terms (fitted on another engine version than the plan's `planned` one: said), or priors."""
    if prediction is not None and prediction.calibration is not None:
        cal = prediction.calibration
        fitted_on = cal.key.engine_version
        console.print(
            f"[bold]predicted[/] from calibration on {', '.join(cal.cells)} ({cal.source_run}), measured on engine "
            f"version {fitted_on or 'not recorded'}; terms the cells pinned: {', '.join(cal.fitted) or 'none'}"
        )
        if fitted_on and planned and fitted_on != planned:  # store.find: no calibration of the plan's version stored
            console.print(f"[yellow]fitted on engine version {fitted_on}[/]; the plan is for {planned}")
        if prediction.calibration_misfit:  # a fit that misses its own cells is no calibration to bet on
            console.print(f"[yellow]{prediction.calibration_misfit}[/]", highlight=False)
        if cal.unseparated:
            console.print(
                f"[yellow]measured only together by these cells[/] (their split is the prior's, not the data's): "
                f"{', '.join(cal.unseparated)}"
            )
        for name, why in cal.held.items():
            console.print(f"[yellow]held at 0[/]: {name}, {why}", highlight=False)
        loose = [n for n in type(prediction.terms).model_fields
                 if n not in cal.fitted and n not in cal.unseparated and n not in cal.held]  # fmt: skip
        if loose:
            console.print(f"[yellow]not pinned by these cells[/] (kept near their prior): {', '.join(loose)}")
    else:
        console.print("[bold yellow]predicted from roofline priors only[/] (no calibration)")


@options_from(AdviseRequest)
def advise(
    as_json: Annotated[bool, typer.Option("--json", help="Print the Advice as JSON.")] = False,
    **fields: Any,
) -> None:
    """Every chip MODEL fits on for one workload: predicted cell, $/M output tokens, ranked.

    Exit 0: a deployment is served; 10: none fits (the advice, or its --json, is printed first); 2: bad input (as
    plan's, for every deployment), or plans that fit but none could be predicted.
    """
    request = build_request(AdviseRequest, fields)
    with live_progress(transient=True) as on_progress:
        advice = api.advise(request, on_progress)
    if as_json:
        print_json(advice)
    else:
        _print_advice(advice, request)
        for r in advice.rows:
            said = [r.verdict] if not r.fits else []
            if r.platform_unsupported:  # plan's warning: the official builds will not run the card
                said.append(r.platform_unsupported)
            if r.utilization is not None:  # the engine's default utilization does not start on this card
                said.insert(0, f"planned at --gpu-memory-utilization {r.utilization:g}, the most its free memory at "
                            "start covers")  # fmt: skip
            if said:
                console.print(f"[dim]{r.chip} ({r.engines} x TP={r.tensor_parallel_size}): {'; '.join(said)}[/]")
        for note in advice.notes:
            console.print(f"[yellow]note[/] {note}")
    if not any(r.fits for r in advice.rows):  # a pipeline must not read "no chip" as an answer
        raise api.advise_unserved_error(advice, f"{api.advise_unserved(advice)}; reasons above")


# what each figure of advise's table is, and its unit: the tok/s is bench's steady-window figure (its first grid), not
# the whole-run one vllm bench serve, GuideLLM and AIPerf report, which reads lower by the ramp and the drain (advise's
# own cell from priors, google/gemma-4-E2B-it at ctx=1024: v5e-1 at 16 clients 549 against 442, l4 at 4 clients 137
# against 114), and $/M is per million output tokens at it; neither was said. Its range is the
# error measured on that same steady figure (sim.uncertainty.STEADY), not the whole-run one's
FIGURES_LEGEND = (
    "[dim]tok/s: predicted aggregate output tokens per second, steady window (every stream busy: what the chip "
    "sustains under this load, so what a rented hour buys; bench's first grid; the whole-run figure vllm bench serve, "
    "GuideLLM and AIPerf report is lower by a short run's ramp and drain); TTFT, TPOT: predicted medians, ms; $/h: "
    "USD per hour for the deployment's chips; $/M tok: USD per million output tokens at that tok/s; \\[ranges]: the "
    "error of the prediction's source measured on the same steady figure, a calibrated or carried one's holding the "
    "measured value on a stated share of held-out cells (note below)[/]"
)


def _rate(tok_per_s: float | None, tok_per_s_range: tuple[float, float] | None) -> str:
    """Predicted output tok/s, with its range over seeds when the seeds disagree at this precision."""
    rate = f"{tok_per_s or 0:,.0f}"
    low, high = (f"{x:,.0f}" for x in (tok_per_s_range or (tok_per_s or 0, tok_per_s or 0)))
    return rate if low == high == rate else f"{rate} [{low}-{high}]"


def _print_advice(advice: Advice, request: AdviseRequest) -> None:
    """The ranked table of the chips that fit, then one line when every row shares its source."""
    wl = advice.workload
    count = {key: round(value) for key, value in wl.items()}  # whole numbers (AdviseRequest's workload)
    sessions = (
        f", agent sessions of {plural(count['turns'], 'turn')} ({request.router_policy} over replicas)"
        if "turns" in wl
        else ""
    )
    table = titled_table(
        f"{advice.model}: {plural(count['ctx'], 'token')} x {plural(count['clients'], 'client')}, "
        f"{plural(count['output_tokens'], 'output token')}{sessions}",
        title_justify="left",
        show_edge=False,
    )
    # (header, cells, whole): what names and ranks a row (chip, engines, the figures, $/M) is never cut to '…'
    # on a narrow or piped (80-column) console, nor dropped (print_whole); only the words of '$/h' and 'from' wrap;
    # SLO only when asked
    fitting = [r for r in advice.rows if r.fits]
    columns: list[tuple[str, list[str], bool]] = [
        ("chip", [r.chip for r in fitting], True),
        ("engines", [f"{r.engines} x TP={r.tensor_parallel_size}" for r in fitting], True),
        ("tok/s", [_rate(r.output_tok_per_s, r.output_tok_per_s_range) for r in fitting], True),
        ("TTFT\nms", [f"{r.ttft_ms or 0:,.1f}" for r in fitting], True),
        ("TPOT\nms", [f"{r.tpot_ms or 0:,.2f}" for r in fitting], True),
        ("$/h", [f"{r.usd_per_hour:.2f} {r.pricing}" if r.usd_per_hour is not None else "no price"
                 for r in fitting], False),
        ("$/M tok\n[range]", [_usd_range(r.usd_per_mtok, r.usd_per_mtok_range) for r in fitting], True),
    ]  # fmt: skip
    if any(r.prefix_cache_hit_share is not None for r in fitting):  # agent sessions (workload turns=N)
        hits = [f"{r.prefix_cache_hit_share:.0%}" if r.prefix_cache_hit_share is not None else "-" for r in fitting]
        columns.insert(3, ("prefix\nhits", hits, True))
    if request.slo:
        verdicts = {"pass": "pass", "fail": "[red]fail[/]", "cannot tell": "[yellow]?[/]", None: ""}
        columns.append(("SLO", [verdicts[r.slo_verdict] for r in fitting], True))
    sources = [{"calibrated": "calibrated", "carried": "carried"}.get(r.source or "", "[yellow]priors[/]")
               for r in fitting]  # fmt: skip
    if len(set(sources)) > 1:  # one source for every row is said once, under the table
        columns.append(("from", sources, False))
    for header, cells, whole in columns:
        texts = [Text.from_markup(c).plain for c in [*cells, *header.split("\n")]]
        table.add_column(
            header,
            justify="left" if header in ("chip", "engines", "from") else "right",
            no_wrap=whole,
            overflow="ellipsis" if whole else "fold",
            # a wrapped column keeps its longest word whole ('calibrated' folded to 'calibrate' / 'd' at 80 columns)
            min_width=max(len(w) for t in texts for w in (t.split() if not whole else [t]) or [""]),
        )
    for row in zip(*(cells for _, cells, _ in columns), strict=True):
        table.add_row(*row)
    print_whole(table)
    console.print(FIGURES_LEGEND, highlight=False)
    # every price a row is ranked on, with its source and date (a row without one is ranked after those with)
    for chip, source, stale in dict.fromkeys((r.chip, r.price_source, r.price_stale) for r in fitting):
        flag = " [yellow]stale[/]" if stale else ""
        console.print(f"[dim]{chip} price: {source or 'no price'}[/]{flag}", highlight=False)
    if fitting and len(set(sources)) == 1:
        said = {"calibrated": "from a stored calibration", "carried": "from a calibration carried from another chip"}
        prior = "from [yellow]priors[/] (roofline at the measured efficiencies, plus the measured host cost)"
        console.print(f"every row predicted {said.get(fitting[0].source or '', prior)}")
    unmeasured = sorted({r.chip for r in fitting if r.source == "prior" and not r.chip_measured})
    if unmeasured:
        console.print(f"[dim]no serving measurement of {', '.join(unmeasured)} in the corpus: their priors rest on "
                      "other chips' measurements (wider range, ranked after priors on measured chips)[/]")  # fmt: skip
    if request.slo:
        console.print("[dim]SLO: pass / fail over the whole TTFT and TPOT range; ? = the range straddles it[/]")
    for r in fitting:
        # priors on chips with no measurement overlap one another: said once, in the note
        if r.could_flip_with and (r.source != "prior" or r.chip_measured):
            more = f" and {len(r.could_flip_with) - 3} more" if len(r.could_flip_with) > 3 else ""
            console.print(f"[dim]{r.chip} {r.engines}xTP{r.tensor_parallel_size} could flip, within the ranges, "
                          f"with {', '.join(r.could_flip_with[:3])}{more}[/]")  # fmt: skip


def _usd_range(usd: float | None, usd_range: tuple[float, float] | None) -> str:
    """$/M with its range (low-high) when known."""
    if usd is None:
        return "—"
    return f"${usd:.3f}" + (f" [{usd_range[0]:.3f}-{usd_range[1]:.3f}]" if usd_range else "")
