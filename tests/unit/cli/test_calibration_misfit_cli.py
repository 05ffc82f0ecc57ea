"""simulate and advise say, in one line, when the calibration they rest on misses its own cells (helper workflow64,
2026-12-06: a fake server's run, a token every 2 ms, fitted against gemma-4-E2B-it on v5e-1, whose one weight read
takes 5.31 ms, missed its own cells by 35-60% and advise quoted the chip 'calibrated +-10%')."""

from __future__ import annotations

from onechip import api, planner
from onechip.schemas.bench import BenchConfig, BenchRun
from onechip.schemas.requests import PlanRequest
from onechip.schemas.sim import StepTerms

# a token every 2 ms: under the v5e-1 weight read of gemma-4-E2B-it (steptime.roofline_priors at 819 GB/s, 5.31 ms)
FAST = StepTerms(fixed_s=0.002, per_token_s=1e-7, per_kv_token_s=1e-10, request_overhead_s=0.001)


def test_simulate_and_advise_say_the_calibration_misses_its_own_cells(run, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    plan = planner.plan_model(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", max_model_len=2048))
    config = BenchConfig(base_url="http://127.0.0.1:1", contexts=[128, 1024], clients=[1, 4], output_tokens=16, reps=1)
    measured = BenchRun(tool_version="t", created_at="t", config=config,
                        cells=api.predicted_cells(plan, FAST, config, seeds=1))  # fmt: skip
    (tmp_path / "cal").mkdir()
    (tmp_path / "cal" / "summary.json").write_text(measured.model_dump_json())
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    code, out, err = run("simulate", "--plan", str(tmp_path / "plan.json"), "--calibrate", str(tmp_path / "cal"),
                         "--contexts", "128", "--clients", "1", "--output-tokens", "16", "--reps", "1",
                         "--out", str(tmp_path / "p1"))  # fmt: skip
    said = " ".join(out.split())
    assert code == 0, err
    assert "the calibration on 128x1, 128x4, 1024x1, 1024x4 misses its own cells by up to" in said, said
    assert "pinned no term" in said
    code, out, err = run("advise", "google/gemma-4-E2B-it", "--workload", "ctx=128,clients=1,output_tokens=16",
                         "--chips", "v5e-1", "--reps", "1")  # fmt: skip
    said = " ".join(out.split())
    assert code == 0, err
    assert "v5e-1: the calibration on 128x1, 128x4, 1024x1, 1024x4 misses its own cells by up to" in said, said
    assert "its ranges are widened to cover its own cells and a prior's" in said
