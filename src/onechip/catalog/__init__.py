"""Catalog data files (accelerators, engine rules, prices, models), each entry with a source and a date.

The files live beside this module as JSON. `load(name)` returns the parsed document; callers validate
it into their own schema. No entry is ever hard-coded in Python.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from onechip.errors import ConfigError


@cache
def load(name: str) -> Any:
    """Parse `catalog/<name>.json`. Raises ConfigError when the file is missing or malformed."""
    try:
        text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"catalog file {name}.json is missing from the onechip package") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"catalog file {name}.json is not valid JSON: {exc}") from None
