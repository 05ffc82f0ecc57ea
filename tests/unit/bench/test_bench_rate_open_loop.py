"""Plain `bench --rate R` (no search) as vllm bench serve's --request-rate / --num-prompts / --max-concurrency: one cell
per context, its request count by the rate, an in-flight cap only when --clients is given; against fake servers on
127.0.0.1 of known timings, bounded load (--duration-s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from test_bench_rate_search import _peak_in_flight
from typer.testing import CliRunner

from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.bench.runner import open_loop, rep_arrivals
from onechip.cli.bench_cmd import print_run
from onechip.errors import ConfigError
from onechip.progress import ProgressEvent
from onechip.report.markdown_bench import grids
from onechip.schemas.bench import BenchConfig, BenchRun, probe_requests
from onechip.schemas.inputs import build_request

WIDE = {"COLUMNS": "250"}


def _typed(srv: FakeVllm, **flags: Any) -> BenchConfig:
    """A --rate run as a user types it (build_request: what was given is known): 16-token prompts, 3 tokens out, one
    rep, no warm-up, constant arrivals."""
    typed = {"base_url": srv.url, "contexts": "16", "output_tokens": 3, "reps": 1, "warmup_requests": 0}
    return build_request(BenchConfig, {**typed, "arrivals": "constant", **flags})


def test_a_rate_run_is_one_open_loop_cell_per_context_without_an_in_flight_cap(tmp_path: Path) -> None:
    # `bench --rate 40` with the default --clients 1,4 ran two cells, 1 and 4 streams, each at most that many in
    # flight and clients x requests_per_client requests (2 and 8): at 40 req/s of 100 ms requests (4 at once on
    # average) the 1-stream cell queued every send behind one slot. Now: one cell, no cap, the count by the rate
    events: list[ProgressEvent] = []
    with FakeVllm(ttft_s=0.1) as srv:
        peak = _peak_in_flight(srv)
        run = api.bench(_typed(srv, rate_per_s=40, duration_s=0.5), events.append, out_dir=tmp_path)
    assert [(c.context_tokens, c.clients) for c in run.cells] == [(16, 1)]
    assert run.config.max_in_flight == 0 and peak[0] > 1
    (cell,) = run.cells
    assert cell.requests_sent == 20 and not cell.schedule_slipped  # 0.5 s of constant arrivals at 40 req/s
    saved = json.loads((tmp_path / "summary.json").read_text())["config"]
    assert saved["max_in_flight"] == 0 and saved["clients"] == [1]
    said = "open loop at 40 req/s (constant arrivals), in flight at most: none (no cap); arrivals over 0.5 s per rep"
    md = " ".join(" ".join(grids(run)).split())
    assert said in md and "| context \\ load | 40 req/s, no in-flight cap |" in md
    out = Console(record=True, width=250)
    print_run(run, out)
    text = out.export_text()
    assert said in text and "40 req/s, no in-flight cap" in text and "1 client" not in text
    # the progress lines said 'context 16 x 1 clients' for it: the rate and the cap
    lines = [e.message for e in events]
    assert "context 16 at 40 req/s, no in-flight cap, rep 1/1: starting" in lines, lines


def test_a_given_clients_caps_a_rate_run_in_flight(tmp_path: Path) -> None:
    with FakeVllm(ttft_s=0.1) as srv:
        peak = _peak_in_flight(srv)
        run = api.bench(_typed(srv, rate_per_s=40, duration_s=0.5, clients="2"), out_dir=tmp_path)
    assert run.config.max_in_flight == 2 and peak[0] == 2 and len(run.cells) == 1
    assert run.cells[0].schedule_slipped  # 4 needed at once, 2 allowed: the sends waited
    assert "in flight at most: 2 (--clients)" in " ".join(grids(run))


@pytest.mark.parametrize("given", [{}, {"clients": "1"}, {"clients": "8"}])
def test_a_rate_runs_request_count_follows_the_rate_not_its_cap(given: dict[str, str]) -> None:
    # clients x requests_per_client: 2 requests at --clients 1, 16 at --clients 8 (and 2 + 8 over the default 1,4)
    cfg = open_loop(build_request(BenchConfig, {"base_url": "http://127.0.0.1:9", "rate_per_s": 16, **given}))
    assert cfg.clients == [1] and len(rep_arrivals(cfg, 128, 1, 0) or []) == probe_requests(16.0)
    counted = open_loop(build_request(BenchConfig, {"base_url": "http://127.0.0.1:9", "rate_per_s": 16, **given}
                                      | {"requests_per_client": 5}))  # fmt: skip
    assert len(rep_arrivals(counted, 128, 1, 0) or []) == 5  # vllm bench serve's --num-prompts


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"clients": "1,4"}, "--rate: give one --clients value"),
        ({"workers": 2}, "--rate sends every arrival from one process"),
        ({"calibration": True, "clients": "1,8", "contexts": "128,1024"}, "--calibration measures closed-loop cells"),
    ],
)
def test_what_a_rate_run_cannot_be_is_refused_in_one_line(given: dict[str, Any], said: str) -> None:
    # --clients 1,4 ran two cells of 1 and 4 streams; --workers split those streams over processes
    with pytest.raises(ConfigError, match="^" + said) as err:
        build_request(BenchConfig, {"base_url": "http://127.0.0.1:9", "rate_per_s": 5, **given})
    assert "\n" not in str(err.value)


def test_a_run_saved_with_the_old_rate_semantics_refuses_to_resume(tmp_path: Path) -> None:
    from test_bench_cli import app

    with FakeVllm() as srv:
        api.bench(_typed(srv, rate_per_s=40, duration_s=0.2), out_dir=tmp_path)
        summary = tmp_path / "summary.json"
        old = json.loads(summary.read_text())
        old["config"].pop("max_in_flight")
        old["config"]["clients"] = [1, 4]
        summary.write_text(json.dumps(old))
        before = (tmp_path / "requests.jsonl").read_bytes()
        r = CliRunner().invoke(app(), ["bench", "--resume", str(tmp_path)], env=WIDE)
    assert r.exit_code != 0 and str(r.exception).startswith(f"cannot resume {tmp_path}: it was measured before --rate")
    assert "\n" not in str(r.exception) and (tmp_path / "requests.jsonl").read_bytes() == before
    assert BenchRun.model_validate_json(summary.read_text()).config.max_in_flight is None  # left as it was


def test_a_rate_runs_failed_requests_are_said_of_its_rate_not_of_one_client(tmp_path: Path) -> None:
    # the console's per-cell lines and report.md's bullets named the cell '16 x 1' / '16 ctx × 1 clients', the
    # one stream that numbers an open loop's requests, under a run with no in-flight cap (the grids above them say
    # '40 req/s, no in-flight cap'); requests 3 and 5 fail (the fake's numbering, 1-based)
    with FakeVllm(ttft_s=0.05, fail_status={3: 500, 5: 500}) as srv:
        run = api.bench(_typed(srv, rate_per_s=40, duration_s=0.5), out_dir=tmp_path)
    (cell,) = run.cells
    assert cell.requests_failed == 2
    out = Console(record=True, width=250)
    print_run(run, out)
    text = out.export_text()
    assert "16 at 40 req/s, no in-flight cap: 2 of 20 measured requests failed" in text, text
    assert "16 x 1" not in text
    md = " ".join(" ".join(grids(run)).split())
    assert "- 16 ctx at 40 req/s, no in-flight cap: 2 failed" in md, md
    assert "× 1 clients" not in md


def test_a_rate_runs_report_picks_no_number_of_clients(tmp_path: Path) -> None:
    # report.md's workload guidance (tables.guidance: the seed article's clients x context rule, the most clients whose
    # per-stream tok/s holds half of one client's) picked '16 ctx × 1 clients' of a --rate run, whose one cell per
    # context is one stream numbering requests sent without an in-flight cap: its own one-client baseline, 1 client
    # in the rule; an open loop measures a rate, and the guidance says it reads a closed-loop grid
    from onechip.report import read_run
    from onechip.report.markdown_bench import workload_guidance

    with FakeVllm(ttft_s=0.05) as srv:
        api.bench(_typed(srv, rate_per_s=40, duration_s=0.5), out_dir=tmp_path)
    text = " ".join(workload_guidance(read_run(tmp_path)))
    assert "## Workload guidance" in text and "× 1 clients" not in text and "| interactive agents |" not in text
    assert "open loop (40 req/s, no in-flight cap)" in text
