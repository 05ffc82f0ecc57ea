"""The request of each job, one strict model each: what `onechip.api` takes and what the CLI's options are
generated from (onechip.cli.options). BenchConfig, the request of `bench`, lives with its results in
schemas.bench.

Each field is declared once: type and range (pydantic), description (= its --help text) and flag (`Cli`).
Build one from user input with schemas.inputs.build_request (ConfigError naming the flag).
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from onechip.errors import os_error_line
from onechip.paths import kind_of
from onechip.schemas.bench import (
    MAX_CLIENTS,
    MAX_RATE,
    MAX_TOKENS,
    NEEDS,
    PROBE_MAX_S,
    PROBE_MIN_REQUESTS,
    PROBE_S,
    BenchConfig,
    bench_slo,
    check_agent,
    check_search,
    slo_bounds,
)
from onechip.schemas.checks import CHECK_NAMES, CheckOptions, Verdict
from onechip.schemas.cloud import MAX_BOOT_S, MIN_BOOT_S, HostDemoOptions
from onechip.schemas.common import (
    CommandWord,
    ModelName,
    Name,
    Region,
    image_reference,
    openai_base_url,
    shell_line,
)
from onechip.schemas.inputs import (
    HUMAN_INT,
    INT64_MAX,
    MAX_HOST_GIB,
    MAX_POSITIONS,
    TOKEN_COUNTS,
    Cli,
    RequestModel,
    as_typed,
    comma_list,
    flag_of,
    given,
    key_counts,
    key_values,
    mm_limits,
    split_commas,
    ssh_hosts,
)
from onechip.schemas.plan import Plan
from onechip.schemas.replicas import MAX_REPLICAS, MODELLED_POLICIES, RouterPolicy
from onechip.schemas.run import RUN_FILES
from onechip.schemas.serve import EngineKind

Port = Annotated[int, Field(ge=1, le=65535)]

# A vLLM version as pip and setuptools_scm write it (PEP 440): a release of two or more numbers (0.9, 0.10.1.1),
# then optionally a pre-release (0.26.1rc1), a post-release (0.8.5.post1), a dev build (.dev125) and a local part
# (+ga7a204cc6, +cu128); the PyPI versions of vllm and vllm-ascend and the builds in the corpus logs take this form.
_VERSION_TEXT = re.compile(
    r"^v?\d+(?:\.\d+)+(?:(?:a|b|rc)\d+)?(?:\.post\d+)?(?:\.dev\d+)?(?:\+[0-9A-Za-z]+(?:[.-][0-9A-Za-z]+)*)?$"
)


def version_text(value: str | None) -> str | None:
    """--engine-version stripped (' 0.11.0' from a script is 0.11.0, the tag 'v0.11.0' too: the rules, the image
    tag and a stored calibration read the same text) and refused unless it is a version such as 0.19.0 or
    0.26.1rc1.dev125+ga7a204cc6: a junk suffix would otherwise be planned as its leading release and run as another
    image (every engine's rules read it)."""
    if value is None:
        return None
    text = value.strip()
    if not _VERSION_TEXT.match(text):
        raise ValueError("not a vLLM version such as 0.19.0, 0.8.5.post1 or 0.26.1rc1.dev125+ga7a204cc6")
    # the image tag's 'v0.19.0' is release 0.19.0 (one calibration key, one image tag), and so is '0.019.0': PEP 440
    # reads each release number with int() ('an integer version of 00 would normalize to 0'), as pip does, while the
    # image tag v0.019.0 does not exist
    release, rest = re.match(r"(\d+(?:\.\d+)+)(.*)", text.removeprefix("v")).groups()  # type: ignore[union-attr]
    return ".".join(str(int(part)) for part in release.split(".")) + rest


class ServeOptions(RequestModel):
    """Where and how an engine would run: the fields `plan` and `up` share, so both build the same
    ServeTarget (see serve_target)."""

    host: CommandWord | None = Field(default=None, description="user@addr: run it there over plain ssh.")
    port: Port | None = Field(default=None, description="Engine port (8000; local: a free one).")
    image: str | None = Field(default=None, description="vllm/vllm-tpu:TAG or IMAGE@sha256:... (vllm-docker).")
    sets: Annotated[list[str], Cli("--set", repeat=True)] = Field(
        default_factory=list, description="FLAG=VALUE, FLAG, FLAG= (drop), ENV=VALUE."
    )
    launcher: CommandWord | None = Field(default=None, description="Serve program, e.g. 'vllm serve'.")
    hf_token_file: Path | None = Field(default=None, description="File holding the HF token.")

    def embedded_conflicts(self, kind: str | None, *planned: str) -> None:
        """Raise ValueError when an engine of `kind` 'embedded' is given serve options it cannot take (it
        serves the bundled model on this machine), naming those given first; `planned` names the caller's own
        plan fields (up's model, chip, plan, engine_version)."""
        names = ("host", "image", "hf_token_file", "launcher", "sets", *planned)
        given = [flag_of(type(self), n) for n in names if getattr(self, n) not in (None, [])]
        if kind == "embedded" and given:
            raise ValueError(
                f"{', '.join(given)} given to the embedded engine (the default; it serves its bundled model here): "
                "--host/--model/--chip/--plan/--engine-version/--image/--set/--hf-token-file need --engine vllm or "
                "vllm-docker"
            )

    _image = field_validator("image")(image_reference)

    _host = field_validator("host")(ssh_hosts)

    _launcher = field_validator("launcher")(shell_line)


ROUTER_HOST = "127.0.0.1"  # the router binds the loopback only unless told (docs: replicas)


class ReplicaOptions(RequestModel):
    """N one-chip engines behind vllm-router: the fields `plan` and `up` share, so `plan --replicas N` prints
    the commands `up --replicas N` runs (engines.replicas.prepare_replicas builds both)."""

    replicas: int = Field(
        default=1,
        ge=1,
        le=MAX_REPLICAS,
        description="Engines behind vllm-router (one per chip share, or one per --host h1,h2).",
    )
    router_policy: RouterPolicy = Field(default="cache_aware", description="vllm-router --policy (with --replicas).")
    router_port: Port | None = Field(default=None, description="Router port (30000 when free, else a free one).")
    router_host: str = Field(
        default=ROUTER_HOST, description="Router bind address (the loopback only: see docs; with --replicas 2+)."
    )

    @model_validator(mode="after")
    def _router_host_needs_a_router(self) -> ReplicaOptions:
        """One engine has no router in front of it: a --router-host given there was taken unread, any text (the
        value of a router's is checked where its command is built: engines.router.router_command). Only a value
        other than the default is refused: a plan file records every field, the default among them, and must read."""
        if self.router_host != ROUTER_HOST and self.replicas < 2:
            raise ValueError(
                "--router-host binds the router of --replicas 2 or more; one engine has none: leave it out"
            )
        return self


class SizingOptions(RequestModel):
    """Planner inputs `plan` and `up` both take as options (one definition, so `plan ... --tensor-parallel-size
    4` and `up --dry-run ... --tensor-parallel-size 4` print the same command); `up` hands them to the
    PlanRequest it plans from (UpRequest.plan_request), where `--set` of the same flag must agree."""

    tensor_parallel_size: int = Field(
        default=1,
        ge=1,
        le=INT64_MAX,
        description="Tensor-parallel size: GPUs of the --chip card, or at most a TPU slice's devices (its chips; a v7x "
        "chip shows 2).",
    )
    enforce_eager: bool = Field(
        default=False,
        description="vLLM --enforce-eager: no CUDA graphs are captured, so vllm-gpu reserves no memory for them.",
    )
    multimodal: Annotated[bool, Cli("--multimodal/--text-only")] = Field(
        default=True, description="Count the vision/audio towers the engine loads in the resident weights."
    )
    limit_mm_per_prompt: Annotated[dict[str, int] | None, BeforeValidator(mm_limits)] = Field(
        default=None,
        description="vLLM --limit-mm-per-prompt: most items of each modality in one prompt, JSON "
        '(\'{"image":2,"audio":0}\') or key=value (image=2,audio=0); a modality left out keeps vLLM\'s default. A '
        "tower whose modalities are all 0 is not loaded (vLLM 0.16.0 on; 0 for every modality: --text-only) and a "
        "modality at 0 is not profiled; the count caps the profiled items. Passed to vLLM as given.",
    )
    language_model_only: bool = Field(
        default=False,
        description="vLLM --language-model-only (0.17.0 on, vllm/config/multimodal.py: `Equivalent to setting "
        "--limit-mm-per-prompt to 0 for every modality`): planned as --text-only, and the command says so with this "
        "flag.",
    )
    enable_prefix_caching: Annotated[bool | None, Cli("--enable-prefix-caching/--no-enable-prefix-caching")] = Field(
        default=True,
        description="vLLM prefix caching, as `up` launches it (on: vLLM --enable-prefix-caching on GPU and TPU; off: "
        "vLLM --no-enable-prefix-caching; null, from the Python API or MCP: the engine version's own default). Sizes "
        "a hybrid model's recurrent-state pages (engines.json hybrid_rules).",
    )

    def sizing_given(self) -> list[str]:
        """The options of these set away from their defaults, as typed ('--tensor-parallel-size 4',
        '--enforce-eager', '--text-only'); a default stated (an MCP caller may) is taken for 'not given'."""
        away = {
            "tensor_parallel_size": self.tensor_parallel_size != 1,
            "enforce_eager": self.enforce_eager,
            "multimodal": not self.multimodal,
            "language_model_only": self.language_model_only,
            "limit_mm_per_prompt": self.limit_mm_per_prompt is not None,
            "enable_prefix_caching": self.enable_prefix_caching is False,
        }
        return [as_typed(SizingOptions, name, getattr(self, name)) for name, off_default in away.items() if off_default]

    @model_validator(mode="after")
    def _text_only_has_no_items(self) -> SizingOptions:
        """--text-only is 0 items of every modality; a positive --limit-mm-per-prompt count says otherwise."""
        positive = {k: v for k, v in (self.limit_mm_per_prompt or {}).items() if v > 0}
        off = "--text-only" if not self.multimodal else "--language-model-only" if self.language_model_only else None
        if off and positive:
            shown = ",".join(f"{k}={v}" for k, v in positive.items())
            raise ValueError(f"{off} and --limit-mm-per-prompt {shown} disagree (text-only is 0 of every one)")
        return self


class PlanRequest(SizingOptions, ServeOptions, ReplicaOptions):
    """The request of `onechip plan`: the planner's inputs (one list: planner.plan_model takes this), and
    where the planned engine would run (ServeOptions; off the command line until `plan` prints the serve
    command of a target)."""

    model: Annotated[ModelName, Cli(argument=True)] = Field(
        description="Hub id, local checkpoint directory, or catalog name."
    )
    chip: Name = Field(description="Accelerator key, e.g. v5e-1, cpu.")
    engine: str | None = Field(
        default=None, description="vllm-tpu, vllm-gpu, vllm-cpu or vllm-ascend (default: by the chip's kind)."
    )
    max_model_len: Annotated[int | None, HUMAN_INT] = Field(
        default=None,
        ge=1,
        le=MAX_POSITIONS,
        description="Tokens per request (default: the model's max_position_embeddings, times its RoPE "
        "scaling factor where vLLM applies one); -1 (or auto): vLLM's auto-fit, as `--set max-model-len=auto`.",
    )
    # vLLM's own bound, in the schema a client validates against: gpu_memory_utilization: float = Field(default=0.9,
    # gt=0, le=1) (vllm/config/cache.py, 0.19.0); a tiny fraction is a value vLLM takes, so it is planned (and does
    # not fit), not refused
    utilization: Annotated[float | None, Cli("--gpu-memory-utilization")] = Field(
        default=None, gt=0, le=1, description="vLLM --gpu-memory-utilization, in (0, 1] (default: the engine's)."
    )
    kv_cache_dtype: str = Field(
        default="auto",
        description="'auto' (= served dtype) or bfloat16/float16/float32/fp8/fp8_e4m3/fp8_e5m2, or (vLLM 0.20+ on "
        "GPUs) int8_per_token_head/fp8_per_token_head.",
    )
    dtype: str | None = Field(
        default=None, description="Served weight dtype (default: the checkpoint's, under the engine's rule)."
    )
    pipeline_parallel_size: int = Field(
        default=1,
        ge=1,
        le=INT64_MAX,
        description="Pipeline-parallel size (vLLM GPU only): stages of layers, each on --tensor-parallel-size GPUs.",
    )
    block_size: int | None = Field(
        default=None, ge=1, le=MAX_POSITIONS, description="KV block size, tokens (default: the engine's rule)."
    )
    max_num_batched_tokens: Annotated[int | None, HUMAN_INT] = Field(
        default=None,
        ge=1,
        le=MAX_POSITIONS,
        description="Scheduler token budget per step (default: the engine's).",
    )
    kv_cache_memory_bytes: Annotated[int | None, Cli("--kv-cache-memory"), HUMAN_INT] = Field(
        default=None,
        gt=0,
        le=INT64_MAX,
        description="KV pool per GPU/chip, bytes (vLLM --kv-cache-memory; VLLM_CPU_KVCACHE_SPACE x GiB).",
    )
    max_num_seqs: int | None = Field(
        default=None,
        ge=1,
        le=MAX_POSITIONS,
        description="Most sequences per step (default: the engine's); sizes the sampler warm-up.",
    )
    enable_prompt_embeds: bool = Field(
        default=False,
        description="vLLM --enable-prompt-embeds: requests may carry embeddings instead of token ids; vLLM 0.9.0 - "
        "0.10.2 run their V0 engine for it (engines.json v0_fallbacks).",
    )
    engine_version: Name | None = Field(
        default=None, description="vLLM version to plan for, e.g. 0.19.0 (default: the newest rule)."
    )
    num_speculative_tokens: int = Field(
        default=0,
        ge=0,
        le=64,
        description="vLLM --speculative-config {'method': 'mtp', 'num_speculative_tokens': N}: the model's own MTP "
        "layers draft N tokens (planned for Qwen3-Next / Qwen3.5 hybrids; 0: no speculative decoding).",
    )
    mamba_ssm_cache_dtype: Literal["auto", "float32", "bfloat16", "float16"] = Field(
        default="auto",
        description="vLLM --mamba-ssm-cache-dtype: the SSM / temporal state dtype of a hybrid model ('auto': the "
        "model class's rule, else the model dtype).",
    )
    flashinfer: Annotated[bool | None, Cli("--flashinfer/--no-flashinfer")] = Field(
        default=None,
        description="The vLLM install can import FlashInfer, so vLLM 0.9.0 - 0.11.0 warm up its top-k/top-p "
        "sampler on it (less memory than the sort-based path); default: by --launch: the vllm/vllm-openai image "
        "has it, a `pip install vllm` of those releases (--launch vllm) does not.",
    )
    nccl_transport: Literal["p2p", "shm", "net", "net-nogdr"] | None = Field(
        default=None,
        description="How NCCL joins the tensor-parallel GPUs (sizes their non-torch memory at TP >= 2): p2p (one "
        "host, NVLink or PCIe peer access; the default), shm (one host, no peer access), net (across hosts, "
        "GPUDirect RDMA not known; the default when TP x PP exceeds the card's host), net-nogdr (across hosts "
        "without GPUDirect RDMA, e.g. NCCL over sockets).",
    )
    cpu_offload_gb: Annotated[float | None, Cli("--cpu-offload-gb")] = Field(
        default=None,
        ge=0,
        le=MAX_HOST_GIB,
        allow_inf_nan=False,
        description="vLLM --cpu-offload-gb (vLLM GPU): GiB of decoder-layer weights per GPU kept in host memory, "
        "layer by layer from the first; they leave the GPU's weights, and releases that copy an offloaded layer "
        "back for its forward (the V0 engine, V1 before 0.8.3) add the largest one to the activation peak.",
    )
    quantization: Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")] | None = Field(
        default=None,
        description="vLLM --quantization, a method its registry lists: on a checkpoint that has none, 'fp8' "
        "quantizes the decoder's linear and expert weights to 1 byte as they load (online FP8; embeddings, LM head "
        "and norms keep --dtype), the only online method planned; on a quantized checkpoint, its own method or one "
        "vLLM's override_quantization_method claims it for (awq_marlin on an AWQ checkpoint), planned as the "
        "checkpoint loads, any other refused as vLLM refuses it.",
    )
    contexts: Annotated[list[Annotated[int, Field(ge=1, le=INT64_MAX)]] | None, TOKEN_COUNTS] = Field(
        default=None,
        description="Tokens per request to report concurrency for (default: 1,024, 8,192, 32,768 and 131,072 up to "
        "--max-model-len, and --max-model-len itself: planner.core DEFAULT_CONTEXTS).",
    )
    against: Path | None = Field(default=None, description="vLLM boot log to cross-check the plan against.")
    launch: EngineKind | None = Field(
        default=None,
        description="Engine kind whose command the plan prints, as `up --engine` (default: vllm-docker under "
        "TPU/GPU rules, else vllm; embedded: the bundled model on --chip cpu).",
    )

    @model_validator(mode="before")
    @classmethod
    def _auto_fit_length(cls, data: Any) -> Any:
        """--max-model-len auto or -1 (as vLLM's human_readable_int_or_auto reads them: -1, or 'auto' in any case,
        vllm/utils/argparse_utils.py of the 0.34.0 sdist) asks for vLLM's auto-fit, which the planner plans as
        `--set max-model-len=auto` (planner.core._auto_fit): the length option left unset and that --set added last."""
        if isinstance(data, dict) and str(data.get("max_model_len")).strip().lower() in ("auto", "-1"):
            sets = [str(item) for item in data.get("sets") or []]
            named = [
                item for item in sets if item.split("=")[0].strip().lstrip("-").replace("_", "-") == "max-model-len"
            ]
            if named:
                raise ValueError(f"--max-model-len {data['max_model_len']} and --set {named[-1]} disagree")
            data = {k: v for k, v in data.items() if k != "max_model_len"}
            data["sets"] = [*sets, "max-model-len=auto"]
        return data

    def planner_inputs(self) -> dict[str, Any]:
        """The fields the planner reads (not where the engine runs, nor --against/--launch), as JSON values:
        what a Plan records (Plan.request) so a later `--set` can re-plan from it."""
        skip = set(ServeOptions.model_fields) | {"against", "launch"}
        return self.model_dump(mode="json", exclude=skip)

    @model_validator(mode="after")
    def _embedded_takes_no_serve_options(self) -> PlanRequest:
        self.embedded_conflicts(self.launch)
        return self

    @field_validator("engine_version")
    @classmethod
    def _release_text(cls, value: str | None) -> str | None:
        return version_text(value)


class UpRequest(SizingOptions, ServeOptions, ReplicaOptions):
    """The request of `onechip up`: which engine, from which plan, where, and how long to wait."""

    engine: EngineKind = Field(default="embedded", description="embedded, vllm or vllm-docker.")
    model: ModelName | None = Field(default=None, description="Model to plan and serve (with --chip).")
    chip: Name | None = Field(default=None, description="Accelerator key, e.g. v5e-1, l4, cpu.")
    plan: Plan | Path | None = Field(default=None, description="A plan JSON from `onechip plan --json`.")
    engine_version: Name | None = Field(
        default=None,
        description="vLLM release to plan --model for and run (its pinned image with vllm-docker); default: the "
        "newest the rules were read from. A --plan records its own.",
    )
    tunnel_port: Port | None = Field(default=None, description="Local end of the SSH tunnel.")
    ssh_options: Annotated[list[CommandWord], Cli("--ssh-opt", repeat=True)] = Field(
        default_factory=list, description="ssh -o option, e.g. Port=2222."
    )
    dry_run: bool = Field(default=False, description="Print the flags and exact commands only.")
    force: bool = Field(default=False, description="Launch even when the plan says it does not fit.")
    kv_cache_space_gib: int = Field(
        default=2, ge=1, le=MAX_HOST_GIB, description="Embedded engine: VLLM_CPU_KVCACHE_SPACE, GiB."
    )
    timeout_s: float = Field(
        default=600.0,
        ge=MIN_BOOT_S,
        le=MAX_BOOT_S,
        description="Give up if not ready after this many seconds (a docker engine's image pull counted in).",
    )

    @field_validator("engine_version")
    @classmethod
    def _release_text(cls, value: str | None) -> str | None:
        return version_text(value)

    @model_validator(mode="after")
    def _embedded_takes_no_plan(self) -> UpRequest:
        self.embedded_conflicts(self.engine, "model", "chip", "plan", "engine_version")
        if self.plan is not None and self.engine_version is not None:
            raise ValueError("--engine-version plans --model on --chip; a --plan records the version it was made for")
        if self.plan is not None and (given := [f"--{f}" for f in ("model", "chip") if getattr(self, f)]):
            # the plan's own model and chip were served, the ones given dropped without a word
            raise ValueError(
                f"{' and '.join(given)} with --plan: the plan records the model and chip it was made for; give one "
                "or the other"
            )
        sizing = " ".join(self.sizing_given())
        if sizing and self.engine == "embedded":
            raise ValueError(f"{sizing} plans --model on --chip: it needs --engine vllm or vllm-docker")
        if sizing and self.plan is not None:
            raise ValueError(
                f"{sizing} plans --model on --chip; a --plan records its own (re-plan it with --set, e.g. "
                "--set tensor-parallel-size=4)"
            )
        return self

    def plan_request(self) -> PlanRequest | None:
        """The PlanRequest `up` plans from when no --plan is given: --model on --chip, carrying --set (whose
        planner inputs onechip.vllm.flag_table.with_sets applies); None without both."""
        if self.model is None or self.chip is None:
            return None
        launch = self.engine if self.engine in ("vllm", "vllm-docker") else None  # what the install holds
        sizing = self.model_dump(include=set(SizingOptions.model_fields) & self.model_fields_set)
        return PlanRequest(
            model=self.model, chip=self.chip, sets=self.sets, launch=launch, engine_version=self.engine_version,
            **sizing,
        )  # fmt: skip


_CHECK_LISTS = {"only": str, "tool_choice": str, "needle_lengths": int, "needle_depths": float, "allow": str}
# `--only` takes a check's name or the domain it reports (chat = smoke, tool_calling = tools, ...)
_CHECK_BY_DOMAIN: dict[str, str] = {domain: name for name, domain in CHECK_NAMES.items()}


def refuse_existing_run(path: Path | None, files: tuple[str, ...]) -> None:
    """Raise ValueError when `path` is a file, or a directory that already holds one of `files` (a run's
    results): a run directory is never overwritten, and this is said before anything starts."""
    if path is None:
        return
    try:  # Path.exists raises on Python 3.11 for a name too long for the file system: a refusal like the others
        if path.exists() and not path.is_dir():
            raise ValueError(f"{path} is {kind_of(path)}, not a directory")
        held = [name for name in files if (path / name).exists()]
    except OSError as exc:
        raise ValueError(os_error_line(exc)) from None
    if held:
        raise ValueError(f"{path} already holds a run ({', '.join(held)}); choose a new directory")


class CheckRequest(CheckOptions):
    """The request of `onechip check`: the endpoint, which checks, and the CheckOptions knobs."""

    # a request's config (RequestModel's): CheckOptions is a StrictModel, so without it no text was bounded (an
    # out_dir of 100,000 characters came back whole in the refusal)
    model_config = RequestModel.model_config
    # CheckOptions knobs that are not flags (the command line keeps the ones a user tunes)
    cli_hidden: ClassVar[frozenset[str]] = frozenset(
        {"tool_max_tokens", "agent_max_turns", "agent_max_tokens", "agent_seed",
         "needle_max_tokens", "max_model_len", "over_limit", "over_limit_timeout_s", "determinism_prompts",
         "determinism_max_tokens"}
    )  # fmt: skip

    base_url: Annotated[str, Cli("url", argument=True), AfterValidator(openai_base_url)] = Field(
        description="OpenAI-compatible base URL, e.g. http://127.0.0.1:8000."
    )
    model: Name | None = Field(default=None, description="Served model name (default: the first in /v1/models).")
    only: list[str] | None = Field(
        default=None,
        description="Checks to run, of smoke, tools, agent, needle, determinism, multimodal (default: all but "
        "multimodal).",
    )
    out_dir: Annotated[Path | None, Cli("--out")] = Field(
        default=None, description="Write checks.json and agent transcripts here (a new directory)."
    )
    request_timeout_s: Annotated[float, Cli("--timeout-s")] = Field(
        default=180.0, gt=0, le=86_400, description="Give up on one request after this many seconds."
    )
    allow: list[Verdict] = Field(
        default_factory=list,
        description="Verdicts besides pass that still exit 0, e.g. partial,not_tested (exit 10 otherwise).",
    )

    @field_validator(*_CHECK_LISTS, mode="before")
    @classmethod
    def _comma_lists(cls, value: Any, info: ValidationInfo) -> Any:
        return split_commas(_CHECK_LISTS[str(info.field_name)], value, info.context)

    @field_validator("only")
    @classmethod
    def _check_names(cls, value: list[str] | None) -> list[str] | None:
        """Check names or domain names, both ways: 'chat,tool_calling' = 'smoke,tools'."""
        if value is None:
            return None
        names = [_CHECK_BY_DOMAIN.get(n.strip(), n.strip()) for n in value if n.strip()]
        unknown = [n for n in names if n not in CHECK_NAMES]
        if unknown:
            choices = ", ".join(f"{n} ({d})" for n, d in CHECK_NAMES.items())
            raise ValueError(f"unknown check(s) {', '.join(unknown)}; choose from {choices}")
        return names or None

    @field_validator("out_dir")
    @classmethod
    def _new_out_dir(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if given(info.context):
            refuse_existing_run(value, (RUN_FILES["checks"],))
        return value

    def disallowed(self, verdicts: list[Verdict]) -> list[Verdict]:
        """The verdicts among `verdicts` that fail the gate: not pass and not in --allow."""
        return [v for v in verdicts if v != "pass" and v not in self.allow]

    def options(self) -> dict[str, Any]:
        """The CheckOptions fields of this request (what checks.run_checks takes as options)."""
        return self.model_dump(include=set(CheckOptions.model_fields))


class CostRequest(RequestModel):
    """The request of `onechip cost`: a throughput or a saved run, priced on a chip."""

    chip: Name | None = Field(default=None, description="Chip to price, e.g. v5e-1 (default: the run's chip).")
    # 0.001 to 1e9 tok/s: below, a price per million tokens overflows any table (1e-300 tok/s = $1e300);
    # above, no single accelerator comes near
    output_tok_per_s: float | None = Field(
        default=None, ge=0.001, le=1e9, description="Aggregate output tok/s to price (0.001 to 1e9)."
    )
    run_dir: Annotated[Path | None, Cli("--run")] = Field(
        default=None, description="Run directory: price every cell (measured, or predicted by simulate)."
    )
    pricing: Annotated[list[str] | None, comma_list(str)] = Field(
        default=None,
        description="Pricing models, of spot, flex-start, on-demand, 1y, 3y (default: every one priced for the chip).",
    )
    region: Region | None = Field(
        default=None, description="Region, e.g. us-west4, in any case (default: every region)."
    )
    cold_boot_s: float | None = Field(
        default=None,
        ge=0,
        le=86_400,
        description="Seconds of a cold restart (no compile cache) to price (default: none priced).",
    )
    warm_boot_s: float | None = Field(
        default=None,
        ge=0,
        le=86_400,
        description="Seconds of a warm restart (compile cache mounted) to price (default: none priced).",
    )
    today: Annotated[date | None, Cli(hidden=True)] = Field(
        default=None,
        description="The date prices are judged stale against (default: today in UTC, as reads are dated).",
    )
    write: Annotated[bool, Cli("--write/--no-write")] = Field(
        default=False, description="Store the result as cost.json in the --run directory."
    )

    @field_validator("pricing")
    @classmethod
    def _once_each(cls, value: list[str] | None) -> list[str] | None:
        """A pricing model named twice is priced once (`--pricing spot,spot` printed the same line twice)."""
        return list(dict.fromkeys(value)) if value is not None else None

    @model_validator(mode="after")
    def _write_needs_a_run(self) -> CostRequest:
        if self.write and self.run_dir is None:
            raise ValueError("writing cost.json needs a run directory (--run DIR)")
        return self


class PricesRequest(RequestModel):
    """The request of `onechip prices` (and `prices refresh`): which prices to show."""

    chip: Name | None = Field(default=None, description="Only this chip, e.g. v5e-1 (default: every chip).")
    region: Region | None = Field(
        default=None, description="Only this region, e.g. us-west4, in any case (default: every region)."
    )
    today: Annotated[date | None, Cli(hidden=True)] = Field(
        default=None,
        description="The date prices are judged stale against (default: today in UTC, as reads are dated).",
    )


class ReportRequest(RequestModel):
    """The request of `onechip report`: which saved run, in which formats, against which other run."""

    run_dir: Annotated[Path, Cli("run", argument=True)] = Field(
        description="Run directory, e.g. runs/<run-id>; or a --find-max search's (search.md, search.html)."
    )
    formats: Annotated[list[str], comma_list(str), Cli("--format")] = Field(
        default=["md"], min_length=1, description="Formats, of md, html, json, serving-report."
    )
    compare: Path | None = Field(default=None, description="Another run directory to compare against.")


class DemoRequest(HostDemoOptions):
    """The request of `onechip demo`: the whole job on the embedded engine, or on a real accelerator (a host
    you have, or a Cloud TPU it provisions: HostDemoOptions)."""

    quick: bool = Field(default=False, description="The smallest grid and checks (under 5 min here).")
    out_dir: Annotated[Path | None, Cli("--out")] = Field(
        default=None, description="Run directory (default: runs/<run-id>/)."
    )
    runs_root: Annotated[Path, Cli(hidden=True)] = Field(
        default=Path("runs"), description="Where a new run directory is made when out_dir is not given."
    )
    kv_cache_space_gib: int = Field(
        default=2, ge=1, le=MAX_HOST_GIB, description="VLLM_CPU_KVCACHE_SPACE, GiB of KV cache."
    )
    port: Port | None = Field(default=None, description="Engine port on 127.0.0.1 (default: a free one).")
    boot_timeout_s: Annotated[float, Cli(hidden=True)] = Field(
        default=600.0,
        ge=MIN_BOOT_S,
        le=MAX_BOOT_S,
        description="Give up on the engine if not ready after this many seconds.",
    )

    @field_validator("out_dir")
    @classmethod
    def _new_out_dir(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if given(info.context):
            refuse_existing_run(value, tuple(RUN_FILES.values()))
        return value


BENCH = BenchConfig.model_fields  # the agent workload's defaults and words are bench's


class SimulateRequest(RequestModel):
    """The request of `onechip simulate`: a plan, what to calibrate it on, and the grid to predict (the same
    workload fields as `bench`)."""

    plan: Annotated[Path, Cli("--plan")] = Field(description="Plan JSON from `onechip plan --json`.")
    calibrate: Path | None = Field(
        default=None,
        description="Run directory measured by `onechip bench` (ideally --calibration) to fit the step-time "
        "terms on; stored for reuse. Not given: a stored calibration for the plan, else roofline priors.",
    )
    # the bounds are BenchConfig's (the grid is validated into one): out of them is a one-line refusal here
    contexts: Annotated[list[Annotated[int, Field(ge=1, le=MAX_TOKENS)]], TOKEN_COUNTS, Field(min_length=1)] = Field(
        default=[128, 1024], description="Prompt lengths in tokens."
    )
    clients: Annotated[list[Annotated[int, Field(ge=1, le=MAX_CLIENTS)]], comma_list(int), Field(min_length=1)] = Field(
        default=[1, 4], description=BENCH["clients"].description
    )
    output_tokens: int = Field(default=32, ge=1, le=MAX_TOKENS, description="Output tokens per request.")
    reps: int = Field(default=5, ge=1, le=10_000, description="Simulations per cell (random client start phases).")
    requests_per_client: int = Field(
        default=2,
        ge=1,
        le=1_000_000,
        description="Measured requests each stream sends. With --rate: the measured requests per seed, all together "
        f"(as bench's; default ~{PROBE_S:g} s of arrivals, at least {PROBE_MIN_REQUESTS}, at most {PROBE_MAX_S:g} s).",
    )
    warmup_requests: int = Field(default=1, ge=0, le=1_000_000, description="Unmeasured requests per stream first.")
    rate_per_s: Annotated[float | None, Cli("--rate")] = Field(
        default=None,
        ge=0.001,
        le=1_000_000,
        description="Open loop, as bench's --rate (Poisson arrivals): arrivals per second, one cell per context, in "
        "flight at most --clients when given (else no cap); not given: closed loop.",
    )
    workload: Literal["grid", "agent"] = Field(
        default="grid", description="grid: independent requests; agent: sessions as bench's agent workload."
    )
    turns: int = Field(default=BENCH["turns"].default, ge=1, le=1000, description=BENCH["turns"].description)
    user_tokens: int = Field(default=BENCH["user_tokens"].default, ge=1, le=MAX_TOKENS,
                             description=BENCH["user_tokens"].description)  # fmt: skip
    call_tokens: int = Field(default=BENCH["call_tokens"].default, ge=1, le=MAX_TOKENS,
                             description=BENCH["call_tokens"].description)  # fmt: skip
    result_tokens: int = Field(default=BENCH["result_tokens"].default, ge=1, le=MAX_TOKENS,
                               description=BENCH["result_tokens"].description)  # fmt: skip
    sessions_per_client: int = Field(default=BENCH["sessions_per_client"].default, ge=1, le=10_000,
                                     description=BENCH["sessions_per_client"].description)  # fmt: skip
    slo: Annotated[dict[str, float], BeforeValidator(key_values)] = Field(
        default_factory=dict,
        description="Objectives, ms upper bounds: any of ttft_ms, tpot_ms, e2e_ms (ttft_ms=500,tpot_ms=50), as "
        "bench's: each predicted cell's goodput, and what --find-max searches under.",
    )
    find_max: Literal["clients", "rate"] | None = Field(
        default=None,
        description="Predict the largest load meeting --slo at --slo-percentile, bench --find-max's search over "
        "predicted cells: clients (closed loop) or rate (open loop, requests/s: each probe ~10 s of arrivals; in "
        "flight at most --clients, default no cap); with its range over the --reps seeds.",
    )
    slo_percentile: Annotated[float, Field(gt=0, le=100)] = Field(
        default=BENCH["slo_percentile"].default, description=BENCH["slo_percentile"].description
    )
    find_max_limit: Annotated[float, Field(gt=0, le=MAX_RATE)] = Field(
        default=BENCH["find_max_limit"].default, description=BENCH["find_max_limit"].description
    )
    replicas: int = Field(
        default=1,
        ge=1,
        le=MAX_REPLICAS,
        description="Engines of the plan behind vllm-router, the clients split over them.",
    )
    router_policies: Annotated[list[RouterPolicy], comma_list(str), Field(min_length=1)] = Field(
        default=["cache_aware"],
        description="With --replicas and --workload agent: the vllm-router policies to predict (round_robin, "
        "cache_aware, random); several write OUT/<policy>/ and OUT/policies.json.",
    )
    out_dir: Annotated[Path | None, Cli("--out")] = Field(
        default=None,
        description="Directory for the predicted summary.json and plan.json (default: a new runs/<run-id>/).",
    )

    @model_validator(mode="after")
    def _policies(self) -> SimulateRequest:
        other = [p for p in self.router_policies if p not in MODELLED_POLICIES]
        if other:
            raise ValueError(f"--router-policies: {other[0]} is not modelled; use {', '.join(MODELLED_POLICIES)}")
        twice = [p for i, p in enumerate(self.router_policies) if p in self.router_policies[:i]]
        if twice:
            raise ValueError(f"--router-policies: {twice[0]} is named twice; name each policy once")
        if "router_policies" in self.model_fields_set and (self.workload != "agent" or self.replicas < 2):
            raise ValueError(
                "--router-policies: routing is predicted for agent sessions over replicas; give --workload agent "
                "and --replicas 2 or more"
            )
        check_agent(SimulateRequest, {"workload": self.workload}, self.model_fields_set)  # as bench refuses them
        return self

    @field_validator("slo")
    @classmethod
    def _slo(cls, value: dict[str, float]) -> dict[str, float]:
        return bench_slo(value)  # bench's keys and bounds

    @model_validator(mode="after")
    def _search(self) -> SimulateRequest:
        """A --find-max search is refused as bench refuses it (schemas.bench NEEDS and check_search, on the fields
        given); its limit is bounded by the BenchConfig simulate builds (BenchConfig._bounded), as bench's. Unlike
        bench's search (run on whatever policy the router has), simulate's is predicted under one modelled router
        policy (api._sim_search: router_policies[0]): one --router-policies value is that policy, several refused."""
        present = {f for f in self.model_fields_set if getattr(self, f) is not None}
        field, (needed, message) = "find_max", NEEDS["find_max"]
        if field in present and not getattr(self, needed):
            raise ValueError(message)
        if self.find_max is not None and len(self.router_policies) > 1:
            raise ValueError(
                "--find-max searches the load under one router policy: give one --router-policies value (compare "
                "policies in a simulate without --find-max)"
            )
        check_search(SimulateRequest, self.model_dump(), present - {"router_policies"})
        return self


def bench_workload() -> dict[str, float]:
    """The cell `onechip bench` measures by default at its heaviest: its longest default context, most default
    clients, default output tokens (BenchConfig's defaults), so advise predicts what bench would measure."""
    fields = BenchConfig.model_fields
    return {
        "ctx": float(max(fields["contexts"].default)),
        "clients": float(max(fields["clients"].default)),
        "output_tokens": float(fields["output_tokens"].default),
    }


class AdviseRequest(RequestModel):
    """The request of `onechip advise`: a model and a workload; every catalog chip it fits on, ranked."""

    model: Annotated[ModelName, Cli(argument=True)] = Field(description="Hub id, local directory or catalog name.")
    workload: Annotated[dict[str, float], BeforeValidator(key_counts)] = Field(
        default_factory=dict,
        validate_default=True,  # the default gets bench's cell from the validator
        description="ctx=TOKENS,clients=N[,output_tokens=N][,turns=N]: the cell to predict on each chip; keys "
        "not given are bench's defaults (its longest context and most clients, its output tokens); turns=N: agent "
        "sessions (ctx their shared prefix, bench's agent workload), routed over replicas by --router-policy.",
    )
    slo: Annotated[dict[str, float], BeforeValidator(key_values)] = Field(
        default_factory=dict, description="ttft_ms=500,tpot_ms=50: chips whose predicted cell misses one rank last."
    )
    chips: Annotated[list[Name] | None, comma_list(str)] = Field(
        default=None, description="Catalog chips to consider (default: every priced chip)."
    )
    pricing: str = Field(default="spot", description="Pricing model to rank by: spot, on-demand, flex-start, ...")
    reps: int = Field(default=3, ge=1, le=10_000, description="Simulations per chip (random client start phases).")
    router_policy: RouterPolicy = Field(
        default="cache_aware",
        description="Agent sessions (workload turns=N) on replicas: the vllm-router policy routing them "
        "(round_robin, cache_aware, random).",
    )

    @field_validator("router_policy")
    @classmethod
    def _modelled(cls, value: RouterPolicy) -> RouterPolicy:
        if value not in MODELLED_POLICIES:
            raise ValueError(f"{value} is not modelled; use {', '.join(MODELLED_POLICIES)}")
        return value

    @field_validator("workload")
    @classmethod
    def _workload(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = set(value) - {"ctx", "clients", "output_tokens", "turns"}
        if unknown:
            raise ValueError(f"unknown workload key(s) {sorted(unknown)}; use ctx, clients, output_tokens, turns")
        bounds = {"ctx": MAX_TOKENS, "clients": MAX_CLIENTS, "output_tokens": MAX_TOKENS, "turns": 1000}
        for key, number in value.items():
            if not (number.is_integer() and 1 <= number <= bounds[key]):
                raise ValueError(f"{key} must be a whole number from 1 to {bounds[key]:,}")
        return {**bench_workload(), **value}

    @field_validator("slo")
    @classmethod
    def _slo(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = set(value) - {"ttft_ms", "tpot_ms"}
        if unknown:
            raise ValueError(f"unknown SLO key(s) {sorted(unknown)}; use ttft_ms, tpot_ms")
        return slo_bounds(value)

    @model_validator(mode="after")
    def _policy_needs_sessions(self) -> AdviseRequest:
        """A router policy routes agent sessions only: a grid's prompts are unique, so every policy spreads them
        alike (sim.predict.simulate_cell), and a policy given for one would be dropped. The default is taken as
        not given (an MCP client may send every field with its default)."""
        default = type(self).model_fields["router_policy"].default
        if self.router_policy != default and "turns" not in self.workload:
            raise ValueError("--router-policy routes agent sessions: give --workload with turns=N too")
        return self


class DeployK8sRequest(RequestModel):
    """The request of `onechip deploy k8s`: the replica set as Kubernetes manifests for GKE."""

    model: Annotated[ModelName, Cli(argument=True)] = Field(
        description="Model to plan and serve (Hub id or catalog name)."
    )
    chip: Name = Field(description="Accelerator key of the node pool, e.g. v5e-4 (one chip per replica), l4.")
    replicas: int | None = Field(
        default=None, ge=1, le=MAX_REPLICAS,
        description="vLLM pods behind the router (default: 2, or the fewest that give each pod a GKE node shape: "
        "4 on a 4-chip TPU slice, 1 on a one-chip TPU; 1 pod of the whole slice when one chip cannot hold the "
        "model).",
    )  # fmt: skip
    router: Literal["vllm-router", "inferencepool"] = Field(
        default="vllm-router",
        description="vllm-router with Kubernetes service discovery, or the Gateway API Inference Extension "
        "(InferencePool, its endpoint picker, an HTTPRoute).",
    )
    router_policy: RouterPolicy = Field(default="cache_aware", description="vllm-router --policy.")
    gateway: str = Field(
        default="inference-gateway",
        description="With --router inferencepool: the Gateway (in --namespace) the HTTPRoute attaches to.",
    )
    namespace: str = Field(default="default", description="Kubernetes namespace of every object.")
    name: str = Field(default="onechip", description="Name prefix of the objects (NAME-vllm, NAME-router).")
    image: str | None = Field(default=None, description="vLLM image (default: the plan's engine image; pin it).")
    router_image: str | None = Field(
        default=None, description="An image with vllm-router (default: python:3.12-slim installing the wheel)."
    )
    hf_token_secret: str | None = Field(
        default=None, description="Name of a Secret whose key 'token' holds the HF token (never the token itself)."
    )
    sets: Annotated[list[str], Cli("--set", repeat=True)] = Field(
        default_factory=list, description="Planner inputs as serve flags, e.g. max-model-len=8192."
    )
    out: Path = Field(default=Path("deploy"), description="Directory the manifests are written to.")
    apply: bool = Field(default=False, description="Also create the objects (needs a kubeconfig and `kubernetes`).")

    _images = field_validator("image", "router_image")(image_reference)

    @field_validator("out")
    @classmethod
    def _out_dir(cls, value: Path) -> Path:
        """Refused before planning when it names a file (the manifests go in a directory; one already there is
        rewritten)."""
        refuse_existing_run(value, ())
        return value

    @field_validator("name", "namespace", "gateway")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        """Kubernetes object names: DNS-1123 labels (lower-case letters, digits, '-'), at most 50 here: the objects
        are named NAME-router, NAME-epp-non-sa..., labels of at most 63. A name too long is told so (it was refused
        as 'must be lower-case letters...' when it was)."""
        if len(value) > 50:
            raise ValueError(f"at most 50 characters (NAME-epp-non-sa and the like stay within 63); got {len(value)}")
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", value):
            raise ValueError("must be lower-case letters, digits and '-', starting and ending alphanumeric")
        return value

    @field_validator("hf_token_secret")
    @classmethod
    def _dns_subdomain(cls, value: str | None) -> str | None:
        """A Secret's name is a DNS-1123 subdomain: labels of lower-case letters, digits and '-' joined by '.', at
        most 253 characters (kubernetes.io/docs/concepts/overview/working-with-objects/names); the API server
        refuses any other at apply."""
        label = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
        if value is not None and len(value) > 253:
            raise ValueError(f"a Secret name is at most 253 characters; got {len(value)}")
        if value is not None and not re.fullmatch(rf"{label}(\.{label})*", value):
            raise ValueError(
                "a Secret name is lower-case letters, digits, '-' and '.', starting and ending alphanumeric"
            )
        return value
