"""vLLM's hybrid KV-cache allocator on GPU (v1 engine): layers in groups that share one page size.

Read from vllm/v1/core/kv_cache_utils.py (0.10 - 0.19) and checked on the corpus's 0.19.0 Gemma 2/3 and
gpt-oss logs (tests/fixtures/bootlogs):
  1. one spec per cache-owning layer: (kind, window, bytes per token per GPU); page = block x bytes;
     page sizes that differ are unified by scaling the smaller specs' block size up
     (unify_kv_cache_spec_page_size); a page that does not divide the largest is padded to it, its block size kept,
     where the version pads (engines.json page_padding_rules: from 0.24.0 on backends that read pages by the block
     stride, from 0.29.0 every attention spec but MLA's; kv_layout's pad_pages), refused before;
  2. identical specs -> one group of every layer. Otherwise group_size = the fewest layers of a spec (the
     most, when that is < 1.5 x the fewest: 0.18.0 and later; < 1.25 x in 0.12.0 - 0.17.x; never before 0.12.0,
     read in the 0.9.2 - 0.11.2 wheels and sdists), for every model whose specs share one page size (engines.json
     `group_size_rules`, kv_layout's group_size_max_ratio); each spec splits into cdiv(layers, group_size) groups
     (_get_kv_cache_groups_uniform_page_size). An MLA model whose latent layers differ in size (a sparse-attention
     one where IndexCache layers build no lightning indexer, vLLM 0.24.0 on) is one UniformTypeKVCacheSpecs group
     (0.11.0 on: every spec full attention of one block size), page = the sum of its layers' pages;
  3. group_size tensors, each shared by one layer of every group: num_blocks = budget // page // group_size;
  4. blocks one request needs = sum over groups of its spec's pages: full cdiv(len, block), sliding
     cdiv(min(window - 1 + in_flight, len), block) + 1, chunked local (Llama 4)
     cdiv(min(chunk + in_flight, len), block) (geometry.window_blocks), in_flight = max_num_batched_tokens
     (x 2 from vLLM 0.26: max_in_flight_tokens, planner.gpu_plan); concurrency = num_blocks / that;
  5. the token line: 0.19 prints num_blocks // groups x smallest block ('groups'); later releases print
     int(concurrency x max_model_len) ('capacity'). The plan's own pool figure (KvLayout.capacity) is the
     tokens the pool holds when every group holds every token: one block index spans a block of each group,
     so a token takes 1 / block of a block in each group: num_blocks / sum(1 / block); equal to the 'groups'
     figure when the groups share one block size. They differ where page sizes were unified by block size
     (Gemma 4 on GPU: sliding 2 x 256 at block 32, full 2 x 512 at block 16, 'kv cache group sizes [32, 32,
     32, 32, 32, 16]' in tests/fixtures/bootlogs/mi300x-gemma4-e4b-len32768-v0311.log).
Hybrid attention + recurrent-state models (planner.recurrent; rules in engines.json `hybrid_rules`, read in
vllm/platforms/interface.py _align_hybrid_block_size and vllm/v1/kv_cache_interface.py MambaSpec, 0.20 - 0.32):
  the attention block size is raised so that one attention page holds at least one state,
  block = alignment x cdiv(state, alignment x attention bytes per token), or in mamba_cache_mode 'all'
  chunk x cdiv(cdiv(state, attention bytes per token), chunk) with chunk = lcm(mamba chunk size, alignment)
  (never lowered below the requested block); the state page is padded to the attention page, so every spec
  has one page size and steps 2-4 apply as they are, a state group taking 1 page per request ('none'),
  2 ('align') or cdiv(len, block) ('all'), plus N with N-token MTP speculative decoding; one request needs
  group_size x page x those pages (kv_cache_utils._max_memory_usage_bytes_from_groups); the state groups'
  block size is max_model_len in 'none' mode (MambaModelConfig: mamba_block_size = max_model_len), the
  attention block otherwise.
Attention-free models (Mamba, Mamba2, FalconMamba: IsAttentionFree, not IsHybrid, planner.recurrent): no attention
  page to raise or pad to; every layer holds one MambaSpec of the same state, so all of them are one group
  (_get_kv_cache_groups_uniform_spec) whose page is the state itself; num_blocks = budget // state // layers, and a
  request takes the state group's pages whatever its length, so the pool is a count of sequences (state slots).
Before vLLM 0.20 (HybridAttentionMambaModelConfig in vllm/model_executor/models/config.py of the 0.10.2 - 0.19.0
sdists and the 0.19.1 wheel): the same raising with the kernel alignment alone (a larger --block-size is kept as
given, not used as the alignment: user_block_aligns False), 32 instead of 16 for head_dim 256 on SM 10.x in
0.11.1 - 0.17.x; 0.10.2 - 0.11.0 turn prefix caching off for every hybrid (one state page per request),
0.11.1 - 0.14.x keep it only for a class with Mamba prefix caching ('all'), 'align' arrives in 0.15.0
(engines.json hybrid_rules).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from onechip.errors import ConfigError
from onechip.planner.geometry import FULL, MAMBA, Geometry, cdiv, window_blocks


@dataclass(frozen=True)
class KvGroup:
    """One allocator group: its spec and how many layers it holds."""

    kind: str
    window: int | None
    block_size: int
    layers: int
    state_pages: int | None = None  # a recurrent-state group: pages per request ('none' 1, 'align' 2; None 'all')


@dataclass(frozen=True)
class StateCache:
    """How the engine keeps recurrent states (hybrid models): mamba_cache_mode 'none' / 'align' / 'all', the
    backend's kernel block alignment, the model's Mamba chunk size ('all' mode) and max_model_len."""

    mode: str
    alignment: int
    chunk_tokens: int
    max_model_len: int
    speculative_blocks: int = 0  # MambaSpec.num_speculative_blocks: N more pages per request (MTP, N tokens)
    user_block_aligns: bool = True  # a larger --block-size is the alignment (False: 0.10.2 - 0.19.x source)
    block_within_batch: bool = False  # 'align' mode asserts block size <= max_num_batched_tokens (0.17.0 - 0.26.x)
    checkpoint_blocks: int = 0  # MambaSpec.num_prefill_checkpoint_blocks: more pages per request in 'align' mode
    checkpoint_alignment: int = 1  # 'align' mode: the block is also a multiple of the layers' checkpoint alignment
    checkpoint_buffer: bool = False  # GDN layers size a checkpoint buffer in the profile (gdn_checkpoint_buffer_bytes)


def hybrid_block_size(attention_bytes_per_token: int, state_bytes: int, block_size: int, cache: StateCache) -> int:
    """The attention block size vLLM sets so one attention page holds a state (module docstring)."""
    alignment = max(cache.alignment, block_size) if cache.user_block_aligns else cache.alignment
    alignment = math.lcm(alignment, cache.checkpoint_alignment)
    if cache.mode == "all":
        chunk = math.lcm(cache.chunk_tokens, alignment)
        needed = chunk * cdiv(cdiv(state_bytes, attention_bytes_per_token), chunk)
    else:
        needed = alignment * cdiv(state_bytes, alignment * attention_bytes_per_token)
    return max(block_size, needed)


@dataclass(frozen=True)
class KvLayout:
    """Groups, the common page size per GPU (bytes) and the layers per group (tensors in the pool)."""

    groups: list[KvGroup]
    page_bytes: int
    group_size: int
    speculative_blocks: int = 0  # extra state pages per request in 'all' mode (MTP)
    cache_block_size: int | None = None  # an attention-free layout: cache_config.block_size, not its groups' block

    def num_blocks(self, budget_bytes: int) -> int:
        """Blocks per GPU that `budget_bytes` per GPU holds (step 3)."""
        return max(0, budget_bytes) // self.page_bytes // self.group_size

    def blocks_per_request(self, context: int, max_num_batched_tokens: int) -> int:
        """Blocks one request of `context` tokens takes from the shared pool (step 4); `max_num_batched_tokens`:
        the tokens in flight a window holds beyond itself (vLLM >= 0.26: two batches, planner.gpu_plan)."""
        total = 0
        for group in self.groups:
            if group.kind == MAMBA:
                total += group.state_pages or cdiv(context, group.block_size) + self.speculative_blocks
            elif group.window is None:
                total += cdiv(context, group.block_size)
            else:
                total += window_blocks(group.kind, group.window, max_num_batched_tokens, context, group.block_size)
        return total

    def tokens(self, num_blocks: int, uniform_at_cache_block: bool = False) -> int:
        """Tokens the pool holds as the 'groups' token line counts them (step 5); `uniform_at_cache_block` (the
        rule's uniform_line_cache_block, vLLM 0.8 - 0.10.x): an attention-free layout's one spec prints
        num_blocks x cache_config.block_size (_get_kv_cache_config_uniform_type), not x its state block."""
        if uniform_at_cache_block and self.cache_block_size is not None:
            return num_blocks * self.cache_block_size
        return num_blocks // len(self.groups) * min(g.block_size for g in self.groups)

    def capacity(self, num_blocks: int) -> int:
        """Tokens the pool holds when every group holds every token (step 5): num_blocks / sum(1 / block) over
        the groups, recurrent-state groups counted at the smallest block as the 'groups' line counts them; the
        'groups' figure itself when every group has one block size."""
        smallest = min(g.block_size for g in self.groups)
        sizes = [smallest if g.kind == MAMBA else g.block_size for g in self.groups]
        if len(set(sizes)) == 1:
            return self.tokens(num_blocks)
        return int(Fraction(num_blocks) / sum(Fraction(1, size) for size in sizes))


def _state_pages(states: StateCache) -> int | None:
    """Pages one request's state takes in each state group: 1 ('none'), 2 + checkpoints ('align'), plus the
    speculative ones; None in 'all' mode (one a block of the context, KvLayout.blocks_per_request)."""
    if states.mode == "all":
        return None
    return {"none": 1, "align": 2 + states.checkpoint_blocks}[states.mode] + states.speculative_blocks


def _state_only_layout(state_bytes: int, layers: int, block_size: int, states: StateCache) -> KvLayout:
    """An attention-free model's cache (module docstring): every layer one MambaSpec of `state_bytes` per GPU, one
    group of all of them (kv_cache_utils: the uniform-spec path), page = the state, block max_model_len in 'none'
    mode (mamba_block_size), the block size otherwise."""
    block = states.max_model_len if states.mode == "none" else block_size
    group = KvGroup(kind=MAMBA, window=None, block_size=block, layers=layers, state_pages=_state_pages(states))
    return KvLayout(
        groups=[group],
        page_bytes=state_bytes,
        group_size=layers,
        speculative_blocks=states.speculative_blocks,
        cache_block_size=block_size,
    )


def kv_layout(
    geometry: Geometry,
    block_size: int,
    tensor_parallel_size: int,
    states: StateCache | None = None,
    group_size_max_ratio: float = 1.5,
    pad_pages: bool = False,
    on_stage: frozenset[int] | None = None,
) -> KvLayout:
    """Group the cache-owning layers of `geometry` (bytes totals over TP ranks) as vLLM does (steps 1-2);
    `states`: how recurrent states are kept, for a hybrid model (module docstring); `group_size_max_ratio`: the
    version's group sizing (engines.json group_size_rules; 1.5 from vLLM 0.18.0); `pad_pages`: an attention page
    that does not divide the largest is padded to it (undivided_pages; engines.json page_padding_rules).
    `on_stage`: the layer indices one pipeline stage holds, `geometry` being the whole model's: the groups (their
    specs, block sizes, page) are the whole model's and each keeps only this stage's layers, an empty one included
    (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs: global_kv_cache_groups from every worker's merged specs,
    then _project_kv_cache_groups_to_worker; read in the 0.19.0, 0.20.0, 0.25.0 and 0.27.1 sdists, and in
    kv_cache_planning.py of 0.34.0), so group_size is the most layers one group has on the stage while a request
    still takes pages in every group. None: the whole model on one stage. Raises ConfigError when page sizes cannot
    be unified (vLLM refuses such a model too) or the stage holds no cache."""
    tp = tensor_parallel_size
    specs: dict[tuple[str, int | None, int], int] = {}
    members: dict[tuple[str, int | None, int], list[int]] = {}  # each spec's layer indices, in model order
    for layer in geometry.layers:
        keys = []
        if layer.bytes_per_token and layer.owns_cache:
            keys.append((layer.attention_type, layer.sliding_window, layer.bytes_per_token // tp))
        if layer.state_bytes:  # a Falcon-H1 layer holds both: two vLLM layers (attention and mixer)
            keys.append((MAMBA, None, layer.state_bytes // tp))
        for key in keys:
            specs[key] = specs.get(key, 0) + 1
            members.setdefault(key, []).append(layer.index)
    if not specs:
        raise ConfigError("model config: no layer owns a KV cache")
    owners = [layer for layer in geometry.layers if layer.bytes_per_token and layer.owns_cache]

    def here(indices: list[int]) -> int:  # how many of `indices` this stage holds
        return len(indices) if on_stage is None else len(on_stage.intersection(indices))

    mla_only = all(key[0] != MAMBA for key in specs)  # an MLA hybrid (Kimi-Linear) is unified as a hybrid below
    if len(specs) > 1 and mla_only and all(layer.latent and layer.attention_type == FULL for layer in owners):
        # MLA latents of different sizes (a sparse model's layers with and without a lightning indexer): one
        # UniformTypeKVCacheSpecs group (vLLM 0.11.0 on, kv_cache_utils.get_kv_cache_groups: every spec a
        # FullAttentionSpec of one block size), page = the sum of the layers' pages, one tensor
        # (projected: the stage's layers' pages)
        page = block_size * sum(layer.bytes_per_token // tp for layer in owners if here([layer.index]))
        return KvLayout(groups=[KvGroup(kind=FULL, window=None, block_size=block_size, layers=1)], page_bytes=page,
                        group_size=1)  # fmt: skip
    attention = [key for key in specs if key[0] != MAMBA]
    if not attention:  # attention-free (Mamba): the state is the page, unpadded
        if states is None or len(specs) != 1:
            raise ConfigError("attention-free model: one recurrent-state spec is modelled")
        (((_, _, state), _),) = specs.items()
        return _state_only_layout(state, _stage_layers(here(next(iter(members.values())))), block_size, states)
    if len(attention) < len(specs):  # hybrid: the attention block is raised to hold a state
        if states is None or len(attention) != 1 or len(specs) != 2:
            raise ConfigError("hybrid model: one attention spec and one recurrent-state spec are modelled")
        block_size = hybrid_block_size(attention[0][2], next(k[2] for k in specs if k[0] == MAMBA), block_size, states)
    page = max(block_size * per_token for (kind, _, per_token) in specs if kind != MAMBA)
    blocks: dict[tuple[str, int | None, int], int] = {}
    for key in specs:
        if key[0] == MAMBA and states is not None:  # MambaSpec.block_size: mamba_block_size
            blocks[key] = states.max_model_len if states.mode == "none" else block_size
            continue
        if page % (block_size * key[2]) == 0:
            blocks[key] = page // key[2]
        elif pad_pages and not any(layer.latent for layer in owners):  # page_size_padded: the block is kept
            blocks[key] = block_size
        else:
            raise ConfigError(f"KV page sizes {sorted({block_size * k[2] for k in specs})} cannot be unified")
    counts = list(specs.values())
    fewest, most = min(counts), max(counts)
    group_size = most if (len(specs) == 1 or most < fewest * group_size_max_ratio) else fewest
    groups: list[KvGroup] = []
    for key, count in specs.items():
        n_groups = cdiv(count, group_size)
        for i in range(n_groups):  # layers[i::num_groups] (_get_kv_cache_groups_uniform_page_size)
            size = here(members[key][i::n_groups])
            pages = _state_pages(states) if key[0] == MAMBA and states is not None else None
            groups.append(KvGroup(kind=key[0], window=key[1], block_size=blocks[key], layers=size, state_pages=pages))
    spec = states.speculative_blocks if states is not None else 0
    group_size = _stage_layers(max(g.layers for g in groups))
    return KvLayout(groups=groups, page_bytes=page, group_size=group_size, speculative_blocks=spec)


def _stage_layers(most: int) -> int:
    """`most`, the most layers one group holds on a pipeline stage; a stage holding none is refused (vLLM asserts
    'group_size must be greater than 0', get_kv_cache_config_from_groups)."""
    if most < 1:
        raise ConfigError("a pipeline stage holds no layer with a KV cache or recurrent state; not modelled")
    return most


def undivided_pages(geometry: Geometry, block_size: int, tensor_parallel_size: int) -> tuple[list[int], int]:
    """The attention pages per GPU (bytes, at `block_size`) of `geometry` that do not divide its largest attention
    page, and that largest page: what vLLM pads or refuses (module docstring, step 1). ([], page) when every page
    divides it; recurrent states, padded to the attention page in any release, are not counted."""
    tp = tensor_parallel_size
    pages = {
        block_size * (layer.bytes_per_token // tp)
        for layer in geometry.layers
        if layer.bytes_per_token and layer.owns_cache
    }
    largest = max(pages, default=0)
    return sorted(p for p in pages if largest % p), largest
