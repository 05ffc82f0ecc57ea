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


BINPRM_BUF_SIZE = 256  # bytes of a script the kernel reads its '#!' line from (include/uapi/linux/binfmts.h, 5.1 on)


def hash_bang(first: bytes) -> tuple[str, str | None] | None:
    """The interpreter and its one optional argument of a script whose first bytes are `first`, as Linux reads them
    (fs/binfmt_script.c, load_script): the line after '#!', trailing spaces and tabs trimmed; past any spaces or tabs
    the interpreter, up to the next space, tab or NUL; past the spaces and tabs after it, the rest of the line as ONE
    argument, whatever spaces it holds ('#!/usr/bin/env python3 -u' hands env the word 'python3 -u'). Only spaces
    and tabs separate: a CRLF line's '\r' is part of what it ends. None when `first` is no '#!' line or names no
    interpreter."""
    if not first.startswith(b"#!"):
        return None
    line = first[2:BINPRM_BUF_SIZE].split(b"\n", 1)[0].decode("utf-8", "surrogateescape").strip(" \t")
    end = next((i for i, c in enumerate(line) if c in " \t\0"), len(line))
    if end == 0:
        return None
    rest = line[end:]  # a NUL ends the line as C reads it
    argument = "" if rest.startswith("\0") else rest.split("\0", 1)[0].lstrip(" \t")
    return line[:end], argument or None


def missing_interpreter(program: str) -> str | None:
    """The interpreter on `program`'s '#!' line (hash_bang) when it is not an executable file, else None; under
    `#!/usr/bin/env ARG`, the program env looks up on PATH when it is not there: ARG whole (env is handed one
    argument), or with `env -S` (coreutils env(1), --split-string) the first of ARG's words that is no option and no
    NAME=VALUE. exec fails on such a script with ENOENT as if the script itself were missing (execve(2): 'the file
    pathname or a script or ELF interpreter does not exist'), so the shell says 'PROGRAM: not found' of a file that is
    there: a `vllm` script whose venv was moved or deleted."""
    try:
        with open(program, "rb") as script:
            read = hash_bang(script.read(BINPRM_BUF_SIZE))
    except OSError:
        return None  # not a readable file: exec's own error says what it is
    if read is None:
        return None
    interpreter, argument = read
    if os.path.basename(interpreter) == "env" and argument is not None:
        return _env_program_missing(argument)
    return None if os.path.isfile(interpreter) and os.access(interpreter, os.X_OK) else interpreter


# env(1)'s options whose value is the next word (coreutils env: -u/--unset NAME, -C/--chdir DIR, -a/--argv0 ARG)
_ENV_VALUED = ("-u", "--unset", "-C", "--chdir", "-a", "--argv0")


def _env_program_missing(argument: str) -> str | None:
    """The program `env ARGUMENT` runs when it is not on PATH, else None; None too where env runs none or this does
    not tell which (an option other than -S, or a NAME=VALUE, which env(1) reads as a variable to set)."""
    if argument.startswith("-S"):  # env -S splits the rest, options (and their values) and NAME=VALUEs first
        words, name = iter(argument[2:].split()), None
        for word in words:
            if word in _ENV_VALUED:
                next(words, None)
            elif not word.startswith("-") and "=" not in word:
                name = word
                break
    else:
        name = None if argument.startswith("-") or "=" in argument else argument
    return None if name is None or shutil.which(name) else name


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


def zombie(pid: int) -> bool:
    """Whether process `pid` has exited and waits for its parent to reap it (state 'Z', field 3 of /proc/<pid>/stat,
    proc(5)): it still has its pid and start time, and runs nothing. False when there is no such process."""
    fields = _stat_fields(pid)
    return fields is not None and fields[:1] == [b"Z"]


def command_line(pid: int) -> str | None:
    """Process `pid`'s command line (/proc/<pid>/cmdline, proc(5): its arguments, NUL-separated, joined by spaces
    here); None when there is no such process, no /proc, or it shows none (a zombie, a kernel thread)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read().rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return None
    return words or None


def pids() -> list[str] | None:
    """The process ids /proc lists now (its numeric entries, proc(5)), as their folder names; None without /proc."""
    try:
        return [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return None


def group_tree(pgid: int) -> set[int] | None:
    """The processes of process group `pgid` and every process descended from one of them, in whatever group or
    session it runs (a launcher's `setsid`, sudo's own session): fields 4 (ppid) and 5 (pgrp) of /proc/<pid>/stat,
    proc(5), zombies too; None without /proc."""
    listed = pids()
    if listed is None:
        return None
    parents: dict[int, int] = {}
    tree: set[int] = set()
    for pid in listed:
        fields = _stat_fields(pid)
        if fields is not None and len(fields) > 2:
            parents[int(pid)] = int(fields[1])
            if fields[2] == str(pgid).encode():
                tree.add(int(pid))
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree and pid not in tree}
        tree |= more
        grew = bool(more)
    return tree


def group_runs(pgid: int) -> bool | None:
    """Whether process group `pgid` has a member that is not a zombie (state 'Z': exited, not yet reaped by its parent;
    proc(5) fields 3 and 5), from /proc: its leader first, then every process; None without /proc."""
    leader = _stat_fields(pgid)
    if leader is not None and len(leader) > 2 and leader[2] == str(pgid).encode() and leader[0] != b"Z":
        return True
    listed = pids()
    if listed is None:
        return None
    for pid in listed:
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
