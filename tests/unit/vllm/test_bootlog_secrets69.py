"""read_boot_log (`plan --against LOG`, a boot record's warnings, errors and events) hides a private key's PEM body
printed a line at a time (helper safety69, 2026-12-07): it redacted each kept line alone (errors.redactor), and a body
line, plain base64 behind a logger's prefix, has no shape of its own: kept whole in the record's errors. Its lines are
read through errors.lines_redactor in order now, kept or not, as `logs` and log_summary read them."""

from __future__ import annotations

from onechip.vllm.bootlog import read_boot_log

BODY = ("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7", "VEVTVEtFWUJPRFlTRUNPTkRMSU5FMTIzNDU2Nzg5MGFiY2Rl")
LOGGER = "ERROR 12-07 13:00:01 [auth.py:42] "
LINES = [
    "INFO 12-07 13:00:00 [loader.py:10] loading credentials",
    f"{LOGGER}-----BEGIN PRIVATE KEY-----",
    *(LOGGER + line for line in BODY),
    f"{LOGGER}-----END PRIVATE KEY-----",
    "WARNING 12-07 13:00:02 [api_server.py:1] the tokenizer has no chat template",
]


def test_a_pem_body_printed_line_by_line_is_not_in_the_boot_record() -> None:
    record = read_boot_log("\n".join(LINES) + "\n", "vllm", "m")
    kept = "\n".join([*record.errors, *record.warnings, *(event.line for event in record.events)])
    assert not [part for part in BODY if part in kept], kept
    assert record.errors == [f"{LOGGER}-----BEGIN PRIVATE KEY-----", f"{LOGGER}***", f"{LOGGER}***", LINES[4]]
    assert record.warnings == [LINES[5]]
