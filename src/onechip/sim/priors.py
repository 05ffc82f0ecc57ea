"""Priors from measurements: the roofline at the fraction of HBM bandwidth chips were measured to reach.

The datasheet roofline (steptime.roofline_priors) reads weights and KV at the chip's full bandwidth; measured
one-client decode reaches a fraction of it. `bandwidth_fraction` is that fraction, fitted on the one-client
cells of the measurement corpus (catalog serving_measurements.json `grids`, each with its source): tok/s x
bytes one decode step reads (streamed weights + KV of the context, from the plan) / the chip's bandwidth.
benchmarks/prior_accuracy.py validates it leaving one chip out. Host costs are still missing, so with many
clients a prior stays optimistic (the corpus's `prediction_error.prior` says by how much).
"""

from __future__ import annotations

import statistics
from functools import cache

from onechip import catalog, planner
from onechip.schemas import Plan
from onechip.schemas.requests import PlanRequest
from onechip.schemas.sim import StepTerms
from onechip.sim.steptime import roofline_priors


@cache
def one_client_fractions() -> tuple[tuple[str, str, int, float], ...]:
    """(grid, chip, context tokens, achieved fraction of HBM bandwidth) per one-client corpus cell, with the
    grid's settings as planned (max-model-len 32768, 4096 tokens a step: the seeds')."""
    out = []
    for grid in catalog.serving_measurements().grids:
        plan = planner.plan_model(
            PlanRequest(model=grid.model, chip=grid.chip, max_model_len=32768, max_num_batched_tokens=4096)
        )
        bandwidth = planner.rules.accelerator(grid.chip).bandwidth_bytes_per_s
        for c in grid.cells:
            if c.clients == 1 and bandwidth and plan.decode_bytes_per_step is not None:
                step_bytes = plan.decode_bytes_per_step + plan.kv_bytes_per_token * c.context_tokens
                out.append((grid.name, grid.chip, c.context_tokens, c.output_tok_per_s * step_bytes / bandwidth))
    return tuple(out)


def bandwidth_fraction(exclude_chip: str | None = None) -> float | None:
    """Mean achieved fraction of HBM bandwidth over the corpus's one-client cells, leaving `exclude_chip`'s
    out (leave-one-chip-out validation); None when no other chip was measured."""
    values = [f for _, chip, _, f in one_client_fractions() if chip != exclude_chip]
    return statistics.fmean(values) if values else None


def measured_priors(plan: Plan, exclude_chip: str | None = None) -> StepTerms:
    """Roofline priors for `plan` with weights and KV read at the measured fraction of bandwidth (compute at
    the datasheet peak, host terms 0); the roofline itself when the corpus has no measurement to use. Raises
    ConfigError as roofline_priors does."""
    terms = roofline_priors(plan)
    fraction = bandwidth_fraction(exclude_chip)
    if not fraction:
        return terms
    return terms.model_copy(
        update={"weights_s": terms.weights_s / fraction, "per_kv_token_s": terms.per_kv_token_s / fraction}
    )
