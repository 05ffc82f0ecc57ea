"""Cards vLLM's builds do not list (issue 27 'Any card'): planned all the same, and said. The lists are vLLM's
installation docs (engines.json vllm-gpu platforms_source): CUDA 'compute capability 7.0 or higher'; ROCm MI200s
(gfx90a), MI300 (gfx942), MI350 (gfx950), Radeon RX 7900 (gfx1100/1101), Radeon RX 9000 (gfx1200/1201); Intel GPUs
through the separate XPU backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import smollm2_checkpoint
from onechip.planner import plan_model


def _said(plan) -> list[str]:
    return [w.message for w in plan.warnings if w.code == "platform-unsupported"]


@pytest.mark.parametrize(
    ("chip", "words"),
    [
        ("Tesla P40", "Pascal (compute capability 6.x) is below the 7.0 vLLM's CUDA builds need"),
        # the corpus's Radeon Pro VII log ran the nlzy/vllm-gfx906 fork (radeonprovii-qwen3-0.6b-len40960-v085-rocm)
        ("radeon-pro-vii", "GCN 5.1 is not among the AMD architectures vLLM's ROCm builds support"),
        ("Radeon RX 6800 XT", "RDNA 2.0 is not among the AMD architectures"),
        ("Arc A770", "Intel GPUs run vLLM's separate XPU backend"),
    ],
)
def test_a_card_vllm_does_not_list_is_planned_and_told(tmp_path: Path, chip: str, words: str) -> None:
    plan = plan_model(str(smollm2_checkpoint(tmp_path / "m")), chip, max_model_len=2048)
    assert plan.fits and plan.kv_tokens_logged
    (message,) = _said(plan)
    assert words in message


@pytest.mark.parametrize("chip", ["t4", "v100", "h100", "mi300x", "radeon-pro-w7900", "Radeon AI PRO R9700", "gb10"])
def test_a_listed_card_is_not_told(tmp_path: Path, chip: str) -> None:
    assert _said(plan_model(str(smollm2_checkpoint(tmp_path / "m")), chip, max_model_len=2048)) == []
