"""A local engine's log writer (onechip.logpump) on record: one killed (SIGKILL, the OOM killer) left engine.log
growing no more while `status` said healthy and `logs` said nothing; `down` returned before the writer had written
the engine's last lines, so `logs` right after it missed them."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from factories import engine_state
from onechip import api
from onechip.engines import state
from onechip.engines.local import LocalVllmEngine
from onechip.errors import EngineError
from onechip.procs import start_ticks
from onechip.schemas import EngineState, EngineStatus
from onechip.schemas.logs import LogsRequest


class Sleeper(LocalVllmEngine):
    """A serve command that prints a line and sleeps, standing in for a serving engine (its /health is not asked)."""

    def __init__(self, log_path: Path):
        super().__init__(model_path=Path("."), served_name="fake", log_path=log_path, stop_grace_s=5.0)

    def command(self) -> list[str]:
        return ["/bin/sh", "-c", "echo serving; exec sleep 600"]


@pytest.fixture
def serving(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    engine = Sleeper(tmp_path / "engine.log")
    engine.start()
    deadline = time.monotonic() + 30
    while "serving" not in engine.log_path.read_text() and time.monotonic() < deadline:  # its line, before the kill
        engine.sync_log()
        time.sleep(0.1)
    state.save(engine.state())
    try:
        yield engine
    finally:
        engine.stop()


def _kill_writer(engine: LocalVllmEngine) -> int:
    assert engine.log_writer is not None
    writer = engine.log_writer.process
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    return writer.pid


def test_the_record_names_the_log_writer_as_the_engine_s_pid_and_start(serving: LocalVllmEngine) -> None:
    saved = state.load()
    assert serving.log_writer is not None and saved is not None
    pid = serving.log_writer.process.pid
    assert (saved.log_writer_pid, saved.log_writer_started) == (pid, start_ticks(pid))  # procs.start_ticks, as pid's


def test_a_record_from_before_the_writer_was_kept_still_loads() -> None:
    older = engine_state().model_dump(exclude={"log_writer_pid", "log_writer_started"})
    loaded = EngineState.model_validate(older)
    assert (loaded.log_writer_pid, loaded.log_writer_started) == (None, None)
    assert state.log_writer_note(loaded) == ""  # nothing known: nothing said


def test_status_says_the_log_writer_is_gone(serving: LocalVllmEngine) -> None:
    assert state.log_writer_note(state.load()) == ""  # alive: nothing said
    pid = _kill_writer(serving)
    said = state.status()
    assert said.running
    assert said.note == (
        f"the log writer (pid {pid}) is gone: {serving.log_path} no longer grows while the engine serves on; "
        "`onechip down` and `onechip up` again to log anew"
    )


def test_the_status_command_prints_that_note_of_a_healthy_engine(run, tmp_path, monkeypatch) -> None:
    saved = engine_state(log_path=str(tmp_path / "engine.log"))
    note = "the log writer (pid 7) is gone: engine.log no longer grows"
    monkeypatch.setattr(
        api, "status", lambda: EngineStatus(running=True, healthy=True, state=saved, uptime_s=5.0, note=note)
    )
    code, out, err = run("status")
    assert code == 0 and note in " ".join(out.split()), out + err


def test_logs_says_the_log_writer_is_gone(serving: LocalVllmEngine, run) -> None:
    pid = _kill_writer(serving)
    code, out, err = run("logs")
    assert code == 0 and out.splitlines() == ["serving"], out
    assert f"the log writer (pid {pid}) is gone" in " ".join(err.split()), err
    assert api.logs_tail(LogsRequest()).note.startswith(f"the log writer (pid {pid}) is gone")


def test_logs_follow_ends_once_the_log_writer_is_gone(serving: LocalVllmEngine) -> None:
    seen: list[str] = []
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            for line in state.log_lines(follow=True):
                seen.append(line)
        except EngineError as exc:
            failed.append(exc)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    pid = _kill_writer(serving)
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert seen == ["serving"] and str(failed[0]).startswith(f"the log writer (pid {pid}) is gone"), failed


def test_down_waits_for_the_writer_to_write_the_engine_s_last_lines(tmp_path: Path, monkeypatch) -> None:
    """The writer here writes the engine's last line 1 s after the engine exits (a stand-in for a writer that has
    lines to copy yet); `down` waits for it, up to LOG_SYNC_S (5 s)."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    log.write_text("")
    engine = subprocess.Popen(["sleep", "600"], start_new_session=True)
    script = f'while kill -0 {engine.pid} 2>/dev/null; do sleep 0.1; done; sleep 1; echo "last words" >> {log}'
    writer = subprocess.Popen(["/bin/sh", "-c", script], start_new_session=True)
    state.save(
        engine_state(pid=engine.pid, pid_started=start_ticks(engine.pid), log_path=str(log),
                     log_writer_pid=writer.pid, log_writer_started=start_ticks(writer.pid))
    )  # fmt: skip
    try:
        state.down()
        assert list(state.log_lines()) == ["last words"]
    finally:
        writer.kill()
        writer.wait()
