"""The wire payloads the benchmark sends and parses: OpenAI chat-completions streaming and vLLM extras.

Request fields beyond the OpenAI API are vLLM's (docs.vllm.ai "Extra parameters" of the chat API):
`min_tokens`, `ignore_eos`, and `stream_options.continuous_usage_stats` (usage on every chunk).
Error bodies come in two shapes: OpenAI `{"error": {"message": ...}}` and older vLLM
`{"object": "error", "message": ...}`; `error_message` reads both.
"""

from __future__ import annotations

import json
from typing import Any

# Delta fields that carry generated tokens. vLLM's reasoning parsers use `reasoning_content` (older) or
# `reasoning` (newer); reasoning tokens are generated tokens, so they start TTFT too.
GENERATED_DELTA_FIELDS = ("content", "reasoning_content", "reasoning", "tool_calls")


def chat_body(model: str, content: str, output_tokens: int, *, extras: bool, continuous_usage: bool) -> dict[str, Any]:
    """A streamed chat-completions body asking for exactly `output_tokens` tokens where the server allows.

    `extras` adds vLLM's min_tokens + ignore_eos; `continuous_usage` asks for usage on every chunk.
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": content}],
        "max_tokens": output_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if continuous_usage:
        body["stream_options"]["continuous_usage_stats"] = True
    if extras:
        body["min_tokens"] = output_tokens
        body["ignore_eos"] = True
    return body


def tokenize_body(model: str, content: str) -> dict[str, Any]:
    """vLLM POST /tokenize body for chat messages with the chat template and generation prompt applied."""
    return {"model": model, "messages": [{"role": "user", "content": content}], "add_generation_prompt": True}


def error_message(status: int, text: str, limit: int = 500) -> str:
    """One line from an error response body: the server's message when it sent one, else the raw text."""
    msg = text
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError):
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
    msg = " ".join(msg.split())
    return f"HTTP {status}: {msg[:limit]}"


def has_generated(choice: dict[str, Any]) -> bool:
    """True when a streamed choice's delta carries generated text, reasoning or a tool call (not the role)."""
    delta = choice.get("delta") or {}
    return any(delta.get(f) for f in GENERATED_DELTA_FIELDS)
