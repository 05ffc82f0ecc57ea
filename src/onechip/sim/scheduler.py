"""A discrete-event simulation of vLLM's V1 scheduler serving one bench cell, returning the raw request
samples `onechip bench` would have recorded (schemas.bench.RequestSample), so the same statistics apply.

What it models (vllm/v1/core/sched/scheduler.py, `schedule()`): one engine step at a time; running requests
first, in order, each taking min(its remaining tokens, the step's token budget) — one token when decoding, a
chunk of its prompt when prefilling (chunked prefill under max_num_batched_tokens); then waiting requests in
arrival order while budget, KV blocks and max_num_seqs allow, unless this step preempted; from vLLM 0.19.0 a
waiting request is admitted only when the free blocks would hold its whole prompt (FULL_PROMPT_ADMISSION_FROM),
not just its first chunk. KV blocks are allocated as tokens are scheduled (ceil(tokens / block_size) per
request, one pool from the plan); when a running request needs a block and none is free, the last running
request is preempted by recompute (its blocks freed, its computed tokens reset, put back at the head of the
waiting queue) — the KV wall.

Under async scheduling (StepModel.overlap_host: vLLM >= 0.14.0 on an accelerator) the engine decides step k+1
while step k runs (EngineCore.step_with_batch_queue), so a request that reaches a busy engine joins the step
after next (CellSimulation._decided_at); this also desynchronises streams that send together, as the first
request of a wave reaches an idle engine and its peers, a request overhead later, a busy one. A closed-loop
stream's next request, sent when its last token ends step k, therefore waits the rest of step k+1 and the whole of
step k+2 (scheduled at step k's end) and is prefilled in step k+3. Its first token leaves the engine at the end of
the step that completes its prompt, not a step later: step_with_batch_queue returns step k's outputs as soon as step
k's future resolves (vllm 0.19.0 sdist, vllm/v1/engine/core.py), and tpu-inference copies step k's sampled tokens to
the host while step k+1 runs (tpu_inference/runner/tpu_runner.py _sample_from_logits: jax.copy_to_host_async, read
by AsyncTPUModelRunnerOutput.get_output; vllm-project/tpu-inference a5596b27, 2026-08-10). A step that prefills a
chunk and decodes the running sequences is one forward over all its tokens (tpu_runner.py _execute_model: one
model_fn call on the padded token bucket), so it costs StepModel.step_s of the whole batch, not a prefill's time
plus a decode step's.

A step that admits waiting requests pays StepTerms.per_admit_s for each as host work: a wave of
requests sent together is admitted in one step, which then delays the wave's first tokens and every running
request's next token together, in every wave, as measured short-context TTFT grows with clients (sim_accuracy.py).

What it does not model: speculative decoding, several KV-cache groups (sliding layers
windowed separately). Prefix caching is given, not found: bench prompts start with unique tokens (no hits),
and a workload that reuses prefixes (agent sessions behind a router, sim.routing) passes each request's
`RequestShape`: its cached tokens are computed already when it is admitted (prefill only the rest, as vLLM
V1's get_computed_blocks sets num_computed_tokens), and the blocks of the prefix every request shares (the
system prompt) are held once while any running request uses them (vLLM's block ref counts).

The API server is one event loop in its own process (vLLM V1: AsyncLLM's output handler and the requests'
streaming generators share it), so the engine core steps on while it works. It does one thing at a time, in
the order things reach it: a new request when its client sends it (request_overhead_s: HTTP, chat template,
tokenization) or a round of output delivery. The prompt's tokenization, where the step model has a measured table for
the model's tokenizer and a scale for the host (StepModel.tokenize_s), runs after that on the server's one renderer
thread, one prompt at a time, beside the event loop. A send in the future (a stream that starts later, an open-loop
arrival not yet due) does not hold the server before it is sent. A round takes every step output that
reached it and costs per_stream_chunk_s for each request with new tokens (the SSE chunk, streaming
tool/reasoning parsers) plus per_output_token_s for each token in it; while a round runs, the engine's next
outputs wait, and a request's tokens from several steps merge into one chunk (vLLM V1's
RequestOutputCollector merges deltas a slow consumer has not taken), so a busy server delivers fewer, larger
chunks. The merge saves the per-chunk work only: AsyncLLM's output_handler hands every step's
EngineCoreOutputs to OutputProcessor.process_outputs, which loops over every request's output of every step
(stats, detokenize, stop check, a RequestOutput put into the collector) before anything merges
(vllm/v1/engine/async_llm.py, output_processor.py). So the server delivers at most 1 / per_output_token_s
tokens a second: past the batch where n x per_output_token_s exceeds the engine step, the client-visible
token pace grows with the batch faster than the engine step does.

Clients follow BenchConfig, or replay another client (`num_prompts`, sim.protocol: vllm bench serve's pool of
requests behind a semaphore, every slot taking the next request when its last one ends): closed loop (each stream
sends its next request when the last ends: warm-up requests, then measured ones) or open loop (seeded Poisson or
constant arrivals from 0 s, at most BenchConfig.in_flight_cap in flight: --clients, or none, as bench sends them; no
warm-up: bench's waits for its warm-up to end before the first arrival, so the engine is idle then, as here).
Closed-loop streams all start at t = 0 by default, as `onechip bench` starts them (`simulate` draws their phases
instead: sim.predict.START_SPREAD_S); they then stay in step (a request's peers finish together and send together:
the embedded engine's runs show it, e.g. at 128 tokens x 4 clients one request is prefilled alone and the other
three together, every time). For a client that staggers its streams, `start_spread_s` draws each start uniformly
over that many seconds (seeded; None = over one request's duration). With `jitter`, each request's API-server time
is drawn (seeded) uniformly from 0.5 to 1.5 x request_overhead_s rather than taken as that mean: streams that finish
together then reach the scheduler at different times, the waves dissolve as they do in measured runs, and the seeds
(the reps) differ. The shape is chosen, not fitted (an exponential, the M/M/1 assumption, was tried: on the seed's
grid it moved more queueing into TTFT still). A seed reproduces a run exactly.
"""

from __future__ import annotations

import itertools
import random
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from onechip.planner.geometry import cdiv
from onechip.schemas.bench import BenchConfig, RequestSample
from onechip.sim.steptime import Batch, StepModel

# vLLM's generic default (get_batch_defaults), on every TPU: engines.json vllm-tpu default_max_num_batched_tokens_source
DEFAULT_MAX_NUM_SEQS = 256
# vLLM admits a waiting request only when the free pool holds blocks for its whole prompt (plus the tokens it emitted
# before a preemption), not its first chunk alone: SchedulerConfig.scheduler_reserve_full_isl = True, checked by
# KVCacheManager.can_fit_full_sequence (read in the vllm 0.19.0 sdist; in allocate_slots(full_sequence_must_fit=)
# in 0.26.0 and 0.27.0; absent from vllm 0.18.0's config/scheduler.py). It is a check, not a reservation: the
# blocks are still allocated chunk by chunk.
FULL_PROMPT_ADMISSION_FROM = "0.19.0"
MAX_STEPS = 2_000_000  # a guard against a workload that cannot finish


@dataclass(frozen=True)
class SchedulerLimits:
    """The scheduler's limits: KV pool in blocks, block size, token budget per step, max running sequences, and
    whether a waiting request is admitted only when its whole prompt's blocks are free (FULL_PROMPT_ADMISSION_FROM)
    rather than its first chunk's."""

    num_blocks: int
    block_size: int
    budget_tokens: int
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS
    full_prompt_admission: bool = True


@dataclass(frozen=True)
class RequestShape:
    """One request as a workload with prefix reuse gives it (sim.routing): prompt tokens, how many of them the
    engine's prefix cache serves (whole blocks), how many of those are the prefix all requests share (its
    blocks held once), and the agent session and turn it belongs to."""

    prompt_tokens: int
    cached_tokens: int = 0
    shared_tokens: int = 0
    session: int | None = None
    turn: int | None = None


# (stream, seq) -> the request's shape; seq counts warm-up requests first, as bench numbers them
RequestShapes = Callable[[int, int], RequestShape]


@dataclass
class _Req:
    stream: int
    seq: int
    warmup: bool
    prompt: int
    output: int
    t_send: float
    t_arrive: float  # when it reaches the scheduler; inf until the API server took it (_take_sends)
    t_out: float = 0.0  # when it leaves the client (open loop: its intended time, or later when held back)
    computed: int = 0
    emitted: int = 0
    blocks: int = 0
    times: list[float] = field(default_factory=list)
    shape: RequestShape | None = None
    shared_blocks: int = 0  # of `blocks`: the shared prefix's, held once for all running requests

    @property
    def known(self) -> int:
        """Tokens whose KV must exist before the next token: prompt plus tokens already emitted."""
        return self.prompt + self.emitted

    def sample(self, context: int, clients: int, rep: int) -> RequestSample:
        """The request as bench records it: one chunk per delivery (tokens of a round go out together)."""
        chunks = [(t, list(group)) for t, group in itertools.groupby(self.times)]
        return RequestSample(
            context_tokens=context,
            clients=clients,
            rep=rep,
            stream=self.stream,
            seq=self.seq,
            warmup=self.warmup,
            t_send=self.t_send,
            t_first=self.times[0],
            t_last=self.times[-1],
            t_done=self.times[-1],
            prompt_tokens_target=self.prompt,
            prompt_tokens=self.prompt,
            completion_tokens=self.emitted,
            chunk_times=[t for t, _ in chunks],
            chunk_tokens=[len(group) for _, group in chunks],
            finish_reason="length",
            cached_tokens=None if self.shape is None else self.shape.cached_tokens,
            session=None if self.shape is None or self.warmup else self.shape.session,
            turn=None if self.shape is None or self.warmup else self.shape.turn,
        )


class CellSimulation:
    """One cell (context, clients) of `config` on `engine` with step times from `model`, for one seed."""

    def __init__(
        self,
        config: BenchConfig,
        engine: SchedulerLimits,
        model: StepModel,
        context: int,
        clients: int,
        seed: int,
        start_spread_s: float | None = 0.0,
        jitter: bool = False,
        shapes: RequestShapes | None = None,
        num_prompts: int | None = None,
    ) -> None:
        self.config, self.engine, self.model = config, engine, model
        self.jitter, self.shapes = jitter, shapes
        self.num_prompts, self.pool_sent = num_prompts, 0  # vllm bench serve's pool of requests (_send)
        self.shared_holders = 0  # running requests holding the shared prefix's blocks
        self.context, self.clients, self.seed = context, clients, seed
        self.rng = random.Random(seed)
        self.overhead_s = model.terms.request_overhead_s
        self.start_spread_s = self._one_request_s() if start_spread_s is None else start_spread_s
        self.unsent: list[_Req] = []  # to leave their clients at t_out, not yet taken by the API server
        self.pending: list[_Req] = []  # sent, not yet at the scheduler (sorted by t_arrive when taken)
        self.waiting: deque[_Req] = deque()
        self.running: list[_Req] = []
        self.free_blocks = engine.num_blocks
        self.done: list[_Req] = []
        self.sent: dict[int, int] = {}
        self.stream_start: dict[int, float] = {}
        self.arrivals: deque[tuple[float, int]] = deque()
        self.in_flight = 0
        self.preemptions = 0
        self.first_measured_send: dict[int, float] = {}
        self.frontend_free_s = 0.0
        self.renderer_free_s = 0.0  # when the API server's one renderer thread has tokenized what it was given
        self.undelivered: dict[int, tuple[_Req, int]] = {}  # id(req) -> (req, tokens) the server has not sent
        self.warm_counts: dict[int, int] = {}
        self.step_start, self.step_end = -1.0, -1.0  # the last engine step's start and end
        self.admitted = 0  # requests the step being scheduled took from the waiting queue (per_admit_s)

    def run(self) -> list[RequestSample]:
        """Simulate until every request ended; the samples, in completion order. Raises RuntimeError when
        one request alone needs more KV blocks than the pool holds (the cell is infeasible)."""
        need = cdiv(self.context + self.config.output_tokens, self.engine.block_size)
        if need > self.engine.num_blocks:
            raise RuntimeError(f"one request needs {need} KV blocks; the pool holds {self.engine.num_blocks}")
        self._start_clients()
        now = 0.0
        for _ in range(MAX_STEPS):
            self._take_sends(now)
            self._admit_arrivals(self._decided_at(now))
            if not self.running and not self.waiting:
                self._admit_arrivals(now)  # an idle engine takes a request as it comes
            if not self.running and not self.waiting:
                if self.undelivered:
                    self._deliver(float("inf"))
                    continue
                nxt = self._next_arrival()
                if nxt is None:
                    break
                now = max(now, nxt)
                continue
            scheduled = self._schedule(now)
            if not scheduled:  # nothing fits: wait for the next arrival (cannot happen with a feasible pool)
                raise RuntimeError("the scheduler could not place any request")
            self.step_start = now
            now += self.model.step_s(self._batch(scheduled, self.admitted))
            self.step_end = now
            self._finish_step(scheduled, now)
        else:
            raise RuntimeError("simulation did not finish")
        return [r.sample(self.context, self.clients, self.seed) for r in self.done]

    def _decided_at(self, now: float) -> float:
        """When the engine decided the step that starts at `now`, i.e. which arrivals it could see. Without
        async scheduling: at `now`, after the previous step's outputs. With it (vLLM V1
        EngineCore.step_with_batch_queue, batch queue of max_concurrent_batches = 2 under async scheduling,
        vllm/v1/engine/core.py and vllm/config/vllm.py): the engine schedules step k+1 and launches it right
        after launching step k, then blocks on step k's result; its busy loop reads the input queue only
        between those calls, so a request that reaches the engine while step k runs joins step k+2, one step
        later than a synchronous engine would take it. An idle engine takes a request as it comes."""
        if self.model.overlap_host and self.step_end == now:
            return self.step_start
        return now

    def _one_request_s(self) -> float:
        """About how long one request of this cell takes with every stream busy: its prompt alone plus its
        output at a full decode batch. Stream start phases are drawn uniformly over it, so streams are
        spread over a request's life, as they are once their requests have drifted apart; a seed is one draw."""
        n, ctx, out = self.clients, self.context, self.config.output_tokens
        decode = self.model.step_s(Batch(seqs=n, tokens=n, kv_tokens=n * (ctx + out // 2), attn_pairs=0.0))
        chunk = min(ctx, self.engine.budget_tokens)
        prefill = self.model.step_s(Batch(seqs=1, tokens=chunk, kv_tokens=chunk, attn_pairs=chunk * chunk / 2.0))
        return prefill * cdiv(ctx, chunk) + decode * out

    # --- clients

    def _start_clients(self) -> None:
        if self.config.rate_per_s is None:
            for stream in range(self.clients):
                self.stream_start[stream] = self.rng.uniform(0.0, self.start_spread_s)
            # in time order: the API server takes requests one at a time, in the order they come
            for stream in sorted(self.stream_start, key=self.stream_start.__getitem__):
                self._send(stream, self.stream_start[stream])
            return
        self._open_loop_schedule()
        self._release_open_loop(0.0)

    def _open_loop_schedule(self) -> None:
        """Intended send times of the measured requests (no warm-up in open loop), seeded, as bench sends them
        (bench.runner.rep_arrivals and arrival_offsets): clients x requests_per_client of them, or all before
        duration_s; the first at 0 s, then exponential gaps (Poisson) unless `arrivals` is 'constant' (k / rate)."""
        cfg, t = self.config, 0.0
        total = None if cfg.duration_s else self.clients * cfg.requests_per_client
        rate = cfg.rate_per_s or 1.0
        while (total is None or len(self.arrivals) < total) and (cfg.duration_s is None or t < cfg.duration_s):
            self.arrivals.append((t, len(self.arrivals) % self.clients))
            t = len(self.arrivals) / rate if cfg.arrivals == "constant" else t + self.rng.expovariate(rate)

    def _release_open_loop(self, now: float) -> None:
        """Send the next intended arrivals while fewer than the config's in-flight cap are in flight
        (BenchConfig.in_flight_cap: --clients, or none; a late send keeps its intended time as t_send, as bench
        reports latency from it)."""
        cap = self.config.in_flight_cap(self.clients)
        while self.arrivals and (not cap or self.in_flight < cap):
            t_intended, stream = self.arrivals.popleft()
            seq = self.sent.get(stream, 0)
            self.sent[stream] = seq + 1
            self._queue_send(self._request(stream, seq, False, t_intended), max(t_intended, now))
            self.in_flight += 1

    def _send(self, stream: int, t: float) -> None:
        """Closed loop: stream `stream` sends its next request at `t`, if it has one left. With `num_prompts`
        (vllm bench serve: one task per request behind a semaphore of `clients` slots, vllm 0.26.0
        benchmarks/serve.py) the stream is a slot: it sends the next of the cell's num_prompts requests, in order,
        none of them warm-up; the request's seq is its index k among them (prompt k)."""
        cfg, seq = self.config, self.sent.get(stream, 0)
        if self.num_prompts is not None:
            if self.pool_sent >= self.num_prompts:
                return
            self.sent[stream] = seq + 1
            self._queue_send(self._request(stream, self.pool_sent, False, t), t)
            self.pool_sent += 1
            self.in_flight += 1
            return
        start = self.stream_start[stream]
        warm = seq < cfg.warmup_requests if cfg.warmup_s is None else t - start < cfg.warmup_s
        if warm:
            self.warm_counts[stream] = self.warm_counts.get(stream, 0) + 1
        elif cfg.duration_s is not None:
            first = self.first_measured_send.setdefault(stream, t)
            if t - first >= cfg.duration_s:
                return
        elif seq - self.warm_counts.get(stream, 0) >= cfg.requests_per_client:
            return
        self.sent[stream] = seq + 1
        self._queue_send(self._request(stream, seq, warm, t), t)
        self.in_flight += 1

    def _request(self, stream: int, seq: int, warm: bool, t_send: float) -> _Req:
        """Request `seq` of `stream`: the cell's context as its prompt, or what `shapes` gives."""
        shape = None if self.shapes is None else self.shapes(stream, seq)
        prompt = self.context if shape is None else shape.prompt_tokens
        return _Req(stream, seq, warm, prompt, self.config.output_tokens, t_send, float("inf"), shape=shape)

    def _queue_send(self, req: _Req, t_out: float) -> None:
        """`req` leaves its client at `t_out`; the API server takes it when the simulation reaches that time
        (_take_sends), not before: a send in the future must not hold the server's time in advance (it would
        delay the output rounds of earlier requests until then)."""
        req.t_out = t_out
        self.unsent.append(req)

    def _take_sends(self, now: float) -> None:
        """The API server takes the requests sent by `now`, in the order they were sent."""
        due = sorted((r for r in self.unsent if r.t_out <= now), key=lambda r: r.t_out)
        if due:
            self.unsent = [r for r in self.unsent if r.t_out > now]
            for req in due:
                req.t_arrive = self._through_frontend(req.t_out, req.prompt)
                self.pending.append(req)

    def _through_frontend(self, t: float, prompt_tokens: int) -> float:
        """When a request reaching the API server at `t` with a `prompt_tokens` prompt goes on to the scheduler: after
        the server's current work, request_overhead_s later, then after the renderer thread's earlier prompts, its own
        tokenization later (StepModel.tokenize_s, 0 unless the term is on; one renderer worker, vLLM 0.34.0
        vllm/renderers/base.py: prompts sent together are tokenized one after the other while the event loop goes on
        delivering output)."""
        overhead = self.overhead_s * (self.rng.uniform(0.5, 1.5) if self.jitter else 1.0)
        self.frontend_free_s = max(t, self.frontend_free_s) + overhead
        self.renderer_free_s = max(self.frontend_free_s, self.renderer_free_s) + self.model.tokenize_s(prompt_tokens)
        return self.renderer_free_s

    def _deliver(self, now: float) -> None:
        """Run the API server's output rounds that start by `now`: each takes every undelivered token, costs
        per_stream_chunk_s per request with tokens plus per_output_token_s per token, and hands them to the
        clients at its end. A request whose
        last token is delivered is done; its stream sends again (closed loop)."""
        while self.undelivered and self.frontend_free_s <= now:
            self._take_sends(self.frontend_free_s)  # requests sent before this round starts go first
            if self.frontend_free_s > now:
                break
            batch, self.undelivered = list(self.undelivered.values()), {}
            terms = self.model.terms
            tokens_in_round = sum(tokens for _, tokens in batch)
            end = (
                self.frontend_free_s
                + terms.per_stream_chunk_s * len(batch)
                + terms.per_output_token_s * tokens_in_round
            )
            self.frontend_free_s = end
            for req, tokens in batch:
                req.times.extend([end] * tokens)
                if len(req.times) >= req.output:
                    self.done.append(req)
                    self.in_flight -= 1
                    if self.config.rate_per_s is None:
                        self._send(req.stream, end)
                    else:
                        self._release_open_loop(end)

    def _next_arrival(self) -> float | None:
        """The next event while the engine is idle: a request reaching the scheduler or leaving a client."""
        return min([r.t_arrive for r in self.pending] + [r.t_out for r in self.unsent], default=None)

    def _admit_arrivals(self, now: float) -> None:
        """Requests that reached the scheduler by `now` join the waiting queue, in arrival order."""
        arrived = sorted((r for r in self.pending if r.t_arrive <= now), key=lambda r: r.t_arrive)
        if arrived:
            self.pending = [r for r in self.pending if r.t_arrive > now]
            self.waiting.extend(arrived)

    # --- the engine

    def _blocks_for(self, req: _Req, tokens: int) -> int:
        return cdiv(req.computed + tokens, self.engine.block_size) - req.blocks

    def _schedule(self, now: float) -> list[tuple[_Req, int]]:
        """One step's batch: running requests first (preempting the last when blocks run out), then waiting
        ones if nothing was preempted. Allocates blocks for what it schedules."""
        budget, scheduled, preempted = self.engine.budget_tokens, [], False
        self.admitted = 0
        i = 0
        while i < len(self.running) and budget > 0:
            req = self.running[i]
            n = min(req.known - req.computed, budget)
            while self._blocks_for(req, n) > self.free_blocks:
                victim = self.running.pop()
                self._preempt(victim)
                preempted = True
                if victim is req:
                    break
            else:
                self._allocate(req, n)
                scheduled.append((req, n))
                budget -= n
                i += 1
                continue
            break
        while not preempted and self.waiting and budget > 0 and len(self.running) < self.engine.max_num_seqs:
            req = self.waiting[0]
            taken = self._hit(req)
            n = min(req.known - req.computed, budget)
            admit = req.known - req.computed if self.engine.full_prompt_admission else n
            if self._blocks_for(req, admit) + taken > self.free_blocks:
                req.computed, req.blocks, req.shared_blocks = 0, 0, 0  # the hit is looked up again next step
                break
            self.waiting.popleft()
            self.free_blocks -= taken
            self.shared_holders += req.shared_blocks > 0
            self._allocate(req, n)
            self.running.append(req)
            scheduled.append((req, n))
            budget -= n
            self.admitted += 1
        return scheduled

    def _hit(self, req: _Req) -> int:
        """A fresh request with a prefix-cache hit starts with its cached tokens computed and their blocks
        (vLLM V1 get_computed_blocks, whole blocks only). Returns the blocks the hit takes from the free pool:
        its own cached blocks, plus the shared prefix's when no running request holds them already."""
        if req.shape is None or req.computed or not req.shape.cached_tokens:
            return 0
        size = self.engine.block_size
        req.computed = req.shape.cached_tokens
        req.blocks = req.computed // size
        req.shared_blocks = min(req.shape.shared_tokens, req.computed) // size
        return req.blocks - (req.shared_blocks if self.shared_holders else 0)

    def _release(self, req: _Req) -> None:
        """Free `req`'s blocks; the shared prefix's go back when its last holder ends."""
        self.free_blocks += req.blocks - req.shared_blocks
        if req.shared_blocks:
            self.shared_holders -= 1
            if not self.shared_holders:
                self.free_blocks += req.shared_blocks
        req.blocks, req.shared_blocks = 0, 0

    def _allocate(self, req: _Req, tokens: int) -> None:
        extra = self._blocks_for(req, tokens)
        if extra > 0:
            req.blocks += extra
            self.free_blocks -= extra

    def _preempt(self, req: _Req) -> None:
        """Recompute preemption: free the blocks, forget the computed tokens, back to the queue's head."""
        self._release(req)
        req.computed = 0
        self.waiting.appendleft(req)
        self.preemptions += 1

    @staticmethod
    def _batch(scheduled: list[tuple[_Req, int]], admitted: int = 0) -> Batch:
        kv = sum(r.computed + n for r, n in scheduled)
        pairs = sum(n * (r.computed + n / 2.0) for r, n in scheduled if n > 1)
        tokens = sum(n for _, n in scheduled)
        return Batch(seqs=len(scheduled), tokens=tokens, kv_tokens=kv, attn_pairs=pairs, admitted=admitted)

    def _finish_step(self, scheduled: list[tuple[_Req, int]], now: float) -> None:
        """Apply a step ending at `now`: computed tokens advance; a request that caught up emits a token for
        the API server to deliver; one that emitted all its tokens frees its blocks (its stream sends again
        once the server delivered the last one)."""
        self._deliver(now)  # rounds over older outputs that the server could start before this step ended
        for req, n in scheduled:
            req.computed += n
            if req.computed < req.known:
                continue  # a prefill chunk that did not reach the prompt's end
            req.emitted += 1
            queued = self.undelivered.get(id(req), (req, 0))[1]
            self.undelivered[id(req)] = (req, queued + 1)
            if req.emitted >= req.output:
                self.running.remove(req)
                self._release(req)
        self._take_sends(now)  # requests sent during the step reach the server before the step's outputs
        self.frontend_free_s = max(self.frontend_free_s, now)
        self._deliver(now)
