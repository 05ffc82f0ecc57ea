"""The one fake vLLM server every test uses: vLLM's OpenAI-compatible HTTP surface on 127.0.0.1, configurable.

In a thread of the test process (`FakeVllm(...)` as a context manager, port 0) or as a process that stands in
for `vllm serve` (`python tests/fakes/vllm_server.py [vllm serve flags] [--fake-* options]`, see `main`).
Raw asyncio HTTP/1.1 (keep-alive, chunked transfer), so a mid-stream disconnect is a real torn chunked body.

    GET  /health, /version, /v1/models (with vLLM's `max_model_len` per entry when set), /metrics
    POST /tokenize              the one tokenizer rule below; 404 when `has_tokenize` is False
    POST /v1/chat/completions   plain or SSE; generated "tok" tokens, or scripted `Reply`s (text, reasoning,
                                tool calls, HTTP errors)
    POST /v1/completions        `completion_text`

The tokenizer rule (the only one): a token is a whitespace-separated word; a chat prompt costs the words of
every message's content (OpenAI content parts joined, None empty) plus TEMPLATE_TOKENS for the chat template;
a plain prompt costs its words. Replies count the same way, so `usage` and /tokenize always agree.

Streaming: a role-only chunk at once, then content chunks; the k-th chunk after the role chunk is sent at
ttft_s + k * itl_s after the request arrived (absolute deadlines, so gaps do not drift). Generated streams
carry `chunk_plan[k]` tokens in chunk k (default one per chunk, max_tokens in all, finish "length");
scripted replies carry `tokens_per_chunk` words per chunk: reasoning, then content, then each tool call
(name first, then its arguments in pieces, as vLLM's tool parsers send them). Usage (`usage`): "as_asked"
is vLLM's behaviour (a final usage chunk when stream_options.include_usage, usage on every chunk too when
continuous_usage_stats); "every_chunk", "final_only" and "never" force one mode whatever was asked;
"on_last_choice" puts the final usage on the last choice chunk (the one with finish_reason), not in a chunk
of its own, as some OpenAI-compatible servers do.
Plain (non-streamed) replies carry usage unless `usage="never"`.

Errors: HTTP 400 with vLLM 0.32's message when prompt + max_tokens > max_model_len (vllm/renderers/params.py
`_token_len_check`), after `hang_s` when `over_limit="hang"`, never for a prompt cut silently to `truncate_to`;
a disconnect after `cut_after_chunks` chunks for
chat requests whose 1-based number is in `cut_requests` (a reset, RST, with `resets`); 400 for min_tokens or
ignore_eos when `reject_extras`; any status and message from a scripted `Reply(status=..., error=...)` or, for a
generated stream, from `fail_status` (request number -> 500, 429, ...; its message `fail_says(number, headers)` when
set, a proxy echoing what it was sent, and a `location:` header `fail_location`, a redirect); a stall of `stall_s`
(past the client's timeout) before chunk `cut_after_chunks` for requests in `stall_requests`; a whole JSON chat
completion, not a stream, for streamed requests in `ignore_stream`; the statuses in `fail_first[path]`, one per
request to that path, before it answers as itself (a gateway whose backend died). Error bodies are OpenAI-shaped
(`{"error": {...}}`) or, with error_shape="flat", older vLLM's `{"object": "error", "message": ...}`. With
`drop_reused` a connection's second chat request is dropped unanswered (a keep-alive timeout racing the client).

Known timings: `ttft_s` (or `ttft_for(number, body)` per request) and `itl_s` (or `itl_for`, the same); with
`slots` only that many streams generate at once and the others queue, their wait part of TTFT (`admitted`
records when each got a slot); `tokenize_s` delays the answer to a /tokenize of generated text (a plain `prompt`).
`step_law` = (a_s, b_s) makes the fake a continuous-batching engine instead (`_Engine`, one step loop as vLLM's
EngineCore): a step of B sequences takes a_s + b_s x B; (a_s, b_s, c_s) adds c_s per prompt token the step prefills
(each request admitted in it, its whole prompt less the prefix cache's `cached_tokens`, in that one step: no chunking;
keep a step's prompts under the engine's token budget), so TTFT grows with the prompt and is free for cached tokens;
every running sequence gets its next chunk as the step ends;
a request joins the first step that starts after it arrives (TTFT = the wait for the step in progress + its own
step), at most `slots` sequences a step (0: any), the rest waiting. Steps run back to back on absolute deadlines
(a late one does not delay the next's); `steps` records each step (due, ended, B) and `batches` each request's B step
by step, the truth the bench's figures are checked against.
`stop_after` ends generated streams early (finish "stop"; else "length" at max_tokens); `extra_tokens` sends that
many more than max_tokens (a server that does not honour it);
`empty_chunks` sends chunk k with content "" (its tokens still counted, as a detokenizer holding text back);
`finish_chunk` sends finish_reason in its own empty-delta chunk right after the last content chunk. A scripted
reply with tool calls finishes as vLLM's does ('tool_calls' under tool_choice auto or required, 'stop' under a
named choice), or with `tool_calls_finish` on every such reply.

Wire habits (`wire_script(number, body)`): a streamed chat answer's body written verbatim, write by write at set
offsets (`WireWrite`; `sse_event` builds the events), in place of the generated or scripted stream, for the
habits of other OpenAI-compatible servers: CRLF line ends, `: ping` comments, an event split across writes, no
[DONE], the connection held open after it, an error event mid-stream, a connection dropped mid-stream; `sse_event`
writes a chunk as vLLM, SGLang, TGI, llama.cpp or Ollama serialize theirs (`Shape`).

Timing: zero ttft_s and itl_s stream as fast as the socket allows (the client-ceiling benchmark). The last
2 ms before each deadline are spun in blocking steps (timing accuracy for one stream), which holds the
server's loop: with several streams and an inter-token gap of a few ms they are served one after another,
not concurrently. Concurrency tests use gaps of 10 ms or more, or zero.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import struct
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

SCRIPT = Path(__file__).resolve()  # run it as a stand-in for `vllm serve` (see main)
TEMPLATE_TOKENS = 7  # tokens the stand-in chat template adds around the messages
SPIN_S = 0.002  # the last 2 ms before a deadline are spun, not slept (see _sleep_until)
VERSION = "0.32.0"  # the vLLM version the fake process logs at boot by default (the embedded engine's)
_REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 500: "Internal Server Error"}

Usage = Literal["as_asked", "every_chunk", "final_only", "on_last_choice", "never"]


def _text(content: Any) -> str:
    if isinstance(content, list):  # OpenAI content parts, as `vllm bench serve` sends them
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def count_tokens(messages: list[dict[str, Any]]) -> int:
    """The fake tokenizer for a chat prompt: words of every message's content plus TEMPLATE_TOKENS."""
    return TEMPLATE_TOKENS + sum(len(_text(m.get("content")).split()) for m in messages)


def count_body(body: dict[str, Any]) -> int:
    """Tokens of a /tokenize or chat body: a plain `prompt` is its words, `messages` go through the template."""
    if "prompt" in body:
        return len(str(body["prompt"]).split())
    return count_tokens(body["messages"])


def pieces(text: str) -> list[str]:
    """`text` cut into tokens (one word each, with the whitespace before it), which join back to `text`."""
    out = re.findall(r"\s*\S+", text)
    tail = text[len("".join(out)) :]
    if tail:
        out = [*out[:-1], out[-1] + tail] if out else [tail]
    return out


@dataclass
class Reply:
    """One scripted chat answer: text, reasoning, tool calls [(name, arguments JSON text)], or an HTTP error."""

    content: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    reasoning: str = ""
    status: int = 200
    error: str = ""

    def tokens(self) -> int:
        """Completion tokens by the one tokenizer rule (at least 1: an empty answer still ends a turn)."""
        args = " ".join(a for _, a in self.tool_calls)
        return max(1, len(f"{self.reasoning} {self.content} {args}".split()))


Script = list[Reply] | Callable[[dict[str, Any]], Reply] | None
# (s after the request arrived, bytes of the body or None to drop the connection there, whether the write
# completes an event carrying generated tokens: its time goes in `sent_times`)
WireWrite = tuple[float, bytes | None, bool]


# How a server writes a chunk. vllm: only the fields set (vLLM's model_dump_json(exclude_unset=True),
# entrypoints/openai/chat_completion/serving.py, 0.34.0 sdist). sglang: every field of its DeltaMessage, null where
# unset, `usage: null` on a chunk without usage, the choice's `logprobs` and `matched_stop` (model_dump_json without
# exclude_none; python/sglang/srt/entrypoints/openai/protocol.py and serving_chat.py). tgi: the role on every delta
# (TGI's TextMessage, role "assistant"; a special token, the EOS included, has content "": router/src/chat.rs
# create_event_from_stream_token); TGI sends no role-only opening chunk. llamacpp: a `timings` object beside the
# finish_reason (llama.cpp's server; its opening delta `{"role": "assistant", "content": null}` is the caller's).
# ollama: the role and `content` (its "" too) on every delta, and no role-only opening chunk (Ollama before 0.x's
# #17485, 2026-08: openai/openai.go toChunk, Delta a Message, whose role and content are not omitempty); its
# finish_reason comes on the Done response's own chunk, content "", which its caller writes: at the EOS's step, which
# usage counts (runner numPredicted, llama.cpp n_decoded, as eval_count), or with the last token at a length stop.
# ollama17485: Ollama since #17485 (2026-08, "match openai's streaming wire format"): only the fields set (Delta's
# fields omitempty), the role on the first chunk alone (ToStreamChunks includeRole), written as vllm's
Shape = Literal["vllm", "sglang", "tgi", "llamacpp", "ollama", "ollama17485"]
SGLANG_DELTA = ("role", "content", "reasoning_content", "tool_calls")  # SGLang's DeltaMessage fields, in its order


def sse_event(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    usage: tuple[int, int] | None = None,
    *,
    crlf: bool = False,
    shape: Shape = "vllm",
) -> bytes:
    """One `data:` event of a chat-completions stream: a choice with `delta` (no choice when delta is None, as
    a usage-only final chunk), `finish` as its finish_reason, `usage` (prompt, completion tokens) when given;
    lines end in CRLF when `crlf`; written as the server `shape` writes its chunks (Shape)."""
    obj: dict[str, Any] = {"id": "chatcmpl-w", "object": "chat.completion.chunk", "model": "fake-model"}
    if delta is not None and shape == "sglang":
        delta = {**dict.fromkeys(SGLANG_DELTA), **delta}
    elif delta is not None and shape == "tgi":
        delta = {"role": "assistant", **delta}
    elif delta is not None and shape == "ollama":
        delta = {"role": "assistant", "content": "", **delta}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    if shape == "sglang":
        choice |= {"logprobs": None, "matched_stop": None}
    obj["choices"] = [] if delta is None else [choice]
    if usage is not None:
        obj["usage"] = _usage(*usage)
    elif shape == "sglang":
        obj["usage"] = None
    if shape == "llamacpp" and finish is not None:
        obj["timings"] = {"prompt_n": 16, "predicted_n": 4, "predicted_per_second": 100.0}
    end = b"\r\n" if crlf else b"\n"
    return b"data: " + json.dumps(obj).encode() + end + end


def _cancelled_by_stop(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The fake's loop's exception handler: a CancelledError is a connection handler that FakeVllm.stop cancelled (on
    Python 3.11 asyncio's StreamReaderProtocol callback logs 'Exception in callback ... CancelledError' for one still
    reading, into the stderr of the process the fake runs in: test_checks_agent asserts that stderr holds nothing of
    onechip's); anything else goes to asyncio's default handler."""
    if not isinstance(context.get("exception"), asyncio.CancelledError):
        loop.default_exception_handler(context)


@dataclass
class FakeVllm:
    """Configure by constructor or by setting fields before requests arrive; observe the recorded fields."""

    replies: Script = None  # None: generate "tok" tokens; a list is consumed in order; a callable sees the body
    model: str = "fake-model"
    version: str = "0.0.0-fake"  # what /version answers
    max_model_len: int | None = 4096  # None: /v1/models gives no max_model_len and nothing is over the limit
    ttft_s: float = 0.0
    itl_s: float = 0.0
    chunk_plan: list[int] | None = None  # tokens per generated chunk; None = one token per chunk
    tokens_per_chunk: int = 1  # words per chunk of a scripted reply
    usage: Usage = "as_asked"
    tool_calls_finish: str | None = None  # None: vLLM's finish_reason for a reply with calls (see finish_of)
    reasoning_field: str = "reasoning_content"  # vLLM's reasoning parsers: `reasoning_content`, newer `reasoning`
    completion_text: str = "Paris."  # what /v1/completions answers
    over_limit: Literal["400", "hang"] = "400"
    # a chat prompt over this many tokens is cut to its last `truncate_to` tokens, unsaid (no 400; usage counts what
    # is kept; a reply callable sees the kept text): a server truncating long context silently
    truncate_to: int | None = None
    hang_s: float = 5.0
    error_shape: Literal["openai", "flat"] = "openai"
    cut_requests: set[int] = field(default_factory=set)
    cut_after_chunks: int = 2  # where a cut (or a stall) happens: before content chunk k (0 = before the first)
    # known timings and failures, per request number (1-based, the bench's probe included)
    ttft_for: Callable[[int, dict[str, Any]], float] | None = None  # per-request TTFT, s (else ttft_s)
    # per-request inter-token gap, s (else itl_s), asked as the stream starts (`running` counts it): a latency law
    itl_for: Callable[[int, dict[str, Any]], float] | None = None
    slots: int = 0  # 0: every stream generates at once; n: n at a time, the rest queue (the wait is in TTFT)
    # (a_s, b_s[, c_s]): a batched engine, a step of B sequences prefilling P prompt tokens takes a_s + b_s B + c_s P
    step_law: tuple[float, float] | tuple[float, float, float] | None = None
    fail_status: dict[int, int] = field(default_factory=dict)  # request number -> HTTP status (500, 429, ...)
    # (request number, the request's headers, lower-cased) -> the message of its fail_status answer (else 'fake
    # failure of request N'): a proxy that echoes what it was sent (the Authorization header, an upstream URL)
    fail_says: Callable[[int, dict[str, str]], str] | None = None
    fail_location: str | None = None  # the Location header of every fail_status answer: a redirect (301, 307, ...)
    retry_after: str | None = None  # the Retry-After header of every 429 and 503 answer
    stall_requests: set[int] = field(default_factory=set)  # these stop sending before chunk cut_after_chunks...
    stall_s: float = 30.0  # ...for this long (past the client's timeout), then end the stream
    # these are answered with one whole JSON chat completion even when streamed (a server or proxy ignoring stream)
    ignore_stream: set[int] = field(default_factory=set)
    stop_after: int | None = None  # generated streams stop at this many tokens, finish "stop" (EOS came early)
    extra_tokens: int = 0  # generated streams send this many tokens beyond max_tokens (a server ignoring it)
    empty_chunks: set[int] = field(default_factory=set)  # generated chunk k has content "" (text held back)
    finish_chunk: bool = False  # the finish_reason comes in its own empty-delta chunk after the last content
    # number, body -> a streamed chat answer's body written verbatim (see `wire_writes`), instead of the generated
    # or scripted stream: the wire habits of other OpenAI-compatible servers
    wire_script: Callable[[int, dict[str, Any]], list[WireWrite]] | None = None
    wire_status: int = 200  # the status line and content type of a wire script's answer (None: no content-type
    wire_ctype: str | None = "text/event-stream"  # header): a body that trickles in any shape, an error or not
    wire_plain: bool = False  # the wire script answers non-streamed chat requests too
    resets: bool = False  # a dropped connection (cut, a wire script's None) is reset (RST), not closed (FIN)
    # a chat request on a connection that already answered one is dropped unanswered (closed, FIN, never counted):
    # uvicorn closing a keep-alive connection whose idle timeout (vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE, 5 s) fired as
    # the client's next request came, the race every reused connection runs
    drop_reused: bool = False
    reject_extras: bool = False
    has_tokenize: bool = True
    tokenize_s: float = 0.0  # seconds /tokenize of a plain `prompt` (the output counted) takes: a busy API server
    # vllm serve --api-key: routes under /v1 answer 401 {"error": "Unauthorized"} without `Authorization: Bearer <key>`
    # (vllm/entrypoints/openai/api_server.py's AuthenticationMiddleware; /health, /tokenize, /metrics stay open)
    api_key: str | None = None
    has_metrics: bool = True
    # prefix cache: 0 = none; n > 0 = a cache of n-word blocks (the longest earlier prompt's common prefix,
    # whole blocks, never the whole prompt), reported in usage.prompt_tokens_details.cached_tokens (as vLLM
    # with --enable-prompt-tokens-details) and in the prefix_cache_* /metrics counters
    prefix_cache_block: int = 0
    # path -> (status, body, content type) answered verbatim instead of the route's own answer: a server that
    # answers garbage (an HTML proxy page, invalid JSON, a JSON list, a body without the expected fields); a content
    # type of None sends no content-type header
    raw_answers: dict[str, tuple[int, bytes, str | None]] = field(default_factory=dict)
    # path -> the statuses its next requests are answered with, one each, before it answers as itself: a gateway
    # whose backend died (vllm-router 0.1.17 answered 502 to /tokenize and 500 to /v1/models it sent to a killed
    # replica, until it stopped routing there)
    fail_first: dict[str, list[int]] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 0  # 0: any free port, known after start()
    # observed
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    # per chat request number (1-based): perf_counter when each chunk after the role chunk was written (the
    # truth the client's timestamps are checked against: same process, same monotonic clock)
    sent_times: dict[int, list[float]] = field(default_factory=dict)
    admitted: dict[int, float] = field(default_factory=dict)  # request number -> perf_counter it got a slot
    # step_law: (when it was due to end, when it ended (perf_counter), sequences in it) of each step
    steps: list[tuple[float, float, int]] = field(default_factory=list)
    step_prefill: list[int] = field(default_factory=list)  # step_law: prompt tokens each step of `steps` prefilled
    batches: dict[int, list[int]] = field(default_factory=dict)  # step_law: request number -> B of each of its steps
    tokenize_calls: int = 0
    request_headers: dict[str, str] = field(default_factory=dict)  # the last request's, names lower-cased
    connections: int = 0  # TCP connections accepted (a client that reuses its connection opens one)
    running: int = 0
    cache_queries: int = 0
    cache_hits: int = 0
    _seen_prompts: list[list[str]] = field(default_factory=list)
    _slot_gate: asyncio.Semaphore | None = None
    _engine: _Engine | None = None

    # ---- lifecycle ----
    def start(self) -> FakeVllm:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()
        self._loop.set_exception_handler(_cancelled_by_stop)
        self._lock = threading.Lock()
        self._writers: set[asyncio.StreamWriter] = set()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, self.host, self.port))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        if not ready.wait(5):
            raise RuntimeError(f"fake vLLM did not bind {self.host}:{self.port}")
        return self

    def stop(self) -> None:
        async def close() -> None:
            # close every open connection and end its handler here, on the loop: a writer or task left for
            # the garbage collector after the loop is closed warns ("loop is closed") in a later test
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        if not self._thread.is_alive():
            self._loop.close()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> FakeVllm:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def drop(self, writer: asyncio.StreamWriter) -> None:
        """Drop the connection mid-answer: closed at once (FIN), or reset (RST: SO_LINGER 0) when `resets`."""
        if self.resets:
            writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    # ---- HTTP ----
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        self.connections += 1
        try:
            await self._serve(reader, writer)
        finally:
            self._writers.discard(writer)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        answered = 0  # chat requests this connection answered (drop_reused)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                n = int(headers.get("content-length", "0"))
                body = json.loads(await reader.readexactly(n)) if n else {}
                route = path.split("?")[0]
                if (
                    self.api_key
                    and route.startswith("/v1")
                    and headers.get("authorization") != f"Bearer {self.api_key}"
                ):
                    self._send(writer, 401, {"error": "Unauthorized"})
                    continue
                if route == "/v1/chat/completions":
                    if self.drop_reused and answered:
                        return
                    answered += 1
                self.request_headers = (
                    headers  # read by _chat before its first await (tests wrap _chat's two arguments)
                )
                if not await self._route(method, route, body, writer):
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @staticmethod
    def _send(
        writer: asyncio.StreamWriter, status: int, obj: Any, ctype: str | None = "application/json", head: str = ""
    ) -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        head = ("" if ctype is None else f"content-type: {ctype}\r\n") + head
        writer.write(
            f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n{head}".encode()
            + f"content-length: {len(data)}\r\n\r\n".encode()
            + data
        )

    def _error(self, writer: asyncio.StreamWriter, status: int, message: str, head: str = "") -> None:
        kind = "BadRequestError" if status == 400 else "Error"
        if self.error_shape == "flat":
            body: dict[str, Any] = {"object": "error", "message": message, "type": kind, "code": status}
        else:
            body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
        busy = status in (429, 503) and self.retry_after is not None
        head += f"retry-after: {self.retry_after}\r\n" if busy else ""
        self._send(writer, status, body, head=head)

    async def _route(self, method: str, path: str, body: Any, writer: asyncio.StreamWriter) -> bool:
        if self.fail_first.get(path):
            self._error(writer, self.fail_first[path].pop(0), f"fake gateway failure of {path}")
        elif path in self.raw_answers:
            status, data, ctype = self.raw_answers[path]
            self._send(writer, status, data, ctype)
        elif method == "GET" and path == "/health":
            self._send(writer, 200, b"", "text/plain")
        elif method == "GET" and path == "/v1/models":
            entry: dict[str, Any] = {"id": self.model, "object": "model", "owned_by": "vllm"}
            if self.max_model_len:
                entry["max_model_len"] = self.max_model_len
            self._send(writer, 200, {"object": "list", "data": [entry]})
        elif method == "GET" and path == "/version":
            self._send(writer, 200, {"version": self.version})
        elif method == "GET" and path == "/metrics" and self.has_metrics:
            self._send(writer, 200, self._metrics().encode(), "text/plain; version=0.0.4")
        elif method == "POST" and path == "/tokenize" and self.has_tokenize:
            self.tokenize_calls += 1
            if "prompt" in body:
                await asyncio.sleep(self.tokenize_s)
            count = count_body(body)
            self._send(writer, 200, {"count": count, "max_model_len": self.max_model_len, "tokens": [0] * count})
        elif method == "POST" and path == "/v1/completions":
            text = self.completion_text
            choice = {"index": 0, "text": text, "finish_reason": "stop"}
            self._send(writer, 200, {"object": "text_completion", "model": self.model, "choices": [choice]})
        elif method == "POST" and path == "/v1/chat/completions":
            return await self._chat(body, writer)
        else:
            self._send(writer, 404, {"detail": "Not Found"})
        await writer.drain()
        return True

    def _metrics(self) -> str:
        n = len(self.chat_requests)
        label = f'{{model_name="{self.model}"}}'
        queries, hits = (self.cache_queries, self.cache_hits) if self.prefix_cache_block else (n * 100, n * 25)
        series = [
            ("vllm:num_preemptions_total", "counter", n // 10),
            ("vllm:request_success_total", "counter", n),
            ("vllm:prefix_cache_queries_total", "counter", queries),
            ("vllm:prefix_cache_hits_total", "counter", hits),
            ("vllm:num_requests_running", "gauge", self.running),
            ("vllm:kv_cache_usage_perc", "gauge", self.running / 100),
        ]
        return "".join(f"# HELP {m} {m}.\n# TYPE {m} {kind}\n{m}{label} {v}\n" for m, kind, v in series)

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        if self.replies is None:
            return None
        if callable(self.replies):
            return self.replies(body)
        with self._lock:
            return self.replies.pop(0) if self.replies else Reply(status=500, error="script exhausted")

    def _cached(self, body: dict[str, Any]) -> int | None:
        """Prompt tokens a prefix cache of `prefix_cache_block`-word blocks serves (None without one)."""
        if not self.prefix_cache_block or "messages" not in body:
            return None
        words = [w for m in body["messages"] for w in [f"<{m.get('role')}>", *_text(m.get("content")).split()]]
        best = 0
        with self._lock:
            for old in self._seen_prompts:
                n = 0
                while n < min(len(old), len(words)) and old[n] == words[n]:
                    n += 1
                best = max(best, n)
            self._seen_prompts.append(words)
        prompt = count_body(body)
        cached = min(best // self.prefix_cache_block * self.prefix_cache_block, prompt - 1)
        self.cache_queries += prompt
        self.cache_hits += cached
        return cached

    def _over_limit(self, prompt: int, max_tokens: int) -> str | None:
        if self.max_model_len and prompt + max_tokens > self.max_model_len:
            return (
                f"This model's maximum context length is {self.max_model_len} tokens. However, your prompt "
                f"contains {prompt} input tokens, which exceeds this limit even without any output tokens. "
                "Please reduce the length of the input prompt."
            )
        return None

    async def _chat(self, body: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        t0, headers = time.perf_counter(), self.request_headers
        self.chat_requests.append(body)
        number = len(self.chat_requests)
        prompt = count_body(body)
        if self.truncate_to is not None and prompt > self.truncate_to:  # cut silently: the model reads the rest
            body, prompt = _truncated(body, prompt - self.truncate_to), self.truncate_to
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        over = self._over_limit(prompt, max_tokens)
        if over and self.over_limit == "hang":
            await asyncio.sleep(self.hang_s)
        if self.reject_extras and ("min_tokens" in body or "ignore_eos" in body):
            over = "extra fields not permitted"
        if not over and number in self.fail_status:
            says = self.fail_says(number, headers) if self.fail_says else f"fake failure of request {number}"
            where = "" if self.fail_location is None else f"location: {self.fail_location}\r\n"
            self._error(writer, self.fail_status[number], says, where)
            await writer.drain()
            return True
        reply = None if over else self._next_reply(body)
        if reply is not None and reply.status != 200:
            over = reply.error
        if over:
            self._error(writer, 400 if reply is None else reply.status, over)
            await writer.drain()
            return True
        if self.wire_script is not None and self.wire_plain and not body.get("stream"):
            return await self._wire_writes(writer, t0, number, self.wire_script(number, body))
        if not body.get("stream") or number in self.ignore_stream:
            self._send(writer, 200, self._whole(reply, prompt, body, max_tokens))
            await writer.drain()
            return True
        if self.wire_script is not None:
            return await self._wire_writes(writer, t0, number, self.wire_script(number, body))
        stream = _Stream(self, body, number, prompt, self._cached(body))
        chunks = stream.generated(self._plan(max_tokens), max_tokens) if reply is None else stream.scripted(reply)
        if self.step_law is not None:  # the engine's step loop paces the chunks and holds the slots
            if self._engine is None:
                self._engine = _Engine(self, *self.step_law)
            self.admitted[number] = t0
            self.running += 1
            try:
                return await stream.send(writer, t0, chunks, self._engine)
            finally:
                self.running -= 1
        if self.slots and self._slot_gate is None:
            self._slot_gate = asyncio.Semaphore(self.slots)
        if self._slot_gate is not None:  # queued: the engine has no free slot; TTFT runs from admission
            await self._slot_gate.acquire()
            t0 = time.perf_counter()
        self.admitted[number] = t0
        self.running += 1
        try:
            return await stream.send(writer, t0, chunks)
        finally:
            self.running -= 1
            if self._slot_gate is not None:
                self._slot_gate.release()

    async def _wire_writes(self, writer: asyncio.StreamWriter, t0: float, number: int, writes: list[WireWrite]) -> bool:
        """An answer of `wire_status` and `wire_ctype` (an event stream by default) whose body is `writes`: each
        (offset, bytes, content) one chunk of the chunked body, written and sent at t0 + offset (b"" writes nothing:
        the connection is held till then), its time in `sent_times` when `content`; None drops the connection there.
        The body then ends (the zero-size chunk)."""
        ctype = "" if self.wire_ctype is None else f"content-type: {self.wire_ctype}\r\n"
        status = f"{self.wire_status} {_REASONS.get(self.wire_status, 'Error')}"
        writer.write(f"HTTP/1.1 {status}\r\n{ctype}transfer-encoding: chunked\r\n\r\n".encode())
        sent = self.sent_times.setdefault(number, [])
        for offset_s, data, content in writes:
            try:
                await writer.drain()
                await _sleep_until(t0 + offset_s)
            except asyncio.CancelledError:  # stop() while the connection is held: it closes, the handler ends quietly
                data = None
            if data is None:
                self.drop(writer)
                return False
            if data:
                writer.write(b"%x\r\n%b\r\n" % (len(data), data))
                await writer.drain()
            if content:
                sent.append(time.perf_counter())
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True

    def _plan(self, max_tokens: int) -> list[int]:
        """Tokens per generated chunk: chunk_plan (or one per chunk) up to max_tokens, cut at stop_after."""
        limit = max_tokens + self.extra_tokens if self.stop_after is None else min(max_tokens, self.stop_after)
        plan, total = [], 0
        for k in self.chunk_plan or [1] * limit:
            if total >= limit:
                break
            plan.append(min(k, limit - total))
            total += plan[-1]
        return plan

    def finish_of(self, reply: Reply, body: dict[str, Any]) -> str:
        """A scripted reply's finish_reason: vLLM's (chat_completion/serving.py, after OpenAI's API) is 'tool_calls'
        for calls under tool_choice auto or required and 'stop' for a named choice; `tool_calls_finish` overrides
        it for every reply with calls (a server that misreports it); 'stop' without calls."""
        if not reply.tool_calls:
            return "stop"
        if self.tool_calls_finish is not None:
            return self.tool_calls_finish
        return "stop" if isinstance(body.get("tool_choice"), dict) else "tool_calls"

    def _whole(self, reply: Reply | None, prompt: int, body: dict[str, Any], max_tokens: int) -> dict[str, Any]:
        """A non-streamed chat completion."""
        if reply is None:
            reply, finish = Reply(content="tok " * max_tokens), "length"
        else:
            finish = self.finish_of(reply, body)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None, "tool_calls": _calls(reply)}
        if reply.reasoning:
            message[self.reasoning_field] = reply.reasoning
        out: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if self.usage != "never":
            out["usage"] = _usage(prompt, reply.tokens() if finish != "length" else max_tokens)
        return out


def _truncated(body: dict[str, Any], cut: int) -> dict[str, Any]:
    """`body` with its first `cut` content words dropped, message by message (vLLM's truncate_prompt_tokens keeps a
    prompt's last tokens); a message left with no words keeps an empty content."""
    messages = []
    for m in body["messages"]:
        words = _text(m.get("content")).split()
        drop, cut = min(cut, len(words)), cut - min(cut, len(words))
        messages.append({**m, "content": " ".join(words[drop:])})
    return {**body, "messages": messages}


def _calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}
        for i, (name, args) in enumerate(reply.tool_calls)
    ]


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class _Stream:
    """One SSE response: chunks are (choice JSON text, tokens it carries), written on the fake's schedule.

    The JSON pieces are built once per request: at zero delay this server is what the client-ceiling
    benchmark measures against, so each event costs string formatting, not a json.dumps of the whole object.
    """

    def __init__(self, fake: FakeVllm, body: dict[str, Any], number: int, prompt: int, cached: int | None = None):
        self.fake, self.number, self.prompt, self.body = fake, number, prompt, body
        self.prefill = prompt - (cached or 0)  # prompt tokens the engine computes: step_law's c_s term
        self.details = "" if cached is None else f', "prompt_tokens_details": {{"cached_tokens": {cached}}}'

        options = body.get("stream_options") or {}
        asked_final = bool(options.get("include_usage"))
        mode = fake.usage
        continuous = asked_final and bool(options.get("continuous_usage_stats"))
        self.each = mode == "every_chunk" or (mode == "as_asked" and continuous)
        self.final = mode in ("every_chunk", "final_only") or (mode == "as_asked" and asked_final)
        self.on_last = mode == "on_last_choice"
        head = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk", "model": fake.model}
        self.head = json.dumps(head)[:-1]  # left open: each event appends its choices and usage

    @staticmethod
    def _choice(delta: dict[str, Any], finish: str | None) -> str:
        return json.dumps([{"index": 0, "delta": delta, "finish_reason": finish}])

    def generated(self, plan: list[int], max_tokens: int) -> list[tuple[str, int]]:
        """Chunks of "tok" words per `plan`; finish "length" when the plan reaches max_tokens, else "stop"."""
        fake, finish = self.fake, "length" if sum(plan) >= max_tokens else "stop"
        cache: dict[tuple[int, bool, bool], str] = {}
        out = []
        for k, tokens in enumerate(plan):
            key = (tokens, k == len(plan) - 1 and not fake.finish_chunk, k in fake.empty_chunks)
            if key not in cache:
                text = "" if key[2] else "tok " * tokens
                cache[key] = self._choice({"content": text}, finish if key[1] else None)
            out.append((cache[key], tokens))
        if fake.finish_chunk:
            out.append((self._choice({}, finish), 0))
        return out

    def scripted(self, reply: Reply) -> list[tuple[str, int]]:
        n = self.fake.tokens_per_chunk
        deltas: list[tuple[dict[str, Any], int]] = []
        for name, text in ((self.fake.reasoning_field, reply.reasoning), ("content", reply.content)):
            words = pieces(text)
            deltas += [({name: "".join(words[i : i + n])}, len(words[i : i + n])) for i in range(0, len(words), n)]
        for i, call in enumerate(_calls(reply)):
            fn = call["function"]
            first = {
                "index": i,
                "id": call["id"],
                "type": "function",
                "function": {"name": fn["name"], "arguments": ""},
            }
            deltas.append(({"tool_calls": [first]}, 0))
            words = pieces(fn["arguments"])
            for j in range(0, len(words), n):
                part = {"index": i, "function": {"arguments": "".join(words[j : j + n])}}
                deltas.append(({"tool_calls": [part]}, len(words[j : j + n])))
        if not deltas:
            deltas.append(({}, 0))
        # the last chunk makes the count the rule's (an empty answer still costs a token)
        last, tokens = deltas[-1]
        deltas[-1] = (last, tokens + reply.tokens() - sum(t for _, t in deltas))
        finish = self.fake.finish_of(reply, self.body)
        last_k = -1 if self.fake.finish_chunk else len(deltas) - 1
        out = [(self._choice(d, finish if k == last_k else None), t) for k, (d, t) in enumerate(deltas)]
        return [*out, (self._choice({}, finish), 0)] if self.fake.finish_chunk else out

    def event(self, choices: str, completion: int | None) -> bytes:
        usage = (
            ""
            if completion is None
            else f', "usage": {{"prompt_tokens": {self.prompt}, "completion_tokens": {completion}, '
            f'"total_tokens": {self.prompt + completion}{self.details}}}'
        )
        data = f'data: {self.head}, "choices": {choices}{usage}}}\n\n'.encode()
        return b"%x\r\n%b\r\n" % (len(data), data)

    async def send(
        self, writer: asyncio.StreamWriter, t0: float, chunks: list[tuple[str, int]], engine: _Engine | None = None
    ) -> bool:
        """Write the stream: each chunk at its deadline (ttft_s, itl_s) or, with `engine`, as its step ends."""
        try:
            return await self._send(writer, t0, chunks, engine)
        finally:
            if engine is not None:
                engine.leave(self.number)

    async def _send(
        self, writer: asyncio.StreamWriter, t0: float, chunks: list[tuple[str, int]], engine: _Engine | None
    ) -> bool:
        fake = self.fake
        ttft_s = fake.ttft_s if fake.ttft_for is None else fake.ttft_for(self.number, self.body)
        itl_s = fake.itl_s if fake.itl_for is None else fake.itl_for(self.number, self.body)
        timed = bool(ttft_s or itl_s) and engine is None
        # a finish chunk rides on the last token's step
        steps = engine.join(self.number, len(chunks) - fake.finish_chunk, self.prefill) if engine is not None else None
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        sent = fake.sent_times.setdefault(self.number, [])
        role = self._choice({"role": "assistant", "content": ""}, None)
        writer.write(self.event(role, 0 if self.each else None))
        done = 0
        for k, (choice, tokens) in enumerate(chunks):
            last_finish = fake.finish_chunk and k == len(chunks) - 1  # a finish chunk follows at once
            if steps is not None and not last_finish:
                await writer.drain()
                await steps.get()
            elif timed and not last_finish:
                await writer.drain()
                await _sleep_until(t0 + ttft_s + k * itl_s)
            if self.number in fake.stall_requests and k == fake.cut_after_chunks:
                await writer.drain()
                try:
                    await asyncio.sleep(fake.stall_s)
                except asyncio.CancelledError:  # stop() mid-stall: the connection closes, the handler ends quietly
                    pass
                writer.transport.abort()
                return False
            if self.number in fake.cut_requests and k == fake.cut_after_chunks:
                await writer.drain()
                fake.drop(writer)
                return False
            done += tokens
            writer.write(self.event(choice, done if self.each or (self.on_last and k == len(chunks) - 1) else None))
            if not (fake.finish_chunk and k == len(chunks) - 1):  # the truth: when each token chunk was written
                sent.append(time.perf_counter())
            if not timed and k % 64 == 63:
                await writer.drain()
        if self.final:
            writer.write(self.event("[]", done))
        final = b"data: [DONE]\n\n"
        writer.write(f"{len(final):x}\r\n".encode() + final + b"\r\n0\r\n\r\n")
        await writer.drain()
        return True


class _Engine:
    """FakeVllm.step_law's continuous-batching engine: one step at a time, as vLLM's EngineCore loop (without
    async scheduling) runs them. A step admits the waiting requests (first come, up to `slots` running), takes
    a_s + b_s x B for its B sequences plus c_s per prompt token it prefills (the admitted requests' whole prompts,
    their cached prefix free), then hands each one token chunk; a sequence leaves after its last chunk, so the next
    step's B is exact."""

    def __init__(self, fake: FakeVllm, a_s: float, b_s: float, c_s: float = 0.0) -> None:
        self.fake, self.a_s, self.b_s, self.c_s = fake, a_s, b_s, c_s
        self.prefill: dict[int, int] = {}  # number -> prompt tokens its first step computes
        self.waiting: list[int] = []
        self.running: dict[int, tuple[asyncio.Queue[None], list[int]]] = {}  # number -> (its chunks, [left])
        self.queues: dict[int, tuple[asyncio.Queue[None], list[int]]] = {}
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def join(self, number: int, chunks: int, prefill: int = 0) -> asyncio.Queue[None]:
        """Queue request `number` for `chunks` steps, its first prefilling `prefill` prompt tokens; its queue gets
        one item per step that gave it a chunk."""
        queue: asyncio.Queue[None] = asyncio.Queue()
        self.queues[number] = (queue, [chunks])
        self.prefill[number] = prefill
        self.waiting.append(number)
        self.fake.batches[number] = []
        self.wake.set()
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.loop())
        return queue

    def leave(self, number: int) -> None:
        """The request's stream ended (or was dropped): vLLM aborts it, so it takes no further step."""
        self.running.pop(number, None)
        self.prefill.pop(number, None)
        self.queues.pop(number, None)
        if number in self.waiting:
            self.waiting.remove(number)

    async def loop(self) -> None:
        end = 0.0  # when the last step was due to end (0: none yet)
        while True:
            idle = not self.running and not self.waiting
            if idle:
                self.wake.clear()
                await self.wake.wait()
            slots = self.fake.slots
            prefill = 0
            while self.waiting and (not slots or len(self.running) < slots):
                number = self.waiting.pop(0)
                self.running[number] = self.queues[number]
                prefill += self.prefill.pop(number, 0)
            batch = len(self.running)
            # back to back, a step starts when the last was due to end, not when this loop got round to it (writing
            # the last step's chunks, reading new requests): absolute deadlines, so the steps do not drift
            cost_s = self.a_s + self.b_s * batch + self.c_s * prefill
            end = (end if end and not idle else time.perf_counter()) + cost_s
            await _sleep_until(end)
            self.fake.steps.append((end, time.perf_counter(), batch))
            self.fake.step_prefill.append(prefill)
            for number, (queue, left) in list(self.running.items()):
                self.fake.batches[number].append(batch)
                queue.put_nowait(None)
                left[0] -= 1
                if left[0] <= 0:
                    del self.running[number]


async def _sleep_until(deadline: float) -> None:
    """Sleep to a perf_counter deadline within ~0.1 ms: asyncio timers overshoot by ~1 ms (epoll rounds to
    whole milliseconds), so sleep to 2 ms before, then in 0.1 ms blocking steps. Blocking `time.sleep`
    releases the GIL, so the client thread in the same process reads meanwhile (spinning on
    `asyncio.sleep(0)` starved it and bunched chunks); other streams of this server wait up to 2 ms,
    which `sent_times` records truthfully."""
    delay = deadline - time.perf_counter() - SPIN_S
    if delay > 0:
        await asyncio.sleep(delay)
    while (left := deadline - time.perf_counter()) > 0:
        time.sleep(min(left, 0.0001))


def serve_forever(**kwargs: Any) -> None:
    """Run a FakeVllm in this process until killed; print its port on stdout (benchmark subprocesses)."""
    srv = FakeVllm(**kwargs).start()
    print(srv.port, flush=True)
    threading.Event().wait()


# ---- a stand-in for the `vllm serve` process ----

# The seed article's v5e program-load failure at --gpu-memory-utilization 0.95
# (tests/data/vllm_tpu_seed_095_failure.log)
PROGRAM_LOAD_FAILURE = (
    "RuntimeProgramAllocationFailure: Attempting to reserve 384.11M at the bottom of memory.\n"
    "That was not possible. There are 347.33M free, 0B reserved, and 347.33M reservable."
)


def _log(msg: str, level: str = "INFO") -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    print(f"(APIServer pid={os.getpid()}) {level} {stamp} [fake.py:1] {msg}", flush=True)


def _args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="a stand-in for `vllm serve`; unknown vLLM flags are ignored")
    parser.add_argument("positional_model", nargs="?")
    parser.add_argument("--model")
    parser.add_argument("--served-model-name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-model-len", type=int, default=8192)
    parser.add_argument("--fake-boot", choices=["ok", "die", "hang", "fail-program-load"], default="ok")
    parser.add_argument("--fake-fork", action="store_true", help="fork a grandchild, as vLLM forks EngineCore")
    parser.add_argument("--fake-ipc", action="store_true", help="bind a zmq-like IPC socket, as vLLM's EngineCore")
    parser.add_argument("--fake-version", default=VERSION, help="the vLLM version the boot log names")
    parser.add_argument("--fake-kv-tokens", type=int, default=46_592, help="the boot log's KV cache tokens")
    parser.add_argument("--fake-reply", default="Hi there, how are you?", help="what every chat answers")
    parser.add_argument("--fake-prefix-cache-block", type=int, default=0, help="a prefix cache of N-word blocks")
    parser.add_argument("--fake-boot-log", type=Path, help="replay this recorded log instead (see main)")
    parser.add_argument("--fake-boot-s", type=float, default=0.0, help="seconds the boot takes before serving")
    parser.add_argument("--fake-itl-s", type=float, default=0.0, help="seconds between streamed tokens")
    parser.add_argument(
        "--fake-print-secrets", action="store_true", help="log its argv and environment whole, secrets included"
    )
    args, _ = parser.parse_known_args(argv)
    return args


def main(argv: list[str] | None = None) -> None:
    """Boot like `vllm serve`: log vLLM-shaped lines, then serve until killed.

    Boot log: the version, whether HF_TOKEN reached the environment (never its value; but with --fake-print-secrets
    then its argv as vLLM's 'non-default args' line, its whole environment, and HF_TOKEN's value alone), the engine
    line,
    "ipc=<path>" with --fake-ipc (a socket bound as vLLM binds its engine-core sockets), "grandchild=<pid>" with
    --fake-fork, then the KV line (--fake-kv-tokens at --max-model-len; defaults are
    the embedded engine's measured 46,592 tokens, 5.69x at 8,192) and "Application startup complete.".
    --fake-boot die exits 3 after "ValueError: boom during boot"; hang never serves; fail-program-load (or
    FAKE_VLLM_FAIL=1 in the environment) prints the seed's program-load failure and exits 1; --fake-boot-s S
    boots S seconds before serving (two commands racing on one engine state overlap); --fake-itl-s S streams
    generated tokens S seconds apart instead of the fixed reply (a bench that lasts).
    --fake-boot-log FILE replays a recorded log instead (e.g. tests/data/vllm_cpu_0.32_boot.log), its pids
    rewritten to this process's: the lines before "Application startup complete", then the server starts,
    then the rest.
    """
    args = _args(sys.argv[1:] if argv is None else argv)
    boot = "fail-program-load" if os.environ.get("FAKE_VLLM_FAIL") else args.fake_boot
    served = args.served_model_name or args.model or args.positional_model or "model"
    reply = Reply(args.fake_reply)
    fake = FakeVllm(
        None if args.fake_itl_s else lambda body: reply,  # a timed stream generates tokens ("tok" words)
        model=served, version=args.fake_version, max_model_len=args.max_model_len, itl_s=args.fake_itl_s,
        prefix_cache_block=args.fake_prefix_cache_block,
    )  # fmt: skip
    fake.host, fake.port = args.host, args.port
    if args.fake_boot_log:
        lines = re.sub(r"\bpid=\d+", f"pid={os.getpid()}", args.fake_boot_log.read_text()).splitlines()
        ready = next((i for i, line in enumerate(lines) if "Application startup complete" in line), len(lines))
        print("\n".join(lines[:ready]), flush=True)
        fake.start()
        print("\n".join(lines[ready:]), flush=True)
        threading.Event().wait()
    _log(f"vLLM API server version {args.fake_version}")
    _log(f"token received: {'yes' if os.environ.get('HF_TOKEN') else 'no'}")
    # as vLLM before 0.34.0 logs every CLI argument, and a launcher's `env` or a crash dumps the environment
    if args.fake_print_secrets:
        _log(f"non-default args: {{'argv': {sys.argv[1:] if argv is None else argv!r}}}")
        print(f"environ({dict(os.environ)!r})", flush=True)
        print(os.environ.get("HF_TOKEN", ""), end="", flush=True)  # the token alone, no newline after it
    if boot == "fail-program-load":
        print(PROGRAM_LOAD_FAILURE, flush=True)
        sys.exit(1)
    _log(f"Initializing a V1 LLM engine (v{args.fake_version}) with config: model={served!r}")
    if args.fake_ipc:  # vLLM 0.32: ipc://$VLLM_RPC_BASE_PATH/<uuid4>, default the temporary directory; never unlinked
        base = os.environ.get("VLLM_RPC_BASE_PATH", tempfile.gettempdir())
        ipc = socket.socket(socket.AF_UNIX)
        ipc.bind(os.path.join(base, str(uuid.uuid4())))
        print(f"ipc={ipc.getsockname()}", flush=True)
    if args.fake_fork:
        child = os.fork()
        if child == 0:  # the grandchild: sleeps until killed
            while True:
                time.sleep(1)
        print(f"grandchild={child}", flush=True)
    if boot == "die":
        print("ValueError: boom during boot", flush=True)
        sys.exit(3)
    while boot == "hang":
        time.sleep(1)
    time.sleep(args.fake_boot_s)
    concurrency = args.fake_kv_tokens / args.max_model_len
    _log(
        f"CPU KV cache size: {args.fake_kv_tokens:,} tokens, Maximum concurrency for {args.max_model_len:,} "
        f"tokens per request: {concurrency:.2f}x"
    )
    fake.start()
    _log("Application startup complete.")
    threading.Event().wait()


if __name__ == "__main__":
    main()
