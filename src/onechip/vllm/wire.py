"""The HTTP wire to a vLLM (OpenAI-compatible) server: what we send, what we accept back, and one client.

Owns, for bench, checks and engine readiness alike:
- request payloads: the benchmark's streamed chat body with vLLM's extras (`bench_chat_body`), plain or
  streamed chat with tools for the checks and readiness (`chat_body`), and vLLM's /tokenize body;
- SSE parsing (`SSEDecoder`, which reads an `event: error` too; `parse_chunk`, `chunk_error`) and the
  generated-delta rules (`has_generated`, `empty_token`);
- the one error-body reader (`server_message`, `error_message`);
- the control-plane calls: models (with vLLM's `max_model_len`), tokenize, metrics, health, version, and
  the checks' chat calls, on `WireClient`.

Two HTTP stacks, on purpose, and no third:
- measured streaming stays on aiohttp (bench/client.py): it parses HTTP in C and hands over everything one
  socket read brought, ~10-12 us of client CPU per streamed token against 52-91 us with httpx
  (`python benchmarks/client_ceiling.py`). It uses this module's payload builders and parsing helpers, so
  the two stacks read the wire the same way;
- everything else goes through `WireClient`, one synchronous httpx client. Async callers (the bench
  runner) run its calls in a thread (`asyncio.to_thread`); there is no httpx async client and no openai SDK.

Every answer is validated here, where it enters: a 2xx answer that is not JSON (by content type or by
parse), or JSON of the wrong shape (an HTML page, a list where an object belongs, a missing field such as
/tokenize without `count`), raises `EndpointError` with one line naming the URL and what was wrong; a non-2xx
answer raises `EndpointStatusError` with the status and the server's own message.

vLLM facts used here (docs.vllm.ai, OpenAI-compatible server): the extra chat parameters `min_tokens`,
`ignore_eos` and `stream_options.continuous_usage_stats` (usage on every chunk); `POST /tokenize` with
`messages` and `add_generation_prompt` answers `{"count": N, ...}`; `/v1/models` entries carry
`max_model_len`; `/metrics` is Prometheus text; `/health` answers 200 with an empty body; `/version`
answers `{"version": "0.x.y"}`. Error bodies come as OpenAI `{"error": {"message": ...}}`, older vLLM
`{"object": "error", "message": ...}` or FastAPI `{"detail": ...}`.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import orjson

from onechip.errors import NO_MESSAGE, EndpointBusyError, EndpointError, EndpointStatusError, looks_secret, redact
from onechip.retry_after import retry_after_s
from onechip.schemas.common import base_root
from onechip.schemas.inputs import MAX_POSITIONS, MAX_TEXT, shown

CONNECT_TIMEOUT_S = 5.0  # a local or LAN server accepts a connection in well under this
MESSAGE_LIMIT = 500  # characters of a server's error message kept
# an answer to a streamed request that is no event stream is judged from its headers and read only to say what it
# said: at most SAID_BYTES bytes for at most SAID_S seconds, so a server trickling an endless body holds no request
# till its timeout and no memory beyond these (a whole chat completion of a short answer is ~1 KB)
SAID_BYTES = 64 * 1024
SAID_S = 2.0
# answers that say "busy, come back later": 429 too many requests (RFC 6585 section 4: a rate limiter, a gateway in
# front of the server), 503 service unavailable (RFC 9110 section 15.6.4: overloaded); each may carry Retry-After
BUSY_STATUSES = (429, 503)
BUSY_BACKOFF_S = 1.0  # the wait before the first retry of a busy answer without Retry-After, doubled each retry
BUSY_WAIT_MAX_S = 30.0  # the longest one wait for a busy server (a Retry-After asking more is cut to this)
# answers a gateway gives for a backend it could not reach: 502 bad gateway, 503 unavailable, 504 gateway timeout (RFC
# 9110 sections 15.6.3-15.6.5), and 500, vllm-router 0.1.17's answer to a GET it could not send to a replica just
# killed ('Request failed: error sending request for url ...'; 502 'Backend request failed' to a POST; measured here)
GATEWAY_STATUSES = (500, 502, 503, 504)
GATEWAY_BACKOFF_S = 0.5  # the wait before the first retry of a gateway error (gateway_retried), doubled each retry
# a streamed answer is whole once [DONE], a finish_reason or a final usage came; a body that ended before all three
STREAM_CUT = "stream ended without [DONE], a finish_reason or a final usage chunk (cut mid-way?)"

# Delta fields that carry generated tokens. vLLM's reasoning parsers use `reasoning_content` (older) or
# `reasoning` (newer); reasoning tokens are generated tokens, so they start TTFT too. A tool call is generated
# output as well: its first delta (OpenAI streaming: index, id, type, function.name, arguments "") comes once
# the parser has read the name the model generated, so that delta is the first token; `function_call` is the
# legacy OpenAI form. The same rule as `vllm bench serve` (vllm/benchmarks/lib/endpoint_request_func.py
# `_choice_has_streamed_output`, vLLM 0.34.0 sdist).
REASONING_FIELDS = ("reasoning_content", "reasoning")
GENERATED_DELTA_FIELDS = ("content", *REASONING_FIELDS, "tool_calls", "function_call")

Json = dict[str, Any]
_T = TypeVar("_T")


# -- payloads -----------------------------------------------------------------------------------------
def user_message(text: str) -> list[Json]:
    """`[{"role": "user", "content": text}]`: one user turn."""
    return [{"role": "user", "content": text}]


def system_message(text: str) -> Json:
    return {"role": "system", "content": text}


def replayed_tool_call(call_id: str, name: str, arguments: Json) -> list[Json]:
    """An assistant tool call and a placeholder for its result, as history to replay (agent workload).

    The call is sent as the assistant's text in the Hermes `<tool_call>` form (what SmolLM2, Qwen and Hermes
    models emit), not as OpenAI `tool_calls`: chat templates that render only `content` (SmolLM2's) would drop
    a `tool_calls` field and its tokens. Returns [assistant message, tool message with empty content]; the
    caller fills the tool message's `content`. Templates that allow only alternating user/assistant roles
    (Gemma 3's) refuse the `tool` role: the server answers 400 and the cell fails with its message.
    """
    text = "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"
    return [
        {"role": "assistant", "content": text},
        {"role": "tool", "tool_call_id": call_id, "content": ""},
    ]


def bench_chat_body(
    model: str,
    content: str | list[Json],
    output_tokens: int,
    *,
    extras: bool,
    continuous_usage: bool,
    include_usage: bool = True,
) -> Json:
    """A streamed chat-completions body asking for exactly `output_tokens` tokens where the server allows.

    `content` is one user message's text, or the whole message list (agent sessions). `extras` adds vLLM's
    min_tokens + ignore_eos; `include_usage` asks for the final usage chunk (OpenAI's `stream_options`), and
    `continuous_usage` for usage on every chunk too; without `include_usage` no `stream_options` is sent at all
    (a server that predates it refuses the field).
    """
    body: Json = {
        "model": model,
        "messages": user_message(content) if isinstance(content, str) else content,
        "max_tokens": output_tokens,
        "temperature": 0.0,
        "stream": True,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
        if continuous_usage:
            body["stream_options"]["continuous_usage_stats"] = True
    if extras:
        body["min_tokens"] = output_tokens
        body["ignore_eos"] = True
    return body


def chat_body(
    model: str,
    messages: list[Json],
    max_tokens: int,
    *,
    tools: list[Json] | None = None,
    tool_choice: Any = None,
    seed: int | None = None,
) -> Json:
    """A chat-completions body at temperature 0 (the checks' and readiness' requests); `stream` is set by
    `WireClient.chat` / `chat_stream`. `tools`, `tool_choice` and `seed` are sent only when given."""
    body: Json = {"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": 0}
    if tools is not None:
        body["tools"] = tools
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    if seed is not None:
        body["seed"] = seed
    return body


def tokenize_body(model: str, messages: list[Json]) -> Json:
    """vLLM POST /tokenize body for chat messages with the chat template and generation prompt applied."""
    return {"model": model, "messages": messages, "add_generation_prompt": True}


def text_tokenize_body(model: str, text: str) -> Json:
    """vLLM POST /tokenize body for generated text, without special tokens: how `vllm bench serve` counts the
    output of a server that sends no usage (`tokenizer(generated_text, add_special_tokens=False)`,
    vllm/benchmarks/serve.py `calculate_metrics`, 0.11.0)."""
    return {"model": model, "prompt": text, "add_special_tokens": False}


# -- answers: error bodies, SSE, chunks ---------------------------------------------------------------
def server_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """The server's message from an error body (any of the three shapes in the module docstring), else the
    raw text; whitespace collapsed to one line, redacted (errors.redact: a proxy that echoes the request's token, a
    server that names its key), at most `limit` characters."""
    msg = text
    try:
        data = orjson.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        if isinstance(err, dict) and err.get("message"):
            msg = str(err["message"])
        elif isinstance(err, str):
            msg = err
        elif data.get("message"):
            msg = str(data["message"])
        elif data.get("detail"):
            msg = str(data["detail"])
    return redact(" ".join(msg.split()))[:limit]  # redacted before it is cut, while a secret still has its shape


def error_message(status: int, text: str, limit: int = MESSAGE_LIMIT) -> str:
    """`HTTP <status>: <server message>` from a status and an error body (an empty or blank body: errors.NO_MESSAGE
    in place of the message)."""
    said = server_message(text, limit)
    return f"HTTP {status}: {said}" if said else f"HTTP {status} {NO_MESSAGE}"


_BOM = b"\xef\xbb\xbf"  # UTF-8 byte order mark
# the largest stream event read (a vLLM chunk is one token's delta, well under 1 KiB; a tool call's whole arguments in
# one event, tens of KiB): a longer one is the stream's error, so a server sending an endless line holds no memory
MAX_EVENT_BYTES = 4 << 20
WHOLE_LINES = 8  # the most `data:` lines of an event read as whole without its blank line (SSEDecoder._whole)


class SSEDecoder:
    """Server-sent events to `data:` payloads. Feed it raw bytes as they arrive.

    As the SSE spec (WHATWG HTML "Server-sent events", event stream interpretation) reads them: lines end in LF,
    CRLF or CR alone and may be split across reads (a CRLF too); an event is its `data:` lines (one space after the
    colon dropped), joined with LF, taken at the blank line that ends it or, sooner, at the end of a read that leaves
    it a whole JSON value (_whole: a server that ends each event with one newline, as vllm bench serve reads every
    stream line by line), so one JSON chunk may span several `data:` lines; comment lines (`: ping` keep-alives),
    `id:` and `retry:` are skipped, and so is an event with no data (a `data:` keep-alive); one UTF-8 BOM that starts
    the stream is dropped. `done` turns True at a
    `data: [DONE]` event, and nothing after it is returned. `close()` at the end of the body takes a last event that
    no blank line ended (the spec drops it; a server that closes right after its last `data:` line meant it whole,
    and a torn one fails to parse).

    An `event: error` event is the server saying the request failed, whatever its data (the SSE spec's event type;
    vLLM's Anthropic /v1/messages stream sends `event: error` with `{"type": "error", "error": {...}}`,
    entrypoints/anthropic/serving.py `wrap_data_with_event`, 0.32.0 wheel; other servers send `{"message": ...}` or
    bare text, which no chunk rule reads as an error): it is not returned as a payload; `error` turns to its message
    (`error_message`: `HTTP 200: ...`, redacted) and nothing after it is returned, as after [DONE]. An `event:` line
    after a whole JSON payload starts a new event, as a `data:` line does (a server that ends each event with one
    newline).
    """

    def __init__(self) -> None:
        self._buf = bytearray()  # appended to in place: a long line costs its length, not its length squared
        self._size = 0  # bytes of the `data:` lines of the event being read
        self._first = True  # no byte read yet (a leading BOM is dropped)
        self._data: list[bytes | bytearray] = []  # the `data:` lines of the event being read
        self._event = b""  # the `event:` type of the event being read ("" = the spec's default, "message")
        self.done = False
        self.error: str | None = None  # the message of an `event: error` event

    def feed(self, data: bytes) -> list[bytes]:
        """The payloads (stripped, `[DONE]` excluded) of the events that `data` finished."""
        self._buf += data
        if self._first:  # the stream's first bytes: one BOM is dropped (the spec's `stream = [ bom ] *event`)
            if len(self._buf) < len(_BOM) and _BOM.startswith(self._buf):
                return []
            self._buf, self._first = self._buf.removeprefix(_BOM), False
        if self.error is None and len(self._buf) + self._size > MAX_EVENT_BYTES:
            self.error = f"a stream event of more than {MAX_EVENT_BYTES >> 20} MiB without its end (an endless line?)"
        if self.done or self.error is not None or (b"\n" not in data and b"\r" not in data):
            return []
        buf, held = self._buf, bytearray()
        if b"\r" in buf:  # CRLF and a CR alone end a line as LF does; a last CR may be a CRLF's first half: kept
            buf, held = (buf[:-1], bytearray(b"\r")) if buf.endswith(b"\r") else (buf, held)
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = buf.split(b"\n")
        self._buf = lines.pop() + held
        out: list[bytes] = []
        for line in lines:
            if line.startswith(b"data:"):
                if self._data and self._whole() and self._dispatch(out):
                    break
                self._data.append(line[6:] if line[5:6] == b" " else line[5:])
                self._size += len(self._data[-1])
                if self._data[0].strip() == b"[DONE]" and self._dispatch(out):  # the end needs no blank line
                    break
            elif line.startswith(b"event:"):
                if self._data and self._whole() and self._dispatch(out):
                    break
                self._event = bytes(line[6:].strip())
            elif not line and self._dispatch(out):
                break
            elif line.startswith(b"{") and (said := _bare_error(bytes(line))) is not None:
                if self._data and self._whole():  # the event before it, ended by it
                    self._dispatch(out)
                self.error = said
                break
        else:  # a whole payload left without its blank line (one newline per event, or the blank line in a later read)
            if self._data and self._whole():
                self._dispatch(out)
        return out

    def _whole(self) -> bool:
        """Whether the event being read is already a whole JSON value, with no blank line after it yet: a server
        that ends each event with one newline, as vllm bench serve reads streams (one payload per line), is read so
        too; a JSON chunk split over lines is not whole until its last line. An event of more than WHOLE_LINES lines
        waits for its blank line (the spec's end): parsing it at each line or read cost its size squared."""
        if len(self._data) > WHOLE_LINES:
            return False
        try:
            orjson.loads(b"\n".join(self._data))
        except orjson.JSONDecodeError:
            return False
        return True

    def _dispatch(self, out: list[bytes]) -> bool:
        """End the event being read: its payload onto `out` (none for a keep-alive); True at [DONE] or an error
        event (`error` set)."""
        payload, event = b"\n".join(self._data).strip(), self._event
        self._data, self._event, self._size = [], b"", 0
        if event == b"error":  # dispatched even without data: the event type alone says the request failed
            self.error = error_message(200, payload.decode("utf-8", "replace") or "an `event: error` without data")
        elif payload == b"[DONE]":
            self.done = True
        elif payload:
            out.append(payload)
        return self.done or self.error is not None

    def close(self) -> list[bytes]:
        """The payload of a last event the body ended without a blank line ([] when none)."""
        out = self.feed(b"\n") if self._buf else []
        if not self.done and self.error is None and (self._data or self._event):
            self._dispatch(out)
        return out


def _bare_error(line: bytes) -> str | None:
    """The message (chunk_error's) of a line that is a whole JSON error object without `data:`: a server or proxy
    that writes its error raw into the event stream it started (`{"error": {"message": ..., "code": 500}}`), which
    the SSE spec skips as a field of unknown name; None for any other line."""
    try:
        return chunk_error(parse_chunk(line), line)
    except ValueError:
        return None


def parse_chunk(payload: bytes) -> Json:
    """One stream chunk as a dict. Raises ValueError when it is not JSON or not a JSON object."""
    obj = orjson.loads(payload)
    if not isinstance(obj, dict):
        shown = redact(payload.decode("utf-8", "replace"))[:80]
        raise ValueError(f"stream chunk is a JSON {type(obj).__name__}, not an object: {shown!r}")
    return obj


def chunk_error(obj: Json, payload: bytes) -> str | None:
    """The message of an in-stream error chunk, else None: after a 200 vLLM sends `{"error": {...}}`, older vLLM
    the flat `{"object": "error", "message": ...}` (either shape of the module docstring); OpenRouter's mid-stream
    error is a chunk with both `error` and `choices` (finish_reason "error", openrouter.ai/docs "Errors": "Mid-Stream
    Errors"), which read as a whole answer when a chunk with choices was never an error."""
    if obj.get("error") or (obj.get("object") == "error" and "choices" not in obj):  # not `"error": null`
        return error_message(200, payload.decode("utf-8", "replace"))
    return None


def ends_answer(obj: Json, finished: bool) -> bool:
    """True for the chunk after which a stream has nothing left but `data: [DONE]`: the usage-only chunk (`choices`
    empty) that `stream_options.include_usage` asks for, once the choice's finish_reason came (`finished`). The
    OpenAI API reference (chat streaming, `stream_options`): "an additional chunk will be streamed before the data:
    [DONE] message ... the choices field will always be an empty array"; vLLM sends it last, with the counts that
    the per-chunk usage leaves out (prompt_tokens_details.cached_tokens). A server that then stalls has answered."""
    return finished and not obj.get("choices") and bool(obj.get("usage"))


def has_generated(choice: Json) -> bool:
    """True when a streamed choice's delta carries generated text, reasoning or a tool call (not the role)."""
    delta = choice.get("delta") or {}
    return isinstance(delta, dict) and any(delta.get(f) for f in GENERATED_DELTA_FIELDS)


def empty_token(choice: Json, after_first: bool = False) -> bool:
    """True when a streamed choice's delta is `content: ""` that is a generated token decoding to no text (a special
    token under skip_special_tokens, the EOS included), as `vllm bench serve` counts it (vLLM 0.34.0
    `_choice_has_streamed_output`); the opening chunk carries the role and is not one. `after_first`: a token came
    before it in this answer, so it is no opening chunk whatever role it names: TGI names the role on every delta
    (router/src/chat.rs: a special token's delta is `{"role": "assistant", "content": ""}`), where vllm bench serve
    loses the token (a TGI answer that ends at its EOS, as every one does without ignore_eos, had its TPOT over
    n - 1 tokens cut by one gap). A `role: null` names no role (SGLang writes every delta field, null where unset)."""
    delta = choice.get("delta")
    return isinstance(delta, dict) and delta.get("content") == "" and (after_first or not delta.get("role"))


def generated_text(choice: Json) -> dict[str, str]:
    """The generated text a streamed choice's delta carries, by GENERATED_DELTA_FIELDS field (tool calls and a
    legacy function call: their arguments; the reasoning once, as `reasoning`, where a server sends it under both
    REASONING_FIELDS names, old and new, in one delta); fields without text are left out."""
    delta = choice.get("delta") or {}
    out = {"content": str(delta["content"])} if delta.get("content") else {}
    if reasoning := reasoning_text(delta):
        out["reasoning"] = reasoning
    calls = [*(delta.get("tool_calls") or []), {"function": delta.get("function_call")}]
    args = "".join(str((c.get("function") or {}).get("arguments") or "") for c in calls if isinstance(c, dict))
    if args:
        out["tool_calls"] = args
    return out


_SSE_STARTS = (b"data:", b"event:", b"id:", b"retry:", b":")  # how the first line of an event stream starts


def is_event_stream(content_type: str | None, head: bytes = b"") -> bool | None:
    """Whether a 200 answer to a streamed request is an event stream: text/event-stream is, another content type is
    not; without one, its first bytes `head` tell: an event stream's first non-blank line starts with an SSE field
    (`data:`, `event:`, `id:`, `retry:`) or a comment (`:`), a JSON body (a whole completion, an error object) or
    text starts otherwise. None while `head` is too short to tell (read more; a body that ends first is read as a
    stream: STREAM_CUT)."""
    if content_type:
        return "text/event-stream" in content_type.lower()
    if len(head) < len(_BOM) and _BOM.startswith(head):  # nothing yet, or a BOM's first bytes
        return None
    start = head.removeprefix(_BOM).lstrip()  # SSEDecoder drops a leading BOM
    if any(start.startswith(s) for s in _SSE_STARTS):
        return True
    return None if any(s.startswith(start) for s in _SSE_STARTS) else False


def said(reads: Iterator[bytes], head: bytes = b"") -> str:
    """What the body of an answer that is not the one asked for says, as text (undecodable bytes replaced): `head`
    (read already) and then `reads` (the body's reads, blocking) up to SAID_BYTES bytes, or for SAID_S seconds of
    the body's reads, or to its end, whichever comes first (a transport error ends it too: what came is kept)."""
    buf, deadline = bytearray(head), time.monotonic() + SAID_S
    try:
        while len(buf) < SAID_BYTES and time.monotonic() < deadline:
            data = next(reads, None)
            if data is None:
                break
            buf += data
    except httpx.HTTPError:
        pass
    return bytes(buf[:SAID_BYTES]).decode("utf-8", "replace")


def not_event_stream(url: str, content_type: str | None, text: str) -> str:
    """Why a 200 answer of `content_type` to a streamed request failed, with what its body `text` said: a whole,
    non-streamed chat completion (a server or proxy that ignored stream=true; with no first token to time it is no
    sample, not one with a made-up TTFT and ITL, and the streamed tool-call check has no stream to judge), else the
    server's message (`server_message`: an error body of any shape, or the text; redacted)."""
    media = (content_type or "no content type").split(";")[0]
    head = f"{url}: answered {media}, not an event stream (text/event-stream)"
    try:
        data = orjson.loads(text)
        reply = _reply_from_body(data, url) if isinstance(data, dict) else None
    except (ValueError, EndpointError):  # not JSON; JSON but no chat completion (an error body)
        reply = None
    if reply is None:
        return f"{head}: {server_message(text)}"
    return (
        f"{head}: a whole chat completion, stream=true ignored, so no TTFT or ITL can be measured (finish_reason "
        f"{reply.finish_reason!r}, content {_excerpt(reply.content, 80)})"
    )


@dataclass(frozen=True)
class ServedModel:
    """One entry of GET /v1/models: the served name and, on vLLM, its max model length in tokens."""

    id: str
    max_model_len: int | None = None


@dataclass
class ChatReply:
    """A chat completion, plain or reassembled from a stream."""

    content: str = ""
    reasoning: str = ""  # what a reasoning parser split off (REASONING_FIELDS), apart from content
    tool_calls: list[Json] = field(default_factory=list)  # [{"id", "name", "arguments" (JSON text)}]
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    raw: Json | None = None  # the non-streamed body


def chat_shape_error(obj: Json, part: str) -> str | None:
    """What is wrong with the shape of a chat completion (`part` 'message') or a stream chunk of one ('delta'), None
    when nothing is: `choices` a list of objects, each one's `part` an object, its content text, its tool_calls a list
    of objects (index a whole number, function an object, name and arguments text), its finish_reason text; `usage`
    an object, its prompt_tokens_details an object, each count a whole number of tokens a request can hold
    (MAX_POSITIONS; one below 0 is the bench client's own failure, usage_below_zero). A `message: "x"`, `usage: [1]`
    or `choices: "x"` stopped check and bench on an internal error; usage prompt_tokens 1e30 on a ValidationError."""
    choices, usage = obj.get("choices"), obj.get("usage")
    if choices is not None and not (isinstance(choices, list) and all(isinstance(c, dict) for c in choices)):
        return f"choices is not a list of objects: {shown(choices)}"
    for choice in choices or []:
        said, finish = choice.get(part), choice.get("finish_reason")
        if not isinstance(finish, str | None):
            return f"finish_reason is not text: {shown(finish)}"
        if not isinstance(said, dict | None) or not isinstance((said or {}).get("content"), str | None):
            return f"{part} is not an object with text content: {shown(said)}"
        calls = (said or {}).get("tool_calls")
        for i, call in enumerate(calls if isinstance(calls, list) else []):
            fn = call.get("function") if isinstance(call, dict) else None
            args = fn.get("arguments") if isinstance(fn, dict) else None
            if isinstance(args, dict | list):  # a client json.loads the arguments' text before calling its tool
                kind = "object" if isinstance(args, dict) else "array"
                return (
                    f"{part}.tool_calls[{i}].function.arguments is a JSON {kind}, where the OpenAI shape has JSON "
                    f"text: {shown(args)}"
                )
        if calls is not None and not (isinstance(calls, list) and all(_tool_call_shape(c) for c in calls)):
            return f"{part}.tool_calls is not a list of tool calls: {shown(calls)}"
    if usage is None:
        return None
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    if not isinstance(usage, dict) or not isinstance(details, dict | None):
        return f"usage is not an object of counts: {shown(usage)}"
    counts = {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")}
    counts["prompt_tokens_details.cached_tokens"] = (details or {}).get("cached_tokens")
    for name, count in counts.items():
        if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count > MAX_POSITIONS):
            return f"usage.{name} {shown(count)} is not a count of tokens (a whole number up to {MAX_POSITIONS:,})"
    return None


def _tool_call_shape(call: Any) -> bool:
    """True for a tool call (or a streamed piece of one) of the OpenAI shape chat_shape_error takes."""
    if not isinstance(call, dict) or not isinstance(call.get("index", 0), int) or isinstance(call.get("index"), bool):
        return False
    fn = call.get("function")
    return fn is None or (
        isinstance(fn, dict) and all(isinstance(fn.get(k), str | None) for k in ("name", "arguments"))
    )


def reasoning_text(part: Json) -> str:
    """The reasoning text of a message or stream delta: `reasoning_content` (vLLM's reasoning parsers, older) or
    `reasoning` (newer; REASONING_FIELDS), '' where neither is text."""
    return next((text for name in REASONING_FIELDS if isinstance(text := part.get(name), str)), "")


def _reply_from_body(out: Json, url: str) -> ChatReply:
    """A non-streamed chat completion body → ChatReply. Raises EndpointError on a body without choices, or of a shape
    no server sends (chat_shape_error)."""
    choices = out.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise EndpointError(f"{url}: answer has no choices: {_excerpt(out)}")
    if problem := chat_shape_error(out, "message"):
        raise EndpointError(f"{url}: answer is not a chat completion: {problem}")
    choice = choices[0]
    msg = choice.get("message") or {}
    calls = [
        {
            "id": c.get("id"),
            "name": (c.get("function") or {}).get("name"),
            "arguments": (c.get("function") or {}).get("arguments"),
        }
        for c in (msg.get("tool_calls") or [])
    ]
    usage = out.get("usage") or {}
    return ChatReply(
        content=msg.get("content") or "",
        reasoning=reasoning_text(msg),
        tool_calls=calls,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=usage.get("prompt_tokens"),
        completion_tokens=usage.get("completion_tokens"),
        raw=out,
    )


class _StreamJoiner:
    """Reassembles streamed chunks into a ChatReply: content joined, each tool call's argument deltas joined, of the
    first choice (`index` 0, as a non-streamed reply is read from choices[0])."""

    def __init__(self) -> None:
        self.reply = ChatReply()
        self.calls: dict[int, Json] = {}
        self.complete = False  # the final usage chunk came (`ends_answer`)

    def add(self, chunk: Json) -> None:
        self.complete = self.complete or ends_answer(chunk, self.reply.finish_reason is not None)
        usage = chunk.get("usage")
        if usage:
            self.reply.prompt_tokens = usage.get("prompt_tokens")
            self.reply.completion_tokens = usage.get("completion_tokens")
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:  # a server streaming n > 1 choices (one was asked) interleaves them
                continue
            delta = choice.get("delta") or {}
            self.reply.content += delta.get("content") or ""
            self.reply.reasoning += reasoning_text(delta)
            for tc in delta.get("tool_calls") or []:
                slot = self.calls.setdefault(int(tc.get("index", 0)), {"id": None, "name": None, "arguments": ""})
                fn = tc.get("function") or {}
                slot["id"] = tc.get("id") or slot["id"]
                slot["name"] = fn.get("name") or slot["name"]
                slot["arguments"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                self.reply.finish_reason = choice["finish_reason"]

    def done(self) -> ChatReply:
        self.reply.tool_calls = [self.calls[i] for i in sorted(self.calls)]
        return self.reply


def _excerpt(value: Any, n: int = 120) -> str:
    """The first `n` characters of an answer that is not what was asked, one line, for an EndpointError: redacted
    before the cut (errors.redact), as server_message is, since the error goes into checks.json, transcripts and
    the CLI line (a 200 `{"error": {"message": "bad token hf_..."}}` was stored whole)."""
    text = value if isinstance(value, str) else orjson.dumps(value).decode("utf-8", "replace")
    return repr(" ".join(redact(text).split())[:n])


def _is_json_type(content_type: str | None) -> bool:
    """Missing (lenient) or a JSON media type (`application/json`, `...+json`)."""
    if not content_type:
        return True
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus exposition text -> {sample name: value summed over labels} (one engine may label several
    models). Raises ValueError if malformed."""
    from prometheus_client.parser import text_string_to_metric_families  # 60 ms: only when metrics are read

    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + float(sample.value)
    return out


def gateway_retried(call: Callable[[], _T], wait_s: float, sleep: Callable[[float], None] = time.sleep) -> _T:
    """`call()` (an idempotent control request: /v1/models, /tokenize), made again while it raises
    EndpointStatusError of GATEWAY_STATUSES and `wait_s` seconds are not spent: waits of GATEWAY_BACKOFF_S doubled
    each retry, the last cut to what remains. A gateway answers so until it stops routing to a dead backend (its
    health checks): the caller's `wait_s` says how long that takes. Raises the last such error, its message saying
    the tries and the wait ('(3 tries over 1 s)'), and any other error of `call` at once."""
    waited_s, tries = 0.0, 1
    while True:
        try:
            return call()
        except EndpointStatusError as exc:
            if exc.status_code not in GATEWAY_STATUSES:
                raise
            if waited_s >= wait_s:
                if tries == 1:
                    raise
                said = f"{exc.server_message} ({tries} tries over {waited_s:g} s)"
                raise type(exc)(exc.status_code, said, exc.url) from None
            step_s = min(GATEWAY_BACKOFF_S * 2 ** (tries - 1), wait_s - waited_s)
            sleep(step_s)
            waited_s, tries = waited_s + step_s, tries + 1


# -- the control-plane client ---------------------------------------------------------------------------
class WireClient:
    """One synchronous httpx client for one server (`base_url` with or without `/v1`). Thread-safe (the
    bench samples /metrics from a thread). Every method raises EndpointError (EndpointStatusError for a
    non-2xx answer) unless it says otherwise. `api_key` is sent as `Authorization: Bearer ...` (vLLM's
    `--api-key`). `transport` lets tests use `httpx.MockTransport`."""

    def __init__(
        self,
        base_url: str,
        timeout_s: float = 180.0,
        *,
        api_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        busy_retries: int = 0,
    ):
        self.root = base_root(base_url)
        self.timeout_s = timeout_s
        # a busy answer (BUSY_STATUSES) is sent again up to `busy_retries` times, after its Retry-After or the
        # doubling backoff; one still busy raises EndpointBusyError and counts in `busy`, not in `server_errors`
        self.busy_retries, self.busy, self.last_busy = busy_retries, 0, ""
        self.sleep = time.sleep
        # what the server made of the work sent (POST: chat, completions, tokenize; not /v1/models, /metrics), so
        # `check` tells a server failing every request from a model failing its probes: answered (a generation's 2xx),
        # answered 5xx, or no answer at all (the last failure's line kept)
        self.answered = self.server_errors = self.unanswered = 0
        self.last_failure = ""
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        self._client = httpx.Client(
            base_url=self.root, timeout=self._timeout(timeout_s), headers=headers, transport=transport
        )

    @staticmethod
    def _timeout(total_s: float) -> httpx.Timeout:
        return httpx.Timeout(total_s, connect=min(total_s, CONNECT_TIMEOUT_S))

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests and validation --------------------------------------------------------------------
    def _send(self, method: str, path: str, body: Json | None = None, timeout_s: float | None = None) -> httpx.Response:
        """One request; transport failures and non-2xx answers raised as EndpointError(s)."""
        url, t = self.root + path, timeout_s or self.timeout_s
        for retry in range(self.busy_retries + 1):
            try:
                resp = self._whole(method, path, body, t)
            except httpx.TimeoutException as exc:
                error = EndpointError(f"{url}: no answer within {t:g} s ({type(exc).__name__})")
                raise self._failed(error, method) from exc
            except httpx.ConnectError as exc:
                raise self._failed(EndpointError(f"cannot reach {url}: {type(exc).__name__}: {exc}"), method) from exc
            except httpx.HTTPError as exc:
                raise self._failed(EndpointError(f"{url}: {type(exc).__name__}: {exc}"), method) from exc
            if not self._wait_if_busy(resp, retry):
                break
        return self._checked(resp, url, method)

    def _whole(self, method: str, path: str, body: Json | None, t: float) -> httpx.Response:
        """One answer read whole within `t` seconds in all: httpx's timeout is per read, so a server trickling its
        body (a byte a second) held the request as long as it went on; raises httpx.ReadTimeout past `t`."""
        with self._client.stream(method, path, json=body, timeout=self._timeout(t)) as resp:
            deadline, raw = time.perf_counter() + t, bytearray()
            for data in resp.iter_bytes():  # decoded as its content-encoding says
                if time.perf_counter() > deadline:
                    raise httpx.ReadTimeout(f"no whole answer within {t:g} s")
                raw += data
        headers = [(k, v) for k, v in resp.headers.multi_items() if k != "content-encoding"]  # decoded already
        return httpx.Response(resp.status_code, headers=headers, content=bytes(raw), request=resp.request)

    def _wait_if_busy(self, resp: httpx.Response, retry: int) -> bool:
        """True, after waiting, when `resp` is busy (BUSY_STATUSES) and retry number `retry` + 1 may follow: the
        wait its Retry-After asks (from cloud.tpu_api: either form), else BUSY_BACKOFF_S doubled each retry;
        at most BUSY_WAIT_MAX_S."""
        if resp.status_code not in BUSY_STATUSES or retry >= self.busy_retries:
            return False
        asked = retry_after_s(resp.headers)
        self.sleep(min(BUSY_WAIT_MAX_S, BUSY_BACKOFF_S * 2**retry if asked is None else asked))
        return True

    def _checked(self, resp: httpx.Response, url: str, method: str) -> httpx.Response:
        """`resp` counted (answered, or a 5xx server error), raised as EndpointStatusError when not 2xx. Only a
        generation's 2xx counts as answered: vLLM's API server tokenizes and refuses a prompt over max_model_len
        (400) without its engine, so those come back while every generation fails (a dead engine)."""
        if resp.status_code < 300 and method == "POST" and not url.endswith("/tokenize"):
            self.answered += 1
        if resp.status_code in BUSY_STATUSES:
            tries = f"{self.busy_retries + 1} tries" if self.busy_retries else "1 try"
            said = server_message(resp.text)
            busy = EndpointBusyError(resp.status_code, f"server busy ({tries}){': ' + said if said else ''}", url)
            if method == "POST":
                self.busy, self.last_busy = self.busy + 1, str(busy)
            raise busy
        if resp.status_code >= 300:
            error = EndpointStatusError(resp.status_code, server_message(resp.text), url)
            raise self._failed(error, method) if resp.status_code >= 500 else error
        return resp

    def _failed(self, error: EndpointError, method: str) -> EndpointError:
        """Count a request the server failed (a 5xx answer, or none at all) and return `error` to raise."""
        if method != "POST":
            return error
        if isinstance(error, EndpointStatusError):
            self.server_errors += 1
        else:
            self.unanswered += 1
        self.last_failure = str(error)
        return error

    def _json(self, method: str, path: str, body: Json | None = None, timeout_s: float | None = None) -> Json:
        """A 2xx answer that must be a JSON object. Raises EndpointError naming the URL and what was wrong."""
        resp = self._send(method, path, body, timeout_s)
        url, ctype = self.root + path, resp.headers.get("content-type")
        if not _is_json_type(ctype):
            raise EndpointError(f"{url}: answered {ctype.split(';')[0]}, not JSON: {_excerpt(resp.text)}")
        try:
            data = orjson.loads(resp.content)
        except ValueError:
            raise EndpointError(f"{url}: answer is not valid JSON: {_excerpt(resp.text)}") from None
        if not isinstance(data, dict):
            raise EndpointError(f"{url}: answer is a JSON {type(data).__name__}, not an object: {_excerpt(data)}")
        return data

    # -- control plane ------------------------------------------------------------------------------
    def models(self, timeout_s: float = 30.0) -> list[ServedModel]:
        """GET /v1/models → the served models, in the server's order (`max_model_len` None off vLLM)."""
        url = self.root + "/v1/models"
        data = self._json("GET", "/v1/models", timeout_s=timeout_s).get("data")
        if not isinstance(data, list):
            raise EndpointError(f"{url}: answer has no `data` list of models")
        out = []
        for entry in data:
            if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
                raise EndpointError(f"{url}: a model entry has no string `id`: {_excerpt(entry)}")
            ident, mml = entry["id"], entry.get("max_model_len")
            # the id is printed (check's and bench's titles, reports): an escape sequence or a newline in it reached
            # the terminal as itself, and a token-shaped id was printed whole
            if len(ident) > MAX_TEXT:  # a 5,000,000-character id was printed whole as check's title
                raise EndpointError(f"{url}: a model id of {len(ident):,} characters (a name is at most {MAX_TEXT:,})")
            if not ident.isprintable():
                raise EndpointError(f"{url}: model id {_excerpt(ident)} holds a control character; serve a plain name")
            if looks_secret(ident):
                raise EndpointError(f"{url}: model id {_excerpt(redact(ident))} holds a secret (a token or key)")
            # vLLM's max_model_len is a positive count of tokens; -5 was a limit every cell was 'infeasible' against,
            # and 0 read as none given
            if mml is not None and (isinstance(mml, bool) or not isinstance(mml, int) or mml < 1):
                raise EndpointError(f"{url}: `max_model_len` of {ident!r} is not a positive integer: {mml!r}")
            out.append(ServedModel(ident, mml))
        return out

    def served_model(self, model: str | None, timeout_s: float = 30.0) -> ServedModel:
        """The served model named `model`, or the first one listed when `model` is None.

        Raises EndpointError if the server lists no model or not the requested one (naming what it serves).
        """
        served = self.models(timeout_s)
        if not served:
            raise EndpointError(f"{self.root}/v1/models lists no model")
        if model is None:
            return served[0]
        for entry in served:
            if entry.id == model:
                return entry
        names = ", ".join(m.id for m in served)
        raise EndpointError(f"model {model!r} is not served at {self.root} (served: {names})")

    def tokenize(self, model: str, messages: list[Json]) -> int:
        """Prompt tokens of `messages` as the server counts them (chat template, generation prompt), from
        vLLM's POST /tokenize `count`. A server without /tokenize raises EndpointStatusError 404 (or 405)."""
        out = self._json("POST", "/tokenize", tokenize_body(model, messages))
        count = out.get("count")
        if isinstance(count, bool) or not isinstance(count, int):
            raise EndpointError(f"{self.root}/tokenize: answer has no integer `count`: {_excerpt(out)}")
        if count > MAX_POSITIONS:  # 100,000,000,000 was read as a request's output: bench said 1e14 tok/s, 'ok'
            raise EndpointError(f"{self.root}/tokenize: `count` {count:,} is more tokens than a request holds "
                                f"(at most {MAX_POSITIONS:,})")  # fmt: skip
        return count

    def metrics_text(self, timeout_s: float = 10.0) -> str:
        """GET /metrics: Prometheus exposition text."""
        return self._send("GET", "/metrics", timeout_s=timeout_s).text

    def metrics(self, timeout_s: float = 10.0) -> dict[str, float]:
        """GET /metrics parsed: {sample name: value summed over labels}. Raises EndpointError if unparsable."""
        text = self.metrics_text(timeout_s)
        try:
            return parse_metrics(text)
        except ValueError as exc:
            raise EndpointError(f"{self.root}/metrics: not Prometheus text: {exc}") from None

    def health(self, timeout_s: float = 2.0) -> bool:
        """GET /health answered 200 within `timeout_s`. Never raises. Judged from the status line: its body is not
        read (a server trickling one held readiness polling for as long as it went on; httpx's timeout is per read)."""
        try:
            with self._client.stream("GET", "/health", timeout=self._timeout(timeout_s)) as resp:
                return resp.status_code == 200
        except httpx.HTTPError:
            return False

    def version(self, timeout_s: float = CONNECT_TIMEOUT_S) -> str | None:
        """vLLM's version from GET /version; None when the server has no /version (404)."""
        try:
            out = self._json("GET", "/version", timeout_s=timeout_s)
        except EndpointStatusError as exc:
            if exc.status_code == 404:
                return None
            raise
        if not isinstance(out.get("version"), str):
            raise EndpointError(f"{self.root}/version: answer has no string `version`: {_excerpt(out)}")
        return str(out["version"])

    # -- chat (checks and readiness; measured streaming is bench/client.py) ------------------------
    def completion(self, model: str, prompt: str, max_tokens: int = 16) -> tuple[str, float]:
        """Raw POST /v1/completions at temperature 0 → (text, latency ms)."""
        t0 = time.perf_counter()
        body = {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
        out = self._json("POST", "/v1/completions", body)
        choices = out.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise EndpointError(f"{self.root}/v1/completions: answer has no choices: {_excerpt(out)}")
        return choices[0].get("text") or "", (time.perf_counter() - t0) * 1000

    def chat(self, body: Json, timeout_s: float | None = None) -> ChatReply:
        """Non-streamed POST /v1/chat/completions with `body` (see `chat_body`)."""
        t0 = time.perf_counter()
        out = self._json("POST", "/v1/chat/completions", {**body, "stream": False}, timeout_s)
        reply = _reply_from_body(out, self.root + "/v1/chat/completions")
        reply.latency_ms = (time.perf_counter() - t0) * 1000
        return reply

    def chat_stream(self, body: Json, timeout_s: float | None = None) -> ChatReply:
        """Streamed chat completion (usage included), reassembled: content joined, each tool call's argument
        deltas joined; read up to [DONE] or the final usage chunk (`ends_answer`; a server may hold the connection
        after either). A 200 answer that is no event stream (`not_event_stream`, with what it said: `said`, a bounded
        read), an in-stream error (an error chunk, or an `event: error` event: SSEDecoder), a chunk that is not a JSON
        object or a body that ended before the answer was whole (STREAM_CUT) raises EndpointError, and so does a stream
        that is not whole `timeout_s` after its answer began (checked at each read: at most one more read timeout)."""
        t0, t = time.perf_counter(), timeout_s or self.timeout_s
        url = self.root + "/v1/chat/completions"
        payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
        joiner, decoder = _StreamJoiner(), SSEDecoder()
        try:
            for retry in range(self.busy_retries + 1):
                with self._client.stream(
                    "POST", "/v1/chat/completions", json=payload, timeout=self._timeout(t)
                ) as resp:
                    if resp.status_code >= 300:  # the body only says why: read bounded (`said`), Retry-After kept
                        wait = {"retry-after": resp.headers["retry-after"]} if "retry-after" in resp.headers else {}
                        told = httpx.Response(resp.status_code, headers=wait, text=said(resp.iter_bytes()))
                        if self._wait_if_busy(told, retry):
                            continue
                        self._checked(told, url, "POST")
                    self._checked(resp, url, "POST")
                    ctype = resp.headers.get("content-type")
                    reads, head, stream = resp.iter_bytes(), b"", is_event_stream(ctype)
                    while stream is None and (data := next(reads, None)) is not None:  # no content type
                        head += data
                        stream = is_event_stream(ctype, head)
                    if stream is False:
                        raise EndpointError(not_event_stream(url, ctype, said(reads, head)))
                    deadline = time.perf_counter() + t  # httpx's timeout is per read: a total for the stream too
                    for data in itertools.chain((head,), reads):
                        if time.perf_counter() > deadline:  # a server keeping it alive (`: ping`, endless tokens)
                            raise httpx.ReadTimeout(f"no whole answer within {t:g} s")
                        self._join(decoder.feed(data), decoder, joiner, url)
                        if decoder.done or joiner.complete:  # a server may hold the connection after the answer
                            break  # and what the read brought after the final usage ('data: [DO') is not an event
                    else:
                        self._join(decoder.close(), decoder, joiner, url)
                    break
        except httpx.TimeoutException as exc:
            raise self._failed(EndpointError(f"{url}: stream timed out after {t:g} s"), "POST") from exc
        except httpx.HTTPError as exc:
            raise self._failed(EndpointError(f"{url}: stream failed: {type(exc).__name__}: {exc}"), "POST") from exc
        except ValueError as exc:  # orjson.JSONDecodeError is a ValueError
            raise EndpointError(f"{url}: stream chunk is not a JSON object: {exc}") from exc
        reply = joiner.done()
        if not (decoder.done or reply.finish_reason or reply.completion_tokens is not None):
            raise self._failed(EndpointError(f"{url}: {STREAM_CUT}"), "POST")
        reply.latency_ms = (time.perf_counter() - t0) * 1000
        return reply

    @staticmethod
    def _join(payloads: list[bytes], decoder: SSEDecoder, joiner: _StreamJoiner, url: str) -> None:
        """Join one read's payloads; raises EndpointError at an error chunk or an `event: error` (`decoder.error`)."""
        for chunk in payloads:
            obj = parse_chunk(chunk)
            if err := chunk_error(obj, chunk):
                raise EndpointError(f"{url}: error in stream: {err}")
            if problem := chat_shape_error(obj, "delta"):
                raise EndpointError(f"{url}: stream chunk is not a chat completion chunk: {problem}")
            joiner.add(obj)
        if decoder.error is not None:
            raise EndpointError(f"{url}: error in stream: {decoder.error}")


# -- one-shot helpers for the engines (no client to keep) ----------------------------------------------
def healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """GET `base_url`/health answered 200 within `timeout_s`. Never raises."""
    with WireClient(base_url, timeout_s) as client:
        return client.health(timeout_s)


def metrics_text(base_url: str, timeout_s: float = 10.0) -> str:
    """GET `base_url`/metrics: Prometheus text. Raises EndpointError."""
    with WireClient(base_url, timeout_s) as client:
        return client.metrics_text(timeout_s)


def api_key_from_env(base_url: str | None = None) -> str | None:
    """The bearer key for the server at `base_url` when it asks one (`vllm serve --api-key`, or $VLLM_API_KEY where
    it runs), from this environment; None when neither variable is set. Never logged: errors.redact hides both by name.

    A server on another host: $OPENAI_API_KEY, else $VLLM_API_KEY. OPENAI_API_KEY first because it is what the openai
    SDK and peer tools read (vllm bench serve: vllm/benchmarks/lib/endpoint_request_func.py, 0.32.0 wheel), so a user
    who set it for a remote server keeps it; VLLM_API_KEY next because it is the key `onechip up` tells users to
    export (vllm.flag_table refuses the key on the command line) and what vLLM requires on /v1 when --api-key is not
    given (vllm/entrypoints/serve/middleware/register.py `args.api_key or [envs.VLLM_API_KEY]`, 0.32.0 wheel).

    A server on this host (a `base_url` whose host is this machine, on_this_host: the engine `up` or `demo` started,
    which inherits this environment, or one the user started beside it): $VLLM_API_KEY first. When it is set it is
    the one key such an engine takes, and an OPENAI_API_KEY beside it is most likely the user's key for OpenAI (a 401
    from the local engine).
    """
    local = on_this_host(httpx.URL(base_url).host) if base_url else False
    names = ("VLLM_API_KEY", "OPENAI_API_KEY") if local else ("OPENAI_API_KEY", "VLLM_API_KEY")
    return next((os.environ[name] for name in names if os.environ.get(name)), None)


def same_server(url: str, other: str) -> bool:
    """Whether base URLs `url` and `other` name one server: the same scheme (any case), path (base_root's: a trailing
    '/' or '/v1' left off) and port (the scheme's own when none is given: 80, 443, RFC 9110 sections 4.2.1-4.2.2), and
    the same host, every name of this host (on_this_host: 'localhost', 127.0.0.1, ::1) one. `up` records a local or
    tunnelled engine at http://127.0.0.1:PORT, which a user reaches as http://localhost:PORT too. Read as written, never
    resolved; a URL httpx cannot read names no server."""
    try:
        one, two = (urlsplit(base_root(u)) for u in (url, other))
        ports = [p.port or {"http": 80, "https": 443}.get(p.scheme.lower()) for p in (one, two)]
    except ValueError:  # a port out of range or not a number
        return False
    hosts = [(p.hostname or "").lower().removesuffix(".") for p in (one, two)]
    local = [on_this_host(h) for h in hosts]
    return (
        one.scheme.lower() == two.scheme.lower()
        and one.path == two.path
        and ports[0] == ports[1]
        and (hosts[0] == hosts[1] or local[0] and local[1])
    )


def on_this_host(host: str) -> bool:
    """Whether a URL's `host` reaches this machine without leaving it: 'localhost' and its subdomains (RFC 6761
    6.3, which resolvers answer with the loopback; a trailing root dot too), a loopback address (127.0.0.0/8, ::1,
    and ::1's IPv4-mapped form of a 127 address), or the unspecified address (0.0.0.0, ::), which a connect on Linux
    and macOS sends to this host and which `vllm serve --host 0.0.0.0` prints in its 'http://0.0.0.0:8000' line.
    A name is read as written, never resolved: '127.example.com' is a name like any other (its text looks like a
    loopback address, and whoever owns the domain decides where it goes)."""
    name = host.lower().removesuffix(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        addr = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback or addr.is_unspecified
