"""`plan --against LOG` where the log's card shows another total than the planned chip's visible memory, within the
band that still makes it the same card (bootlog._SAME_CARD): the pool is that total x utilization less the rest, so a
token line that differs says so, with the chip that takes the log's total (tests/fixtures/bootlogs
rtx4090-wsl-qwen25-0.5b-len2048-util085-v0271: an RTX 4090 under WSL2 whose runtime sees 23.99 GiB, 'Free memory on
device (22.45/23.99 GiB)', where accelerators.json rtx4090 holds the 23.53 GiB Linux hosts see)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from onechip.planner import plan_model
from onechip.vllm.bootlog import crosscheck, read_boot_log

ROOT = Path(__file__).resolve().parents[3]
BOOTLOGS = ROOT / "tests" / "fixtures" / "bootlogs"
LOG = (BOOTLOGS / "rtx4090-wsl-qwen25-0.5b-len2048-util085-v0271.log").read_text(encoding="utf-8")


def _checkpoint(directory: Path) -> str:
    """Qwen2.5-0.5B-Instruct as benchmarks/planner_accuracy.py writes it: the corpus config and the checkpoint's
    494,032,768 parameters x 2 B (corpus.json weights_total_bytes)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    config = json.loads((BOOTLOGS / "configs" / "Qwen--Qwen2.5-0.5B-Instruct.json").read_text(encoding="utf-8"))
    planner_accuracy.write_checkpoint(directory, config, 988_065_536, False)
    return str(directory)


def _against(model: str, chip: str):
    plan = plan_model(model, chip, "vllm-gpu", engine_version="0.27.1", max_model_len=2048, utilization=0.85)
    return crosscheck(plan, read_boot_log(LOG, plan.engine, plan.model))


def test_a_token_line_that_differs_names_the_cards_total_the_log_shows(tmp_path: Path) -> None:
    result = _against(_checkpoint(tmp_path / "q"), "rtx4090")
    assert not result.agrees and "other-deployment" not in result.flags  # 23.99 / 23.53: +2.0%, the same card
    # the log's total, the planned chip's (accelerators.json rtx4090 memory_visible: 23.53 GiB) and the chip to plan
    assert "the log's card shows 23.99 GiB per GPU, planned rtx4090's 23.53 GiB" in result.note
    assert "--chip gpu:23.99GiB" in result.note


def test_a_plan_on_the_logs_total_does_not_name_it(tmp_path: Path) -> None:
    result = _against(_checkpoint(tmp_path / "q"), "gpu:23.99GiB")
    assert "the log's card shows" not in result.note


def test_a_token_line_that_differs_names_the_logs_release_when_the_plan_is_for_another(tmp_path: Path) -> None:
    """The log prints vLLM 0.27.1 ('vLLM API server version 0.27.1'); a plan with no --engine-version is for
    engines.json vllm-gpu release 0.32.0, the release `up` runs: where the figures differ the note names both and the
    flag that plans the log's (qa68b: a 0.19.0 Granite-4.0-H log planned at 0.32.0 said only 'check block size, KV
    dtype and pool size'). A plan for the log's release does not name it."""
    model = _checkpoint(tmp_path / "q")
    plan = plan_model(model, "rtx4090", "vllm-gpu", max_model_len=2048, utilization=0.85)
    result = crosscheck(plan, read_boot_log(LOG, plan.engine, plan.model))
    assert not result.agrees
    assert "the log is vLLM 0.27.1, the plan is for vLLM 0.32.0: --engine-version 0.27.1 plans the log's" in result.note
    assert "the log is vLLM" not in _against(model, "rtx4090").note


def test_a_log_of_an_untagged_build_does_not_name_a_flag_that_plans_the_same(tmp_path: Path) -> None:
    """A log of a vLLM tree with no tag prints setuptools_scm's '0.1.devN' (the bootlogs fixtures' 2026-04 main build
    0.1.dev15312, a 2025-09 ROCm source build 0.1.dev1+g6997a25ac). The planner plans such a version as no
    --engine-version (planner.rules.untagged_build): --engine-version 0.1.dev15312 gives the same plan, so the note
    named a flag that changes nothing, even on a plan made with it (qa68c)."""
    model = _checkpoint(tmp_path / "q")
    log = LOG.replace("version 0.27.1", "version 0.1.dev15312")
    for version in (None, "0.1.dev15312"):
        plan = plan_model(model, "rtx4090", "vllm-gpu", max_model_len=2048, utilization=0.85, engine_version=version)
        result = crosscheck(plan, read_boot_log(log, plan.engine, plan.model))
        assert not result.agrees
        assert "--engine-version 0.1.dev15312" not in result.note
