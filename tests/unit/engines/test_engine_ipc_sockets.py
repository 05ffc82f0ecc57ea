"""vLLM's zmq IPC sockets (ipc://$VLLM_RPC_BASE_PATH/<uuid4>, default the temporary directory) go in a folder of the
engine's own, which stop() and `down` remove: a killed engine never unlinks them, and hundreds piled up in /tmp."""

from __future__ import annotations

import re
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_engine_lifecycle import FakeEngine
from tests.factories import engine_state

from onechip.engines import local, state


@pytest.fixture
def short() -> Iterator[Path]:
    """A folder with a short path (a socket's holds 107 bytes at most; pytest's tmp_path is longer), removed after."""
    folder = Path(tempfile.mkdtemp(prefix="oc-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder)


@pytest.fixture
def tmp(short, monkeypatch) -> Path:
    """The temporary directory, of this process and of the engines it starts: empty at first."""
    folder = short / "t"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _socket(log: Path) -> Path:
    for _ in range(100):
        match = re.search(r"ipc=(\S+)", log.read_text() if log.exists() else "")
        if match:
            return Path(match.group(1))
        time.sleep(0.1)
    raise AssertionError("the fake engine never bound its IPC socket")


def _booted(log: Path) -> tuple[FakeEngine, Path]:
    engine = FakeEngine(log)
    engine.fake_flags = ["--fake-ipc"]
    engine.start()
    engine.wait_ready(timeout_s=30)
    return engine, _socket(log)


def test_an_engines_sockets_go_beside_its_log_and_go_with_it(tmp, short):
    engine, sock = _booted(short / "engine.log")
    try:
        assert sock.parent == short / "engine.ipc" and stat.S_ISSOCK(sock.stat().st_mode)
        assert engine.state().ipc_dir == str(short / "engine.ipc")  # `down`, in another process, finds it
    finally:
        engine.stop()
    assert not (short / "engine.ipc").exists()
    assert list(tmp.iterdir()) == []  # nothing left in the temporary directory


def test_a_folder_too_deep_for_a_socket_gives_one_in_the_temporary_directory(tmp, tmp_path):
    deep = tmp_path / ("d" * 60) / "engine.log"
    deep.parent.mkdir()
    engine, sock = _booted(deep)
    try:
        assert sock.parent.parent == tmp and sock.parent.name.startswith("onechip-ipc-")
    finally:
        engine.stop()
    assert list(tmp.iterdir()) == []


def test_down_removes_the_sockets_of_an_engine_that_was_killed(short, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(short))
    folder = short / "engine" / "engine.ipc"
    folder.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as left:  # what a SIGKILLed vLLM leaves: bound, never unlinked
        left.bind(str(folder / "0528dc1a-013c-49c8-a054-39a6ed803c27"))
    state.save(engine_state(ipc_dir=str(folder)))
    assert "already gone" in state.down().note
    assert not folder.exists()


def test_only_sockets_are_removed_from_a_recorded_folder(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with socket.socket(socket.AF_UNIX) as left:
        left.bind(str(tmp_path / "s"))
    local.remove_rpc_dir(str(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
