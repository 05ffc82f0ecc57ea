"""What one request costs in a planned KV pool, read from the Plan alone (no config, no checkpoint): what
bench's KV wall and anything else holding a saved plan.json asks.

    blocks_for(plan, tokens) -> int     KV blocks one request of `tokens` occupies under the plan's engine
"""

from __future__ import annotations

from functools import partial

from onechip.planner.core import blocks_per_request, group_size_max_ratio
from onechip.planner.geometry import Geometry
from onechip.planner.gpu_memory import select_rule
from onechip.planner.gpu_plan import kv_layout_uniform, pp_stage_layers, stage_geometry
from onechip.planner.kv_groups import kv_layout
from onechip.planner.rules import engine_rules
from onechip.schemas.plan import Plan


def blocks_for(plan: Plan, tokens: int) -> int:
    """Blocks one request of `tokens` (prompt + output) occupies in the plan's pool, in the unit of
    `plan.num_blocks`: each sliding-window layer holds the plan's `in_flight_tokens` beyond its window.
    On vLLM's GPU engine (the plan has a memory budget) the blocks of its KV layout (planner.kv_groups: groups
    of one page size, or V0's one block over all layers) on the stage that needs the most; elsewhere the
    planner's own rule (core.blocks_per_request: block rounding, windows where the engine windows them) over
    the per-layer table. Raises ConfigError for an unknown engine."""
    rules = engine_rules(plan.engine)
    geometry = Geometry(plan.layers)
    in_flight = plan.in_flight_tokens or plan.max_num_batched_tokens
    if plan.memory_budget is None:
        return blocks_per_request(geometry, tokens, plan.block_size, rules, in_flight)
    version = None if plan.engine_version == rules.version else plan.engine_version
    # the rule the plan was sized under (a V0 fallback's included), else its version's
    named = [x for x in rules.memory_rules if x.versions == plan.memory_budget.rule_versions]
    rule = named[0] if named else select_rule(rules.memory_rules, version)
    tp = plan.tensor_parallel_size
    stages = [stage_geometry(geometry, r) for r in pp_stage_layers(len(plan.layers), plan.pipeline_parallel_size)]
    batch = in_flight or rule.default_max_num_batched_tokens or tokens
    ratio = group_size_max_ratio(rules, version)  # the version's layer grouping (engines.json group_size_rules)
    # a saved plan whose pages do not divide was padded (a release that refuses them made no plan)
    layout = partial(kv_layout, group_size_max_ratio=ratio, pad_pages=True) if rule.hybrid_groups else kv_layout_uniform
    return max(layout(stage, plan.block_size, tp).blocks_per_request(tokens, batch) for stage in stages)
