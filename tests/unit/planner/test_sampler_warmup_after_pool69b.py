"""vLLM 0.19.0's sampler warm-up after the KV pool (issue 27, planfix69b): the two corpus boots that passed the fit
check and died 'warming up sampler with 1024 dummy requests' at utilization 0.95, and the started boots at high
utilization that any rule for them must leave alone.

Read in the vllm-0.19.0 sdist: gpu_worker.py compile_or_warm_up_model runs capture_model, then _dummy_run on
min(max_num_seqs, max_num_batched_tokens) tokens and _dummy_sampler_run on their rows; gpu_model_runner.py
profile_run, inside the profiled activation peak, makes the same _dummy_sampler_run on the same rows
(_dummy_run(max_num_tokens) gives one row per request, min(max_num_tokens, max_num_seqs) requests). So the warm-up's
own need is planned inside the budget; what it ran out of is what the corpus entries' known_error says."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from factories import BOOTLOGS, corpus_entry, planner_accuracy_module
from onechip.schemas.common import GIB

FAILED = ("h100-gpt-oss-20b-sampler-oom-v0190", "h100x2-gpt-oss-20b-tp2-sampler-oom-v0190")


@pytest.mark.parametrize("name", FAILED)
def test_the_planned_activation_peak_holds_the_warm_ups_sampler(name: str, tmp_path: Path) -> None:
    entry = corpus_entry(name)
    row = planner_accuracy_module().predict(entry, tmp_path, out_of_sample=True)
    budget = row["plan"].memory_budget
    # what _dummy_sampler_run holds at random_sample's q (vllm-0.19.0 sampler.py, topk_topp_sampler.py): the bf16
    # logits, their fp32 copy, probs and q over 1,024 rows x vocab 201,088 (the OOM line's 786.00 MiB is one fp32
    # tensor, 1,024 x 201,088 x 4 B rounded up to torch's 2 MiB)
    rows, vocab = min(entry["engine_args"]["max_num_seqs"], entry["engine_args"]["max_num_batched_tokens"]), 201_088
    assert rows * vocab * 4 / 2**20 == pytest.approx(entry["logged"]["oom_tried_to_allocate_mib"], abs=2)
    assert budget.activation_peak_bytes >= rows * vocab * (2 + 4 + 4 + 4)
    # and the plan's peak is the one the engine profiled: 'peak activation 2.87 GiB' on both ranks' logs
    assert budget.activation_peak_bytes / GIB == pytest.approx(entry["logged"]["activation_peak_gib"], abs=0.05)


def test_every_started_boot_at_high_utilization_is_planned_to_start(tmp_path: Path) -> None:
    # the guard any sampler warm-up rule must pass: the corpus's started boots at utilization >= 0.93 (the 0.19.0 H100
    # sweep at 0.95 with max_num_seqs 1,024, Gemma 2/3's vocabularies of 256,000 - 262,208 and Llama 4 Scout's 202,048
    # among them) stay planned as fitting wherever they are scored
    bench = planner_accuracy_module()
    corpus = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
    high = [
        e
        for e in corpus
        if e["outcome"] == "started" and ((e.get("engine_args") or {}).get("gpu_memory_utilization") or 0) >= 0.93
    ]
    rows = [bench.budget_row(e, tmp_path / e["name"]) for e in high]
    scored = [row for row in rows if "skip" not in row]
    assert len(scored) >= 45  # 48 of the 64 are scored with the log's weights (2026-12-07)
    assert [row["name"] for row in scored if not row["fits"]] == []


def test_a_wrong_fit_verdict_is_listed_with_its_cause(tmp_path: Path) -> None:
    bench = planner_accuracy_module()
    entry = corpus_entry(FAILED[0])
    row = bench.predict(entry, tmp_path, out_of_sample=True)
    assert row["fits"] and entry["outcome"] == "refused"  # the verdict the planner cannot get right (known_error)
    out = io.StringIO()
    with redirect_stdout(out):
        bench.table([row], "one row")
    printed = out.getvalue()
    assert "fit verdicts wrong (1), each with its cause (corpus.json known_error):" in printed
    assert f"  {FAILED[0]} (planned fits, the boot was refused): {entry['known_error']}" in printed
