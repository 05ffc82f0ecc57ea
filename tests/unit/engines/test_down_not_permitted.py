"""`down` of an engine another user started (or root, under sudo): the kernel refuses the signal (kill(2): EPERM).
Before, the PermissionError went up as an OSError and the CLI said 'error: file-system error: Operation not
permitted', naming no process and no file; the record stays, since the engine still runs."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import local
from onechip.engines import state as engine_state_file
from onechip.errors import EngineError
from onechip.procs import start_ticks


def test_down_of_another_user_s_engine_says_so_in_one_line_and_keeps_it_on_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    real = os.killpg

    def killpg(pgid: int, sig: int) -> None:  # the engine is another user's: every signal to it is refused
        if pgid == other.pid:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        real(pgid, sig)

    try:
        engine_state_file.save(engine_state(engine="vllm", pid=other.pid, pid_started=start_ticks(other.pid)))
        monkeypatch.setattr(local.os, "killpg", killpg)
        with pytest.raises(EngineError) as refused:
            engine_state_file.down(grace_s=5.0)
        assert other.poll() is None  # not stopped
    finally:
        other.send_signal(signal.SIGKILL)
        other.wait()
    said = str(refused.value)
    assert "\n" not in said and f"process group {other.pid}" in said and "another user" in said, said
    assert engine_state_file.load() is not None  # kept: `down` as that user (or root) stops it
