"""A new user's QA pass (2026-12-03, helper qa3) on the newest surfaces: one regression test per finding, each
failing before its fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")

SEED_MODEL = "google/gemma-4-E2B-it"
NO_ROOFLINE = "cannot predict gpu:24GiB: no published bandwidth"  # sim.priors' refusal of a chip with no figures


def _plan(run, tmp_path: Path, chip: str) -> Path:
    code, out, err = run("plan", SEED_MODEL, "--chip", chip, "--max-model-len", "8192", "--json")
    assert code == 0, err
    path = tmp_path / "plan.json"
    path.write_text(out)
    return path


def test_simulate_a_plan_on_a_card_given_by_its_memory_names_what_it_lacks(run, tmp_path: Path):
    # the prediction's base URL was http://predicted.gpu:24GiB, whose ':24GiB' read as a port: 'not a server URL'
    plan = _plan(run, tmp_path, "gpu:24GiB")
    line = one_error_line(run, "simulate", "--plan", str(plan), "--contexts", "128", "--clients", "1", "--out",
                          str(tmp_path / "pred"))  # fmt: skip
    assert line.startswith(NO_ROOFLINE), line


def test_advise_on_a_card_given_by_its_memory_is_a_row_that_says_why(run):
    # was internal error (ValidationError: 1 validation error for BenchConfig), exit 1
    code, out, err = run("advise", SEED_MODEL, "--workload", "ctx=1024,clients=4", "--chips", "gpu:24GiB,v5e-1",
                         "--reps", "1", "--json")  # fmt: skip
    assert code == 0, err
    rows = {(r["chip"], r["engines"]): r for r in json.loads(out)["rows"]}
    assert rows[("gpu:24GiB", 1)]["verdict"].startswith(NO_ROOFLINE)
    assert rows[("v5e-1", 1)]["output_tok_per_s"] > 0


@pytest.mark.parametrize(("chip", "url"), [("v5e-1", "http://predicted.v5e-1"),
                                           ("gpu:24GiB", "http://predicted.gpu-24GiB"),
                                           ("H200 NVL", "http://predicted.H200-NVL"),
                                           (":::", "http://predicted.chip")])  # fmt: skip
def test_the_predicted_url_is_a_server_url_for_any_chip_name(chip: str, url: str):
    from onechip.api._predict import predicted_url
    from onechip.schemas.common import server_url

    assert predicted_url(chip) == url
    assert server_url(url) == url
