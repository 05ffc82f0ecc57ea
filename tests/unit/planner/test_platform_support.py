"""Cards vLLM's builds do not list (issue 27 'Any card'): planned all the same, and said. The lists are vLLM's
installation docs (engines.json vllm-gpu platforms_source): CUDA 'compute capability 7.0 or higher'; ROCm MI200s
(gfx90a), MI300 (gfx942), MI350 (gfx950), Radeon RX 7900 (gfx1100/1101), Radeon RX 9000 (gfx1200/1201); Intel GPUs
through the separate XPU backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import smollm2_checkpoint
from onechip.errors import ConfigError
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


@pytest.mark.parametrize(
    "chip", ["t4", "v100-32gb", "h100", "mi300x", "radeon-pro-w7900", "Radeon AI PRO R9700", "gb10"]
)
def test_a_listed_card_is_not_told(tmp_path: Path, chip: str) -> None:
    assert _said(plan_model(str(smollm2_checkpoint(tmp_path / "m")), chip, max_model_len=2048)) == []


@pytest.mark.parametrize("version", ["0.23.0", "0.32.0"])
def test_an_fp8_kv_cache_below_volta_is_refused_as_on_a_v100(tmp_path: Path, version: str) -> None:
    # the V100's refusal (no FlashAttention or FlashInfer below 7.5/8.0, Triton's e4m3 needs 8.9) holds for the
    # Maxwell and Pascal cards below it; a Tesla P40 planned an fp8 KV cache the V100 is refused
    with pytest.raises(ConfigError, match=r"--kv-cache-dtype fp8 on Tesla P40 \(Pascal"):
        plan_model(str(smollm2_checkpoint(tmp_path / "m")), "Tesla P40", kv_cache_dtype="fp8", engine_version=version)
