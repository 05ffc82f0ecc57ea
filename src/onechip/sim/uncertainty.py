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
the measured error around the median.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from onechip import catalog

Source = Literal["calibrated", "carried", "prior"]
Verdict = Literal["pass", "fail", "cannot tell"]


# advise ranks and prices on the steady-window tok/s (CellResult.output_tok_per_s: every stream busy), what a chip
# under sustained load serves per hour it is rented; the whole-run figure of vllm bench serve, GuideLLM and AIPerf
# also counts a benchmark's ramp and drain (advise's cell, 2 requests a stream at 1,024 + 32 tokens, from priors:
# v5e-1 at 16 clients 442 against 549, l4 at 4 clients 114 against 137). Its range is this error entry's, measured
# on the steady figure, not output_tok_per_s's, measured on each grid's published (mostly whole-run) figure.
STEADY = "steady_output_tok_per_s"

ErrorKey = Literal["calibrated", "carried", "carried_unmeasured", "prior", "prior_measured_chip", "noise"]


def error_key(source: Source, chip_measured: bool = True) -> ErrorKey:
    """The corpus `prediction_error` entry for a prediction from `source` on a chip whose decode, prefill and
    host cost were all measured (`chip_measured`, sim.priors.Basis.complete) or not: a carried or prior row
    on a chip measured in part or not at all gets the error measured without the chip's own measurements."""
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


@dataclass(frozen=True)
class Range:
    low: float
    high: float


def figure_range(key: ErrorKey, figure: str, median: float, seeds: tuple[float, float] | None = None) -> Range:
    """The range of `figure` predicted at `median` (seeds' min and max in `seeds`) for error entry `key`
    (error_key): median x the measured factors where the corpus gives them (lopsided where the predictions
    were), else median -+ the measured relative error; widened to the seeds' spread."""
    entry = catalog.serving_measurements().prediction_error[key]
    factors = (entry.factors or {}).get(figure)
    if factors:
        low, high = median * factors[0], median * factors[1]
    else:
        e = relative_error(key, figure)
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
