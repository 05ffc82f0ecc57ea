"""The plan's TPOT floor (decode bytes per step over the bandwidth that streams them) on several GPUs: under tensor
parallelism each GPU holds and reads 1/TP of every layer's weights at once (vLLM's column- and row-parallel linear
layers), so the weight read of one decode step takes bytes / (TP x one card's bandwidth), as the simulator's roofline
already counts it (sim.steptime.roofline_terms: bandwidth x tensor_parallel_size / devices_per_chip). Pipeline
stages read their layers one after another for a token, so they add no bandwidth to one token's step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.rules import accelerator

# Qwen/Qwen3-32B's config.json as published (64 heads, 8 KV heads: TP 1, 2, 4 and 8 all divide them)
QWEN3_32B = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures/bootlogs/configs/Qwen--Qwen3-32B.json").read_text()
)
WEIGHTS_BYTES = 65_535_000_000  # about Qwen3-32B's bf16 checkpoint; any size 8 H100s hold


@pytest.mark.parametrize("tp", [1, 2, 8])
def test_the_tpot_floor_on_h100s_divides_by_the_tensor_parallel_cards(tmp_path: Path, tp: int) -> None:
    model = sized_checkpoint(tmp_path / "m", QWEN3_32B, WEIGHTS_BYTES)
    plan = plan_model(str(model), "h100", "vllm-gpu", max_model_len=4096, tensor_parallel_size=tp)
    # one H100's bandwidth from accelerators.json (NVIDIA's datasheet), times the TP cards that read at once;
    # was one card's at every TP (19.55 ms at TP 8, where each card streams an eighth of the weights)
    card = accelerator("h100").bandwidth_bytes_per_s
    assert card is not None and plan.decode_bytes_per_step is not None
    assert plan.bandwidth_bytes_per_s == card * tp
    assert plan.tpot_floor_ms == pytest.approx(plan.decode_bytes_per_step / (card * tp) * 1000, rel=1e-12)


def test_pipeline_stages_add_no_bandwidth_to_a_token(tmp_path: Path) -> None:
    model = sized_checkpoint(tmp_path / "m", QWEN3_32B, WEIGHTS_BYTES)
    plan = plan_model(str(model), "h100", "vllm-gpu", max_model_len=4096, pipeline_parallel_size=2)
    # the two stages hold half the layers each but a token passes both in turn: one card's bandwidth
    assert plan.bandwidth_bytes_per_s == accelerator("h100").bandwidth_bytes_per_s
