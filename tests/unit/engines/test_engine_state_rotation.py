"""engines/state.log_lines: `logs --follow` of an engine whose log is rotated between the follow's two checks (its read
to the end, then whether the engine is alive). Found at stop 65: the engine dying after a rotation (helper cloud65), and
the new file at the log's name removed before the follow opens it (helper loose65). The rotation, the death and the
removal are injected at the check or the open itself, never raced with a sleep."""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from factories import engine_state
from onechip.engines import state
from onechip.errors import EngineError


def _engine_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The recorded engine's log, holding 'before', in a home at `tmp_path`."""
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    log = tmp_path / "engine.log"
    log.write_text("before\n")
    state.save(engine_state(log_path=str(log)))
    return log


def _rotate(log: Path) -> None:
    """logrotate's 'create': the log renamed, a new file made at its name ('after', the engine's last words)."""
    log.rename(log.with_name("engine.log.1"))
    log.write_text("after\n")


def _followed_to_the_death() -> list[str]:
    """The lines `logs --follow` shows before it says the engine exited."""
    seen: list[str] = []
    with pytest.raises(EngineError, match="exited"):
        for line in state.log_lines(follow=True):
            seen.append(line)
    return seen


def _removed_before_its_open(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """The follow's second open (the file now at the log's name) finds it removed: logrotate's 'create' made it, then
    something (a second rotation's 'delaycompress' cleanup, a user) removed it between _moved and _open_log."""
    opened = [0]
    real_open = state._open_log

    def open_log(path: Path, follow: bool = False):
        opened[0] += 1
        if opened[0] == 2:
            log.unlink()
        return real_open(path, follow)

    monkeypatch.setattr(state, "_open_log", open_log)


def test_follow_reads_the_new_log_of_an_engine_rotated_then_dead_between_its_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: on the death the follow read the rest of the file it had open (the renamed one) and stopped, so what the
    # engine wrote to the new file at the log's name ('after', its last words) was never shown
    log = _engine_log(tmp_path, monkeypatch)
    checks: list[int] = []

    def rotated_then_dead(_: object) -> bool:  # rotated once, then the death
        if not checks:
            _rotate(log)
        checks.append(1)
        return False

    monkeypatch.setattr(state, "engine_alive", rotated_then_dead)
    assert _followed_to_the_death() == ["before", "after"]


def test_a_follow_whose_new_log_is_removed_after_the_death_still_says_the_engine_exited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before: FileNotFoundError from _open_log left the follow, a one-line file-system error (exit 1), not 'exited'
    log = _engine_log(tmp_path, monkeypatch)

    def rotated_then_dead(_: object) -> bool:
        _rotate(log)
        return False

    monkeypatch.setattr(state, "engine_alive", rotated_then_dead)
    _removed_before_its_open(monkeypatch, log)
    assert _followed_to_the_death() == ["before"]  # the new file's 'after' was removed unread: nothing more to read


def test_a_follow_whose_new_log_is_removed_while_the_engine_runs_reads_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _engine_log(tmp_path, monkeypatch)
    checks: list[int] = []

    def rotated_then_alive_once(_: object) -> bool:  # alive at the first check (rotated there), dead at the second
        checks.append(1)
        if len(checks) == 1:
            _rotate(log)
            return True
        return False

    monkeypatch.setattr(state, "engine_alive", rotated_then_alive_once)
    monkeypatch.setattr(state, "log_writer_note", lambda _: None)
    monkeypatch.setattr(state.time, "sleep", lambda _: None)
    _removed_before_its_open(monkeypatch, log)
    assert _followed_to_the_death() == ["before"] and len(checks) == 2  # followed on to the death, the old file kept


def _rotate_twice(log: Path) -> None:
    """Two of logrotate's 'create' rotations (numbered: engine.log.1 moves to .2) with the engine writing between:
    the file the follow holds is .2, the middle one .1, the one at the log's name the newest."""
    log.rename(log.with_name("engine.log.1"))
    log.write_text("middle\n")
    log.with_name("engine.log.1").rename(log.with_name("engine.log.2"))
    log.rename(log.with_name("engine.log.1"))
    log.write_text("after\n")


def test_follow_reads_every_rotated_log_of_an_engine_rotated_twice_then_dead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # files66: two rotations before the death check went from the held file straight to the one at the log's name:
    # the middle file's lines ('middle') were never shown; an older rotated log (yesterday's) is not read again
    log = _engine_log(tmp_path, monkeypatch)
    log.with_name("engine.log.3").write_text("yesterday\n")  # rotated before the follow began: .3 stays .3
    checks: list[int] = []

    def rotated_twice_then_dead(_: object) -> bool:
        if not checks:
            _rotate_twice(log)
        checks.append(1)
        return False

    monkeypatch.setattr(state, "engine_alive", rotated_twice_then_dead)
    assert _followed_to_the_death() == ["before", "middle", "after"]


def test_follow_reads_every_rotated_log_of_an_engine_rotated_twice_between_polls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = _engine_log(tmp_path, monkeypatch)
    # alive at the first check, rotated twice in the poll's sleep, then dead
    monkeypatch.setattr(state, "engine_alive", _alive_once())
    monkeypatch.setattr(state, "log_writer_note", lambda _: None)
    monkeypatch.setattr(state.time, "sleep", lambda _: _rotate_twice(log))
    assert _followed_to_the_death() == ["before", "middle", "after"]


def test_follow_reads_the_middle_log_when_the_held_one_was_rotated_away(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # qa66b: logrotate's 'rotate 1' (or 'compress': .2.gz is another file) removes the held file at the second
    # rotation, so it is among no numbered copy and the middle one, now .1, was skipped ('middle' never shown); a copy
    # last written before the held file was (yesterday's .3) is older and not read
    log = _engine_log(tmp_path, monkeypatch)
    yesterday = log.with_name("engine.log.3")
    yesterday.write_text("yesterday\n")
    os.utime(yesterday, (1, 1))
    checks: list[int] = []

    def rotated_twice_keeping_one_then_dead(_: object) -> bool:
        if not checks:
            _rotate_twice(log)
            log.with_name("engine.log.2").unlink()  # rotate 1: the oldest copy removed
        checks.append(1)
        return False

    monkeypatch.setattr(state, "engine_alive", rotated_twice_keeping_one_then_dead)
    assert _followed_to_the_death() == ["before", "middle", "after"]


# files67: rotation followed as `tail -F` does, by inode: the rest of the held file (renamed, removed or compressed
# away, its descriptor still reads it), then each rotated copy that appeared since the follow last looked (an inode it
# had not seen, oldest first), then the file at the name. dateext names are copies as numbered ones are; a compressed
# copy is never read; a copy that was there before is never read again, however late it was written.


def _rotate_dated(log: Path) -> None:
    """Two of logrotate's 'create' + 'dateext' rotations (dateformat -%Y%m%d%H) with the engine writing between."""
    log.rename(log.with_name("engine.log-2026120709"))
    log.write_text("middle\n")
    log.rename(log.with_name("engine.log-2026120710"))
    log.write_text("after\n")


def _alive_once() -> Callable[[object], bool]:
    """engine_alive that says the engine is alive at its first call, dead after."""
    checks: list[int] = []

    def alive_once(_: object) -> bool:
        checks.append(1)
        return len(checks) == 1

    return alive_once


def _dead_after(rotate: Callable[[], None]) -> Callable[[object], bool]:
    """engine_alive that rotates once at its first call, then says the engine is dead."""
    checks: list[int] = []

    def rotated_then_dead(_: object) -> bool:
        if not checks:
            rotate()
        checks.append(1)
        return False

    return rotated_then_dead


def test_follow_reads_the_middle_copy_of_two_dateext_rotations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: only numbered copies were looked for: 'middle' (engine.log-2026120709's second life) was never shown
    log = _engine_log(tmp_path, monkeypatch)
    log.with_name("engine.log-2026120608").write_text("yesterday\n")  # rotated before the follow began
    monkeypatch.setattr(state, "engine_alive", _dead_after(lambda: _rotate_dated(log)))
    assert _followed_to_the_death() == ["before", "middle", "after"]


def test_a_copy_written_late_by_someone_else_is_not_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: with the held file gone ('rotate 1'), every numbered copy last written no earlier than it was read: a
    # copy there before the follow began, written since by someone else (a user's `cp`, another tool), was replayed
    log = _engine_log(tmp_path, monkeypatch)
    other = log.with_name("engine.log.5")
    other.write_text("someone else's\n")

    def rotate() -> None:
        _rotate_twice(log)
        log.with_name("engine.log.2").unlink()  # rotate 1: the held file removed
        with other.open("a") as out:  # written after the held file's last write
            out.write("and more\n")
        os.utime(other, None)

    monkeypatch.setattr(state, "engine_alive", _dead_after(rotate))
    assert _followed_to_the_death() == ["before", "middle", "after"]


NOT_READ = "a rotated copy, {}-compressed, that this follow did not read; its lines are not shown here"


def _compress_rotate(log: Path, line: str, delay: bool) -> None:
    """One of logrotate's 'create' + 'compress' rotations (logrotate(8): 'Old versions of log files are compressed
    with gzip(1)'): the numbered copies shifted (a .N.gz renamed, keeping its inode), the log renamed to .1 and a new
    one made holding `line`; without 'delaycompress' .1 is gzipped at once into .1.gz (a new file) and removed; with
    it ('Postpone compression of the previous log file to the next rotation cycle') the .1 of the rotation before is
    gzipped to .2.gz first."""
    for n in range(8, 0, -1):
        if (old := log.with_name(f"engine.log.{n}.gz")).exists():
            old.rename(log.with_name(f"engine.log.{n + 1}.gz"))
    one = log.with_name("engine.log.1")
    if delay and one.exists():
        log.with_name("engine.log.2.gz").write_bytes(gzip.compress(one.read_bytes()))
        one.unlink()
    log.rename(one)
    if not delay:
        log.with_name("engine.log.1.gz").write_bytes(gzip.compress(one.read_bytes()))
        one.unlink()
    log.write_text(f"{line}\n")


def _rotating_per_look(*rotations: Callable[[], None]) -> Callable[[object], bool]:
    """engine_alive that makes rotation k at its k-th call, alive until the last."""
    calls: list[int] = []

    def alive(_: object) -> bool:
        calls.append(1)
        rotations[len(calls) - 1]()
        return len(calls) < len(rotations)

    return alive


def test_a_compressed_middle_rotation_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 'compress' without 'delaycompress', rotated twice between two looks: 'middle' is only in .1.gz (its plain file
    # removed), 'before' (the held file, read through its descriptor) in .2.gz. Before: .1.gz skipped without a word
    log = _engine_log(tmp_path, monkeypatch)
    monkeypatch.setattr(
        state, "engine_alive", _dead_after(lambda: [_compress_rotate(log, line, False) for line in ("middle", "after")])
    )
    gz = log.with_name("engine.log.1.gz")
    said = f"onechip: {gz}: {NOT_READ.format('gzip')}: zcat {gz}"
    assert _followed_to_the_death() == ["before", said, "after"]


@pytest.mark.parametrize("delay", [False, True], ids=["compress", "delaycompress"])
def test_a_compressed_copy_of_a_file_read_or_there_before_is_not_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, delay: bool
) -> None:
    # a rotation a look, each compressed copy the text of the held file (compress: .1.gz at once) or of the copy rotated
    # the time before (delaycompress: .2.gz), at the first rotation 'older', there before the follow began
    log = _engine_log(tmp_path, monkeypatch)
    log.with_name("engine.log.1").write_text("older\n")
    rotations = [lambda line=line: _compress_rotate(log, line, delay) for line in ("middle", "after")]
    monkeypatch.setattr(state, "engine_alive", _rotating_per_look(*rotations))
    monkeypatch.setattr(state.time, "sleep", lambda _: None)
    assert _followed_to_the_death() == ["before", "middle", "after"]


def test_a_copy_compressed_in_a_format_not_read_here_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # lz4 (its frame's magic, 04 22 4d 18): no module of Python's standard library decompresses it, so whose text it is
    # cannot be told: said, with the tool that prints it
    log = _engine_log(tmp_path, monkeypatch)
    lz4 = log.with_name("engine.log.1.lz4")

    def rotate() -> None:
        log.rename(log.with_name("engine.log.1"))
        lz4.write_bytes(b"\x04\x22\x4d\x18" + b"\0" * 16)
        log.with_name("engine.log.1").unlink()
        log.write_text("after\n")

    monkeypatch.setattr(state, "engine_alive", _dead_after(rotate))
    said = f"onechip: {lz4}: {NOT_READ.format('lz4')}: lz4cat {lz4}"
    assert _followed_to_the_death() == ["before", said, "after"]


def test_a_log_truncated_in_place_is_read_again_from_its_start_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # logrotate's 'copytruncate': the log copied (engine.log.1, never read: a copy of what was read), then cut to 0
    # where the engine goes on writing. Before: read again from 0 without a word, as if nothing happened
    log = _engine_log(tmp_path, monkeypatch)

    def copytruncate(_: object) -> None:
        log.with_name("engine.log.1").write_bytes(log.read_bytes())
        os.truncate(log, 0)
        log.write_text("after\n")

    monkeypatch.setattr(state, "engine_alive", _alive_once())
    monkeypatch.setattr(state, "log_writer_note", lambda _: None)
    monkeypatch.setattr(state.time, "sleep", copytruncate)
    assert _followed_to_the_death() == ["before", f"onechip: {log}: file truncated; reading it from its start", "after"]


def test_a_follow_whose_log_name_is_taken_by_a_directory_reads_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # qa67b: the log removed and a directory made at its name while the engine runs: _moved took it for a new log and
    # the follow ended on 'Is a directory' (exit 1) with the engine still writing to the file it holds; tail -F says
    # the name is 'replaced with an untailable file' and reads on. A name with no regular file is no new log
    log = _engine_log(tmp_path, monkeypatch)

    def replaced_by_a_directory(_: float) -> None:
        with log.open("a") as held:  # the engine writes on to the file it holds
            log.unlink()
            log.mkdir()
            held.write("written after\n")

    monkeypatch.setattr(state, "engine_alive", _alive_once())
    monkeypatch.setattr(state, "log_writer_note", lambda _: None)
    monkeypatch.setattr(state.time, "sleep", replaced_by_a_directory)
    assert _followed_to_the_death() == ["before", "written after"]


def test_a_corrupt_compressed_copy_is_said_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # qa68c: a .1.gz whose deflate data is damaged past its header (a disk error, a copy cut and written over) makes
    # gzip raise zlib.error ('Error -3 while decompressing data: invalid stored block lengths'), no OSError: the follow
    # stopped with an internal error. Whose text it is cannot be told, so it is said as one no module here reads
    log = _engine_log(tmp_path, monkeypatch)
    gz = log.with_name("engine.log.1.gz")

    def rotate() -> None:
        log.rename(log.with_name("engine.log.1"))
        packed = gzip.compress(b"middle\n" * 1000)
        gz.write_bytes(packed[:10] + bytes(byte ^ 0x55 for byte in packed[10:40]) + packed[40:])
        log.with_name("engine.log.1").unlink()
        log.write_text("after\n")

    monkeypatch.setattr(state, "engine_alive", _dead_after(rotate))
    said = f"onechip: {gz}: {NOT_READ.format('gzip')}: zcat {gz}"
    assert _followed_to_the_death() == ["before", said, "after"]
