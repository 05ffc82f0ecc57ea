"""How far a prediction can be off, from measurements: the ranges `advise` ranks by and the SLO verdicts.

A prediction's terms come from one of three places, and each has a measured error (catalog
serving_measurements.json `prediction_error`, each with its source): `calibrated` (fitted on this chip),
`carried` (fitted on another chip of the model and scaled here, calibrate.transfer) and `prior` (no calibration:
the roofline at the measured fraction of bandwidth, sim.priors; optimistic, so its range is lopsided). The
range of a figure is the wider of the seeds' spread and the measured error around the median.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from onechip import catalog

Source = Literal["calibrated", "carried", "prior"]
Verdict = Literal["pass", "fail", "cannot tell"]


def relative_error(source: Source | Literal["noise"], figure: str) -> float:
    """The measured relative error of `figure` (output_tok_per_s, ttft_ms, tpot_ms) for `source`."""
    return float(getattr(catalog.serving_measurements().prediction_error[source], figure))


def error_source(source: Source) -> str:
    """Where `source`'s error was measured (catalog source line)."""
    return str(catalog.serving_measurements().prediction_error[source].source)


def measured_chips() -> set[str]:
    """Chips the measurement corpus holds a serving measurement of (a grid or the cross-chip decode band)."""
    corpus = catalog.serving_measurements()
    return {g.chip for g in corpus.grids} | set(corpus.decode_tok_per_s_per_tb_s.chips)


@dataclass(frozen=True)
class Range:
    low: float
    high: float


def figure_range(source: Source, figure: str, median: float, seeds: tuple[float, float] | None = None) -> Range:
    """The range of `figure` predicted at `median` (seeds' min and max in `seeds`): median x the measured
    factors where the corpus gives them (priors: lopsided, they are optimistic), else median -+ the measured
    relative error; widened to the seeds' spread."""
    entry = catalog.serving_measurements().prediction_error[source]
    factors = (entry.factors or {}).get(figure)
    if factors:
        low, high = median * factors[0], median * factors[1]
    else:
        e = float(getattr(entry, figure))
        low, high = median * max(0.0, 1.0 - e), median * (1.0 + e)
    if seeds is not None:
        low, high = min(low, seeds[0]), max(high, seeds[1])
    return Range(low, high)


def slo_verdict(ranges: dict[str, Range], slo: dict[str, float]) -> Verdict:
    """'pass' when every SLO metric's whole range is within its limit (ms, upper bounds), 'fail' when some
    metric's whole range is beyond it, else 'cannot tell'. A metric without a range cannot tell."""
    if any(name in ranges and ranges[name].low > limit for name, limit in slo.items()):
        return "fail"
    if all(name in ranges and ranges[name].high <= limit for name, limit in slo.items()):
        return "pass"
    return "cannot tell"
