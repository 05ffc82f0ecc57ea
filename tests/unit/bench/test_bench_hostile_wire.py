"""The streaming client (bench/client.py) and WireClient.chat_stream (the checks' streamed chat) against servers that
answer a streamed request with something that is no event stream, or trickle it (tests/fakes/vllm_server.py's
`wire_script` with `wire_status` / `wire_ctype`, `raw_answers` without a content type): each is a failed request
that says what the server said, judged from the headers or the first bytes, and read for at most wire.SAID_S /
wire.SAID_BYTES, never until the request timeout."""

from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest

from fakes import dead_endpoints
from fakes.vllm_server import FakeVllm, WireWrite
from onechip.bench.client import StreamOutcome, stream_chat
from onechip.errors import EndpointError
from onechip.vllm import wire
from onechip.vllm.wire import WireClient, bench_chat_body

TIMEOUT_S = 60.0  # the request timeout: past the trickles' 30 s, so a body read whole reads till it ends
# a bounded read ends within wire.SAID_S (2 s); one read whole, at the body's end (30 s): the bound lies between, far
# from both, so a loaded machine cannot cross it (a number, not SAID_S + slack: a SAID_S grown too long must fail)
PROMPT_S = 10.0


def one(srv: FakeVllm, timeout_s: float = TIMEOUT_S) -> tuple[StreamOutcome, float]:
    """One streamed bench request to `srv` and the seconds it took."""

    async def go() -> StreamOutcome:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as http:
            return await stream_chat(
                http, srv.url, bench_chat_body("fake-model", "hi", 4, extras=True, continuous_usage=True)
            )

    t0 = time.perf_counter()
    out = asyncio.run(go())
    return out, time.perf_counter() - t0


def checked(srv: FakeVllm, timeout_s: float = TIMEOUT_S) -> tuple[str, float]:
    """One WireClient.chat_stream to `srv`: the EndpointError's message and the seconds it took."""
    t0 = time.perf_counter()
    with WireClient(srv.url, timeout_s) as c, pytest.raises(EndpointError) as err:
        c.chat_stream(wire.chat_body("fake-model", [], 4))
    return str(err.value), time.perf_counter() - t0


def trickle(first: bytes, every_s: float = 0.005, piece: bytes = b" " * 1024, total_s: float = 30.0) -> list[WireWrite]:
    """A body that starts with `first`, then `piece` every `every_s` for `total_s` (30 s of 1 KiB pieces: ~6 MB)."""
    return [(0.0, first, False), *((k * every_s, piece, False) for k in range(1, int(total_s / every_s)))]


SAYS = b'{"error": {"message": "queue full, try later"}}'  # then JSON whitespace: what a bounded read keeps parses
FAST = trickle(SAYS)  # past wire.SAID_BYTES in ~0.3 s
SLOW = trickle(SAYS, every_s=0.05, piece=b" ")  # 20 bytes a second: wire.SAID_S ends the read


@pytest.mark.parametrize("writes", [FAST, SLOW], ids=["fast", "slow"])
@pytest.mark.parametrize("ctype", ["application/json", "text/html", None])
def test_an_endless_body_that_is_no_event_stream_fails_promptly_saying_what_it_said(
    ctype: str | None, writes: list[WireWrite]
) -> None:
    """A 200 answer to a streamed request whose body is no event stream and never ends (1 KiB every 5 ms, or a byte
    every 50 ms, for 30 s): the request fails within wire.SAID_S of the answer, with the server's message, in the
    bench and in the checks' chat_stream; the body was read whole before it was judged, so both hung until the
    request timeout (--timeout-s in a run; here past the body's 30 s) or, in the checks (httpx's read timeout is
    per read), till the body ended, and held every byte the server sent."""
    with FakeVllm(wire_script=lambda n, b: writes, wire_ctype=ctype) as srv:
        out, took = one(srv)
        said, took_check = checked(srv)
    media = ctype or "no content type"
    head = f"{srv.url}/v1/chat/completions: answered {media}, not an event stream (text/event-stream)"
    assert out.error is not None and out.error.startswith(head), out.error
    assert said.startswith(head), said
    assert took < PROMPT_S and took_check < PROMPT_S, (took, took_check)
    assert len(out.error) <= len(head) + 2 + wire.MESSAGE_LIMIT and len(said) <= len(head) + 2 + wire.MESSAGE_LIMIT
    assert out.http_status == 200 and out.t_first is None and out.chunk_times == []
    assert out.error.endswith(": queue full, try later") and said.endswith(": queue full, try later")


WHOLE = {
    "id": "chatcmpl-1", "object": "chat.completion", "model": "fake-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "tok tok"}, "finish_reason": "length"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
}  # fmt: skip


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (json.dumps(WHOLE).encode(), "a whole chat completion, stream=true ignored, so no TTFT or ITL can be measured "
         "(finish_reason 'length', content 'tok tok')"),
        (b'\n  {"error": {"message": "model is loading"}}', "model is loading"),
        (b"[1, 2]", "[1, 2]"),
        (b"Internal Server Error", "Internal Server Error"),
    ],
    ids=["whole-completion", "error-object", "json-list", "text"],
)  # fmt: skip
def test_an_answer_without_content_type_that_is_no_event_stream_fails_saying_what_it_said(
    body: bytes, says: str
) -> None:
    """A 200 answer to a streamed request with no content-type header and a JSON body (a whole completion, an
    error object, a list) or plain text: no event stream, told by its first bytes (an event stream starts with an
    SSE line: `data:`, `event:`, `id:`, `retry:` or a `:` comment), so it fails saying what it said, in the bench and
    the checks; it was read as an event stream, found no event and failed as 'stream ended without [DONE]...' (cut
    mid-way?), the server's message lost."""
    with FakeVllm(raw_answers={"/v1/chat/completions": (200, body, None)}) as srv:
        out, _ = one(srv)
        said, _ = checked(srv)
    want = f"{srv.url}/v1/chat/completions: answered no content type, not an event stream (text/event-stream): {says}"
    assert out.error == want and said == want
    assert out.http_status == 200 and out.t_first is None and out.completion_tokens is None


@pytest.mark.parametrize("status", [500, 429, 400])
def test_an_endless_error_body_fails_promptly_with_the_servers_message(status: int) -> None:
    """A 500, 429 or 400 answer to a streamed request whose JSON error body never ends (1 KiB of JSON whitespace
    every 5 ms for 30 s): failed within wire.SAID_S with the status and the server's message, in the bench and the
    checks (the checks' client sends a busy answer again only with busy_retries, 0 here); the error body was read
    whole, so both hung until the request timeout (the checks' until the body ended) and held all of it."""
    with FakeVllm(wire_script=lambda n, b: FAST, wire_status=status, wire_ctype="application/json") as srv:
        out, took = one(srv)
        said, took_check = checked(srv)
    assert out.error == f"HTTP {status}: queue full, try later" and out.http_status == status
    assert said.endswith("queue full, try later"), said
    assert took < PROMPT_S and took_check < PROMPT_S, (took, took_check)


def test_the_checks_stream_ends_at_its_timeout_however_the_server_keeps_it_alive() -> None:
    """A stream whose role event comes at once and then only `: ping` keep-alives every 50 ms for 30 s: the checks'
    chat_stream (timeout 1.5 s) fails as timed out, well before the pings end (bound 15 s: twice its timeout, the
    read under way may take one more, leaves a loaded machine room). httpx's timeout is per read, so it waited the
    whole 30 s, until the body ended, and then said only 'stream ended without [DONE]...'; the bench's aiohttp
    timeout is the request's total and ended it at 1.5 s."""
    role = b'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}\n\n'
    pings = trickle(role, every_s=0.05, piece=b": ping\n\n")
    with FakeVllm(wire_script=lambda n, b: pings) as srv:
        said, took = checked(srv, timeout_s=1.5)
        out, took_bench = one(srv, timeout_s=1.5)
    assert said == f"{srv.url}/v1/chat/completions: stream timed out after 1.5 s" and took < 15.0, (said, took)
    assert out.error is not None and out.error.startswith("TimeoutError") and took_bench < 15.0, (out.error, took_bench)


def test_a_plain_chat_answer_trickled_past_the_timeout_times_out() -> None:
    """The checks' non-streamed chat (WireClient.chat, timeout 1.5 s) answered with a JSON body that trickles a
    space every 50 ms for 30 s: it fails as 'no answer within 1.5 s' well before the body ends (bound 15 s). httpx's
    timeout is per read, so it read the whole 30 s (without end against a server that never stops) and every byte
    of it."""
    body = trickle(json.dumps(WHOLE).encode(), every_s=0.05, piece=b" ")
    with FakeVllm(wire_script=lambda n, b: body, wire_ctype="application/json", wire_plain=True) as srv:
        t0 = time.perf_counter()
        with WireClient(srv.url, 1.5) as c, pytest.raises(EndpointError) as err:
            c.chat(wire.chat_body("fake-model", [], 4))
        took = time.perf_counter() - t0
    assert str(err.value) == f"{srv.url}/v1/chat/completions: no answer within 1.5 s (ReadTimeout)" and took < 15.0


def test_a_server_that_hangs_up_on_every_request_fails_it_after_one_more_try() -> None:
    """A connection dropped before any answer is sent once more on a new connection (client._post: a keep-alive
    close racing the request), once only: a server that drops every request (read, then closed unanswered) fails it
    with what the second try got, having seen it twice."""
    served = [0]
    with dead_endpoints.hangup(served) as url:

        async def go() -> StreamOutcome:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=TIMEOUT_S)) as http:
                return await stream_chat(http, url, bench_chat_body("m", "hi", 4, extras=True, continuous_usage=True))

        out = asyncio.run(go())
    assert out.error == "ServerDisconnectedError: Server disconnected" and out.http_status is None
    assert served[0] == 2
