"""Child-process plumbing shared by the engines and the bench workers."""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send `sig` to this process when its parent dies (Linux PR_SET_PDEATHSIG).

    Meant as a `preexec_fn`: it runs in the child between fork and exec, so a SIGKILLed onechip still takes
    its children with it.
    """
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)


def missing_interpreter(program: str) -> str | None:
    """The interpreter on `program`'s '#!' line (a script's path) when it is not an executable file, else None; a
    `#!/usr/bin/env NAME` line's NAME when it is not on PATH. exec fails on such a script with ENOENT as if the script
    itself were missing (execve(2): 'the file pathname or a script or ELF interpreter does not exist'), so the shell
    says 'PROGRAM: not found' of a file that is there: a `vllm` script whose venv was moved or deleted."""
    try:
        with open(program, "rb") as script:
            first = script.readline(256)
    except OSError:
        return None  # not a readable file: exec's own error says what it is
    words = first[2:].decode("utf-8", "replace").split() if first.startswith(b"#!") else []
    if not words:
        return None
    interpreter = words[0]
    if os.path.basename(interpreter) == "env" and len(words) > 1 and not words[1].startswith("-"):
        return None if shutil.which(words[1]) else words[1]
    return None if os.path.isfile(interpreter) and os.access(interpreter, os.X_OK) else interpreter


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """Fields 3 on of /proc/<pid>/stat (proc(5)): field 3 (state) is [0], 5 (pgrp) [2], 22 (starttime) [19]; None
    when there is no such process (or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()  # after the command name, which may hold spaces
    except (OSError, IndexError):
        return None


def start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks after the boot (field 22 of /proc/<pid>/stat, proc(5)); None when
    there is no such process (or no /proc). A pid the kernel reused for another process has another start time."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def group_runs(pgid: int) -> bool | None:
    """Whether process group `pgid` has a member that is not a zombie (state 'Z': exited, not yet reaped by its parent;
    proc(5) fields 3 and 5), from /proc: its leader first, then every process; None without /proc."""
    leader = _stat_fields(pgid)
    if leader is not None and len(leader) > 2 and leader[2] == str(pgid).encode() and leader[0] != b"Z":
        return True
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None and len(fields) > 2 and fields[2] == str(pgid).encode() and fields[0] != b"Z":
            return True
    return False


# The heap limit this process had before cap_heap, given back to the engines it starts (None: never capped).
_UNCAPPED: tuple[int, int] | None = None


def heap_in_use_bytes() -> int | None:
    """What this process holds against RLIMIT_DATA now, bytes: VmData of /proc/self/status (the kernel's count of
    the data, heap and private mappings the limit bounds, proc(5)); None where there is no such file (not Linux)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            line = next((line for line in status if line.startswith("VmData:")), None)
    except OSError:
        return None
    return int(line.split()[1]) * 1024 if line is not None else None  # 'VmData:   77976 kB'


def cap_heap(limit_bytes: int) -> None:
    """Cap this process's heap (RLIMIT_DATA) at `limit_bytes`: an allocation past it raises MemoryError in
    the thread that asked, instead of the kernel killing the process (the MCP server uses it so one job
    cannot take it down). Children inherit limits: an engine started afterwards gets the old one back
    (uncap_child)."""
    global _UNCAPPED
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    cap = limit_bytes if hard == resource.RLIM_INFINITY else min(limit_bytes, hard)
    if soft == resource.RLIM_INFINITY or soft > cap:
        _UNCAPPED = _UNCAPPED or (soft, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (cap, hard))


def uncap_child(pid: int) -> None:
    """Give child `pid` (an engine: vLLM holds its weights and KV cache in host memory too) the heap limit
    this process had before cap_heap. Nothing to do when this process was never capped."""
    if _UNCAPPED is not None:
        try:
            resource.prlimit(pid, resource.RLIMIT_DATA, _UNCAPPED)
        except (ProcessLookupError, PermissionError):  # already gone, or not ours to change: it boots capped
            return
