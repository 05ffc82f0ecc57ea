"""`onechip logs FILE` / `--summary` / `--json`: a boot log from anywhere summarized at the CLI as MCP summarize_logs
summarizes it (api.summarize_logs), its verdict first; bad files refused in one line."""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

import pytest

from factories import engine_state, one_error_line
from onechip import api
from onechip.engines import state as engine_state_store
from onechip.schemas.logs import SummarizeLogsRequest
from onechip.vllm import log_summary

DATA = Path(__file__).parents[2] / "data"
REFUSED = DATA / "vllm_cpu_0.32_smollm2_nullblock_refused_boot.log"
BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
STARTED = DATA / "vllm_cpu_0.32_smollm2_autofit_boot.log"


def test_a_log_file_is_summarized_with_its_verdict(run) -> None:
    # was 'Got unexpected extra argument': the CLI printed only the log of the engine `up` started
    code, out, _ = run("logs", str(REFUSED))
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"{REFUSED}: 169 lines"  # as `wc -l` counts it: its tqdm bars' CRs end none
    assert lines[1].startswith(
        "did not start: the KV pool (0.12 GiB) holds less than one --max-model-len request: lower --max-model-len to "
        "at most 2816 (the engine's estimate of what fits)"
    )
    assert "; max_model_len 2,944;" in lines[1] and "; vLLM 0.32.0;" in lines[1]
    assert any(line.split()[:2] == ["167", "error"] for line in lines)  # the exception line (`grep -n`'s), never cut
    code, out, _ = run("logs", str(STARTED))
    assert code == 0 and out.splitlines()[1].startswith("started: max_model_len 2,816; KV cache 2,944 tokens")


def test_json_is_what_summarize_logs_returns(run) -> None:
    code, out, _ = run("logs", str(STARTED), "--json", "--max-lines", "10")
    assert code == 0
    assert json.loads(out) == api.summarize_logs(SummarizeLogsRequest(path=STARTED, max_lines=10)).model_dump(
        mode="json"
    )
    assert json.loads(out)["boot"]["outcome"] == "started"


def test_the_running_engines_log_is_printed_or_summarized(run, tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text(REFUSED.read_text())
    engine_state_store.save(engine_state(log_path=str(log)))
    code, out, _ = run("logs")
    assert code == 0 and out == REFUSED.read_text()  # as before: the log itself, line by line
    code, out, _ = run("logs", "--summary")
    assert code == 0 and out.splitlines()[1].startswith("did not start: the KV pool (0.12 GiB)")


@pytest.mark.parametrize(
    ("record", "source"),
    [
        (
            {
                "mode": "remote-process",
                "host": "u@gpu1",
                "remote_pid": 4242,
                "remote_log": "~/.onechip/engine/engine.log",
            },
            "u@gpu1:~/.onechip/engine/engine.log",
        ),  # fmt: skip
        ({"mode": "docker", "host": "u@gpu1", "container": "onechip-vllm"}, "container onechip-vllm on u@gpu1"),
        ({"mode": "docker", "container": "onechip-vllm"}, "container onechip-vllm"),
    ],
)
def test_the_summary_of_an_engine_on_a_host_names_the_log_it_read(run, tmp_path, monkeypatch, record, source) -> None:
    # was '/nonexistent/engine.log: 172 lines', the local mirror's path (state.log_path), where the lines summarized
    # were read by ssh / docker from the host (state._host_log_lines: remote.logs_command)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for program in ("ssh", "docker"):  # each prints the engine's log, as `tail` / `docker logs` on the host would
        (bin_dir / program).write_text(f"#!/bin/sh\ncat {REFUSED}\n")
        (bin_dir / program).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    # the record goes in the test's home: it went in the default one (~/.cache/onechip/engine.json), over a real
    # engine's record, and stayed there after the test
    assert engine_state_store.state_path().is_relative_to(tmp_path), engine_state_store.state_path()
    engine_state_store.save(engine_state(engine="vllm@ssh" if "host" in record else "vllm-docker", **record))
    code, out, _ = run("logs", "--summary")
    verdict = run("logs", str(REFUSED))[1].splitlines()[1]  # the same log's verdict, read from its file
    # 169 lines: ssh's and docker's output is split at newlines only, where a file read here also splits at the 35
    # lone carriage returns of its progress bars (172 lines, `logs FILE`); `wc -l` counts 169
    assert code == 0 and out.splitlines()[:2] == [f"{source}: 169 lines", verdict]


def test_bad_files_are_one_line_errors(run, tmp_path: Path) -> None:
    binary = tmp_path / "core.bin"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(64))
    assert one_error_line(run, "logs", str(tmp_path / "none.log")) == (
        f"{tmp_path / 'none.log'}: cannot read: No such file or directory"
    )
    assert one_error_line(run, "logs", str(tmp_path)) == f"{tmp_path}: cannot read: not a regular file"
    assert one_error_line(run, "logs", str(binary)) == (
        f"{binary}: not a text log (a NUL byte in its first 8,192 bytes)"
    )
    assert one_error_line(run, "logs", str(STARTED), "--follow").startswith(
        "--follow and --replica print the running engine's log; a summary"
    )


def test_a_log_past_the_bound_is_summarized_saying_it_has_no_verdict(run, tmp_path: Path, monkeypatch) -> None:
    from onechip.vllm import log_summary

    monkeypatch.setattr(log_summary, "MAX_BOOT_LOG_CHARS", 1 << 12)  # the bound, made small enough to write here
    log = tmp_path / "server.log"
    # lines the verdict reads (log_summary._BootText): a crash's frames, no INFO line a server logs while it runs
    log.write_text('  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 1, in run\n' * 200)
    code, out, _ = run("logs", str(log))
    assert code == 0 and out.splitlines()[1].startswith("no verdict: more than ")


def test_a_log_piped_in_is_summarized_and_a_binary_one_refused(run, monkeypatch) -> None:
    # `onechip logs -`: was "-: cannot read: No such file or directory"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(REFUSED.read_bytes())))
    code, out, _ = run("logs", "-")
    assert code == 0 and out.splitlines()[0] == "-: 169 lines"
    assert out.splitlines()[1].startswith("did not start: the KV pool (0.12 GiB) holds less than one --max-model-len")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"\x7fELF\x02\x01\x01\x00" + bytes(64))))
    assert one_error_line(run, "logs", "-") == "-: not a text log (a NUL byte in its first 8,192 bytes)"


class _Terminal(io.TextIOWrapper):
    """A stdin that is a terminal: `onechip logs -` typed with nothing piped in."""

    def isatty(self) -> bool:
        return True


def test_logs_dash_with_nothing_piped_in_is_one_line(run, monkeypatch) -> None:
    # closed stdin (`onechip logs - <&-`, a service with no stdin) said 'internal error (AttributeError: 'NoneType'
    # object has no attribute 'buffer'); please report it', and at a terminal it waited, silent, for a paste
    monkeypatch.setattr("sys.stdin", None)
    assert one_error_line(run, "logs", "-").startswith("-: nothing piped in (standard input is closed): pipe a log in")
    monkeypatch.setattr("sys.stdin", _Terminal(io.BytesIO(REFUSED.read_bytes())))
    said = one_error_line(run, "logs", "-")
    assert said.startswith("-: nothing piped in (standard input is a terminal): pipe a log in") and "FILE" in said


def test_a_utf16_log_windows_powershell_wrote_is_read_as_its_text(run, tmp_path: Path) -> None:
    # Windows PowerShell 5.1's '>' and Out-File write UTF-16 LE with a byte-order mark and CRLF line ends (their default
    # encoding 'Unicode', Microsoft's about_Character_Encoding): `docker logs vllm > vllm.log` there was refused as
    # 'not a text log (a NUL byte ...)'; it reads as the same log written as UTF-8
    text = REFUSED.read_bytes().decode("utf-8").replace("\n", "\r\n")  # its tqdm bars' lone CRs kept
    for encoding in ("utf-16-le", "utf-16-be"):  # each behind its byte-order mark, FF FE and FE FF
        log = tmp_path / f"{encoding}.log"
        log.write_bytes(("\ufeff" + text).encode(encoding))
        assert log_summary.ends_in_newline(log)  # its last line whole, as the UTF-8 file's: "\n" in two bytes
        assert run("logs", str(log))[1].splitlines()[1:] == run("logs", str(REFUSED))[1].splitlines()[1:]


def test_a_utf32_log_is_read_as_its_text(run, tmp_path: Path) -> None:
    # UTF-32 LE opens with FF FE 00 00 (PowerShell's 'Out-File -Encoding utf32'), whose first two bytes are UTF-16 LE's
    # mark: read as UTF-16 every character came with a U+0000 after it (summarized with no verdict, then refused as a
    # NUL character); its own mark, read before UTF-16's (textcodec), reads it as the same log written as UTF-8
    for encoding in ("utf-32-le", "utf-32-be"):  # each behind its byte-order mark, FF FE 00 00 and 00 00 FE FF
        log = tmp_path / f"{encoding}.log"
        log.write_bytes(("\ufeff" + REFUSED.read_bytes().decode("utf-8")).encode(encoding))
        assert log_summary.ends_in_newline(log)  # "\n" in four bytes
        assert run("logs", str(log))[1].splitlines()[1:] == run("logs", str(REFUSED))[1].splitlines()[1:]


def test_a_utf16_log_without_its_mark_is_read_as_its_text(run, tmp_path: Path) -> None:
    # UTF-16 written without a byte-order mark (a .NET StreamWriter's bytes without its preamble, a tool that strips
    # it) was refused as 'not a text log (a NUL byte ...)'; its NUL bytes, one in each Latin character's high byte,
    # tell it and its byte order (chardet's UTF1632Prober rule, textcodec) as they tell `file`: a real corpus log
    # reads as its UTF-8 file
    plain = BOOTLOGS / "h100x5-qwen3-14b-tp5-refused-v0190.log"
    for encoding in ("utf-16-le", "utf-16-be"):
        log = tmp_path / f"{encoding}.log"
        log.write_bytes(plain.read_text(encoding="utf-8").replace("\n", "\r\n").encode(encoding))
        assert log_summary.ends_in_newline(log)
        assert run("logs", str(log))[1].splitlines()[1:] == run("logs", str(plain))[1].splitlines()[1:]


def test_a_compressed_log_is_refused_in_one_line_naming_how_to_read_it(run, tmp_path: Path) -> None:
    # a rotated log ('vllm.log.1.gz', docker's json-file driver with compress=true, logrotate's compress) was refused
    # as 'a NUL byte': the file's magic number (gzip RFC 1952: 1f 8b) names what it is and the tool that prints it
    log = tmp_path / "vllm.log.1.gz"
    log.write_bytes(gzip.compress(REFUSED.read_bytes()))
    assert one_error_line(run, "logs", str(log)) == f"{log}: gzip-compressed, not a text log: give its text (zcat)"


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n\r\n", "   "])
def test_an_empty_or_blank_log_is_one_line_saying_so(run, tmp_path: Path, monkeypatch, text: str) -> None:
    # was exit 0 and 'no verdict: the log ends before the engine said it was ready or why it did not start', as if a
    # boot had been cut short: an empty file (a redirect that caught nothing, a paste that did not take) holds no log
    log = tmp_path / "server.log"
    log.write_text(text)
    assert one_error_line(run, "logs", str(log)) == f"{log}: empty, no log lines in it: give the engine's log"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert one_error_line(run, "logs", "-") == "-: empty, no log lines in it: give the engine's log"
    line = one_error_line(run, "plan", "SmolLM2-135M-Instruct", "--chip", "h200", "--against", str(log))
    assert line == f"--against {log}: empty, no log lines in it: give the engine's log"
