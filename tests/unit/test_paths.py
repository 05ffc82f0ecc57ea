"""paths.home_store: a renamed store keeps what users stored under its old name; open_regular: an input file is
a regular file or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from onechip.paths import (
    MAX_INPUT_BYTES,
    NotRegularFileError,
    TooLargeError,
    home_store,
    open_owner_only,
    open_regular,
    read_regular,
    write_text_atomic,
)


def test_a_renamed_store_moves_old_files_and_never_overwrites(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "a.json").write_text("old a")
    (tmp_path / "old" / "b.json").write_text("old b")
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "b.json").write_text("new b")
    store = home_store("new", formerly="old")
    assert store == tmp_path / "new"
    assert (store / "a.json").read_text() == "old a" and (store / "b.json").read_text() == "new b"
    assert (tmp_path / "old" / "b.json").read_text() == "old b"  # kept where it was, not lost
    assert not home_store("absent", formerly="never").exists()


def test_an_owner_only_log_is_0600_even_when_it_existed_world_readable(tmp_path):
    log = tmp_path / "engine.log"
    log.write_bytes(b"old\n")
    log.chmod(0o644)
    with open_owner_only(log, append=True) as sink:
        sink.write(b"new\n")
    assert log.stat().st_mode & 0o777 == 0o600 and log.read_bytes() == b"old\nnew\n"
    with open_owner_only(log, append=False) as sink:
        sink.write(b"x")
    assert log.read_bytes() == b"x"


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp: tmp,  # a directory
        lambda tmp: Path("/dev/zero"),  # a device that reads without end
        lambda tmp: (os.mkfifo(tmp / "f"), tmp / "f")[1],  # a FIFO with no writer: opening it waited for one
    ],
)
def test_open_regular_refuses_what_is_not_a_regular_file_without_waiting(tmp_path: Path, make):
    # (a Unix socket cannot be opened at all: open() raises ENXIO, an OSError every reader reports)
    path = make(tmp_path)
    with pytest.raises(NotRegularFileError) as info:
        open_regular(path)
    assert str(info.value) == f"{path} is not a regular file" and info.value.strerror == "not a regular file"


def test_open_regular_reads_a_regular_file_through_a_symlink(tmp_path: Path):
    (tmp_path / "a.json").write_bytes(b"{}")
    (tmp_path / "link.json").symlink_to(tmp_path / "a.json")
    with open_regular(tmp_path / "link.json") as file:
        assert file.read() == b"{}"
    with pytest.raises(FileNotFoundError):
        open_regular(tmp_path / "absent.json")


def test_read_regular_refuses_a_file_past_its_bound_before_reading_it(tmp_path):
    # an 8 GiB file given as a plan, a trace, a token file or a run's summary.json was read whole: internal error
    # (MemoryError) under a heap cap, as the MCP server's (found by helper break3)
    sparse = tmp_path / "sparse.json"
    with sparse.open("wb") as f:
        f.truncate(MAX_INPUT_BYTES + 1)  # no disk used: a sparse file
    with pytest.raises(TooLargeError) as caught:
        read_regular(sparse)
    assert caught.value.strerror == f"larger than {MAX_INPUT_BYTES:,} bytes, more than any file onechip reads"
    assert str(caught.value) == f"{sparse} is {caught.value.strerror}"
    (tmp_path / "small").write_bytes(b"12345")
    assert read_regular(tmp_path / "small", max_bytes=5) == b"12345"
    with pytest.raises(TooLargeError):
        read_regular(tmp_path / "small", max_bytes=4)


def test_two_threads_writing_one_file_at_once_each_write_whole(tmp_path, monkeypatch):
    """write_text_atomic's temporary file was named by the process alone (.NAME.PID.tmp): the MCP server runs each
    tool call in a thread of one process, so two calls writing one file at once (two simulate into one out_dir, two
    report of one run) wrote into one temporary file, the one rename moved it (what both had written, interleaved)
    and the other failed: 'summary.json: No such file or directory'."""
    import threading

    from onechip import paths

    target = tmp_path / "summary.json"
    both_written = threading.Barrier(2, timeout=10)
    fsync = os.fsync
    monkeypatch.setattr(paths.os, "fsync", lambda fd: (both_written.wait(), fsync(fd)))
    texts, errors = ["a" * 10_000, "b" * 10], []

    def write(text: str) -> None:
        try:
            write_text_atomic(target, text)
        except OSError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(t,)) for t in texts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == [] and target.read_text() in texts
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary file left


def test_a_write_that_fails_names_the_file_asked_for_not_its_temporary(tmp_path: Path) -> None:
    """On a read-only run directory `report` said 'cannot write runs/x/.report.md.PID.THREAD.tmp: Read-only file
    system' (qa66a): the temporary file's open failed, and so did removing it (unlink answers EROFS before it looks
    for the name), and that second error, naming the temporary file, replaced the first. A folder that is a file
    fails both the same way for root too (ENOTDIR), which is what this test uses."""
    (tmp_path / "runs").write_text("a file where the run directory should be")
    target = tmp_path / "runs" / "report.md"
    with pytest.raises(NotADirectoryError) as info:
        write_text_atomic(target, "# report\n")
    assert info.value.filename == str(target) and info.value.filename2 is None
    assert [p.name for p in tmp_path.iterdir()] == ["runs"]
