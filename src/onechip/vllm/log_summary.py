"""The engine log distilled by rules: which vLLM log lines an operator (or an agent) must see.

Each line is kept as one kind, first match wins:
    error     ERROR/CRITICAL lines, tracebacks and `...Error: ...`/`...Exception: ...` lines (and the
              indented lines of a traceback). Never dropped, whatever `max_lines` says: the seed's
              log tool cut them to save space, which hid the one line that said why a boot failed.
    trap      a known trap from the seeds (TRAPS), with the change that avoids it (an error line that is
              also a known trap stays an error and carries the trap text)
    warning   WARNING lines
    memory    KV cache size, memory statistics, model loading GiB, KV shape lines
    timeline  the boot milestones (engine init, weights, compile, KV cache, ready, listening)
Non-error lines beyond `max_lines` are cut from the middle of the log (the first and last lines of a
boot say the most), and the number cut is reported. Text is redacted (onechip.errors.redact).
"""

from __future__ import annotations

import re

from onechip.errors import redact
from onechip.schemas.logs import LineKind, LogLine, LogSummary

# (pattern, what it means and what to change); sources: the seed articles (seeds/) and DESIGN.md.
TRAPS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"RuntimeProgramAllocationFailure"),
        "compiled TPU programs did not fit outside the memory cap: lower --gpu-memory-utilization "
        "(0.95 fails on v5e; ~1.2 GiB must stay outside)",
    ),
    (
        re.compile(r"Chunked MM input disabled but max_tokens_per_mm_item"),
        "--max-num-batched-tokens is below one multimodal item: raise it to the next power of two",
    ),
    (
        re.compile(r"invalid choice: '"),
        "the engine's CLI rejected a flag value before starting (e.g. --kv-cache-dtype int8)",
    ),
    (re.compile(r"Address already in use"), "the engine port is taken: pick another --port"),
    (
        re.compile(r"CUDA out of memory|OutOfMemoryError|out of memory", re.I),
        "out of accelerator memory: lower --gpu-memory-utilization or --max-model-len, or re-plan",
    ),
    (
        re.compile(r"(unrecognized|unknown|ignored|not supported|has no effect)\b.*(argument|flag|option)", re.I),
        "a flag was accepted but does nothing on this build: check the plan's flags against the engine version",
    ),
    (
        re.compile(r"auto[- ]tool[- ]choice.*(requires|needs)|tool[- ]call[- ]parser", re.I),
        "tool calling needs --enable-auto-tool-choice and the model's --tool-call-parser",
    ),
    (
        re.compile(r"fp8.*(kv|KV).*(TPU|tpu)|kv_cache_dtype.*fp8", re.I),
        "fp8 KV cache on TPU buys no capacity (word-aligned layout, 1.000x)",
    ),
    (
        re.compile(r"[Pp]reempt"),
        "requests were preempted: the KV pool is too small for this load (fewer clients or shorter contexts)",
    ),
]
_ERROR = re.compile(r"\b(ERROR|CRITICAL)\b|Traceback \(most recent call last\)|^\S*(Error|Exception|Failure): ")
_WARNING = re.compile(r"\bWARNING\b")
_MEMORY = re.compile(
    r"KV cache size|Memory statistics|Model loading took|Checkpoint size|Init kv-cache|"
    r"Maximum concurrency|num_gpu_blocks|GiB|KV cache memory",
)
_TIMELINE = re.compile(
    r"Initializing a V1 LLM engine|Starting to load model|Loading weights took|Time spent downloading weights|"
    r"Compiling a graph|Graph capturing finished|init engine \(profile|Starting vLLM server on|"
    r"Uvicorn running on|Application startup complete|vLLM API server version|non-default args",
)


def classify(line: str, in_traceback: bool) -> tuple[LineKind | None, str | None]:
    """(kind, trap text) of one log line; (None, None) when the summary leaves it out. `in_traceback`:
    the previous kept line was part of a traceback (its indented frames are errors too)."""
    trap = next((text for pattern, text in TRAPS if pattern.search(line)), None)
    if _ERROR.search(line) or (in_traceback and (line.startswith((" ", "\t")) or not line.strip())):
        return "error", trap
    if trap is not None:
        return "trap", trap
    if _WARNING.search(line):
        return "warning", None
    if _MEMORY.search(line):
        return "memory", None
    if _TIMELINE.search(line):
        return "timeline", None
    return None, None


def _cut(kept: list[LogLine], max_lines: int) -> tuple[list[LogLine], int]:
    """Keep every error and trap line; of the rest keep the first and last max_lines/2 (boot start and end)."""
    others = [i for i, line in enumerate(kept) if line.kind not in ("error", "trap")]
    if len(others) <= max_lines:
        return kept, 0
    head, tail = max_lines // 2, max_lines - max_lines // 2
    dropped = set(others[head : len(others) - tail])
    return [line for i, line in enumerate(kept) if i not in dropped], len(dropped)


def summarize(text: str, source: str, max_lines: int = 80) -> LogSummary:
    """Distill the log `text` (read from `source`) into a LogSummary; see the module docstring."""
    kept: list[LogLine] = []
    traps: list[str] = []
    in_traceback = False
    lines = text.splitlines()
    for number, raw in enumerate(lines, start=1):
        kind, trap = classify(raw, in_traceback)
        in_traceback = kind == "error" and (in_traceback or "Traceback" in raw or raw.startswith((" ", "\t")))
        if kind is None:
            continue
        kept.append(LogLine(number=number, kind=kind, text=redact(raw.rstrip())[:2000], trap=trap))
        if trap and trap not in traps:
            traps.append(trap)
    counts: dict[str, int] = {}
    for line in kept:
        counts[line.kind] = counts.get(line.kind, 0) + 1
    kept, dropped = _cut(kept, max_lines)
    return LogSummary(source=source, total_lines=len(lines), lines=kept, counts=counts, dropped=dropped, traps=traps)


def explain_prompt(summary: LogSummary) -> str:
    """The chat prompt asking a model to explain `summary`: the kept lines, then the question."""
    body = "\n".join(f"{line.number}: [{line.kind}] {line.text}" for line in summary.lines[-60:])
    found = "\n".join(f"- {t}" for t in summary.traps) or "- none"
    return (
        "These lines come from the log of the vLLM server you are running on. Known traps found:\n"
        f"{found}\n\nLog lines:\n{body}\n\n"
        "In three sentences: did the server start correctly, what is its KV cache size, and what should the "
        "operator change, if anything?"
    )
