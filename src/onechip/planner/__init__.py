"""The planner: pure arithmetic from a model's config and tensor headers, engine rules and a chip to a Plan.

    plan_model(model, chip, engine, ...) -> Plan      what the deployment will hold and need
    crosscheck(plan, boot) -> CrossCheck               the plan against what the engine logged

Modules: geometry (per-layer KV), weights (tensor headers by component), rules (catalog: chips and engine
rules), source (where a model's config and inventory come from), core (the budget).
"""

from onechip.planner.core import crosscheck, plan_model

__all__ = ["crosscheck", "plan_model"]
