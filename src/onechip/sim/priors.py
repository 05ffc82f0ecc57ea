"""Priors from measurements: per-chip efficiencies and per-deployment host costs fitted on published serving
measurements (catalog serving_measurements.json `grids`, each with its source), and carrying a calibration to
another chip by what each term depends on.

Three things are read off the corpus, each by a closed form on the cells that isolate it:
  - decode: the achieved fraction of HBM bandwidth, from one-client cells: bytes one decode step reads
    (streamed weights + the context's KV) / bandwidth / the time per output token (TPOT where published,
    else 1 / tok/s), less the cells whose time is the host's (its grid's host line at one sequence reaches it:
    async scheduling takes the longer of the two). Per chip, the mean over its cells (`decode_fractions`).
  - prefill: the achieved fraction of dense peak FLOPS, from the slope of one-client TTFT over context (a least-
    squares line through a grid's cells at two or more contexts up to 16,384 tokens): 2 x streamed parameters /
    peak / seconds per prompt token (`prefill_fractions`). The line's intercept is what every request pays whatever
    its prompt (API server, the first step); TTFT / context read it as prefill, most at short contexts (v6e-1:
    0.29 of peak at 2,048 tokens, 0.46-0.48 at 4-16k; the slope says 0.49). Longer prompts are left out: the
    roofline prior has no attention term, and beyond 16k attention's share grows (v6e-1: 177 ms at 16,384 tokens,
    404 at 32,768). So is a quantized checkpoint (a quantization_config in its catalog config, e.g. the MI300X
    Gemma 4 12B FP8 W8A8 grid): its streamed bytes do not count its parameters at the plan's dtype, and its
    matmuls do not run at the dense bf16 peak; its decode cells count (bytes are bytes).
  - request overhead: the API server's time per request, one-client TTFT less the step that gave the first token
    at the grid's shortest such cell (`request_overheads`).
  - host: under async scheduling a decode step takes the longer of host and device work (steptime); past a
    few streams the host's share grows with the batch (seed v5e-1: TPOT 8.0, 8.9, 13.2 ms at 1, 4, 16
    clients). So a cell's TPOT is the host's time only where it is clearly above the step's device time;
    where it is not, TPOT is device time and says only that the host was no slower. Per short-context
    (<= 1,024 tokens) cell at 2-16 clients, the device time of its decode step is steptime's device roofline
    at that batch (clients, capped at the grid's --max-num-seqs): the longer of the bytes it reads (streamed
    weights + the batch's KV) / bandwidth / the deployment's own decode fraction (its grid's one-client
    cells, else its chip's) and its compute, 2 x streamed parameters x batch / dense peak / the chip's own
    prefill fraction (else the peak; at <= 16 sequences compute is at most a third of the read here). The
    cell is host-bound when TPOT exceeds that by more than the corpus's TPOT noise floor (two measurements of
    one deployment, `prediction_error.noise`: 8.8%). A line TPOT = fixed + per_seq x batch through the
    host-bound cells of two or more batch sizes is the host cost of that deployment: its host CPU (the
    chip's VM type) and its engine build (`host_lines`). A grid with fewer gets no line, and `host_line_gaps`
    says why: every cell device-bound (L4: TPOT 19.8 -> 21.7 ms at 1 -> 8 clients, within 5.1% of its
    device time), one host-bound batch size (H100 Llama-3.1-8B: 16 clients only), no device time (a model
    the catalog cannot plan; a chip with no peak FLOPS in accelerators.json: GB10), or an engine build without
    async scheduling (`engines.json async_scheduling_from`; a version that is not a release number is taken
    as the rules' own, as `async_scheduling(None)` does), where host and device work add and the one-client
    cell the decode fraction is read from already holds host(1), so the host's share cannot be separated; or a
    chip whose compute efficiency is not measured (no prefill line of its own: T4), where the step's compute at
    the dense peak is only a lower bound, so a TPOT above the device time need not be host work (the T4 g4dn
    E2B grid: 23.4 -> 32.2 ms at 1 -> 8 clients, which a line would read as a 23.6 ms host cost and carry to
    every GPU with no line of its own).
    Before this a line went through every such cell, so a slow GPU's device time (L4 20.4 ms "fixed", T4
    27.9) became every other GPU's host cost (MI300X leave-chip-out TPOT error 320%).
A chip with no measurement gets the mean of the fractions of the measured chips of its architecture family
(`_family`: maker and architecture as the catalog names them, e.g. NVIDIA Ada Lovelace, AMD CDNA 3.0; every TPU
one family, the catalog naming no TPU generation), else of its maker's other architectures, else of every
measured chip, and says which (`Basis.decode_kin`, `decode_level`; `describe`): the RTX 4090 and L40S take
the L4's (Ada), the MI325X the MI300X's (CDNA 3.0); a Radeon PRO W7900 (RDNA 3.0) takes the MI300X's as AMD's
other architecture, and its row says no RDNA 3.0 chip is measured; their mean request overhead, and the mean
host line of the deployments of the same engine rules that have one, else of every deployment that has one
(vLLM's host path, API server, EngineCore scheduler and detokenizer, is shared by vllm-gpu and vllm-tpu); `Basis`
names them with their grid and engine build, and `uncertainty` gives the row the error measured leaving a chip
out (`prior`), which in this corpus is the error of a chip whose family has no other measured chip (no GPU
architecture has two measured chips), the wider of the measured prior errors.
benchmarks/prior_accuracy.py validates all of it leaving one chip out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cache
from typing import Literal, cast

from onechip import catalog, planner
from onechip.catalog.files import MeasuredGrid
from onechip.errors import ConfigError
from onechip.planner.source import catalog_entry
from onechip.planner.weights import DTYPE_BYTES
from onechip.schemas import Plan
from onechip.schemas.common import plural
from onechip.schemas.requests import PlanRequest
from onechip.schemas.sim import Calibration, StepTerms
from onechip.sim.calibrate import pinned_terms
from onechip.sim.steptime import roofline_priors

MAX_PREFILL_CONTEXT = 16384  # see the module docstring
MAX_HOST_CONTEXT, MAX_HOST_CLIENTS = 1024, 16  # short-context cells below the KV and prefill knees


@dataclass(frozen=True)
class HostLine:
    """Host cost of one measured deployment: TPOT = fixed_s + per_seq_s x clients where host-bound."""

    grid: str
    chip: str
    engine: str
    engine_version: str
    fixed_s: float
    per_seq_s: float


Level = Literal["own", "family", "maker", "every"]


@dataclass(frozen=True)
class Basis:
    """What a prior for one chip rests on: its own measurements, or other chips' (the fractions' mean)."""

    chip: str
    bandwidth_fraction: float | None
    compute_fraction: float | None
    own_decode: bool  # bandwidth fraction measured on this chip
    own_prefill: bool  # compute fraction measured on this chip
    host: tuple[HostLine, ...]  # the deployments whose host cost is used (mean)
    own_host: bool  # host cost measured on this chip
    host_scale: float = 1.0  # others' line scaled down to stay under this chip's own TPOT (`_host_cap`)
    decode_kin: tuple[str, ...] = ()  # the chips whose decode fractions it takes (its own; `_fraction`)
    prefill_kin: tuple[str, ...] = ()  # the same for the prefill fraction
    decode_level: Level = "own"  # where decode_kin come from: its family, its maker, every chip (`_fraction`)
    prefill_level: Level = "own"

    @property
    def measured(self) -> bool:
        """Some serving measurement of this chip stands behind the prior."""
        return self.own_decode or self.own_prefill or self.own_host

    @property
    def complete(self) -> bool:
        """Decode, prefill and host cost all measured on this chip: what the `prior_measured_chip` and
        `carried` errors were measured with (a partly measured chip gets the wider, unmeasured ones)."""
        return self.own_decode and self.own_prefill and self.own_host


def describe(b: Basis) -> str:
    """One line: what a prior for `b.chip` rests on, naming the grids."""
    lines = ", ".join(sorted({f"{h.grid} ({h.engine} {h.engine_version})" for h in b.host})) or "none"
    if b.host_scale < 1:
        lines += f", scaled by {b.host_scale:.2f} to stay under {b.chip}'s own measured TPOT"
    if not b.measured:
        maker, arch = _family(b.chip)
        family = f"{maker} {arch}" if arch else maker

        def kin(chips: tuple[str, ...], level: Level) -> str:
            if level == "family":
                return f"{family}: {', '.join(chips)}"
            if level == "maker":
                return f"{maker}'s other architectures ({', '.join(chips)}): no {family} chip is measured"
            return f"every measured chip's ({', '.join(chips)}): no {maker} chip is measured"

        return (
            f"no serving measurement of {b.chip} in the corpus: its decode efficiency is the mean of "
            f"{kin(b.decode_kin, b.decode_level)}; its prefill efficiency of "
            f"{kin(b.prefill_kin, b.prefill_level)}; host cost of {lines}; its range is the one measured leaving "
            "a chip out"
        )
    own = [name for name, flag in (("decode", b.own_decode), ("prefill", b.own_prefill), ("host", b.own_host)) if flag]
    return f"{b.chip}'s own published measurements ({', '.join(own)}; host cost of {lines}), others' for the rest"


@cache
def _geometry(grid_name: str) -> tuple[float, float, float] | None:
    """(decode bytes per step, KV bytes per token, streamed parameters) of a corpus grid's model: as the grid
    states them, else planned at the seeds' settings (max-model-len 32768, 4096 tokens a step); None when the
    model cannot be planned here: only catalog models are planned (the corpus is read offline, never from the
    Hub: a corpus model outside catalog/models.json would otherwise be fetched, or not, by where it runs)."""
    grid = next(g for g in catalog.serving_measurements().grids if g.name == grid_name)
    if grid.decode_bytes_per_step and grid.kv_bytes_per_token:
        decode, kv = float(grid.decode_bytes_per_step), float(grid.kv_bytes_per_token)
        return decode, kv, decode / DTYPE_BYTES["bfloat16"]
    if catalog_entry(grid.model) is None:
        return None
    try:
        plan = planner.plan_model(
            PlanRequest(model=grid.model, chip=grid.chip, max_model_len=32768, max_num_batched_tokens=4096)
        )
    except ConfigError:
        return None
    if not plan.decode_bytes_per_step:
        return None
    decode = float(plan.decode_bytes_per_step)
    return decode, float(plan.kv_bytes_per_token), decode / DTYPE_BYTES.get(plan.dtype, 2)


def distinct_grids() -> list[MeasuredGrid]:
    """The corpus grids less those marked `duplicate_of` another (the same deployment, engine build and day
    measured or published again): what the priors read and the benchmarks score, so that one deployment's run
    is never counted twice nor used to predict its twin."""
    return [g for g in catalog.serving_measurements().grids if g.duplicate_of is None]


def _grids() -> list[MeasuredGrid]:
    return distinct_grids()


@cache
def decode_fractions() -> tuple[tuple[str, str, int, float], ...]:
    """(grid, chip, context tokens, achieved fraction of HBM bandwidth) per one-client corpus cell whose time per
    token is the device's (`one_client_fractions` less the host's): under async scheduling a step takes the longer
    of host and device work (steptime), so where the grid's own host line (`host_lines`) at one sequence reaches
    the cell's time within the TPOT noise floor, that time is the host's and says only that the read was no
    slower. MI300X E2B: line 3.38 ms at one client over TPOT 2.85 ms at 128 x 1 (read as 0.30 of its bandwidth;
    E4B and 12B FP8 on the same chip, where the read is the longer, 0.33-0.42); seed v5e-1: 7.86 ms against
    8.0 ms."""
    noise = catalog.serving_measurements().prediction_error["noise"].tpot_ms
    lines, grids = {h.grid: h for h in host_lines()}, {g.name: g for g in _grids()}
    out = []
    for grid, chip, context, fraction in one_client_fractions():
        line = lines.get(grid)
        cell = next(c for c in grids[grid].cells if c.clients == 1 and c.context_tokens == context)
        per_token_s = cell.tpot_ms / 1000 if cell.tpot_ms else 1 / cell.output_tok_per_s
        if line is None or _at(line, 1) * (1 + noise) < per_token_s:
            out.append((grid, chip, context, fraction))
    return tuple(out)


@cache
def one_client_fractions() -> tuple[tuple[str, str, int, float], ...]:
    """(grid, chip, context tokens, achieved fraction of HBM bandwidth) per one-client corpus cell, whatever bound
    its step: what the host lines read the device time from (`decode_fractions` leaves the host-bound ones out)."""
    out = []
    for grid in _grids():
        bandwidth, geometry = planner.rules.accelerator(grid.chip).bandwidth_bytes_per_s, _geometry(grid.name)
        if not bandwidth or geometry is None:
            continue
        for c in grid.cells:
            if c.clients == 1:
                per_token_s = c.tpot_ms / 1000 if c.tpot_ms else 1 / c.output_tok_per_s
                step_bytes = geometry[0] + geometry[1] * c.context_tokens
                out.append((grid.name, grid.chip, c.context_tokens, step_bytes / bandwidth / per_token_s))
    return tuple(out)


def _quantized(grid: MeasuredGrid) -> bool:
    """The grid's model is a catalog checkpoint with a quantization_config (top level or text_config)."""
    found = catalog_entry(grid.model)
    config = found[1].config if found else {}
    return bool(config.get("quantization_config") or (config.get("text_config") or {}).get("quantization_config"))


def _prefill_line(grid: MeasuredGrid) -> tuple[float, int] | None:
    """(seconds per prompt token, longest context it spans) of the least-squares line TTFT = a + b x context
    through `grid`'s one-client TTFTs at <= MAX_PREFILL_CONTEXT tokens; None under two distinct contexts or a
    slope not above 0. The intercept holds what every request pays whatever its prompt (the API server's overhead
    and the prefill step's fixed work), so the slope is the device's prefill rate alone: TTFT / context counts the
    overhead as prefill (v6e-1 sweep: 35 ms at 2,048 tokens read as 0.29 of peak, 0.45-0.48 at 4-16k; the line's
    slope gives 0.49 through all of them)."""
    cells = [(c.context_tokens, c.ttft_ms / 1000) for c in grid.cells
             if c.clients == 1 and c.ttft_ms and c.context_tokens <= MAX_PREFILL_CONTEXT]  # fmt: skip
    if len({x for x, _ in cells}) < 2:
        return None
    slope, _ = statistics.linear_regression([float(x) for x, _ in cells], [y for _, y in cells])
    return (slope, max(x for x, _ in cells)) if slope > 0 else None


@cache
def prefill_fractions() -> tuple[tuple[str, str, int, float], ...]:
    """(grid, chip, longest context of its line, achieved fraction of dense peak FLOPS) per corpus grid whose
    one-client TTFTs span two or more contexts up to MAX_PREFILL_CONTEXT (`_prefill_line`), of a model that is
    not quantized (module docstring): 2 x streamed parameters / peak / the line's seconds per token."""
    out = []
    for grid in _grids():
        peak, geometry = planner.rules.accelerator(grid.chip).peak_bf16_tflops, _geometry(grid.name)
        line = _prefill_line(grid) if peak and geometry is not None and not _quantized(grid) else None
        if line is not None and geometry is not None and peak:
            per_token_s, longest = line
            out.append((grid.name, grid.chip, longest, 2 * geometry[2] / (peak * 1e12) / per_token_s))
    return tuple(out)


def request_overheads(chip: str, exclude_grids: frozenset[str] = frozenset()) -> list[float]:
    """Seconds the API server takes per request on `chip`'s measured deployments (its silicon), one per grid
    with a one-client cell measuring both TTFT and TPOT: at its shortest such cell, TTFT less the step that
    gave the first token, which takes the longer of a decode step (the cell's TPOT: host work or the weight read)
    and the prompt's compute (context x 2 x streamed parameters / dense peak / the chip's prefill fraction,
    `prefill_fractions`); [] where the chip has no such cell or no prefill fraction. Seed v5e-1 at 128 x 1:
    15.9 ms TTFT - 8.0 ms TPOT = 7.9 ms (its fit: 7.25 ms); MI300X E2B, E4B and 12B FP8 at 128 x 1: 10.3,
    11.0, 10.5 ms, one host measured three times."""
    silicon, out = _silicon(chip), []
    peak = planner.rules.accelerator(silicon).peak_bf16_tflops
    fractions = [f for g, c, _, f in prefill_fractions() if _silicon(c) == silicon and g not in exclude_grids]
    if not peak or not fractions:
        return []
    for grid in _grids():
        geometry = _geometry(grid.name)
        if _silicon(grid.chip) != silicon or grid.name in exclude_grids or geometry is None:
            continue
        cells = [c for c in grid.cells if c.clients == 1 and c.ttft_ms and c.tpot_ms]
        if not cells:
            continue
        c = min(cells, key=lambda c: c.context_tokens)
        prefill_s = c.context_tokens * 2 * geometry[2] / (peak * 1e12) / statistics.fmean(fractions)
        out.append(max(0.0, ((c.ttft_ms or 0.0) - max(c.tpot_ms or 0.0, prefill_s * 1000)) / 1000))
    return out


def _host_line(grid: MeasuredGrid) -> HostLine | str:
    """The host line of `grid` (see the module docstring), or why it has none."""
    cells = [c for c in grid.cells
             if c.tpot_ms and c.context_tokens <= MAX_HOST_CONTEXT and 2 <= c.clients <= MAX_HOST_CLIENTS]  # fmt: skip
    if not cells:
        return f"no TPOT at 2-{MAX_HOST_CLIENTS} clients and <= {MAX_HOST_CONTEXT:,} tokens"
    engine = planner.rules.engine_rules(grid.engine)
    if grid.async_scheduling is not None:  # --async-scheduling on the serve command, as the grid states it
        overlap = grid.async_scheduling
    else:
        try:
            overlap = engine.async_scheduling(grid.engine_version)
        except ConfigError:  # not a release number (a nightly image, or not stated): the rules' own version
            overlap = engine.async_scheduling(None)
    if not overlap:
        return (f"{grid.engine} {grid.engine_version.split(' ')[0]} runs without async scheduling: host and device "
                "work add, and the one-client fraction already holds host(1)")  # fmt: skip
    chip, geometry = planner.rules.accelerator(grid.chip), _geometry(grid.name)
    fractions = [f for g, _, _, f in one_client_fractions() if g == grid.name] or [
        f for _, c, _, f in one_client_fractions() if c == grid.chip
    ]
    if geometry is None or not fractions or not chip.bandwidth_bytes_per_s:
        return "no device time: no bytes per step, bandwidth or decode fraction for this deployment"
    if not chip.peak_bf16_tflops:
        return f"no device time: {grid.chip} has no peak FLOPS in accelerators.json, so the step's compute is unknown"
    own_prefill = [f for _, c, _, f in prefill_fractions() if c == grid.chip]  # else the dense peak: no other chip's
    compute = statistics.fmean(own_prefill) if own_prefill else 1.0
    fraction, noise = statistics.fmean(fractions), catalog.serving_measurements().prediction_error["noise"].tpot_ms
    points = []
    for c in cells:
        batch = min(c.clients, grid.max_num_seqs or c.clients)
        read_s = (geometry[0] + geometry[1] * c.context_tokens * batch) / chip.bandwidth_bytes_per_s / fraction
        compute_s = 2 * geometry[2] * batch / (chip.peak_bf16_tflops * 1e12) / compute
        tpot_s = (c.tpot_ms or 0.0) / 1000
        if tpot_s > max(read_s, compute_s) * (1 + noise):
            points.append((float(batch), tpot_s))
    batches = sorted({int(x) for x, _ in points})
    if len(batches) < 2:
        if not batches:
            return f"every cell within {noise:.1%} (TPOT noise) of its device time: device-bound, no host cost seen"
        at = plural(batches[0], "client")
        return f"host-bound (TPOT > device time + {noise:.1%} noise) at {at} only: one point, no line"
    if not own_prefill:  # at the dense peak the compute is a lower bound: TPOT above it need not be the host's
        return (f"no measured compute efficiency on {grid.chip} (no prefill line): its device time at a batch is "
                "only bounded below, so the cells above it need not be host-bound")  # fmt: skip
    slope, intercept = statistics.linear_regression([x for x, _ in points], [y for _, y in points])
    return HostLine(grid.name, grid.chip, grid.engine, grid.engine_version, max(0.0, intercept), max(0.0, slope))


@cache
def host_lines() -> tuple[HostLine, ...]:
    """One HostLine per corpus grid whose host-bound short-context cells span two or more batch sizes (least
    squares; slope and intercept floored at 0); see the module docstring."""
    return tuple(h for h in map(_host_line, _grids()) if isinstance(h, HostLine))


@cache
def host_line_gaps() -> tuple[tuple[str, str], ...]:
    """(grid, why it gives no host line) for each corpus grid with short-context TPOT at 2+ clients but no line."""
    out = []
    for grid in _grids():
        why = _host_line(grid)
        if isinstance(why, str) and not why.startswith("no TPOT"):
            out.append((grid.name, why))
    return tuple(out)


def _fraction(
    values: tuple[tuple[str, str, int, float], ...], chip: str, exclude: str | None
) -> tuple[float | None, bool, tuple[str, ...], Level]:
    """The mean fraction of `chip`'s own rows, else of the other measured chips of its architecture family
    (`_family`), else of its maker's (its kernel stack: NVIDIA's CUDA kernels, AMD's ROCm ones), else of every
    measured chip (each chip weighted once); whether the chip's own; the chips it is the mean of; and which of
    those it is. The maker's other architectures come before every chip's on the corpus's evidence: left out,
    the L4 (no other Ada chip) is read at 0.61 of bandwidth from every chip's mean against 0.68 from NVIDIA's
    (it measures 0.76; prior tok/s error 20.1% against 12.4%, benchmarks/prior_accuracy.py), while the T4 gains
    (7.1% against 20.0%)."""
    own = [f for _, c, _, f in values if c == chip and c != exclude]
    if own:
        return statistics.fmean(own), True, (chip,), "own"
    by_chip: dict[str, list[float]] = {}
    for _, c, _, f in values:
        if c != exclude:
            by_chip.setdefault(c, []).append(f)
    family = {c: v for c, v in by_chip.items() if _family(c) == _family(chip)}
    maker = {c: v for c, v in by_chip.items() if _family(c)[0] == _family(chip)[0]}
    kin, level = (family, "family") if family else (maker, "maker") if maker else (by_chip, "every")
    mean = statistics.fmean(statistics.fmean(v) for v in kin.values()) if kin else None
    return mean, False, tuple(sorted(kin)), cast(Level, level)


def _family(chip: str) -> tuple[str, str | None]:
    """A chip's architecture family: its maker (the GPU database's manufacturer, else its kind) and architecture
    as the catalog names them (the GPU database's: 'Ada Lovelace', 'CDNA 3.0', 'RDNA 3.0'). Chips of one family
    run the same kernels on the same kind of silicon; a maker's other architectures need not (vLLM on ROCm takes
    other attention and GEMM paths on RDNA than on CDNA; NVIDIA's differ from Turing to Hopper), and their
    efficiencies say little of it (MI300X HBM3: 35% of its 5.3 TB/s in decode, dominated by fixed work on small
    models, no measure of a GDDR6 W7900). The catalog names no TPU generation, so every TPU is one family by its
    kind, running tpu-inference's Pallas kernels under XLA (v5e-1 left out of the prefill fractions gets
    v6e-1's 0.49, the seed measured 0.68; v6e-1 left out gets v5e-1's 0.68 where it measures 0.49)."""
    accelerator = planner.rules.accelerator(chip)
    return accelerator.manufacturer or accelerator.kind, accelerator.architecture


def _silicon(chip: str) -> str:
    """The one-chip sibling of a slice (accelerators.json `price_chip`: v5e-4 -> v5e-1), whose measurements
    are of the same silicon; else the chip itself."""
    return planner.rules.accelerator(chip).price_chip or chip


def basis(
    chip: str, engine: str, exclude_chip: str | None = None, exclude_grids: frozenset[str] = frozenset()
) -> Basis:
    """What a prior for `chip` served by `engine` rests on, leaving `exclude_chip`'s measurements (the
    leave-one-chip-out validation passes the chip itself) and `exclude_grids` out: its own fractions and host
    cost where measured, else the mean fractions of its family's measured chips, else its maker's, else every
    measured chip's (`_fraction`, each chip weighted once) and the host cost of
    deployments with the same engine rules (else all). A slice's chips are its one-chip sibling's (`_silicon`).
    """

    def keep(rows: tuple[tuple[str, str, int, float], ...]) -> tuple[tuple[str, str, int, float], ...]:
        return tuple(r for r in rows if r[0] not in exclude_grids)

    silicon, exclude = _silicon(chip), _silicon(exclude_chip) if exclude_chip else None
    bandwidth, own_decode, decode_kin, decode_level = _fraction(keep(decode_fractions()), silicon, exclude)
    compute, own_prefill, prefill_kin, prefill_level = _fraction(keep(prefill_fractions()), silicon, exclude)
    lines = [h for h in host_lines() if h.chip != exclude and h.grid not in exclude_grids]
    own = [h for h in lines if h.chip == silicon and h.engine == engine]
    host = own or [h for h in lines if h.engine == engine] or lines
    scale = 1.0 if own else _host_cap(silicon, engine, exclude, exclude_grids, host)
    return Basis(chip, bandwidth, compute, own_decode, own_prefill, tuple(host), bool(own), scale,
                 decode_kin, prefill_kin, decode_level, prefill_level)  # fmt: skip


def _host_cap(
    chip: str, engine: str, exclude: str | None, exclude_grids: frozenset[str], host: list[HostLine]
) -> float:
    """The largest factor (<= 1) by which other deployments' mean host line stays under `chip`'s own measured
    TPOT at every short-context cell of `engine` (1 when it has none): whatever bound the step, host work
    took no longer (async: TPOT = max(host, device); without it, host + device). A chip measured but with no
    host line of its own (the MI300X without its E2B grid: its E4B grid is host-bound at 8 clients only) thus
    keeps another host's line only as far as its own cells allow (the TPU hosts' mean line says 5.1 ms at one
    client; the MI300X measured 4.16 ms on E4B: scaled by 0.75), scaling fixed and
    per-sequence work alike, as a faster host CPU would. Both terms of the line are host work of one step."""
    if not host or chip == exclude:
        return 1.0
    fixed, per_seq = statistics.fmean(h.fixed_s for h in host), statistics.fmean(h.per_seq_s for h in host)
    scale = 1.0
    for grid in _grids():
        if grid.chip != chip or grid.engine != engine or grid.name in exclude_grids:
            continue
        for c in grid.cells:
            if c.tpot_ms and c.context_tokens <= MAX_HOST_CONTEXT and c.clients <= MAX_HOST_CLIENTS:
                line_s = fixed + per_seq * min(c.clients, grid.max_num_seqs or c.clients)
                scale = min(scale, c.tpot_ms / 1000 / line_s) if line_s else scale
    return scale


def measured_priors(plan: Plan, exclude_chip: str | None = None) -> StepTerms:
    """Priors for `plan` from measurements (`basis` of its chip and engine, `exclude_chip` left out): the
    roofline with weights and KV read at the achieved bandwidth fraction, prefill compute at the achieved
    FLOPS fraction, and the host line's fixed and per-sequence cost where the engine overlaps host and device
    work (async scheduling; without it the measured line also holds the device time, so host terms stay 0).
    Raises ConfigError as roofline_priors does."""
    terms, b = roofline_priors(plan), basis(plan.chip, plan.engine, exclude_chip)
    update: dict[str, float] = {}
    if b.bandwidth_fraction:
        update |= {"weights_s": terms.weights_s / b.bandwidth_fraction,
                   "per_kv_token_s": terms.per_kv_token_s / b.bandwidth_fraction}  # fmt: skip
    if b.compute_fraction:
        update["per_token_s"] = terms.per_token_s / b.compute_fraction
    if b.host and planner.rules.engine_rules(plan.engine).async_scheduling(plan.engine_version):
        update |= {"fixed_s": statistics.fmean(h.fixed_s for h in b.host) * b.host_scale,
                   "per_seq_s": statistics.fmean(h.per_seq_s for h in b.host) * b.host_scale}  # fmt: skip
    overhead = _prior_overhead(plan.chip, exclude_chip)
    if overhead is not None:
        update["request_overhead_s"] = overhead
    return terms.model_copy(update=update)


def _prior_overhead(chip: str, exclude_chip: str | None) -> float | None:
    """The API server's seconds per request on `chip`: its own measured deployments' mean (`request_overheads`),
    else the mean of every other measured chip's (each chip once; `exclude_chip` left out); None with none."""
    silicon, exclude = _silicon(chip), _silicon(exclude_chip) if exclude_chip else None
    own = request_overheads(silicon) if silicon != exclude else []
    if own:
        return statistics.fmean(own)
    chips = {_silicon(g.chip) for g in _grids()} - {exclude, silicon}
    means = [statistics.fmean(v) for v in map(request_overheads, sorted(c for c in chips if c)) if v]
    return statistics.fmean(means) if means else None


@dataclass(frozen=True)
class Carried:
    """A calibration carried to another chip: the terms, and what was carried on measurements of the target
    (`measured`) versus assumed (`assumed`: terms scaled by the cross-chip mean, or host kept as measured)."""

    terms: StepTerms
    measured: tuple[str, ...]
    assumed: tuple[str, ...]


def carry(calibration: Calibration, target: Plan, exclude_grids: frozenset[str] = frozenset()) -> Carried:
    """`calibration` (fitted on another chip) carried to `target` by what each term depends on, taking from the
    calibration only the terms its cells pinned (`Calibration.fitted`); `exclude_grids`: corpus grids not to use
    (validation leaves the predicted grid out). Per term, the ratio a carry must approximate is that of the same
    term fitted on the target (benchmarks/sim_accuracy.py corpus prints both fits):
    - the weight read at the calibrated chip's fitted efficiency scaled by the two chips' decode fractions
      (the fit's read relative to its chip's measured one, kept on the target: seed v5e-1 fit 7.98 ms, 0.70 of its
      roofline, with fractions 0.68 and 0.59 gives v6e-1 4.67 ms; TPOT 4.72 measured), at most the target's own
      measured one-client time per token (`decode_fractions`, host-bound cells left out). A read the cells did not
      pin is the target's measured one (roofline / decode fraction) where it has its own and its own host line
      does not reach the one-client TPOT (`_host_bound_one_client`). A target with no read measured gets its
      family's prior (roofline / `basis` fraction), not the fit's read: fits of one chip trade the read for
      fixed host work (MI300X E2B fit 1.1 ms, 0.78 of the roofline, where E4B and 12B FP8 read at 0.33-0.42), and
      no measured step of the target bounds the split (the 12B fit's read carried to L4: 42 ms, TPOT 19.8);
    - KV read by the ratio of the two chips' decode fractions, compute and prefill attention by their prefill
      fractions (`basis`: a chip's own, else its architecture family's measured chips' mean, else every chip's);
    - the request overhead: the target's own measured one (`request_overheads`: MI300X 10.3-11.0 ms, where an L4
      fit's 34.7 ms bounded by the least one-client TTFT gave 15.2), else the calibration's by the host ratio;
    - host: fixed and per-sequence work and the API server's per-chunk and per-token work by one
      ratio, the target's host line over the calibrated chip's at MAX_HOST_CLIENTS (host CPU and engine build).
      One ratio, not one per term: fits of one chip split a step's host work between its fixed and
      per-sequence parts differently (seed v5e-1 3.49 + 0.66 ms x n, gce v6e-1 4.48 + 0.29 ms x n), while
      their sum at 16 sequences (ratio 0.65) follows the host lines' (0.67). Kept when either line is missing.
      Host terms the cells did not pin (every cell device-bound: L4) are the target's measured host cost
      (`basis`, as `measured_priors`);
    - then bounded by the target's own measurements (`_bounded`).
    Tensor-parallel communication is not modelled. Raises ConfigError when either chip has no roofline."""
    src_roof = calibration.priors
    if src_roof is None:
        raise ConfigError(f"the calibration on {calibration.key.chip} has no roofline prior to carry it over")
    src = basis(calibration.key.chip, target.engine, exclude_grids=exclude_grids)
    dst = basis(target.chip, target.engine, exclude_grids=exclude_grids)
    dst_roof, t = roofline_priors(target), calibration.terms
    pinned = pinned_terms(calibration)
    measured: list[str] = []
    assumed: list[str] = []

    def ratio(own: bool, name: str, fraction_src: float | None, fraction_dst: float | None) -> float:
        (measured if own else assumed).append(name)
        return (fraction_src / fraction_dst) if fraction_src and fraction_dst else 1.0

    bw = ratio(dst.own_decode, "decode bandwidth", src.bandwidth_fraction, dst.bandwidth_fraction)
    compute = dst_roof.per_token_s / src_roof.per_token_s
    compute *= ratio(dst.own_prefill, "prefill compute", src.compute_fraction, dst.compute_fraction)
    own_read = dst_roof.weights_s / dst.bandwidth_fraction if dst.own_decode and dst.bandwidth_fraction else None
    weights = t.weights_s * dst_roof.weights_s / src_roof.weights_s * bw
    src_host, dst_host = _line(src), _line(dst)
    if own_read is None:  # no read measured on the target: its family's or every chip's (`basis`), not the fit's split
        weights = dst_roof.weights_s / dst.bandwidth_fraction if dst.bandwidth_fraction else weights
    elif "weights_s" in pinned or (dst_host and dst.own_host and _host_bound_one_client(dst, exclude_grids)):
        weights = min(weights, own_read)
    else:
        weights = own_read
    host = 1.0
    if src_host and dst_host and dst.own_host and src.own_host:
        measured.append("host cost")
        host = _at(dst_host, MAX_HOST_CLIENTS) / _at(src_host, MAX_HOST_CLIENTS)
    else:
        assumed.append("host cost (kept as measured on the calibrated chip)")
    own_overhead = request_overheads(target.chip, exclude_grids)
    prior_host = {"fixed_s": 0.0, "per_seq_s": 0.0}
    if dst_host and planner.rules.engine_rules(target.engine).async_scheduling(target.engine_version):
        prior_host = {"fixed_s": dst_host.fixed_s * dst.host_scale, "per_seq_s": dst_host.per_seq_s * dst.host_scale}
    engine_host = {n: getattr(t, n) * host if n in pinned else prior_host[n] for n in ("fixed_s", "per_seq_s")}
    terms = StepTerms(
        weights_s=weights,
        per_token_s=t.per_token_s * compute,
        per_kv_token_s=t.per_kv_token_s * dst_roof.per_kv_token_s / src_roof.per_kv_token_s * bw,
        per_attn_pair_s=t.per_attn_pair_s * compute,
        request_overhead_s=statistics.fmean(own_overhead) if own_overhead else t.request_overhead_s * host,
        per_stream_chunk_s=t.per_stream_chunk_s * host,
        per_output_token_s=t.per_output_token_s * host,
        per_admit_s=t.per_admit_s * host,
        tokenize_scale=t.tokenize_scale * host,
        **engine_host,
    )
    return Carried(_bounded(terms, target, exclude_grids), tuple(measured), tuple(assumed))


def _host_bound_one_client(b: Basis, exclude_grids: frozenset[str]) -> bool:
    """Did the host line of `b` (its chip's own) reach a one-client TPOT its decode fraction was read from? Then
    that TPOT is the host's and the fraction says nothing of the read (MI300X E2B: line 3.38 ms at one client,
    TPOT 2.85 ms at 128 x 1)."""
    line = _line(b)
    if line is None:
        return False
    tpots = [c.tpot_ms / 1000 for g in _grids() if _silicon(g.chip) == _silicon(b.chip) and g.name not in exclude_grids
             for c in g.cells if c.clients == 1 and c.tpot_ms]  # fmt: skip
    return bool(tpots) and _at(line, 1) >= min(tpots)


def _bounded(terms: StepTerms, target: Plan, exclude_grids: frozenset[str]) -> StepTerms:
    """`terms` carried to `target`, bounded by what the target's own measured cells (its silicon and engine,
    `exclude_grids` left out) allow, whatever bound each step:
    - host: a step's host work took no longer than its TPOT (async: max(host, device); without it host +
      device) at every short-context cell: fixed_s at most the least TPOT, then per_seq_s at most
      (TPOT - fixed_s) / batch at every batch above one (before this the L4 fit's unpinned 0.27 ms a sequence,
      carried to the MI300X, gave 15.6 ms TPOT at 64 clients where 4.97 was measured);
    - request_overhead_s at most every one-client TTFT: the request was taken before its first token (L4's
      fitted 33.9 ms on an MI300X that measured 13.1 ms TTFT at 128 tokens). Not less the cell's prefill: that
      would lean on the carried compute, itself off by the prefill fractions' error (seed v5e-1 carried to
      v6e-1: 0.0106 ms a token against 0.0080 fitted there, which left no overhead at all under 85 ms at 8,192);
    - the API server's per-chunk plus per-token work (both scaled alike) at most the time per token of every
      cell's tok/s: the server delivered every token the cell counted, and while it keeps up with the engine's
      steps each chunk carries one token (scheduler.py), so a token cost it chunk + token (L4's fitted 0.28 + 0.28
      ms, pinned by no cell of its 360 tok/s grid, would cap an MI300X at 1,800 tok/s where 7,990 were measured).
    """
    silicon = _silicon(target.chip)
    cells = [(g, c) for g in _grids() if _silicon(g.chip) == silicon and g.engine == target.engine
             and g.name not in exclude_grids for c in g.cells]  # fmt: skip
    steps = [(min(c.clients, g.max_num_seqs or c.clients), c.tpot_ms / 1000)
             for g, c in cells if c.tpot_ms and c.context_tokens <= MAX_HOST_CONTEXT]  # fmt: skip
    fixed = min([terms.fixed_s] + [s for _, s in steps])
    per_seq = max(0.0, min([terms.per_seq_s] + [(s - fixed) / n for n, s in steps if n > 1]))
    overhead = min([terms.request_overhead_s] + [c.ttft_ms / 1000 for _, c in cells if c.clients == 1 and c.ttft_ms])
    api = terms.per_stream_chunk_s + terms.per_output_token_s
    api_scale = min([1.0] + [1 / c.output_tok_per_s / api for _, c in cells if c.output_tok_per_s and api])
    return terms.model_copy(update={
        "fixed_s": fixed, "per_seq_s": per_seq, "request_overhead_s": overhead,
        "per_stream_chunk_s": terms.per_stream_chunk_s * api_scale,
        "per_output_token_s": terms.per_output_token_s * api_scale,
    })  # fmt: skip


def _at(line: HostLine, clients: int) -> float:
    return line.fixed_s + line.per_seq_s * clients


def _line(b: Basis) -> HostLine | None:
    """The mean host line of a basis (None when it has none)."""
    if not b.host:
        return None
    first = b.host[0]
    fixed, per_seq = statistics.fmean(h.fixed_s for h in b.host), statistics.fmean(h.per_seq_s for h in b.host)
    return HostLine(first.grid, first.chip, first.engine, first.engine_version, fixed, per_seq)
