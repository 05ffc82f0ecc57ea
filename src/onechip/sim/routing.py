"""Agent sessions on N replicas behind a routing policy: which replica each turn reaches, and how much of its
prompt that replica's prefix cache already holds.

    route(shape, replicas, policy, num_blocks, block_size, seed) -> Routing
                                                             every request in send order, with its replica and
                                                             cached tokens; the hit shares a bench would report
    Routing.shapes(streams)                                  the per-request hook sim.scheduler takes (the
                                                             prefill it skips, the shared prefix's blocks)
    served(routings) -> [ReplicaServed]                      what each engine served, as bench reads /metrics

The workload is bench's agent workload (bench.agent, bench.worker.sessions): each stream warms up with
single-turn prompts (unique: they reuse nothing), then runs sessions whose turn t sends the shared system
prompt (`context_tokens`, tools included) and the history so far. Turn t's prompt is therefore a prefix of turn
t+1's (the replayed call follows the generation prompt the engine saw), and sessions share only the system
prompt. The answer's first tokens are the call the next turn sends back, as in an agent loop, where the
history holds what the model wrote: the blocks they complete are hit by the next turn (up to `call_tokens` of
the answer; the rest is the session's own and never hit). Bench replays a fixed call rather than the answer;
the embedded engine's answer matched it: at --contexts 512 turn 4 had 896 cached tokens, 7 whole blocks of
128, the 7th ending with 7 answer tokens of turn 3 (889-token prompt; benchmarks/agent_prefix_cache.py).

The prefix cache of one replica follows vLLM V1 (vllm/v1/core/kv_cache_manager.py, block_pool.py, v0.32):
whole blocks are hashed by their content and the chain before them; a request reuses its longest run of
cached blocks from the start, at most its prompt minus one token (`max_cache_hit_length = num_tokens - 1`);
blocks are cached when allocated, so a request scheduled just after another with the same prefix already
hits; freed blocks stay cached until evicted least recently used, in a pool of `num_blocks`.

The policies are vllm-router 0.1.17's (`vllm-router --help` defaults):
- round_robin: the next replica in turn for each request, warm-ups included;
- random: a uniformly drawn replica (seeded);
- cache_aware: when the load is imbalanced (max - min in-flight requests > 64 and max > 1.5 x min) the least
  loaded replica; else a turn whose earlier turn's text is more than `cache_threshold` (0.3) of its own goes
  to the replica that served that turn (the router's prefix tree of request texts), and a session's first
  turn and warm-ups go to the least loaded replica (the first of equals). That a first turn is placed by load,
  not by the system prompt other sessions share, is what the router did with engines that take seconds per
  request: 10 / 10 requests on each of two embedded replicas with 4 clients x 4 turns, 13 / 15 with 6 turns
  (benchmarks/replicas_embedded.sh, 2026-12-01/02). It depends on the requests overlapping: with fake
  workers that answer at once, 0.1.17 sent every session to one replica (0 / 20), and with 0.1 s per token
  4 / 16 (tests/fakes/vllm_server.py behind the real router, same workload): a new session then matches
  the system prompt an earlier, finished one left in the router's tree. Not modelled.

What is assumed, not modelled: closed-loop streams in step (every stream's turn t reaches the router before
any turn t+1), in a seeded random order within the round (the order in which the previous turns ended);
vLLM's prompt lengths from the workload's token counts plus the chat template's per-message tokens (below:
measured with SmolLM2's tokenizer; another tokenizer moves block boundaries by a few tokens).
"""

from __future__ import annotations

import random
import statistics
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field

from onechip.schemas.bench import ReplicaServed
from onechip.schemas.replicas import MODELLED_POLICIES, RouterPolicy
from onechip.sim.scheduler import RequestShape, RequestShapes

# Tokens the chat template and the workload's text add beyond the nominal counts, per turn (ChatML as
# SmolLM2's template writes it): the user message (its "00000-0000-000." numbers and role markers) and the
# replayed call with its tool result. From the embedded engine's usage.prompt_tokens on agent turns
# (benchmarks/agent_prefix_cache.py docstring, measured 2026-12-01: 563, 726, 889, 1,052 prompt tokens at
# --contexts 512, user 32, call 24, result 64): 563 - 512 - 32 = 19; 163 - (32 + 19) - (24 + 64) = 24.
USER_OVERHEAD_TOKENS = 19
HISTORY_OVERHEAD_TOKENS = 24
# vllm-router 0.1.17 `--help`: --cache-threshold 0.3, --balance-abs-threshold 64, --balance-rel-threshold 1.5
CACHE_THRESHOLD = 0.3
BALANCE_ABS_THRESHOLD = 64
BALANCE_REL_THRESHOLD = 1.5


@dataclass(frozen=True)
class AgentShape:
    """The agent workload of one bench cell (BenchConfig's agent fields), in tokens."""

    context_tokens: int
    clients: int
    turns: int
    sessions_per_client: int
    user_tokens: int
    call_tokens: int
    result_tokens: int
    output_tokens: int
    warmup_requests: int

    def prompt_tokens(self, turn: int) -> int:
        """Turn `turn`'s prompt: the system prompt, turn + 1 user messages, `turn` replayed calls and results."""
        user = self.user_tokens + USER_OVERHEAD_TOKENS
        return (
            self.context_tokens
            + (turn + 1) * user
            + turn * (self.call_tokens + self.result_tokens + HISTORY_OVERHEAD_TOKENS)
        )

    @property
    def warmup_tokens(self) -> int:
        """A warm-up request: one user message of `user_tokens` filler (bench.runner's agent warm-up)."""
        return self.user_tokens + USER_OVERHEAD_TOKENS

    @property
    def per_stream(self) -> int:
        """Requests one stream sends: warm-ups, then every turn of every session."""
        return self.warmup_requests + self.sessions_per_client * self.turns


@dataclass(frozen=True)
class Routed:
    """One request as routed: who sent it, where it went, how much of its prompt was cached there."""

    stream: int
    seq: int
    replica: int
    prompt_tokens: int
    cached_tokens: int
    shared_tokens: int
    session: int | None = None
    turn: int | None = None

    @property
    def warmup(self) -> bool:
        return self.session is None


class PrefixCache:
    """One replica's prefix cache: whole blocks keyed by content, least recently used evicted past `num_blocks`."""

    def __init__(self, num_blocks: int, block_size: int) -> None:
        self.num_blocks, self.block_size = num_blocks, block_size
        self.blocks: OrderedDict[Hashable, None] = OrderedDict()

    def hit_tokens(self, keys: list[Hashable], prompt_tokens: int) -> int:
        """Tokens served from the cache: the longest cached run of `keys` from the start, whole blocks within
        prompt_tokens - 1. The blocks hit become the most recently used."""
        hit = 0
        while hit < len(keys) and (hit + 1) * self.block_size <= prompt_tokens - 1 and keys[hit] in self.blocks:
            self.blocks.move_to_end(keys[hit])
            hit += 1
        return hit * self.block_size

    def insert(self, keys: list[Hashable]) -> None:
        for key in keys:
            self.blocks[key] = None
            self.blocks.move_to_end(key)
        while len(self.blocks) > self.num_blocks:
            self.blocks.popitem(last=False)


@dataclass
class Routing:
    """Every request of one simulated run, in the order the router saw them."""

    replicas: int
    policy: RouterPolicy
    requests: list[Routed] = field(default_factory=list)

    def cached_share(self) -> float | None:
        """Cached / prompt tokens over the measured requests (bench's cached_share, from usage)."""
        return _share([r for r in self.requests if not r.warmup])

    def server_hit_rate(self) -> float | None:
        """Hits / queries over every request, warm-ups included (vllm:prefix_cache_hits / _queries)."""
        return _share(self.requests)

    def requests_by_replica(self) -> list[int]:
        return [sum(1 for r in self.requests if r.replica == k) for k in range(self.replicas)]

    def shapes(self, streams: list[int]) -> RequestShapes:
        """The scheduler hook for one engine serving `streams` of the routed run as its closed-loop streams
        0, 1, ...: each sends that stream's requests, with the prompts and cached tokens routing gave them
        (where a round-robin turn went elsewhere, its miss is simulated here: replicas are alike and loaded
        alike, so an engine's streams carry the run's mix of hits and misses)."""
        by_key = {(r.stream, r.seq): r for r in self.requests}

        def shape(stream: int, seq: int) -> RequestShape:
            r = by_key[(streams[stream], seq)]
            return RequestShape(r.prompt_tokens, r.cached_tokens, r.shared_tokens, r.session, r.turn)

        return shape


def _share(requests: list[Routed]) -> float | None:
    prompt = sum(r.prompt_tokens for r in requests)
    return sum(r.cached_tokens for r in requests) / prompt if prompt else None


def _keys(shape: AgentShape, stream: int, seq: int, session: int | None, tokens: int, block: int) -> list[Hashable]:
    """Content keys of the whole blocks of a request's first `tokens` tokens: the system prompt's blocks are
    every session's; a session's are its own (each turn's prompt and the answer's reused head are a prefix of
    the next turn's); a warm-up's are its own."""
    if session is None:
        return [("warmup", stream, seq, j) for j in range(tokens // block)]
    shared = shape.context_tokens // block
    return [("system", j) if j < shared else ("session", stream, session, j) for j in range(tokens // block)]


def route(
    shape: AgentShape, replicas: int, policy: RouterPolicy, num_blocks: int, block_size: int, seed: int
) -> Routing:
    """Route every request of `shape` over `replicas` engines with `policy`, each with a prefix cache of
    `num_blocks` blocks of `block_size` tokens. Seeded: the order of each round and `random`'s draws.
    Raises ValueError for a policy this does not model."""
    if policy not in MODELLED_POLICIES:
        raise ValueError(f"routing policy {policy} is not modelled; simulate models {', '.join(MODELLED_POLICIES)}")
    rng = random.Random(seed)
    caches = [PrefixCache(num_blocks, block_size) for _ in range(replicas)]
    out = Routing(replicas, policy)
    owner: dict[tuple[int, int], tuple[int, int]] = {}  # (stream, session) -> (replica, last prompt tokens)
    counter = 0
    rounds: list[list[tuple[int, int, int | None, int | None]]] = []  # (stream, seq, session, turn)
    for w in range(shape.warmup_requests):
        rounds.append([(s, w, None, None) for s in range(shape.clients)])
    for number in range(shape.sessions_per_client * shape.turns):
        seq = shape.warmup_requests + number
        rounds.append([(s, seq, number // shape.turns, number % shape.turns) for s in range(shape.clients)])
    for requests in rounds:
        rng.shuffle(requests)
        load = [0] * replicas  # in flight: a round's requests overlap, the previous round's have ended
        for stream, seq, session, turn in requests:
            prompt = shape.warmup_tokens if session is None else shape.prompt_tokens(turn or 0)
            if policy == "round_robin":
                replica, counter = counter % replicas, counter + 1
            elif policy == "random":
                replica = rng.randrange(replicas)
            else:
                replica = _cache_aware(load, owner.get((stream, session)) if session is not None else None, prompt)
            keys = _keys(shape, stream, seq, session, prompt, block_size)
            cached = caches[replica].hit_tokens(keys, prompt)
            # blocks are cached as allocated: the prompt's, the answer's head the next turn repeats, then the
            # rest of the answer (KV for output - 1 generated tokens), never hit again
            reused = 0 if session is None else min(shape.output_tokens - 1, shape.call_tokens)
            held = _keys(shape, stream, seq, session, prompt + reused, block_size)
            filled = (prompt + shape.output_tokens - 1) // block_size
            caches[replica].insert(held + [("answer", stream, seq, j) for j in range(len(held), filled)])
            shared = min(cached, (shape.context_tokens // block_size) * block_size) if session is not None else 0
            out.requests.append(Routed(stream, seq, replica, prompt, cached, shared, session, turn))
            load[replica] += 1
            if session is not None:
                owner[(stream, session)] = (replica, prompt)
    return out


def _cache_aware(load: list[int], previous: tuple[int, int] | None, prompt: int) -> int:
    """vllm-router's cache_aware choice (module docstring): by load when imbalanced, else the replica holding
    the session's earlier text when it is more than CACHE_THRESHOLD of this prompt, else the least loaded."""
    low, high = min(load), max(load)
    least = load.index(low)
    if high - low > BALANCE_ABS_THRESHOLD and high > low * BALANCE_REL_THRESHOLD:
        return least
    if previous is not None and previous[1] / prompt > CACHE_THRESHOLD:
        return previous[0]
    return least


def served(routings: list[Routing]) -> list[ReplicaServed]:
    """What each engine served in the routed runs, as bench reads it from each replica's /metrics: requests,
    prompt tokens and prefix-cache hits and queries (tokens), mean over the seeds."""
    out = []
    for k in range(routings[0].replicas):
        mine = [[r for r in routed.requests if r.replica == k] for routed in routings]
        prompt = statistics.mean(sum(r.prompt_tokens for r in seed) for seed in mine)
        hits = statistics.mean(sum(r.cached_tokens for r in seed) for seed in mine)
        rate = hits / prompt if prompt else None
        out.append(ReplicaServed(
            index=k, url="predicted", requests=statistics.mean(len(seed) for seed in mine), prompt_tokens=prompt,
            prefix_cache_hits=hits, prefix_cache_queries=prompt, prefix_cache_hit_rate=rate,
        ))  # fmt: skip
    return out
