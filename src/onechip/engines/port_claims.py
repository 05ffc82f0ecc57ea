"""Claims on the ports local engines serve on, one file per HOST:PORT naming the process that holds it.

Why: vLLM binds its port only once its Python has loaded (10-20 s after the launch; vllm/entrypoints/launchers/
launcher.py setup_server, 0.32), so a second `up` meanwhile, from another $ONECHIP_HOME (which the engine-state lock,
one per home, does not see), found the port free in the kernel's tables, and the later engine to listen failed. An
engine claims its port as it launches (local.LocalVllmEngine.start); another's start on that port is refused at once
while the claim's process runs, naming it.

The claims are this user's, shared by all of its onechip homes: `~/.cache/onechip/ports/<host>:<port>`, holding
'PID START_TICKS HOME'. A claim whose process is gone, or whose pid another process has now (its start time differs,
procs.start_ticks), is ignored, and removed by the next claim (of any port): a `down` from another process than the
`up` (state.down releases the claim it stopped), a crashed `up` or a killed test left theirs, and hundreds of dead
claims piled up. Claims are read and written under a flock of the folder's `.lock`, held for a read and a write.
A folder that cannot be used (a file at $ONECHIP_PORT_CLAIMS, a read-only home) turns claims off rather than refusing
the `up`, which says so once, with why (unusable).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from onechip.errors import PortInUseError
from onechip.paths import onechip_home, write_text_atomic
from onechip.procs import start_ticks, zombie


@dataclass(frozen=True)
class Claim:
    """Who claims a port: process (group leader) `pid`, which started `started` clock ticks after the boot
    (procs.start_ticks; None when unknown), for the onechip home `home`."""

    pid: int
    started: int | None
    home: str

    def live(self) -> bool:
        """Whether the claim's process still runs as the one recorded: a pid reused since is another's, and a zombie
        (exited, not yet reaped by its parent: an engine stopped by the process that started it) runs nothing."""
        now = start_ticks(self.pid)
        return now is not None and (self.started is None or now == self.started) and not zombie(self.pid)


CLAIMS_ENV = "ONECHIP_PORT_CLAIMS"  # a folder in place of ~/.cache/onechip/ports (tests/conftest.py sets one)


def claims_dir() -> Path:
    """This user's claims folder: `$ONECHIP_PORT_CLAIMS` when set, else `~/.cache/onechip/ports`, the default
    $ONECHIP_HOME's (paths.onechip_home), whatever $ONECHIP_HOME says, so that every onechip home of the user shares
    it. Raises RuntimeError when neither is set and there is no home to find (Path.home)."""
    return Path(os.environ.get(CLAIMS_ENV) or Path.home() / ".cache" / "onechip" / "ports")


def _folder() -> Path:
    """claims_dir, made (0700) when missing. Raises OSError when it cannot be, RuntimeError when there is no home."""
    folder = claims_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return folder


def unusable() -> str | None:
    """Why the claims are off, in one line (the folder and the OS's reason), or None when the claims folder can be
    used: claim and claimed skip a folder that cannot be (a file at $ONECHIP_PORT_CLAIMS, a read-only or missing home)
    rather than refuse the `up`, so the `up` says this once (api.up: UpResult.warnings)."""
    try:
        with _locked():
            return None
    except FileExistsError as exc:  # mkdir(exist_ok=True) of a path that is not a folder: EEXIST, 'File exists'
        why = f"{exc.filename or claims_dir()} is not a folder"
    except OSError as exc:
        why = f"{exc.filename or claims_dir()}: {exc.strerror or exc}"
    except RuntimeError:  # Path.home() with no home to find
        why = "no home folder to keep them in"
    return (
        f"port claims are off ({why}; ${CLAIMS_ENV} or ~/.cache/onechip/ports must be a folder this user can write): "
        "each port is checked in the kernel's tables alone, so an engine of another onechip home that has not bound "
        "its port yet is not seen"
    )


@contextmanager
def _locked() -> Iterator[Path]:
    folder = _folder()
    fd = os.open(folder / ".lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for one read and one write: waited for, never long
        yield folder
    finally:
        os.close(fd)


def _read(path: Path) -> Claim | None:
    try:
        pid, started, home = path.read_text(encoding="utf-8").split(" ", 2)
        return Claim(int(pid), None if started == "-" else int(started), home.strip())
    except (OSError, ValueError):  # none, or unreadable: no claim
        return None


def claim(host: str, port: int, pid: int, started: int | None, flag: str = "--port", what: str = "port") -> None:
    """Claim `host`:`port` for process `pid` (started at `started`, procs.start_ticks). Raises PortInUseError naming
    the port as `what` ('port', "the router's metrics port"), the claim's process and home, and `flag` as the way to
    another port, when a live claim of another process holds it (one of this process or of `pid` is replaced: the
    `up` that claimed it before it launched the engine). A claims folder that cannot be used (a read-only or missing
    home) claims nothing: the port is then checked in the kernel's tables alone, as before claims existed, rather than
    refusing the `up`."""
    try:
        with _locked() as folder:
            _sweep(folder)
            held = _held(folder, host, port, pid)
            if held is None:
                line = f"{pid} {'-' if started is None else started} {onechip_home()}\n"
                write_text_atomic(folder / f"{host}:{port}", line)
    except (OSError, RuntimeError):  # RuntimeError: Path.home() with no home to find
        return
    if held is not None:
        raise PortInUseError(
            f"{what} {port} on {host} is claimed by the engine pid {held.pid} (started by `onechip up` with "
            f"ONECHIP_HOME={held.home}; it may not listen yet); pick another port with {flag}, or wait for "
            "that engine's `onechip down`"
        )


def claimed(host: str, port: int) -> Claim | None:
    """The live claim of another process than this one on `host`:`port`, if any: a port a choice of one (`up` without
    --port, a tunnel's local end) must pass over, though the kernel sees it free while the claiming engine boots. None
    also where the claims folder cannot be used (as claim, best effort)."""
    try:
        with _locked() as folder:
            return _held(folder, host, port, os.getpid())
    except (OSError, RuntimeError):
        return None


def _held(folder: Path, host: str, port: int, pid: int) -> Claim | None:
    """The live claim of another process (not `pid`, not this one) on `port` at an address meeting `host`, if any."""
    for other in folder.glob(f"*:{port}"):
        held = _read(other)
        if not _meet(host, other.name.rsplit(":", 1)[0]) or held is None or held.pid in (pid, os.getpid()):
            continue
        if held.live():
            return held
    return None


def _sweep(folder: Path) -> None:
    """Remove the claims in `folder` whose process is gone (Claim.live): no process may ever release them. An
    unreadable file is left (not a claim this onechip wrote)."""
    for path in folder.glob("*:*"):
        held = _read(path)
        if held is not None and not held.live():
            path.unlink(missing_ok=True)


_WILDCARDS = ("", "0.0.0.0", "::")  # every address (a server bound there meets one on any address: ports.TcpSocket.on)


def _meet(one: str, other: str) -> bool:
    """Whether servers on addresses `one` and `other` of one port would collide: the same, or either the wildcard."""
    return one == other or one in _WILDCARDS or other in _WILDCARDS


def release(host: str, port: int, pid: int) -> None:
    """Remove the claim on `host`:`port` when process `pid` holds it (another's is left). Never raises: it runs as an
    engine stops, perhaps while an error propagates."""
    try:
        with _locked() as folder:
            path = folder / f"{host}:{port}"
            held = _read(path)
            if held is not None and held.pid == pid:
                path.unlink(missing_ok=True)
    except (OSError, RuntimeError):
        return
