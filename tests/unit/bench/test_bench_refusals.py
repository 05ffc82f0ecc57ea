"""`onechip bench` against a server that refuses: a 429 or 503 with Retry-After is waited as asked before the stream's
next request (RFC 9110 section 10.2.3), recorded, never counted as latency; a cell whose requests fail in a row stops
(bench.worker.FAILS_TO_STOP) instead of resending at once from every stream for the rest of --duration-s."""

from __future__ import annotations

import time
from pathlib import Path

from multidict import CIMultiDict, CIMultiDictProxy
from rich.console import Console

from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.bench.runner import load_samples
from onechip.bench.worker import FAILS_TO_STOP
from onechip.cli.bench_cmd import print_run
from onechip.report.markdown_bench import grids
from onechip.retry_after import retry_after_s
from onechip.schemas.bench import BenchConfig


def _config(url: str, **kw: object) -> BenchConfig:
    base: dict[str, object] = {"base_url": url, "contexts": [16], "clients": [1], "reps": 1, "output_tokens": 4}
    base.update(warmup_requests=0)
    return BenchConfig(**{**base, **kw})  # type: ignore[arg-type]


def _measured(out: Path) -> list:  # type: ignore[type-arg]
    return sorted((s for s in load_samples(out / "requests.jsonl") if not s.warmup), key=lambda s: (s.stream, s.seq))


def test_a_429_with_retry_after_is_waited_before_the_streams_next_request(tmp_path: Path) -> None:
    """Chat request 1 is the probe; the stream's measured requests are 2, 3 (HTTP 429, Retry-After: 1) and 4. The
    stream sends 4 at least the 1 s the server asked after 3 ended (it used to send it at once), the sample records
    what was asked and waited, and the wait is in no latency: request 4's E2E is the fake's 30 ms + 3 x 10 ms."""
    with FakeVllm(ttft_s=0.03, itl_s=0.01, fail_status={3: 429}, retry_after="1") as srv:
        run = api.bench(_config(srv.url, requests_per_client=3), out_dir=tmp_path)
    first, refused, after = _measured(tmp_path)
    assert refused.http_status == 429 and refused.retry_after_s == 1.0  # the header's delay-seconds
    assert refused.waited_s == 1.0 and first.waited_s == after.waited_s == 0.0
    assert after.t_send - (refused.t_done or 0.0) >= 1.0
    assert (after.t_done or 0.0) - after.t_send < 0.5  # E2E ~60 ms: the 1 s wait is not in it
    cell = run.cells[0]
    assert (cell.requests_asked_wait, cell.asked_wait_s, cell.waited_s) == (1, 1.0, 1.0)
    assert cell.e2e_ms.p99 is not None and cell.e2e_ms.p99 < 500
    said = "1 refused request asked 1.0 s of waits in all; the streams waited 1.0 s before their next requests"
    assert said in "\n".join(grids(run))  # the report says it
    console = Console(record=True, width=400)
    print_run(run, console)
    assert f"the server asked for waits (Retry-After): {said}" in console.export_text()  # and the console


def test_a_wait_past_the_cells_time_ends_the_stream_there(tmp_path: Path) -> None:
    """Every measured request answered 429 with Retry-After: 5, --duration-s 1, 2 clients: each stream's wait
    reaches past the measured window, so each stream ends at its first refusal (2 requests after the probe), where
    both streams resent at once for the whole second (~1,300 requests, qabench59)."""
    with FakeVllm(fail_status=dict.fromkeys(range(2, 100_000), 429), retry_after="5") as srv:
        run = api.bench(_config(srv.url, clients=[2], duration_s=1.0), out_dir=tmp_path)
        sent = len(srv.chat_requests)
    samples = _measured(tmp_path)
    assert sent == 1 + 2 and len(samples) == 2
    assert all(s.last_in_stream and s.retry_after_s == 5.0 and s.waited_s == 0.0 for s in samples)
    cell = run.cells[0]
    assert cell.status == "failed" and (cell.requests_asked_wait, cell.asked_wait_s, cell.waited_s) == (2, 10.0, 0.0)


def test_a_wait_is_bounded_by_the_request_timeout(tmp_path: Path) -> None:
    """Retry-After: 3600 on a run whose --timeout-s is 1: the stream waits 1 s (a wait the user allows no request),
    not an hour, and says it was asked 3,600."""
    with FakeVllm(fail_status={2: 503}, retry_after="3600") as srv:
        run = api.bench(_config(srv.url, requests_per_client=2, request_timeout_s=1.0), out_dir=tmp_path)
    refused, after = _measured(tmp_path)
    assert refused.retry_after_s == 3600.0 and refused.waited_s == 1.0
    assert 1.0 <= after.t_send - (refused.t_done or 0.0) < 15.0  # 1 s waited, not 3,600; room for a loaded machine
    assert (run.cells[0].asked_wait_s, run.cells[0].waited_s) == (3600.0, 1.0)


def test_an_open_loop_keeps_its_schedule_through_retry_after(tmp_path: Path) -> None:
    """--rate 10, constant, 3 requests (a --rate run is one stream, --clients 2 its in-flight cap): arrivals every
    100 ms; every measured request refused with Retry-After: 2. The arrivals are the schedule (later users arrive
    whatever an earlier one was told), so all 3 are sent on time, each recording the 2 s it was asked."""
    with FakeVllm(fail_status=dict.fromkeys(range(2, 100), 429), retry_after="2") as srv:
        config = _config(srv.url, clients=[2], requests_per_client=3, rate_per_s=10.0, arrivals="constant")
        run = api.bench(config, out_dir=tmp_path)
    samples = _measured(tmp_path)
    assert len(samples) == 3 and {(s.retry_after_s, s.waited_s) for s in samples} == {(2.0, 0.0)}
    assert max(s.t_send - (s.t_intended or 0.0) for s in samples) < 0.05  # on time: an arrival 2 s late would be >= 2
    assert (run.cells[0].requests_asked_wait, run.cells[0].waited_s) == (3, 0.0)


def test_a_cell_whose_every_request_fails_at_once_stops_after_fails_to_stop(tmp_path: Path) -> None:
    """An HTTP 500 at once to every measured request, no Retry-After, 2 clients for --duration-s 2: the streams stop
    once FAILS_TO_STOP requests failed in a row (at most the requests then in flight more: one per stream), where they
    sent ~3,000 in the 2 s; every request sent is in requests.jsonl, and the cell is failed saying why."""
    with FakeVllm(fail_status=dict.fromkeys(range(2, 100_000), 500)) as srv:
        run = api.bench(_config(srv.url, clients=[2], duration_s=2.0), out_dir=tmp_path)
        sent = len(srv.chat_requests) - 1  # the probe
    samples = _measured(tmp_path)
    assert FAILS_TO_STOP <= sent <= FAILS_TO_STOP + 2 and len(samples) == sent
    assert sum(s.last_in_stream for s in samples) == 2  # each stream's last request says so (resume)
    cell = run.cells[0]
    assert cell.status == "failed" and f"{FAILS_TO_STOP} requests failed in a row" in (cell.reason or "")
    assert "HTTP 500" in (cell.reason or "")


def test_the_stop_rule_counts_the_failures_of_every_worker_process_together(tmp_path: Path) -> None:
    """The same server, 4 streams over 4 worker processes: each worker counted only its own stream's failures, so the
    cell stopped after 4 x FAILS_TO_STOP requests (30 x --workers); the count is the rep's, across its workers. More
    are sent than in one process: the STOP line reaches each worker over its stdin while its stream goes on (a 500 at
    once is a request every ~ms; 39 on a loaded 2-core machine, 61 beside another test run), bounded here only by
    the 120 of a count per worker, which each worker reaches by itself: the bug sends at least that many."""
    with FakeVllm(fail_status=dict.fromkeys(range(2, 100_000), 500)) as srv:
        run = api.bench(_config(srv.url, clients=[4], workers=4, duration_s=5.0), out_dir=tmp_path)
        sent = len(srv.chat_requests) - 1  # the probe
    samples = _measured(tmp_path)
    assert FAILS_TO_STOP <= sent < 4 * FAILS_TO_STOP and len(samples) == sent, sent
    assert sum(s.last_in_stream for s in samples) == 4 and sum(s.stopped_streams for s in samples) == 1
    cell = run.cells[0]
    assert cell.status == "failed" and f"{FAILS_TO_STOP} requests failed in a row" in (cell.reason or "")


def test_a_server_that_dies_mid_rep_fails_the_cell_and_the_resume_measures_it_again(tmp_path: Path) -> None:
    """One stream of 100 requests (chat 2-101): 70 answered, then every one a 500 (an engine that died). The stream
    stops after FAILS_TO_STOP in a row; 30 of 100 failed is under the half that fails a cell, yet the rep was cut
    short, so the cell is failed (it was 'ok', figures from a rep that stopped); a resume against the server, well
    again, keeps every stored line in requests.replaced.jsonl and measures the rep again: ok."""
    dead = dict.fromkeys(range(72, 100_000), 500)
    with FakeVllm(fail_status=dead) as srv:
        config = _config(srv.url, requests_per_client=100)
        cell = api.bench(config, out_dir=tmp_path).cells[0]
        assert len(srv.chat_requests) == 1 + 70 + FAILS_TO_STOP
        assert cell.status == "failed" and f"{FAILS_TO_STOP} requests failed in a row" in (cell.reason or "")
        srv.fail_status = {}
        again = api.bench(config, out_dir=tmp_path, resume=True).cells[0]
    assert again.status == "ok" and (again.requests_ok, again.requests_failed) == (100, 0)
    replaced = load_samples(tmp_path / "requests.replaced.jsonl")
    assert len(replaced) == 70 + FAILS_TO_STOP


def test_agent_sessions_wait_a_refused_turn_and_stop_on_fails_to_stop(tmp_path: Path) -> None:
    """Agent sessions are closed loops too. Turn 2 of 3 (chat 3) refused with Retry-After: 1: turn 3 goes 1 s after
    it, the wait no think time (0 here). Then a server failing every request (a 500 at once): 20 sessions x 3 turns
    stop after FAILS_TO_STOP turns failed in a row, where all 60 were sent."""
    with FakeVllm(fail_status={3: 429}, retry_after="1") as srv:
        config = _config(srv.url, workload="agent", sessions_per_client=1, turns=3, output_tokens=2)
        run = api.bench(config, out_dir=tmp_path / "waits")
    turn1, refused, turn3 = _measured(tmp_path / "waits")
    assert (refused.turn, refused.retry_after_s, refused.waited_s) == (1, 1.0, 1.0)
    assert turn3.t_send - (refused.t_done or 0.0) >= 1.0 and run.cells[0].waited_s == 1.0
    with FakeVllm(fail_status=dict.fromkeys(range(2, 1000), 500)) as srv:
        config = _config(srv.url, workload="agent", sessions_per_client=20, turns=3, output_tokens=2)
        cell = api.bench(config, out_dir=tmp_path / "dead").cells[0]
        assert len(srv.chat_requests) == 1 + FAILS_TO_STOP
    assert cell.status == "failed" and f"{FAILS_TO_STOP} requests failed in a row" in (cell.reason or "")
    assert [s.last_in_stream for s in _measured(tmp_path / "dead")].count(True) == 1


def test_the_probe_sent_again_after_a_503_waits_its_retry_after(tmp_path: Path) -> None:
    """The probe request (chat 1) answered 503 with Retry-After: 1 is sent again (runner.PROBE_ATTEMPTS) after the
    1 s asked, not after PROBE_BACKOFF_S (0.2 s) alone: the run of 1 measured 10 ms answer takes over 1 s."""
    t0 = time.perf_counter()
    with FakeVllm(fail_status={1: 503}, retry_after="1") as srv:
        run = api.bench(_config(srv.url, requests_per_client=1), out_dir=tmp_path)
        assert len(srv.chat_requests) == 3  # the probe, its second try, the measured request
    assert run.cells[0].status == "ok" and time.perf_counter() - t0 >= 1.0


def test_retry_after_is_read_from_the_data_planes_headers_in_either_form() -> None:
    """aiohttp's headers (CIMultiDictProxy) as httpx's: any case, delay-seconds or an HTTP-date counted from the
    answer's Date (RFC 9110 sections 10.2.3 and 6.6.1: 07:28:02 against 07:28:00 is 2 s)."""
    date = {"Retry-After": "Wed, 21 Oct 2015 07:28:02 GMT", "Date": "Wed, 21 Oct 2015 07:28:00 GMT"}
    assert retry_after_s(CIMultiDictProxy(CIMultiDict(date))) == 2.0
    assert retry_after_s(CIMultiDictProxy(CIMultiDict({"RETRY-AFTER": "7"}))) == 7.0


def test_a_wait_asked_at_a_reps_last_request_is_waited_before_the_next_rep(tmp_path: Path) -> None:
    """Chat request 1 is the probe; rep 1's measured requests are 2 and 3 (HTTP 429, Retry-After: 1, its stream's
    last), rep 2's 4 and 5. A stream's last request waits nothing in its rep (worker: no request follows there), and
    rep 2's first request was sent at once, 1 s before the server asked for it (RFC 9110 section 10.2.3); the wait is
    carried to the next rep, in no latency."""
    with FakeVllm(ttft_s=0.01, itl_s=0.005, fail_status={3: 429}, retry_after="1") as srv:
        api.bench(_config(srv.url, requests_per_client=2, reps=2), out_dir=tmp_path)
    samples = sorted(load_samples(tmp_path / "requests.jsonl"), key=lambda s: s.t_send)
    refused, following = samples[1], samples[2]
    assert refused.http_status == 429 and refused.last_in_stream and refused.rep == 0 and following.rep == 1
    assert following.t_send - (refused.t_done or 0.0) >= 1.0
    assert (following.t_done or 0.0) - following.t_send < 0.5
