"""The count_ids filter language and tool answer (pure)."""

from __future__ import annotations

import pytest

from onechip.checks.agent import SEED_IDS
from onechip.checks.id_table import FilterError, count_ids, equivalent


def test_seed_case_counts_8_ids_at_or_above_10():
    # Source: article-zh-v5e-v6e-gemma4-survey, step 1: the seed table, filter "id >= 10", answer 8.
    assert SEED_IDS == [0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13]
    assert count_ids(SEED_IDS, "id >= 10") == {"where": "id >= 10", "count": 8, "min": 10, "max": 23}


@pytest.mark.parametrize(
    ("where", "count"),
    [
        ("id > 10", 7),
        ("id < 10", 3),
        ("id <= 3", 3),
        ("id == 22", 1),
        ("id = 22", 1),
        ("id != 22", 10),
        ("ID>=10 AND id<=12", 3),
        ("id between 3 and 12 inclusive", 4),
        ("between 11 and 21", 5),
        ("id >= 10 and id != 11 and id between 0 and 20 inclusive", 4),
        ("", 11),
        ("id > 100", 0),
    ],
)
def test_filters_select_the_right_ids(where, count):
    assert count_ids(SEED_IDS, where)["count"] == count


def test_empty_selection_has_no_min_max():
    assert count_ids(SEED_IDS, "id > 100") == {"where": "id > 100", "count": 0, "min": None, "max": None}


@pytest.mark.parametrize("where", ["x > 3", "id >= ten", "id >= 10 or id < 2", "id >= 10 and", "count all"])
def test_bad_filters_raise_a_message_a_model_can_act_on(where):
    with pytest.raises(FilterError, match="use clauses like 'id >= 7'"):
        count_ids(SEED_IDS, where)


def test_equivalence_compares_sets_over_the_id_range_plus_minus_2():
    assert equivalent("id >= 10", "id > 9", SEED_IDS)
    assert equivalent("id >= 10", "id between 10 and 25 inclusive", SEED_IDS)  # max 23 + 2 = 25
    assert not equivalent("id >= 10", "id between 10 and 24 inclusive", SEED_IDS)  # differs at 25
    assert not equivalent("id >= 10", "id > 10", SEED_IDS)  # same count on the table would hide 10
    assert not equivalent("id >= 10", "garbage", SEED_IDS)
