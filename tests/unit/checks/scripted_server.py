"""A scripted OpenAI-compatible server for the checks' tests: a real HTTP server on 127.0.0.1, port 0.

It replays given replies (text or tool calls) on /v1/chat/completions, plain or as an SSE stream with
the tool-call arguments split into deltas the way vLLM sends them; it also serves /v1/models (with
vLLM's `max_model_len`), /v1/completions, /tokenize (one token per whitespace-separated word plus a
fixed chat-template overhead) and /health. Prompts over `max_model_len` get vLLM's 400, or hang when
`over_limit="hang"`. Every request body is kept in `requests` for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEMPLATE_OVERHEAD = 5  # tokens the fake chat template adds around the messages


@dataclass
class Reply:
    """One scripted chat answer: text, tool calls [(name, arguments JSON text)], or an HTTP error."""

    content: str = ""
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    status: int = 200
    error: str = ""


def count_tokens(messages: list[dict[str, Any]]) -> int:
    """The fake tokenizer: words of every message's content, plus the template overhead."""
    return TEMPLATE_OVERHEAD + sum(len(str(m.get("content") or "").split()) for m in messages)


class ScriptedServer:
    """Use as a context manager; `url` is http://127.0.0.1:<port>."""

    def __init__(
        self,
        chat: list[Reply] | Callable[[dict[str, Any]], Reply],
        *,
        model: str = "scripted",
        max_model_len: int | None = 4096,
        completion_text: str = "Paris.",
        over_limit: str = "400",
        hang_s: float = 5.0,
        chunk_chars: int = 3,
    ):
        self.chat = chat
        self.model = model
        self.max_model_len = max_model_len
        self.completion_text = completion_text
        self.over_limit = over_limit
        self.hang_s = hang_s
        self.chunk_chars = chunk_chars
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def chat_bodies(self) -> list[dict[str, Any]]:
        return [b for p, b in self.requests if p == "/v1/chat/completions"]

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if callable(self.chat):
            return self.chat(body)
        with self._lock:
            if not self.chat:
                return Reply(status=500, error="script exhausted")
            return self.chat.pop(0)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout tests)
                    pass

            def do_GET(self) -> None:
                server.requests.append((self.path, {}))
                if self.path == "/health":
                    self._json(200, {})
                elif self.path == "/v1/models":
                    entry: dict[str, Any] = {"id": server.model, "object": "model"}
                    if server.max_model_len:
                        entry["max_model_len"] = server.max_model_len
                    self._json(200, {"object": "list", "data": [entry]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append((self.path, body))
                if self.path == "/tokenize":
                    self._json(
                        200, {"count": count_tokens(body["messages"]), "max_model_len": server.max_model_len}
                    )
                elif self.path == "/v1/completions":
                    self._json(200, {"choices": [{"text": server.completion_text, "finish_reason": "stop"}]})
                elif self.path == "/v1/chat/completions":
                    self._chat(body)
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def _chat(self, body: dict[str, Any]) -> None:
                prompt = count_tokens(body["messages"])
                limit = server.max_model_len
                if limit and prompt + int(body.get("max_tokens") or 16) > limit:
                    if server.over_limit == "hang":
                        time.sleep(server.hang_s)
                    self._json(
                        400,
                        {
                            "error": {
                                "message": f"This model's maximum context length is {limit} "
                                f"tokens. However, your prompt contains {prompt} input tokens.",
                                "type": "BadRequestError",
                                "code": 400,
                            }
                        },
                    )
                    return
                reply = server._next_reply(body)
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": reply.error, "code": reply.status}})
                    return
                completion = max(1, len(reply.content.split()))
                calls = [
                    {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
                    for i, (n, a) in enumerate(reply.tool_calls)
                ]
                finish = "tool_calls" if calls else "stop"
                usage = {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                }
                if not body.get("stream"):
                    message = {"role": "assistant", "content": reply.content or None, "tool_calls": calls}
                    self._json(
                        200,
                        {
                            "id": "chatcmpl-1",
                            "object": "chat.completion",
                            "model": server.model,
                            "created": 0,
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                            "usage": usage,
                        },
                    )
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                n = server.chunk_chars

                def send(delta: dict[str, Any], finish_reason: str | None = None) -> None:
                    chunk = {
                        "id": "chatcmpl-1",
                        "object": "chat.completion.chunk",
                        "model": server.model,
                        "created": 0,
                        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                    }
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())

                send({"role": "assistant", "content": ""})
                for i in range(0, len(reply.content), n):
                    send({"content": reply.content[i : i + n]})
                for i, call in enumerate(calls):
                    fn = call["function"]
                    send(
                        {
                            "tool_calls": [
                                {
                                    "index": i,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {"name": fn["name"], "arguments": ""},
                                }
                            ]
                        }
                    )
                    for j in range(0, len(fn["arguments"]), n):
                        send(
                            {
                                "tool_calls": [
                                    {"index": i, "function": {"arguments": fn["arguments"][j : j + n]}}
                                ]
                            }
                        )
                send({}, finish)
                tail = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "model": server.model,
                    "created": 0,
                    "choices": [],
                    "usage": usage,
                }
                self.wfile.write(f"data: {json.dumps(tail)}\n\ndata: [DONE]\n\n".encode())

        return Handler
