"""The ssh tunnel's open check (remote.HostEngine._open_tunnel): the tunnel is open when its own process listens on
the local port, not when anything does. Before, a port taken after start()'s check (another server, another `up`)
read as the tunnel opened, and `up` took that server's /health for its engine's; ssh's ExitOnForwardFailure says so
only once it has logged in."""

from __future__ import annotations

import os
import socket
import sys

import pytest

from factories import embedded_plan
from fakes import vllm_server
from onechip.engines import launch, remote
from onechip.engines.local import free_port, group_alive
from onechip.errors import PortInUseError
from onechip.schemas import ServeTarget
from onechip.vllm import flags


@pytest.fixture
def engine(tmp_path, monkeypatch):
    """A HostEngine for host 'root@h' whose commands run in this machine's shell, its engine booting (30 s)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    target = ServeTarget(kind="vllm", port=free_port(), host="root@h",
                         launcher=[sys.executable, str(vllm_server.SCRIPT), "--fake-boot-s", "30"])  # fmt: skip
    spec = launch.LaunchSpec(command=flags.serve_command(embedded_plan(), target), tunnel_port=free_port())
    return remote.HostEngine(spec, remote.Shell(None), tmp_path / "engine.log")


def _listen_on(port: int) -> list[str]:
    return [sys.executable, "-c", "import socket, time; s = socket.socket(); "
            f"s.bind(('127.0.0.1', {port})); s.listen(); time.sleep(60)"]  # fmt: skip


def test_a_port_another_process_took_is_not_the_tunnel(engine, monkeypatch):
    port = engine.local_port
    assert port is not None
    monkeypatch.setattr(remote, "tunnel_argv", lambda *_: ["sleep", "60"])  # ssh still logging in: no port yet
    with socket.socket() as stranger:
        checks = iter([True])  # start()'s own check passes; the stranger binds before the tunnel would
        real = remote.port_is_free
        monkeypatch.setattr(remote, "port_is_free", lambda p, *a, **k: next(checks, None) or real(p, *a, **k))
        stranger.bind(("127.0.0.1", port))
        stranger.listen()
        with pytest.raises(PortInUseError) as info:
            engine.start()
    said = str(info.value)
    assert said.startswith(f"local tunnel port {port} is taken by pid {os.getpid()} ("), said
    assert said.endswith("the engine was stopped: pick another with --tunnel-port"), said
    assert engine.tunnel is None and not group_alive(engine.remote_pid or 0)


def test_the_tunnels_own_listening_port_is_open(engine, monkeypatch):
    port = engine.local_port
    assert port is not None
    monkeypatch.setattr(remote, "tunnel_argv", lambda *_: _listen_on(port))  # as `ssh -N -L` once forwarding
    engine.start()
    try:
        assert engine.tunnel is not None and engine.tunnel.poll() is None
    finally:
        engine.stop()
