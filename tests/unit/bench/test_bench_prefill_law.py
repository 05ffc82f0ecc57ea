"""`onechip bench`, `simulate` and `advise` against an engine whose prefill follows a known law: the fake's
`step_law` = (a, b, c), a step of B sequences prefilling P prompt tokens taking a + b x B + c x P, the prefix cache's
tokens free (tests/fakes/vllm_server.py). One client never waits for another's step, so its TTFT is the law's first
step, a + b + c x (prompt - cached), and its TPOT a + b: the agent workload's prefix-cache effect on TTFT turn by
turn, and a calibration that predicts an unmeasured context within the error it states. Then the interruptions a
request meets on the way: a wait asked with Retry-After, a stream that stalls mid-way and resumes, an answer that
never comes; and an SLO search against a server of K slots whose queue sets TTFT."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import pytest
from test_bench_agent import agent_config  # 2 sessions of 3 turns a client, a 200-token shared system prompt
from test_bench_known_timings import ATTEMPTS, agrees, bench

from factories import SERVED_NAME, embedded_plan
from fakes.vllm_server import FakeVllm, WireWrite, count_body, sse_event
from onechip import api
from onechip.bench import client, find_max, run_grid
from onechip.bench.runner import load_samples
from onechip.report.markdown_bench import grids
from onechip.schemas.bench import BenchConfig
from onechip.schemas.requests import AdviseRequest, SimulateRequest

A_S, B_S, C_S = 0.008, 0.003, 0.00008  # the law: 8 ms + 3 ms per sequence + 0.08 ms per prompt token prefilled


def law_ttft_ms(prompt: int, cached: int) -> float:
    """One client's TTFT by the law: its first step holds it alone and prefills its uncached prompt tokens."""
    return 1000 * (A_S + B_S + C_S * (prompt - cached))


def test_agent_turns_ttft_is_the_prefill_law_with_the_cached_prefix_free(tmp_path: Path) -> None:
    """One client, 2 sessions x 3 turns against a 16-token-block prefix cache: each turn's prompt grows by the last
    turn's user text, call and result, and the cache serves the blocks an earlier prompt shared (the second session
    its first turn's system prompt). The engine charged each request's first step the prompt less the cached tokens
    usage reported (`step_prefill`: requests one after another, so the steps that prefilled are theirs in order);
    each TTFT is never below the law's for that and is the server's first write (test_bench_known_timings' 1 ms + 2%).
    The turn table's TTFT is its requests' median, its cached tokens the server's, and the report's cached share
    their sum over the prompts'. The server stamps its first write after the write returns, a few ms late under load
    (16.05 ms read against 18.1 beside another suite): the run is measured again where a TTFT misses the server's
    figure, ATTEMPTS times at most, as test_bench_known_timings' measure does."""
    for attempt in range(ATTEMPTS):
        out = tmp_path / f"attempt{attempt}"
        with FakeVllm(step_law=(A_S, B_S, C_S), prefix_cache_block=16) as srv:
            run = run_grid(agent_config(srv, clients=[1], output_tokens=4), out)
        samples = load_samples(out / "requests.jsonl")
        measured = sorted((s for s in samples if not s.warmup), key=lambda s: s.t_send)
        assert len(measured) == 6 and all(s.status == "ok" and s.cached_tokens is not None for s in measured)
        charged = [p for p in srv.step_prefill if p][-6:]  # the last 6 requests' first steps
        assert charged == [(s.prompt_tokens or 0) - (s.cached_tokens or 0) for s in measured]
        ttft = {id(s): 1000 * ((s.t_first or 0) - s.t_send) for s in measured}
        numbers = range(len(srv.chat_requests) - 5, len(srv.chat_requests) + 1)  # one client: the last 6, in order
        for s in measured:
            assert ttft[id(s)] >= law_ttft_ms(s.prompt_tokens or 0, s.cached_tokens or 0) - 0.1
        server_ms = [1000 * (srv.sent_times[n][0] - s.t_send) for s, n in zip(measured, numbers, strict=True)]
        misses = [(ttft[id(s)], ms) for s, ms in zip(measured, server_ms, strict=True) if not agrees(ttft[id(s)], ms)]
        if not misses:  # each TTFT is the server's first write
            break
    else:
        pytest.fail(f"TTFT against the server's first write missed in all {ATTEMPTS} attempts: {misses}")
    assert all((s.cached_tokens or 0) >= 192 for s in measured if s.turn > 0)  # at least the system prompt's blocks
    cell = run.cells[0]
    for t in cell.turns:
        ours = [s for s in measured if s.turn == t.turn]
        assert t.cached_tokens.median == statistics.median(s.cached_tokens or 0 for s in ours)
        assert t.ttft_ms.median == pytest.approx(statistics.median(ttft[id(s)] for s in ours))
    share = sum(s.cached_tokens or 0 for s in measured) / sum(s.prompt_tokens or 0 for s in measured)
    assert cell.cached_share == pytest.approx(share)
    assert f"Prompt tokens served from the prefix cache: {share:.0%} (usage)" in "\n".join(grids(run))


def test_a_calibration_on_the_law_predicts_an_unmeasured_context_within_its_stated_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`bench --calibration` (64 and 512 tokens at 1 and 4 clients) against the law, `simulate` at 1,024 tokens and
    1 client (no cell measured there): the law's TTFT (8 + 3 + 0.08 x 1,024 = 92.9 ms) and TPOT (11 ms) lie within
    the calibrated ranges the prediction states (sim.uncertainty, the corpus' measured error of a calibrated
    prediction), and `advise` on that chip ranks the row as calibrated, its ranges holding the law too."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    plan = embedded_plan()
    (tmp_path / "plan.json").write_text(plan.model_dump_json())
    with FakeVllm(model=SERVED_NAME, max_model_len=8192, step_law=(A_S, B_S, C_S)) as srv:
        config = BenchConfig(base_url=srv.url, contexts=[64, 512], clients=[1, 4], calibration=True, reps=2,
                             output_tokens=8, requests_per_client=2, warmup_requests=1)  # fmt: skip
        api.bench(config, out_dir=tmp_path / "cal", plan=plan)
    law_ttft, law_tpot = law_ttft_ms(1024, 0), 1000 * (A_S + B_S)
    request = SimulateRequest(plan=tmp_path / "plan.json", calibrate=tmp_path / "cal", contexts=[1024], clients=[1],
                              output_tokens=8, reps=3, requests_per_client=2, out_dir=tmp_path / "sim")  # fmt: skip
    predicted = api.simulate(request)
    assert predicted.prediction is not None and predicted.prediction.calibration is not None
    advice = api.advise(
        AdviseRequest(model=plan.model, workload={"ctx": 1024, "clients": 1, "output_tokens": 8}, chips=["cpu"], reps=3)
    )
    row = advice.rows[0]
    assert (row.chip, row.fits, row.source, row.calibrated) == ("cpu", True, "calibrated", True)
    assert row.ttft_ms_range is not None and row.tpot_ms_range is not None
    assert row.ttft_ms_range[0] <= law_ttft <= row.ttft_ms_range[1], (row.ttft_ms_range, law_ttft)
    assert row.tpot_ms_range[0] <= law_tpot <= row.tpot_ms_range[1], (row.tpot_ms_range, law_tpot)


def test_a_wait_asked_with_retry_after_is_waited_and_the_refusals_counted(tmp_path: Path) -> None:
    """Chat requests 3 and 4 (1 is the probe) answer 429 with Retry-After: 1: both are failed with the server's
    message and counted as asking a wait, the stream waits the second asked before its next request (bench.worker),
    and the 2 others are ok, 6 tokens each (vllm bench serve's endpoint_request_func fails any non-200 answer too, its
    error the reason phrase, `output.error = response.reason`; onechip keeps the server's message)."""
    with FakeVllm(itl_s=0.005, fail_status={3: 429, 4: 429}, retry_after="1") as srv:
        cell, _, measured = bench(srv, tmp_path)
    assert [s.status for s in measured] == ["ok", "failed", "failed", "ok"]
    assert [s.error for s in measured if s.error] == [f"HTTP 429: fake failure of request {n}" for n in (3, 4)]
    assert (cell.requests_failed, cell.requests_asked_wait, cell.asked_wait_s) == (2, 2, 2.0)
    assert cell.waited_s >= 2.0 - 0.01 and cell.reps[0].whole_run_output_tokens == 2 * 6


STALL_S, GAP_S = 0.5, 0.010


def _stalling(number: int, body: dict[str, Any]) -> list[WireWrite]:
    """6 tokens at 20 ms + 10 ms x k, then the final usage and [DONE]; chat request 3 holds its fourth token (and
    every one after) STALL_S longer: a stream that stalls mid-way and resumes."""
    writes: list[WireWrite] = [(0.0, sse_event({"role": "assistant", "content": ""}), False)]
    at = 0.0
    for k in range(6):
        at = 0.020 + GAP_S * k + (STALL_S if number == 3 and k >= 3 else 0.0)
        writes.append((at, sse_event({"content": " tok"}, "length" if k == 5 else None), True))
    writes.append((at, sse_event(None, None, (count_body(body), 6)) + b"data: [DONE]\n\n", False))
    return writes


def test_a_stream_that_stalls_mid_way_and_resumes_is_ok_its_stall_one_gap(tmp_path: Path) -> None:
    """Chat request 3 of 2-5 (1 is the probe) holds its fourth token 0.5 s, then streams on (inside the 5 s
    timeout): it is ok with its 6 tokens (vllm bench serve bounds a request by its total time only,
    `AIOHTTP_TIMEOUT = aiohttp.ClientTimeout(total=6 * 60 * 60)`, no limit on a gap between chunks); its stall is
    one inter-token gap (10 + 500 ms) and its TPOT is its 5 gaps' mean (110 ms), while the cell's median TPOT stays
    the 10 ms of the 3 others."""
    with FakeVllm(wire_script=_stalling) as srv:
        cell, _, measured = bench(srv, tmp_path, request_timeout_s=5.0)
    assert [s.status for s in measured] == ["ok"] * 4 and {s.completion_tokens for s in measured} == {6}
    stalled, sent = measured[1], srv.sent_times[3]
    gaps_ms = [1000 * (b - a) for a, b in zip(stalled.chunk_times, stalled.chunk_times[1:], strict=False)]
    sent_ms = [1000 * (b - a) for a, b in zip(sent, sent[1:], strict=False)]  # the server's writes: the truth
    assert len(gaps_ms) == 5 and max(gaps_ms) > 1000 * STALL_S and agrees(max(gaps_ms), max(sent_ms))
    assert cell.itl_ms.n == 4 * 5 and cell.tpot_ms.median is not None and abs(cell.tpot_ms.median - 10) < 2
    tpot_ms = 1000 * (stalled.chunk_times[-1] - stalled.chunk_times[0]) / 5
    assert tpot_ms > 1000 * (STALL_S + 4 * GAP_S) / 5 and agrees(tpot_ms, 1000 * (sent[-1] - sent[0]) / 5)


def test_an_answer_that_never_comes_fails_at_the_request_timeout_and_the_run_goes_on(tmp_path: Path) -> None:
    """Chat request 3 (1 is the probe) answers its headers, then nothing for 30 s; the request timeout is 1 s: that
    request is failed, timed out, its wait bounded by the timeout (15 s: far below the 30 s, room for a loaded
    machine), and the 3 others are ok."""
    with FakeVllm(itl_s=0.005, ttft_for=lambda n, body: 30.0 if n == 3 else 0.0) as srv:
        cell, _, measured = bench(srv, tmp_path, request_timeout_s=1.0)
    assert [s.status for s in measured] == ["ok", "failed", "ok", "ok"]
    assert measured[1].error == client.TIMED_OUT and 1.0 - 0.01 <= measured[1].t_done - measured[1].t_send < 15.0
    assert cell.requests_failed == 1 and cell.reps[0].whole_run_output_tokens == 3 * 6


@pytest.mark.parametrize(("slo_ms", "answer", "probes"), [(45.0, 3, [1, 2, 4, 3]), (10.0, 0, [1])])
def test_the_slo_search_finds_the_servers_slots_or_says_no_load_passes(
    tmp_path: Path, slo_ms: float, answer: int, probes: list[int]
) -> None:
    """K = 3 slots, each request holding one 20 + 3 x 10 = 50 ms: up to 3 clients every TTFT is the 20 ms set; a
    fourth client's request waits a slot, ~50 ms more (the fake's `slots`). SLO TTFT <= 45 ms at p100: 1, 2 meet,
    4 misses, 3 meets: the answer is K. SLO TTFT <= 10 ms: 1 client already misses (20 ms), and the search says the
    first load missed, answering 0."""
    with FakeVllm(ttft_s=0.020, itl_s=0.010, slots=3) as srv:
        config = BenchConfig(
            base_url=srv.url, contexts=[16], reps=1, output_tokens=4, requests_per_client=2, find_max="clients",
            slo={"ttft_ms": slo_ms}, slo_percentile=100, find_max_limit=16,
        )  # fmt: skip
        result = find_max(config, tmp_path)
    assert result.max_clients == answer and [int(p.load) for p in result.probes] == probes
    for p in result.probes:
        ttft = p.at_percentile_ms["ttft_ms"]
        assert ttft is not None and ttft >= (20 + 50 - 5 if p.load > 3 else 20 - 0.1), (p.load, ttft)
    said = "the first load (1 client) missed the SLOs" if answer == 0 else f"{answer + 1} clients missed the SLOs"
    assert result.bound_reason == said
