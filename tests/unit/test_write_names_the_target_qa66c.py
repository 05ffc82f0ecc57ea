"""A write that fails names the file the user's command was writing, never a temporary one beside it (qa66c): on a
read-only run directory `report` and `cost --write` said 'cannot write runs/x/.report.md.PID.THREAD.tmp' (paths.
write_text_atomic, test_paths.py), and a home that cannot be written made `cloud up` name '.owner-id.<hex>.tmp'."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from onechip.cloud import records


def test_an_owner_id_that_cannot_be_written_names_owner_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))

    def read_only(target: Path, text: str) -> Path:  # as paths.write_text_atomic raises it: naming its target
        raise OSError(errno.EROFS, "Read-only file system", str(target))

    monkeypatch.setattr(records, "write_text_atomic", read_only)
    with pytest.raises(OSError) as info:
        records.owner_id()
    assert info.value.filename == str(tmp_path / "home" / "cloud" / "owner-id")
