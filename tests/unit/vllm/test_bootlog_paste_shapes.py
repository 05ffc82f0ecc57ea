"""Real boot logs of tests/fixtures/bootlogs in the shapes users paste them: each variant is built here from the clean
log (a collector's or a terminal's prefix on every line, a BOM, another line end, ...) and must read as the clean log
does, figure for figure: version, weights, pool, tokens, concurrency, CUDA-graph memory, the deployment's logged
args and card, warnings, errors, the failure verdict and the boot timeline; and log_summary keeps the same kinds."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from onechip.vllm import log_summary
from onechip.vllm.bootlog import read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
# versions V0 0.4 - 0.8 and V1 0.10 - 0.32, GPU (CUDA and ROCm), TPU and CPU, TP / PP / Ray, started and refused, and
# logs with a card or a versions table printed beside vLLM's lines
LOGS = [
    "w7900-llama3-8b-len8192-v041-rocm",
    "w7900-llama31-8b-len131072-v064dev-rocm",
    "l40-qwen25-math-1.5b-len4096-v072",
    "l40sx2-qwen25-32b-tp2-len10000-v071",
    "rtx4090-cosyvoice2-0.5b-llm-len32768-util040-v090",
    "a100x2-40gb-qwen2-7b-tp2-ray-2nodes-util050-v01011",
    "rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110",
    "h100x2-llama31-8b-pp2-v0190",
    "h100x5-qwen3-14b-tp5-refused-v0190",
    "h100-gpt-oss-120b-util095-refused-v011",
    "t4-gemma4-e2b-len16384-v0280",
    "rtxpro6000x2-qwen3-32b-tp2-util0426-len32768-v0271",
    "mi300x-gemma4-12b-len32768-v0311",
    "tpu-v6e4-gemma4-26b-a4b-tp4-len2048-v0291",
    "tpu-v5e1-gemma4-e2b-util095-len16384-refused-v0261",
    "cpu-smollm2-135m-v0320-seed",
    "cpu-qwen3-0.6b-len40960-refused",
]
FIGURES = (
    "engine_version", "weights_gib", "weight_load_s", "kv_cache_tokens", "kv_cache_gib", "max_concurrency",
    "max_concurrency_context", "kv_cache_num_blocks", "kv_cache_needed_gib", "estimated_max_model_len",
    "cuda_graph_estimated_gib", "cuda_graph_capture_gib", "hbm_gib", "kv_cache_shape", "fp8_kv_cache_dtype",
    "compile_s", "logged",
)  # fmt: skip


def _read(text: str) -> dict[str, Any]:
    """What the grammar and the summary make of `text`: every figure, the counts of warning and error lines, whether
    it failed, the timeline's events and the summary's kinds."""
    record = read_boot_log(text, "vllm", "m")
    out = {name: getattr(record, name) for name in FIGURES}
    out.update(
        warnings=len(record.warnings), errors=len(record.errors), failed=record.failure_cause is not None,
        events=[event.name for event in record.events], kinds=log_summary.summarize(text, "x").counts,
    )  # fmt: skip
    return out


def _each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix + line for line in text.splitlines())


ESC = "\x1b"
# vLLM's colour formatter (vllm/logging_utils/formatter.py ColoredFormatter of the 0.34.0 sdist): the level in its
# colour, the file:line in grey, the process tag in cyan
_LEVEL_HEAD = re.compile(r"\b(INFO|WARNING|ERROR|DEBUG|CRITICAL)( \d\d-\d\d [\d:]+) (\[[^\]]+\])")
_TAG = re.compile(r"^(\([\w -]+pid=\d+[^)]*\)) ")


def _coloured(text: str) -> str:
    lines = [_TAG.sub(rf"{ESC}[0;36m\1{ESC}[0;0m ", line) for line in text.splitlines()]
    return "\n".join(_LEVEL_HEAD.sub(rf"{ESC}[32m\1{ESC}[0m\2 {ESC}[90m\3{ESC}[0m", line) for line in lines)


# a line vLLM's logger wrote: its process tag (where the version prepends one), level, time, file:line and message
_RECORD = re.compile(
    r"^(\([^)]*pid=\d+[^)]*\) )?(INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d-\d\d) ([\d:]+) \[[^\]]*\] (.*)$"
)


def _json(fields: Callable[[re.Match[str]], dict[str, Any]], tag: bool) -> Callable[[str], str]:
    """Each line vLLM's logger wrote as the JSON object a JSON formatter writes for it (`fields` of the line's match),
    behind its process tag where `tag` (vLLM before 0.34 prepends it to stdout; 0.34 does not); other lines (a raw
    traceback, a tool's output) as they are."""

    def line(text: str) -> str:
        if (match := _RECORD.match(text)) is None:
            return text
        return (match.group(1) or "" if tag else "") + json.dumps(fields(match))

    return lambda text: "\n".join(line(each) for each in text.splitlines())


def _builtin(match: re.Match[str]) -> dict[str, Any]:
    """vLLM 0.34's `--logging-config.formatter json` (vllm/logging_utils/formatter.py JSON_FORMAT)."""
    return {
        "asctime": f"2026-{match.group(3)} {match.group(4)},123", "levelname": match.group(2), "name": "vllm.x",
        "processName": "MainProcess", "process": 1, "message": match.group(5), "vllm_process_name": "EngineCore",
    }  # fmt: skip


SHAPES: dict[str, Callable[[str], str]] = {
    # vLLM's own process tags, as every line of a worker or an engine core carries them
    "engine core tag": _each_line("(EngineCore_DP0 pid=123) "),
    "0.10 worker tag": _each_line("(VllmWorker TP1 pid=9) "),
    "ray worker tag": _each_line("(RayWorkerWrapper pid=4242, ip=10.0.0.12) "),
    # collectors: `docker compose logs`, `kubectl logs --timestamps`, journalctl's short form, GitHub Actions' raw log
    "docker compose column": _each_line("vllm-1  | "),
    "kubectl timestamps": _each_line("2026-01-01T10:00:00.123456789Z "),
    "journalctl": _each_line("Dec 05 10:00:00 host vllm[123]: "),
    "github actions": _each_line("2026-01-01T00:00:00.0000000Z "),
    # `kubectl logs --prefix`, Slurm's `srun --label` task number
    "kubectl prefix": _each_line("[pod/vllm-7d9f8c-x2k4q/vllm] "),
    "slurm label": _each_line("0: "),
    "slurm label, two digits": _each_line("12: "),
    # collectors whose prefix is read by the vLLM line head after it: stern's pod and container, journalctl's
    # '-o short-precise', '-o short-full' and '-o short-unix', pdsh's host
    "stern": _each_line("vllm-7d9f8c-x2k4q vllm "),
    "journalctl short-precise": _each_line("Dec 05 10:00:00.123456 host vllm[123]: "),
    "journalctl short-full": _each_line("Thu 2026-12-05 10:00:00 UTC host vllm[123]: "),
    "journalctl short-unix": _each_line("1764928800.123456 host vllm[123]: "),
    "pdsh": _each_line("gpu-node-1: "),
    # a byte-order mark (a Windows editor, PowerShell's `>` redirect)
    "bom": lambda text: "\ufeff" + text,
    # a terminal's colours, as `docker compose logs` colours its column too
    "ansi colours": _coloured,
    "compose column in colour": lambda text: _each_line(f"{ESC}[36mvllm-1  |{ESC}[0m ")(_coloured(text)),
    # JSON logging: 0.34's built-in JSON formatter, and a logging config's JSON formatter behind an older version's tag
    "json, built-in": _json(_builtin, tag=False),
    "json behind the process tag": _json(_builtin, tag=True),
    # a Markdown quote, and Windows line ends
    "markdown quote": _each_line("> "),
    "crlf": lambda text: text.replace("\n", "\r\n"),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", LOGS)
def test_a_pasted_shape_reads_as_the_clean_log(name: str, shape: str) -> None:
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    shaped = SHAPES[shape](text)
    end = "" if shaped.endswith(("\n", "\r")) or not text.endswith("\n") else "\n"  # as whole as the clean log
    assert _read(shaped + end) == _read(text)


# python-json-logger's JsonFormatter with no format of its own writes the message only (VLLM_LOGGING_CONFIG_PATH,
# examples/features/logging_configuration.md): the level of a line is gone, so its warnings and plain ERROR lines are
# not told apart, but every figure, the failure verdict (from its exception) and the timeline read as on the clean log;
# not h100-gpt-oss-120b-util095-refused-v011, a paste cut inside a traceback that only its lines' ERROR level tells
@pytest.mark.parametrize("name", [name for name in LOGS if name != "h100-gpt-oss-120b-util095-refused-v011"])
def test_json_records_of_the_message_only_read_as_the_clean_log(name: str) -> None:
    text = (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")
    clean, read = _read(text), _read(_json(lambda match: {"message": match.group(5)}, tag=True)(text) + "\n")
    for levelled in ("warnings", "errors", "kinds"):
        del clean[levelled], read[levelled]
    assert read == clean


def test_the_traceback_of_a_json_record_gives_the_cause() -> None:
    # logger.exception under a JSON formatter: the message is vLLM's 'EngineCore failed to start.' (v1/engine/core.py),
    # the traceback and its exception python-json-logger's 'exc_info' field, here the refusal of
    # cpu-qwen3-0.6b-len40960-refused
    refusal = (BOOTLOGS / "cpu-qwen3-0.6b-len40960-refused.log").read_text(encoding="utf-8").split("] ", 1)[1].strip()
    exc_info = f'Traceback (most recent call last):\n  File "core.py", line 833, in run_engine_core\n{refusal}'
    record = {"asctime": "2025-11-18 13:44:09,001", "levelname": "ERROR", "message": "EngineCore failed to start."}
    boot = read_boot_log(json.dumps({**record, "exc_info": exc_info}), "vllm", "m")
    assert boot.failure_cause is not None and "holds less than one --max-model-len request" in boot.failure_cause
    assert (boot.kv_cache_needed_gib, boot.kv_cache_gib, boot.events) == (4.38, 4.0, [])
    assert boot.errors and boot.errors[0].startswith("ERROR 11-18 13:44:09 EngineCore failed to start.")


def _log(name: str) -> str:
    return (BOOTLOGS / f"{name}.log").read_text(encoding="utf-8")


# (boots in the order one log holds them): a refused boot restarted into one that came up, the reverse, a crash loop,
# a restart whose second boot starts at the API server's banner, and one at V0 0.4's 'Initializing an LLM engine'
RESTARTS = [
    ("h100x5-qwen3-14b-tp5-refused-v0190", "h100x2-llama31-8b-pp2-v0190"),
    ("h100x2-llama31-8b-pp2-v0190", "h100x5-qwen3-14b-tp5-refused-v0190"),
    ("h100x5-qwen3-14b-tp5-refused-v0190", "h100x5-qwen3-14b-tp5-refused-v0190", "h100x2-llama31-8b-pp2-v0190"),
    ("h100x5-qwen3-14b-tp5-refused-v0190", "a100x2-qwen2-7b-tp2-util050-v01011"),
    ("h100x2-llama31-8b-pp2-v0190", "a100x2-qwen2-7b-tp2-util050-v01011"),
    ("h100x5-qwen3-14b-tp5-refused-v0190", "w7900-llama3-8b-len8192-v041-rocm"),
    # two logs pasted one after the other, the first an excerpt that stops once its KV cache was logged (no ready line,
    # no error), the second, stamped later, starting at its engine's start with no banner: its figures were mixed with
    # the first's
    ("mi300x-gemma4-12b-fp8-len32768-v0311", "rtx5080-llava-v16-mistral-7b-len4096-refused-v0110"),
    ("rtx5090-qwen36-35b-a3b-nvfp4-kvfp8-v0240", "h100-llava-v16-mistral-7b-len4096-v0102"),
    ("a100x4-gpt-oss-120b-tp4-ray-v01011", "h100-llava-v16-mistral-7b-len4096-v0102"),
]


@pytest.mark.parametrize("boots", RESTARTS, ids=[" then ".join(boots) for boots in RESTARTS])
def test_a_log_of_a_restart_reads_as_its_last_boot(boots: tuple[str, ...]) -> None:
    # a container restarted, a crash loop, a paste of two tries: what counts is the last boot (started or not, its
    # pool, its deployment), not a figure or an error of an earlier one
    last = _read(_log(boots[-1]))
    read = _read("\n".join(_log(name) for name in boots))
    del last["kinds"], read["kinds"]  # the summary keeps every boot's lines
    assert read == last


def test_each_data_parallel_engine_start_is_one_boot() -> None:
    # with --data-parallel-size 2 each engine core prints 'Initializing a V1 LLM engine' (EngineCore_DP0, _DP1): one
    # boot, not a restart
    text = _log("h100x2-llama31-8b-pp2-v0190")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Initializing a V1 LLM engine" in line)
    second = re.sub(r"^\(\w+ pid=\d+\)", "(EngineCore_DP1 pid=99)", lines[start])
    clean, read = _read(text), _read("\n".join([*lines[: start + 1], second, *lines[start + 1 :]]))
    del clean["kinds"], read["kinds"]  # the summary keeps the line more
    assert read == clean


# real logs whose engine core is tagged with its DP rank ('(EngineCore_DP0 pid=N)', vllm 0.11 - 0.13), started
# (rtx5090, rtx3090x4 TP4, the GB10 nightly) and failed after its KV line (kaggle's v0.11.2)
DP_LOGS = [
    "rtx5090-llama31-8b-len65536-util095-v0120",
    "rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110",
    "gb10-nemotron3-nano-4b-fp8-kvfp8-len8192-util015-v0130nv",
    "kaggle-gpt-oss-120b-len98304-util096-seqs6-marlin-v0112",
]


@pytest.mark.parametrize("name", DP_LOGS)
def test_a_data_parallel_core_started_after_another_cores_kv_line_is_the_same_boot(name: str) -> None:
    # --data-parallel-size 2: each engine core logs its own start and KV cache under its own rank's tag, and core 1's
    # start may be logged after core 0's KV line (qa66b): the last boot then started at core 1's start, dropping the
    # API server's version line and 'non-default args'. A start under another rank's tag, before the boot came up,
    # is the same boot; core 0's start again is a new one
    text = _log(name)
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if "Initializing a V1 LLM engine" in line)
    kv = next(i for i, line in enumerate(lines) if "KV cache size" in line)
    stamp = re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d")
    restart = stamp.sub(stamp.search(lines[kv])[0], lines[start])  # a start logged once the KV line was
    core1 = [re.sub(r"^\(EngineCore_DP0 pid=\d+\)", "(EngineCore_DP1 pid=99)", line) for line in (restart, lines[kv])]
    dp = "\n".join([*lines[: kv + 1], *core1, *lines[kv + 1 :]]) + "\n"
    clean, read = _read(text), _read(dp)
    del clean["kinds"], read["kinds"]  # the summary keeps the lines more
    assert read == clean
    assert read_boot_log(dp, "vllm", "m").boots_in_log == 1
    again = "\n".join([*lines[: kv + 1], restart, *lines[kv + 1 :]]) + "\n"  # core 0 started again
    assert read_boot_log(again, "vllm", "m").boots_in_log == 2


def _hard_wrapped(width: int, quote: str = "") -> Callable[[str], str]:
    """The log as a terminal `width` columns wide shows it, each row a line (a console's copy), each row behind
    `quote` (a Markdown quote of that copy)."""

    def rows(line: str) -> list[str]:
        return [line[i : i + width] for i in range(0, len(line), width)] or [""]

    return lambda text: "\n".join(quote + row for line in text.splitlines() for row in rows(line))


WRAPS = {"80 columns": _hard_wrapped(80), "120 columns": _hard_wrapped(120), "quoted, 78": _hard_wrapped(78, "> ")}


@pytest.mark.parametrize("wrap", WRAPS)
@pytest.mark.parametrize("name", LOGS)
def test_a_log_a_terminal_hard_wrapped_reads_as_the_clean_log(name: str, wrap: str) -> None:
    # every figure on a line longer than the terminal was cut across rows: the token line, the pool, the engine's
    # config line (max_seq_len, tensor_parallel_size), the refusal; the summary, which numbers the lines as given, is
    # left out
    text = _log(name)
    clean, read = _read(text), _read(WRAPS[wrap](text) + "\n")
    del clean["kinds"], read["kinds"]
    assert read == clean


@pytest.mark.parametrize(
    "name",
    [
        "h100x5-qwen3-14b-tp5-refused-v0190",
        "w7900-llama31-8b-len131072-v064dev-rocm",
        "cpu-qwen3-0.6b-len40960-refused",
    ],
)
def test_a_log_cut_inside_a_number_reads_no_part_of_it(name: str) -> None:
    # a log still being written (`onechip status` during a boot) or a paste cut at a size limit ends inside a line:
    # "'max_model_len': 81" of 8192, 'version 0.1' of 0.19.0, 'num_gpu_blocks is: 297' of 29751 were read as figures;
    # cut after every digit, each figure is the one the lines before give or the one the whole line gives
    def figures(text: str) -> dict[str, Any]:
        record = read_boot_log(text, "vllm", "m")
        return {name: getattr(record, name) for name in FIGURES}

    lines = _log(name).splitlines()
    for i, line in enumerate(lines):
        before, whole = figures("\n".join(lines[:i])), figures("\n".join(lines[: i + 1]) + "\n")
        for match in re.finditer(r"\d", line):
            cut = figures("\n".join([*lines[:i], line[: match.end()]]))
            for figure in FIGURES:
                assert cut[figure] in (before[figure], whole[figure]) or figure == "logged", (
                    line[: match.end()],
                    figure,
                )
            for key, value in cut["logged"].items():
                assert value in (before["logged"].get(key), whole["logged"].get(key)), (line[: match.end()], key)


def test_a_log_file_that_ends_in_a_newline_gives_its_last_figure(tmp_path: Path) -> None:
    # `plan --against FILE` (log_summary.read_log_text): a file's last line is whole where a newline ends it
    whole, cut = tmp_path / "whole.log", tmp_path / "cut.log"
    line = "(APIServer pid=1) DEBUG 04-22 01:43:19 [loggers.py:273] ... after num_gpu_blocks is: 29751"
    whole.write_text(line + "\n", encoding="utf-8")
    cut.write_text(line, encoding="utf-8")
    assert read_boot_log(log_summary.read_log_text(whole, "--against"), "vllm", "m").kv_cache_num_blocks == 29751
    assert read_boot_log(log_summary.read_log_text(cut, "--against"), "vllm", "m").kv_cache_num_blocks is None


def test_a_table_printed_beside_the_log_is_not_read_as_a_wrapped_line() -> None:
    # nvidia-smi's rows share one width; in an excerpt where they are the widest lines they looked like a terminal's
    # hard-wrap (two or more rows of the longest length) and were joined, so the card row lost its name
    lines = _log("a100-qwen25-vl-7b-util022-len128000-refused-v0230").splitlines()
    table = [line for line in lines if line.startswith(("|", "+"))]
    assert len(table) >= 2 and len({len(line) for line in table}) == 1  # the fixture's table: one width
    short = "INFO 07-01 13:26:00 [kv_cache_utils.py:1] GPU KV cache size: 383,936 tokens"
    record = read_boot_log("\n".join([*table, short]) + "\n", "vllm", "m")
    assert record.logged.get("device_name") == "NVIDIA A100-SXM4-80GB"
    assert record.kv_cache_tokens == 383936
