"""Pricing: USD per million output tokens, monthly cost, restart cost and spot-vs-flex-start break-even.

arithmetic   pure formulas (seed article cost section)
prices       the prices (last Cloud Billing Catalog read + catalog/prices.json): lookup, staleness, the table
estimate     throughput + catalog -> CostLine / CostReport
"""

from onechip.cost.arithmetic import break_even_hours, monthly_usd, restart_usd, usd_per_mtok
from onechip.cost.estimate import (
    best_output_tok_per_s,
    break_evens,
    cell_costs,
    cost_lines,
    estimate,
    line_label,
    restart_costs,
)
from onechip.cost.prices import (
    PRICING_MODELS,
    all_prices,
    billed_as,
    find_prices,
    is_stale,
    parse_pricing,
    price_table,
    slice_prices,
    unusable_read,
    utc_today,
    why_no_price,
)

__all__ = [
    "PRICING_MODELS",
    "all_prices",
    "billed_as",
    "best_output_tok_per_s",
    "break_even_hours",
    "break_evens",
    "cell_costs",
    "cost_lines",
    "estimate",
    "find_prices",
    "is_stale",
    "line_label",
    "monthly_usd",
    "parse_pricing",
    "price_table",
    "restart_costs",
    "restart_usd",
    "slice_prices",
    "unusable_read",
    "usd_per_mtok",
    "utc_today",
    "why_no_price",
]
