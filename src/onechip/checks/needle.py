"""Long-context probe: a passphrase buried at given depths of prompts of exact length (as the server counts).

Follows the seed's `scripts/longctx.py` (article-zh-v5e-v6e-gemma4-survey, step 3): each prompt opens
with a unique line so prefix caching cannot reuse earlier requests, buries "violet-harbor-7341" at a
depth of neutral filler, and asks for it. Lengths are measured with the server's own tokenizer
(vLLM `POST /tokenize` with the chat template) and checked against `usage.prompt_tokens`. Lengths are
capped at min(max model len, KV cache tokens) minus the answer budget; the cap is reported.

Then one prompt just over the limit: pass only if the server answers HTTP 400 within a timeout and is
still healthy and serving afterwards (the seed: "HTTP 400: ... maximum context length is 131072").

A server whose usage.prompt_tokens counts fewer tokens than its own /tokenize counted for the prompt sent cut it
silently (vLLM's truncate_prompt_tokens keeps a prompt's last tokens): said in the notes; a passphrase found in a
prompt so cut is 'partial', its length not shown to be read. A needle refused as too long is not_tested (beyond the
engine's limit), unless it fits the max_model_len /v1/models gave: then the server refuses what it says it serves.
"""

from __future__ import annotations

import re
import time
import unicodedata
import uuid
from collections.abc import Callable
from typing import Any

from onechip.checks.verdicts import combine, failed
from onechip.errors import EndpointBusyError, EndpointError, EndpointStatusError
from onechip.schemas.checks import CheckOptions, CheckResult, Probe
from onechip.vllm.wire import WireClient, chat_body, user_message

PASSPHRASE = "violet-harbor-7341"  # the seed's passphrase
NEEDLE = f"The passphrase is {PASSPHRASE}."
# A 400 refusing a prompt for its length: vLLM "maximum context length is N tokens", OpenAI context_length_exceeded,
# SGLang "longer than the model's context length", llama.cpp "exceeds the available context size", TGI "must be <= N"
TOO_LONG = re.compile(r"context|max_model_len|must be <=|too long", re.I)
QUESTION = "What is the passphrase mentioned in the text above? Reply with the passphrase only."
_FILLER = (
    "The river bends past the old mill and the fields turn gold in late summer. "
    "Farmers bring their carts to market on the first day of each week. "
    "A narrow road climbs the hill toward the chapel, lined with stone walls and oak trees. "
    "In winter the pond freezes and children skate on it after school. "
    "The baker opens before dawn, and the smell of bread drifts across the square. "
    "Travellers rest at the inn, where the fire is kept burning through the night. "
).split()


def needle_messages(first_line: str, n_words: int, depth: float, tail: str = "") -> list[dict[str, Any]]:
    """The probe's one user message: unique first line, `n_words` of filler with the needle at `depth`."""
    words = [_FILLER[i % len(_FILLER)] for i in range(n_words)]
    at = int(round(depth * n_words))
    body = " ".join([*words[:at], NEEDLE, *words[at:]])
    return [{"role": "user", "content": f"{first_line}\n{body}{tail}\n\n{QUESTION}"}]


def _folded(text: str) -> str:
    """`text` as needle matching sees it: NFKC, case-folded, only its letters and digits."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).casefold() if c.isalnum())


def recalled(answer: str) -> bool:
    """The answer holds the passphrase, however written: any case, any dash or space between its parts, other
    quotes around it ('VIOLET-HARBOR-7341', 'violet‑harbor‑7341' with U+2011, 'violet harbor 7341'). What is probed
    is recall of the buried text, not its typography; `observed.answer` keeps what was said."""
    return _folded(PASSPHRASE) in _folded(answer)


class TooShort(ValueError):
    """A target length under the bare needle prompt's own tokens: no prompt of that length holds the needle."""


def fit_length(
    count: Callable[[list[dict[str, Any]]], int], first_line: str, depth: float, target: int
) -> tuple[list[dict[str, Any]], int]:
    """Messages whose token count (by `count`) is `target`, or the closest below it → (messages, tokens).

    Binary search on filler words, then small tails to close a gap of a token or two.
    Raises TooShort if even an empty prompt is longer than `target` (EndpointError: the counting request failed).
    """

    def c(n: int, tail: str = "") -> int:
        return count(needle_messages(first_line, n, depth, tail))

    base = c(0)
    if base > target:
        raise TooShort(f"the bare needle prompt is {base} tokens, over the target {target}")
    lo, hi = 0, max(8, target - base)
    while c(hi) <= target:  # words are >= 1 token each in practice; this rarely loops
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if c(mid) <= target:
            lo = mid
        else:
            hi = mid
    best_tail, best = "", c(lo)
    for tail in (".", " a", " a.", " a a", "..", " a a a"):
        if best == target:
            break
        n = c(lo, tail)
        if best < n <= target:
            best_tail, best = tail, n
    return needle_messages(first_line, lo, depth, best_tail), best


def _probe_needle(
    ep: WireClient, model: str, length: int, depth: float, max_tokens: int, max_model_len: int | None = None
) -> Probe:
    """One needle prompt of `length` tokens (the closest below), its passphrase at `depth`. A 400 that speaks of the
    context length is not_tested (the length is beyond the engine's), unless the prompt and `max_tokens` fit the
    `max_model_len` /v1/models gave: then the server refused what it says it serves, a fail."""
    name = f"needle_{length}_d{depth:g}"
    first_line = f"Document {uuid.uuid4().hex}"
    sent: int | None = None  # the prompt's tokens, once fitted
    try:
        messages, tokens = fit_length(lambda m: ep.tokenize(model, m), first_line, depth, length)
        sent = tokens
        reply = ep.chat(chat_body(model, messages, max_tokens))
    except EndpointStatusError as exc:
        advertised = max_model_len is not None and sent is not None and sent + max_tokens <= max_model_len
        if exc.status_code == 400 and TOO_LONG.search(exc.server_message) and advertised:
            note = (
                f"the server refused a {sent}-token prompt as too long though /v1/models says max_model_len "
                f"{max_model_len}: {exc.server_message}"
            )
            return Probe(name=name, verdict="fail", note=note, expected=PASSPHRASE)
        if exc.status_code == 400 and TOO_LONG.search(exc.server_message):  # the engine refused it, unasked
            note = f"not asked: beyond the engine's limit ({exc.server_message})"
            return Probe(name=name, verdict="not_tested", note=note, expected=PASSPHRASE)
        return Probe(name=name, verdict=failed(exc), note=str(exc), expected=PASSPHRASE)
    except EndpointError as exc:
        return Probe(name=name, verdict=failed(exc), note=str(exc), expected=PASSPHRASE)
    except TooShort as exc:  # the length asked for (or the cap) holds no needle: nothing was asked of the model
        return Probe(name=name, verdict="not_tested", note=f"{exc}: not asked", expected=PASSPHRASE)
    found = recalled(reply.content) or recalled(reply.reasoning)
    seconds = reply.latency_ms / 1000
    notes = []
    if found and not recalled(reply.content):  # a reasoning model may spend needle_max_tokens on its reasoning
        notes.append(f"passphrase in the reasoning only (content {reply.content[:60]!r}, "
                     f"finish_reason {reply.finish_reason})")  # fmt: skip
    elif found and PASSPHRASE not in reply.content:
        notes.append("passphrase found, written differently")
    if tokens != length:
        notes.append(f"closest length reached is {tokens}")
    cut = reply.prompt_tokens is not None and reply.prompt_tokens < tokens
    if cut:  # the server's usage counts fewer tokens than its own /tokenize: it dropped some, unsaid
        notes.append(
            f"cut silently: the server read {reply.prompt_tokens} of the {tokens} prompt tokens sent "
            "(usage.prompt_tokens)"
        )
    elif reply.prompt_tokens is not None and reply.prompt_tokens != tokens:
        notes.append(f"usage.prompt_tokens {reply.prompt_tokens} != /tokenize {tokens}")
    if not found:
        notes.append("passphrase not in answer")
    return Probe(
        name=name,
        # found in a prompt not read whole: recall at this length is not shown
        verdict="fail" if not found else "partial" if cut else "pass",
        latency_ms=round(reply.latency_ms, 1),
        expected=PASSPHRASE,
        observed={
            "found": found,
            "answer": reply.content[:200],
            **({"reasoning": reply.reasoning[:200]} if reply.reasoning else {}),
            "prompt_tokens": reply.prompt_tokens,
            "tokenized": tokens,
            "cut": cut,
            "depth": depth,
            "seconds": round(seconds, 3),
            "prompt_tok_per_s": round(tokens / seconds, 1) if seconds > 0 else None,
        },
        note="; ".join(notes),
    )


def _probe_over_limit(ep: WireClient, model: str, limit: int, opts: CheckOptions) -> Probe:
    """A prompt of limit + 1 tokens: expect HTTP 400 within `over_limit_timeout_s`, then a healthy server."""
    first_line = f"Document {uuid.uuid4().hex}"
    try:
        messages, tokens = fit_length(lambda m: ep.tokenize(model, m), first_line, 0.5, limit + 1)
    except EndpointBusyError as exc:
        return Probe(name="over_limit_400", verdict="not_tested", note=f"could not build the prompt: {exc}")
    except (EndpointError, TooShort) as exc:
        return Probe(name="over_limit_400", verdict="fail", note=f"could not build the prompt: {exc}")
    t0 = time.perf_counter()
    observed: dict[str, Any] = {"prompt_tokens": tokens, "limit": limit}
    read: int | None = None  # usage.prompt_tokens of an answer: fewer than sent is a prompt cut silently
    try:
        reply = ep.chat(chat_body(model, messages, opts.needle_max_tokens), timeout_s=opts.over_limit_timeout_s)
        status, message, read = 200, "accepted", reply.prompt_tokens
    except EndpointBusyError as exc:  # 429/503 after the retries: whether it would have said 400 is not known
        return Probe(name="over_limit_400", verdict="not_tested", observed=observed, note=str(exc))
    except EndpointStatusError as exc:
        status, message = exc.status_code, exc.server_message
    except EndpointError as exc:
        status, message = None, str(exc)
    ms = (time.perf_counter() - t0) * 1000
    observed.update(status=status, message=message[:300], **({"read_prompt_tokens": read} if read is not None else {}))
    healthy = ep.health(timeout_s=10.0)
    serving = False
    try:
        ep.chat(chat_body(model, user_message("Say ok."), 4))
        serving = True  # a 200 answer is what counts, whatever a tiny model says
    except EndpointBusyError as exc:  # busy is serving others, not broken by the long prompt: not known
        observed.update(healthy_after=healthy, serving_after=None)
        return Probe(name="over_limit_400", verdict="not_tested", observed=observed, note=f"afterwards: {exc}")
    except EndpointError:
        serving = False
    observed.update(healthy_after=healthy, serving_after=serving)
    ok = status == 400 and healthy and serving
    note = (
        ""
        if ok
        else (
            "request hung past the timeout"
            if status is None
            else f"expected HTTP 400, got {status}" + _cut_note(tokens, limit, read)
            if status != 400
            else "server unhealthy or not serving afterwards"
        )
    )
    return Probe(
        name="over_limit_400",
        verdict="pass" if ok else "fail",
        latency_ms=round(ms, 1),
        observed=observed,
        expected={"status": 400, "healthy_after": True, "serving_after": True},
        note=note,
    )


def _cut_note(sent: int, limit: int, read: int | None) -> str:
    """What an answered over-limit prompt shows: the server read fewer tokens than were sent (its usage), or ''; the
    cut said first, as the console shows a probe's first 60 characters."""
    if read is None or read >= sent:
        return ""
    return f": cut silently, {read} of {sent} tokens read (over max_model_len {limit}; usage.prompt_tokens)"


def check_needle(ep: WireClient, model: str, opts: CheckOptions, max_model_len: int | None) -> CheckResult:
    """Domain `long_context`: one probe per (length, depth), plus `over_limit_400` when the limit is known."""
    limits = [x for x in (max_model_len, opts.kv_tokens) if x]
    cap = min(limits) - opts.needle_max_tokens if limits else None
    lengths = sorted({min(n, cap) if cap else n for n in opts.needle_lengths})
    probes = [
        _probe_needle(ep, model, n, d, opts.needle_max_tokens, max_model_len)
        for n in lengths
        for d in opts.needle_depths
    ]
    if opts.over_limit and max_model_len:
        probes.append(_probe_over_limit(ep, model, max_model_len, opts))
    elif opts.over_limit:
        probes.append(
            Probe(
                name="over_limit_400",
                verdict="not_tested",
                note="max model len unknown (/v1/models has no max_model_len)",
            )
        )
    needles = [p for p in probes if p.name.startswith("needle_")]
    found = sum(bool((p.observed or {}).get("found")) for p in needles)
    untested = sum(p.verdict == "not_tested" for p in needles)
    cut = sum(bool((p.observed or {}).get("cut")) for p in needles)
    conditions = {
        "cap_tokens": str(cap) if cap else "unknown",
        "max_model_len": str(max_model_len) if max_model_len else "unknown",
        "kv_tokens": str(opts.kv_tokens) if opts.kv_tokens else "unknown",
        "lengths": ",".join(map(str, lengths)),
        "depths": ",".join(f"{d:g}" for d in opts.needle_depths),
    }
    n_needles = len(lengths) * len(opts.needle_depths)
    note = f"needle found {found}/{n_needles}" + (f" ({untested} not tested)" if untested else "")
    if cut:
        note += f"; the server cut {cut}/{n_needles} needle prompts silently (read fewer tokens than sent)"
    verdict = combine(probes)
    if needles and untested == len(needles):  # no recall was asked: the over-limit probe alone is the server's refusal
        verdict = "not_tested" if verdict == "pass" else verdict
        note += f": no needle asked: {needles[0].note}"
    return CheckResult(domain="long_context", verdict=verdict, conditions=conditions, probes=probes, note=note)
