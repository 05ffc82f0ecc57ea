"""The Plan: what a model will cost in memory on a chip under an engine, before anyone rents it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from pydantic import Field, ValidationError

from onechip.errors import ConfigError
from onechip.paths import read_regular
from onechip.schemas.common import ResultModel, StoredResult, first_problem, newer_schema
from onechip.schemas.serve import ServeCommand
from onechip.textcodec import decoded

V = TypeVar("V", str, int, float, bool, dict[str, int])  # dict: per-modality counts


class PlanWarning(ResultModel):
    """A known trap that applies to the plan: a code, a one-line message and where the rule comes from."""

    code: str = Field(description="Stable identifier, e.g. 'util-above-program-headroom'.")
    message: str = Field(description="One sentence for a person.")
    source: str = Field(description="Where the rule comes from (seed article section, vendor doc, measurement).")


SettingSource = Literal["request", "model", "engine-rules", "planner"]


class ServeSetting(ResultModel, Generic[V]):
    """One engine setting the plan's figures assume: the value, why, and where the value came from. The
    flag that spells it is onechip.vllm.flag_table's business, not the plan's."""

    value: V = Field(description="The setting's value, typed (tokens, bytes, a fraction, a dtype name, a switch).")
    reason: str = Field(description="Why the engine must run with this value.")
    source: SettingSource = Field(
        description="Where the value came from: 'request' (asked for), 'model' (the checkpoint's config), "
        "'engine-rules' (catalog/engines.json default) or 'planner' (chosen by the planner's arithmetic)."
    )


class ServeSettings(ResultModel):
    """The engine settings the plan sized memory with, named as the PlanRequest fields they answer; None: the
    engine's own default, which the plan assumed too."""

    dtype: ServeSetting[str] | None = Field(default=None, description="Served weight (and 'auto' KV) dtype.")
    kv_cache_dtype: ServeSetting[str] | None = Field(default=None, description="KV element type ('auto' = dtype).")
    max_model_len: ServeSetting[int] | None = Field(default=None, description="Tokens per request.")
    max_num_batched_tokens: ServeSetting[int] | None = Field(default=None, description="Scheduler tokens per step.")
    tensor_parallel_size: ServeSetting[int] | None = Field(default=None, description="Tensor-parallel size.")
    pipeline_parallel_size: ServeSetting[int] | None = Field(default=None, description="Pipeline stages.")
    utilization: ServeSetting[float] | None = Field(default=None, description="gpu_memory_utilization.")
    kv_cache_memory_bytes: ServeSetting[int] | None = Field(default=None, description="KV pool per device, bytes.")
    block_size: ServeSetting[int] | None = Field(default=None, description="KV block size, tokens.")
    enforce_eager: ServeSetting[bool] | None = Field(default=None, description="No CUDA graphs.")
    enable_prompt_embeds: ServeSetting[bool] | None = Field(default=None, description="Prompt embeddings accepted.")
    enable_prefix_caching: ServeSetting[bool] | None = Field(
        default=None, description="Prefix caching (False: planned and served without it, --no-enable-prefix-caching)."
    )
    enable_extensible_kv_cache: ServeSetting[bool] | None = Field(
        default=None,
        description="False: served with --no-enable-extensible-kv-cache, so a vLLM that would size the pool after "
        "warmup (0.34 on CUDA and ROCm) sizes it by profiling, as planned.",
    )
    max_num_seqs: ServeSetting[int] | None = Field(default=None, description="Most sequences per step.")
    mamba_ssm_cache_dtype: ServeSetting[str] | None = Field(
        default=None, description="SSM / temporal state dtype of a hybrid model (vLLM --mamba-ssm-cache-dtype)."
    )
    quantization: ServeSetting[str] | None = Field(
        default=None,
        description="The method on the command (vLLM --quantization): an online quantization of an unquantized "
        "checkpoint, a method the checkpoint's own is or claims when asked, or the one a pre-quantized bitsandbytes "
        "checkpoint needs before vLLM 0.8.4 (source 'model').",
    )
    load_format: ServeSetting[str] | None = Field(
        default=None,
        description="The weight loader (vLLM --load-format): 'bitsandbytes' for a pre-quantized bitsandbytes "
        "checkpoint on a vLLM that does not choose it itself; None: the engine's own choice.",
    )
    cpu_offload_gb: ServeSetting[float] | None = Field(
        default=None, description="GiB of decoder-layer weights per GPU kept in host memory (vLLM --cpu-offload-gb)."
    )
    multimodal: ServeSetting[bool] | None = Field(
        default=None,
        description="The towers are loaded (False: text-only, the plan left them out); spelled on the command as "
        "limit_mm_per_prompt (a plan file from before it: as flag_table.TEXT_ONLY).",
    )
    language_model_only: ServeSetting[bool] | None = Field(
        default=None, description="Served with vLLM --language-model-only (0 items of every modality)."
    )
    limit_mm_per_prompt: ServeSetting[dict[str, int]] | None = Field(
        default=None,
        description="Items of each modality per prompt the plan was sized for (vLLM --limit-mm-per-prompt): the "
        "counts given, or 0 of every modality when text-only; None: vLLM's defaults (or the family's contract).",
    )


class LayerKV(ResultModel):
    """One decoder layer's KV cache geometry: attention type, window, KV heads, head dim, bytes per token, and
    whether it owns its cache or reads another layer's."""

    index: int = Field(description="Decoder layer index.")
    attention_type: str = Field(
        description="'full', 'sliding', 'chunked' (Llama 4 chunked local attention), 'mamba' (a recurrent state only), "
        "'none' (no attention: a Nemotron NAS no-op attention layer)."
    )
    kv_heads: int = Field(description="KV heads stored for this layer (after tensor-parallel padding).")
    head_dim: int = Field(description="Per-head dimension of K (and of V unless v_head_dim says otherwise).")
    v_head_dim: int | None = Field(
        default=None, description="Per-head dimension of V where it differs from K's (MiMo-V2); None: head_dim."
    )
    k_eq_v: bool = Field(default=False, description="K and V share one tensor (attention_k_eq_v).")
    latent: bool = Field(
        default=False,
        description="MLA: one latent of head_dim (kv_lora_rank + qk_rope_head_dim) elements per token, no K/V pair.",
    )
    owns_cache: bool = Field(
        description="False when the layer reads another layer's cache (KV sharing) or holds none (no attention)."
    )
    shares_from: int | None = Field(default=None, description="Layer whose cache this one reads.")
    sliding_window: int | None = Field(
        default=None, description="Window in tokens for sliding layers (the attention chunk for chunked layers)."
    )
    bytes_per_token: int = Field(description="KV bytes this layer adds per token (0 when shared).")
    indexer_bytes_per_token: int = Field(
        default=0,
        description="Of bytes_per_token, a sparse-attention MLA layer's lightning-indexer K cache (DeepSeek-V3.2, "
        "GLM-5; 0 else).",
    )
    state_bytes: int = Field(
        default=0,
        description="Recurrent state bytes per request over all TP ranks (Mamba / linear-attention layers; 0 else).",
    )
    state_kind: str | None = Field(
        default=None,
        description="What vLLM calls a recurrent layer (its MambaSpec's mamba_type: 'short_conv', 'mamba1', 'mamba2', "
        "'gdn_attn'; planner.recurrent.vllm_state_kind), shown in place of attention_type 'mamba'; None: a "
        "layer with attention, or a name not read.",
    )


class GpuMemoryBudget(ResultModel):
    """What vLLM's start-up profiling takes from each GPU before sizing the KV pool (bytes per GPU)."""

    rule_versions: str = Field(description="vLLM versions the applied memory rule holds for.")
    requested_bytes: int = Field(description="Visible memory x gpu_memory_utilization.")
    weights_bytes: int = Field(description="Weights resident on one GPU (split by tensor parallelism).")
    non_torch_bytes: int = Field(description="Non-torch memory (CUDA context; NCCL buffers at TP >= 2).")
    activation_peak_bytes: int = Field(description="Peak activation of the profiling run.")
    cuda_graph_bytes: int = Field(description="CUDA-graph memory subtracted (0 where the version does not).")
    kv_cache_bytes: int = Field(description="What is left for the KV cache on one GPU.")
    kv_cache_low_bytes: int = Field(description="KV budget with every uncertain term at its high end.")
    kv_cache_high_bytes: int = Field(description="KV budget with every uncertain term at its low end.")
    dominant_uncertainty: str = Field(description="The term whose range moves the KV budget most.")
    kv_groups: int = Field(default=1, description="Groups of the hybrid KV allocator (1: uniform layers).")
    group_layers: int = Field(default=1, description="Layers per allocator group (tensors sharing pages).")
    block_bytes: int = Field(default=0, description="Bytes one block takes per GPU: page x layers per group.")
    min_block_size: int = Field(default=16, description="Smallest block size of the groups, tokens.")
    blocks_per_request: int = Field(default=1, description="Blocks one max_model_len request takes.")
    token_line: str = Field(default="groups", description="How the version prints its token line (groups/capacity).")


class MeasuredBoot(StoredResult):
    """What one real vLLM GPU boot measured, stored under $ONECHIP_HOME/measured-boots to make later plans of the
    same deployment exact (planner.calibration)."""

    key: str = Field(description="Deployment key: model, chip, engine, version, TP, dtypes, scheduler limits.")
    date: str = Field(description="ISO date of the boot.")
    engine_version: str | None = Field(default=None, description="vLLM version the boot logged.")
    utilization: float = Field(description="gpu_memory_utilization of the boot.")
    requested_bytes: int = Field(description="Visible memory x utilization per GPU, as planned for that boot.")
    weights_bytes: int = Field(description="Weights per GPU as the planner counted them for that boot.")
    kv_cache_bytes: int = Field(description="KV pool per GPU implied by the logged token line, bytes.")
    kv_cache_tokens: int = Field(description="The logged 'KV cache size: N tokens'.")
    overhead_bytes: int = Field(
        description="requested - weights - KV pool: non-torch + activation peak + CUDA graphs, measured together."
    )


class ContextConcurrency(ResultModel):
    """How many requests of one context length the planned KV pool holds at once."""

    context_tokens: int = Field(description="Tokens per request (prompt + output).")
    max_concurrency: float = Field(description="KV pool tokens / blocks-rounded tokens per request.")


class CrossCheck(StoredResult):
    """Planned vs what the engine reported at boot."""

    planned_kv_tokens: int = Field(description="Plan.kv_tokens.")
    reported_kv_tokens: int | None = Field(default=None, description="KV cache tokens the engine logged.")
    planned_max_concurrency: float = Field(description="Planned concurrency at the reported context.")
    reported_max_concurrency: float | None = Field(default=None, description="Concurrency the engine logged.")
    agrees: bool = Field(description="True when reported tokens equal planned exactly and concurrency to 0.01.")
    compared: bool = Field(
        default=True,
        description="False when the log held no allocation line (KV tokens, blocks, concurrency or KV pool): "
        "nothing to compare.",
    )
    planned_kv_pool_bytes: int | None = Field(default=None, description="Plan.kv_pool_bytes.")
    reported_kv_pool_bytes: int | None = Field(
        default=None, description="KV pool the log reported (TPU total_hbm_avail_gb), bytes."
    )
    engine_version: str | None = Field(default=None, description="Engine version the log printed.")
    flags: list[str] = Field(
        default_factory=list,
        description="Known log lies that apply: 'shape-line-layer0', 'fp8-unchanged-capacity', 'token-line-derived'; "
        "'other-deployment' when the log names another model, max_model_len or tensor_parallel_size than the plan, "
        "or a GPU whose total memory is another card's; "
        "'boot-failed' when the log shows the engine failed to start (the note leads with the cause).",
    )
    note: str = Field(default="", description="What differs and the likely reason.")
    not_stored: str | None = Field(
        default=None,
        description="Why the boot was not stored as the deployment's measured boot (api.remember_boot), one line; "
        "None when it was, or when the plan does not learn from boots (not vLLM GPU, no KV token line).",
    )


class Plan(StoredResult):
    """The planner's answer for one model on one chip and engine (`onechip plan --json`): the memory budget, the KV
    pool and what it holds per context, the TPOT floor, the per-layer KV table, the serve flags with their
    reasons, the warnings that apply and whether it fits."""

    model: str = Field(description="Model id, directory or catalog name as given.")
    architecture: str = Field(description="Config model_type, e.g. 'llama', 'gemma4'.")
    chip: str = Field(description="Accelerator catalog key, e.g. 'v5e-1', 'cpu'.")
    engine: str = Field(description="Engine rule set, e.g. 'vllm-cpu', 'vllm-tpu', 'vllm-gpu', 'vllm-ascend'.")
    gpu_maker: str | None = Field(
        default=None,
        description="A GPU's maker from the GPU database ('NVIDIA', 'AMD'); None when unknown or not a GPU.",
    )
    dtype: str = Field(description="Weight/compute dtype, e.g. 'bfloat16', 'float32'.")
    kv_cache_dtype: str = Field(description="KV cache dtype as given to the engine ('auto' = model dtype).")
    max_model_len: int = Field(description="Maximum tokens per request.")
    block_size: int = Field(description="KV cache block (page) size in tokens.")
    tensor_parallel_size: int = Field(default=1, description="Tensor-parallel degree.")
    pipeline_parallel_size: int = Field(default=1, description="Pipeline-parallel stages (GPUs = TP x PP).")
    memory_bytes: int | None = Field(default=None, description="Visible device memory (HBM), bytes.")
    utilization: float | None = Field(default=None, description="gpu_memory_utilization, 0 < u <= 1.")
    cap_bytes: int | None = Field(default=None, description="memory_bytes x utilization, floored.")
    outside_cap_bytes: int | None = Field(default=None, description="memory_bytes - cap_bytes.")
    weights_bytes: int = Field(description="Resident weight bytes the engine loads.")
    weights_by_component: dict[str, int] = Field(default_factory=dict, description="Weight bytes by component.")
    kv_bytes_per_token: int = Field(description="KV bytes per token summed over cache-owning layers.")
    kv_pool_bytes: int = Field(description="Bytes available to the KV cache.")
    num_blocks: int = Field(description="floor(kv_pool_bytes / (block_size x kv_bytes_per_token)).")
    kv_tokens: int = Field(description="num_blocks x block_size.")
    kv_tokens_logged: int | None = Field(
        default=None,
        description="The token figure the engine's boot log will print, by the engine's own accounting "
        "(differs from kv_tokens on engines that derive it from group-aware concurrency).",
    )
    state_slots: int | None = Field(
        default=None,
        description="Attention-free models (Mamba, Mamba2, FalconMamba) only: the sequences the cache holds a "
        "recurrent state for, whatever their length (num_blocks / state pages per request, floored) -- the pool's "
        "real capacity. Such a model caches no KV: kv_tokens and kv_tokens_logged (the engine's own line: slots x "
        "max_model_len, or x a block size) count no tokens held.",
    )
    max_concurrency: float = Field(description="kv_tokens / tokens of one max_model_len request.")
    concurrency: list[ContextConcurrency] = Field(default_factory=list, description="Per requested context.")
    decode_bytes_per_step: int | None = Field(
        default=None,
        description=(
            "Weight bytes one decode step streams (text model + LM head; gathered embedding tables "
            "excluded). The KV read, small for one short-context stream, is not included."
        ),
    )
    bandwidth_bytes_per_s: float | None = Field(
        default=None,
        description=(
            "Memory bandwidth used for the floor, bytes/s: one device's times the tensor-parallel devices that stream "
            "the weights at once (pipeline stages add none)."
        ),
    )
    tpot_floor_ms: float | None = Field(default=None, description="decode_bytes_per_step / bandwidth, ms.")
    layers: list[LayerKV] = Field(default_factory=list, description="Per-layer KV geometry.")
    num_layers: int | None = Field(default=None, description="Decoder layers in the text model.")
    cache_layers: int | None = Field(default=None, description="Decoder layers that own a KV cache.")
    kv_bytes_per_sequence: int | None = Field(
        default=None,
        description="Engine accounting: KV bytes one max_model_len request occupies in the pool.",
    )
    kv_bytes_per_sequence_windowed: int | None = Field(
        default=None,
        description="KV bytes of one max_model_len request with sliding layers capped at the window.",
    )
    kv_bytes_per_sequence_full_context: int | None = Field(
        default=None,
        description="KV bytes of one max_model_len request if every cached layer held all tokens.",
    )
    engine_version: str | None = Field(default=None, description="Engine version the rules were read from.")
    serve_model: str | None = Field(
        default=None,
        description="Model argument for `vllm serve` (Hub id for catalog models, else as given).",
    )
    model_source: str | None = Field(default=None, description="'local', 'catalog' or 'hub'.")
    quantized_checkpoint: bool | None = Field(
        default=None,
        description="Whether the checkpoint has a quantization_config (its own method, which vLLM serves whatever "
        "--quantization names); None in plans made before it was recorded.",
    )
    auto_kv_cache_dtype: str | None = Field(
        default=None,
        description="The KV cache element vLLM serves for this checkpoint and release under --kv-cache-dtype auto "
        "whatever the plan asked: the KV dtype a ModelOpt checkpoint's quantization_config states ('fp8_e4m3'), else "
        "the model dtype; None in plans made before it was recorded.",
    )
    max_num_batched_tokens: int | None = Field(
        default=None, description="Scheduler token budget the plan assumed (None = engine default)."
    )
    in_flight_tokens: int | None = Field(
        default=None,
        description="Tokens a sliding-window layer holds per request beyond its window: scheduler batches in "
        "flight x the token budget (vLLM >= 0.26 under async scheduling: 2 batches; engines.json "
        "sliding_in_flight_batches). None: one batch of max_num_batched_tokens (plans written before it).",
    )
    crosscheck: CrossCheck | None = Field(
        default=None, description="The plan against an engine boot log, when one was given (--against)."
    )
    verdict: str = Field(default="fits", description="'fits' or a one-line reason it does not.")
    serve: ServeSettings = Field(
        default_factory=ServeSettings,
        description="The engine settings the figures assume, typed, each with its reason and source "
        "(onechip.vllm.flag_table spells them as flags).",
    )
    request: dict[str, Any] | None = Field(
        default=None,
        description="The planner inputs this plan was made from (schemas.requests.PlanRequest fields), so a "
        "`--set` of a memory-sizing flag can re-plan from it; None in plans made before they were recorded.",
    )
    serve_command: ServeCommand | None = Field(
        default=None,
        description="The exact command `onechip up` runs for this plan (onechip.vllm.flags.serve_command).",
    )
    replicas: int = Field(default=1, description="Engines behind vllm-router (`plan --replicas N`); the plan is one's.")
    replica_commands: list[str] = Field(
        default_factory=list,
        description="With replicas > 1: every shell line `up --replicas N` runs (each replica, then vllm-router).",
    )
    warnings: list[PlanWarning] = Field(default_factory=list, description="Known traps that apply.")
    fits: bool = Field(default=True, description="False when the weights leave no room for one request.")
    longest_fit_max_model_len: int | None = Field(
        default=None,
        description="Where one max_model_len request does not fit the KV pool (binding limit kv-one-request): the "
        "longest length that does, as vLLM's auto-fit search finds it (the note max-model-len-longest-fit); None "
        "where it fits, no length fits, or that search is not modelled.",
    )
    binding_limit: str | None = Field(
        default=None,
        description="What limits the deployment: 'weights' (exceed the cap), 'weights-load' (GPU: the weights per "
        "GPU with what the process holds beside them as they load (CUDA context, NCCL, the V1 block tables) exceed the "
        "card itself: out of memory while the model loads), 'kv-one-request' (the pool holds "
        "less than one max_model_len request: the engine refuses to start), 'program-memory' (TPU: too little "
        "memory outside the cap for the compiled programs or the largest token bucket), 'block-table' (TPU: the "
        "runner's block table, max_num_seqs x blocks per request, leaves no KV pool), 'explicit-pool' (GPU: a "
        "--kv-cache-memory pool that with the weights and overheads exceeds the card), 'profiling-memory' (GPU: "
        "the profiling run's activation peak with the weights exceeds the card: out of memory before the KV cache "
        "is sized), 'free-memory-at-start' (GPU: utilization x memory is more than the card has free at start) or "
        "'kv-pool' (fits; concurrency is bounded by the pool).",
    )
    devices: int = Field(default=1, description="Devices (GPUs or chips) the plan spreads over.")
    memory_budget: GpuMemoryBudget | None = Field(
        default=None, description="Per-GPU terms of vLLM's start-up profiling (vllm-gpu rules only)."
    )
    kv_tokens_range: tuple[int, int] | None = Field(
        default=None,
        description="Low and high KV tokens (as the engine's token line counts them) the uncertain budget terms allow.",
    )
    calibrated_from: str | None = Field(
        default=None, description="The stored boot whose measured terms replaced the rules, when one did."
    )
    deployment_key: str | None = Field(
        default=None, description="Key a boot of this plan is stored under to calibrate later plans (GPU)."
    )
    notes: list[str] = Field(
        default_factory=list,
        description="Caveats of the plan, as a run's notes: a stored measured boot of this deployment a newer onechip "
        "wrote, not used (planner.calibration.newer_note).",
    )

    def fit_hint(self, length: str) -> str:
        """What a refusal of this plan (fits False) says to change: 'give --set max-model-len=27904, the longest length
        that fits' where the plan knows that length (longest_fit_max_model_len), `length` spelling it as the caller's
        command line takes it with '{}' for the number; else 'change what limits it (binding limit: weights)'."""
        if self.longest_fit_max_model_len is None:
            return f"change what limits it (binding limit: {self.binding_limit or 'not recorded'})"
        return f"give {length.format(self.longest_fit_max_model_len)}, the longest length that fits"

    def without_provenance(self) -> dict[str, Any]:
        """This plan as a dict less where its values came from: each serve setting's `source` and `reason`, and the
        `request` it was made from. Two plans equal here size and launch the same engine, so a resume compares these:
        `--tensor-parallel-size 1` typed (source 'request', recorded in the request) and left at its default
        (source 'planner') are one plan (api._sim_search, bench.runner.config_difference)."""
        provenance = {"source", "reason"}
        return self.model_dump(
            exclude={"request": True, "serve": dict.fromkeys(ServeSettings.model_fields, provenance)}
        )

    def refuse_other_replicas(self, replicas: int, named: str = "--plan") -> None:
        """Raise ConfigError when this plan is one of several replicas (`plan --replicas N`: one replica's share of
        the chip) and `replicas` engines of it are asked for instead of N: `up --plan` ran one engine on one share
        (half a v5e-4 idle) and `simulate --plan` predicted one, each without a word."""
        if self.replicas > 1 and replicas != self.replicas:
            raise ConfigError(
                f"{named} plans one of {self.replicas} replicas (made by `onechip plan --replicas {self.replicas}`), "
                f"not {replicas}: give --replicas {self.replicas}"
            )

    @classmethod
    def from_file(cls, path: Path, flag: str = "--plan") -> Plan:
        """The plan saved at `path` (`onechip plan --json`), checked as input: its sizes are what a
        simulation divides by and a launch allocates. Raises ConfigError naming `flag` and the file when
        it cannot be read, is not a plan JSON, was written by a newer onechip (its schema_version: known_schema's
        words), or holds a size out of range (block_size 0, negative bytes)."""
        try:
            # JSON text is UTF-8 without a mark, and a parser 'MAY ignore the presence of a byte order mark' (RFC 8259
            # section 8.1): a plan Windows saved behind one, or as UTF-16, is read as its text (textcodec.decoded)
            plan = cls.model_validate_json(decoded(read_regular(Path(path))))
        except OSError as exc:
            raise ConfigError(f"{flag} {path}: cannot read: {exc.strerror}") from None
        except ValidationError as exc:  # say the first problem: a field removed, of the wrong type, a file cut short
            if (newer := newer_schema(exc)) is not None:  # a newer onechip's plan: its sizes may mean other things
                raise ConfigError(f"{flag} {path}: {newer}") from None
            why = first_problem(exc)
            raise ConfigError(f"{flag} {path}: not a plan JSON ({why}; see `onechip plan --json`)") from None
        except ValueError:
            raise ConfigError(f"{flag} {path}: not a plan JSON (see `onechip plan --json`)") from None
        positive = ("max_model_len", "block_size", "tensor_parallel_size", "pipeline_parallel_size")
        bad = [f"{name} {getattr(plan, name)} (at least 1)" for name in positive if getattr(plan, name) < 1]
        sizes = ("weights_bytes", "kv_bytes_per_token", "num_blocks", "kv_tokens")  # a pool may be < 0: no fit
        bad += [f"{name} {getattr(plan, name)} (not negative)" for name in sizes if getattr(plan, name) < 0]
        if bad:
            raise ConfigError(f"{flag} {path}: not a usable plan: {', '.join(bad)}; make it again with `onechip plan`")
        return plan
