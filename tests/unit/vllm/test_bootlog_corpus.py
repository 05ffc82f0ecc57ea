"""The boot-log grammar (vllm/bootlog.py) over every real log of the corpus (tests/fixtures/bootlogs): each figure
the manifest says a log prints (`logged`, read by hand from the log, README.md there) is what the grammar reads,
on V1 and V0 engines, GPU, TPU and CPU, started and refused boots alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CORPUS: list[dict[str, Any]] = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
# manifest key -> BootRecord field
FIGURES = {
    "kv_cache_tokens": "kv_cache_tokens",
    "max_concurrency": "max_concurrency",
    "max_concurrency_at_tokens": "max_concurrency_context",
    "model_weights_gib": "weights_gib",
    "available_kv_cache_gib": "kv_cache_gib",
    "num_gpu_blocks": "kv_cache_num_blocks",
    "kv_needed_one_request_gib": "kv_cache_needed_gib",
    "estimated_max_model_len_tokens": "estimated_max_model_len",
}


@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_the_grammar_reads_what_each_log_prints(entry: dict[str, Any]) -> None:
    text = (BOOTLOGS / f"{entry['name']}.log").read_text(encoding="utf-8")
    record = read_boot_log(text, "vllm", "m")
    expected = {field: entry["logged"][key] for key, field in FIGURES.items() if key in entry["logged"]}
    assert {field: getattr(record, field) for field in expected} == expected
    if entry["vllm_version"] and entry["vllm_version"] in text:  # trimmed logs may have lost the banner
        assert record.engine_version == entry["vllm_version"]


def test_the_corpus_is_all_read() -> None:
    lines = sum("kv_cache_tokens" in e["logged"] for e in CORPUS)
    # README.md "Coverage"; every token line is asserted above
    assert (len(CORPUS), lines) == (152, 119)


TOTALS = [e for e in CORPUS if "total_gpu_memory_gib" in e["logged"]]


@pytest.mark.parametrize("entry", TOTALS, ids=[e["name"] for e in TOTALS])
def test_the_grammar_reads_the_cards_total_memory(entry: dict[str, Any]) -> None:
    # what tells a log of another card (bootlog._other_deployment): V0's 'total_gpu_memory (X GiB)', '=XGiB' and
    # profiler-table forms, V1's 'Free memory on device (free/total GiB)' and 'memory snapshot: ... total_memory='
    text = (BOOTLOGS / f"{entry['name']}.log").read_text(encoding="utf-8")
    record = read_boot_log(text, "vllm", "m")
    assert float(record.logged["total_memory_gib"]) == entry["logged"]["total_gpu_memory_gib"]
