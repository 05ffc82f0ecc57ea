"""paths.holder_pids where the kernel's table of locks names the file by another device than stat gives it: btrfs
gives each subvolume an anonymous st_dev while /proc/locks prints the superblock's (fs/locks.c lock_get_status:
inode->i_sb->s_dev), and overlayfs stats its files as its own. The holder is then found by the lock its open file
shows (/proc/PID/fdinfo/N 'lock:' lines, Linux 4.1+), not by the numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from onechip import paths

HOLDER = (
    "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600); fcntl.flock(fd, fcntl.LOCK_EX); "
    "print('held', flush=True); sys.stdin.read()"
)


@pytest.fixture
def held_by_child(tmp_path):
    """A lock file a child process holds (flock, as paths.exclusive takes it): (path, the child's pid)."""
    path = tmp_path / "n.lock"
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"held\n"
        yield path, child.pid
    finally:
        child.communicate(timeout=30)


def _table_as(monkeypatch, tmp_path: Path, device: str | None, inode: str | None) -> str:
    """Point holder_pids at a copy of /proc/locks whose rows name their files by `device` and `inode` (None: as the
    kernel wrote it): what it reads on a file system whose stat gives other numbers."""
    rows = []
    for line in Path("/proc/locks").read_text(encoding="ascii").splitlines():
        f = line.split()
        if len(f) > 5 and f[1] == "FLOCK":
            major, minor, ino = f[5].split(":")
            f[5] = f"{device or major + ':' + minor}:{inode or ino}"
        rows.append(" ".join(f))
    table = tmp_path / "locks"
    table.write_text("\n".join(rows) + "\n", encoding="ascii")
    monkeypatch.setattr(paths, "LOCKS_TABLE", table)
    return table.read_text()


def test_the_holder_is_named_when_the_table_says_the_same_numbers(held_by_child):
    path, pid = held_by_child
    assert paths.holder_pids(path) == [pid] and paths.held(path)


@pytest.mark.parametrize(("device", "inode"), [("00:2f", None), ("00:2f", "424242")])
def test_the_holder_is_named_when_the_table_gives_the_file_another_device(held_by_child, monkeypatch, tmp_path,
                                                                         device, inode):  # fmt: skip
    # Before: [] ('its pid not readable'), and paths.held False: an `up` holding the engine state's lock was not seen
    path, pid = held_by_child
    _table_as(monkeypatch, tmp_path, device, inode)
    assert paths.holder_pids(path) == [pid] and paths.held(path)


def test_another_file_locked_by_the_same_process_is_not_taken_for_it(held_by_child, monkeypatch, tmp_path):
    path, pid = held_by_child
    other = tmp_path / "other.lock"
    other.touch()
    _table_as(monkeypatch, tmp_path, "00:2f", None)
    assert paths.holder_pids(other) == [] and not paths.held(other)
