"""Two `up`s on one port, started before the first engine binds it (vLLM binds its port only once its Python has
loaded, 10-20 s after the launch): both passed the kernel's port check, and the later to listen failed. Now the first
claims HOST:PORT (engines.port_claims) as it launches, and the second is refused at once, naming the first; a claim
whose process is gone is ignored, and a stopped engine's is released."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from factories import DEAD_PID
from fakes import vllm_server
from onechip.engines import local, port_claims, replicas
from onechip.engines.local import LocalVllmEngine, free_port, port_is_free, preferred_port
from onechip.engines.startup import choose_ports
from onechip.errors import PortInUseError
from onechip.procs import start_ticks, zombie


@pytest.fixture(autouse=True)
def claims(tmp_path, monkeypatch):
    monkeypatch.setattr(port_claims, "claims_dir", lambda: tmp_path / "claims")  # this test's, not the machine's


def _booting(tmp_path, name: str, port: int) -> LocalVllmEngine:
    """A fake vLLM that binds `port` only after 30 s of boot, as vLLM loads for seconds before it binds."""
    argv = [sys.executable, str(vllm_server.SCRIPT), "--port", str(port), "--fake-boot-s", "30"]
    return LocalVllmEngine(tmp_path / "m", "m", tmp_path / name / "engine.log", argv=argv, port=port)


def test_a_second_engine_on_a_port_claimed_by_one_booting_is_refused_at_once(tmp_path):
    port = free_port()
    first, second = _booting(tmp_path, "first", port), _booting(tmp_path, "second", port)
    first.start()
    try:
        with pytest.raises(PortInUseError) as info:
            second.start()
        assert second.process is None  # never launched
        said = str(info.value)
        assert said.startswith(f"port {port} on 127.0.0.1 is claimed by the engine pid {first.pid} ("), said
        assert said.endswith("pick another port with --port, or wait for that engine's `onechip down`"), said
    finally:
        first.stop()
    second.start()  # a stopped engine's claim is released
    second.stop()
    assert not list((tmp_path / "claims").glob("*:*"))  # released by stop()


def test_a_claim_whose_process_is_gone_is_ignored(tmp_path):
    port = free_port()
    port_claims.claim("127.0.0.1", port, DEAD_PID, None)
    engine = _booting(tmp_path, "e", port)
    engine.start()
    engine.stop()


def test_a_claim_whose_pid_another_process_has_now_is_ignored(tmp_path):
    port = free_port()
    parent = os.getppid()  # a live process other than this one
    ticks = start_ticks(parent)
    assert ticks is not None
    port_claims.claim("127.0.0.1", port, parent, ticks + 1)  # the recorded start time is not its own: a reused pid
    engine = _booting(tmp_path, "e", port)
    engine.start()
    engine.stop()


def test_a_claim_on_every_address_holds_the_port_on_each():
    # the kernel refuses 127.0.0.1:P beside a server on 0.0.0.0:P (inet_bind_conflict); a claim says the same
    port = free_port()
    holder = subprocess.Popen(["sleep", "30"])  # noqa: S607 - a live process holding the claim
    try:
        port_claims.claim("0.0.0.0", port, holder.pid, start_ticks(holder.pid))  # noqa: S104 - a claim, not a bind
        with pytest.raises(PortInUseError, match=f"claimed by the engine pid {holder.pid} "):
            port_claims.claim("127.0.0.1", port, DEAD_PID, None)
        port_claims.claim("127.0.0.2", port + 1, DEAD_PID, None)  # another port: free
    finally:
        holder.kill()
        holder.wait()
    port_claims.claim("127.0.0.1", port, DEAD_PID, None)  # its process gone: ignored


def test_a_claim_of_an_exited_child_not_yet_reaped_is_ignored():
    # a zombie keeps its pid and start time: an engine stopped by the process that started it (replicas' `down` in an
    # MCP server or a test) held its port's claim for as long as that process lived (a later engine there refused)
    port = free_port()
    child = subprocess.Popen(["true"])  # noqa: S607
    started = start_ticks(child.pid)
    deadline = time.monotonic() + 10
    while not zombie(child.pid) and time.monotonic() < deadline:  # exited, not reaped (no wait() yet)
        time.sleep(0.01)
    try:
        port_claims.claim("127.0.0.1", port, child.pid, started)
        port_claims.claim("127.0.0.1", port, DEAD_PID, None)  # the zombie's claim is ignored
    finally:
        child.wait()


def test_a_claims_folder_that_cannot_be_made_claims_nothing_and_refuses_no_up(tmp_path, monkeypatch):
    # a home where ~/.cache/onechip/ports cannot be made (here its parent is a file; a read-only home is the same
    # OSError): the claim is skipped and the kernel's check alone applies, rather than `up` failing on a lock file
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(port_claims, "claims_dir", lambda: tmp_path / "file" / "ports")
    port_claims.claim("127.0.0.1", 8000, os.getpid(), start_ticks(os.getpid()))
    port_claims.release("127.0.0.1", 8000, os.getpid())
    assert (tmp_path / "file").read_text() == "x"


def test_a_port_chosen_for_an_up_without_port_skips_one_another_engine_claims():
    # `up` without --port takes 8000 when free, else the next free one (preferred_port; --help: 'local: a free one'):
    # a port another home's engine claims while it boots (not bound yet) was chosen, and start() then refused the `up`
    # ('claimed by the engine pid ...; pick another port with --port') where it had only to pick the next
    port = preferred_port(8000)
    holder = subprocess.Popen(["sleep", "30"])  # noqa: S607 - a live process holding the claim
    try:
        port_claims.claim("127.0.0.1", port, holder.pid, start_ticks(holder.pid))
        assert port_is_free(port)  # the kernel sees nothing there: only the claim says it is taken
        assert preferred_port(8000) > port
        assert choose_ports(None, False, None, None)[0] > port  # what `up --engine vllm` without --port runs on
        assert choose_ports("me@host", True, port, None)[1] != port  # an SSH tunnel's local end does not take it
        assert replicas._Ports().take(port) > port  # nor a replica of `up --replicas N` here
    finally:
        holder.kill()
        holder.wait()
    assert preferred_port(8000) == port  # its process gone: the claim holds nothing


def test_a_free_port_drawn_skips_one_another_engine_claims(monkeypatch):
    # free_port draws from the ports outside the kernel's ephemeral range; here that is 65535 alone
    monkeypatch.setattr(local, "ephemeral_ports", lambda: range(1024, 65535))
    monkeypatch.setattr(local, "_given", set())
    if not port_is_free(65535, reuse=False):
        pytest.skip("port 65535 is taken on this machine")
    holder = subprocess.Popen(["sleep", "30"])  # noqa: S607
    try:
        port_claims.claim("127.0.0.1", 65535, holder.pid, start_ticks(holder.pid))
        assert free_port() != 65535
    finally:
        holder.kill()
        holder.wait()
    assert free_port() == 65535


def test_a_claim_whose_process_is_gone_is_removed_by_the_next_claimer(tmp_path):
    # claims were released only by the process that launched the engine (stop()): `down` from another shell, a
    # crashed `up` or a killed test left theirs, and ~/.cache/onechip/ports held 600+ files of dead pids
    port = free_port()
    port_claims.claim("127.0.0.1", port, DEAD_PID, None)
    port_claims.claim("127.0.0.1", port + 1, DEAD_PID, None)
    holder = subprocess.Popen(["sleep", "30"])  # noqa: S607 - a live claim, kept
    try:
        port_claims.claim("127.0.0.1", port + 2, holder.pid, start_ticks(holder.pid))
        me = os.getpid()
        port_claims.claim("127.0.0.1", port + 3, me, start_ticks(me))  # the next claim clears the dead ones
        port_claims.release("127.0.0.1", port + 3, me)
        left = sorted(path.name for path in (tmp_path / "claims").glob("*:*"))
        assert left == [f"127.0.0.1:{port + 2}"], left
    finally:
        holder.kill()
        holder.wait()


def test_down_from_another_process_releases_the_engine_claim(tmp_path, monkeypatch):
    # `onechip down` (state.down) stopped the engine but left its claim: only the `up` process's stop() released it
    from onechip.engines import state as engine_state

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    engine = _booting(tmp_path, "e", free_port())
    engine.start()
    try:
        engine_state.save(engine.state())
        engine.process = None  # as `down` in another process sees it: the record alone
        engine_state.down(grace_s=5)
        assert not (tmp_path / "claims" / f"127.0.0.1:{engine.port}").exists()
    finally:
        engine.stop()


def test_a_claims_folder_that_cannot_be_made_is_said_with_why(tmp_path, monkeypatch):
    # claim and claimed skip it without a word (above); unusable() is the line `up` says once (UpResult.warnings)
    assert port_claims.unusable() is None  # this test's folder (the claims fixture) can be used
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr(port_claims, "claims_dir", lambda: tmp_path / "file" / "ports")
    said = port_claims.unusable()
    assert said is not None and said.startswith("port claims are off (") and str(tmp_path / "file") in said, said
    assert "Not a directory" in said, said  # mkdir under a file: ENOTDIR's strerror
