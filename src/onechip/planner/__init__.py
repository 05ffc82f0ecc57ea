"""The planner: pure arithmetic from a model's config and tensor headers, engine rules and a chip to a Plan.

    plan_model(PlanRequest) -> Plan                    what the deployment will hold and need
    crosscheck(plan, boot) -> CrossCheck               the plan against the engine's BootRecord
    crosscheck_log(plan, log_text) -> CrossCheck       the plan against a vLLM boot log's allocation lines

Modules: geometry (per-layer KV), weights (tensor headers by component), rules (catalog: chips and engine
rules), source (where a model's config and inventory come from), core (the budget), against (boot logs).
"""

from onechip.planner.against import crosscheck_log
from onechip.planner.core import crosscheck, plan_model

__all__ = ["crosscheck", "crosscheck_log", "plan_model"]
