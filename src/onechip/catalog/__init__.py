"""Catalog data files (accelerators, engine rules, prices, models, serve families, tensor inventories), each
entry with a source and a date.

The files live beside this module as JSON; catalog/files.py holds one strict model per file. `load(name)`
returns the parsed document once it has validated against its model, so a misspelt key is an error naming
the file and the key, not a value silently left at its default. No entry is ever hard-coded in Python.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from pydantic import ValidationError

from onechip.catalog.files import file_model
from onechip.errors import ConfigError


@cache
def load(name: str) -> Any:
    """Parse and validate `catalog/<name>.json` (see `parse`). Raises ConfigError when the file is missing."""
    try:
        text = resources.files(__package__).joinpath(f"{name}.json").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"catalog file {name}.json is missing from the onechip package") from None
    return parse(name, text)


def parse(name: str, text: str) -> Any:
    """The document in `text`, the content of catalog file `name`.json, once it matches its model in
    catalog/files.py. Raises ConfigError (one line naming the file and the key) when it is not JSON or does not
    match (unknown key, missing key, wrong type)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"catalog file {name}.json is not valid JSON: {exc}") from None
    model = file_model(name)
    if model is not None:
        try:
            model.model_validate(doc)
        except ValidationError as exc:
            raise ConfigError(f"catalog file {name}.json: {_first_problem(exc)}") from None
    return doc


def _first_problem(exc: ValidationError) -> str:
    """'engines.vllm-tpu.loads_tower: unknown key' from pydantic's errors (and how many more there are).

    An unknown key leads: a misspelt key is also a missing one, and the unknown spelling is what to fix."""
    errors = sorted(exc.errors(), key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    what = {"extra_forbidden": "unknown key", "missing": "missing key"}.get(first["type"], first["msg"])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {what}{more}"
