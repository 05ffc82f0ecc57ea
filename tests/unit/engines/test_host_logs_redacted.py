"""An engine on another host or in docker: the host's engine.log (written by the start command onechip runs there)
and the local mirror of it (written by the `tail -F` / `docker logs -f` onechip runs here) kept every secret the engine
printed, where a local engine's log had them redacted (onechip.logpump). The fake vLLM (tests/fakes/vllm_server.py,
--fake-print-secrets) prints its argv, its environment and HF_TOKEN's value alone, as vLLM before 0.34.0 and a crash
do."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

import factories
from fakes import vllm_server
from onechip.engines import launch, remote, startup
from onechip.engines.local import free_port
from onechip.schemas import ServeTarget
from onechip.vllm import flags

TOKEN = "hf_FAKEtoken0123456789abcdefXYZ"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    (tmp_path / "home").mkdir()
    (tmp_path / "hf_token").write_text(TOKEN + "\n")
    (tmp_path / "hf_token").chmod(0o600)
    return tmp_path


def test_a_host_engine_s_log_on_the_host_and_its_mirror_hold_no_secret(home: Path) -> None:
    token, _ = launch.read_hf_token(home / "hf_token")
    target = ServeTarget(
        kind="vllm", port=free_port(), launcher=[sys.executable, str(vllm_server.SCRIPT), "--fake-print-secrets"],
        token_source="--hf-token-file", token_path=remote.TOKEN_PATH,
    )  # fmt: skip
    spec = launch.LaunchSpec(command=flags.serve_command(factories.embedded_plan(), target))
    engine = remote.HostEngine(spec, remote.Shell(None), home / "engine.log", token)
    engine.start()
    try:
        boot = engine.wait_ready(30)
    finally:
        engine.stop()
    on_host = (home / "home" / ".onechip" / "engine" / "engine.log").read_text()
    mirror = (home / "engine.log").read_text()
    for log in (on_host, mirror):
        assert "token received: yes" in log and "environ(" in log  # the fake printed them
        assert TOKEN not in log
    assert boot.kv_cache_tokens == 46_592  # the fake's --fake-kv-tokens default: the boot record read all of it


# a docker CLI whose container printed the token: `docker logs` gives its lines (the token alone, no newline after it,
# then the KV line), `-f` then waits as a follow does
FAKE_DOCKER = f"""#!/bin/sh
case "$1" in
  logs) printf 'HF_TOKEN={TOKEN}\\nnon-default args: --api-key {TOKEN}\\n{TOKEN}'
        printf 'INFO GPU KV cache size: 46,592 tokens\\n'
        [ "$2" = -f ] && exec sleep 600 ;;
  inspect) echo true ;;
esac
"""


def test_a_container_s_log_mirror_holds_no_secret_and_is_awaited_whole(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mirror's copy is redacted, so shorter than `docker logs`: the boot record waits for as many lines."""
    factories.fake_docker(home, monkeypatch, FAKE_DOCKER)
    token, _ = launch.read_hf_token(home / "hf_token")
    ready = startup.prepare(
        factories.embedded_plan(), "vllm-docker", port=free_port(), image="vllm/vllm-openai:v0.32.0"
    )
    engine = ready.engine(home / "engine.log")
    assert isinstance(engine, remote.HostEngine)
    engine.token = token
    engine._start_mirror()
    try:
        began = time.monotonic()
        engine._await_mirror(timeout_s=20)
        waited_s = time.monotonic() - began
        mirror = (home / "engine.log").read_text()
    finally:
        engine._stop_mirror()
    assert mirror.count("\n") == 3 and "GPU KV cache size: 46,592 tokens" in mirror, mirror
    assert TOKEN not in mirror
    assert waited_s < 10  # caught up, not given up at its 20 s bound (the copy's size never reaches the host's)
