"""Simulating a bench grid: every (context, clients) cell of a BenchConfig, once per seed; for the agent
workload, sessions on `replicas` engines behind a routing policy (sim.routing), each engine simulated with
the prefill its prefix cache saves.

A cell whose single request needs more KV blocks than the plan's pool, or more tokens than max_model_len,
is infeasible (what bench would record), never dropped.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from onechip.catalog.files import version_key
from onechip.planner.geometry import cdiv
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import Plan
from onechip.schemas.bench import BenchConfig, CellResult, RequestSample
from onechip.schemas.figures import whole_run
from onechip.schemas.replicas import RouterPolicy
from onechip.schemas.sim import StepTerms
from onechip.sim import routing
from onechip.sim.protocol import CellClient
from onechip.sim.scheduler import DEFAULT_MAX_NUM_SEQS, FULL_PROMPT_ADMISSION_FROM, CellSimulation, SchedulerLimits
from onechip.sim.steptime import budget_tokens, step_model

# Closed-loop stream starts `simulate` and `advise` fit and predict with (CellSimulation start_spread_s): None =
# each stream's start phase drawn, seeded, over one request's duration. `onechip bench` and vllm bench serve
# send every stream's first request at once (0.0), but measured runs drift apart, and out of sample the drawn
# phases predict better (benchmarks/sim_accuracy.py corpus, STEP_MODEL 5, calibrated grids: TTFT 39.9% against
# 79.8% with streams together, tok/s 12.3% against 12.2%, TPOT 10.0% against 12.2%): a fit with streams together
# explains the gce grids' 81-85 ms TTFT at 128 x 8 by an API server ten times slower, which then puts seconds
# of queueing on cells such as 4,096 x 64. Each seed is one draw of the phases, so the seeds' range is a range.
# Jitter on top (CellSimulation jitter, `corpus --jitter`) is left off. At STEP_MODEL 5 it scored 13.1 / 107.2 / 9.7
# with drawn phases, 16.4 / 87.7 / 16.5 with streams together (the fit again buys TTFT with a slower API server); at
# STEP_MODEL 6 (2026-12-03, whole corpus, drawn phases) calibrated 11.3 / 32.4 / 9.5% against 12.7 / 35.7 / 9.6%
# without, carried by measured efficiencies (same family) 14.0 / 36.9 / 14.9% against 14.1 / 35.4 / 15.6%. Not yet
# switched on: the error entries advise's ranges use (serving_measurements.json prediction_error, prior_accuracy's
# among them) were measured without it, and on tests/unit/sim/test_calibrate.py's synthetic vllm-cpu cells a fit
# with it pins the fixed host cost the cells see only summed with the weight read. Nor would it make the whole-run
# figure's range mean much: that figure is read from the run with every stream sent at once (with_whole_run), which
# without jitter is the same for every seed (a point range); with it (2026-12-07, seed terms, v5e-1, 128 output tokens,
# 5 seeds) 128 x 8 reads 739.3 - 742.2 tok/s, 1,024 x 16 783.9 - 800.0, 8,192 x 16 320.3 - 320.5: 0.05 - 2% wide
# against 9.4% re-measurement noise: the ranges that mean something are the measured errors' (sim.uncertainty
# figure_range, which the seeds' spread only widens). Drawn phases cost
# the ramp-up bench's simultaneous start gives: the 16,000-token knee and overflow cells (c = 40-112) come out
# 27% low in TTFT against 8% with streams together. (The figures above are from before the fit's roofline floors,
# calibrate._floors; with them, drawn phases give 12.1 / 33.5 / 9.7.) What streams together would need: with the
# terms of a drawn-phase fit (gemma4dev v6e-1), predicting the gce and gke grids (22 cells) with streams together
# gives 6.6 / 47.8 / 10.0% against 10.9 / 41.6 / 10.8% with drawn phases, and 6.6 / 28.4 / 9.8% if a step that
# prefills beside decodes were charged its real tokens rather than the TPU runner's padded bucket (1,031 tokens
# run as 2,048): in the simulation that padding makes every short prefill a long step, the prefills clump and the
# waves never dissolve (gke 1,024 x 8: TTFT 61 ms against 24.8 measured, 31 ms unpadded). The runner does pad
# (tpu-inference runner/utils.py get_token_paddings), so the padding is kept until a measured step time at a
# mixed batch says what a padding row costs; and refitted with streams together the gce grids' TTFT (81-85 ms
# at 128 x 8) buys a slower API server again (with unpadded mixed steps and the floors: 13.3 / 88.1 / 13.7%).
# STEP_MODEL 6, overflow cells at their measured 2 prompts per client: drawn-phase fits, predictions with streams
# together (vllm bench serve's start: serve.py, request rate inf, a max_concurrency semaphore) give calibrated TTFT
# 18.7 / 38.6 / 31.8 / 47.5% on config-validation from gce, gce from config-validation, config-validation from gke,
# gce from gke (drawn: 28.2 / 43.7 / 35.5 / 50.5%; 16,000 x 40 / 72 / 112 medians 2,097 / 10,562 / 21,255 ms against
# 2,088 / 10,544 / 21,189 measured) but 63.5 / 71.2% on gke from config-validation and gce (drawn 39.5 / 38.7%): its
# short cells stay in lock-step. Nothing read in the sources says why gke's waves dissolve and gce's do not.
# Replaying the corpus grids' own client instead (sim.protocol: every stream started together, num_prompts requests a
# cell, whole-run tok/s, prefix-cache hits where one seed's prompts repeat across cells; benchmarks/sim_accuracy.py
# corpus --replay) scored worse overall on 2026-12-03: calibrated TTFT 56.1% against 35.7% (sim_accuracy.REPLAY says
# why), so these drawn phases stay the default. A parallel client latency beside the API server's serial time per
# request (StepTerms.client_latency_s, one client's overhead split evenly where no cell tells them apart; 418f6c1,
# reverted) did not lower it (whole corpus, 2026-12-03: calibrated 11.9 / 36.4 / 9.2% against 12.7 / 35.7 / 9.6%;
# carried, measured (same family) 13.9 / 33.9 / 14.9% against 14.1 / 35.4 / 15.6%; calibrated with --replay, the 100
# v6e-1 cells, 12.0 / 51.6 / 11.0% against 12.4 / 56.1 / 11.4%): with drawn phases the cells cannot split the two,
# so what it moves rests on the even split chosen, and where they can (--replay) the gce and config-validation fits
# put 81-92% of the overhead on the serial server.
# The TPU runner's request-count padding is not modelled either. tpu-inference pads a step's requests to 8, then the
# next power of two, capped at max_num_seqs (runner/utils.py get_padded_num_reqs_with_upper_limit); on that count it
# gathers the hidden states and computes the logits (tpu_runner.py _prepare_inputs logits_indices, _execute_model
# compute_logits_fn) and samples over (padded requests, vocabulary) (_sample_from_logits); attention is padded to
# max_num_seqs whatever the count (runner/utils.py get_attn_req_paddings, ATTN_BUCKETIZED_NUM_REQS off by default), and
# the host's per-request work loops over the real requests. Tried on vllm-tpu plans (2026-12-03, STEP_MODEL 6, `corpus
# --fits` seed-v5e-1, gemma4dev-v6e-1-config-validation, gce-v6e-1-2026-08-10, gke-v6e-1-2026-08-25 `--grids` those and
# survey-v5e-1-dollars, gemma4dev-v6e-1-sweep-one-client), tok/s / TTFT / TPOT MAPE against 12.7 / 35.7 / 9.6%
# calibrated and 12.9 / 34.6 / 11.7% carried by measured efficiencies (same family) without it: per_seq_s on the padded
# count, 11.0 / 32.3 / 11.3% and 13.4 / 39.0 / 12.7% (the one-client sweep's TPOT 2.5% -> 12.5%: eight padded requests
# make every one-client step host-bound, 5.7 ms at any context against 4.7-5.2 measured); a fitted device term per
# padded request (StepTerms field, in the fit and carried by bandwidth), 11.4 / 32.8 / 10.7% and 14.5 / 33.4 / 16.7%,
# the term pinned by no fit (0.10-0.18 ms a padded request; one pass over a padded row's 262,144 float32 logits at v6e's
# 1,640 GB/s takes 0.6 us). Each makes TPOT worse, so neither is kept. gke's 1,024 x 32 cell (TPOT 18.4 ms, 8.7 at 16
# clients) comes out 14.0 / 14.4 ms from the config-validation / gce fits without, 15.4 / 17.4 with the first, 15.4 /
# 18.6 with the second: by its bytes the padding's own work cannot make that jump (9.7 ms over 16 more padded requests
# is 0.6 ms each, about a thousand passes over a row's logits).
# Each grid with the starts its client recorded (vllm bench serve: together, sim.protocol.start_spread), in the fit
# and the predictions (`corpus --recorded`, 2026-12-05): calibrated TTFT 51.0% against 35.7% with these drawn phases
# (sim_accuracy.RECORDED says where it helps and where it hurts), so they stay.
START_SPREAD_S: float | None = None


@dataclass
class CellPrediction:
    """Samples of one cell by seed (the reps), or why it cannot run."""

    context_tokens: int
    clients: int
    samples_by_seed: dict[int, Sequence[RequestSample]] = field(default_factory=dict)
    infeasible: str | None = None
    preemptions: int = 0
    routings: list[routing.Routing] = field(default_factory=list)  # agent workload: one per seed
    # closed loop with drawn stream starts: each seed's run with every stream sent at once, read for the whole-run
    # figures alone (with_whole_run); empty where samples_by_seed started so already
    whole_run_by_seed: dict[int, Sequence[RequestSample]] = field(default_factory=dict)


def engine_of(plan: Plan) -> SchedulerLimits:
    """The scheduler limits of `plan`: its KV blocks and block size, the engine's token budget, its --max-num-seqs
    (DEFAULT_MAX_NUM_SEQS when the plan sets none), and whether its vLLM admits a request only when its whole
    prompt fits (FULL_PROMPT_ADMISSION_FROM; the newest rules when the plan names no version). An attention-free
    model's plan (Plan.state_slots: Mamba) holds one recurrent state per sequence of any length: a block of
    max_model_len tokens per slot, as vLLM sizes its state page with prefix caching off (planner.recurrent); read
    as KV blocks, its state pages x block size made a token pool that preempted sequences the cache holds. Raises
    ConfigError for a version that is not a release number."""
    full = plan.engine_version is None or version_key(plan.engine_version) >= version_key(FULL_PROMPT_ADMISSION_FROM)
    slots = plan.state_slots
    return SchedulerLimits(
        num_blocks=plan.num_blocks if slots is None else slots,
        block_size=plan.block_size if slots is None else plan.max_model_len,
        budget_tokens=budget_tokens(plan),
        max_num_seqs=seqs.value if (seqs := plan.serve.max_num_seqs) is not None else DEFAULT_MAX_NUM_SEQS,
        full_prompt_admission=full,
    )


def simulate_cell(
    plan: Plan,
    terms: StepTerms,
    config: BenchConfig,
    context: int,
    clients: int,
    seeds: int,
    start_spread_s: float | None = 0.0,
    jitter: bool = False,
    replicas: int = 1,
    policy: RouterPolicy = "cache_aware",
    client: CellClient | None = None,
    whole_run: bool = True,
) -> CellPrediction:
    """One cell of `config` on `replicas` engines of `plan` with `terms`, seeds 0 .. seeds-1 (stream starts and
    `jitter`, the seeded variation of each request's API-server time: CellSimulation). The agent workload goes
    through its sessions' routing (simulate_agent_cell); grid prompts are unique, so any policy spreads them
    alike: engine k serves streams k, k + replicas, ... (round robin's share), and in open loop every n-th arrival
    (engine_shares: the deployment's rate, not each engine's). `client`:
    another client's run of the cell replayed (sim.protocol: its pool of requests, stream starts and cached prompt
    tokens; one engine), in place of `config`'s per-stream requests and `start_spread_s`. Closed-loop streams whose
    starts are drawn (not 0.0) are run a second time per seed with every stream sent at once, for the whole-run
    figures (CellPrediction.whole_run_by_seed, with_whole_run); `whole_run` False skips that second run, for a
    caller that reads no whole-run figure (advise ranks on the steady window; a fit of a steady-window tok/s). Raises
    ValueError for a client replayed on several replicas."""
    if client is not None and replicas != 1:
        raise ValueError("a replayed client protocol is simulated on one engine")
    if config.workload == "agent":
        return simulate_agent_cell(
            plan, terms, config, context, clients, seeds, replicas, policy, start_spread_s, jitter
        )
    cell = CellPrediction(context, clients)
    if context + config.output_tokens > plan.max_model_len:
        cell.infeasible = f"{context} + {config.output_tokens} tokens exceed max_model_len {plan.max_model_len}"
        return cell
    engine, model = engine_of(plan), step_model(plan, terms)
    spread = start_spread_s if client is None else client.start_spread_s
    shapes = None if client is None else client.shapes(context, clients)
    pool = client.num_prompts if client else None
    drawn = whole_run and spread != 0.0 and config.rate_per_s is None
    for seed in range(seeds):
        for starts, runs in ((spread, cell.samples_by_seed), (0.0, cell.whole_run_by_seed))[: 1 + drawn]:
            samples: list[RequestSample] = []
            for streams, share in engine_shares(config, clients, replicas):
                sim = CellSimulation(share, engine, model, context, len(streams), seed, starts, jitter, shapes, pool)
                try:
                    samples += _renumbered(sim.run(), streams)
                except RuntimeError as exc:
                    cell.infeasible = str(exc)
                    cell.samples_by_seed.clear()
                    cell.whole_run_by_seed.clear()
                    return cell
                if runs is cell.samples_by_seed:
                    cell.preemptions += sim.preemptions
            runs[seed] = samples
    return cell


def whole_run_runs(p: CellPrediction) -> dict[int, Sequence[RequestSample]]:
    """Each seed's run p's whole-run figures are read from (with_whole_run's rule): the run with every stream sent at
    once where p's starts were drawn, else p's own."""
    return p.whole_run_by_seed or p.samples_by_seed


def with_whole_run(result: CellResult, p: CellPrediction) -> CellResult:
    """`result` (p summarised, bench.stats.summarize_cell) with its whole-run figures read from p's runs whose streams
    were all sent at once (CellPrediction.whole_run_by_seed), where its streams' starts were drawn; unchanged
    otherwise. The whole-run figure (vllm bench serve's: output tokens / (last completion - first send)) is a
    property of the client, and every client we score sends its streams' first requests together (bench; vllm bench
    serve, serve.py: one task per request at once behind the max-concurrency semaphore). Drawn starts stand for
    streams that drifted apart once running; read over the whole run they add a ramp, one request's duration long,
    that no client has: simulated whole-run / steady 0.82 - 0.85 at 128 x 8 and 1,024 x 16 where the measured runs
    read 0.97 - 0.99 (benchmarks/sim_accuracy.py). Latencies and the steady window stay the drawn runs'."""
    if not p.whole_run_by_seed or result.status != "ok":
        return result
    reps, rates, request_rates = [], [], []
    for rep in result.reps:
        duration_s, tokens, ok = whole_run(p.whole_run_by_seed[rep.rep])
        rate = tokens / duration_s if duration_s > 0 else 0.0
        reps.append(rep.model_copy(update={"whole_run_s": duration_s, "whole_run_output_tokens": tokens,
                                           "whole_run_tok_per_s": rate}))  # fmt: skip
        if duration_s > 0:
            rates.append(rate)
            request_rates.append(ok / duration_s)
    return result.model_copy(
        update={
            "reps": reps,
            "whole_run_tok_per_s": statistics.median(rates) if rates else None,
            "whole_run_request_rate_per_s": statistics.median(request_rates) if request_rates else None,
        }
    )


def engine_shares(config: BenchConfig, clients: int, replicas: int) -> list[tuple[list[int], BenchConfig]]:
    """A cell of `config` at `clients` split over `replicas` engines: per engine used, the cell's streams it runs
    and `config` as it sees it. Closed loop: engine k runs streams k, k + replicas, ... of `config`. Open loop on one
    engine: the cell as it is. Open loop over several: the router hands the arrivals round robin (grid prompts are
    unique, so every policy spreads them alike), so engine k gets every n-th arrival (rate / n, its share of
    clients x requests_per_client), and the in-flight cap (BenchConfig.in_flight_cap) is split as evenly as it
    goes, one stream each; n = the replicas, at most the cap (an engine with no share of it would get nothing in
    flight). A global cap split per engine is an approximation: vllm bench serve's one semaphore lets a slow
    engine hold more of it."""
    if config.rate_per_s is None:
        return [(streams, config) for streams in _split(clients, replicas)]
    cap = config.in_flight_cap(clients)
    n = min(replicas, cap) if cap else replicas
    if n == 1:
        return [(list(range(clients)), config)]
    total = clients * config.requests_per_client
    return [
        (
            [0],
            config.model_copy(
                update={
                    "rate_per_s": config.rate_per_s / n,
                    "requests_per_client": len(range(k, total, n)),
                    "max_in_flight": len(range(k, cap, n)),
                }
            ),
        )
        for k in range(n)
        if k < total or config.duration_s is not None  # a count: an engine past the last arrival gets none
    ]


def _split(clients: int, replicas: int) -> list[list[int]]:
    """The streams each engine serves: engine k gets streams k, k + replicas, ... (engines with none idle)."""
    return [list(range(k, clients, replicas)) for k in range(min(replicas, clients))]


def _renumbered(samples: list[RequestSample], streams: list[int]) -> list[RequestSample]:
    """One engine's samples with its local stream numbers turned into the cell's."""
    if streams == list(range(len(streams))):
        return samples
    return [s.model_copy(update={"stream": streams[s.stream]}) for s in samples]


def agent_shape(config: BenchConfig, context: int, clients: int) -> routing.AgentShape:
    """The agent workload of one cell of `config`, in tokens."""
    return routing.AgentShape(
        context_tokens=context, clients=clients, turns=config.turns, sessions_per_client=config.sessions_per_client,
        user_tokens=config.user_tokens, call_tokens=config.call_tokens, result_tokens=config.result_tokens,
        output_tokens=config.output_tokens, warmup_requests=config.warmup_requests,
    )  # fmt: skip


def simulate_agent_cell(
    plan: Plan,
    terms: StepTerms,
    config: BenchConfig,
    context: int,
    clients: int,
    seeds: int,
    replicas: int = 1,
    policy: RouterPolicy = "cache_aware",
    start_spread_s: float | None = 0.0,
    jitter: bool = False,
) -> CellPrediction:
    """One agent cell of `config` (`clients` streams of sessions, closed loop) on `replicas` engines of `plan`
    behind `policy`, seeds 0 .. seeds-1: each seed routes every request (routing.route: replica and cached
    tokens), then simulates each engine with its share of the streams, skipping the cached prefill. The
    samples of all engines together are the cell's, so tok/s is the whole deployment's. Raises ValueError
    for a policy sim.routing does not model."""
    cell = CellPrediction(context, clients)
    shape = agent_shape(config, context, clients)
    longest = shape.prompt_tokens(shape.turns - 1) + config.output_tokens
    engine, model = engine_of(plan), step_model(plan, terms)
    if longest > plan.max_model_len or cdiv(longest, engine.block_size) > engine.num_blocks:
        cell.infeasible = (
            f"a session's last turn needs {longest:,} tokens: beyond max_model_len {plan.max_model_len:,} "
            f"or the KV pool ({engine.num_blocks * engine.block_size:,} tokens)"
        )
        return cell
    per_stream = config.model_copy(update={"requests_per_client": shape.turns * shape.sessions_per_client})
    for seed in range(seeds):
        # the prefix cache over the plan's own pages: an attention-free model caches states in its state pages, not
        # in the sequence slots engine_of gives the scheduler
        routed = routing.route(shape, replicas, policy, plan.num_blocks, plan.block_size, seed)
        samples: list[RequestSample] = []
        for streams in _split(clients, replicas):
            hook = routed.shapes(streams)
            sim = CellSimulation(per_stream, engine, model, context, len(streams), seed, start_spread_s, jitter, hook)
            samples += _renumbered(sim.run(), streams)
            cell.preemptions += sim.preemptions
        cell.samples_by_seed[seed] = samples
        cell.routings.append(routed)
    return cell


def simulate_grid(
    plan: Plan,
    terms: StepTerms,
    config: BenchConfig,
    seeds: int,
    on_progress: ProgressFn = no_progress,
    start_spread_s: float | None = 0.0,
    jitter: bool = False,
    replicas: int = 1,
    policy: RouterPolicy = "cache_aware",
    whole_run: bool = True,
) -> list[CellPrediction]:
    """Every cell of `config` (BenchConfig.grid_cells, in order), `seeds` simulations each (`jitter`:
    CellSimulation's seeded API-server time variation; off by default, see benchmarks/sim_accuracy.py --jitter
    for what it does to accuracy; `whole_run` as simulate_cell's)."""
    cells = config.grid_cells()
    out = []
    for i, (ctx, n) in enumerate(cells):
        on_progress(ProgressEvent("simulate", config.cell_text(ctx, n), done=i, total=len(cells)))
        out.append(simulate_cell(plan, terms, config, ctx, n, seeds, start_spread_s, jitter, replicas, policy,
                                 whole_run=whole_run))  # fmt: skip
    on_progress(ProgressEvent("simulate", "grid simulated", done=len(cells), total=len(cells)))
    return out
