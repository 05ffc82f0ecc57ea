"""What the model runner allocates per request slot and per batched token, beside the weights and the KV cache.

tpu-inference (vllm-tpu), read at vllm-project/tpu-inference@b8692ff01fa1 (2026-08-22) and the v0.11.1, v0.12.0 and
v0.18.0 tags (the same allocation in each):
  - the block table: TPUModelRunner.__init__ -> _init_inputs builds InputBatch(max_num_reqs=max(dp x max_num_seqs,
    MIN_NUM_SEQS 8), ...) whose MultiGroupBlockTable holds one BlockTable per block size, each
    `jnp.zeros((max_num_reqs, max(cdiv(max_model_len, block_size), 1 + num_speculative_tokens)), dtype=jnp.int32)`
    on the device (tpu_inference/runner/tpu_runner.py, runner/input_batch.py, runner/block_table.py). The worker
    builds the runner in init_device, before load_model and determine_available_memory (worker/tpu_worker.py), so
    the table is in `total_hbm_used` when the KV cache is sized: it comes out of the KV pool, and a table larger
    than the chip fails the engine at start (XLA RESOURCE_EXHAUSTED) before any weight loads;
  - the token buckets: num_tokens_paddings runs from MIN_TOKEN_BUCKET up to the first power of two (the default
    VLLM_TPU_BUCKET_PADDING_GAP 0: runner/utils.py get_token_paddings) holding max_num_batched_tokens, and
    compile_or_warm_up_model precompiles every bucket after the KV cache is allocated
    (runner/compilation_manager.py: _precompile_backbone_text_only, _precompile_select_from_array build
    [num_tokens, hidden_size] arrays); the largest bucket's hidden states, one [bucket, hidden_size] array in the
    model dtype, are a floor under what it needs beside the KV cache.

vLLM on GPUs (what the runner holds per KV cache group on each GPU):
  - V1 model runner (vllm/v1/worker/block_table.py BlockTable, read in the 0.19.0 sdist; the same buffers in 0.11.0):
    `block_table` [max_num_reqs, cdiv(max_model_len, block_size)] int32 and `slot_mapping` [max_num_batched_tokens]
    int64, each a CpuGpuBuffer with a GPU half, one BlockTable per group (MultiGroupBlockTable). The runner builds
    them in GPUModelRunner.__init__ (InputBatch, vllm/v1/worker/gpu_model_runner.py), after the worker's init
    snapshot and before load_model, so memory_profiling (vllm/utils/mem_utils.py) counts them nowhere: its torch
    peak increase is measured from the profile's own start, its non-torch increase excludes torch's memory, the
    weights are load_model's own delta. They take no KV cache; they sit beside the memory
    --gpu-memory-utilization requests;
  - V2 model runner (vllm/v1/worker/gpu/block_table.py BlockTables, read in the 0.34.0 sdist): per group a
    StagedWriteTensor [max_num_reqs, max_num_blocks] int32 on the GPU and an input copy (torch.zeros_like) of it,
    and slot_mappings [groups, max_num_batched_tokens] int64, built in initialize_kv_cache (gpu/model_runner.py),
    after the KV cache is sized: beside the requested memory too;
  - the V0 engine keeps its block tables on the host (vllm/worker/model_runner.py builds them per step).
Not counted: the kernel-block split of a group whose block is larger than the attention kernel's
(BlockTable.blocks_per_kv_block widens a row; hybrid models' raised blocks) and the per-request sampling vectors
(max_num_reqs floats each).

Host memory, counted only where the profiler counts it (an integrated GPU, accelerators.json
profiler_counts_host_memory: vllm/utils/mem_utils.py MemorySnapshot.measure reads free memory as psutil's available
host memory there, so every host page the engine process touches between the worker's init snapshot and the end of
profile_run is 'consumed'): the runner's per-slot token buffers, built in the model runner's constructor, which
vllm/v1/worker/gpu_worker.py init_device calls after taking that snapshot (read in the 0.27.0 sdist):
  - V1 model runner: InputBatch.token_ids_cpu_tensor, torch.zeros((max_num_reqs, max_model_len), int32, on the
    host) and is_token_ids_tensor, the same shape in bool (vllm/v1/worker/gpu_input_batch.py of the 0.12.0, 0.19.0
    and 0.27.0 sdists; 0.10.0 has the int32 buffer only): 5 B per slot and position, zero-filled, so resident;
  - V2 model runner: RequestState.all_token_ids, a StagedWriteTensor (max_num_reqs, max_model_len) int32 with
    uva_instead_of_gpu=True, i.e. a pinned host UvaBuffer, torch.zeros(..., pin_memory=True) (vllm/v1/worker/gpu/
    states.py and buffer_utils.py of the 0.19.0, 0.27.0 and 0.27.1 sdists): 4 B per slot and position, which torch's
    pinned-host caching allocator rounds up to a power of two before cudaHostAlloc pins it whole
    (ATen/core/CachingHostAllocator.h CachingHostAllocatorImpl::allocate: 'size_t roundSize =
    c10::llvm::PowerOf2Ceil(size)'; torch 2.13.0 is vLLM 0.27.1's pin, requirements/cuda.txt). The V1 buffers are
    pin_memory=False: no rounding.
On a discrete GPU these take host memory only and enter no budget.
"""

from __future__ import annotations

from onechip.planner.geometry import cdiv, pow2_at_least

# tpu_inference/runner/tpu_runner.py MIN_NUM_SEQS (b8692ff01fa1)
TPU_MIN_NUM_SEQS = 8
_INT32_BYTES = 4
_INT64_BYTES = 8
_BOOL_BYTES = 1


def tpu_block_table_bytes(max_num_seqs: int, max_model_len: int, block_size: int) -> int:
    """Device bytes of tpu-inference's block table (module docstring): max(max_num_seqs, 8) rows of
    cdiv(max_model_len, block_size) int32 entries, one table (the runner builds it with the one configured block
    size, before the KV cache groups are known)."""
    return max(max_num_seqs, TPU_MIN_NUM_SEQS) * cdiv(max_model_len, block_size) * _INT32_BYTES


def tpu_largest_bucket_bytes(bucket_tokens: int, hidden_size: int, dtype_bytes: float) -> int:
    """One [bucket_tokens, hidden_size] activation in the model dtype: the floor of the largest precompiled bucket
    (module docstring)."""
    return int(bucket_tokens * hidden_size * dtype_bytes)


def gpu_block_table_bytes(
    block_sizes: list[int], *, max_num_seqs: int, max_num_batched_tokens: int, max_model_len: int, v2_runner: bool
) -> int:
    """GPU bytes of vLLM's block tables and slot mappings per GPU (module docstring): for each KV cache group of
    `block_sizes`, max_num_seqs x cdiv(max_model_len, block) int32 entries (twice on the V2 model runner: the
    table and its input copy) and max_num_batched_tokens int64 slots."""
    copies = 2 if v2_runner else 1
    rows = sum(cdiv(max_model_len, block) for block in block_sizes) * max_num_seqs * _INT32_BYTES * copies
    return rows + len(block_sizes) * max_num_batched_tokens * _INT64_BYTES


def host_token_buffer_bytes(*, max_num_seqs: int, max_model_len: int, v2_runner: bool) -> int:
    """Host bytes of the model runner's per-slot token buffers (module docstring: V1 InputBatch's int32 token ids and
    bool is-token flags; V2 RequestState's pinned int32 token ids, rounded up to a power of two as torch pins them),
    max_num_seqs x max_model_len entries; what an integrated GPU's profiler counts as consumed (GB10 at 256 x 40,960
    on the V2 runner: 40 MiB of token ids, 64 MiB pinned)."""
    if v2_runner:
        return pow2_at_least(max_num_seqs * max_model_len * _INT32_BYTES)
    return max_num_seqs * max_model_len * (_INT32_BYTES + _BOOL_BYTES)
