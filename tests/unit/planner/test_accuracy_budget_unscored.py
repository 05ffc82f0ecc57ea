"""benchmarks/planner_accuracy.py: a boot that measured more than vLLM on its card (corpus.json `budget_unscored`) is
listed with its reason in the whole-budget tables and scored given its logged pool only."""

from __future__ import annotations

from pathlib import Path

from factories import corpus_entry, planner_accuracy_module

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
SHARED_BOX = "gb10-qwen25-1.5b-util004-len4096-eager-v0201dev"  # a DGX Spark shared with a ComfyUI session


def test_a_budget_unscored_boot_is_listed_with_its_reason_and_scored_given_its_pool(tmp_path: Path) -> None:
    bench, entry = planner_accuracy_module(), corpus_entry(SHARED_BOX)
    for out_of_sample in (False, True):
        row = bench.budget_row(entry, tmp_path / str(out_of_sample), out_of_sample=out_of_sample)
        assert row["skip"] == f"whole budget not scored: {entry['budget_unscored']}"
    pooled = bench.predict(entry, tmp_path / "pool", given_pool=True)
    assert "skip" not in pooled and pooled["logged"] == 20_992  # 'GPU KV cache size: 20,992 tokens' (the fixture)
    assert abs(pooled["predicted"] / pooled["logged"] - 1) < 0.01


def test_a_boot_without_the_field_is_predicted_as_before(tmp_path: Path) -> None:
    bench, entry = planner_accuracy_module(), corpus_entry("h100-llama31-8b-tp1-v0190")
    row = bench.budget_row(entry, tmp_path / "row")
    assert "skip" not in row and row["predicted"] == bench.predict(entry, tmp_path / "again")["predicted"]
