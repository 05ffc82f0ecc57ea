"""A stand-in for the `docker` CLI on a test SSH host: `run` starts the project's fake vLLM server
(tests/fakes/vllm_server.py) replaying a recorded boot log, as `vllm/vllm-tpu` would boot on a TPU VM.

    docker pull IMAGE                       prints docker's lines; a bare config-blob id ('sha256:...') fails
                                            with docker's 'unexpected media type' (the seed's trap)
    docker run -d --name N [opts] IMAGE vllm serve MODEL [flags]
                                            the fake server, detached, its output in STATE/N.log; the token
                                            from --env-file reaches only its environment
    docker logs [-f] N                      that log; -f follows it until the container stops; a removed
                                            container's fails ('No such container', exit 1)
    docker inspect -f '{{.State.Running}}' N    true / false
    docker stop [-t S] N, docker rm -f N    stop it (rm: and remove it)
    docker image inspect IMAGE --format ... prints the image's vLLM version label

Environment: FAKE_DOCKER_STATE (state directory, default /tmp/fake-docker), FAKE_DOCKER_BOOT_LOG (the log
replayed, default the seed's v5e-1 Gemma 4 E2B boot, tests/fixtures/bootlogs/tpu-v5e1-gemma4-e2b-seed.log),
FAKE_DOCKER_VERSION (the vLLM version the server reports, default the seed's 0.26.1rc1.dev125+ga7a204cc6),
FAKE_DOCKER_BOOT_DELAY_S (seconds before the server starts, default 3).
N may also be the container id `run` printed (STATE/ID.id holds its name), as docker takes either.
Install it on a PATH as an executable named `docker` that execs this file with a Python interpreter.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERVER = HERE / "vllm_server.py"
SEED_LOG = HERE.parent / "fixtures" / "bootlogs" / "tpu-v5e1-gemma4-e2b-seed.log"
SEED_VERSION = "0.26.1rc1.dev125+ga7a204cc6"
STATE = Path(os.environ.get("FAKE_DOCKER_STATE", "/tmp/fake-docker"))
WITH_VALUE = {"--name", "-v", "--volume", "-e", "--env", "--env-file", "--shm-size", "--entrypoint", "--gpus",
              "-p", "--ipc", "--net", "--network"}  # fmt: skip


def _name(ref: str) -> str:
    """The container `ref` names: an id `run` printed (docker takes either), else the name itself."""
    try:
        return (STATE / f"{ref}.id").read_text()
    except OSError:
        return ref


def _pid(name: str) -> int | None:
    try:
        return int((STATE / f"{name}.pid").read_text())
    except (OSError, ValueError):
        return None


def _alive(name: str) -> bool:
    """Whether the container's process runs: its group answers, and its leader is no zombie (an exited leader no
    process reaped yet, as under a PID 1 that does not reap)."""
    pid = _pid(name)
    if pid is None:
        return False
    try:
        os.killpg(pid, 0)
    except OSError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[-1][:1] != "Z"
    except OSError:
        return True  # no /proc: the signal's answer


def pull(args: list[str]) -> int:
    image = args[-1]
    if image.startswith("sha256:"):
        print(f"Error response from daemon: {image}: unexpected media type", file=sys.stderr)
        return 1
    print(f"{image.rsplit(':', 1)[0]}: Pulling from fake\nDigest: sha256:{'0' * 64}\nStatus: Image is up to date "
          f"for {image}")  # fmt: skip
    return 0


def run(args: list[str]) -> int:
    """`run -d --name N ... IMAGE vllm serve MODEL flags`: start the fake server detached."""
    name, env_file, i = "container", None, 0
    while i < len(args) and args[i].startswith("-"):
        flag = args[i].split("=", 1)[0]
        if flag in WITH_VALUE and "=" not in args[i]:
            if flag == "--name":
                name = args[i + 1]
            elif flag == "--env-file":
                env_file = args[i + 1]
            i += 2
        else:
            i += 1
    command = args[i + 1 :]
    if command[:2] == ["vllm", "serve"]:
        command = command[2:]
    env = dict(os.environ)
    if env_file:
        for line in Path(os.path.expanduser(env_file)).read_text().splitlines():
            key, _, value = line.partition("=")
            env[key.strip()] = value.strip()
    STATE.mkdir(parents=True, exist_ok=True)
    log_path = STATE / f"{name}.log"
    boot_log = os.environ.get("FAKE_DOCKER_BOOT_LOG", str(SEED_LOG))
    version = os.environ.get("FAKE_DOCKER_VERSION", SEED_VERSION)
    # A real TPU boot takes minutes; a little delay here keeps the order of a real one (the log mirror that
    # `up` opens over ssh is attached before the server is healthy) on a loaded test machine.
    delay = os.environ.get("FAKE_DOCKER_BOOT_DELAY_S", "3")
    server = [sys.executable, str(SERVER), *command, "--fake-boot-log", boot_log, "--fake-version", version]
    with log_path.open("wb") as log:
        proc = subprocess.Popen(  # noqa: S603
            ["sh", "-c", f'sleep {float(delay)}; exec "$0" "$@"', *server],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
    (STATE / f"{name}.pid").write_text(str(proc.pid))
    container_id = f"{proc.pid:064x}"
    (STATE / f"{container_id}.id").write_text(name)
    print(container_id)
    return 0


def logs(args: list[str]) -> int:
    """As docker's: the log of a container run and not removed (`rm`), else 'No such container', exit 1; with -f, the
    log as it grows until the container stops, then exit 0 (at once for one already stopped)."""
    name = _name(args[-1])
    path = STATE / f"{name}.log"
    if _pid(name) is None or not path.exists():
        print(f"Error response from daemon: No such container: {name}", file=sys.stderr)
        return 1
    follow = "-f" in args or "--follow" in args
    with path.open("rb") as log:
        while True:
            running = follow and _alive(name)  # asked before the read: what it wrote as it stopped is read too
            chunk = log.read()
            if chunk:
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()
            elif not running:
                return 0
            else:
                time.sleep(0.1)


def stop(args: list[str]) -> int:
    name = _name(args[-1])
    pid = _pid(name)
    if pid is not None and _alive(name):
        os.killpg(pid, signal.SIGTERM)
        for _ in range(50):
            if not _alive(name):
                break
            time.sleep(0.1)
        else:
            os.killpg(pid, signal.SIGKILL)
    if args and args[0] == "rm":
        (STATE / f"{name}.pid").unlink(missing_ok=True)
    return 0


def inspect(args: list[str]) -> int:
    if args and args[0] == "image":
        print(os.environ.get("FAKE_DOCKER_VERSION", SEED_VERSION))
        return 0
    name = _name(args[-1])
    if _pid(name) is None:
        print(f"Error: No such object: {name}", file=sys.stderr)
        return 1
    print("true" if _alive(name) else "false")
    return 0


def main(argv: list[str]) -> int:
    if not argv:
        return 1
    verb, rest = argv[0], argv[1:]
    handlers = {"pull": pull, "run": run, "logs": logs, "stop": stop, "rm": lambda a: stop(["rm", *a]),
                "inspect": inspect, "image": lambda a: inspect(["image", *a[1:]])}  # fmt: skip
    if verb not in handlers:
        print(f"fake docker: {verb} is not faked", file=sys.stderr)
        return 1
    return handlers[verb](rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
