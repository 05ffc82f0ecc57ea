"""The three figures a cell is judged on (output tok/s, median TTFT, median TPOT), from raw samples.

They follow bench/stats.py's definitions exactly (the measured window: from the last stream's first measured
send to the first stream's last completion; TPOT = (t_last - t_first) / (tokens - 1)); sim sits below bench
and cannot import it, so the few lines are repeated here and a test holds the two to the same numbers.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from onechip.schemas.bench import RequestSample


@dataclass(frozen=True)
class Figures:
    output_tok_per_s: float | None
    ttft_ms: float | None
    tpot_ms: float | None

    def get(self, name: str) -> float | None:
        return float(getattr(self, name)) if getattr(self, name) is not None else None


FIGURES = ("output_tok_per_s", "ttft_ms", "tpot_ms")


def figures(samples: Sequence[RequestSample], open_loop: bool = False) -> Figures:
    """Output tok/s in the measured window, median TTFT ms and median TPOT ms of the measured samples."""
    measured = [s for s in samples if not s.warmup and s.t_first is not None and s.t_done is not None]
    if not measured:
        return Figures(None, None, None)
    ttfts = [(s.t_first - s.t_send) * 1000.0 for s in measured]  # type: ignore[operator]
    tpots = [
        (s.t_last - s.t_first) * 1000.0 / (s.completion_tokens - 1)  # type: ignore[operator]
        for s in measured
        if s.completion_tokens and s.completion_tokens > 1
    ]
    return Figures(
        _tok_per_s(samples, measured, open_loop), statistics.median(ttfts), statistics.median(tpots) if tpots else None
    )


def _tok_per_s(samples: Sequence[RequestSample], measured: list[RequestSample], open_loop: bool) -> float | None:
    first: dict[int, float] = {}
    last: dict[int, float] = {}
    for s in measured:
        first[s.stream] = min(first.get(s.stream, s.t_send), s.t_send)
        done = s.t_done if s.t_done is not None else s.t_send
        last[s.stream] = max(last.get(s.stream, done), done)
    start, end = max(first.values()), min(last.values())
    if open_loop or end <= start:
        start, end = min(first.values()), max(last.values())
    if end <= start:
        return None
    tokens = sum(k for s in samples for t, k in zip(s.chunk_times, s.chunk_tokens, strict=True) if start <= t <= end)
    return tokens / (end - start)
