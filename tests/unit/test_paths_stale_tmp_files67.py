"""paths.write_text_atomic: a write killed mid-way (SIGKILL, a power cut) leaves its .NAME.PID.THREAD.tmp beside the
target; the next write of the same target removes those whose process is gone from this host, never a live one's."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from factories import DEAD_PID
from onechip.paths import STALE_TEMP_S, write_text_atomic


def _aged(path: Path, text: str = "partial", age_s: float = STALE_TEMP_S + 1) -> Path:
    path.write_text(text)
    then = path.stat().st_mtime - age_s
    os.utime(path, (then, then))
    return path


def test_a_write_killed_mid_way_leaves_no_temp_file_after_the_next_write(tmp_path: Path) -> None:
    # Before: every killed write left its temporary file for good ('.plan.json.4194305.1.tmp', a partial copy)
    target = tmp_path / "plan.json"
    killed = _aged(tmp_path / f".plan.json.{DEAD_PID}.140000000000001.tmp", '{"half": ')
    write_text_atomic(target, "{}")
    assert target.read_text() == "{}" and not killed.exists()


def test_the_next_write_keeps_a_live_writers_temp_file_and_other_targets_ones(tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        kept = [
            tmp_path / f".plan.json.{live.pid}.1.tmp",  # another process, alive: mid-write
            tmp_path / f".plan.json.{os.getpid()}.2.tmp",  # this process's other thread
            tmp_path / f".boot.json.{DEAD_PID}.1.tmp",  # another target's: its own next write cleans it
            tmp_path / f".plan.json.x.{DEAD_PID}.1.tmp",  # a name not ours for this target ('plan.json.x')
            tmp_path / ".plan.json.notapid.1.tmp",
        ]
        for path in kept:
            _aged(path)
        # a dead PID here, written just now: another host's write in progress on a shared (NFS) home, whose PID this
        # host cannot check; only a file older than any write takes is taken for a killed one
        kept.append(_aged(tmp_path / f".plan.json.{DEAD_PID}.3.tmp", age_s=0))
        write_text_atomic(target, "{}")
        assert all(path.exists() for path in kept)
    finally:
        live.kill()
        live.wait()
