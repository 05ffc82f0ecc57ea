"""paths.exclusive on a file system that has no flock (an NFS mount without lockd answers ENOLCK; some FUSE file
systems ENOSYS or EOPNOTSUPP): the error names the lock file, so a user can tell which home to move."""

from __future__ import annotations

import errno
import fcntl

import pytest

from onechip.paths import exclusive


@pytest.mark.parametrize("code", [errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS])
def test_a_file_system_without_flock_is_said_with_the_lock_file(tmp_path, monkeypatch, code):
    # Before: 'file-system error: No locks available' (`cloud up`, exit 1): flock's OSError names no file
    def refused(fd: int, operation: int) -> None:
        raise OSError(code, "refused by the file system")

    monkeypatch.setattr(fcntl, "flock", refused)
    path = tmp_path / "claims" / "n.lock"
    with pytest.raises(OSError) as info, exclusive(path, "busy"):
        pass
    assert info.value.errno == code and info.value.filename == str(path), info.value
