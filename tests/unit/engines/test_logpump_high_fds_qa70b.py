"""The log writer's descriptors numbered 1,024 or more (helper qa70b, 2026-12-07): onechip.logpump waited on them with
select.select, which takes no descriptor at or past FD_SETSIZE (1,024 on Linux: select(2), 'fd_set ... cannot
handle file descriptors higher than FD_SETSIZE'; Python raises 'filedescriptor out of range in select()'). A
process that holds many files (an MCP server that started engines many times; the unit tests' own session, where the
quiet-pipe test of test_logpump_wraps_safety70.py failed so) passed it such sync descriptors: the writer died at its
first wait, exit 1, and the engine's output went nowhere. It waits with poll(2) now, which has no such limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from onechip import logpump
from onechip.engines.local import LogWriter

SRC = str(Path(logpump.__file__).parents[1])  # the folder onechip is imported from
HIGH_FD = 1500  # past FD_SETSIZE


def test_the_writer_answers_a_sync_on_descriptors_past_fd_setsize(tmp_path: Path) -> None:
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= HIGH_FD + 4:
        pytest.skip("this process may not open descriptors that high")
    output, into_log = os.pipe()
    ask_r, ask_w = os.pipe()
    answer_r, answer_w = os.pipe()
    high = [HIGH_FD, HIGH_FD + 1, HIGH_FD + 2]
    for fd, to in zip((output, ask_r, answer_w), high, strict=True):
        os.dup2(fd, to)
        os.close(fd)
    log_path = tmp_path / "engine.log"
    try:
        with log_path.open("wb") as log:
            writer = subprocess.Popen(  # noqa: S603 - argv list, no shell
                [sys.executable, "-m", "onechip.logpump", str(high[1]), str(high[2])],
                stdin=high[0], stdout=log, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": SRC},
                pass_fds=high[1:],
            )  # fmt: skip
    finally:
        for fd in high:
            os.close(fd)
    try:
        os.write(into_log, b"INFO one\n")
        os.write(ask_w, b"?")
        assert os.read(answer_r, 1) == b"."  # answered: the line is on disk
        assert log_path.read_bytes() == b"INFO one\n"
    finally:
        for fd in (into_log, ask_w, answer_r):
            os.close(fd)
        assert writer.wait(60) == 0


def test_an_up_whose_process_holds_a_thousand_files_syncs_its_log_writer(tmp_path: Path) -> None:
    """engines.local.LogWriter.sync waited on its answer with select.select too: ValueError in `up` itself."""
    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= HIGH_FD + 16:
        pytest.skip("this process may not open descriptors that high")
    taken: list[int] = []
    try:
        while not taken or taken[-1] < HIGH_FD:  # every lower number taken: the writer's pipes are numbered past it
            taken.append(os.open(os.devnull, os.O_RDONLY))
        output, into_log = os.pipe()
        with (tmp_path / "engine.log").open("wb") as log:
            writer = LogWriter(output, log, dict(os.environ))
        os.close(output)
        os.write(into_log, b"INFO one\n")
        writer.sync()
        assert (tmp_path / "engine.log").read_bytes() == b"INFO one\n"
        os.close(into_log)
        writer.close()
        assert writer.process.returncode == 0
    finally:
        for fd in taken:
            os.close(fd)
