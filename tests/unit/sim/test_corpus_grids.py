"""The measurement corpus as benchmarks/sim_accuracy.py and sim.priors read it: a grid marked duplicate_of another
(the same deployment, engine build and day measured again) is neither read by the priors nor scored, and each grid is
planned at the settings its source states. Expected values are the corpus's own cells and their sources."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from onechip import catalog
from onechip.schemas.sim import StepTerms
from onechip.sim import priors

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
try:
    import sim_accuracy
finally:
    sys.path.remove(str(BENCHMARKS))

SURVEY, GKE = "survey-v6e-1-dollars", "gke-v6e-1-2026-08-25"


def test_the_survey_v6e_grid_is_the_gke_deployment_measured_again() -> None:
    grids = {g.name: g for g in catalog.serving_measurements().grids}
    survey, gke = grids[SURVEY], grids[GKE]
    assert survey.duplicate_of == GKE
    # gke-vllm-v6e1-2b README 'Second run': 199 and 1,180 tok/s at 1 and 8 clients, against the sweep's 199.38 and
    # 1,179.85: one deployment, within the $/M rounding the seed published them at
    twin = {(c.context_tokens, c.clients): c.output_tok_per_s for c in gke.cells}
    for cell in survey.cells:
        if cell.clients in (1, 8):
            assert abs(cell.output_tok_per_s / twin[(cell.context_tokens, cell.clients)] - 1) < 0.005


def test_every_duplicate_names_a_distinct_grid_of_the_same_chip_and_model() -> None:
    grids = {g.name: g for g in catalog.serving_measurements().grids}
    marked = [g for g in grids.values() if g.duplicate_of is not None]
    assert marked  # the survey grid at least
    for grid in marked:
        twin = grids[grid.duplicate_of]  # type: ignore[index]
        assert twin.duplicate_of is None
        assert (twin.chip, twin.model) == (grid.chip, grid.model)


def test_a_duplicate_is_read_by_no_prior_and_scored_by_no_benchmark() -> None:
    names = {g.name for g in priors.distinct_grids()}
    assert GKE in names and SURVEY not in names
    assert not any(g == SURVEY for g, _, _, _ in priors.decode_fractions())
    assert SURVEY not in sim_accuracy.GRIDS and GKE in sim_accuracy.GRIDS


def test_the_sweep_grid_is_planned_at_its_served_length_and_utilization() -> None:
    # sweep-main.log: 'google/gemma-4-E2B-it healthy at max-model-len=65536'; sweep_serve.sh '--gpu-memory-utilization
    # 0.9' (the planner's vllm-tpu default is 0.92)
    grid = sim_accuracy.GRIDS["gemma4dev-v6e-1-sweep-one-client"]
    plan = sim_accuracy.plan_for(grid)
    assert (plan.max_model_len, plan.utilization) == (65536, 0.9)
    # each one-client cell as many prompts as sweep-main.log's 'np=' says: 16 up to 512 tokens, 8 to 8,192, 4 above
    assert {c.context_tokens: c.num_prompts for c in grid.cells} == {
        128: 16, 2048: 8, 4096: 8, 8192: 8, 16384: 4, 32768: 4
    }  # fmt: skip


def test_the_llama_and_gemma_12b_fp8_grids_are_planned_from_the_catalog() -> None:
    # both were skipped ('not in catalog/models.json, and the benchmark does not ask the Hub')
    a100 = sim_accuracy.plan_for(sim_accuracy.GRIDS["musgrave-a100-40gb-llama31-8b"])
    # the grid's own derivation: bf16 checkpoint 16,060,522,496 B less the gathered 128,256 x 4,096 x 2 B table
    assert a100.decode_bytes_per_step == 16_060_522_496 - 128_256 * 4_096 * 2
    mi300x = sim_accuracy.plan_for(sim_accuracy.GRIDS["gemma4dev-mi300x-12b-fp8-2026-10-09"])
    # the grid's note: 'GPU KV cache 470,708 tokens' (the same deployment's boot log)
    assert abs(mi300x.kv_tokens / 470_708 - 1) < 0.01


def test_every_scored_grid_measured_by_vllm_bench_serve_records_how_its_client_ran() -> None:
    # vllm bench serve (each grid's note) starts a cell's streams together and publishes whole-run tok/s (vllm 0.26.0
    # benchmarks/serve.py); the corpus mode replays that, so a grid it scores must say so, with the source of each input
    # (the seed grid's note names it only for the output length it assumes; the g4dn grid's harness is another client;
    # the A100 page's 20C prompts a cell are not recorded yet: stating them as cells' num_prompts moves the default
    # scoring, which was not re-run)
    unrecorded = {sim_accuracy.SEED_GRID.name, "musgrave-a100-40gb-llama31-8b"}
    served = [
        g
        for g in sim_accuracy.GRIDS.values()
        if "vllm bench serve" in g.note and "NOT vllm bench serve" not in g.note and g.name not in unrecorded
    ]
    assert {g.name for g in served} >= {GKE, "gce-v6e-1-2026-08-10", "gemma4dev-v6e-1-config-validation"}
    for grid in served:
        assert grid.client is not None, grid.name
        assert (grid.client.start.value, grid.client.tok_per_s.value) == ("simultaneous", "whole_run")
        inputs = (grid.client.tool, grid.client.num_prompts, grid.client.seed, grid.client.prefix_caching)
        assert all(i.source and (not i.inferred or "inferred" in i.source) for i in inputs), grid.name


def test_every_corpus_grid_passes_the_calibration_check_of_cells_without_reps() -> None:
    """check_cells bounds a rep-less cell's medians by its own tok/s (calibrate._check_medians): every published
    grid that can be simulated (output tokens stated or assumed) must still pass, on every cell it publishes."""
    from onechip.sim.calibrate import check_cell

    checked = 0
    for grid in catalog.serving_measurements().grids:
        if grid.output_tokens is None:
            continue
        run = sim_accuracy.grid_run(grid)
        for cell in run.cells:
            if cell.ttft_ms.median is not None and cell.tpot_ms.median is not None:
                check_cell(cell, run.config)
                checked += 1
    assert checked >= 100  # the 100 cells with TTFT and TPOT the corpus published at 1576a3e


def test_with_recorded_starts_each_grid_starts_its_streams_as_its_client_did() -> None:
    # vllm bench serve at request rate inf creates one task per request at once behind the max-concurrency semaphore
    # (vllm benchmarks/serve.py benchmark(); every corpus grid's client.start source says so): with --recorded those
    # grids start every stream at t = 0. A grid recording no client (g4dn's own harness) keeps the drawn phases
    # `simulate` uses (sim.predict.START_SPREAD_S), the seed its own; without --recorded every grid is drawn.
    for name, grid in sim_accuracy.GRIDS.items():
        recorded = sim_accuracy.start_spread(grid, together=False, recorded=True)
        drawn = sim_accuracy.start_spread(grid, together=False, recorded=False)
        if name == "seed-v5e-1":
            assert recorded is drawn is sim_accuracy.SEED_START_SPREAD
        elif grid.client is not None and grid.client.tool.value == "vllm bench serve":
            assert grid.client.start.value == "simultaneous" and recorded == 0.0, name
            assert drawn is sim_accuracy.START_SPREAD_S
        else:
            assert recorded is drawn is sim_accuracy.START_SPREAD_S
    assert sim_accuracy.GRIDS["gemma4dev-t4-g4dn-e2b-2026-08-30"].client is None
    assert sim_accuracy.start_spread(sim_accuracy.GRIDS[GKE], together=True, recorded=False) == 0.0


def test_a_grid_recording_its_client_is_simulated_with_the_prefix_cache_hits_its_prompts_had() -> None:
    # gke's sweep drew one seed's prompts in every cell (server.py passes no --seed) with prefix caching on: after
    # 1,024 x 1, each 1,024-token prompt is cached but its last block (960 of 1,024 tokens, sim.protocol.replay).
    # Simulated without those hits, 1,024 x 16 prefilled 16 x 1,024 tokens the measured run did not (TTFT 34.2 ms
    # measured, 120 - 123 ms simulated from the gce and config-validation fits, --recorded)
    gke = sim_accuracy.GRIDS[GKE]
    plan = sim_accuracy.plan_for(gke)
    clients = sim_accuracy.cached_prompts(gke, plan, 0.0)
    assert clients[(1024, 16)].num_prompts is None and set(clients[(1024, 16)].cached_tokens) == {960}
    run = sim_accuracy.grid_run(gke)
    run = run.model_copy(update={"cells": [c for c in run.cells if (c.context_tokens, c.clients) == (1024, 16)]})
    terms = StepTerms(
        fixed_s=0.0044,
        weights_s=0.003,
        per_seq_s=0.0003,
        per_token_s=8e-6,
        per_kv_token_s=4e-8,
        request_overhead_s=0.002,
    )
    predicted = sim_accuracy._pred_measured(plan, terms, run, 0.0, gke, recorded=True)[(1024, 16)]
    assert predicted.cached_share == pytest.approx(960 / 1024)
    # a grid that records no client (the seed article's) is simulated as before, with no hits
    assert sim_accuracy.cached_prompts(sim_accuracy.SEED_GRID, sim_accuracy.seed_plan(), None) == {}


def test_predicting_with_the_clients_starts_alone_sends_every_stream_at_once_and_prefills_every_prompt() -> None:
    # --predict-starts (sim71b): the grid's recorded starts (vllm bench serve: every slot sent at once) without the
    # hits its seed-0 prompts had; --predict-recorded both; by default as the fits: drawn starts, no hits
    gke = sim_accuracy.GRIDS[GKE]
    assert sim_accuracy.predicted_as(gke, predict_recorded=False, predict_starts=True) == (0.0, False)
    assert sim_accuracy.predicted_as(gke, predict_recorded=True, predict_starts=False) == (0.0, True)
    assert sim_accuracy.predicted_as(gke, False, False) == (sim_accuracy.START_SPREAD_S, False)
    # a grid recording no client keeps the drawn starts either way
    t4 = sim_accuracy.GRIDS["gemma4dev-t4-g4dn-e2b-2026-08-30"]
    assert sim_accuracy.predicted_as(t4, False, True) == (sim_accuracy.START_SPREAD_S, False)
    # gke's 1,024 x 16 simulated so: its 100-prompt pool sent together, each prompt prefilled in full (the replayed
    # hits, 960 of 1,024 tokens, are what --predict-recorded adds)
    plan = sim_accuracy.plan_for(gke)
    run = sim_accuracy.grid_run(gke)
    run = run.model_copy(update={"cells": [c for c in run.cells if (c.context_tokens, c.clients) == (1024, 16)]})
    terms = StepTerms(fixed_s=0.0044, weights_s=0.003, per_seq_s=0.0003, per_token_s=8e-6, per_kv_token_s=4e-8)
    spread, hits = sim_accuracy.predicted_as(gke, predict_recorded=False, predict_starts=True)
    predicted = sim_accuracy._pred_measured(plan, terms, run, spread, gke, recorded=hits)[(1024, 16)]
    assert not predicted.cached_share


def test_a_cells_regime_is_its_prompts_against_the_prefill_room_of_one_request() -> None:
    # config-validation (128 output tokens, max-num-batched-tokens 4096): one request's decode steps leave room for
    # 127 x 4,096 = 520,192 prompt tokens beside them; 16,000 x 32 (512,000) and 8,192 x 64 (524,288) sit on it, the
    # knee, and from 16,000 x 40 (640,000) every client more adds one prompt's prefill to TTFT (knee_v6e1.json: 2,088,
    # 3,659, 5,273 ms at 40, 46, 52 clients)
    regime = sim_accuracy.regime
    assert regime(16000, 32, 128, 4096) == regime(8192, 64, 128, 4096) == "knee"
    assert regime(32000, 16, 128, 4096) == "knee"
    assert regime(16000, 40, 128, 4096) == regime(32000, 32, 128, 4096) == "saturated"
    # below the knee: each prompt one chunk (context within the budget) or chunked over several steps
    assert regime(128, 8, 128, 4096) == regime(4096, 64, 128, 4096) == "below the knee, one chunk"
    assert regime(8192, 32, 128, 4096) == regime(16384, 8, 128, 4096) == "below the knee, chunked"
    assert regime(32768, 1, 128, 4096) == "one client"


def test_a_grid_whose_client_records_its_prompts_is_simulated_at_that_count_in_every_cell() -> None:
    # gke's client record: num_prompts 100 a cell (serving_measurements.json, inferred from server.py's
    # run_vllm_benchmark default), taken by whichever of the max-concurrency slots is free (vllm bench serve; the
    # precedence sim.protocol replays: the protocol's count, else the cell's, else the grid's per client). Its cells
    # were simulated at the grid's 3 a client (3 at one client, 192 at 64), in the fit and the predictions
    grid = sim_accuracy.GRIDS[GKE]
    assert grid.client is not None and grid.client.num_prompts.value == 100
    plan = sim_accuracy.plan_for(grid)
    run = sim_accuracy.grid_run(grid)
    run = run.model_copy(
        update={"cells": [c for c in run.cells if (c.context_tokens, c.clients) in {(1024, 1), (1024, 64)}]}
    )
    spread = sim_accuracy.start_spread(grid)
    predicted = sim_accuracy._pred_measured(plan, priors.measured_priors(plan), run, spread, grid)
    assert {k: c.requests_sent for k, c in predicted.items()} == {
        (1024, 1): 100 * sim_accuracy.SEEDS, (1024, 64): 100 * sim_accuracy.SEEDS
    }  # fmt: skip
    fitted = sim_accuracy.fit_clients(grid, plan, spread)  # what the fit simulates each cell as: the same pool
    assert fitted is not None and {c.num_prompts for c in fitted.values()} == {100}
    assert set(fitted) == {(c.context_tokens, c.clients) for c in grid.cells}
