"""What a command that measures (bench, check, demo) says when a Ctrl-C (or SIGTERM, SIGHUP: cli.main._terminate)
stops it outside its job's own handler: nothing written, or where what it measured is."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from onechip.errors import Interrupted


@contextmanager
def ctrl_c_says_what_is_kept(command: str, out_dir: Path | None, *files: str) -> Iterator[None]:
    """A KeyboardInterrupt inside raised as Interrupted saying what is true of `command`'s run in `out_dir` (None: it
    writes none): where it is once one of `files` (names in out_dir: schemas.run.RUN_FILES) is written, else that
    nothing was written. The jobs raise their own Interrupted for a Ctrl-C while they measure (bench.run_grid,
    checks.run_checks, api.demo), which passes through; this one says it of a Ctrl-C before (asking the server what
    it serves, picking the run) or after (drawing the tables), which said 'what was measured is kept on disk' either
    way."""
    try:
        yield
    except KeyboardInterrupt:
        if out_dir is not None and any((out_dir / name).is_file() for name in files):
            raise Interrupted(f"{command} interrupted; what was measured is in {out_dir}") from None
        raise Interrupted(f"{command} interrupted; nothing written") from None
