"""How much work a `simulate` or `advise` call asks of the simulator, bounded before any simulation runs: a
cell the simulated engine could not finish within the simulator's step limit, or a call simulating more output
tokens or engine steps than one call may, is refused in one line that says what to make smaller (an MCP
client's call would otherwise hold the server for minutes, then end as 'simulation did not finish'). In open loop
how many requests run at once depends on the arrival rate and the step times (open_loop_running), so `simulate`
checks again once its step-time terms are known. A `simulate --find-max` search is bounded over the most probes
it can take (refuse_search_unfinishable), as bench bounds a search by its largest probe's requests."""

from __future__ import annotations

import math

from onechip.bench.search import probe_config, worst_case_loads
from onechip.errors import ConfigError
from onechip.planner.geometry import cdiv
from onechip.schemas import BenchConfig, Plan
from onechip.schemas.common import plural
from onechip.schemas.sim import StepTerms
from onechip.sim.predict import engine_of, engine_shares
from onechip.sim.scheduler import MAX_STEPS, SchedulerLimits
from onechip.sim.steptime import Batch, step_model

# What one call may simulate, all seeds, cells and engines together (warm-ups included). The simulator advances
# every running request by one token per engine step in Python; measured on the 2-core dev machine (2026-12-03,
# one core): 200,000-400,000 output tokens/s at full batches (simulate Llama-3.1-8B-Instruct on h100, 1,024 x 256
# x 200 tokens: 233,000/s; advise gemma-4-E2B-it ctx=4096,clients=64,output_tokens=256 over its 62 deployments,
# 9.2M tokens: 22 s) and 38,000-65,000 engine steps/s at one request (1,024 x 1 x 2,000; 3,000 x 1 x 100,000:
# 1.5M steps in 23 s). So a call stays within about a minute or two of one core: 20M tokens, and the steps the
# simulator allows one simulation (sim.scheduler.MAX_STEPS) for the whole call.
MAX_SIMULATED_TOKENS = 20_000_000
MAX_SIMULATED_STEPS = MAX_STEPS


def requests_per_stream(config: BenchConfig) -> int:
    """Requests one closed-loop stream sends in a simulated cell, warm-ups included (an agent stream: its
    sessions' turns); open loop: the measured ones only (the simulator sends no warm-up there)."""
    per = config.sessions_per_client * config.turns if config.workload == "agent" else config.requests_per_client
    return per + (config.warmup_requests if config.rate_per_s is None else 0)


def refuse_too_much(tokens: int, steps: int, what: str, scope: str = "") -> None:
    """ConfigError when `tokens` output tokens or (at least) `steps` engine steps are over what one call may
    simulate (MAX_SIMULATED_TOKENS, MAX_SIMULATED_STEPS); `what` says how to ask less, `scope` what was summed
    over beyond seeds and cells."""
    if tokens > MAX_SIMULATED_TOKENS:
        raise ConfigError(
            f"this would simulate {tokens:,} output tokens (seeds x clients x requests x output tokens{scope}); at "
            f"most {MAX_SIMULATED_TOKENS:,} in one call (a minute or two of CPU): give {what}"
        )
    if steps > MAX_SIMULATED_STEPS:
        raise ConfigError(
            f"this would simulate at least {steps:,} engine steps (one token per running request a step, over seeds "
            f"and cells{scope}); at most {MAX_SIMULATED_STEPS:,} in one call (a minute or two of CPU): give {what}"
        )


def work(
    config: BenchConfig, seeds: int, replicas: int = 1, plan: Plan | None = None, terms: StepTerms | None = None
) -> tuple[int, int]:
    """(output tokens, engine steps at least) of simulating every cell of `config` `seeds` times on `replicas`
    engines (each simulated), warm-ups included. With `plan`, a cell the simulator refuses at once counts nothing
    and the engine's limits bound the steps (min_steps, with `terms` in open loop); without, only the streams do."""
    tokens = steps = 0
    for context, clients in config.grid_cells():
        # without a plan: each stream's tokens one after another, all streams running at once
        per_stream = requests_per_stream(config) * config.output_tokens
        cell_steps = min_steps(plan, config, context, clients, replicas, terms)[0] if plan else per_stream
        if cell_steps:
            tokens += seeds * clients * requests_per_stream(config) * config.output_tokens
            steps += seeds * len(engine_shares(config, clients, replicas)) * cell_steps
    return tokens, steps


def min_steps(
    plan: Plan, config: BenchConfig, context: int, clients: int, replicas: int = 1, terms: StepTerms | None = None
) -> tuple[int, str]:
    """A lower bound on the engine steps one engine of `plan` needs for a cell of `config` (`clients` streams
    split over `replicas` engines), from the simulated engine's own limits, and the limit that sets it. Each step
    emits at most one token for each running request (sim.scheduler), and at most min(streams, max_num_seqs)
    run; a grid request (unique prompt, no shared blocks) holds blocks for every token it has, so the KV pool
    bounds the block-tokens a step can hold too. In open loop with the step times' `terms`, fewer run at once on
    average than the arrivals allow (open_loop_running); without `terms` only the limits above bound it. (0, "")
    for a cell the simulator refuses at once (beyond max_model_len, or one request larger than the KV pool)."""
    engine = engine_of(plan)
    out = config.output_tokens
    if context + out > plan.max_model_len or cdiv(context + out, engine.block_size) > engine.num_blocks:
        return 0, ""
    streams, share = _busiest(config, clients, replicas)
    requests = streams * requests_per_stream(share)
    # closed loop, each stream has one request in flight; open loop, the in-flight cap (0: none) holds them
    at_once = streams if share.rate_per_s is None else share.in_flight_cap(streams) or engine.max_num_seqs
    running = min(at_once, engine.max_num_seqs)
    which = (
        ("streams" if share.rate_per_s is None else "in flight") if at_once <= engine.max_num_seqs else "max_num_seqs"
    )
    steps, why = cdiv(requests * out, running), f"at most {running:,} run at once ({which})"
    if config.rate_per_s is not None and terms is not None:
        mean, request_s = open_loop_running(plan, engine, terms, share, context, running)
        if mean < running:
            steps = math.ceil(requests * out / mean)
            why = (
                f"open loop: at most {mean:,.2f} run at once on average, 1 + {share.rate_per_s:g} arrivals/s x "
                f"the {request_s:,.1f} s a request runs at most"
            )
    if config.workload != "agent":  # agent sessions share their prefix's blocks: no per-request bound from it
        # a request holds ceil((context + k) / B) blocks when it emits its k-th token, k = 1 .. out
        pool_tokens = engine.num_blocks * engine.block_size
        pool_steps = cdiv(requests * out * (2 * context + out + 1) // 2, pool_tokens)
        if pool_steps > steps:
            steps, why = pool_steps, f"its KV pool of {pool_tokens:,} tokens holds fewer than {running:,} at once"
    return steps, why


def _busiest(config: BenchConfig, clients: int, replicas: int) -> tuple[int, BenchConfig]:
    """The streams and config of the engine with the most work in a cell (sim.predict.engine_shares: the first)."""
    streams, share = engine_shares(config, clients, replicas)[0]
    return len(streams), share


def open_loop_running(
    plan: Plan, engine: SchedulerLimits, terms: StepTerms, config: BenchConfig, context: int, most: int
) -> tuple[float, float]:
    """(how many requests run at once on average over the engine's steps, at most; how many seconds one request
    runs then, at most) in an open-loop cell of `config` on an engine of `plan` with step times from `terms`
    (sim.steptime.step_model) that runs at most `most` at once.

    With arrivals at rate_per_s (Poisson; constant ones are no burstier) and each request running (in the engine's
    running set) at most D seconds, the number running is at most Poisson of mean m = rate x D (an M/G/infinity
    queue; the caps, clients in flight and max_num_seqs, only lower it), so while any runs its mean is
    m / (1 - e^-m) <= 1 + m; a step with more running lasts no shorter, so the mean over steps is no larger than
    over time. D for n running: its prefill (steps that serve the prompts of all n, ceil(n x context / (budget -
    n)): the requests ahead of it in the running list go first, decodes take a token each) plus one step per
    output token, each step as long as one where all n prefill (min(context, budget) tokens each, the token
    budget in all), every prompt and output cached, each chunk attending to its whole prompt. D grows with n, so
    n starts at `most` and falls to the largest n >= 1 + rate x D(n) (n a whole count). Assumed, not bounded: that
    the step at the mean running count takes the mean step time (step times are close to affine in the sequences
    once the host's per-sequence work sets them, and a prefill charged to every step overstates them), and that
    no request is preempted (beyond the KV wall, where min_steps' KV-pool bound holds). `config` is one engine's
    (sim.predict.engine_shares: its share of a replicated cell's rate)."""
    out, budget, rate = config.output_tokens, engine.budget_tokens, config.rate_per_s or 0.0
    pool_tokens, model = engine.num_blocks * engine.block_size, step_model(plan, terms)
    running = most
    while True:
        tokens = min(budget, running * min(context, budget))
        heaviest = Batch(running, tokens, min(running * (context + out), pool_tokens), float(tokens * context))
        steps = cdiv(running * context, max(1, budget - running)) + out
        request_s = steps * model.step_s(heaviest)
        mean = min(float(most), 1.0 + rate * request_s)
        if math.ceil(mean) >= running:
            return mean, request_s
        running = math.ceil(mean)


def step_limit_reason(
    plan: Plan, config: BenchConfig, context: int, clients: int, replicas: int = 1, terms: StepTerms | None = None
) -> str | None:
    """Why the simulated engine cannot finish this cell within the simulator's MAX_STEPS, or None (`terms`:
    min_steps)."""
    steps, why = min_steps(plan, config, context, clients, replicas, terms)
    if steps <= MAX_STEPS:
        return None
    streams, share = _busiest(config, clients, replicas)
    requests = streams * requests_per_stream(share)
    load = f"x {plural(clients, 'client')}" if config.rate_per_s is None else f"at {config.load_text(clients)}"
    return (
        f"{context:,} tokens {load}: {plural(requests, 'request')} x {plural(config.output_tokens, 'output token')} "
        f"take at least {steps:,} engine steps (one token per running request a step; {why}); the simulator "
        f"stops at {MAX_STEPS:,}"
    )


def refuse_unfinishable(plan: Plan, config: BenchConfig, replicas: int, terms: StepTerms | None = None) -> None:
    """ConfigError naming the first cell of `config` the simulated engine cannot finish within MAX_STEPS, then
    ConfigError when the call is over what one call may simulate (refuse_too_much); `terms`: min_steps."""
    # agent sessions set the requests per stream (turns x sessions per client; --requests-per-client is refused)
    per_stream = ", --turns or --sessions-per-client" if config.workload == "agent" else " or --requests-per-client"
    smaller = f"--clients, --output-tokens{per_stream}"
    if config.rate_per_s is not None:
        smaller += ", or a higher --rate"
    for context, clients in config.grid_cells():
        reason = step_limit_reason(plan, config, context, clients, replicas, terms)
        if reason is not None:
            raise ConfigError(f"{reason}: give fewer {smaller}")
    refuse_too_much(*work(config, config.reps, replicas, plan, terms), f"fewer --reps, --contexts, {smaller}")


def refuse_search_unfinishable(plan: Plan, config: BenchConfig, replicas: int, terms: StepTerms | None = None) -> None:
    """refuse_unfinishable for `simulate --find-max`: ConfigError naming the first probe the search may ask for
    (bench.search.worst_case_loads: the most probes it can take, each at the load it bounds) that the simulated
    engine cannot finish within MAX_STEPS, then ConfigError when those probes together are over what one call may
    simulate (refuse_too_much); `terms`: min_steps."""
    per_stream = ", --turns or --sessions-per-client" if config.workload == "agent" else ""
    smaller = f"a lower --find-max-limit, fewer --output-tokens{per_stream}"
    tokens = steps = 0
    for load in worst_case_loads(config):
        probe = probe_config(config, load)[1]
        (context, clients), *_ = probe.grid_cells()
        reason = step_limit_reason(plan, probe, context, clients, replicas, terms)
        if reason is not None:
            raise ConfigError(f"{reason}: give {smaller}")
        more = work(probe, config.reps, replicas, plan, terms)
        tokens, steps = tokens + more[0], steps + more[1]
    refuse_too_much(tokens, steps, f"fewer --reps or {smaller}", ", over the most probes the search can take")
