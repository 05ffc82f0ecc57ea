"""The streaming client: one chat-completions request, timed chunk by chunk, into a `RequestSample`.

Conventions (DESIGN.md "Measuring right"):
- TTFT ends at the first chunk carrying generated content, reasoning or a tool call (its first delta, the
  name, is generated output), never at the role-only chunk. A chunk with `content: ""` and no role is a token
  that decoded to no text (`vllm.wire.empty_token`, vllm bench serve's rule), and so is one after the first token
  whatever role it repeats (TGI names it on every chunk, its EOS too): without per-chunk usage it is timed as a
  token chunk (TTFT, ITL, the one-per-chunk count); with per-chunk usage its count decides. A thinking model's
  first reasoning token ends TTFT: the server has answered (prefill and queue are behind it) and a client streams
  the thinking as it comes; the answer's first content comes later by the reasoning's length.
  vllm bench serve 0.34 (vllm/benchmarks/lib/endpoint_request_func.py `_choice_has_streamed_output`, read in the
  0.34.0 sdist) ends TTFT at the same chunk; 0.32 (read in its wheel) ended it at the first chunk with `choices`, the
  role chunk included: the same instant against vLLM, which sends the role chunk with the first token's output
  (chat_completion/serving.py `first_iteration`), but ~0 ms against a server that sends it at once, where ours is
  the first token's (tests/unit/bench: TTFT 40 ms, not 0). Said in every report (schemas.bench.TTFT_CONVENTION).
  A client cannot tell an answer whose first token is a special token from TGI: TGI writes a special token's delta
  as `{"role": "assistant", "content": ""}` (router/src/chat.rs `create_event_from_stream_token`, the role on every
  delta) and sends no opening chunk, so that first chunk is, field for field, the role-only opening chunk vLLM sends
  before the first token's text (chat_completion/serving.py `first_iteration`: the role, `content: ""`); and TGI's
  usage comes once, in a usage-only chunk after the last token (chat.rs, include_usage), counting no chunk's tokens.
  Such an answer's TTFT ends at its second token, one ITL late, and its TPOT spans one gap fewer over the same count.
  An answer that stopped (finish_reason not "length") in a chunk without output (`delta: {}`, SGLang's all-null
  delta) after its last text has its E2E and TPOT end at that chunk when usage counts a token the chunks do not carry:
  it is the step of the EOS (llama.cpp's server, Ollama since #17485, SGLang, vLLM behind a parser;
  `_Timing.time_stop_step`), where vllm bench serve ends them at the text. It is no content chunk, so no ITL sample:
  vllm bench serve 0.34 takes ITL between chunks with output alone, and usage cannot tell the EOS's chunk from one
  written with the last tokens of a stream that carries several a chunk, which gave a 0 ms ITL per answer.
- Tokens come from the server's `usage` whenever it sends any. With continuous usage stats the cumulative
  `usage.completion_tokens` on each chunk gives the tokens that chunk carried. A chunk without output whose count
  rose (`delta: {}`: a token vLLM's tool or reasoning parser gave no text, sent when logprobs are asked, else the
  chunk is skipped and the next one's count rises by two; the role chunk of a server that counts the first token on
  it) is no token chunk: its tokens go with the next chunk with output, so TTFT, ITL and the counts are those of the
  same stream without per-chunk usage, and vllm bench serve 0.34's (it times no chunk without output); at the finish
  it is the EOS's step (time_stop_step). It was timed as a token chunk: TTFT 30 ms where the first output came at
  40, and one ITL sample per answer more (tests/unit/bench/test_bench_stream_shapes.py, "blank-..." rows). A
  server that sends no usage at all is counted as `vllm bench serve` counts it: the whole generated text
  tokenized once (the server's /tokenize, no special tokens); without /tokenize, one token per content chunk,
  and the sample says which. The text is the reasoning and the tool-call arguments too, where vllm bench serve 0.34
  tokenizes the content alone (`generated_text += content`, vllm/benchmarks/lib/endpoint_request_func.py, 0.34.0
  sdist) though it times their chunks: they are generated tokens, and a server's usage.completion_tokens counts them
  (vLLM 0.34: every generated token id, chat_completion/stream_processor.py `num_output_tokens`), as does vllm bench
  serve itself whenever the server sends usage (serve.py calculate_metrics: usage first, the tokenized content only
  without it); so one answer counts the same with usage or without, and a thinking model's or an agent turn's output
  is not counted as nearly nothing.
- All events parsed from one network read share that read's arrival time: they arrived together. The event
  stream is read as `vllm.wire.SSEDecoder` reads it (LF, CRLF or CR, comments and keep-alives skipped, a `data:`
  event taken at the blank line that ends it, its `data:` lines joined); the request ends at `data: [DONE]` or at
  the final usage chunk after the finish_reason (`vllm.wire.ends_answer`: nothing but [DONE] may follow it), else
  at the end of the body (`t_done`), even when the server then holds the connection open (without [DONE]
  too: the answer is whole, not timed out) or drops it; E2E ends earlier, at the last token chunk
  (`schemas.figures.e2e_ms`, vllm bench serve's E2EL). A finish_reason chunk that carries usage (vLLM's with
  continuous usage stats, chat_completion/serving.py; other servers' only usage) is followed by vLLM's final usage
  chunk and [DONE] at once: when nothing follows it for DRAIN_S, the answer is whole at that chunk (`stalled`).
- A request is `ok` with HTTP 200, a generated token (NO_TOKEN) and [DONE], a finish_reason or a final usage; anything
  else is `failed` with the reason: the HTTP status and the server's message, an error in the stream (an error chunk
  of either shape, or an `event: error` event, whatever follows it: vLLM sends [DONE] after its error chunk), a 200
  answer that is no event stream (`vllm.wire.not_event_stream`: a whole chat completion from a server that ignored
  stream=true has no TTFT or ITL to give, so it is failed, saying so, not kept as a sample with made-up ones; an error
  body, with its message; judged from the headers, or without a content type from the first bytes
  (`vllm.wire.is_event_stream`), its body read only to say what it said, at most `vllm.wire.SAID_BYTES` for
  `vllm.wire.SAID_S`: a server trickling an endless one holds no request till the timeout), a stream cut before any of
  the three, or no complete answer within the request timeout.
  A request whose connection dropped before any answer came is sent once more, on a new connection (`_post`: a
  keep-alive connection the server closed as the request went out); what that second try gets is the request's.
- A refusal that asks for a wait (HTTP 429 or 503 with Retry-After, RFC 9110 section 10.2.3) says how long in
  `retry_after_s`; the request is failed all the same, and never sent again here: its stream waits (bench.worker).

The data plane uses aiohttp, not httpx: aiohttp parses HTTP in C (llhttp) and hands over everything one
socket read brought, while httpx's pure-Python h11 yields one event per chunked-encoding chunk, i.e. one per
token. Measured with `python benchmarks/client_ceiling.py` (2-core machine, 1-256 streams): 9.5-12.4 us of
client CPU per streamed token with aiohttp and orjson (orjson saves ~2-3 us of those with json) against 52-91
with httpx and json. The control plane (probe, /tokenize, /metrics) is `vllm.wire.WireClient` (httpx); the
payloads and the parsing (SSE, chunks, error bodies, what counts as generated) are `vllm.wire`'s, shared.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp

from onechip.retry_after import retry_after_s
from onechip.schemas.bench import StreamOutcome, usage_below_zero
from onechip.vllm.wire import (
    BUSY_STATUSES,
    CONNECT_TIMEOUT_S,
    SAID_BYTES,
    SAID_S,
    STREAM_CUT,
    SSEDecoder,
    api_key_from_env,
    chat_shape_error,
    chunk_error,
    empty_token,
    ends_answer,
    error_message,
    generated_text,
    has_generated,
    is_event_stream,
    not_event_stream,
    parse_chunk,
    text_tokenize_body,
)

DRAIN_S = 0.05  # how long the body's end is awaited after the answer's end (see _drain)
HOLDS_TO_CLOSE = 2  # answers in a row held past DRAIN_S before the session's later answers are closed at once
PROBE_EVERY = 16  # while they are, every 16th is drained again: one whose body ends in time ends the closing
# a whole answer that carried no generated token: vllm bench serve fails it too ("Never received a valid chunk to
# calculate TTFT", vllm/benchmarks/lib/endpoint_request_func.py, read in the 0.33.0 and 0.34.0 sdists)
NO_TOKEN = "the answer carried no generated token: no TTFT to time"
TIMED_OUT = "TimeoutError: no complete response within the request timeout (--timeout-s)"
# the connection dropped before any answer came (not one that could not be opened: aiohttp's ClientConnectorError)
UNANSWERED = (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError, aiohttp.ClientConnectionResetError)


def data_session(base_url: str, streams: int, request_timeout_s: float) -> aiohttp.ClientSession:
    """An aiohttp session for `streams` concurrent streamed requests to `base_url` (0: any number, no pool limit, as
    an open loop without an in-flight cap needs: a limit would cap it), each limited to
    `request_timeout_s`, sending the server's key (vllm.wire.api_key_from_env) as `Authorization: Bearer ...`
    as WireClient does: a worker process reads it from the environment it inherits, so the key never travels in a
    job."""
    key = api_key_from_env(base_url)
    return aiohttp.ClientSession(  # each stream's last answer may be counted (/tokenize) while its next one streams
        connector=aiohttp.TCPConnector(limit=2 * streams + 2 if streams else 0),
        timeout=aiohttp.ClientTimeout(total=request_timeout_s, connect=CONNECT_TIMEOUT_S),
        headers={"Authorization": f"Bearer {key}"} if key else None,
    )


class _Timing:
    """Folds parsed stream chunks into a StreamOutcome (the conventions in the module docstring)."""

    def __init__(self, out: StreamOutcome):
        self.out = out
        self.per_chunk_known = True
        self.prev_ct = 0
        self.events = 0  # chunks so far carrying usage or output, and how many carried usage: per-chunk counts
        self.with_usage = 0  # are trusted only while every one has (continuous usage stats; a role chunk may not)
        self.usage: dict[str, Any] | None = None  # the latest usage (cumulative): the request's counts
        self.final_usage = False
        self.done = False  # `data: [DONE]` came
        self.complete = False  # the final usage chunk came (`ends_answer`): the answer is whole
        self.answered_at: float | None = None  # when the finish_reason came with usage: whole unless more follows
        self.choices: list[dict[str, Any]] = []  # kept until usage makes counting moot; read only then (cheap)
        self.empties: list[int] = []  # the chunks timed as a token for their `content: ""` alone (their index)
        self.stop_step: float | None = None  # when a finish_reason other than "length" came with no output (finish)

    def chunk(self, obj: dict[str, Any], now: float) -> None:
        """Fold one chunk in; raises ValueError (stream_chat: a failed request) for one of a shape no OpenAI-compatible
        server sends (wire.chat_shape_error), before anything of it is kept."""
        malformed = chat_shape_error(obj, "delta")
        if malformed is not None:
            raise ValueError(malformed)
        out = self.out
        choices = obj.get("choices") or []
        usage = obj.get("usage")
        choice = choices[0] if choices else {}
        generated = has_generated(choice)
        empty = not generated and empty_token(choice, out.t_first is not None)
        delta_tokens: int | None = None
        unshown = 0  # tokens per-chunk usage counts on a chunk without output (none timed): they go with the next one
        if usage or generated or empty:  # a role-only chunk without usage does not break continuous usage
            self.events += 1
        if usage:
            self.usage = usage
            self.with_usage += 1
            ct = usage.get("completion_tokens")
            # only a chunk with output is a token chunk: what usage counts on another (the role chunk; `delta: {}`,
            # a token a parser gave no text, the EOS's step included) goes with the next chunk with output, as the
            # stream without per-chunk usage is timed, and as vllm bench serve 0.34 (_choice_has_streamed_output)
            if ct is not None and self.with_usage == self.events and choices and not (generated or empty):
                unshown = int(ct) - self.prev_ct
            elif ct is not None and self.with_usage == self.events and (generated or empty):
                delta_tokens, self.prev_ct = int(ct) - self.prev_ct, int(ct)
                if delta_tokens < 0:  # a cumulative count that fell counts no chunk: tokens are spread (finish)
                    self.per_chunk_known, delta_tokens = False, None
        if not choices:
            self.final_usage = self.final_usage or bool(usage)
            self.complete = self.complete or ends_answer(obj, out.finish_reason is not None)
            return
        if choice.get("finish_reason"):
            # the first finish_reason ends the answer: a repeated one (a proxy writing the upstream's last chunk again)
            # is no step of it, so it times no EOS (time_stop_step)
            first_finish, out.finish_reason = out.finish_reason is None, choice["finish_reason"]
            if usage:
                self.answered_at = now
            if first_finish and out.t_first is not None and not (generated or empty):
                # per-chunk usage says whether this step made a token; else a stop that is no length stop says so
                per_chunk = self.with_usage == self.events and usage and usage.get("completion_tokens") is not None
                made = unshown > 0 if per_chunk else out.finish_reason != "length"
                self.stop_step = now if made else None
        if self.usage is None:
            self.choices.append(choice)
        if generated or (delta_tokens or 0) > 0 or (delta_tokens is None and empty):
            if out.t_first is None:
                out.t_first = now
            out.t_last = now
            if not generated and delta_tokens is None:
                self.empties.append(len(out.chunk_times))
            out.chunk_times.append(now)
            if delta_tokens is None:
                self.per_chunk_known = False
            else:
                out.chunk_tokens.append(delta_tokens)

    def finish(self) -> StreamOutcome:
        """The outcome: counts from the latest usage (a usage-only final chunk, or usage on the last choice
        chunk, or the last of continuous usage); an error when the stream ended before [DONE], a finish_reason
        or a final usage."""
        out, usage = self.out, self.usage
        self.drop_uncounted_empties()
        self.time_stop_step()
        counted = (usage or {}).get("completion_tokens")
        # per-chunk counts adding up past the request's (a final count below the continuous ones) count no chunk of it
        beyond = isinstance(counted, int) and sum(out.chunk_tokens) > counted
        if not self.per_chunk_known or len(out.chunk_tokens) != len(out.chunk_times) or beyond:
            out.chunk_tokens = []
        if out.error is None and not (self.done or self.final_usage or out.finish_reason):
            out.error = STREAM_CUT
        if out.error is None and out.t_first is None:  # nothing to time: failed, as vllm bench serve fails it
            out.error = NO_TOKEN + (f" (finish_reason {out.finish_reason!r})" if out.finish_reason else "")
        counts = {k: usage.get(k) for k in ("prompt_tokens", "completion_tokens")} if usage is not None else {}
        counts["prompt_tokens_details.cached_tokens"] = ((usage or {}).get("prompt_tokens_details") or {}).get(
            "cached_tokens"
        )
        negative = usage_below_zero(counts)
        if out.error is None and negative is not None:  # no count a generation gives: a failed request, not -5 tok/s
            out.error = negative
        if out.error is None and usage is not None:
            out.prompt_tokens = usage.get("prompt_tokens")
            out.completion_tokens = usage.get("completion_tokens")
            out.cached_tokens = (usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        return out

    def time_stop_step(self) -> None:
        """End the answer's last step (t_last: E2E, TPOT) at the finish chunk without output of an answer that stopped
        (not at its length) when usage counts more tokens than the stream's chunks carried (one each, at least). Such
        a chunk (`delta: {}` or all null, finish "stop") is written at the step of a generated token that decoded to
        no text, the EOS or a stop string's last, and usage counts that token: llama.cpp's server (its EOS piece is
        empty; send_final_response follows process_token, slot.n_decoded counted before the EOS check), Ollama since
        #17485 (2026-08, middleware/openai.go: openai.FinishChunk for the Done response; eval_count is llama-server's
        predicted_n), SGLang (serving_chat.py streams no chunk for the EOS's empty text, `if delta:`, then the finish
        chunk; its completion_tokens is len(req.output_ids), the EOS in it: Req.check_finished reads the EOS as
        output_ids[-1]), vLLM when its tool or reasoning parser gives nothing for the EOS's step
        (chat_completion/serving.py, 0.34.0 sdist: `delta_message = DeltaMessage()` once the output has a
        finish_reason; a tool call ends 'tool_calls' so). Not ended there, the answer's E2E lost that step and its
        TPOT put n tokens over the n - 1 gaps before it: (n-1)/n low; vllm bench serve ends both at the text (vLLM's
        own EOS chunk, `content: ""`, it times as a token). The chunk stays out of chunk_times, so it is no ITL
        sample, as in vllm bench serve 0.34 (ITL between chunks with output): a stream carrying several tokens a
        chunk always leaves usage room for one more, and the `{}` finish that OpenAI-style servers write with the
        last tokens was an ITL of ~0 ms per answer. At a length stop the limit fell on a token that carried its
        text, so the chunk is none; without usage (or with a count the chunks already reach) nothing says a token
        was there. With per-chunk usage the chunk's own count says whether it made a token (chunk), whatever the
        finish_reason."""
        out, counted = self.out, (self.usage or {}).get("completion_tokens")
        if self.stop_step is None or not isinstance(counted, int) or isinstance(counted, bool):
            return
        per_chunk = self.per_chunk_known and len(out.chunk_tokens) == len(out.chunk_times)
        shown = sum(out.chunk_tokens) if per_chunk else len(out.chunk_times)  # the tokens the timed chunks carried
        if shown < counted and self.stop_step >= (out.t_last or 0.0):
            out.t_last = self.stop_step

    def drop_uncounted_empties(self) -> None:
        """Untime the `content: ""` chunks, the last first, that usage leaves no token for: a stream carries at most
        `completion_tokens` token chunks. A chunk whose empty content is a token (an EOS, a special token) and one
        that carries none look alike (TGI's special token, Ollama's Done chunk: the role repeated, `content: ""`);
        Ollama's comes at the EOS's step, which its usage counts (eval_count: the runner's numPredicted, llama.cpp's
        n_decoded, both counted before the EOS check), or with the last token at a length stop, where it counts none
        and was timed as one more token 0 ms after the last (an ITL gap of 0 per request)."""
        out, counted = self.out, (self.usage or {}).get("completion_tokens")
        if not isinstance(counted, int) or isinstance(counted, bool) or len(out.chunk_times) <= counted:
            return
        for index in reversed(self.empties[-(len(out.chunk_times) - counted) :]):
            del out.chunk_times[index]
        out.t_first, out.t_last = (out.chunk_times[0], out.chunk_times[-1]) if out.chunk_times else (None, None)

    def generated(self) -> str:
        """The generated text to count: each field's pieces joined, fields (reasoning, content, tool-call
        arguments) apart by a space so that words of two fields never merge."""
        fields: dict[str, list[str]] = {}
        for choice in self.choices:
            for name, text in generated_text(choice).items():
                fields.setdefault(name, []).append(text)
        return " ".join("".join(pieces) for pieces in fields.values())

    def uncounted(self) -> bool:
        """A whole answer from a server that sent no usage at all: its tokens must be counted."""
        return self.out.error is None and self.usage is None


@contextlib.asynccontextmanager
async def _post(http: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> AsyncIterator[aiohttp.ClientResponse]:
    """The answer to `body` POSTed to `url` on `http`; sent once more, on a new connection of its own, when the
    connection dropped before any answer came (UNANSWERED): a server closes an idle keep-alive connection at its
    timeout (uvicorn's, vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE: 5 s) whatever the client is doing, so a request sent
    on a reused one as it closes was never read (RFC 9112 section 9.3.1: such a request may be sent again; aiohttp
    does so only for idempotent methods). Against a server closing connections at 5 s, an agent thinking 5 s lost
    turns to 'ServerDisconnectedError', counted as the server's failures. The second try keeps what is left of
    the session's total timeout; whatever it raises is the request's."""
    start = time.perf_counter()
    try:
        first: aiohttp.ClientResponse | None = await http.post(url, json=body)
    except aiohttp.ClientConnectorError:
        raise
    except UNANSWERED:
        if http.closed:  # the run is ending (Ctrl-C): the session's close dropped it
            raise
        first = None
    if first is not None:
        async with first:
            yield first
        return
    total = http.timeout.total
    if total is not None and (total := total - (time.perf_counter() - start)) <= 0:
        raise TimeoutError
    timeout = aiohttp.ClientTimeout(total=total, connect=http.timeout.connect)
    async with (
        aiohttp.ClientSession(timeout=timeout, headers=http.headers) as fresh,
        fresh.post(url, json=body) as resp,
    ):
        yield resp


async def _count_output(http: aiohttp.ClientSession, base_url: str, model: str, timing: _Timing) -> None:
    """Count the output of a server that sent no usage (module docstring) into `timing.out`."""
    out = timing.out
    try:
        async with http.post(f"{base_url}/tokenize", json=text_tokenize_body(model, timing.generated())) as resp:
            count = (await resp.json(content_type=None)).get("count") if resp.status == 200 else None
    except (aiohttp.ClientError, TimeoutError, ValueError, AttributeError):
        count = None
    if isinstance(count, int) and not isinstance(count, bool):
        out.completion_tokens, out.completion_tokens_from = count, "tokenize"
    else:
        out.completion_tokens, out.completion_tokens_from = len(out.chunk_times), "chunks"


async def _read_stream(http: aiohttp.ClientSession, resp: aiohttp.ClientResponse, url: str, timing: _Timing) -> bool:
    """Read a 200 answer's events into `timing`; False when the answer is an error (set on the outcome)."""
    out, ctype = timing.out, resp.headers.get("Content-Type")
    decoder = SSEDecoder()
    feed, clock = decoder.feed, time.perf_counter  # locals: this loop runs per token
    reads = resp.content.iter_any()
    head, stream = b"", is_event_stream(ctype)
    while stream is None and (data := await anext(reads, None)) is not None:  # no content type: the first bytes tell
        head, now = head + data, clock()
        stream = is_event_stream(ctype, head)
    if stream is False:
        out.error = not_event_stream(url, ctype, await _said(resp, head))
        return False
    while True:
        if head:  # the first bytes, read to tell the stream (at `now`)
            data, head = head, b""
        else:
            try:
                # after the finish_reason with usage, only a final usage chunk or [DONE] may follow: DRAIN_S for them
                data = await (anext(reads) if timing.answered_at is None else asyncio.wait_for(anext(reads), DRAIN_S))
            except StopAsyncIteration:
                break
            except TimeoutError:
                if timing.answered_at is None:
                    raise
                out.t_done, out.stalled = timing.answered_at, True  # the answer is whole; the server stalled
                return True
            now = clock()
        if not _fold(feed(data), decoder, timing, now):
            return False
        if decoder.done or timing.complete:  # the answer is whole, whatever the server then does with the connection
            out.t_done, timing.done = now, decoder.done
            await _drain(http, resp)
            return True
    return _fold(decoder.close(), decoder, timing, clock())


async def _said(resp: aiohttp.ClientResponse, head: bytes = b"") -> str:
    """What the body of an answer that is not the one asked for says (`vllm.wire.said`'s bounds: `head`, then at most
    SAID_BYTES bytes or SAID_S seconds of the body, or to its end; the rest is never read: the connection is closed)."""
    buf = bytearray(head)

    async def fill() -> None:
        while len(buf) < SAID_BYTES and (data := await resp.content.readany()):
            buf.extend(data)

    try:
        await asyncio.wait_for(fill(), SAID_S)
    except (TimeoutError, aiohttp.ClientError):  # what came is kept
        pass
    return bytes(buf[:SAID_BYTES]).decode("utf-8", "replace")


def _fold(payloads: list[bytes], decoder: SSEDecoder, timing: _Timing, now: float) -> bool:
    """Fold one read's payloads into `timing` at its arrival time `now`; False at an error chunk or, after the
    payloads before it, an `event: error` event (`decoder.error`), the error set."""
    for payload in payloads:
        obj = parse_chunk(payload)
        timing.out.error = chunk_error(obj, payload)
        if timing.out.error is not None:
            return False
        timing.chunk(obj, now)
    timing.out.error = decoder.error
    return decoder.error is None


@dataclass
class _Holds:
    """What a session's server did with its connections after the answers (see _drain)."""

    streak: int = 0  # answers in a row whose connection it held past DRAIN_S
    skipped: int = 0  # answers closed at once since the last one drained


_HOLDS: weakref.WeakKeyDictionary[aiohttp.ClientSession, _Holds] = weakref.WeakKeyDictionary()


async def _drain(http: aiohttp.ClientSession, resp: aiohttp.ClientResponse) -> None:
    """Read what follows the answer's end ([DONE] and the body's end, normally on their way already) for up to
    DRAIN_S, so the connection is reused; a server that holds it open longer gets it closed. Once it held
    HOLDS_TO_CLOSE answers in a row, the session's later answers get it closed at once: a closed-loop stream
    waiting DRAIN_S before each next request measured 2 x 4 tokens per 60 ms answer as 77 tok/s where the
    server gave 131 (tests/unit/bench, 'hold-after-done'). One hold alone (a stall of the client or the server)
    does not, and every PROBE_EVERY-th answer is still drained, so a server that ends its bodies in time again
    gets its connections reused again: closing each one at once made every later request set up a new one."""
    holds = _HOLDS.setdefault(http, _Holds())
    if resp.content.is_eof():  # ended with the answer: not held
        holds.streak = 0
        return
    if holds.streak >= HOLDS_TO_CLOSE:
        holds.skipped += 1
        if holds.skipped < PROBE_EVERY:
            return
    holds.skipped = 0
    try:
        await asyncio.wait_for(resp.content.read(), DRAIN_S)
    except TimeoutError:
        holds.streak += 1
        return
    except aiohttp.ClientError:  # dropped at once: not held
        pass
    holds.streak = 0


async def stream_chat(
    http: aiohttp.ClientSession,
    base_url: str,
    body: dict[str, Any],
) -> StreamOutcome:
    """POST `body` (see `vllm.wire.bench_chat_body`) to `base_url`/v1/chat/completions on `http` (timeouts
    set) and time the stream, the output of an answer without usage counted (stream_chat_timed's Count awaited).

    Never raises for transport or HTTP errors or timeouts: they come back in `StreamOutcome.error`.
    """
    out, count = await stream_chat_timed(http, base_url, body)
    return out if count is None else await count()


Count = Callable[[], Awaitable[StreamOutcome]]


async def stream_chat_timed(
    http: aiohttp.ClientSession,
    base_url: str,
    body: dict[str, Any],
) -> tuple[StreamOutcome, Count | None]:
    """stream_chat, returning as soon as the answer ended: (the outcome, None), or for a whole answer that carried
    no usage (outcome, a Count), whose awaiting fills the outcome's completion_tokens (the server's /tokenize of the
    text, else chunks; module docstring) and returns it. A closed-loop stream sends its next request at once and
    counts meanwhile: awaited first, the /tokenize round trip idled the stream after every answer (100 ms of
    /tokenize halved the requests/s of 100 ms answers, tests/unit/bench).

    Never raises for transport or HTTP errors or timeouts: they come back in `StreamOutcome.error`.
    """
    out = StreamOutcome(t_send=time.perf_counter())
    timing = _Timing(out)
    url = f"{base_url}/v1/chat/completions"
    try:
        async with _post(http, url, body) as resp:
            out.http_status = resp.status
            if resp.status != 200:
                out.error = error_message(resp.status, await _said(resp))
                if resp.status in BUSY_STATUSES:  # the wait it asks before the next request (bench.worker waits it)
                    out.retry_after_s = retry_after_s(resp.headers)
                return out, None
            if not await _read_stream(http, resp, url, timing):
                return out, None
    except aiohttp.ClientPayloadError as exc:
        # aiohttp's message embeds an internal code 400 that reads like an HTTP status; say what happened
        how = (
            "the server reset the connection" if "ConnectionResetError" in str(exc) else "the chunked body ended early"
        )
        out.error = f"ClientPayloadError: stream cut mid-way ({how})"
    except TimeoutError:
        # a finish_reason alone does not end the answer: a final usage chunk or [DONE] may still follow it
        out.error = TIMED_OUT + (" after the finish_reason (no final usage, no [DONE])" if out.finish_reason else "")
    except aiohttp.ClientError as exc:
        out.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except (ValueError, KeyError, TypeError) as exc:  # orjson.JSONDecodeError is a ValueError
        out.error = f"unparsable stream chunk: {exc}"
    finally:
        if out.t_done is None:  # else stamped at [DONE]
            out.t_done = time.perf_counter()
    timing.finish()
    if not timing.uncounted():
        return out, None

    async def count() -> StreamOutcome:
        await _count_output(http, base_url, str(body.get("model")), timing)
        return out

    return out, count
