"""`bench --find-max rate`: open-loop probes whose request count follows the rate and whose in-flight cap is apart
(none unless --clients N), against fake servers on 127.0.0.1 of known timings; bounded load (--duration-s)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.bench.runner import rep_arrivals
from onechip.bench.search import probe_config
from onechip.cli.bench_cmd import print_search
from onechip.errors import ConfigError
from onechip.progress import ProgressEvent
from onechip.schemas import bench as bench_schema
from onechip.schemas.bench import (
    PROBE_MAX_REQUESTS,
    PROBE_MAX_S,
    PROBE_MIN_REQUESTS,
    PROBE_S,
    BenchConfig,
    SearchResult,
    probe_requests,
)
from onechip.schemas.inputs import build_request

ATTEMPTS = 3  # a probe measured on a loaded machine is measured again, as test_bench_known_timings.py's cells are


def _peak_in_flight(srv: FakeVllm) -> list[int]:
    """[the most chat requests the server held at once, queued or generating], updated as they arrive."""
    peak = [0]
    held = [0]
    chat = srv._chat

    async def counted(body, writer):  # type: ignore[no-untyped-def]
        held[0] += 1
        peak[0] = max(peak[0], held[0])
        try:
            return await chat(body, writer)
        finally:
            held[0] -= 1

    srv._chat = counted  # type: ignore[method-assign]
    return peak


def _search(srv: FakeVllm, out: Path, **flags: Any) -> SearchResult:
    """A rate search as a user types it (build_request: what was given is known), one rep of 16-token prompts, 3
    tokens out, no warm-up, each probe's arrivals over --duration-s (bounded load)."""
    typed = {"base_url": srv.url, "contexts": "16", "output_tokens": 3, "reps": 1, "warmup_requests": 0}
    return api.find_max(build_request(BenchConfig, {**typed, "find_max": "rate", **flags}), out_dir=out)


def test_without_clients_a_rate_search_has_no_in_flight_cap(tmp_path: Path) -> None:
    # a server that serves any number at once, 50 ms to the first token: every rate up to the limit meets 200 ms. The
    # search ran each probe with 1 request in flight (the first of the default --clients 1,4): at 32 and 64 req/s
    # the sends queued behind it (50 ms each, 20 req/s at most) and the answer was the schedule the client could keep.
    # A machine that holds the client sends late too: past LATE_SEND_MS (50 ms) the probe is marked slipped, and its
    # TTFT, timed from the intended send, can pass 200 ms (each 1 of 3 copies beside CPU burners). The search is run
    # again where it answered short of the limit or a probe slipped, ATTEMPTS times at most; the cap (one request in
    # flight, 14.6 req/s answered) fails at once
    misses = []
    for attempt in range(ATTEMPTS):
        run_dir = tmp_path / f"attempt-{attempt}"
        with FakeVllm(ttft_s=0.05) as srv:
            peak = _peak_in_flight(srv)
            result = _search(srv, run_dir, slo="ttft_ms=200", duration_s=1.0)
        assert result.in_flight_cap is None
        assert peak[0] > 1  # more than one at once: at 64 req/s, 50 ms each, ~3 on average
        slipped = [p.load for p in result.probes if p.schedule_slipped]
        if result.max_rate_per_s == 64.0 and "limit" in result.bound_reason and not slipped:
            break
        misses.append((result.max_rate_per_s, result.bound_reason, slipped))
    else:
        pytest.fail(f"(req/s answered, why, probes that slipped) in all {ATTEMPTS} attempts: {misses}")
    probes = {p.load: p for p in result.probes}
    assert probes[64.0].requests_sent > 2 * probes[16.0].requests_sent > 0  # the count follows the rate
    saved = json.loads((run_dir / "search.json").read_text())
    assert saved["in_flight_cap"] is None and [p["requests_sent"] for p in saved["probes"]] == [
        p.requests_sent for p in result.probes
    ]
    md = " ".join((run_dir / "search.md").read_text().split())
    assert "in flight at most: none (no cap)" in md and "| req/s | requests | verdict |" in md
    assert f"| 64 | {probes[64.0].requests_sent} | meets |" in md
    out = Console(record=True, width=250)
    print_search(result, out)
    said = out.export_text()
    assert "in flight at most: none (no cap)" in said and "requests" in said


def test_a_rate_search_against_k_slots_of_s_seconds_answers_near_k_over_s(tmp_path: Path) -> None:
    """A server that serves at most K = 4 at once (a semaphore), each in S = 0.1 s: capacity c = K / S = 40 req/s.
    Constant arrivals (GuideLLM's 'constant'): below c nothing waits (TTFT ~S); above, by (1 + e) c, the backlog grows
    e c per second, the last request of a D = 1.5 s probe waits e D, and the p90 ~0.9 e D. SLO TTFT <= X = 200 ms at
    p90: a probe misses once 0.9 e D > X - S, e > 7.4%. The search stops with its pass and miss within 15%
    (RATE_RESOLUTION) of each other, so the answer is in [c / 1.15, 1.074 c] = [34.8, 43.0]; asserted in [0.85 c,
    1.1 c]: the fake's own overhead per request (a few ms) lowers c a little, a busy machine's timer jitter raises the
    p90. One request in flight (the bug) answered ~1 / S = 10 req/s.

    The law holds only where the fake served each request in ~S and the client sent on time. Beside 3 CPU burners
    (load 9) the fake, in the test's process, served some request of every search in 188 - 232 ms (its first write
    after its slot; median 108 ms), past X by itself, and probes at 8 req/s (a fifth of c, nothing queued) missed:
    answers 1.83 - 32 req/s, 4 of 6 copies failed. An attempt where the fake served a request in more than X (over S
    by more than the SLO's margin X - S), or a probe slipped (sends over LATE_SEND_MS late), did not run the law: it
    is measured again, ATTEMPTS times at most, as the first test here is."""
    k, s_ms, slo_ms = 4, 100.0, 200.0
    capacity = k / (s_ms / 1000)
    misses = []
    for attempt in range(ATTEMPTS):
        with FakeVllm(ttft_s=s_ms / 1000, slots=k) as srv:
            peak = _peak_in_flight(srv)
            result = _search(
                srv, tmp_path / f"a{attempt}", slo=f"ttft_ms={slo_ms:g}", duration_s=1.5, arrivals="constant"
            )
            service_ms = [(sent[0] - srv.admitted[n]) * 1000 for n, sent in srv.sent_times.items() if sent]
        assert peak[0] > k  # the client sent past the server's slots: the server's queue, not the client's, held them
        slipped = [p.load for p in result.probes if p.schedule_slipped]
        if max(service_ms) <= slo_ms and not slipped:  # no request past X by the fake's service alone
            break
        misses.append((result.max_rate_per_s, round(max(service_ms)), slipped))
    else:
        pytest.fail(f"(req/s answered, the longest service ms, probes that slipped) in all {ATTEMPTS}: {misses}")
    assert result.max_rate_per_s is not None and 0.85 * capacity <= result.max_rate_per_s <= 1.1 * capacity, [
        (p.load, p.at_percentile_ms) for p in result.probes
    ]
    missed = [p.load for p in result.probes if not p.meets_slo]
    assert missed and min(missed) <= result.max_rate_per_s * 1.15  # its neighbour missed


def test_a_given_clients_caps_the_requests_in_flight(tmp_path: Path) -> None:
    # --clients 2 with --find-max rate: at most 2 in flight in every probe (vllm bench serve's --max-concurrency);
    # at 40 req/s, 100 ms each, 4 would be needed: the sends wait for a slot and the schedule slips
    with FakeVllm(ttft_s=0.1) as srv:
        peak = _peak_in_flight(srv)
        result = _search(srv, tmp_path, slo="ttft_ms=10000", duration_s=0.5, clients="2", find_max_limit=40)
    assert result.in_flight_cap == 2 and peak[0] == 2
    assert {p.load: p.schedule_slipped for p in result.probes}[40.0]
    md = " ".join((tmp_path / "search.md").read_text().split())
    assert "in flight at most: 2 (--clients)" in md


def test_a_capped_rate_probe_is_judged_at_its_cap_against_the_plans_kv_pool(tmp_path: Path) -> None:
    # the probes run one stream (the cap is apart from it): judged at 1 client, a probe of --clients 3 the plan's pool
    # cannot hold (3 x 12 blocks of 4 > 25) would be measured where it was recorded infeasible, as --clients 3 was
    from test_bench_runner import plan_with_kv

    with FakeVllm() as srv:
        cfg = build_request(
            BenchConfig,
            {"base_url": srv.url, "contexts": "40", "output_tokens": 5, "find_max": "rate", "slo": "ttft_ms=500"}
            | {"clients": "3", "find_max_limit": 4, "reps": 1},
        )
        result = api.find_max(cfg, out_dir=tmp_path, plan=plan_with_kv(100))
        sent = [b["messages"][0]["content"] for b in srv.chat_requests]
    assert set(sent) == {"Hi"}  # each probe's check of the server only: nothing measured
    assert result.probes and all(p.status == "infeasible" for p in result.probes)
    assert all((p.reason or "").startswith("3 clients x 12 blocks") for p in result.probes)


def test_a_rate_probe_sends_as_many_requests_whatever_its_cap(tmp_path: Path) -> None:
    # the probe sent clients x requests_per_client: its count was its in-flight cap's (2 requests at --clients 1,
    # 16 at --clients 8), the same probe measured over 8 times fewer requests with 1 in flight
    base = {"base_url": "http://127.0.0.1:9", "contexts": "16", "find_max": "rate", "slo": "ttft_ms=500"}
    counts, caps = set(), []
    for given in ({}, {"clients": "1"}, {"clients": "8"}):
        _, probe = probe_config(build_request(BenchConfig, {**base, **given}), 16.0)
        counts.add(len(rep_arrivals(probe, 16, probe.clients[0], 0) or []))
        caps.append(probe.max_in_flight)
    assert counts == {probe_requests(16.0)} and caps == [0, 1, 8]


@pytest.mark.parametrize("rate", [0.001, 0.04, 0.5, 1.0, 2.0, 3.0, 16.0, 64.0, 999.0, 5000.0, 1e6])
def test_a_rate_probe_is_bounded_in_time_and_count(rate: float) -> None:
    n = probe_requests(rate)
    assert 1 <= n <= PROBE_MAX_REQUESTS
    assert n == 1 or n / rate <= PROBE_MAX_S  # its arrivals last 30 s at most
    assert n >= min(PROBE_MIN_REQUESTS, int(rate * PROBE_MAX_S), PROBE_MAX_REQUESTS)  # enough for a percentile
    assert n >= min(rate * PROBE_S, PROBE_MAX_REQUESTS) or n == int(rate * PROBE_MAX_S)  # 10 s of arrivals


def test_help_says_clients_caps_a_rate_search_in_flight() -> None:
    from typer.testing import CliRunner

    from onechip.cli.main import app

    said = CliRunner().invoke(app, ["bench", "--help"], env={"COLUMNS": "2000"}).output
    line = next(x for x in said.splitlines() if "--clients " in x)
    assert "With --rate or --find-max rate: one value, the requests in flight at most" in line
    assert "default: no cap" in line


def test_requests_per_client_is_refused_with_find_max_rate() -> None:
    with pytest.raises(ConfigError, match="--requests-per-client does not apply") as err:
        build_request(
            BenchConfig,
            {"base_url": "http://127.0.0.1:1", "find_max": "rate", "slo": "ttft_ms=500", "requests_per_client": 5},
        )
    assert "\n" not in str(err.value)


def test_the_requests_per_client_refusal_states_the_search_constants(monkeypatch: pytest.MonkeyPatch) -> None:
    # the refusal said '~10 s ... at least 30 requests, at most 30 s' as literal text: a change of the constants that
    # size a probe (schemas.bench, read by bench.search.probe_requests too) left it saying the old ones
    monkeypatch.setattr(bench_schema, "PROBE_S", 12.0)
    monkeypatch.setattr(bench_schema, "PROBE_MIN_REQUESTS", 40)
    monkeypatch.setattr(bench_schema, "PROBE_MAX_S", 45.0)
    typed = {"base_url": "http://127.0.0.1:1", "find_max": "rate", "slo": "ttft_ms=500", "requests_per_client": 5}
    with pytest.raises(ConfigError, match=r"~12 s of arrivals at its rate \(at least 40 requests, at most 45 s\)"):
        build_request(BenchConfig, typed)


def _as_before_in_flight_cap(out: Path, clients: int | None) -> None:
    """Make the search in `out` as a search.json and probes saved before in_flight_cap were: no in_flight_cap key,
    each probe's config without max_in_flight and with `clients` (None: the probes' summaries lost)."""
    saved = json.loads((out / "search.json").read_text())
    del saved["in_flight_cap"]
    (out / "search.json").write_text(json.dumps(saved))
    for summary in out.glob("rate-*/summary.json"):
        run = json.loads(summary.read_text())
        run["config"].pop("max_in_flight")
        run["config"]["clients"] = [clients or 1]
        summary.write_text(json.dumps(run)) if clients else summary.unlink()


@pytest.mark.parametrize(("clients", "said"), [(1, "in flight at most: 1 (--clients)"), (None, "not recorded")])
def test_an_old_search_json_says_its_true_cap_or_not_recorded(tmp_path: Path, clients: int | None, said: str) -> None:
    # a search.json from before in_flight_cap re-rendered said 'in flight at most: none (no cap)', though its probes
    # ran with their --clients value in flight at most (1 by default): its probes' saved configs tell the cap; without
    # them it is not recorded
    from onechip.bench.search import read_search
    from onechip.report.search import search_markdown

    with FakeVllm() as srv:
        _search(srv, tmp_path, slo="ttft_ms=10000", duration_s=0.3, find_max_limit=2)
    _as_before_in_flight_cap(tmp_path, clients)
    md = " ".join(search_markdown(read_search(tmp_path)))
    assert said in md and "none (no cap)" not in md


def test_a_rate_probes_progress_lines_say_its_rate_and_cap(tmp_path: Path) -> None:
    # they said 'context 16 x 1 clients, rep 1/1' for a probe of 2 req/s with no in-flight cap (its one stream)
    events: list[ProgressEvent] = []
    with FakeVllm() as srv:
        typed = {"base_url": srv.url, "contexts": "16", "output_tokens": 3, "reps": 1, "warmup_requests": 0}
        flags = {"find_max": "rate", "slo": "ttft_ms=10000", "find_max_limit": 2, "duration_s": 0.3, "clients": "3"}
        api.find_max(build_request(BenchConfig, {**typed, **flags}), events.append, out_dir=tmp_path)
    lines = [e.message for e in events]
    assert "context 16 at 2 req/s, at most 3 in flight, rep 1/1: starting" in lines, lines
    assert not any("x 1 clients" in line for line in lines)
