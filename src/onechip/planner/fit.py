"""What one request costs in a planned KV pool, read from the Plan alone (no config, no checkpoint): what
bench's KV wall and anything else holding a saved plan.json asks.

    blocks_for(plan, tokens) -> int     KV blocks one request of `tokens` occupies under the plan's engine
"""

from __future__ import annotations

from onechip.planner.core import blocks_per_request
from onechip.planner.geometry import Geometry
from onechip.planner.rules import engine_rules
from onechip.schemas.plan import Plan


def blocks_for(plan: Plan, tokens: int) -> int:
    """Blocks of `plan.block_size` one request of `tokens` (prompt + output) occupies in the plan's pool:
    the planner's own rule (core.blocks_per_request: block rounding, sliding windows where the plan's
    engine windows them) over the plan's per-layer table. Raises ConfigError for an unknown engine."""
    rules = engine_rules(plan.engine)
    return blocks_per_request(Geometry(plan.layers), tokens, plan.block_size, rules, plan.max_num_batched_tokens)
