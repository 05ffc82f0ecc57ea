"""How many corpus boot logs read differently once a user word-wraps them (issue reader66).

Each log of tests/fixtures/bootlogs/corpus.json is read as `onechip logs` reads it (log_summary.summarize's verdict:
model, version, card, platform, TP, length, KV tokens and GiB, concurrency, outcome and cause) plus the grammar's
weights and blocks (bootlog.read_boot_log), plain and after each transformation below; printed: per transformation, how
many logs read differently from their plain reading, and their names with --names.
    fold -s -w N   GNU coreutils `fold -s -w N` (a mail's, a terminal's or an editor's width; the blank kept at the
                   row's end), as tests/unit/vllm/test_bootlog_wrappings.py's _folded does it
    chat box N     a chat or mail box wrapping at spaces at N columns, the blank dropped
    ..., hanging I a hanging indent: each row after a line's first opens with I spaces, counted in the width
                   (textwrap.fill(subsequent_indent=...), a chat client or a Markdown list item indenting its rows)
    ..., then indented I   the same spaces put before a `fold -s -w N` paste's rows past the width

Run: PYTHONPATH=src:tests python benchmarks/wrap_accuracy.py [--names]
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from onechip.vllm import log_summary
from onechip.vllm.bootlog import read_boot_log

ROOT = Path(__file__).resolve().parents[1]
BOOTLOGS = ROOT / "tests" / "fixtures" / "bootlogs"
sys.path.insert(0, str(ROOT / "tests" / "unit" / "vllm"))
from test_bootlog_wrappings import _folded  # noqa: E402


def folded(width: int, keep_blank: bool = True, indent: int = 0, past: bool = False) -> Callable[[str], str]:
    """`fold -s -w width` (keep_blank) or a chat box at `width` (the blank dropped), in characters, each row after a
    line's first indented by `indent` spaces (in the width, or past it: `past`): the wrappings test's own fold
    (_folded), ending as a file does, with a newline."""
    fold = _folded(width, keep_blank, indent, past)
    return lambda text: fold(text) + "\n"


WRAPS: dict[str, Callable[[str], str]] = {
    **{f"fold -s -w {width}": folded(width) for width in (60, 72, 80, 100, 120)},
    "chat box 80": folded(80, keep_blank=False),
    "fold -s -w 80, hanging 2": folded(80, indent=2),
    "chat box 80, hanging 4": folded(80, keep_blank=False, indent=4),
    "fold -s -w 80, then indented 2": folded(80, indent=2, past=True),
}


def reading(text: str) -> dict[str, Any]:
    """What `onechip logs` makes of `text` (its verdict), and the grammar's weights and blocks."""
    record = read_boot_log(text, "vllm", "m")
    verdict = log_summary.summarize(text, "x").boot
    shown = verdict.model_dump() if verdict is not None else {}
    return {**shown, "weights_gib": record.weights_gib, "blocks": record.kv_cache_num_blocks}


def main(names: bool) -> None:
    corpus = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
    texts = {entry["name"]: (BOOTLOGS / f"{entry['name']}.log").read_text(encoding="utf-8") for entry in corpus}
    plain = {name: reading(text) for name, text in texts.items()}
    for wrap, transform in WRAPS.items():
        differ = sorted(name for name, text in texts.items() if reading(transform(text)) != plain[name])
        print(f"{wrap:30} {len(differ):3} of {len(texts)} differ" + (f": {', '.join(differ)}" if names else ""))


if __name__ == "__main__":
    main("--names" in sys.argv[1:])
