"""How fast `onechip logs FILE --summary` reads a long engine log, and how much memory it holds.

Four logs, each of 200,000 and 1,000,000 lines, written to a temporary directory from the recorded vLLM 0.32 CPU
boots in tests/data:
    ready         a boot that came up (vllm_cpu_0.32_smollm2_autofit_boot.log), then the server's stats and access
                  lines (vllm/v1/metrics/loggers.py LoggingStatLogger.log, uvicorn's access log) for the rest
    starting      the same boot up to its KV cache, then vLLM's DEBUG 'Waiting for 1 local, 0 remote core engine
                  proc(s) to start.' (vllm/v1/engine/utils.py wait_for_engine_startup, every 10 s) for the rest:
                  an engine still starting, logged at DEBUG
    crash-loop    the refused boot (vllm_cpu_0.32_smollm2_nullblock_refused_boot.log) again and again: a container
                  restarted after each failure
    one-line      a 50 MB line with no newline (an engine printing a tensor), after the refused boot
Each is summarized in a fresh Python process (log_summary.summarize over read_log, what `logs FILE --summary` runs);
printed: wall seconds, the peak RSS above the process's RSS before reading (MiB), and the verdict it read.

Run: PYTHONPATH=src python benchmarks/log_summary_speed.py [LINES ...]   (default: 200000 1000000)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SERVING = [
    "(APIServer pid=7636) INFO 12-04 21:57:46 [loggers.py:257] Engine 000: Avg prompt throughput: 12.3 tokens/s, Avg "
    "generation throughput: 100.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%, Prefix cache "
    "hit rate: 0.0%",
    '(APIServer pid=7636) INFO:     127.0.0.1:50712 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
]
WAITING = (
    "(APIServer pid=7636) DEBUG 12-04 21:57:46 [utils.py:1406] Waiting for 1 local, 0 remote core engine proc(s) to "
    "start."
)
ONE_LINE_BYTES = 50_000_000
# run in the child: its RSS before reading and its peak RSS after, in KiB, from /proc/self/status (VmRSS, VmHWM: the
# peak of this process's own memory; getrusage's ru_maxrss keeps the parent's peak across the exec)
CHILD = """
import json, sys, time
from pathlib import Path
from onechip.vllm import log_summary
def kib(field):
    return next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith(field + ':'))
before_kib = kib('VmRSS')
start = time.perf_counter()
path = Path(sys.argv[1])
summary = log_summary.summarize(log_summary.read_log(path), str(path), 80, log_summary.ends_in_newline(path))
seconds = time.perf_counter() - start
peak_kib = kib('VmHWM')
verdict = log_summary.verdict_line(summary.boot) if summary.boot else log_summary.NO_VERDICT
print(json.dumps({"s": seconds, "mib": (peak_kib - before_kib) / 1024, "lines": summary.total_lines,
                  "verdict": verdict}))
"""


def write_logs(lines: int, folder: Path) -> dict[str, Path]:
    """The four logs of about `lines` lines each, written under `folder`."""
    boot = (DATA / "vllm_cpu_0.32_smollm2_autofit_boot.log").read_text().splitlines()
    refused = (DATA / "vllm_cpu_0.32_smollm2_nullblock_refused_boot.log").read_text().splitlines()
    ready = next(i for i, line in enumerate(boot) if "Application startup complete" in line) + 1
    sized = next(i for i, line in enumerate(boot) if "KV cache size" in line) + 1
    logs = {
        "ready": [*boot[:ready], *SERVING * ((lines - len(boot)) // 2), *boot[ready:]],
        "starting": [*boot[:sized], *[WAITING] * (lines - sized)],
        "crash-loop": refused * (lines // len(refused)),
    }
    out = {}
    for name, text in logs.items():
        out[name] = folder / f"{name}-{lines}.log"
        out[name].write_text("\n".join(text) + "\n")
    out["one-line"] = folder / "one-line.log"
    if not out["one-line"].exists():
        out["one-line"].write_text("\n".join(refused) + "\n" + "0.125, " * (ONE_LINE_BYTES // 7))
    return out


def summarize_in_child(path: Path) -> dict[str, float | str]:
    """Seconds, peak MiB and verdict of one summary of `path`, in a fresh process."""
    env_path = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
    )
    result: dict[str, float | str] = json.loads(done.stdout)
    return result


def main(argv: list[str]) -> int:
    sizes = [int(arg) for arg in argv] or [200_000, 1_000_000]
    with tempfile.TemporaryDirectory(prefix="onechip-logspeed-") as tmp:
        for lines in sizes:
            for name, path in write_logs(lines, Path(tmp)).items():
                if name == "one-line" and lines != sizes[0]:
                    continue
                got = summarize_in_child(path)
                size_mb = path.stat().st_size / 1e6
                print(
                    f"{name:10} {got['lines']:>9,} lines {size_mb:7.1f} MB: {got['s']:6.1f} s, "
                    f"peak +{got['mib']:6.1f} MiB; {str(got['verdict'])[:90]}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
