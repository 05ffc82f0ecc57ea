"""Where onechip keeps things on disk: its home (models, engine state) and run directories; how a file is
written so no reader sees half of it (write_text_atomic), a log only its owner reads (open_owner_only), and the
one lock two onechip processes take before changing the same thing (exclusive: the engine state, a run directory);
how a file the user names is opened for reading (open_regular: a regular file only); what a job stopped by Ctrl-C
(or a cancelled MCP call) kept in its run directory (ctrl_c_says_what_is_kept: the CLI and the MCP server say it alike).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from onechip.errors import BusyError, ConfigError, Interrupted, looks_secret, redact


def onechip_home() -> Path:
    """`$ONECHIP_HOME`, else `~/.cache/onechip`."""
    return Path(os.environ.get("ONECHIP_HOME") or Path.home() / ".cache" / "onechip")


def home_store(name: str, formerly: str) -> Path:
    """`$ONECHIP_HOME/<name>`, a store named for what it holds. Files an earlier onechip kept under
    `$ONECHIP_HOME/<formerly>` are moved in first (one already in the new store is never overwritten, and the
    old directory goes only once empty), so renaming a store loses nobody's data. Not created."""
    home = onechip_home()
    store, old = home / name, home / formerly
    if old.is_dir():
        store.mkdir(parents=True, exist_ok=True)
        for path in old.iterdir():
            if not (store / path.name).exists():
                path.rename(store / path.name)
        with contextlib.suppress(OSError):
            old.rmdir()
    return store


def new_run_dir(root: Path) -> Path:
    """Create and return `root/<UTC timestamp>-<4 hex>`, e.g. runs/20261129T095200Z-a3f1. Raises ConfigError naming
    the full path and --out (MCP: out_dir) when it cannot be made (a working folder that cannot be written, or that
    was removed): 'runs: No such file or directory' named neither the folder nor the way to choose another."""
    run_id = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"
    path = root / run_id
    try:
        path.mkdir(parents=True, exist_ok=False)
    except OSError as exc:
        try:
            where = str(path.absolute())
        except OSError:  # the working folder itself is gone (os.getcwd fails)
            where = f"{path} in a working folder that no longer exists"
        raise ConfigError(f"cannot make the run directory {where} ({exc.strerror or type(exc).__name__}); choose "
                          "another with --out, or run from a folder that can be written") from None  # fmt: skip
    return path


def refuse_secret_path(name: str, path: str | os.PathLike[str]) -> None:
    """Raise ConfigError (one line, the secret redacted) when `path` holds a secret (errors.looks_secret: an hf_
    token, a cloud key, HF_TOKEN's value): a token pasted where a path goes was made a folder of that name (bench
    --out, simulate's out_dir), leaving the secret in a directory listing and every report that names the run."""
    text = os.fspath(path)
    if looks_secret(text):
        raise ConfigError(f"{name}: {redact(text)!r} holds a secret (a token or key); choose a path without one")


@contextmanager
def run_dir(given: Path | None, root: Path = Path("runs")) -> Iterator[Path]:
    """`given`, else a new `root`/<run-id>/ (new_run_dir), removed again (with `root` when this made it and it is
    empty) when the job fails before writing anything in it: each bench call against an unreachable URL left an
    empty run directory behind, and a refused `simulate` an empty runs/. A `given` that holds a secret is refused
    (refuse_secret_path), nothing made."""
    if given is not None:
        refuse_secret_path("--out", given)
    made_root = given is None and not root.exists()
    out_dir = given or new_run_dir(root)
    try:
        yield out_dir
    except BaseException:
        if given is None and not any(out_dir.iterdir()):
            out_dir.rmdir()
            if made_root:
                with contextlib.suppress(OSError):  # another run was made in it meanwhile
                    root.rmdir()
        raise


@contextmanager
def ctrl_c_says_what_is_kept(command: str, out_dir: Path | None, *files: str) -> Iterator[None]:
    """A KeyboardInterrupt inside raised as Interrupted saying what is true of `command`'s run in `out_dir` (None: it
    writes none): where it is once one of `files` (names in out_dir: schemas.run.RUN_FILES) is written, else that
    nothing was written. The jobs raise their own Interrupted for a Ctrl-C while they measure (bench.run_grid,
    checks.run_checks, api.demo), which passes through; this one says it of a Ctrl-C before (asking the server what
    it serves, picking the run) or after (drawing the tables), which said 'what was measured is kept on disk' either
    way. The CLI's bench, check and demo say it, and the MCP server's tools of the same jobs (a cancelled call)."""
    try:
        yield
    except KeyboardInterrupt:
        if out_dir is not None and any((out_dir / name).is_file() for name in files):
            raise Interrupted(f"{command} interrupted; what was measured is in {out_dir}") from None
        raise Interrupted(f"{command} interrupted; nothing written") from None


def open_owner_only(path: Path, append: bool) -> BinaryIO:
    """`path` opened for binary writing (`append`, else truncated), readable by its owner alone (0600, also when
    it already existed): an engine's log holds whatever the engine prints, and `logs` redacts only on reading."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    fd = os.open(path, flags, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "ab" if append else "wb")


class NotRegularFileError(OSError):
    """A path given as an input file that is a FIFO, a socket, a directory or a device. Its strerror is "not a
    regular file" (callers that print `PATH: strerror` for any OSError print that); str() is "PATH is not a
    regular file"."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EINVAL, "not a regular file", str(path))

    def __str__(self) -> str:
        return f"{self.filename} is not a regular file"


def kind_of(path: Path) -> str:
    """What `path` is, as a message names it: 'a directory', 'a FIFO', 'a socket', 'a character device', 'a block
    device' or 'a file' (a regular file, or anything else); a symlink as what it points to. Raises OSError as
    os.stat does (missing, no permission)."""
    mode = os.stat(path).st_mode
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "a file")


def open_regular(path: Path) -> BinaryIO:
    """`path` opened for binary reading. Raises NotRegularFileError (an OSError) unless it is a regular file (a
    symlink to one is): reading a FIFO waits for a writer and /dev/zero reads without end, so a workload, trace,
    config.json, safetensors, plan, run, log or token file the user names is refused before any read; other
    OSErrors (missing, no permission) as open() raises them. The open itself does not wait (O_NONBLOCK, which a
    regular file ignores), and the check is on what was opened, so no rename in between slips past it."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegularFileError(path)
    return os.fdopen(fd, "rb")


# The most bytes an input file read whole may hold (read_regular): a plan, a run's JSON files, a trace, a
# config.json, a token or key file, a store under ONECHIP_HOME. The largest onechip writes are a run's summary.json
# (a few MB for a large grid); an 8 GiB file given as one was read at once, an internal error (MemoryError) under
# the MCP server's heap cap.
MAX_INPUT_BYTES = 256 << 20


class TooLargeError(OSError):
    """An input file larger than read_regular's bound. Its strerror says so (callers that print `PATH: strerror`
    for any OSError print that); str() is "PATH is larger than N bytes, ...", as NotRegularFileError's."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        super().__init__(errno.EFBIG, f"larger than {max_bytes:,} bytes, more than any file onechip reads", str(path))

    def __str__(self) -> str:
        return f"{self.filename} is {self.strerror}"


def read_regular(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of the regular file `path` (open_regular), at most `max_bytes` of them (None: MAX_INPUT_BYTES).
    Raises TooLargeError (an OSError) for a longer file, before reading it, and what open_regular raises."""
    with open_regular(path) as handle:
        return _read_bounded(handle, path, MAX_INPUT_BYTES if max_bytes is None else max_bytes)


def _read_bounded(handle: BinaryIO, path: Path, max_bytes: int) -> bytes:
    """What is left of the open file `handle` (of `path`), at most `max_bytes`; TooLargeError beyond."""
    if os.fstat(handle.fileno()).st_size > max_bytes:
        raise TooLargeError(path, max_bytes)
    data = handle.read(max_bytes + 1)  # a file that grew since the stat is bounded all the same
    if len(data) > max_bytes:
        raise TooLargeError(path, max_bytes)
    return data


def read_home_file(path: Path) -> str:
    """The UTF-8 text of `path`, a file onechip keeps under its home (a calibration, a cloud record, the zones it
    used or observed, the catalog read, the engine state), through open_regular: a FIFO planted there was waited
    on without end. Raises ConfigError '<path> is a FIFO, not a file onechip wrote: remove it' (kind_of) for
    anything not a regular file, and '<folder> is a file, not a folder' when a folder above `path` is not one
    ($ONECHIP_HOME naming a file: the engine state read as 'unreadable, delete the file', a file that is not there);
    other OSErrors (missing, no permission) as open() raises them; UnicodeDecodeError (a ValueError) for bytes that
    are not UTF-8."""
    try:
        return read_regular(path).decode("utf-8")
    except NotRegularFileError:
        raise ConfigError(f"{path} is {kind_of(path)}, not a file onechip wrote: remove it") from None
    except NotADirectoryError:
        folder = next((p for p in reversed(path.parents) if p.exists() and not p.is_dir()), path.parent)
        raise ConfigError(
            f"{path}: {folder} is {kind_of(folder)}, not a folder; point ONECHIP_HOME at a folder (it is "
            f"{onechip_home()})"
        ) from None


def read_key_file(path: Path, label: str) -> tuple[str, int]:
    """The UTF-8 text of the token or key file `path` (open_regular: a FIFO is refused, not waited on) and its
    st_mode. Raises ConfigError '<label> <path>: cannot read: <why>' (missing, no permission, not a regular file,
    not UTF-8 text: the decode error's own text is never shown, it quotes the file's bytes)."""
    try:
        with open_regular(path) as handle:
            return _read_bounded(handle, path, MAX_INPUT_BYTES).decode("utf-8"), os.fstat(handle.fileno()).st_mode
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"{label} {path}: cannot read: {why}") from None


def write_text_atomic(target: Path, text: str) -> Path:
    """Write `text` to `target` through a temporary file beside it (flushed to disk, then renamed), so a
    reader never sees half a file and a full disk leaves `target` as it was. Raises OSError naming `target`
    (errors.os_error_line prints "PATH: No space left on device"); the temporary file is removed. The temporary
    file is this thread's (.NAME.PID.THREAD.tmp): the MCP server writes from a thread per tool call, and two calls
    writing one file at once shared a process's one, the first rename took it and the second failed. Removing the
    temporary file may fail too (unlink answers EROFS on a read-only mount before it looks for the name, ENOTDIR under
    a file): that second error is not raised, as it named the temporary file ('cannot write runs/x/.report.md.PID.
    THREAD.tmp: Read-only file system') instead of `target`. A temporary file of `target` that a write killed mid-way
    left (SIGKILL, a power cut: nothing removed it) is removed first, when its PID is alive on this host no more
    (_remove_stale_temps)."""
    _remove_stale_temps(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from None
    return target


# A temporary file of write_text_atomic older than this (its mtime) is no write in progress: onechip's largest file (a
# bench run's report) is written in well under a second here; the age keeps a write from another host on a shared
# (NFS) home, whose PID this host cannot check, from being taken for a killed one (our own bound, not measured).
STALE_TEMP_S = 600.0


def _remove_stale_temps(target: Path) -> None:
    """Remove write_text_atomic's temporary files of `target` (.NAME.PID.THREAD.tmp, PID and THREAD digits) whose
    process is gone from this host (os.kill(PID, 0): ESRCH, kill(2)) and that is older than STALE_TEMP_S; one whose
    PID is alive (this process, another writer mid-write, or a process that reused the PID: kept, never guessed at),
    a younger one (another host's write) or any other name is left as it is.
    Nothing is raised: a folder that cannot be listed or a file already gone leaves the write to say what fails."""
    pattern = re.compile(rf"\.{re.escape(target.name)}\.(\d+)\.\d+\.tmp")
    try:
        names = [entry.name for entry in os.scandir(target.parent)]
    except OSError:
        return
    now = time.time()
    for name in names:
        if (found := pattern.fullmatch(name)) and not _pid_alive(int(found[1])):
            with contextlib.suppress(OSError):
                if now - (target.parent / name).stat().st_mtime > STALE_TEMP_S:
                    (target.parent / name).unlink()


def _pid_alive(pid: int) -> bool:
    """Whether a process `pid` exists on this host (signal 0 checks without sending, kill(2)): EPERM is another
    user's process, alive; ESRCH none, as is a pid past a C int (OverflowError); any other error counts as alive."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):
        return False
    except OSError:
        return True
    return True


@contextmanager
def exclusive(path: Path, busy: str | Callable[[], str]) -> Iterator[None]:
    """Hold an exclusive advisory lock (flock) on `path` for the block: a directory is locked as itself
    (nothing is written into it); any other path is a lock file, created if missing. The lock goes with
    the process (a killed holder frees it). Raises BusyError `busy` (one line: who holds it and what to do; a
    callable is asked for it then, when the holder can be named: `holder_pids`) when another holder has it, in this
    process or another; it does not wait."""
    if path.is_dir():
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise BusyError(busy() if callable(busy) else busy) from None
            # flock's error names no file: 'No locks available' alone (a home on NFS without lockd) said not where
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def held(path: Path) -> bool:
    """Whether a process holds a flock (exclusive's lock) on `path` (`holder_pids`), asked without taking a lock an
    `up` starting that instant would find taken. False when `path` or the kernel's table cannot be read."""
    return bool(holder_pids(path))


LOCKS_TABLE = Path("/proc/locks")  # the kernel's table of every file lock (proc_locks(5))


def holder_pids(path: Path) -> list[int]:
    """The ids of the processes that hold a flock on `path`, read from the kernel's table of locks (LOCKS_TABLE:
    'N: FLOCK  ADVISORY  WRITE PID MAJOR:MINOR:INODE 0 EOF', proc_locks(5); a waiter's line, 'N: -> FLOCK ...', holds
    nothing). A row names its file by the superblock's device (fs/locks.c lock_get_status: inode->i_sb->s_dev), which
    is not always the st_dev stat gives (btrfs: each subvolume's anonymous device; overlayfs: its own): a row that
    does not match by the numbers is still the holder's when that process has `path` open with a lock on it
    (_locks_it). [] when `path` or the table cannot be read (no /proc). A holder in another PID namespace shows as 0,
    which is left out (no process this one can name)."""
    try:
        st = path.stat()
        table = LOCKS_TABLE.read_text(encoding="ascii", errors="replace")
    except OSError:
        return []
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    rows = [f for f in (line.split() for line in table.splitlines())
            if f[1:2] == ["FLOCK"] and len(f) > 5 and f[4].isdecimal() and int(f[4])]  # fmt: skip
    exact = [int(f[4]) for f in rows if f[5] == key]
    return exact or [pid for pid in dict.fromkeys(int(f[4]) for f in rows) if _locks_it(pid, st)]


def _locks_it(pid: int, st: os.stat_result) -> bool:
    """Whether process `pid` has the file `st` is of open with a flock on it: one of its descriptors, stat'ed through
    /proc/PID/fd/N as the file was, whose /proc/PID/fdinfo/N lists a 'lock:' FLOCK line (the locks of that open file:
    fs/locks.c show_fd_locks, Linux 4.1+). No device numbers are compared with the table's. False where they cannot
    be read (another user's process)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            seen = os.stat(f"/proc/{pid}/fd/{fd}")
            if (seen.st_dev, seen.st_ino) != (st.st_dev, st.st_ino):
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}", encoding="ascii", errors="replace") as info:
                if any(line.startswith("lock:") and "FLOCK" in line.split() for line in info):
                    return True
        except OSError:
            continue
    return False
