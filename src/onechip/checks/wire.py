"""The HTTP the checks send to an OpenAI-compatible endpoint (vLLM), and what they read back.

One small synchronous httpx client: chat completions (plain and streamed, SSE parsed here), raw
completions, `/v1/models`, vLLM's `POST /tokenize` and `GET /health`. Non-2xx answers become
`EndpointError` carrying the status code and the server's message, so a probe can tell "the server
refused tools" (HTTP 400 → blocked) from "the model answered badly" (fail).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from onechip.errors import EndpointError
from onechip.schemas.common import base_root


class HTTPStatusEndpointError(EndpointError):
    """The endpoint answered with a non-2xx status; `status_code` and the server's `server_message` kept."""

    def __init__(self, status_code: int, server_message: str, path: str):
        super().__init__(f"HTTP {status_code} from {path}: {server_message}")
        self.status_code = status_code
        self.server_message = server_message
        self.path = path


@dataclass
class ChatReply:
    """A chat completion, plain or reassembled from a stream."""

    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"id","name","arguments"(str)}]
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: float = 0.0
    raw: dict[str, Any] | None = None  # the non-streamed body


def _server_message(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return resp.text[:500]
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and "message" in err:
            return str(err["message"])[:500]
        if "message" in body:
            return str(body["message"])[:500]
    return json.dumps(body)[:500]


class Endpoint:
    """A synchronous client for one OpenAI-compatible server. Raises `EndpointError` on transport errors."""

    def __init__(self, base_url: str, timeout_s: float = 180.0, transport: httpx.BaseTransport | None = None):
        self.root = base_root(base_url)
        self.timeout_s = timeout_s
        self._client = httpx.Client(base_url=self.root, timeout=timeout_s, transport=transport)

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> Endpoint:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plain requests -------------------------------------------------------------------------
    def _post(self, path: str, body: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        try:
            resp = self._client.post(path, json=body, timeout=timeout_s or self.timeout_s)
        except httpx.TimeoutException as exc:
            raise EndpointError(f"timed out after {timeout_s or self.timeout_s:.0f} s on {path}") from exc
        except httpx.HTTPError as exc:
            raise EndpointError(f"{path}: {exc.__class__.__name__}: {exc}") from exc
        if resp.status_code >= 300:
            raise HTTPStatusEndpointError(resp.status_code, _server_message(resp), path)
        try:
            return resp.json()
        except ValueError as exc:
            raise EndpointError(f"{path}: answer is not JSON: {resp.text[:200]!r}") from exc

    def models(self) -> list[dict[str, Any]]:
        """The `data` list of GET /v1/models (vLLM adds `max_model_len` to each entry)."""
        try:
            resp = self._client.get("/v1/models")
        except httpx.HTTPError as exc:
            raise EndpointError(f"cannot reach {self.root}/v1/models: {exc}") from exc
        if resp.status_code >= 300:
            raise HTTPStatusEndpointError(resp.status_code, _server_message(resp), "/v1/models")
        return list(resp.json().get("data", []))

    def healthy(self, timeout_s: float = 10.0) -> bool:
        """GET /health answers 2xx within `timeout_s`."""
        try:
            return self._client.get("/health", timeout=timeout_s).status_code < 300
        except httpx.HTTPError:
            return False

    def tokenize_chat(self, model: str, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens of `messages` as the server counts them (chat template, generation prompt).

        vLLM: POST /tokenize {"model", "messages", "add_generation_prompt": true} → {"count": N}.
        """
        body = {"model": model, "messages": messages, "add_generation_prompt": True}
        out = self._post("/tokenize", body)
        if "count" not in out:
            raise EndpointError(f"/tokenize answered without 'count': {str(out)[:200]}")
        return int(out["count"])

    def completion(self, model: str, prompt: str, max_tokens: int = 16) -> tuple[str, float]:
        """Raw POST /v1/completions at temperature 0 → (text, latency ms)."""
        t0 = time.perf_counter()
        out = self._post(
            "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0}
        )
        text = (out.get("choices") or [{}])[0].get("text") or ""
        return text, (time.perf_counter() - t0) * 1000

    def chat(self, body: dict[str, Any], timeout_s: float | None = None) -> ChatReply:
        """Non-streamed POST /v1/chat/completions with `body` (model, messages, ...)."""
        t0 = time.perf_counter()
        out = self._post("/v1/chat/completions", {**body, "stream": False}, timeout_s)
        choice = (out.get("choices") or [{}])[0]
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
            tool_calls=calls,
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_ms=(time.perf_counter() - t0) * 1000,
            raw=out,
        )

    def chat_stream(self, body: dict[str, Any], timeout_s: float | None = None) -> ChatReply:
        """Streamed chat completion, reassembled: content joined, each tool call's argument deltas joined."""
        t0 = time.perf_counter()
        payload = {**body, "stream": True, "stream_options": {"include_usage": True}}
        reply = ChatReply()
        calls: dict[int, dict[str, Any]] = {}
        try:
            with self._client.stream(
                "POST", "/v1/chat/completions", json=payload, timeout=timeout_s or self.timeout_s
            ) as resp:
                if resp.status_code >= 300:
                    resp.read()
                    raise HTTPStatusEndpointError(resp.status_code, _server_message(resp), "/v1/chat/completions")
                for line in resp.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    data = line[len("data:") :].strip()
                    if data == "[DONE]":
                        break
                    chunk = json.loads(data)
                    if chunk.get("usage"):
                        reply.prompt_tokens = chunk["usage"].get("prompt_tokens")
                        reply.completion_tokens = chunk["usage"].get("completion_tokens")
                    for choice in chunk.get("choices") or []:
                        delta = choice.get("delta") or {}
                        reply.content += delta.get("content") or ""
                        for tc in delta.get("tool_calls") or []:
                            slot = calls.setdefault(
                                int(tc.get("index", 0)), {"id": None, "name": None, "arguments": ""}
                            )
                            fn = tc.get("function") or {}
                            slot["id"] = tc.get("id") or slot["id"]
                            slot["name"] = fn.get("name") or slot["name"]
                            slot["arguments"] += fn.get("arguments") or ""
                        if choice.get("finish_reason"):
                            reply.finish_reason = choice["finish_reason"]
        except httpx.TimeoutException as exc:
            raise EndpointError(f"stream timed out after {timeout_s or self.timeout_s:.0f} s") from exc
        except httpx.HTTPError as exc:
            raise EndpointError(f"stream failed: {exc.__class__.__name__}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise EndpointError(f"stream chunk is not JSON: {exc}") from exc
        reply.tool_calls = [calls[i] for i in sorted(calls)]
        reply.latency_ms = (time.perf_counter() - t0) * 1000
        return reply


def resolve_model(endpoint: Endpoint, model: str | None) -> tuple[str, int | None]:
    """The model to check and its `max_model_len` (vLLM reports it in /v1/models; None elsewhere).

    Raises EndpointError if the server lists no model or not the requested one.
    """
    data = endpoint.models()
    if not data:
        raise EndpointError(f"{endpoint.root}/v1/models lists no model")
    if model is None:
        entry = data[0]
    else:
        matches = [d for d in data if d.get("id") == model]
        if not matches:
            names = ", ".join(str(d.get("id")) for d in data)
            raise EndpointError(f"model {model!r} is not served at {endpoint.root} (served: {names})")
        entry = matches[0]
    mml = entry.get("max_model_len")
    return str(entry["id"]), int(mml) if mml else None
