"""What `onechip up` runs, as data and as a local process: a ServeCommand (onechip.vllm.flags) plus where
onechip reaches it, the exact shell lines, and the Hugging Face token kept off every command line.

    read_hf_token(path) -> (Secret | None, warnings)   from a file or HF_TOKEN; a Secret never prints
    LaunchSpec(command, tunnel_port, commands, ...)    a ServeCommand with its transport (what --dry-run prints)
    LocalServeEngine(spec, log_path, token)            the spec as a managed local process (ready = first chat)
    UpResult                                           what `up` did, or would do

Every vLLM fact (flags, their order and reasons, the docker line, the launcher) lives in onechip.vllm.flags;
this module only launches what it builds.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pydantic import Field

from onechip.engines.local import LocalVllmEngine
from onechip.engines.ready import confirm_ready
from onechip.errors import ConfigError, remember_secret
from onechip.paths import read_key_file
from onechip.progress import ProgressFn
from onechip.schemas import BootRecord, CrossCheck, Plan, ServeCommand
from onechip.schemas.common import ResultModel
from onechip.schemas.replicas import RouterCommand


class Secret:
    """A value that never prints: str(), repr() and f-strings show '***'; `reveal()` is the only way in."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value
        remember_secret(value)  # errors.redact scrubs it from every line this process prints

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def scrub(self, text: str) -> str:
        """`text` with this secret replaced by '***'."""
        return text.replace(self._value, "***") if self._value else text


def read_hf_token(
    path: Path | str | None = None, environ: dict[str, str] | None = None
) -> tuple[Secret | None, list[str]]:
    """The Hugging Face token from `path` (first line, stripped) or HF_TOKEN / HUGGING_FACE_HUB_TOKEN.

    Returns (token or None, warnings). Raises ConfigError naming the file (never its content) when it
    cannot be read or is empty. Warns when the file is readable by group or others.
    """
    env = os.environ if environ is None else environ
    warnings: list[str] = []
    if path is None:
        value = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN")
        return (Secret(value.strip()) if value and value.strip() else None), warnings
    file = Path(path).expanduser()
    text, mode = read_key_file(file, "--hf-token-file")
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not value:
        raise ConfigError(f"--hf-token-file {file}: the file is empty")
    if "=" in value or any(c.isspace() for c in value):  # 'HF_TOKEN=hf_...' (a .env line) would be sent as the token
        raise ConfigError(
            f"--hf-token-file {file}: its first line is not a bare token (it holds '=' or a space, as a .env line "
            "does); write the token alone"
        )
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        warnings.append(f"{file} is readable by other users (mode {stat.S_IMODE(mode):04o}); chmod 600 it")
    return Secret(value), warnings


class LaunchSpec(ResultModel):
    """Everything `onechip up` will run, before it runs it (what --dry-run prints). Holds no secret."""

    command: ServeCommand = Field(description="The serve command (onechip.vllm.flags.serve_command).")
    tunnel_port: int | None = Field(default=None, description="Local end of the SSH tunnel.")
    commands: list[str] = Field(default_factory=list, description="Exact shell lines run, in order.")
    warnings: list[str] = Field(default_factory=list, description="Things to fix before paying for a boot.")

    @property
    def engine(self) -> str:
        """'embedded', 'vllm' (a process) or 'vllm-docker' (a container)."""
        return self.command.target.kind

    @property
    def host(self) -> str | None:
        return self.command.target.host

    @property
    def port(self) -> int:
        return self.command.target.port

    @property
    def served_name(self) -> str:
        return self.command.served_name

    @property
    def env(self) -> dict[str, str]:
        return self.command.env

    @property
    def serve_argv(self) -> list[str]:
        return self.command.argv

    @property
    def docker_argv(self) -> list[str]:
        return [word for group in self.command.docker for word in group.words]

    @property
    def token_path(self) -> str | None:
        return self.command.target.token_path if self.command.target.token_source else None

    @property
    def base_port(self) -> int | None:
        """The port onechip talks to on 127.0.0.1 (the tunnel's local end over SSH)."""
        return self.tunnel_port if self.host else self.port


class LocalServeEngine(LocalVllmEngine):
    """A LaunchSpec's serve command as a managed local process: the embedded engine's lifecycle
    (own process group, stop() signals the group, log from the first byte). The token, if any, reaches
    the engine through `secret_env` only."""

    def __init__(self, spec: LaunchSpec, log_path: Path, token: Secret | None = None, tie_to_parent: bool = False):
        super().__init__(
            model_path=Path(spec.command.model), served_name=spec.served_name, log_path=log_path,
            argv=spec.serve_argv, env=spec.env,
            port=spec.port, host="127.0.0.1", tie_to_parent=tie_to_parent,
        )  # fmt: skip
        self.spec = spec
        self.kind = "vllm"
        if token is not None:
            self.secret_env = {"HF_TOKEN": token.reveal()}

    def wait_ready(self, timeout_s: float = 600.0, on_progress: ProgressFn | None = None) -> BootRecord:
        """Healthy, then serving `served_name` and answering a first chat (engines.ready), as a HostEngine's
        wait_ready does. Raises EngineBootError (died, never healthy) or EngineError (wrong model, chat
        failed); the caller stops the engine."""
        boot = super().wait_ready(timeout_s, on_progress)
        confirm_ready(self.base_url, self.served_name)
        return boot


class ReplicaSetLaunch(ResultModel):
    """Everything `up --replicas N` runs (what `plan --replicas N` and `up --dry-run` print): each replica's
    launch, each pinned to its chip or core share, then vllm-router in front. Holds no secret."""

    engine: str = Field(description="Engine kind of every replica: embedded, vllm or vllm-docker.")
    chips_per_replica: int = Field(description="Chips (or CPU cores, embedded) each replica sees.")
    port: int | None = Field(
        default=None,
        description="The --port asked for (default 8000): replica 0's before a busy one was moved off, as a repeated "
        "`up --replicas N --port P` names its set. None in a set recorded before it was kept.",
    )
    pins: list[dict[str, str]] = Field(
        default_factory=list, description="Per replica, the environment that pins it to its share."
    )
    replicas: list[LaunchSpec] = Field(description="Each replica's launch, in order (replica K = index K).")
    router: RouterCommand = Field(description="The vllm-router command in front of them.")
    commands: list[str] = Field(default_factory=list, description="Every shell line `up` runs, in order.")
    warnings: list[str] = Field(default_factory=list, description="Things to fix before paying for a boot.")


class UpResult(ResultModel):
    """What `onechip up` did (or, with --dry-run, would do)."""

    dry_run: bool = Field(description="Nothing was run.")
    launch: LaunchSpec | None = Field(
        default=None, description="The launch: its serve command, transport and warnings."
    )
    boot: BootRecord | None = Field(default=None, description="The boot, once the engine answered a first chat.")
    crosscheck: CrossCheck | None = Field(default=None, description="The plan against the boot log.")
    plan: Plan | None = Field(
        default=None, description="The plan launched from (re-planned when a --set changed what it sized)."
    )
    replanned_with: list[str] = Field(
        default_factory=list,
        description="The --set items a given plan was re-planned with, from the request it records (they change "
        "memory it sized), and '--engine KIND' when it was printed for another launcher and that install sizes "
        "memory otherwise (FlashInfer, MXFP4 kernels).",
    )
    replica_set: ReplicaSetLaunch | None = Field(
        default=None, description="With --replicas N: every replica's launch and the router's."
    )
    boots: list[BootRecord] = Field(default_factory=list, description="With --replicas N: each replica's boot.")
    warnings: list[str] = Field(
        default_factory=list,
        description="What this up could not guard, said once: port claims off and why (engines.port_claims.unusable).",
    )
