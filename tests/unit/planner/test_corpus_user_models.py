"""Boot logs of models users bring (issue 27, "plan what users bring"): rows of the corpus that were not planned for
want of a config or a checkpoint figure, now planned from public copies (corpus.json config_source, weights notes).

Expected figures are the logs' own printed lines or a public checkpoint inventory; each test says which.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry

ROOT = Path(__file__).resolve().parents[3]
QWEN35_35B_TP4 = "gpu80x4-qwen35-35b-a3b-tp4-util085-closing-lines"


def _accuracy() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    return planner_accuracy


def _config(name: str) -> dict[str, Any]:
    return json.loads((BOOTLOGS / corpus_entry(name)["config_file"]).read_text(encoding="utf-8"))


def test_qwen35_moe_mtp_layout_is_the_checkpoints_mtp_block() -> None:
    # Qwen/Qwen3.5-35B-A3B's inventory (search-index file id 62628833147) lists the MTP block: fc 16 MiB, q_proj 32 MiB,
    # k/v_proj 2 MiB each, o_proj 16 MiB, experts 0-255 gate/up/down 512 MiB each, router 1 MiB, shared expert
    # gate/up/down 2 MiB each, shared_expert_gate 4 KiB, five [2048] norms 4 KiB each, q/k norms 512 B each (bf16)
    shapes = _accuracy().qwen3_5_mtp_layout(_config(QWEN35_35B_TP4)["text_config"])
    mib, kib = 1 << 20, 1 << 10
    listed = 16 * mib + 32 * mib + 2 * 2 * mib + 16 * mib + 3 * 512 * mib + mib + 3 * 2 * mib + 4 * kib
    listed += 5 * 4 * kib + 2 * 512
    assert sum(2 * math.prod(shape) for shape in shapes.values()) == listed
    assert len([n for n in shapes if ".experts." in n]) == 3 * 256


def test_an_unnamed_card_is_planned_at_the_logs_total(tmp_path: Path) -> None:
    # the log prints 'Free memory on device (77.78/79.33 GiB)' and no card name: a card of 79.33 GiB visible
    entry = corpus_entry(QWEN35_35B_TP4)
    row = _accuracy().predict(entry, tmp_path, out_of_sample=True)
    assert row["fields"]["chip"] == "gpu:79.33GiB"
    assert row["weights"] == "checkpoint bytes (Qwen3.5 MTP layout)"
    # out of sample (checkpoint bytes and the deployment): the pool against 'Current kv cache memory in use is 43.4
    # GiB', within the 2% the corpus holds rows to
    planned, logged = row["kv_gib"]
    assert logged == 43.4
    assert planned / logged - 1 == pytest.approx(0.0170, abs=0.0005)


def test_a_named_or_totalless_card_keeps_its_old_path(tmp_path: Path) -> None:
    # the rule takes only a CUDA log whose card is not named: a card with a name resolves by it, and a log without a
    # total stays unplanned on the whole budget
    accuracy = _accuracy()
    entry = corpus_entry(QWEN35_35B_TP4)
    no_total = {**entry, "logged": {k: v for k, v in entry["logged"].items() if k != "total_gpu_memory_gib"}}
    assert accuracy.predict(no_total, tmp_path)["skip"] == "chip not in catalog"
