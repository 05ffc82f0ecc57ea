"""Calibration: fit the step-time terms to a few measured cells, by simulating those cells.

The cheapest measurement that pins the model (`bench --calibration`, BenchConfig.grid_cells): one client at
a short and a longer context (TPOT at two contexts pins the per-step and per-KV-token costs; TTFT at two
lengths the per-token prefill cost and the request overhead), the same two contexts at many clients (the
per-sequence host cost and the prefill interference), and one client at a long context (prefill at long
context, where attention's share shows, without queueing). A run with one client at one context only and a
second context at several clients is accepted too (published grids often look so). Any other measured cells
may be added; more cells, better fit.

The fit is Levenberg-Marquardt on the logarithm of each term (terms stay positive; the device terms stay above
the chip's roofline, _floors: no chip beats its datasheet bandwidth or peak), the residuals being the
relative errors of the simulated output tok/s, median TTFT and median TPOT of each calibration cell (the
simulation runs exactly the measured run's workload), each weighted by the inverse of its figure's
measurement noise (_figure_weights: TTFT re-measures 3x less tightly than tok/s and TPOT), plus a weak pull
towards one data-derived centre (the prior) so a term the cells cannot pin stays near it rather than wandering.

Which terms the cells pinned is decided jointly, from the linearised posterior at the solution (`identified`):
two terms the cells see only as a sum (under async scheduling the one-client step is max(host, device), so the
fixed host cost and the weight read are told apart only by cells on both sides of the switch) each move every
figure, yet neither is pinned. Those are reported apart (`Calibration.unseparated`). Where the cells cannot
separate host from device work the answer is the posterior's: the fit starts on both sides of the switch
(STARTS) and keeps the basin holding the most posterior mass (`_evidence`: fit to the cells and the pull
towards the one centre, and how finely its terms must be tuned), so the posterior, not which side of the switch
a step of the solver fell to, decides between splits the cells fit alike.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping
from datetime import UTC, datetime

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import rules
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import Plan
from onechip.schemas.bench import BenchConfig, BenchRun, CellResult
from onechip.schemas.common import plural
from onechip.schemas.sim import Calibration, CalibrationKey, StepTerms
from onechip.sim.figures import FIGURES, figures
from onechip.sim.predict import START_SPREAD_S, simulate_cell, whole_run_runs
from onechip.sim.protocol import CellClient
from onechip.sim.steptime import STEP_MODEL, TOKENIZE_US_PER_TOKEN, roofline_priors

TERMS = (
    "fixed_s",
    "weights_s",
    "per_seq_s",
    "per_token_s",
    "per_kv_token_s",
    "per_attn_pair_s",
    "request_overhead_s",
    "per_stream_chunk_s",
    "per_output_token_s",
    "per_admit_s",
    "tokenize_scale",
)
# Whether the fit sets per_admit_s (host work per request a step admits); off, it stays 0 and the fit is STEP_MODEL
# 6's (turning it on by default is a new STEP_MODEL). Measured grids' short-context TTFT grows linearly with clients
# and every wave of requests queues, which a cost paid in the admitting step gives and the API server's serial
# request cost, which staggers a wave, does not. Off: on the corpus it helps calibrated TTFT (35.7 -> 32.4%) but
# carried ones lose (measured, same family 35.4 -> 38.8%); benchmarks/sim_accuracy.py (--admit) records the figures.
ADMIT = False
# Whether the fit sets tokenize_scale (the API server's renderer thread tokenizing each prompt, one at a time, at the
# measured table's shape, sim.steptime.TOKENIZE_US_PER_TOKEN, times this host-speed factor); off, it stays 0 and the
# fit is STEP_MODEL 6's, as ADMIT. Its start is 1 (the serving host as fast as the machine the table was measured on),
# the centre the weak pull holds it near where the cells cannot pin it; the longest one-client cell pins it (its TTFT
# holds the longest tokenization, apart from the request overhead the shortest cells pin). A model with no measured
# table (other than gemma3 / gemma4) has no term: the fit holds it at 0 and its report says why (Calibration.held).
# Off: no fit on the seed or the corpus's v6e grids pins it (none has more than one long one-client cell), so it
# stays near 1, which is 2 - 3 x the serving hosts' (seed held-out TTFT 33.6 -> 48.4%, 2026-12-07);
# benchmarks/sim_accuracy.py (--tokenize) records what it gave.
TOKENIZE = False
FIT_SEEDS = 2  # simulations averaged per calibration cell inside the fit
PULL = 0.05  # weight of the pull towards the centre, per log-unit (weak: data dominate)
STEP = 0.05  # finite-difference step in log(term)
MAX_ITERATIONS = 15
# dtypes whose matmuls run no faster than the chip's bf16 dense peak (steptime._peak_flops' fallback)
FLOAT_DTYPES = frozenset({"bfloat16", "float16", "half", "float32", "float"})
# The fit's starting points: (share of the busiest cell's slowdown put on the engine, the rest on the API server;
# the one-client step host-bound or device-bound under async scheduling). The first is the centre the pull is
# towards (_start says why); the others are only where the solver sets off from.
STARTS = ((1.0, False), (0.0, False), (1.0, True))


def usable(cell: CellResult) -> bool:
    return cell.status == "ok" and cell.tpot_ms.median is not None and cell.ttft_ms.median is not None


def check_cells(cells: list[CellResult], config: BenchConfig) -> None:
    """Raise ConfigError naming what is missing unless `cells` hold one client at one context, a cell at a
    second context, and one cell with several clients (the calibration grid's minimum); or naming the first 'ok'
    cell that check_cell refuses (`config`: the run's); or that the run replayed a trace, which the fit cannot
    simulate (sim.predict runs a cell's streams on uniform prompts, not a trace file's requests and times)."""
    if config.workload == "trace":
        raise ConfigError(
            "a trace replay cannot calibrate: the simulation runs uniform prompts, not the trace's requests and "
            "arrival times; measure it with `onechip bench --calibration`"
        )
    ok = [c for c in cells if usable(c)]
    for c in ok:
        check_cell(c, config)
    single = [c for c in ok if c.clients == 1]
    missing = []
    if not single or len({c.context_tokens for c in ok}) < 2:
        missing.append("cells at two contexts, one with a single client (TPOT and TTFT)")
    if not [c for c in ok if c.clients > 1]:
        missing.append("one cell with several clients")
    if missing:
        # a run of the right grid whose cells failed was told only to measure that grid again: what became of them
        lost = [c for c in cells if not usable(c)]
        first = lost[0] if lost else None
        why = (f" ({len(lost)} of {len(cells)} cells not usable; first {first.context_tokens:,} x {first.clients}: "
               f"{first.status}{f', {first.reason}' if first.reason else ''})" if first else "")  # fmt: skip
        lacks = " and ".join(missing)
        raise ConfigError(f"the calibration run lacks {lacks}{why}; measure it with `onechip bench --calibration`")


def check_cell(c: CellResult, config: BenchConfig) -> None:
    """Raise ConfigError naming the cell when `c`, an 'ok' cell of a run of `config`, holds a figure no measurement
    gives (a damaged summary.json, which was fitted and stored for every later prediction of the model on the
    chip): a median TTFT or TPOT not above 0 ms or not finite, an output tok/s below 0 or not finite (NaN kept the
    fit from ending), and, checked against the cell's reps where it records them (bench does), a median TTFT or
    TPOT longer than its longest rep's whole run (every measured request is sent and answered inside it,
    RepResult.whole_run_s, so its TTFT and its TPOT, (t_last - t_first) / (tokens - 1), are at most that), or an
    output tok/s above the most its reps' window tokens give (the figure is their median of output_tokens /
    window_s; output_tokens is rounded, hence the half token). A cell without reps (a published grid's medians; a
    summary.json whose reps were deleted) is checked against its own figures instead, by its workload's arithmetic,
    and refused where that bounds nothing (_check_medians)."""
    cell = f"the calibration run's cell {c.context_tokens:,} tokens x {plural(c.clients, 'client')} has"
    damaged = "which no measurement gives: its summary.json is damaged"
    longest_ms = 1000 * max((r.whole_run_s for r in c.reps), default=0.0)
    for name, value in (("TTFT", c.ttft_ms.median), ("TPOT", c.tpot_ms.median)):
        if not 0 < (value or 0) < math.inf:
            raise ConfigError(f"{cell} median {name} {value} ms, {damaged}")
        if longest_ms > 0 and (value or 0) > longest_ms * (1 + 1e-9):  # the slack: float rounding alone
            raise ConfigError(
                f"{cell} median {name} {value:g} ms, longer than its longest rep ({longest_ms:,.1f} ms from "
                f"first send to last completion), {damaged}"
            )
    if not 0 <= (c.output_tok_per_s or 0) < math.inf:  # NaN: the fit's residuals are NaN, and it never ends
        raise ConfigError(f"{cell} {c.output_tok_per_s} output tok/s, {damaged}")
    rates = [(r.output_tokens + 0.5) / r.window_s for r in c.reps if r.window_s > 0]
    if rates and (c.output_tok_per_s or 0) > max(rates):
        raise ConfigError(
            f"{cell} {c.output_tok_per_s:g} output tok/s, more than its reps' output tokens over their windows "
            f"give ({max(rates):,.1f}), {damaged}"
        )
    if not c.reps:
        _check_medians(c, config, cell, damaged)


def _check_medians(c: CellResult, config: BenchConfig, cell: str, damaged: str) -> None:
    """Raise ConfigError (`cell` ... `damaged`) unless the medians of `c`, a cell of `config` without reps (a
    published grid's medians; a summary.json whose reps were deleted), agree with its output tok/s: a median TTFT
    and a median (tokens - 1) x TPOT each lie inside a request's E2E latency, which the cell's own arithmetic bounds
    (_latency_bound_ms). (tokens - 1) is output_tokens - 1 unless requests ended early (then 1: a request of two
    tokens). Where no bound follows from the cell's figures (_latency_bound_ms says why) the cell is refused as
    unchecked rather than fitted on trust: its medians could be anything."""
    rate = c.output_tok_per_s or 0.0
    if rate <= 0:
        raise ConfigError(f"{cell} median TTFT and TPOT but {rate:g} output tok/s and no reps, {damaged}")
    bound = _latency_bound_ms(c, config, rate)
    if isinstance(bound, str):
        raise ConfigError(
            f"{cell} no reps, and {bound}: the range its medians may take is unknown, so they cannot be checked; "
            "calibrate on a run that keeps its reps"
        )
    bound_ms, allows = bound
    gaps = config.output_tokens - 1 if c.requests_ended_early == 0 else 1
    for name, value in (("TTFT", c.ttft_ms.median or 0.0), (f"TPOT x {gaps} tokens", (c.tpot_ms.median or 0.0) * gaps)):
        if value > bound_ms:
            raise ConfigError(f"{cell} median {name} {value:g} ms, {allows}, {damaged}")


def _latency_bound_ms(c: CellResult, config: BenchConfig, rate: float) -> tuple[float, str] | str:
    """The most a median request latency (E2E, ms) of `c`, a cell of `config` without reps at `rate` output tok/s,
    can be, and the words that say so; or, where none follows, why. Each workload's own arithmetic:

    - closed loop (grid streams; agent sessions, each stream one turn at a time, a think time only idling it):
      every stream has at most one request outstanding, so the mean E2E is clients x output_tokens / tok/s at most
      (Little's law; a request that ends early with fewer tokens, or a window with idle streams, only lowers the
      tok/s), and a median of a quantity never below 0 is at most twice its mean (Markov's inequality). The corpus
      grids' medians reach at most 0.995 of the mean (serving_measurements.json, mi300x 12b fp8 grid's worst cell).
    - open loop (--rate): the tok/s is counted over the whole run (schemas.figures.measured_window), from the first
      send to the last completion, so every request's E2E lies inside it, and the run lasts output tokens / tok/s,
      at most requests x output_tokens / tok/s. The requests are the arrivals bench schedules
      (bench.runner.rep_arrivals): clients x requests_per_client, or with --duration-s and constant arrivals the
      ceil(duration_s x rate) sends at k / rate before it. (A median over reps: at least half the requests are in
      reps at least as fast as the median tok/s, so the lower median is bounded.) Poisson arrivals over
      --duration-s: how many came is drawn, and no figure of the cell records it: no bound.
    (A trace replay never reaches here: check_cells refuses it.)"""
    out = config.output_tokens
    if config.rate_per_s is None:
        bound_ms = 2 * 1000.0 * c.clients * out / rate
        return bound_ms, (
            f"more than twice the mean request latency its {rate:g} output tok/s allows "
            f"({plural(c.clients, 'client')} x {plural(out, 'token')}: {bound_ms / 2:,.1f} ms)"
        )
    if config.duration_s is None:
        requests = c.clients * config.requests_per_client
    elif config.arrivals == "constant":
        requests = math.ceil(config.duration_s * config.rate_per_s)
    else:
        return "Poisson arrivals over --duration-s send a drawn number of requests, which no figure of the cell records"
    bound_ms = 1000.0 * requests * out / rate
    return bound_ms, (
        f"longer than the whole run its {rate:g} output tok/s allows "
        f"({plural(requests, 'request')} x {plural(out, 'token')}: {bound_ms:,.1f} ms)"
    )


def _start(
    plan: Plan,
    cells: list[CellResult],
    engine_share: float,
    device_bound: bool = False,
    admit: bool = True,
    tokenize: bool = False,
) -> StepTerms:
    """A starting point from the measured cells (roofline priors where the data say nothing). The busiest
    cell's slowdown over one client is put on the engine (per sequence in a step) in the share
    `engine_share`, the rest on the API server (its per-chunk and per-token output work at the busiest
    throughput): few cells cannot tell the two apart, so the fit starts from several shares (STARTS). The
    weight read starts at the roofline's (the datasheet bandwidth; at most 80% of the one-client TPOT) and the
    host's fixed cost takes the rest of the one-client step. With async scheduling (engines.json
    async_scheduling_from) a step is the longer of the two (steptime), so the host line, fixed + per sequence
    x 1, is the one-client TPOT; without it the two add. (A start with the host line below that TPOT is
    device-bound at the roofline read; seeing no slope in the fixed cost there, the solver raised the read
    instead: gce v6e-1 fitted 4.85 ms read and 0.29 + 0.83 ms x n host, where the gke grid of the same chip
    rises 0.23-0.27 ms a stream from one client to 16: host-bound at one client.)
    `device_bound`: the other side of the switch, the one-client step the weight read (its TPOT less the
    context's KV read), the host line through the busiest cell from a tenth of that step.
    The first of STARTS is the centre of the pull: the device at its datasheet roofline, the host the rest of
    the measured step (the roofline is the one device figure not read off these cells).
    per_admit_s starts at the TTFT rise per client from one client to the most at the shortest context measured at
    both (a wave admitted together pays it once per request in one step); with no such pair (another context's
    TTFT holds prefill too), at a hundredth of the one-client step, as per_seq_s's least; 0 and kept there without
    `admit`. tokenize_scale starts at 1 with `tokenize` (TOKENIZE's comment says why), else 0 and kept there."""
    ok = [c for c in cells if usable(c)]
    short = min((c for c in ok if c.clients == 1), key=lambda c: c.context_tokens)
    long_ = max(ok, key=lambda c: (c.context_tokens, -c.clients))  # the longest context, fewest clients
    multi = max((c for c in cells if c.clients > 1 and usable(c)), key=lambda c: c.clients)
    # per_admit_s's start: the TTFT rise per client from one client to the most at one context (the shortest such)
    waves = [
        (c, a) for c in ok for a in ok if c.clients > 1 and a.clients == 1 and a.context_tokens == c.context_tokens
    ]
    wave = min(waves, key=lambda p: (p[0].context_tokens, -p[0].clients), default=None)
    rise = (wave[0].ttft_ms.median - wave[1].ttft_ms.median) / 1000.0 / wave[0].clients if wave else 0.0  # type: ignore[operator]
    try:
        prior: StepTerms | None = roofline_priors(plan)
    except ConfigError:
        prior = None
    d_ctx = max(long_.context_tokens - short.context_tokens, 1)
    tpot_s, ttft_s = short.tpot_ms.median / 1000.0, short.ttft_ms.median / 1000.0  # type: ignore[operator]
    multi_s = multi.tpot_ms.median / 1000.0  # type: ignore[operator]
    per_token = max((long_.ttft_ms.median - short.ttft_ms.median) / 1000.0 / d_ctx, 1e-9)  # type: ignore[operator]
    kv = (long_.tpot_ms.median - short.tpot_ms.median) / 1000.0 / d_ctx  # type: ignore[operator]
    if kv <= 0:
        kv = prior.per_kv_token_s if prior else per_token / 100.0
    busiest = max(c.output_tok_per_s or 1.0 for c in cells)
    per_seq = max((multi_s - tpot_s) / (multi.clients - 1) * engine_share, tpot_s / 100.0)
    weights = min(prior.weights_s, 0.8 * tpot_s) if prior else 0.5 * tpot_s
    fixed = tpot_s - weights
    if rules.engine_rules(plan.engine).async_scheduling(plan.engine_version):
        fixed = tpot_s - per_seq
        if device_bound:
            weights = max(tpot_s - kv * short.context_tokens, weights)
            fixed = 0.1 * tpot_s
            per_seq = max((multi_s - fixed) / multi.clients * engine_share, tpot_s / 100.0)
    return StepTerms(
        fixed_s=max(fixed, 0.1 * tpot_s),
        weights_s=weights,
        per_seq_s=per_seq,
        per_token_s=per_token,
        per_kv_token_s=kv,
        per_attn_pair_s=per_token / (4.0 * long_.context_tokens),
        request_overhead_s=max(ttft_s - tpot_s - per_token * short.context_tokens, 0.1 * ttft_s),
        per_stream_chunk_s=(1.0 - 0.9 * engine_share) / busiest,
        per_output_token_s=(0.9 - 0.8 * engine_share) / busiest,
        per_admit_s=max(rise, tpot_s / 100.0) if admit else 0.0,
        tokenize_scale=1.0 if tokenize else 0.0,
    )


Vector = list[float]


def _solve(a: list[Vector], b: Vector) -> Vector:
    """x with a x = b (Gaussian elimination with partial pivoting; a is small and positive definite here)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    x = [0.0] * n
    for r in reversed(range(n)):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def _dot(a: Vector, b: Vector) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _offsets(centre: StepTerms, start: StepTerms, floors: dict[str, float]) -> Vector:
    """The x at which _terms(centre, x, floors) is `start` (a start at or below a floor: the floor's tenth)."""
    out = []
    for name in TERMS:
        low = floors.get(name, 0.0)
        excess = max(getattr(centre, name) - low, 0.1 * low)
        out.append(math.log(max(getattr(start, name) - low, 0.1 * low, 1e-15) / excess) if excess > 0 else 0.0)
    return out


def _terms(start: StepTerms, x: Vector, floors: dict[str, float] | None = None) -> StepTerms:
    """The terms at log-offsets `x` from `start`. A term with a floor (_floors) is its floor plus an excess
    scaled by exp(x): floor + (start - floor) x exp(x), the start's excess at least a tenth of the floor, so
    the fit moves smoothly down to the floor and never below it. (A hard clamp, max(floor, start x exp(x)),
    leaves the fits where no floor binds as they were but lands the gce v6e-1 fit in a worse place: corpus
    calibrated MAPE 12.3 / 35.2 / 10.6% against 12.1 / 33.5 / 9.7% with this form.)"""
    values = {}
    for name, v in zip(TERMS, x, strict=True):
        low = (floors or {}).get(name, 0.0)
        values[name] = low + max(getattr(start, name) - low, 0.1 * low) * math.exp(v)
    return StepTerms(**values)


def _floors(plan: Plan) -> dict[str, float]:
    """Lower bounds of the device terms: the roofline's (steptime.roofline_priors): the weights read and each
    cached token's KV read at the chip's datasheet bandwidth, and a token's 2 FLOPs per streamed parameter at the
    dense peak of the dtype it computes in. No chip streams faster than its bandwidth or computes faster than its
    peak, so a fit below them trades a term its cells cannot pin for another (gce v6e-1 grid, STEP_MODEL 5, no
    one-client long-context cell: per_token_s 2.72e-6 s, 0.55 x the roofline's 4.97e-6, the prefill put on the
    quadratic attention term; the one-client sweep's TTFT then came out 60-66% low). The compute bound only where
    the roofline's peak is the served dtype's (16/32-bit floats on the bf16 peak, int8 on a chip with an int8
    peak): an fp8 or fp4 checkpoint may compute faster than the bf16 peak the roofline falls back to. {} without a
    roofline (chip figures missing)."""
    try:
        prior = roofline_priors(plan)
    except ConfigError:
        return {}
    names = ["weights_s", "per_kv_token_s"]
    chip = rules.accelerator(plan.chip)
    if plan.dtype in FLOAT_DTYPES or (plan.dtype == "int8" and chip.peak_int8_tops):
        names.append("per_token_s")
    return {name: getattr(prior, name) for name in names}


def _residuals(
    plan: Plan,
    run: BenchRun,
    cells: list[CellResult],
    terms: StepTerms,
    spread: float | None,
    jitter: bool = False,
    clients: Mapping[tuple[int, int], CellClient] | None = None,
) -> Vector:
    """Relative errors (simulated / measured - 1) of each cell's three figures (stream starts: `spread`,
    CellSimulation's start_spread_s; a cell in `clients` as that client ran it, its tok/s by the client's
    definition: a whole-run one read as the prediction reads it, sim.predict.whole_run_runs)."""
    out = []
    for cell in cells:
        client = (clients or {}).get((cell.context_tokens, cell.clients))
        whole = client is not None and client.whole_run
        sim = simulate_cell(plan, terms, run.config, cell.context_tokens, cell.clients, FIT_SEEDS, spread, jitter,
                            client=client, whole_run=whole)  # fmt: skip
        got = [figures(s) for s in sim.samples_by_seed.values()]
        rates = [figures(s, whole=True) for s in whole_run_runs(sim).values()] if whole else got
        for name in FIGURES:
            measured = getattr(cell, name) if name == "output_tok_per_s" else getattr(cell, name).median
            values = [v for v in (g.get(name) for g in (rates if name == "output_tok_per_s" else got)) if v is not None]
            if measured and values:
                out.append(statistics.fmean(values) / measured - 1.0)
            elif measured:
                out.append(1.0)  # the simulation could not run the cell: a large error
    return out


def _figure_weights(cells: list[CellResult]) -> Vector:
    """One weight per residual of `cells` (the order _residuals gives): the inverse of the figure's measurement
    noise (two measurements of one deployment, serving_measurements.json prediction_error["noise"]: tok/s 9.4%,
    TTFT 26%, TPOT 8.8%), scaled so the least noisy figure weighs 1. A relative error counts by how far it lies
    outside what re-measuring the cell would move: one TTFT that the engine cannot give (e.g. 81-85 ms at
    128 x 8 on the gce v6e-1 grids, 24.5 ms at 512 x 8 on gke's) no longer outweighs the other figures."""
    scale = _noise()
    least = min(scale.values())
    return [
        least / scale[name]
        for cell in cells
        for name in FIGURES
        if (cell.output_tok_per_s if name == "output_tok_per_s" else getattr(cell, name).median)
    ]


def _jacobian(
    f: Callable[[Vector], Vector], x: Vector, r0: Vector, fixed: frozenset[int] = frozenset()
) -> list[Vector]:
    """Columns d r / d x_i by forward differences (0 for the `fixed` indices: terms the fit does not move)."""
    columns = []
    for i in range(len(x)):
        if i in fixed:
            columns.append([0.0] * len(r0))
            continue
        step = x[:]
        step[i] += STEP
        columns.append([(a - b) / STEP for a, b in zip(f(step), r0, strict=True)])
    return columns


def _levenberg_marquardt(
    f: Callable[[Vector], Vector], x0: Vector, on_progress: ProgressFn, fixed: frozenset[int] = frozenset()
) -> tuple[Vector, list[Vector]]:
    """Minimise |f(x)|^2 from x0 (the `fixed` indices kept); returns x and the Jacobian's columns at it."""
    x, r, mu = x0[:], f(x0), 1e-2
    cols = _jacobian(f, x, r, fixed)
    for i in range(MAX_ITERATIONS):
        on_progress(ProgressEvent("calibrate", f"fit iteration {i + 1}", done=i, total=MAX_ITERATIONS))
        normal = [[_dot(ci, cj) for cj in cols] for ci in cols]
        damped = [
            [v + (mu * (normal[a][a] + 1.0) if a == b else 0.0) for b, v in enumerate(row)]
            for a, row in enumerate(normal)
        ]
        step = _solve(damped, [-_dot(c, r) for c in cols])
        candidate = [min(12.0, max(-12.0, a + b)) for a, b in zip(x, step, strict=True)]
        r_new = f(candidate)
        if _dot(r_new, r_new) < _dot(r, r):
            improved = (_dot(r, r) - _dot(r_new, r_new)) / max(_dot(r, r), 1e-12)
            x, r, mu = candidate, r_new, mu / 3.0
            cols = _jacobian(f, x, r, fixed)
            if improved < 1e-4:
                break
        else:
            mu *= 4.0
            if mu > 1e6:
                break
    return x, cols


def identified(columns: list[Vector], least: float) -> tuple[list[str], list[str]]:
    """(pinned, unseparated) terms from the fit's weighted data Jacobian at its solution (`columns`: d weighted
    residual / d log term, one per TERMS, a floored term's log excess over its floor as _terms moves it; `least`:
    the relative noise of the least noisy figure, which a weighted residual of 1 stands for, _figure_weights).

    The linearised posterior of the log terms is least^2 (J^T J + PULL^2 I)^-1 (residuals in units of their
    figure's measurement noise; the pull a Gaussian prior of standard deviation least / PULL per log-unit). A
    term is pinned when its posterior standard deviation is at most the noisiest figure's relative noise
    (_pinned_sd: TTFT's 26%): the cells tell it at least as well as one direct measurement of the
    loosest figure would (a request overhead read off one one-client TTFT is pinned; a term that moves the
    figures only together with another is not, whatever its own slope). Unseparated: terms that are not
    pinned, yet would be if the others were held at the solution (their own column alone pins them): the
    cells measure them only in combination with other terms."""
    n = len(columns)
    information = [[_dot(a, b) / least**2 for b in columns] for a in columns]
    prior = (PULL / least) ** 2
    limit = _pinned_sd()
    pinned, unseparated = [], []
    for i, name in enumerate(TERMS):
        unit = [1.0 if j == i else 0.0 for j in range(n)]
        damped = [[v + (prior if a == b else 0.0) for b, v in enumerate(row)] for a, row in enumerate(information)]
        sd = math.sqrt(max(_solve(damped, unit)[i], 0.0))
        alone = 1.0 / math.sqrt(information[i][i] + prior)
        if sd <= limit:
            pinned.append(name)
        elif alone <= limit:
            unseparated.append(name)
    return pinned, unseparated


def pinned_terms(calibration: Calibration) -> set[str]:
    """The terms `calibration`'s cells pinned (`identified`): its `fitted`. One stored before the pinning was judged
    jointly (`pinning_judged` false) that names no pinned and no unseparated term is read as pinning them all, as
    such calibrations were used; one judged so that names none pinned none (helper workflow64: a fake server's 2 ms
    steps, below the v5e-1 weight read the device terms cannot go under, fitted with every term near its start)."""
    if calibration.pinning_judged or calibration.fitted or calibration.unseparated:
        return set(calibration.fitted)
    return set(StepTerms.model_fields)


def _evidence(objective: float, columns: list[Vector], least: float) -> float:
    """The log posterior mass of the basin a fit ended in, by the Laplace approximation (MacKay, Information
    Theory, Inference, and Learning Algorithms, 2003, ch. 28: the best fit's likelihood times the Occam factor),
    less what every basin shares: -chi^2 / 2 - 1/2 log det(J^T J + PULL^2 I), where chi^2 = `objective` (data and
    pull, weighted) / least^2 (`columns`, `least` as in `identified`). The starts (STARTS) end in basins that fit
    the cells alike by different explanations; the one that needs its terms least finely tuned holds more of the
    posterior. gce v6e-1: the API server saturated at 1,198 tok/s (0.84 ms a token) explains the 81 ms TTFT at
    128 x 8 better (chi^2 44.1 against 46.2), but only within a narrow band of that cost (log det 13.9 more): log
    mass 5.9 less, and the grid's own 1,024 x 16 cell served 1,554 tok/s."""
    normal = [[_dot(a, b) + (PULL**2 if i == j else 0.0) for j, b in enumerate(columns)] for i, a in enumerate(columns)]
    return -objective / (2 * least**2) - 0.5 * _log_det(normal)


def _log_det(a: list[Vector]) -> float:
    """log |det a| (Gaussian elimination with partial pivoting, as _solve)."""
    n, m, out = len(a), [row[:] for row in a], 0.0
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        out += math.log(abs(m[col][col]))
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return out


def _pinned_sd() -> float:
    """The posterior standard deviation of a log term at or below which the cells pinned it: the largest relative
    noise of a figure re-measured (serving_measurements.json prediction_error["noise"], TTFT 26%; a residual is a
    relative error, to first order the log error the posterior is in)."""
    return max(_noise().values())


def _noise() -> dict[str, float]:
    """Each figure's relative re-measurement noise (serving_measurements.json prediction_error["noise"])."""
    noise = catalog.serving_measurements().prediction_error["noise"]
    return {name: float(getattr(noise, name)) for name in FIGURES}


def calibrate(
    plan: Plan,
    run: BenchRun,
    cells: list[tuple[int, int]] | None = None,
    source_run: str = "",
    on_progress: ProgressFn = no_progress,
    start_spread_s: float | None = START_SPREAD_S,
    jitter: bool = False,
    clients: Mapping[tuple[int, int], CellClient] | None = None,
    admit: bool | None = None,
    tokenize: bool | None = None,
) -> Calibration:
    """Fit StepTerms for `plan` to the measured `run` (its `cells`, as (context, clients); None = every ok
    cell), simulating the cells with stream starts `start_spread_s` (CellSimulation; by default as `simulate`
    predicts, sim.predict.START_SPREAD_S: phases drawn over one request's duration; 0 = together, as `onechip
    bench` starts them; `jitter` as in CellSimulation). A cell in `clients` is simulated as that client ran it
    (sim.protocol.replay: another tool's requests, starts, cached prompts and tok/s definition). Raises
    ConfigError when the cells lack what the fit needs (see check_cells). `admit`: whether per_admit_s is fitted
    (None: ADMIT); without it, 0. `tokenize`: whether tokenize_scale is fitted (None: TOKENIZE), for a model whose
    tokenizer has a measured table (sim.steptime.TOKENIZE_US_PER_TOKEN); without it, or without a table, 0, and the
    calibration's `held` says why."""
    admit = ADMIT if admit is None else admit
    tokenize, held = _tokenize_held(plan, TOKENIZE if tokenize is None else tokenize)
    wanted = [c for c in run.cells if cells is None or (c.context_tokens, c.clients) in cells]
    check_cells(wanted, run.config)  # the cells not usable too: its refusal says what became of them
    chosen = [c for c in wanted if usable(c)]

    def residuals(terms: StepTerms) -> Vector:
        return _residuals(plan, run, chosen, terms, start_spread_s, jitter, clients)

    weights = _figure_weights(chosen)

    def weighted(terms: StepTerms) -> Vector:
        return [w * r for w, r in zip(weights, residuals(terms), strict=True)]

    floors = _floors(plan)
    centre = _start(plan, chosen, *STARTS[0], admit=admit, tokenize=tokenize)
    fixed = frozenset(TERMS.index(n) for n, on in (("per_admit_s", admit), ("tokenize_scale", tokenize)) if not on)

    def f(x: Vector) -> Vector:
        """Data residuals followed by the pull towards the centre (x = 0)."""
        return weighted(_terms(centre, x, floors)) + [PULL * v for v in x]

    least = min(_noise().values())
    fits, starts = (
        [],
        [_offsets(centre, _start(plan, chosen, *start, admit=admit, tokenize=tokenize), floors) for start in STARTS],
    )
    for x0 in [x0 for i, x0 in enumerate(starts) if x0 not in starts[:i]]:  # without async: no device-bound start
        x, cols = _levenberg_marquardt(f, x0, on_progress, fixed)
        data = [col[: len(col) - len(TERMS)] for col in cols]  # data rows; the pull rows follow
        fits.append((_evidence(_dot(r := f(x), r), data, least), x, data))
    _, x, data = max(fits, key=lambda fit: fit[0])
    terms = _terms(centre, x, floors)
    pinned, unseparated = identified(data, least)
    rel = residuals(terms)
    labels = [
        f"{c.context_tokens}x{c.clients} {name}"
        for c in chosen
        for name in FIGURES
        if (c.output_tok_per_s if name == "output_tok_per_s" else getattr(c, name).median)
    ]
    try:
        priors: StepTerms | None = roofline_priors(plan)
    except ConfigError:
        priors = None
    return Calibration(
        key=key_of(plan, run),
        step_model=STEP_MODEL,
        terms=terms,
        priors=priors,
        fitted=pinned,
        unseparated=unseparated,
        held=held if admit else {"per_admit_s": "not fitted (sim.calibrate.ADMIT off)"} | held,
        pinning_judged=True,
        cells=[f"{c.context_tokens}x{c.clients}" for c in chosen],
        source_run=source_run,
        residuals_pct={label: round(100.0 * float(v), 2) for label, v in zip(labels, rel, strict=False)},
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _tokenize_held(plan: Plan, tokenize: bool) -> tuple[bool, dict[str, str]]:
    """(whether the fit sets tokenize_scale for `plan`, {"tokenize_scale": why it is held at 0} where it does not)."""
    if not tokenize:
        return False, {"tokenize_scale": "not fitted (sim.calibrate.TOKENIZE off)"}
    if plan.architecture not in TOKENIZE_US_PER_TOKEN:
        return False, {
            "tokenize_scale": f"no term: no measured tokenizer table for model_type {plan.architecture!r} (measured: "
            f"{', '.join(sorted(TOKENIZE_US_PER_TOKEN))}, Gemma's)"
        }
    return True, {}


def key_of(plan: Plan, run: BenchRun | None = None) -> CalibrationKey:
    """The calibration key of `plan` measured by `run` (its server's engine version, when recorded)."""
    version = (run.server.engine_version if run else None) or plan.engine_version or ""
    return CalibrationKey(model=plan.model, chip=plan.chip, engine=plan.engine, engine_version=version)


def transfer(calibration: Calibration, target: Plan) -> StepTerms:
    """`calibration` (fitted on another chip) carried to `target` (same model and engine, another chip or
    tensor-parallel size): host terms (fixed, per sequence, per request, per streamed chunk, per admitted, the
    tokenizer's scale) are kept;
    device terms are the target's roofline scaled by the efficiency the measured chip showed (fitted / its roofline
    prior, `calibration.priors`). Tensor-parallel communication is not modelled. Raises ConfigError when
    either chip has no roofline figures."""
    if calibration.priors is None:
        raise ConfigError(f"the calibration on {calibration.key.chip} has no roofline prior to carry it over")
    terms, src, dst = calibration.terms, calibration.priors, roofline_priors(target)
    compute = terms.per_token_s / src.per_token_s
    return StepTerms(
        fixed_s=terms.fixed_s,
        weights_s=dst.weights_s * terms.weights_s / src.weights_s,
        per_seq_s=terms.per_seq_s,
        per_token_s=dst.per_token_s * compute,
        per_kv_token_s=dst.per_kv_token_s * terms.per_kv_token_s / src.per_kv_token_s,
        per_attn_pair_s=terms.per_attn_pair_s * dst.per_token_s / src.per_token_s,
        request_overhead_s=terms.request_overhead_s,
        per_stream_chunk_s=terms.per_stream_chunk_s,
        per_output_token_s=terms.per_output_token_s,
        per_admit_s=terms.per_admit_s,
        tokenize_scale=terms.tokenize_scale,
    )
