"""A stored calibration a newer onechip wrote (loose65): store.stored skips it (schemas.common.known_schema), and
this onechip's next fit for the same key (simulate --calibrate) wrote over it, its data lost; simulate and advise
said nothing of it."""

from __future__ import annotations

import json
from pathlib import Path

from onechip import api
from onechip.mcp import tools
from onechip.report.tables import md_text
from onechip.schemas.common import SCHEMA_VERSION
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import AdviseRequest, SimulateRequest
from onechip.schemas.sim import Calibration, StepTerms
from onechip.sim import key_of
from onechip.sim import store as calibration_store
from onechip.sim.steptime import STEP_MODEL

TERMS = StepTerms(fixed_s=0.005, per_token_s=3e-5, per_kv_token_s=5e-8, request_overhead_s=0.007)
NEWER = str(int(SCHEMA_VERSION.split(".")[0]) + 1)  # one major version past what this onechip writes


def _newer_stored(plan) -> tuple[Calibration, object, str]:
    """A calibration of `plan`'s key, saved, then rewritten as a newer onechip's file; (it, its path, its text)."""
    ours = Calibration(key=key_of(plan), step_model=STEP_MODEL, terms=TERMS)
    path = calibration_store.save(ours)
    text = json.dumps({**json.loads(path.read_text()), "schema_version": NEWER, "terms_v2": [1, 2]})
    path.write_text(text)
    return ours, path, text


def test_a_fit_never_overwrites_a_newer_onechips_calibration(seed_plan, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    ours, path, text = _newer_stored(seed_plan)
    saved = calibration_store.save(ours)
    assert path.read_text() == text  # the newer file, as its onechip wrote it
    assert saved != path and saved.parent == path.parent  # ours beside it
    assert calibration_store.find(seed_plan.model, seed_plan.chip, seed_plan.engine) == ours
    again = calibration_store.save(ours)  # the next fit replaces ours beside it, the newer file still kept
    assert again == saved and path.read_text() == text


def test_simulate_says_once_that_a_newer_calibration_is_not_used(seed_plan, tmp_path, monkeypatch, run) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    _, path, _ = _newer_stored(seed_plan)
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan.model_dump_json(), encoding="utf-8")
    code, out, err = run("simulate", "--plan", str(plan), "--contexts", "128", "--clients", "1", "--reps", "1",
                         "--out", str(tmp_path / "sim"))  # fmt: skip
    assert code == 0, err
    said = " ".join(out.split())
    note = f"schema_version {NEWER}"
    assert said.count(note) == 1, said
    # rich folds a path longer than the console's width (a longer tmp path broke the name): compared without spaces
    assert path.name in "".join(out.split()) and f"this onechip reads {SCHEMA_VERSION}" in said


def test_advise_says_once_that_a_newer_calibration_is_not_used(seed_plan, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    _, path, _ = _newer_stored(seed_plan)
    request = AdviseRequest(
        model=seed_plan.model, workload={"ctx": 1024, "clients": 4, "output_tokens": 128}, chips=["v5e-1"], reps=1
    )
    notes = [n for n in api.advise(request).notes if f"schema_version {NEWER}" in n]
    assert len(notes) == 1 and str(path) in notes[0], api.advise(request).notes


def test_simulate_find_max_says_once_that_a_newer_calibration_is_not_used(seed_plan, tmp_path, monkeypatch, run):
    # files66: simulate and advise said it, simulate --find-max (CLI and MCP) did not: its search read as priors' alone
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    _, path, _ = _newer_stored(seed_plan)
    plan = tmp_path / "plan.json"
    plan.write_text(seed_plan.model_dump_json(), encoding="utf-8")
    typed = {"plan": str(plan), "contexts": "128", "output_tokens": "16", "reps": "1", "find_max": "clients",
             "slo": "tpot_ms=1000", "find_max_limit": "4"}  # fmt: skip
    written = tools._simulate_find_max(build_request(SimulateRequest, {**typed, "out_dir": str(tmp_path / "m")}),
                                       lambda _: None)  # fmt: skip
    (note,) = [n for n in written.notes if f"schema_version {NEWER}" in n]
    assert str(path) in note and f"this onechip reads {SCHEMA_VERSION}" in note
    assert tools._search_summary(written).count(f"schema_version {NEWER}") == 1
    # files66b: search.md and search.html (report.search) did not show it: a search re-rendered from its files said
    # nothing of the calibration it did not use
    md, page = (Path(written.run_dir, name).read_text() for name in ("search.md", "search.html"))
    assert md.count(md_text(note)) == 1 and page.count(f"schema_version {NEWER}") == 1 and path.name in page, page
    code, out, err = run("simulate", *[f"--{k.replace('_', '-')}={v}" for k, v in typed.items()],
                         "--out", str(tmp_path / "c"))  # fmt: skip
    assert code == 0, err
    said = " ".join(out.split())  # rich folds a path longer than the console's width: compared without spaces
    assert said.count(f"schema_version {NEWER}") == 1 and path.name in "".join(out.split()), said
