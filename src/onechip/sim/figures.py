"""The three figures a cell is judged on (output tok/s, median TTFT, median TPOT), from raw samples.

TTFT, TPOT and which samples count (measured, answered) are schemas/figures.py's, the definitions bench's
statistics use. The output tok/s window follows bench/stats.py measured_window (from the last stream's first
measured send to the first stream's last completion); a test holds the two to the same numbers.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from onechip.schemas.bench import RequestSample
from onechip.schemas.figures import counted, tpot_ms, ttft_ms


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
    measured = [s for s in counted(samples) if s.t_first is not None and s.t_done is not None]
    if not measured:
        return Figures(None, None, None)
    ttfts = [t for t in map(ttft_ms, measured) if t is not None]
    tpots = [t for t in map(tpot_ms, measured) if t is not None]
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
    answered = [s for s in samples if s.status == "ok"]  # bench/stats.py tokens_between: a failed request adds none
    tokens = sum(k for s in answered for t, k in zip(s.chunk_times, s.chunk_tokens, strict=True) if start <= t <= end)
    return tokens / (end - start)
