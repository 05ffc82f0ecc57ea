"""A private key's PEM body printed a line at a time never reaches an engine log on disk (helper safety68b): the host's
filter (serve.sh's perl, onechip.logfilter) and the local writer (onechip.logpump) read lines in order with the PEM
state errors.LinesRedactor keeps (after a BEGIN line, each body line with its prefix is '***', up to the END line or a
line of another kind), and write what `logs` shows. Each redacted a line alone: the base64 body lines, no shape of their
own, stayed on disk in clear (`logs` hid them only on reading)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from factories import through_host_filter
from onechip.errors import lines_redactor
from onechip.logpump import _Copier

BODY = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "VEVTVEtFWUJPRFlTRUNPTkRMSU5FMTIzNDU2Nzg5MA=="]
PREFIX = "svc-1  | "  # docker compose's
LINES = [
    "INFO 12-07 13:00:00 [loader.py:10] reading the service account",
    # a key file echoed (`cat key.pem`): bare, then behind docker compose's prefix
    "-----BEGIN PRIVATE KEY-----",
    *BODY,
    "-----END PRIVATE KEY----- and after it",
    f"{PREFIX}-----BEGIN RSA PRIVATE KEY-----",
    f"{PREFIX}Proc-Type: 4,ENCRYPTED",  # RFC 1421 headers of an encrypted legacy key
    f"{PREFIX}DEK-Info: AES-128-CBC,0123456789ABCDEF",
    "",  # a CRLF's empty line, as tr and the local writer read a '\r'
    *(PREFIX + line for line in BODY),
    f"{PREFIX}-----END RSA PRIVATE KEY-----",
    # a block cut short: the lines after it are the log's again
    "-----BEGIN EC PRIVATE KEY-----",
    BODY[0],
    "INFO 12-07 13:00:01 [api_server.py:1] Application startup complete.",
    "ABCDEFGHIJKLMNOP",
]
ENV = {"HF_TOKEN": "hf_FAKEtoken0123456789abcdefXYZ"}


def _through_host_filter(tmp_path: Path, text: str) -> str:
    return through_host_filter(tmp_path, text, ENV)


def _through_logpump(text: str, reads: int) -> str:
    """`text` through the local writer, written to its pipe in `reads` pieces (a read ends amid a line too)."""
    source, into = os.pipe()
    out, sink = os.pipe()
    copier = _Copier(source, sink)
    data, step = text.encode(), -(-len(text) // reads)
    for at in range(0, len(data), step):
        os.write(into, data[at : at + step])
        copier.read()
    os.close(into)
    while copier.read():
        pass
    os.close(sink)
    with os.fdopen(out, "rb") as written:
        return written.read().decode()


@pytest.mark.parametrize("reads", [1, 7])
def test_a_pem_body_printed_line_by_line_is_hidden_on_disk_by_both_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reads: int
) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    text = "\n".join(LINES) + "\n"
    shown = "".join(line + "\n" for line in map(lines_redactor(), LINES))  # what `logs` shows
    host, local = _through_host_filter(tmp_path, text), _through_logpump(text, reads)
    assert host == shown and local == shown
    assert not [part for part in BODY if part in host + local]
    assert "-----END PRIVATE KEY----- and after it" in host and "Proc-Type" not in host
    assert host.splitlines()[-2:] == LINES[-2:]  # after a cut block, the log's lines as they were
