"""`plan --against LOG` where the log is of another platform than the plan's (bootlog.PLATFORMS, read from the lines
only that platform prints): one no engine rule plans (Apple Metal via vllm-metal, Intel Gaudi) is refused in one line
naming it, where the 0.30 Metal log was planned as vLLM's CPU backend (its token line says 'CPU KV cache size': the
plugin's device type) and the 0.23 Metal and the Gaudi logs as a GPU's; one another engine plans (an Ascend NPU's for a
vllm-gpu plan) is another deployment. The logs are real: tests/fixtures/bootlogs, each with its source in
corpus.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip import api
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.schemas.requests import PlanRequest
from onechip.vllm.bootlog import PLATFORMS, crosscheck, read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
METAL_030 = BOOTLOGS / "mac-m4-metal-qwen3-0.6b-util030-len4096-v0300-wrapped.log"
METAL_023 = BOOTLOGS / "mac-metal-qwen3-0.6b-frac020-len4096-v0230.log"
GAUDI = BOOTLOGS / "gaudi3-llama31-8b-len4096-eager-v0-hpu-plugin-v091dev.log"


@pytest.mark.parametrize("log", [METAL_030, METAL_023, GAUDI])
def test_plan_against_a_log_of_a_platform_no_engine_plans_is_refused(
    log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # was: the 0.30 Metal log was planned as vLLM's CPU backend (agrees or differs on its 'CPU KV cache size'), the
    # 0.23 Metal and the Gaudi logs as a GPU's
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    platform = read_boot_log(log.read_text(encoding="utf-8"), "vllm", "m").logged.get("platform")
    assert platform is not None and PLATFORMS[platform].engine is None
    for chip in ("cpu", "a100-80gb"):
        with pytest.raises(ConfigError) as caught:
            api.plan(PlanRequest(model="SmolLM2-135M-Instruct", chip=chip, max_model_len=4096, against=log))
        said = str(caught.value)
        assert said.startswith(f"--against {log}: ") and PLATFORMS[platform].name in said and "\n" not in said


def test_a_log_of_another_engines_platform_is_another_deployment(tiny_llama: Path) -> None:
    # the Ascend log prints 'GPU KV cache size' (vLLM 0.18.0 on every platform) on an NPU (device_config=npu): a
    # vllm-gpu plan is not its deployment, whatever its figures
    plan = plan_model(str(tiny_llama), "a100-80gb", "vllm-gpu", max_model_len=8192)
    text = (BOOTLOGS / "ascend-qwen3-vl-8b-len16384-v0180.log").read_text(encoding="utf-8")
    result = crosscheck(plan, read_boot_log(text, plan.engine, plan.model))
    assert "other-deployment" in result.flags
    assert f"a log of {PLATFORMS['ascend'].name} (vllm-ascend), planned vllm-gpu on a100-80gb" in result.note
