"""How far onechip bench's chunk stamps trail the server's writes, and a fake server's writes trail their deadlines.

Not a test: run it by hand, `python benchmarks/bench_stamp_lag.py [--runs 10]`. The scenario is
tests/unit/bench/test_bench_known_timings.py's seeded-jitter one: the fake vLLM server (tests/fakes/vllm_server.py, a
thread of this process, same monotonic clock) sets each request's TTFT (20-60 ms) and inter-token gap (8-20 ms) from
random.Random(68) and random.Random(6868); `onechip bench` sends 1 client x 8 requests of 4 one-token chunks. Printed,
ms, p50 / p90 / p99 / max over every content chunk of every run:
- client stamp - server write: `RequestSample.chunk_times` against the fake's `sent_times` (the tolerance the
  known-timing tests give onechip against the server's record: 1 ms + 2%);
- server write - deadline: the fake's write against send + TTFT + k x gap (why those tests bound TTFT and E2E by
  the set values from below only).

Measured 2026-12-07 on the 2-core helper machine beside seven other test suites (load average 7): stamp lag p50 0.175,
p90 0.323, p99 11.5 ms (a GIL switch between the fake's write and its stamp, or the client descheduled); write
lateness p50 7.1, p90 25, p99 108 ms.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fakes.vllm_server import FakeVllm  # noqa: E402
from onechip import api  # noqa: E402
from onechip.bench.runner import load_samples  # noqa: E402
from onechip.schemas.bench import BenchConfig  # noqa: E402


def drawn(seed: int, low_s: float, high_s: float) -> dict[int, float]:
    """test_bench_known_timings._drawn: per chat request number, uniform in [low_s, high_s], rounded to 0.1 ms."""
    rng = random.Random(seed)
    return {n: round(rng.uniform(low_s, high_s), 4) for n in range(1, 12)}


def show(name: str, values: list[float]) -> None:
    q = statistics.quantiles(sorted(values), n=100, method="inclusive")
    print(f"{name}: n={len(values)} p50 {q[49]:.3f} p90 {q[89]:.3f} p99 {q[98]:.3f} max {max(values):.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    ttft_s, gap_s = drawn(68, 0.020, 0.060), drawn(6868, 0.008, 0.020)
    lag_ms: list[float] = []
    late_ms: list[float] = []
    for _ in range(runs):
        with FakeVllm(ttft_for=lambda n, b: ttft_s[n], itl_for=lambda n, b: gap_s[n]) as srv:
            with tempfile.TemporaryDirectory() as out:
                config = BenchConfig(base_url=srv.url, contexts=[16], clients=[1], reps=1, output_tokens=4,
                                     requests_per_client=8, warmup_requests=0)  # fmt: skip
                api.bench(config, out_dir=Path(out))
                samples = sorted(load_samples(Path(out) / "requests.jsonl"), key=lambda s: s.t_send)
            for number, s in enumerate(samples, start=2):  # chat request 1 is the probe
                sent = srv.sent_times[number]
                lag_ms += [(c - w) * 1000 for c, w in zip(s.chunk_times, sent, strict=True)]
                deadlines = [s.t_send + ttft_s[number] + k * gap_s[number] for k in range(len(sent))]
                late_ms += [(w - d) * 1000 for w, d in zip(sent, deadlines, strict=True)]
    show("client stamp - server write", lag_ms)
    show("server write - deadline", late_ms)


if __name__ == "__main__":
    main()
