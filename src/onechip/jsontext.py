"""JSON text from the files and arguments a user gives (config.json, safetensors headers, workload and trace
files, run files, --limit-mm-per-prompt): the standard library's parser, whose arrays and objects nested past
Python's recursion limit are told as what they are, a JSON error, not a RecursionError out of the parser (an
internal error before)."""

from __future__ import annotations

import json
from typing import Any

TOO_DEEP = "nested deeper than the parser allows"


class NestedTooDeep(json.JSONDecodeError):
    """JSON nested past the parser's recursion limit: no position is known, so its text is TOO_DEEP alone."""

    def __str__(self) -> str:
        return self.msg


def loads(text: str | bytes) -> Any:
    """json.loads(text). Raises json.JSONDecodeError (a ValueError) when `text` is not JSON, including arrays or
    objects nested past Python's recursion limit (about 1,000 levels, less what the caller's stack holds; a real
    config, header, trace or run file nests a few levels), which the C parser raises as RecursionError; that error
    is a NestedTooDeep, whose msg is TOO_DEEP and which has no position."""
    try:
        return json.loads(text)
    except RecursionError:
        raise NestedTooDeep(TOO_DEEP, "", 0) from None
