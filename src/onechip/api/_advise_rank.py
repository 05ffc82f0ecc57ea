"""`advise`'s ranking: by what holds within the measured ranges, and the notes that say how."""

from __future__ import annotations

from onechip import catalog
from onechip.schemas.sim import AdviceRow
from onechip.sim import uncertainty

ADVISE_NOTE = (
    "predicted, not measured: a chip with a stored calibration (onechip simulate --calibrate) is marked "
    "calibrated; one calibrated on another chip of the same model is carried over by the two chips' measured "
    "efficiencies (decode bandwidth, prefill FLOPS) and the host cost of each deployment (tensor-parallel "
    "communication not modelled); the others use priors from published measurements (sim.priors): the "
    "roofline at the measured efficiencies plus the measured host cost, the chip's own where the corpus has "
    "it, else the measured chips' mean (chip_measured false, wider range). Prices are per chip-hour times the "
    "chips of the deployment."
)

VERDICT_ORDER = {"pass": 0, None: 0, "cannot tell": 1, "fail": 2}


def rank_note() -> str:
    """How the rows are ranked, with the ranges' measured errors read from the corpus."""

    def tok(key: uncertainty.ErrorKey) -> str:
        return uncertainty.range_words(key, uncertainty.STEADY)

    # said only where prediction_ranges.json holds such a range (until generated, each falls back to the mean error)
    holds = (
        "; a calibrated or carried range, the measured / predicted factors that hold the measured value on "
        f"{catalog.prediction_ranges().coverage:.0%} of held-out cells, prediction_ranges.json"
        if uncertainty.coverage_range("calibrated", uncertainty.STEADY) is not None
        else ""
    )

    return (
        "Ranked by what holds within the ranges: SLO pass, then cannot tell, then fail (from the TTFT/TPOT "
        "range); rows backed by a calibration (on the chip, or carried from another) first, then priors on "
        "chips with published measurements of their own, then priors on chips with none; within each, by $/M "
        "at the pessimistic end. tok/s ranges are each source's error measured on the same steady-window "
        f"figure (catalog serving_measurements.json steady_output_tok_per_s{holds}): "
        f"calibrated {tok('calibrated')}; "
        f"carried {tok('carried')} and priors {tok('prior_measured_chip')} on a chip whose decode, prefill and "
        f"host cost are all measured, one engine per chip; otherwise carried {tok('carried_unmeasured')} and "
        f"priors {tok('prior')} (a chip measured in part or not at all, or a tensor-parallel engine, whose "
        "communication is not modelled). 'could flip "
        "with' names lower rows that could come out ahead of a row within the ranges: an SLO verdict that may pass "
        "where the row's may fail, or at the same verdict a $/M range reaching below the row's."
    )


def tier(r: AdviceRow) -> int:
    """0: calibrated or carried; 1: priors on a chip with its own measurements; 2: priors on one without."""
    if r.source in ("calibrated", "carried"):
        return 0
    return 1 if r.chip_measured else 2


# a row's SLO verdict at its best and at its worst within its TTFT/TPOT range: 'cannot tell' may pass or fail
_BEST = {"pass": 0, None: 0, "cannot tell": 0, "fail": 1}
_WORST = {"pass": 0, None: 0, "cannot tell": 1, "fail": 1}


def could_come_ahead(lower: AdviceRow, upper: AdviceRow) -> bool:
    """Whether `lower`, ranked below `upper`, could come out ahead of it within both rows' ranges (SLO verdict first,
    then $/M, as `rank` orders them): its verdict at best passes where `upper`'s at worst fails (a 'cannot tell' below
    one above), or both can end with the same verdict and its optimistic $/M is below `upper`'s pessimistic one. A
    row that fails never comes ahead of one that passes, however cheap; a row with no $/M range is never named."""
    if lower.usd_per_mtok_range is None or upper.usd_per_mtok_range is None:
        return False
    best, worst = _BEST[lower.slo_verdict], _WORST[upper.slo_verdict]
    return best < worst or (best == worst and lower.usd_per_mtok_range[0] < upper.usd_per_mtok_range[1])


def rank(rows: list[AdviceRow]) -> list[AdviceRow]:
    """Rows that fit first; by SLO verdict (pass, cannot tell, fail); by `tier` (a prior-only row never
    above a calibrated one); then by $/M at the pessimistic end of the range (what holds within it). Each row
    names the rows below it that could come out ahead of it within the ranges (could_come_ahead: the order could
    flip there)."""

    def key(r: AdviceRow) -> tuple[bool, int, int, bool, float]:
        worst = r.usd_per_mtok_range[1] if r.usd_per_mtok_range else r.usd_per_mtok
        return (not r.fits, VERDICT_ORDER[r.slo_verdict], tier(r), worst is None,
                worst if worst is not None else -(r.output_tok_per_s or 0))  # fmt: skip

    ranked = sorted(rows, key=key)
    for i, r in enumerate(ranked):
        if r.usd_per_mtok_range is None:
            continue
        r.could_flip_with = [
            f"{o.chip} {o.engines}xTP{o.tensor_parallel_size}"
            + {0: "", 1: " (priors)", 2: " (priors, chip not measured)"}[tier(o)]
            for o in ranked[i + 1 :]
            if o.fits and could_come_ahead(o, r)
        ]
    return ranked
