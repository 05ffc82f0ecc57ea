"""The three figures a cell is judged on (output tok/s, median TTFT, median TPOT), from raw samples.

TTFT, TPOT, which samples count (measured, answered), the steady window (from the last stream's first
measured send to the first stream's last completion) and the tokens inside it, and the whole run (vllm bench
serve's output tok/s) are schemas/figures.py's, the definitions bench's statistics use; a test holds the two to
the same numbers.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from onechip.schemas.bench import RequestSample
from onechip.schemas.figures import counted, measured_window, tokens_between, tpot_ms, ttft_ms, whole_run


@dataclass(frozen=True)
class Figures:
    output_tok_per_s: float | None
    ttft_ms: float | None
    tpot_ms: float | None

    def get(self, name: str) -> float | None:
        return float(getattr(self, name)) if getattr(self, name) is not None else None


FIGURES = ("output_tok_per_s", "ttft_ms", "tpot_ms")


def figures(samples: Sequence[RequestSample], open_loop: bool = False, whole: bool = False) -> Figures:
    """Output tok/s in the measured window (`whole`: over the whole run, vllm bench serve's definition), median
    TTFT ms and median TPOT ms of the measured samples."""
    measured = [s for s in counted(samples) if s.t_first is not None and s.t_done is not None]
    if not measured:
        return Figures(None, None, None)
    ttfts = [t for t in map(ttft_ms, measured) if t is not None]
    tpots = [t for t in map(tpot_ms, measured) if t is not None]
    if whole:
        duration_s, tokens, _ = whole_run(samples)
        rate = tokens / duration_s if duration_s > 0 else None
    else:
        rate = _tok_per_s(samples, open_loop)
    return Figures(rate, statistics.median(ttfts), statistics.median(tpots) if tpots else None)


def _tok_per_s(samples: Sequence[RequestSample], open_loop: bool) -> float | None:
    window = measured_window(samples, open_loop)
    if window is None:
        return None
    start, end = window
    return sum(tokens_between(s, start, end) for s in samples) / (end - start)
