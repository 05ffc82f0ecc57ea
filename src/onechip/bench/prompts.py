"""Prompts of an exact token length as the server counts them (chat template included).

The server's POST /tokenize (vLLM) with `messages` and `add_generation_prompt: true` returns `count`, the
length the engine will prefill. A prompt is `first line` + `k` filler words; `k` is searched until the count
equals the target, and the `k` found is cached per (model, context) so later searches need one check each.
Filler words are short common English words, one token each in the BPE vocabularies of Llama 3, Gemma,
Qwen and SmolLM (checked against the embedded engine's /tokenize), so the count moves one token per word.

Each request's first line is unique (a request tag) so prefix caching cannot reuse an earlier prompt,
unless prefix reuse is being measured. The tags of one repetition differ only in fixed-width digits
(bench.worker.first_line), which every tokenizer above splits the same way, so the runner checks one prompt
per repetition and usage.prompt_tokens of every request confirms it (prompt_tokens_actual).
When the server has no /tokenize, lengths are estimated as
filler words + first line words + a template overhead (`ESTIMATED_TEMPLATE_TOKENS`, then corrected from
usage.prompt_tokens after each repetition by `calibrate`), and `method` says "estimate".
"""

from __future__ import annotations

from onechip.errors import EndpointStatusError
from onechip.vllm.wire import WireClient, gateway_retried

FILLER = "the of and to in is it that for on with as at by from this are was be or an not but all".split()
# Rough chat-template overhead used only when the server cannot count (a guess; see prompt_tokens_actual).
ESTIMATED_TEMPLATE_TOKENS = 10
MAX_SEARCH_STEPS = 12


def filler(k: int) -> str:
    """`k` filler words (k >= 0), space-separated."""
    return " ".join(FILLER[i % len(FILLER)] for i in range(k))


def build_content(first_line: str, k: int) -> str:
    """First line, newline, then `k` filler words (k >= 0). Never empty."""
    words = filler(k)
    if not first_line:
        return words or "Hi"
    return f"{first_line}\n{words}" if words else first_line


class PromptBuilder:
    """Builds prompts of a target length against one server; caches the filler count per (model, context)."""

    def __init__(self, wire: WireClient, model: str, gateway_wait_s: float = 0.0):
        """`gateway_wait_s`: how long a count answered by a gateway error is asked again (vllm.wire.gateway_retried)."""
        self.wire = wire
        self.model = model
        self.gateway_wait_s = gateway_wait_s
        self.method: str | None = None  # "tokenize" or "estimate", known after the first count
        self._k_cache: dict[tuple[str, int], int] = {}
        self._template_tokens = ESTIMATED_TEMPLATE_TOKENS  # estimate mode only; corrected by `calibrate`

    def count(self, content: str, role: str = "user") -> int | None:
        """Server's chat-templated token count for one message of `role` (user; system for the agent
        workload's shared prefix); None when /tokenize does not exist (404 or 405).

        Raises EndpointError when /tokenize exists but fails or answers malformed data (vllm.wire), or answers a
        gateway error for `gateway_wait_s` seconds.
        """
        if self.method == "estimate":
            return None
        try:
            messages = [{"role": role, "content": content}]
            n = gateway_retried(lambda: self.wire.tokenize(self.model, messages), self.gateway_wait_s, self.wire.sleep)
        except EndpointStatusError as exc:
            if exc.status_code not in (404, 405):
                raise
            self.method = "estimate"
            return None
        self.method = "tokenize"
        return n

    def _estimate(self, first_line: str, k: int) -> int:
        return k + len(first_line.split()) + self._template_tokens

    def fit(self, first_line: str, target: int, role: str = "user") -> tuple[int, int]:
        """(filler words k, counted tokens) so that `build_content(first_line, k)`, sent as one message of
        `role`, has a chat-templated length of `target` tokens, or as close as the tokenizer allows (a target
        below the template overhead gives the shortest prompt).

        The count is the server's when /tokenize exists, else an estimate. Blocking (HTTP): async callers
        run it in a thread. Raises EndpointError if /tokenize fails.
        """
        k = self._k_cache.get((role, target))
        if k is None:
            k = max(0, target - self._template_tokens - len(first_line.split()))
        best: tuple[int, int, int] | None = None  # (|error|, k, count)
        seen: set[int] = set()
        for _ in range(MAX_SEARCH_STEPS):
            n = self.count(build_content(first_line, k), role)
            if n is None:
                n = self._estimate(first_line, k)
            seen.add(k)
            if best is None or abs(n - target) < best[0]:
                best = (abs(n - target), k, n)
            if n == target:
                self._k_cache[(role, target)] = k
                return k, n
            step = target - n
            nxt = max(0, k + step)
            if nxt in seen:
                nxt = max(0, k + (1 if step > 0 else -1))
            if nxt in seen or (nxt == 0 and k == 0):
                break
            k = nxt
        assert best is not None
        return best[1], best[2]

    def calibrate(self, excess: float) -> None:
        """In estimate mode, correct the template overhead by `excess`, tokens: how many more usage.prompt_tokens
        counted than were estimated for the prompts fitted (median), and forget cached filler counts so later prompts
        use it."""
        if self.method == "estimate" and round(excess):
            self._template_tokens = max(0, self._template_tokens + round(excess))
            self._k_cache.clear()
