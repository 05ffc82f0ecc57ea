"""How fast `onechip plan` is (issue 12: `advise` plans every chip and MCP agents call plan often).

Prints: the wall time of a cold `onechip plan google/gemma-4-E2B-it --chip v5e-1` (a fresh Python process,
median of 3), its peak RSS, and the time of 100 plans in one process (catalog model on TPU, and the same
model on H100 under the vLLM GPU rules). Targets from the issue: cold < 1 s, 100 plans < 1 s.

Run: PYTHONPATH=src python benchmarks/plan_speed.py
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
COMMAND = [sys.executable, "-m", "onechip", "plan", "google/gemma-4-E2B-it", "--chip", "v5e-1", "--json"]


def cold_runs(n: int = 3) -> tuple[float, float]:
    """Median wall seconds of `n` fresh `onechip plan` processes, and the largest child peak RSS in MiB."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "HF_HUB_OFFLINE": "1"}
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(COMMAND, env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return statistics.median(times), rss_mib


def warm_plans(n: int = 100) -> dict[str, float]:
    """Seconds for `n` plans in this process, per case."""
    from onechip.planner import plan_model

    cases = {
        "gemma-4-E2B-it on v5e-1": {"model": "google/gemma-4-E2B-it", "chip": "v5e-1"},
        "gemma-4-E2B-it on h100 (GPU rules)": {
            "model": "google/gemma-4-E2B-it",
            "chip": "h100",
            "max_model_len": 32768,
        },
    }
    plan_model(**cases["gemma-4-E2B-it on v5e-1"])  # imports and catalog files load once
    out = {}
    for name, fields in cases.items():
        start = time.perf_counter()
        for _ in range(n):
            plan_model(**fields)
        out[name] = time.perf_counter() - start
    return out


def main() -> int:
    cold_s, rss = cold_runs()
    print(f"cold `onechip plan` (median of 3): {cold_s:.2f} s, peak RSS {rss:.0f} MiB (target < 1 s)")
    for name, seconds in warm_plans().items():
        print(f"100 plans in one process, {name}: {seconds:.2f} s (target < 1 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
