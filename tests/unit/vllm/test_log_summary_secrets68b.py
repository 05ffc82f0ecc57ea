"""log_summary.summarize hides a private key's PEM body printed a line at a time (helper safety68b): its lines are read
through errors.lines_redactor in order, every line of the log, kept or not, so a body line it keeps (an ERROR line, a
traceback's indented line) is hidden as `logs` hides it. It redacted each kept line alone, and such a body line, plain
base64, has no shape of its own: shown whole, in the summary, `logs FILE` and MCP summarize_logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.vllm.log_summary import summarize

BODY = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "VEVTVEtFWUJPRFlTRUNPTkRMSU5FMTIzNDU2Nzg5MGFiY2Rl")

# a logger that writes each line of a key at ERROR (vLLM's prefix), and a traceback whose message holds one indented
LOGGER = "ERROR 12-07 13:00:01 [auth.py:42] "
LOGGED = [
    "INFO 12-07 13:00:00 [loader.py:10] loading credentials",
    f"{LOGGER}-----BEGIN PRIVATE KEY-----",
    *(LOGGER + line for line in BODY),
    f"{LOGGER}-----END PRIVATE KEY-----",
    "INFO 12-07 13:00:02 [api_server.py:1] Application startup complete.",
]
TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/app/auth.py", line 42, in load',
    "ValueError: not a key:",
    "    -----BEGIN RSA PRIVATE KEY-----",
    *(f"    {line}" for line in BODY),
    "    -----END RSA PRIVATE KEY-----",
]


@pytest.mark.parametrize("lines", [LOGGED, TRACEBACK], ids=["error-lines", "traceback"])
def test_a_pem_body_printed_line_by_line_is_not_in_the_summary(lines: list[str]) -> None:
    summary = summarize("\n".join(lines) + "\n", "engine.log")
    shown = "\n".join(line.text for line in summary.lines)
    assert not [part for part in BODY if part in shown], shown
    assert "PRIVATE KEY-----" in shown and shown.count("***") >= len(BODY)  # the block's labels say what was there


def test_a_pem_body_is_hidden_in_logs_file_summary(run, tmp_path: Path) -> None:
    log = tmp_path / "engine.log"
    log.write_text("\n".join(LOGGED + TRACEBACK) + "\n")
    code, out, err = run("logs", str(log), "--json")
    assert code == 0, err
    assert not [part for part in BODY if part in out + err]


def test_the_lines_a_summary_keeps_read_as_before_where_no_secret_is() -> None:
    # the same text and numbers for a log without a secret (the bootlogs fixtures: the README's table)
    lines = ["INFO a", "WARNING 12-07 [x.py:1] the tokenizer has no chat template", "ERROR boom: token count 123456"]
    assert [line.text for line in summarize("\n".join(lines), "l").lines] == lines[1:]
