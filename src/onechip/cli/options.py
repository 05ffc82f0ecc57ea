"""Command-line options generated from a request model (schemas.requests, schemas.bench.BenchConfig).

`@options_from(Model)` gives a typer command one parameter per field of Model that its `Cli` metadata does
not hide: the flag from `Cli` (or `--field-name`), the --help text from the field's description, the
default shown from the field's default. Values arrive in the command's `**fields` (None = not given) and
become the request through schemas.inputs.build_request, which owns every check (ranges, comma lists,
exclusions) and names the flag in its one-line ConfigError. Only the parse into a Python type (int,
float, path) is click's, so `--reps abc` is still click's usage error.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from onechip.schemas.inputs import HUMAN_INT, TOKEN_COUNTS, TOKEN_FORMS, cli_of

F = TypeVar("F", bound=Callable[..., Any])

_SCALARS = (bool, int, float, str, Path)


def _cli_type(annotation: Any, repeat: bool) -> Any:
    """The Python type click parses a field's text into: the scalar inside Optional; str for lists (the
    model splits commas), dicts, literals and anything else; list[str] for a repeated option."""
    if repeat:
        return list[str]
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        annotation = args[0]
    if typing.get_origin(annotation) is typing.Annotated:  # e.g. Port = Annotated[int, Field(ge=1)]
        annotation = typing.get_args(annotation)[0]
    return annotation if annotation in _SCALARS else str


def _shown_default(field: FieldInfo) -> str | bool:
    """The default --help shows: '128,1024' for a list, the value otherwise; nothing when None."""
    default = field.get_default(call_default_factory=True)
    if default is None or default is PydanticUndefined or default == [] or default == {}:
        return False
    if isinstance(default, list):
        return ",".join(str(x) for x in default)
    return str(default)


# how the command line writes an integer vLLM's own flags read (schemas.inputs.read_human_int, HUMAN_INT)
HUMAN_INT_HELP = (
    "Also as vLLM writes it: 8k = 8,000, 8K = 8,192, 8G = 8 GiB (k, m, g, t: 10**3 ... 10**12; K, M, G, T: "
    "2**10 ... 2**40)."
)


def _help(field: FieldInfo, kind: Any, repeat: bool) -> str | None:
    """An option's --help: the field's description (shared with the MCP tools, whose JSON arguments take the array or
    integer their schema says), then how this command line writes the value: a list as one comma-separated text
    (`kind` str: the model splits it), token counts and vLLM's integers with suffixes."""
    forms = []
    if typing.get_origin(_cli_type_inner(field.annotation)) is list and kind is str and not repeat:
        forms.append(f"Comma-separated; {TOKEN_FORMS}." if TOKEN_COUNTS in field.metadata else "Comma-separated.")
    if HUMAN_INT in field.metadata:
        forms.append(HUMAN_INT_HELP)
    return " ".join([field.description or "", *forms]).strip() or None


def _cli_type_inner(annotation: Any) -> Any:
    """`annotation` without Optional and Annotated around it: list[int] of `Annotated[list[int] | None, ...]`."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _cli_type_inner(typing.get_args(annotation)[0])
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _cli_type_inner(args[0])
    return annotation


def _param(model: type[BaseModel], name: str, field: FieldInfo, optional: set[str]) -> inspect.Parameter:
    """One typer parameter for field `name` of `model`."""
    cli = cli_of(model, name)
    # an integer vLLM's own flag takes as '32k' (HUMAN_INT) arrives as text, for the model to read
    human = HUMAN_INT in field.metadata
    kind = str if human else _cli_type(field.annotation, cli.repeat)
    # a path arrives as typed, for the model to read: click's Path('') is '.', so `report ''` rendered (and wrote
    # report.md into) the working folder where build_request refuses a blank path
    path, kind = kind is Path, str if kind is Path else kind
    required = field.is_required() and name not in optional
    described = _help(field, kind, cli.repeat)
    if cli.argument:
        metavar = (cli.flag or name).upper()  # MODEL, URL, RUN: not typer's '{model}'
        info = typer.Argument(... if required else None, metavar=metavar, help=described, show_default=False)
    else:
        decls = [cli.flag or "--" + name.replace("_", "-"), *([cli.short] if cli.short else [])]
        # None for a flag too: click then says whether it was typed (None = not given, as for every option),
        # so the request's fields_set is what the user typed (`--kv-cache-dtype auto` beside a --set of it)
        default = ... if required else None
        info = typer.Option(
            default, *decls, help=described, show_default=_shown_default(field),
            # a flag takes no value: no '<bool>' beside it; a HUMAN_INT one is an integer, read from text
            metavar="" if kind is bool else "<int>" if human else "<path>" if path else None,
        )  # fmt: skip
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind)


def model_params(model: type[BaseModel], optional: set[str] | None = None) -> list[inspect.Parameter]:
    """The typer parameters of `model`'s visible fields, arguments first. `optional`: arguments the
    command may go without (e.g. bench's URL, when --resume gives it)."""
    params = [
        _param(model, name, field, optional or set())
        for name, field in model.model_fields.items()
        if not cli_of(model, name).hidden
    ]
    return sorted(params, key=lambda p: not isinstance(p.default, typer.models.ArgumentInfo))


def options_from(model: type[BaseModel], *, optional: set[str] | None = None) -> Callable[[F], F]:
    """Decorate a typer command `f(own params..., **fields)`: the command line gets `model`'s options
    after f's own, and f receives them in `fields` (field name -> value, None when not given)."""

    def decorate(func: F) -> F:
        hints = typing.get_type_hints(func, include_extras=True)
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(p.name, p.annotation))
            for p in inspect.signature(func).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        for p in own:  # the command's own flags (--json, ...) take no value either
            if p.annotation is bool and isinstance(p.default, typer.models.OptionInfo) and p.default.metavar is None:
                p.default.metavar = ""
        params = model_params(model, optional) + own

        @functools.wraps(func)
        def command(**kwargs: Any) -> Any:
            return func(**kwargs)

        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # typer must read the generated signature, not func's
        return typing.cast(F, command)

    return decorate


def on_command_line(ctx: typer.Context) -> set[str]:
    """Parameters the user set on the command line (not left at their defaults)."""
    # by name: typer may hand over its own copy of click's ParameterSource enum
    return {name for name in ctx.params if getattr(ctx.get_parameter_source(name), "name", "") == "COMMANDLINE"}
