"""`onechip down` on a home that cannot be written (qa66c): with nothing running it said 'HOME/engine.lock: Read-only
file system', exit 1, as it took the engine-state lock (creating its file) before it looked for a record, though its
help says it is safe to run. Nothing to stop now says so, exit 0, and writes nothing; with a record to drop, one line
naming the path, and the record stays (it is all that finds the engine).

The tests run as root, whom chmod does not stop: a write under the home is answered EROFS where the OS would answer
it (os.open with a flag that writes or creates, mkdir), as on a read-only mount (checked on a real read-only bind
mount: the same lines)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state as engine_state_module


@pytest.fixture
def read_only_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("ONECHIP_HOME", str(home))
    real_open, real_mkdir = os.open, Path.mkdir
    writes = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND

    def under_home(path: object) -> bool:
        return Path(os.fsdecode(path)).absolute().is_relative_to(home)  # type: ignore[arg-type]

    def open_(path: object, flags: int, *args: object, **kwargs: object) -> int:
        if flags & writes and under_home(path):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.fsdecode(path))  # type: ignore[arg-type]
        return real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    def mkdir(self: Path, *args: object, **kwargs: object) -> None:
        if under_home(self):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(self))
        real_mkdir(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", open_)
    monkeypatch.setattr(Path, "mkdir", mkdir)
    return home


def test_down_with_nothing_running_on_a_read_only_home_says_so_and_exits_0(run, read_only_home: Path) -> None:
    code, out, err = run("down")
    assert (code, err) == (0, "") and out.strip() == "no engine was running"
    assert list(read_only_home.iterdir()) == []


def test_down_with_a_record_on_a_read_only_home_is_one_line_naming_the_path(run, read_only_home: Path) -> None:
    record = engine_state_module.state_path()
    record.write_text(engine_state().model_dump_json(indent=2))  # builtins.open: not the patched os.open
    code, out, err = run("down")
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"error: {read_only_home}") and "Read-only file system" in lines[0]
    assert record.is_file()
