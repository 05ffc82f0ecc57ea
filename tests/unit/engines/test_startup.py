"""engines/startup.py: the engine-kind choices `onechip up` makes before anything runs (flags each kind
accepts, ports and tunnel, token wording, local process or host engine, --dry-run lines), and the
first-chat readiness a local `vllm serve` now checks itself."""

from __future__ import annotations

import sys

import pytest

from factories import embedded_plan as cpu_plan
from fakes import vllm_server
from onechip import api
from onechip.engines import launch, remote, startup
from onechip.engines.embedded import EmbeddedEngine
from onechip.engines.local import free_port, group_alive, port_is_free, preferred_port
from onechip.engines.model_store import SERVED_NAME
from onechip.errors import ConfigError, EngineError
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import PlanRequest, UpRequest

FAKE = vllm_server.SCRIPT
TOKEN = "hf_FAKEtoken0123456789abcdefXYZ"
VLLM_DEFAULT_PORT = 8000  # `vllm serve --port` default (vLLM CLI docs), used on hosts and by the embedded dry run


@pytest.fixture
def token_file(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    path = tmp_path / "hf_token"
    path.write_text(TOKEN + "\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize("flag", ["host", "model", "chip", "plan", "image", "hf_token_file", "launcher"])
def test_embedded_takes_no_plan_or_host_flags(flag):
    value = "x.json" if flag in ("plan", "hf_token_file") else "x"
    with pytest.raises(ConfigError, match="need --engine vllm or vllm-docker"):
        build_request(UpRequest, {"engine": "embedded", flag: value})
    with pytest.raises(ConfigError, match="need --engine vllm or vllm-docker"):
        build_request(UpRequest, {"engine": "embedded", "sets": ["max-model-len=1024"]})
    if flag not in ("model", "chip", "plan"):  # `plan --launch embedded` takes the same serve options as up
        with pytest.raises(ConfigError, match="need --engine vllm or vllm-docker"):
            build_request(PlanRequest, {"model": "m", "chip": "cpu", "launch": "embedded", flag: value})
    build_request(UpRequest, {"engine": "embedded"})
    build_request(UpRequest, {"engine": "vllm", "host": "u@h", "model": "m", "chip": "v5e-1"})


def test_unknown_engine_is_named():
    with pytest.raises(ConfigError, match="--engine.*'embedded', 'vllm' or 'vllm-docker'.*sglang"):
        build_request(UpRequest, {"engine": "sglang"})


def test_embedded_dry_run_is_the_embedded_engines_own_command(tmp_path, monkeypatch):
    monkeypatch.setattr(startup, "preferred_port", lambda port: port)  # as when 8000 is free here
    plan, spec = startup.embedded_launch(None, kv_cache_space_gib=3)
    assert spec.engine == "embedded" and spec.command.engine_rules == "vllm-cpu" and spec.served_name == SERVED_NAME
    assert spec.port == VLLM_DEFAULT_PORT
    argv = spec.serve_argv
    assert argv[argv.index("--port") + 1] == "8000"
    # embedded.py: VLLM_CPU_KVCACHE_SPACE is the KV cache in GiB; the env leads the one shell line
    assert spec.env["VLLM_CPU_KVCACHE_SPACE"] == "3"
    assert len(spec.commands) == 1 and spec.commands[0].startswith("VLLM_CPU_KVCACHE_SPACE=3 HF_HUB_OFFLINE=1 ")
    assert startup.embedded_launch(8123)[1].port == 8123
    # the plan it serves: 3 GiB of KV at 46,080 B/token (DESIGN.md) -> 546 blocks of 128
    assert plan.serve_command == spec.command and plan.kv_pool_bytes == 3 << 30 and plan.num_blocks == 546
    # what the engine runs is that command, on that port (before: --dry-run said 8000, the engine took another)
    engine = EmbeddedEngine(tmp_path / "engine.log", kv_cache_space_gib=3, port=spec.port)
    assert engine.command() == spec.serve_argv and engine.env == spec.env


def test_a_taken_port_is_not_preferred():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert preferred_port(port) != port
        # the next free one up, so two commands printed one after the other name the same port
        assert preferred_port(port) == preferred_port(port) > port
    free = free_port()
    assert preferred_port(free) == free


def test_a_port_in_time_wait_is_free_only_to_a_server_that_binds_with_reuse():
    # the server's side of a connection it closed first stays in TIME_WAIT; Linux lets a new socket bind the port
    # only when both it and the old one set SO_REUSEADDR (uvicorn does). vllm-router's Prometheus exporter got
    # 'Address already in use' on a policy switch after /metrics had been scraped (CI), so its port is checked strictly
    import socket

    def time_wait_port(server_reuse: bool) -> int:
        with socket.socket() as server:
            if server_reuse:
                server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("127.0.0.1", 0))
            server.listen()
            port = server.getsockname()[1]
            with socket.create_connection(("127.0.0.1", port)):
                conn, _ = server.accept()
                conn.close()  # the server closes first, as after answering a scrape
        return int(port)

    uvicorn_like = time_wait_port(server_reuse=True)
    assert port_is_free(uvicorn_like) and not port_is_free(uvicorn_like, reuse=False)
    other = time_wait_port(server_reuse=False)
    assert not port_is_free(other, reuse=False)


def test_cpu_plan_serves_embedded_model_eagerly():
    prepared = startup.prepare(cpu_plan(), "vllm", launcher="python3 -m vllm.entrypoints.openai.api_server")
    argv = prepared.spec.serve_argv
    assert argv[:5] == ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", cpu_plan().model]
    assert "--enforce-eager" in argv and argv[argv.index("--tool-call-parser") + 1] == "hermes"
    assert argv[argv.index("--served-model-name") + 1] == "SmolLM2-135M-Instruct"
    assert prepared.spec.env == {"VLLM_CPU_KVCACHE_SPACE": "2"}  # DESIGN.md: 2 GiB -> 46,592 tokens


def test_token_source_names_where_not_what(token_file):
    token, _ = launch.read_hf_token(token_file)
    assert startup.token_source(None, token_file) is None
    assert startup.token_source(token, token_file) == f"--hf-token-file {token_file}"
    assert startup.token_source(token, None) == "the HF_TOKEN environment variable"


def test_ports_host_default_and_tunnel():
    # a host (SSH or docker) serves on vLLM's default port; a local process takes a free one
    assert startup.choose_ports(None, True, None, None) == (VLLM_DEFAULT_PORT, None)
    local, tunnel = startup.choose_ports(None, False, None, None)
    assert local != VLLM_DEFAULT_PORT or port_is_free(local)
    assert tunnel is None
    # over SSH the tunnel's local end reuses the engine port when it is free here...
    free = free_port()
    assert startup.choose_ports("u@h", True, free, None) == (free, free)
    assert startup.choose_ports("u@h", True, free, 9999) == (free, 9999)


def test_tunnel_moves_off_a_taken_port():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        engine_port, tunnel = startup.choose_ports("u@h", True, port, None)
    assert engine_port == port and tunnel is not None and tunnel != port


def test_local_vllm_is_a_local_process_with_the_token_only_named(token_file):
    prepared = startup.prepare(cpu_plan(), "vllm", hf_token_file=token_file, launcher="python3 serve.py")
    assert not prepared.on_host and prepared.spec.host is None and prepared.spec.token_path is None
    assert prepared.token is not None and prepared.token.reveal() == TOKEN
    assert prepared.spec.serve_argv[:2] == ["python3", "serve.py"]
    (line,) = prepared.spec.commands
    assert line.startswith(f"HF_TOKEN=<from --hf-token-file {token_file}> VLLM_CPU_KVCACHE_SPACE=2 python3 serve.py")
    assert TOKEN not in prepared.spec.model_dump_json()
    engine = prepared.engine(token_file.parent / "engine.log")
    assert isinstance(engine, launch.LocalServeEngine) and engine.secret_env == {"HF_TOKEN": TOKEN}


def test_local_vllm_defaults_to_the_local_launcher():
    prepared = startup.prepare(cpu_plan(), "vllm")
    # startup.local_launcher: the vllm-cpu package ships no `vllm` script, so this interpreter's -m module
    assert prepared.spec.serve_argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert prepared.token is None and not prepared.spec.commands[0].startswith("HF_TOKEN")


def test_ssh_host_runs_a_host_engine_through_a_tunnel(token_file, tmp_path):
    prepared = startup.prepare(
        cpu_plan(), "vllm", host="root@127.0.0.1", port=8001, tunnel_port=8101, hf_token_file=token_file,
        ssh_options=["Port=2222"],
    )  # fmt: skip
    spec = prepared.spec
    assert prepared.on_host and spec.token_path == remote.TOKEN_PATH and spec.tunnel_port == 8101
    assert prepared.shell.target == "root@127.0.0.1" and prepared.shell.options == ["Port=2222"]
    assert spec.commands == remote.dry_run_commands(spec, prepared.shell)
    assert spec.commands[-1].endswith("-L 127.0.0.1:8101:127.0.0.1:8001 root@127.0.0.1")
    assert all(TOKEN not in line for line in spec.commands)
    engine = prepared.engine(tmp_path / "engine.log")
    assert isinstance(engine, remote.HostEngine) and engine.mode == "remote-process"


def test_docker_here_is_a_host_engine_on_port_8000(tmp_path):
    prepared = startup.prepare(cpu_plan(), "vllm-docker", image="vllm/vllm-openai:latest")
    assert prepared.on_host and prepared.spec.port == VLLM_DEFAULT_PORT and prepared.spec.tunnel_port is None
    assert prepared.shell.target is None and prepared.spec.token_path is None
    engine = prepared.engine(tmp_path / "engine.log")
    assert isinstance(engine, remote.HostEngine) and engine.mode == "docker"


def test_token_file_warning_leads_the_launch_warnings(token_file):
    token_file.chmod(0o644)
    prepared = startup.prepare(cpu_plan(), "vllm", hf_token_file=token_file)
    assert prepared.spec.warnings[0].startswith(f"{token_file} is readable by other users (mode 0644)")


def test_local_serve_is_ready_only_when_it_serves_the_planned_name(tmp_path, monkeypatch):
    # the fake serves 'other' (--set served-model-name=other) while the plan's clients ask for SmolLM2
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setattr(startup, "preferred_port", lambda port: free_port())  # leave 8000 to others here
    with pytest.raises(EngineError, match="serves \\['other'\\], not 'SmolLM2-135M-Instruct'"):
        api.up(UpRequest(engine="vllm", plan=cpu_plan(), launcher=f"{sys.executable} {FAKE}",
                         sets=["served-model-name=other"], timeout_s=30))  # fmt: skip
    assert not (tmp_path / "onechip" / "engine.json").exists()
    assert api.status().state is None
    log = (tmp_path / "onechip" / "engine" / "engine.log").read_text()
    pid = int(log.split("(APIServer pid=")[1].split(")")[0])
    assert not group_alive(pid)
