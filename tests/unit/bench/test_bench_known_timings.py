"""`onechip bench` against servers whose timings, token counts and failures are set exactly
(tests/fakes/vllm_server.py): every reported figure is the one set, by the definitions vllm bench serve uses
(vllm/benchmarks/serve.py `calculate_metrics` and lib/endpoint_request_func.py, 0.11.0) or the ones the
summary names beside them. The second half scripts the wire byte for byte (`Wire`, the fake's `wire_script`):
the habits of other OpenAI-compatible servers (CRLF, `: ping` comments, events split across writes, no [DONE],
a connection held or dropped after it, per-event or no usage, error chunks of both shapes and `event: error`),
each checked against the figures the script's constants (W_TTFT_S, W_ITL_S, ...) imply.

Each latency figure is checked against what the server did, and TTFT and E2E also against what was set:
never below it (the server writes chunk k at arrival + TTFT + k x ITL or later, and the client's clock starts
before the server's). A gap can be shorter than set (after a late chunk), so TPOT and ITL have no such bound;
their median still comes out at the set value when the writes are on time. Against what the server did: the
fake records when it wrote each chunk (`sent_times`, the same monotonic clock, same process), and the
figure computed from those writes is matched within the issue's 1 ms + 2% (test_bench_client_timing.py);
how far the fake's own writes drift past their deadlines on a loaded machine is its accuracy, not the
bench's. Medians are compared, and the means and p99 a test names. Token and request counts are exact.
As in test_bench_client_timing.py, a cell whose timings miss is measured again, up to ATTEMPTS times: on a
shared 2-core machine the client is sometimes not scheduled for several ms; a systematic error (the role
chunk timed, chunks counted as tokens, the first token in TPOT) misses every time. Each test sends a few
dozen requests per attempt, on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from rich.console import Console

from fakes.vllm_server import FakeVllm, Reply, Shape, WireWrite, count_body, sse_event
from onechip import api
from onechip.bench import client, runner, stats, worker
from onechip.bench.runner import load_samples
from onechip.cli.bench_cmd import print_run
from onechip.cli.main import main
from onechip.report.markdown_bench import grids
from onechip.schemas.bench import BenchConfig, BenchRun, CellResult, RequestSample
from onechip.vllm.wire import bench_chat_body


def at_least(measured_ms: float | None, set_ms: float) -> bool:
    """Never below the set value (0.1 ms of clock rounding)."""
    return measured_ms is not None and measured_ms >= set_ms - 0.1


def agrees(measured_ms: float | None, server_ms: float) -> bool:
    """Within 1 ms + 2% of the same figure computed from the server's record."""
    return measured_ms is not None and abs(measured_ms - server_ms) <= 1.0 + 0.02 * server_ms


def server_record(srv: FakeVllm, measured: list[RequestSample]) -> dict[str, list[float]]:
    """The per-request figures by the server's own chunk writes (ms), over the successful measured requests:
    TTFT (first write - the client's send), TPOT, E2E (last write - send), per-token and per-chunk ITL (between the
    writes of the chunks the client timed, the first len(chunk_times): not a finish chunk at the EOS's step after
    them). Each sample is matched to its chat request by the unique first line of its prompt (stream, seq)."""
    number = {b["messages"][-1]["content"][:12]: n + 1 for n, b in enumerate(srv.chat_requests)}
    out: dict[str, list[float]] = {k: [] for k in ("ttft", "tpot", "e2e", "itl", "itl_chunk")}
    for s in measured:
        if s.status != "ok":
            continue
        sent = srv.sent_times[number[f"{s.stream:05d}-{s.seq:06d}"]]
        out["ttft"].append((sent[0] - s.t_send) * 1000)
        out["e2e"].append((sent[-1] - s.t_send) * 1000)
        if (s.completion_tokens or 0) > 1:
            out["tpot"].append((sent[-1] - sent[0]) * 1000 / ((s.completion_tokens or 0) - 1))
        # ITL is between the chunks with output, never the EOS's finish chunk after them (client._Timing.time_stop_step)
        content = sent[: len(s.chunk_times)]
        per_chunk = s.chunk_tokens or [1] * len(content)
        gaps = [(b - a) * 1000 for a, b in zip(content, content[1:], strict=False)]
        out["itl_chunk"] += gaps
        out["itl"] += [g / k for g, k in zip(gaps, per_chunk[1:], strict=True) for _ in range(k)]
    return out


def bench(srv: FakeVllm, out: Path, **kw: object) -> tuple[CellResult, BenchRun, list[RequestSample]]:
    """One cell through the API (`onechip.api.bench`): context 16, 1 rep, no warm-up unless `kw` says."""
    base: dict[str, object] = dict(
        base_url=srv.url, contexts=[16], clients=[1], reps=1, output_tokens=6, requests_per_client=4,
        warmup_requests=0,
    )  # fmt: skip
    run = api.bench(BenchConfig(**{**base, **kw}), out_dir=out)  # type: ignore[arg-type]
    measured = [s for s in load_samples(out / "requests.jsonl") if not s.warmup]
    return run.cells[0], run, measured


ATTEMPTS = 3
SetMs = dict[str, float]


def check(cell: CellResult, record: dict[str, list[float]], set_ms: SetMs, also: tuple[str, ...] = ()) -> list[str]:
    """Which figures miss: each median named in `set_ms` (`ttft`, `tpot`, `e2e`, `itl`, `itl_chunk`) against
    the server's record, and (TTFT, E2E: absolute deadlines) against the set value; `also` adds the mean or
    p99 of one ("ttft.p99", "itl.mean") against the record. Empty when all hold."""
    bad = []
    for name, value in set_ms.items():
        measured = getattr(cell, f"{name}_ms").median
        server = statistics.median(record[name])
        if not agrees(measured, server) or (name in ("ttft", "e2e") and not at_least(measured, value)):
            bad.append(f"{name}: measured {measured}, server {server:.3f}, set {value}")
    for item in also:
        name, stat = item.split(".")
        measured = getattr(getattr(cell, f"{name}_ms"), stat)
        values = sorted(record[name])
        server = statistics.fmean(values) if stat == "mean" else stats.percentile(values, 99)
        if not agrees(measured, server):
            bad.append(f"{item}: measured {measured}, server {server:.3f}")
    return bad


def measure(
    out: Path, server: dict[str, Any], set_ms: SetMs | Callable[[list[RequestSample]], SetMs],
    also: tuple[str, ...] = (), **cfg: object,
) -> tuple[CellResult, BenchRun, list[RequestSample]]:  # fmt: skip
    """`bench` one cell against a fresh FakeVllm(**server) until `check` holds (set values given, or derived
    from the samples), at most ATTEMPTS times; fails with every attempt's misses."""
    misses = []
    for attempt in range(ATTEMPTS):
        with FakeVllm(**server) as srv:
            cell, run, measured = bench(srv, out / f"attempt-{attempt}", **cfg)
            record = server_record(srv, measured)
        bad = check(cell, record, set_ms if isinstance(set_ms, dict) else set_ms(measured), also)
        if not bad:
            return cell, run, measured
        misses.append(bad)
    pytest.fail(f"timings missed in all {ATTEMPTS} attempts: {misses}")


def whole_run_by_hand(measured: list[RequestSample]) -> tuple[float, int, int]:
    """vllm bench serve's whole-run figures from the raw samples: (duration s, output tokens of the
    successful requests, successful requests); duration from the first send to the last end, failures included."""
    ok = [s for s in measured if s.status == "ok"]
    duration = max(s.t_done or 0.0 for s in measured) - min(s.t_send for s in measured)
    return duration, sum(s.completion_tokens or 0 for s in ok), len(ok)


def test_fixed_ttft_and_itl_are_reported_by_every_definition(tmp_path: Path) -> None:
    """TTFT 40 ms, 10 ms between one-token chunks, 6 tokens, 2 clients x 4 requests. Set: TTFT 40, TPOT
    10 (the first token excluded: (E2E - TTFT) / 5, not E2E / 6 = 15), ITL 10 per token and per chunk,
    E2E 40 + 5 x 10 = 90; tokens from usage, exact; both throughputs from the same tokens."""
    set_ms = dict(ttft=40, tpot=10, e2e=90, itl=10, itl_chunk=10)
    cell, run, measured = measure(tmp_path, dict(ttft_s=0.040, itl_s=0.010), set_ms, ("itl.mean",), clients=[2])
    assert cell.status == "ok" and cell.requests_sent == cell.requests_ok == 8 and cell.requests_failed == 0
    assert {(s.completion_tokens, s.completion_tokens_from, s.finish_reason) for s in measured} == {
        (6, "usage", "length")
    }
    assert cell.prompt_tokens_actual.median == 16 and cell.requests_ended_early == 0
    assert cell.itl_ms.n == cell.itl_chunk_ms.n == 8 * 5  # 5 gaps per request, one token each
    assert at_least(cell.ttft_ms.p99, 40) and at_least(cell.e2e_ms.p99, 90)
    # whole run, as vllm bench serve: output tokens / duration; requests/s counted over the same requests
    duration, tokens, ok = whole_run_by_hand(measured)
    assert tokens == 48 and ok == 8
    assert cell.whole_run_tok_per_s == pytest.approx(tokens / duration)
    assert cell.whole_run_request_rate_per_s == pytest.approx(ok / duration)
    # 2 streams, each at most 6 tokens per 90 ms: no more than 2 x 6 / 0.090 = 133 tok/s over the run
    assert cell.whole_run_tok_per_s <= 2 * 6 / 0.090
    # steady window: requests counted by the share of their tokens inside it, so tok/s / req/s = 6 exactly
    assert cell.output_tok_per_s is not None and cell.request_rate_per_s is not None
    assert cell.output_tok_per_s / cell.request_rate_per_s == pytest.approx(6)
    assert "per-token" in run.itl_convention


def test_lock_stepped_streams_keep_their_last_tokens_in_the_steady_window() -> None:
    """4 clients x 3 requests of 6 one-token chunks (TTFT 40, ITL 10) in lock-step, as the client stamps them: one
    event loop reads the streams one after another, so stream i's chunks and end are stamped i x 0.2 ms after stream
    0's. The window (bench.stats.rep_result) ends at stream 0's last t_done, in the same instant as the others' last
    tokens, and holds every measured token (72). Counted at the stamps, the 3 other streams' last chunks fell after
    the end every time (69 of 72, 4% low); spread over their 10 ms gaps, 0.12 of a token is outside.

    Synthetic stamps, not a live run: a loaded machine desynchronizes real streams (one lagging a chunk loses it, as
    it should), so a run could not tell the rule from the lag (it failed 5 of 8 times under two CPU hogs)."""
    read_lag_s, ttft_s, itl_s, request_s = 0.0002, 0.040, 0.010, 0.090
    samples = []
    for stream in range(4):
        for seq in range(3):
            sent = seq * request_s + stream * read_lag_s
            chunks = [sent + ttft_s + k * itl_s for k in range(6)]
            samples.append(
                RequestSample(
                    context_tokens=16, clients=4, rep=0, stream=stream, seq=seq, t_send=sent, t_first=chunks[0],
                    t_last=chunks[-1], t_done=chunks[-1], completion_tokens=6, chunk_times=chunks,
                    chunk_tokens=[1] * 6,
                )
            )  # fmt: skip
    rep = stats.rep_result(0, samples)
    assert rep.output_tokens == 72
    assert rep.output_tok_per_s * rep.window_s == pytest.approx(72 - (1 + 2 + 3) * read_lag_s / itl_s)


def test_requests_per_second_at_4_clients_is_littles_law(tmp_path: Path) -> None:
    """4 closed-loop streams x 6 requests of 6 tokens (TTFT 40, ITL 10: 90 ms each). A stream ends a request and
    sends the next (its turnaround), so the run serves 4 / (mean E2E + mean turnaround) requests/s (Little's law,
    ~44/s), and 6 x that tok/s. Issue 22 read requests/s 17-21% low at clients > 1; both definitions are within
    2% here (the whole run also holds the ramp and the drain) when the streams start together: a stream sent late on
    a loaded machine lengthens the ramp (the whole run's 40.8/s against 42.1 once under load), so each attempt is
    checked whole, ATTEMPTS at most, as `measure` does."""
    set_ms = dict(ttft=40, tpot=10, e2e=90)
    misses = []
    for attempt in range(ATTEMPTS):
        with FakeVllm(ttft_s=0.040, itl_s=0.010) as srv:
            cell, _, measured = bench(srv, tmp_path / f"a{attempt}", clients=[4], requests_per_client=6)
            record = server_record(srv, measured)
        by_stream = [sorted((s for s in measured if s.stream == i), key=lambda s: s.seq) for i in range(4)]
        turns = [b.t_send - (a.t_done or 0.0) for x in by_stream for a, b in zip(x, x[1:], strict=False)]
        littles = 4 / (statistics.fmean((s.t_done or 0.0) - s.t_send for s in measured) + statistics.fmean(turns))
        rates = [cell.request_rate_per_s, cell.whole_run_request_rate_per_s, (cell.output_tok_per_s or 0) / 6]
        bad = check(cell, record, set_ms)
        if not bad and all(rate == pytest.approx(littles, rel=0.02) for rate in rates):
            return
        misses.append((bad, littles, rates))
    pytest.fail(f"timings or Little's law missed in all {ATTEMPTS} attempts: {misses}")


STREAM_TTFT_S = {0: 0.030, 1: 0.035, 2: 0.060}  # E2E 80, 85, 110 ms with 6 tokens 10 ms apart


def _stream_ttft_s(number: int, body: dict[str, Any]) -> float:
    """TTFT by stream (the prompt's first line starts with its number; the probe's does not: stream 0's)."""
    head = body["messages"][-1]["content"][:5]
    return STREAM_TTFT_S[int(head) if head.isdigit() else 0]


def test_goodput_is_the_request_rate_of_the_streams_meeting_the_slo(tmp_path: Path) -> None:
    """3 closed-loop streams x 5 requests of 6 tokens, ITL 10, TTFT 30, 35 and 60 ms by stream (STREAM_TTFT_S),
    starting together after their warm-up. Each stream serves 1 / (its E2E + turnaround) requests/s (Little's law
    per stream: ~12.3, 11.6 and 9.0/s); --slo ttft_ms=50 passes streams 0 and 1 alone, so goodput is their two
    rates, and with every request good (ttft_ms=1000) it is requests/s itself. The window ends with stream 0's
    5th request (~400 ms), while stream 1's 5th (sent ~340 ms, tokens from ~375) and stream 2's 4th (~330, from
    ~390) are streaming: counting only the requests that ended inside the window left them out, ~22.5/s
    (9 / 0.4 s) of goodput where streams 0 and 1 serve ~24, and goodput differed from requests/s with every
    request good."""
    misses = []
    for attempt in range(ATTEMPTS):
        with FakeVllm(ttft_for=_stream_ttft_s, itl_s=0.010) as srv:
            cell, _, measured = bench(srv, tmp_path / f"a{attempt}", clients=[3], requests_per_client=5,
                                      warmup_requests=1, slo={"ttft_ms": 50})  # fmt: skip
        samples = load_samples(tmp_path / f"a{attempt}" / "requests.jsonl")
        by_stream = [sorted((s for s in measured if s.stream == i), key=lambda s: s.seq) for i in range(3)]
        rates = [  # each stream's sends are one E2E + turnaround apart
            1 / statistics.fmean([b.t_send - a.t_send for a, b in zip(x, x[1:], strict=False)]) for x in by_stream
        ]
        every = stats.summarize_cell(cell, {0: samples}, 6, {"ttft_ms": 1000})
        assert every.goodput_per_s == pytest.approx(cell.request_rate_per_s)  # every request good: requests/s
        if cell.goodput_per_s == pytest.approx(rates[0] + rates[1], rel=0.03):
            return
        misses.append((cell.goodput_per_s, rates))
    pytest.fail(f"goodput is not streams 0 and 1's rate in all {ATTEMPTS} attempts: {misses}")


def test_per_request_ttft_mean_median_and_p99(tmp_path: Path) -> None:
    """TTFT set per request: 60 ms for even chat request numbers, 20 for odd (the probe is 1), 8 measured
    requests, 4 of each. Set: mean 40, median 40 (between the two groups), p99 60 (inside the top group); the
    decode part is unchanged (ITL 10)."""
    server = dict(ttft_for=lambda n, body: 0.060 if n % 2 == 0 else 0.020, itl_s=0.010)
    also = ("ttft.mean", "ttft.p99")
    cell, _, measured = measure(tmp_path, server, dict(ttft=40, itl=10, tpot=10), also, requests_per_client=8,
                                output_tokens=3)  # fmt: skip
    assert sorted((stats.ttft_ms(s) or 0) >= 60 - 0.1 for s in measured) == [False] * 4 + [True] * 4
    assert cell.ttft_ms.n == 8 and at_least(cell.ttft_ms.mean, 40) and at_least(cell.ttft_ms.p99, 60)


@pytest.mark.parametrize("context", [32, 512])
def test_prefill_cost_per_prompt_token_shows_in_ttft_at_each_context(tmp_path: Path, context: int) -> None:
    """A prefill of 20 ms + 0.1 ms per prompt token (the server's own count, `count_body`), then 6 tokens
    10 ms apart. The bench builds each prompt to `context` tokens as the server counts them, so TTFT is
    20 + 0.1 x context (23.2 ms at 32, 71.2 at 512), E2E that + 5 x 10, and the decode figures do not move."""
    server = dict(ttft_for=lambda n, body: 0.020 + 0.0001 * count_body(body), itl_s=0.010)
    ttft = 20 + 0.1 * context
    cell, _, measured = measure(tmp_path, server, dict(ttft=ttft, e2e=ttft + 50, tpot=10, itl=10), ("ttft.p99",),
                                contexts=[context])  # fmt: skip
    assert {s.prompt_tokens for s in measured} == {context} and cell.prompt_tokens_actual.median == context
    assert at_least(cell.ttft_ms.p99, ttft)


def test_several_tokens_per_chunk_and_empty_chunks(tmp_path: Path) -> None:
    """Chunks of 2 tokens 15 ms apart, the second with content "" (its tokens still counted by the server's
    per-chunk usage), finish_reason in its own empty chunk. Set: TTFT 30; per-token ITL 15 / 2 = 7.5 (4 per
    request); per-chunk ITL 15 (vllm bench serve's, 2 per request); TPOT 30 ms / 5 tokens = 6."""
    server = dict(ttft_s=0.030, itl_s=0.015, chunk_plan=[2, 2, 2], empty_chunks={1}, finish_chunk=True)
    cell, _, measured = measure(tmp_path, server, dict(ttft=30, tpot=6, itl=7.5, itl_chunk=15))
    assert all(s.chunk_tokens == [2, 2, 2] and s.completion_tokens == 6 for s in measured)
    assert all(s.finish_reason == "length" for s in measured)  # read from the separate finish chunk
    assert (cell.itl_ms.n, cell.itl_chunk_ms.n) == (4 * 4, 4 * 2)


@pytest.mark.parametrize(
    ("usage", "has_tokenize", "counted_by"), [("final_only", True, "usage"), ("never", False, "chunks")]
)
def test_an_empty_content_chunk_without_usage_is_a_token_as_vllm_bench_counts_it(
    tmp_path: Path, usage: str, has_tokenize: bool, counted_by: str
) -> None:
    """Six one-token chunks 10 ms apart, the first and the fourth with content "" (tokens that decode to no
    text), no per-chunk usage. vllm bench serve times a `content: ""` delta without a role as a token chunk
    (vllm/benchmarks/lib/endpoint_request_func.py `_choice_has_streamed_output`, vLLM 0.34.0): TTFT 30 at the
    empty first chunk, not 40; 5 gaps of 10 ms per request, not 3 (with a 20 ms one); without usage and
    /tokenize one token per chunk counts 6, not 4. The role chunk (content "" with the role) stays out."""
    server = dict(ttft_s=0.030, itl_s=0.010, empty_chunks={0, 3}, usage=usage, has_tokenize=has_tokenize)
    cell, _, measured = measure(tmp_path, server, dict(ttft=30, itl_chunk=10, tpot=10))
    assert all(len(s.chunk_times) == 6 and s.chunk_tokens == [] for s in measured)
    assert {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {(6, counted_by)}
    assert cell.itl_chunk_ms.n == 4 * 5


def test_without_per_chunk_usage_itl_is_per_chunk_and_tokens_come_from_the_final_usage(tmp_path: Path) -> None:
    server = dict(ttft_s=0.030, itl_s=0.015, chunk_plan=[2, 2, 2], usage="final_only")
    cell, run, measured = measure(tmp_path, server, dict(tpot=6, itl_chunk=15))
    assert all(s.chunk_tokens == [] and s.completion_tokens == 6 for s in measured)
    assert cell.itl_ms.n == cell.itl_chunk_ms.n == 4 * 2 and cell.itl_ms == cell.itl_chunk_ms
    assert any("no per-chunk usage" in n for n in run.notes)


def test_usage_on_the_last_choice_chunk_counts_the_request(tmp_path: Path) -> None:
    """Usage on the finish_reason chunk instead of a usage-only chunk: the counts are the request's (6 output,
    16 prompt), not one chunk's, and the chunk is timed as the content it carries."""
    with FakeVllm(itl_s=0.002, chunk_plan=[2, 2, 2], usage="on_last_choice") as srv:
        cell, _, measured = bench(srv, tmp_path, requests_per_client=2)
    assert {(s.completion_tokens, s.prompt_tokens, s.completion_tokens_from) for s in measured} == {(6, 16, "usage")}
    assert all(len(s.chunk_times) == 3 and s.chunk_tokens == [] for s in measured) and cell.itl_chunk_ms.n == 2 * 2


@pytest.mark.parametrize(
    ("has_tokenize", "tokens", "counted_by"),
    [(True, 6, "tokenize"), (False, 3, "chunks")],  # no /tokenize: one per chunk, 3 chunks of 2 tokens
)
def test_a_server_without_usage_is_counted_as_vllm_bench_counts_it(
    tmp_path: Path, has_tokenize: bool, tokens: int, counted_by: str
) -> None:
    with FakeVllm(itl_s=0.002, chunk_plan=[2, 2, 2], usage="never", has_tokenize=has_tokenize) as srv:
        cell, run, measured = bench(srv, tmp_path, requests_per_client=2)
    assert cell.status == "ok" and cell.requests_ok == 2
    assert {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {(tokens, counted_by)}
    assert cell.reps[0].whole_run_output_tokens == 2 * tokens
    assert any(n.startswith("server sent no usage") for n in run.notes)
    assert cell.requests_ended_early == 0  # finish_reason "length": max_tokens reached, whatever was counted


def test_failed_requests_are_recorded_never_dropped_nor_timed(tmp_path: Path) -> None:
    """8 requests of one stream (chat requests 2-9; 1 is the probe): HTTP 500, HTTP 429, a stream cut after 2
    chunks and one that stalls past the 0.4 s timeout. 4 ok, 4 failed, in that order; the latencies and
    tokens are those of the 4 that succeeded: counted, the stall would lift the E2E mean to at least
    (4 x 80 + 400) / 5 = 144 ms."""
    server = dict(ttft_s=0.030, itl_s=0.010, fail_status={3: 500, 5: 429}, cut_requests={6}, stall_requests={8},
                  stall_s=5.0)  # fmt: skip
    cell, _, measured = measure(tmp_path, server, dict(ttft=30, e2e=80), requests_per_client=8, request_timeout_s=0.4)
    assert [s.status for s in measured] == ["ok", "failed", "ok", "failed", "failed", "ok", "failed", "ok"]
    errors = [s.error or "" for s in measured if s.status == "failed"]
    assert [e.split(":")[0] for e in errors] == ["HTTP 500", "HTTP 429", "ClientPayloadError", "TimeoutError"]
    assert cell.status == "ok" and (cell.requests_sent, cell.requests_ok, cell.requests_failed) == (8, 4, 4)
    assert cell.first_error is not None and cell.first_error.startswith("HTTP 500")
    assert cell.ttft_ms.n == cell.e2e_ms.n == cell.tpot_ms.n == 4 and cell.itl_ms.n == 4 * 5
    assert cell.e2e_ms.mean is not None and cell.e2e_ms.mean < (4 * 80 + 400) / 5
    duration, tokens, ok = whole_run_by_hand(measured)
    assert (tokens, ok) == (4 * 6, 4) and cell.reps[0].whole_run_output_tokens == 24
    assert cell.whole_run_request_rate_per_s == pytest.approx(4 / duration)
    assert cell.whole_run_tok_per_s == pytest.approx(24 / duration)
    assert duration >= 0.4  # the run's duration includes the time the failures took, as vllm bench serve's


def test_a_request_refused_at_once_does_not_close_the_steady_window(tmp_path: Path) -> None:
    """4 clients x 1 request, TTFT 50 ms, 5 one-token chunks 10 ms apart; chat request 2 (the first measured: 1
    is the probe) is refused at once (HTTP 500). The other three streams answer 3 x 5 tokens over one request's
    span (>= 50 + 4 x 10 = 90 ms, their E2E): the steady window is that span, from the last send to the first end,
    and its tokens those that arrived in it (15 when the three sends fall within one TTFT of each other; a loaded
    machine staggers them and the first stream's early tokens fall before the window: 14 seen in a run beside seven
    test suites). A failed request's end bounded the window: it closed ~1 ms after it opened, with no
    token in it (0 tok/s)."""
    with FakeVllm(ttft_s=0.050, itl_s=0.010, fail_status={2: 500}) as srv:
        cell, _, measured = bench(srv, tmp_path, clients=[4], requests_per_client=1, output_tokens=5)
    assert cell.status == "ok" and (cell.requests_ok, cell.requests_failed) == (3, 1)
    ok = [s for s in measured if s.status == "ok"]
    start, end = max(s.t_send for s in ok), min(s.t_done or 0.0 for s in ok)
    rep = cell.reps[0]
    assert rep.window_s == pytest.approx(end - start) and at_least(rep.window_s * 1000, 90)
    # one token a chunk; the window counts a chunk whose gap straddles its start by the gap's share inside
    # (schemas.figures.tokens_between), so between the chunks stamped inside and all 15
    arrived = sum(start <= t <= end for s in ok for t in s.chunk_times)
    assert 4 <= arrived <= rep.output_tokens <= 15  # the last-sent stream's 5 come inside a window >= 90 ms
    assert rep.output_tok_per_s * rep.window_s == pytest.approx(rep.output_tokens, abs=0.5)
    # requests/s counts each request by the share of its tokens inside the window (stats.request_share), as tok/s
    # counts them: 3 / window only when all 15 arrived inside (a loaded machine's staggered sends read 8.3 against 25)
    assert cell.request_rate_per_s == pytest.approx(rep.output_tok_per_s / 5, rel=1e-6)


def _queued(measured: list[RequestSample]) -> SetMs:
    """One slot, two streams: each request but the first is admitted when its own stream's previous one
    ended, so its TTFT is the other's 50 ms plus its own 20, less this client's turnaround (end to next send)."""
    by_stream = [sorted((s for s in measured if s.stream == i), key=lambda s: s.seq) for i in (0, 1)]
    turn_ms = max((b.t_send - (a.t_done or 0.0)) * 1000 for x in by_stream for a, b in zip(x, x[1:], strict=False))
    return dict(ttft=70 - turn_ms, tpot=10, e2e=100 - turn_ms)


def test_queueing_behind_limited_slots_shows_in_ttft(tmp_path: Path) -> None:
    """One slot, two closed-loop clients, 3 requests each; a request holds the slot for 20 + 3 x 10 = 50 ms.
    Every request but the first waits for the other stream's (`_queued`): TTFT ~70 ms, the first 20. TPOT
    untouched (10); one slot makes 4 tokens per 50 ms = 80 tok/s at most."""
    server = dict(ttft_s=0.020, itl_s=0.010, slots=1)
    cell, _, measured = measure(tmp_path, server, _queued, clients=[2], requests_per_client=3, output_tokens=4)
    first = min(measured, key=lambda s: s.t_send)
    # it found the slot free: its first token came before any other request ended and freed the slot (an order,
    # not a TTFT under 70 ms, which a pause on a loaded machine could fail)
    assert at_least(stats.ttft_ms(first), 20) and first.chunk_times[0] < min(
        s.t_done or 0.0 for s in measured if s is not first
    )
    duration, tokens, _ = whole_run_by_hand(measured)
    assert tokens == 24 and at_least(duration * 1000, 6 * 50)  # six 50 ms turns of the one slot
    assert cell.whole_run_tok_per_s is not None and cell.whole_run_tok_per_s <= 80


@pytest.mark.parametrize(("usage", "counted_by"), [("as_asked", "usage"), ("never", "chunks")])
def test_max_tokens_honoured_or_stopped_early(tmp_path: Path, usage: str, counted_by: str) -> None:
    server = dict(ttft_s=0.020, itl_s=0.010, stop_after=3, usage=usage, has_tokenize=False)
    cell, _, measured = measure(tmp_path, server, dict(tpot=10), requests_per_client=2)
    assert {(s.completion_tokens, s.finish_reason, s.completion_tokens_from) for s in measured} == {
        (3, "stop", counted_by)
    }
    assert cell.requests_ended_early == 2 and cell.status == "ok" and cell.reps[0].whole_run_output_tokens == 6


def test_a_server_sending_more_than_max_tokens_is_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """max_tokens 6, the server streams 8 one-token chunks and reports usage 8: the run flags both requests as
    over max_tokens (counted as reported, never as ended early), and the CLI and report.md say so."""
    with FakeVllm(itl_s=0.002, extra_tokens=2) as srv:
        cell, run, measured = bench(srv, tmp_path / "run", requests_per_client=2)
    assert {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {(8, "usage")}
    assert (cell.requests_over_max_tokens, cell.requests_ended_early) == (2, 0)
    assert cell.reps[0].whole_run_output_tokens == 16
    assert "- 16 ctx × 1 client: 2 got more than max_tokens (usage)" in grids(run)
    with FakeVllm(itl_s=0.002) as srv:  # the server honours max_tokens: nothing flagged
        honoured, _, _ = bench(srv, tmp_path / "honoured", requests_per_client=2)
    assert honoured.requests_over_max_tokens == 0
    out = Console(record=True, width=200)
    print_run(run, out)
    assert "2 requests got more tokens than max_tokens" in out.export_text()


@pytest.mark.parametrize(
    ("reply", "tokens", "finish"),
    [
        (Reply(reasoning="r1 r2 r3", content="a b c"), 6, "stop"),
        (Reply(tool_calls=[("count_ids", '{"ids": [1, 2, 3]}')]), 4, "tool_calls"),
    ],
)
def test_reasoning_and_tool_call_deltas_start_ttft_and_count(
    tmp_path: Path, reply: Reply, tokens: int, finish: str
) -> None:
    """The first reasoning (or tool-call) chunk is the first token: TTFT 30 ms, not the next content chunk.

    The rule for a tool call: its first delta (OpenAI streaming: index, id, type, function.name, arguments
    "") comes once the server's tool parser has read the name the model generated, so it is generated output
    and ends TTFT even when the server's per-chunk usage puts the name's tokens in a later chunk (the fake
    gives it 0); vllm bench serve counts it the same way (`delta.get("tool_calls")` in
    `_choice_has_streamed_output`, vllm/benchmarks/lib/endpoint_request_func.py, vLLM 0.34.0)."""
    server = dict(replies=lambda body: reply, ttft_s=0.030, itl_s=0.010)
    _, _, measured = measure(tmp_path, server, dict(ttft=30, itl_chunk=10), requests_per_client=2)
    assert {(s.completion_tokens, s.finish_reason) for s in measured} == {(tokens, finish)}
    if reply.tool_calls:  # the name chunk is timed though its usage added no token: it is the first chunk
        assert all(s.chunk_tokens[0] == 0 and len(s.chunk_times) == 1 + tokens for s in measured)


def test_two_worker_processes_measure_over_one_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes start apart (here the second 6 s late; on a loaded machine it happens by itself); the
    measured requests still start together, so the steady window (every stream busy) spans most of the run and
    the whole run is one cell's worth of work (4 streams x 3 requests of 20 + 3 x 10 = 50 ms: >= 150 ms, not the
    6.15 s of two halves run one after the other). Without the shared start the window would be empty. The
    bounds leave a shared machine's scheduling room (CI runs on 2 cores): 3 s, far from both 0.15 s and 6.15 s,
    and half the run."""
    late = "import os, time\ntry:\n    os.close(os.open(%r, os.O_CREAT | os.O_EXCL))\nexcept FileExistsError:\n"
    late = late % str(tmp_path / "first-worker") + "    time.sleep(6.0)\n"
    monkeypatch.setattr(worker, "WORKER_ARGV", [*worker.WORKER_ARGV[:2], late + worker.WORKER_ARGV[2]])
    with FakeVllm(ttft_s=0.020, itl_s=0.010) as srv:
        cell, _, measured = bench(srv, tmp_path, clients=[4], requests_per_client=3, output_tokens=4, workers=2)
    rep = cell.reps[0]
    assert rep.window_s >= 0.5 * rep.whole_run_s and 0.150 <= rep.whole_run_s < 3.0
    assert at_least(cell.ttft_ms.median, 20)
    assert len({s.stream for s in measured}) == 4 and cell.requests_ok == 12


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_mid_cell_keeps_what_was_measured_and_resume_completes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], signum: signal.Signals, code: int
) -> None:
    """`onechip bench` (the CLI's own entry and SIGTERM handler) gets SIGTERM, or Ctrl-C's SIGINT, in its
    second repetition: it exits 128 + the signal's number (the shell's convention: 143, 130) with what it
    measured on disk; `--resume` keeps the complete repetition as measured (the same samples, not re-sent) and
    measures the torn one again, its first samples kept apart."""
    out = tmp_path / "run"
    lines = out / "requests.jsonl"

    def terminate_in_rep_1() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if lines.exists() and len(lines.read_text().splitlines()) >= 8:  # rep 0 (6) + 2 of rep 1
                break
            time.sleep(0.002)
        os.kill(os.getpid(), signum)

    previous = signal.getsignal(signal.SIGTERM)
    try:
        with FakeVllm(ttft_s=0.010, itl_s=0.010) as srv:
            args = ["bench", srv.url, "--contexts", "16", "--clients", "2", "--reps", "2", "--output-tokens", "4"]
            args += ["--requests-per-client", "3", "--warmup-requests", "0", "--out", str(out)]
            killer = threading.Thread(target=terminate_in_rep_1)
            killer.start()
            with pytest.raises(SystemExit) as stopped:
                main(args)
            killer.join()
            err = capsys.readouterr().err
            assert stopped.value.code == code, err
            assert "resume it (--resume" in err
            kept = load_samples(lines)
            assert 8 <= len(kept) < 12
            with pytest.raises(SystemExit) as finished:
                main(["bench", "--resume", str(out), "--json"])
            assert finished.value.code == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    printed = json.loads(capsys.readouterr().out)
    run = BenchRun.model_validate_json((out / "summary.json").read_text())
    cell = run.cells[0]
    assert cell.status == "ok" and len(cell.reps) == 2 and cell.requests_sent == cell.requests_ok == 12
    assert printed["cells"][0]["requests_ok"] == 12
    final = load_samples(lines)
    rep0 = sorted((s.stream, s.seq, s.t_send) for s in kept if s.rep == 0)
    assert sorted((s.stream, s.seq, s.t_send) for s in final if s.rep == 0) == rep0  # reused, not re-sent
    replaced = load_samples(out / "requests.replaced.jsonl")
    assert len(replaced) == len(kept) - 6 and all(s.rep == 1 for s in replaced)


# -- wire habits of other OpenAI-compatible servers (FakeVllm.wire_script) ---------------------------------
# The script's constants: the role event at once, content event k at W_TTFT_S + k x W_ITL_S after the request
# arrived, one word per token (so the fake's /tokenize counts them), finish_reason on the last, then a
# usage-only event and [DONE] in one write at the last event's time.
W_TTFT_S, W_ITL_S, W_SPLIT_S, W_LINGER_S = 0.030, 0.010, 0.004, 0.600
W_TIMEOUT_S = 0.4  # the client's request timeout: a connection held W_LINGER_S is held past it
ENGINE_DIED = "engine died"  # the error event's message, in both shapes


@dataclass(frozen=True)
class Wire:
    """One scripted event stream (a `FakeVllm.wire_script`), with one server habit switched on or off."""

    plan: tuple[int, ...] = (1, 1, 1, 1)  # tokens per content event
    field: str = "content"  # the delta field the tokens come in: content, or reasoning (two spellings)
    thinks: int = 0  # a reasoning field: only the first `thinks` content events carry it, the later ones content
    # per_event: on each content event, not on the role's; on_finish: on the finish_reason's event alone
    usage: Literal["final", "per_event", "on_finish", "none"] = "final"
    role_usage: int | None = None  # per_event: completion tokens the role event's usage reports
    finish: str | None = "length"
    done: int = 1  # how many `data: [DONE]` end it: 0, 1, or 2 (a proxy that repeats the upstream's)
    crlf: bool = False
    ping: bool = False  # a `: ping` comment and an empty `data:` keep-alive before every event
    split: bool = False  # every event written in two pieces W_SPLIT_S apart (complete at the second)
    after_done: Literal["hold", "drop"] | None = None  # the connection held open W_LINGER_S after [DONE], or dropped
    head: bytes = b""  # lines before every event: `event:` / `id:`
    bare: bool = False  # `data:` without the space
    multiline: bool = False  # every event's JSON over two `data:` lines (the SSE spec joins them with a newline)
    # after the second content event: an error chunk (vLLM's shape or older vLLM's flat one) or an `event: error`
    # event (`{"message": ...}` or bare text), each followed by [DONE] as vLLM sends it; vLLM's error object written
    # raw, without `data:` (then [DONE], or the body's end); or the connection dropped
    error: Literal["openai", "flat", "openrouter", "event", "event_text", "bare", "bare_end", "cut"] | None = None
    message: str = ENGINE_DIED  # the error's message
    # a server that sleeps before every event: the finish_reason in its own empty-delta event W_ITL_S after the last
    # content event, the final usage and [DONE] W_ITL_S after that (no token in either: E2E ends before them)
    late_finish: bool = False
    # how the server writes its chunks (fakes.vllm_server.Shape): tgi sends no opening role event and names the role
    # on every event; llamacpp opens with `content: null`
    shape: Shape = "vllm"
    # the last content event is a special token, the EOS, that decodes to no text (`content: ""`; finish "stop"): a
    # server that ignores ignore_eos (TGI has no such field) ends every answer so; usage counts the token
    eos: bool = False
    # the finish_reason on an event of its own, `content: ""`, written with the last content event (Ollama's Done
    # response at a length stop: no token, and usage does not count one)
    trailer: bool = False
    # the finish_reason on an event of its own with an empty delta, `{}` (OpenAI's final chunk; Ollama since #17485,
    # 2026-08: middleware/openai.go writes openai.FinishChunk for the Done response; llama.cpp's server, whose EOS
    # decodes to no text, ends in send_final_response): "eos", at the EOS's step W_ITL_S after the last content event,
    # finish "stop", with the final usage and [DONE], usage counting the EOS (Ollama's eval_count is llama-server's
    # timings.predicted_n, its slot.n_decoded, incremented before process_token checks for the EOS); "with_last", in
    # the last content event's write, with `finish`, no token (Ollama's at a length stop; OpenAI's own final chunk; a
    # server whose stream batches several tokens a chunk, spec decoding or a stream interval, ending "stop" so)
    finish_event: Literal["eos", "with_last"] | None = None
    # content events written as `delta: {}` though their tokens are counted (usage rises on them): a token the server's
    # tool or reasoning parser gives no text (vLLM 0.34 chat_completion/serving.py sends `DeltaMessage()` for it when
    # logprobs or return_token_ids are asked, else skips the chunk). No output, so no token event in the record
    blank: tuple[int, ...] = ()

    def __call__(self, number: int, body: dict[str, Any]) -> list[WireWrite]:
        prompt, end = count_body(body), b"\r\n" if self.crlf else b"\n"
        role_usage = None if self.role_usage is None else (prompt, self.role_usage)
        opening = {"role": "assistant", "content": None if self.shape == "llamacpp" else ""}
        writes = [] if self.shape in ("tgi", "ollama") else [(0.0, self.event(opening, None, role_usage), False)]
        writes = [] if self.finish_event and self.shape == "ollama17485" else writes  # its role on the first token
        done = 0
        for k, tokens in enumerate(self.plan):
            at = W_TTFT_S + k * W_ITL_S
            if self.error is not None and k == 2:
                return [*writes, (at, None if self.error == "cut" else self.error_event(), False)]
            done += tokens
            last = k == len(self.plan) - 1 and not self.late_finish
            usage = (prompt, done) if self.usage == "per_event" or (self.usage == "on_finish" and last) else None
            text = "" if self.eos and k == len(self.plan) - 1 else "w " * tokens
            finish = self.finish if last and not self.trailer and not self.finish_event else None
            trailer = self.event({"content": ""}, self.finish) if last and self.trailer else b""
            trailer += self.event({}, self.finish) if last and self.finish_event == "with_last" else b""
            role = {"role": "assistant"} if k == 0 and self.shape == "ollama17485" else {}
            field = "content" if self.thinks and k >= self.thinks else self.field
            if k in self.blank:
                writes.append((at, self.event({}, finish, usage) + trailer, False))
                continue
            writes += self.pieces(at, self.event({**role, field: text}, finish, usage) + trailer)
        if self.finish_event == "eos":  # the EOS's step: its token counted, the rest written with it
            done += 1
            usage = (prompt, done) if self.usage in ("per_event", "on_finish") else None
            tail = self.event(None, None, (prompt, done)) if self.usage == "final" else b""
            tail += (b"data: [DONE]" + end + end) * self.done
            # a token's step in the server's record only where usage counts it: without usage nothing tells it
            writes.append((writes[-1][0] + W_ITL_S, self.event({}, "stop", usage) + tail, self.usage != "none"))
            return writes
        if self.late_finish:
            usage = (prompt, done) if self.usage in ("per_event", "on_finish") else None
            writes.append((writes[-1][0] + W_ITL_S, self.event({}, self.finish, usage), False))
        tail = self.event(None, None, (prompt, done)) if self.usage == "final" else b""
        tail += (b"data: [DONE]" + end + end) * self.done
        writes.append((writes[-1][0] + (W_ITL_S if self.late_finish else 0.0), tail, False))
        if self.after_done is not None:
            writes.append((writes[-1][0] + W_LINGER_S, b"" if self.after_done == "hold" else None, False))
        return writes

    def event(
        self, delta: dict[str, Any] | None, finish: str | None = None, usage: tuple[int, int] | None = None
    ) -> bytes:
        data = sse_event(delta, finish, usage, crlf=self.crlf, shape=self.shape)
        keep_alive = b": ping\n\ndata:\n\n" if self.ping else b""
        if self.multiline:
            data = data.replace(b', "choices"', b"," + (b"\r\n" if self.crlf else b"\n") + b'data: "choices"', 1)
        return keep_alive + self.head + (data.replace(b"data: ", b"data:", 1) if self.bare else data)

    def pieces(self, at: float, data: bytes) -> list[WireWrite]:
        if not self.split:
            return [(at, data, True)]
        return [(at, data[: len(data) // 2], False), (at + W_SPLIT_S, data[len(data) // 2 :], True)]

    def error_event(self) -> bytes:
        """The error, then [DONE]: vLLM's chat stream generator writes `data: {error}` and then `data: [DONE]`
        (entrypoints/openai/chat_completion/serving.py `chat_completion_stream_generator`, its `except` branches;
        the body is ErrorResponse `{"error": {"message", "type", "param", "code"}}`, serve/engine/protocol.py;
        0.32.0 wheel). `openrouter` is a chunk with the error beside its choices, finish_reason "error"
        (openrouter.ai/docs "Errors", "Mid-Stream Errors"). `event` and `event_text` are the SSE spec's error event
        type, with a payload that is no error chunk: `{"message": ...}` or bare text (other servers')."""
        info = {"message": self.message, "type": "InternalServerError", "param": None, "code": 500}
        body = {"error": info} if self.error == "openai" else {"object": "error", **info}
        if self.error == "openrouter":
            choice = {"index": 0, "delta": {"content": ""}, "finish_reason": "error"}
            body = {"id": "chatcmpl-w", "object": "chat.completion.chunk", "error": info, "choices": [choice]}
        data = {
            "event": "event: error\ndata: " + json.dumps({"message": self.message}),
            "event_text": f"event: error\ndata: {self.message}",
            "bare": json.dumps(body),
            "bare_end": json.dumps(body),
        }.get(str(self.error), f"data: {json.dumps(body)}")
        return data.encode() + (b"\n" if self.error == "bare_end" else b"\n\ndata: [DONE]\n\n")

    def set_ms(self) -> SetMs:
        """The figures the script implies, ms: TTFT at the first content event (complete at its second piece
        when split), TPOT (E2E - TTFT) / (tokens - 1), E2E at the last event (not after a lingering close), ITL
        per chunk the script's gap; per token, the gap / the tokens of the event after it."""
        timed = self.timed()  # the content events' indexes: a blank event is no chunk with output
        ttft = (W_TTFT_S + timed[0] * W_ITL_S + (W_SPLIT_S if self.split else 0.0)) * 1000
        decode = (timed[-1] - timed[0]) * W_ITL_S * 1000
        gaps = [(b - a) * W_ITL_S * 1000 for a, b in zip(timed, timed[1:], strict=False)]
        # per token: a chunk's gap over the tokens counted since the chunk before it (a blank event's with the next)
        per_token = [g / self.since(a, b) for g, a, b in zip(gaps, timed, timed[1:], strict=False)]
        per_token = [g for g, a, b in zip(per_token, timed, timed[1:], strict=False) for _ in range(self.since(a, b))]
        per_token = per_token if self.usage == "per_event" else gaps
        out = dict(ttft=ttft, e2e=ttft + decode, itl_chunk=statistics.median(gaps), itl=statistics.median(per_token))
        return {**out, "tpot": decode / (sum(self.plan) - 1)}

    def timed(self) -> list[int]:
        """The indexes of the content events a client times: those with output (not `blank`)."""
        return [k for k in range(len(self.plan)) if k not in self.blank]

    def since(self, a: int, b: int) -> int:
        """Tokens counted from after content event `a` through event `b`: what usage adds on `b`'s chunk."""
        return sum(self.plan[a + 1 : b + 1])


@pytest.mark.parametrize(
    ("wire", "counted_by"),
    [
        (Wire(), "usage"),
        (Wire(crlf=True), "usage"),
        (Wire(ping=True), "usage"),
        (Wire(split=True), "usage"),
        (Wire(done=False), "usage"),
        (Wire(done=False, after_done="hold"), "usage"),  # the answer whole at the final usage, then a stall
        (Wire(after_done="hold"), "usage"),
        (Wire(after_done="drop"), "usage"),  # the body torn after [DONE]: the answer was whole
        (Wire(head=b"event: message\nid: 7\n", bare=True), "usage"),
        (Wire(multiline=True), "usage"),
        (Wire(multiline=True, crlf=True, split=True), "usage"),
        (Wire(usage="on_finish"), "usage"),  # usage on the finish_reason's event, no final usage chunk
        (Wire(usage="on_finish", done=False, after_done="hold"), "usage"),  # ... then a stall: whole there
        (Wire(usage="none"), "tokenize"),
        (Wire(usage="none", finish=None), "tokenize"),  # [DONE] alone ends the answer
        (Wire(plan=(1, 3, 2), usage="per_event"), "usage"),
        (Wire(plan=(1, 3, 2), usage="per_event", role_usage=0), "usage"),  # vLLM's continuous usage
        (Wire(usage="per_event", role_usage=1), "usage"),  # the first token counted on the role event too
        (Wire(plan=(2, 2, 2)), "usage"),  # final usage only: ITL per chunk, TPOT per token
        (Wire(field="reasoning"), "usage"),  # newer vLLM reasoning parsers
        (Wire(field="reasoning_content", usage="none"), "tokenize"),  # older ones; reasoning tokens counted too
        (Wire(late_finish=True), "usage"),  # E2E at the last token, not at the finish or usage event after it
        (Wire(late_finish=True, usage="none", ping=True), "tokenize"),
        (Wire(eos=True, finish="stop"), "usage"),  # vLLM's EOS chunk: `content: ""`, no role
        (Wire(shape="sglang"), "usage"),
        (Wire(shape="sglang", eos=True, finish="stop"), "usage"),  # `role: null` beside it
        (Wire(shape="sglang", field="reasoning_content", plan=(2, 1, 1), usage="per_event"), "usage"),
        (Wire(shape="tgi"), "usage"),  # no opening event: the first event carries the role and the first token
        (Wire(shape="tgi", eos=True, finish="stop"), "usage"),  # ... the EOS with the role repeated
        (Wire(shape="tgi", usage="none"), "tokenize"),
        (Wire(shape="tgi", eos=True, finish="stop", plan=(1, 3, 2, 1), usage="per_event"), "usage"),
        (Wire(shape="llamacpp", usage="on_finish"), "usage"),
        (Wire(shape="ollama", eos=True, finish="stop"), "usage"),  # its Done chunk at the EOS's step, counted
        (Wire(shape="ollama", trailer=True), "usage"),  # ... at a length stop, with the last token: no token
        (Wire(shape="ollama", field="reasoning", trailer=True), "usage"),  # `content: ""` beside the reasoning
    ],
    ids=[
        "plain",
        "crlf",
        "ping",
        "split",
        "no-done",
        "no-done-stall",
        "hold-after-done",
        "drop-after-done",
        "event-id-bare",
        "multiline-data",
        "multiline-data-crlf-split",
        "usage-on-finish",
        "usage-on-finish-stall",
        "no-usage",
        "done-only",
        "batched-per-event-usage",
        "role-usage-0",
        "role-usage-1",
        "batched-final-usage",
        "reasoning",
        "reasoning_content-no-usage",
        "late-finish",
        "late-finish-no-usage-ping",
        "eos",
        "sglang",
        "sglang-eos",
        "sglang-reasoning-batched",
        "tgi",
        "tgi-eos",
        "tgi-no-usage",
        "tgi-eos-per-event-usage",
        "llamacpp",
        "ollama-eos",
        "ollama-length",
        "ollama-reasoning",
    ],  # fmt: skip
)
def test_wire_habits_leave_every_figure_as_the_script_sets_it(tmp_path: Path, wire: Wire, counted_by: str) -> None:
    """Each habit, 4 requests of `Wire.plan`: every request ok, the tokens the script sent (from usage, or the
    /tokenize count of a server with none), the figures `Wire.set_ms` derives from its constants. Before: a
    connection held after [DONE] put W_LINGER_S into E2E (660 ms, not 60) and one dropped after it failed the
    request; [DONE] without a finish_reason or usage and an empty `data:` keep-alive failed the request; usage
    on each event but not on the role's lost the per-token ITL; a role event whose usage already counted the
    first token was timed as that token (TTFT 0 ms, not 30); a JSON chunk over two `data:` lines (one SSE event)
    was refused as unparsable; the final usage chunk followed by a stall, no [DONE], timed out as failed, and so
    did usage on the finish_reason's event followed by a stall (now whole at that event, `stalled`, and noted)."""
    tokens = sum(wire.plan)
    cell, run, measured = measure(tmp_path, dict(wire_script=wire), wire.set_ms(), output_tokens=tokens,
                                request_timeout_s=W_TIMEOUT_S)  # fmt: skip
    assert cell.status == "ok" and cell.requests_ok == 4 and cell.requests_failed == 0
    assert {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {(tokens, counted_by)}
    assert {s.finish_reason for s in measured} == {wire.finish}
    per_event = wire.usage == "per_event"
    assert all(s.chunk_tokens == (list(wire.plan) if per_event else []) for s in measured)
    itl_per_request = tokens - wire.plan[0] if per_event else len(wire.plan) - 1
    assert (cell.itl_ms.n, cell.itl_chunk_ms.n) == (4 * itl_per_request, 4 * (len(wire.plan) - 1))
    assert cell.requests_ended_early == cell.requests_over_max_tokens == 0
    stalls = wire.usage == "on_finish" and not wire.done and wire.after_done == "hold"
    assert {s.stalled for s in measured} == {stalls} and (runner._STALLED in run.notes) == stalls


@pytest.mark.parametrize("wire", [Wire(), Wire(ping=True, crlf=True), Wire(head=b"\n\nid: 1\n", split=True)],
                         ids=["plain", "ping-crlf", "id-split"])  # fmt: skip
def test_an_event_stream_without_content_type_is_read_as_one(tmp_path: Path, wire: Wire) -> None:
    """The same habits with no content-type header (the fake's `wire_ctype=None`): the body starts as an event
    stream does, so it is read as one (wire.is_event_stream reads the first bytes), every figure as the script sets
    it (TTFT from the read that brought the first bytes)."""
    tokens = sum(wire.plan)
    cell, _, measured = measure(tmp_path, dict(wire_script=wire, wire_ctype=None), wire.set_ms(), output_tokens=tokens,
                                request_timeout_s=W_TIMEOUT_S)  # fmt: skip
    assert cell.status == "ok" and cell.requests_ok == 4 and cell.requests_failed == 0
    assert {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {(tokens, "usage")}


# The connection-reuse tests below time nothing against a margin a loaded machine is likely to miss: the client's
# DRAIN_S is set to H_DRAIN_S; a body that ends, ends H_END_S after the answer (the client has read the answer by
# then, and waits for the end well within H_DRAIN_S), a held one H_HOLD_S after it (the client closes it first);
# the request timeout is H_TIMEOUT_S. A request waits the drain (>= H_DRAIN_S) or it does not (microseconds), and
# the fake counts the connections it accepted.
H_DRAIN_S, H_END_S, H_HOLD_S, H_TIMEOUT_S = 0.5, 0.1, 30.0, 20.0


def _ending(holds: Callable[[int], bool], wire: Wire = Wire()) -> Callable[[int, dict[str, Any]], list[WireWrite]]:
    """`wire`'s answers, each body ended H_END_S after the answer, or H_HOLD_S where `holds(number)`."""

    def script(number: int, body: dict[str, Any]) -> list[WireWrite]:
        writes = wire(number, body)
        return [*writes, (writes[-1][0] + (H_HOLD_S if holds(number) else H_END_S), b"", False)]

    return script


@pytest.mark.parametrize("wire", [Wire(), Wire(done=False)], ids=["done", "no-done"])
def test_a_server_holding_the_connection_after_the_answer_does_not_slow_the_streams(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: Wire
) -> None:
    """2 streams x 6 requests of 4 tokens in 60 ms (W_TTFT_S + 3 x W_ITL_S), every body held H_HOLD_S after the
    answer, one warm-up request per stream. The client drains the body's end for DRAIN_S (here H_DRAIN_S); once the
    server held past it on HOLDS_TO_CLOSE answers in a row (the two warm-ups), the session's later answers are not
    drained (the first probe would be the 16th): each stream sends its next request as its answer ends. Waiting
    DRAIN_S before each request gave 2 x 4 tokens per 60 + DRAIN_S ms (at DRAIN_S 50 ms: 77 tok/s, not 131)."""
    monkeypatch.setattr(client, "DRAIN_S", H_DRAIN_S)
    with FakeVllm(wire_script=_ending(lambda _: True, wire)) as srv:
        cell, _, measured = bench(srv, tmp_path, clients=[2], requests_per_client=6, output_tokens=4,
                                  warmup_requests=1, request_timeout_s=H_TIMEOUT_S)  # fmt: skip
    assert cell.requests_ok == 12 and cell.e2e_ms.mean is not None
    by_stream = [sorted((s for s in measured if s.stream == i), key=lambda s: s.seq) for i in (0, 1)]
    turns_s = [b.t_send - (a.t_done or 0.0) for x in by_stream for a, b in zip(x, x[1:], strict=False)]
    assert max(turns_s) < H_DRAIN_S, turns_s
    closed_loop = 2 * 4 / (cell.e2e_ms.mean / 1000)  # tok/s of 2 streams that never wait between requests
    waiting = 2 * 4 / (cell.e2e_ms.mean / 1000 + H_DRAIN_S)  # ... that wait DRAIN_S before each
    assert cell.whole_run_tok_per_s is not None and cell.output_tok_per_s is not None
    assert min(cell.whole_run_tok_per_s, cell.output_tok_per_s) > (closed_loop + waiting) / 2


def _one_after_another(
    monkeypatch: pytest.MonkeyPatch, holds: Callable[[int], bool], n: int
) -> tuple[list[bool], list[bool]]:
    """`n` requests one after another on one bench session against `_ending(holds)`, DRAIN_S set to H_DRAIN_S:
    for each, whether the client waited DRAIN_S past the answer's end before it returned, and whether the fake
    accepted a new connection for it."""
    monkeypatch.setattr(client, "DRAIN_S", H_DRAIN_S)

    async def go(srv: FakeVllm) -> tuple[list[bool], list[bool]]:
        waited, opened = [], []
        async with client.data_session(srv.url, 1, H_TIMEOUT_S) as http:
            for i in range(n):
                before = srv.connections
                body = bench_chat_body("fake-model", f"q{i}", 4, extras=True, continuous_usage=False)
                out = await client.stream_chat(http, srv.url, body)
                assert out.error is None and out.t_done is not None
                waited.append(time.perf_counter() - out.t_done >= H_DRAIN_S)
                opened.append(srv.connections > before)
        return waited, opened

    with FakeVllm(wire_script=_ending(holds)) as srv:
        return asyncio.run(go(srv))


@pytest.mark.parametrize(("held", "connections"), [(set(), 1), ({2}, 2)], ids=["never", "once"])
def test_one_held_connection_costs_one_new_connection_not_one_per_later_request(
    monkeypatch: pytest.MonkeyPatch, held: set[int], connections: int
) -> None:
    """6 requests on one session, each body ending H_END_S after [DONE] (drained, the connection reused), except
    request 2's, held (a stall): that one is waited DRAIN_S and closed, request 3 opens a second connection and
    the rest reuse it. Before, the one hold made the session close every later connection before its body end
    was read: 5 connections, each request after the stall setting up its own."""
    waited, opened = _one_after_another(monkeypatch, lambda n: n in held, 6)
    assert sum(opened) == connections
    assert [i + 1 for i, w in enumerate(waited) if w] == sorted(held)


def test_a_server_that_keeps_holding_costs_the_drain_only_until_it_repeats_and_at_each_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every body held after the answer: the first HOLDS_TO_CLOSE answers are waited DRAIN_S, then the session
    closes each connection at once, but drains every PROBE_EVERY-th answer (still held: closing goes on)."""
    n = client.HOLDS_TO_CLOSE + 2 * client.PROBE_EVERY + 1
    waited, opened = _one_after_another(monkeypatch, lambda _: True, n)
    probes = [client.HOLDS_TO_CLOSE + k * client.PROBE_EVERY - 1 for k in (1, 2)]
    assert [i for i, w in enumerate(waited) if w] == [*range(client.HOLDS_TO_CLOSE), *probes]
    assert all(opened)


def test_a_server_that_ends_its_bodies_in_time_again_gets_its_connections_reused_after_the_probe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Requests 1-2 held (closing starts), then every body ends H_END_S after the answer: requests 3 to
    HOLDS_TO_CLOSE + PROBE_EVERY are closed at once, the probe at the last of them drains in time, and the 2 after
    it reuse its connection (no new one)."""
    n = client.HOLDS_TO_CLOSE + client.PROBE_EVERY + 2
    waited, opened = _one_after_another(monkeypatch, lambda number: number <= client.HOLDS_TO_CLOSE, n)
    assert opened[-2:] == [False, False]
    assert [i for i, w in enumerate(waited) if w] == list(range(client.HOLDS_TO_CLOSE))


def test_finish_length_before_max_tokens_is_an_early_end(tmp_path: Path) -> None:
    """The script stops at 2 tokens with finish_reason "length" while max_tokens is 6 (a server capping the
    output): each request is ok, 2 tokens from usage, and counted as ended early; TPOT is the one gap."""
    wire = Wire(plan=(1, 1))
    cell, _, measured = measure(tmp_path, dict(wire_script=wire), wire.set_ms(), output_tokens=6)
    assert {(s.completion_tokens, s.finish_reason) for s in measured} == {(2, "length")}
    assert cell.requests_ended_early == 4 and cell.requests_over_max_tokens == 0


def _failing(number: int, body: dict[str, Any]) -> list[WireWrite]:
    """Chat request 6: an OpenAI-shaped error event after 2 tokens; 8: older vLLM's flat one; 10: the
    connection dropped there; every other request the plain script (HTTP 503 / 429 come from fail_status)."""
    return Wire(error={6: "openai", 8: "flat", 10: "cut"}.get(number))(number, body)  # type: ignore[arg-type]


def test_failures_of_every_kind_are_recorded_apart_and_the_run_goes_on(tmp_path: Path) -> None:
    """Chat request 1 (the probe) answers 503 and is sent again (2); the 10 measured requests are 3-12: 503,
    429, an error event of each shape after 2 tokens, a dropped connection. Each of the 5 is failed with its
    reason and kept in requests.jsonl; the latencies are the 5 others' (the script's 30 / 60 ms), the tokens
    theirs only (5 x 4), and the summary says 5 of 10 failed."""
    server = dict(wire_script=_failing, fail_status={1: 503, 4: 503, 5: 429})
    cell, run, measured = measure(tmp_path, server, dict(ttft=30, e2e=60), requests_per_client=10, output_tokens=4)
    assert [s.status == "ok" for s in measured] == [True, False, False, False, True, False, True, False, True, True]
    errors = [s.error or "" for s in measured if s.status == "failed"]
    assert [e.split(":")[0] for e in errors] == ["HTTP 503", "HTTP 429", "HTTP 200", "HTTP 200", "ClientPayloadError"]
    assert errors[2] == errors[3] == f"HTTP 200: {ENGINE_DIED}"  # both shapes read; was "stream ended without..."
    assert (cell.status, cell.requests_sent, cell.requests_ok, cell.requests_failed) == ("ok", 10, 5, 5)
    assert cell.ttft_ms.n == cell.e2e_ms.n == cell.tpot_ms.n == 5 and cell.itl_ms.n == 5 * 3
    assert cell.reps[0].whole_run_output_tokens == 5 * 4
    out = Console(record=True, width=200)
    print_run(run, out)
    assert "5 of 10 measured requests failed (their tokens are not counted); first: HTTP 503" in out.export_text()


@pytest.mark.parametrize("shape", ["openai", "flat", "openrouter", "event", "event_text", "bare", "bare_end"])
def test_an_error_in_the_stream_then_done_is_one_failed_request_with_the_servers_message(
    tmp_path: Path, shape: Literal["openai", "flat", "openrouter", "event", "event_text", "bare", "bare_end"]
) -> None:
    """Chat request 3 of 2-4 (1 is the probe) sends 2 tokens, then an error and [DONE] (`Wire.error_event`: vLLM's
    error chunk, older vLLM's flat one, or an `event: error` event): that request is failed with the server's
    message, the token in it redacted (errors.redact: an hf_ token by its shape), and its 2 tokens are not counted.
    The `event: error` events were skipped as events: `{"message": ...}` made an ok request of 2 tokens ([DONE] its
    end), bare text 'unparsable stream chunk: unexpected character' (the message lost); OpenRouter's error chunk,
    which has choices too, made an ok request of 3 tokens (its empty content one of them); vLLM's error object written
    as a bare line, no `data:`, was skipped as an unknown SSE field: an ok request of 2 tokens when [DONE] followed,
    else 'stream ended without [DONE]...' (the server's message lost)."""
    token = "hf_" + "a1B2c3D4e5" * 3 + "f6G7"
    wire = Wire(error=shape, message=f"engine died; upstream refused {token}")
    with FakeVllm(wire_script=lambda n, body: (wire if n == 3 else Wire())(n, body)) as srv:
        cell, _, measured = bench(srv, tmp_path, requests_per_client=3, output_tokens=4)
    assert [s.status for s in measured] == ["ok", "failed", "ok"] and cell.requests_failed == 1
    assert measured[1].error == "HTTP 200: engine died; upstream refused ***"
    assert cell.reps[0].whole_run_output_tokens == 2 * 4 and cell.ttft_ms.n == 2
    assert not [p.name for p in tmp_path.rglob("*") if p.is_file() and token in p.read_text()]


def test_a_whole_chat_completion_to_a_streamed_request_is_failed_not_timed(tmp_path: Path) -> None:
    """Chat request 3 of 2-4 (1 is the probe) is answered as if not streamed (the fake's `ignore_stream`: one JSON
    chat completion, 4 tokens): there is no first token to time, so it is failed saying so, and neither its
    latencies nor its tokens are counted as a streamed sample's; it said only 'answered application/json, not an
    event stream' before."""
    with FakeVllm(ignore_stream={3}) as srv:
        cell, _, measured = bench(srv, tmp_path, requests_per_client=3, output_tokens=4)
    assert [s.status for s in measured] == ["ok", "failed", "ok"] and cell.requests_failed == 1
    assert measured[1].error == (
        f"{srv.url}/v1/chat/completions: answered application/json, not an event stream (text/event-stream): a whole "
        "chat completion, stream=true ignored, so no TTFT or ITL can be measured (finish_reason 'length', content "
        "'tok tok tok tok')"
    )
    assert measured[1].t_first is None and measured[1].completion_tokens is None
    assert cell.reps[0].whole_run_output_tokens == 2 * 4 and cell.ttft_ms.n == cell.e2e_ms.n == 2


@pytest.mark.parametrize("usage", [True, False], ids=["usage-0", "no-usage"])
def test_an_answer_without_a_generated_token_is_failed_not_timed(tmp_path: Path, usage: bool) -> None:
    """Chat request 3 of 2-4 (1 is the probe) answers the role, a finish_reason 'stop' and [DONE] (with a final usage
    of 0 completion tokens, or none), and no token: there is no first token to time, so it is failed, as vllm bench
    serve fails it ('Never received a valid chunk to calculate TTFT', lib/endpoint_request_func.py); it was 'ok':
    counted in requests_ok and the request rate, its E2E in the distribution (3 E2E beside 2 TTFT)."""

    def script(number: int, body: dict[str, Any]) -> list[WireWrite]:
        if number != 3:
            return Wire()(number, body)
        tail = sse_event(None, None, (count_body(body), 0)) if usage else b""
        return [(0.0, sse_event({"role": "assistant", "content": ""}) + sse_event({}, "stop") + tail, False),
                (W_TTFT_S, b"data: [DONE]\n\n", False)]  # fmt: skip

    with FakeVllm(wire_script=script) as srv:
        cell, _, measured = bench(srv, tmp_path, requests_per_client=3, output_tokens=4)
    assert [s.status for s in measured] == ["ok", "failed", "ok"] and cell.requests_failed == 1
    assert measured[1].error == client.NO_TOKEN + " (finish_reason 'stop')"
    assert cell.reps[0].whole_run_output_tokens == 2 * 4 and cell.ttft_ms.n == cell.e2e_ms.n == 2


@pytest.mark.parametrize(
    ("resets", "how"), [(False, "the chunked body ended early"), (True, "the server reset the connection")]
)
def test_a_connection_dropped_mid_stream_is_one_failed_request(tmp_path: Path, resets: bool, how: str) -> None:
    """Chat request 3 of 2-4 (1 is the probe) is dropped after 2 of its 4 tokens, closed (FIN) or reset (RST, the
    fake's `resets`): that request is failed, saying which, and its 2 tokens are not counted; the others are ok,
    4 tokens each, and the run goes on."""
    wire = lambda n, body: Wire(error="cut" if n == 3 else None)(n, body)  # noqa: E731
    with FakeVllm(wire_script=wire, resets=resets) as srv:
        cell, _, measured = bench(srv, tmp_path, requests_per_client=3, output_tokens=4)
    assert [s.status for s in measured] == ["ok", "failed", "ok"] and cell.requests_failed == 1
    assert measured[1].error == f"ClientPayloadError: stream cut mid-way ({how})"
    assert cell.reps[0].whole_run_output_tokens == 2 * 4 and cell.ttft_ms.n == 2


def test_a_finish_reason_then_a_stall_without_usage_or_done_times_out_saying_so(tmp_path: Path) -> None:
    """Chat request 3 of 2-4 (1 is the probe) sends its 4 tokens and finish_reason, then no usage and no [DONE],
    the connection held past the 0.4 s timeout: a final usage or [DONE] could still follow a finish_reason, so the
    request is failed, its error naming what was missing; the two others are ok (`wire.ends_answer` ends an answer
    only at the final usage chunk)."""
    stall = Wire(usage="none", done=False, after_done="hold")
    with FakeVllm(wire_script=lambda n, body: (stall if n == 3 else Wire())(n, body)) as srv:
        cell, _, measured = bench(srv, tmp_path, requests_per_client=3, output_tokens=4, request_timeout_s=W_TIMEOUT_S)
    assert [s.status for s in measured] == ["ok", "failed", "ok"] and cell.requests_failed == 1
    assert measured[1].error == f"{client.TIMED_OUT} after the finish_reason (no final usage, no [DONE])"
    assert cell.reps[0].whole_run_output_tokens == 2 * 4


def test_requests_without_usage_are_noted_even_when_the_probe_had_it(tmp_path: Path) -> None:
    """Chat request 1 (the probe) carries a final usage, the measured ones none (a router in front of two kinds
    of server): their tokens are the /tokenize count of the words the script sent (4 each), and the run's notes
    say so (they said nothing: the note came from the probe alone)."""
    with FakeVllm(wire_script=lambda n, body: Wire(usage="final" if n == 1 else "none")(n, body)) as srv:
        _, run, measured = bench(srv, tmp_path, requests_per_client=2, output_tokens=4)
    assert {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {(4, "tokenize")}
    assert [n for n in run.notes if n.startswith("server sent no usage")] == [
        "server sent no usage: output tokens are its /tokenize count of the generated text "
        "(as vllm bench serve counts them)"
    ]


def _drawn(seed: int, low_s: float, high_s: float) -> dict[int, float]:
    """Per chat request number (1 is the probe), a time drawn uniformly in [low_s, high_s] from random.Random(seed),
    rounded to 0.1 ms: the same draws every run."""
    rng = random.Random(seed)
    return {n: round(rng.uniform(low_s, high_s), 4) for n in range(1, 12)}


def _pct(values: list[float], q: int) -> float:
    """The q-th percentile by linear interpolation (numpy's default, "type 7"), from the standard library:
    statistics.quantiles(method="inclusive") cuts at the same points."""
    return values[0] if len(set(values)) == 1 else statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def test_seeded_jitter_every_percentile_is_the_drawn_timings(tmp_path: Path) -> None:
    """TTFT and the inter-token gap set per request from a seeded RNG (TTFT 20-60 ms, gap 8-20 ms: `_drawn`),
    1 client, 8 requests of 4 one-token chunks (chat requests 2-9; 1 is the probe). By hand, for request n:
    TTFT = ttft[n]; ITL = gap[n], 3 samples (4 tokens, 3 gaps); TPOT = (E2E - TTFT) / 3 = gap[n];
    E2E = ttft[n] + 3 x gap[n]. So the cell's TTFT mean / p50 / p90 / p99 are those of the 8 drawn TTFTs, ITL's of
    the 24 gap samples (each request's gap 3 times), TPOT's of the 8 gaps, E2E's of the 8 sums (`_pct`, type 7).

    Each statistic is held to the same statistic of the server's own writes (`server_record`: what the fake did,
    its lateness on a loaded machine included) within 1 ms + 2%, and TTFT's and E2E's to the drawn values from
    below (absolute deadlines: never earlier). The tolerance is measured: `python benchmarks/bench_stamp_lag.py`
    runs this scenario and prints how far the client's stamp of each chunk trails the fake's write of it (p50
    0.18 ms, p90 0.32 ms beside seven other test suites, load 7 on 2 cores; its p99, 11.5 ms, is a GIL switch or a
    descheduling, which the ATTEMPTS absorb) and how far the fake's writes trail their deadlines (p50 7 ms under
    that load: why the drawn values bound TTFT and E2E from below only). A figure that took the wrong samples (the
    probe's, the role chunk, a request's first token in TPOT, per-request means instead of samples) misses by more:
    the draws differ by up to 40 ms."""
    ttft_s, gap_s = _drawn(68, 0.020, 0.060), _drawn(6868, 0.008, 0.020)
    numbers = range(2, 10)
    drawn = {
        "ttft": [ttft_s[n] * 1000 for n in numbers],
        "itl": [gap_s[n] * 1000 for n in numbers for _ in range(3)],
        "tpot": [gap_s[n] * 1000 for n in numbers],
        "e2e": [(ttft_s[n] + 3 * gap_s[n]) * 1000 for n in numbers],
    }
    server = dict(ttft_for=lambda n, body: ttft_s[n], itl_for=lambda n, body: gap_s[n])
    misses = []
    for attempt in range(ATTEMPTS):
        with FakeVllm(**server) as srv:
            cell, _, measured = bench(srv, tmp_path / f"a{attempt}", requests_per_client=8, output_tokens=4)
            record = server_record(srv, measured)
        assert cell.requests_ok == 8 and {s.completion_tokens for s in measured} == {4}
        assert (cell.ttft_ms.n, cell.itl_ms.n, cell.tpot_ms.n, cell.e2e_ms.n) == (8, 24, 8, 8)
        bad = []
        for name, values in drawn.items():
            for stat, q in (("mean", 0), ("median", 50), ("p90", 90), ("p99", 99)):
                measured_ms = getattr(getattr(cell, f"{name}_ms"), stat)
                by_hand = statistics.fmean(values) if not q else _pct(values, q)
                server_ms = statistics.fmean(record[name]) if not q else _pct(record[name], q)
                if not agrees(measured_ms, server_ms) or (
                    name in ("ttft", "e2e") and not at_least(measured_ms, by_hand)
                ):
                    bad.append(f"{name}.{stat}: measured {measured_ms:.3f}, server {server_ms:.3f}, set {by_hand:.3f}")
        if not bad:
            return
        misses.append(bad)
    pytest.fail(f"percentiles missed in all {ATTEMPTS} attempts: {misses}")
