"""Two engines on one port: `up` never takes a port another server has bound and not yet listened on, and never
calls a server its own unless its own processes listen there.

vLLM 0.32 binds its HTTP socket before the engine is set up (vllm/entrypoints/launchers/launcher.py setup_server:
'bind the port before the engine is set up'), with SO_REUSEADDR, and SO_REUSEPORT too where `vllm serve` runs
several API servers (cli/serve.py: reuse_port=num_api_servers > 1); uvicorn listens on it once the engine is up.
Scratch sockets here bind as create_server_socket does."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import platform
import re
import signal
import socket
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from fakes.vllm_server import FakeVllm
from onechip.engines import local, ports
from onechip.engines.local import LocalVllmEngine, free_port, group_alive, port_is_free, preferred_port
from onechip.errors import EngineBootError, PortInUseError


def _vllm_socket(port: int = 0, reuse_port: bool = False, host: str = "") -> socket.socket:
    """A socket bound as vLLM's create_server_socket binds it (SO_REUSEADDR, SO_REUSEPORT when asked), not listening."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _time_wait_port() -> int:
    """A port whose only sockets are a server-side connection in TIME_WAIT (the server closed first, as uvicorn
    closes idle keep-alive connections), its listener (SO_REUSEADDR, as uvicorn's) closed: a stopped engine's port."""
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = int(listener.getsockname()[1])
        client = socket.create_connection(("127.0.0.1", port))
        served, _ = listener.accept()
        served.close()
        client.close()
    return port


@pytest.mark.parametrize("reuse_port", [False, True], ids=["reuseaddr", "reuseport"])
def test_a_port_bound_by_a_server_not_yet_listening_is_taken(reuse_port):
    """Before: port_is_free bound with SO_REUSEADDR, which Linux allows beside a socket bound with SO_REUSEADDR that
    does not listen (net/ipv4/inet_connection_sock.c inet_bind_conflict), so a second engine took the port of one
    still booting and `up` took the first's /health for its own."""
    with _vllm_socket(reuse_port=reuse_port) as other:
        port = other.getsockname()[1]
        assert not port_is_free(port)
        assert preferred_port(port) != port


def test_up_port_n_is_refused_while_another_server_has_bound_it(tmp_path):
    """`up --port N`: LocalVllmEngine.start refuses the port before it launches anything."""
    with _vllm_socket() as other:
        engine = LocalVllmEngine(Path("."), "fake", tmp_path / "engine.log", argv=["true"], port=other.getsockname()[1])
        with pytest.raises(PortInUseError, match="already in use"):
            engine.start()
        assert engine.pid is None


def test_a_port_left_in_time_wait_by_a_stopped_engine_is_free():
    """The next engine binds it (SO_REUSEADDR allows it beside TIME_WAIT): /proc/net/tcp shows state 06 there."""
    port = _time_wait_port()
    assert any(row.state == ports.TIME_WAIT for row in ports.tcp_table() if row.port == port)
    assert port_is_free(port)


@pytest.mark.skipif(
    tuple(int(n) for n in platform.release().split(".")[:2] if n.isdigit()) < (6, 8),
    reason="inet_diag dumps bound-only sockets from Linux 6.8 on",
)
def test_a_server_bound_beside_time_wait_leftovers_is_seen():
    """TIME_WAIT leftovers make a plain bind fail as a bound-only socket does; the kernel's bound-only dump tells."""
    port = _time_wait_port()
    with _vllm_socket(port, host="127.0.0.1"):
        assert not port_is_free(port)


SERVER = textwrap.dedent("""
    import os, signal, socket, sys
    signal.alarm(60)  # never outlives a test that lost it
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", int(sys.argv[1])))
    sock.listen()
    print(f"listening pid={os.getpid()}", flush=True)
    while True:
        conn, _ = sock.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-length: 0\\r\\nconnection: close\\r\\n\\r\\n")
        conn.close()
""")


def test_health_answered_by_another_server_is_refused(tmp_path):
    """Before: wait_ready took any 200 from /health on its port as its own engine ready ('ready ... after 60 s' with
    no KV line in its boot record). Our engine (here one that never listens) is stopped, the log kept, and the
    refusal names the port and the process that answers there."""
    number = free_port()
    log = tmp_path / "engine.log"
    engine = LocalVllmEngine(Path("."), "fake", log, argv=["sleep", "60"], port=number, stop_grace_s=2.0)
    engine.start()
    try:
        with FakeVllm(port=number), pytest.raises(PortInUseError) as info:
            engine.wait_ready(timeout_s=20)
        said = str(info.value)
        assert f"port {number}" in said and f"pid {os.getpid()}" in said and str(log) in said
        assert "\n" not in said
        assert not group_alive(engine.pid)
        assert log.exists()
    finally:
        engine.stop()


def _wait_for(done, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "the scratch server did not start"
        time.sleep(0.05)


def _answer_ok(sock: socket.socket) -> None:
    """Answer every connection on listening `sock` with 200, as SERVER does, until the socket is closed."""
    with contextlib.suppress(OSError):
        while True:
            conn, _ = sock.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")


def test_a_second_listener_beside_our_engine_is_refused(tmp_path, monkeypatch):
    """With SO_REUSEPORT both servers listen and the kernel splits connections between them: readiness, check and
    bench would measure a mix of two servers."""
    log = tmp_path / "engine.log"
    with _vllm_socket(reuse_port=True, host="127.0.0.1") as other:
        number = other.getsockname()[1]
        engine = LocalVllmEngine(
            Path("."), "fake", log, argv=[sys.executable, "-c", SERVER, str(number)], port=number, stop_grace_s=2.0
        )
        # start() refuses a bound port (test_up_port_n_is_refused_...): launch past that check, as a boot that raced
        monkeypatch.setattr(local, "port_is_free", lambda port, host="127.0.0.1", reuse=True: True)
        engine.start()
        try:
            # listen once the engine's own server does, and answer as it does: a listener that never accepted held
            # every /health the kernel gave it until the client's 2 s timeout, and on a slow machine the whole 20 s
            # wait could pass without one answer from the engine's server (CI, stop 63: 'not healthy after 20 s')
            _wait_for(lambda: "listening pid=" in log.read_text(errors="replace"), timeout_s=20)
            other.listen()
            threading.Thread(target=_answer_ok, args=(other,), daemon=True).start()
            with pytest.raises(PortInUseError) as info:
                engine.wait_ready(timeout_s=20)
            said = str(info.value)
            assert f"port {number}" in said and f"pid {os.getpid()}" in said and "beside this engine" in said
            assert not group_alive(engine.pid)
        finally:
            engine.stop()


def test_our_own_listener_is_ready(tmp_path):
    """The engine's own process group listens on the port: ready, as before."""
    port = free_port()
    engine = LocalVllmEngine(
        Path("."), "fake", tmp_path / "engine.log", argv=[sys.executable, "-c", SERVER, str(port)], port=port
    )
    engine.start()
    try:
        assert engine.wait_ready(timeout_s=20).ready_s is not None
    finally:
        engine.stop()


def test_without_proc_the_engines_own_log_must_say_it_came_up(tmp_path, monkeypatch):
    """Where /proc/net/tcp cannot be read (ports.listeners None), another's /health is not enough: the engine's own log
    must say it came up (uvicorn's "Uvicorn running on", printed once it listens); the wait says so once."""
    monkeypatch.setattr(ports, "tcp_table", lambda: None)
    number = free_port()
    engine = LocalVllmEngine(Path("."), "fake", tmp_path / "engine.log", argv=["sleep", "60"], port=number)
    engine.start()
    said: list[str] = []
    try:
        with FakeVllm(port=number), pytest.raises(EngineBootError, match="not healthy after 3 s"):
            engine.wait_ready(timeout_s=3, on_progress=lambda event: said.append(event.message))
    finally:
        engine.stop()
    assert sum("cannot tell which process listens" in line for line in said) == 1
    came_up = SERVER.replace(
        'print(f"listening pid={os.getpid()}", flush=True)',
        'print("INFO:     Uvicorn running on http://127.0.0.1 (Press CTRL+C to quit)", flush=True)',
    )
    engine = LocalVllmEngine(
        Path("."), "fake", tmp_path / "own.log", argv=[sys.executable, "-c", came_up, str(number)], port=number
    )
    engine.start()
    try:
        assert engine.wait_ready(timeout_s=20).ready_s is not None
    finally:
        engine.stop()


def test_a_socket_no_readable_process_holds_is_named_by_its_uid():
    """Another user's process: its /proc/<pid>/fd is not readable, so the refusal names the socket's uid."""
    sock = ports.TcpSocket(ipaddress.ip_address("127.0.0.1"), 8001, ports.LISTEN, 4242, inode=2**31 + 7)
    assert ports.holder(sock) == "a process of uid 4242"


def test_a_server_its_launcher_started_in_a_session_of_its_own_is_its_own(tmp_path):
    """A launcher that runs the server under `setsid` (or sudo, which gives the command a session of its own): the
    listener is a descendant's, outside the engine's process group, and still the engine's own."""
    number = free_port()
    argv = ["setsid", "-w", sys.executable, "-c", SERVER, str(number)]
    engine = LocalVllmEngine(Path("."), "fake", tmp_path / "engine.log", argv=argv, port=number, stop_grace_s=2.0)
    engine.start()
    try:
        assert engine.wait_ready(timeout_s=20).ready_s is not None
    finally:
        engine.stop()
        # the setsid'd server is in no group stop() signals: end it by the pid it logged
        if found := re.search(r"listening pid=(\d+)", engine.log_path.read_text()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(found.group(1)), signal.SIGKILL)


def test_where_a_process_of_the_engine_cannot_be_looked_into_its_log_decides(tmp_path, monkeypatch):
    """A process of the engine another user's (its /proc/<pid>/fd unreadable): a listener that is not visibly the
    engine's may be its own, so readiness waits for the engine's log to say it listens rather than refuse."""
    monkeypatch.setattr(ports, "_sockets_of", lambda pid: None)
    number = free_port()
    said: list[str] = []
    engine = LocalVllmEngine(Path("."), "fake", tmp_path / "engine.log", argv=["sleep", "60"], port=number)
    engine.start()
    try:
        with FakeVllm(port=number), pytest.raises(EngineBootError, match="not healthy after 3 s"):
            engine.wait_ready(timeout_s=3, on_progress=lambda event: said.append(event.message))
    finally:
        engine.stop()
    assert any("a process of the engine is another user's" in line for line in said)
