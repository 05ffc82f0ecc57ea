"""engines/state.py: what `onechip logs` does with a saved engine state whose log file is gone."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from factories import DEAD_PID, embedded_plan, engine_state, fake_docker
from fakes import vllm_server
from onechip.engines import state
from onechip.engines.local import LocalVllmEngine, free_port, group_alive
from onechip.errors import EngineError
from onechip.procs import start_ticks


def test_logs_of_a_removed_log_file_is_an_engine_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: FileNotFoundError escaped as a traceback from `onechip logs`.
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    gone = tmp_path / "engine" / "engine.log"
    state.save(engine_state(log_path=str(gone)))
    with pytest.raises(EngineError, match="engine log .* is gone"):
        list(state.log_lines())


def _save(tmp_path: Path, pid: int) -> None:
    state.save(engine_state(pid=pid, log_path=str(tmp_path / "engine.log")))


def test_down_never_signals_a_reused_pid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a reboot the recorded pid may lead someone else's process group; `down` must not kill it."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        _save(tmp_path, other.pid)
        assert not state.status().running
        assert "already gone" in state.down().note
        assert other.poll() is None  # still running: not ours, not signalled
        assert state.load() is None
    finally:
        other.kill()
        other.wait()


def test_unreadable_state_is_an_error_not_no_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    state.state_path().write_text("{not json")
    with pytest.raises(EngineError, match="unreadable"):
        state.status()
    with pytest.raises(EngineError, match="unreadable"):
        state.down()


def test_a_reused_pid_whose_command_names_vllm_is_not_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded start time tells `up`'s engine from a later process given its pid, whatever it runs."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "vllm"], start_new_session=True)
    try:
        started = start_ticks(other.pid)
        assert started is not None
        state.save(engine_state(pid=other.pid, pid_started=started - 1, log_path=str(tmp_path / "engine.log")))
        assert not state.status().running
        assert "already gone" in state.down().note
        assert other.poll() is None  # not ours: not signalled
    finally:
        other.kill()
        other.wait()


def test_an_engine_whose_launcher_is_not_named_vllm_is_found_and_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`up --launcher` runs any program. Before: an engine whose command line did not say 'vllm' was 'gone (stale
    state)' to `status`, and `down` cleared its record and left it serving, with nothing left to find it by."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    serve = tmp_path / "serve.py"
    serve.symlink_to(vllm_server.SCRIPT)
    port = free_port()
    engine = LocalVllmEngine(
        Path("m"), "m", tmp_path / "engine.log", [sys.executable, str(serve), "--port", str(port)], port=port
    )
    engine.start()
    try:
        engine.wait_ready(timeout_s=30)
        assert b"vllm" not in Path(f"/proc/{engine.pid}/cmdline").read_bytes()
        state.save(engine.state())
        assert state.status().running
        assert state.down().note == f"stopped engine pid {engine.pid}"
        assert not group_alive(engine.pid)
    finally:
        engine.stop()


def test_logs_follow_ends_when_the_engine_exits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `onechip logs --follow` waited for new lines forever after the engine had died."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    code = "import sys, time; print('ready', flush=True); time.sleep(1); print('RuntimeError: died', flush=True)"
    with log.open("w") as out:
        engine = subprocess.Popen([sys.executable, "-c", code], stdout=out, start_new_session=True)
    started = start_ticks(engine.pid)
    state.save(engine_state(pid=engine.pid, pid_started=started, log_path=str(log)))
    seen: list[str] = []
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            seen.extend(state.log_lines(follow=True))
        except EngineError as exc:
            failed.append(exc)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    engine.wait()  # reaped: its pid leads no group now
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert seen == ["ready", "RuntimeError: died"]
    assert (
        str(failed[0])
        == f"the engine (pid {engine.pid}) exited; its last lines are above (`onechip down` clears its record)"
    )


def test_an_engine_that_died_under_the_process_that_started_it_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server runs `up` and `status` in one long-lived process, whose dead engine child stays a zombie until
    reaped. Before: `status` said it was running (not healthy) and `down` that it 'stopped engine pid N'."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    port = free_port()
    engine = LocalVllmEngine(
        Path("m"),
        "m",
        tmp_path / "engine.log",
        [sys.executable, str(vllm_server.SCRIPT), "--port", str(port)],
        port=port,
    )
    engine.start()
    try:
        engine.wait_ready(timeout_s=30)
        state.save(engine.state())
        assert engine.pid is not None
        os.kill(engine.pid, signal.SIGKILL)
        time.sleep(0.5)
        assert not state.status().running
        assert state.down().note == "engine was already gone; state cleared"
    finally:
        engine.stop()


def test_a_record_of_an_engine_mode_this_onechip_does_not_know_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer onechip may record an engine it finds another way. Before: read as a host engine, `status` called it
    'gone on its host' and `down` ran `kill -TERM -- -None` on this machine, said 'stopped process group None' and
    deleted the record, leaving that engine running with nothing to find it by."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    state.save(engine_state(mode="k8s-pod"))
    for command in (state.status, state.down, lambda: list(state.log_lines())):
        with pytest.raises(EngineError, match="records a 'k8s-pod' engine, which this onechip does not know"):
            command()
    assert state.state_path().is_file()


@pytest.mark.parametrize("what", ["engine", "replicas"])
def test_down_on_a_full_disk_still_forgets_what_it_stopped(
    what: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`down` keeps a record of what it stopped for `logs` (engine.last.json, replicas.last.json). With the disk full
    that write raised after the stop and before the forget: the record stayed, and every `down` again failed the same
    way ('No space left on device'). Now the stop and the forget finish, and the note says what was not kept."""
    from onechip.api import _engines
    from onechip.engines import replicas
    from onechip.paths import write_text_atomic

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    if what == "engine":
        state.save(engine_state(log_path=str(tmp_path / "engine.log")))
    else:
        launch = replicas.prepare_replicas(embedded_plan(), "embedded", 1, share=1, cores=[0])[0]
        replicas.save(replicas.ReplicaSetState(launch=launch, replicas=[engine_state()], router=engine_state()))

    def full(path: Path, text: str) -> Path:
        if path.name.endswith(".last.json"):
            raise OSError(28, "No space left on device", str(path))
        return write_text_atomic(path, text)

    monkeypatch.setattr(state, "write_text_atomic", full)
    note = _engines.down().note
    assert "not kept" in note and "No space left on device" in note, note
    assert not state.state_path().exists() and not replicas.state_path().exists()
    assert "no engine" in _engines.down().note  # again: nothing left to stop


# A progress bar rewritten in place with a lone CR (tqdm's bars in vLLM's weight loading: 'Loading safetensors
# checkpoint shards:  50% Completed | 1/2 ...' then '\r' and the next), a line written on Windows ending CRLF: `wc -l`,
# `tail -n +N`, `sed -n Np`, `docker logs` and the host's `tail` (remote.logs_command) end a line at LF only, and so
# does a page of `onechip logs --offset N`, whichever source it is read from
MIXED_ENDINGS = b"shards:   0% | 0/2\rshards:  50% | 1/2\rshards: 100% | 2/2\nINFO ready\r\nERROR \x0c late\n"
LF_LINES = ["shards:   0% | 0/2\rshards:  50% | 1/2\rshards: 100% | 2/2", "INFO ready", "ERROR \x0c late"]


def test_every_source_of_a_log_splits_it_into_the_same_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: the local file was read with universal newlines (a lone CR ended a line: 5 lines), ssh's and docker's
    # output at LF (3 lines, the CRLF line keeping its CR), so line numbers and `--offset` pages differed by source
    log = tmp_path / "engine.log"
    log.write_bytes(MIXED_ENDINGS)
    fake_docker(tmp_path, monkeypatch, f"#!/bin/sh\ncat {log}\n")
    local = list(state.log_lines(state=engine_state(log_path=str(log))))
    host = list(state.log_lines(state=engine_state(mode="remote-process", remote_log=str(log))))
    container = list(state.log_lines(state=engine_state(mode="docker", container="c1")))
    assert local == host == container == LF_LINES


def test_down_of_a_host_engine_already_gone_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: `down` of an engine on a host (this machine's shell here) or in a container whose process had already
    exited said 'stopped process group N' / 'stopped container C', as the local `down` says 'engine was already
    gone' (its stop script exited 0 both ways); it says what happened, and stops and says so for one still running."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    gone = engine_state(mode="remote-process", remote_pid=DEAD_PID, remote_log=str(tmp_path / "engine.log"))
    state.save(gone)
    assert state.down().note == f"process group {DEAD_PID} on this machine was already gone; tunnel closed"
    fake_docker(tmp_path, monkeypatch, '#!/bin/sh\n[ "$1" = inspect ] && echo false\nexit 0\n')  # exited: not running
    state.save(engine_state(mode="docker", container="c1"))
    assert state.down().note == "container c1 on this machine was already gone; tunnel closed"
    # a group leader that is not this process's child (a child of ours would stay a zombie that `kill -0` still finds)
    spawn = "setsid sleep 30 > /dev/null 2>&1 < /dev/null & echo $!"
    running = int(subprocess.run(["bash", "-c", spawn], capture_output=True, text=True, check=True).stdout)
    try:
        state.save(gone.model_copy(update={"remote_pid": running, "remote_pid_started": start_ticks(running)}))
        assert state.down(grace_s=5).note == f"stopped process group {running} on this machine; tunnel closed"
        assert not group_alive(running)
    finally:
        if group_alive(running):
            os.killpg(running, signal.SIGKILL)


# what docker prints (stderr, exit 1) when `docker inspect` cannot reach its daemon, and of a container removed
NO_DAEMON = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
NO_OBJECT = "Error: No such object: c1"


def test_down_of_a_container_docker_cannot_read_keeps_it_on_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `docker inspect` failing for any reason read as 'not running', so with the daemon out of reach (or
    sudo refused) `down` said 'container c1 on this machine was already gone' and forgot a container that may run on.
    Only docker's word that it has no such container is 'gone'."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    docker = fake_docker(tmp_path, monkeypatch, f'#!/bin/sh\necho "{NO_DAEMON}" >&2\nexit 1\n')
    kept = engine_state(mode="docker", container="c1")
    state.save(kept)
    with pytest.raises(EngineError, match=f"not stopped \\(local shell: {re.escape(NO_DAEMON)}\\); it stays on record"):
        state.down()
    assert state.load() == kept
    docker.write_text(f'#!/bin/sh\n[ "$1" = inspect ] && {{ echo "{NO_OBJECT}" >&2; exit 1; }}\nexit 0\n')
    assert state.down().note == "container c1 on this machine was already gone; tunnel closed"
    assert state.load() is None


def test_a_log_is_redacted_reading_the_secrets_once_not_once_a_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # errors.redact reads the whole environment for its secrets (_secret_values): 100 us a line, 100 s of a
    # 1,000,000-line `logs`; one read of a log takes them once, whichever source it comes from
    from onechip import errors

    reads: list[int] = []
    secrets = errors._secret_values
    monkeypatch.setattr(errors, "_secret_values", lambda: reads.append(1) or secrets())
    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 34)
    log = tmp_path / "engine.log"
    log.write_text(f"INFO serving with hf_{'x' * 34}\n" * 1_000)
    local = list(state.log_lines(state=engine_state(log_path=str(log))))
    host = list(state.log_lines(state=engine_state(mode="remote-process", remote_log=str(log))))
    assert local == host == ["INFO serving with ***"] * 1_000 and len(reads) <= 4


# An engine whose log is rotated while `logs --follow` reads it: logrotate's 'create' (the file renamed, a new one made
# at its name) and 'copytruncate' (the file copied, then cut to 0 where the engine goes on writing)
# Each step waits for a file the test makes once the follow has read the line before it (`log`.go1, .go2): sleeps of
# 1.2 s and 1.5 s raced the follow's 0.5 s polls on a loaded machine ('before' cut by copytruncate before it was read,
# the engine gone before its rotation was seen).
ROTATING = """import os, sys, time
log, how = sys.argv[1], sys.argv[2]
def write(text, mode="a"):
    with open(log, mode) as out:
        out.write(text + "\\n")
def wait_go(n):
    while not os.path.exists(log + ".go" + n):
        time.sleep(0.01)
write("before")
wait_go("1")
if how == "create":
    os.rename(log, log + ".1")
    write("after", "w")
else:
    os.truncate(log, 0)
    write("after")
wait_go("2")
"""


@pytest.mark.parametrize("how", ["create", "copytruncate"])
def test_logs_follow_goes_on_reading_a_log_rotated_under_it(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: the local follow read the file it had opened: a renamed one for good, a truncated one past its end, so
    # 'after' never came, where the host's follow (`tail -F`, remote.logs_command) reads the file now at the name
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    log.write_text("")
    engine = subprocess.Popen([sys.executable, "-c", ROTATING, str(log), how], start_new_session=True)
    state.save(engine_state(pid=engine.pid, pid_started=start_ticks(engine.pid), log_path=str(log)))
    seen: list[str] = []

    def follow() -> None:
        with contextlib.suppress(EngineError):  # the engine exits: the follow ends
            for line in state.log_lines(follow=True):  # each as read: the engine's steps wait on them
                seen.append(line)

    def read(lines: list[str]) -> None:
        deadline = time.monotonic() + 10
        while seen != lines and time.monotonic() < deadline:
            time.sleep(0.05)
        assert seen == lines

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    try:
        read(["before"])
        Path(f"{log}.go1").touch()  # rotate, while the follow reads the file it opened
        said = [f"onechip: {log}: file truncated; reading it from its start"] if how == "copytruncate" else []
        read(["before", *said, "after"])
    finally:
        Path(f"{log}.go2").touch()
        engine.wait()
    reader.join(timeout=10)
    assert not reader.is_alive() and seen == ["before", *said, "after"]


def test_logs_follow_across_down_ends_without_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`logs --follow` in one shell, `down` in another: the follow ends as `tail -F --pid` and `docker logs -f` end
    with what they followed (exit 0). Before: 'the engine (pid N) exited; its last lines are above (`onechip down`
    clears its record)', exit 5, of an engine `down` had stopped and whose record it had already cleared."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    code = "import time; print('ready', flush=True); time.sleep(60)"
    with log.open("w") as out:
        engine = subprocess.Popen([sys.executable, "-c", code], stdout=out, start_new_session=True)
    state.save(engine_state(pid=engine.pid, pid_started=start_ticks(engine.pid), log_path=str(log)))
    seen: list[str] = []
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            for line in state.log_lines(follow=True):  # each as read: the test waits for the first
                seen.append(line)
        except EngineError as exc:
            failed.append(exc)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    deadline = time.monotonic() + 10
    while not seen and time.monotonic() < deadline:  # following: 'ready' read
        time.sleep(0.05)
    try:
        assert state.down(grace_s=5).note.startswith(f"stopped engine pid {engine.pid}")
    finally:
        engine.kill()
        engine.wait()
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert seen == ["ready"] and failed == [], failed
