"""`onechip demo` as a user runs it: end to end, and interrupted mid-benchmark.

Each test boots its own engine (~70 s here); that is the point: the demo owns its engine's lifecycle.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from onechip.engines.local import group_alive

pytestmark = pytest.mark.integration
ONECHIP = [sys.executable, "-m", "onechip"]


def _engine_pid(run_dir: Path) -> int:
    return json.loads((run_dir / "boot.json").read_text())["pid"]


def test_demo_quick_end_to_end(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run(
        [*ONECHIP, "demo", "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=1200,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in (
        "run.json",
        "boot.json",
        "plan.json",
        "crosscheck.json",
        "checks.json",
        "summary.json",
        "requests.jsonl",
        "engine.log",
        "report.md",
        "report.html",
        "serving-report.json",
    ):
        assert (out / name).is_file(), name
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["status"] == "ok"
    assert list(manifest["stage_timings_s"]) == ["model", "boot", "plan", "check", "bench", "report", "down"]
    assert json.loads((out / "crosscheck.json").read_text())["agrees"] is True
    assert "agrees" in proc.stdout and "46,592" in proc.stdout
    summary = json.loads((out / "summary.json").read_text())
    assert all(cell["status"] == "ok" and cell["output_tok_per_s"] > 0 for cell in summary["cells"])
    assert not group_alive(_engine_pid(out))
    assert "status | ok" in (out / "report.md").read_text()


def test_demo_interrupted_keeps_what_it_measured(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [*ONECHIP, "demo", "--quick", "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    requests = out / "requests.jsonl"
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        if requests.exists() and requests.read_text().count("\n") >= 2:
            break
        time.sleep(1)
    assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    kept_before = requests.read_text().count("\n")
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    assert requests.read_text().count("\n") >= kept_before
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    assert not group_alive(_engine_pid(out))


def test_engine_goes_with_a_killed_parent(tmp_path):
    """SIGKILL cannot be caught: PR_SET_PDEATHSIG hands the engine SIGTERM, and vLLM's shutdown must take
    its EngineCore and worker children with it."""
    script = (
        "import sys, time\nfrom pathlib import Path\nfrom onechip.engines import EmbeddedEngine\n"
        f"e = EmbeddedEngine(Path({str(tmp_path / 'engine.log')!r}))\n"
        "e.start(); e.wait_ready(900); print(e.pid, flush=True); time.sleep(600)\n"
    )
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        pgid = int(parent.stdout.readline())
        assert group_alive(pgid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and group_alive(pgid):
        time.sleep(0.5)
    alive = group_alive(pgid)
    if alive:
        os.killpg(pgid, signal.SIGKILL)
    assert not alive, "engine processes outlived a SIGKILLed parent"
