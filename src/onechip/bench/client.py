"""The streaming client: one chat-completions request, timed chunk by chunk, into a `RequestSample`.

Conventions (DESIGN.md "Measuring right"):
- TTFT ends at the first chunk carrying generated content, reasoning or a tool call, never at the
  role-only chunk.
- Tokens come from the server's `usage`; chunks are never counted as tokens. With continuous usage stats the
  cumulative `usage.completion_tokens` on each chunk gives the tokens that chunk carried; a chunk that carries
  tokens but no text (a parser holding text back) still counts as generated.
- All events parsed from one network read share that read's arrival time: they arrived together.
- A request is `ok` only with HTTP 200 and a final usage; anything else is `failed` with the server's message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from onechip.bench.wire import error_message, has_generated


@dataclass
class StreamOutcome:
    """What one streamed request measured. Times: seconds, `time.perf_counter` clock."""

    t_send: float
    t_first: float | None = None
    t_last: float | None = None
    t_done: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    chunk_times: list[float] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    http_status: int | None = None
    error: str | None = None


async def stream_chat(
    http: httpx.AsyncClient, body: dict[str, Any], on_tokens: Callable[[int], None] | None = None
) -> StreamOutcome:
    """POST `body` to /v1/chat/completions on `http` (base_url and timeouts set) and time the stream.

    Never raises for transport or HTTP errors: they come back in `StreamOutcome.error`. `on_tokens(n)`,
    if given, is called with token deltas as they arrive (continuous usage only) for live progress.
    """
    out = StreamOutcome(t_send=time.perf_counter())
    per_chunk_known = True
    prev_ct = 0
    final_usage = False
    try:
        async with http.stream("POST", "/v1/chat/completions", json=body) as resp:
            out.http_status = resp.status_code
            if resp.status_code != 200:
                text = (await resp.aread()).decode("utf-8", "replace")
                out.error = error_message(resp.status_code, text)
                return out
            buf = b""
            async for data in resp.aiter_bytes():
                now = time.perf_counter()
                buf += data
                if b"\n" not in data:
                    continue
                lines = buf.split(b"\n")
                buf = lines.pop()
                for line in lines:
                    if not line.startswith(b"data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == b"[DONE]":
                        continue
                    obj = json.loads(payload.decode())
                    if "error" in obj and "choices" not in obj:
                        out.error = error_message(200, payload.decode("utf-8", "replace"))
                        return out
                    choices = obj.get("choices") or []
                    usage = obj.get("usage")
                    delta_tokens: int | None = None
                    if usage and usage.get("completion_tokens") is not None:
                        ct = int(usage["completion_tokens"])
                        delta_tokens, prev_ct = ct - prev_ct, ct
                    if not choices:
                        if usage:
                            out.prompt_tokens = usage.get("prompt_tokens")
                            out.completion_tokens = usage.get("completion_tokens")
                            final_usage = True
                        continue
                    choice = choices[0]
                    if choice.get("finish_reason"):
                        out.finish_reason = choice["finish_reason"]
                    if has_generated(choice) or (delta_tokens or 0) > 0:
                        if out.t_first is None:
                            out.t_first = now
                        out.t_last = now
                        out.chunk_times.append(now)
                        if delta_tokens is None:
                            per_chunk_known = False
                        else:
                            out.chunk_tokens.append(delta_tokens)
                            if on_tokens is not None and delta_tokens:
                                on_tokens(delta_tokens)
    except httpx.HTTPError as exc:
        out.error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except (json.JSONDecodeError, ValueError, KeyError, TypeError) as exc:
        out.error = f"unparsable stream chunk: {exc}"
    finally:
        out.t_done = time.perf_counter()
    if not per_chunk_known or len(out.chunk_tokens) != len(out.chunk_times):
        out.chunk_tokens = []
    if out.error is None and not final_usage:
        out.error = "stream ended without a final usage chunk (cut mid-way?)"
    return out
