"""vLLM's hybrid KV-cache allocator on GPU (v1 engine): layers in groups that share one page size.

Read from vllm/v1/core/kv_cache_utils.py (0.10 - 0.19) and checked on the corpus's 0.19.0 Gemma 2/3 and
gpt-oss logs (tests/fixtures/bootlogs):
  1. one spec per cache-owning layer: (kind, window, bytes per token per GPU); page = block x bytes;
     page sizes that differ are unified by scaling the smaller specs' block size up
     (unify_kv_cache_spec_page_size);
  2. identical specs -> one group of every layer. Otherwise group_size = the fewest layers of a spec (the
     most, when that is < 1.25 x the fewest); each spec splits into cdiv(layers, group_size) groups
     (_get_kv_cache_groups_uniform_page_size);
  3. group_size tensors, each shared by one layer of every group: num_blocks = budget // page // group_size;
  4. blocks one request needs = sum over groups of its spec's pages: full cdiv(len, block), sliding
     cdiv(min(window - 1 + in_flight, len), block) + 1, chunked local (Llama 4)
     cdiv(min(chunk + in_flight, len), block) (geometry.window_blocks), in_flight = max_num_batched_tokens
     (x 2 from vLLM 0.26: max_in_flight_tokens, planner.gpu_plan); concurrency = num_blocks / that;
  5. the token line: 0.19 prints num_blocks // groups x smallest block ('groups'); later releases print
     int(concurrency x max_model_len) ('capacity').
"""

from __future__ import annotations

from dataclasses import dataclass

from onechip.errors import ConfigError
from onechip.planner.geometry import Geometry, window_blocks


@dataclass(frozen=True)
class KvGroup:
    """One allocator group: its spec and how many layers it holds."""

    kind: str
    window: int | None
    block_size: int
    layers: int


@dataclass(frozen=True)
class KvLayout:
    """Groups, the common page size per GPU (bytes) and the layers per group (tensors in the pool)."""

    groups: list[KvGroup]
    page_bytes: int
    group_size: int

    def num_blocks(self, budget_bytes: int) -> int:
        """Blocks per GPU that `budget_bytes` per GPU holds (step 3)."""
        return max(0, budget_bytes) // self.page_bytes // self.group_size

    def blocks_per_request(self, context: int, max_num_batched_tokens: int) -> int:
        """Blocks one request of `context` tokens takes from the shared pool (step 4); `max_num_batched_tokens`:
        the tokens in flight a window holds beyond itself (vLLM >= 0.26: two batches, planner.gpu_plan)."""
        total = 0
        for group in self.groups:
            if group.window is None:
                total += -(-context // group.block_size)
            else:
                total += window_blocks(group.kind, group.window, max_num_batched_tokens, context, group.block_size)
        return total

    def tokens(self, num_blocks: int) -> int:
        """Tokens the pool holds as the 'groups' token line counts them (step 5)."""
        return num_blocks // len(self.groups) * min(g.block_size for g in self.groups)


def kv_layout(geometry: Geometry, block_size: int, tensor_parallel_size: int) -> KvLayout:
    """Group the cache-owning layers of `geometry` (bytes totals over TP ranks) as vLLM does (steps 1-2).
    Raises ConfigError when page sizes cannot be unified (vLLM refuses such a model too)."""
    specs: dict[tuple[str, int | None, int], int] = {}
    for layer in geometry.layers:
        if layer.owns_cache:
            key = (layer.attention_type, layer.sliding_window, layer.bytes_per_token // tensor_parallel_size)
            specs[key] = specs.get(key, 0) + 1
    if not specs:
        raise ConfigError("model config: no layer owns a KV cache")
    page = max(block_size * per_token for (_, _, per_token) in specs)
    blocks: dict[tuple[str, int | None, int], int] = {}
    for key in specs:
        if page % (block_size * key[2]):
            raise ConfigError(f"KV page sizes {sorted({block_size * k[2] for k in specs})} cannot be unified")
        blocks[key] = page // key[2]
    counts = list(specs.values())
    fewest, most = min(counts), max(counts)
    group_size = most if (len(specs) == 1 or most < fewest * 1.25) else fewest
    groups: list[KvGroup] = []
    for key, count in specs.items():
        n_groups = -(-count // group_size)
        for i in range(n_groups):
            size = len(range(i, count, n_groups))
            groups.append(KvGroup(kind=key[0], window=key[1], block_size=blocks[key], layers=size))
    return KvLayout(groups=groups, page_bytes=page, group_size=max(g.layers for g in groups))
