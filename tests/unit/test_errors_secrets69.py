"""What redaction still did wrong (helper safety69, 2026-12-07): a bearer header's redaction ate the ';' or ',' after
the key ('Authorization: Bearer K; x' read 'Authorization: Bearer *** x'), and a count under a key named as a secret
('api_key_count: 1234567') was hidden as one. The boot-log fixtures guard against over-masking: every redactor leaves
each of their lines as it is, but the few named below."""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import through_host_filter
from onechip.errors import lines_redactor, redact, redactor

BOOTLOGS = Path(__file__).parents[1] / "fixtures" / "bootlogs"


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ("Authorization: Bearer abcdef123456xyz; retrying", "Authorization: Bearer ***; retrying"),
        ("Authorization: Bearer abcdef123456xyz, then 401", "Authorization: Bearer ***, then 401"),
        ("(Authorization: Basic dXNlcjpwYXNzd29yZA==).", "(Authorization: Basic ***)."),
        ("authorization: token t0k3n-abc;", "authorization: token ***;"),
        # a ';' or ',' inside the value is the value's: hidden with it
        ("Authorization: Bearer abc;def,ghi done", "Authorization: Bearer *** done"),
        ("{'Authorization': 'Bearer eyJhbGciOi.abc'}", "{'Authorization': 'Bearer ***'}"),
    ],
)
def test_a_bearer_header_keeps_the_punctuation_after_its_key(line: str, shown: str) -> None:
    assert redact(line) == shown


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        # a number under a key whose last word says it is one (a count, a size, a length, bytes, tokens)
        ("api_key_count: 1234567", "api_key_count: 1234567"),
        ('{"secret_size": 1048576, "password_len": 123456}', '{"secret_size": 1048576, "password_len": 123456}'),
        (
            "Namespace(credential_bytes=4194304, private_key_tokens=131072)",
            "Namespace(credential_bytes=4194304, private_key_tokens=131072)",
        ),  # fmt: skip
        ("API_KEY_COUNT=1234567 done", "API_KEY_COUNT=1234567 done"),
        # a number under a key named as a secret by its last word is still one
        ("password: 12345678", "password: ***"),
        ('{"api_key": 123456789012345}', '{"api_key": "***"}'),
        ("API_KEY=1234567 done", "API_KEY=*** done"),
        # a word under a count-named key is no number: hidden as before
        ("API_KEY_COUNT=abc123def done", "API_KEY_COUNT=*** done"),
        ("kv_bytes_per_token: 131072", "kv_bytes_per_token: 131072"),
    ],
)
def test_a_count_under_a_key_named_as_a_secret_is_shown(line: str, shown: str) -> None:
    assert redact(line) == shown


def test_the_host_filter_agrees(tmp_path: Path) -> None:
    lines = [
        "Authorization: Bearer abcdef123456xyz; retrying",
        "(Authorization: Basic dXNlcjpwYXNzd29yZA==).",
        "api_key_count: 1234567 and password: 12345678",
        '{"secret_size": 1048576, "api_key": 123456789012345}',
        "API_KEY_COUNT=1234567 API_KEY=7654321",
    ]
    scrub = redactor()
    assert through_host_filter(tmp_path, "\n".join(lines) + "\n", {}).splitlines() == [scrub(line) for line in lines]


# The fixtures' lines every redactor changes, each with why: a secret, or a known over-mask
CHANGED = {
    # 'api_key': [...] of vLLM's 'non-default args' dict: the values given to --api-key
    "gpu-arm64-qwen36-27b-nvfp4-mtp2-kvfp8-len262144-util070-v0231dev531.log": 1,
    "gpu-qwen36-35b-a3b-prismaquant-mtp3-len200000-util085-v0220.log": 1,
    "rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110.log": 1,
    # 'hf_overrides': hf_ and 8 letters, errors' hf_ shape (over-masking, documented at _SECRET_PATTERNS)
    "gpu120g-qwen38-27b-len786432-util092-v0271-grep-n.log": 1,
    # '--max-num-batched-token 16384': an option whose name ends in TOKEN (over-masking: its value is a count)
    "h20-qwen35-27b-len32768-dummy-v0190.log": 1,
}


def test_the_boot_log_fixtures_read_as_they_are_but_the_named_lines(tmp_path: Path) -> None:
    changed: dict[str, int] = {}
    scrub = redactor()
    for path in sorted(BOOTLOGS.glob("*.log")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        one = [scrub(line) for line in lines]
        in_order = lines_redactor()
        assert [in_order(line) for line in lines] == one, path.name
        assert list(lines_redactor().each(lines)) == one, path.name  # each line with the next (a wrap's first part)
        if count := sum(a != b for a, b in zip(lines, one, strict=True)):
            changed[path.name] = count
    assert changed == CHANGED
