"""The per-request figures every layer reads the same way, from one RequestSample (times in seconds on the
client's monotonic clock): TTFT, TPOT and E2E latency, and which samples count. bench/stats.py summarises
them over a cell; sim/figures.py judges a simulated cell by them; they live here, below both, so neither
re-derives them (a simulated request is a RequestSample too).
"""

from __future__ import annotations

from collections.abc import Iterable

from onechip.schemas.bench import RequestSample


def counted(samples: Iterable[RequestSample]) -> list[RequestSample]:
    """The samples a figure is taken over: measured (not warm-up) and answered (status 'ok'); a failed
    request has no latency, and its partial tokens are not output."""
    return [s for s in samples if not s.warmup and s.status == "ok"]


def ttft_ms(s: RequestSample) -> float | None:
    """Time to first content chunk, ms (the role-only chunk does not count; the client never records it)."""
    return (s.t_first - s.t_send) * 1000.0 if s.t_first is not None else None


def tpot_ms(s: RequestSample) -> float | None:
    """Time per output token after the first, ms: (t_last - t_first) / (completion_tokens - 1).

    Tokens come from the server's usage. None when fewer than two tokens were generated.
    """
    if s.t_first is None or s.t_last is None or not s.completion_tokens or s.completion_tokens < 2:
        return None
    return (s.t_last - s.t_first) * 1000.0 / (s.completion_tokens - 1)


def e2e_ms(s: RequestSample) -> float | None:
    """End-to-end latency, ms: t_done - t_send."""
    return (s.t_done - s.t_send) * 1000.0 if s.t_done is not None else None
