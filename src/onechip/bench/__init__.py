"""Benchmarking an OpenAI-compatible endpoint: a context x clients grid measured right (DESIGN.md).

runner.run_grid   the grid: cells, closed-loop streams, reps, resume, /metrics deltas
worker            one repetition's streams, in this process or in worker processes
client            one streamed chat request, timed chunk by chunk (aiohttp)
prompts           prompts of an exact server-counted token length
stats             pure summaries (Dist, TTFT/TPOT/ITL, windows, median and CV)
metrics           /metrics sampling and deltas
agent             the agent workload's sessions: shared system prompt + tools, turns replayed
search            find_max: the largest load meeting SLOs (bracket, then bisect)
Request bodies, SSE and error-body parsing, and the control-plane calls are `onechip.vllm.wire`'s.

`run_grid`, `saved_config` and `find_max` are loaded on first use: the runner pulls in aiohttp, which
`onechip --version` and every other command that does not measure must not pay for (~0.15 s).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from onechip.bench.runner import run_grid, saved_config
    from onechip.bench.search import find_max, read_search

__all__ = ["find_max", "read_search", "run_grid", "saved_config"]
_HOME = {"run_grid": "runner", "saved_config": "runner", "find_max": "search", "read_search": "search"}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(f"onechip.bench.{_HOME[name]}"), name)
    raise AttributeError(f"module 'onechip.bench' has no attribute {name!r}")
