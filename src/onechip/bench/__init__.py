"""Benchmarking an OpenAI-compatible endpoint: a context x clients grid measured right (DESIGN.md).

runner.run_grid   the grid: cells, closed-loop streams, reps, resume, /metrics deltas
worker            one repetition's streams, in this process or in worker processes
client            one streamed chat request, timed chunk by chunk (aiohttp)
prompts           prompts of an exact server-counted token length
stats             pure summaries (Dist, TTFT/TPOT/ITL, windows, median and CV)
metrics           /metrics sampling and deltas
Request bodies, SSE and error-body parsing, and the control-plane calls are `onechip.vllm.wire`'s.

`run_grid` and `saved_config` are loaded on first use: the runner pulls in aiohttp, which `onechip --version`
and every other command that does not measure must not pay for (~0.15 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onechip.bench.runner import run_grid, saved_config

__all__ = ["run_grid", "saved_config"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from onechip.bench import runner

        return getattr(runner, name)
    raise AttributeError(f"module 'onechip.bench' has no attribute {name!r}")
