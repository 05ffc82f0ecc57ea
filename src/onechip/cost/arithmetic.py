"""The cost arithmetic, as pure functions of numbers: no catalog, no files.

Every formula is the one the seed article's cost section uses (article-en-single-tpu-agent-backend):
    $/M output tokens = $/chip-hour / (tok/s x 3600 s/h) x 1e6
    monthly           = $/chip-hour x 730 h
    restart           = $/chip-hour x boot seconds / 3600
    break-even        = restart cost / (flex-start $/h - spot $/h)   [hours between preemptions]
"""

from __future__ import annotations

import math

from onechip.errors import ConfigError
from onechip.schemas.cost import HOURS_PER_MONTH

SECONDS_PER_HOUR = 3600.0


def usd_per_mtok(usd_per_chip_hour: float, output_tok_per_s: float) -> float:
    """USD per million output tokens when one chip at `usd_per_chip_hour` serves `output_tok_per_s`.

    Raises ConfigError when the throughput is not positive (a cell that produced nothing has no $/M).
    """
    # `not x > 0` also catches NaN, which compares false to everything and would price as $nan.
    if not output_tok_per_s > 0 or not math.isfinite(output_tok_per_s):
        raise ConfigError(f"output tok/s must be a positive finite number to price it, got {output_tok_per_s}")
    if usd_per_chip_hour < 0:
        raise ConfigError(f"a price cannot be negative, got {usd_per_chip_hour} USD/chip-hour")
    return usd_per_chip_hour / (output_tok_per_s * SECONDS_PER_HOUR) * 1e6


def monthly_usd(usd_per_chip_hour: float, hours: float = HOURS_PER_MONTH) -> float:
    """USD for running one chip `hours` (default 730 h: 24/7 for an average month)."""
    return usd_per_chip_hour * hours


def restart_usd(boot_s: float, usd_per_chip_hour: float) -> float:
    """USD billed while an engine boots for `boot_s` seconds and serves nothing.

    Raises ConfigError for a negative boot time.
    """
    if not boot_s >= 0 or not math.isfinite(boot_s):
        raise ConfigError(f"boot time must be a finite number of seconds, not negative, got {boot_s} s")
    return usd_per_chip_hour * boot_s / SECONDS_PER_HOUR


def break_even_hours(restart_cost_usd: float, spot_usd_per_hour: float, flex_usd_per_hour: float) -> float | None:
    """Mean hours between preemptions below which spot costs more than flex-start.

    Over a span of T hours with one preemption every H hours, spot costs T x spot + (T / H) x restart
    and flex-start costs T x flex; they are equal at H = restart / (flex - spot). Returns None when
    flex-start is not dearer than spot (then spot never wins on price).
    """
    premium = flex_usd_per_hour - spot_usd_per_hour
    if premium <= 0:
        return None
    return restart_cost_usd / premium
