"""How far a prediction can be off, from measurements: the ranges `advise` ranks by and the SLO verdicts.

A prediction's terms come from one of three places, and each has a measured error (catalog
serving_measurements.json `prediction_error`, each with its source): `calibrated` (fitted on this chip),
`carried` (fitted on another chip of the model and carried here by the chips' measured efficiencies and host
costs, sim.priors.carry) and `prior` (no calibration: sim.priors.measured_priors). A carried or prior row whose
chip lacks some of its own measurements (decode, prefill, host cost) rests in part on other chips': its error is
the one measured that way (`carried_unmeasured`, and `prior` measured leaving the chip out), while a prior on a
chip with all three gets `prior_measured_chip`. Output tok/s has two entries: `output_tok_per_s`, measured on
each grid's published definition (whole-run for vllm bench serve's), and `steady_output_tok_per_s` (STEADY),
measured on the steady window advise ranks and prices on. The range of a figure is the wider of the seeds' spread and
the measured error around the median, and for a calibration's prediction never narrower than the fit's miss on the
cells it was fitted on (own_factors); a calibration whose cells pinned no term is a prior's (error_key).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from onechip import catalog
from onechip.schemas.sim import Calibration
from onechip.sim.calibrate import pinned_terms

Source = Literal["calibrated", "carried", "prior"]
Verdict = Literal["pass", "fail", "cannot tell"]


# advise ranks and prices on the steady-window tok/s (CellResult.output_tok_per_s: every stream busy), what a chip
# under sustained load serves per hour it is rented; the whole-run figure of vllm bench serve, GuideLLM and AIPerf
# also counts a benchmark's ramp and drain (advise's cell, 2 requests a stream at 1,024 + 32 tokens, from priors:
# v5e-1 at 16 clients 442 against 549, l4 at 4 clients 114 against 137). Its range is this error entry's, measured
# on the steady figure, not output_tok_per_s's, measured on each grid's published (mostly whole-run) figure.
STEADY = "steady_output_tok_per_s"

ErrorKey = Literal["calibrated", "carried", "carried_unmeasured", "prior", "prior_measured_chip", "noise"]


def error_key(source: Source, chip_measured: bool = True, calibration: Calibration | None = None) -> ErrorKey:
    """The corpus `prediction_error` entry for a prediction from `source` on a chip whose decode, prefill and
    host cost were all measured (`chip_measured`, sim.priors.Basis.complete) or not: a carried or prior row
    on a chip measured in part or not at all gets the error measured without the chip's own measurements. A
    calibrated or carried row whose `calibration`'s cells pinned no term (sim.calibrate.pinned_terms) rests on its
    terms' starting points, not on the cells: a prior's error (the calibrated and carried errors were measured on
    fits that pinned some)."""
    if calibration is not None and source != "prior" and not pinned_terms(calibration):
        source = "prior"
    if source == "carried" and not chip_measured:
        return "carried_unmeasured"
    if source == "prior" and chip_measured:
        return "prior_measured_chip"
    return source


def relative_error(key: ErrorKey, figure: str) -> float:
    """The measured relative error of `figure` (output_tok_per_s: whole-run, STEADY, ttft_ms, tpot_ms) for `key`.
    Raises ValueError where the corpus has not measured it."""
    value = getattr(catalog.serving_measurements().prediction_error[key], figure)
    if value is None:
        raise ValueError(f"serving_measurements.json prediction_error.{key} has no measured {figure}")
    return float(value)


def error_source(key: ErrorKey) -> str:
    """Where `key`'s error was measured (catalog source line)."""
    return str(catalog.serving_measurements().prediction_error[key].source)


# a calibration's residuals are per figure of its cells (sim.figures.FIGURES); the steady tok/s advise ranges is
# bench's output_tok_per_s, the figure a calibration run's cells measured
_CELL_FIGURE = {STEADY: "output_tok_per_s"}


def own_factors(calibration: Calibration | None, figure: str) -> tuple[float, float] | None:
    """The measured value as a factor of the predicted one (lowest, highest) on `calibration`'s own cells for
    `figure` (output_tok_per_s, STEADY, ttft_ms, tpot_ms): a residual r = predicted / measured - 1
    (Calibration.residuals_pct) is a factor 1 / (1 + r). None without a calibration or residuals for the figure (one
    stored without them). A residual of -100% (predicted 0) has no factor and is left out."""
    name = _CELL_FIGURE.get(figure, figure)
    residuals = [v / 100.0 for label, v in (calibration.residuals_pct if calibration else {}).items()
                 if label.rsplit(" ", 1)[-1] == name]  # fmt: skip
    factors = [1.0 / (1.0 + r) for r in residuals if r > -1.0]
    return (min(factors), max(factors)) if factors else None


def misfit_note(calibration: Calibration | None, row: Source | None = None) -> str | None:
    """One line when `calibration` misses its own cells by more than a calibrated prediction's measured error on some
    figure (serving_measurements.json prediction_error calibrated), naming the largest miss, or when its cells pinned
    no term (sim.calibrate.pinned_terms). `row`: the advise row it backs, and what that does to the row's ranges: a
    calibrated row's are widened to cover the fit's own cells (own_factors) and a prior's where it pinned no term
    (error_key); a carried row's terms are rescaled to the target's measurements (sim.priors.carry), so only the latter
    is said. None when there is nothing to say."""
    if calibration is None:
        return None
    wider = False
    for figure in (STEADY, "ttft_ms", "tpot_ms") if row != "carried" else ():
        own, bare = own_factors(calibration, figure), figure_range("calibrated", figure, 1.0)
        wider = wider or (own is not None and (own[0] < bare.low or own[1] > bare.high))
    none_pinned = not pinned_terms(calibration)
    if not wider and not none_pinned:
        return None
    said, then = [], []
    if wider:
        label, worst = max(calibration.residuals_pct.items(), key=lambda item: abs(item[1]))
        said.append(f"misses its own cells by up to {abs(worst):,.0f}% ({label}), beyond the calibrated error")
        then.append("widened to cover its own cells")
    if none_pinned:
        said.append("pinned no term (each stays near where the fit started)")
        then.append("a prior's")
    line = f"the calibration on {', '.join(calibration.cells) or 'its cells'} {' and '.join(said)}"
    return f"{line}: its ranges are {' and '.join(then)}" if row is not None else line


def coverage_factors(factors: Sequence[float], coverage: float) -> tuple[float, float]:
    """The central interval of `factors` (measured / predicted on held-out cells) that holds at least `coverage` (0 -
    1] of them: the same count, floor(n x (1 - coverage) / 2), left out at each end, so never fewer inside than
    stated (n = 7 at 0.8 leaves none out). Raises ValueError on no factors or a coverage outside (0, 1]."""
    if not factors or not 0.0 < coverage <= 1.0:
        raise ValueError(f"coverage_factors needs factors and a coverage in (0, 1], got {len(factors)} and {coverage}")
    ordered = sorted(factors)
    cut = math.floor(len(ordered) * (1.0 - coverage) / 2.0 + 1e-9)  # 1e-9: 100 x 0.1 is 9.999... in floats
    return ordered[cut], ordered[-1 - cut]


def nested_coverage(
    held_out: Sequence[tuple[str, str, str, float]],
    coverage: float,
    own: Mapping[str, tuple[float, float]] | None = None,
) -> list[bool]:
    """Whether each held-out cell (fitted grid, predicted grid, cell, measured / predicted) lies inside the interval
    coverage_factors gives on the other predicted grids' cells (nested leave-one-grid-out: the share printed is out of
    sample), widened to `own`[fitted grid] where given (own_factors: a calibrated range is never narrower than its
    fit's own misses). A cell whose grid is the only one is outside (nothing to compute its interval from)."""
    inside = []
    for fitted, predicted, _, factor in held_out:
        others = [f for _, grid, _, f in held_out if grid != predicted]
        if not others:
            inside.append(False)
            continue
        low, high = coverage_factors(others, coverage)
        if own is not None and fitted in own:
            low, high = min(low, own[fitted][0]), max(high, own[fitted][1])
        inside.append(low <= factor <= high)
    return inside


def coverage_range(key: ErrorKey, figure: str) -> tuple[float, float] | None:
    """The measured / predicted factors that hold the measured value on catalog prediction_ranges.json's coverage of
    held-out cells for `key` and `figure` (generated by benchmarks/sim_accuracy.py corpus --write-ranges); None
    where the file has none (priors: their factors in serving_measurements.json, lowest to highest)."""
    ranges = catalog.prediction_ranges().ranges.get(key)  # type: ignore[arg-type]  # priors, noise: none
    entry = ranges.figures.get(figure) if ranges is not None else None
    return entry.factors if entry is not None else None


def range_words(key: ErrorKey, figure: str) -> str:
    """How `key`'s range of `figure` is read, for a note: '0.80-1.20x (mean error 10%)' where it holds a stated
    share of held-out cells (coverage_range), the measured factors lowest to highest, else '+-10%' (the mean)."""
    error = relative_error(key, figure)
    if (held := coverage_range(key, figure)) is not None:
        return f"{held[0]:.2f}-{held[1]:.2f}x (mean error {error:.0%})"
    factors = (catalog.serving_measurements().prediction_error[key].factors or {}).get(figure)
    return f"{factors[0]:.2f}-{factors[1]:.2f}x" if factors else f"+-{error:.0%}"


@dataclass(frozen=True)
class Range:
    low: float
    high: float


def figure_range(
    key: ErrorKey,
    figure: str,
    median: float,
    seeds: tuple[float, float] | None = None,
    own: tuple[float, float] | None = None,
) -> Range:
    """The range of `figure` predicted at `median` (seeds' min and max in `seeds`) for error entry `key`
    (error_key): median x the factors that hold the measured value on a stated share of held-out cells
    (coverage_range) where the catalog has them, else median x the measured factors where the corpus gives them
    (lopsided where the predictions were), else median -+ the measured relative error; widened to the seeds'
    spread, and to median x `own` (own_factors: the calibration's measured / predicted on the cells it was fitted on,
    which a prediction from it is not known better than)."""
    factors = coverage_range(key, figure) or (catalog.serving_measurements().prediction_error[key].factors or {}).get(
        figure
    )
    if factors:
        low, high = median * factors[0], median * factors[1]
    else:
        e = relative_error(key, figure)
        low, high = median * max(0.0, 1.0 - e), median * (1.0 + e)
    if seeds is not None:
        low, high = min(low, seeds[0]), max(high, seeds[1])
    if own is not None:
        low, high = min(low, median * own[0]), max(high, median * own[1])
    return Range(low, high)


def slo_verdict(ranges: dict[str, Range], slo: dict[str, float]) -> Verdict:
    """'pass' when every SLO metric's whole range is within its limit (ms, upper bounds), 'fail' when some
    metric's whole range is beyond it, else 'cannot tell'. A metric without a range cannot tell."""
    if any(name in ranges and ranges[name].low > limit for name, limit in slo.items()):
        return "fail"
    if all(name in ranges and ranges[name].high <= limit for name, limit in slo.items()):
        return "pass"
    return "cannot tell"
