"""What a request field needs beyond its type: its command-line flag (`Cli`), the one comma-list parser, and
the one way a request is built from user input (`build_request`: pydantic errors -> one ConfigError line
naming the flag).

A request field is declared once, `Annotated[type, Field(description=...), Cli("--flag")]`: pydantic reads
the type, range and description; the CLI (onechip.cli.options) reads the flag and uses the description as
its --help text; `build_request` names the flag when a value is refused.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError

from onechip.errors import ConfigError
from onechip.schemas.common import StrictModel

M = TypeVar("M", bound=BaseModel)

# Validation context that marks input a user just typed (vs a stored config read back): exclusions such as
# `--requests-per-client` vs `--duration-s` are about what was given, and a stored config carries every field.
USER_INPUT = {"user_input": True}


class RequestModel(StrictModel):
    """A job's request: strict (unknown fields are an error) and finite (no inf or nan in any float)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


@dataclass(frozen=True)
class Cli:
    """How a request field appears on the command line.

    flag: the option's declaration, e.g. '--gpu-memory-utilization' or '--multimodal/--text-only';
        None = '--' + the field name with dashes.
    argument: a positional argument instead of an option.
    hidden: not on the command line (set by the program, e.g. the demo's stage callback).
    short: an extra short name, e.g. '-f'.
    repeat: a list given by repeating the option (`--set A --set B`), not comma-separated.
    """

    flag: str | None = None
    argument: bool = False
    hidden: bool = False
    short: str | None = None
    repeat: bool = False


def cli_of(model: type[BaseModel], name: str) -> Cli:
    """The Cli metadata of field `name` of `model` (a default Cli when it declares none). A model may also
    hide inherited fields from its command line with a `cli_hidden` class variable (a set of names)."""
    field = model.model_fields[name]
    cli = next((m for m in field.metadata if isinstance(m, Cli)), Cli())
    if name in getattr(model, "cli_hidden", ()):
        return replace(cli, hidden=True)
    return cli


def flag_of(model: type[BaseModel], name: str) -> str:
    """The flag a user types for field `name`: '--max-model-len', or the argument's name in upper case."""
    cli = cli_of(model, name)
    if cli.argument:
        return name.upper()
    return (cli.flag or "--" + name.replace("_", "-")).split("/")[0]


_KIND_WORDS = {int: "integers", float: "numbers", str: "words"}


def _item(kind: type, text: str) -> Any:
    if kind is int:
        return int(text.replace("_", ""))
    if kind is float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
        return value
    return text


def split_commas(kind: type, value: Any) -> Any:
    """'128,1_024' -> [128, 1024] (kind int), '0.1,0.5' -> [0.1, 0.5] (float, finite), 'smoke,tools' ->
    ['smoke', 'tools'] (str); '' -> None; anything not a string passes through. Anything else is a
    `comma_list` error, which build_request renders as '--flag must be comma-separated integers, got ...'."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return None
    try:
        return [_item(kind, part.strip()) for part in value.split(",") if part.strip()]
    except ValueError:
        # no context dict: the message is used as written (braces in the value stay)
        raise PydanticCustomError("comma_list", f"must be comma-separated {_KIND_WORDS[kind]}, got {value!r}") from None


def comma_list(kind: type) -> BeforeValidator:
    """The BeforeValidator of a comma-separated list field of `kind` items (see split_commas)."""
    return BeforeValidator(functools.partial(split_commas, kind))


# what a key=value flag looks like, by field (the refusal shows the field's own example)
_KEY_VALUE_EXAMPLES = {"workload": "ctx=1024,clients=16"}


def key_values(value: Any, info: ValidationInfo) -> Any:
    """A BeforeValidator body: 'ttft_ms=500,tpot_ms=50' -> {'ttft_ms': 500.0, 'tpot_ms': 50.0}; '' -> {}."""
    if not isinstance(value, str):
        return value
    try:
        return {k.strip(): float(v) for k, v in (part.split("=", 1) for part in value.split(",") if part.strip())}
    except ValueError:
        example = _KEY_VALUE_EXAMPLES.get(info.field_name or "", "ttft_ms=500,tpot_ms=50")
        raise PydanticCustomError("key_values", f"must look like {example}, got {value!r}") from None


def describe(model: type[BaseModel], exc: ValidationError) -> str:
    """One line for all of `exc`'s errors, each naming the flag: "Invalid value for '--reps': reps: Input
    should be greater than or equal to 1 (got 0)"; a comma-list error reads '--contexts must be
    comma-separated integers, got 'a,b''; a whole-model rule is its own message."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        msg = err["msg"].removeprefix("Value error, ")
        if not loc or loc[0] not in model.model_fields:
            parts.append(msg)
        elif err["type"] in ("comma_list", "key_values"):
            parts.append(f"{flag_of(model, loc[0])} {msg}")
        else:
            parts.append(
                f"Invalid value for '{flag_of(model, loc[0])}': {'.'.join(loc)}: {msg} (got {err.get('input')!r})"
            )
    return "; ".join(parts)


def build_request(model: type[M], values: Mapping[str, Any], *, user_input: bool = True) -> M:
    """Validate `values` (field name -> value; a None value means 'not given': the default applies) into
    `model`. Raises ConfigError with one line naming each refused flag (see describe)."""
    given = {k: v for k, v in values.items() if v is not None}
    try:
        return model.model_validate(given, context=USER_INPUT if user_input else None)
    except ValidationError as exc:
        raise ConfigError(describe(model, exc)) from None


def given(info_context: Any) -> bool:
    """True when a validator runs on input a user just typed (context USER_INPUT), not a stored config."""
    return isinstance(info_context, dict) and bool(info_context.get("user_input"))
