"""The new-user test of helper break2 (2026-12-03), one regression test per finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import one_error_line

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize(("flag", "value"), [("--rate", "5"), ("--requests-per-client", "3")])
def test_simulate_refuses_open_loop_flags_on_agent_sessions_as_bench_does(run, tmp_path: Path, flag: str, value: str):
    # was exit 0: agent sessions were predicted as Poisson arrivals of turns (--rate), or the per-stream count was
    # dropped (--requests-per-client), where bench refuses both ('--workload agent runs whole sessions', its
    # schemas.bench _check_agent), so the prediction was of a run bench cannot measure
    code, plan_json, err = run("plan", "SmolLM2-135M-Instruct", "--chip", "l4", "--json")
    assert code == 0, err
    (tmp_path / "plan.json").write_text(plan_json, encoding="utf-8")
    line = one_error_line(
        run, "simulate", "--plan", str(tmp_path / "plan.json"), "--workload", "agent", "--replicas", "2",
        flag, value, "--reps", "1", "--out", str(tmp_path / "s"),
    )  # fmt: skip
    assert line == f"--workload agent runs whole sessions: {flag} does not apply" and not (tmp_path / "s").exists()
