"""serve.sh's filter (engines.remote.REDACTED_OUTPUT, a host engine's log) and errors.redact (every line onechip
shows, a local engine's log through onechip.logpump) redact the same lines the same way (helper secrets66,
2026-12-07). The bash filter knew the secret environment values and the hf_ shape only: a host's engine.log kept
`--api-key X`, `api_key='X'` and `"api_key": "X"`, which vLLM itself writes (before 0.34.0 its 'non-default args'
dict held --api-key whole; old releases logged the argparse Namespace), as well as every other shape redact knows.
Each line below is fed, with the same environment, through the filter under bash and through errors.redactor in a
process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from factories import through_host_filter
from onechip.engines import remote

TOKEN = "hf_FAKEtoken0123456789abcdefXYZ"  # a Hugging Face token's shape (errors.HF_TOKEN_SHAPE)
ODD = "tok.*+?(a|b)[c]{2}^$/\\end"  # HF_TOKEN of no shape, every character a regex gives a meaning to
ENV = {"HF_TOKEN": ODD, "OTHER_API_KEY": "k3y-" + ODD, "HF_TOKEN_PATH": "/not/a/secret", "DB_PASSWORD_FILE": "hunter2"}

USAGE = "usage: vllm serve [-h] [--api-key API_KEY [API_KEY ...]] [--hf-token [HF_TOKEN]] [--seed-token SEED_TOKEN]"
# a quoted header inside a JSON string, its quotes escaped (qa67b: the redacted line lost the '\\' before the last one)
JSON_HEADER = '{"cmd": "curl -H \\"X-Api-Key: k3y-json\\" http://h", "w": "token: k3y-w\\\\"}'
# argparse's brackets around an option and its value (secrets67): the ']' and the next '[--option' are the text's
BRACKETS = "usage: [--hf-token T] [--port P] [--api-key K1 K2] [--seed-token=S]] --hf-token a[b]"
LINES = [
    # the environment's values, and the names that say where one is kept (errors.names_a_path)
    f"HF_TOKEN={ODD} key=k3y-{ODD} path=/not/a/secret file=hunter2",
    # shapes (errors._SECRET_PATTERNS)
    f"shaped={TOKEN} openai=sk-abcdefghijklmnopqrstuv aws=AKIAABCDEFGHIJKLMNOP",
    "headers: {'Authorization': 'Bearer eyJhbGciOi.abc'} ya29.a0AfH6SMBabcdef 1//0gAbCdEfGhIjKlMnOp",
    "GET http://user:pa55word@proxy:3128/v1?api_key=S3cr3t&x=1 failed",
    "-----BEGIN PRIVATE KEY-----MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    # secrets67's shapes: a Google API key, GitHub's tokens, an AWS temporary key id, GitHub's 'token' scheme
    "google=AIzaSyA1b2C3d4E5f6G7h8I9j0K_L-M1n2O3p4Q ghp_aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5 aws=ASIAABCDEFGHIJKLMNOP",
    f"github_pat_11ABCDEFG0123456789abc_{'d' * 59} Authorization: token t0k",
    # NAME=value as an environment dump writes it
    "VLLM_API_KEY=abcdef123 TOKENIZERS_PARALLELISM=false VLLM_SHARED_EXPERTS_STREAM_TOKEN_THRESHOLD=131072",
    # an option's value (vLLM 0.34.0's --api-key nargs='+', --hf-token, --seed-token), a usage line's metavars
    "vllm serve M --api-key k1-aaaaaa k2-bbbbbb --port 8000 --hf-token=t0k3n-xyz --seed-token 's33d x'",
    USAGE,
    "--api-key=k1-aaaaaa M --max-tokens 64 --ssl-keyfile /etc/k.pem",
    BRACKETS,
    # a line that is a key named as a secret and its one value (secrets67): a header, YAML, curl's -H; prose kept
    "X-Api-Key: abcdef123456",
    "> x-goog-api-key: k3y-goog",
    "curl -H 'X-Api-Key: k3y-curl' http://h:8000/v1/models",
    '  - api_key: "k3y yaml"  # mine',
    "seed_token = k3y-ini",
    "api-key: not given",
    "hf_token: <from ~/.cache/huggingface/token> read",
    '  "kv_bytes_per_token": 18432,',
    "kv_bytes_per_token: 18432",
    # a quoted header inside a JSON string keeps its escaped quotes (qa67b)
    JSON_HEADER,
    # vLLM's 'non-default args' dict (tests/fixtures/bootlogs rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110's shape)
    "INFO [utils.py:233] non-default args: {'host': '0.0.0.0', 'api_key': ['sk123', 'k2]x'], 'port': 8000}",
    # an argparse Namespace's repr (old vLLM's 'args: Namespace(...)')
    "args: Namespace(host=None, api_key='it\\'s-k', hf_token='', tokenizer='meta/Llama', seed_token=\"s33d\")",
    # JSON, and JSON text inside a JSON string
    '{"api_key": "ab\\"cd", "private_key": "-----BEGIN PRIVATE KEY-----\\nMIIE\\n", "max_tokens": 64}',
    '"{\\"api-key\\": \\"abc-XYZ-123\\"}"',
    # an argv written as a list: JSON and a Python list's repr
    '"command": ["vllm", "serve", "M", "--api-key", "k1-aaaaaa", "k2-bbbbbb", "--port", "8000", "--hf-token", "t0k"]',
    "argv: ['--seed-token', 's33d', 'M', '--max-tokens', '64', '--api-key', 'API_KEY']",
    # safety68: a number under a key named as a secret (not TOKEN alone), httpcore's header pairs, an 'AQ.' key
    '{"api_key": 123456789012345, "kv_bytes_per_token": 131072, "x": "client_secret:9876543"}',
    "  password: 12345678  # mine",
    "headers=[(b'Host', b'h'), (b'authorization', b'Bearer abcdef123456xyz')] AQ.Ab8RN6" + "x" * 44,
    # nothing to hide
    "INFO 12-06 20:00:00 [core.py:123] an engine line, request 12345 done ok; max_tokens=64 eos_token_id=2",
    "naïve café --api-key ünïcode-k3y done",
]


def _through_bash(tmp_path: Path, text: str) -> str:
    return through_host_filter(tmp_path, text, ENV)


def _through_python(text: str, *, by_line: bool = True) -> str:
    """`text` through errors.redactor a line at a time, or whole (`by_line` False) as the local writer (logpump)
    redacts the lines of one read together."""
    code = (
        "import json, sys; from onechip.errors import redactor; scrub = redactor(); "
        "print(json.dumps([scrub(line) for line in json.load(sys.stdin)]))"
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.pathsep.join(sys.path), **ENV}
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(text.split("\n") if by_line else [text]),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )  # noqa: S603
    assert out.returncode == 0, out.stderr
    return "\n".join(json.loads(out.stdout))


def test_the_host_filter_redacts_each_line_as_errors_redact_does(tmp_path: Path) -> None:
    # an empty line between two: each is redacted alone, as a line of a log the line before does not go on into
    # (the filter follows a secret a wrap cut, as errors.LinesRedactor does: test_host_filter_wraps_safety70.py)
    text = "\n\n".join(LINES) + "\n"
    host, python = _through_bash(tmp_path, text).split("\n")[::2], _through_python(text).split("\n")[::2]
    assert [(line, h) for line, h, p in zip(LINES, host, python, strict=False) if h != p] == []
    assert host == python
    for secret in ("k1-aaaaaa", "k2-bbbbbb", "t0k3n-xyz", "s33d", "sk123", "it\\'s-k", "abc-XYZ-123", 'ab\\"cd', ODD):
        assert secret not in "\n".join(host)
    for secret in ("AIzaSy", "ghp_", "github_pat_", "ASIA", "token t0k", "abcdef123456", "k3y-", "k3y yaml"):
        assert secret not in "\n".join(host)
    for secret in ("123456789012345", "9876543", "12345678", "abcdef123456xyz", "AQ.Ab8RN6"):
        assert secret not in "\n".join(host)
    assert '"kv_bytes_per_token": 131072' in "\n".join(host)
    assert host[LINES.index(USAGE)] == USAGE
    assert json.loads(host[LINES.index(JSON_HEADER)]) == {"cmd": 'curl -H "X-Api-Key: ***" http://h', "w": "token: ***"}
    assert "api-key: not given" in host and "kv_bytes_per_token: 18432" in host
    assert (
        host[LINES.index(BRACKETS)]
        == "usage: [--hf-token ***] [--port P] [--api-key *** ***] [--seed-token=***]] --hf-token ***"
    )


def test_a_host_without_perl_starts_no_engine_and_says_why(tmp_path: Path) -> None:
    # perl-base is Essential on Debian and Ubuntu, not on every host: without it the engine's output would go nowhere
    # (its writes failing) or unredacted; serve.sh says why in the log, and the engine never starts
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "tr", "stdbuf", "cat"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()  # noqa: S603, S607
        if found:
            (bin_dir / tool).symlink_to(found)
    script = tmp_path / "serve.sh"
    script.write_text("\n".join([*remote.REDACTED_OUTPUT, "echo engine started"]) + "\n")
    out = subprocess.run(  # noqa: S603
        [str(bin_dir / "bash"), str(script)], env={"PATH": str(bin_dir)}, capture_output=True, text=True, timeout=30
    )
    assert out.returncode != 0 and "engine started" not in out.stdout
    assert "perl" in out.stdout + out.stderr


# A quoted value left unclosed, each before a line of nothing to hide (secrets67): the host's filter reads a line at a
# time, so the value ends at its line's end there; the local writer hid the next line with it. A list's item that the
# next line closes ("['--api-key', 'k1', 'abc" then "shown seven']" here before) is read as one a wrap cut, and hidden
# on both lines, by both writers (errors._keyed_crossing, safety71): so the seventh's next line closes nothing
UNCLOSED = [
    "x 'api_key': 'abc",
    "shown one",
    '{"api_key": "abc',
    "shown two",
    '"{\\"api_key\\": \\"abc',
    "shown three",
    "--api-key 'abc",
    "shown four",
    "args: Namespace(api_key='abc",
    "shown five",
    "'api_key': ['k1', 'abc",
    "] shown six",
    "['--api-key', 'k1', 'abc",
    "shown seven",
]


def test_an_unclosed_quoted_value_ends_at_its_line_s_end_in_both(tmp_path: Path) -> None:
    text = "\n".join(UNCLOSED) + "\n"
    host = _through_bash(tmp_path, text)
    assert host == _through_python(text, by_line=False)
    assert [line for line in host.split("\n") if "shown" in line] == [line for line in UNCLOSED if "shown" in line]
    assert "abc" not in host.replace("['--api-key', '***', 'abc", "")


def test_a_long_run_of_trailing_punctuation_is_read_once_by_the_host_filter(tmp_path: Path) -> None:
    """The keyed-line rule read the rest of a run of '.,;)' once for each character of it (qa67b): 40,000 took the
    perl filter 90 s here, the engine writing the line waiting on it; now 10 ms."""
    line = "token: a" + ")" * 40_000 + "x"
    started = time.perf_counter()
    assert _through_bash(tmp_path, line + "\n") == "token: ***\n"
    assert time.perf_counter() - started < 10.0
