"""One rule says which names hold a secret (errors.SECRET_NAME, helper twins65, 2026-12-07): an environment variable's
value redacted from every line onechip writes (an error, a report, a log: errors.redact, and serve.sh's bash filter of
a host engine's log, engines.remote), `NAME=value` in a text and a JSON key's value redacted, and a `--set` refused
(vllm.flag_table: never on a command line). There were two: a substring rule for the environment and the bash filter,
which took vLLM's token-count variables for secrets, and a word rule for --set and JSON keys, which let 'DBPASSWORD'
or 'HFTOKEN' through; and a third spelling for `NAME=value`. Each name either caught a secret in is caught by all."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from onechip import errors
from onechip.engines import remote
from onechip.errors import ConfigError
from onechip.vllm.flag_table import parse_sets

VALUE = "s3cr3t-v4lue-65"  # no shape of its own: only its name says it is a secret
COUNT = "131072"  # a token count as vLLM's tuning variables hold one (6 characters: errors.MIN_SECRET_CHARS)

# the names the environment's substring rule (TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|APIKEY|ACCESS_KEY|CREDENTIAL|
# PRIVATE_KEY) or --set's word rule caught, at least one of them; the first five the brief's own
NAMED = [
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "OPENAI_API_KEY",
    "VLLM_API_KEY",
    "GITHUB_TOKEN",
    "AWS_SECRET_ACCESS_KEY",
    "DB_PASSWORD",
    "DB_PASSWD",
    "HFTOKEN",  # the substring rule's alone
    "DBPASSWORD",
    "CLIENT_SECRETS",
    "DB_PASSWORD_HASH",  # --set's alone before: `NAME=value` in a text took a name that ends in the word
    "MY_PRIVATEKEY",  # the word rule's alone
    "AWS_ACCESSKEY",
    "GCP_CREDENTIAL",
    "GITHUB_TOKEN_2",  # a numbered second token (the substring rule's alone): TOKEN ends the name but for its number
    "HF_TOKEN2",
    "AUTH_TOKEN_V2",  # TOKEN before a version (secrets65): the end-of-name rule missed it
    "SESSION_TOKEN_ENC",  # TOKEN before its encoding (encrypted; base64, hex as well)
    "API_TOKEN_B64",
]
# vLLM's own variables that count tokens (vllm/envs.py, 0.34.0) and Hugging Face tokenizers' switch: no secret, their
# values shown as they are (the substring rule redacted a count of 6 digits from every line where the number stood)
COUNTS = [
    "TOKENIZERS_PARALLELISM",
    "VLLM_MULTI_STREAM_GEMM_TOKEN_THRESHOLD",
    "VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD",
    "VLLM_MAX_TOKENS_PER_BATCH",
    # vLLM's names with TOKEN before a short word (vllm/, 0.34.0: eos_token_id, token_idx, token_len, token_mask): a
    # rule taking any short suffix after TOKEN would redact a model's token ids from every log
    "EOS_TOKEN_ID",
    "START_TOKEN_IDX",
    "TARGET_TOKEN_LEN",
]


def _bash_filtered(tmp_path: Path, env: dict[str, str], text: str) -> str:
    """`text` through serve.sh's filter (remote.REDACTED_OUTPUT) under bash, `env` its environment."""
    script = tmp_path / "filter.sh"
    script.write_text("\n".join([*remote.REDACTED_OUTPUT, "exec cat"]) + "\n")
    base = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8"}
    done = subprocess.run(  # noqa: S603
        ["bash", str(script)], input=text.encode(), capture_output=True, env={**base, **env}, timeout=30, check=True
    )
    return done.stdout.decode()


@pytest.mark.parametrize("name", NAMED)
def test_a_name_either_rule_caught_is_a_secret_everywhere(name, monkeypatch, tmp_path) -> None:
    assert errors.secret_named(name) and errors.secret_named(name.lower())
    monkeypatch.setenv(name, VALUE)
    assert errors.redact(f"boom: {VALUE} was refused") == "boom: *** was refused"  # an exception, a report
    assert _bash_filtered(tmp_path, {name: VALUE}, f"engine: {VALUE}\n") == "engine: ***\n"  # a host engine's log
    monkeypatch.delenv(name)
    assert errors.redact(f"env: {name}={VALUE} done") == f"env: {name}=*** done"  # an environment dump
    assert VALUE not in errors.redact(json.dumps({name.lower(): VALUE}))  # a JSON key
    with pytest.raises(ConfigError) as info:  # a command line
        parse_sets([f"{name}={VALUE}"])
    assert VALUE not in str(info.value)


@pytest.mark.parametrize("name", COUNTS)
def test_a_variable_that_counts_tokens_is_no_secret_anywhere(name, monkeypatch, tmp_path) -> None:
    assert not errors.secret_named(name)
    monkeypatch.setenv(name, COUNT)
    assert errors.redact(f"max {COUNT} tokens") == f"max {COUNT} tokens"
    assert _bash_filtered(tmp_path, {name: COUNT}, f"max {COUNT} tokens\n") == f"max {COUNT} tokens\n"
    assert errors.redact(f"env: {name}={COUNT}") == f"env: {name}={COUNT}"
    assert [o.value for o in parse_sets([f"{name}={COUNT}"])] == [COUNT]


def test_the_credentials_file_s_path_is_shown_and_anything_else_in_it_is_not(monkeypatch, tmp_path) -> None:
    # GOOGLE_APPLICATION_CREDENTIALS holds the key file's path ('the path of the JSON file that contains your
    # credentials': cloud.google.com/docs/authentication/application-default-credentials), which a refusal must show
    name, path = "GOOGLE_APPLICATION_CREDENTIALS", "/var/secrets/google/adc.json"
    monkeypatch.setenv(name, path)
    assert errors.redact(f"{path} was not found") == f"{path} was not found"
    assert _bash_filtered(tmp_path, {name: path}, f"{path}\n") == f"{path}\n"
    assert [o.value for o in parse_sets([f"{name}={path}"])] == [path]
    monkeypatch.setenv(name, VALUE)  # key text put there by mistake is a secret (errors.names_a_path)
    assert errors.redact(f"read {VALUE}") == "read ***"
    assert _bash_filtered(tmp_path, {name: VALUE}, f"{VALUE}\n") == "***\n"
    with pytest.raises(ConfigError):
        parse_sets([f"{name}={VALUE}"])


@pytest.mark.parametrize(
    "text",
    [
        f"Authorization: Bearer {VALUE}",  # the header line
        repr({"Authorization": f"Bearer {VALUE}"}),  # a headers dict's repr
        json.dumps({"api_key": VALUE}),
        repr({"x-goog-api-key": VALUE}),  # the Billing Catalog's key header (cloud.billing)
    ],
)
def test_a_header_or_key_named_as_a_secret_is_redacted(text) -> None:
    assert VALUE not in errors.redact(text) and "***" in errors.redact(text)


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # vLLM's 'non-default args' line (utils.py, 0.11: tests/fixtures/bootlogs
        # rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110 and two more of the corpus) writes --api-key's value as a list
        # (one key or several); the quoted-key rule took a text value only, so every key showed
        (
            "{'host': '0.0.0.0', 'api_key': ['sk123'], 'port': 8000}",
            "{'host': '0.0.0.0', 'api_key': [***], 'port': 8000}",
        ),
        ("{'api_key': ['k1-abc', 'k2]x'], 'x': 1}", "{'api_key': [***], 'x': 1}"),  # several; a ']' inside one
        ('{"hf_token": ["abc-XYZ"]}', '{"hf_token": [***]}'),
        ("{'api_key': ['sk12", "{'api_key': [***"),  # a text cut inside the list
        # not secrets: a list under a key that is none
        ("{'max_tokens': ['64'], 'served_model_name': ['m']}", "{'max_tokens': ['64'], 'served_model_name': ['m']}"),
    ],
)
def test_a_secret_named_list_is_redacted_whole(text: str, redacted: str) -> None:
    assert errors.redact(text) == redacted


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # a serve command line in a log or an error: vLLM's options whose value is a secret (vllm 0.34.0:
        # --api-key, entrypoints/common/cli_args.py; --hf-token, engine/arg_utils.py; --s3-secret-access-key,
        # model_executor/model_loader/tensorizer.py; --seed-token, 'Shared secret', entrypoints/cli/preload.py)
        (f"vllm serve M --api-key {VALUE} --port 8000", "vllm serve M --api-key *** --port 8000"),
        (f"vllm serve M --api-key={VALUE}", "vllm serve M --api-key=***"),
        (f"vllm serve M --hf-token {VALUE}", "vllm serve M --hf-token ***"),
        (f"vllm serve M --api_key {VALUE}", "vllm serve M --api_key ***"),  # vLLM reads '_' as '-'
        (f"--s3-secret-access-key '{VALUE} x' --seed-token \"{VALUE}\"", "--s3-secret-access-key *** --seed-token ***"),
        ("--api-key k1 --port 8000", "--api-key *** --port 8000"),  # short: the option names it a secret
        # not secrets: an option with no value (--hf-token alone: the login's token), a path's option, a count's
        ("vllm serve M --hf-token --port 8000", "vllm serve M --hf-token --port 8000"),
        ("--ssl-keyfile /etc/k.pem --encryption-keyfile k.bin", "--ssl-keyfile /etc/k.pem --encryption-keyfile k.bin"),
        ("--hf-token-file /run/t --hf-token-path=t.txt", "--hf-token-file /run/t --hf-token-path=t.txt"),
        ("--max-tokens 131072 --dbo-decode-token-threshold 32", "--max-tokens 131072 --dbo-decode-token-threshold 32"),
        (
            "--tokenizer meta/Llama --max-num-batched-tokens=8192",
            "--tokenizer meta/Llama --max-num-batched-tokens=8192",
        ),
    ],
)
def test_a_secret_option_s_value_is_redacted(text: str, redacted: str) -> None:
    assert errors.redact(text) == redacted


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # old vLLM logged its args as an argparse Namespace's repr ('args: Namespace(..., api_key=...)')
        (f"Namespace(host=None, api_key='{VALUE}', port=8000)", "Namespace(host=None, api_key='***', port=8000)"),
        (f'Namespace(hf_token="{VALUE}")', 'Namespace(hf_token="***")'),
        ("Namespace(api_key=['k1', 'k2'], port=8000)", "Namespace(api_key=[***], port=8000)"),  # 0.34.0's list
        ("Namespace(api_key='it\\'s-k', x=1)", "Namespace(api_key='***', x=1)"),  # an escaped quote inside
        # shown: no key given, an empty one, a name that holds none
        ("Namespace(api_key=None, hf_token='', port=8000)", "Namespace(api_key=None, hf_token='', port=8000)"),
        ("Namespace(tokenizer='meta/Llama', max_tokens='64')", "Namespace(tokenizer='meta/Llama', max_tokens='64')"),
        ("Namespace(ssl_keyfile='/etc/k.pem')", "Namespace(ssl_keyfile='/etc/k.pem')"),
    ],
)
def test_a_secret_named_argument_s_value_is_redacted(text: str, redacted: str) -> None:
    assert errors.redact(text) == redacted
