"""The record `onechip up` keeps of a detached engine, so `status`, `logs` and `down` work from another shell.

Modes (EngineState.mode): 'process' (a local process group: the embedded engine or local vLLM),
'remote-process' (a process group on an SSH host, reached through a local ssh tunnel) and 'docker'
(a container, local or on an SSH host). Remote modes delegate to engines.remote.
"""

from __future__ import annotations

import bz2
import codecs
import contextlib
import gzip
import io
import lzma
import os
import queue
import re
import stat
import subprocess
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Protocol, TextIO
from urllib.parse import urlsplit

from pydantic import ValidationError

from onechip.engines import port_claims, remote
from onechip.engines.base import Engine
from onechip.engines.local import await_writers, group_alive, group_ours, remove_rpc_dir, stop_group
from onechip.errors import (
    HOLD_AHEAD_S,
    EngineError,
    LinesRedactor,
    OnechipError,
    lines_redactor,
    os_error_line,
    remember_secret,
)
from onechip.paths import exclusive, held, onechip_home, read_home_file, write_text_atomic
from onechip.procs import start_ticks
from onechip.progress import ProgressFn, no_progress
from onechip.schemas import EngineState, EngineStatus
from onechip.schemas.common import by_newer, newer_schema
from onechip.vllm import log_summary, wire

MODES = ("process", "remote-process", "docker")  # EngineState.mode values this onechip can find and stop


def state_path() -> Path:
    return onechip_home() / "engine.json"


def last_path() -> Path:
    """Where `down` keeps the record of the engine it stopped: `logs` still finds that engine's log."""
    return onechip_home() / "engine.last.json"


def lock_path() -> Path:
    return onechip_home() / "engine.lock"


NOTHING_RUNNING = "no engine was running"  # what `down` says with no engine on record


def locked() -> AbstractContextManager[None]:
    """The engine-state lock ($ONECHIP_HOME/engine.lock, paths.exclusive): `up` holds it from its first
    check to the saved state, `down` while it stops and forgets; a second holder gets BusyError at once."""
    return exclusive(
        lock_path(),
        f"another onechip `up` or `down` is changing the engine state in {onechip_home()}; wait for it, then "
        "`onechip status`",
    )


def save(state: EngineState) -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, state.model_dump_json(indent=2))


def save_booting(engine: Engine) -> None:
    """Record `engine` as booting (EngineState.booting) as soon as its process, container or remote process group
    exists, before `up` waits for it to answer: an `up` killed meanwhile (SIGKILL, OOM, a closed terminal) left an
    engine running that `status` called "no engine" and `down` could not stop. A local engine with no pid yet is not
    recorded (pid 0 would be this process's own group)."""
    state = engine.state()
    if state.mode == "process" and not state.pid:
        return
    state.booting = True
    save(state)


def serving_despite(exc: OSError, url: str) -> EngineError:
    """The one line of an `up` whose engine serves at `url` and is on record (its booting record at least, which
    `status` and `down` read), but a write after it was ready failed (`exc`: a full disk): 'PATH: No space left on
    device' alone read as if nothing ran, and the engine served on unmentioned."""
    return EngineError(
        f"{os_error_line(exc)}; the engine is serving at {url} all the same, and on record: `onechip status` shows "
        "it, `onechip down` stops it"
    )


class _Record(Protocol):
    """A saved record that may still be booting: EngineState, replicas.ReplicaSetState."""

    @property
    def booting(self) -> bool: ...


def forget_booting() -> None:
    """Remove the booting record save_booting left, once `up` stopped its engine (a failed boot): nothing is left to
    `down`. A ready record, or one unreadable, is kept. Never raises: it runs while the boot's own error propagates."""
    forget_if_booting(load, state_path())


def forget_if_booting(read: Callable[[], _Record | None], path: Path) -> bool:
    """Delete `path` when the record `read()` gives is booting; whether it did. A ready record, none, or one
    unreadable (OnechipError) is kept. The one rule of forget_booting here and in replicas."""
    try:
        state = read()
    except OnechipError:
        return False
    if state is None or not state.booting:
        return False
    path.unlink(missing_ok=True)
    return True


def load() -> EngineState | None:
    """The saved state, or None when `up` left none. Raises EngineError when the file is unreadable, or records
    an engine of a mode this onechip does not know (MODES): treating it as "no engine" or as a host engine would
    lose track of one that may still be running; ConfigError when it is not a regular file (paths.read_home_file: a
    FIFO there is never waited on)."""
    path = state_path()
    try:
        state = EngineState.model_validate_json(read_home_file(path))
    except FileNotFoundError:
        return None
    except ValidationError as exc:
        raise EngineError(unread_state(f"engine state {path}", exc, "a vLLM server, stop it")) from None
    except (OSError, ValueError):
        raise EngineError(
            f"engine state {path} is unreadable; check `ps` for a vLLM server, stop it, then delete the file"
        ) from None
    refuse_unknown_modes([state], f"engine state {path}")
    return state


def unread_state(record: str, exc: ValidationError, engines: str) -> str:
    """Why `record` ("engine state PATH") is not read, one line: a newer onechip wrote it (its engines are that one's
    to stop: the record is kept), or it is no engine state (a schema_version that is no version said: check `ps`
    for `engines`, then delete it)."""
    why = newer_schema(exc)
    if why is not None and by_newer(exc):
        return f"{record} was written by a newer onechip: {why}"
    return f"{record} is unreadable{f': {why}' if why else ''}; check `ps` for {engines}, then delete the file"


def refuse_unknown_modes(states: Iterable[EngineState], record: str) -> None:
    """Raise EngineError when one of `states` (read from `record`, e.g. "engine state PATH") is of a mode this
    onechip does not know (MODES): read as a host engine, `down` would "stop" nothing and forget it."""
    for state in states:
        if state.mode not in MODES:
            raise EngineError(
                f"{record} records a '{state.mode}' engine, which this onechip does not know (a newer onechip "
                "wrote it?); use that onechip's `status`/`down`"
            )


def note_token_file(path: Path | str) -> None:
    """Record in the saved state which token file `up` read, so `logs` (another process) redacts its token."""
    state = load()
    if state is not None:
        state.token_file = str(Path(path).expanduser())
        save(state)


def _remember_token(state: EngineState) -> None:
    """Make the token of the file `up` read a known secret of this process (errors.redact)."""
    if state.token_file is None:
        return
    try:
        text = Path(state.token_file).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return
    if text:
        remember_secret(text.splitlines()[0].strip())


def remember_stopped(engine: Engine) -> None:
    """Record an engine that was launched and then stopped without becoming ready (a failed or interrupted `up`) as
    the one stopped last, so that `logs` shows its log as it shows one `down` stopped: a local process with its pid,
    a container or host engine once its start began (its log mirror's local copy). Never raises: it runs while the
    boot's own error propagates."""
    try:
        state = engine.state()
    except EngineError:  # never started
        return
    if state.pid if state.mode == "process" else state.started_at:
        try:
            write_text_atomic(last_path(), state.model_dump_json(indent=2))
        except OSError:
            return


def _last_stopped() -> EngineState | None:
    """The engine `down` stopped last (None when there is none, the record is unreadable or of a mode this onechip
    does not know)."""
    try:
        state = EngineState.model_validate_json(read_home_file(last_path()))
    except (OSError, ValueError):
        return None
    return state if state.mode in MODES else None


def _logged() -> tuple[EngineState, bool]:
    """The engine whose log `logs` reads, and whether it is the one `down` stopped (engine.last.json) rather than
    the one on record. Raises EngineError when `up` started none."""
    state = load()
    if state is not None:
        return state, False
    state = _last_stopped()
    if state is None:
        raise EngineError("no engine started by `onechip up`")
    return state, True


def _host_alive(state: EngineState) -> tuple[bool, str]:
    return remote.host_status(state)


def engine_alive(state: EngineState) -> bool:
    """The recorded local engine's process group exists AND its leader is the process `up` started: after a
    reboot the pid may belong to something else, which `down` must never signal. The leader's start time
    (EngineState.pid_started) says so whatever the serve program is called (`up --launcher` runs any); a record
    from before it was kept falls back to the leader's command line naming vllm. A leader that is this process's
    own child (`up` in the MCP server) and has died is reaped first: a zombie's group still answers signals."""
    try:
        os.waitpid(state.pid, os.WNOHANG)
    except ChildProcessError:  # not our child (`up` ran in another process), or already reaped
        pass
    if not group_alive(state.pid):
        return False
    started = start_ticks(state.pid)
    if started is None:  # the leader is gone but members remain: still our group (vLLM's EngineCore)
        return True
    if state.pid_started is not None:
        return started == state.pid_started
    try:
        cmdline = Path(f"/proc/{state.pid}/cmdline").read_bytes().replace(b"\0", b" ")
    except OSError:
        return True
    return b"vllm" in cmdline


def log_writer_note(state: EngineState) -> str:
    """The one line `status` and `logs` say when the log writer `state` records (EngineState.log_writer_pid: a local
    engine's, onechip.logpump, or the one of a host engine's log mirror) is gone while what it copies runs on (killed:
    SIGKILL, the out-of-memory killer): its log no longer grows, and nothing else says so. '' when it runs, the engine
    (a host engine's mirror) does not, or none is recorded (an older record)."""
    pid = state.log_writer_pid
    if pid is None or group_ours(pid, state.log_writer_started):
        return ""
    if state.mode == "process":
        if not engine_alive(state):
            return ""
        return (
            f"the log writer (pid {pid}) is gone: {state.log_path} no longer grows while the engine serves on; "
            "`onechip down` and `onechip up` again to log anew"
        )
    if state.mirror_pid is None or not group_ours(state.mirror_pid, state.mirror_started):
        return ""
    return (
        f"the log writer (pid {pid}) is gone: {state.log_path} no longer grows (the local copy of the engine's log "
        "that `logs` reads after `down`); `onechip down` and `onechip up` again to keep it anew"
    )


def stop_local(state: EngineState, grace_s: float, on_progress: ProgressFn = no_progress) -> None:
    """Stop the local engine `state` records (its process group: local.stop_group), then wait for its log writer to
    write its last lines and exit (await_log_writers): `logs` right after `down` has them."""
    stop_group(state.pid, grace_s, on_progress)
    await_log_writers([state])


def await_log_writers(states: Iterable[EngineState]) -> None:
    """Wait for the log writers of the engines `states` record, stopped (a local engine's, a host engine's mirror's), to
    write their last lines and exit: all together, at most local.LOG_SYNC_S in all (local.await_writers)."""
    await_writers((s.log_writer_pid, s.log_writer_started) for s in states if s.log_writer_pid is not None)


def status() -> EngineStatus:
    """Health, model, port and uptime of the engine `up` started, if any."""
    state = load()
    if state is None and held(lock_path()):  # an `up` before its engine exists (planning, pulling), or a `down`
        return EngineStatus(running=False, note=(
            f"an `onechip up` or `down` holds the engine lock ({lock_path()}), so an engine may be starting; "
            "run `onechip status` again in a moment"
        ))  # fmt: skip
    if state is None:
        return EngineStatus(running=False, note="no engine started by `onechip up`")
    note = ""
    if state.mode != "process":
        alive, note = _host_alive(state)
        if not alive and state.booting:  # a container is recorded before `docker run` (remote.HostEngine.start)
            which = f"container {state.container}" if state.mode == "docker" else remote.pid_words(state)
            note = note or (f"{which} does not run: the `up` that recorded it may still be starting it (an image "
                            "pull); if that `up` was stopped, it died while booting or was never started, and "
                            "`onechip down` clears it")  # fmt: skip
            return EngineStatus(running=False, state=state, note=note)
        if not alive:
            note = note or "engine is gone on its host (stale state)"
            return EngineStatus(running=False, state=state, note=note)
    elif not engine_alive(state):
        if state.booting:
            note = f"engine pid {state.pid} died while booting (stale state); `onechip down` clears it"
            return EngineStatus(running=False, state=state, note=note)
        return EngineStatus(running=False, state=state, note="engine process is gone (stale state)")
    healthy = wire.healthy(state.base_url, timeout_s=3.0)
    if state.booting:
        which = f"pid {state.pid}" if state.mode == "process" else state.container or remote.pid_words(state)
        booting = f"booting ({which}): `up` has not seen it ready; if that `up` was stopped, `onechip down` stops it"
        if healthy:  # an orphan that finished booting after its `up` was killed answers, with no boot.json
            booting = (f"serving ({which}, /health answers) but `up` has not seen it ready: if that `up` was stopped, "
                       "no boot record was kept; `onechip down` stops it")  # fmt: skip
        note = f"{booting}; {note}" if note else booting
    note = "; ".join(words for words in (note, log_writer_note(state)) if words)
    try:
        uptime: float | None = round((datetime.now(UTC) - datetime.fromisoformat(state.started_at)).total_seconds(), 1)
    except ValueError:
        uptime = None
    return EngineStatus(running=True, healthy=healthy, state=state, uptime_s=uptime, note=note)


def down(grace_s: float = 20.0, on_progress: ProgressFn = no_progress) -> EngineStatus:
    """Stop the engine `up` started and forget it. Idempotent: no engine is not an error. Raises BusyError
    while an `up` is starting (it holds the lock; stop that one with Ctrl-C). `on_progress` hears the SIGTERM grace
    (local.stop_group). With no record and no `up` holding the lock (paths.held: asking takes no lock) it takes none
    and writes nothing: taking it creates engine.lock, and on a home that cannot be written (a read-only mount) a
    `down` with nothing to stop said 'HOME/engine.lock: Read-only file system', exit 1."""
    if load() is None and not held(lock_path()):
        return EngineStatus(running=False, note=NOTHING_RUNNING)
    with locked():
        return _down(grace_s, on_progress)


def _down(grace_s: float, on_progress: ProgressFn) -> EngineStatus:
    state = load()
    if state is None:
        return EngineStatus(running=False, note=NOTHING_RUNNING)
    if state.mode != "process":
        where = state.host or "this machine"
        try:
            stopped = remote.stop_host_engine(remote.shell_for(state), state, grace_s)
        except EngineError as exc:  # the record stays: it is all that finds the engine once the host answers
            raise EngineError(
                f"engine on {where}: not stopped ({exc}); it stays on record: run `onechip down` again once {where} "
                "answers"
            ) from None
        remote.stop_tunnel(state)
        await_log_writers([state])  # the mirror's last lines in its local copy
        # `logs` reads the local copy the mirror kept (log_path), as a local engine's file: the container (docker
        # rm -f) or the host may have its log no more
        kept = keep_last(last_path(), state.model_dump_json(indent=2))
        state_path().unlink(missing_ok=True)
        what = (
            f"process group {state.remote_pid}"
            if state.remote_pid is not None
            else f"the process group in {remote.pid_path(state)}"
        )
        if state.mode == "docker":
            what = f"container {state.container}"
        said = f"stopped {what} on {where}" if stopped else f"{what} on {where} was already gone"
        said = f"{said}; tunnel closed"
        return EngineStatus(running=False, state=state, note=f"{said}; {kept}" if kept else said)
    was_alive = engine_alive(state)
    if was_alive:
        stop_local(state, grace_s, on_progress)
    remove_rpc_dir(state.ipc_dir)
    release_claim(state)
    kept = keep_last(last_path(), state.model_dump_json(indent=2))
    state_path().unlink(missing_ok=True)
    note = f"stopped engine pid {state.pid}" if was_alive else "engine was already gone; state cleared"
    return EngineStatus(running=False, state=state, note=f"{note}; {kept}" if kept else note)


def release_claim(state: EngineState) -> None:
    """Release the port claim (port_claims) of the local engine `state` records, once it is stopped: only the `up`
    process's own stop() released it, so each `down` from another shell left one behind. Never raises."""
    url = urlsplit(state.base_url)
    try:
        port = url.port
    except ValueError:  # a hand-edited record: no claim to find
        return
    if url.hostname and port:
        port_claims.release(url.hostname, port, state.pid)


def keep_last(path: Path, text: str) -> str:
    """Write the record of what `down` stopped to `path` (`logs` finds its log there afterwards): '', or a note saying
    it was not kept (a full disk). `down` goes on to forget the engine it stopped: raising here left the record of
    an engine already stopped, and every `down` again failed the same way while the disk stayed full."""
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        return f"the record `logs` reads afterwards was not kept ({os_error_line(exc)})"
    return ""


def _exited(which: str) -> EngineError:
    """What `logs --follow` says when the engine it followed has exited (`which`: 'pid N' or 'container NAME')."""
    return EngineError(f"the engine ({which}) exited; its last lines are above (`onechip down` clears its record)")


def _still_recorded(followed: EngineState) -> bool:
    """Whether the record of the engine `up` started still names `followed`, once an `up` or `down` changing it is done
    (its lock is free; a `down` holds it from the stop to the cleared record, at most its SIGTERM grace and a SIGKILL):
    an engine that exited on record crashed, one no longer on record was stopped by `down` (or by the `up` that gave it
    up, which says why itself). An unreadable record counts as still naming it."""
    deadline = time.monotonic() + 60
    while held(lock_path()) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        now = load()
    except OnechipError:
        return True
    same = ("mode", "pid", "pid_started", "container", "host", "remote_pid", "started_at")
    return now is not None and all(getattr(now, name) == getattr(followed, name) for name in same)


def _host_log_lines(state: EngineState, follow: bool) -> Iterator[str]:
    """The log of an engine on an SSH host or in a container (remote.logs_command, which merges the log's own stderr),
    redacted. What ssh itself says goes apart: when ssh fails (exit 255: the host did not answer, or refused the
    login), that is an EngineError naming the host, never a line of the engine's log. When the reader fails (`tail` of
    a log not there, `docker logs` of a container removed or a daemon not running: any other non-zero exit), that is
    an EngineError with its last words (docker's are already among the lines, its stderr merged with the container's
    by logs_command). Raises EngineError also when ssh (or bash) is not installed."""
    shell = remote.shell_for(state)
    last = ""  # the last line read: a failed `docker logs` says why there (logs_command merges its stderr)
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: nothing blocks while stdout is read
        try:
            proc = subprocess.Popen(  # noqa: S603
                shell.argv(remote.logs_command(state, follow)),
                stdout=subprocess.PIPE,
                stderr=errors,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError as exc:
            raise EngineError(f"cannot run {exc.filename}: not installed") from None
        with proc:
            assert proc.stdout is not None
            try:  # its lines as a local file's (log_summary.read_lines: LINE_END, MAX_LINE_CHARS), never one held whole
                text = io.TextIOWrapper(proc.stdout, encoding="utf-8", errors="replace", newline=log_summary.LINE_END)
                for line in _held_ahead(log_summary.read_lines(text), lines_redactor()):
                    last = line
                    yield line
                # read to its end: its exit status says whether it read the log (terminated below, it would say
                # nothing, the race by which a failed read was now an error, now lines and exit 0)
                proc.wait()
            finally:
                if proc.poll() is None:
                    proc.terminate()
        if proc.returncode == 0 or proc.returncode < 0:  # done, or ended by us (a follow interrupted)
            return
        errors.seek(0)
        # in order, so a secret ssh's words wrapped is hidden on both lines
        said = [
            line for line in lines_redactor().each(errors.read().decode(errors="replace").splitlines()) if line.strip()
        ]
    if proc.returncode == 255 and state.host:  # ssh's own exit status: no log was read
        raise EngineError(
            f"cannot read the engine log on {state.host}: {shell.where()}: {(said or ['exit code 255'])[-1][:300]}; "
            f"run `onechip logs` again once {state.host} answers"
        )
    why = (said or [last.strip()])[-1] or f"exit code {proc.returncode}"
    raise EngineError(f"cannot read the engine log of {log_source(state)}: {why[:300]}")


def _held_ahead(lines: Iterator[str], hidden: LinesRedactor) -> Iterator[str]:
    """`lines`, a pipe's, read as they come, redacted by `hidden` each with the line after it where that comes within
    HOLD_AHEAD_S, else alone (LinesRedactor.held, release): a line read ahead must not wait on a quiet pipe (a
    follow's `tail -F`), so a thread reads the pipe into a queue the caller waits on for that long. Raises what
    reading raises."""
    # at most 1,024 lines (each at most log_summary.MAX_LINE_CHARS) read before the caller takes them: the thread
    # waits, as the pipe does, and a `tail -n +1` of a long log is never held whole
    got: queue.Queue[tuple[str | None, BaseException | None]] = queue.Queue(maxsize=1024)
    done = threading.Event()  # the caller stopped (a follow interrupted): the thread puts no more

    def put(item: tuple[str | None, BaseException | None]) -> None:
        while not done.is_set():
            with contextlib.suppress(queue.Full):
                got.put(item, timeout=HOLD_AHEAD_S)
                return

    def read() -> None:
        try:
            for line in lines:
                put((line, None))
        except Exception as exc:  # noqa: BLE001 - handed to the caller, which raises it
            put((None, exc))
            return
        put((None, None))

    threading.Thread(target=read, name="onechip-log-reader", daemon=True).start()
    try:
        while True:
            try:
                line, failed = got.get(timeout=HOLD_AHEAD_S if hidden.waiting is not None else None)
            except queue.Empty:  # none came after it in time: shown as it is
                yield from hidden.release()
                continue
            if line is None:
                yield from hidden.release()
                if failed is not None:
                    raise failed
                return
            yield from hidden.held([line])
    except KeyboardInterrupt:  # a Ctrl-C as it waits: the line held was written before it, shown as `tail -f` shows it
        yield from hidden.release()
        raise
    finally:
        done.set()


def log_source(state: EngineState | None = None) -> str:
    """Where log_lines reads the log of the engine `up` started (or of `state`) from, as a summary names it: the local
    file, 'HOST:PATH' of an engine over SSH (the host's file `tail` reads: remote.logs_command; log_path is only the
    local mirror), 'container NAME[ on HOST]' of a docker engine. After `down`, the engine it stopped, read from its
    local file (a remote engine's mirror). Raises EngineError as log_lines does when no engine was started."""
    stopped = False
    if state is None:
        state, stopped = _logged()
    if stopped or state.mode == "process":
        return state.log_path
    if state.mode == "docker":
        return f"container {state.container_id or state.container}" + (f" on {state.host}" if state.host else "")
    return f"{state.host}:{state.remote_log or remote.REMOTE_LOG}" if state.host else state.remote_log or ""


# How often a follow of a local log reads what was written since (GNU tail -f reads every 1 s: coreutils tail
# --sleep-interval's default); the last line of a read waits for the next read at most this long (LinesRedactor.held)
FOLLOW_POLL_S = HOLD_AHEAD_S


def log_lines(follow: bool = False, state: EngineState | None = None) -> Iterator[str]:
    """The engine log of the engine `up` started (or of `state`: one replica), line by line, secrets
    redacted; with `follow`, keep reading until interrupted or the engine exits. After `down`, the log of the engine
    it stopped (still on disk: a remote engine's is the local copy its log mirror kept, EngineState.log_path, as its
    container or host may have it no more). A follow of the engine on record ends with it when `down` stops it (as
    `tail -F --pid` and `docker logs -f` end). Raises EngineError when no engine was started, when the log is gone,
    or when a followed engine exits on its own (it stays on record)."""
    stopped, recorded = False, state is None  # recorded: the engine on record, not one given (a replica)
    if state is None:
        state, stopped = _logged()
        follow = follow and not stopped  # a stopped engine writes no more
    _remember_token(state)
    if state.mode != "process" and not stopped:
        yield from _host_log_lines(state, follow)
        if follow and not _host_alive(state)[0]:
            if recorded and not _still_recorded(state):  # `down` stopped it: the follow ends with it
                return
            where = f" on {state.host}" if state.host else ""
            raise _exited(
                f"container {state.container}{where}" if state.mode == "docker" else f"{remote.pid_words(state)}{where}"
            )
        return
    path = Path(state.log_path)
    if not path.is_file() and state.mode != "process":
        which = f"container {state.container}" if state.mode == "docker" else remote.pid_words(state)
        raise EngineError(
            f"the engine ({which}) is down (`onechip down` stopped it): its log was read from {log_source(state)}, "
            f"and the local copy {path} is gone"
        )
    if not path.is_file():
        raise EngineError(f"engine log {path} is gone (removed, or the state in {state_path()} is stale)")
    # each line at most log_summary.MAX_LINE_CHARS (read_lines): a line of hundreds of MB (an engine printing a
    # tensor, or writing without newlines) was read and redacted whole, and sent whole as a `logs` tool result
    # the secrets read once (the token `up` read is remembered above), not once a line; the lines read in order, so a
    # PEM body and a secret cut by a wrap are hidden too (errors.lines_redactor)
    hidden = lines_redactor()
    handle = _open_log(path, follow)
    held: list[str] = []  # a last line read before the engine ended it (_ended_lines)
    copies = _copies(path) if follow else {}
    seen = set(copies)  # the rotated copies there now: none of them is read (_past_rotations)
    heads: set[bytes] = set()  # nor a compressed copy of one (_past_rotations)
    for copy in copies.values():
        with contextlib.suppress(OSError):  # removed since it was listed
            heads.update([_head(copy)] if _packed(copy) is None else [])
    try:
        while True:
            # to the end of what is written; a last line not ended yet is held for the next read (_ended_lines)
            if not follow:
                yield from hidden.each(_ended_lines(handle, held, final=True))
                return
            # and the last line ended waits for the next read's first, which may finish a secret it began (a wrap's two
            # lines written in two reads), up to the next poll where none came (FOLLOW_POLL_S late at most)
            if not (yield from hidden.held(_ended_lines(handle, held, final=False))):
                yield from hidden.release()
            if not engine_alive(state):  # it writes no more: say so, rather than wait for lines forever
                yield from hidden.each(_ended_lines(handle, held, final=True))  # what it wrote as it died
                # rotated before it died (read after the death, so no rotation is missed): then the file now at its name
                if _moved(path, handle):
                    handle = yield from _past_rotations(path, handle, hidden, seen, heads)
                    yield from hidden.each(log_summary.read_lines(handle))
                if recorded and not _still_recorded(state):  # `down` stopped it: the follow ends, as `tail --pid`
                    return
                raise _exited(f"pid {state.pid}")
            if gone := log_writer_note(state):  # it writes on, but its log grows no more: say so, as `status` does
                yield from hidden.each(_ended_lines(handle, held, final=True))
                raise EngineError(gone)
            time.sleep(FOLLOW_POLL_S)
            looked = set(_copies(path))  # before _moved: if the file is still at its name, these came before
            if _moved(path, handle):  # rotated: the rest of the old file, then the one now at its name
                yield from hidden.each(_ended_lines(handle, held, final=True))  # its last line: ended by the move
                handle = yield from _past_rotations(path, handle, hidden, seen, heads)
                looked = set(_copies(path))
            elif os.fstat(handle.fileno()).st_size < handle.tell():  # cut shorter than what was read: from its start
                # a last line not ended: as it was, the copy has the rest
                yield from hidden.each(line for line in held if line != _READ_PAST)
                held.clear()
                handle.seek(0)  # (copytruncate: its copy is of what was read; GNU tail -F says 'file truncated' too)
                yield hidden(f"onechip: {path}: file truncated; reading it from its start")
            seen = looked
    except KeyboardInterrupt:  # a Ctrl-C in a poll: the line held for the next read was written before it, shown
        yield from hidden.release()
        raise
    finally:
        handle.close()


def _ended_lines(handle: TextIO, held: list[str], final: bool) -> Iterator[str]:
    """The lines log_summary.read_lines gives of `handle`, but a last line without its end, which the engine may be
    writing still: put in `held` (empty, or that one line's start) and given whole, `held` first, by the read after
    its end came, as `tail -f` shows a line as it comes; read_lines gave it at once and its rest as another line at
    the next read (one line shown cut in two). `final` (the engine dead, the file moved or a read that does not
    follow): the line held and any not ended are given as they are. A line of MAX_LINE_CHARS or more is cut there
    as read_lines cuts it, and its rest read past up to its end, in the reads after this one too (held is _READ_PAST
    meanwhile): a rest the engine wrote after the read that cut the line was shown as a line of its own."""
    limit = log_summary.MAX_LINE_CHARS
    if final and isinstance(whole := getattr(handle.buffer, "raw", None), _WholeCharacters):
        whole.final = True  # a character's first bytes at the end of what is written now are all it will have
    while piece := handle.readline(limit):
        if held == [_READ_PAST]:  # the rest of a line cut at the limit
            if piece.endswith("\n"):
                held.clear()
            continue
        line = held.pop() + piece if held else piece
        if line.endswith("\n"):
            yield line[:-1].removesuffix("\r")[:limit]
            continue
        if len(line) < limit and not final:
            held.append(line)
            return
        yield line[:limit]
        held.append(_READ_PAST)
    if final and held and (line := held.pop()) != _READ_PAST:
        yield line


# What _ended_lines holds while it reads past the rest of a line cut at MAX_LINE_CHARS: a line end, which no line it
# holds ends with (it holds a line not ended)
_READ_PAST = "\n"


def _past_rotations(
    path: Path, handle: TextIO, hidden: LinesRedactor, seen: set[int], heads: set[bytes]
) -> Generator[str, None, TextIO]:
    """Yield the rest of the rotated file `handle` reads (its descriptor reads it under any name, or none: renamed,
    removed or compressed away), then every rotated copy of `path` that is new (_copies: an inode not in `seen`, the
    copies there at the follow's last look while the file was at its name, nor `handle`'s nor the file now at `path`),
    oldest first (last written first): two rotations between a follow's checks made a middle file, which going straight
    to the name skipped. Redacted by `hidden`; return the file now at `path` opened (_reopened). Which copy came after
    the held file is told by inode, never by name or time: a copy there before, written since by someone else, was
    replayed.

    A compressed copy is a new file (a new inode) of a rotated one's text, made as logrotate(8) says: with `compress`,
    'Old versions of log files are compressed with gzip(1) by default', the file just rotated (.1.gz: the held file);
    with `delaycompress` too, 'Postpone compression of the previous log file to the next rotation cycle', the copy
    rotated the time before (.2.gz). Either is of a file read already (the held one, a middle one) or there at the
    follow's start, told by its first HEAD_BYTES decompressed (`heads`: those files' first bytes): not read again. One
    of a file no look saw, a middle rotation compressed at once (`compress` twice between two looks), is said in one
    line naming the copy and the tool that prints it (zcat), as is one in a format read by no module here (zstd, lz4):
    its lines are not shown (silently skipped before)."""
    yield from hidden.each(log_summary.read_lines(handle))
    heads.add(os.pread(handle.fileno(), HEAD_BYTES, 0))
    try:
        now = path.stat().st_ino
    except FileNotFoundError:
        now = None
    skip = seen | {os.fstat(handle.fileno()).st_ino, now}
    middle: list[tuple[int, Path, tuple[str, str] | None]] = []
    for inode, copy in _copies(path).items():
        try:
            if inode in skip:
                continue
            packed = _packed(copy)
            if packed is None or not _read_before(copy, packed[0], heads):
                middle.append((copy.stat().st_mtime_ns, copy, packed))
        except OSError:  # removed since it was listed (a third rotation's cleanup): nothing to read
            continue
    for _, copy, packed in sorted(middle, key=lambda found: found[0]):
        if packed is not None:
            yield hidden(
                f"onechip: {copy}: a rotated copy, {packed[0]}-compressed, that this follow did not read; its lines "
                f"are not shown here: {packed[1]} {copy}"
            )
            continue
        try:
            rotated = _open_log(copy)
        except FileNotFoundError:
            continue
        with rotated:
            heads.add(os.pread(rotated.fileno(), HEAD_BYTES, 0))
            yield from hidden.each(log_summary.read_lines(rotated))
    return _reopened(path, handle)


# A rotated copy's name: the log's, then '.', '-' or '_' and a number or a date (logrotate(8): '.N' as rotate numbers
# them, dateext's default '-%Y%m%d' and any dateformat of digits and separators; Python's RotatingFileHandler '.N',
# TimedRotatingFileHandler '.%Y-%m-%d_%H-%M-%S'), then anything (compresext's '.gz', '.zst', ...)
_COPY = r"[._-]\d[\w.:+-]*"

# How much of a file's start tells two rotated copies apart (_past_rotations): a log's first lines carry its timestamps
HEAD_BYTES = 1 << 16
# the modules that decompress the formats logrotate's compresscmd writes by default (gzip) and as its man page names
# besides (bzip2, xz); log_summary.COMPRESSED's zstd and lz4 have none in Python 3.11's standard library
_UNPACK: dict[str, ModuleType] = {"gzip": gzip, "bzip2": bz2, "xz": lzma}


def _copies(path: Path) -> dict[int, Path]:
    """The rotated copies of `path` (_COPY names, regular files) by inode. Unreadable folder: none."""
    pattern = re.compile(re.escape(path.name) + _COPY)
    found: dict[int, Path] = {}
    try:
        entries = list(os.scandir(path.parent))
    except OSError:
        return found
    for entry in entries:
        with contextlib.suppress(OSError):
            if pattern.fullmatch(entry.name) and entry.is_file():
                found[entry.inode()] = Path(entry.path)
    return found


def _packed(copy: Path) -> tuple[str, str] | None:
    """The format of compressed file `copy` and the tool that prints it (log_summary.COMPRESSED), None for one that is
    not. Raises OSError as open() does."""
    start = _head(copy, 6)
    return next((what for magic, what in log_summary.COMPRESSED.items() if start.startswith(magic)), None)


def _head(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first `size` bytes of the file at `path`. Raises OSError as open() does."""
    with path.open("rb") as handle:
        return handle.read(size)


def _read_before(copy: Path, packed: str, heads: set[bytes]) -> bool:
    """Whether compressed `copy` (of format `packed`) is of a file whose first bytes are in `heads`: its first
    HEAD_BYTES decompressed are one of them, or the start of one (the engine wrote on to the file after it was
    compressed). False for a format no module here reads, or a copy that does not decompress."""
    if packed not in _UNPACK:
        return False
    try:
        with _UNPACK[packed].open(copy, "rb") as unpacked:
            head = unpacked.read(HEAD_BYTES)
    # gzip.BadGzipFile is an OSError (a bad header); deflate data damaged past the header is zlib.error (not an
    # OSError: 'Error -3 while decompressing data', Python 3.11 gzip.py _GzipReader.read), as bz2's is OSError and xz's
    # LZMAError; a truncated copy of any is EOFError
    except (OSError, EOFError, lzma.LZMAError, zlib.error):
        return False
    return any(seen.startswith(head) for seen in heads)


def _open_log(path: Path, follow: bool = False) -> TextIO:
    """The local engine log at `path`, opened for read_lines (log_summary.LINE_END, undecodable bytes replaced); one
    that is `follow`ed read to the last whole UTF-8 character written (_WholeCharacters)."""
    if not follow:
        return path.open(encoding="utf-8", errors="replace", newline=log_summary.LINE_END)
    raw = _WholeCharacters(io.FileIO(path))
    return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace", newline=log_summary.LINE_END)


class _WholeCharacters(io.RawIOBase):
    """The bytes of a file that is being written, up to the last whole UTF-8 character: the first bytes of one the
    writer has not finished (a write that ended inside it) are kept for the next read, until `final` (the writer is
    done: they are all it will have). A text reader at the end of a file tells its decoder the input is over
    (TextIOWrapper.readline: CPython's textio.c read_chunk, eof when a read gives no bytes), so a character split
    between two writes was read as two or more U+FFFD, one at each read of `logs --follow`."""

    def __init__(self, raw: io.FileIO) -> None:
        super().__init__()
        self.raw = raw
        self.kept = b""  # the first bytes of a character not whole yet
        self.final = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.raw.fileno()

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]  # io.RawIOBase's is Buffer-typed
        data = self.kept + (self.raw.read(len(buffer)) or b"")
        # what UTF-8's own incremental decoder keeps of the last 3 bytes (a character is at most 4: RFC 3629 section 3)
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        decoder.decode(data[-3:])
        given = data[: min(len(buffer), len(data) - (0 if self.final else len(decoder.getstate()[0])))]
        self.kept = data[len(given) :]
        buffer[: len(given)] = given
        return len(given)

    def tell(self) -> int:
        return self.raw.tell() - len(self.kept)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        self.kept = b""
        return self.raw.seek(offset, whence)

    def close(self) -> None:
        self.raw.close()
        super().close()


def _reopened(path: Path, handle: TextIO) -> TextIO:
    """The file now at `path` opened, `handle` (read to its end) closed; `handle` itself when that file was removed
    between _moved and this open: it holds nothing more to read, and a follow keeps reading the old one until another
    file is at the name (_moved is False while none is). The removal was a one-line file-system error (exit 1) in place
    of the engine's 'exited'."""
    try:
        new = _open_log(path, follow=True)
    except FileNotFoundError:
        return handle
    handle.close()
    return new


def _moved(path: Path, handle: TextIO) -> bool:
    """Whether another file is now at `path` than the one `handle` reads (logrotate's 'create' renamed it and made a new
    one): a follow reads the name, as `tail -F` does on a host (remote.logs_command). False while none is there, or
    while what is there is no regular file (a directory made at the name: the follow ended on 'Is a directory' with
    the engine writing on to the file it holds; GNU tail -F says the name was 'replaced with an untailable file' and
    reads on)."""
    try:
        now = path.stat()
    except FileNotFoundError:
        return False
    return stat.S_ISREG(now.st_mode) and now.st_ino != os.fstat(handle.fileno()).st_ino
