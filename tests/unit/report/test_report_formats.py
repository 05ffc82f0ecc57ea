"""HTML (self-contained, with plots), the JSON dump, the serving-report export and --compare."""

from __future__ import annotations

import base64
import copy
import json
import re
import statistics
from pathlib import Path

import pytest
import typer
from seed_run_files import seed_files, write_run
from typer.testing import CliRunner

from onechip.cli import report_cmd
from onechip.errors import ConfigError
from onechip.report import read_run, render_compare, write_report
from onechip.report.html import markdown_to_html
from onechip.report.serving_report import SCHEMA, build, validate

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_html_is_self_contained_with_three_plots_and_the_tables(seed_run: Path) -> None:
    (path,) = write_report(seed_run, ["html"])
    page = path.read_text(encoding="utf-8")
    images = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert [alt.split(" ")[0] for alt, _ in images] == ["heatmap", "aggregate", "median"]
    for _, data in images:
        png = base64.b64decode(data)
        assert png.startswith(PNG_MAGIC) and len(png) > 5_000
    # Nothing is fetched at view time: no external src/href, no script.
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert "<script" not in page
    assert "<th>context \\ clients</th>" in page
    assert '<td class="num">1,496.5 (CV 2%)</td>' in page and "<td>infeasible</td>" in page
    assert '<td class="num">$0.107</td>' in page  # numbers align right
    # The plots sit at the end of the Benchmark section, before Workload guidance.
    assert page.index("<h3>Plots</h3>") < page.index("<h2>Workload guidance</h2>")


def test_html_without_bench_has_no_plots(tmp_path: Path) -> None:
    files = seed_files()
    del files["summary.json"]
    (path,) = write_report(write_run(tmp_path / "nobench", files), "html")
    page = path.read_text(encoding="utf-8")
    assert "<img" not in page and "No benchmark summary in this run." in page


def test_markdown_to_html_escapes_and_converts() -> None:
    html = markdown_to_html("## A <b>\n\n| x \\| y | `z` |\n|---|---|\n| **1** | 2 |\n\n- one\n- two")
    assert "<h2>A &lt;b&gt;</h2>" in html
    assert "<th>x | y</th><th><code>z</code></th>" in html
    assert "<td><strong>1</strong></td>" in html
    assert "<ul><li>one</li><li>two</li></ul>" in html


def test_json_dump_holds_every_file(seed_run: Path) -> None:
    (path,) = write_report(seed_run, "json")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["bench"]["cells"][1]["output_tok_per_s"] == 1496.5
    assert doc["plan"]["kv_tokens"] == 321344 and doc["problems"] == []


def test_serving_report_export_validates_and_carries_the_seed_values(seed_run: Path) -> None:
    (path,) = write_report(seed_run, "serving-report")
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["schema_version"] == "1.4"
    cell = next(s for s in doc["throughput"]["sweep"] if s["concurrency"] == 64 and s["input_len"] == 128)
    assert cell["output_tok_per_s"] == 1496.5 and cell["output_len"] == 128
    assert set(cell["ttft_ms"]) == {"mean", "median", "p90", "p99"}
    assert cell["ttft_ms"]["median"] == 247.0
    infeasible = next(s for s in doc["throughput"]["sweep"] if s["status"] == "infeasible")
    assert infeasible["output_tok_per_s"] is None and "KV pool" in infeasible["reason"]
    spot = next(c for c in doc["cost"]["per_m_output_tokens"] if c["pricing"] == "spot")
    assert round(spot["usd_per_m_output_tokens"], 3) == 0.107
    assert doc["memory"]["kv_pool_tokens_planned"] == doc["memory"]["kv_pool_tokens_reported"] == 321344
    assert doc["startup"]["ready_s"] == 857.0
    assert [c["verdict"] for c in doc["capabilities"]] == ["pass", "partial"]
    assert doc["software"]["serve_args"] == ["--kv-cache-dtype auto", "--max-model-len 32768"]  # seed order


def test_serving_report_names_the_window_of_each_rate_and_gives_both(tmp_path: Path) -> None:
    # a sweep cell gave output_tok_per_s alone (the steady window's, not said) and no requests/s: a reader comparing
    # it with vllm bench serve's whole-run figure compared two windows; summary.json has both, and now so does this
    files = seed_files()
    summary = files["summary.json"]
    summary["cells"][1].update(whole_run_tok_per_s=1310.0, request_rate_per_s=11.7, whole_run_request_rate_per_s=10.2)
    (path,) = write_report(write_run(tmp_path / "r", files), "serving-report")
    doc = json.loads(path.read_text(encoding="utf-8"))
    for cell in summary["cells"]:
        out = next(s for s in doc["throughput"]["sweep"] if (s["input_len"], s["concurrency"]) == (
            cell["context_tokens"], cell["clients"]))  # fmt: skip
        for key in ("output_tok_per_s", "whole_run_tok_per_s", "request_rate_per_s", "whole_run_request_rate_per_s"):
            assert out[key] == cell.get(key), key
    assert any(s["whole_run_tok_per_s"] for s in doc["throughput"]["sweep"])
    windows = doc["throughput"]["workload"]["tok_per_s_windows"]
    assert "steady window" in windows and "whole run" in windows and "**" not in windows
    sweep = SCHEMA["$defs"]["SweepCell"]["properties"]
    assert "steady window" in sweep["output_tok_per_s"]["description"]
    assert "vllm bench serve" in sweep["whole_run_tok_per_s"]["description"]


def test_serving_report_schema_rejects_a_bad_document(seed_run: Path) -> None:
    doc = build(read_run(seed_run))
    validate(doc)
    bad = copy.deepcopy(doc)
    bad["throughput"]["sweep"][0]["status"] = "skipped"
    with pytest.raises(ConfigError, match="throughput/sweep/0/status"):
        validate(bad)
    bad = copy.deepcopy(doc)
    del bad["cost"]
    with pytest.raises(ConfigError, match="'cost' is a required property"):
        validate(bad)
    assert SCHEMA["properties"]["schema_version"]["const"] == "1.4"


def test_serving_report_of_an_empty_run_is_still_valid(tmp_path: Path) -> None:
    # a run that stopped before measuring anything: only its run.json (a directory with no run files at
    # all is refused; tests/unit/cli/test_report_cmd.py)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "run.json").write_text('{"run_id": "empty", "status": "failed"}', encoding="utf-8")
    (path,) = write_report(tmp_path / "empty", "serving-report")
    assert json.loads(path.read_text(encoding="utf-8"))["throughput"]["sweep"] == []


def _measured_faster(cell: dict, factor: float) -> None:
    """`cell` as a run `factor` times as fast measured it: each rep's tok/s and tokens, and their median (a cell's
    figure is its reps' median, and a rep's is its tokens over its window: summary.json read otherwise is refused)."""
    for rep in cell["reps"]:
        rep["output_tok_per_s"] *= factor
        rep["output_tokens"] = round(rep["output_tok_per_s"] * rep["window_s"])
    cell["output_tok_per_s"] = statistics.median(rep["output_tok_per_s"] for rep in cell["reps"])


def _other_run(tmp_path: Path) -> Path:
    files = seed_files()
    files["run.json"]["run_id"] = "fp8-kv"
    files["plan.json"]["kv_cache_dtype"] = "fp8"
    cells = files["summary.json"]["cells"]
    _measured_faster(cells[1], 1.01)  # 128 x 64: +1%, inside CV 2% and 2% (combined 2.8%)
    _measured_faster(cells[4], 0.75)  # 1,024 x 64: -25%, far outside
    cells[0]["cv_output_tok_per_s"] = None  # 128 x 1: no CV recorded
    return write_run(tmp_path / "fp8-kv", files)


def _row(markdown: str, first: str, second: str) -> list[str]:
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[:2] == [first, second]:
            return cells
    raise AssertionError(f"no row {first} {second}")


def test_compare_ratios_and_noise(seed_run: Path, tmp_path: Path) -> None:
    md = render_compare(seed_run, _other_run(tmp_path))
    assert md.startswith("# onechip comparison: fp8-kv vs seed-v5e")
    assert _row(md, "KV cache dtype", "auto") == ["KV cache dtype", "auto", "fp8", "differs"]
    assert _row(md, "128", "64")[4:] == ["1.010×", "1.00×", "within CV"]
    assert _row(md, "1,024", "64")[4:] == ["0.750×", "1.00×", "beyond CV"]
    assert _row(md, "128", "1")[-1] == "no CV recorded"
    assert _row(md, "8,192", "64")[2:] == ["infeasible", "infeasible", "—", "—", "not comparable"]


def test_cli_report_writes_formats_and_compare(seed_run: Path, tmp_path: Path) -> None:
    app = typer.Typer()
    report_cmd.register(app)

    @app.callback()
    def _root() -> None:  # keeps `report` a named subcommand
        pass

    other = _other_run(tmp_path)
    result = CliRunner().invoke(
        app, ["report", str(seed_run), "--format", "md,serving-report", "--compare", str(other)]
    )
    assert result.exit_code == 0, result.output
    assert result.output.split() == [
        str(seed_run / "report.md"),
        str(seed_run / "serving-report.json"),
        str(seed_run / "compare-fp8-kv.md"),
    ]
    bad = CliRunner().invoke(app, ["report", str(seed_run), "--format", "pdf"])
    assert isinstance(bad.exception, ConfigError)


@pytest.mark.parametrize("formats", ["", " , "])
def test_empty_format_list_is_a_config_error(seed_run: Path, formats: str) -> None:
    # Before: `onechip report RUN --format ''` wrote nothing and exited 0.
    with pytest.raises(ConfigError, match="no report format given"):
        write_report(seed_run, formats)


def test_compare_says_which_run_lost_requests_in_a_cell(seed_run: Path, tmp_path: Path) -> None:
    # a cell with failed requests counts only the others' tokens: compare gave its ratio ('0.750x beyond CV') as a
    # measured difference, not saying that one side lost a quarter of its requests
    files = seed_files()
    files["run.json"]["run_id"] = "partly-failed"
    cells = files["summary.json"]["cells"]
    _measured_faster(cells[4], 0.75)
    cells[4].update(requests_sent=64, requests_ok=48, requests_failed=16)
    cells[5].update(requests_sent=64, requests_ok=0, requests_failed=64, status="failed")
    md = render_compare(seed_run, write_run(tmp_path / "partly-failed", files))
    row = _row(md, "1,024", "64")
    assert row[4] == "0.750×" and row[-1] == "beyond CV; partly-failed: 16 of 64 requests failed (tokens not counted)"
    assert _row(md, "128", "64")[-1] == "within CV"
    ctx, clients = cells[5]["context_tokens"], cells[5]["clients"]
    assert _row(md, f"{ctx:,}", str(clients))[-1].endswith(
        "partly-failed: 64 of 64 requests failed (tokens not counted)"
    )


def test_compare_says_which_tok_per_s_it_compares(seed_run: Path, tmp_path: Path) -> None:
    """compare-*.md's per-cell table headed its columns 'tok/s <run>' with no word of the definition: the report
    beside it prints two (steady window and whole run), which differ by the ramp and the drain."""
    md = render_compare(seed_run, _other_run(tmp_path))
    assert "tok/s is the aggregate output tok/s of the steady window (the report's first grid" in md


def test_compare_runs_named_in_other_scripts_get_files_of_their_own(seed_run: Path, tmp_path: Path) -> None:
    # runs named 'ｂ' and 'ééé' (no ASCII letter) both wrote compare-_.md: the second comparison overwrote the first
    names = ["ｂ", "ééé", "a b", "a_b", "a?b"]
    others = [write_run(tmp_path / name, seed_files()) for name in names]
    written = [write_report(seed_run, "md", compare=other)[-1] for other in others]
    assert [p.name for p in written[:2]] == ["compare-ｂ.md", "compare-ééé.md"]
    assert len({p.name for p in written}) == len(names) and all(p.is_file() for p in written)
    assert write_report(seed_run, "md", compare=others[2])[-1] == written[2]  # the same run: the same file
    assert re.fullmatch(r"compare-a_b-[0-9a-f]{8}\.md", written[2].name) and written[3].name == "compare-a_b.md"


def test_compare_with_a_run_of_a_long_name_writes_a_file_the_os_takes(seed_run: Path, tmp_path: Path) -> None:
    # a run folder of 250 characters (legal: 255 bytes) made compare-<250>.md, whose temporary file is longer than
    # any file name may be: the write failed "File name too long", after report.md had been rewritten
    names = ["r" * 250, "é" * 120, "r" * 249 + "s"]  # 120 'é': 240 bytes
    written = [write_report(seed_run, "md", compare=write_run(tmp_path / n, seed_files()))[-1] for n in names]
    assert all(p.is_file() and len(p.name.encode()) <= 200 for p in written)
    assert len({p.name for p in written}) == len(names)  # cut alike, told apart by the hash
    assert written[0].name.startswith("compare-rrrr") and written[1].name.startswith("compare-éééé")


def _mamba_run(tmp_path: Path) -> Path:
    """The seed run as an attention-free model's (Mamba: Plan.state_slots 2,845): its plan's kv_tokens are its state
    pages x block size and the engine's token line its slots x a length, neither tokens it holds."""
    files = seed_files()
    files["run.json"]["run_id"] = "mamba"
    files["plan.json"]["state_slots"] = 2845
    files["plan.json"]["kv_tokens"] = 91_040
    files["boot.json"]["kv_cache_tokens"] = 5_826_560
    files["boot.json"]["max_concurrency"] = 2845.0
    files["crosscheck.json"]["reported_max_concurrency"] = 2845.0
    return write_run(tmp_path / "mamba", files)


def test_serving_report_of_an_attention_free_model_gives_its_sequences_not_kv_tokens(tmp_path: Path) -> None:
    # the export said kv_pool_tokens_planned 91,040 and _reported 5,826,560: a token pool the model does not have
    (path,) = write_report(_mamba_run(tmp_path), "serving-report")
    memory = json.loads(path.read_text(encoding="utf-8"))["memory"]
    assert memory["kv_pool_tokens_planned"] is None and memory["kv_pool_tokens_reported"] is None
    assert memory["state_slots_planned"] == memory["state_slots_reported"] == 2845


def test_compare_gives_an_attention_free_model_no_kv_pool_tokens(seed_run: Path, tmp_path: Path) -> None:
    # the row read 'KV pool tokens | 321,344 | 5,826,560 | differs', the Mamba's slots x a length as its pool
    md = render_compare(seed_run, _mamba_run(tmp_path))
    assert _row(md, "KV pool tokens", "321,344") == [
        "KV pool tokens",
        "321,344",
        "none: attention-free, 2,845 sequences of any length",
        "differs",
    ]


def test_compare_setup_says_differs_only_of_what_differs(seed_run: Path, tmp_path: Path) -> None:
    """A bench-only run (summary.json: the server's model name and /version) against the seed's demo run read
    'engine | vllm-tpu 0.26.1rc1 | 0.26.1rc1 | differs' and 'model | google/gemma-4-E2B-it | gemma-4-E2B-it |
    differs' (found comparing a bench of a Hub id against `simulate` of a plan made from the catalog name): the
    version is the same and the kind not recorded by bench, and the model the same one by the rule `--compare`
    itself matches a prediction to a run with (schemas.common.model_key: the last path part)."""
    files = seed_files()
    files["summary.json"]["server"]["model"] = "gemma-4-E2B-it"  # as `vllm serve --served-model-name` names it
    bench_only = write_run(tmp_path / "bench-only", {"summary.json": files["summary.json"]})
    md = render_compare(seed_run, bench_only)
    assert _row(md, "engine", "vllm-tpu") == ["engine", "vllm-tpu", "—", "not recorded in one run"]
    assert _row(md, "engine version", "0.26.1rc1") == ["engine version", "0.26.1rc1", "0.26.1rc1", ""]
    assert _row(md, "model", "google/gemma-4-E2B-it")[-1] == "same model, named differently"
