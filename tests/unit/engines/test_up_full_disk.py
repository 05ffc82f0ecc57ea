"""A full disk at the very end of `up`, once its engine serves: the write of boot.json (or of engine.json as well)
fails. Before, `up` said only 'PATH: No space left on device' (exit 1), as if nothing ran, while the engine served
on, on record as booting. Now its one line says the engine serves at its URL and that `onechip down` stops it, and
the record status and down read is kept."""

from __future__ import annotations

import errno
import shutil
import signal
import sys
from pathlib import Path

import pytest
from test_replicas_lock import _ports

from factories import embedded_plan
from fakes import vllm_server
from onechip import api, paths
from onechip.api import _engines
from onechip.cli.main import main
from onechip.engines import replicas, router, startup
from onechip.engines import state as engine_state
from onechip.engines.local import free_port, group_alive
from onechip.errors import EngineError
from onechip.schemas.requests import UpRequest


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setattr(startup, "preferred_port", lambda port: free_port())  # 8000 left to whatever holds it
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    plan = tmp_path / "plan.json"
    plan.write_text(embedded_plan().model_dump_json())
    return plan


def _full(*names: str):
    """write_text_atomic as on a disk that fills once the engine is ready: from the write of boot.json on, the files
    named `names` fail with ENOSPC, as paths.write_text_atomic raises (engine.json's booting record went in before)."""
    real, full = paths.write_text_atomic, []

    def write(target: Path, text: str) -> Path:
        if target.name == "boot.json":
            full.append(True)
        if full and target.name in names:
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        return real(target, text)

    return write


@pytest.mark.parametrize("full", [("boot.json",), ("boot.json", "engine.json")])
def test_a_full_disk_at_the_end_of_up_says_the_engine_serves_and_down_stops_it(home, monkeypatch, capsys, full):
    with monkeypatch.context() as disk:
        write = _full(*full)
        disk.setattr(_engines, "write_text_atomic", write)
        disk.setattr(engine_state, "write_text_atomic", write)
        disk.setattr(signal, "signal", lambda *_: None)  # main's SIGTERM / SIGHUP handlers stay the test's
        with pytest.raises(SystemExit) as exited:
            main(
                ["up", "--engine", "vllm", "--plan", str(home), "--launcher", f"{sys.executable} {vllm_server.SCRIPT}"]
            )
    err = capsys.readouterr().err
    saved = engine_state.load()
    try:
        assert saved is not None and saved.booting == ("engine.json" in full)  # the ready record, where it went in
        lines = [line for line in err.splitlines() if not line.startswith("[boot]")]  # the boot's progress
        assert exited.value.code == 5 and len(lines) == 1 and "Traceback" not in err, err
        assert ".json: No space left on device; " in lines[0]
        assert f"the engine is serving at {saved.base_url}" in lines[0] and "`onechip down` stops it" in lines[0]
        status = api.status()
        assert status.running and status.healthy, status
    finally:
        down = api.down()
    assert saved.pid and not group_alive(saved.pid) and down.note.startswith("stopped engine pid")
    assert engine_state.load() is None


@pytest.mark.skipif(shutil.which(router.router_program()) is None, reason="vllm-router is not installed")
def test_a_full_disk_as_an_up_replicas_saves_its_ready_set_says_it_serves_and_down_stops_it(home, monkeypatch):
    """The set's last write (replicas.json once the router is ready) fails: the set serves through its router, on
    record as booting, and the error said only 'PATH: No space left on device' before."""
    real = replicas.save

    def save(state: replicas.ReplicaSetState) -> None:
        if not state.booting:  # the ready set: the last write of `up`
            raise OSError(errno.ENOSPC, "No space left on device", str(replicas.state_path()))
        real(state)

    monkeypatch.setattr(replicas, "save", save)
    request = UpRequest(
        engine="vllm", model="google/gemma-4-E2B-it", chip="l4", replicas=2, port=_ports(2), router_port=free_port(),
        launcher=f"{sys.executable} {vllm_server.SCRIPT}", force=True, timeout_s=60,
    )  # fmt: skip
    try:
        with pytest.raises(EngineError) as failed:
            api.up(request)
        line = str(failed.value)
        assert line.startswith(f"{replicas.state_path()}: No space left on device; ") and "\n" not in line, line
        assert f"serving at http://127.0.0.1:{request.router_port}" in line and "`onechip down` stops it" in line
        status = api.status()
        assert status.running and status.router is not None and status.router.healthy, status
        assert [r.healthy for r in status.replicas] == [True, True], status
    finally:
        down = api.down()
    assert down.state is not None and not group_alive(down.state.pid), down
    assert replicas.load() is None and engine_state.load() is None
