"""A fake OpenAI-compatible streaming server with injected timings, on 127.0.0.1 port 0, in a thread.

Raw asyncio HTTP/1.1 (keep-alive, chunked transfer) so a mid-stream disconnect is a real torn chunked body.
It speaks the parts of vLLM's API the benchmark uses:

    GET  /v1/models, /version, /metrics (Prometheus text; vLLM metric names)
    POST /tokenize            count = words of the message + TEMPLATE_TOKENS (a stand-in chat template)
    POST /v1/chat/completions streamed: a role-only chunk at once, then content chunks; the k-th content
                              chunk is sent at ttft_s + k * itl_s after the request arrived (absolute
                              deadlines, so gaps do not drift); `chunk_plan` says how many tokens each chunk
                              carries; usage on every chunk when continuous_usage_stats is asked; final usage.

Errors injected: HTTP 400 with vLLM's message when prompt + max_tokens > max_model_len; a disconnect after
`cut_after_chunks` content chunks for chat requests whose 1-based number is in `cut_requests`; 400 for
min_tokens/ignore_eos when `reject_extras`; 404 on /tokenize when `has_tokenize` is False.
Zero ttft_s and itl_s stream as fast as the socket allows (the client-ceiling benchmark).
The last 2 ms before each deadline are spun in blocking steps (timing accuracy for one stream), which holds
the server's loop: with several streams and an inter-token gap of a few ms they are served one after another,
not concurrently. Concurrency tests use gaps of 10 ms or more, or zero.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any

TEMPLATE_TOKENS = 7  # tokens the stand-in chat template adds around one user message
SPIN_S = 0.002  # the last 2 ms before a deadline are spun, not slept (see _sleep_until)


@dataclass
class FakeServer:
    ttft_s: float = 0.0
    itl_s: float = 0.0
    chunk_plan: list[int] | None = None  # tokens per content chunk; None = one token per chunk
    max_model_len: int = 4096
    cut_requests: set[int] = field(default_factory=set)
    cut_after_chunks: int = 2
    reject_extras: bool = False
    has_tokenize: bool = True
    has_metrics: bool = True
    model: str = "fake-model"
    # observed
    chat_requests: list[dict[str, Any]] = field(default_factory=list)
    # per chat request number (1-based): perf_counter when each content chunk was written (the truth the
    # client's timestamps are checked against: same process, same monotonic clock)
    sent_times: dict[int, list[float]] = field(default_factory=dict)
    tokenize_calls: int = 0
    running: int = 0
    host: str = "127.0.0.1"
    port: int = 0

    # ---- lifecycle ----
    def start(self) -> FakeServer:
        ready = threading.Event()
        self._loop = asyncio.new_event_loop()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._server = self._loop.run_until_complete(asyncio.start_server(self._handle, self.host, 0))
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()
        ready.wait(5)
        return self

    def stop(self) -> None:
        async def close() -> None:
            self._server.close()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- HTTP ----
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:] if ":" in ln)}
                n = int(headers.get("content-length", "0"))
                body = json.loads(await reader.readexactly(n)) if n else {}
                keep = await self._route(method, path, body, writer)
                if not keep:
                    writer.close()
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    @staticmethod
    def _send(writer: asyncio.StreamWriter, status: int, obj: Any, ctype: str = "application/json") -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}.get(status, "X")
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\ncontent-type: {ctype}\r\n".encode()
            + f"content-length: {len(data)}\r\n\r\n".encode()
            + data
        )

    async def _route(self, method: str, path: str, body: Any, writer: asyncio.StreamWriter) -> bool:
        if method == "GET" and path == "/v1/models":
            self._send(writer, 200, {"object": "list", "data": [{"id": self.model, "object": "model"}]})
        elif method == "GET" and path == "/version":
            self._send(writer, 200, {"version": "0.0.0-fake"})
        elif method == "GET" and path == "/metrics" and self.has_metrics:
            self._send(writer, 200, self._metrics().encode(), "text/plain; version=0.0.4")
        elif method == "POST" and path == "/tokenize" and self.has_tokenize:
            self.tokenize_calls += 1
            count = self.count(body)
            self._send(writer, 200, {"count": count, "max_model_len": self.max_model_len, "tokens": [0] * count})
        elif method == "POST" and path == "/v1/chat/completions":
            return await self._chat(body, writer)
        else:
            self._send(writer, 404, {"detail": "Not Found"})
        await writer.drain()
        return True

    @staticmethod
    def count(body: dict[str, Any]) -> int:
        if "prompt" in body:  # /tokenize with a plain prompt
            return len(str(body["prompt"]).split())
        words = 0
        for m in body["messages"]:
            content = m["content"]
            if isinstance(content, list):  # OpenAI content parts, as `vllm bench serve` sends them
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            words += len(str(content).split())
        return words + TEMPLATE_TOKENS

    def _metrics(self) -> str:
        n = len(self.chat_requests)
        return (
            "# HELP vllm:num_preemptions_total Preemptions.\n# TYPE vllm:num_preemptions_total counter\n"
            f'vllm:num_preemptions_total{{model_name="{self.model}"}} {n // 10}\n'
            "# HELP vllm:prefix_cache_queries_total Q.\n# TYPE vllm:prefix_cache_queries_total counter\n"
            f'vllm:prefix_cache_queries_total{{model_name="{self.model}"}} {n * 100}\n'
            "# HELP vllm:prefix_cache_hits_total H.\n# TYPE vllm:prefix_cache_hits_total counter\n"
            f'vllm:prefix_cache_hits_total{{model_name="{self.model}"}} {n * 25}\n'
            "# HELP vllm:num_requests_running R.\n# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{model_name="{self.model}"}} {self.running}\n'
            "# HELP vllm:kv_cache_usage_perc KV.\n# TYPE vllm:kv_cache_usage_perc gauge\n"
            f'vllm:kv_cache_usage_perc{{model_name="{self.model}"}} {self.running / 100}\n'
        )

    async def _chat(self, body: dict[str, Any], writer: asyncio.StreamWriter) -> bool:
        t0 = time.perf_counter()
        self.chat_requests.append(body)
        number = len(self.chat_requests)
        if self.reject_extras and ("min_tokens" in body or "ignore_eos" in body):
            self._send(writer, 400, {"error": {"message": "extra fields not permitted", "code": 400}})
            await writer.drain()
            return True
        prompt = self.count(body)
        max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 16)
        if prompt + max_tokens > self.max_model_len:
            msg = (
                f"This model's maximum context length is {self.max_model_len} tokens. However, you requested "
                f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the completion)."
            )
            self._send(writer, 400, {"object": "error", "message": msg, "type": "BadRequestError", "code": 400})
            await writer.drain()
            return True
        plan = list(self.chunk_plan) if self.chunk_plan else [1] * max_tokens
        continuous = bool((body.get("stream_options") or {}).get("continuous_usage_stats"))
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        rid = f"chatcmpl-{number}"

        # JSON pieces built once per request: at zero delay this server is what the client-ceiling benchmark
        # measures against, so each event costs string formatting, not a json.dumps of the whole object
        head = json.dumps({"id": rid, "object": "chat.completion.chunk", "model": self.model})[:-1]
        choice_json: dict[tuple[int, bool], str] = {}

        def event(choices: list[Any] | tuple[int, bool], completion: int | None) -> bytes:
            if isinstance(choices, tuple):  # a content choice: (tokens, last)
                if choices not in choice_json:
                    tokens, last = choices
                    delta = {"content": "tok " * tokens}
                    finish = "length" if last else None
                    choice_json[choices] = json.dumps([{"index": 0, "delta": delta, "finish_reason": finish}])
                body = choice_json[choices]
            else:
                body = json.dumps(choices)
            usage = (
                ""
                if completion is None
                else f', "usage": {{"prompt_tokens": {prompt}, "completion_tokens": {completion}, '
                f'"total_tokens": {prompt + completion}}}'
            )
            data = f'data: {head}, "choices": {body}{usage}}}\n\n'.encode()
            return b"%x\r\n%b\r\n" % (len(data), data)

        self.running += 1
        sent = self.sent_times.setdefault(number, [])
        try:
            writer.write(
                event([{"index": 0, "delta": {"role": "assistant", "content": ""}}], 0 if continuous else None)
            )
            done = 0
            for k, tokens in enumerate(plan):
                if self.ttft_s or self.itl_s:
                    await writer.drain()
                    await _sleep_until(t0 + self.ttft_s + k * self.itl_s)
                if number in self.cut_requests and k == self.cut_after_chunks:
                    await writer.drain()
                    writer.transport.abort()
                    return False
                done += tokens
                writer.write(event((tokens, k == len(plan) - 1), done if continuous else None))
                sent.append(time.perf_counter())
                if not (self.ttft_s or self.itl_s) and k % 64 == 63:
                    await writer.drain()
            writer.write(event([], done))
            final = b"data: [DONE]\n\n"
            writer.write(f"{len(final):x}\r\n".encode() + final + b"\r\n0\r\n\r\n")
            await writer.drain()
            return True
        finally:
            self.running -= 1


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
    """Run a FakeServer in this process until killed; print its port on stdout (benchmark subprocesses)."""
    srv = FakeServer(**kwargs).start()
    print(srv.port, flush=True)
    threading.Event().wait()
