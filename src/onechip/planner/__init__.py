"""The planner: pure arithmetic from a model's config and tensor headers, engine rules and a chip to a Plan.

    plan_model(PlanRequest) -> Plan                    what the deployment will hold and need
    default_engine_rules(chip) -> str                  vllm-tpu, vllm-gpu, vllm-cpu or vllm-ascend by kind
    resolve_model(model) -> ModelSource                its config and tensor inventory (ConfigError if none)
    start_utilization(accelerator) -> float | None     the utilization a card's free memory at start covers
    source_positions(ModelSource, version) -> Positions   the max_model_len vLLM accepts and serves (RoPE-scaled)

Modules: geometry (per-layer KV), weights (tensor headers by component), rules (catalog: chips and engine
rules), source (where a model's config and inventory come from), core (the budget). The plan against an
engine's boot log is onechip.vllm.bootlog.crosscheck; the serve command is onechip.vllm.flags.serve_command.
"""

from onechip.planner.core import default_engine_rules, plan_model, source_positions, start_utilization
from onechip.planner.source import resolve as resolve_model

__all__ = ["default_engine_rules", "plan_model", "resolve_model", "source_positions", "start_utilization"]
