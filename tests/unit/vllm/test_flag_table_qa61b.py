"""parse_sets' cache (helper qa61b): one regression test per finding, each failing before its fix."""

from __future__ import annotations

import gc

import pytest

from onechip.errors import ConfigError
from onechip.vllm import flag_table


def _held(items: list[str]) -> int:
    """How many parsed items of `items` are alive (held by parse_sets' cache once the caller dropped its own)."""
    gc.collect()
    mine = set(items)
    # type(), not isinstance(): isinstance reads __class__, which some objects of other tests' imports answer with a
    # warning (torch.distributed.reduce_op's FutureWarning, an error under this suite's filterwarnings)
    return sum(1 for o in gc.get_objects() if type(o) is flag_table.Override and o.item in mine)


def test_the_cache_holds_no_list_but_the_last_one_parsed() -> None:
    # a call parses its one list again and again (api.plan: 4 times, no other list between), so the cache needs only
    # the last; it kept 64 lists, each whole: 100,000 items parsed held ~65 MB (measured, maxrss), so an MCP server
    # fed 64 such lists kept ~4 GB after the calls were answered
    first = [f"VLLM_QA61B_FIRST_{k}=1" for k in range(50)]
    flag_table.parse_sets(first)
    flag_table.parse_sets(["VLLM_QA61B_SECOND=1"])
    assert _held(first) == 0


@pytest.mark.parametrize(
    "items",
    [
        ["enable-prefix-caching", "no-enable-prefix-caching"],
        ["no-enable-prefix-caching", "--enable-prefix-caching=true"],
        ["enable-chunked-prefill", "no_enable_chunked_prefill"],  # a switch not in the table: the same rule
    ],
)
def test_a_switch_and_its_no_form_are_one_flag_given_twice(items: list[str]) -> None:
    # vLLM declares each boolean engine argument with argparse.BooleanOptionalAction ('Creates --no-<name> and
    # --<name> flags', vllm/engine/arg_utils.py of the 0.34.0 sdist), one dest for both, and no flag of its own
    # beginning with 'no-': argparse keeps the last, so 'enable-prefix-caching' then 'no-enable-prefix-caching' was
    # planned and served without prefix caching, not a word said (the serve command showed the last alone)
    with pytest.raises(ConfigError) as caught:
        flag_table.parse_sets(items)
    name = items[0].lstrip("-").replace("_", "-").removeprefix("no-")
    assert str(caught.value) == f"--set {name} is given twice ({items[0]!r} and {items[1]!r}); give it once"
