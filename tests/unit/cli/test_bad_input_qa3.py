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


DEEP_JSON = "[" * 100_000 + "]" * 100_000  # past CPython's recursion limit: json.loads raised RecursionError


def _checkpoint(directory: Path, config: str, header: bytes | None = None) -> Path:
    """A checkpoint directory with `config` as config.json and one safetensors file with `header` (default: one bf16
    tensor of 2 bytes)."""
    import struct

    directory.mkdir()
    (directory / "config.json").write_text(config)
    tensor = {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}
    header = header or json.dumps({"model.layers.0.mlp.weight": tensor}).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    return directory


def test_a_config_nested_too_deep_is_one_line(run, tmp_path: Path):
    # was internal error (RecursionError: maximum recursion depth exceeded while decoding a JSON array ...), exit 1
    model = _checkpoint(tmp_path / "deep", DEEP_JSON)
    line = one_error_line(run, "plan", str(model), "--chip", "gpu:24GiB")
    assert line == f"{model}/config.json: not JSON (nested deeper than the parser allows)"


def test_a_safetensors_header_nested_too_deep_is_one_line(run, tmp_path: Path):
    from factories import SMOLLM2_CONFIG

    model = _checkpoint(tmp_path / "deep", json.dumps(SMOLLM2_CONFIG), DEEP_JSON.encode())
    line = one_error_line(run, "plan", str(model), "--chip", "gpu:24GiB")
    assert line == f"{model}/model.safetensors: cannot read safetensors header: nested deeper than the parser allows"


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (DEEP_JSON, "not valid JSON: nested deeper than the parser allows"),
        ("turns: " + "[" * 50_000 + "]" * 50_000, "not valid YAML: nested deeper than the parser allows"),
    ],
)
def test_a_workload_file_nested_too_deep_is_one_line(run, tmp_path: Path, text: str, said: str):
    path = tmp_path / "workload.yaml"
    path.write_text(text)
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload", "agent", "--workload-file", str(path),
                          "--out", str(tmp_path / "out"))  # fmt: skip
    assert said in line and str(path) in line, line
    assert not (tmp_path / "out").exists()


def test_a_trace_line_nested_too_deep_is_one_line(run, tmp_path: Path):
    path = tmp_path / "trace.jsonl"
    path.write_text(DEEP_JSON + "\n")
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload", "trace", "--trace", str(path),
                          "--out", str(tmp_path / "out"))  # fmt: skip
    assert line == f"--trace {path} line 1: nested deeper than the parser allows"


def test_report_on_a_run_file_nested_too_deep_names_it(run, tmp_path: Path, plan_file: Path):
    out = tmp_path / "pred"
    code, _, err = run("simulate", "--plan", str(plan_file), "--contexts", "128", "--clients", "1", "--reps", "1",
                       "--out", str(out))  # fmt: skip
    assert code == 0, err
    (out / "summary.json").write_text(DEEP_JSON)
    line = one_error_line(run, "report", str(out))
    assert line.startswith("summary.json could not be read: nested deeper than the parser allows"), line


def test_a_pricing_model_named_twice_is_priced_once(run):
    # `cost --pricing spot,spot` printed the same spot line twice
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "100", "--pricing", "spot,on-demand,spot",
                         "--json")  # fmt: skip
    assert code == 0, err
    assert [line["pricing"] for line in json.loads(out)["lines"]] == ["spot", "on-demand"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("turns: 2.5\n", "turns: Input should be a valid integer, got a number with a fractional part (got 2.5)"),
        ("turns: 2024-01-01\n", "turns: Input should be a valid integer (got datetime.date(2024, 1, 1))"),
        ("user_tokens: 1000000000\n", "user_tokens: Input should be less than or equal to 16777216 (got 1000000000)"),
        ("contexts: [0]\n", "contexts: Input should be greater than or equal to 1 (got [0])"),
    ],
)
def test_a_bad_value_in_the_workload_file_is_named_as_the_files(run, tmp_path: Path, text: str, said: str):
    # was "Invalid value for '--turns': turns: ...", a flag the user never typed
    path = tmp_path / "workload.yaml"
    path.write_text(text)
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload-file", str(path), "--out",
                          str(tmp_path / "out"))  # fmt: skip
    assert line == f"--workload-file {path}: {said}"


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("w.yaml", "turns: 4\nturns: 8\n", "not valid YAML at line 2, column 1: key 'turns' given twice"),
        ("w.json", '{"turns": 4, "turns": 8}', "not valid JSON: key 'turns' given twice"),
    ],
)
def test_a_key_named_twice_in_the_workload_file_is_refused(run, tmp_path: Path, name: str, text: str, said: str):
    # the parsers kept the last one silently: the run measured 8 turns where the file also said 4
    path = tmp_path / name
    path.write_text(text)
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload-file", str(path), "--out",
                          str(tmp_path / "out"))  # fmt: skip
    assert line == f"--workload-file {path}: {said}"


LONG_CHIP = "H100 " * 800  # under --chip's 4,096-character cap


@pytest.mark.parametrize(
    "argv",
    [
        ("plan", SEED_MODEL, "--chip", LONG_CHIP),
        ("plan", SEED_MODEL, "--chip", f"gpu:{'9' * 4000}GiB"),
        ("cost", "--chip", LONG_CHIP, "--output-tok-per-s", "1"),
        ("cost", "--chip", "v5e-1", "--region", LONG_CHIP, "--output-tok-per-s", "1"),
    ],
)
def test_a_long_chip_name_is_shown_cut_in_its_error(run, argv: tuple[str, ...]):
    # the refusal echoed all 4,000 characters of the name (inputs.shown cuts a value at 80, as flag errors do)
    line = one_error_line(run, *argv)
    assert "... (4,00" in line and len(line) < 400, line


def test_a_calibration_run_with_an_impossible_latency_is_refused_naming_the_cell(run, tmp_path: Path, plan_file: Path):
    # a measured run whose summary.json says TTFT -1 ms was fitted and stored as the model's calibration on the chip
    made = tmp_path / "made"
    code, _, err = run("simulate", "--plan", str(plan_file), "--contexts", "128,1024", "--clients", "1,8", "--reps",
                       "1", "--out", str(made))  # fmt: skip
    assert code == 0, err
    summary = json.loads((made / "summary.json").read_text())
    summary["prediction"] = None  # read as a measured run (bench writes none)
    summary["cells"][0]["ttft_ms"]["median"] = -1.0
    measured = tmp_path / "measured"
    measured.mkdir()
    (measured / "summary.json").write_text(json.dumps(summary))
    line = one_error_line(run, "simulate", "--plan", str(plan_file), "--calibrate", str(measured), "--contexts", "128",
                          "--clients", "1", "--out", str(tmp_path / "pred"))  # fmt: skip
    assert line == (
        "the calibration run's cell 128 tokens x 1 client has median TTFT -1.0 ms, which no measurement gives: its "
        "summary.json is damaged"
    )


@pytest.mark.parametrize("flag", ["--chip", "--region"])
def test_prices_refuses_an_empty_chip_or_region_as_cost_does(run, flag: str) -> None:
    # was exit 0 listing every price: '' read as not given, where `cost --chip ''` refuses
    line = one_error_line(run, "prices", flag, "")
    assert line == f"{flag} is empty (got ''): give a value, or leave {flag} out"  # schemas.inputs.build_request
