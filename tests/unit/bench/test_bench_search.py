"""`--find-max` against the fake server, the open-loop slip, and the smaller measuring defects of issue 14."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.bench import find_max, run_grid
from onechip.bench.runner import load_samples
from onechip.bench.worker import first_line
from onechip.cli.main import app
from onechip.errors import ConfigError
from onechip.schemas.bench import LATE_SEND_MS, BenchConfig, BenchRun
from onechip.schemas.inputs import build_request


def _config(server: FakeVllm, **kw: object) -> BenchConfig:
    base: dict[str, object] = dict(
        base_url=server.url, contexts=[16], clients=[1], reps=1, output_tokens=3, requests_per_client=2
    )
    base.update(kw)
    return BenchConfig(**base)  # type: ignore[arg-type]


def test_find_max_clients_returns_the_last_load_meeting_the_slo(tmp_path: Path) -> None:
    # a server whose time to first token grows with the requests in flight: 60 ms per running request.
    # SLO TTFT <= 250 ms: 4 in flight (~240 ms) meets it at worst, 5 (~300 ms) does not
    with FakeVllm() as srv:
        srv.replies = None
        base_ttft = 0.06

        original = srv._chat

        async def slow_chat(body, writer):  # type: ignore[no-untyped-def]
            srv.ttft_s = base_ttft * (srv.running + 1)
            return await original(body, writer)

        srv._chat = slow_chat  # type: ignore[method-assign]
        cfg = _config(srv, find_max="clients", slo={"ttft_ms": 250.0}, slo_percentile=100, find_max_limit=16)
        result = find_max(cfg, tmp_path)
    probes = {p.load: p for p in result.probes}
    assert result.max_clients is not None
    assert probes[result.max_clients].meets_slo
    assert not probes[result.max_clients + 1].meets_slo  # the next step up was measured and missed
    assert all(p.at_percentile_ms["ttft_ms"] is not None for p in result.probes)
    assert 1 <= result.max_clients <= 4
    saved = json.loads((tmp_path / "search.json").read_text())
    assert saved["max_clients"] == result.max_clients
    assert (tmp_path / f"clients-{result.max_clients}" / "summary.json").is_file()


def test_find_max_up_to_the_limit_says_so(fake_server: FakeVllm, tmp_path: Path) -> None:
    cfg = _config(fake_server, find_max="clients", slo={"ttft_ms": 10_000.0}, find_max_limit=3)
    result = find_max(cfg, tmp_path)
    assert result.max_clients == 3
    assert sorted(p.load for p in result.probes) == [1, 2, 3]
    assert "limit" in result.bound_reason


def test_open_loop_past_capacity_marks_the_slip(fake_server: FakeVllm, tmp_path: Path) -> None:
    # one slot, each request takes ~0.1 s, 40 requests/s asked: sends queue behind the slot
    fake_server.ttft_s = 0.1
    cfg = _config(fake_server, rate_per_s=40.0, arrivals="constant", requests_per_client=8, warmup_requests=0)
    cell = run_grid(cfg, tmp_path).cells[0]
    samples = [s for s in load_samples(tmp_path / "requests.jsonl") if not s.warmup]
    assert all(s.t_intended is not None for s in samples)
    # the 8th request was meant at 7/40 s = 175 ms but waits for 7 requests of ~100 ms each
    assert cell.schedule_slipped and cell.late_share is not None and cell.late_share > 0.5
    assert cell.slip_ms.p99 is not None and cell.slip_ms.p99 > 400
    assert cell.ttft_from_intended_ms.median > cell.ttft_ms.median + LATE_SEND_MS  # type: ignore[operator]


def test_open_loop_within_capacity_is_not_marked(fake_server: FakeVllm, tmp_path: Path) -> None:
    cfg = _config(fake_server, rate_per_s=5.0, arrivals="constant", clients=[2], requests_per_client=2)
    cell = run_grid(cfg, tmp_path).cells[0]
    assert not cell.schedule_slipped and cell.late_share == 0.0


def test_a_closed_loop_has_no_slip_and_records_no_arrivals(fake_server: FakeVllm, tmp_path: Path) -> None:
    run = run_grid(_config(fake_server), tmp_path)
    assert run.config.arrivals is None
    assert run.cells[0].slip_ms.n == 0 and not run.cells[0].schedule_slipped


def test_a_server_without_stream_usage_is_counted_and_named(fake_server: FakeVllm, tmp_path: Path) -> None:
    """No usage at all: the output is tokenized once by the server's /tokenize (vllm bench serve's fallback);
    the samples and the run's notes say so."""
    fake_server.usage = "never"
    run = run_grid(_config(fake_server), tmp_path)
    samples = [s for s in load_samples(tmp_path / "requests.jsonl") if not s.warmup]
    assert run.cells[0].status == "ok" and run.cells[0].requests_ended_early == 0
    assert [(s.completion_tokens, s.completion_tokens_from) for s in samples] == [(3, "tokenize")] * 2
    assert any("server sent no usage" in n and "/tokenize" in n for n in run.notes)


def test_what_differs_comes_first() -> None:
    a, b = first_line("Request abc-16-1-0", 0, 0), first_line("Request abc-16-1-0", 3, 7)
    assert a[0] != b[0] or a[:12] != b[:12]
    assert a.split("-")[0] != "Request"  # the unique digits open the line, the shared tag follows
    common = next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    assert common < 5


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"find_max": "clients"}, "give --slo too"),
        ({"find_max": "clients", "slo": "ttft_ms=500", "clients": "1,2"}, "drop --clients"),
        ({"find_max": "clients", "slo": "ttft_ms=500", "rate_per_s": 3}, "drop --rate"),
        ({"find_max": "rate", "slo": "ttft_ms=500", "workload": "agent"}, "closed loop"),
        ({"find_max": "clients", "slo": "ttft_ms=500", "contexts": "128,1024"}, "one --contexts"),
        ({"turns": 3}, "give --workload agent too"),
        ({"workload": "agent", "rate_per_s": 2}, "--rate does not apply"),
        ({"slo_percentile": 99}, "give --find-max too"),
        ({"find_max": "clients", "slo": "ttft_ms=500", "calibration": True}, "--calibration does not apply"),
        # --calibration made --clients 1,8: the rate search ran with 1 request in flight, not 8
        ({"find_max": "rate", "slo": "ttft_ms=500", "clients": "8", "calibration": True}, "--calibration does not"),
    ],
)
def test_contradictory_options_are_one_line_errors(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        build_request(BenchConfig, {"base_url": "http://127.0.0.1:1", **flags})
    assert "\n" not in str(err.value)


def test_find_max_rate_takes_constant_arrivals(tmp_path: Path) -> None:
    # `--find-max rate --arrivals constant` was refused ('--arrivals shapes open-loop arrivals: give --rate too') while
    # --rate is refused with --find-max rate: a rate search could only send Poisson arrivals
    from onechip.bench.runner import rep_arrivals
    from onechip.bench.search import probe_config

    typed = {"base_url": "http://127.0.0.1:9", "find_max": "rate", "slo": "ttft_ms=500", "arrivals": "constant"}
    cfg = build_request(BenchConfig, typed)
    _, probe = probe_config(cfg, 8.0)
    assert probe.arrivals == "constant" and probe.rate_per_s == 8.0
    sends = rep_arrivals(probe, 16, probe.clients[0], 0) or []
    assert len(sends) > 1 and sends == [k / 8.0 for k in range(len(sends))]  # evenly spaced, 1/8 s apart
    with pytest.raises(ConfigError, match="--find-max clients searches closed-loop streams: --arrivals"):
        build_request(BenchConfig, {**typed, "find_max": "clients"})


def test_cli_find_max_prints_the_answer_as_json(fake_server: FakeVllm, tmp_path: Path) -> None:
    out = tmp_path / "s"
    args = ["bench", fake_server.url, "--contexts", "16", "--reps", "1", "--output-tokens", "3"]
    args += ["--find-max", "clients", "--slo", "ttft_ms=10000", "--find-max-limit", "2", "--out", str(out), "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout[result.stdout.index("{") :])  # where it went is said on stderr
    assert answer["max_clients"] == 2 and len(answer["probes"]) == 2
    assert f"{out}/search.json, one run per probe under {out}/" in result.stderr


def test_cli_refuses_find_max_with_resume(tmp_path: Path) -> None:
    args = ["bench", "http://127.0.0.1:9", "--resume", str(tmp_path), "--find-max", "clients", "--slo", "ttft_ms=5"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0
    assert isinstance(result.exception, ConfigError)  # the CLI's main prints it as one line, exit 2
    assert "give --out, not --resume" in str(result.exception)


def test_resuming_a_finished_run_keeps_its_metrics_and_start_time(fake_server: FakeVllm, tmp_path: Path) -> None:
    first = run_grid(_config(fake_server, clients=[1, 2]), tmp_path)
    assert all(c.server_metrics_delta.get("prompt_tokens_delta", 1) for c in first.cells)
    sent = len(fake_server.chat_requests)
    again = run_grid(_config(fake_server, clients=[1, 2]), tmp_path, resume=True)
    assert len(fake_server.chat_requests) == sent + 1  # only the probe request: every rep was reused
    assert [c.server_metrics_delta for c in again.cells] == [c.server_metrics_delta for c in first.cells]
    assert again.cells[0].server_metrics_delta["prefix_cache_queries_delta"] > 0
    assert again.created_at == first.created_at


def test_a_prompt_note_is_written_once_per_context(fake_server: FakeVllm, tmp_path: Path) -> None:
    # 1 token cannot be hit (template + first line are longer): one note for the context, not one per cell
    run = run_grid(_config(fake_server, contexts=[1], clients=[1, 2]), tmp_path)
    assert sum(1 for n in run.notes if n.startswith("context 1:")) == 1


def test_find_max_over_agent_sessions_and_its_report(fake_server: FakeVllm, tmp_path: Path) -> None:
    fake_server.prefix_cache_block = 16
    cfg = BenchConfig(
        base_url=fake_server.url,
        workload="agent",
        contexts=[64],
        reps=1,
        output_tokens=2,
        turns=2,
        find_max="clients",
        slo={"ttft_ms": 10_000.0},
        find_max_limit=2,
    )
    result = api.find_max(cfg, out_dir=tmp_path)
    assert result.workload == "agent" and result.max_clients == 2
    probe = BenchConfig.model_validate_json(
        json.dumps(json.loads((tmp_path / "clients-2" / "summary.json").read_text())["config"])
    )
    assert probe.workload == "agent" and probe.clients == [2] and probe.find_max is None
    md = (tmp_path / "search.md").read_text()
    assert "**2 agents (clients)**" in md and "| 1 | meets |" in md and "| 2 | meets |" in md
    assert (tmp_path / "search.html").read_text().count("data:image/png;base64,") == 1


def test_the_answer_is_priced_on_the_chip_asked(fake_server: FakeVllm, tmp_path: Path) -> None:
    from onechip.cost import usd_per_mtok
    from onechip.cost.prices import find_prices

    cfg = _config(
        fake_server, find_max="clients", slo={"ttft_ms": 10_000.0}, find_max_limit=1, chip="v5e-1", pricing=["spot"]
    )
    result = api.find_max(cfg, out_dir=tmp_path)
    assert result.costs and all(c.pricing == "spot" and c.chip == "v5e-1" for c in result.costs)
    price = find_prices("v5e-1", ["spot"])[0]
    assert result.costs[0].usd_per_mtok == pytest.approx(
        usd_per_mtok(price.usd_per_chip_hour, result.output_tok_per_s)  # type: ignore[arg-type]
    )
    assert "per million output tokens" in (tmp_path / "search.md").read_text()


def test_an_unknown_chip_fails_before_measuring(fake_server: FakeVllm, tmp_path: Path) -> None:
    cfg = _config(fake_server, find_max="clients", slo={"ttft_ms": 100.0}, chip="no-such-chip")
    with pytest.raises(ConfigError):
        api.find_max(cfg, out_dir=tmp_path)
    assert fake_server.chat_requests == []


def test_find_max_rate_counts_the_wait_for_a_late_send(fake_server: FakeVllm, tmp_path: Path) -> None:
    # one request in flight, ~0.1 s each: ~10 requests/s at most. From the actual send every TTFT is ~0.1 s
    # and would meet 150 ms at any rate; from the intended send the queue shows and the search stops
    fake_server.ttft_s = 0.1
    cfg = _config(
        fake_server,
        find_max="rate",
        slo={"ttft_ms": 150.0},
        slo_percentile=100,
        duration_s=0.6,  # each probe's arrivals over 0.6 s: ~12 at 20 req/s (bench.search.probe_requests: 200)
        warmup_requests=0,
        find_max_limit=320,  # starts at 20 req/s (limit / 16), which misses: the search halves down
    )
    result = api.find_max(cfg, out_dir=tmp_path)
    assert result.max_rate_per_s is not None and 0 < result.max_rate_per_s < 10
    missed = [p for p in result.probes if not p.meets_slo]
    assert missed and all(p.load > result.max_rate_per_s for p in missed)
    assert len(result.cells) == len(result.probes)
    # what the misses measured from the actual send is less than from the intended one: the wait in the queue
    cells = {p.load: c for p, c in zip(result.probes, result.cells, strict=True)}
    top = cells[20.0]  # a request every 50 ms, each served in ~100 ms: the 4th waits ~150 ms for the slot
    assert top.ttft_from_intended_ms.p99 > top.ttft_ms.p99 + 100  # type: ignore[operator]


def test_the_console_says_the_schedule_slipped_and_shows_agent_turns(tmp_path: Path) -> None:
    with FakeVllm(ttft_s=0.1, prefix_cache_block=4) as srv:
        common = [srv.url, "--reps", "1", "--output-tokens", "2", "--warmup-requests", "0"]
        slip = ["bench", *common, "--contexts", "16", "--clients", "1", "--rate", "40", "--arrivals", "constant"]
        slip += ["--requests-per-client", "6", "--out", str(tmp_path / "slip")]
        r = CliRunner().invoke(app, slip, env={"COLUMNS": "250"})
        assert r.exit_code == 0, r.output
        run = BenchRun.model_validate_json((tmp_path / "slip" / "summary.json").read_text())
        assert "schedule slipped context 16 at 40 req/s, at most 1 in flight" in r.output
        assert f"p99 {run.cells[0].slip_ms.p99:,.0f} ms" in r.output
        agent = ["bench", *common, "--workload", "agent", "--contexts", "40", "--clients", "1", "--turns", "2"]
        r = CliRunner().invoke(app, [*agent, "--out", str(tmp_path / "agent")], env={"COLUMNS": "250"})
        assert r.exit_code == 0, r.output
        run = BenchRun.model_validate_json((tmp_path / "agent" / "summary.json").read_text())
        assert "agent sessions: 40-token shared prefix x 1 client" in r.output
        second = run.cells[0].turns[1]
        assert f"{second.cached_share:.0%}" in r.output


def test_a_grid_search_says_clients_not_agents(fake_server: FakeVllm, tmp_path: Path) -> None:
    """'N agents (clients)' is the agent workload's word; a grid search's streams send independent requests."""
    from rich.console import Console

    from onechip.cli.bench_cmd import print_search

    result = api.find_max(
        _config(fake_server, find_max="clients", slo={"ttft_ms": 10_000.0}, find_max_limit=2), out_dir=tmp_path
    )
    assert result.workload == "grid" and result.max_clients == 2
    md = (tmp_path / "search.md").read_text()
    assert "**2 clients**" in md and "agent" not in md
    out = Console(record=True, width=200)
    print_search(result, out)
    said = out.export_text()
    assert "max load meeting the SLOs: 2 clients," in said and "agent" not in said


def test_the_search_names_the_window_of_its_tok_s_and_what_its_percentile_is_over(
    fake_server: FakeVllm, tmp_path: Path
) -> None:
    # search.md, the console and search.json said 'output tok/s' bare where the bench's report says which window (the
    # steady one, median over reps, not the whole run's), and not that a probe's percentile pools every rep's requests
    from rich.console import Console

    from onechip.cli.bench_cmd import print_search
    from onechip.schemas.bench import SearchProbe, SearchResult

    cfg = _config(fake_server, find_max="clients", slo={"ttft_ms": 10_000.0}, find_max_limit=1, reps=2)
    result = api.find_max(cfg, out_dir=tmp_path)
    md = (tmp_path / "search.md").read_text()
    assert f"{result.output_tok_per_s:,.1f} output tok/s there (steady window, median over reps)" in md
    assert "| clients | verdict | p90 ttft_ms | met SLO | output tok/s (steady) |" in md
    assert "ms, over its measured requests of every rep together" in md
    out = Console(record=True, width=250)
    print_search(result, out)
    said = out.export_text()
    assert "output tok/s there (steady window)" in said and "tok/s steady" in said
    for model, field in (
        (SearchResult, "output_tok_per_s"),
        (SearchProbe, "output_tok_per_s"),
        (SearchProbe, "goodput_per_s"),
    ):
        assert "steady window, median over reps" in (model.model_fields[field].description or "")
    assert "every rep together" in (SearchProbe.model_fields["at_percentile_ms"].description or "")


@pytest.mark.parametrize(
    ("kind", "meets", "said"),
    [
        # a rate search that halved down from its first load said 'the first load (0.0625 rate) missed': the first was 4
        ("rate", lambda load: False, "every load from the first (4 req/s) down to 0.0625 req/s missed the SLOs"),
        ("rate", lambda load: load <= 0.5, "0.545 req/s missed the SLOs"),  # '0.545 rate missed'
        ("clients", lambda load: False, "the first load (1 client) missed the SLOs"),  # '(1 clients)'
        ("clients", lambda load: load <= 3, "4 clients missed the SLOs"),
    ],
)
def test_why_a_search_stopped_names_its_loads_in_their_unit(kind: str, meets, said: str, tmp_path: Path) -> None:
    from onechip.bench.search import LoadSearch
    from onechip.schemas.bench import CellResult, SearchProbe

    extra: dict[str, object] = {"clients": [1]} if kind == "rate" else {}
    cfg = BenchConfig(
        base_url="http://127.0.0.1:9", contexts=[16], find_max=kind, slo={"ttft_ms": 100.0}, find_max_limit=64, **extra
    )  # type: ignore[arg-type]

    def verdict(load: float) -> tuple[SearchProbe, CellResult]:  # the verdicts, no server: the path and words only
        cell = CellResult(context_tokens=16, clients=1, status="ok")
        return SearchProbe(load=load, run_dir="", status="ok", meets_slo=meets(load)), cell

    assert LoadSearch(cfg, verdict).search()[2] == said


@pytest.mark.parametrize(
    ("limit", "knee", "expected"),
    [
        # 0.005 misses, 0.0025 meets, then 0.00354, 0.00421 (miss), 0.00386: within 15%. Bisected to 3 decimals,
        # 0.0025 - 0.005 gave 0.004, then 0.004 - 0.005 gave 0.004 again: the search measured nothing and never ended
        (0.08, 0.004, (0.00386, 0.00421)),
        # 0.00125 misses; halved down no lower than 0.001, then sqrt(0.001 x 0.00125) = 0.00112 (3 digits) misses
        (0.02, 0.001, (0.001, 0.00112)),
        # limit / 16 = 6.25e-05 req/s was probed (a request every 4.4 hours), below --rate's floor of 0.001
        (0.001, 0.0, (0.0, 0.001)),
    ],
)
def test_a_slow_rate_search_ends_and_probes_no_rate_below_the_floor(limit, knee, expected, tmp_path: Path) -> None:
    from onechip.bench.search import LoadSearch
    from onechip.schemas.bench import MIN_RATE, CellResult, SearchProbe

    cfg = BenchConfig(
        base_url="http://127.0.0.1:9", contexts=[16], clients=[1], find_max="rate", slo={"ttft_ms": 100.0},
        find_max_limit=limit,
    )  # fmt: skip
    asked: list[float] = []

    def verdict(load: float) -> tuple[SearchProbe, CellResult]:  # the verdicts, no server: the search's path only
        asked.append(load)
        assert len(asked) < 50, f"the search does not end: {asked[-6:]}"
        cell = CellResult(context_tokens=16, clients=1, status="ok")
        return SearchProbe(load=load, run_dir="", status="ok", meets_slo=load <= knee), cell

    lo, hi, _ = LoadSearch(cfg, verdict).search()
    assert (lo, hi) == expected
    assert min(asked) >= MIN_RATE, asked


def test_a_rate_search_below_the_rate_floor_is_refused() -> None:
    with pytest.raises(ValueError, match="--find-max-limit 0.0005: a rate search probes at least 0.001 req/s"):
        BenchConfig(base_url="http://127.0.0.1:9", clients=[1], find_max="rate", find_max_limit=0.0005)
