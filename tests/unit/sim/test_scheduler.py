"""The V1 scheduler simulation: exact times for one stream, chunked prefill, the KV wall, seeds."""

from __future__ import annotations

import pytest

from onechip.schemas.bench import BenchConfig
from onechip.schemas.plan import ServeSetting
from onechip.schemas.sim import StepTerms
from onechip.sim.figures import figures
from onechip.sim.predict import engine_of, simulate_cell
from onechip.sim.scheduler import CellSimulation, SchedulerLimits
from onechip.sim.steptime import StepModel

STEP_S = 0.010
OVERHEAD_S = 0.002


def config(**kw) -> BenchConfig:
    fields = dict(base_url="http://sim", output_tokens=8, requests_per_client=2, warmup_requests=1, reps=1)
    return BenchConfig(**(fields | kw))


def flat(**kw) -> StepModel:
    """Every step takes STEP_S whatever it holds, plus `kw` terms."""
    terms = dict(fixed_s=STEP_S, per_token_s=0.0, per_kv_token_s=0.0, request_overhead_s=OVERHEAD_S)
    return StepModel(StepTerms(**(terms | kw)))


def test_one_stream_times_are_exact():
    engine = SchedulerLimits(num_blocks=100, block_size=16, budget_tokens=2048)
    samples = CellSimulation(config(), engine, flat(), context=100, clients=1, seed=0).run()
    assert [s.warmup for s in samples] == [True, False, False]
    for s in samples:
        assert s.completion_tokens == 8 and s.prompt_tokens == 100
        # sent, 2 ms to the scheduler, one prefill step emits the first token, then one step per token
        assert s.t_first - s.t_send == pytest.approx(OVERHEAD_S + STEP_S)
        assert s.t_last - s.t_first == pytest.approx(7 * STEP_S)
    f = figures(samples)
    assert f.tpot_ms == pytest.approx(STEP_S * 1000) and f.ttft_ms == pytest.approx((OVERHEAD_S + STEP_S) * 1000)


def test_chunked_prefill_takes_one_step_per_budget():
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=2048)
    samples = CellSimulation(config(warmup_requests=0), engine, flat(), context=5000, clients=1, seed=0).run()
    # 5,000 prompt tokens under a 2,048-token budget: 3 steps before the first token
    assert samples[0].t_first - samples[0].t_send == pytest.approx(OVERHEAD_S + 3 * STEP_S)


def test_decode_cost_grows_with_the_batch():
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    model = flat(per_seq_s=0.001)
    one = figures(CellSimulation(config(), engine, model, context=64, clients=1, seed=0).run())
    eight = figures(CellSimulation(config(), engine, model, context=64, clients=8, seed=0).run())
    assert one.tpot_ms == pytest.approx(11.0)
    assert 14.0 < eight.tpot_ms <= 18.0 + 1e-9  # up to 8 sequences a step (10 ms + 8 x 1 ms)
    assert eight.output_tok_per_s > 4 * one.output_tok_per_s


def test_kv_wall_preempts_and_costs_throughput():
    # 38 blocks of 16 tokens; a 190-token prompt takes 12 blocks, and its 8 output tokens a 13th: three
    # prompts are admitted (36 blocks), then their decodes run out of blocks and one is preempted
    engine = SchedulerLimits(num_blocks=38, block_size=16, budget_tokens=4096)
    model = flat(per_token_s=0.0001)
    three = CellSimulation(config(), engine, model, context=190, clients=2, seed=0)
    eight = CellSimulation(config(), engine, model, context=190, clients=8, seed=0)
    f3, f8 = figures(three.run()), figures(eight.run())
    assert three.preemptions == 0 and eight.preemptions > 0
    assert f8.ttft_ms > 2 * f3.ttft_ms
    assert len(eight.done) == 8 * 3 and all(r.emitted == 8 for r in eight.done)  # recomputed, never dropped


def test_a_chunked_prompt_is_admitted_only_when_its_whole_prompt_fits():
    # 20 blocks of 16 tokens, a 64-token budget: a 190-token prompt (12 blocks) takes 3 steps. vLLM >= 0.19.0
    # admits the second stream's prompt only when its 12 blocks are free (scheduler_reserve_full_isl), so it waits
    # for the first request; admitted on its first chunk's block alone, it grows beside the first and one of them
    # is preempted by recompute
    engine = SchedulerLimits(num_blocks=20, block_size=16, budget_tokens=64)
    runs = {}
    for full in (True, False):
        limits = SchedulerLimits(**(engine.__dict__ | {"full_prompt_admission": full}))
        runs[full] = CellSimulation(config(), limits, flat(), context=190, clients=2, seed=0)
        runs[full].run()
        assert len(runs[full].done) == 2 * 3 and all(r.emitted == 8 for r in runs[full].done)
    assert runs[True].preemptions == 0 and runs[False].preemptions > 0


def test_engine_limits_follow_the_plan(cpu_plan):
    assert engine_of(cpu_plan).max_num_seqs == 256 and engine_of(cpu_plan).full_prompt_admission
    capped = cpu_plan.model_copy(
        update={
            "engine_version": "0.18.0",
            "serve": cpu_plan.serve.model_copy(
                update={"max_num_seqs": ServeSetting[int](value=8, reason="test", source="request")}
            ),
        }
    )
    assert (engine_of(capped).max_num_seqs, engine_of(capped).full_prompt_admission) == (8, False)


def test_max_num_seqs_caps_the_running_batch():
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096, max_num_seqs=2)
    sim = CellSimulation(config(), engine, flat(), context=64, clients=6, seed=0)
    widest = 0
    original = sim._schedule

    def watch(now):
        nonlocal widest
        out = original(now)
        widest = max(widest, len(sim.running))
        return out

    sim._schedule = watch
    sim.run()
    assert widest == 2


def test_streams_start_together_as_bench_starts_them():
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    samples = CellSimulation(config(), engine, flat(), context=64, clients=4, seed=0).run()
    assert sorted(s.t_send for s in samples if s.seq == 0) == [0.0] * 4


def test_a_seed_reproduces_a_run_and_another_seed_moves_staggered_phases():
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    runs = [
        CellSimulation(config(), engine, flat(), context=64, clients=4, seed=s, start_spread_s=0.5).run()
        for s in (0, 0, 1)
    ]
    assert runs[0] == runs[1]
    assert [s.t_send for s in runs[0]] != [s.t_send for s in runs[2]]
    assert max(s.t_send for s in runs[0] if s.seq == 0) <= 0.5


def test_jitter_desynchronises_streams_so_seeds_differ_and_reproduce():
    """Each simulation was deterministic: `--reps 3` printed '1,483.6-1,483.6' and streams that started
    together stayed in lock-step. With jitter the streams' sends drift apart; a seed still reproduces a run."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    cfg = config(requests_per_client=6)

    def run(seed: int, jitter: bool) -> list:
        # an API-server time of two steps: its variation (+-50%) is a step, enough to move a request's admission
        model = flat(request_overhead_s=2 * STEP_S)
        return CellSimulation(cfg, engine, model, context=64, clients=4, seed=seed, jitter=jitter).run()

    def times(samples: list) -> list:
        return [(s.t_send, s.t_first, s.t_done) for s in samples]

    assert times(run(0, False)) == times(run(1, False))  # without jitter every seed is the same run
    jittered = run(0, True)
    assert jittered == run(0, True) and times(jittered) != times(run(1, True))
    rates = {figures(run(seed, True)).output_tok_per_s for seed in range(3)}
    assert len(rates) == 3  # the reps differ, so a range over seeds means something


def test_a_request_larger_than_the_pool_is_infeasible(cpu_plan):
    cell = simulate_cell(cpu_plan, flat().terms, config(output_tokens=8), cpu_plan.max_model_len - 8, 1, seeds=1)
    assert cell.infeasible is None or "KV blocks" in cell.infeasible
    too_long = simulate_cell(cpu_plan, flat().terms, config(), cpu_plan.max_model_len, 1, seeds=1)
    assert too_long.infeasible is not None and "max_model_len" in too_long.infeasible


def test_open_loop_sends_on_schedule():
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    cfg = config(rate_per_s=10.0, arrivals="constant", requests_per_client=3, warmup_requests=0)
    samples = CellSimulation(cfg, engine, flat(), context=64, clients=2, seed=0).run()
    # k / rate from 0 s, as bench.runner.arrival_offsets sends them
    assert sorted(round(s.t_send, 6) for s in samples) == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]


def test_open_loop_without_an_arrivals_shape_is_poisson_as_bench_sends():
    """--rate without --arrivals is Poisson (BenchConfig.arrivals; bench.runner.rep_arrivals sends `arrivals or
    'poisson'`); the simulator sent those requests evenly spaced, a smoother load than bench measures."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)

    def sends(arrivals: str | None) -> list[float]:
        cfg = config(rate_per_s=10.0, arrivals=arrivals, requests_per_client=3, warmup_requests=0)
        return sorted(s.t_send for s in CellSimulation(cfg, engine, flat(), context=64, clients=2, seed=0).run())

    assert sends(None) == sends("poisson") != sends("constant")


def test_a_busy_api_server_merges_tokens_into_larger_chunks():
    # a round of output delivery costs 25 ms per request with new tokens, a step 10 ms: while one round runs,
    # the next steps' tokens wait and go out together (vLLM V1's RequestOutputCollector merges them)
    engine = SchedulerLimits(num_blocks=100, block_size=16, budget_tokens=2048)
    model = flat(per_stream_chunk_s=0.025)
    samples = CellSimulation(config(warmup_requests=0), engine, model, context=100, clients=1, seed=0).run()
    first = samples[0]
    assert len(set(first.chunk_times)) < first.completion_tokens  # fewer deliveries than tokens
    # the first token leaves one round after its step; the engine is not slowed: 8 tokens in 8 steps, the last
    # delivered at most one round after the engine emitted it
    assert first.t_first - first.t_send == pytest.approx(OVERHEAD_S + STEP_S + 0.025)
    engine_done = first.t_send + OVERHEAD_S + 8 * STEP_S
    assert engine_done < first.t_last <= engine_done + 2 * 0.025 + 1e-9


def test_a_busy_api_server_delays_new_requests_behind_its_rounds():
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    idle = figures(CellSimulation(config(), engine, flat(), context=64, clients=8, seed=0).run())
    busy = figures(
        CellSimulation(config(), engine, flat(per_stream_chunk_s=0.004), context=64, clients=8, seed=0).run()
    )
    # rounds of up to 8 x 4 ms sit between a request and the scheduler: TTFT grows; tokens merge into chunks,
    # so the pace stays near the engine's 10 ms, far from the 8 x 4 + 10 ms a per-token serial server would give
    assert busy.ttft_ms > idle.ttft_ms + 4.0
    assert busy.tpot_ms < 2 * idle.tpot_ms < 8 * 4.0 + 10.0


def test_per_token_output_work_caps_the_client_visible_pace():
    # vLLM V1's output handler processes every request's token of every step before deltas merge: at 4 ms a
    # token, 8 streams need 32 ms of server time per 10 ms engine step, so the pace is the server's (~32 ms a
    # token per stream), not the engine's; 2 streams (8 ms < 10 ms) keep the engine's pace
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    model = flat(per_output_token_s=0.004)
    cfg = config(output_tokens=32)
    busy = figures(CellSimulation(cfg, engine, model, context=64, clients=8, seed=0).run())
    light = figures(CellSimulation(cfg, engine, model, context=64, clients=2, seed=0).run())
    assert busy.output_tok_per_s == pytest.approx(1.0 / 0.004, rel=0.1)
    assert light.tpot_ms == pytest.approx(STEP_S * 1000.0, rel=0.1)


def test_a_later_stream_start_does_not_hold_the_api_server_in_advance():
    """Staggered starts: a stream that starts at 0.5 s must not book the API server's time before then. It did
    (every first send went through the server at t = 0), so the output rounds of a stream started at 0 waited
    until the last stream's start: its first request's TTFT read ~0.5 s instead of one step."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    sim = CellSimulation(config(warmup_requests=0), engine, flat(), context=64, clients=2, seed=0)
    sim.stream_start = {}
    original = sim._start_clients

    def starts() -> None:  # stream 0 at 0, stream 1 at 0.5 s
        sim.start_spread_s = 0.0
        original()
        sim.unsent[1].t_out = sim.unsent[1].t_send = sim.stream_start[1] = 0.5

    sim._start_clients = starts  # type: ignore[method-assign]
    first = next(s for s in sim.run() if s.stream == 0 and s.seq == 0)
    assert first.t_first - first.t_send == pytest.approx(OVERHEAD_S + STEP_S)


def test_open_loop_sends_in_the_future_do_not_delay_earlier_output():
    # 2 clients at 1 request/s: the second request is released at t = 0 but leaves at 1 s; the first
    # request's tokens go out a step apart, not after 1 s
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    cfg = config(rate_per_s=1.0, arrivals="constant", requests_per_client=1, warmup_requests=0)
    samples = sorted(CellSimulation(cfg, engine, flat(), context=64, clients=2, seed=0).run(), key=lambda s: s.t_send)
    assert samples[0].t_last - samples[0].t_send == pytest.approx(OVERHEAD_S + 8 * STEP_S)


def test_async_scheduling_takes_a_request_arriving_mid_step_one_step_later():
    """vLLM V1 under async scheduling (vllm/v1/engine/core.py step_with_batch_queue, batch queue of 2) schedules
    step k+1 while step k runs, so a request reaching the engine during step k joins step k+2, not k+1; an idle
    engine takes a request as it comes."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    # two requests sent 3 ms apart (at 0 and 3 ms), each 2 ms through the API server
    cfg = config(warmup_requests=0, requests_per_client=1, rate_per_s=1 / 0.003, arrivals="constant")

    def ttfts(overlap: bool) -> list[float]:
        model = StepModel(flat().terms, overlap_host=overlap)
        return sorted(s.t_first - s.t_send for s in CellSimulation(cfg, engine, model, 64, 2, seed=0).run())

    # the first reaches an idle engine at 2 ms and is prefilled at once (2-12 ms); the second reaches it at 5 ms,
    # during that step: a synchronous engine takes it into the step at 12 ms (first token at 22 ms), an async one
    # had scheduled that step at 2 ms, so it joins the step at 22 ms (first token at 32 ms)
    assert ttfts(False) == pytest.approx([OVERHEAD_S + STEP_S, 0.022 - 0.003])
    assert ttfts(True) == pytest.approx([OVERHEAD_S + STEP_S, 0.032 - 0.003])


def test_async_closed_loop_send_after_the_last_token_waits_the_rest_of_a_step_and_a_whole_one():
    """Closed loop under async scheduling (issue 22, sim68b): a stream's next request is sent when its last token
    arrives, at the end of step k, while step k+1 runs and step k+2 was scheduled already (vllm 0.19.0 sdist,
    vllm/v1/engine/core.py step_with_batch_queue: step k+2 is scheduled and launched right after step k's output is
    returned, before the busy loop reads the input queue again). So the request waits the rest of step k+1 and the
    whole of step k+2 and is prefilled in step k+3: TTFT = API server + (step - API server) + step + step, not the
    half step a uniform arrival would wait. A synchronous engine takes it into step k+2."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    cfg = config(warmup_requests=0, requests_per_client=2)

    def ttfts(overlap: bool) -> list[float]:
        model = StepModel(flat().terms, overlap_host=overlap)
        samples = CellSimulation(cfg, engine, model, context=64, clients=2, seed=0, start_spread_s=0.0).run()
        return [s.t_first - s.t_send for s in sorted(samples, key=lambda s: (s.seq, s.stream))]

    # both streams send at 0; the API server passes A at 2 ms (an idle engine prefills it at once, 2-12 ms) and B
    # at 4 ms, mid-step. Second requests: A's last token ends the step at 82 ms, A2 reaches the engine at 84 ms,
    # during 82-92, whose successor (92-102) was scheduled at 82: A2 is prefilled 102-112, TTFT 30 ms (B2 alike)
    assert ttfts(True) == pytest.approx([0.012, 0.032, 0.030, 0.030])
    assert ttfts(False) == pytest.approx([0.012, 0.022, 0.020, 0.020])


def test_a_wave_admitted_together_pays_the_admission_cost_in_one_step_every_wave():
    """per_admit_s is host work of the step that admits a request: four streams sent together are
    admitted in one step of 10 + 4 x 3 ms, so each request's first token comes 22 ms after it was sent, in every
    wave (their peers finish together and send together), while decode steps stay 10 ms; one stream pays 13 ms."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    model = flat(request_overhead_s=0.0, per_admit_s=0.003)
    four = CellSimulation(config(requests_per_client=3), engine, model, context=64, clients=4, seed=0).run()
    assert [s.t_first - s.t_send for s in four] == pytest.approx([STEP_S + 4 * 0.003] * 16)
    assert figures(four).tpot_ms == pytest.approx(STEP_S * 1000)
    one = CellSimulation(config(), engine, model, context=64, clients=1, seed=0).run()
    assert figures(one).ttft_ms == pytest.approx((STEP_S + 0.003) * 1000)


def test_a_mamba_plan_runs_every_sequence_its_state_cache_holds(tmp_path):
    # Mamba-2.8B on an H100: 5,672 state pages, 2 a sequence (prefix caching on) = 2,836 sequences of any length up
    # to 2,048 tokens (5,690 until the V2 runner's PenaltiesState, 1,024 x (50,280 + 1,572) x 4 B, was counted:
    # engines.json v2_runner_rules penalty_state). Read as 5,672 KV blocks of 16 tokens (90,752 tokens), 256 streams
    # of 1,024 + 8 tokens (264,192) were preempted by recompute: `simulate` said 'beyond the KV wall (4 preemptions by
    # recompute)'
    from factories import sized_checkpoint
    from onechip.planner import plan_model
    from onechip.schemas.common import GIB

    # state-spaces/mamba-2.8b-hf's sizing fields, as tests/unit/planner/test_planner_attention_free_mamba.py types them
    config_json = {
        "architectures": ["MambaForCausalLM"], "model_type": "mamba", "torch_dtype": "bfloat16", "hidden_size": 2560,
        "intermediate_size": 5120, "state_size": 16, "conv_kernel": 4, "expand": 2, "num_hidden_layers": 64,
        "vocab_size": 50280, "time_step_rank": 160, "tie_word_embeddings": True,
    }  # fmt: skip
    path = sized_checkpoint(tmp_path / "mamba", config_json, 5 * GIB)
    plan = plan_model(str(path), "h100", "vllm-gpu", dtype="bfloat16", multimodal=False, engine_version="0.32.0")
    assert (plan.state_slots, plan.num_blocks, plan.kv_tokens) == (2836, 5672, 90_752)
    engine = engine_of(plan)
    assert (engine.num_blocks, engine.block_size) == (2836, 2048)
    sim = CellSimulation(config(output_tokens=32), engine, flat(), context=1024, clients=256, seed=0)
    sim.run()
    assert sim.preemptions == 0 and len(sim.done) == 256 * 3
    as_tokens = CellSimulation(config(output_tokens=32), SchedulerLimits(5672, 16, engine.budget_tokens), flat(),
                               context=1024, clients=256, seed=0)  # fmt: skip
    as_tokens.run()
    assert as_tokens.preemptions > 0  # what the sim did with the plan read as KV blocks


def _most_generating(samples) -> int:
    """The most requests generating at once (first token to last): never more than were in flight, since a request
    is in flight from its send, before its first token, to its last."""
    edges = sorted([(s.t_first, 1) for s in samples] + [(s.t_done, -1) for s in samples])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.mark.parametrize(("max_in_flight", "most"), [(0, 20), (3, 3)])
def test_open_loop_in_flight_cap_is_max_in_flight_as_bench_holds_it(max_in_flight, most):
    """A --rate run is one stream whose arrivals bench sends at most max_in_flight at a time, 0 = no cap
    (bench.worker.in_flight_cap, vllm bench serve without --max-concurrency). 20 arrivals 1 ms apart, each request
    8 steps of 10 ms: with no cap all 20 generate together; the simulator capped them at the one stream's 1."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    cfg = config(rate_per_s=1000.0, arrivals="constant", requests_per_client=20, warmup_requests=0,
                 max_in_flight=max_in_flight)  # fmt: skip
    samples = CellSimulation(cfg, engine, flat(), context=64, clients=1, seed=0).run()
    assert len(samples) == 20  # clients x requests_per_client, bench.runner.rep_arrivals
    assert _most_generating(samples) == most


def test_open_loop_first_arrival_is_at_the_start_as_bench_sends_it():
    """bench.runner.arrival_offsets puts the first arrival at 0 s, then k / rate (constant); the simulator began
    one gap later (0.1, 0.2, ... at 10/s)."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    cfg = config(rate_per_s=10.0, arrivals="constant", requests_per_client=3, warmup_requests=0, max_in_flight=0)
    samples = CellSimulation(cfg, engine, flat(), context=64, clients=1, seed=0).run()
    assert sorted(round(s.t_send, 6) for s in samples) == [0.0, 0.1, 0.2]


def test_a_drawn_start_cell_reads_its_whole_run_as_a_client_that_sends_every_stream_at_once(seed_plan):
    """Drawn start phases stand for streams that drifted apart; no client has their ramp (bench and vllm bench serve
    send every stream's first request at once), so the whole-run figure comes from a run started so: at 128 x 8 the
    drawn ramp read 0.82 - 0.85 of the steady window where the measured runs read 0.97 - 0.99 (sim_accuracy.py)."""
    from factories import SEED_TERMS
    from onechip.api._predict import predicted_cell

    cfg = config(output_tokens=128, requests_per_client=3, warmup_requests=0)
    drawn = simulate_cell(seed_plan, SEED_TERMS, cfg, 128, 8, seeds=2, start_spread_s=None)
    together = simulate_cell(seed_plan, SEED_TERMS, cfg, 128, 8, seeds=2, start_spread_s=0.0)
    assert {s.t_send for run in drawn.whole_run_by_seed.values() for s in run if s.seq == 0} == {0.0}
    assert drawn.whole_run_by_seed == together.samples_by_seed  # the same run a together start simulates
    cell, alone = predicted_cell(drawn, cfg, 2), predicted_cell(together, cfg, 2)
    assert cell.whole_run_tok_per_s == pytest.approx(alone.whole_run_tok_per_s)
    assert [r.whole_run_s for r in cell.reps] == [r.whole_run_s for r in alone.reps]
    assert cell.ttft_ms == predicted_cell(drawn, cfg, 2).ttft_ms  # latencies still from the drawn phases
    assert cell.whole_run_tok_per_s > 0.9 * cell.output_tok_per_s  # no invented ramp
    assert not together.whole_run_by_seed  # started together already: one run serves both


def test_a_caller_that_reads_no_whole_run_figure_skips_the_run_that_gives_it(seed_plan):
    """The run with every stream sent at once is read for the whole-run figures alone (with_whole_run); without them
    (whole_run=False) it is not simulated, and the drawn-start samples are the same."""
    from factories import SEED_TERMS

    cfg = config(output_tokens=128, requests_per_client=3, warmup_requests=0)
    both = simulate_cell(seed_plan, SEED_TERMS, cfg, 128, 8, seeds=2, start_spread_s=None)
    steady = simulate_cell(seed_plan, SEED_TERMS, cfg, 128, 8, seeds=2, start_spread_s=None, whole_run=False)
    assert both.whole_run_by_seed and not steady.whole_run_by_seed
    assert steady.samples_by_seed == both.samples_by_seed


def test_the_renderer_tokenizes_prompts_sent_together_one_after_the_other():
    """vLLM's API server tokenizes on a renderer pool of one worker (0.34.0 vllm/renderers/base.py, config/model.py
    renderer_num_workers = 1): the second of two prompts sent together waits for the first's tokenization."""
    engine = SchedulerLimits(num_blocks=1000, block_size=16, budget_tokens=4096)
    model = StepModel(flat(tokenize_scale=0.5).terms, tokenize_us_per_token=((1000, 20.0),))  # 10 ms a 1,000 tokens
    sim = CellSimulation(config(), engine, model, context=1000, clients=2, seed=0)
    first, second = sim._through_frontend(0.0, 1000), sim._through_frontend(0.0, 1000)
    assert first == pytest.approx(OVERHEAD_S + 0.010)
    assert second == pytest.approx(first + 0.010)  # not 2 x OVERHEAD_S + 10 ms, as two threads would give


def test_one_stream_ttft_carries_its_prompts_tokenization_only_when_the_term_is_on():
    engine = SchedulerLimits(num_blocks=100, block_size=16, budget_tokens=2048)
    table = ((100, 50.0),)  # 5 ms a 100-token prompt at scale 1
    for scale, tokenize_s in ((1.0, 0.005), (0.0, 0.0)):  # scale 0: the term off, STEP_MODEL 6's times
        model = StepModel(flat(tokenize_scale=scale).terms, tokenize_us_per_token=table)
        samples = CellSimulation(config(), engine, model, context=100, clients=1, seed=0).run()
        assert all(s.t_first - s.t_send == pytest.approx(OVERHEAD_S + tokenize_s + STEP_S) for s in samples)
