"""A bench whose requests.jsonl cannot grow (a full disk, a file-size limit) says which file in its one line: the
sample's write raised an OSError with no file name, and the line was 'error: file-system error: No space left on
device' (measured on a 48 KiB tmpfs), where the CLI promises a file-system error's path and the OS's reason."""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
from pathlib import Path

from fakes.vllm_server import FakeVllm

LIMIT_BYTES = 3000  # requests.jsonl passes it at its second or third sample (each line ~1 KB with chunk times)


def _file_size_capped() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past the cap a write then fails with EFBIG, not a signal
    resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT_BYTES, LIMIT_BYTES))


def test_a_sample_that_cannot_be_written_names_requests_jsonl(fake_server: FakeVllm, tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "onechip", "bench", fake_server.url, "--contexts", "32", "--clients", "1"]
    argv += ["--reps", "1", "--requests-per-client", "4", "--out", str(out)]
    done = subprocess.run(argv, preexec_fn=_file_size_capped, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == f"error: {out / 'requests.jsonl'}: File too large", done.stderr
    assert "Traceback" not in done.stderr
