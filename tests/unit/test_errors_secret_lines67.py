"""What redact still showed (helper secrets67, 2026-12-07): a header or YAML line whose key names a secret
(`X-Api-Key: K`, `hf_token: K`), GitHub's `Authorization: token K`, shapes it did not know (a Google API key, GitHub's
tokens, an AWS temporary key id), the ']' after a value in argparse's brackets (`[--hf-token T]`), and a quoted value
left unclosed, hidden into the next line by the local writer (onechip.logpump redacts the lines of one read together).
serve.sh's filter redacts each line as redact does (tests/unit/engines/test_host_log_filter_agrees66.py)."""

from __future__ import annotations

import pytest

from onechip.errors import looks_secret, redact

GOOGLE_KEY = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K_L-M1n2O3p4Q"  # 'AIza' and 35 of [0-9A-Za-z_-]
GITHUB = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"  # 'ghp_' and 36 of [A-Za-z0-9]
FINE_GRAINED = "github_pat_" + "11ABCDEFG0123456789abc_" + "d" * 59


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (f"key={GOOGLE_KEY} failed", "key=*** failed"),
        (f"clone with {GITHUB} now", "clone with *** now"),
        (f"GH {FINE_GRAINED}", "GH ***"),
        ("ghs_" + "A" * 36 + " gho_" + "b" * 36 + " ghu_" + "c" * 36 + " ghr_" + "d" * 36, "*** *** *** ***"),
        ("aws ASIAABCDEFGHIJKLMNOP", "aws ***"),
        ("anthropic sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "anthropic ***"),
        # GitHub's own scheme (docs.github.com REST, 'Authenticating to the REST API': 'token' or 'Bearer')
        ("Authorization: token abcdef123456", "Authorization: token ***"),
        ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic ***"),
    ],
)
def test_a_secret_s_shape_is_hidden(line: str, shown: str) -> None:
    assert redact(line) == shown


def test_a_shape_too_short_to_be_one_stays() -> None:
    assert redact("AIzaShort ghp_short github_pat_x ASIA") == "AIzaShort ghp_short github_pat_x ASIA"


def test_a_new_shape_is_refused_on_a_command_line_too() -> None:
    assert looks_secret(f"--set x={GOOGLE_KEY}") and looks_secret(f"--set x={GITHUB}")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a quoted value left unclosed ends at its line's end, as serve.sh's filter (a line at a time) ends it: the
        # local writer redacts the lines of one read together (logpump), and hid the next line with it
        ("x 'api_key': 'abc\nnext line shown", "x 'api_key': '***\nnext line shown"),
        ('{"api_key": "abc\nnext line shown', '{"api_key": "***\nnext line shown'),
        ('"{\\"api_key\\": \\"abc\nnext line shown', '"{\\"api_key\\": \\"***\nnext line shown'),
        ("'api_key': ['k1', 'abc\nnext line ] shown", "'api_key': [***\nnext line ] shown"),
        ("--api-key 'abc\nnext line shown", "--api-key ***\nnext line shown"),
        ('--hf-token "abc\nnext line shown', "--hf-token ***\nnext line shown"),
        ("api_key='abc\rnext line shown", "api_key='***\rnext line shown"),
        ('hf_token="abc\nnext line shown', 'hf_token="***\nnext line shown'),
        ("['--api-key', 'k1', 'abc\nnext line', 'shown']", "['--api-key', '***', 'abc\nnext line', 'shown']"),
        # a list written over lines (an indented JSON) is one value still: its items are each on a line
        ('"api_key": [\n  "k1",\n  "k2"\n]', '"api_key": [***]'),
        ('"command": [\n  "--api-key",\n  "k1"\n]', '"command": [\n  "--api-key",\n  "***"\n]'),
    ],
)
def test_an_unclosed_quoted_value_ends_at_its_line_s_end(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        # argparse's usage brackets: the ']' that closes an option's group is the text's, '[--port' the next option
        ("usage: [--hf-token T] [--port P]", "usage: [--hf-token ***] [--port P]"),
        ("usage: [--hf-token T]", "usage: [--hf-token ***]"),
        ("usage: [--seed-token=S]] done", "usage: [--seed-token=***]] done"),
        ("usage: [--api-key K1 K2] [--port P]", "usage: [--api-key *** ***] [--port P]"),
        (
            "usage: vllm serve [--api-key API_KEY [API_KEY ...]] [--hf-token [HF_TOKEN]] [--seed-token SEED_TOKEN]",
            "usage: vllm serve [--api-key API_KEY [API_KEY ...]] [--hf-token [HF_TOKEN]] [--seed-token SEED_TOKEN]",
        ),
        # a value with brackets of its own is a value whole
        ("--hf-token a[b]", "--hf-token ***"),
        ("--hf-token ]", "--hf-token ***"),
    ],
)
def test_the_bracket_after_an_option_s_value_is_shown(line: str, shown: str) -> None:
    assert redact(line) == shown


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        # a header line, as an HTTP dump and `curl -v` write it ('> ' sent, '< ' received), a header in curl's -H
        ("X-Api-Key: abcdef123456", "X-Api-Key: ***"),
        ("> x-goog-api-key: k3y", "> x-goog-api-key: ***"),
        (
            "curl -H 'X-Api-Key: abcdef123456' http://h:8000/v1/models",
            "curl -H 'X-Api-Key: ***' http://h:8000/v1/models",
        ),
        # a YAML mapping's or an .env file's line, a YAML list's item, its value quoted or not, a comment after it
        ("api-key: abcdef123456", "api-key: ***"),
        ('  api_key: "abc def"', '  api_key: "***"'),
        ("hf_token: hf-no-shape  # mine", "hf_token: ***  # mine"),
        ("- password: 'p@ss'", "- password: '***'"),
        ("seed_token = k3y", "seed_token = ***"),
        ("a: 1\nhf_token: t0k\nb: 2", "a: 1\nhf_token: ***\nb: 2"),
        ("a: 1\r\n  client_secret: s3\r\n", "a: 1\r\n  client_secret: ***\r\n"),
    ],
)
def test_a_line_whose_key_names_a_secret_hides_its_one_value(text: str, shown: str) -> None:
    assert redact(text) == shown


@pytest.mark.parametrize(
    "line",
    [
        # prose: several words after the key, a sentence (onechip's own words: test_errors_own_words66)
        "api-key: not given",
        "hf_token: read from the environment (HF_TOKEN)",
        "X-Api-Key: set it with --api-key",
        "token: none given; the hub was not asked",
        "curl -H 'X-Api-Key: not given' http://h",
        # a key that names no secret or a path, a key inside a sentence
        "max_tokens: 64",
        "eos_token_id: 2",
        "hf_token_file: /home/u/.hf",
        "the api_key: abc was refused",
    ],
)
def test_prose_after_a_secret_key_and_keys_of_no_secret_stay(line: str) -> None:
    assert redact(line) == line


def test_the_stop_after_a_keyed_value_is_the_text_s() -> None:
    assert redact("token: abc.def.") == "token: ***."


def test_an_indented_json_and_a_count_keyed_by_token_stay() -> None:
    # report.json is redacted whole, indented: a quoted key's number or null on a line of its own is JSON's
    text = '{\n  "kv_bytes_per_token": 18432,\n  "hf_token_secret": null,\n  "api_key": "k"\n}'
    assert redact(text) == '{\n  "kv_bytes_per_token": 18432,\n  "hf_token_secret": null,\n  "api_key": "***"\n}'
    assert redact("kv_bytes_per_token: 18432") == "kv_bytes_per_token: 18432"
    assert redact("  hf_token: 1234abc") == "  hf_token: ***"


def test_a_carriage_return_ends_a_keyed_line_as_a_newline_does() -> None:
    # serve.sh's filter makes each '\r' a line end (tr); the local writer redacts the lines of one read, '\r' ended too
    assert redact("10%\rX-Api-Key: k3y\r20%") == "10%\rX-Api-Key: ***\r20%"
