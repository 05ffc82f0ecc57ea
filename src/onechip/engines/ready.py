"""What "ready" means for a served engine: /health answers, /v1/models lists the served name, and a first
chat completion comes back (the seed article's smoke test: chat, not raw completions, on `-it` models)."""

from __future__ import annotations

import httpx

from onechip.errors import EngineError

SMOKE_PROMPT = "Say hi in five words."  # seed article, the smoke test after boot


def healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    """GET /health answered 200."""
    try:
        return httpx.get(f"{base_url}/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def confirm_ready(base_url: str, served_name: str, timeout_s: float = 120.0) -> str:
    """Check /v1/models serves `served_name` and one chat completion answers; returns its text.

    Raises EngineError naming what the engine serves instead, or why the first completion failed.
    """
    try:
        models = httpx.get(f"{base_url}/v1/models", timeout=30.0)
        models.raise_for_status()
        ids = [m.get("id") for m in models.json().get("data", [])]
        if served_name not in ids:
            raise EngineError(f"engine at {base_url} serves {ids}, not {served_name!r}")
        reply = httpx.post(
            f"{base_url}/v1/chat/completions",
            json={
                "model": served_name,
                "messages": [{"role": "user", "content": SMOKE_PROMPT}],
                "max_tokens": 16,
                "temperature": 0,
            },
            timeout=timeout_s,
        )
        reply.raise_for_status()
        return str(reply.json()["choices"][0]["message"].get("content") or "")
    except (httpx.HTTPError, ValueError, KeyError, IndexError) as exc:
        raise EngineError(
            f"engine at {base_url} is healthy but its first chat completion failed: "
            f"{type(exc).__name__}: {str(exc)[:200]}"
        ) from None
