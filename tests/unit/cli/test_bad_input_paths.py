"""Failure paths found at the CLI (2026-12-03), one regression test per finding: a safetensors header whose
shape disagrees with its data_offsets, a user-given path that is not a regular file, a calibration cell whose
figures no engine could give, token and size options without an upper bound, simulate's --replicas bound, and
a binary file given to the logs summariser."""

from __future__ import annotations

import contextlib
import json
import os
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, one_error_line, sized_checkpoint
from onechip import api
from onechip.engines import launch
from onechip.errors import ConfigError
from onechip.schemas.logs import SummarizeLogsRequest
from onechip.schemas.replicas import MAX_REPLICAS

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
TENSOR = "model.layers.0.mlp.up_proj.weight"


def _header_only(directory: Path, header: Any) -> Path:
    """sized_checkpoint's config.json, with model.safetensors replaced by `header` as its JSON header."""
    sized_checkpoint(directory, LLAMA, 1024)
    text = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(text)) + text)
    return directory


@pytest.mark.parametrize(
    ("tensor", "said"),
    [
        # was 'does not fit' for 2e30 bytes of weights, exit 0: the format requires (end - begin) ==
        # prod(shape) * dtype size (safetensors crate, Metadata::validate: TensorInvalidInfo)
        (
            {"dtype": "BF16", "shape": [10**30], "data_offsets": [0, 20]},
            f"tensor '{TENSOR}': shape [{10**30}] of BF16 is {2 * 10**30} bytes but its data_offsets [0, 20] span 20",
        ),
        (
            {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]},
            f"tensor '{TENSOR}': shape [3] of F4 is 1.5 bytes but its data_offsets [0, 1] span 1",
        ),
        # InvalidOffset: end before begin, or offsets that are not two non-negative integers
        (
            {"dtype": "BF16", "shape": [0], "data_offsets": [20, 0]},
            f"tensor '{TENSOR}' has no data_offsets [begin, end] of integers 0 <= begin <= end (got [20, 0])",
        ),
        (
            {"dtype": "BF16", "shape": [10]},
            f"tensor '{TENSOR}' has no data_offsets [begin, end] of integers 0 <= begin <= end (got None)",
        ),
    ],
)
def test_a_safetensors_shape_that_disagrees_with_its_data_offsets_is_one_line(
    run, tmp_path: Path, tensor: dict[str, Any], said: str
):
    path = _header_only(tmp_path / "m", {TENSOR: tensor})
    line = one_error_line(run, "plan", str(path), "--chip", "l4", "--max-model-len", "4096")
    assert line == f"{path}/model.safetensors: {said}"


@pytest.fixture
def fifo() -> Iterator[Callable[[Path, bytes], Path]]:
    """make(path, text): a FIFO at `path` whose writer (a thread) sends `text` once a reader opens it, so a reader
    that does open it gets `text` and ends instead of waiting forever; unblocked and joined at teardown."""
    made: list[tuple[Path, threading.Thread]] = []

    def write(path: Path, text: bytes) -> None:
        with contextlib.suppress(OSError), path.open("wb") as sink:  # BrokenPipeError: the reader refused it
            sink.write(text)

    def make(path: Path, text: bytes) -> Path:
        os.mkfifo(path)
        writer = threading.Thread(target=write, args=(path, text), daemon=True)
        writer.start()
        made.append((path, writer))
        return path

    yield make
    for path, writer in made:
        if writer.is_alive():  # still waiting for a reader: one that opens without waiting lets it finish
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            writer.join(5)
            os.close(fd)
        writer.join(5)


BENCH = ("bench", "http://127.0.0.1:9", "--out")


@pytest.mark.parametrize(
    ("flag", "text"),
    [("--workload-file", b"turns: 4\n"), ("--trace", b'{"input_length": 8, "output_length": 8, "timestamp_s": 0}\n')],
)
def test_a_fifo_given_as_an_input_file_is_refused_not_read(run, tmp_path: Path, fifo, flag: str, text: bytes):
    # a FIFO blocked the command until something wrote to it, and /dev/zero read without end
    path = fifo(tmp_path / "input", text)
    workload = ("--workload", "trace") if flag == "--trace" else ()
    line = one_error_line(run, *BENCH, str(tmp_path / "out"), *workload, flag, str(path))
    assert line == f"{flag} {path}: not a regular file"


def test_a_fifo_config_json_is_refused_not_read(run, tmp_path: Path, fifo):
    directory = sized_checkpoint(tmp_path / "m", LLAMA, 1024)
    (directory / "config.json").unlink()
    path = fifo(directory / "config.json", json.dumps(LLAMA).encode())
    line = one_error_line(run, "plan", str(directory), "--chip", "l4", "--max-model-len", "4096")
    assert line == f"{path}: cannot read: not a regular file"


def test_a_fifo_safetensors_file_is_refused_not_read(run, tmp_path: Path, fifo):
    directory = sized_checkpoint(tmp_path / "m", LLAMA, 1024)
    text = (directory / "model.safetensors").read_bytes()
    (directory / "model.safetensors").unlink()
    path = fifo(directory / "model.safetensors", text)
    line = one_error_line(run, "plan", str(directory), "--chip", "l4", "--max-model-len", "4096")
    assert line == f"{path}: cannot read safetensors header: {path} is not a regular file"


def test_a_fifo_run_file_is_a_problem_of_the_report_not_a_hang(run, tmp_path: Path, fifo):
    out = tmp_path / "run"
    out.mkdir()
    (out / "engine.log").write_text("INFO vLLM API server version 0.11.0\n")  # a run file, so it is a run
    path = fifo(out / "summary.json", b"{}")
    line = one_error_line(run, "report", str(out))
    assert line.startswith(f"summary.json could not be read: {path} is not a regular file"), line


@pytest.mark.parametrize(
    ("figure", "stat", "said"),
    [
        # each was fitted and stored as the model's calibration on the chip: a request's TTFT and TPOT lie inside
        # its rep's whole run (first measured send to last measured completion, RepResult.whole_run_s)
        ("ttft_ms", "median", "median TTFT 1e+30 ms, longer than its longest rep ("),
        ("tpot_ms", "median", "median TPOT 1e+30 ms, longer than its longest rep ("),
    ],
)
def test_a_calibration_cell_whose_figures_no_engine_gives_is_refused_naming_it(
    run, tmp_path: Path, plan_file: Path, measured_run, figure: str, stat: str, said: str
):
    measured = measured_run(figure, stat, 1e30)
    line = one_error_line(run, "simulate", "--plan", str(plan_file), "--calibrate", str(measured), "--contexts", "128",
                          "--clients", "1", "--out", str(tmp_path / "pred"))  # fmt: skip
    assert line.startswith(f"the calibration run's cell 128 tokens x 1 client has {said}"), line
    assert line.endswith("which no measurement gives: its summary.json is damaged"), line


def test_a_calibration_cell_whose_tok_per_s_is_not_its_reps_is_refused_as_it_is_read(
    run, tmp_path: Path, plan_file: Path, measured_run
):
    # a cell's tok/s is the median of its reps' output tokens / window seconds (bench/stats.py): summary.json is
    # refused as it is read (schemas/bench.py CellResult), as `report` and `cost --run` refuse it
    measured = measured_run("output_tok_per_s", "", 1e30)
    line = one_error_line(run, "simulate", "--plan", str(plan_file), "--calibrate", str(measured), "--contexts", "128",
                          "--clients", "1", "--out", str(tmp_path / "pred"))  # fmt: skip
    assert line.startswith(
        f"--calibrate {measured}: summary.json does not match BenchRun; ignored: cells.0: output_tok_per_s 1e+30 is "
        "not the median of its reps' tok/s ("
    ), line


@pytest.mark.parametrize(
    ("flag", "value", "most"),
    [
        # each was planned: --max-num-batched-tokens 10**18 as a 1.7e13 GiB rotary cache, --block-size 10**12 as a
        # plan that fits. The cap is the planner's for a model's positions (planner/config.py _MAXIMA: no request,
        # and so no step's batch of a request or block of it, holds more tokens)
        ("--max-num-batched-tokens", str(10**18), "67108864"),
        ("--block-size", str(10**12), "67108864"),
        # as VLLM_CPU_KVCACHE_SPACE's: GiB of host memory
        ("--cpu-offload-gb", "8000000000", "4096"),
    ],
)
def test_a_sizing_option_beyond_any_engine_is_one_line(run, flag: str, value: str, most: str):
    line = one_error_line(run, "plan", "google/gemma-4-E2B-it", "--chip", "h100", "--max-model-len", "4096",
                          flag, value)  # fmt: skip
    assert line.startswith(f"Invalid value for '{flag}'") and f"less than or equal to {most}" in line, line


@pytest.mark.parametrize(
    "argv",
    [
        # simulate and deploy k8s took 256 where plan, up and cloud up take schemas.replicas.MAX_REPLICAS
        ("simulate", "--plan", "{plan}", "--replicas", "{over}", "--out", "{out}"),
        ("deploy", "k8s", "google/gemma-4-E2B-it", "--chip", "l4", "--replicas", "{over}", "--out", "{out}"),
        ("plan", "google/gemma-4-E2B-it", "--chip", "v5e-4", "--replicas", "{over}"),
    ],
)
def test_replicas_have_one_bound_in_every_command(run, tmp_path: Path, plan_file: Path, argv: tuple[str, ...]):
    over = str(MAX_REPLICAS + 1)
    filled = [a.format(plan=plan_file, over=over, out=tmp_path / "out") for a in argv]
    line = one_error_line(run, *filled)
    assert line.startswith("Invalid value for '--replicas'") and f"less than or equal to {MAX_REPLICAS}" in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x7fELF\x02\x01\x01\x00" + bytes(64), "a NUL byte"),  # a binary: grep and git call a file so by a NUL
        (b"INFO boot\n\xff\xfe\xfa not UTF-8\n", "bytes that are not UTF-8"),
    ],
)
def test_summarize_logs_refuses_a_file_that_is_not_text(tmp_path: Path, data: bytes, why: str):
    # was a summary that 'kept nothing notable', as if the file were a quiet log
    path = tmp_path / "engine.log"
    path.write_bytes(data)
    with pytest.raises(ConfigError) as info:
        api.summarize_logs(SummarizeLogsRequest(path=path))
    assert str(info.value) == f"{path}: not a text log ({why} in its first 8,192 bytes)"


def test_summarize_logs_refuses_a_fifo_not_waits(tmp_path: Path, fifo):
    path = fifo(tmp_path / "engine.log", b"INFO boot\n")
    with pytest.raises(ConfigError, match=f"^{path}: cannot read: not a regular file$"):
        api.summarize_logs(SummarizeLogsRequest(path=path))


def test_summarize_logs_reads_a_log_whose_first_block_ends_inside_a_character(tmp_path: Path):
    path = tmp_path / "engine.log"
    path.write_bytes(b"x" * 8191 + "é\nERROR boom\n".encode())  # é's two bytes straddle the 8,192-byte block
    summary = api.summarize_logs(SummarizeLogsRequest(path=path))
    assert [line.text for line in summary.lines if line.kind == "error"] == ["ERROR boom"]


def test_a_fifo_token_file_is_refused_not_read(tmp_path: Path, fifo):
    # --hf-token-file read whatever a FIFO was fed (or waited for a writer), as the other input files did
    path = fifo(tmp_path / "hf_token", b"hf_abcdefghijklmnop\n")
    with pytest.raises(ConfigError) as info:
        launch.read_hf_token(path)
    assert str(info.value) == f"--hf-token-file {path}: cannot read: not a regular file"


def test_a_token_file_that_is_not_utf8_is_one_line(run, tmp_path: Path):
    # mcp --token-file decoded it unguarded: 'internal error (UnicodeDecodeError ...)', exit 1, as for a bug
    path = tmp_path / "token"
    path.write_bytes(b"ab\xffcd\n")
    line = one_error_line(run, "mcp", "--http", "--token-file", str(path))
    assert line == f"--token-file {path}: cannot read: not UTF-8 text"
