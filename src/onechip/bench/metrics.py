"""Server /metrics (Prometheus text) before, during and after a cell, reduced to deltas and peaks.

Names are vLLM's (docs.vllm.ai "Production metrics"); older builds say `gpu_` where newer say `kv_`.
Samples with the same name are summed over their labels (one engine, possibly several model labels).
"""

from __future__ import annotations

import asyncio

import httpx
from prometheus_client.parser import text_string_to_metric_families

COUNTERS = {
    "preemptions": ("vllm:num_preemptions_total",),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prompt_tokens": ("vllm:prompt_tokens_total",),
    "generation_tokens": ("vllm:generation_tokens_total",),
}
GAUGES = {
    "kv_cache_usage_perc": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    "num_requests_running": ("vllm:num_requests_running",),
    "num_requests_waiting": ("vllm:num_requests_waiting",),
}


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus exposition text -> {sample name: value summed over labels}.

    Raises ValueError if malformed.
    """
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[sample.name] = out.get(sample.name, 0.0) + float(sample.value)
    return out


def _pick(samples: dict[str, float], names: tuple[str, ...]) -> float | None:
    for name in names:
        if name in samples:
            return samples[name]
    return None


def reduce_metrics(
    before: dict[str, float], after: dict[str, float], during: list[dict[str, float]]
) -> dict[str, float]:
    """Counter deltas (after - before) and gauge peaks (max over before, during, after), keyed by short name:
    `<counter>_delta` and `<gauge>_peak`; also `prefix_cache_hit_rate` when queries grew.
    Absent metrics are skipped.
    """
    out: dict[str, float] = {}
    for key, names in COUNTERS.items():
        a, b = _pick(after, names), _pick(before, names)
        if a is not None and b is not None:
            out[f"{key}_delta"] = a - b
    for key, names in GAUGES.items():
        values = [v for v in (_pick(s, names) for s in [before, *during, after]) if v is not None]
        if values:
            out[f"{key}_peak"] = max(values)
    if out.get("prefix_cache_queries_delta"):
        out["prefix_cache_hit_rate"] = out.get("prefix_cache_hits_delta", 0.0) / out["prefix_cache_queries_delta"]
    return out


async def scrape(http: httpx.AsyncClient) -> dict[str, float] | None:
    """GET /metrics and parse it; None when the server has none or it cannot be parsed."""
    try:
        resp = await http.get("/metrics")
        if resp.status_code != 200:
            return None
        return parse_metrics(resp.text)
    except (httpx.HTTPError, ValueError):
        return None


class MetricsSampler:
    """Scrapes /metrics every `interval_s` while running, to catch gauge peaks (KV usage, waiting)."""

    def __init__(self, http: httpx.AsyncClient, interval_s: float):
        self.http, self.interval_s = http, interval_s
        self.samples: list[dict[str, float]] = []
        self._task: asyncio.Task[None] | None = None

    async def _loop(self) -> None:
        while True:
            got = await scrape(self.http)
            if got is not None:
                self.samples.append(got)
            await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
