"""The agent check's hidden id table and its filter language. Pure: no I/O.

A filter is clauses joined with `and`:
    id >= 10      id > 10      id <= 10      id < 10      id == 10 (or id = 10)      id != 10
    id between 3 and 7 inclusive      (`id` optional before `between`; bounds always inclusive)
The empty filter selects every id. Anything else raises `FilterError` with a message a model can
act on (the MCP tool returns it as a tool error). Examples shown to the model avoid the seed's own
`id >= 10`, so a model that copies an example is not scored as having found the filter.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from typing import Any

from onechip.errors import ConfigError


class FilterError(ConfigError):
    """A `count_ids` filter that does not parse."""


_OPS: dict[str, Callable[[int, int], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    "==": operator.eq,
    "=": operator.eq,
    "!=": operator.ne,
    ">": operator.gt,
    "<": operator.lt,
}
_BETWEEN = re.compile(r"(?:id\s+)?between\s+(-?\d+)\s+and\s+(-?\d+)(?:\s+inclusive)?", re.I)
_COMPARE = re.compile(r"id\s*(>=|<=|==|!=|=|>|<)\s*(-?\d+)", re.I)
_AND = re.compile(r"\s+and\s+", re.I)

HELP = (
    "use clauses like 'id >= 7', 'id < 5', 'id == 3', 'id != 3', or 'id between 3 and 7 inclusive', "
    "joined with 'and'; an empty filter counts every id"
)

Predicate = Callable[[int], bool]


def _between(lo: int, hi: int) -> Predicate:
    return lambda i: lo <= i <= hi


def _compare(op: Callable[[int, int], bool], n: int) -> Predicate:
    return lambda i: op(i, n)


def parse_filter(where: str) -> Predicate:
    """Compile `where` into a predicate on one id. Raises FilterError."""
    text = where.strip()
    if not text:
        return lambda _id: True
    clauses: list[Predicate] = []
    pos = 0
    while True:
        m = _BETWEEN.match(text, pos) or _COMPARE.match(text, pos)
        if not m:
            raise FilterError(f"cannot parse filter {where!r} at {text[pos : pos + 20]!r}: {HELP}")
        if m.re is _BETWEEN:
            lo, hi = int(m.group(1)), int(m.group(2))
            clauses.append(_between(lo, hi))
        else:
            op, n = _OPS[m.group(1)], int(m.group(2))
            clauses.append(_compare(op, n))
        pos = m.end()
        if pos == len(text.rstrip()):
            break
        sep = _AND.match(text, pos)
        if not sep:
            raise FilterError(f"cannot parse filter {where!r} at {text[pos : pos + 20]!r}: {HELP}")
        pos = sep.end()
    return lambda i: all(c(i) for c in clauses)


def count_ids(ids: Iterable[int], where: str) -> dict[str, Any]:
    """The `count_ids` tool's answer: {where, count, min, max} over the ids `where` selects.

    min/max are of the selected ids (None when none is selected). Raises FilterError.
    """
    pred = parse_filter(where)
    chosen = [i for i in ids if pred(i)]
    return {
        "where": where,
        "count": len(chosen),
        "min": min(chosen, default=None),
        "max": max(chosen, default=None),
    }


def equivalent(where_a: str, where_b: str, ids: Iterable[int]) -> bool:
    """Two filters select the same integers over [min(ids) - 2, max(ids) + 2]. Unparsable → False."""
    pool = list(ids)
    lo, hi = min(pool) - 2, max(pool) + 2
    try:
        a, b = parse_filter(where_a), parse_filter(where_b)
    except FilterError:
        return False
    return all(a(i) == b(i) for i in range(lo, hi + 1))
