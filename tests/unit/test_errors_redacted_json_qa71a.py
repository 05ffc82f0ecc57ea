"""errors.redacted_json keeps a document JSON, with its keys, whatever text its strings hold (helper qa71a,
2026-12-07). The whole document's text went through `redact`, whose rules end a value left unclosed at its line's end:
compact JSON has none, so a quote that never closed inside one string ('api_key': 'K), a PEM block already cut to
'-----BEGIN PRIVATE KEY-----***', or 'token=[1' took every field after it, and a list under a key named as a secret
read [***]: json.loads raised and `plan --json` printed 'internal error (JSONDecodeError ...)' instead of its plan (the
same for every --json command and MCP tool)."""

from __future__ import annotations

import json

import pytest

from onechip.errors import redacted_json

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # GitHub's shape, made up (errors._GH_TOKEN)

# each a string that broke the document, and what a string of the same text shows redacted alone (errors.redact)
BROKE = [
    ("server said 'api_key': 'abc123xyz", "server said 'api_key': '***"),
    ("Namespace(api_key='abc123xyz", "Namespace(api_key='***"),
    ("-----BEGIN PRIVATE KEY-----***", "-----BEGIN PRIVATE KEY-----***"),
    ("-----BEGIN PRIVATE KEY-----\nMIIEabc", "-----BEGIN PRIVATE KEY-----***"),
    ("token=['abc123xyz', 2", "token=[***"),
    (
        "token=[1, 2",
        "token=[1, 2",
    ),  # a list of numbers in a text with no quote: redact shows it (_ASSIGNED_VALUE's guard)
    ('vllm serve --api-key "abc def" --port 1', "vllm serve --api-key *** --port 1"),
]


@pytest.mark.parametrize(("said", "shown"), BROKE)
def test_a_string_that_never_closes_keeps_the_document(said: str, shown: str) -> None:
    document = {"error": said, "model": "google/gemma-4-E2B-it", "note": f"by {TOKEN}", "exit_code": 7}
    assert redacted_json(json.dumps(document)) == {
        "error": shown,
        "model": "google/gemma-4-E2B-it",
        "note": "by ***",
        "exit_code": 7,
    }


def test_a_list_under_a_secret_key_stays_a_list() -> None:
    document = [{"api_keys": ["abc123xyz", "def456uvw"], "credentials": [{"user": "u"}], "kv_cache_tokens": 321376}]
    assert redacted_json(json.dumps(document)) == [
        {"api_keys": ["***", "***"], "credentials": [{"user": "u"}], "kv_cache_tokens": 321376}
    ]


def test_an_argv_list_hides_its_secret_option_value_beside_a_broken_string() -> None:
    document = {
        "command": ["vllm", "serve", "--api-key", "opaque-value", "--port", "8000"],
        "error": "x 'hf_token': 'abc",
        "api_key": "opaque-two",
        "hf_token_secret": None,
        "password_hash_count": 1234567,
        "api_key_number": 12345678,
    }
    assert redacted_json(json.dumps(document)) == {
        "command": ["vllm", "serve", "--api-key", "***", "--port", "8000"],
        "error": "x 'hf_token': '***",
        "api_key": "***",
        "hf_token_secret": None,
        "password_hash_count": 1234567,
        "api_key_number": "***",
    }
