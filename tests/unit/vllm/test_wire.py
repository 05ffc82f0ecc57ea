"""vllm/wire.py: payloads, SSE and error-body parsing, and WireClient's validation of every answer, with
`httpx.MockTransport` (STYLE.md "HTTP at three levels": client edge cases)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable

import httpx
import pytest

from fakes.vllm_server import FakeVllm, Reply, sse_event
from onechip.errors import EndpointBusyError, EndpointError, EndpointStatusError
from onechip.vllm import wire
from onechip.vllm.wire import SSEDecoder, WireClient

BASE = "http://vllm.test:8000"
Handler = Callable[[httpx.Request], httpx.Response]
Json = dict[str, object]

HTML = "<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>"
# an HF user access token's shape, hf_ and 34 letters and digits (errors.HF_TOKEN_SHAPE); not a real token
TOKEN = "hf_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7"


def client(handler: Handler, **kw: object) -> WireClient:
    return WireClient(BASE + "/v1", transport=httpx.MockTransport(handler), **kw)  # type: ignore[arg-type]


def answer(
    body: object = None, *, status: int = 200, ctype: str = "application/json", text: str | None = None
) -> Handler:
    content = text if text is not None else json.dumps(body)
    return lambda request: httpx.Response(status, content=content.encode(), headers={"content-type": ctype})


# -- payloads ---------------------------------------------------------------------------------------------
def test_bench_body_carries_vllm_extras_only_when_asked() -> None:
    body = wire.bench_chat_body("m", "hi", 7, extras=True, continuous_usage=True)
    assert body["stream"] is True and body["max_tokens"] == 7 and body["temperature"] == 0.0
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert (body["min_tokens"], body["ignore_eos"]) == (7, True)
    plain = wire.bench_chat_body("m", "hi", 7, extras=False, continuous_usage=False)
    assert plain["stream_options"] == {"include_usage": True}
    assert "min_tokens" not in plain and "ignore_eos" not in plain


def test_chat_body_sends_tools_and_seed_only_when_given() -> None:
    assert wire.chat_body("m", wire.user_message("x"), 4) == {
        "model": "m",
        "messages": [{"role": "user", "content": "x"}],
        "max_tokens": 4,
        "temperature": 0,
    }
    body = wire.chat_body("m", [], 4, tools=[{"type": "function"}], tool_choice="required", seed=0)
    assert (body["tools"], body["tool_choice"], body["seed"]) == ([{"type": "function"}], "required", 0)


# -- error bodies -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"error": {"message": "boom", "code": 400}}', "boom"),  # OpenAI
        ('{"object": "error", "message": "boom"}', "boom"),  # older vLLM
        ('{"detail": "Not Found"}', "Not Found"),  # FastAPI
        ('{"error": "boom"}', "boom"),
        ("plain\n  text", "plain text"),  # not JSON: the text, on one line
    ],
)
def test_one_reader_for_every_error_body_shape(text: str, message: str) -> None:
    assert wire.server_message(text) == message
    assert wire.error_message(400, text) == f"HTTP 400: {message}"


def test_error_message_is_cut_to_the_limit() -> None:
    assert wire.server_message("x" * 900) == "x" * wire.MESSAGE_LIMIT


# -- SSE and chunks ---------------------------------------------------------------------------------------
def test_sse_decoder_joins_lines_split_across_reads_and_stops_at_done() -> None:
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a"') == []
    assert dec.feed(b': 1}\n\n: keep-alive comment\nevent: x\r\ndata: {"b": 2}\r\n') == [b'{"a": 1}', b'{"b": 2}']
    assert dec.feed(b"data: [1,\r\n") == []  # an event is taken at the blank line that ends it, or once whole
    assert dec.feed(b"data: 2]\r\n\r\n") == [b"[1,\n2]"]
    assert not dec.done
    assert dec.feed(b"data: [DONE]\n\n") == [] and dec.done


def test_sse_decoder_skips_keep_alives_ends_at_done_and_takes_an_unended_last_line() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data:\n\ndata: \r\n\r\n: ping\r\n\r\nretry: 100\n") == []  # keep-alives: no payload
    assert dec.feed(b'data: {"a": 1}\r\n\r\ndata: [DONE]\n\ndata: {"late": 1}\n\n') == [b'{"a": 1}']
    assert dec.done and dec.feed(b'data: {"b": 2}\n\n') == [] and dec.close() == []
    unended = SSEDecoder()  # a body that ends without the last newline (and without [DONE])
    assert unended.feed(b'data: {"a": 1}') == [] and unended.close() == [b'{"a": 1}'] and not unended.done


def test_sse_decoder_joins_an_events_data_lines_with_a_newline() -> None:
    """The SSE spec's own example (WHATWG HTML, "Server-sent events", 9.2.6 "Interpreting an event stream"):
    `data: YHOO` / `data: +2` / `data: 10` is one event whose data is "YHOO\\n+2\\n10"; one space after the
    colon is dropped. A JSON chunk across two `data:` lines is one chunk (it was refused as unparsable), in LF or
    CRLF, and a body that ends after its last `data:` line, without the blank line, still yields it."""
    assert SSEDecoder().feed(b"data: YHOO\ndata: +2\ndata: 10\n\n") == [b"YHOO\n+2\n10"]
    chunk = b'data: {"choices":\ndata:  [], "usage": {"completion_tokens": 4}}\n\n'
    for raw in (chunk, chunk.replace(b"\n", b"\r\n")):
        (payload,) = SSEDecoder().feed(raw)
        assert wire.parse_chunk(payload) == {"choices": [], "usage": {"completion_tokens": 4}}
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a":\ndata: 1') == [] and dec.close() == [b'{"a":\n1']
    done = SSEDecoder()
    assert done.feed(b"data: [DONE]\n") == [] and done.close() == [] and done.done


def test_sse_decoder_reads_events_ended_by_one_newline_as_vllm_bench_serve_does() -> None:
    """A server that ends each event with one newline (no blank line) is read one payload per `data:` line, as vllm
    bench serve 0.32 reads every stream (vllm/benchmarks/lib/endpoint_request_func.py: one chunk per line of the
    body); a whole payload is taken when its line ends (at that read's time, not the next line's), a JSON chunk
    split over lines when it is whole."""
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a": 1}\ndata: {"b": 2}\n') == [b'{"a": 1}', b'{"b": 2}']
    assert dec.feed(b'data: {"c":\n') == []
    assert dec.feed(b"data: 3}\ndata: [DONE]\n") == [b'{"c":\n3}'] and dec.done


def test_sse_decoder_reads_lines_ended_by_a_cr_alone() -> None:
    """The SSE spec's end of line is CRLF, LF or CR alone (WHATWG HTML 9.2.5 "Parsing an event stream": end-of-line
    = ( cr lf / cr / lf )). A CR-only stream was one line until the body's end, its events joined into one
    unparsable payload; a CRLF split between two reads is still one line end (no blank line between)."""
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a": 1}\r\r') == [b'{"a": 1}']
    assert dec.feed(b"data: [1,\rdata: 2]\r\r") == [b"[1,\n2]"]
    assert dec.feed(b"data: [DONE]\r\r") == [] and dec.done
    split = SSEDecoder()
    assert split.feed(b"data: [1,\r") == [] and split.feed(b"\ndata: 2]\r\n\r\n") == [b"[1,\n2]"]


@pytest.mark.parametrize(
    ("first", "piece"),
    [(b'data: {"x": "', b"a" * 65536), (b"data: [[]\n", b"data: ,[]\n" * 6554)],
    ids=["endless-line", "endless-event"],
)
def test_sse_decoder_refuses_an_event_that_never_ends_in_time_linear_in_its_size(first: bytes, piece: bytes) -> None:
    """A server sending one line without end (64 KiB reads, no newline), or one event of `data:` lines that stays a
    valid JSON prefix and never gets its blank line: the stream's error once the event passes MAX_EVENT_BYTES (4 MiB),
    read in time linear in its size. The buffer grew by copying (`bytes +=`: 70 s of the bench's event loop for a
    100 MB line, every other stream's timestamps frozen) and each line or read parsed the whole event again; both
    grew without bound till the request timeout."""
    dec, t0, fed = SSEDecoder(), time.perf_counter(), 0
    dec.feed(first)
    while dec.error is None and fed < 16 << 20 and time.perf_counter() - t0 < 6.0:  # 16 MiB or 6 s at most
        assert dec.feed(piece) == []
        fed += len(piece)
    assert dec.error == "a stream event of more than 4 MiB without its end (an endless line?)", (fed, dec.error)
    assert time.perf_counter() - t0 < 6.0
    assert dec.feed(b"\n\ndata: {}\n\n") == []  # nothing after the error


def test_sse_decoder_drops_a_byte_order_mark_that_starts_the_stream() -> None:
    """The SSE spec strips one UTF-8 BOM at the start of the stream (WHATWG HTML 9.2.5: stream = [ bom ] *event;
    "One leading U+FEFF BYTE ORDER MARK character must be ignored if any are present"), also when it comes split
    over reads; it was kept, so the first line was no `data:` line and the first event (its token: TTFT, the checks'
    reply text) was lost. A BOM later in the stream is data."""
    assert SSEDecoder().feed(b'\xef\xbb\xbfdata: {"a": 1}\n\n') == [b'{"a": 1}']
    split = SSEDecoder()
    assert split.feed(b"\xef") == [] and split.feed(b'\xbb\xbfdata: {"a": 1}\n\n') == [b'{"a": 1}']
    assert [
        wire.is_event_stream(None, h) for h in (b"\xef", b"\xef\xbb\xbf", b"\xef\xbb\xbf: hi", b"\xef\xbb\xbf{")
    ] == [None, None, True, False]  # an answer without a content type: told past the BOM
    later = SSEDecoder()
    assert later.feed(b'data: {"a": 1}\n\n') == [b'{"a": 1}'] and later.feed(b"\xef\xbb\xbfdata: 2\n\n") == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        # vLLM's Anthropic /v1/messages stream (entrypoints/anthropic/serving.py `wrap_data_with_event`, 0.32.0 wheel)
        (b'event: error\ndata: {"type": "error", "error": {"type": "internal_error", "message": "boom"}}\n\n', "boom"),
        (b'event: error\r\ndata: {"message": "boom"}\r\n\r\n', "boom"),  # no chunk rule reads this as an error
        (b"event:error\ndata: upstream boom\n\n", "upstream boom"),  # bare text (it was an unparsable chunk)
        (b"event: error\n\n", "an `event: error` without data"),  # the event type alone says it
        (b"event: error\ndata: " + TOKEN.encode() + b" was refused\n\n", "*** was refused"),  # redacted
    ],
    ids=["vllm-anthropic", "message", "bare-text", "no-data", "redacted"],
)
def test_sse_decoder_takes_an_error_event_as_the_streams_error_whatever_its_data(raw: bytes, message: str) -> None:
    """The SSE spec's `event:` field names the event's type (WHATWG HTML 9.2.6 "Interpreting an event stream"); an
    `error` event is the server's failure, its data the message by the one error-body reader (`server_message`).
    The chunks before it are returned; nothing after it, not even [DONE] (`done` stays False)."""
    dec = SSEDecoder()
    first = sse_event({"content": "a"})
    out = dec.feed(first + raw + b'data: {"late": 1}\n\ndata: [DONE]\n\n')
    assert out == [first[6:].strip()] and dec.error == f"HTTP 200: {message}" and not dec.done
    assert dec.feed(b'data: {"b": 2}\n\n') == [] and dec.close() == []
    unended = SSEDecoder()  # the body ends on the event's last line
    assert unended.feed(raw.rstrip(b"\r\n")) == [] and unended.close() == [] and unended.error == dec.error


def test_sse_decoder_takes_an_event_line_after_a_whole_payload_as_the_next_event() -> None:
    """One newline per event (as vllm bench serve reads streams): `event: error` after a whole chunk's line types the
    next event, not the chunk, which is returned as a chunk."""
    dec = SSEDecoder()
    assert dec.feed(b'data: {"a": 1}\nevent: error\ndata: boom\n') == [b'{"a": 1}']
    assert dec.close() == [] and dec.error == "HTTP 200: boom"
    message = SSEDecoder()  # the default type (`event: message`) is an ordinary event
    assert message.feed(b'event: message\ndata: {"a": 1}\n\n') == [b'{"a": 1}'] and message.error is None


@pytest.mark.parametrize(
    "error",
    [
        # vLLM's chat stream after a 200: the error chunk, then [DONE] (entrypoints/openai/chat_completion/serving.py
        # `chat_completion_stream_generator`; ErrorResponse in serve/engine/protocol.py; 0.32.0 wheel)
        b'data: {"error": {"message": "engine died", "type": "InternalServerError", "param": null, "code": 500}}\n\n',
        b"event: error\ndata: engine died\n\n",
        b'event: error\ndata: {"message": "engine died"}\n\n',  # was a reply of '' (the event skipped, [DONE] its end)
    ],
)
def test_chat_stream_raises_the_servers_message_for_an_error_then_done(error: bytes) -> None:
    events = sse_event({"role": "assistant", "content": ""}) + sse_event({"content": "Hel"}) + error
    with (
        FakeVllm(wire_script=lambda n, b: [(0.0, events + b"data: [DONE]\n\n", True)]) as srv,
        WireClient(srv.url) as c,
    ):
        with pytest.raises(EndpointError, match=r"/v1/chat/completions: error in stream: HTTP 200: engine died$"):
            c.chat_stream(wire.chat_body("fake-model", [], 4))


def test_chunks_must_be_json_objects_and_error_chunks_are_read() -> None:
    assert wire.parse_chunk(b'{"choices": []}') == {"choices": []}
    with pytest.raises(ValueError, match="JSON list"):
        wire.parse_chunk(b"[1, 2]")
    with pytest.raises(ValueError):
        wire.parse_chunk(b"<html>")
    err = b'{"error": {"message": "engine died"}}'
    assert wire.chunk_error(wire.parse_chunk(err), err) == "HTTP 200: engine died"
    flat = b'{"object": "error", "message": "engine died", "type": "InternalServerError", "code": 500}'  # older vLLM
    assert wire.chunk_error(wire.parse_chunk(flat), flat) == "HTTP 200: engine died"
    assert wire.chunk_error({"choices": [], "error": None}, b"") is None
    assert wire.chunk_error({"usage": {"completion_tokens": 4}, "error": None}, b"") is None  # a usage-only chunk


@pytest.mark.parametrize("field", wire.GENERATED_DELTA_FIELDS)
def test_each_generated_delta_field_counts_and_the_role_chunk_does_not(field: str) -> None:
    assert wire.has_generated({"delta": {field: "x"}})
    assert not wire.has_generated({"delta": {"role": "assistant", "content": ""}})
    assert not wire.has_generated({})


def test_an_empty_content_delta_without_a_role_is_a_token_and_the_role_chunk_is_not() -> None:
    # vllm bench serve's rule (vllm/benchmarks/lib/endpoint_request_func.py `_choice_has_streamed_output`, 0.34.0)
    assert wire.empty_token({"delta": {"content": ""}})
    assert not wire.empty_token({"delta": {"role": "assistant", "content": ""}})
    assert not wire.empty_token({"delta": {}}) and not wire.empty_token({"delta": {"content": None}})
    assert not wire.has_generated({"delta": {"content": ""}})  # it carries no text: nothing to join or tokenize


def test_an_empty_content_delta_after_the_first_token_is_one_whatever_role_it_names() -> None:
    # TGI names the role on every delta, a special token's (the EOS) with content "" (router/src/chat.rs); SGLang
    # writes every DeltaMessage field, `role: null` where unset (its protocol.py, model_dump_json without exclude_none)
    tgi_eos = {"delta": {"role": "assistant", "content": ""}, "finish_reason": "stop"}
    assert wire.empty_token(tgi_eos, after_first=True) and not wire.empty_token(tgi_eos)
    assert wire.empty_token({"delta": {"role": None, "content": "", "reasoning_content": None, "tool_calls": None}})
    assert not wire.empty_token({"delta": {"role": "assistant", "content": None}}, after_first=True)  # llama.cpp's


def test_a_tool_call_name_delta_is_generated_and_only_arguments_are_text() -> None:
    name = {"delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function",
                                      "function": {"name": "count_ids", "arguments": ""}}]}}  # fmt: skip
    assert wire.has_generated(name) and wire.generated_text(name) == {}
    legacy = {"delta": {"function_call": {"name": "f", "arguments": '{"a": 1}'}}}
    assert wire.has_generated(legacy) and wire.generated_text(legacy) == {"tool_calls": '{"a": 1}'}


def test_reasoning_sent_under_both_names_is_one_text() -> None:
    """vllm-project/vllm#27752 (merged 2025-11) renamed `reasoning_content` to `reasoning` and kept the old name
    beside it for compatibility until #33402 (2026-01): a delta then carries the same text twice. It was counted
    twice (bench's own count of a server without usage, bench.client generated())."""
    both = {"delta": {"reasoning": "Let me think", "reasoning_content": "Let me think", "content": "Hi"}}
    assert wire.generated_text(both) == {"content": "Hi", "reasoning": "Let me think"}
    assert wire.reasoning_text(both["delta"]) == "Let me think"


# -- /v1/models ------------------------------------------------------------------------------------------
def test_models_reads_vllms_max_model_len_and_resolves_the_served_model() -> None:
    body = {"object": "list", "data": [{"id": "a", "max_model_len": 8192}, {"id": "b"}]}
    with client(answer(body)) as c:
        assert c.models() == [wire.ServedModel("a", 8192), wire.ServedModel("b", None)]
        assert c.served_model(None) == wire.ServedModel("a", 8192)
        assert c.served_model("b").id == "b"
        with pytest.raises(EndpointError, match=r"'c' is not served at http://vllm.test:8000 \(served: a, b\)"):
            c.served_model("c")
    with client(answer({"data": []})) as c, pytest.raises(EndpointError, match="lists no model"):
        c.served_model(None)


@pytest.mark.parametrize("done", [True, False], ids=["done", "no-done"])
def test_chat_stream_ends_at_done_on_a_server_that_holds_the_connection(done: bool) -> None:
    """CRLF events behind `: ping` comments, [DONE] (or not: the final usage chunk is the answer's end,
    `wire.ends_answer`), then the connection held HOLD_S (a real local server, tests/fakes/vllm_server.py
    `wire_script`): the reply is whole at [DONE] or the final usage, not HOLD_S later (without [DONE] it waited
    for the body's end: `onechip check` timed out on such a server)."""
    hold_s = 5.0
    events = [
        sse_event({"role": "assistant", "content": ""}, crlf=True),
        sse_event({"content": "Hello"}, crlf=True),
        sse_event({"content": " world"}, "stop", crlf=True),
        sse_event(None, None, (5, 2), crlf=True),
    ]
    body = b"".join(b": ping\r\n\r\n" + e for e in events) + (b"data: [DONE]\r\n\r\n" if done else b"")
    with FakeVllm(wire_script=lambda n, b: [(0.0, body, True), (hold_s, b"", False)]) as srv, WireClient(srv.url) as c:
        reply = c.chat_stream(wire.chat_body("fake-model", [], 4))
    assert (reply.content, reply.finish_reason, reply.completion_tokens) == ("Hello world", "stop", 2)
    assert reply.latency_ms < hold_s * 1000 / 2


def test_chat_stream_ends_at_the_final_usage_even_when_its_read_ends_mid_done() -> None:
    """The final usage chunk and the first bytes of `data: [DONE]` in one read, the rest in the next: the answer is
    whole at the usage chunk (`wire.ends_answer`) and the torn `data: [DO` is not an event (it was taken as one by
    `close()` and refused as 'stream chunk is not a JSON object')."""
    head = sse_event({"role": "assistant", "content": "Hi"}) + sse_event({}, "stop") + sse_event(None, None, (3, 1))
    parts = [head + b"data: [DO", b"NE]\n\n"]

    def stream(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=iter(parts), headers={"content-type": "text/event-stream"})

    with client(stream) as c:
        reply = c.chat_stream(wire.chat_body("m", [], 4))
    assert (reply.content, reply.finish_reason, reply.completion_tokens) == ("Hi", "stop", 1)


def test_chat_stream_refuses_an_answer_the_body_ended_before_it_was_whole() -> None:
    """The body ends (cleanly) after the role chunk and one content chunk: no [DONE], finish_reason or usage."""
    events = sse_event({"role": "assistant", "content": ""}) + sse_event({"content": "Hel"})
    with FakeVllm(wire_script=lambda n, b: [(0.0, events, True)]) as srv, WireClient(srv.url) as c:
        with pytest.raises(EndpointError, match=re.escape(wire.STREAM_CUT)):
            c.chat_stream(wire.chat_body("fake-model", [], 4))


@pytest.mark.parametrize(
    ("handler", "what"),
    [
        (answer(text=HTML, ctype="text/html"), "answered text/html, not JSON: '<!DOCTYPE html>"),
        (answer(text="{not json", ctype="application/json"), "answer is not valid JSON: '{not json'"),
        (answer(text=HTML, ctype=""), "answer is not valid JSON"),  # no content type: parsed, and refused
        (answer([{"id": "m"}]), "answer is a JSON list, not an object"),
        (answer({"object": "list"}), "answer has no `data` list of models"),
        (answer({"data": [{"object": "model"}]}), "a model entry has no string `id`"),
        (answer({"data": ["m"]}), "a model entry has no string `id`"),
        (answer({"data": [{"id": "m", "max_model_len": "8k"}]}), "`max_model_len` of 'm' is not a positive integer"),
        # vLLM's max_model_len counts tokens, at least 1: -5 made every bench cell 'infeasible', 0 read as not given
        (answer({"data": [{"id": "m", "max_model_len": -5}]}), "`max_model_len` of 'm' is not a positive integer: -5"),
        (answer({"data": [{"id": "m", "max_model_len": 0}]}), "`max_model_len` of 'm' is not a positive integer: 0"),
        # the id is printed on the terminal (check's title): an escape sequence reached it as itself
        (answer({"data": [{"id": "m\x1b[31mred"}]}), "model id 'm\\x1b[31mred' holds a control character"),
        (answer({"data": [{"id": "me/" + TOKEN}]}), "model id 'me/***' holds a secret (a token or key)"),
        (answer({"data": [{"id": "x" * 5_000_000}]}), "a model id of 5,000,000 characters (a name is at most 4,096)"),
    ],
)
def test_malformed_models_answers_are_one_line_endpoint_errors(handler: Handler, what: str) -> None:
    with client(handler) as c, pytest.raises(EndpointError) as info:
        c.models()
    msg = str(info.value)
    assert msg.startswith(f"{BASE}/v1/models: ") and what in msg and "\n" not in msg and TOKEN not in msg


# -- /tokenize -------------------------------------------------------------------------------------------
def test_tokenize_sends_the_chat_template_body_and_reads_count() -> None:
    seen: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json={"count": 12, "max_model_len": 4096, "tokens": [0] * 12})

    with client(handler) as c:
        assert c.tokenize("m", wire.user_message("hi")) == 12
    assert seen == [{"model": "m", "messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": True}]


@pytest.mark.parametrize(
    ("handler", "what"),
    [
        (answer({"tokens": [1, 2]}), "answer has no integer `count`"),
        (answer({"count": "12"}), "answer has no integer `count`"),
        # a request holds at most MAX_POSITIONS tokens (schemas.inputs: 2**26)
        (
            answer({"count": 100_000_000_000}),
            "`count` 100,000,000,000 is more tokens than a request holds (at most 67,108,864)",
        ),
        (answer(text="Internal error", ctype="text/plain"), "answered text/plain, not JSON"),
        (answer(text="12", ctype="application/json"), "answer is a JSON int, not an object"),
    ],
)
def test_malformed_tokenize_answers_are_endpoint_errors(handler: Handler, what: str) -> None:
    with client(handler) as c, pytest.raises(EndpointError) as info:
        c.tokenize("m", [])
    assert str(info.value).startswith(f"{BASE}/tokenize: ") and what in str(info.value)


def test_a_server_without_tokenize_is_a_status_error_the_caller_can_tell_apart() -> None:
    with client(answer({"detail": "Not Found"}, status=404)) as c, pytest.raises(EndpointStatusError) as info:
        c.tokenize("m", [])
    assert (info.value.status_code, info.value.server_message) == (404, "Not Found")
    assert str(info.value) == f"HTTP 404 from {BASE}/tokenize: Not Found"


@pytest.mark.parametrize("body", ["", "   \n"])
def test_an_error_answer_with_no_message_says_the_status_and_url_without_a_dangling_colon(body: str) -> None:
    # an empty 404 body read 'HTTP 404 from URL:' (and a bench row 'HTTP 404: '), as if a message were cut off
    with client(answer(status=404, text=body)) as c, pytest.raises(EndpointStatusError) as info:
        c.tokenize("m", [])
    assert str(info.value) == f"HTTP 404 from {BASE}/tokenize (no message in the answer)"
    assert wire.error_message(404, body) == "HTTP 404 (no message in the answer)"
    with client(answer(status=503, text=body), busy_retries=0) as c, pytest.raises(EndpointBusyError) as busy:
        c.tokenize("m", [])
    assert str(busy.value) == f"HTTP 503 from {BASE}/tokenize: server busy (1 try)"


# -- /metrics, /health, /version --------------------------------------------------------------------------
METRICS = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="a"} 2.0
vllm:num_requests_running{model_name="b"} 1.0
"""


def test_metrics_are_summed_over_labels_and_garbage_is_an_endpoint_error() -> None:
    with client(answer(text=METRICS, ctype="text/plain; version=0.0.4")) as c:
        assert c.metrics()["vllm:num_requests_running"] == 3.0
    with client(answer(text="vllm:x{ 1 2 3", ctype="text/plain")) as c, pytest.raises(EndpointError, match="/metrics"):
        c.metrics()


def test_health_is_a_200_and_never_raises() -> None:
    with client(answer(text="", ctype="")) as c:
        assert c.health()
    with client(answer(text="", status=503)) as c:
        assert not c.health()

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with client(refuse) as c:
        assert not c.health()


def test_version_is_none_without_the_route_and_malformed_otherwise() -> None:
    with client(answer({"version": "0.11.0"})) as c:
        assert c.version() == "0.11.0"
    with client(answer({"detail": "Not Found"}, status=404)) as c:
        assert c.version() is None
    with client(answer(text=HTML, ctype="text/html")) as c, pytest.raises(EndpointError, match="not JSON"):
        c.version()


def test_unreachable_and_timed_out_servers_name_the_url() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("Connection refused", request=request)

    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    with client(refuse) as c, pytest.raises(EndpointError, match=f"cannot reach {BASE}/v1/models: ConnectError"):
        c.models()
    with client(slow, timeout_s=7) as c, pytest.raises(EndpointError, match=f"{BASE}/tokenize: no answer within 7 s"):
        c.tokenize("m", [])


def test_api_key_is_sent_as_a_bearer_token() -> None:
    seen: list[str | None] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(200, json={"data": []})

    with client(handler, api_key="k-123") as c:
        c.models()
    with client(handler) as c:
        c.models()
    assert seen == ["Bearer k-123", None]


# -- chat -------------------------------------------------------------------------------------------------
def test_chat_reads_text_tool_calls_and_usage() -> None:
    body = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"id": "c0", "function": {"name": "get_time", "arguments": "{}"}}],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 3},
    }
    with client(answer(body)) as c:
        reply = c.chat(wire.chat_body("m", [], 4))
    assert reply.content == "" and reply.tool_calls == [{"id": "c0", "name": "get_time", "arguments": "{}"}]
    assert (reply.finish_reason, reply.prompt_tokens, reply.completion_tokens) == ("tool_calls", 9, 3)


@pytest.mark.parametrize("body", [{"object": "chat.completion"}, {"choices": []}, {"choices": ["x"]}])
def test_chat_without_choices_is_an_endpoint_error(body: object) -> None:
    with client(answer(body)) as c, pytest.raises(EndpointError, match="/v1/chat/completions: answer has no choices"):
        c.chat({})


# each was an internal error (AttributeError: 'str' object has no attribute 'get') in check, or a count kept as sent
SHAPES = [
    ({"choices": [{"PART": "x", "finish_reason": "stop"}]}, "PART is not an object with text content: 'x'"),
    ({"choices": [{"PART": {"content": 5}}]}, "PART is not an object with text content: {'content': 5}"),
    ({"choices": [{"PART": {"tool_calls": "x"}}]}, "PART.tool_calls is not a list of tool calls: 'x'"),
    ({"choices": [{"PART": {"tool_calls": [{"function": "f"}]}}]},
     "PART.tool_calls is not a list of tool calls: [{'function': 'f'}]"),
    # the arguments as an object: the note showed the call cut before them, not what was wrong
    ({"choices": [{"PART": {"tool_calls": [{"id": "call_0", "type": "function",
                                            "function": {"name": "count_ids", "arguments": {"where": "id >= 10"}}}]}}]},
     "PART.tool_calls[0].function.arguments is a JSON object, where the OpenAI shape has JSON text: "
     "{'where': 'id >= 10'}"),
    ({"choices": [{"PART": {"content": "a"}, "finish_reason": 5}]}, "finish_reason is not text: 5"),
    ({"choices": [{"PART": {"content": "a"}}], "usage": [1]}, "usage is not an object of counts: [1]"),
    ({"choices": [{"PART": {"content": "a"}}], "usage": {"completion_tokens": "x"}},
     "usage.completion_tokens 'x' is not a count of tokens (a whole number up to 67,108,864)"),
]  # fmt: skip


def _part(body: object, part: str) -> object:
    return json.loads(json.dumps(body).replace("PART", part))


@pytest.mark.parametrize(("body", "said"), SHAPES)
def test_a_chat_answer_of_a_shape_no_server_sends_is_an_endpoint_error(body: object, said: str) -> None:
    with client(answer(_part(body, "message"))) as c, pytest.raises(EndpointError) as info:
        c.chat({})
    assert str(info.value) == f"{BASE}/v1/chat/completions: answer is not a chat completion: " + said.replace(
        "PART", "message"
    )


@pytest.mark.parametrize(("body", "said"), SHAPES)
def test_a_stream_chunk_of_a_shape_no_server_sends_is_an_endpoint_error(body: object, said: str) -> None:
    text = sse(_part(body, "delta"))
    handler = answer(text=text, ctype="text/event-stream")
    with client(handler) as c, pytest.raises(EndpointError) as info:
        c.chat_stream(wire.chat_body("m", [], 4))
    assert str(info.value) == (
        f"{BASE}/v1/chat/completions: stream chunk is not a chat completion chunk: " + said.replace("PART", "delta")
    )


def sse(*chunks: object, done: bool = True) -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + ("data: [DONE]\n\n" if done else "")


def test_chat_stream_joins_content_and_tool_call_deltas() -> None:
    text = sse(
        {"choices": [{"delta": {"role": "assistant", "content": ""}}]},
        {"choices": [{"delta": {"content": "Hi "}}]},
        {
            "choices": [
                {"delta": {"tool_calls": [{"index": 0, "id": "c0", "function": {"name": "f", "arguments": ""}}]}}
            ]
        },
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}}]},
        {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ": 1}"}}]}}]},
        {"choices": [{"delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 4}},
    )
    sent: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})

    with client(handler) as c:
        reply = c.chat_stream(wire.chat_body("m", [], 4))
    assert sent[0]["stream"] is True and sent[0]["stream_options"] == {"include_usage": True}
    assert reply.content == "Hi " and reply.tool_calls == [{"id": "c0", "name": "f", "arguments": '{"a": 1}'}]
    assert (reply.finish_reason, reply.prompt_tokens, reply.completion_tokens) == ("tool_calls", 5, 4)


@pytest.mark.parametrize(
    ("handler", "what"),
    [
        (answer(text=sse({"error": {"message": "engine died"}}), ctype="text/event-stream"), "engine died"),
        (answer(text=sse({"object": "error", "message": "engine died"}), ctype="text/event-stream"), "engine died"),
        (answer(text="data: [1]\n\n", ctype="text/event-stream"), "stream chunk is not a JSON object"),
        (answer(text="data: <html>\n\n", ctype="text/event-stream"), "stream chunk is not a JSON object"),
        (answer(text=HTML, ctype="text/html"), "answered text/html, not an event stream"),
        (answer({"error": {"message": "no tools"}}, status=400), "HTTP 400 from"),
    ],
)
def test_broken_streams_are_endpoint_errors(handler: Handler, what: str) -> None:
    with client(handler) as c, pytest.raises(EndpointError, match="/v1/chat/completions") as info:
        c.chat_stream({})
    assert what in str(info.value)


COMPLETION = {  # vLLM's non-streamed chat completion (ChatCompletionResponse): what a server ignoring `stream` sends
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11},
}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            COMPLETION,
            "a whole chat completion, stream=true ignored, so no TTFT or ITL can be measured "
            "(finish_reason 'stop', content 'Paris.')",
        ),  # fmt: skip
        # an error body in any of the three shapes (server_message), its token redacted (errors.redact)
        ({"error": {"message": f"streaming refused for {TOKEN}", "code": 400}}, "streaming refused for ***"),
        ({"object": "error", "message": "streaming refused"}, "streaming refused"),
        ({"detail": "streaming refused"}, "streaming refused"),
    ],
    ids=["chat-completion", "openai-error", "flat-error", "fastapi-error"],
)
def test_a_json_answer_to_a_streamed_request_fails_saying_what_it_said(body: Json, said: str) -> None:
    """A 200 `application/json` answer to stream=true (a proxy or server that ignores `stream`): it was 'answered
    application/json, not an event stream (text/event-stream)' and nothing more, the server's message dropped. A
    whole chat completion is no stream either (no tokens to time), so it fails too, saying so."""
    with client(answer(body)) as c, pytest.raises(EndpointError) as info:
        c.chat_stream(wire.chat_body("m", [], 4))
    head = f"{BASE}/v1/chat/completions: answered application/json, not an event stream (text/event-stream)"
    assert str(info.value) == f"{head}: {said}" and TOKEN not in str(info.value)


def test_completion_reads_text_and_refuses_a_body_without_choices() -> None:
    with client(answer({"choices": [{"text": " Paris."}]})) as c:
        text, ms = c.completion("m", "The capital of France is")
    assert text == " Paris." and ms >= 0
    with client(answer({"choices": []})) as c, pytest.raises(EndpointError, match="answer has no choices"):
        c.completion("m", "x")


@pytest.mark.parametrize("stream", [False, True], ids=["chat", "chat_stream"])
@pytest.mark.parametrize(
    ("status", "retry_after", "waits"),
    [(429, "7", [7.0] * 3), (503, None, [1.0, 2.0, 4.0]), (429, "3600", [wire.BUSY_WAIT_MAX_S] * 3)],
    ids=["429-retry-after", "503-backoff", "429-capped"],
)
def test_a_busy_answer_is_sent_again_after_its_retry_after_and_stays_busy_apart_from_server_errors(
    status: int, retry_after: str | None, waits: list[float], stream: bool
) -> None:
    """Every chat request answered `status` (busy: RFC 6585 / RFC 9110), `retry_after` in its header: a client with
    busy_retries 3 sends it 4 times, waiting what Retry-After asks (cut to BUSY_WAIT_MAX_S) or 1, 2, 4 s without
    one, then raises EndpointBusyError, counted busy and not as a server error. Before, the first 429 raised at
    once, and a 503 counted as the server failing."""
    with FakeVllm([Reply("Paris.")], fail_status=dict.fromkeys(range(1, 9), status), retry_after=retry_after) as srv:
        with wire.WireClient(srv.url, busy_retries=3) as ep:
            slept: list[float] = []
            ep.sleep = slept.append
            ask = ep.chat_stream if stream else ep.chat
            with pytest.raises(EndpointBusyError, match=rf"HTTP {status} from .*: server busy \(4 tries\)"):
                ask(wire.chat_body(srv.model, wire.user_message("hi"), 4))
        assert slept == waits and len(srv.chat_requests) == 4
        assert (ep.busy, ep.server_errors, ep.answered) == (1, 0, 0)


def test_a_busy_answer_then_an_answer_is_the_answer() -> None:
    """Chat requests 1-2 answered 429 with Retry-After: 0, the third the reply: one answer, two waits of 0 s."""
    with FakeVllm([Reply("Paris.")], fail_status={1: 429, 2: 429}, retry_after="0") as srv:
        with wire.WireClient(srv.url, busy_retries=3) as ep:
            slept: list[float] = []
            ep.sleep = slept.append
            reply = ep.chat(wire.chat_body(srv.model, wire.user_message("hi"), 4))
    assert reply.content == "Paris." and slept == [0.0, 0.0] and (ep.busy, ep.answered) == (0, 1)


# -- the server's key ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("env", "client_key", "engine_key"),
    [
        ({"OPENAI_API_KEY": "k-openai"}, "k-openai", "k-openai"),
        ({"VLLM_API_KEY": "k-vllm"}, "k-vllm", "k-vllm"),  # what `up` says to export: clients sent no key
        ({"OPENAI_API_KEY": "k-openai", "VLLM_API_KEY": "k-vllm"}, "k-openai", "k-vllm"),
        ({"OPENAI_API_KEY": "", "VLLM_API_KEY": ""}, None, None),  # set empty is not set
        ({}, None, None),
    ],
    ids=["openai", "vllm", "both", "empty", "none"],
)
def test_the_key_is_openai_api_key_else_vllm_api_key_and_a_local_engines_is_vllm_api_key_first(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], client_key: str | None, engine_key: str | None
) -> None:
    """A client of a server on another host reads OPENAI_API_KEY first (the openai SDK's and vllm bench serve's
    variable: vllm/benchmarks/lib/endpoint_request_func.py, 0.32.0 wheel), then VLLM_API_KEY (what vLLM requires when
    --api-key is not given: vllm/entrypoints/serve/middleware/register.py, 0.32.0 wheel); an engine on this host (the
    one `up` started inherits this environment) takes VLLM_API_KEY, so for a loopback URL that one comes first."""
    for name in ("OPENAI_API_KEY", "VLLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert wire.api_key_from_env() == wire.api_key_from_env("https://vllm.example.com:8443") == client_key
    for local in ("http://127.0.0.1:8000", "http://localhost:8000", "http://[::1]:8000"):
        assert wire.api_key_from_env(local) == engine_key


@pytest.mark.parametrize("stream", [False, True], ids=["chat", "chat_stream"])
def test_the_key_never_shows_in_an_error_even_when_the_server_echoes_it(
    monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """A gateway that refuses the key and echoes the Authorization header it got (errors.redact hides the value of
    every variable named *API_KEY, whatever its shape: this key has none of the shapes it knows)."""
    key = "engine-key-5f1c9a7e2b"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("VLLM_API_KEY", key)
    sent: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers["authorization"])
        return httpx.Response(401, json={"error": {"message": f"bad credentials: {sent[-1]}", "code": 401}})

    with client(refuse, api_key=wire.api_key_from_env()) as c, pytest.raises(EndpointStatusError) as info:
        (c.chat_stream if stream else c.chat)(wire.chat_body("m", [], 4))
    assert sent == [f"Bearer {key}"] and info.value.status_code == 401
    assert key not in str(info.value) and str(info.value).endswith("bad credentials: Bearer ***")


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://0.0.0.0:8000", True),  # what `vllm serve --host 0.0.0.0` prints; a connect there stays on this host
        ("http://[::]:8000", True),
        ("http://127.0.0.2:8000", True),
        ("http://LOCALHOST.:8000", True),
        ("http://engine.localhost:8000", True),  # RFC 6761 6.3: resolvers answer *.localhost with the loopback
        ("http://[::ffff:127.0.0.1]:8000", True),
        ("http://127.example.com:8000", False),  # a DNS name that only starts like a loopback address
        ("http://127.0.0.1.nip.io:8000", False),
        ("http://localhost.example.com:8000", False),
        ("http://10.0.0.5:8000", False),
    ],
)
def test_a_server_on_this_host_is_told_by_its_address_not_by_how_its_name_begins(
    monkeypatch: pytest.MonkeyPatch, url: str, local: bool
) -> None:
    """The local engine's key (VLLM_API_KEY) goes first to a URL that reaches this machine, whatever form the
    address takes, and never first to a host whose name merely begins with '127.' (a name is not resolved: its
    domain's owner decides where it goes, and there the user's OPENAI_API_KEY is the key meant for another host)."""
    monkeypatch.setenv("OPENAI_API_KEY", "k-openai")
    monkeypatch.setenv("VLLM_API_KEY", "k-vllm")
    assert wire.api_key_from_env(url) == ("k-vllm" if local else "k-openai")


def test_a_health_answer_whose_body_trickles_is_judged_from_its_status_line() -> None:
    """GET /health answered 200 with a body that trickles a byte every 50 ms for 60 s: healthy before the body has
    ended. Before, the body was read whole under httpx's per-read timeout, so readiness polling waited the whole
    60 s (without end against a server that never stops). Judged by order, not by a clock: `healthy` returned while
    the server was still sending, which a loaded machine cannot fake and the body read whole cannot do."""
    import socket
    import threading

    listener = socket.create_server(("127.0.0.1", 0))
    stop, body_ended = threading.Event(), threading.Event()
    length = 1200  # one byte every 50 ms: 60 s of body

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nContent-Type: text/plain\r\n\r\n".encode())
            for _ in range(length):
                if stop.wait(0.05):
                    return
                try:
                    conn.sendall(b" ")
                except OSError:
                    return
            body_ended.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        assert wire.healthy(f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=1.0)
        ended_first = body_ended.is_set()
    finally:
        stop.set()
        thread.join(5)
        listener.close()
    assert not ended_first, "healthy() waited for the whole body"


def test_chat_stream_joins_the_first_choice_only_when_a_server_streams_several() -> None:
    # a server that sends n>1 choices though one was asked (or a proxy fanning out) interleaves them by `index`:
    # every choice's deltas were joined into one reply ('ParisLyon is is'), its tool calls merged by call index
    def chunk(index: int, delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}

    call = {"index": 0, "id": "c1", "function": {"name": "g", "arguments": "{}"}}
    text = sse(
        chunk(0, {"content": "Paris"}),
        chunk(1, {"content": "Lyon"}),
        chunk(0, {"content": " is"}),
        chunk(1, {"tool_calls": [call]}),
        chunk(1, {}, "tool_calls"),
        chunk(0, {}, "stop"),
    )
    with client(answer(text=text, ctype="text/event-stream")) as c:
        reply = c.chat_stream(wire.chat_body("m", [], 4))
    assert (reply.content, reply.tool_calls, reply.finish_reason) == ("Paris is", [], "stop")


# -- gateway errors on control requests ----------------------------------------------------------------------
def _tokenize_answering(statuses: list[int]) -> tuple[WireClient, list[int]]:
    """A client whose /tokenize answers `statuses` in turn (502 with the body vllm-router 0.1.17 sent for a replica
    just killed), then 200 with count 7; the list of statuses answered."""
    answered: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        status = statuses[len(answered)] if len(answered) < len(statuses) else 200
        answered.append(status)
        body = {"count": 7} if status == 200 else {"error": "Backend request failed: error sending request"}
        return httpx.Response(status, json=body)

    return client(handler), answered


def test_a_gateway_error_is_asked_again_after_doubling_waits_and_the_answer_is_the_count() -> None:
    c, answered = _tokenize_answering([502, 504, 500])
    slept: list[float] = []
    count = wire.gateway_retried(lambda: c.tokenize("m", wire.user_message("hi")), 15.0, slept.append)
    assert count == 7 and answered == [502, 504, 500, 200]
    assert slept == [0.5, 1.0, 2.0]  # GATEWAY_BACKOFF_S, doubled each retry


def test_a_gateway_error_past_the_wait_is_raised_with_the_tries_and_the_wait() -> None:
    c, answered = _tokenize_answering([502] * 20)
    slept: list[float] = []
    with pytest.raises(EndpointStatusError, match=r"^HTTP 502 from .*/tokenize: .* \(6 tries over 15 s\)$") as err:
        wire.gateway_retried(lambda: c.tokenize("m", wire.user_message("hi")), 15.0, slept.append)
    assert err.value.status_code == 502 and len(answered) == 6
    assert slept == [0.5, 1.0, 2.0, 4.0, 7.5]  # the last cut to what remains of 15 s


@pytest.mark.parametrize("status", [400, 404, 429])
def test_an_answer_that_is_no_gateway_error_is_raised_at_once(status: int) -> None:
    c, answered = _tokenize_answering([status] * 3)
    slept: list[float] = []
    with pytest.raises(EndpointStatusError, match=rf"^HTTP {status} from "):
        wire.gateway_retried(lambda: c.tokenize("m", wire.user_message("hi")), 15.0, slept.append)
    assert answered == [status] and slept == []


def test_without_a_wait_a_gateway_error_is_raised_as_it_came() -> None:
    c, answered = _tokenize_answering([502])
    with pytest.raises(EndpointStatusError, match=r"^HTTP 502 from .*/tokenize: Backend request failed: [^(]*$"):
        wire.gateway_retried(lambda: c.tokenize("m", wire.user_message("hi")), 0.0, pytest.fail)
    assert answered == [502]
