"""An interrupted `simulate --find-max` says in its search.md what a finished one says of its prediction (helper
cliqa62): the seeds and the calibration's engine version, as its search.json holds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip import api
from onechip.progress import ProgressEvent
from onechip.report.search import basis_text
from onechip.schemas.bench import SearchResult
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import SimulateRequest

TYPED = {"contexts": "1024", "find_max": "clients", "slo": "tpot_ms=15", "output_tokens": "32", "reps": "3"}


def test_an_interrupted_search_md_has_the_prediction_sentence_a_finished_one_has(seed_plan_file: Path, tmp_path):
    # search.md of a search interrupted after its second probe had no 'Predicted by simulate, not measured: ...;
    # calibration measured on engine version ...' line, though its search.json holds prediction (seeds, calibration)
    judged = 0

    def stop_after_two(event: ProgressEvent) -> None:  # Ctrl-C as the second probe's verdict is said
        nonlocal judged
        judged += event.message.startswith("find-max: clients-") and ": m" in event.message
        if judged == 2:
            raise KeyboardInterrupt

    out = tmp_path / "s"
    request = build_request(SimulateRequest, {"plan": str(seed_plan_file), "out_dir": str(out), **TYPED})
    with pytest.raises(KeyboardInterrupt):
        api.simulate_find_max(request, stop_after_two)
    partial = SearchResult.model_validate_json((out / "search.json").read_text())
    assert partial.interrupted and partial.prediction is not None and partial.prediction.seeds == 3
    md = (out / "search.md").read_text()
    (line,) = [x for x in md.splitlines() if x.startswith("Predicted by simulate, not measured: ")]
    assert "3 seeds" in line and line.endswith(f"; {basis_text(partial)}."), line
