"""Chat smoke probe: a chat completion returns non-empty text. A model served with a reasoning parser may spend the
probe's 16 tokens on reasoning (`reasoning_content`, content null): generated text too, so it passes, saying so.

Also calls raw `/v1/completions` and notes (never fails on) empty text: instruction-tuned models
served without a chat template around the prompt often return nothing there (DESIGN.md, "Measuring
right"), which is why every other probe uses the chat endpoint.
"""

from __future__ import annotations

from onechip.checks.verdicts import combine, failed
from onechip.errors import EndpointError
from onechip.schemas.checks import CheckOptions, CheckResult, Probe
from onechip.vllm.wire import WireClient, chat_body, user_message

SMOKE_PROMPT = "What is the capital of France? Answer in one short sentence."
COMPLETION_PROMPT = "The capital of France is"


def check_smoke(ep: WireClient, model: str, opts: CheckOptions) -> CheckResult:
    """Domain `chat`: probe `chat_nonempty` decides; `completions_raw` is informational."""
    probes: list[Probe] = []
    try:
        reply = ep.chat(chat_body(model, user_message(SMOKE_PROMPT), 16))
        text, thought = reply.content.strip(), reply.reasoning.strip()
        probes.append(
            Probe(
                name="chat_nonempty",
                verdict="pass" if text or thought else "fail",
                latency_ms=round(reply.latency_ms, 1),
                observed={
                    "text": reply.content,
                    **({"reasoning": reply.reasoning} if thought else {}),
                    "completion_tokens": reply.completion_tokens,
                    "finish_reason": reply.finish_reason,
                },
                expected="non-empty text",
                note="" if text else "answered in reasoning only" if thought else "chat completion returned empty text",
            )
        )
    except EndpointError as exc:
        probes.append(Probe(name="chat_nonempty", verdict=failed(exc), expected="non-empty text", note=str(exc)))

    try:
        text, ms = ep.completion(model, COMPLETION_PROMPT, max_tokens=8)
        note = (
            "raw /v1/completions returned text"
            if text.strip()
            else "raw /v1/completions returned empty text (common on instruction-tuned models; use the chat endpoint)"
        )
        probes.append(
            Probe(
                name="completions_raw",
                verdict="pass" if text.strip() else "partial",
                latency_ms=round(ms, 1),
                observed={"text": text},
                expected="text (informational)",
                note=note,
                informational=True,
            )
        )
    except EndpointError as exc:
        probes.append(Probe(name="completions_raw", verdict="not_tested", note=str(exc), informational=True))

    verdict = combine(probes)
    return CheckResult(
        domain="chat",
        verdict=verdict,
        probes=probes,
        conditions={"endpoint": "/v1/chat/completions", "temperature": "0"},
        note=probes[0].note,
    )
