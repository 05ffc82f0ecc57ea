"""How long `onechip --version` takes from a cold interpreter, and how much memory it holds.

Not a test: run it by hand, `python benchmarks/cli_start.py [--reps 7]`. Each rep starts a fresh
`python -m onechip --version` (what a shell or an MCP client pays before any job starts), timed by wall
clock; peak RSS comes from the child's rusage. Prints the median, the target (issue "One source for every
vLLM fact": CLI start < 0.3 s) and the ratio median / target, plus the heavy modules the CLI must not load
at start (the same list tests/unit/cli/test_cli_imports.py asserts).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

TARGET_S = 0.3
PROBE = "import sys, onechip.cli.main; print(','.join(sorted({m.split('.')[0] for m in sys.modules})))"


def one_start() -> tuple[float, int]:
    """(wall seconds, peak RSS of the child in KiB) for one `python -m onechip --version`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "onechip", "--version"], check=True, capture_output=True)
    wall = time.perf_counter() - started
    return wall, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    one_start()  # warm the page cache: we measure import work, not the disk
    runs = [one_start() for _ in range(args.reps)]
    median_s = statistics.median(wall for wall, _ in runs)
    peak_mib = max(rss for _, rss in runs) / 1024
    loaded = subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True, text=True).stdout
    print(f"onechip --version: median {median_s:.3f} s over {args.reps} reps (min {min(w for w, _ in runs):.3f})")
    print(f"peak RSS: {peak_mib:.0f} MiB; cpus: {os.cpu_count()}")
    print(f"target < {TARGET_S} s: ratio {median_s / TARGET_S:.2f} ({'met' if median_s < TARGET_S else 'NOT met'})")
    print(f"top-level packages loaded by `import onechip.cli.main`: {loaded.strip()}")


if __name__ == "__main__":
    main()
