"""Replaying the client protocol a measured grid was run with (catalog MeasuredGrid.client), so that a fit and a
prediction compare like with like: the same requests, started the same way, read by the same tok/s definition.

    replay(grid, plan) -> {(context, clients): CellClient}    how the grid's client ran each cell
    CellClient.shapes(context, clients)                        the scheduler hook for its prompts' cached tokens

What vllm bench serve does (vllm 0.26.0 sdist, vllm/benchmarks/serve.py benchmark()): it sends one test request
(input_requests[0], the cell's prompt 0) and waits for it, then creates one task per request at once, each behind
asyncio.Semaphore(max_concurrency) with the request rate infinite: the first max-concurrency requests are sent
together and each later one, in order, when a slot frees; num_prompts requests in all (sim.scheduler
CellSimulation's `num_prompts` pool). Its output tok/s is whole-run: output tokens / (last completion - the
benchmark's start).

Prompts that repeat: the random dataset draws prompt i as (offset_i + i + arange(input_len)) % vocab, with offset_i
from numpy's default_rng(seed) (datasets/utils.py get_sampling_params; datasets.py RandomDataset
.generate_token_sequence). The lengths drawn before the offsets consume no draws at range ratio 0 (a one-value
range), so offset_i is the same for any num_prompts and input_len: two cells with one seed send the same prompt i,
the shorter a prefix of the longer (measured with Gemma 3's tokenizer, benchmarks/random_prefix_reuse.py: the
re-encode round-trips, prompt k at 4,096 tokens is the first 4,096 of prompt k at 8,192 and 16,000; a tokenizer
whose re-encode pads may change a few tail tokens, not modelled). With prefix caching on (vLLM's default), a later
cell reuses what an earlier cell of the same server run left cached. The cache is replayed as
sim.routing.PrefixCache does for agent sessions: requests in send order, whole blocks of at most the prompt minus
one token hit, every block a request fills (prompt and output) cached, least recently used evicted past the plan's
pool, a request's blocks freed tail first (its prompt's head evicted last). What it leaves out: blocks held by
running requests cannot be evicted in vLLM, and a wave of requests sent together is looked up in send order, not as
the scheduler admits it.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from onechip.catalog.files import ClientProtocol, MeasuredGrid
from onechip.schemas import Plan
from onechip.sim.routing import PrefixCache
from onechip.sim.scheduler import RequestShape, RequestShapes

Cell = tuple[int, int]


@dataclass(frozen=True)
class CellClient:
    """How a client ran one cell: a pool of `num_prompts` requests taken by whichever stream is free (None: each
    stream sends BenchConfig's requests, as `onechip bench` does), stream starts (CellSimulation start_spread_s:
    0.0 together, None staggered), whether its tok/s is whole-run, and the tokens of prompt k the prefix cache
    held when it was sent (empty: none)."""

    num_prompts: int | None
    start_spread_s: float | None
    whole_run: bool
    cached_tokens: tuple[int, ...] = ()

    def shapes(self, context: int, clients: int) -> RequestShapes | None:
        """The scheduler hook giving prompt k its cached tokens (None when nothing is cached). With a pool
        (`num_prompts`) the scheduler numbers requests by prompt; without one each of the `clients` streams numbers
        its own (CellSimulation._send), and a stream's request `seq` is prompt seq x clients + stream: the prompt the
        pool would send it, its streams sent together and each taking the next prompt as its last request ends."""
        if not any(self.cached_tokens):
            return None
        cached, pooled = self.cached_tokens, self.num_prompts is not None

        def shape(stream: int, seq: int) -> RequestShape:
            k = seq if pooled else seq * clients + stream
            return RequestShape(context, cached[k] if k < len(cached) else 0)

        return shape


def replay(grid: MeasuredGrid, plan: Plan) -> dict[Cell, CellClient]:
    """Every cell of `grid` as its client ran it on `plan`'s engine (its KV pool bounds the prefix cache). Raises
    ValueError for a grid with no recorded protocol, or one whose requests per cell cannot be told."""
    protocol = grid.client
    if protocol is None:
        raise ValueError(f"grid {grid.name} records no client protocol")
    output = grid.output_tokens or 0
    cells = {(c.context_tokens, c.clients): _num_prompts(grid, protocol, c.clients, c.num_prompts) for c in grid.cells}
    cached: dict[Cell, tuple[int, ...]] = {}
    runs = [[_cell(name) for name in run] for run in protocol.run_order.value]
    alone = [[cell] for cell in cells if not any(cell in run for run in runs)]
    for run in runs + alone:
        cache = PrefixCache(plan.num_blocks, plan.block_size)
        for cell in run:
            cached[cell] = _serve(cache, protocol, cell, cells[cell], output, plan.block_size)
    start = start_spread(grid)
    whole = protocol.tok_per_s.value == "whole_run"
    return {cell: CellClient(n, start, whole, cached[cell]) for cell, n in cells.items()}


def start_spread(grid: MeasuredGrid, unrecorded: float | None = None) -> float | None:
    """How `grid`'s client started its streams, as CellSimulation's start_spread_s: 0.0 where it records them sent
    together (vllm bench serve at request rate inf: every task created at once behind the max-concurrency
    semaphore), None (drawn over one request's duration) where it records them staggered, `unrecorded` where the
    grid records no client protocol."""
    if grid.client is None:
        return unrecorded
    return 0.0 if grid.client.start.value == "simultaneous" else None


def _num_prompts(grid: MeasuredGrid, protocol: ClientProtocol, clients: int, stated: int | None) -> int:
    """Requests one cell sent: the protocol's count for every cell, else the cell's, else the grid's per client."""
    n = protocol.num_prompts.value or stated or (grid.requests_per_client or 0) * clients
    if not n:
        raise ValueError(f"grid {grid.name}: requests per cell not stated ({clients} clients)")
    return n


def _cell(name: str) -> Cell:
    context, clients = name.split("x")
    return int(context), int(clients)


def _serve(
    cache: PrefixCache, protocol: ClientProtocol, cell: Cell, num_prompts: int, output: int, block: int
) -> tuple[int, ...]:
    """Run one cell's requests through `cache` in send order (the test request, prompt 0, first); the tokens of
    each prompt k it held. Prompt blocks are keyed by the seed and k (the same in every cell of one seed), a cell
    with its own seed by the cell; output blocks are every request's own."""
    context = cell[0]
    name = f"{context}x{cell[1]}"
    seed = protocol.seed.value
    own = seed is None or name in protocol.cells_with_own_seed
    prompts: Hashable = ("cell", name) if own else ("seed", seed)
    hits = []
    for sent, k in enumerate([0, *range(num_prompts)]):
        keys: list[Hashable] = [(prompts, k, j) for j in range(context // block)]
        hit = cache.hit_tokens(keys, context) if protocol.prefix_caching.value else 0
        filled = (context + output - 1) // block
        # a finished request's blocks are freed tail first (vllm 0.26.0 v1/core/single_type_kv_cache_manager.py
        # free), so its prompt's head is evicted last
        cache.insert(list(reversed(keys + [("output", name, sent, j) for j in range(len(keys), filled)])))
        if sent:  # the test request is not measured
            hits.append(hit)
    return tuple(hits)
