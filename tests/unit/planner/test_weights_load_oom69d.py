"""Weights beyond the card itself (corpus69d): vLLM builds the model's parameters on the GPU before any profiling or
utilization applies, so weights per GPU larger than the card's memory fail the load ('Failed to load model - not
enough GPU memory', vllm/v1/worker/gpu_model_runner.py load_model, 0.19.0), not the KV-cache check that weights
between the requested memory and the card meet. The three 05-20 Llama-PLLuM-70B bf16 TP 2 boots on two Radeon AI PRO
R9700s (tests/fixtures/bootlogs r9700x2-llama-pllum-70b-*-bf16-tp2-len8192-eager-load-oom-v0190-rocm): 65.7 GiB a rank
against torch's 31.86 GiB total."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import planner_accuracy_module, sized_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CONFIG = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.3-70B-Instruct.json").read_text(encoding="utf-8"))


def test_weights_beyond_the_card_fail_the_load(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "llama70b", CONFIG, 141_107_412_992)  # the bf16 index's total_size
    plan = plan_model(
        str(path), "radeon-ai-pro-r9700", tensor_parallel_size=2, max_model_len=8192, enforce_eager=True,
        engine_version="0.19.0",
    )  # fmt: skip
    assert not plan.fits and plan.binding_limit == "weights-load"
    assert "31.86 GiB" in plan.verdict and "Failed to load model" in plan.verdict


def test_weights_between_the_request_and_the_card_keep_the_weights_verdict(tmp_path: Path) -> None:
    # 4 x 28.24 GB at TP 4 is 26.30 GiB a card: under the 31.86 GiB card, over the 0.8 x 31.86 = 25.49 GiB requested,
    # so the load succeeds and vLLM's profiling finds no memory for the KV cache
    path = sized_checkpoint(tmp_path / "llama70b", CONFIG, 4 * 28_240_000_000)
    plan = plan_model(
        str(path), "radeon-ai-pro-r9700", tensor_parallel_size=4, max_model_len=8192, utilization=0.8,
        engine_version="0.19.0",
    )  # fmt: skip
    assert not plan.fits and plan.binding_limit == "weights"


def test_the_accuracy_table_scores_a_load_oom_by_its_reason(capsys: pytest.CaptureFixture[str]) -> None:
    # a plan refusing a load-OOM boot for a short KV pool or weights under the card is no prediction of it
    row = {"name": "oom", "logged": None, "outcome": "refused", "predicted": None, "fits": False, "weights": "-",
           "note": "", "load_oom": True}  # fmt: skip
    planner_accuracy_module().table([{**row, "binding": "weights"}, {**row, "binding": "weights-load"}], "t")
    assert "fit/no-fit right in 1 of 2" in capsys.readouterr().out


def test_the_corpus_load_oom_boots_are_refused_for_the_weights_beyond_the_card(tmp_path: Path) -> None:
    accuracy = planner_accuracy_module()
    corpus = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
    rows = [accuracy.predict(e, tmp_path, out_of_sample=True) for e in corpus if "load-oom-v0190" in e["name"]]
    assert len(rows) == 3
    assert all(r["load_oom"] and not r["fits"] and r["binding"] == "weights-load" for r in rows)


# planfix70b: the load needs more than the weights. What a process holds outside PyTorch while vLLM loads (CUDA / HIP
# context, NCCL): 31.86 - 0.047 (48 MiB free) - 31.32 GiB allocated by PyTorch = 0.49 GiB in the R9700 load OOM above;
# 17.52 - 17.03 = 0.49 GiB in use beside PyTorch's after an L40S load (vllm-project/vllm issue #23230, 0.10.1); 92.34 -
# 91.68 = 0.66 GiB at an OOM in linear.py create_weights on a 93.09 GiB card (issue #28143)
@pytest.mark.parametrize(("chip", "tp", "under_gib"), [("radeon-ai-pro-r9700", 1, 0.3), ("h100", 1, 0.2)])
def test_weights_just_under_the_card_fail_the_load(tmp_path: Path, chip: str, tp: int, under_gib: float) -> None:
    card = plan_model(str(sized_checkpoint(tmp_path / "probe", CONFIG, 10 * GIB)), chip, max_model_len=8192)
    visible = card.memory_bytes  # the memory the runtime sees, as the plan takes it
    path = sized_checkpoint(tmp_path / "llama70b", CONFIG, int((visible - under_gib * GIB) * tp))
    plan = plan_model(
        str(path), chip, tensor_parallel_size=tp, max_model_len=8192, utilization=0.9, engine_version="0.19.0"
    )
    assert not plan.fits and plan.binding_limit == "weights-load", plan.verdict
    assert "outside PyTorch" in plan.verdict


def test_weights_a_gib_under_the_card_load_and_find_no_kv_memory(tmp_path: Path) -> None:
    card = plan_model(str(sized_checkpoint(tmp_path / "probe", CONFIG, 10 * GIB)), "h100", max_model_len=8192)
    path = sized_checkpoint(tmp_path / "llama70b", CONFIG, int(card.memory_bytes - 1.0 * GIB))
    plan = plan_model(str(path), "h100", max_model_len=8192, utilization=0.9, engine_version="0.19.0")
    assert not plan.fits and plan.binding_limit == "weights"
