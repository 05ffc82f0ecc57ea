"""Every wrong fit verdict of benchmarks/planner_accuracy.py's out-of-sample table is named with its cause (issue 27,
verdict69): a corpus entry whose boot the plan gets wrong says why in known_error, where the cause was read in the
engine's source for that release, or what was ruled out where it was not found."""

from __future__ import annotations

import json
from pathlib import Path

from factories import BOOTLOGS, corpus_entry, planner_accuracy_module


def test_every_wrong_fit_verdict_has_a_cause(tmp_path: Path) -> None:
    bench = planner_accuracy_module()
    corpus = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
    unnamed = []
    for entry in corpus:
        row = bench.budget_row(entry, tmp_path / entry["name"], out_of_sample=True)
        if "skip" in row:
            continue
        # right as the table judges it: a load OOM only for the weights beyond the card (planner_accuracy.table)
        right = row["fits"] == (row["outcome"] == "started") and (
            not row.get("load_oom") or row["binding"] == "weights-load"
        )
        if not right and not row.get("cause"):
            unnamed.append(entry["name"])
    assert unnamed == []


def test_the_v7x_vmem_refusal_names_the_failing_kernel_and_its_block_sizes() -> None:
    # the program the error names (tpu-inference issue 2803) and the scratch its default block sizes give
    # (tpu-inference @ 66c3aad9 kernels/ragged_paged_attention/v3/kernel.py get_default_block_sizes, run_rpa_kernel)
    cause = corpus_entry("tpu-v7x-qwen3-vl-8b-len4096-vmem-oom")["known_error"]
    assert "RPAm-p_256-bq_512_256-bkv_2048_512" in cause
    assert "76.58" in cause and "46 MiB" in cause
