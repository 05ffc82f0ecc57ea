"""errors.py: `redact` removes secrets by value (secret env vars) and by shape, wherever it runs."""

from __future__ import annotations

import signal

import pytest

from onechip.errors import exit_codes_line, redact

# Shapes only, not real keys: "hf_" + 34 letters/digits (a Hugging Face user access token) and
# "sk-" / "sk-proj-" + 20+ of [A-Za-z0-9_-] (OpenAI API keys).
HF_TOKEN = "hf_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7bC0eF3h"
SK_KEY = "sk-" + "Ab3_De6-Gh9Jk2Mn5Pq8St1Vw4Yz7"
SK_PROJ = "sk-proj-" + "x" * 20 + "_Y-9" + "z" * 30


@pytest.fixture(autouse=True)
def no_secret_env(monkeypatch):
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "OPENAI_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("secret", [HF_TOKEN, SK_KEY, SK_PROJ])
@pytest.mark.parametrize("template", ["{}", "key={}", "--api-key {}", "'{}'", "token: {}.", "x_{}"])
def test_secret_shapes_are_redacted_without_the_environment(secret, template):
    text = template.format(secret)
    assert redact(text) == template.format("***")


def test_openai_key_in_the_environment_is_still_redacted_by_value(monkeypatch):
    short = "sk-short1"  # below the 20-character shape: only the env var identifies it
    monkeypatch.setenv("OPENAI_API_KEY", short)
    assert redact(f"auth failed for {short}") == "auth failed for ***"


@pytest.mark.parametrize(
    "text",
    [
        "sk-short",  # fewer than 20 characters after "sk-"
        "sk-" + "a" * 19,
        "disk-" + "a" * 30,  # "sk-" inside a longer word is a name, not a key
        "task-0123456789abcdefghijkl",
        "hf_x",  # shorter than any token
        "KV cache size: 46,592 tokens",
    ],
)
def test_ordinary_text_is_kept(text):
    assert redact(text) == text


def test_bearer_header_keeps_its_name():
    assert redact(f"Authorization: Bearer {SK_KEY}") == "Authorization: Bearer ***"
    assert redact("authorization: bearer abc.def") == "authorization: bearer ***"


def test_cli_error_line_is_redacted(capsys):
    # cli/main.py prints every OnechipError through redact: an sk- key pasted into a model name
    from onechip.cli.main import main

    previous = signal.getsignal(signal.SIGTERM)  # main() installs its own handler
    try:
        with pytest.raises(SystemExit) as info:
            main(["plan", f"./{SK_KEY}", "--chip", "cpu"])
    finally:
        signal.signal(signal.SIGTERM, previous)
    err = capsys.readouterr().err
    assert info.value.code == 2 and SK_KEY not in err and "***" in err


@pytest.mark.parametrize(
    ("text", "redacted"),
    [("http://h:9/?token=S3cr3t; nothing to compare", "http://h:9/?token=***; nothing to compare"),
     ("(http://h:9/?a=1&api_key=S3cr3t), then", "(http://h:9/?a=1&api_key=***), then"),
     ("at http://h:9/?sig=S3cr3t.", "at http://h:9/?sig=***."),
     ("http://h:9/?token=S3c;r3t&x=1", "http://h:9/?token=***&x=1")],
)  # fmt: skip
def test_a_secret_query_value_is_redacted_and_the_text_after_it_kept(text, redacted):
    # was 'token=*** nothing to compare': the value ran to the next space, the note's '; ' separator with it
    assert redact(text) == redacted


# A variable that says where a secret is kept holds a path, which a message about it must show: 'File *** was not
# found' (GOOGLE_APPLICATION_CREDENTIALS redacted as a secret) could not be acted on.
@pytest.mark.parametrize(
    ("name", "path"),
    [("GOOGLE_APPLICATION_CREDENTIALS", "/tmp/gcp/adc.json"),  # Google's ADC: the path of the JSON key file
     ("GOOGLE_APPLICATION_CREDENTIALS", "keys/adc.json"),
     ("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"),  # AWS CLI: the path of the shared credentials file
     ("HF_TOKEN_PATH", "/home/me/.cache/huggingface/token"),  # huggingface_hub: the path of the token file
     ("DB_PASSWORD_FILE", "/run/secrets/db_password")],  # Docker secrets' _FILE convention
)  # fmt: skip
def test_a_secret_file_path_in_the_environment_is_shown(monkeypatch, name, path):
    monkeypatch.setenv(name, path)
    assert redact(f"File {path} was not found.") == f"File {path} was not found."


@pytest.mark.parametrize(
    ("name", "value"),
    [("GOOGLE_APPLICATION_CREDENTIALS", '{"type":"authorized_user","client_secret":"csecret123"}'),  # the file's text
     ("GOOGLE_APPLICATION_CREDENTIALS", "-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkq"),
     ("GOOGLE_APPLICATION_CREDENTIALS", "ewogICJ0eXBlIjogInNlcnZpY2VfYWNj/b3VudCIK"),  # base64: a '/', no '.'
     ("AWS_WEB_IDENTITY_TOKEN_FILE", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"),  # a JWT: no '/'
     ("GOOGLE_APPLICATION_CREDENTIALS", "adc.json"),  # no folder: not told from a token with a dot
     ("DB_PASSWORD_FILE", "admin:hunter2pw@db.internal:/creds/x.json"),  # scp's user:pw@host:path, no '://'
     ("GOOGLE_APPLICATION_CREDENTIALS", "/svc@pw123/adc.json"),
     # a secret's own variable, whatever its value looks like
     ("HF_TOKEN", "/not/a/path.json"), ("OPENAI_API_KEY", "/a/b.c"), ("GITHUB_TOKEN", "/x/y.z"),
     ("APP_SECRET", "/x/y.z"), ("DB_PASSWORD", "/x/y.z"), ("MY_API_KEY", "/x/y.z")],
)  # fmt: skip
def test_a_secret_in_the_environment_is_still_redacted(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert redact(f"got {value} here") == "got *** here"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=***"),
        ('export GITHUB_TOKEN="ghp_0123456789abcdef" done', 'export GITHUB_TOKEN="***" done'),
        ("DB_PASSWORD=hunter2-long VLLM_API_KEY=token-abc123", "DB_PASSWORD=*** VLLM_API_KEY=***"),
        ("HF_TOKEN_PATH=/home/u/.cache/token", "HF_TOKEN_PATH=/home/u/.cache/token"),  # where it is kept: shown
        ("MAX_TOKENS=131072 max_num_batched_tokens=8192", "MAX_TOKENS=131072 max_num_batched_tokens=8192"),
        ("as HF_TOKEN=..., on stdin", "as HF_TOKEN=..., on stdin"),
    ],
)
def test_a_variable_named_as_a_secret_has_its_value_redacted_not_in_this_environment(text, redacted, monkeypatch):
    """An engine (or its launcher) that dumps its environment into its log: `onechip logs`, in another process whose
    environment has no such variable, showed 'AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/...' as it was."""
    for name in ("AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "VLLM_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert redact(text) == redacted


def test_a_credentials_variable_naming_a_file_keeps_its_path():
    # GOOGLE_APPLICATION_CREDENTIALS holds the credentials file's path (Google's ADC docs): the refusal of a directory
    # there read 'GOOGLE_APPLICATION_CREDENTIALS=*** names a directory' (the secret-name rule of 2007834b), hiding
    # what to fix; a value after such a name that is not a path is still a secret
    from onechip.errors import redact

    for path in ("/home/me/adc.json", "~/keys/sa.json", "./sa.json", "../sa.json"):
        assert redact(f"GOOGLE_APPLICATION_CREDENTIALS={path} names a directory") == (
            f"GOOGLE_APPLICATION_CREDENTIALS={path} names a directory"
        )
    assert redact("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG") == "AWS_SECRET_ACCESS_KEY=***"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # a Google service-account key file's secret parts ("private_key", a PKCS #8 PEM block: RFC 7468)
        ('{"private_key": "abc-XYZ-123"}', '{"private_key": "***"}'),
        ("{'client_secret': 'abc-XYZ-123'}", "{'client_secret': '***'}"),  # a dict's repr
        ('"{\\"api-key\\": \\"abc-XYZ-123\\"}"', '"{\\"api-key\\": \\"***\\"}"'),  # JSON text inside a JSON string
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIB\n-----END PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----***-----END PRIVATE KEY-----",
        ),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkq", "-----BEGIN RSA PRIVATE KEY-----***"),  # cut before END
        # not secrets: keys that count tokens, a path of a secret's file, a public key
        ('{"max_tokens": "64", "tokenizer": "gpt2"}', '{"max_tokens": "64", "tokenizer": "gpt2"}'),
        ('{"hf_token_file": "/keys/hf"}', '{"hf_token_file": "/keys/hf"}'),
        ("-----BEGIN PUBLIC KEY-----\nMIIBIjAN", "-----BEGIN PUBLIC KEY-----\nMIIBIjAN"),
    ],
)
def test_a_secret_named_key_and_a_private_key_block_are_redacted(text, redacted):
    assert redact(text) == redacted


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # JSON escapes a quote inside a string as \" (RFC 8259 section 7): the value runs on past it
        ('{"password": "ab\\"cd-XYZ"}', '{"password": "***"}'),
        # Python's repr quotes a str holding a ' with " (and one holding both with ', the ' escaped)
        ("{'access_token': \"it's-XYZ-123\"}", "{'access_token': \"***\"}"),
        ("{'api_key': 'it\\'s \"XYZ\"'}", "{'api_key': '***'}"),
        # JSON text inside a JSON string: its escaped quote is \\\" (both levels' escapes)
        ('"{\\"password\\": \\"ab\\\\\\"cd-XYZ\\"}"', '"{\\"password\\": \\"***\\"}"'),
        # a service-account key file's "private_key": the PEM block with its \n escapes, all of it
        (
            '{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIB\\n-----END PRIVATE KEY-----\\n", "x": 1}',
            '{"private_key": "***", "x": 1}',
        ),
        # a text cut inside the value (shown's 80 characters) still loses what it holds of it
        ('{"client_secret": "ab\\"cd-XY', '{"client_secret": "***'),
    ],
)
def test_a_secret_named_value_is_redacted_to_its_closing_quote(text, redacted):
    assert redact(text) == redacted


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # a headers dict's repr or JSON (httpx.Headers, requests' dict): the quotes between the name and the value
        ("{'Authorization': 'Bearer abc-XYZ-123'}", "{'Authorization': 'Bearer ***'}"),
        ('{"authorization": "Bearer abc-XYZ-123"}', '{"authorization": "Bearer ***"}'),
        ("Authorization: Bearer abc-XYZ-123", "Authorization: Bearer ***"),  # the header line as before
        # Basic's credentials are the user's id and password, base64 (RFC 7617 section 2: 'dXNlcjpwYXNz' is
        # 'user:pass'), a proxy's too (Proxy-Authorization, RFC 9110 section 11.7.2): shown in the clear before
        ("{'Authorization': 'Basic dXNlcjpwYXNz'}", "{'Authorization': 'Basic ***'}"),
        ("Proxy-Authorization: basic dXNlcjpwYXNz", "Proxy-Authorization: basic ***"),
    ],
)
def test_a_bearer_token_under_a_quoted_authorization_key_is_redacted(text, redacted):
    assert redact(text) == redacted


def test_exit_codes_do_not_say_every_ctrl_c_kept_what_was_measured() -> None:
    # 'interrupted (Ctrl-C: what was measured is kept)' was said of every command, of those that measure nothing and
    # of a bench stopped before it measured; each says on its line what it kept (paths.ctrl_c_says_what_is_kept)
    assert "what was measured is kept" not in exit_codes_line()
