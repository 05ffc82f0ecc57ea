"""`onechip demo --cloud gcp` end to end with nothing of Google's: the loopback fake TPU API (flex-start refused
in the first zone, granted in the second; the HF token in its Secret Manager), a throwaway sshd on a local
port standing in for the TPU VM (external IP 127.0.0.1), whose fake `docker` starts the project's fake vLLM
server replaying the seed's recorded v5e-1 boot log. Then the report, and the TPU deleted.

Needs openssh-server (/usr/sbin/sshd) and root, as tests/integration/test_remote_ssh.py; skips otherwise.
The token must reach no request body the API saw, no argv, no output and no file but the 0600 file on the host.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from fakes.sshd import local_sshd
from fakes.tpu_api import FakeTpuApi, Zone
from onechip.engines.local import free_port, port_is_free

pytestmark = pytest.mark.integration
TOKEN = "hf_FAKEcloudDemoTokenabcdefghij0123456789"
FAKES = Path(__file__).resolve().parents[1] / "fakes"


@pytest.fixture(scope="module")
def tpu_vm(tmp_path_factory):
    """An sshd on 127.0.0.1:PORT whose sessions find the fake docker first on PATH. Yields (ssh options,
    client key path, fake docker state dir)."""
    work = tmp_path_factory.mktemp("tpu-vm")
    bin_dir = work / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(f'#!/bin/sh\nexec {sys.executable} {FAKES / "fake_docker.py"} "$@"\n')
    (bin_dir / "docker").chmod(0o755)
    state = work / "docker-state"
    # the VM's home (_vm_home): its sessions' ~ (the token file, the compile cache `docker run` mounts) was root's
    # real one, this machine's, and every run left ~/.cache/vllm there; sshd's SetEnv overrides the HOME it sets
    # (sshd_config(5))
    _vm_home(state).mkdir()
    path = f"SetEnv PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin FAKE_DOCKER_STATE={state} HOME={_vm_home(state)}\n"
    with local_sshd(work, path) as (options, key):
        argv = ["ssh", "-o", "BatchMode=yes", "-i", str(key), *sum((["-o", o] for o in options), [])]
        found = subprocess.run([*argv, "root@127.0.0.1", "command -v docker"], capture_output=True, text=True)
        assert found.stdout.strip() == str(bin_dir / "docker"), found.stdout + found.stderr
        yield options, key, state


def _vm_home(state: Path) -> Path:
    """The fake TPU VM's $HOME, beside its docker state (tpu_vm)."""
    return state.parent / "vm-home"


def _ps() -> str:
    return subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout


def test_demo_cloud_gcp_end_to_end(tpu_vm, tmp_path):
    options, key, state = tpu_vm
    zones = {"europe-west4-a": Zone(flex="unsupported"), "us-west4-a": Zone()}
    with FakeTpuApi(zones=zones, secrets={"hf-token": TOKEN}) as fake:
        env = {**os.environ, "ONECHIP_TPU_API_ENDPOINT": fake.url, "ONECHIP_CLOUD_POLL_S": "0.1",
               "ONECHIP_HOME": str(tmp_path / "home"), "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}  # fmt: skip
        env.pop("HF_TOKEN", None)
        out_dir = tmp_path / "run"
        argv = [sys.executable, "-m", "onechip", "demo", "--cloud", "gcp", "--model", "google/gemma-4-E2B-it",
                "--chip", "v5e-1", "--project", "proj-1", "--zone", "europe-west4-a,us-west4-a",
                "--provisioning", "flex-start", "--ssh-user", "root", "--ssh-key", str(key),
                *sum((["--ssh-opt", o] for o in options), []), "--hf-token-secret", "hf-token",
                "--port", str(free_port()), "--quick", "--yes", "--out", str(out_dir)]  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        sent = fake.sent_text()
        assert not fake.queued and not fake.nodes  # deleted at the end (no --keep)
    # the first zone refused flex-start, the second granted it: a v2alpha1 FLEX_START queued resource
    creates = [json.loads(body) for method, path, body in fake.requests if method == "POST"]
    assert [c["provisioningModel"] for c in creates] == ["FLEX_START", "FLEX_START"]
    assert creates[-1]["tpu"]["nodeSpec"][0]["node"]["acceleratorType"] == "v5litepod-1"
    ssh_keys = creates[-1]["tpu"]["nodeSpec"][0]["node"]["metadata"]["ssh-keys"]
    assert ssh_keys.startswith("root:ssh-ed25519 ")  # the public key only
    # the run directory holds every stage
    manifest = json.loads((out_dir / "run.json").read_text())
    assert manifest["status"] == "ok" and manifest["chip"] == "v5e-1"
    assert {"provision", "boot", "check", "bench", "cost", "report", "down"} <= set(manifest["stage_timings_s"])
    boot = json.loads((out_dir / "boot.json").read_text())
    assert boot["kv_cache_tokens"] == 321_280  # the seed's v5e-1 boot log, replayed
    assert boot["engine_version"] == "0.26.1rc1.dev125+ga7a204cc6"  # the running image's version string
    assert "~/.cache/vllm:/root/.cache/vllm" in boot["command"]  # the compile cache mounted (seed: 857 -> 497 s)
    assert "vllm/vllm-tpu:v0.30.0" in boot["command"]  # pulled and run by its release tag (survey seed), not nightly
    cost = json.loads((out_dir / "cost.json").read_text())
    assert {line["pricing"] for line in cost["lines"]} == {"flex-start"}
    assert (out_dir / "report.md").exists()
    assert (_vm_home(state) / ".cache" / "vllm").is_dir()  # made on the VM (remote.start_command), in its home
    # the token: only in the 0600 file on the host
    stored = _vm_home(state) / ".onechip" / "hf_token.env"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and TOKEN in stored.read_text()
    for text in (sent, done.stdout, done.stderr, _ps()):
        assert TOKEN not in text
    for file in [*(tmp_path / "home").rglob("*"), *out_dir.rglob("*")]:
        if file.is_file():
            assert TOKEN not in file.read_text(errors="replace"), file
    stored.unlink(missing_ok=True)


def _demo(tpu_vm, tmp_path, env, *extra):
    options, key, _ = tpu_vm
    argv = [sys.executable, "-m", "onechip", "demo", "--model", "google/gemma-4-E2B-it", "--chip", "v5e-1",
            "--ssh-key", str(key), *sum((["--ssh-opt", o] for o in options), []), "--port", str(free_port()),
            "--quick", *extra]  # fmt: skip
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=900)


def test_demo_keep_then_again_reuses_the_tpu(tpu_vm, tmp_path):
    with FakeTpuApi(zones={"us-west4-a": Zone()}) as fake:
        env = {**os.environ, "ONECHIP_TPU_API_ENDPOINT": fake.url, "ONECHIP_CLOUD_POLL_S": "0.1",
               "ONECHIP_HOME": str(tmp_path / "home"), "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}  # fmt: skip
        cloud = ["--cloud", "gcp", "--project", "proj-1", "--zone", "us-west4-a", "--ssh-user", "root",
                 "--provisioning", "spot", "--max-hours", "1", "--yes"]  # fmt: skip
        first = _demo(tpu_vm, tmp_path, env, *cloud, "--keep", "--out", str(tmp_path / "a"))
        assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
        assert len(fake.nodes) == 1  # kept, and said so
        assert "kept node onechip-v5e-1 (us-west4-a, spot), billing; delete it: onechip cloud down" in first.stdout
        again = _demo(tpu_vm, tmp_path, env, *cloud, "--again", "--out", str(tmp_path / "b"))
        assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
        assert [m for m, _, _ in fake.requests if m == "POST"] == ["POST"]  # one create for both demos
        assert not fake.nodes  # the second demo deleted it
    cost = json.loads((tmp_path / "b" / "cost.json").read_text())
    assert {line["pricing"] for line in cost["lines"]} == {"spot"}  # the provisioning model actually used


def test_demo_on_a_host_you_have(tpu_vm, tmp_path):
    env = {**os.environ, "ONECHIP_HOME": str(tmp_path / "home"), "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}
    env.pop("ONECHIP_TPU_API_ENDPOINT", None)
    done = _demo(tpu_vm, tmp_path, env, "--engine", "vllm-docker", "--host", "root@127.0.0.1",
                 "--out", str(tmp_path / "run"))  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    assert manifest["status"] == "ok" and manifest["command"] == "demo --engine vllm-docker"
    assert json.loads((tmp_path / "run" / "boot.json").read_text())["kv_cache_tokens"] == 321_280


def test_cloud_up_replicas_on_a_slice_serves_through_the_router_and_down_deletes_it(tpu_vm, tmp_path):
    """Issue 23: `cloud up --chip v5e-4 --replicas 2 --model M` gets one v5litepod-4 from the fake TPU API, starts
    one engine per two-chip share on it over ssh (the fake docker's fake vLLM) and vllm-router here; the router
    serves a chat; `cloud status` shows each replica on the TPU; `cloud down` stops them and deletes the TPU."""
    options, key, _ = tpu_vm
    # Replica 1 listens on port + 1 on the host. Below Linux's ephemeral range (32768-60999), so no outgoing
    # connection (the ssh sessions, the router's) can take port + 1 between this check and the engine's bind.
    port = next(p for p in range(20000, 32000, 2) if port_is_free(p) and port_is_free(p + 1))
    with FakeTpuApi(zones={"us-west4-a": Zone()}) as fake:
        env = {**os.environ, "ONECHIP_TPU_API_ENDPOINT": fake.url, "ONECHIP_CLOUD_POLL_S": "0.1",
               "ONECHIP_HOME": str(tmp_path / "home"), "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}  # fmt: skip
        onechip = [sys.executable, "-m", "onechip"]
        argv = [*onechip, "cloud", "up", "--project", "proj-1", "--zone", "us-west4-a", "--chip", "v5e-4",
                "--replicas", "2", "--provisioning", "spot", "--max-hours", "1", "--model", "google/gemma-4-E2B-it",
                "--ssh-user", "root", "--ssh-key", str(key), *sum((["--ssh-opt", o] for o in options), []),
                "--port", str(port), "--yes", "--json"]  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        result = json.loads(done.stdout)
        assert [n["acceleratorType"] for n in fake.nodes.values()] == ["v5litepod-4"]  # one slice, not two TPUs
        assert result["quote"]["chips"] == 4 and len(result["replica_urls"]) == 2
        starts = [line for line in result["engine_commands"] if " run -d " in line]
        assert len(starts) == 2
        for k, line in enumerate(starts):  # each replica sees its two chips, on its own port
            assert f"-e TPU_VISIBLE_CHIPS={2 * k},{2 * k + 1} " in line and f"--port {port + k}" in line
        assert "--policy cache_aware" in result["engine_commands"][-1]
        chat = {"model": "google/gemma-4-E2B-it", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
        assert httpx.post(result["router_url"] + "/v1/chat/completions", json=chat, timeout=30).status_code == 200
        status = subprocess.run([*onechip, "cloud", "status"], env=env, capture_output=True, text=True, timeout=120)
        text = " ".join(status.stdout.split())
        assert f"replica 0 at {result['replica_urls'][0]}: healthy" in text, status.stdout + status.stderr
        assert f"replica 1 at {result['replica_urls'][1]}: healthy" in text
        down = subprocess.run([*onechip, "cloud", "down", "--yes"], env=env, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert down.returncode == 0, down.stdout + down.stderr
        assert "stopping the engines on them first" in down.stderr and not fake.nodes
    after = subprocess.run([*onechip, "status", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(after.stdout)["running"] is False
