"""Benchmarking an OpenAI-compatible endpoint: a context x clients grid measured right (DESIGN.md).

runner.run_grid   the grid: cells, closed-loop streams, reps, resume, /metrics deltas
worker            one repetition's streams, in this process or in worker processes
client            one streamed chat request, timed chunk by chunk (aiohttp)
prompts           prompts of an exact server-counted token length
stats             pure summaries (Dist, TTFT/TPOT/ITL, windows, median and CV)
metrics           /metrics scraping and deltas
wire              request bodies and error-body parsing
"""

from onechip.bench.runner import run_grid, saved_config

__all__ = ["run_grid", "saved_config"]
