"""The streaming client against a real local server with injected timings (tests/fakes/vllm_server.py).

Injected: TTFT 100 ms after a role-only chunk sent at once, 20 ms between content chunks, a chunk carrying
3 tokens. Tolerance from the issue: measured within 1 ms + 2% of injected; token counts exact.
"""

from __future__ import annotations

import asyncio
import statistics

import aiohttp
import pytest

from fakes.vllm_server import TEMPLATE_TOKENS, FakeVllm
from onechip.bench import stats
from onechip.bench.client import StreamOutcome, stream_chat
from onechip.schemas.bench import RequestSample
from onechip.vllm.wire import bench_chat_body

TTFT_S, ITL_S = 0.100, 0.020
PLAN = [1, 1, 3, 1, 1, 1]  # 6 chunks, 8 tokens


def within(measured: float, injected: float) -> bool:
    """The issue's tolerance: 1 ms + 2% of the injected value (both in ms)."""
    return abs(measured - injected) <= 1.0 + 0.02 * injected


def run(server: FakeVllm, content: str, n: int, *, continuous: bool = True, repeat: int = 1) -> list[StreamOutcome]:
    async def go() -> list[StreamOutcome]:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            warm = bench_chat_body("fake-model", "warm", 1, extras=True, continuous_usage=True)
            await stream_chat(http, server.url, warm)
            return [
                await stream_chat(
                    http,
                    server.url,
                    bench_chat_body("fake-model", content, n, extras=True, continuous_usage=continuous),
                )
                for _ in range(repeat)
            ]

    return asyncio.run(go())


def as_sample(o: StreamOutcome) -> RequestSample:
    return RequestSample(
        context_tokens=0,
        clients=1,
        rep=0,
        stream=0,
        seq=0,
        t_send=o.t_send,
        t_first=o.t_first,
        t_last=o.t_last,
        t_done=o.t_done,
        completion_tokens=o.completion_tokens,
        chunk_times=o.chunk_times,
        chunk_tokens=o.chunk_tokens,
    )


# Timing checks run in batches; a batch passes when every median is within tolerance. On a shared 2-core
# machine the client thread is sometimes not scheduled for several ms (two chunks then arrive "together"),
# so up to ATTEMPTS batches are tried. A systematic error (the role chunk counted, chunks counted as
# tokens, a wrong split) fails every batch.
ATTEMPTS = 3


def timing_errors(s: list[RequestSample], sent: list[list[float]], plan: list[int] | None) -> list[str]:
    """Which of TTFT, TPOT, ITL (and the multi-token chunk's split ITL) miss 1 ms + 2% of the truth."""
    errors: list[str] = []

    def check(name: str, measured: float, truth: float) -> None:
        if not within(measured, truth):
            errors.append(f"{name}: measured {measured:.3f} ms, server {truth:.3f} ms")

    ttft_true = [(t[0] - x.t_send) * 1000 for t, x in zip(sent, s, strict=True)]
    check("TTFT", statistics.median(stats.ttft_ms(x) for x in s), statistics.median(ttft_true))
    n = s[0].completion_tokens or 0
    tpot_true = [(t[-1] - t[0]) * 1000 / (n - 1) for t in sent]
    check("TPOT", statistics.median(stats.tpot_ms(x) for x in s), statistics.median(tpot_true))
    ks = plan[1:] if plan else [1] * (len(sent[0]) - 1)
    itl_true = [[(b - a) * 1000 / k for a, b, k in zip(t, t[1:], ks, strict=False) for _ in range(k)] for t in sent]
    itls = [stats.itl_ms(x) for x in s]
    # mean ITL (telescopes, so a late chunk cannot move it) and the median of the one-token gaps; a median
    # over all samples would sit in the tail of the one-token gaps, next to the split ones, and measure jitter
    mean_true = statistics.fmean(v for i in itl_true for v in i)
    check("ITL mean", statistics.fmean(v for i in itls for v in i), mean_true)
    whole = [j for j, k in enumerate(k for k in ks for _ in range(k)) if k == 1]
    median_true = statistics.median(i[j] for i in itl_true for j in whole)
    check("ITL median", statistics.median(i[j] for i in itls for j in whole), median_true)
    if plan:
        check("ITL split", statistics.median(i[1] for i in itls), statistics.median(i[1] for i in itl_true))
    return errors


def test_ttft_tpot_itl_match_injected_timings(fake_server: FakeVllm) -> None:
    """Injected: role chunk at once, first content at 100 ms, 20 ms gaps, a 3-token chunk. The truth for
    each request is when the server wrote each chunk (`sent_times`, same monotonic clock)."""
    fake_server.ttft_s, fake_server.itl_s, fake_server.chunk_plan = TTFT_S, ITL_S, PLAN
    failures: list[list[str]] = []
    for _ in range(ATTEMPTS):
        first = len(fake_server.chat_requests) + 2  # the next warm-up is one request
        outs = run(fake_server, "one two three four", 8, repeat=5)
        sent = [fake_server.sent_times[first + i] for i in range(len(outs))]
        for o in outs:
            assert o.error is None
            # counts exact, from usage: 8 tokens in 6 chunks; prompt = 4 words + template
            assert (o.completion_tokens, o.prompt_tokens) == (8, 4 + TEMPLATE_TOKENS)
            assert o.chunk_tokens == PLAN  # per-chunk deltas from continuous usage
            assert len(o.chunk_times) == 6  # the role-only chunk is not a content chunk
        s = [as_sample(o) for o in outs]
        # TTFT never below the injected 100 ms (the role chunk, sent at once, would give ~0)
        assert all(stats.ttft_ms(x) >= TTFT_S * 1000 for x in s), [stats.ttft_ms(x) for x in s]
        # ITL: gaps g1, g2/3 x3, g3, g4, g5 -> 7 samples per request (3-token chunk: 3 equal parts)
        assert all(len(i) == 7 and i[1] == i[2] == i[3] for i in map(stats.itl_ms, s))
        errors = timing_errors(s, sent, PLAN)
        if not errors:
            return
        failures.append(errors)
    pytest.fail(f"timings off in all {ATTEMPTS} batches: {failures}")


def test_without_continuous_usage_chunks_split_itl_but_never_count_tokens(fake_server: FakeVllm) -> None:
    fake_server.ttft_s, fake_server.itl_s, fake_server.chunk_plan = 0.02, ITL_S, PLAN
    failures: list[list[str]] = []
    for _ in range(ATTEMPTS):
        first = len(fake_server.chat_requests) + 2
        outs = run(fake_server, "hi", 8, continuous=False, repeat=3)
        for o in outs:
            assert o.error is None
            assert o.completion_tokens == 8 and o.chunk_tokens == []  # tokens from the final usage only
            assert len(stats.itl_ms(as_sample(o))) == 5  # 6 chunks, 5 gaps: one sample per gap
        s = [as_sample(o) for o in outs]
        sent = [fake_server.sent_times[first + i] for i in range(len(outs))]
        errors = timing_errors(s, sent, None)
        # ITL truth without per-chunk counts is one sample per chunk gap
        if not errors:
            return
        failures.append(errors)
    pytest.fail(f"timings off in all {ATTEMPTS} batches: {failures}")


def test_mid_stream_disconnect_is_a_failed_request(fake_server: FakeVllm) -> None:
    fake_server.itl_s, fake_server.cut_requests, fake_server.cut_after_chunks = 0.005, {2}, 2
    (o,) = run(fake_server, "hi", 8)  # request 1 is the warm-up, request 2 is cut
    assert o.error is not None and "stream cut mid-way" in o.error
    assert len(o.chunk_times) == 2 and o.completion_tokens is None


def test_overflow_400_keeps_the_servers_message(fake_server: FakeVllm) -> None:
    fake_server.max_model_len = 20
    (o,) = run(fake_server, "word " * 30, 8)
    assert o.http_status == 400
    assert o.error is not None and "maximum context length is 20 tokens" in o.error
    assert o.t_first is None


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            '{"error": {"message": "streaming refused for hf_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"}}',
            "streaming refused for ***",
        ),
        ('{"object": "error", "message": "streaming refused"}', "streaming refused"),
    ],
    ids=["openai", "flat"],
)
def test_a_json_error_answer_to_a_stream_keeps_the_servers_message(body: str, said: str) -> None:
    """A 200 `application/json` error body to stream=true (a proxy or server that ignores `stream`) is a failed
    request with the server's message (vllm.wire.server_message: the error shapes, redacted), not 'answered
    application/json, not an event stream' alone; nothing is timed."""
    with FakeVllm(raw_answers={"/v1/chat/completions": (200, body.encode(), "application/json")}) as srv:
        (o,) = run(srv, "hi", 4)
    assert o.http_status == 200 and o.error == (
        f"{srv.url}/v1/chat/completions: answered application/json, not an event stream (text/event-stream): {said}"
    )
    assert o.t_first is None and o.chunk_times == [] and o.completion_tokens is None


@pytest.mark.parametrize("body", ['{"error": {"message": "boom"}}', '{"object": "error", "message": "boom"}'])
def test_error_body_shapes(body: str) -> None:
    from onechip.vllm.wire import error_message

    assert error_message(400, body) == "HTTP 400: boom"
