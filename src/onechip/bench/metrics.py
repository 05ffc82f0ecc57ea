"""Server /metrics before, during and after a cell, reduced to deltas and peaks.

Names are vLLM's (docs.vllm.ai "Production metrics"); older builds say `gpu_` where newer say `kv_`.
Fetching and parsing (samples summed over their labels) is `vllm.wire`'s; during a cell a thread samples, so
the scrape and its parse never hold the event loop that times the streams.
"""

from __future__ import annotations

import threading

from onechip.errors import EndpointError
from onechip.schemas.bench import ReplicaServed
from onechip.vllm.wire import WireClient

COUNTERS = {
    "preemptions": ("vllm:num_preemptions_total",),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prompt_tokens": ("vllm:prompt_tokens_total",),
    "generation_tokens": ("vllm:generation_tokens_total",),
    "requests": ("vllm:request_success_total",),
}
GAUGES = {
    "kv_cache_usage_perc": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    "num_requests_running": ("vllm:num_requests_running",),
    "num_requests_waiting": ("vllm:num_requests_waiting",),
}


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


def replica_served(
    index: int, url: str, before: dict[str, float] | None, after: dict[str, float] | None
) -> ReplicaServed:
    """One replica's counters over a cell (its own /metrics before and after); `answered` False when
    either scrape failed (a replica killed mid-cell)."""
    if before is None or after is None:
        return ReplicaServed(index=index, url=url, answered=False)
    d = reduce_metrics(before, after, [])
    return ReplicaServed(
        index=index, url=url, requests=d.get("requests_delta"), prompt_tokens=d.get("prompt_tokens_delta"),
        generation_tokens=d.get("generation_tokens_delta"), prefix_cache_hits=d.get("prefix_cache_hits_delta"),
        prefix_cache_queries=d.get("prefix_cache_queries_delta"), prefix_cache_hit_rate=d.get("prefix_cache_hit_rate"),
    )  # fmt: skip


def scrape_url(url: str) -> dict[str, float] | None:
    """scrape() of the server at `url` with a short-lived client (replicas behind a router)."""
    with WireClient(url, timeout_s=5.0) as wire:
        return scrape(wire)


def scrape(wire: WireClient) -> dict[str, float] | None:
    """GET /metrics, parsed; None when the server has none or it cannot be read or parsed."""
    try:
        return wire.metrics()
    except EndpointError:
        return None


class MetricsSampler:
    """Scrapes /metrics every `interval_s` in a daemon thread while running, to catch gauge peaks (KV usage,
    waiting requests)."""

    def __init__(self, wire: WireClient, interval_s: float):
        self.wire, self.interval_s = wire, interval_s
        self.samples: list[dict[str, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            got = scrape(self.wire)
            if got is not None:
                self.samples.append(got)
            self._stop.wait(self.interval_s)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="metrics-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling; waits for a scrape in flight (bounded by the client's /metrics timeout)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
