"""Replaying another client's protocol (sim.protocol, CellSimulation's num_prompts pool): vllm bench serve's pool of
requests started together, its whole-run tok/s, and the prefix-cache hits of seeded prompts repeated across cells."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from onechip import catalog
from onechip.catalog.files import MeasuredGrid
from onechip.schemas.bench import BenchConfig
from onechip.schemas.sim import StepTerms
from onechip.sim.figures import figures
from onechip.sim.protocol import CellClient, replay, start_spread
from onechip.sim.scheduler import CellSimulation, SchedulerLimits
from onechip.sim.steptime import StepModel

GRIDS = {g.name: g for g in catalog.serving_measurements().grids}
GKE, L4, MI300X = "gke-v6e-1-2026-08-25", "gemma4dev-l4-g6-e2b-2026-08-30", "gemma4dev-mi300x-e2b-2026-09-17"
CONFIG = BenchConfig(base_url="http://sim", output_tokens=8, warmup_requests=0, requests_per_client=1, reps=1)
# One-client prefill on v6e-1 (corpus gemma4dev-v6e-1-sweep-one-client): 8,192 tokens in 85 ms TTFT
PREFILL_S_PER_TOKEN = 0.085 / 8192


def test_streams_started_together_queue_the_first_wave_behind_each_other():
    # vllm bench serve sends the first max-concurrency requests at once (vllm 0.26.0 benchmarks/serve.py: one task
    # per request behind a semaphore): at 8 x 8,192 tokens under a 4,096-token budget the last of the wave waits
    # for every prompt before it, its TTFT the whole wave's prefill (config-validation 8,192 x 64: p99 TTFT
    # 5,150 ms)
    engine = SchedulerLimits(num_blocks=100_000, block_size=64, budget_tokens=4096)
    model = StepModel(StepTerms(fixed_s=0.0, per_token_s=PREFILL_S_PER_TOKEN, per_kv_token_s=0.0))
    wave = CellSimulation(CONFIG, engine, model, context=8192, clients=8, seed=0, num_prompts=8).run()
    ttfts = sorted(s.t_first - s.t_send for s in wave)
    # the k-th of the wave waits for k + 1 prompts' prefill (a chunk boundary later where the decodes of those before
    # it took part of a step's budget): the last for the queued prefill sum, 0.68 s
    prefill_s = 8192 * PREFILL_S_PER_TOKEN
    assert ttfts[0] == pytest.approx(prefill_s) and ttfts[-1] == pytest.approx(8 * prefill_s, rel=0.01)
    assert all((k + 1) * prefill_s <= t <= (k + 1.5) * prefill_s + 1e-9 for k, t in enumerate(ttfts))


def test_the_pool_sends_num_prompts_requests_in_order_whoever_is_free():
    engine = SchedulerLimits(num_blocks=10_000, block_size=16, budget_tokens=2048)
    model = StepModel(StepTerms(fixed_s=0.01, per_token_s=0.0, per_kv_token_s=0.0, request_overhead_s=0.002))
    # gke's sweep at 64 clients: 100 requests (server.py's default num_prompts), not 64 x 1
    samples = CellSimulation(CONFIG, engine, model, context=128, clients=64, seed=0, num_prompts=100).run()
    assert len(samples) == 100 and sorted(s.seq for s in samples) == list(range(100))
    assert not any(s.warmup for s in samples)
    first = sorted(samples, key=lambda s: s.t_send)
    assert all(s.t_send == 0.0 for s in first[:64]) and all(s.t_send > 0.0 for s in first[64:])


def test_whole_run_tok_per_s_is_every_token_over_first_send_to_last_completion():
    # two slots, three requests of 8 tokens, 10 ms steps, 2 ms to the scheduler: slot 0 serves requests 0 and 2,
    # slot 1 request 1 and then idles, so the whole run (vllm bench serve's 'Output token throughput') counts the
    # drain the steady window leaves out
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=2048)
    model = StepModel(StepTerms(fixed_s=0.01, per_token_s=0.0, per_kv_token_s=0.0, request_overhead_s=0.002))
    samples = CellSimulation(CONFIG, engine, model, context=100, clients=2, seed=0, num_prompts=3).run()
    span_s = max(s.t_done for s in samples) - min(s.t_send for s in samples)  # type: ignore[type-var]
    # request 0: arrives 2 ms, prefill 2-12 ms, last token 82 ms; request 2 sent then, arrives 84 ms, joins the step
    # at 92 ms (after request 1's last), first token 102 ms, last 172 ms
    assert span_s == pytest.approx(0.172)
    whole = figures(samples, whole=True).output_tok_per_s
    assert whole == pytest.approx(24 / 0.172)
    assert figures(samples).output_tok_per_s > 1.2 * whole  # the steady window ends at slot 1's last completion


def test_a_later_cell_of_the_same_seed_hits_what_an_earlier_one_left_cached():
    # gke sweep: no --seed (vllm bench serve's 0) and 100 prompts a cell (inferred), 1,024 tokens at 1 client first:
    # only its request 0 hits (the test request sent prompt 0 before it); at 2 clients every prompt k was sent at 1
    # client: 960 tokens hit, whole blocks of 64 within the prompt minus one token (1,023)
    gke = GRIDS[GKE]
    clients = replay(gke, _plan(num_blocks=18_026, block_size=64))
    assert clients[(1024, 1)].cached_tokens[:2] == (960, 0) and not any(clients[(1024, 1)].cached_tokens[1:])
    assert clients[(1024, 2)].cached_tokens == (960,) * 100
    assert clients[(512, 8)].cached_tokens == (448,) * 100  # prompt k at 512 tokens is a prefix of k at 1,024
    assert clients[(1024, 64)].num_prompts == 100 and clients[(1024, 64)].start_spread_s == 0.0
    assert clients[(1024, 64)].whole_run
    # L4 sweep with --seed 1234: 8 prompts at 1 client, then 16 at 2 (block 16: 1,008 of 1,024 tokens hit)
    l4 = replay(GRIDS[L4], _plan(num_blocks=67_303, block_size=16))
    assert l4[(1024, 2)].cached_tokens == (1008,) * 8 + (0,) * 8
    # MI300X repeats with distinct seeds: only the test request's prompt 0
    mi = replay(GRIDS[MI300X], _plan(num_blocks=564_126, block_size=16))
    assert mi[(1024, 16)].cached_tokens == (1008,) + (0,) * 31


def test_streams_without_a_pool_take_the_prompts_the_pool_would_send_them():
    # config-validation 128 x 8 after 128 x 1 (16 prompts, seed 0): prompts 0 - 15 cached, 24 sent; with a pool the
    # scheduler numbers requests by prompt, without one by stream: stream s's request j is prompt 8 j + s, so the
    # first wave's 8 hit, the second's (prompts 8 - 15) too, the third's (16 - 23) not
    cached = (64,) * 16 + (0,) * 8
    pooled = CellClient(24, 0.0, True, cached).shapes(128, 8)
    streams = CellClient(None, 0.0, False, cached).shapes(128, 8)
    assert pooled is not None and streams is not None
    assert [pooled(0, k).cached_tokens for k in (0, 15, 16, 23)] == [64, 64, 0, 0]
    assert [streams(s, 0).cached_tokens for s in range(8)] == [64] * 8
    assert [streams(s, 1).cached_tokens for s in range(8)] == [64] * 8
    assert [streams(s, 2).cached_tokens for s in range(8)] == [0] * 8
    engine = SchedulerLimits(num_blocks=10_000, block_size=64, budget_tokens=4096)
    model = StepModel(StepTerms(fixed_s=0.01, per_token_s=0.0, per_kv_token_s=0.0, request_overhead_s=0.0))
    config = CONFIG.model_copy(update={"requests_per_client": 3})
    samples = CellSimulation(config, engine, model, context=128, clients=8, seed=0, shapes=streams).run()
    assert sorted(s.cached_tokens for s in samples) == sorted(cached)


def test_a_pool_too_small_evicts_the_earliest_prompts_first():
    # the gke sweep on a pool of 200 blocks of 64: 1,024 x 1's 100 requests fill 17 blocks each (16 of prompt, one of
    # prompt end and output), so at 1,024 x 2 the first prompts were evicted and, asked again in the same order,
    # each miss evicts the next one before it is asked: no hits but request 0's (the test request sent prompt 0)
    clients = replay(GRIDS[GKE], _plan(num_blocks=200, block_size=64))
    assert clients[(1024, 2)].cached_tokens[0] == 960 and not any(clients[(1024, 2)].cached_tokens[1:])


def test_a_protocol_naming_a_cell_the_grid_lacks_is_refused():
    grid = GRIDS[GKE].model_dump()
    grid["client"]["run_order"]["value"] = [["1024x1", "1024x3"]]
    with pytest.raises(ValidationError, match="1024x3"):
        MeasuredGrid.model_validate(grid)


def test_an_inferred_input_says_why():
    protocol = GRIDS[GKE].client
    assert protocol is not None and protocol.num_prompts.inferred and protocol.num_prompts.value == 100
    assert "default" in protocol.num_prompts.source and "server.py" in protocol.num_prompts.source
    assert not protocol.start.inferred and "serve.py" in protocol.start.source


def _plan(num_blocks: int, block_size: int):  # type: ignore[no-untyped-def]
    """What replay reads of a plan: its KV pool."""
    return SimpleNamespace(num_blocks=num_blocks, block_size=block_size)


def test_the_stream_starts_are_the_ones_the_grid_records() -> None:
    # gke's client is vllm bench serve, recorded 'simultaneous' (serve.py: every task created at once behind the
    # semaphore): streams start at t = 0 (CellSimulation start_spread_s 0.0); a protocol recorded 'staggered' draws
    # the phases (None); a grid recording no protocol gets what the caller passes
    gke = GRIDS[GKE]
    assert start_spread(gke) == 0.0
    assert replay(gke, _plan(num_blocks=18_026, block_size=64))[(1024, 8)].start_spread_s == 0.0
    assert gke.client is not None
    start = gke.client.start.model_copy(update={"value": "staggered"})
    staggered = gke.model_copy(update={"client": gke.client.model_copy(update={"start": start})})
    assert start_spread(staggered) is None
    seed = GRIDS["seed-v5e-1"]
    assert seed.client is None and start_spread(seed, unrecorded=0.25) == 0.25 and start_spread(seed) is None
