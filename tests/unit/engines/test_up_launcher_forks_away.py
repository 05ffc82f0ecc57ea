"""A serve command that starts its server in a session of its own and exits (a daemonizing wrapper script): onechip
manages the process group it launched (stop, status, the /health owner check), so such a server is out of its reach.
Before, `up` said 'engine exited with code 0 during boot: it logged nothing' while the server went on serving on the
port with no record: `status` said 'no engine', `down` 'no engine was running', and nothing named the process. Now
the line says the launched program exited, names the process that serves the port, and says to exec the server;
`down` never signals that process (it is not the group on record)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from onechip.engines import state as engine_state
from onechip.engines.local import LocalVllmEngine, free_port
from onechip.errors import EngineBootError

SERVER = (
    "import socket, sys, time, pathlib\n"
    "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
    "s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
    "pathlib.Path(sys.argv[2]).write_text(str(__import__('os').getpid()))\n"
    "time.sleep(120)\n"
)


def test_a_launcher_that_forks_its_server_away_is_named_and_its_server_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    port, ready = free_port(), tmp_path / "server.pid"
    (tmp_path / "server.py").write_text(SERVER)
    wrapper = tmp_path / "serve.sh"  # starts the server in a session of its own, waits for it to listen, exits 0
    wrapper.write_text(
        f"#!/bin/sh\nsetsid {sys.executable} {tmp_path / 'server.py'} {port} {ready} </dev/null >/dev/null 2>&1 &\n"
        f"while [ ! -s {ready} ]; do sleep 0.05; done\nexit 0\n"
    )
    wrapper.chmod(0o755)
    engine = LocalVllmEngine(tmp_path / "m", "m", tmp_path / "home" / "engine.log", argv=[str(wrapper)], port=port)
    server_pid = None
    try:
        engine.start()
        engine_state.save_booting(engine)  # as `up` records it
        with pytest.raises(EngineBootError) as info:
            engine.wait_ready(timeout_s=60)
        server_pid = int(ready.read_text())
        said = str(info.value)
        assert said.startswith(
            f"engine exited with code 0 during boot, leaving port {port} on 127.0.0.1 served by pid {server_pid} ("
        ), said
        assert "outside the process group onechip started and stops: run the server in the foreground (exec it)" in (
            said
        ), said
        assert f"stop pid {server_pid} yourself" in said, said
        engine.stop()
        engine_state.down(grace_s=5)  # the booting record: the group on record is gone, the server not signalled
        os.kill(server_pid, 0)  # still runs: not onechip's to stop
    finally:
        if server_pid is None and ready.exists():
            server_pid = int(ready.read_text())
        if server_pid is not None:
            os.kill(server_pid, signal.SIGKILL)


def test_a_serve_command_that_exits_0_during_boot_is_told_to_exec_its_server(tmp_path):
    # a wrapper that starts the server in the background of its own group and exits 0: onechip stops the group on the
    # failed boot; the line said 'exited with code 0 during boot: <the server's last line>', nothing about why
    wrapper = tmp_path / "serve.sh"
    wrapper.write_text("#!/bin/sh\nsleep 60 &\nexit 0\n")
    wrapper.chmod(0o755)
    engine = LocalVllmEngine(tmp_path / "m", "m", tmp_path / "engine.log", argv=[str(wrapper)], port=free_port())
    engine.start()
    try:
        with pytest.raises(EngineBootError) as info:
            engine.wait_ready(timeout_s=60)
    finally:
        engine.stop()
    said = str(info.value)
    assert said.startswith(
        "engine exited with code 0 during boot, before its server answered: a serve command must run the server in "
        "the foreground (exec it) until it stops: "
    ), said
