"""What "ready" means for a served engine: /health answers, /v1/models lists the served name, and a first
chat completion comes back (the seed article's smoke test: chat, not raw completions, on `-it` models).
The HTTP is `vllm.wire`'s, the same calls the checks and the benchmark make."""

from __future__ import annotations

from onechip.errors import EndpointError, EngineError
from onechip.vllm.wire import WireClient, api_key_from_env, chat_body, healthy, user_message

__all__ = ["SMOKE_PROMPT", "confirm_ready", "healthy"]

SMOKE_PROMPT = "Say hi in five words."  # seed article, the smoke test after boot


def confirm_ready(base_url: str, served_name: str, timeout_s: float = 120.0) -> str:
    """Check /v1/models serves `served_name` and one chat completion answers, sending the engine's key
    (vllm.wire.api_key_from_env: $VLLM_API_KEY first for an engine on this host); returns its text.

    Raises EngineError naming what the engine serves instead, or why the first completion failed.
    """
    with WireClient(base_url, timeout_s, api_key=api_key_from_env(base_url)) as wire:
        try:
            ids = [m.id for m in wire.models(timeout_s=30.0)]
            if served_name not in ids:
                raise EngineError(f"engine at {base_url} serves {ids}, not {served_name!r}")
            return wire.chat(chat_body(served_name, user_message(SMOKE_PROMPT), 16)).content
        except EndpointError as exc:
            raise EngineError(
                f"engine at {base_url} is healthy but its first chat completion failed: "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            ) from None
