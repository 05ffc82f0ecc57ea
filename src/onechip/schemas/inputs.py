"""What a request field needs beyond its type: its command-line flag (`Cli`), the one comma-list parser, and
the one way a request is built from user input (`build_request`: pydantic errors -> one ConfigError line
naming the flag).

A request field is declared once, `Annotated[type, Field(description=...), Cli("--flag")]`: pydantic reads
the type, range and description; the CLI (onechip.cli.options) reads the flag and uses the description as
its --help text; `build_request` names the flag when a value is refused, or, for JSON arguments (an MCP
tool call), the field as the caller sent it; `as_parameters` renames the flags in any other error line the
same way, so an MCP caller is never told to change a flag it cannot send.
"""

from __future__ import annotations

import json
import math
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path, PurePath
from typing import Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError

from onechip import jsontext
from onechip.errors import ConfigError, redact, secret_named, url_shown
from onechip.paths import refuse_secret_path
from onechip.schemas.common import StrictModel

M = TypeVar("M", bound=BaseModel)

# Validation context that marks input a user just typed (vs a stored config read back): exclusions such as
# `--requests-per-client` vs `--duration-s` are about what was given, and a stored config carries every field.
USER_INPUT = {"user_input": True}
# Validation context key that marks JSON arguments (an MCP tool call, build_request(strict=True)): there a list
# or object field takes a JSON array or object only, as its published JSON schema says; the one-string forms
# ('128,1024', 'ctx=1024,clients=16') are the command line's.
JSON_INPUT = "json_input"


# The longest text a request field takes: PATH_MAX on Linux (<linux/limits.h>), above any hub id (96) or
# URL a server answers at; a 1,000,000-character model name is refused before any work.
MAX_TEXT = 4096

# The largest count or byte size a request field takes: int64. vLLM hands these to torch as tensor sizes (the
# KV cache is `torch.zeros(kv_cache_tensor.size, dtype=torch.int8)` in vllm/v1/worker/gpu_model_runner.py
# _allocate_kv_cache_tensors, vLLM 0.19.0; the profiling batch is max_num_batched_tokens rows), and a torch size
# is an int64_t (c10/core/TensorImpl.h sizes_and_strides_); a larger --kv-cache-memory or
# --max-num-batched-tokens is refused here in one line instead of planned with figures no engine could hold.
INT64_MAX = 2**63 - 1

# The most token positions a request may hold, so the most a count of a request's or a step's tokens may name: a
# config's max_position_embeddings (planner/config.py), --max-model-len, --max-num-batched-tokens, --block-size and
# --max-num-seqs (a step batches at most the tokens its requests hold, a block holds a request's, and a sequence
# in a step holds at least one of its tokens). 2**26, 6x the longest published context (Llama 4
# Scout's 10,485,760, tests/fixtures/bootlogs/configs); vLLM's own bound on the block size differs by release
# (vllm/config/cache.py: BlockSize = Literal[1, 8, 16, 32, 64, 128], later with 256, then any int > 0), so the
# planner's is the one that holds for every release it plans.
MAX_POSITIONS = 1 << 26
# GiB of host memory a GiB option may name (VLLM_CPU_KVCACHE_SPACE, --cpu-offload-gb): 4 TiB, above the 2 TB of
# weights of a trillion bf16 parameters, so a larger offload moves nothing more and a larger KV space no host has.
MAX_HOST_GIB = 4096


class RequestModel(StrictModel):
    """A job's request: strict (unknown fields are an error), finite (no inf or nan in any float) and
    bounded (no text longer than MAX_TEXT characters)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=MAX_TEXT)


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
        return (cli.flag or name).upper()  # as --help and the usage line name it (cli.options._param)
    return (cli.flag or "--" + name.replace("_", "-")).split("/")[0]


def as_typed(model: type[BaseModel], name: str, value: Any) -> str:
    """Field `name` of `model` at `value` as a user types it: '--max-model-len 4096', a switch alone
    ('--enforce-eager'; off: its negative, '--no-enable-prefix-caching', or '--enforce-eager false')."""
    flag = flag_of(model, name)
    if isinstance(value, bool):
        off = (cli_of(model, name).flag or "").partition("/")[2]
        return flag if value else off or f"{flag} false"
    return f"{flag} {json.dumps(value, separators=(',', ':')) if isinstance(value, dict) else value}"


class TokenCount(int):
    """The item kind of a comma list of token counts (`comma_list(TokenCount)`): each read as vLLM's --max-model-len
    reads one (read_human_int: '8k' -> 8,000, '8K' -> 8,192, '1_024'), so `bench --contexts 8k` takes what
    `--max-model-len 8k` does. The items are plain ints."""


# how a TokenCount is written, said in the --help of a list of them (cli.options; JSON arguments take integers)
TOKEN_FORMS = "8k is 8,000 and 8K 8,192, as --max-model-len reads them"
_KIND_WORDS = {int: "integers", float: "numbers", str: "words", TokenCount: "token counts (8192, 8k or 8K)"}


def _item(kind: type, text: str) -> Any:
    if kind is TokenCount:
        return read_human_int(text)
    if kind is int:
        return int(text.replace("_", ""))
    if kind is float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(text)
        return value
    return text


def json_input(context: Any) -> bool:
    """True when a validator runs on JSON arguments (context JSON_INPUT: an MCP tool call)."""
    return isinstance(context, dict) and bool(context.get(JSON_INPUT))


def _not_a_string(shape: str, value: Any) -> PydanticCustomError:
    """The `json_shape` error of a string given where JSON arguments need an array or object; build_request
    renders it as 'contexts must be a JSON array of integers such as [128, 1024], not the string ...'."""
    return PydanticCustomError("json_shape", f"must be a JSON {shape}, not the string {shown(value)}")


_JSON_ARRAYS = {int: "array of integers such as [128, 1024]", float: "array of numbers such as [0.1, 0.5]",
                str: 'array of strings such as ["a", "b"]'}  # fmt: skip
_JSON_ARRAYS[TokenCount] = _JSON_ARRAYS[int]


def _entries(error_type: str, value: str, wanted: str) -> list[str]:
    """The comma-separated entries of a typed `value`, stripped: 'a, b' -> ['a', 'b']. The rules every one-string
    list shares (split_commas's, key_values's), written once: a string that lists nothing ('', ',,', ' ') is an
    `error_type` error (typed, it read as the option not given: `--chips ''` was every chip, `advise --slo ''`
    ranked with no SLO), and so is one with an empty entry ('spot,,3y', '128,', 'ctx=1024,'): a typo, not a
    shorter list, which was dropped (cost priced one model less). `wanted` says what to give instead
    ('comma-separated integers', 'key=value pairs such as ctx=1024,clients=16'); build_request puts the flag first."""
    parts = [part.strip() for part in value.split(",")]
    if not any(parts):
        raise PydanticCustomError(error_type, f"lists nothing (got {shown(value)}): give {wanted}")
    if "" in parts:
        raise PydanticCustomError(error_type, f"has an empty entry (got {shown(value)}): give {wanted}, none empty")
    return parts


def ssh_hosts(value: str | None) -> str | None:
    """A --host value, 'user@addr' or a list 'h1,h2' (one engine on each of --replicas N), kept as given. A list
    that names nothing (',') or has an empty entry ('h1,,h2', 'h1,') is a `comma_list` error (_entries): ssh was
    run on the host ',', and a dropped entry left a replica fewer hosts than the user wrote."""
    if value is not None and "," in value:
        _entries("comma_list", value, "comma-separated user@addr")
    return value


def split_commas(kind: type, value: Any, context: Any = None) -> Any:
    """'128,1_024' -> [128, 1024] (kind int), '0.1,0.5' -> [0.1, 0.5] (float, finite), 'smoke,tools' ->
    ['smoke', 'tools'] (str); anything not a string passes through. Anything else is a `comma_list` error,
    which build_request renders as '--flag must be comma-separated integers, got ...', and so is a string
    that lists nothing or has an empty entry (_entries). With JSON arguments (`context` marks JSON_INPUT) a
    string is a `json_shape` error: the list is a JSON array, and so is an empty array (`chips: []` ranked every
    chip, as `--chips ''` did)."""
    if isinstance(value, list) and not value and json_input(context):
        # JSON's `[]` is the CLI's '': an option that lists nothing is refused, not read as not given (such a
        # field's default is null, so `[]` was sent; a field whose default is `[]` never gets here: see
        # mcp.server._given)
        raise PydanticCustomError("json_shape", f"lists nothing (got []): give a JSON {_JSON_ARRAYS[kind]}")
    if not isinstance(value, str):
        return value
    if json_input(context):
        raise _not_a_string(_JSON_ARRAYS[kind], value)
    parts = _entries("comma_list", value, f"comma-separated {_KIND_WORDS[kind]}")
    try:
        return [_item(kind, part) for part in parts]
    except ValueError:
        # no context dict: the message is used as written (braces in the value stay)
        raise PydanticCustomError(
            "comma_list", f"must be comma-separated {_KIND_WORDS[kind]}, got {shown(value)}"
        ) from None


def comma_list(kind: type) -> BeforeValidator:
    """The BeforeValidator of a comma-separated list field of `kind` items (see split_commas)."""

    def validate(value: Any, info: ValidationInfo) -> Any:
        return split_commas(kind, value, info.context)

    return BeforeValidator(validate)


# vLLM's `human_readable_int`, the type of its --max-model-len, --max-num-batched-tokens and --kv-cache-memory
# (vllm/engine/arg_utils.py; vllm/utils/argparse_utils.py in later releases): a number and one suffix, lower case
# decimal (k, m, g, t: 10**3 ... 10**12, '25.6k' -> 25,600) or upper case binary (K, M, G, T: 2**10 ... 2**40, whole
# numbers only: '1.5K' is refused), computed as vLLM computes it (int(float(number) * 10**3n)).
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kmgtKMGT])")


def read_human_int(text: str) -> int:
    """`text` as vLLM's human_readable_int reads it ('32k' -> 32,000, '32K' -> 32,768, '8G' -> 8,589,934,592, a plain
    number by int()). Raises ValueError where vLLM's flag refuses it ('4096.0', '1.5K', 'abc')."""
    match = _HUMAN_INT.fullmatch(text.strip())
    if match is None:
        return int(text)  # vLLM's plain-number branch: int(value)
    number, suffix = match.groups()
    if suffix.islower():
        return int(float(number) * 10 ** (3 * ("kmgt".index(suffix) + 1)))
    if "." in number:
        raise ValueError("decimals go with a decimal suffix only (k, m, g, t), as vLLM reads it")
    return int(number) << (10 * ("KMGT".index(suffix) + 1))


# how a HUMAN_INT is written, said where one is refused (the option here, `--set FLAG=VALUE` in vllm.flag_table)
HUMAN_INT_FORMS = (
    "a whole number, or one with a suffix k, m, g, t (10**3 ...) or K, M, G, T (2**10 ..., whole numbers only), as "
    "vLLM's human_readable_int reads it"
)
# a size as --chip gpu:<size> writes it ('10GiB', '8 GB'), which vLLM's human_readable_int refuses
_SIZE_WORD = re.compile(r"\s*-?\d+(?:\.\d+)?\s*(?:gib|gb|mib|mb|kib|kb|tib|tb)\s*", re.IGNORECASE)


def human_int(value: Any, info: ValidationInfo) -> Any:
    """A BeforeValidator body: a command-line value written as vLLM's flag takes it (read_human_int), so
    `--max-model-len 32k` means what `vllm serve --max-model-len 32k` does; a size written with a unit word
    ('--kv-cache-memory 10GiB', as --chip gpu:24GiB is) is refused saying how vLLM writes it (HUMAN_INT_FORMS), where
    the int check said 'unable to parse string as an integer'; anything else passes through to the field's own int
    check ('abc' is still refused there). JSON arguments (an MCP tool call) are left as sent: their integer is a JSON
    number, as the published schema says."""
    if not isinstance(value, str) or json_input(info.context):
        return value
    try:
        return read_human_int(value)
    except ValueError as exc:
        if _HUMAN_INT.fullmatch(value.strip()) is not None:  # '1.5K': vLLM's own refusal
            raise PydanticCustomError("human_int", str(exc)) from None
        if _SIZE_WORD.fullmatch(value):
            raise PydanticCustomError("human_int", f"write {HUMAN_INT_FORMS}") from None
        return value


# the field metadata of an integer the command line takes as vLLM does (human_int); the CLI reads it as text
HUMAN_INT = BeforeValidator(human_int)
# the field metadata of a list of token counts (TokenCount): its --help says how the command line writes one
TOKEN_COUNTS = comma_list(TokenCount)


# what a key=value flag looks like, by field (the refusal shows the field's own example)
_KEY_VALUE_EXAMPLES = {"workload": "ctx=1024,clients=16"}


def key_values(value: Any, info: ValidationInfo) -> Any:
    """A BeforeValidator body: 'ttft_ms=500,tpot_ms=50' -> {'ttft_ms': 500.0, 'tpot_ms': 50.0}. A string that
    lists nothing or has an empty entry is a `key_values` error, by split_commas's rule (_entries: `--workload ''`
    predicted bench's default cell), and so is a key given twice. With JSON arguments the field is an object;
    `{}` is its published default (mcp.server._given reads it as not sent)."""
    return _key_pairs(value, info, lambda key, text: _number(text))


def key_counts(value: Any, info: ValidationInfo) -> Any:
    """key_values for pairs whose values are counts (advise's ctx=8K,clients=16): each read as --contexts and
    --clients read theirs, vLLM's human_readable_int (read_human_int: 8K is 8,192), so 'ctx=1e3' or 'clients=1.5',
    which those flags refuse, is refused here too, naming the key (float() read 'ctx=1e3' as 1,000 tokens)."""
    return _key_pairs(value, info, _count)


def _count(key: str, text: str) -> float:
    """One count of key_counts. Raises PydanticCustomError naming `key` where read_human_int refuses `text`."""
    try:
        return float(read_human_int(text))
    except ValueError:
        raise PydanticCustomError(
            "key_values", f"{key} must be a whole number, or one with a suffix (8k = 8,000, 8K = 8,192) as "
            f"--contexts reads it (got '{key}={text}')"
        ) from None  # fmt: skip


def _key_pairs(value: Any, info: ValidationInfo, read: Callable[[str, str], float]) -> Any:
    """key_values's body, each value read by `read(key, text)` (raises ValueError)."""
    if not isinstance(value, str):
        return value
    example = _KEY_VALUE_EXAMPLES.get(info.field_name or "", "ttft_ms=500,tpot_ms=50")
    if json_input(info.context):
        pairs = ", ".join(f'"{k}": {v}' for k, v in (part.split("=") for part in example.split(",")))
        raise _not_a_string(f"object such as {{{pairs}}}", value)
    parts = _entries("key_values", value, f"key=value pairs such as {example}")
    try:
        items = [(k.strip(), read(k.strip(), v)) for k, v in (part.split("=", 1) for part in parts)]
    except PydanticCustomError:  # `read`'s own line, naming the key (a ValueError too)
        raise
    except ValueError:
        raise PydanticCustomError("key_values", f"must look like {example}, got {shown(value)}") from None
    keys = [k for k, _ in items]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:  # a dict would keep the last silently (`ctx=1024,ctx=2048` planned 2,048)
        raise PydanticCustomError(
            "key_values", f"gives {', '.join(twice)} twice (got {shown(value)}); give each key once"
        )
    return dict(items)


def _number(text: str) -> float:
    """A key=value pair's value: a number, or a count as --max-model-len and --contexts read it (read_human_int:
    'ctx=8k' is 8,000 tokens, where it was refused as not looking like ctx=1024). Raises ValueError."""
    try:
        return float(text)
    except ValueError:
        return float(read_human_int(text))


# vLLM's --limit-mm-per-prompt, both spellings: JSON (vllm/engine/arg_utils.py of 0.8.5 - 0.34.0 sdists: json.loads
# for a value matching '^{.*}$') and key=value pairs (nullable_kvs, the only form in the 0.6.6 and 0.7.3 sdists,
# deprecated in 0.8.5, removed by 0.10.0)
MM_LIMITS_EXAMPLE = '{"image":2,"audio":0} or image=2,audio=0'


def mm_limits(value: Any, info: ValidationInfo) -> Any:
    """A BeforeValidator body for --limit-mm-per-prompt: '{"image":2,"audio":0}' or 'image=2,audio=0' ->
    {'image': 2, 'audio': 0} (modality names lower-cased, as nullable_kvs does). A count is a whole number >= 0;
    vLLM 0.19's per-item object form ({"image": {"count": 1, "width": 512}}) sizes the dummy items the profiling
    run uses, which the plan does not model, so it is refused. With JSON arguments the field is an object."""
    if isinstance(value, str) and json_input(info.context):
        raise _not_a_string('object such as {"image": 2, "audio": 0}', value)
    return read_mm_limits(value)


def read_mm_limits(value: Any) -> Any:
    """mm_limits without the JSON-arguments rule (a `--set limit-mm-per-prompt=...` value reads the same way).
    Raises PydanticCustomError (a ValueError) with the line to show."""
    if isinstance(value, str):
        text = value.strip()
        try:
            pairs = None if text.startswith("{") else [_count_pair(part) for part in text.split(",")]
            value = jsontext.loads(text) if pairs is None else dict(pairs)
        except ValueError:
            raise PydanticCustomError("key_values", f"must be {MM_LIMITS_EXAMPLE}, got {shown(text)}") from None
        if not isinstance(value, dict) or not value:
            raise PydanticCustomError("key_values", f"must be {MM_LIMITS_EXAMPLE}, got {shown(text)}")
        twice = sorted({k for k, _ in pairs or [] if [k for k, _ in pairs or []].count(k) > 1})
        if twice:  # nullable_kvs refuses a key given twice with two counts; a dict would keep the last silently
            raise PydanticCustomError("key_values", f"gives {', '.join(twice)} twice (got {shown(text)})")
    if not isinstance(value, dict):
        return value
    out: dict[str, int] = {}
    for key, count in value.items():
        if isinstance(count, dict):
            raise PydanticCustomError(
                "key_values", f"{key}: per-item dummy sizes ({shown(count)}) are not planned; give a count"
            )
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            got = "***" if secret_named(str(key)) else shown(count)  # as describe shows a secret-named key's value
            raise PydanticCustomError("key_values", f"{key}: a count is a whole number >= 0, got {got}")
        out[str(key).strip().lower()] = count
    return out


def _count_pair(part: str) -> tuple[str, int]:
    """'image=2' -> ('image', 2); ValueError for anything else (a negative count reads, and is refused after)."""
    key, eq, count = part.partition("=")
    if not eq or not key.strip():
        raise ValueError(part)
    return key.strip(), int(count.strip())


def shown(value: Any, most: int = 80) -> str:
    """repr(value), cut to `most` characters (a refused 1,000,000-character value is not echoed whole); a path as
    the text it was given as ('runs/x', not PosixPath('runs/x')). Secrets are redacted before the cut (a URL's
    userinfo, query and fragment too: url_shown): a cut one (HF_TOKEN's value, an sk- key) no longer has the whole
    value or shape the error line's redaction finds."""
    value = str(value) if isinstance(value, PurePath) else value
    value = url_shown(value) if isinstance(value, str) and "://" in value else value
    text = repr(redact(value)) if isinstance(value, str) else redact(repr(value))
    return text if len(text) <= most else f"{text[: most - 20]}... ({len(text):,} characters)"


def describe(model: type[BaseModel], exc: ValidationError, json_arguments: bool = False) -> str:
    """One line for all of `exc`'s errors, each naming the flag: "Invalid value for '--reps': reps: Input
    should be greater than or equal to 1 (got 0)"; a comma-list error reads '--contexts must be
    comma-separated integers, got 'a,b''; a whole-model rule is its own message. `json_arguments`: the
    values were JSON arguments (an MCP tool call), so each is named as the caller sent it, by its field name
    ("Invalid value for 'tensor_parallel_size'"), and a whole-model rule's flags too (as_parameters)."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        msg = err["msg"].removeprefix("Value error, ")
        if not loc or loc[0] not in model.model_fields:
            parts.append(as_parameters(model, msg) if json_arguments else msg)
            continue
        if err["type"] == "missing":  # its input is everything else given: never echoed
            parts.append(_missing(model, loc, json_arguments))
            continue
        # a secret-named key the caller gave inside an object ('slo.private_key') has its value unshown
        got = "***" if any(secret_named(p) for p in loc[1:]) else shown(err.get("input"))
        if err["type"] in ("comma_list", "key_values", "json_shape"):
            parts.append(f"{loc[0] if json_arguments else flag_of(model, loc[0])} {msg}")
        elif json_arguments:  # the argument's path as sent: 'workload.ctx'; a value as JSON names it (null)
            got = "null" if err.get("input") is None else got
            parts.append(f"Invalid value for '{'.'.join(loc)}': {msg} (got {got})")
        else:
            parts.append(f"Invalid value for '{flag_of(model, loc[0])}': {'.'.join(loc)}: {msg} (got {got})")
    return "; ".join(parts)


def _missing(model: type[BaseModel], loc: list[str], json_arguments: bool) -> str:
    """The line for required field `loc` of `model` not given, in click's words for a missing parameter ("Missing
    argument 'URL'", "Missing option '--chip'": typer's vendored click, core.MissingParameter), as the CLI's parser
    says it; JSON arguments are all arguments, named as sent ("Missing argument 'base_url'"). pydantic's own line
    ('Field required') carries the whole input as its value: echoed, it showed every other argument sent."""
    if json_arguments:
        return f"Missing argument '{'.'.join(loc)}'"
    flag = flag_of(model, loc[0])
    if len(loc) > 1:  # a key inside an object a flag gives (--slo '{...}')
        return f"Invalid value for '{flag}': missing {'.'.join(loc)}"
    return f"Missing {'argument' if cli_of(model, loc[0]).argument else 'option'} '{flag}'"


def parameter_names(model: type[BaseModel]) -> dict[str, str]:
    """Flag -> what JSON arguments (an MCP tool's input) call it, for every field of `model` with a flag:
    '--gpu-memory-utilization' -> 'utilization'; a negative flag names the value ('--text-only' ->
    'multimodal: false'). An argument named by its field ('MODEL', its usage-line name: flag_of) -> the field
    ('model'); not one given another name (bench's URL, report's RUN): that word is also the text's noun for the
    thing ('OpenAI-compatible base URL'), which must stay as written."""
    names = {}
    for name in model.model_fields:
        cli = cli_of(model, name)
        if cli.argument:
            if cli.flag is None:
                names[name.upper()] = name
            continue
        flags = (cli.flag or "--" + name.replace("_", "-")).split("/")
        names[flags[0]] = name
        names.update({negative: f"{name}: false" for negative in flags[1:]})
    return names


# a command to type ('onechip cloud down --name X --yes', or anything in backticks) keeps its flags, and so does a
# flag said to be the CLI's ("the CLI's --router-policies a,b": over MCP it read "the CLI's router_policies a,b") or
# vLLM's own ("vLLM --enforce-eager", the engine's option, which onechip's flag of that name passes on)
_COMMAND = re.compile(r"`[^`]*`|\bonechip [a-z][^;`()]*|\b(?:the CLI's|vLLM) --[a-z][a-z0-9-]*")
_FLAG = re.compile(r"(?<![\w-])(?:--[a-z][a-z0-9-]*|[A-Z][A-Z0-9_]*)(?![\w-])")  # a flag, or an argument (MODEL)


def _said(words: str, match: re.Match[str]) -> str:
    """`words` with the matched flag's value in place of its '{}' (as_parameters)."""
    return words.format(match.group(1))


def _renamed_arguments(model: type[BaseModel]) -> tuple[re.Pattern[str], dict[str, str]] | None:
    """(where, usage name -> field) for the arguments of `model` given another name (bench's URL -> base_url, report's
    RUN -> run_dir): each is the argument where it begins the text or a clause (after ': ', '; ', ', ' or '('), as a
    line naming it says it ('cannot resume D: URL was X, now Y'), and the text's noun elsewhere ('the server's base
    URL'), which stays as written (parameter_names). None when `model` has none."""
    renamed = {}
    for name in model.model_fields:
        cli = cli_of(model, name)
        if cli.argument and cli.flag is not None and cli.flag.upper() != name.upper():
            renamed[cli.flag.upper()] = name
    if not renamed:
        return None
    words = "|".join(map(re.escape, renamed))
    return re.compile(rf"(?:^|(?<=[:;,] )|(?<=\())(?:{words})(?![\w-])"), renamed


def as_parameters(model: type[BaseModel], text: str) -> str:
    """`text` (an error's one line) with each flag of `model` named as JSON arguments name it (see
    parameter_names), so an MCP caller is told which of its arguments to change; commands to type and a flag said
    to be the CLI's keep their flags, and flags `model` has no field for stay as written. A flag whose value JSON
    arguments give another way is said their way: `model.cli_valued` maps it to words with a '{}' for the value
    (bench's '--resume DIR' is 'call bench again with resume: true, out_dir: DIR')."""
    names = parameter_names(model)
    valued = getattr(model, "cli_valued", {})
    renamed = _renamed_arguments(model)

    def plain(part: str) -> str:
        for flag, words in valued.items():  # 'flag VALUE', up to a ')' or ';' (a path may hold spaces)
            part = re.sub(rf"(?<![\w-]){re.escape(flag)} (.+?)(?=[);]|$)", partial(_said, words), part)
        if renamed:
            part = renamed[0].sub(lambda m: renamed[1][m.group(0)], part)
        return _FLAG.sub(lambda m: names.get(m.group(0), m.group(0)), part)

    out, last = [], 0
    for command in _COMMAND.finditer(text):
        out += [plain(text[last : command.start()]), command.group(0)]
        last = command.end()
    return "".join([*out, plain(text[last:])])


def build_request(model: type[M], values: Mapping[str, Any], *, user_input: bool = True, strict: bool = False) -> M:
    """Validate `values` (field name -> value; a None value means 'not given': the default applies) into
    `model`. Raises ConfigError with one line naming each refused flag (see describe).

    `strict`: `values` are JSON values (an MCP tool call's arguments), validated as pydantic's strict JSON
    mode does: a boolean is true/false only (never "false", 1 or 0), an integer is not a boolean (but 1.0 is one:
    _whole_as_int), a number is not a string; a list is a JSON array and a key=value field a JSON object, never one
    string (JSON_INPUT); and a JSON null is a value like any other, as the published schema says: refused for a
    field whose type is not nullable ('tensor_parallel_size: null' planned TP 1 as though left out), taken as null
    where the type admits it (`enable_prefix_caching: null` is the engine's default, as its description says).
    A blank text value ('', '  ') of a field with a default, or of a path, that validation let through is refused
    for user input (_blank_refused): the default is had by leaving the field out, and `--region ''` or
    `region: ""` read as a region matching nothing (prices listed none, as a success)."""
    given = dict(values) if strict else {k: v for k, v in values.items() if v is not None}
    context = USER_INPUT if user_input else None
    try:
        if strict:
            json_context = {**(context or {}), JSON_INPUT: True}
            sent = json.dumps(_whole_as_int(given))
            built = model.model_validate_json(sent, strict=True, context=json_context)
        else:
            built = model.model_validate(given, context=context)
    except ValidationError as exc:
        raise ConfigError(describe(model, exc, json_arguments=strict)) from None
    except (TypeError, ValueError) as exc:  # json.dumps of a value no JSON client can send
        raise ConfigError(f"arguments are not JSON values: {exc}") from None
    for name in given:  # a path is a name on disk, never a token's place (a folder named after it was made)
        value = getattr(built, name, None)
        if isinstance(value, PurePath):
            refuse_secret_path(name if strict else flag_of(model, name), value)
    blank = [k for k, v in given.items() if isinstance(v, str) and not v.strip() and _blank_refused(model, k)]
    if user_input and blank:
        name = blank[0] if strict else flag_of(model, blank[0])
        leave = "" if model.model_fields[blank[0]].is_required() else f", or leave {name} out"
        raise ConfigError(f"{name} is empty (got {shown(given[blank[0]])}): give a value{leave}")
    return built


def _whole_as_int(value: Any) -> Any:
    """JSON `value` with each float that is a whole number (1.0) an int, at any depth: JSON Schema counts 1.0 an
    integer and JSON clients send integers so, while pydantic's strict mode refuses it for an int field (a float
    field takes an int in strict mode too, so only what 1.0 was refused for changes; 1.5 stays refused). Beyond
    2**53 a float is no exact integer and is left as sent (1e300 is not quoted back as 301 digits)."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, list):
        return [_whole_as_int(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole_as_int(v) for k, v in value.items()}
    return value


def _blank_refused(model: type[BaseModel], name: str) -> bool:
    """True when a blank value of field `name` of `model` is refused here: a text field (str or Path, or an optional
    one; not a list, an object or a number, whose own validation words a refused string) with a default, or any
    Path field ('' is Path('.'): `report run_dir: ""` rendered the working folder). A required str field's own
    checks say what its blank value lacks (planner.source: 'MODEL is empty: give a local checkpoint directory')."""
    field = model.model_fields.get(name)
    if field is None:
        return False
    return _text_type(field.annotation) and (not field.is_required() or _text_type(field.annotation, (Path,)))


def _text_type(annotation: Any, kinds: tuple[type, ...] = (str, Path)) -> bool:
    """True when `annotation` admits one of `kinds`, itself or as an optional or annotated one."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_text_type(a, kinds) for a in typing.get_args(annotation))
    if typing.get_origin(annotation) is typing.Annotated:
        return _text_type(typing.get_args(annotation)[0], kinds)
    return annotation in kinds


def given(info_context: Any) -> bool:
    """True when a validator runs on input a user just typed (context USER_INPUT), not a stored config."""
    return isinstance(info_context, dict) and bool(info_context.get("user_input"))
