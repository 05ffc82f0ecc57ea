"""What redact still showed (helper safety68, 2026-12-07): a number after a key named as a secret ('"api_key":
123456789012345', 'password: 12345678'), a header as httpx/httpcore and h11 write one, a tuple of bytes
("(b'authorization', b'Bearer K')"), and Google's 'AQ.' API keys (AI Studio issues only these now:
discuss.ai.google.dev/t/account-only-generates-aq-prefix-api-keys-aiza-keys-not-available-in-any-project/170415,
'AI Studio will now only generate Authentication Key (AQ) keys'). What it must keep showing: KV figures, a 40-hex
commit in a model id, block counts; a count under a name that ends in TOKEN ('kv_bytes_per_token: 131072')."""

from __future__ import annotations

import json

import pytest

from onechip.errors import looks_secret, redact

# an 'AQ.' key as AI Studio prints one: 'AQ.' and 50 of [A-Za-z0-9_-] (the keys published by mistake in public
# repositories all read so, 'AQ.Ab8RN6' and 44 more); this one is made up
COMMIT = "0123456789abcdef" * 2 + "01234567"  # a 40-hex commit, as a model's revision names one
AQ_KEY = "AQ.Ab8RN6" + "Xq1w2E3r4T5y6U7i8O9p0-AsDfGhJkLzXcVbNm_QwErT"


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        ('{"api_key": 123456789012345, "model": "m"}', '{"api_key": "***", "model": "m"}'),
        ("{'api_key': 123456789012345}", "{'api_key': '***'}"),
        ("api_key: 123456789012345", "api_key: ***"),
        ("  password: 12345678  # mine", "  password: ***  # mine"),
        ("args: Namespace(api_key=1234567890, port=8000)", "args: Namespace(api_key=***, port=8000)"),
        ('"client_secret":987654321}', '"client_secret":"***"}'),
        # httpx's request headers as h11/httpcore hold them: a list of byte-string pairs
        (
            "headers=[(b'Host', b'h'), (b'authorization', b'Bearer abcdef123456xyz'), (b'x', b'y')]",
            "headers=[(b'Host', b'h'), (b'authorization', b'Bearer ***'), (b'x', b'y')]",
        ),
        ("[(b'Authorization', b'Basic dXNlcjpwYXNzd29yZA==')]", "[(b'Authorization', b'Basic ***')]"),
        ('[["authorization", "Bearer eyJhbGciOi.abc"]]', '[["authorization", "Bearer ***"]]'),
        (f"key={AQ_KEY} done", "key=*** done"),
        (f"x-goog-api-key {AQ_KEY}", "x-goog-api-key ***"),
    ],
)
def test_hidden(line: str, shown: str) -> None:
    assert redact(line) == shown


def test_a_json_text_stays_json() -> None:
    document = json.dumps({"env": {"api_key": 123456789012345, "hf_token_secret": None, "kv_bytes_per_token": 18432}})
    assert json.loads(redact(document)) == {
        "env": {"api_key": "***", "hf_token_secret": None, "kv_bytes_per_token": 18432}
    }


@pytest.mark.parametrize(
    "line",
    [
        "GPU KV cache size: 321,376 tokens; kv_bytes_per_token: 131072; num_gpu_blocks=10042",
        '{"kv_bytes_per_token": 131072, "max_num_batched_tokens": 8192, "num_gpu_blocks": 123456}',
        f"model=Qwen/Qwen3-8B@{COMMIT} revision={COMMIT}",
        "# GPU blocks: 18744, # CPU blocks: 2048",
        '"secret_version": 3, "api_keys_given": 2',  # short counts under a secret's name: no secret of 6+ digits
        "AQ.short AQ.x",
    ],
)
def test_shown(line: str) -> None:
    assert redact(line) == line


def test_an_aq_key_is_refused_on_a_command_line() -> None:
    assert looks_secret(f"--set x={AQ_KEY}")
