"""The new-user break pass cli56 (2026-12-05), one regression test per finding, each failing before its fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from factories import one_error_line
from onechip import api
from onechip.mcp.tools import TOOLS
from onechip.schemas.requests import CostRequest

pytestmark = pytest.mark.usefixtures("offline_home")


@pytest.mark.parametrize(("rate", "said"), [(0.001, "0.001"), (0.0456, "0.0456"), (1496.5, "1,496.5")])
def test_a_small_throughput_is_titled_with_its_figures_not_as_zero(run, rate, said):
    # `cost --output-tok-per-s 0.001` titled its table 'v5e-1 at 0.0 output tok/s' (and the MCP summary said so)
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", str(rate))
    assert code == 0 and f"v5e-1 at {said} output tok/s" in " ".join(out.split()), (out, err)
    report = api.cost(CostRequest(chip="v5e-1", output_tok_per_s=rate))
    summary = next(t for t in TOOLS if t.name == "cost").summary(report)  # the MCP tool's one line
    assert summary.startswith(f"v5e-1 at {said} output tok/s: "), summary


@pytest.mark.parametrize("name", ["gone/model-Q4_K_M.gguf", "model.gguf", "model.safetensors"])
def test_a_missing_model_file_is_said_to_be_missing(run, tmp_path, monkeypatch, name):
    # a .gguf path that does not exist was refused as "not a checkpoint directory, not in catalog/models.json, and
    # not a Hub id": the user had mistyped a path, and was told the file's kind was wrong
    monkeypatch.chdir(tmp_path)
    for given in (f"./{name}", str(tmp_path / name)):
        line = one_error_line(run, "plan", given, "--chip", "l4")
        assert line == f"model {given!r}: no such file or directory ({tmp_path / name})", line


FAKE_VLLM = Path(__file__).parents[2] / "fakes" / "vllm_server.py"
HOST_DEMO = ["demo", "--engine", "vllm", "--model", "google/gemma-4-E2B-it", "--chip", "l4", "--quick"]


def test_demo_runs_against_a_fake_engine_through_launcher(run, tmp_path, offline_home):
    # `demo` had no --launcher (up has): its whole pipeline could not be driven against a fake engine on a box
    # without vLLM ('No such option: --launcher'); the serve program now goes to the up it runs
    launcher = f"{sys.executable} {FAKE_VLLM}"
    code, out, err = run(*HOST_DEMO, "--launcher", launcher, "--out", str(tmp_path / "run"))
    assert code == 0, err
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["status"] == "ok" and (tmp_path / "run" / "report.md").is_file(), manifest
    assert not (offline_home / "engine.json").exists()  # the demo stopped the engine it started


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["demo", "--launcher", "vllm serve"], "--launcher needs --cloud gcp or --engine"),
        ([*HOST_DEMO, "--engine", "vllm-docker", "--launcher", "vllm serve"], "--launcher is for --engine vllm"),
        ([*HOST_DEMO, "--launcher", "'vllm serve"], "cannot be split like a shell line"),
    ],
)
def test_a_demo_launcher_where_it_cannot_act_is_one_line(run, extra, said):
    assert said in one_error_line(run, *extra)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["report", ""], "RUN is empty (got ''): give a value"),
        (["report", "  "], "RUN is empty (got ' '): give a value"),
        (["deploy", "k8s", "gemma-4-E2B-it", "--chip", "l4", "--out", ""], "--out is empty (got '')"),
        (["cost", "--chip", "v5e-1", "--run", ""], "--run is empty (got '')"),
    ],
)
def test_a_blank_path_on_the_command_line_is_refused_not_read_as_the_working_folder(run, tmp_path, argv, said):
    # click turned '' into Path('.') before build_request saw it: `report ''` rendered the working folder and wrote
    # report.md into it (exit 0), `deploy --out ''` wrote onechip.yaml there; MCP refused the same blank already
    (tmp_path / "summary.json").write_text("{}")  # a run file: the working folder looks like a run
    assert said in one_error_line(run, *argv)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "home") == ["summary.json"]  # nothing written


@pytest.mark.parametrize(
    ("chip", "said"),
    [
        ("24GB", "chip '24GB' (--chip) is a memory size, not a chip: give it as gpu:24GB"),
        ("24 GiB", "chip '24 GiB' (--chip) is a memory size, not a chip: give it as gpu:24GiB"),
        ("24g", "chip '24g' (--chip) is a memory size, not a chip: give it as gpu:24GiB or gpu:24GB"),
    ],
)
def test_a_memory_size_given_as_the_chip_says_how_to_write_it(run, chip, said):
    # `--chip 24GB` was 'unknown chip ... not in accelerators.json nor in the GPU database': a size, not a typo
    assert one_error_line(run, "plan", "gemma-4-E2B-it", "--chip", chip) == said


def test_a_mistyped_chip_names_the_catalog_keys_it_is_close_to(run):
    # `--chip l44` named no chip near it; the catalog's close keys are said
    line = one_error_line(run, "plan", "gemma-4-E2B-it", "--chip", "l44")
    assert line.startswith("unknown chip 'l44' (--chip): ") and line.endswith("; did you mean l4 or l40?"), line
    line = one_error_line(run, "advise", "gemma-4-E2B-it", "--chips", "l4,h10")
    assert "(--chips)" in line and "did you mean h100" in line, line
    assert "did you mean" not in one_error_line(run, "plan", "gemma-4-E2B-it", "--chip", "xyzzy")


def test_cost_help_says_what_each_option_left_out_means(run):
    # `cost --help` showed no default for --pricing, --cold-boot-s and --warm-boot-s (every pricing model is priced,
    # no restart is): a new user could not tell what leaving them out does
    code, out, _ = run("cost", "--help")
    text = " ".join(out.replace("│", " ").split())
    assert code == 0 and "3y (default: every one priced for the chip)" in text, text
    assert text.count("to price (default: none priced)") == 2, text
