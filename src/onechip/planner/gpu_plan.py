"""The KV pool, concurrency, token line and fit verdict of a vLLM GPU deployment (engine rules with
`memory_rules`): planner.gpu_memory's budget per GPU, laid out by planner.kv_groups' allocator.

Tensor parallelism on a GPU key: `--chip h100 --tensor-parallel-size 4` is four H100 cards (that is how
vLLM is told about a 4-GPU host). Per GPU: weights / TP, KV heads padded to a multiple of TP and split
(an MLA latent is not split), non-torch memory plus NCCL buffers at TP >= 2. vLLM sizes and logs the
pool per GPU; `--kv-cache-memory` is bytes per GPU (vLLM engine args: "Size of KV Cache per GPU").

Pipeline parallelism (`--pipeline-parallel-size`): the decoder layers are split into stages as
vllm/distributed/utils.py get_pp_indices splits them (num_layers // PP each, the remainder added from the
second-to-last stage backwards); each stage's workers profile their own memory (their weights; the
sampler warm-up only on the last stage, gpu_model_runner profile_run) and size their own blocks over
their own layers; vllm/v1/core/kv_cache_utils.py get_kv_cache_configs then sets every worker to the
smallest num_blocks, and the token line and concurrency are printed from that count. From vLLM 0.19.0 (engines.json
pp_projected_groups_from) the KV-cache groups are the whole model's, each projected onto the stage
(planner.kv_groups.kv_layout on_stage), which is how hybrid and attention-free models are planned under PP.

Windowed layers (sliding, chunked local) hold their window plus the tokens in flight: max_num_batched_tokens
x the rule's sliding_in_flight_batches (vLLM >= 0.26: two batches under async scheduling, VllmConfig
max_in_flight_tokens); with pipeline parallelism that count depends on the model runner (V1: PP, V2: PP + 1),
so such a plan is refused.

The fit verdict is vLLM's start-up check (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory,
run per worker): one max_model_len request, at the per-layer pages its specs need, must fit in the KV
budget of every GPU; on the V0 engine the pool's tokens must reach max_model_len.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from onechip.catalog.files import (
    CudaGraphRule,
    EncoderProfileRule,
    FusedMoeBufferRule,
    GpuMemoryRule,
    PpIntermediateRule,
    RocmRule,
    RopeCacheRule,
)
from onechip.errors import ConfigError
from onechip.planner.geometry import MAMBA, NO_ATTENTION, Geometry, cdiv, window_blocks
from onechip.planner.gpu_memory import (
    GpuBudget,
    MarlinMoe,
    activation_bytes,
    cold_compile_bytes,
    cublas_workspace_rule,
    cuda_graph_estimate,
    deepstack_buffer_bytes,
    encoder_profile_bytes,
    fa3_accumulator_bytes,
    flashinfer_workspace_bytes,
    forward_bytes,
    gdn_checkpoint_buffer_bytes,
    gpu_budget,
    graph_sizes,
    hip_graph_count,
    per_layer_embeddings_buffer_bytes,
    pp_intermediate_bytes,
    qwen3_vl_tower_peak_bytes,
    triton_topk_sampler_rule,
    v2_penalty_state_bytes,
    vllm_rope_cache_bytes,
)
from onechip.planner.kv_groups import KvGroup, KvLayout, StateCache, kv_layout
from onechip.planner.runner_tables import gpu_block_table_bytes, host_token_buffer_bytes
from onechip.planner.scheduler_limits import scheduler_sizes
from onechip.planner.weights import Offload
from onechip.schemas.common import GIB
from onechip.schemas.plan import GpuMemoryBudget, LayerKV

# vllm/engine/arg_utils.py get_batch_defaults (v1, OpenAI server): cards with >= 70 GiB whose device name
# does not contain "a100" default to 1024 sequences / 8192 tokens (the rule's figures); smaller cards and
# every A100 to 256 / 2048 (vLLM tests/engine/test_arg_utils.py test_defaults_with_usage_context:
# 'device_memory >= 70 * GiB_bytes and "a100" not in device_name'); before 0.9.0 the A100 exception is absent
# (rule a100_small_batch_defaults, _set_default_args_v1 of the vllm 0.8.5 wheel).
# The card's memory comes from NVML (vllm/platforms/cuda.py NvmlCudaPlatform.get_device_total_memory); where NVML
# cannot say (unified memory: GB10, accelerators.json nvml_memory_info) the call raises and get_batch_defaults
# takes 'device_memory = 0' (vllm 0.27.1 sdist): the small defaults.
LARGE_GPU_BYTES = 70 * GIB
# from 0.28.0 (rule huge_gpu_defaults): 'if device_memory >= 160 * GiB_bytes' comes first, with its own figures
HUGE_GPU_BYTES = 160 * GIB

# What a vLLM process holds outside PyTorch while it loads the weights (the CUDA / HIP context, NCCL / RCCL): the
# least seen at a load is 0.49 GiB (31.86 GiB total - 48 MiB free - 31.32 GiB allocated by PyTorch at the load OOM of
# tests/fixtures/bootlogs/r9700x2-llama-pllum-70b-base-bf16-tp2-len8192-eager-load-oom-v0190-rocm.log, ROCm 0.19.0 TP 2;
# 17.52 GiB in use, 17.03 GiB by PyTorch after an L40S load, vllm-project/vllm issue #23230, 0.10.1), the most 0.66 GiB
# (92.34 GiB in use, 91.68 GiB by PyTorch at an OOM in linear.py create_weights on a 93.09 GiB card, issue #28143).
# The load fails where the weights and the least of it pass the card; between the least and the most it is uncertain.
LOAD_NON_TORCH_BYTES = (int(0.49 * GIB), int(0.66 * GIB))
SMALL_GPU_DEFAULTS = (256, 2048)


@dataclass(frozen=True)
class Stage:
    """One pipeline stage: the geometry of its decoder layers and its resident weights over its TP ranks
    (bytes); the last stage runs the sampler warm-up. Without pipeline parallelism: the whole model."""

    geometry: Geometry
    weights_bytes: int
    last: bool = True
    offload: Offload = Offload()  # --cpu-offload-gb on each of this stage's GPUs (planner.weights.offloaded_layers)
    # bytes the load holds at its peak beyond weights_bytes, over the stage's TP ranks: the 16-bit weights of a
    # --quantization fp8 load in the releases that build them whole (planner.weights.online_fp8_load_extra_bytes)
    load_extra_bytes: int = 0
    # the whole model's geometry where the release groups the layers of every stage together and projects the groups
    # onto each stage (planner.kv_groups.kv_layout on_stage); None: the stage's own layers are grouped
    model: Geometry | None = None


def pp_stage_layers(num_layers: int, pipeline_parallel_size: int) -> list[range]:
    """Decoder-layer indices per pipeline stage, as vllm/distributed/utils.py get_pp_indices splits them
    (VLLM_PP_LAYER_PARTITION unset). Raises ConfigError when a stage would hold no layer."""
    if pipeline_parallel_size > num_layers:  # before a list of that many stages is made
        raise ConfigError(f"pipeline_parallel_size {pipeline_parallel_size} exceeds the model's {num_layers} layers")
    per = num_layers // pipeline_parallel_size
    parts = [per] * pipeline_parallel_size
    for i in range(2, num_layers % pipeline_parallel_size + 2):
        parts[-i] += 1
    if min(parts) < 1:
        raise ConfigError(f"pipeline_parallel_size {pipeline_parallel_size} exceeds the model's {num_layers} layers")
    starts = [sum(parts[:i]) for i in range(len(parts))]
    return [range(start, start + n) for start, n in zip(starts, parts, strict=True)]


def stage_geometry(geometry: Geometry, layers: range) -> Geometry:
    """The part of `geometry` one stage holds."""
    return Geometry(layers=[geometry.layers[i] for i in layers], raw_kv_heads=geometry.raw_kv_heads)


@dataclass(frozen=True)
class GpuPool:
    """Per-GPU figures of a planned vLLM GPU deployment (bytes, tokens); with pipeline parallelism, of the
    stage that binds (the fewest blocks, or one that fails the start-up check), at the common block count."""

    budget: GpuBudget
    layout: KvLayout
    pool_bytes_per_gpu: int
    num_blocks: int
    tokens: int
    max_num_batched_tokens: int
    max_num_seqs: int
    one_request_bytes: int
    tokens_range: tuple[int, int]
    checks_tokens: bool  # V0's start-up check: pool tokens >= max_model_len (else bytes of one request)
    over_card_bytes: int = 0  # --kv-cache-memory: bytes the explicit pool and the rest need beyond the card
    table_bytes: int = 0  # the runner's block tables and slot mappings, outside the profiled budget (runner_tables)
    table_over_card_bytes: int = 0  # bytes those tables need beyond the card beside the requested memory
    load_over_card_bytes: int = 0  # the load's peak per GPU beyond the card's memory: the load runs out of memory
    load_held_bytes: int = 0  # held beside the weights as they load: non-torch (LOAD_NON_TORCH_BYTES), V1 tables
    load_peak_bytes: int = (
        0  # weights per GPU at the load's peak (the resident weights, or more: Stage.load_extra_bytes)
    )
    profile_over_card_bytes: int = (
        0  # bytes the profiling run (weights, non-torch, its activation peak) needs beyond it
    )
    in_flight_tokens: int = 0  # tokens a windowed layer holds beyond its window (0: max_num_batched_tokens)
    pool_bytes_all_gpus: int = 0  # KV bytes over every GPU (PP: each stage's blocks at the common count)
    request_bytes_all_gpus: int = 0  # KV bytes of one max_model_len request over every GPU
    geometry: Geometry | None = None  # the layers this stage's GPUs hold
    stage_pools: tuple[GpuPool, ...] = ()  # PP: every stage's own pool, before the common block count
    whole_model_check: bool = False  # PP: the start-up check takes every stage's layers (pp_check_whole_model)

    def concurrency(self, context: int) -> float:
        return self.num_blocks / self.layout.blocks_per_request(context, self.in_flight())

    def in_flight(self) -> int:
        return self.in_flight_tokens or self.max_num_batched_tokens

    def logged_tokens(self, rule: GpuMemoryRule, max_model_len: int) -> int:
        """The 'GPU KV cache size: N tokens' figure as `rule`'s versions print it."""
        if rule.kv_token_line == "capacity":
            return int(self.concurrency(max_model_len) * max_model_len)
        return self.layout.tokens(self.num_blocks, rule.uniform_line_cache_block)

    def record(self, rule: GpuMemoryRule, max_model_len: int) -> GpuMemoryBudget:
        b = self.budget
        return GpuMemoryBudget(
            rule_versions=rule.versions,
            requested_bytes=b.requested_bytes,
            weights_bytes=b.weights_bytes,
            non_torch_bytes=b.non_torch_bytes,
            activation_peak_bytes=b.activation_bytes,
            cuda_graph_bytes=b.cuda_graph_bytes,
            kv_cache_bytes=self.pool_bytes_per_gpu,
            kv_cache_low_bytes=b.kv_low_bytes,
            kv_cache_high_bytes=b.kv_high_bytes,
            dominant_uncertainty=b.dominant_uncertainty,
            kv_groups=len(self.layout.groups),
            group_layers=self.layout.group_size,
            block_bytes=self.layout.page_bytes * self.layout.group_size,
            min_block_size=min(g.block_size for g in self.layout.groups),
            blocks_per_request=self.layout.blocks_per_request(max_model_len, self.in_flight()),
            token_line=rule.kv_token_line,
        )


def _defaults(
    rule: GpuMemoryRule,
    visible_bytes: int,
    max_model_len: int,
    device_name: str,
    *,
    sliding: bool,
    multimodal: bool,
    nvml_memory_info: bool = True,
) -> tuple[int, int, bool]:
    """(max_num_seqs, max_num_batched_tokens, chunked prefill on) vLLM takes when neither size is given."""
    if rule.default_max_num_batched_tokens is None:  # V0
        long_context = rule.chunked_prefill_above_len is not None and max_model_len > rule.chunked_prefill_above_len
        if long_context and rule.chunked_prefill_batched_tokens and not sliding and not multimodal:
            # vllm/engine/arg_utils.py create_engine_config: chunked prefill on by itself above 32K on CUDA
            # (not for multimodal or sliding-window models); SchedulerConfig then batches its default tokens
            return rule.default_max_num_seqs, rule.chunked_prefill_batched_tokens, True
        return rule.default_max_num_seqs, max(max_model_len, 2048), False  # the whole max-length prompt in one step
    if not nvml_memory_info:  # get_batch_defaults reads the card's memory from NVML: 0 where NVML cannot say
        visible_bytes = 0
    if rule.huge_gpu_defaults is not None and visible_bytes >= HUGE_GPU_BYTES:
        return (*rule.huge_gpu_defaults, True)
    if visible_bytes < LARGE_GPU_BYTES or (rule.a100_small_batch_defaults and "a100" in device_name.lower()):
        return (*SMALL_GPU_DEFAULTS, True)
    return rule.default_max_num_seqs, rule.default_max_num_batched_tokens, True  # V1: chunked prefill always


def one_request_bytes(geometry: Geometry, layout: KvLayout, max_model_len: int, batch: int, tp: int) -> int:
    """KV bytes per GPU one max_model_len request needs, summed over cache-owning layers at each layer's
    block size (vLLM's max_memory_usage_bytes over all layer specs); `batch`: tokens in flight. A layout with
    recurrent-state groups: group_size x page x the pages one request takes in every group
    (vllm/v1/core/kv_cache_utils.py _max_memory_usage_bytes_from_groups, read in 0.19 - 0.32)."""
    if any(g.kind == MAMBA for g in layout.groups):
        return layout.group_size * layout.page_bytes * layout.blocks_per_request(max_model_len, batch)
    blocks = {(g.kind, g.window): g.block_size for g in layout.groups}
    total = 0
    for layer in geometry.layers:
        if not layer.owns_cache:
            continue
        key = (layer.attention_type, layer.sliding_window)
        block = blocks.get(key, layout.groups[0].block_size)
        if layer.sliding_window is None or key not in blocks:
            pages = cdiv(max_model_len, block)
        else:
            pages = window_blocks(layer.attention_type, layer.sliding_window, batch, max_model_len, block)
        total += pages * block * (layer.bytes_per_token // tp)
    return total


def plan_gpu_pool(
    rule: GpuMemoryRule,
    *,
    text: Mapping[str, Any],
    stages: list[Stage],
    visible_bytes: int,
    utilization: float,
    dtype_bytes: float,
    tensor_parallel_size: int,
    block_size: int,
    max_model_len: int,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    kv_cache_memory_bytes: int | None,
    measured_overhead_bytes: int | None = None,
    device_name: str = "",
    nvml_memory_info: bool = True,
    enforce_eager: bool = False,
    multimodal: bool = False,
    vision_config: Mapping[str, Any] | None = None,
    mm_counts: Mapping[str, int] | None = None,
    states: StateCache | None = None,
    sampler_bytes_per_seq_vocab: float | None = None,
    tp_extra: tuple[int, int] | None = None,
    group_size_max_ratio: float = 1.5,
    pad_pages: bool = False,
    encoder_rule: EncoderProfileRule | None = None,
    moe_rule: FusedMoeBufferRule | None = None,
    offload_copies_layer: bool = False,
    rocm: RocmRule | None = None,
    rocm_unruled_bytes: int = 0,
    marlin: MarlinMoe | None = None,
    quantized_on_triton: bool = False,
    mrope_positions_factor: int | None = None,
    rope_rule: RopeCacheRule | None = None,
    rope_cache: bool = True,
    rotary_custom_op: bool = False,
    pp_rule: PpIntermediateRule | None = None,
    graph_rule: CudaGraphRule | None = None,
    compute_capability: int | None = None,
    sm_count: int | None = None,
    allocator_tail_bytes: int = 0,
    kv_cache_dtype: str = "auto",
    capture_size_override: int | None = None,
    speculative_tokens: int = 0,
    architectures: Sequence[str] = (),
    seqs_default_capped: bool = False,
    batch_default_capped: bool = False,
    release: str = "",
    host_memory_drift_bytes: int | None = None,
    pp_check_whole_model: bool = False,
) -> GpuPool:
    """The KV pool per GPU under `rule` (module docstring). Bytes in: each stage's weights over its TP
    ranks; the rest per GPU. measured_overhead_bytes: non-torch + activation + CUDA graphs as a real boot of
    this deployment measured them (planner.calibration); it replaces the rule's estimates on every stage.
    device_name: the card (vLLM's batch defaults look for "a100" in it). nvml_memory_info: NVML gives the card's
    memory (catalog accelerators.json; False: vLLM's batch defaults take it as 0, the small defaults).
    enforce_eager: no CUDA graphs
    (vllm/v1/worker/gpu_worker.py determine_available_memory estimates graph memory only when
    cudagraph_mode is not NONE, which --enforce-eager sets). multimodal: the towers are served (V0 keeps
    chunked prefill off for multimodal models). vision_config: the whole config.json where the plan serves a
    vision tower (the encoder's profiling tensors add to the activation peak where the rule says so, and the Qwen3-VL
    tower's own forward peak bounds it from below where encoder_rule models it: planner.gpu_memory.
    qwen3_vl_tower_peak_bytes).
    states: how a hybrid model's recurrent states are kept (planner.kv_groups.StateCache).
    host_memory_drift_bytes: set where the profiler counts host memory as consumed (an integrated GPU:
    accelerators.json profiler_counts_host_memory), so the runner's host token buffers (runner_tables) join
    non-torch memory and the KV range's low end carries the host memory measured to move the pool from boot to boot
    at fixed flags (accelerators.json host_memory_drift_bytes; 0 where none was measured); None: the card's own
    memory.
    sampler_bytes_per_seq_vocab: the sampler warm-up's bytes per (sequence x vocab) element where the install
    decides the sampler (planner.gpu_memory.flashinfer_sampler_bytes); None: the rule's figure. tp_extra:
    (estimate, least) of the TP >= 2 non-torch term for the NCCL transport (planner.gpu_memory.tp_extra_bytes);
    None: the rule's figure. group_size_max_ratio: how the version sizes layer groups (engines.json
    group_size_rules, planner.kv_groups step 2). pad_pages: the version pads an attention page that does not
    divide the largest (engines.json page_padding_rules). encoder_rule: what the version's encoder profiling pads and
    which Qwen3-VL modality it profiles (engines.json encoder_profile_rules; None: outputs as they are).
    mm_counts: each modality's --limit-mm-per-prompt count (planner.modalities; None: vLLM's defaults), which picks
    the profiled modality and caps its items (planner.gpu_memory.encoder_profile_bytes).
    moe_rule: how the release's fused MoE holds its buffers (engines.json fused_moe_buffers; None: persistent).
    offload_copies_layer: the engine copies a --cpu-offload-gb layer onto the GPU for its forward (each stage's
    `offload` then adds its largest offloaded layer to the forward peak; engines.json cpu_offload_rules).
    marlin: the checkpoint's MoE runs on Marlin (planner.gpu_memory.marlin_moe_group; moe_rule is then engines.json
    marlin_moe_buffers). quantized_on_triton: a w8a8 checkpoint's MoE runs on the Triton experts on this card
    (planner.gpu_memory.quantized_moe_on_triton), so the persistent workspace is planned for it.
    rocm: an AMD card's HIP graph and non-torch terms (engines.json rocm_rules; None: the rule's CUDA figures).
    rocm_unruled_bytes: on an AMD card no rocm rule covers, the non-torch memory ROCm may take beyond the rule's
    CUDA figure (planner.core._rocm_unruled_bytes, 0 otherwise): the KV range's low end carries it (gpu_budget).
    mrope_positions_factor: the release's M-RoPE cache rows per position for this architecture (engines.json
    mrope_cache_rules; None: an M-RoPE cache is not counted). rope_rule: how the release sizes scaled-RoPE caches and
    which model classes pass get_rope a float32 dtype or a plain RoPE for their sliding layers (engines.json
    rope_cache_rules; None: the newest release's rows, the model dtype). rope_cache: the model class builds vLLM's
    RoPE cos/sin caches (False: the Transformers backend serves it, core.transformers_backend); rotary_custom_op: vLLM's
    rotary_embedding custom op runs on CUDA (--enforce-eager on an NVIDIA card; DeepSeek's yarn cache float32 from
    0.14.0, planner.gpu_memory.deepseek_rope_cache_bytes). graph_rule: how the
    release estimates its CUDA-graph memory (engines.json cuda_graph_rules; None: no CUDA-graph term);
    compute_capability: the card's (x 10; the FA3 accumulators, planner.gpu_memory.fa3_accumulator_bytes); sm_count:
    its streaming multiprocessors where the catalog reads them (the Triton sampler buffer,
    planner.gpu_memory.triton_topk_sampler_rule; None: the fitted sampler terms); allocator_tail_bytes: what torch's
    caching allocator counts beyond the parameters of one GPU (planner.weights.allocator_tail_bytes), in its weights
    as vLLM's 'Model loading took' is; kv_cache_dtype:
    --kv-cache-dtype (with the card, whether the first FULL capture takes FlashInfer's workspace:
    planner.gpu_memory.flashinfer_workspace_bytes);
    capture_size_override: the max_cudagraph_capture_size the model's config class sets (cuda_graph_rules
    capture_size_overrides; None: the rule's ceiling);
    speculative_tokens: --speculative-config's num_speculative_tokens (the capture sizes scale with the query).
    architectures: the config's architectures (buffers a model class makes beside its weights:
    planner.gpu_memory.per_layer_embeddings_buffer_bytes). seqs_default_capped: the release caps a max_num_seqs not
    given at max_num_batched_tokens (engines.json default_seqs_capped_from; V1 rules only); batch_default_capped:
    it caps a max_num_batched_tokens not given at max_num_seqs x max_model_len (default_batch_capped_from); release:
    the vLLM release planned for, as refusals name it (''; the rule's range). pp_check_whole_model: with pipeline
    parallelism the release's start-up check sizes one max_model_len request over every stage's layers and compares
    it with the smallest stage's pool (engines.json pp_check_whole_model), so the binding stage carries that request.
    Raises ConfigError for scheduler sizes vLLM refuses (planner.scheduler_limits)."""
    sliding = any(layer.sliding_window is not None for stage in stages for layer in stage.geometry.layers)
    seqs_default, batch_default, chunked = _defaults(
        rule,
        visible_bytes,
        max_model_len,
        device_name,
        sliding=sliding,
        multimodal=multimodal,
        nvml_memory_info=nvml_memory_info,
    )
    seqs_or_none, batch = scheduler_sizes(
        max_num_seqs,
        max_num_batched_tokens,
        defaults=(seqs_default, batch_default),
        seqs_capped=seqs_default_capped and not rule.v0_engine,
        batch_capped=batch_default_capped and not rule.v0_engine,
        max_model_len=max_model_len,
        chunked_prefill=chunked,
        engine=f"vLLM {release or rule.versions.split(' (')[0]}",
    )
    seqs = seqs_or_none or seqs_default
    pp = len(stages)
    # the V1 runner's buffers on every stage but the first (engines.json pp_intermediate_tensors; V0 and the V2 runner
    # allocate them elsewhere: not planned)
    intermediate = (
        pp_intermediate_bytes(
            text, architectures=architectures, dtype_bytes=dtype_bytes, max_num_batched_tokens=batch, rule=pp_rule
        )
        if pp > 1 and pp_rule is not None and not rule.v0_engine and not rule.v2_runner
        else 0
    )
    windowed = any(layer.sliding_window is not None and layer.owns_cache for s in stages for layer in s.geometry.layers)
    if pp > 1 and rule.sliding_in_flight_batches > 1 and windowed:
        raise ConfigError(
            f"pipeline_parallel_size {pp} with sliding-window layers on vLLM {rule.versions}: the tokens a window "
            "holds in flight depend on the model runner (V1: PP batches, V2: PP + 1), which is not modelled"
        )
    # a model on vLLM's Transformers backend builds none (core.transformers_backend)
    rope = vllm_rope_cache_bytes(
        text,
        dtype_bytes=dtype_bytes,
        architectures=architectures,
        rule=rope_rule,
        mrope_positions_factor=mrope_positions_factor,
        rotary_custom_op=rotary_custom_op,
    )
    buffers = rope if rope_cache else 0
    # on every GPU, not split by TP; the caching allocator's tails of the parameters, per GPU (already per rank)
    buffers += allocator_tail_bytes
    if vision_config is not None:  # the tower is served: Qwen3-VL's DeepStack buffers come with it
        buffers += deepstack_buffer_bytes(vision_config, dtype_bytes=dtype_bytes, max_num_batched_tokens=batch)
    buffers += per_layer_embeddings_buffer_bytes(
        {"architectures": list(architectures), "text_config": text},
        dtype_bytes=dtype_bytes,
        max_num_batched_tokens=batch,
    )
    encoder = (
        encoder_profile_bytes(
            vision_config,
            dtype_bytes=dtype_bytes,
            max_num_batched_tokens=batch,
            inputs=rule.encoder_profile_held == "inputs_and_outputs",
            max_num_seqs=seqs,
            max_model_len=max_model_len,
            profile_rule=encoder_rule,
            mm_counts=mm_counts,
        )
        if vision_config is not None and rule.encoder_profile_held != "none"
        else 0
    )  # the whole dummy image batch and its outputs on every GPU
    tower_peak = (
        qwen3_vl_tower_peak_bytes(
            vision_config,
            dtype_bytes=dtype_bytes,
            max_num_batched_tokens=batch,
            max_num_seqs=seqs,
            max_model_len=max_model_len,
            profile_rule=encoder_rule,
            tensor_parallel_size=tensor_parallel_size,
            mm_counts=mm_counts,
        )
        if vision_config is not None and rule.encoder_profile_held != "none"
        else 0
    )  # the vision tower's own forward peak, before the text dummy forward
    pools = [
        _stage_pool(rule, stage, text=text, visible_bytes=visible_bytes, utilization=utilization,
                    dtype_bytes=dtype_bytes, tp=tensor_parallel_size, block_size=block_size,
                    max_model_len=max_model_len, seqs=seqs, batch=batch,
                    kv_cache_memory_bytes=kv_cache_memory_bytes, measured_overhead_bytes=measured_overhead_bytes,
                    buffers=buffers, graphs=not enforce_eager, encoder=encoder, tower_peak=tower_peak,
                    states=states,
                    sampler_bytes_per_seq_vocab=sampler_bytes_per_seq_vocab, tp_extra=tp_extra,
                    group_size_max_ratio=group_size_max_ratio, pad_pages=pad_pages, moe_rule=moe_rule,
                    offload_copies_layer=offload_copies_layer, marlin=marlin,
                    quantized_on_triton=quantized_on_triton, rocm=rocm, rocm_unruled_bytes=rocm_unruled_bytes,
                    token_ids_compiled=index == 0 and not multimodal, graph_rule=graph_rule,
                    compute_capability=compute_capability, sm_count=sm_count,
                    capture_size_override=capture_size_override,
                    speculative_tokens=speculative_tokens, host_memory_drift_bytes=host_memory_drift_bytes,
                    kv_cache_dtype=kv_cache_dtype, release=release or None,
                    intermediate=intermediate if index > 0 else 0)
        for index, stage in enumerate(stages)
    ]  # fmt: skip
    if len(pools) == 1:
        only = pools[0]
        return replace(
            only,
            pool_bytes_all_gpus=only.pool_bytes_per_gpu * tensor_parallel_size,
            request_bytes_all_gpus=only.one_request_bytes * tensor_parallel_size,
        )
    blocks = min(p.num_blocks for p in pools)  # get_kv_cache_configs: every worker at the smallest count
    own = tuple(pools)
    request_all = sum(p.one_request_bytes for p in pools) * tensor_parallel_size
    if pp_check_whole_model:  # one request over every stage's layers against the smallest pool (engines.json)
        whole = sum(p.one_request_bytes for p in pools)
        pools = sorted((replace(p, one_request_bytes=whole) for p in pools), key=lambda p: p.pool_bytes_per_gpu)
    failing = [
        p
        for p in pools
        if p.pool_bytes_per_gpu <= 0
        or p.one_request_bytes > p.pool_bytes_per_gpu
        or p.over_card_bytes
        or p.table_over_card_bytes
    ]
    binding = failing[0] if failing else min(pools, key=lambda p: p.num_blocks)
    low = min(p.tokens_range[0] for p in pools)
    high = min(p.tokens_range[1] for p in pools)
    allocated = sum(blocks * p.layout.page_bytes * p.layout.group_size for p in pools) * tensor_parallel_size
    return replace(
        binding,
        num_blocks=blocks,
        tokens=binding.layout.capacity(blocks),
        tokens_range=(low, high),
        pool_bytes_all_gpus=allocated,
        request_bytes_all_gpus=request_all,
        stage_pools=own,
        whole_model_check=pp_check_whole_model,
    )


def _stage_pool(
    rule: GpuMemoryRule,
    stage: Stage,
    *,
    text: Mapping[str, Any],
    visible_bytes: int,
    utilization: float,
    dtype_bytes: float,
    tp: int,
    block_size: int,
    max_model_len: int,
    seqs: int,
    batch: int,
    kv_cache_memory_bytes: int | None,
    measured_overhead_bytes: int | None,
    buffers: int,
    graphs: bool = True,
    encoder: int = 0,
    tower_peak: int = 0,
    states: StateCache | None = None,
    sampler_bytes_per_seq_vocab: float | None = None,
    tp_extra: tuple[int, int] | None = None,
    group_size_max_ratio: float = 1.5,
    pad_pages: bool = False,
    moe_rule: FusedMoeBufferRule | None = None,
    offload_copies_layer: bool = False,
    rocm: RocmRule | None = None,
    rocm_unruled_bytes: int = 0,
    marlin: MarlinMoe | None = None,
    quantized_on_triton: bool = False,
    token_ids_compiled: bool = False,
    intermediate: int = 0,
    graph_rule: CudaGraphRule | None = None,
    compute_capability: int | None = None,
    sm_count: int | None = None,
    capture_size_override: int | None = None,
    speculative_tokens: int = 0,
    host_memory_drift_bytes: int | None = None,
    kv_cache_dtype: str = "auto",
    release: str | None = None,
) -> GpuPool:
    """The pool of one stage's GPUs: its weights (plus `buffers` every GPU holds whole, less what --cpu-offload-gb
    moves to the host), its activation peak (the sampler only on the last stage; at least `tower_peak`, the vision
    tower's own forward over the profiling batch), its layers' blocks.
    token_ids_compiled: the stage's compiled graph takes the token ids (the first stage of a plan serving no
    multimodal tower): where the rule says so, a cold compile's embedding copy bounds the peak from below
    (planner.gpu_memory.cold_compile_bytes). intermediate: the PP buffers this stage holds through the profiled forward
    (planner.gpu_memory.pp_intermediate_bytes; 0 on the first stage)."""
    off = stage.offload
    copied = (off.dense_layer_bytes, off.moe_layer_bytes) if offload_copies_layer else (0, 0)
    rule = cublas_workspace_rule(rule, compute_capability)  # the activation base as this card's cuBLAS workspace
    topk_buffer = 0
    if sampler_bytes_per_seq_vocab is None and not (rule.v2_runner or rule.sampler_logits_only):
        # the Triton top-k/top-p warm-up counted on a card of known SMs (a FlashInfer sampler takes no such buffer)
        rule, topk_buffer = triton_topk_sampler_rule(
            rule, compute_capability=compute_capability, sm_count=sm_count, dtype_bytes=dtype_bytes, rows=seqs,
            vocab=int(text.get("vocab_size") or 0),
        )  # fmt: skip
    # V0 has no hybrid allocator: one block table for all layers, sized by their summed bytes
    if states is not None and not rule.hybrid_groups:
        raise ConfigError(f"vLLM {rule.versions}: no hybrid KV-cache manager, so no recurrent-state model is planned")
    on_stage = frozenset(layer.index for layer in stage.geometry.layers) if stage.model is not None else None
    layout = (
        kv_layout(stage.model or stage.geometry, block_size, tp, states, group_size_max_ratio, pad_pages, on_stage)
        if rule.hybrid_groups
        else kv_layout_uniform(stage.geometry, block_size, tp, rule.mla_entry_align_bytes, int(dtype_bytes))
    )
    scratch = 0
    grids = [g.block_size for g in layout.groups if g.kind == MAMBA and g.layers]  # a projected group may be empty
    if states is not None and states.checkpoint_buffer and grids:  # this stage holds GDN layers that export them
        scratch = gdn_checkpoint_buffer_bytes(text, tensor_parallel_size=tp, tokens=batch, grid=grids[0])
    act = activation_bytes(
        rule, text, dtype_bytes=dtype_bytes, tensor_parallel_size=tp, max_num_seqs=seqs,
        max_num_batched_tokens=batch, sampler=stage.last, sampler_bytes_per_seq_vocab=sampler_bytes_per_seq_vocab,
        moe_rule=moe_rule, offload_layer_bytes=copied, marlin=marlin, quantized_on_triton=quantized_on_triton,
        sampler_buffer_bytes=topk_buffer, scratch_bytes=scratch,
    ) + encoder + intermediate  # fmt: skip
    act = max(act, tower_peak)  # profile_run's torch peak: the tower's forward, or the text forward + what it keeps
    cold = 0
    if rule.cold_compile_embedding_copy and token_ids_compiled and graphs:  # --enforce-eager compiles nothing
        copy = cold_compile_bytes(text, dtype_bytes=dtype_bytes, tensor_parallel_size=tp, tokens=batch)
        cold = max(0, copy - act)  # the copy is freed before the forward's persistent buffers are taken
        act += cold
    layers = len(stage.geometry.layers)
    query = 1 + speculative_tokens  # a uniform decode step's tokens per request
    sizes, full = graph_sizes(
        max_num_seqs=seqs, max_num_batched_tokens=batch, max_capture_size=rule.cuda_graph_max_capture_size,
        override=capture_size_override, decode_query_len=query,
    )  # fmt: skip
    graph_bytes = (0, 0, 0)
    if graph_rule is not None and graphs:
        first_forward = forward_bytes(rule, text, dtype_bytes=dtype_bytes, tensor_parallel_size=tp, tokens=sizes[-1])
        fa3 = fa3_accumulator_bytes(
            graph_rule, text, tokens=full[-1] if full else 0, tensor_parallel_size=tp,
            compute_capability=compute_capability, dtype_bytes=dtype_bytes,
        )  # fmt: skip
        if full and not speculative_tokens:  # FlashInfer's FULL graphs are single-token decode (no TRT-LLM path)
            fa3 += flashinfer_workspace_bytes(
                graph_rule, text, kv_cache_dtype=kv_cache_dtype, compute_capability=compute_capability,
                tensor_parallel_size=tp, max_num_batched_tokens=batch, release=release,
            )  # fmt: skip
        # the graph is cut at attention and Mamba / linear-attention ops (vllm/config/compilation.py
        # CompilationConfig._attention_ops, 0.20.0 sdist): Nemotron-H's MLP and MoE layers hold none, nor a Nemotron
        # NAS no-op attention layer
        split = sum(1 for layer in stage.geometry.layers
                    if layer.attention_type not in (MAMBA, NO_ATTENTION) or layer.state_bytes)  # fmt: skip
        graph_bytes = cuda_graph_estimate(
            graph_rule, piecewise_sizes=len(sizes), full_sizes=len(full), layers=layers,
            first_forward_bytes=first_forward, fa3_bytes=fa3, split_layers=split,
        )  # fmt: skip
    budget_rule = rule
    if rocm is not None:  # an AMD card: HIP graphs per piece and the ROCm non-torch range (engines.json rocm_rules)
        hip = hip_graph_count(
            max_num_seqs=seqs, max_num_batched_tokens=batch, max_capture_size=rule.cuda_graph_max_capture_size,
            layers=layers,
        )  # fmt: skip
        hip_low, hip_high = hip * rocm.hip_graph_bytes[0], hip * rocm.hip_graph_bytes[1]
        graph_bytes = (hip_low, (hip_low + hip_high) // 2, hip_high) if graphs else (0, 0, 0)
        least, most = rocm.non_torch_bytes
        budget_rule = rule.model_copy(
            update={"non_torch_bytes": (least + most) // 2, "non_torch_spread_bytes": (most - least) // 2}
        )
    host = drift = 0
    if host_memory_drift_bytes is not None and not rule.v0_engine:  # an integrated GPU: host memory counts
        host = host_token_buffer_bytes(max_num_seqs=seqs, max_model_len=max_model_len, v2_runner=rule.v2_runner)
        drift = host_memory_drift_bytes
    # the V2 runner's PenaltiesState on the last stage (v2_penalty_state_bytes); an AMD card's non-torch range was
    # measured as consumed memory less the weights on V2 boots, which holds it already (engines.json rocm_rules)
    held = v2_penalty_state_bytes(text, max_num_seqs=seqs) if rule.v2_penalty_state and stage.last and not rocm else 0
    budget = gpu_budget(
        budget_rule,
        visible_bytes=visible_bytes,
        utilization=utilization,
        weights_bytes=stage.weights_bytes // tp + buffers - off.offloaded_bytes,
        activation=act,
        tensor_parallel_size=tp,
        cuda_graph_bytes=graph_bytes,
        tp_extra=tp_extra,
        cold_compile=cold,
        host_bytes=host,
        unruled_non_torch_bytes=rocm_unruled_bytes,
        host_drift_bytes=drift,
        held_bytes=held,
    )
    if measured_overhead_bytes is not None:  # a stored boot of this deployment (planner.calibration)
        kv = budget.requested_bytes - budget.weights_bytes - measured_overhead_bytes
        budget = replace(
            budget, kv_bytes=kv, kv_low_bytes=kv, kv_high_bytes=kv, dominant_uncertainty="none (measured at boot)"
        )
    pool = kv_cache_memory_bytes if kv_cache_memory_bytes is not None else budget.kv_bytes
    if kv_cache_memory_bytes is not None:  # the pool is given: no profiled term moves it, so its range is the pool
        budget = replace(
            budget, kv_low_bytes=pool, kv_high_bytes=pool, dominant_uncertainty="none (--kv-cache-memory sets the pool)"
        )
    geometry = stage.geometry
    load_peak = budget.weights_bytes + stage.load_extra_bytes // tp
    block = max(g.block_size for g in layout.groups)
    if states is not None and states.mode == "align" and states.block_within_batch and block > batch:
        raise ConfigError(
            f"--max-num-batched-tokens {batch} is less than the {block}-token attention block vLLM sets for this "
            "hybrid model in Mamba cache mode 'align' (prefix caching on), which vLLM 0.17.0 - 0.26.x assert is at "
            "most max_num_batched_tokens ('In Mamba cache align mode, block_size ... must be <= "
            "max_num_batched_tokens', vllm/config/vllm.py VllmConfig.validate_block_size); give "
            f"--max-num-batched-tokens {block} or more, or --no-enable-prefix-caching"
        )
    blocks = layout.num_blocks(pool)
    tables = 0
    if not rule.v0_engine:  # V0 keeps its block tables on the host (runner_tables); V2: the logits-only rules
        tables = gpu_block_table_bytes(
            [g.block_size for g in layout.groups], max_num_seqs=seqs, max_num_batched_tokens=batch,
            max_model_len=max_model_len, v2_runner=rule.v2_runner,
        )  # fmt: skip
    # the V1 runner builds its block tables with itself, before it loads the model (V0 keeps them on the host, V2
    # allocates them once the KV cache is sized: runner_tables)
    load_held = LOAD_NON_TORCH_BYTES[0] + (tables if not rule.v2_runner else 0)
    in_flight = batch * rule.sliding_in_flight_batches  # VllmConfig.max_in_flight_tokens (PP 1)
    per_request = layout.blocks_per_request(max_model_len, in_flight)
    low_high = (budget.kv_low_bytes, budget.kv_high_bytes) if kv_cache_memory_bytes is None else (pool, pool)
    low, high = (_printed(rule, layout, layout.num_blocks(b), per_request, max_model_len) for b in low_high)
    return GpuPool(
        budget=budget,
        layout=layout,
        pool_bytes_per_gpu=pool,
        num_blocks=blocks,
        tokens=layout.capacity(blocks),
        max_num_batched_tokens=batch,
        max_num_seqs=seqs,
        one_request_bytes=one_request_bytes(geometry, layout, max_model_len, in_flight, tp),
        geometry=geometry,
        tokens_range=(low, high),
        checks_tokens=not rule.hybrid_groups,
        in_flight_tokens=in_flight,
        over_card_bytes=_over_card(budget, pool + tables, visible_bytes) if kv_cache_memory_bytes is not None else 0,
        table_bytes=tables,
        table_over_card_bytes=max(0, budget.requested_bytes + tables - visible_bytes)
        if visible_bytes and kv_cache_memory_bytes is None
        else 0,
        profile_over_card_bytes=_over_card(replace(budget, cuda_graph_bytes=0), 0, visible_bytes)
        if visible_bytes
        else 0,
        load_over_card_bytes=max(0, load_peak + load_held - visible_bytes) if visible_bytes else 0,
        load_held_bytes=load_held,
        load_peak_bytes=load_peak,
    )


def _over_card(budget: GpuBudget, pool: int, visible_bytes: int) -> int:
    """Bytes an explicit --kv-cache-memory pool needs beyond the card: vLLM then skips its memory profiling
    and gpu_memory_utilization (vllm/v1/worker/gpu_worker.py determine_available_memory returns
    kv_cache_memory_bytes as given), so weights, non-torch, activation, CUDA graphs and the pool must all fit
    in the memory the runtime sees, or the KV allocation runs out of memory."""
    needed = budget.weights_bytes + budget.non_torch_bytes + budget.activation_bytes + budget.cuda_graph_bytes
    return max(0, needed + pool - visible_bytes)


def _printed(rule: GpuMemoryRule, layout: KvLayout, blocks: int, per_request: int, max_model_len: int) -> int:
    """The token line for `blocks` per GPU as `rule`'s versions print it (planner.kv_groups, step 5)."""
    if rule.kv_token_line == "capacity":
        return int(blocks / per_request * max_model_len)
    return layout.tokens(blocks, rule.uniform_line_cache_block)


def kv_layout_uniform(
    geometry: Geometry, block_size: int, tp: int, mla_entry_align_bytes: int | None = None, model_dtype_bytes: int = 2
) -> KvLayout:
    """The V0 block manager: every layer holds every token; a block spans all cache-owning layers. With
    `mla_entry_align_bytes` (the rule's, V0 CacheEngine.get_cache_block_size) an MLA layer's latent entry is
    padded to a multiple of that many bytes counted in the model dtype (576 bf16 elements -> 640)."""

    def entry_bytes(layer: LayerKV) -> int:
        if not (layer.latent and mla_entry_align_bytes):
            return layer.bytes_per_token
        step = mla_entry_align_bytes // model_dtype_bytes
        return layer.bytes_per_token // layer.head_dim * (cdiv(layer.head_dim, step) * step)

    per_token = sum(entry_bytes(layer) for layer in geometry.layers if layer.owns_cache) // tp
    return KvLayout(
        groups=[KvGroup(kind="full", window=None, block_size=block_size, layers=1)],
        page_bytes=block_size * per_token,
        group_size=1,
    )
