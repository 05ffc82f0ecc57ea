"""benchmarks/ttft_breakdown.py: each held-out cell's error beside the noise of the same cell, two corpus grids'
measurements of it. Expected values are the corpus's own cells (catalog/serving_measurements.json) and the stored
MAPE of the run prediction_ranges.json came from."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from onechip import catalog

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
try:
    import ttft_breakdown
finally:
    sys.path.remove(str(BENCHMARKS))

GRIDS = {g.name: g for g in catalog.serving_measurements().grids}
CV, GCE, SWEEP = "gemma4dev-v6e-1-config-validation", "gce-v6e-1-2026-08-10", "gemma4dev-v6e-1-sweep-one-client"


def _others(key: tuple[str, str, int, int]) -> list:  # type: ignore[type-arg]
    return ttft_breakdown.measurements(GRIDS.values(), "ttft_ms")[key]


def test_a_cell_two_grids_of_one_day_measured_has_the_other_ones_error_as_its_noise() -> None:
    # 128 x 8: config-validation 84.8 ms, gce 81.32 ms, both 2026-08-10
    others = _others(("v6e-1", "google/gemma-4-E2B-it", 128, 8))
    assert {g.name for g in others} == {CV, GCE}
    assert ttft_breakdown.cell_noise(GRIDS[CV], others, "128x8", "ttft_ms") == pytest.approx(
        {"same day": abs(81.32 - 84.8) / 84.8}
    )
    assert ttft_breakdown.cell_noise(GRIDS[GCE], others, "128x8", "ttft_ms") == pytest.approx(
        {"same day": abs(84.8 - 81.32) / 81.32}
    )


def test_a_measurement_of_another_day_is_kept_apart_and_a_cell_measured_once_has_none() -> None:
    # 128 x 1: config-validation 12.24 ms; gce 11.52 the same day; the one-client sweep 12 on 2026-07-25
    others = _others(("v6e-1", "google/gemma-4-E2B-it", 128, 1))
    assert ttft_breakdown.cell_noise(GRIDS[CV], others, "128x1", "ttft_ms") == pytest.approx(
        {"same day": (12.24 - 11.52) / 12.24, "other day": (12.24 - 12) / 12.24}
    )
    alone = _others(("v6e-1", "google/gemma-4-E2B-it", 2048, 8))
    assert ttft_breakdown.cell_noise(alone[0], alone, "2048x8", "ttft_ms") == {}


def test_the_part_within_noise_is_each_cells_error_capped_at_its_noise() -> None:
    assert ttft_breakdown.within_noise([50.0, 10.0], [20.0, 30.0]) == pytest.approx(15.0)
    assert ttft_breakdown.within_noise([], []) == 0.0


def test_the_stored_factors_give_the_calibrated_ttft_error_the_catalog_states() -> None:
    # prediction_ranges.json's calibrated TTFT rows are the run serving_measurements.json's prediction_error
    # 'calibrated' ttft_ms was read from (both at 3d143a9a): measured / factor is each cell's prediction
    ranges = json.loads(Path(catalog.__file__).with_name("prediction_ranges.json").read_text(encoding="utf-8"))
    rows = ranges["ranges"]["calibrated"]["figures"]["ttft_ms"]["held_out"]
    apes = []
    for _, name, key, factor in rows:
        measured = ttft_breakdown.value(GRIDS[name], key, "ttft_ms")
        apes.append(abs(measured / factor - measured) / measured)
    stated = catalog.serving_measurements().prediction_error["calibrated"].ttft_ms
    assert sum(apes) / len(apes) == pytest.approx(stated, abs=0.0005)


def test_a_cells_own_noise_is_the_same_days_measurement_before_another_days() -> None:
    assert ttft_breakdown.own_noise({"same day": 0.04, "other day": 0.74}) == 0.04
    assert ttft_breakdown.own_noise({"other day": 0.03}) == 0.03
    assert ttft_breakdown.own_noise({}) is None


def test_a_corpus_runs_cells_file_gives_its_held_out_calibrated_cells() -> None:
    # the JSON lines sim_accuracy.py corpus --cells writes (report(): its `where` and the cell's figures)
    lines = [
        {"fit": CV, "grid": GCE, "how": "calibrated", "context": 128, "clients": 8, "in_sample": False,
         "ttft_meas": 81.32, "ttft_pred": 26.4, "tpot_meas": 6.38, "tpot_pred": 6.1},
        {"fit": CV, "grid": CV, "how": "same grid", "context": 128, "clients": 8, "in_sample": False,
         "ttft_meas": 84.8, "ttft_pred": 26.0, "tpot_meas": 6.39, "tpot_pred": 6.1},
        {"fit": GCE, "grid": GCE, "how": "calibrated", "context": 128, "clients": 1, "in_sample": True,
         "ttft_meas": 11.52, "ttft_pred": 11.3, "tpot_meas": 4.72, "tpot_pred": 4.7},
    ]  # fmt: skip
    text = "".join(json.dumps(c) + "\n" for c in lines)
    assert ttft_breakdown.cells_rows(text, "ttft_ms") == [(CV, GCE, "128x8", 26.4)]
    assert ttft_breakdown.cells_rows(text, "tpot_ms") == [(CV, GCE, "128x8", 6.1)]
    assert ttft_breakdown.cells_rows(text, "output_tok_per_s") == []  # no tok/s in these lines


def test_a_grid_marked_duplicate_of_another_is_the_same_days_measurement_of_it() -> None:
    # survey-v6e-1-dollars is gke's deployment published again (duplicate_of; dated by its publication, 2026-10-25):
    # 1,024 x 8 tok/s 1,178.6 against gke's 1,179.85
    gke, survey = GRIDS["gke-v6e-1-2026-08-25"], GRIDS["survey-v6e-1-dollars"]
    others = ttft_breakdown.measurements(GRIDS.values(), "output_tok_per_s")[("v6e-1", gke.model, 1024, 8)]
    assert survey in others
    noise = ttft_breakdown.cell_noise(gke, [gke, survey], "1024x8", "output_tok_per_s")
    assert noise == pytest.approx({"same day": (1179.85 - 1178.6) / 1179.85})


def test_a_ttft_moved_into_tpot_leaves_the_cycle_and_says_so() -> None:
    # config-validation 128 x 8 measured TTFT 84.8 ms, TPOT 6.39 ms, 128 output tokens: a prediction 0.2 ms a token
    # slower and 127 x 0.2 = 25.4 ms quicker to its first token has the closed loop's cycle (TTFT + 127 x TPOT) exact
    rows = ttft_breakdown.cycle_rows([("gce", CV, "128x8", 84.8 - 25.4)], [("gce", CV, "128x8", 6.59)], GRIDS)
    assert [r["regime"] for r in rows] == ["below the knee, one chunk"]
    split = ttft_breakdown.cycle_split(rows)
    assert split["cycle_pct"] == pytest.approx(0.0, abs=1e-9)
    assert split["ttft_missing_ms"] == pytest.approx(25.4)
    assert split["tpot_excess_ms"] == pytest.approx(25.4)
    assert split["ttft_pct"] == pytest.approx(-100 * 25.4 / 84.8)
    assert split["tpot_pct"] == pytest.approx(100 * 0.2 / 6.39)


def test_a_ttft_missing_from_the_cycle_too_is_not_split() -> None:
    # 16,000 x 64 measured 8,450.94 / 67.28 ms: TTFT 1,000 ms low with TPOT exact is a cycle 1,000 ms short
    rows = ttft_breakdown.cycle_rows(
        [("gce", CV, "16000x64", 7450.94), ("gce", CV, "128x8", 84.8)], [("gce", CV, "16000x64", 67.28)], GRIDS
    )
    assert len(rows) == 1  # a cell without a predicted TPOT is left out
    split = ttft_breakdown.cycle_split(rows)
    assert split["tpot_excess_ms"] == pytest.approx(0.0)
    assert split["cycle_pct"] == pytest.approx(-100 * 1000 / (8450.94 + 127 * 67.28))
