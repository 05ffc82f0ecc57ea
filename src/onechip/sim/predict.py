"""Simulating a bench grid: every (context, clients) cell of a BenchConfig, once per seed.

A cell whose single request needs more KV blocks than the plan's pool, or more tokens than max_model_len,
is infeasible (what bench would record), never dropped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas import Plan
from onechip.schemas.bench import BenchConfig, RequestSample
from onechip.schemas.sim import StepTerms
from onechip.sim.scheduler import CellSimulation, SchedulerLimits
from onechip.sim.steptime import budget_tokens, step_model


@dataclass
class CellPrediction:
    """Samples of one cell by seed (the reps), or why it cannot run."""

    context_tokens: int
    clients: int
    samples_by_seed: dict[int, Sequence[RequestSample]] = field(default_factory=dict)
    infeasible: str | None = None
    preemptions: int = 0


def engine_of(plan: Plan) -> SchedulerLimits:
    """The scheduler limits of `plan`: its KV blocks and block size, and the engine's token budget."""
    return SchedulerLimits(num_blocks=plan.num_blocks, block_size=plan.block_size, budget_tokens=budget_tokens(plan))


def simulate_cell(
    plan: Plan,
    terms: StepTerms,
    config: BenchConfig,
    context: int,
    clients: int,
    seeds: int,
    start_spread_s: float | None = 0.0,
    jitter: bool = False,
) -> CellPrediction:
    """One cell of `config` on `plan` with `terms`, seeds 0 .. seeds-1 (stream starts and `jitter`, the
    seeded variation of each request's API-server time: CellSimulation)."""
    cell = CellPrediction(context, clients)
    if context + config.output_tokens > plan.max_model_len:
        cell.infeasible = f"{context} + {config.output_tokens} tokens exceed max_model_len {plan.max_model_len}"
        return cell
    engine, model = engine_of(plan), step_model(plan, terms)
    for seed in range(seeds):
        sim = CellSimulation(config, engine, model, context, clients, seed, start_spread_s, jitter)
        try:
            cell.samples_by_seed[seed] = sim.run()
        except RuntimeError as exc:
            cell.infeasible = str(exc)
            cell.samples_by_seed.clear()
            return cell
        cell.preemptions += sim.preemptions
    return cell


def simulate_grid(
    plan: Plan,
    terms: StepTerms,
    config: BenchConfig,
    seeds: int,
    on_progress: ProgressFn = no_progress,
    start_spread_s: float | None = 0.0,
    jitter: bool = False,
) -> list[CellPrediction]:
    """Every cell of `config` (contexts x clients, grid order), `seeds` simulations each (`jitter`:
    CellSimulation's seeded API-server time variation; off by default, see benchmarks/sim_accuracy.py --jitter
    for what it does to accuracy)."""
    cells = [(ctx, n) for ctx in config.contexts for n in config.clients]
    out = []
    for i, (ctx, n) in enumerate(cells):
        on_progress(ProgressEvent("simulate", f"{ctx:,} tokens x {n} clients", done=i, total=len(cells)))
        out.append(simulate_cell(plan, terms, config, ctx, n, seeds, start_spread_s, jitter))
    on_progress(ProgressEvent("simulate", "grid simulated", done=len(cells), total=len(cells)))
    return out
