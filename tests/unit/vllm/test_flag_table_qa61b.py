"""parse_sets' cache (helper qa61b): one regression test per finding, each failing before its fix."""

from __future__ import annotations

import gc

from onechip.vllm import flag_table


def _held(items: list[str]) -> int:
    """How many parsed items of `items` are alive (held by parse_sets' cache once the caller dropped its own)."""
    gc.collect()
    mine = set(items)
    return sum(1 for o in gc.get_objects() if isinstance(o, flag_table.Override) and o.item in mine)


def test_the_cache_holds_no_list_but_the_last_one_parsed() -> None:
    # a call parses its one list again and again (api.plan: 4 times, no other list between), so the cache needs only
    # the last; it kept 64 lists, each whole: 100,000 items parsed held ~65 MB (measured, maxrss), so an MCP server
    # fed 64 such lists kept ~4 GB after the calls were answered
    first = [f"VLLM_QA61B_FIRST_{k}=1" for k in range(50)]
    flag_table.parse_sets(first)
    flag_table.parse_sets(["VLLM_QA61B_SECOND=1"])
    assert _held(first) == 0
