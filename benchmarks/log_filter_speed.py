"""How much CPU serve.sh's redacting filter (onechip.logfilter, perl) and errors.redactor (a local engine's, logpump)
spend on an engine's burst of output.

Two bursts of about 50 MB, written to a temporary directory:
    plain     an engine line with no key word ('INFO ... request 12345 done ok'): the shapes and the environment's
              values alone are searched
    key-words a line holding 'token' and 'key' and ':' ('max_tokens: 64, api-key: not given, prompt_tokens=12'):
              every rule is searched, none hides anything
perl runs the filter's program on each (its user+sys CPU seconds, from the child's rusage: serve.sh's bash runs it in
a process substitution, whose time a `time bash serve.sh` does not count); redactor runs on 100,000 of each line (us a
line, the least of 3).

Run: PYTHONPATH=src python benchmarks/log_filter_speed.py
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

from onechip.errors import redactor
from onechip.logfilter import PERL_PROGRAM

LINES = {
    "plain": "INFO 12-06 20:00:00 [core.py:123] an engine line of about a hundred bytes, request 12345 done ok",
    "key-words": "INFO 12-06 20:00:00 [core.py:123] max_tokens: 64, api-key: not given, prompt_tokens=12 done ok",
}
BURST_BYTES = 50_000_000
TOKEN = "hf_FAKEtoken0123456789abcdefXYZ"  # HF_TOKEN as serve.sh's environment holds one


def perl_cpu_s(program: Path, burst: Path) -> float:
    """User+sys CPU seconds of perl running `program` over `burst`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with burst.open("rb") as source:
        subprocess.run(  # noqa: S603
            ["perl", str(program)],  # noqa: S607
            stdin=source,
            stdout=subprocess.DEVNULL,
            env={"PATH": os.environ["PATH"], "HF_TOKEN": TOKEN},
            check=True,
        )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def redactor_us(line: str, count: int = 100_000) -> float:
    """Microseconds of CPU errors.redactor spends on `line`, the least of 3 runs of `count`."""
    scrub = redactor()
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        for _ in range(count):
            scrub(line)
        best = min(best, time.process_time() - began)
    return best / count * 1e6


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "filter.pl"
        program.write_text(PERL_PROGRAM)
        for name, line in LINES.items():
            burst = Path(folder) / name
            data = (line + "\n").encode()
            burst.write_bytes(data * (BURST_BYTES // len(data)))
            print(f"{name:10} perl {perl_cpu_s(program, burst):.2f} s CPU for {burst.stat().st_size / 1e6:.0f} MB; "
                  f"redactor {redactor_us(line):.2f} us a line")  # fmt: skip


if __name__ == "__main__":
    main()
