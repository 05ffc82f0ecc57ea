"""`api.cost` on a run directory and the `onechip cost` command (seed article values, v5e-1 us-west4)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from onechip import api
from onechip.cli import cost_cmd
from onechip.errors import ConfigError
from onechip.schemas import BenchConfig, BenchRun, CellResult, RunManifest
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import CostRequest, ReportRequest


def _run(tmp_path: Path, chip: str = "cpu") -> Path:
    run = tmp_path / "run"
    run.mkdir()
    manifest = RunManifest(
        run_id="r1", created_at="2026-11-29T10:00:00Z", tool_version="0.1.0", python="3.12", host="h",
        command="bench", chip=chip,
    )  # fmt: skip
    (run / "run.json").write_text(manifest.model_dump_json(), encoding="utf-8")
    cells = [
        CellResult(context_tokens=128, clients=64, status="ok", output_tok_per_s=1496.5),
        CellResult(context_tokens=128, clients=1, status="ok", output_tok_per_s=123.7),
    ]
    bench = BenchRun(
        tool_version="0.1.0", created_at="2026-11-29T10:00:00Z",
        config=BenchConfig(base_url="http://127.0.0.1:8000"), cells=cells,
    )  # fmt: skip
    (run / "summary.json").write_text(bench.model_dump_json(), encoding="utf-8")
    return run


def test_api_cost_prices_a_run_and_writes_cost_json(tmp_path: Path) -> None:
    run = _run(tmp_path)
    result = api.cost(CostRequest(chip="v5e-1", run_dir=run, pricing="spot", today="2026-11-29", write=True))
    assert round(result.lines[0].usd_per_mtok, 3) == 0.107
    assert [round(c.usd_per_mtok["spot"], 3) for c in result.cells] == [0.107, 1.298]
    assert any("measured on cpu, priced as v5e-1" in w for w in result.warnings)
    stored = json.loads((run / "cost.json").read_text(encoding="utf-8"))
    assert stored["chip"] == "v5e-1" and len(stored["cells"]) == 2


def test_api_cost_defaults_to_the_runs_chip(tmp_path: Path) -> None:
    result = api.cost(CostRequest(run_dir=_run(tmp_path, chip="v5e-1"), pricing="on-demand", today="2026-11-29"))
    assert round(result.lines[0].usd_per_mtok, 3) == 0.223
    assert not any("measured on" in w for w in result.warnings)


def test_api_cost_on_a_cpu_run_without_chip_lists_known_chips(tmp_path: Path) -> None:
    # the chip's accelerators.json price_note says why it has none
    with pytest.raises(
        ConfigError, match=r"no prices for chip 'cpu' \(your own machine: no hourly price\); known chips:"
    ):
        api.cost(CostRequest(run_dir=_run(tmp_path)))


def _app() -> typer.Typer:
    app = typer.Typer()
    cost_cmd.register(app)

    @app.callback()
    def _root() -> None:  # keeps `cost` a named subcommand
        pass

    return app


def test_cli_cost_prints_article_numbers() -> None:
    result = CliRunner().invoke(
        _app(),
        [
            "cost",
            "--chip",
            "v5e-1",
            "--output-tok-per-s",
            "1496.5",
            "--pricing",
            "spot,flex-start,on-demand",
            "--cold-boot-s",
            "857",
            "--warm-boot-s",
            "497",
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    for text in (
        "$0.107",
        "$0.111",
        "$0.223",
        "$422",
        "$438",
        "$876",
        "$0.1376",
        "$0.0798",
        "6.2 h",
        "3.6 h",
    ):
        assert text in result.output


def test_cli_cost_json() -> None:
    result = CliRunner().invoke(
        _app(), ["cost", "--chip", "v5e-1", "--output-tok-per-s", "123.7", "--pricing", "spot", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert round(json.loads(result.output)["lines"][0]["usd_per_mtok"], 3) == 1.298


def test_cli_cost_unknown_region_is_a_config_error() -> None:
    result = CliRunner().invoke(_app(), ["cost", "--chip", "v5e-1", "--output-tok-per-s", "1", "--region", "x"])
    assert isinstance(result.exception, ConfigError)
    assert "known regions: us-west4" in str(result.exception)


def test_api_cost_write_needs_a_run_dir() -> None:
    with pytest.raises(ConfigError, match="needs a run directory"):
        api.cost(build_request(CostRequest, {"chip": "v5e-1", "output_tok_per_s": 1496.5, "write": True}))


def test_cost_prices_a_slice_as_its_chips_times_the_one_chip_price_as_advise_does(run) -> None:
    # accelerators.json: v5e-4 has chips 4 and price_chip v5e-1; `cost --chip v5e-4` said "no prices for chip
    # 'v5e-4'" while `advise` priced the slice as 4 x v5e-1 (cost.prices.billed_as serves both now)
    from onechip import cost
    from onechip.api._predict import _advice_price

    one = api.cost(build_request(CostRequest, {"chip": "v5e-1", "output_tok_per_s": 1000.0}))
    four = api.cost(build_request(CostRequest, {"chip": "v5e-4", "output_tok_per_s": 1000.0}))
    assert (four.chip, four.billed_as, four.billed_chips) == ("v5e-4", "v5e-1", 4)
    assert (one.billed_as, one.billed_chips) == (None, 1)
    assert [(x.region, x.pricing) for x in four.lines] == [(x.region, x.pricing) for x in one.lines]
    for slice_line, chip_line in zip(four.lines, one.lines, strict=True):
        assert slice_line.usd_per_chip_hour == pytest.approx(4 * chip_line.usd_per_chip_hour)
        assert slice_line.usd_per_mtok == pytest.approx(4 * chip_line.usd_per_mtok)
    assert cost.billed_as("v5e-4") == ("v5e-1", 4)
    advised = _advice_price("v5e-4", "spot")
    assert not isinstance(advised, str) and "v5e-1" in advised[2]  # advise: the same sibling's price
    code, out, err = run("cost", "--chip", "v5e-4", "--output-tok-per-s", "1000", "--pricing", "spot")
    assert code == 0, err
    text = " ".join(out.split())
    assert "billed as 4 × v5e-1" in text and "$/slice-h" in text
    assert f"4 × v5e-1 at ${one.lines[[x.pricing for x in one.lines].index('spot')].usd_per_chip_hour:.4f}" in text


@pytest.mark.parametrize("given", ["US-WEST4", "Us-West4"])
def test_a_region_matches_in_any_case_as_a_chip_does(given: str) -> None:
    """`prices --region US-WEST4` found no price: regions are lower case in every cloud's catalog (prices.json
    us-west4), and the region is compared as given while chip names match in any case."""
    from onechip.schemas.requests import PricesRequest

    table = api.prices(build_request(PricesRequest, {"chip": "v5e-1", "region": given}))
    assert table.prices and {p.region for p in table.prices} == {"us-west4"}
    report = api.cost(build_request(CostRequest, {"chip": "v5e-1", "output_tok_per_s": 1.0, "region": given}))
    assert report.lines and {line.region for line in report.lines} == {"us-west4"}


def test_cli_cost_keeps_every_pricing_column_whole_at_80_columns(tmp_path: Path) -> None:
    """On an 80-column or piped console the per-cell table cut its headers to 'flex-s…' and 'on-dema…' (found
    pricing a four-cell embedded run, 2026-12-04): a column whose name is unreadable is a price nobody can use.
    Both tables print no narrower than their columns' least widths (render.print_whole)."""
    run = _run(tmp_path, chip="v5e-1")
    bench = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    bench["cells"] += [
        {**bench["cells"][0], "context_tokens": 1024, "clients": c, "output_tok_per_s": 9.7} for c in (1, 4)
    ]
    (run / "summary.json").write_text(json.dumps(bench), encoding="utf-8")
    result = CliRunner().invoke(_app(), ["cost", "--run", str(run)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    for header in ("spot", "flex-start", "on-demand", "$/chip-h", "$/M tok", "price read"):
        assert header in result.output


@pytest.mark.parametrize(
    ("cells", "said"),
    [
        ([CellResult(context_tokens=128, clients=1, status="failed")], "1 failed"),
        ([CellResult(context_tokens=128, clients=1, status="ok", output_tok_per_s=0.0),
          CellResult(context_tokens=8192, clients=64, status="infeasible")], "1 ok at no tok/s, 1 infeasible"),
        ([], "no cells"),
    ],
)  # fmt: skip
def test_a_run_with_nothing_to_price_is_refused_not_priced_at_zero(tmp_path: Path, cells, said: str) -> None:
    # was a success (exit 0) printing an empty table titled 'v5e-1 at 0.0 output tok/s' and a warning on stdout
    run = _run(tmp_path)
    bench = BenchRun.model_validate_json((run / "summary.json").read_text(encoding="utf-8"))
    (run / "summary.json").write_text(bench.model_copy(update={"cells": cells}).model_dump_json(), encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        api.cost(CostRequest(chip="v5e-1", run_dir=run, today="2026-11-29", write=True))
    assert str(refused.value) == (
        f"--run {run}: the bench summary has no 'ok' cell with a positive tok/s to price ({said}); give the "
        "throughput to price with --output-tok-per-s"
    )
    assert not (run / "cost.json").exists()
    # a throughput given prices the run's chip all the same
    given = api.cost(
        CostRequest(chip="v5e-1", run_dir=run, output_tok_per_s=1496.5, pricing="spot", today="2026-11-29")
    )
    assert round(given.lines[0].usd_per_mtok, 3) == 0.107


def test_the_throughput_a_run_is_priced_at_says_which_cell_and_window_it_is(tmp_path: Path) -> None:
    """`cost --run` priced its first table at 'v5e-1 at 1,496.5 output tok/s' with no word that this is the best
    cell's steady-window figure (not the run's whole-run tok/s peers report, nor an average over cells); the CLI,
    cost.json and the report's cost section now say which, and a throughput given is not explained."""
    run = _run(tmp_path, chip="v5e-1")
    result = CliRunner().invoke(_app(), ["cost", "--run", str(run), "--pricing", "spot"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "v5e-1 at 1,496.5 output tok/s (the best measured cell, 128 ctx x 64 clients, steady window)" in (
        result.output
    )
    assert "$/M tok = USD per million output tokens" in " ".join(result.output.split())
    given = api.cost(CostRequest(chip="v5e-1", output_tok_per_s=100.0, pricing="spot"))
    assert given.output_tok_per_s_from == "given"
    stored = api.cost(CostRequest(run_dir=run, pricing="spot", write=True))
    assert stored.output_tok_per_s_from == "the best measured cell, 128 ctx x 64 clients, steady window"
    assert "at 1,496.5 output tok/s, the best measured cell, 128 ctx x 64 clients, steady window (" in (
        api.report(ReportRequest(run_dir=run))[0].read_text(encoding="utf-8")
    )


def test_an_ok_cell_with_no_output_tokens_reads_zero_tok_per_s_not_ok(tmp_path: Path) -> None:
    """A cell measured 'ok' whose requests counted no output tokens printed 'ok' in the per-cell tok/s column
    (beside '—' for its price): the column holds a rate, 0.0 here, which no price per token can be drawn from."""
    run = _run(tmp_path, chip="v5e-1")
    bench = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    bench["cells"][1]["output_tok_per_s"] = 0.0
    (run / "summary.json").write_text(json.dumps(bench), encoding="utf-8")
    result = CliRunner().invoke(_app(), ["cost", "--run", str(run), "--pricing", "spot"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if line.replace(" ", "").startswith("│128│1│"))
    assert row.replace(" ", "") == "│128│1│0.0│—│", row
