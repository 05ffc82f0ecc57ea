"""What every demo shares: its grids and checks, the run manifest and the timed stages."""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from onechip import __version__
from onechip.paths import write_text_atomic
from onechip.progress import ProgressEvent, ProgressFn
from onechip.schemas import RUN_FILES, RunManifest

# The demo's grid and checks. On the embedded engine prefill runs on one core at ~200 prompt tok/s
# (measured here: median TTFT ~5 s at 1,024 tokens, one client), so prompt tokens set the demo's length.
# Quick: the example grid (contexts 128/1,024 x clients 1/4, 2 reps, 32 output tokens), ~2.5 min.
# Full: 8 clients too, 3 reps, 64 output tokens, and the MCP agent and needle checks, ~15 min (with 16
# clients the 1,024-token cell alone took ~4.5 min per rep here).
DEMO_GRIDS: dict[bool, dict[str, object]] = {
    True: dict(
        contexts=[128, 1024], clients=[1, 4], reps=2, output_tokens=32, requests_per_client=1, warmup_requests=1
    ),
    False: dict(
        contexts=[128, 1024], clients=[1, 4, 8], reps=3, output_tokens=64, requests_per_client=1, warmup_requests=1
    ),
}
DEMO_CHECKS: dict[bool, dict[str, object]] = {
    True: dict(only=["smoke", "tools", "determinism"]),
    False: dict(
        only=["smoke", "tools", "agent", "determinism", "needle"],
        agent_cases=3,
        needle_lengths=[1000, 2000],
        needle_depths=[0.1, 0.5, 0.9],
    ),
}


@contextmanager
def timed_stage(manifest: RunManifest, name: str, run_dir: Path, on_progress: ProgressFn) -> Iterator[None]:
    """Time a stage into the manifest, saved as the stage starts and ends (an interrupted run keeps its
    timings; the report, rendered in a stage of its own, reads the status set before it)."""
    on_progress(ProgressEvent("demo", f"stage: {name}"))
    write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))
    started = time.monotonic()
    try:
        yield
    finally:
        manifest.stage_timings_s[name] = round(time.monotonic() - started, 2)
        write_text_atomic(run_dir / RUN_FILES["manifest"], manifest.model_dump_json(indent=2))


def new_manifest(run_dir: Path, quick: bool) -> RunManifest:
    """The run.json of a demo run starting now on this machine."""
    return RunManifest(
        run_id=run_dir.name,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tool_version=__version__,
        python=platform.python_version(),
        host=socket.gethostname(),
        cpus=os.cpu_count(),
        command="demo --quick" if quick else "demo",
        chip="cpu",
    )
