"""Lifecycle guarantees of LocalVllmEngine, on a fake server that forks a grandchild like vLLM does."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from onechip.api import _engines
from onechip.engines import local, state
from onechip.engines.local import LocalVllmEngine, group_alive
from onechip.errors import EngineBootError, PortInUseError
from onechip.procs import start_ticks
from onechip.progress import ProgressEvent

# the fake vLLM process (tests/fakes/vllm_server.py), by path: test_engine_dies_with_its_parent imports this
# module in a child whose sys.path holds only this folder
FAKE = Path(__file__).parents[2] / "fakes" / "vllm_server.py"


class FakeEngine(LocalVllmEngine):
    def __init__(self, log_path: Path, mode: str = "ok", **kw):
        super().__init__(model_path=Path("."), served_name="fake", log_path=log_path, stop_grace_s=5.0, **kw)
        self.fake_boot = mode  # not `mode`: that is how `status` finds an engine (EngineState.mode)
        self.fake_flags: list[str] = []  # more --fake-* options (tests/fakes/vllm_server.py)

    def command(self) -> list[str]:
        # forks a grandchild as vLLM forks EngineCore, so tests can prove the whole process group goes away
        boot_log = ["--fake-version", "9.9.9", "--fake-kv-tokens", "1024", "--max-model-len", "512"]
        return [
            sys.executable,
            str(FAKE),
            "--port",
            str(self.port),
            "--fake-boot",
            self.fake_boot,
            "--fake-fork",
            *boot_log,
            *self.fake_flags,
        ]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie counts as gone
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _grandchild(log: Path) -> int:
    for _ in range(50):
        match = re.search(r"grandchild=(\d+)", log.read_text() if log.exists() else "")
        if match:
            return int(match.group(1))
        time.sleep(0.1)
    raise AssertionError("fake engine never reported its grandchild")


def test_start_ready_stop_leaves_no_process(tmp_path):
    engine = FakeEngine(tmp_path / "engine.log")
    engine.start()
    boot = engine.wait_ready(timeout_s=30)
    grandchild = _grandchild(engine.log_path)
    assert boot.kv_cache_tokens == 1024 and boot.ready_s is not None
    assert boot.engine_version == "9.9.9"
    assert engine.log_path.stat().st_mode & 0o777 == 0o600  # the log holds what the engine prints: owner only
    engine.stop()
    assert not group_alive(engine.pid)
    assert not _pid_alive(grandchild)
    engine.stop()  # idempotent


def test_boot_death_raises_with_log_tail(tmp_path):
    engine = FakeEngine(tmp_path / "engine.log", mode="die")
    engine.start()
    with pytest.raises(EngineBootError) as info:
        engine.wait_ready(timeout_s=30)
    assert "exited with code 3" in str(info.value)
    assert "boom during boot" in str(info.value)
    assert str(engine.log_path) in str(info.value)
    engine.stop()
    assert not _pid_alive(_grandchild(engine.log_path))


def test_boot_timeout_stops_the_group(tmp_path):
    engine = FakeEngine(tmp_path / "engine.log", mode="hang")
    engine.start()
    with pytest.raises(EngineBootError, match="not healthy after"):
        engine.wait_ready(timeout_s=2)
    assert not group_alive(engine.pid)


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        engine = FakeEngine(tmp_path / "engine.log", port=sock.getsockname()[1])
        with pytest.raises(PortInUseError, match="already in use"):
            engine.start()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_engine_dies_with_its_parent(tmp_path, sig):
    """A demo killed outright (SIGKILL) or interrupted (SIGINT) must not orphan its engine."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from pathlib import Path
        from test_engine_lifecycle import FakeEngine
        engine = FakeEngine(Path({str(tmp_path / "engine.log")!r}))
        engine.start()
        try:
            engine.wait_ready(timeout_s=30)
            print(engine.pid, flush=True)
            time.sleep(60)
        finally:
            engine.stop()
    """)
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) as parent:
        assert parent.stdout is not None
        engine_pid = int(parent.stdout.readline())
        grandchild = _grandchild(tmp_path / "engine.log")
        parent.send_signal(sig)
        parent.wait(timeout=30)
    # PR_SET_PDEATHSIG takes the direct child on SIGKILL; vLLM's own shutdown then takes its children
    # (checked on the real engine in tests/integration). The fake's grandchild has no such shutdown.
    watched = [engine_pid] if sig == signal.SIGKILL else [engine_pid, grandchild]
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_pid_alive(pid) for pid in watched):
        time.sleep(0.1)
    assert not any(_pid_alive(pid) for pid in watched)
    if sig == signal.SIGKILL:
        try:
            os.killpg(engine_pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class KilledEngine(LocalVllmEngine):
    """An engine the kernel SIGKILLs during boot (the out-of-memory killer), directly or under a shell."""

    def __init__(self, log_path: Path, shell: bool):
        super().__init__(model_path=Path("."), served_name="fake", log_path=log_path, stop_grace_s=5.0)
        self.shell = shell

    def command(self) -> list[str]:
        suicide = [sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"]
        return ["sh", "-c", " ".join(f"'{word}'" for word in suicide)] if self.shell else suicide


@pytest.mark.parametrize(
    ("shell", "said"), [(False, "was killed by SIGKILL"), (True, "exited with code 137 (128 + SIGKILL)")]
)
def test_a_boot_killed_by_sigkill_says_so(tmp_path, shell, said):
    # Before: 'engine exited with code -9 during boot: (full log: ...)', which named neither the signal nor a cause.
    engine = KilledEngine(tmp_path / "engine.log", shell)
    engine.start()
    with pytest.raises(EngineBootError) as info:
        engine.wait_ready(timeout_s=30)
    said = f"engine {said} during boot, most often by the host's out-of-memory killer when host RAM runs out: "
    last = "Killed" if shell else "it logged nothing"  # what sh says of a child it lost to SIGKILL; else no line
    assert str(info.value) == f"{said}{last} (full log: {engine.log_path})"
    engine.stop()


def test_an_interrupt_that_lands_as_start_returns_stops_the_engine(tmp_path, monkeypatch):
    """`up` runs start() then waits; a Ctrl-C or SIGTERM (the CLI turns it into KeyboardInterrupt) arriving once the
    engine is launched, before the wait, left it serving with no record. Before: _boot called start() outside its
    try, so nothing stopped it."""

    def interrupted(pid: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "uncap_child", interrupted)  # the last step of start(), after the launch
    engine = FakeEngine(tmp_path / "engine.log")
    try:
        with pytest.raises(KeyboardInterrupt):
            _engines._boot(engine, 30.0, lambda event: None)
        assert engine.pid is not None and not group_alive(engine.pid)
    finally:
        engine.stop()  # what a failing run left behind


def test_logs_after_a_first_failed_up_show_its_boot(tmp_path, monkeypatch):
    """Before: a failed `up` left no record, so on a fresh home `onechip logs` (what one runs next) said 'no engine
    started by `onechip up`' while the log of the failed boot sat on disk."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    engine = FakeEngine(tmp_path / "engine" / "engine.log", mode="die")
    with pytest.raises(EngineBootError, match="boom during boot"):
        _engines._start(engine, tmp_path / "engine", None, None, 30.0, lambda event: None)
    assert not group_alive(engine.pid)
    assert state.load() is None and not state.status().running  # nothing runs, nothing to `down`
    assert "ValueError: boom during boot" in list(state.log_lines())


@contextlib.contextmanager
def _sigterm_ignoring_engine() -> Iterator[subprocess.Popen[str]]:
    """A child in its own process group that ignores SIGTERM (an engine a shutdown cannot stop), killed after use."""
    code = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); time.sleep(60)"
    )
    engine = subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE, text=True)
    try:
        assert engine.stdout is not None and engine.stdout.readline() == "ready\n"  # SIGTERM is ignored from here
        yield engine
    finally:
        if engine.poll() is None:
            engine.kill()
            engine.wait()
        if engine.stdout is not None:
            engine.stdout.close()


def test_a_second_interrupt_while_an_engine_shuts_down_kills_it(monkeypatch):
    """Ctrl-C during a boot stops the engine with SIGTERM and waits up to its grace; a second Ctrl-C in that wait
    (a vLLM shutdown takes seconds, one that ignores SIGTERM the whole grace) left it running with no record."""
    with _sigterm_ignoring_engine() as engine:

        def interrupted(seconds: float) -> None:
            raise KeyboardInterrupt  # the second Ctrl-C, in the grace wait

        monkeypatch.setattr(local.time, "sleep", interrupted)
        with pytest.raises(KeyboardInterrupt):
            local.stop_group(engine.pid, grace_s=20.0)
        monkeypatch.undo()
        assert engine.wait(timeout=10) == -signal.SIGKILL


def test_down_says_when_it_waits_out_an_engine_that_ignores_sigterm(tmp_path, monkeypatch):
    """Before: `down` waited silently up to its 20 s grace on an engine that ignores SIGTERM, then SIGKILLed it;
    now it says so once through the progress it is given, with the time the SIGKILL is due."""
    from factories import engine_state  # here: test_engine_dies_with_its_parent imports this module from its folder

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    with _sigterm_ignoring_engine() as engine:
        state.save(engine_state(pid=engine.pid, pid_started=start_ticks(engine.pid), log_path=str(tmp_path / "e.log")))
        events: list[ProgressEvent] = []
        assert state.down(grace_s=1.0, on_progress=events.append).note == f"stopped engine pid {engine.pid}"
        assert not group_alive(engine.pid)  # SIGKILLed (and reaped by stop_group: it is this test's child)
        said = f"engine process group {engine.pid} still runs after SIGTERM; SIGKILL in up to 1 s"
        assert [e.message for e in events] == [said]
        assert events[0].until is not None


def test_down_says_nothing_of_an_engine_that_stops_on_sigterm(tmp_path, monkeypatch):
    """Before: the 'still runs after SIGTERM; SIGKILL in up to 20 s' line came at the first look, at once after the
    SIGTERM, so every `onechip down` printed it, for engines that stopped a moment later as asked."""
    from factories import engine_state

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        state.save(engine_state(pid=engine.pid, pid_started=start_ticks(engine.pid), log_path=str(tmp_path / "e.log")))
        events: list[ProgressEvent] = []
        assert state.down(grace_s=20.0, on_progress=events.append).note == f"stopped engine pid {engine.pid}"
        assert events == [] and not group_alive(engine.pid)
    finally:
        if engine.poll() is None:
            engine.kill()
        engine.wait()


@contextlib.contextmanager
def _unreaped_dead_engine() -> Iterator[int]:
    """The pid of a dead engine nobody reaps (a zombie), not this process's child: a parent that never waits starts it
    in its own session and SIGKILLs it, as a container's PID 1 without --init adopts an engine whose `up` exited."""
    code = textwrap.dedent(
        """
        import signal, subprocess, sys, time
        engine = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        engine.send_signal(signal.SIGKILL)
        print(engine.pid, flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        yield pid
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()


def test_an_engine_that_died_unreaped_is_gone(tmp_path, monkeypatch):
    """Before: an engine that died after `up` exited, adopted by a parent that does not reap (a container's PID 1
    without --init), was a zombie whose group still answers signal 0: `status` said 'not healthy ... (pid N)', `down`
    waited out its 20 s grace and 10 s after SIGKILL, then failed 'engine process group N survived SIGKILL' (exit 5)
    and kept the record, so `up` refused ('an engine is already running') for good."""
    from factories import engine_state

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    with _unreaped_dead_engine() as pid:
        assert not group_alive(pid)
        state.save(engine_state(pid=pid, pid_started=start_ticks(pid), log_path=str(tmp_path / "e.log")))
        assert not state.status().running
        started = time.monotonic()
        assert state.down(grace_s=20.0).note == "engine was already gone; state cleared"
        # not the 20 s grace and 10 s after SIGKILL the bug waited; room for a loaded machine
        assert time.monotonic() - started < 15 and state.load() is None


def test_up_again_after_a_crash_keeps_the_crashed_engines_log(tmp_path, monkeypatch):
    """Before: `up` deleted the engine log before booting, so restarting an engine that had crashed under load
    deleted the only account of the crash."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine" / "engine.log"
    log.parent.mkdir()
    log.write_text("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    engine = FakeEngine(log)
    try:
        _engines._start(engine, log.parent, None, None, 30.0, lambda event: None)
    finally:
        engine.stop()
    assert (
        log.parent / "engine.prev.log"
    ).read_text() == "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert "illegal memory access" not in log.read_text() and "Application startup complete" in log.read_text()


def test_the_boot_stage_is_not_reparsed_at_every_poll(tmp_path, monkeypatch):
    """Before: wait_ready parsed the whole engine log (about 1.3 s per MB) for its progress line at every 0.5 s poll;
    a chatty engine's log of tens of MB held `up` in that parse, between its health checks. Here the parse costs 1 s
    and the engine answers after 4 s: it was parsed at every poll (4 times and more), now once 9 s have passed."""
    port = local.free_port()
    engine = LocalVllmEngine(
        tmp_path / "m", "m", tmp_path / "engine.log", port=port, tie_to_parent=True,
        argv=[sys.executable, str(FAKE), "--port", str(port), "--served-model-name", "m",
              "--fake-boot-s", "4"],
    )  # fmt: skip
    parsed = []
    record = engine.boot_record

    def slow_record():
        parsed.append(time.monotonic())
        time.sleep(1.0)
        return record()

    monkeypatch.setattr(engine, "boot_record", slow_record)
    engine.start()
    try:
        engine.wait_ready(60)
    finally:
        engine.stop()
    assert len(parsed) <= 2, len(parsed)  # the first stage, and the record returned once ready
