"""JSON text from the files and arguments a user gives (config.json, safetensors headers, workload and trace
files, run files, --limit-mm-per-prompt): the standard library's parser, whose arrays and objects nested past
Python's recursion limit, and integers longer than Python converts, are told as what they are, a JSON error, not a
RecursionError or a bare ValueError out of the parser (an internal error before)."""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "nested deeper than the parser allows"


class NoPosition(json.JSONDecodeError):
    """JSON the parser refused without a position (nesting, an integer too long): its text is its msg alone."""

    def __str__(self) -> str:
        return self.msg


class NestedTooDeep(NoPosition):
    """JSON nested past the parser's recursion limit: its msg is TOO_DEEP."""


def loads(text: str | bytes, unique_keys: bool = False) -> Any:
    """json.loads(text). Raises json.JSONDecodeError (a ValueError) when `text` is not JSON, including arrays or
    objects nested past Python's recursion limit (about 1,000 levels, less what the caller's stack holds; a real
    config, header, trace or run file nests a few levels), which the C parser raises as RecursionError; that error
    is a NestedTooDeep, whose msg is TOO_DEEP and which has no position. An integer of more digits than Python
    converts (sys.get_int_max_str_digits(), 4,300 by default; the parser raises a plain ValueError, as transformers'
    own json.load of config.json does) is a NoPosition holding the parser's words. `unique_keys`: an object naming a
    key twice is refused too (json.loads keeps the last one silently), msg "key 'K' given twice"."""
    try:
        return json.loads(text, object_pairs_hook=_unique if unique_keys else None)
    except RecursionError:
        raise NestedTooDeep(TOO_DEEP, "", 0) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:  # 'Exceeds the limit (4300 digits) for integer string conversion ...'
        raise NoPosition(str(exc).split(";")[0], "", 0) from None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    twice = next((k for k in keys if keys.count(k) > 1), None)
    if twice is not None:
        raise json.JSONDecodeError(f"key {twice!r} given twice", "", 0)
    return dict(pairs)
