"""Parsing the comma-separated list options the commands share (--contexts, --clients, --needle-*)."""

from __future__ import annotations

from onechip.errors import ConfigError


def int_list(flag: str, text: str | None) -> list[int] | None:
    """'128,1_024' -> [128, 1024]; None or '' -> None. Raises ConfigError naming the flag."""
    if not text:
        return None
    try:
        return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated integers, got {text!r}") from None


def float_list(flag: str, text: str | None) -> list[float] | None:
    """'0.1,0.5' -> [0.1, 0.5]; None or '' -> None. Raises ConfigError naming the flag."""
    if not text:
        return None
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"{flag} must be comma-separated numbers, got {text!r}") from None
