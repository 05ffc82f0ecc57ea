"""The engine log distilled by rules: which vLLM log lines an operator (or an agent) must see.

Each line is kept as one kind, first match wins:
    error     ERROR/CRITICAL lines, tracebacks and `...Error: ...`/`...Exception: ...` lines (and the
              indented lines of a traceback). Never dropped, whatever `max_lines` says: the seed's
              log tool cut them to save space, which hid the one line that said why a boot failed.
    trap      a known trap from the seeds (TRAPS), with the change that avoids it (an error line that is
              also a known trap stays an error and carries the trap text)
    warning   WARNING lines
    memory    KV cache size, memory statistics, model loading GiB, KV shape lines, V0 block and weights lines
    timeline  the boot milestones (engine init, weights, compile, KV cache, ready, listening)
Non-error lines beyond `max_lines` are cut from the middle of the log (the first and last lines of a
boot say the most), and the number cut is reported. Text is redacted (onechip.errors.lines_redactor, every line in
order: a private key's PEM body printed a line at a time is hidden too).

The summary opens with the boot's verdict (boot_verdict, verdict_line): whether the engine started, why not, and the
length, KV cache, concurrency, version and card it ran with, as the boot-log grammar reads them (bootlog.read_boot_log,
the reading of plan --against).

The log is read line by line and only what is kept stays in memory, so a log of any size (an engine that ran for
weeks, a crash loop) is summarized in bounded memory: a line is read up to MAX_LINE_CHARS (the rest of it is
skipped, never held), and beyond MAX_ERROR_LINES error lines only the first and last halves are kept (counted in
`dropped_errors`), which no boot log comes near; the text the verdict is read from is held up to MAX_BOOT_LOG_CHARS
(plan --against's bound), and a longer log is summarized without one. That text is the boot's: once the boot came up,
what the server logs while it runs (its stats and access lines) is not held (bootlog.read_after_ready), so the log of an
engine that served for weeks is read once, where the grammar read all of it again (a 200,000-line log: 30 s of CPU
and 159 MiB, now 11 s and under 1 MiB). Before its boot came up, only the lines its verdict may be read from are held
(bootlog.read_before_ready: not what an engine still starting logs while it waits), and of a log of many boots (a crash
loop) the last ones (bootlog.last_boot, once COMPACT_HELD_LINES are held): benchmarks/log_summary_speed.py.
"""

from __future__ import annotations

import codecs
import collections
import io
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from onechip.errors import ConfigError, lines_redactor, with_next
from onechip.paths import open_regular
from onechip.schemas import BootRecord
from onechip.schemas.logs import BootVerdict, LineKind, LogLine, LogSummary
from onechip.textcodec import text_encoding
from onechip.vllm.bootlog import (
    GPU_FAULT,
    LOAD_OOM,
    LOAD_OOM_CAUSE,
    PLATFORMS,
    V0_BLOCKS,
    bare_line,
    boot_edge,
    last_boot,
    read_after_ready,
    read_before_ready,
    read_boot_log,
    wrap_row,
)

FP8_ON_TPU = "fp8 KV cache on TPU buys no capacity (word-aligned layout, 1.000x)"
# Traps of one platform, and what marks a log of it: tpu-inference's 'TPU info: ... | tpu_type=v6e-1 |', the token
# line's 'TPU KV cache size', its 'Memory statistics | total_hbm_...' (bootlog's TPU lines). On a GPU an fp8 KV cache
# halves the bytes per token (a GH200's 'kv_cache_dtype="fp8",' was flagged as the TPU's 1.000x trap:
# tests/fixtures/bootlogs/gh200x2-deepseek-v4-flash-tp2-len30000-refused), so such a trap holds only in a log that shows
# its platform somewhere
PLATFORM_TRAPS: dict[str, re.Pattern[str]] = {FP8_ON_TPU: re.compile(r"\bTPU\b|tpu_inference|\btpu_type=|total_hbm_")}
OUT_OF_MEMORY = "out of accelerator memory: lower --gpu-memory-utilization or --max-model-len, or re-plan"
# A trap a more specific one in the same log supersedes, its advice wrong there: a load OOM's torch lines
# ('torch.OutOfMemoryError: HIP out of memory', the traceback under vLLM's 'Failed to load model') are the load's, which
# no lower --gpu-memory-utilization or --max-model-len helps
SUPERSEDED: dict[str, str] = {LOAD_OOM_CAUSE: OUT_OF_MEMORY}
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
    # an OOM while the weights load (bootlog.LOAD_OOM), before the generic one its line also matches ('HIP out of
    # memory'): the utilization and the length size no part of the load (its cause, said as the verdict says it)
    (LOAD_OOM, LOAD_OOM_CAUSE),
    (re.compile(r"CUDA out of memory|OutOfMemoryError|out of memory", re.I), OUT_OF_MEMORY),
    (
        re.compile(r"(unrecognized|unknown|ignored|not supported|has no effect)\b.*(argument|flag|option)", re.I),
        "a flag was accepted but does nothing on this build: check the plan's flags against the engine version",
    ),
    (
        # vLLM's own errors ('"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
        # the API server's 'invalid tool call parser: X (chose from { ... })'), not any line naming the flag: the
        # command a paste starts with ('... --enable-auto-tool-choice --tool-call-parser qwen3_coder', vllm#34076) is
        # no trap
        re.compile(r"auto[- ]tool[- ]choice.*(requires|needs)|invalid tool[- ]call[- ]parser", re.I),
        "tool calling needs --enable-auto-tool-choice and the model's --tool-call-parser",
    ),
    (re.compile(r"fp8.*(kv|KV).*(TPU|tpu)|kv_cache_dtype.*fp8", re.I), FP8_ON_TPU),
    (
        re.compile(r"[Pp]reempt"),
        "requests were preempted: the KV pool is too small for this load (fewer clients or shorter contexts)",
    ),
]
# Where a line of a log ends, from every source (a local file, ssh's `tail`, `docker logs`, a pasted text): at LF, a CR
# before it taken with it (a line written on Windows). A lone CR stays inside its line: it is how a progress bar
# (tqdm's, in vLLM's weight loading) rewrites itself in place, one line on a terminal, and `wc -l`, `tail -n +N`,
# `sed -n Np`, `docker logs` and the host's `tail` (engines.remote.logs_command) count it so; Python's universal
# newlines (and str.splitlines, which also ends a line at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029) made each
# rewrite a line of its own in a local file only, so line numbers and `logs --offset` pages differed by source
LINE_END = "\n"
# A kept line's text is cut at 2,000 characters (LogLine); a line is classified on its first 64 KiB, far beyond the
# longest vLLM line (its `non-default args` dict, a few KiB), so a log with no newlines is never held whole.
MAX_LINE_CHARS = 1 << 16
TEXT_PROBE_BYTES = 8192  # the block read_log judges a file text by (git's buffer_is_binary reads 8,000 bytes)
# The most error lines kept: SummarizeLogsRequest's own ceiling for the other kinds (max_lines <= 2,000). A failed
# boot's traceback is tens of lines; only a crash loop repeating it reaches this, and its first and last are kept.
MAX_ERROR_LINES = 2000
_ERROR = re.compile(r"\b(ERROR|CRITICAL)\b|Traceback \(most recent call last\)")
# an exception line, read on the line without what a paste or a collector put before it (bootlog.bare_line): a process
# tag, a quote marker or an inline-code tick hid the refusals of vllm#34076 ('`(EngineCore_DP0 pid=1094) ValueError: To
# serve at least one request ...') and eugr/spark-vllm-docker#396 ('▎ ValueError: ...'), kept as memory lines
_EXCEPTION = re.compile(r"^\S*(Error|Exception|Failure): ")
_WARNING = re.compile(r"\bWARNING\b")
# and V0's pool and weights lines, which print no 'GiB': the block line of every device (bootlog.V0_BLOCKS: '# GPU
# blocks: %d, # CPU blocks: %d', '# tpu blocks: ...', the CPU backend's '# CPU blocks: %d'), 'Loading model weights took
# %.4f GB' (vllm/worker/model_runner.py), the profiler's first line 'Memory profiling takes %.2f seconds' (worker.py
# 0.7 - 0.9) and the XPU worker's lines in MB ('Before memory profiling run, total GPU memory: %.2f MB, ...',
# vllm/v1/worker/xpu_worker.py 0.9 - 0.11); and the lines that size the cache with no 'GiB' either: the length
# --max-model-len auto fits to the pool, 'Auto-fit max_model_len: full model context length %d fits in available GPU
# memory' (vllm/v1/core/kv_cache_utils.py of the 0.14.1 - 0.31.0 sdists), the length the engine settled on where the
# args leave it to the model, 'Using max model len %s' (vllm/config/model.py, 0.10 - 0.34), and tpu-inference's
# 'Hybrid KV cache layout: num_kv_cache_groups=%d, ...' (tpu_inference/runner/kv_cache_manager.py, 0.11.1 - 0.32.0)
_MEMORY = re.compile(
    r"KV cache size|Memory statistics|Model loading took|Checkpoint size|Init kv-cache|"
    r"Maximum concurrency|num_gpu_blocks|GiB|KV cache memory|Auto-fit max_model_len|Using max model len|"
    r"Hybrid KV cache layout|"
    rf"{V0_BLOCKS}\d|Loading model weights took|Memory profiling takes|memory profiling run, ",
)
_TIMELINE = re.compile(
    r"Initializing a V1 LLM engine|Starting to load model|Loading weights took|Time spent downloading weights|"
    r"Compiling a graph|Graph capturing finished|init engine \(profile|Starting vLLM server on|"
    r"Uvicorn running on|Application startup complete|vLLM API server version|non-default args",
)


def classify(
    line: str, in_traceback: bool, skip: frozenset[str] = frozenset(), bare: str | None = None
) -> tuple[LineKind | None, str | None]:
    """(kind, trap text) of one log line; (None, None) when the summary leaves it out. `in_traceback`:
    the previous kept line was part of a traceback (its indented frames are errors too). The kinds are read on the
    line without what a paste or a collector put before and around vLLM's text (bootlog.bare_line): ANSI colours glue
    the level to the escape ('\x1b[33mWARNING\x1b[0m', no word boundary before it), so a coloured warning was kept
    as a memory line or dropped. The traps in `skip` are not looked for; `bare`: the line's bare_line, where the
    caller has it."""
    bare = bare_line(line) if bare is None else bare
    trap = next((text for pattern, text in TRAPS if text not in skip and pattern.search(bare)), None)
    if (
        _ERROR.search(bare)
        or _EXCEPTION.match(bare)
        or GPU_FAULT.match(bare)  # the device runtime's report before it aborts the process: no traceback follows
        or (in_traceback and (line.startswith((" ", "\t")) or not line.strip()))
    ):
        return "error", trap
    if trap is not None:
        return "trap", trap
    if _WARNING.search(bare):
        return "warning", None
    if _MEMORY.search(bare):
        return "memory", None
    if _TIMELINE.search(bare):
        return "timeline", None
    return None, None


def read_lines(handle: TextIO) -> Iterator[str]:
    """The lines of `handle` (opened with newline="\\n": LINE_END) without their line end, each at most MAX_LINE_CHARS
    long (the rest of a longer line is read past in pieces of that size, never held), so one line is one line number
    whatever its length."""
    while line := handle.readline(MAX_LINE_CHARS):
        if line.endswith("\n"):
            yield line[:-1].removesuffix("\r")
            continue
        yield line
        while (rest := handle.readline(MAX_LINE_CHARS)) and not rest.endswith("\n"):
            pass


def text_lines(text: str) -> list[str]:
    """The lines of a log's `text` as read_lines reads a file of it: ended at LINE_END, a CR before it dropped."""
    lines = text.split(LINE_END)
    if lines[-1] == "":
        lines.pop()  # the text ends in a line end, or is empty
    return [line.removesuffix("\r") for line in lines]


def read_log(path: Path) -> Iterator[str]:
    """The lines of the log file at `path` (read_stream). Raises OSError (paths.open_regular: a FIFO or a device is
    not read), and ConfigError when the file is not text (read_stream)."""
    with open_regular(path) as raw:
        yield from read_stream(raw, str(path))


# A compressed file by the magic number its format opens with (gzip: 1f 8b, RFC 1952; bzip2: 'BZh'; xz: fd '7zXZ' 00,
# the .xz file format spec; zstd: 28 b5 2f fd, RFC 8878; lz4: its frame format's 04 22 4d 18), with the tool that prints
# its text: a rotated log ('vllm.log.1.gz': docker's json-file driver with compress=true, logrotate's compress) is no
# text, and its NUL bytes said only that
COMPRESSED = {b"\x1f\x8b": ("gzip", "zcat"), b"BZh": ("bzip2", "bzcat"), b"\xfd7zXZ\x00": ("xz", "xzcat"),
              b"\x28\xb5\x2f\xfd": ("zstd", "zstdcat"), b"\x04\x22\x4d\x18": ("lz4", "lz4cat")}  # fmt: skip


def read_stream(raw: BinaryIO, name: str) -> Iterator[str]:
    """The lines of the log read from `raw` (a file, or standard input: read once, never seeked), as read_lines reads
    them, undecodable bytes past its first block replaced; in the encoding its first block tells (textcodec: UTF-8,
    UTF-16 or UTF-32 behind a byte-order mark, which is dropped, UTF-16 without one by its NUL bytes, else UTF-8).
    Raises ConfigError naming `name` when it is not text: a compressed file (COMPRESSED, named with the tool that
    prints it), or its first TEXT_PROBE_BYTES hold a NUL byte in UTF-8 (grep and git call a file binary so), a NUL
    character in another encoding or bytes its encoding does not decode (a character cut at the block's end is not
    counted); a binary file read as a log kept nothing and was summarized as a quiet one. Raises it too, once read,
    for a file of blank lines or none (its verdict was 'the log ends before the engine said it was ready')."""
    block = raw.read(TEXT_PROBE_BYTES)
    if packed := next((what for magic, what in COMPRESSED.items() if block.startswith(magic)), None):
        raise ConfigError(f"{name}: {packed[0]}-compressed, not a text log: give its text ({packed[1]})")
    encoding, mark = text_encoding(block)
    block = block[mark:]
    why = "a NUL byte" if encoding == "utf-8" and b"\0" in block else None
    try:
        if "\0" in (text := codecs.getincrementaldecoder(encoding)().decode(block, final=False)):
            why = why or "a NUL character"
    except UnicodeDecodeError:
        why = why or f"bytes that are not {encoding.upper()}"
    if why:
        raise ConfigError(f"{name}: not a text log ({why} in its first {TEXT_PROBE_BYTES:,} bytes)")
    if _json_document(text, whole=len(block) + mark < TEXT_PROBE_BYTES):
        raise ConfigError(f"{name}: a JSON document, not a log (a log is text lines, or vLLM's JSON records)")
    stream = io.BufferedReader(_Prefixed(block, raw))
    written = False  # a line with more than blanks read: a file of none is no log (a redirect that caught nothing)
    with io.TextIOWrapper(stream, encoding=encoding, errors="replace", newline=LINE_END) as handle:
        for line in read_lines(handle):
            written = written or bool(line.strip())
            yield line
    if not written:
        raise ConfigError(f"{name}: empty, no log lines in it: give the engine's log")


def _json_document(text: str, whole: bool) -> bool:
    """Whether `text`, a file's first block decoded (`whole`: all of it), is a JSON document, not a log: from its first
    line that is not blank, nothing but JSON objects or arrays, none a log record (an object with a 'message',
    bootlog._json_record: vLLM's JSON logging, one record a line): an indented document opened by a lone '{' or '['
    (`onechip plan --json`, a run's summary.json; one the block cuts or a hand-edit broke too), or JSON lines (a
    requests.jsonl). Read as a log, a plan's '"engine_version": "0.32.0",' line was taken for the engine's version and
    a warning's text for a trap. A log line that opens with '[' ('[rank0]: ...', '[cuda.py:482] ...') is no JSON
    value, and a log whose first lines are a JSON value (a wrapper's config dump before `vllm serve`) goes on with
    text lines, so is a log; a line the block cuts is not judged."""
    if not whole:
        text = text[: text.rfind(LINE_END) + 1]  # the block's last line, cut, is not judged
    decoder = json.JSONDecoder()
    at, values = 0, 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        opens_document = text[at:].split(LINE_END, 1)[0].strip() in ("{", "[")
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:  # text that is no JSON value: a log, unless a document cut by the block or broken by hand
            return opens_document
        if isinstance(value, dict) and isinstance(value.get("message"), str):
            return False  # vLLM's JSON log record
        if not isinstance(value, (dict, list)):
            return False  # a bare number or word opens many a text line
        values += 1
    return values > 0


class _Prefixed(io.RawIOBase):
    """`raw` with `head`, the bytes already read from it, put back before what it reads next (a pipe cannot seek
    back); closing it leaves `raw` open."""

    def __init__(self, head: bytes, raw: BinaryIO) -> None:
        self.head, self.raw = head, raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.head[: len(buffer)] if self.head else self.raw.read(len(buffer))
        self.head = self.head[len(data) :] if self.head else b""
        buffer[: len(data)] = data
        return len(data)


# A boot log read whole (plan --against): the largest text held, 64 Mi characters. The corpus's boot logs are at
# most a few hundred KB (tests/fixtures/bootlogs); an 8 GiB file was read into memory at once (MemoryError under
# the MCP server's heap cap), and parsing runs at about 5 MB/s on the reference machine (a 143 MB log took 29 s).
MAX_BOOT_LOG_CHARS = 64 << 20


def read_log_text(path: Path, what: str) -> str:
    """The text of the log at `path` as read_log reads it (lines of at most MAX_LINE_CHARS, a binary file refused),
    joined by newlines, with a newline at its end where the file has one (ends_in_newline). Raises OSError as
    read_log does, and ConfigError naming `what` (the option it came by) for a file that is not a text log or holds
    more than MAX_BOOT_LOG_CHARS characters."""
    lines: list[str] = []
    size = 0
    try:
        for line in read_log(path):
            size += len(line) + 1
            if size > MAX_BOOT_LOG_CHARS:
                raise ConfigError(
                    f"{path}: more than {MAX_BOOT_LOG_CHARS >> 20} Mi characters, far more than a boot log; give "
                    "the part from the engine's start to 'Application startup complete' (or to its error)"
                )
            lines.append(line)
    except ConfigError as exc:  # read_log's lines and this one start with the path: the option goes first
        raise ConfigError(f"{what} {exc}") from None
    return "\n".join(lines) + ("\n" if lines and ends_in_newline(path) else "")


def ends_in_newline(path: Path) -> bool:
    """Whether the file at `path` ends in a newline: its last line is whole (one without may be cut short, a log still
    being written: bootlog._CUT_NUMBER)."""
    with open_regular(path) as raw:
        end = LINE_END.encode(text_encoding(raw.read(TEXT_PROBE_BYTES))[0])
        if raw.seek(0, io.SEEK_END) < len(end):
            return False
        raw.seek(-len(end), io.SEEK_END)
        return raw.read(len(end)) == end


class _Kept:
    """The kept lines of a log read once: every error and trap line up to MAX_ERROR_LINES (then the first and last
    halves of them), and of the other kinds the first max_lines // 2 and the last max_lines - max_lines // 2 (all
    of them when there are no more than max_lines); `lines` puts them back in log order."""

    def __init__(self, max_lines: int) -> None:
        self.max_lines = max_lines
        self.head: list[LogLine] = []  # the first max_lines // 2 other lines
        self.last: collections.deque[LogLine] = collections.deque(maxlen=max_lines - max_lines // 2)  # the rest's end
        self.others = 0
        self.errors: list[LogLine] = []  # error and trap lines: the first MAX_ERROR_LINES // 2 ...
        self.last_errors: collections.deque[LogLine] = collections.deque(maxlen=MAX_ERROR_LINES - MAX_ERROR_LINES // 2)
        self.error_count = 0

    def add(self, line: LogLine) -> None:
        if line.kind in ("error", "trap"):
            self.error_count += 1
            (self.errors if len(self.errors) < MAX_ERROR_LINES // 2 else self.last_errors).append(line)
            return
        self.others += 1
        (self.head if len(self.head) < self.max_lines // 2 else self.last).append(line)

    def lines(self) -> tuple[list[LogLine], int, int]:
        """(kept lines in log order, other lines cut, error lines cut)."""
        others = [*self.head, *self.last]
        errors = self.errors + list(self.last_errors)
        kept = sorted(others + errors, key=lambda line: line.number)
        return kept, self.others - len(others), self.error_count - len(errors)


# The kinds of line held for the verdict after its boot came up, besides those bootlog.read_after_ready names: a
# traceback's frames and exception (failure_cause reads them), a known trap, a memory figure logged again
_HELD_AFTER_READY = frozenset({"error", "trap", "memory"})
# Held lines beyond which those of earlier boots are let go (bootlog.last_boot), the bound doubling past what one boot
# holds: a crash loop's log (a container restarted after each failure) held every boot up to MAX_BOOT_LOG_CHARS
COMPACT_HELD_LINES = 10_000


class _BootText:
    """The lines of a log read once that its boot's verdict is read from (boot_verdict): _HELD_AFTER_READY's kinds, and
    up to its boot's readiness the lines bootlog.read_before_ready names, after it those read_after_ready names; of an
    earlier boot, only the last line naming its card (bootlog.last_boot); None past MAX_BOOT_LOG_CHARS."""

    def __init__(self) -> None:
        self.lines: list[str] | None = []
        self.size = 0  # characters held, a newline after each
        self.held_to = 0  # the number of the last line held
        self.came_up = False  # the boot held came up (boot_edge): after it, only what read_after_ready names
        self.compact_at = COMPACT_HELD_LINES
        self.passed = ""  # the line before, where it was not held: the head of a record a paste's wrap broke
        self.boots_let_go = 0  # the earlier boots whose lines were let go (last_boot)

    def add(self, number: int, raw: str, bare: str, kind: LineKind | None) -> None:
        """Hold line `number` (`raw`, its bare_line `bare`, its summary `kind`) where the verdict may read it, and the
        line before it where that was not held and a wrap may have broken `raw` off it (bootlog.wrap_row: its facts
        are read once the rows are joined)."""
        if self.lines is None:
            return
        passed, self.passed = self.passed, ""
        if kind not in _HELD_AFTER_READY and not (read_after_ready if self.came_up else read_before_ready)(bare):
            self.passed = raw
            return
        if passed and wrap_row(passed, raw):
            self._hold(number - 1, passed, bare_line(passed))
        self._hold(number, raw, bare)

    def _hold(self, number: int, raw: str, bare: str) -> None:
        """Hold line `number` (`raw`, its bare_line `bare`)."""
        if self.lines is None:
            return
        if (size := self.size + len(raw) + 1) > MAX_BOOT_LOG_CHARS:
            self.lines = None
            return
        self.lines.append(raw)
        self.size, self.held_to = size, number
        edge = boot_edge(bare)
        self.came_up = (self.came_up and edge != "start") or edge == "ready"  # a restart is held from its start
        if len(self.lines) >= self.compact_at:
            boots, self.lines = last_boot(self.lines)
            self.boots_let_go += boots - 1
            self.size = sum(len(line) + 1 for line in self.lines)
            self.compact_at = max(COMPACT_HELD_LINES, 2 * len(self.lines))


def summarize(log: str | Iterable[str], source: str, max_lines: int = 80, whole: bool = False) -> LogSummary:
    """Distill the log (its text, or its lines as read_log gives them, read once) from `source` into a
    LogSummary; see the module docstring. `whole`: the lines' last one is whole (its file ends in a newline,
    ends_in_newline), so a figure it ends in is read (a text says so itself); without it, one a log still being
    written may have cut is not (bootlog._CUT_NUMBER)."""
    kept = _Kept(max_lines)
    traps: list[str] = []
    counts: dict[str, int] = {}
    in_traceback = False
    number = 0
    platforms: set[str] = set()  # the PLATFORM_TRAPS whose platform a line showed
    held = _BootText()
    # every line read through it in order, kept or not (passed): a PEM body line it keeps (an ERROR line, a traceback's
    # indented line) is told by the BEGIN line before it, a wrapped secret's rest by the line before
    hidden = lines_redactor()
    for number, (raw, following) in enumerate(with_next(text_lines(log) if isinstance(log, str) else log), start=1):
        bare = bare_line(raw)
        platforms.update(text for text, mark in PLATFORM_TRAPS.items() if text not in platforms and mark.search(raw))
        kind, trap = classify(raw, in_traceback, bare=bare)
        held.add(number, raw, bare, kind)
        in_traceback = kind == "error" and (in_traceback or "Traceback" in raw or raw.startswith((" ", "\t")))
        if kind is None:
            hidden.passed(raw)
            continue
        kept.add(LogLine(number=number, kind=kind, text=hidden(raw, following).rstrip()[:2000], trap=trap))
        counts[kind] = counts.get(kind, 0) + 1
        if trap and trap not in traps:
            traps.append(trap)
    lines, dropped, dropped_errors = kept.lines()
    unmet = frozenset(text for text in PLATFORM_TRAPS if text in traps and text not in platforms)
    if unmet := unmet | frozenset(SUPERSEDED[text] for text in traps if text in SUPERSEDED):
        lines = _without_traps(lines, unmet, counts)
        traps = [text for text in traps if text not in unmet]
        counts = {kind: count for kind, count in counts.items() if count}
    boot = None
    if (lines_held := held.lines) is not None:  # a last line left out leaves the last held whole
        whole = whole or held.held_to < number or (isinstance(log, str) and log.endswith(LINE_END))
        text = "\n".join(lines_held) + ("\n" if lines_held and whole else "")
        boot = boot_verdict(read_boot_log(text, "vllm", source))
        boot.boots_in_log += held.boots_let_go
    return LogSummary(source=source, total_lines=number, lines=lines, counts=counts, dropped=dropped,
                      dropped_errors=dropped_errors, traps=traps, boot=boot)  # fmt: skip


# what a summary says in the verdict's place for a log it did not read the boot of (LogSummary.boot None)
NO_VERDICT = f"no verdict: more than {MAX_BOOT_LOG_CHARS >> 20} Mi characters, far more than a boot log"

# the events that say the engine came up (bootlog._EVENTS): the engine core's 'init engine (profile, create kv cache,
# warmup model) took', the API server's 'Application startup complete'
_READY = frozenset({"engine_ready", "startup_complete"})


def boot_verdict(record: BootRecord) -> BootVerdict:
    """The verdict on a boot the grammar read (`record`, bootlog.parse_boot_log): started (a ready event), did not
    start (a failure cause and no ready event), KV cache allocated (neither, but its token or concurrency line: vLLM
    prints them after the start-up check of the pool passed, and many pasted excerpts stop there: 60 of the 165
    started boots of tests/fixtures/bootlogs) or unknown, with the figures it logged."""
    started = any(event.name in _READY for event in record.events)
    allocated = record.kv_cache_tokens is not None or record.max_concurrency is not None
    logged = record.logged
    dp_size = int(logged["data_parallel_size"]) if "data_parallel_size" in logged else None
    return BootVerdict(
        outcome="started" if started else "did not start" if record.failure_cause else
        "KV cache allocated" if allocated else "unknown",
        cause=record.failure_cause, boots_in_log=record.boots_in_log, model=logged.get("model"),
        max_model_len=int(logged["max_model_len"]) if "max_model_len" in logged else None,
        tensor_parallel_size=int(logged["tensor_parallel_size"]) if "tensor_parallel_size" in logged else None,
        data_parallel_size=dp_size,
        data_parallel_rank=int(logged["data_parallel_rank"]) if "data_parallel_rank" in logged else None,
        kv_cache_tokens=record.kv_cache_tokens, kv_cache_gib=record.kv_cache_gib,
        max_concurrency=record.max_concurrency, max_concurrency_context=record.max_concurrency_context,
        engine_version=record.engine_version, device_name=logged.get("device_name"),
        platform=PLATFORMS[logged["platform"]].name if "platform" in logged else None,
    )  # fmt: skip


def _data_parallel(verdict: BootVerdict) -> str | None:
    """Whose KV cache the figures are where the log is data-parallel: each DP rank is an engine core with a pool of its
    own (vllm/v1/engine/utils.py CoreEngineProcManager, a core a rank), so they are one core's, not the deployment's
    ('KV cache per data-parallel engine core: DP3's of 4 or more' where only the core's tag says so)."""
    size, rank = verdict.data_parallel_size, verdict.data_parallel_rank
    if rank is not None:
        of = f"{size}" if size else f"{rank + 1} or more"
        return f"KV cache per data-parallel engine core: DP{rank}'s of {of}"
    return f"KV cache per data-parallel engine core (data parallel {size})" if size and size > 1 else None


def verdict_line(verdict: BootVerdict) -> str:
    """One line an operator reads first: the outcome (with its cause), then the figures the log gave, each left out
    where it gave none: 'started: max_model_len 2,816; KV cache 2,944 tokens, 0.13 GiB; ...', 'did not start: the KV
    pool (0.12 GiB) holds less ...; max_model_len 2,944; ...'."""
    of = f" (the last of {verdict.boots_in_log} boots in this log)" if verdict.boots_in_log > 1 else ""
    if verdict.outcome == "unknown":
        said = f"no verdict{of}: the log ends before the engine said it was ready or why it did not start"
    elif verdict.outcome == "KV cache allocated":
        said = f"KV cache allocated{of}, no error logged (the log ends before the engine said it was ready)"
    elif verdict.outcome == "started":
        said = f"started{of}" + (f" (then logged: {verdict.cause})" if verdict.cause else "")
    else:
        said = f"did not start{of}: {verdict.cause}"
    kv = [f"{verdict.kv_cache_tokens:,} tokens"] if verdict.kv_cache_tokens is not None else []
    kv += [f"{verdict.kv_cache_gib:.2f} GiB"] if verdict.kv_cache_gib is not None else []
    figures = [
        f"max_model_len {verdict.max_model_len:,}" if verdict.max_model_len is not None else None,
        f"KV cache {', '.join(kv)}" if kv else None,
        _data_parallel(verdict) if kv or verdict.max_concurrency is not None else None,
        f"max concurrency {verdict.max_concurrency:.2f}x at {verdict.max_concurrency_context:,} tokens"
        if verdict.max_concurrency is not None and verdict.max_concurrency_context is not None
        else None,
        f"tensor parallel {verdict.tensor_parallel_size}" if verdict.tensor_parallel_size else None,
        f"vLLM {verdict.engine_version}" if verdict.engine_version else None,
        f"platform {verdict.platform}" if verdict.platform else None,
        f"card {verdict.device_name}" if verdict.device_name else None,
        f"model {verdict.model}" if verdict.model else None,
    ]
    given = "; ".join(figure for figure in figures if figure)
    return f"{said}{'; ' if verdict.cause or verdict.outcome == 'unknown' else ': '}{given}" if given else said


def _without_traps(lines: list[LogLine], unmet: frozenset[str], counts: dict[str, int]) -> list[LogLine]:
    """`lines` with the traps in `unmet` (of a platform the log never showed, or SUPERSEDED by another it showed)
    taken off: each such line classified again without them (an error stays one; a line that is nothing else is left
    out), `counts` moved with it."""
    out: list[LogLine] = []
    for line in lines:
        if line.trap not in unmet:
            out.append(line)
            continue
        kind, trap = classify(line.text, line.kind == "error", unmet)
        counts[line.kind] -= 1
        if kind is not None:
            counts[kind] = counts.get(kind, 0) + 1
            out.append(line.model_copy(update={"kind": kind, "trap": trap}))
    return out


def explain_prompt(summary: LogSummary) -> str:
    """The chat prompt asking a model to explain `summary`: the boot's verdict the grammar read (verdict_line; the
    prompt gave only the lines, and a small served model guessed whether the engine started and its KV cache size
    from them), the known traps, the kept lines, then the question."""
    verdict = verdict_line(summary.boot) if summary.boot is not None else NO_VERDICT
    body = "\n".join(f"{line.number}: [{line.kind}] {line.text}" for line in summary.lines[-60:])
    found = "\n".join(f"- {t}" for t in summary.traps) or "- none"
    return (
        "These lines come from the log of the vLLM server you are running on.\n"
        f"Verdict read from the log: {verdict}\nKnown traps found:\n"
        f"{found}\n\nLog lines:\n{body}\n\n"
        "In three sentences: did the server start correctly, what is its KV cache size, and what should the "
        "operator change, if anything?"
    )
