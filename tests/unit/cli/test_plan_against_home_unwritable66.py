"""plan --against with a home it cannot write (a read-only mount, measured here: 'error: /home: Read-only file
system', exit 1) lost the plan and its cross-check over the boot it could not store; the plan is printed, and the
line CrossCheck.not_stored says why the boot was not kept, as for a boot it does not learn from."""

from __future__ import annotations

import errno
from pathlib import Path

from onechip.api import _plan

LOG = Path(__file__).parents[2] / "fixtures" / "bootlogs" / "a100-llama31-8b-len131072-util092-v0310.log"


def test_a_boot_the_home_cannot_keep_still_gets_its_plan(run, offline_home: Path, monkeypatch) -> None:
    def read_only(target: Path, text: str) -> Path:  # as a read-only file system answers the write
        raise OSError(errno.EROFS, "Read-only file system", str(target))

    monkeypatch.setattr(_plan, "write_text_atomic", read_only)
    code, out, err = run("plan", "Llama-3.1-8B-Instruct", "--chip", "a100-80gb", "--against", str(LOG))
    assert code == 0 and err == "", err
    assert "Llama-3.1-8B-Instruct on a100-80gb" in out
    said = " ".join(out.split())
    assert "not stored as this deployment's measured boot: cannot write " in said, out
    assert ": Read-only file system" in said
