"""An engine run through a shell on a host: over plain `ssh` (with a tunnel), or locally for docker.

Plain `ssh`, not a cloud CLI wrapper: the seed article found `gcloud compute tpus tpu-vm ssh` crashing with
ConnectionResetError in sandboxes while direct SSH always worked.

On the host (`~/.onechip/`):
    hf_token.env        HF_TOKEN=...  written by `umask 077; cat > ...` with the token on ssh's stdin (0600)
    engine/serve.sh     the serve command; sources hf_token.env (set -a), so the token is in the engine's
                        environment only, never in an argv, `ps` or a log line
    engine/engine.log   the engine's stdout+stderr, every secret redacted by serve.sh's filter (process mode; docker
                        mode reads `docker logs`: docker's own file, which onechip does not write)
    engine/engine.pid   'PID START_TICKS' of the process group serve.sh leads (process mode), written as it starts:
                        what `status` / `down` ask when an `up` was killed before the pid came back to it
    engine/ipc/         vLLM's zmq IPC sockets (VLLM_RPC_BASE_PATH, 0700; process mode, unless the user set that
                        variable): `down` removes the sockets and the folder, where they piled up in the host's /tmp
    replica-K/          the same three files of replica K of `up --replicas N` (ServeTarget.remote_dir): N engines
                        on one host each keep their own
Process mode runs serve.sh under `setsid`: its pid is the process-group id `down` signals (TERM, then KILL).
Docker mode runs `docker run -d --name NAME ...` and stops with `docker rm -f NAME`.
Locally: `ssh -N -L 127.0.0.1:TUNNEL:127.0.0.1:PORT` in its own session, so every other onechip command
talks to http://127.0.0.1:TUNNEL; a background `tail -F` (or `docker logs -f`) mirrors the log until `down`, through
a log writer (local.LogWriter) that redacts it as a local engine's.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from onechip.engines import ports
from onechip.engines.launch import LaunchSpec, Secret
from onechip.engines.local import (
    BootStage,
    LogWriter,
    free_port,
    group_ours,
    last_error,
    port_is_free,
    stop_group,
    tail_lines,
)
from onechip.engines.ready import confirm_ready, healthy
from onechip.errors import (
    EngineBootError,
    EngineError,
    PortInUseError,
    redact,
)
from onechip.logfilter import FILTER_FUNCTION
from onechip.paths import open_owner_only
from onechip.procs import start_ticks
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import BootEvent, BootRecord, EngineState
from onechip.vllm.bootlog import parse_boot_log
from onechip.vllm.flags import shell_join
from onechip.vllm.wire import metrics_text

TOKEN_PATH = "~/.onechip/hf_token.env"
ENGINE_DIR = "~/.onechip/engine"  # a single engine's folder on its host (a replica's: ServeTarget.remote_dir)
REMOTE_LOG = f"{ENGINE_DIR}/engine.log"
REMOTE_PID = f"{ENGINE_DIR}/engine.pid"
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_.\-]+$")
# docker's refusal of `run --name N` when a container N exists (moby daemon/names.go, reserveName: 'Conflict. The
# container name "/N" is already in use by container "ID". You have to remove (or rename) that container ...')
NAME_TAKEN = "is already in use by container"


@dataclass
class Shell:
    """Where host commands run: `ssh [opts] TARGET CMD`, or `bash -c CMD` on this machine (target None)."""

    target: str | None = None
    options: list[str] = field(default_factory=list)  # ssh -o values, e.g. "Port=2222"

    def argv(self, command: str, *, extra: list[str] | None = None) -> list[str]:
        if self.target is None:
            return ["bash", "-c", command]
        opts = ["-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-o", "ServerAliveInterval=15"]
        for option in self.options:
            opts += ["-o", option]
        return ["ssh", *opts, *(extra or []), self.target, command]

    def run(
        self,
        command: str,
        *,
        stdin: bytes | None = None,
        timeout_s: float = 120.0,
        what: str = "command",
        hint: str = "",
    ) -> str:
        """Run `command` for up to `timeout_s` seconds; return stdout. Raises EngineError with the host's stderr (never
        our stdin), or 'WHAT timed out after N s' and `hint`.
        The command runs in its own process group, SIGKILLed whole when it times out or this process is interrupted:
        subprocess.run killed only the shell, and the `docker run` under it went on pulling, then started a container
        after `up` had given up, stopped nothing and forgotten it (a running engine on no record)."""
        try:
            proc = subprocess.Popen(  # noqa: S603 - argv list
                self.argv(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True,
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise EngineError(f"cannot run {exc.filename}: not installed") from None
        with proc:  # its pipes closed, it reaped
            try:
                out, err_bytes = proc.communicate(stdin if stdin is not None else b"", timeout=timeout_s)
            except BaseException as exc:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                if isinstance(exc, subprocess.TimeoutExpired):
                    raise EngineError(f"{self.where()}: {what} timed out after {timeout_s:.0f} s{hint}") from None
                raise
        if proc.returncode != 0:
            err = redact(
                err_bytes.decode(errors="replace").strip().splitlines()[-1:][0]
                if err_bytes.strip()
                else f"exit code {proc.returncode}"
            )
            raise EngineError(f"{self.where()}: {err[:300]}")
        return out.decode(errors="replace")

    def where(self) -> str:
        return f"ssh {self.target}" if self.target else "local shell"


def put_secret_command(path: str = TOKEN_PATH) -> str:
    """Shell line that stores stdin into `path` with mode 0600 (the seed's `umask 077; cat > ~/.hf_token`)."""
    directory = path.rsplit("/", 1)[0]
    return f"umask 077; mkdir -p {_q(directory)} && cat > {_q(path)} && chmod 600 {_q(path)}"


def _q(path: str) -> str:
    return shell_join([path])


def serve_script(spec: LaunchSpec) -> str:
    """The contents of serve.sh: token file sourced (when one was given), engine env exported, the zmq IPC socket
    folder (_ipc_lines), exec."""
    lines = ["#!/bin/bash", "# written by onechip up; holds no secret"]
    if spec.token_path:
        lines += ["set -a", f". {_q(spec.token_path)}", "set +a"]
    for key, value in spec.env.items():
        lines.append(f"export {key}={shell_join([value])}")
    if RPC_VAR not in spec.env:  # one the user set with --set is kept
        lines += _ipc_lines(f"{engine_dir(spec)}/ipc")
    lines += REDACTED_OUTPUT
    lines.append(f"exec {shell_join(spec.serve_argv)}")
    return "\n".join(lines) + "\n"


# serve.sh's lines that send the engine's output (its stdout+stderr, engine.log) through the redacting filter
# (onechip.logfilter), so the host's engine.log holds no secret, as a local engine's (onechip.logpump), nor its mirror
# (redacted again here: HostEngine._start_mirror). The filter ignores INT, TERM and HUP, as logpump does, so `down`
# (TERM to the engine's group) leaves it to write the engine's last lines; it exits at the end of the engine's output.
REDACTED_OUTPUT = [*FILTER_FUNCTION, "exec > >(trap '' INT TERM HUP; onechip_redact) 2>&1"]


RPC_VAR = "VLLM_RPC_BASE_PATH"


def _ipc_lines(folder: str) -> list[str]:
    """serve.sh lines that give vLLM's zmq IPC sockets `folder` (0700, its stale sockets removed), unless the host's
    environment already sets VLLM_RPC_BASE_PATH. vLLM binds them as ipc://$VLLM_RPC_BASE_PATH/<uuid4>, default the
    host's /tmp (vllm/envs.py, vllm/utils/network_utils.py get_open_zmq_ipc_path, 0.32), and a killed engine never
    unlinks them (local.rpc_dir, the same for a local engine). A folder whose socket paths would pass unix(7)'s 107
    bytes (or that cannot be made) leaves the variable unset (vLLM's /tmp), as a socket there could not be bound."""
    return [
        f'if [ -z "${{{RPC_VAR}:-}}" ] && d={_q(folder)} && [ $(( ${{#d}} + 37 )) -le 107 ] && mkdir -p "$d" '
        '&& chmod 700 "$d"; then',
        "  " + _rm_sockets('"$d"'),
        f'  export {RPC_VAR}="$d"',
        "fi",
    ]


def _rm_sockets(folder: str) -> str:
    """Shell that removes the sockets in `folder` (a shell word), and nothing else."""
    return f'for s in {folder}/*; do [ -S "$s" ] && rm -f "$s"; done; true'


def engine_dir(spec: LaunchSpec) -> str:
    """The folder on the host of `spec`'s serve.sh, engine.log and engine.pid (ServeTarget.remote_dir)."""
    return spec.command.target.remote_dir or ENGINE_DIR


def pid_path(state: EngineState) -> str:
    """engine.pid of the recorded engine: beside its log on the host (REMOTE_PID for a record without one)."""
    return f"{state.remote_log.rsplit('/', 1)[0]}/engine.pid" if state.remote_log else REMOTE_PID


def ipc_path(state: EngineState) -> str | None:
    """The zmq IPC socket folder serve.sh gave the recorded process-mode engine (beside its log), None for docker."""
    return f"{state.remote_log.rsplit('/', 1)[0]}/ipc" if state.remote_log else None


def start_command(spec: LaunchSpec) -> str:
    """The host-side start: write serve.sh and launch it under setsid (process), or `docker run` (docker).
    Prints `start=` the host's local time, then `pid=N` and `started=` its start time (process) or the container id."""
    stamp = "date +start=%Y-%m-%dT%H:%M:%S"
    if spec.engine == "vllm-docker":
        return f"mkdir -p ~/.cache/vllm && {stamp} && {shell_join(spec.docker_argv)}"
    script, folder = serve_script(spec), engine_dir(spec)
    serve, log, pid = (_q(f"{folder}/{name}") for name in ("serve.sh", "engine.log", "engine.pid"))
    return (
        f"set -e; mkdir -p {_q(folder)}; cat > {serve} <<'ONECHIP_SERVE'\n"
        f"{script}ONECHIP_SERVE\n"
        # the log exists before the pid is printed: a `tail -F` mirror started on a missing file polls for it
        # once a second (and says so into the mirror) instead of following it at once
        f": > {log}; rm -f {pid}; {stamp}; "
        f"setsid bash {serve} > {log} 2>&1 < /dev/null & "
        f'echo "$! $({_started("$!")})" > {pid}; echo "pid=$!"; echo "started=$({_started("$!")})"'
    )


def _started(pid: str) -> str:
    """Shell that prints when process `pid` started, in clock ticks after the host's boot (field 22 of
    /proc/<pid>/stat, counted after the command name, which may hold spaces: procs.start_ticks), or nothing."""
    return f"sed 's/.*) //' /proc/{pid}/stat 2>/dev/null | cut -d' ' -f20"


def _ours(state: EngineState) -> str | None:
    """Shell that succeeds unless the recorded leader's pid now belongs to a process that started at another time
    (the host rebooted, the kernel gave the pid to another process: never signalled); a leader gone while members
    remain counts as ours, as a local record does (state.engine_alive). None when the record has no start time (an
    older record, a host without /proc): the pid alone is asked, as before."""
    if state.remote_pid_started is None:
        return None
    return f'{{ t=$({_started(str(state.remote_pid))}); [ -z "$t" ] || [ "$t" = {state.remote_pid_started} ]; }}'


def _pid_from_file(state: EngineState) -> str:
    """Shell that sets $p to the pid the engine's engine.pid holds (_pid_path) and succeeds when that process is the
    one started then (its start time, as _ours asks), for a record saved before the start's pid came back
    (remote_pid None)."""
    check = f'u=$({_started("$p")}) && {{ [ -z "$u" ] || [ "$u" = "$t" ]; }}'
    return f'{{ read p t < {_q(pid_path(state))} && [ -n "$p" ] && {check}; }} 2>/dev/null'


def pid_words(state: EngineState) -> str:
    """The remote engine's process group as a note says it: 'pid N', or where its pid is kept on the host."""
    return f"pid {state.remote_pid}" if state.remote_pid is not None else f"the pid in {pid_path(state)}"


def _docker(sudo: bool) -> str:
    return "sudo docker" if sudo else "docker"


def _container(state: EngineState) -> str | None:
    """The container docker commands name: its id once `docker run` printed it (a container of that name started
    later by another onechip home, or by hand, is not ours), else its --name (a record saved before the start
    returned: an `up` killed during the image pull)."""
    return state.container_id or state.container


def alive_command(state: EngineState) -> str:
    if state.mode == "docker":
        running = "'{{.State.Running}}'"
        return f"{_docker(state.sudo)} inspect -f {running} {_container(state)} 2>/dev/null || echo false"
    if state.remote_pid is None:
        return f"{_pid_from_file(state)} && kill -0 -- -$p 2>/dev/null && echo true || echo false"
    ours = _ours(state)
    return f"{ours + ' && ' if ours else ''}kill -0 -- -{state.remote_pid} 2>/dev/null && echo true || echo false"


def logs_command(state: EngineState, follow: bool = False) -> str:
    if state.mode == "docker":
        return f"{_docker(state.sudo)} logs {'-f ' if follow else ''}{_container(state)} 2>&1"
    # GNU tail's --pid ends a follow once the engine's leader has exited (`docker logs -f` ends with its container)
    until = f"--pid={state.remote_pid} " if follow and state.remote_pid is not None else ""
    return f"tail -n +1 {'-F ' if follow else ''}{until}{_q(state.remote_log or REMOTE_LOG)}"


# What stop_command prints: the engine ran and was stopped, or it had already exited (a container not running, a process
# group gone or its leader's pid another process's now), which `down` says as such
STOPPED, GONE = "stopped", "gone"


def stop_command(state: EngineState, grace_s: float = 20.0) -> str:
    """Shell that stops the engine `state` records on its host and prints STOPPED or GONE (what it found); it fails
    when a process group outlives its SIGKILL, or when docker cannot say whether the container runs."""
    if state.mode == "docker":
        # an inspect that fails is gone only where docker says it has no such container ('Error: No such object: C');
        # another failure (the daemon out of reach, sudo refused) cannot tell: it is said, and nothing is removed
        docker, name, running = _docker(state.sudo), _container(state), "'{{.State.Running}}'"
        return (
            f"if said=$({docker} inspect -f {running} {name} 2>&1); then "
            f'if [ "$said" = true ]; then {docker} stop -t {int(grace_s)} {name} >/dev/null 2>&1; echo {STOPPED}; '
            f'else echo {GONE}; fi; else case "$said" in *"No such"*|*"no such"*) echo {GONE} ;; '
            f'*) echo "$said" >&2; exit 1 ;; esac; fi; {docker} rm -f {name} >/dev/null 2>&1; true'
        )
    pg, ours = f"-- -{state.remote_pid}", _ours(state)
    if state.remote_pid is None:
        pg, ours = "-- -$p", _pid_from_file(state)
    steps = int(grace_s * 10)
    gone, stopped = f"{{ echo {GONE}; exit 0; }}", f"{{ echo {STOPPED}; exit 0; }}"
    stop = (
        f"{ours + f' || {gone}; ' if ours else ''}kill -TERM {pg} 2>/dev/null || {gone}; "
        f"for i in $(seq 1 {steps}); do kill -0 {pg} 2>/dev/null || {stopped}; sleep 0.1; done; "
        f"kill -KILL {pg} 2>/dev/null; sleep 1; ! kill -0 {pg} 2>/dev/null && echo {STOPPED}"
    )
    folder = ipc_path(state)
    if folder is None:
        return stop
    # once the group is gone, its IPC sockets (serve.sh's folder): only sockets, then the folder if empty
    d = _q(folder)
    return f"( {stop} ) || exit 1; {_rm_sockets(d)}; rmdir {d} 2>/dev/null; true"


def tunnel_argv(shell: Shell, local_port: int, remote_port: int) -> list[str]:
    forward = f"127.0.0.1:{local_port}:127.0.0.1:{remote_port}"
    argv = shell.argv("", extra=["-N", "-o", "ExitOnForwardFailure=yes", "-L", forward])
    return argv[:-1]  # no remote command with -N


def dry_run_commands(spec: LaunchSpec, shell: Shell) -> list[str]:
    """The exact shell lines `up` would run on a host, in order: the token stored (shown only as where it
    comes from), the start (serve.sh with spec.command's argv and env, or its `docker run` line) through
    `shell`, and the SSH tunnel."""
    lines: list[str] = []
    if spec.token_path:
        put = shell_join(shell.argv(put_secret_command(spec.token_path)))
        lines.append(f"{put} < <(token from {spec.command.target.token_source}, as HF_TOKEN=..., on stdin)")
    lines.append(shell_join(shell.argv(start_command(spec))))
    if spec.host and spec.tunnel_port:
        lines.append(shell_join(tunnel_argv(shell, spec.tunnel_port, spec.port)))
    return lines


class HostEngine:
    """A LaunchSpec run through a Shell: a detached process over SSH, or a docker container (SSH or local).
    Implements engines.base.Engine; `state()` / `from_state()` let `status`, `logs` and `down` find it."""

    def __init__(
        self, spec: LaunchSpec, shell: Shell, log_path: Path, token: Secret | None = None, timeout_s: float = 600.0
    ):
        self.spec = spec
        self.shell = shell
        self.log_path = log_path
        self.token = token
        self.timeout_s = timeout_s  # `up --timeout-s`: the start (docker run's image pull) and the boot, together
        self.kind = spec.engine if spec.host is None else f"{spec.engine}@ssh"
        self.served_name = spec.served_name
        self.mode = "docker" if spec.engine == "vllm-docker" else "remote-process"
        self.remote_pid: int | None = None
        self.container_id: str | None = None  # what `docker run -d` printed (docker mode)
        self.remote_pid_started: int | None = None
        self.tunnel: subprocess.Popen[bytes] | None = None
        self.mirror: subprocess.Popen[bytes] | None = None
        self.mirror_writer: LogWriter | None = None  # what writes the mirror's copy to log_path, redacted
        self._tunnel_started: int | None = None  # their start times (procs.start_ticks): `down` signals no stranger
        self._mirror_started: int | None = None
        self.local_port: int | None = spec.base_port
        self._started_wall: datetime | None = None
        self._host_start: datetime | None = None
        self._started_mono: float | None = None
        self._ready_s: float | None = None
        self._extra_events: list[BootEvent] = []
        self.on_launched: Callable[[], None] = lambda: None  # Engine.on_launched: `up` records it booting
        self.name_taken = False  # `docker run` refused: a container of that name exists, which stop() leaves be

    @property
    def base_url(self) -> str:
        if self.local_port is None:
            raise EngineError("engine not started")
        return f"http://127.0.0.1:{self.local_port}"

    def state(self) -> EngineState:
        return EngineState(
            engine=self.kind, pid=self.tunnel.pid if self.tunnel else 0, base_url=self.base_url,
            model=self.served_name, started_at=self._started_wall.isoformat() if self._started_wall else "",
            log_path=str(self.log_path), mode=self.mode, host=self.spec.host, ssh_options=self.shell.options,
            remote_pid=self.remote_pid, remote_pid_started=self.remote_pid_started,
            remote_log=f"{engine_dir(self.spec)}/engine.log" if self.mode == "remote-process" else None,
            container=self.spec.command.target.container, container_id=self.container_id,
            tunnel_pid=self.tunnel.pid if self.tunnel else None,
            sudo="sudo" in self.spec.docker_argv[:1], mirror_pid=self.mirror.pid if self.mirror else None,
            tunnel_started=self._tunnel_started if self.tunnel else None,
            mirror_started=self._mirror_started if self.mirror else None,
            log_writer_pid=self.mirror_writer.process.pid if self.mirror_writer else None,
            log_writer_started=self.mirror_writer.started if self.mirror_writer else None,
        )  # fmt: skip

    def start(self) -> None:
        """Store the token (stdin, 0600), launch on the host, open the tunnel and the log mirror.
        Raises PortInUseError (tunnel port taken), EngineError (ssh/docker failed; host stderr, no secret)."""
        spec = self.spec
        if spec.host and self.local_port is not None and not port_is_free(self.local_port):
            raise PortInUseError(f"local tunnel port {self.local_port} is in use; pick another with --tunnel-port")
        if not spec.host and not port_is_free(spec.port):
            raise PortInUseError(f"port {spec.port} is in use; pick another with --port")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if self.token is not None and spec.token_path:
            value = self.token.reveal()
            if not _TOKEN_CHARS.match(value):
                raise EngineError("the Hugging Face token holds characters a token never has; check the file")
            self.shell.run(put_secret_command(spec.token_path), stdin=f"HF_TOKEN={value}\n".encode())
        self._started_wall = datetime.now(UTC)
        self._started_mono = time.monotonic()
        # recorded before the start: a container's --name is fixed and its `docker run` pulls for minutes; a process
        # group writes its pid to engine.pid as it starts. Either outlives an `up` killed before the start returns, and
        # `down` finds it (docker rm -f NAME; the group engine.pid names)
        self.on_launched()
        try:
            what, hint = self._start_said()
            out = self.shell.run(start_command(spec), timeout_s=self.timeout_s, what=what, hint=hint)
        except EngineError as exc:
            if self.mode == "docker" and NAME_TAKEN in str(exc):  # docker's refusal: that container is not ours
                self.name_taken = True
                name, where = spec.command.target.container, spec.host or "this machine"
                raise EngineError(
                    f"a container named {name} already exists on {where} (another onechip home's engine, or one "
                    f"started by hand); onechip leaves it be: stop it (`docker rm -f {name}`) if it is stale"
                ) from None
            raise
        if m := re.search(r"start=(\S+)", out):
            self._host_start = datetime.fromisoformat(m.group(1))
        if self.mode == "docker" and (cid := re.search(r"^([0-9a-f]{64})$", out, re.MULTILINE)):
            self.container_id = cid.group(1)
        if self.mode == "remote-process":
            m = re.search(r"pid=(\d+)", out)
            if not m:
                raise EngineError(f"{self.shell.where()}: the engine did not start (no pid printed)")
            self.remote_pid = int(m.group(1))
            if started := re.search(r"^started=(\d+)$", out, re.MULTILINE):
                self.remote_pid_started = int(started.group(1))
        self.on_launched()  # the container or remote process group exists: before the tunnel (up to 20 s)
        if spec.host:
            self._open_tunnel()
        self._start_mirror()

    def _start_said(self) -> tuple[str, str]:
        """How a start that outran `timeout_s` is said (Shell.run's `what` and `hint`): the limit's option, and for
        docker the image pull, which is most of a first start on a fresh host."""
        limit = " (the limit of up --timeout-s)"
        if self.mode != "docker":
            return "the engine's start", limit
        image, where = self.spec.command.target.image or "the image", self.spec.host or "this machine"
        return (
            f"`docker run` (with its pull of {image})",
            f"{limit}; give a longer --timeout-s, or `docker pull {image}` on {where} first",
        )

    def _open_tunnel(self) -> None:
        assert self.local_port is not None
        self.tunnel = subprocess.Popen(  # noqa: S603
            tunnel_argv(self.shell, self.local_port, self.spec.port), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        self._tunnel_started = start_ticks(self.tunnel.pid)
        self.on_launched()  # recorded with the tunnel's pid: an `up` killed while it opens leaves `down` it to stop
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.tunnel.poll() is not None:
                err = redact((self.tunnel.stderr.read() if self.tunnel.stderr else b"").decode(errors="replace"))
                self.stop()
                raise EngineError(f"ssh tunnel to {self.spec.host} failed: {err.strip()[:300]}")
            if self._tunnel_listens():
                return
            time.sleep(0.2)
        self.stop()
        raise EngineError(f"ssh tunnel to {self.spec.host} did not open port {self.local_port} in 20 s")

    def _tunnel_listens(self) -> bool:
        """Whether the tunnel listens on its local port now: its own processes hold the socket listening there
        (ports.listeners), not merely whoever does. Another process listening there (it took the port after start()'s
        check) stops the engine and raises PortInUseError naming it: ssh, with ExitOnForwardFailure, fails only once
        it has logged in, and until then /health through that port was the other's. Where /proc cannot say (not Linux;
        a tunnel run as another user), the port being taken is what there is to ask."""
        assert self.tunnel is not None and self.local_port is not None
        seen = ports.listeners(self.local_port, "127.0.0.1", self.tunnel.pid)
        if seen is None or (seen.blind and not seen.ours):
            return not port_is_free(self.local_port)
        if seen.others:
            who = ports.holder(seen.others[0])
            self.stop()
            raise PortInUseError(
                f"local tunnel port {self.local_port} is taken by {who}, not by the ssh tunnel to {self.spec.host}; "
                "the engine was stopped: pick another with --tunnel-port"
            )
        return seen.ours > 0

    def _start_mirror(self) -> None:
        """Start the mirror (`tail -F` of the host's log, `docker logs -f` of the container) writing to `log_path`
        through a log writer of its own (local.LogWriter, with the token in its environment): `docker logs` gives the
        container's output as the engine printed it, secrets and all, and a host's log is redacted by serve.sh's filter
        by shape and name alone (REDACTED_OUTPUT); the local copy holds none either way."""
        output, into_log = os.pipe()
        try:
            with open_owner_only(self.log_path, append=False) as log:
                secrets = {"HF_TOKEN": self.token.reveal()} if self.token is not None else {}
                self.mirror_writer = LogWriter(output, log, {**os.environ, **secrets})
            self.mirror = subprocess.Popen(  # noqa: S603
                self.shell.argv(logs_command(self.state(), follow=True)), stdin=subprocess.DEVNULL,
                stdout=into_log, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        finally:  # the mirror's copy alone is left: its writer reads to the end of the mirror's output
            os.close(output)
            os.close(into_log)
        self._mirror_started = start_ticks(self.mirror.pid)

    def _await_mirror(self, timeout_s: float = 30.0) -> None:
        """Wait until the local mirror holds as many lines as the host's log held now (`wc -l` there), so that the
        boot record read from it has every line the engine wrote before it answered (the mirror copies
        asynchronously, over ssh or from a `tail -F`). Lines, not bytes: the copy is redacted (its writer puts '***'
        for each secret), so shorter than the host's, but redaction never adds or drops a line's end. `timeout_s`
        bounds a mirror that died or hangs: then the record is read as is."""
        if self.mirror is None:
            return
        try:
            held = int(self.shell.run(f"{logs_command(self.state())} | wc -l", timeout_s=timeout_s).split()[-1])
        except (EngineError, ValueError, IndexError):
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.mirror.poll() is None:
            if self.mirror_writer is not None:
                self.mirror_writer.sync()  # what the mirror copied so far is in the file
            try:
                if _line_ends(self.log_path) >= held:
                    return
            except FileNotFoundError:
                pass
            time.sleep(0.05)

    def _stop_mirror(self) -> None:
        if self.mirror is not None and self.mirror.poll() is None:
            stop_group(self.mirror.pid, 2.0)
        self.mirror = None
        if self.mirror_writer is not None:  # its input ended with the mirror: it writes the rest and exits
            self.mirror_writer.close()

    def alive(self) -> bool:
        return self.shell.run(alive_command(self.state()), timeout_s=30.0).strip().endswith("true")

    def wait_ready(self, timeout_s: float = 600.0, on_progress: ProgressFn | None = None) -> BootRecord:
        """Poll /health through the tunnel (host liveness every 5 s), then /v1/models and a first chat.
        Raises EngineBootError with the one-line cause and the log path when the engine dies or times out.
        Who answered is not asked of /proc as a local engine's answer is (LocalVllmEngine._answers_itself): here the
        port is ssh's tunnel, which start() saw listen there itself (_tunnel_listens), or docker's proxy, a process
        of the docker daemon whose sockets this user's /proc may not show, the server itself being on another host or
        in a container; the served-name check of confirm_ready is what tells a stranger there."""
        if self._started_mono is None:
            raise EngineError("engine not started")
        progress = on_progress or no_progress
        deadline = self._started_mono + timeout_s
        last_alive_check = 0.0
        stage = BootStage(self.boot_record)
        while True:
            elapsed = time.monotonic() - self._started_mono
            if healthy(self.base_url):
                break
            if time.monotonic() - last_alive_check > 5.0:
                last_alive_check = time.monotonic()
                if not self.alive():
                    time.sleep(1.0)  # let the mirror catch the last lines
                    raise self._boot_error("engine exited during boot")
            if time.monotonic() > deadline:
                raise self._boot_error(f"engine not healthy after {timeout_s:.0f} s")
            progress(
                ProgressEvent("boot", f"engine booting on {self.spec.host or 'docker'} ({stage()})", elapsed, timeout_s)
            )
            time.sleep(1.0)
        healthy_s = round(time.monotonic() - self._started_mono, 2)
        confirm_ready(self.base_url, self.served_name)
        self._ready_s = round(time.monotonic() - self._started_mono, 2)
        self._await_mirror()
        self._extra_events = [
            BootEvent(name="health_ok", t_s=healthy_s),
            BootEvent(name="first_chat_ok", t_s=self._ready_s),
        ]
        progress(ProgressEvent("boot", "engine ready", self._ready_s, self._ready_s))
        # the mirror keeps copying the log after ready (requests, warnings, a crash under load) until stop()
        # or `down` (EngineState.mirror_pid)
        return self.boot_record()

    def _boot_error(self, what: str) -> EngineBootError:
        self._stop_mirror()
        try:
            self.stop()
        except EngineError:
            pass
        record = self.boot_record()
        tail = tail_lines(self.log_path, 15)
        cause = record.failure_cause or last_error(tail)
        return EngineBootError(f"{what}: {cause[:300]} (full log: {self.log_path})", str(self.log_path), tail)

    def boot_record(self) -> BootRecord:
        record = BootRecord(
            engine=self.kind, model=self.served_name, model_path=self.spec.command.model,
            base_url=self.base_url if self._started_wall else None, pid=self.remote_pid,
            command=[redact(word) for word in (self.spec.docker_argv or self.spec.serve_argv)],
            env={k: redact(v) for k, v in self.spec.env.items()},
            started_at=self._started_wall.isoformat() if self._started_wall else None, ready_s=self._ready_s,
            log_path=str(self.log_path),
        )  # fmt: skip
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return record
        if self.token is not None:
            text = self.token.scrub(text)
        out = parse_boot_log(text, record, self._host_start)
        if self._host_start is not None:  # t=0 is the host's clock when the container/process started
            start = "container_start" if self.mode == "docker" else "process_start"
            out.events.insert(0, BootEvent(name=start, t_s=0.0))
        out.events.extend(self._extra_events)
        return out

    def metrics(self) -> str:
        return metrics_text(self.base_url)

    def stop(self) -> None:
        """Stop the engine on the host, the tunnel and the mirror. Idempotent."""
        self._stop_mirror()
        if self._started_wall is not None and not self.name_taken:  # started: its pid, or the one in engine.pid
            stop_host_engine(self.shell, self.state())
        if self.tunnel is not None and self.tunnel.poll() is None:
            stop_group(self.tunnel.pid, 5.0)
        if self.tunnel is not None and self.tunnel.stderr is not None:
            self.tunnel.stderr.close()
        self.tunnel = None


def _line_ends(path: Path) -> int:
    """How many lines the file at `path` holds ended ('\\n' counted, as `wc -l` counts). Raises OSError."""
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def stop_host_engine(shell: Shell, state: EngineState, grace_s: float = 20.0) -> bool:
    """Stop the engine `state` records on its host (process group or container): whether it was running (False: it had
    already exited, stop_command's GONE). Raises EngineError when the host does not answer or the group outlives
    SIGKILL."""
    said = shell.run(stop_command(state, grace_s), timeout_s=grace_s + 30).split()
    return GONE not in said


def shell_for(state: EngineState) -> Shell:
    return Shell(target=state.host, options=list(state.ssh_options))


def host_status(state: EngineState) -> tuple[bool, str]:
    """(engine alive on its host, note). Never raises: an unreachable host is a note."""
    try:
        alive = shell_for(state).run(alive_command(state), timeout_s=30.0).strip().endswith("true")
    except EngineError as exc:
        return False, f"cannot reach the host: {exc}"
    tunnel = state.tunnel_pid is None or group_ours(state.tunnel_pid, state.tunnel_started)
    note = "" if tunnel else "the ssh tunnel is gone; run `onechip down` and `up` again"
    return alive, note


def stop_tunnel(state: EngineState) -> None:
    """Stop the local processes `state` records beside the host's engine: the ssh tunnel and the log mirror."""
    for pid, started in ((state.tunnel_pid, state.tunnel_started), (state.mirror_pid, state.mirror_started)):
        if pid and group_ours(pid, started):  # never a pid the kernel has given to another process since
            stop_group(pid, 5.0)


__all__ = [
    "HostEngine",
    "Shell",
    "dry_run_commands",
    "free_port",
    "host_status",
    "logs_command",
    "put_secret_command",
    "serve_script",
    "shell_for",
    "start_command",
    "stop_host_engine",
    "stop_tunnel",
    "tunnel_argv",
]
