"""Real boot logs of tests/fixtures/bootlogs wrapped the ways users' logs arrive (a collector's column, a terminal's
colours, an issue's Markdown, a second process's lines, a Windows editor's byte-order mark and line ends, a word wrap
at spaces), each read as `onechip logs` reads it: the same verdict (model, vLLM version, card, platform, TP, length,
KV tokens and GiB, concurrency, outcome and cause), weights and blocks as the plain log gives.
test_bootlog_paste_shapes covers the shapes it names (hard-wrapped rows, JSON records, restarts); these are the
rest."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onechip.vllm import log_summary
from onechip.vllm.bootlog import _records, failure_cause, read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
# V0 0.7 and V1 0.10 - 0.31, CUDA, ROCm, TPU, XPU and CPU, TP 2 - 5 (one over Ray), started and refused, a pasted
# excerpt behind a chat quote and a refusal with its traceback
LOGS = [
    "l40sx2-qwen25-32b-tp2-len10000-v071",
    "a100x4-gpt-oss-120b-tp4-ray-v01011",
    "h100x2-llama31-8b-tp2-v0190",
    "h100x5-qwen3-14b-tp5-refused-v0190",
    "rtx3090x2-qwen36-27b-fp8-mtp3-kvfp8-tp2-v0240",
    "mi300x-gemma4-12b-len32768-v0311",
    "tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291",
    "b70-qwen35-9b-len8192-xpu",
    "cpu-qwen3-0.6b-len40960-refused",
    "gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291",
]


def _reading(text: str) -> dict[str, Any]:
    """What `onechip logs` makes of `text` (its verdict) and the grammar's weights and blocks."""
    record = read_boot_log(text, "vllm", "m")
    verdict = log_summary.summarize(text, "x").boot
    assert verdict is not None
    return {**verdict.model_dump(), "weights_gib": record.weights_gib, "blocks": record.kv_cache_num_blocks}


def _each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix + line for line in text.splitlines())


ESC = "\x1b"
# vLLM's ColoredFormatter (vllm/logging_utils/formatter.py of the 0.34.0 sdist, used where stderr is a TTY,
# vllm/logger.py _use_color): the process tag in '\033[0;36m' ... '\033[0;0m', the level in its colour ('\033[32m' INFO,
# '\033[33m' WARNING, '\033[31m' ERROR) then '\033[0m', the asctime and '[file:line]' each in grey '\033[90m'
_COLOURS = {"DEBUG": "37", "INFO": "32", "WARNING": "33", "ERROR": "31", "CRITICAL": "35"}
_HEAD = re.compile(r"\b(INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d-\d\d [\d:]+) (\[[^\]]+\])")
_TAG = re.compile(r"^(\([^)]*pid=\d+[^)]*\)) ")


def _coloured(text: str) -> str:
    def head(match: re.Match[str]) -> str:
        level, when, where = match.groups()
        grey = f"{ESC}[90m"
        return f"{ESC}[{_COLOURS[level]}m{level}{ESC}[0m {grey}{when}{ESC}[0m {grey}{where}{ESC}[0m"

    lines = (_TAG.sub(rf"{ESC}[0;36m\1{ESC}[0;0m ", line) for line in text.splitlines())
    return "\n".join(_HEAD.sub(head, line) for line in lines)


def _two_ranks(text: str) -> str:
    """Each line as two ranks of one engine print it, one after the other (TP workers log the same start-up lines)."""
    return "\n".join(f"(Worker_TP{rank} pid={10 + rank}) {line}" for line in text.splitlines() for rank in (0, 1))


def _folded(width: int, keep_blank: bool = True, indent: int = 0, past: bool = False) -> Callable[[str], str]:
    """Each line word-wrapped at `width` columns as GNU coreutils' `fold -s -w WIDTH` wraps it (fold.c: a line longer
    than the width breaks after the last blank of its first `width` columns, the blank kept at the row's end, or at
    the width where there is none; counted here in characters, where fold counts bytes), or as a chat or mail box
    wraps at spaces, the blank dropped (`keep_blank` False). With `indent`, a hanging indent: each row after a line's
    first opens with that many spaces, counted in the width (Python's textwrap.fill(subsequent_indent=...), a chat
    client or a Markdown list item indenting the rows it wrapped), or put before each row past the width (`past`: a
    paste folded at the width, then its rows indented)."""

    def fold(text: str) -> str:
        rows = []
        for line in text.splitlines():
            start = 0  # the hanging indent's columns at the row's start, where no break is looked for
            while len(line) > (room := width + (start if past else 0)):
                cut = line.rfind(" ", start, room)
                if cut < 0:
                    rows.append(line[:room])
                    line = " " * indent + line[room:]
                else:
                    rows.append(line[: cut + 1] if keep_blank else line[:cut])
                    line = " " * indent + line[cut + 1 :]
                start = indent
            rows.append(line)
        return "\n".join(rows)

    return fold


def _tab_indented(text: str) -> str:
    """Each four spaces of a line's indent as a tab (an editor's 'convert indentation', a traceback's frames)."""
    return "\n".join(re.sub(r"^(?: {4})+", lambda m: "\t" * (len(m.group()) // 4), line) for line in text.splitlines())


# vLLM's level and stamp with the date left out ('INFO [utils.py:287] ...'): a logging config whose format has no
# asctime (VLLM_LOGGING_CONFIG_PATH), a collector that keeps the time in a field of its own
_DATE = re.compile(r"\b(INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d ")


def _dateless(text: str) -> str:
    return _DATE.sub(r"\1 ", text)


WRAPS: dict[str, Callable[[str], str]] = {
    # `docker compose logs`: the service's container name padded to the widest, then '| '
    "compose": _each_line("vllm-1  | "),
    "compose, vllm-openai": _each_line("vllm-openai-1 | "),
    "compose in colour": lambda text: _each_line(f"{ESC}[36mvllm-openai-1  |{ESC}[0m ")(_coloured(text)),
    # `kubectl logs --timestamps` and `docker logs -t`: RFC 3339 with nanoseconds; a log viewer's column ending in a tab
    "kubectl --timestamps": _each_line("2026-12-06T12:00:01.123456789Z "),
    "docker logs -t, offset": _each_line("2026-12-06T12:00:01.123456789+00:00 "),
    "timestamp and a tab": _each_line("2026-12-06T12:00:01.123Z\t"),
    "journald": _each_line("Dec 06 12:00:01 host vllm[123]: "),
    "vllm colours": _coloured,
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "bom": lambda text: "\ufeff" + text,
    "bom and crlf": lambda text: "\ufeff" + text.replace("\n", "\r\n"),
    "tab indent": _tab_indented,
    # a GitHub issue's Markdown: a fenced block, a quote, a fenced block quoted in a reply
    "fenced": lambda text: f"```text\n{text.rstrip()}\n```",
    "quoted": _each_line("> "),
    "fenced, quoted": lambda text: _each_line("> ")(f"```text\n{text.rstrip()}\n```"),
    # vLLM's and Ray's process tags, before every line (before a tag a line already has, as Ray nests them)
    "ray worker": _each_line("(RayWorkerWrapper pid=123, ip=10.0.0.1) "),
    "engine core": _each_line("(EngineCore_DP0 pid=123) "),
    "api server": _each_line("(APIServer pid=1) "),
    "0.8 worker": _each_line("(VllmWorker rank=0 pid=5) "),
    "two ranks interleaved": _two_ranks,
    # a paste word-wrapped at spaces: `fold -s` at a mail's, a terminal's and a wide editor's width, a chat box
    "fold -s -w 72": _folded(72),
    "fold -s -w 80": _folded(80),
    "fold -s -w 100": _folded(100),
    "fold -s -w 120": _folded(120),
    "chat box, 80 columns": _folded(80, keep_blank=False),
    "chat box, 120 columns": _folded(120, keep_blank=False),
    # a word-wrapped paste quoted in a reply: the mail client or GitHub's 'Quote reply' puts '> ' before every row the
    # wrap made, so each row after the first of a broken line opens with the marker, not the line's next word
    "fold -s -w 78, quoted": lambda text: _each_line("> ")(_folded(78)(text)),
    # the level without its date, word-wrapped: each record still opens with its level and '[file:line]'
    "no date": _dateless,
    "no date, fold -s -w 80": lambda text: _folded(80)(_dateless(text)),
    "no date, chat box, 100 columns": lambda text: _folded(100, keep_blank=False)(_dateless(text)),
    "api server, no date, fold -s -w 80": lambda text: _folded(80)(_each_line("(APIServer pid=1) ")(_dateless(text))),
    "chat box, 80 columns, quoted": lambda text: _each_line("> ")(_folded(80, keep_blank=False)(text)),
    # a hanging indent: each row after a line's first opens with the same few spaces (textwrap's subsequent_indent, a
    # chat client's wrap, a log quoted inside a Markdown list item)
    "fold -s -w 80, hanging 2": _folded(80, indent=2),
    "chat box, 80 columns, hanging 4": _folded(80, keep_blank=False, indent=4),
    "chat box, 100 columns, hanging 8": _folded(100, keep_blank=False, indent=8),
}


# gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291 is a paste that broke vLLM's one-line refusal ('ValueError: To
# serve at least one request ... (196608), 23.25 GiB KV cache is needed, ... (22.5 GiB). Based on the available memory,
# the estimated maximum model length is 190272.') into three quoted rows of its own, so its plain reading misses the
# estimate on the third. Wrapped at 100 columns its first line tells the width, and the three rows, each one the next
# word did not fit on and no start of a message, are joined back: the reading is the message's as vLLM printed it
JOINED_BACK = {
    ("gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291", "fold -s -w 100"),
    ("gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291", "no date, chat box, 100 columns"),
    ("gb10x2-minimax-m27-awq-tp2-len196608-refused-v0291", "chat box, 100 columns, hanging 8"),
}


@pytest.fixture(scope="module")
def plain() -> dict[str, dict[str, Any]]:
    return {name: _reading((BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")) for name in LOGS}


@pytest.mark.parametrize("wrap", WRAPS)
@pytest.mark.parametrize("name", LOGS)
def test_a_wrapped_log_reads_as_the_plain_log(name: str, wrap: str, plain: dict[str, dict[str, Any]]) -> None:
    wrapped = WRAPS[wrap]((BOOTLOGS / f"{name}.log").read_text(encoding="utf-8"))
    reading = _reading(wrapped.rstrip("\r\n") + "\n")
    if (name, wrap) in JOINED_BACK:  # the paste's own broken rows joined back: read as vLLM printed the message
        text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
        assert reading == _reading(re.sub(r"\n▎ (?=\d|Based)", " ", text)) != plain[name]
        return
    if wrap == "two ranks interleaved":  # the boot's banner or engine start printed twice starts a boot again
        assert reading.pop("boots_in_log") >= plain[name]["boots_in_log"]
        assert reading == {key: value for key, value in plain[name].items() if key != "boots_in_log"}
        return
    assert reading == plain[name]


@pytest.mark.parametrize("name", LOGS)
def test_a_log_cut_inside_its_last_line_reads_as_with_or_without_it(name: str) -> None:
    # a paste cut at a size limit, a log still being written (`onechip status` during a boot): each figure of the last
    # line is read whole or not at all, and a cause the lines before give, which the whole line leaves as it is, is not
    # replaced by the cut line's (h100x5-qwen3-14b-tp5-refused-v0190 ends in vLLM's wrapper 'RuntimeError: Engine core
    # initialization failed. See root cause above.', which cut short is no wrapper vLLM prints)
    lines = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8").rstrip("\n").splitlines()
    last = lines[-1]
    cut = _reading("\n".join([*lines[:-1], last[: len(last) // 2]]))
    without, whole = _reading("\n".join(lines[:-1]) + "\n"), _reading("\n".join(lines) + "\n")
    for key, value in cut.items():
        if key != "cause" or without[key] == whole[key]:  # a cause the cut line starts may be read from its words
            assert value in (without[key], whole[key]), key


def test_the_cause_of_a_boot_is_read_from_its_lines_once() -> None:
    # parse_boot_log joined an exception a paste broke in two (bootlog._exception_rows), then failure_cause read the
    # joined lines as a log again: a line as wide as the joined one made two lines of the widest length, read as a
    # terminal's hard-wrap, and the note before the exception was joined onto it, hiding it behind the wrapper
    exception = ["ValueError: the engine refused this model because the tokenizer and the config", "disagree."]
    note = "n" * len(" ".join(exception))  # as wide as the exception once joined, the widest line of the paste
    text = "\n".join([note, *exception, "RuntimeError: Engine core initialization failed. See root cause above."])
    assert failure_cause(text) == " ".join(exception)
    assert read_boot_log(text + "\n", "vllm", "m").failure_cause == " ".join(exception)


# vLLM's logo (0.18+) pads its version with two blanks: '█ ▀▄▀ █  version 0.22.1', as these two logs print it; fold -s
# breaks after the last blank of the first 80 columns, so where the 80th column is the first of the two, the next row
# opens with the second (GNU coreutils fold.c): these two logos' lines break there at 80
@pytest.mark.parametrize(
    "name", ["rtx3090ti-gemma4-e4b-len32768-v0221", "gb10-qwen36-35b-a3b-nvfp4-kvfp8-len65536-v0200"]
)
def test_a_wrap_that_broke_a_run_of_blanks_reads_as_the_plain_log(name: str) -> None:
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    folded = _folded(80)(text)
    assert "\n version " in folded  # the break falls inside the logo's two blanks
    assert _reading(folded) == _reading(text)


def test_a_plain_log_whose_longest_lines_are_records_before_a_traceback_is_not_joined() -> None:
    # no wrap: the longest line (the width a word wrap is told by) is an ERROR record, and another is within a word of
    # it, each followed by the header Python's traceback module prints on a line of its own ('Traceback (most recent
    # call last):', traceback.format_exception); each was read as a wrap's row and the header joined onto the record
    # ('... memory left.Traceback (most recent call last):'), two errors where the log has four
    head = "ERROR 12-06 23:23:49 [core.py:700] EngineCore failed to start because the "
    lines = [
        "INFO 12-06 23:23:49 [api_server.py:1] vLLM API server version 0.32.0",
        head + "model could not be loaded on this device.",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 1, in run',
        "RuntimeError: boom",
        head + "KV cache does not fit into the memory left.",
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 2, in run',
        "ValueError: No available memory for the cache blocks.",
    ]
    errors = read_boot_log("\n".join(lines) + "\n", "vllm", "m").errors
    assert errors == [lines[1], lines[2], lines[4], lines[5], lines[6], lines[8]]


def test_an_exception_printed_after_a_shorter_record_is_not_joined_to_it() -> None:
    # no wrap: what the seed's v5e boot prints to stderr as it fails (tests/data/vllm_tpu_seed_095_failure.log's two
    # lines, the test fake's fail mode) after two INFO records. The exception's type is a longer word than the room left
    # after the second record, so the row was read as a wrap's break (the next word did not fit) and the exception
    # joined onto 'token received: yes': the boot's cause read 'There are 347.33M free' alone
    # (engines test_remote::test_host_engine_boot_failure_is_one_line_with_log_path). Python's traceback module starts
    # an exception's 'Type: message' on a line of its own (format_exception_only)
    lines = [
        "(APIServer pid=5066) INFO 12-07 04:20:15 [fake.py:1] vLLM API server version 0.32.0",
        "(APIServer pid=5066) INFO 12-07 04:20:15 [fake.py:1] token received: yes",
        "RuntimeProgramAllocationFailure: Attempting to reserve 384.11M at the bottom of memory.",
        "That was not possible. There are 347.33M free, 0B reserved, and 347.33M reservable.",
    ]
    cause = read_boot_log("\n".join(lines) + "\n", "vllm", "m").failure_cause or ""
    assert "needed 384.11M, 347.33M free" in cause


# Pasted excerpts that keep vLLM's messages without their heads (no process tag, level or stamp), word-wrapped at a
# mail's or a terminal's width: each row a wrap broke off is no start of a message the grammar knows, and follows a row
# the next word did not fit on (bootlog._unwrapped). V0's refusal of one max-length request
# (rtx3090-llama31-8b-len29000-refused-v0) folded at 80 read 'KV cache allocated, no error logged' for a refused boot
# (V0's profiler lines behind their '[worker.py:287]' alone: v100-qwen25-7b-fp16-v085; the seed's TPU excerpt)
@pytest.mark.parametrize("wrap", ["fold -s -w 72", "fold -s -w 80", "chat box, 80 columns"])
@pytest.mark.parametrize(
    "name", ["rtx3090-llama31-8b-len29000-refused-v0", "v100-qwen25-7b-fp16-v085", "tpu-v5e1-gemma4-e2b-seed"]
)
def test_a_wrapped_excerpt_of_bare_messages_reads_as_the_plain_log(name: str, wrap: str) -> None:
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    assert _reading(WRAPS[wrap](text) + "\n") == _reading(text)


# The same excerpts folded where two of their rows fill the width exactly (a row's kept blank at the last column, or a
# line's last row as wide as the width): two rows of the widest length were read as a terminal's hard wrap, so the
# profiler line's last row took '# GPU blocks: 1478' after it and the refusal's rows were not joined (rtx3090 at 109 -
# 115: 'KV cache allocated'), and the token line's rows were not (the seed at 82 - 83: no concurrency). A terminal cuts
# every row of a long line at the width; rows short of it that end in the blank fold -s keeps are a word wrap's
@pytest.mark.parametrize(
    ("name", "width"),
    [
        ("rtx3090-llama31-8b-len29000-refused-v0", 109),
        ("rtx3090-llama31-8b-len29000-refused-v0", 115),
        ("tpu-v5e1-gemma4-e2b-seed", 82),
        ("tpu-v5e1-gemma4-e2b-seed", 83),
    ],
)
def test_a_word_wrapped_excerpt_whose_rows_fill_the_width_is_no_hard_wrap(name: str, width: int) -> None:
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    assert _reading(_folded(width)(text) + "\n") == _reading(text)


# A paste wrapped once: one row of the widest length, broken off the line the next row continues. The width rule needs
# two rows of it, so v100's profiler line folded at 127 - 160 (its only line past the width) lost its pool. A single
# break is joined only where nothing but a wrap explains the row's end: the blank fold -s keeps at the end of the widest
# row before a word that did not fit, or a comma-grouped figure cut inside a group ('for 8,1' then '92 tokens'), each
# followed by a row that opens no line or message of its own (bootlog._broken_once)
@pytest.mark.parametrize("width", [127, 140, 160])
def test_a_bare_excerpt_wrapped_once_reads_as_the_plain_log(width: int) -> None:
    text = (BOOTLOGS / "v100-qwen25-7b-fp16-v085.log").read_text(encoding="utf-8")
    assert _reading(_folded(width)(text) + "\n") == _reading(text)


def test_a_figure_a_terminal_cut_inside_a_group_is_joined_back() -> None:
    lines = (BOOTLOGS / "tpu-v5e1-gemma4-e2b-seed.log").read_text(encoding="utf-8").splitlines()
    token_line = next(line for line in lines if "KV cache size" in line)
    cut = token_line.index("8,192") + len("8,1")  # a terminal 62 columns wide would cut it there
    excerpt = [lines[0], token_line[:cut], token_line[cut:]]
    assert len(token_line[:cut]) > max(len(lines[0]), len(token_line[cut:]))
    assert _reading("\n".join(excerpt) + "\n") == _reading(f"{lines[0]}\n{token_line}\n")


@pytest.mark.parametrize("indent", [2, 4])
def test_a_hanging_indent_joins_no_traceback_frame_repr_or_block_line(indent: int) -> None:
    # records word-wrapped at 80 columns with a hanging indent (the width told, the indent told by their rows), then
    # what a log indents of its own at 2 or 4 columns, each after a row the next word would not fit on: a traceback's
    # frame (after a record, as a paste that left out the traceback's header has it), its source and caret lines, a
    # pprint repr continued under its bracket, a YAML block after the line that opens it
    head = "INFO 12-06 23:23:49 [api_server.py:1] "
    records = [
        head + "Automatically detected platform cuda. The model's config sets max_position_embeddings to 40960, and"
        " the KV cache holds up to that many tokens per request.",
        head + "non-default args: {'model': 'Qwen/Qwen3-8B', 'max_model_len': 8192, 'enforce_eager': True}",
    ]
    frame = '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 2, in run_engine_core_loop'
    own = [
        "ERROR 12-06 23:23:49 [core.py:700] EngineCore failed to start; its frames are:",
        frame[:77],
        "    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs, a=1)",
        "    " + "^" * 40,
        "[{'model': 'Qwen/Qwen3-8B', 'dtype': 'auto', 'max_model_len': 8192, 'seed': 0,",
        "  'enforce_eager': True}]",
        "WARNING 12-06 23:23:49 [config.py:1] The config of the model's folder holds:",
        "    architectures: Qwen3ForCausalLM",
        "    max_position_embeddings: 40960",
    ]
    lines = _folded(80, keep_blank=False, indent=indent)("\n".join(records + own)).splitlines()
    assert lines[-len(own) :] == own and lines[1].startswith(" " * indent + "m")  # the records' rows hang
    assert _records("\n".join(lines)) == [*records, *own]


# A chat box at 80 columns (the blank at each break dropped): where the widest row is the only one of its width, it is
# no terminal's cut (h20-qwen35-27b-len32768-dummy-v0190's token line read 'tokens perrequest: 33.04x', no
# concurrency), and a break inside vLLM's logo's two blanks leaves the row one short of the box and the next opening
# with the second blank (rtx3090ti-gemma4-e4b-len32768-v0221, gb10-qwen36-35b-a3b-nvfp4-kvfp8-len65536-v0200: no
# version)
@pytest.mark.parametrize(
    "name",
    [
        "h20-qwen35-27b-len32768-dummy-v0190",
        "rtx3090ti-gemma4-e4b-len32768-v0221",
        "gb10-qwen36-35b-a3b-nvfp4-kvfp8-len65536-v0200",
    ],
)
def test_a_chat_box_wrap_reads_as_the_plain_log(name: str) -> None:
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    assert _reading(_folded(80, keep_blank=False)(text) + "\n") == _reading(text)


# A refusal's exception (no vLLM head) word-wrapped with a hanging indent of 2 among traceback frames a terminal cut
# at the width: its message's rows open with the indent, and were read as lines of their own, so the cause was the
# exception's first row alone ('ValueError: Free memory on device (59.32/79.15 GiB) on startup is less than')
@pytest.mark.parametrize(
    "name",
    [
        "a100-80gb-free-memory-refused-v092-kvcached",
        "h100-qwen3-omni-no-cache-blocks-refused-omni-ci",
        "rtx4060-qwen25-3b-bnb-len32000-util075-refused-crashloop",
    ],
)
def test_an_exception_wrapped_with_a_hanging_indent_reads_as_the_plain_log(name: str) -> None:
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    assert _reading(_folded(80, indent=2)(text) + "\n") == _reading(text)
