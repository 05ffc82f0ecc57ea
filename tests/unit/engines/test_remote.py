"""The host-engine path without SSH: the same scripts run through a local shell (the SSH transport itself is
tested for real in tests/integration/test_remote_ssh.py). The fake vLLM (tests/fakes/vllm_server.py) stands in for
vLLM; a fake Hugging Face token must reach its environment and appear nowhere else."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import factories
from factories import embedded_plan as _plan
from factories import engine_state
from fakes import vllm_server
from onechip import api
from onechip.cli.main import app
from onechip.engines import launch, remote, startup
from onechip.engines import state as engine_state_module
from onechip.engines.local import free_port, group_alive
from onechip.errors import EngineBootError, EngineError
from onechip.procs import start_ticks
from onechip.schemas import EngineStatus, ServeTarget
from onechip.schemas.requests import UpRequest
from onechip.vllm import flags

FAKE = vllm_server.SCRIPT
TOKEN = "hf_FAKEtoken0123456789abcdefXYZ"


@pytest.fixture
def home(tmp_path, monkeypatch):
    # local engines here take another free port, as when vLLM's 8000 is taken: these tests leave 8000 to
    # whatever else runs on this machine
    monkeypatch.setattr(startup, "preferred_port", lambda port: free_port())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "onechip"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    (tmp_path / "home").mkdir()
    token_file = tmp_path / "hf_token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)
    return tmp_path


def _ps() -> str:
    return subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout


def _no_token_under(path: Path) -> None:
    for file in path.rglob("*"):
        if file.is_file() and file.name != "hf_token.env" and file.name != "hf_token":
            assert TOKEN not in file.read_text(errors="replace"), file


def _host_engine(home: Path) -> remote.HostEngine:
    """A HostEngine on this machine (no ssh) serving the fake vLLM, with the test token from a file."""
    token, _ = launch.read_hf_token(home / "hf_token")
    spec = _spec(port=free_port(), launcher=[sys.executable, str(FAKE)], token_source="--hf-token-file",
                 token_path=remote.TOKEN_PATH)  # fmt: skip
    return remote.HostEngine(spec, remote.Shell(None), home / "engine.log", token)


def _spec(**target) -> launch.LaunchSpec:
    return launch.LaunchSpec(command=flags.serve_command(_plan(), ServeTarget(kind="vllm", **target)))


def test_host_engine_token_only_in_0600_file_and_engine_env(home):
    engine = _host_engine(home)
    engine.start()
    try:
        boot = engine.wait_ready(30)
        assert TOKEN not in _ps()
        stored = home / "home" / ".onechip" / "hf_token.env"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and stored.read_text() == f"HF_TOKEN={TOKEN}\n"
        log = (home / "engine.log").read_text()
        assert "token received: yes" in log and TOKEN not in log
        assert TOKEN not in (home / "home" / ".onechip" / "engine" / "serve.sh").read_text()
        assert TOKEN not in boot.model_dump_json()
        assert [e.name for e in boot.events][-2:] == ["health_ok", "first_chat_ok"]
        assert boot.kv_cache_tokens == 46_592
        state = engine.state()
        assert state.mode == "remote-process" and state.remote_pid == boot.pid
        assert state.mirror_pid and state.mirror_started == start_ticks(state.mirror_pid)  # down tells it by that
        assert remote.host_status(state)[0] is True
    finally:
        engine.stop()
    assert engine.remote_pid is not None and not group_alive(engine.remote_pid)
    _no_token_under(home / "home")


def test_host_engine_boot_record_waits_for_a_lagging_log_mirror(home, monkeypatch):
    """The mirror copies the host's log asynchronously (ssh, `tail -F`): the boot record `wait_ready` returns is
    read once the mirror holds what the host's log held at ready. Before, it was read at once and, with the mirror
    behind (under load), lost the KV cache line and "token received" (a flaky test, and a user's boot record)."""
    go = home / "mirror-may-start"
    logs = remote.logs_command

    def late_mirror(state, follow=False):  # the mirror starts copying only once the engine answered
        return f"until [ -e {go} ]; do sleep 0.05; done; {logs(state, True)}" if follow else logs(state)

    monkeypatch.setattr(remote, "logs_command", late_mirror)
    ready = remote.confirm_ready
    monkeypatch.setattr(remote, "confirm_ready", lambda *a, **kw: (ready(*a, **kw), go.touch())[0])
    engine = _host_engine(home)
    engine.start()
    try:
        boot = engine.wait_ready(30)
        assert boot.kv_cache_tokens == 46_592  # the fake's --fake-kv-tokens default, from its boot log
        assert "token received: yes" in (home / "engine.log").read_text()
    finally:
        engine.stop()


def test_host_engine_keeps_mirroring_the_log_after_ready(home):
    """What the engine logs once it serves (a request's warning, a crash under load) reaches the local log until
    the engine is stopped; `down` finds the mirror by the pid the state records."""
    engine = _host_engine(home)
    engine.start()
    try:
        engine.wait_ready(30)
        remote_log = home / "home" / ".onechip" / "engine" / "engine.log"
        time.sleep(1.0)  # well past the 0.5 s the mirror used to live after ready
        with remote_log.open("a") as log:
            log.write("WARNING after ready: a line written while serving\n")
        deadline = time.monotonic() + 10
        while "after ready" not in (home / "engine.log").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "WARNING after ready: a line written while serving" in (home / "engine.log").read_text()
        state = engine.state()
        assert state.mirror_pid is not None and group_alive(state.mirror_pid)
    finally:
        engine.stop()
    assert not group_alive(state.mirror_pid)


def test_host_engine_boot_failure_is_one_line_with_log_path(home, monkeypatch):
    monkeypatch.setenv("FAKE_VLLM_FAIL", "1")
    engine = _host_engine(home)
    engine.start()
    with pytest.raises(EngineBootError) as info:
        engine.wait_ready(30)
    message = str(info.value)
    assert "needed 384.11M, 347.33M free" in message and str(home / "engine.log") in message
    assert TOKEN not in message and TOKEN not in " ".join(info.value.tail)
    assert not group_alive(engine.remote_pid or 0)


def test_api_up_local_vllm_then_down(home):
    result = api.up(
        UpRequest(
            engine="vllm",
            plan=_plan(),
            launcher=f"{sys.executable} {FAKE}",
            hf_token_file=str(home / "hf_token"),
            timeout_s=30,
        )
    )
    try:
        assert result.boot is not None and result.boot.engine == "vllm"
        assert TOKEN not in _ps()
        st = api.status()
        assert st.running and st.healthy and st.state is not None and st.state.model == "SmolLM2-135M-Instruct"
        lines = list(api.logs())
        assert any("token received: yes" in line for line in lines)
        assert result.launch is not None and result.boot.command == result.launch.command.argv  # ran what it showed
        assert result.crosscheck is not None and result.crosscheck.reported_kv_tokens == 46_592
        assert result.crosscheck.agrees  # the fake logs what the plan says: 46,592 tokens, 5.69x
    finally:
        down = api.down()
    assert down.state is not None and not group_alive(down.state.pid)
    _no_token_under(home / "onechip")
    assert TOKEN not in result.model_dump_json()


def test_confirm_ready_wrong_model_names_what_is_served(home):
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "--served-model-name", "other", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        env={**os.environ, "HF_TOKEN": TOKEN},
    )
    try:
        from onechip.engines.ready import confirm_ready, healthy

        for _ in range(100):
            if healthy(f"http://127.0.0.1:{port}"):
                break
            import time

            time.sleep(0.1)
        with pytest.raises(EngineError) as info:
            confirm_ready(f"http://127.0.0.1:{port}", "SmolLM2-135M-Instruct")
        assert "'other'" in str(info.value) and TOKEN not in str(info.value)
    finally:
        proc.terminate()
        proc.wait()


@pytest.mark.parametrize(
    "args",
    [
        [
            "--engine",
            "vllm-docker",
            "--host",
            "ubuntu@203.0.113.7",
            "--model",
            "gemma-4-E2B-it",
            "--chip",
            "v5e-1",
            "--set",
            "max-model-len=32768",
        ],
        ["--engine", "vllm", "--host", "root@127.0.0.1", "--plan", "PLAN", "--ssh-opt", "Port=2222"],
        ["--engine", "vllm", "--plan", "PLAN"],
        ["--engine", "vllm-docker", "--model", "gemma-4-E2B-it", "--chip", "h100"],
    ],
)
def test_dry_run_shows_commands_not_the_token(home, args, monkeypatch):
    plan_file = home / "plan.json"
    plan_file.write_text(_plan().model_dump_json())
    args = [str(plan_file) if a == "PLAN" else a for a in args]
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # from the environment this time
    monkeypatch.setenv("COLUMNS", "300")
    result = CliRunner().invoke(app, ["up", *args, "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "commands:" in result.output and TOKEN not in result.output
    assert "HF_TOKEN environment variable" in result.output
    # the serve.sh a process on a host runs gives vLLM's IPC sockets its own folder, and the dry run says so
    assert ('export VLLM_RPC_BASE_PATH="$d"' in result.output) == ("root@127.0.0.1" in args), result.output
    json_out = CliRunner().invoke(app, ["up", *args, "--dry-run", "--json"])
    assert json_out.exit_code == 0 and TOKEN not in json_out.output
    assert not (home / "onechip" / "engine.json").exists()  # nothing ran


def test_dry_run_with_set_replans(home, monkeypatch):
    monkeypatch.setattr(startup, "port_available", lambda port, host="127.0.0.1": True)  # not this machine's 8000
    result = api.up(
        UpRequest(
            engine="vllm-docker",
            host="ubuntu@203.0.113.7",
            model="gemma-4-E2B-it",
            chip="v5e-1",
            sets=["max-model-len=32768"],
            dry_run=True,
        )
    )
    assert result.launch is not None
    argv = result.launch.docker_argv
    assert argv[argv.index("--max-model-len") + 1] == "32768"
    assert not any("overrides a value the plan sized" in w for w in result.launch.warnings)
    assert result.launch.commands[-1].endswith("-L 127.0.0.1:8000:127.0.0.1:8000 ubuntu@203.0.113.7")


def test_scripts():
    spec = _spec(launcher=["python3", "-m", "vllm.entrypoints.openai.api_server"], token_source="x",
                 token_path=remote.TOKEN_PATH)  # fmt: skip
    script = remote.serve_script(spec)
    assert script.splitlines()[-1] == "exec " + flags.shell_join(spec.command.argv)  # the command, as built
    assert script.splitlines()[2:5] == ["set -a", '. "$HOME"/.onechip/hf_token.env', "set +a"]
    assert "export VLLM_CPU_KVCACHE_SPACE=2" in script
    assert remote.put_secret_command().startswith("umask 077; ")  # the seed's `umask 077; cat > ~/.hf_token`
    shell = remote.Shell("root@127.0.0.1", ["Port=2222"])
    assert shell.argv("true")[:2] == ["ssh", "-o"] and "Port=2222" in shell.argv("true")
    tunnel = remote.tunnel_argv(shell, 8005, 8000)
    assert tunnel[-3:] == ["-L", "127.0.0.1:8005:127.0.0.1:8000", "root@127.0.0.1"] and "-N" in tunnel


def test_api_up_embedded_records_state(home, monkeypatch):
    from onechip.engines.embedded import EmbeddedEngine

    class FakeEmbedded(EmbeddedEngine):
        def start(self) -> None:  # skip the vllm-cpu / model checks; the lifecycle is LocalVllmEngine's
            super(EmbeddedEngine, self).start()

        def command(self) -> list[str]:
            return [
                sys.executable,
                str(FAKE),
                "--served-model-name",
                self.served_name,
                "--port",
                str(self.port),
            ]

    monkeypatch.setattr("onechip.api._engines.EmbeddedEngine", FakeEmbedded)
    result = api.up(UpRequest(timeout_s=30))
    try:
        assert result.boot is not None and result.boot.kv_cache_tokens == 46_592
        # the launch it reports is the one that ran: same port (chosen before the command was built)
        assert result.launch is not None and result.boot.base_url == f"http://127.0.0.1:{result.launch.port}"
        st = api.status()
        assert st.running and st.healthy and st.state is not None and st.state.mode == "process"
    finally:
        down = api.down()
    assert down.state is not None and not group_alive(down.state.pid)
    assert api.down().note == "no engine was running"


def test_docker_mode_host_commands():
    state = engine_state(
        engine="vllm-docker@ssh", pid=0, base_url="http://127.0.0.1:8005", mode="docker", host="u@h",
        container="onechip-vllm", sudo=True,
    )  # fmt: skip
    assert remote.alive_command(state).startswith("sudo docker inspect -f '{{.State.Running}}' onechip-vllm")
    assert remote.logs_command(state, follow=True) == "sudo docker logs -f onechip-vllm 2>&1"
    assert "sudo docker rm -f onechip-vllm" in remote.stop_command(state)
    process = state.model_copy(update={"mode": "remote-process", "remote_pid": 4242, "sudo": False})
    assert remote.alive_command(process) == "kill -0 -- -4242 2>/dev/null && echo true || echo false"
    assert remote.stop_command(process, 2).startswith("kill -TERM -- -4242 2>/dev/null || { echo gone; exit 0; }; ")


CONTAINER_ID = "4f" * 32
FAKE_DOCKER_GONE = f"""#!/bin/sh
# a docker CLI: `run -d` prints the new container's id; then that container is gone (`inspect` of it fails), and a
# container of the same name, another onechip home's, runs
echo "$*" >> "$0.calls"
case "$1" in
  run) echo {CONTAINER_ID} ;;
  inspect) [ "$4" = onechip-vllm ] && echo true || {{ echo "Error: No such object: $4" >&2; exit 1; }} ;;
esac
"""


def test_a_container_is_known_by_its_id_so_down_never_removes_a_namesake(tmp_path, monkeypatch):
    """A container's --name is fixed (onechip-vllm): once ours is gone (docker rm, a host reboot), another onechip home
    or a user may start one of that name. Before, status called that one ours and `down` ran `docker rm -f
    onechip-vllm` on it. Now the id `docker run -d` printed is recorded, and status, logs and down name it."""
    docker = factories.fake_docker(tmp_path, monkeypatch, FAKE_DOCKER_GONE)
    ready = startup.prepare(_plan(), "vllm-docker", port=free_port(), image="vllm/vllm-openai:v0.32.0")
    engine = ready.engine(tmp_path / "engine.log")
    assert isinstance(engine, remote.HostEngine)
    engine.start()
    try:
        state = engine.state()
        assert state.container == "onechip-vllm" and state.container_id == CONTAINER_ID
        assert remote.host_status(state)[0] is False  # ours is gone; the namesake runs
        remote.stop_host_engine(remote.Shell(None), state)
    finally:
        engine.stop()
    calls = Path(f"{docker}.calls").read_text()
    assert f"rm -f {CONTAINER_ID}" in calls and "rm -f onechip-vllm" not in calls, calls
    booting = state.model_copy(update={"container_id": None})  # recorded before `docker run` returned: its name
    assert "rm -f onechip-vllm" in remote.stop_command(booting)


def test_a_docker_launch_on_this_machine_makes_its_compile_cache_in_the_test_s_home(tmp_path, monkeypatch):
    # start_command runs `mkdir -p ~/.cache/vllm` before `docker run` (the COMPILE_CACHE mount, vllm.flags), and a
    # test's docker host is this machine: every such test made ~/.cache/vllm under the real HOME, not onechip's or the
    # test's. The fake docker's host (factories.fake_docker) now has a home of its own under tmp_path.
    factories.fake_docker(tmp_path, monkeypatch, FAKE_DOCKER_GONE)
    ready = startup.prepare(_plan(), "vllm-docker", port=free_port(), image="vllm/vllm-openai:v0.32.0")
    remote.Shell(None).run(remote.start_command(ready.spec), timeout_s=30)
    assert Path.home().is_relative_to(tmp_path) and (Path.home() / ".cache" / "vllm").is_dir()


def test_down_stops_the_log_mirror_the_state_records():
    mirror = subprocess.Popen(["sleep", "60"], start_new_session=True)  # noqa: S607
    try:
        remote.stop_tunnel(engine_state(mode="remote-process", host="u@h", mirror_pid=mirror.pid))
        assert mirror.wait(timeout=10) is not None
    finally:
        if mirror.poll() is None:
            mirror.kill()


@pytest.mark.parametrize("field", ["tunnel", "mirror"])
def test_down_never_signals_a_stranger_holding_a_recorded_tunnel_or_mirror_pid(field, tmp_path, monkeypatch):
    """The ssh tunnel and the log mirror are local process groups `down` stops long after `up` started them (after a
    reboot, or once they died and the kernel gave their pid away). Before, `down` SIGTERMed whatever group held the
    pid; now the start time recorded beside it (procs.start_ticks) must match."""
    monkeypatch.setenv("HOME", str(tmp_path))  # host_status asks the (local) host's ~/.onechip for its pid file
    stranger = subprocess.Popen(["sleep", "60"], start_new_session=True)  # noqa: S607 - a group leader, as ssh was
    try:
        started = start_ticks(stranger.pid)
        assert started is not None
        reused = engine_state(mode="remote-process", host="u@h", **{f"{field}_pid": stranger.pid,
                                                                     f"{field}_started": started - 1})  # fmt: skip
        remote.stop_tunnel(reused)
        assert stranger.poll() is None  # another process's group: left be
        if field == "tunnel":
            assert "the ssh tunnel is gone" in remote.host_status(reused.model_copy(update={"host": None}))[1]
        remote.stop_tunnel(reused.model_copy(update={f"{field}_started": started}))  # the one recorded: stopped
        assert stranger.wait(timeout=10) is not None
    finally:
        if stranger.poll() is None:
            stranger.kill()


def test_a_host_engine_records_its_start_and_down_never_signals_a_reused_pid(home):
    """A host rebooted (a spot VM back from preemption) may give the recorded pid to another process group. Before:
    `status` called it the engine and `down` SIGTERMed, then SIGKILLed it (only `kill -0 -- -PID` was asked)."""
    engine = _host_engine(home)
    engine.start()
    try:
        engine.wait_ready(30)
        recorded = engine.state()
        assert recorded.remote_pid is not None
        assert recorded.remote_pid_started == start_ticks(recorded.remote_pid)  # what the host printed
        assert remote.host_status(recorded)[0]
    finally:
        engine.stop()
    # a group leader that is not this process's child, as another process on the host is (a child of ours would
    # stay a zombie that `kill -0` still finds once stopped)
    spawn = "setsid sleep 30 > /dev/null 2>&1 < /dev/null & echo $!"
    other = int(subprocess.run(["bash", "-c", spawn], capture_output=True, text=True, check=True).stdout)
    try:
        started = start_ticks(other)
        assert started is not None
        reused = recorded.model_copy(update={"remote_pid": other, "remote_pid_started": started - 1})
        assert remote.host_status(reused) == (False, "")
        remote.stop_host_engine(remote.shell_for(reused), reused, grace_s=1.0)
        assert group_alive(other)  # not ours: not signalled
        # the same record with the pid's own start time is the engine: found and stopped
        ours = reused.model_copy(update={"remote_pid_started": started})
        assert remote.host_status(ours) == (True, "")
        remote.stop_host_engine(remote.shell_for(ours), ours, grace_s=1.0)
        assert not group_alive(other)
    finally:
        if group_alive(other):
            os.killpg(other, signal.SIGKILL)


def test_logs_follow_of_a_host_engine_ends_when_it_exits(tmp_path):
    """Before: `logs --follow` of an engine on a host ran `tail -F` there, which went on after the engine had died."""
    log = tmp_path / "serve.log"
    log.write_text("ready\n")
    spawn = f"setsid bash -c 'sleep 1; echo RuntimeError: died >> {log}' > /dev/null 2>&1 < /dev/null & echo $!"
    pid = int(subprocess.run(["bash", "-c", spawn], capture_output=True, text=True, check=True).stdout)
    state = engine_state(
        mode="remote-process", remote_pid=pid, remote_pid_started=start_ticks(pid), remote_log=str(log)
    )
    seen: list[str] = []
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            seen.extend(engine_state_module.log_lines(follow=True, state=state))
        except EngineError as exc:
            failed.append(exc)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    reader.join(timeout=15)
    assert not reader.is_alive()
    assert seen == ["ready", "RuntimeError: died"]
    assert str(failed[0]).startswith(f"the engine (pid {pid}) exited; its last lines are above")


def test_a_host_engine_is_recorded_booting_before_up_waits_for_it(home, monkeypatch):
    """An `up` killed while a host engine boots (SIGKILL: no cleanup runs) leaves what engine.json held during the
    wait. Before: nothing (the record was written once ready), so `status` said 'no engine' and `down` could not
    stop the remote process group. Here `status` and `down` run as another shell would, during the wait."""
    from onechip.api import _engines
    from onechip.progress import no_progress

    engine = _host_engine(home)
    engine.spec.command.argv.extend(["--fake-boot-s", "60"])
    seen: dict[str, object] = {}

    def killed_up_meanwhile(timeout_s: float = 600.0, on_progress: object = None) -> None:
        st = engine_state_module.status()
        seen["status"] = st
        seen["down"] = engine_state_module._down(1.0, no_progress)  # the lock is the killed `up`'s: released
        seen["alive_after_down"] = group_alive(engine.remote_pid or 0)
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "wait_ready", killed_up_meanwhile)
    try:
        with pytest.raises(KeyboardInterrupt):
            _engines._start(engine, home / "onechip" / "engine", None, None, 60.0, no_progress)
        st = seen["status"]
        assert isinstance(st, EngineStatus) and st.running and st.state is not None, st
        assert st.state.booting and st.state.mode == "remote-process" and st.state.remote_pid == engine.remote_pid
        assert f"booting (pid {engine.remote_pid})" in st.note
        assert engine.remote_pid is not None and seen["alive_after_down"] is False  # `down` stopped it
        assert engine_state_module.load() is None
    finally:
        engine.stop()


def test_an_up_killed_before_the_hosts_pid_came_back_leaves_a_record_status_and_down_use(home, monkeypatch):
    """Before: a process-mode host engine was recorded only once the start printed its pid; an `up` killed between
    the ssh start and that answer left the engine running on its host with nothing recorded (`status`: no engine).
    Now it is recorded before the start, and the start writes the group's pid to ~/.onechip/engine/engine.pid."""
    engine = _host_engine(home)
    engine.on_launched = lambda: engine_state_module.save_booting(engine)
    run, started = engine.shell.run, []

    def killed_after_the_start(command: str, **kwargs: object) -> str:
        out = run(command, **kwargs)  # type: ignore[arg-type]
        if "setsid" in command:
            started.append(int(out.split("pid=")[1].split()[0]))  # the test's own, to stop what it started
            raise KeyboardInterrupt  # stands for the SIGKILL: nothing after the start runs
        return out

    monkeypatch.setattr(engine.shell, "run", killed_after_the_start)
    with pytest.raises(KeyboardInterrupt):
        engine.start()
    pid = started[0]
    try:
        saved = engine_state_module.load()
        assert saved is not None and saved.booting and saved.remote_pid is None
        status = engine_state_module.status()
        assert status.running and "the pid in ~/.onechip/engine/engine.pid" in status.note, status
        down = engine_state_module.down()
        assert down.note.startswith("stopped the process group in ~/.onechip/engine/engine.pid"), down.note
        deadline = time.monotonic() + 10
        while group_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not group_alive(pid)
    finally:
        if group_alive(pid):
            os.killpg(pid, signal.SIGKILL)


def test_an_up_killed_while_its_ssh_tunnel_opens_leaves_the_tunnel_on_record(home, monkeypatch):
    """Before: the record saved once the engine ran had no tunnel; the tunnel was recorded only after it opened (up
    to 20 s later). An `up` killed meanwhile left the `ssh -N -L` running, holding the local port, with nothing for
    `down` to stop it by (seen with a real sshd: `up` SIGKILLed 1.1 s in)."""
    spec = _spec(port=free_port(), launcher=[sys.executable, str(FAKE), "--fake-boot-s", "30"], host="root@h")
    spec.tunnel_port = free_port()
    engine = remote.HostEngine(spec, remote.Shell(None), home / "engine.log")
    engine.on_launched = lambda: engine_state_module.save_booting(engine)
    monkeypatch.setattr(remote, "tunnel_argv", lambda *_: ["sleep", "60"])  # a tunnel that never opens its port

    def looks(*_) -> None:  # `up` is killed as it first asks whether the tunnel listens
        raise KeyboardInterrupt

    monkeypatch.setattr(remote.ports, "listeners", looks)
    monkeypatch.setattr(remote, "shell_for", lambda state: remote.Shell(None))  # `down` reaches "root@h" here
    with pytest.raises(KeyboardInterrupt):
        engine.start()
    tunnel = engine.tunnel
    assert tunnel is not None
    try:
        saved = engine_state_module.load()
        assert saved is not None and saved.tunnel_pid == tunnel.pid, saved
        engine_state_module.down()
        assert not group_alive(tunnel.pid)
    finally:
        engine.stop()
        tunnel.wait()  # reaped (stop() closed its stderr pipe)


@pytest.fixture
def short_home(monkeypatch):
    """A host $HOME whose ~/.onechip/engine/ipc/<uuid4> fits a socket's 107 bytes (pytest's tmp_path is too deep),
    and an empty temporary directory that must stay empty; removed after."""
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="oc-", dir="/tmp"))
    for name in ("h", "t", "o"):
        (root / name).mkdir()
    monkeypatch.setenv("HOME", str(root / "h"))
    monkeypatch.setenv("TMPDIR", str(root / "t"))
    monkeypatch.setenv("ONECHIP_HOME", str(root / "o"))
    monkeypatch.delenv("VLLM_RPC_BASE_PATH", raising=False)
    yield root
    shutil.rmtree(root)


def test_a_host_engines_ipc_sockets_go_in_its_own_folder_that_down_removes(short_home):
    """Before: serve.sh left VLLM_RPC_BASE_PATH unset, so vLLM bound its zmq sockets as /tmp/<uuid4> on the host, and a
    stopped or killed engine left them there for good. Now they go in ~/.onechip/engine/ipc (0700), and `down` (over
    the shell, from the record alone) removes the sockets and the folder, and nothing else."""
    spec = _spec(port=free_port(), launcher=[sys.executable, str(FAKE), "--fake-ipc"])
    engine = remote.HostEngine(spec, remote.Shell(None), short_home / "o" / "engine.log")
    folder = short_home / "h" / ".onechip" / "engine" / "ipc"
    folder.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as stale:  # a killed engine's, from before: removed at the start
        stale.bind(str(folder / "0528dc1a-013c-49c8-a054-39a6ed803c27"))
    engine.start()
    try:
        engine.wait_ready(30)
        sock = Path(re.search(r"ipc=(\S+)", (short_home / "o" / "engine.log").read_text()).group(1))
        assert sock.parent == folder and stat.S_ISSOCK(sock.stat().st_mode)
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and [p.name for p in folder.iterdir()] == [sock.name]
        engine_state_module.save(engine.state())
        engine._stop_mirror()
        assert engine_state_module.down().note.startswith("stopped process group")
    finally:
        engine.stop()
    assert not folder.exists()
    assert list((short_home / "t").iterdir()) == []  # nothing in the host's temporary directory


def test_down_removes_only_sockets_from_a_host_engines_ipc_folder(short_home):
    folder = short_home / "h" / ".onechip" / "replica-1" / "ipc"
    folder.mkdir(parents=True)
    (folder / "keep.txt").write_text("mine")
    with socket.socket(socket.AF_UNIX) as left:
        left.bind(str(folder / "s"))
    state = engine_state(mode="remote-process", remote_pid=2**22 + 5, remote_log="~/.onechip/replica-1/engine.log")
    remote.stop_host_engine(remote.Shell(None), state, grace_s=1)
    assert [p.name for p in folder.iterdir()] == ["keep.txt"]


def test_a_vllm_rpc_base_path_the_user_set_is_kept():
    """--set VLLM_RPC_BASE_PATH=... is exported as given, and no folder of onechip's is set after it; one set in the
    host's own environment is kept by the script's test (the first test runs it)."""
    plan = _plan()
    command = flags.serve_command(plan, ServeTarget(kind="vllm", host="u@h", sets=["VLLM_RPC_BASE_PATH=/srv/ipc"]))
    script = remote.serve_script(launch.LaunchSpec(command=command))
    assert "export VLLM_RPC_BASE_PATH=/srv/ipc" in script and "ipc" not in script.replace("/srv/ipc", "")
    default = remote.serve_script(_spec(host="u@h"))
    assert 'd="$HOME"/.onechip/engine/ipc' in default and 'export VLLM_RPC_BASE_PATH="$d"' in default
