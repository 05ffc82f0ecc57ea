"""Cross-check a Plan against the allocation lines of a vLLM boot log (`onechip plan ... --against LOG`).

Lines read (each as printed by the builds the seed article and DESIGN.md recorded):
  TPU  `Memory statistics | total_hbm_limit_gb=15.75GiB | total_hbm_limit_cap_gb=14.49GiB
        | total_hbm_used_gb=8.97GiB | total_hbm_avail_gb=5.52GiB`
  TPU  `regular_attn_shape=(num_blocks, (64, 1, 2, 256))` (Init kv-cache: block, KV heads, K/V slots,
       head dim)
  TPU  `Hybrid KV cache layout: num_kv_cache_groups=1`
  all  `(CPU|GPU|TPU) KV cache size: 46,592 tokens`,
       `Maximum concurrency for 8,192 tokens per request: 5.69x`
  all  `vLLM API server version 0.32.0` (or `version=`)
Known lies flagged: the shape line is a first-wins sample from layer 0, so on a hybrid model its head dim
says nothing about the other layers (seed article fact 4); an fp8 KV flag whose capacity did not change
(seed article '--kv-cache-dtype': 1.000x). The token line's meaning changed between vLLM versions for
hybrid models, so it is treated as derived and the version is recorded with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from onechip.schemas.plan import CrossCheck, Plan

_GIB = 2**30
_MEMSTAT = re.compile(r"total_hbm_(limit|limit_cap|used|avail)_gb=([\d.]+)\s*GiB")
_SHAPE = re.compile(r"regular_attn_shape=\(num_blocks,\s*\((\d+),\s*(\d+),\s*(\d+),\s*(\d+)\)\)")
_GROUPS = re.compile(r"num_kv_cache_groups=(\d+)")
_TOKENS = re.compile(r"\b(?:CPU|GPU|TPU|XPU)? ?KV cache size: ([\d,]+) tokens")
_CONC = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_VERSION = re.compile(r"(?:vLLM API server version|vllm version|version=)\s*v?(\d+\.\d+[\w.+-]*)", re.I)
_FP8 = re.compile(r"kv_cache_dtype['\"]?\s*[:=]\s*['\"]?(fp8\w*)")


@dataclass
class AllocationLog:
    """What a boot log said about memory and the KV cache. GiB figures are as printed (2 decimals)."""

    hbm_gib: dict[str, float] = field(default_factory=dict)  # limit, limit_cap, used, avail
    shape: tuple[int, int, int, int] | None = None  # (block, kv heads, K/V slots, head dim)
    kv_cache_groups: int | None = None
    kv_tokens: int | None = None
    concurrency_context: int | None = None
    concurrency: float | None = None
    version: str | None = None
    fp8_kv: str | None = None


def parse_allocation_log(text: str) -> AllocationLog:
    """Read the allocation lines out of a vLLM boot log; the last occurrence of each wins (a restart
    inside one log file reports again)."""
    log = AllocationLog()
    for line in text.splitlines():
        for kind, value in _MEMSTAT.findall(line):
            log.hbm_gib[kind] = float(value)
        if m := _SHAPE.search(line):
            log.shape = (int(m[1]), int(m[2]), int(m[3]), int(m[4]))
        if m := _GROUPS.search(line):
            log.kv_cache_groups = int(m[1])
        if m := _TOKENS.search(line):
            log.kv_tokens = int(m[1].replace(",", ""))
        if m := _CONC.search(line):
            log.concurrency_context = int(m[1].replace(",", ""))
            log.concurrency = float(m[2])
        if log.version is None and (m := _VERSION.search(line)):
            log.version = m[1]
        if m := _FP8.search(line):
            log.fp8_kv = m[1]
    return log


def planned_log_tokens(plan: Plan) -> int:
    """The token figure the plan expects the engine's 'KV cache size' line to print (plan.kv_tokens_logged;
    plans stored before that field existed compare against the pool figure, kv_tokens)."""
    return plan.kv_tokens_logged if plan.kv_tokens_logged is not None else plan.kv_tokens


def crosscheck_log(plan: Plan, text: str) -> CrossCheck:
    """Planned vs what the boot log `text` reported. Tokens must match exactly and concurrency to 0.01;
    the KV pool is compared at the log's 2-decimal GiB precision (+-0.005 GiB). Known lies become flags."""
    log = parse_allocation_log(text)
    notes: list[str] = []
    flags: list[str] = []
    agrees = True
    tokens = log.kv_tokens  # TPU builds may print only the memory line: then the pool is compared
    planned_tokens = planned_log_tokens(plan)
    if tokens is not None and tokens != planned_tokens:
        agrees = False
        notes.append(f"KV tokens: planned {planned_tokens:,}, reported {tokens:,}")
    context = log.concurrency_context or plan.max_model_len
    known = {c.context_tokens: c.max_concurrency for c in plan.concurrency}
    planned_conc = known.get(context, plan.kv_tokens / (-(-context // plan.block_size) * plan.block_size))
    if log.concurrency is not None and abs(round(planned_conc, 2) - log.concurrency) > 0.01 + 1e-9:
        agrees = False
        notes.append(f"concurrency at {context:,}: planned {planned_conc:.2f}x, "
                     f"reported {log.concurrency:.2f}x")
    reported_pool = None
    if "avail" in log.hbm_gib:
        reported_pool = int(log.hbm_gib["avail"] * _GIB)
        if abs(plan.kv_pool_bytes / _GIB - log.hbm_gib["avail"]) > 0.005 + 1e-9:
            agrees = False
            notes.append(f"KV pool: planned {plan.kv_pool_bytes / _GIB:.2f} GiB, reported "
                         f"{log.hbm_gib['avail']:.2f} GiB")
    if log.shape is not None:
        block, _, _, head_dim = log.shape
        if block != plan.block_size:
            agrees = False
            notes.append(f"block size: planned {plan.block_size}, reported {block}")
        dims = {layer.head_dim for layer in plan.layers if layer.owns_cache}
        if len(dims) > 1:
            flags.append("shape-line-layer0")
            notes.append(f"the shape line shows head dim {head_dim} sampled from layer 0; cached layers have "
                         f"head dims {sorted(dims)} - size KV from the geometry, not that line")
    # fp8 elements are 1 B; a shape with 4 K/V slots per head (vs 2 at bf16) is the word-aligned layout
    # that keeps bytes per block unchanged (seed article: (32,1,2,256) bf16 vs (32,1,4,256) fp8).
    same_tokens = tokens is not None and plan.kv_cache_dtype == "auto" and tokens == plan.kv_tokens
    padded = log.shape is not None and log.shape[2] >= 4
    if log.fp8_kv and (same_tokens or padded):
        flags.append("fp8-unchanged-capacity")
        notes.append(f"the engine ran kv_cache_dtype={log.fp8_kv} but its capacity is that of bf16 "
                     "(1.000x): narrowing the element bought padding, not room")
    if plan.layers and any(layer.sliding_window for layer in plan.layers) and log.kv_tokens is not None:
        flags.append("token-line-derived")
        notes.append(f"hybrid model: the KV token line is derived and its meaning changed between vLLM "
                     f"versions (this log: {log.version or 'version not logged'})")
    if tokens is None and reported_pool is None:
        agrees = False
        notes.append("the log reported neither KV tokens nor the KV pool")
    return CrossCheck(planned_kv_tokens=planned_tokens, reported_kv_tokens=tokens,
                      planned_max_concurrency=planned_conc, reported_max_concurrency=log.concurrency,
                      planned_kv_pool_bytes=plan.kv_pool_bytes, reported_kv_pool_bytes=reported_pool,
                      engine_version=log.version, flags=flags, agrees=agrees,
                      note="; ".join(notes) if notes else "planned and reported agree")
