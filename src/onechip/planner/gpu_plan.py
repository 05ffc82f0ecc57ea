"""The KV pool, concurrency, token line and fit verdict of a vLLM GPU deployment (engine rules with
`memory_rules`): planner.gpu_memory's budget per GPU, laid out by planner.kv_groups' allocator.

Tensor parallelism on a GPU key: `--chip h100 --tensor-parallel-size 4` is four H100 cards (that is how
vLLM is told about a 4-GPU host). Per GPU: weights / TP, KV heads padded to a multiple of TP and split
(an MLA latent is not split), non-torch memory plus NCCL buffers at TP >= 2. vLLM sizes and logs the
pool per GPU; `--kv-cache-memory` is bytes per GPU (vLLM engine args: "Size of KV Cache per GPU").

The fit verdict is vLLM's start-up check (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory):
one max_model_len request, at the per-layer pages its specs need, must fit in the KV budget of a GPU;
on the V0 engine the pool's tokens must reach max_model_len.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from onechip.catalog.files import GpuMemoryRule
from onechip.planner.geometry import Geometry
from onechip.planner.gpu_memory import GpuBudget, activation_bytes, cuda_graph_count, gpu_budget
from onechip.planner.kv_groups import KvGroup, KvLayout, kv_layout
from onechip.schemas.plan import GpuMemoryBudget

GiB = 2**30
# vllm/engine/arg_utils.py get_batch_defaults (v1, OpenAI server): cards with >= 70 GiB default to
# 1024 sequences / 8192 tokens (the rule's figures); smaller cards to 256 / 2048.
LARGE_GPU_BYTES = 70 * GiB
SMALL_GPU_DEFAULTS = (256, 2048)


@dataclass(frozen=True)
class GpuPool:
    """Per-GPU figures of a planned vLLM GPU deployment (bytes, tokens)."""

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

    def concurrency(self, context: int) -> float:
        return self.num_blocks / self.layout.blocks_per_request(context, self.max_num_batched_tokens)

    def logged_tokens(self, rule: GpuMemoryRule, max_model_len: int) -> int:
        """The 'GPU KV cache size: N tokens' figure as `rule`'s versions print it."""
        if rule.kv_token_line == "capacity":
            return int(self.concurrency(max_model_len) * max_model_len)
        return self.tokens

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
            blocks_per_request=self.layout.blocks_per_request(max_model_len, self.max_num_batched_tokens),
            token_line=rule.kv_token_line,
        )


def _defaults(rule: GpuMemoryRule, visible_bytes: int, max_model_len: int) -> tuple[int, int]:
    if rule.default_max_num_batched_tokens is None:  # V0: the whole max-length prompt in one step
        return rule.default_max_num_seqs, max(max_model_len, 2048)
    if visible_bytes < LARGE_GPU_BYTES:
        return SMALL_GPU_DEFAULTS
    return rule.default_max_num_seqs, rule.default_max_num_batched_tokens


def one_request_bytes(geometry: Geometry, layout: KvLayout, max_model_len: int, batch: int, tp: int) -> int:
    """KV bytes per GPU one max_model_len request needs, summed over cache-owning layers at each layer's
    block size (vLLM's max_memory_usage_bytes over all layer specs)."""
    blocks = {(g.kind, g.window): g.block_size for g in layout.groups}
    total = 0
    for layer in geometry.layers:
        if not layer.owns_cache:
            continue
        key = (layer.attention_type, layer.sliding_window)
        block = blocks.get(key, layout.groups[0].block_size)
        if layer.sliding_window is None or key not in blocks:
            pages = -(-max_model_len // block)
        else:
            pages = -(-min(layer.sliding_window - 1 + batch, max_model_len) // block) + 1
        total += pages * block * (layer.bytes_per_token // tp)
    return total


def plan_gpu_pool(
    rule: GpuMemoryRule,
    *,
    text: Mapping[str, Any],
    geometry: Geometry,
    visible_bytes: int,
    utilization: float,
    weights_bytes: int,
    dtype_bytes: float,
    tensor_parallel_size: int,
    block_size: int,
    max_model_len: int,
    max_num_seqs: int | None,
    max_num_batched_tokens: int | None,
    kv_cache_memory_bytes: int | None,
    measured_overhead_bytes: int | None = None,
) -> GpuPool:
    """The KV pool per GPU under `rule` (module docstring). Bytes in: weights total; the rest per GPU.
    measured_overhead_bytes: non-torch + activation + CUDA graphs as a real boot of this deployment
    measured them (planner.calibration); it replaces the rule's estimates."""
    tp = tensor_parallel_size
    seqs_default, batch_default = _defaults(rule, visible_bytes, max_model_len)
    seqs = max_num_seqs or seqs_default
    batch = max_num_batched_tokens or batch_default
    act = activation_bytes(
        rule, text, dtype_bytes=dtype_bytes, tensor_parallel_size=tp, max_num_seqs=seqs, max_num_batched_tokens=batch
    )
    budget = gpu_budget(
        rule,
        visible_bytes=visible_bytes,
        utilization=utilization,
        weights_bytes=weights_bytes // tp,
        activation=act,
        tensor_parallel_size=tp,
        cuda_graphs=cuda_graph_count(
            max_num_seqs=seqs, max_num_batched_tokens=batch, max_capture_size=rule.cuda_graph_max_capture_size
        ),
    )
    if measured_overhead_bytes is not None:  # a stored boot of this deployment (planner.calibration)
        kv = budget.requested_bytes - budget.weights_bytes - measured_overhead_bytes
        budget = replace(
            budget, kv_bytes=kv, kv_low_bytes=kv, kv_high_bytes=kv, dominant_uncertainty="none (measured at boot)"
        )
    pool = kv_cache_memory_bytes if kv_cache_memory_bytes is not None else budget.kv_bytes
    # V0 has no hybrid allocator: one block table for all layers, sized by their summed bytes
    layout = kv_layout(geometry, block_size, tp) if rule.hybrid_groups else kv_layout_uniform(geometry, block_size, tp)
    blocks = layout.num_blocks(pool)
    per_request = layout.blocks_per_request(max_model_len, batch)
    low_high = (budget.kv_low_bytes, budget.kv_high_bytes) if kv_cache_memory_bytes is None else (pool, pool)
    low, high = (_printed(rule, layout, layout.num_blocks(b), per_request, max_model_len) for b in low_high)
    return GpuPool(
        budget=budget,
        layout=layout,
        pool_bytes_per_gpu=pool,
        num_blocks=blocks,
        tokens=layout.tokens(blocks),
        max_num_batched_tokens=batch,
        max_num_seqs=seqs,
        one_request_bytes=one_request_bytes(geometry, layout, max_model_len, batch, tp),
        tokens_range=(low, high),
        checks_tokens=not rule.hybrid_groups,
    )


def _printed(rule: GpuMemoryRule, layout: KvLayout, blocks: int, per_request: int, max_model_len: int) -> int:
    """The token line for `blocks` per GPU as `rule`'s versions print it (planner.kv_groups, step 5)."""
    if rule.kv_token_line == "capacity":
        return int(blocks / per_request * max_model_len)
    return layout.tokens(blocks)


def kv_layout_uniform(geometry: Geometry, block_size: int, tp: int) -> KvLayout:
    """The V0 block manager: every layer holds every token; a block spans all cache-owning layers."""
    per_token = sum(layer.bytes_per_token for layer in geometry.layers if layer.owns_cache) // tp
    return KvLayout(
        groups=[KvGroup(kind="full", window=None, block_size=block_size, layers=1)],
        page_bytes=block_size * per_token,
        group_size=1,
    )
