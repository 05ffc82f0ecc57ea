"""`up --plan P` serves P's own --set items: `plan --set X` printed its command with X, and `up --plan` launched
without it (found by the qa56 pass, 2026-12-05: `plan ... --set disable-log-stats --json > p.json` then `up --plan
p.json --dry-run` had no --disable-log-stats), breaking "the plan's command is up's". up's own --set items come
after the plan's, so a flag set in both takes up's value (vllm.flags._apply_sets: the last item of a flag wins), and
a re-plan keeps the plan's items among its inputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip import api
from onechip.schemas.requests import PlanRequest, UpRequest

pytestmark = pytest.mark.usefixtures("offline_home")


def _plan_file(tmp_path: Path, *sets: str) -> Path:
    plan = api.plan(PlanRequest(model="SmolLM2-135M-Instruct", chip="l4", sets=list(sets)))
    path = tmp_path / "plan.json"
    path.write_text(plan.model_dump_json(), encoding="utf-8")
    return path


def _launched(path: Path, *sets: str) -> list[str]:
    up = api.up(UpRequest(engine="vllm-docker", plan=path, sets=list(sets), port=8000, dry_run=True))
    assert up.launch is not None
    return up.launch.command.argv


def test_up_of_a_plan_serves_the_flags_the_plan_printed(tmp_path: Path) -> None:
    path = _plan_file(tmp_path, "disable-log-stats")
    printed = api.plan(PlanRequest(model="SmolLM2-135M-Instruct", chip="l4", sets=["disable-log-stats"]))
    assert printed.serve_command is not None and "--disable-log-stats" in printed.serve_command.argv
    assert "--disable-log-stats" in _launched(path)


def test_ups_own_set_comes_after_the_plans_and_wins(tmp_path: Path) -> None:
    path = _plan_file(tmp_path, "disable-log-stats", "uvicorn-log-level=info")
    argv = _launched(path, "uvicorn-log-level=warning")
    assert "--disable-log-stats" in argv
    assert argv[argv.index("--uvicorn-log-level") + 1] == "warning"


def test_a_re_plan_keeps_the_plans_sets(tmp_path: Path) -> None:
    path = _plan_file(tmp_path, "disable-log-stats")
    up = api.up(UpRequest(engine="vllm-docker", plan=path, sets=["max-num-seqs=8"], port=8000, dry_run=True))
    assert up.replanned_with == ["max-num-seqs=8"] and up.launch is not None
    argv = up.launch.command.argv
    assert "--disable-log-stats" in argv and argv[argv.index("--max-num-seqs") + 1] == "8"


def test_up_replicas_of_a_replica_plan_serves_its_sets_and_pins_each_replica_anew(tmp_path: Path) -> None:
    # a replica plan's recorded command is replica 0's: its pins (TPU_VISIBLE_CHIPS=0,1 ...) are not the user's
    # items and must not follow the other replicas (engines.replicas.PIN_NAMES)
    plan = api.plan(PlanRequest(model="gemma-4-E2B-it", chip="v5e-4", replicas=2, sets=["disable-log-stats"]))
    path = tmp_path / "plan.json"
    path.write_text(plan.model_dump_json(), encoding="utf-8")
    up = api.up(UpRequest(engine="vllm-docker", plan=path, replicas=2, image="vllm/vllm-tpu:v0.11.1", dry_run=True))
    assert up.replica_set is not None
    first, second = up.replica_set.replicas
    assert "--disable-log-stats" in first.command.argv and "--disable-log-stats" in second.command.argv
    assert (first.command.env["TPU_VISIBLE_CHIPS"], second.command.env["TPU_VISIBLE_CHIPS"]) == ("0,1", "2,3")
    assert [i for i in second.command.target.sets if i.startswith("TPU_VISIBLE_CHIPS")] == ["TPU_VISIBLE_CHIPS=2,3"]
