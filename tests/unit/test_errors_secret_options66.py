"""A secret option's values as argparse reads them (helper secrets66, 2026-12-07): vLLM 0.34.0's `--api-key` takes
several keys (entrypoints/common/cli_args.py `api_key: list[str] | None`, made nargs='+' by engine/arg_utils.py
_compute_kwargs), and redact hid the first only ('--api-key *** k2-bbbbbb'); argparse's usage and help text, which
vLLM prints on a bad flag or --help, shows each option's metavar (its dest upper-cased: 'API_KEY'), which redact hid as
if it were a key ('[--api-key *** [API_KEY ...]]'). The parser below declares vLLM's secret options as vLLM 0.34.0
does, so argparse itself says which words are values and what the help text reads."""

from __future__ import annotations

import argparse
import json
import shlex

import pytest

from onechip import errors


def _vllm_parser() -> argparse.ArgumentParser:
    """vLLM 0.34.0's options whose value is a secret, declared as vLLM declares them, beside a positional and a port."""
    parser = argparse.ArgumentParser(prog="vllm serve", exit_on_error=False)
    parser.add_argument("model_tag", nargs="?")
    parser.add_argument("--api-key", type=str, nargs="+")  # list[str] | None -> nargs '+' (arg_utils._compute_kwargs)
    parser.add_argument("--hf-token", type=str, nargs="?", const=True)  # bool | str | None -> nargs '?' (same)
    parser.add_argument("--s3-access-key-id", type=str)  # model_executor/model_loader/tensorizer.py
    parser.add_argument("--s3-secret-access-key", type=str)  # same
    parser.add_argument("--seed-token", type=str)  # entrypoints/cli/preload.py, 'Shared secret'
    parser.add_argument("--port", type=int)
    return parser


_SECRET_DESTS = ("api_key", "hf_token", "s3_access_key_id", "s3_secret_access_key", "seed_token")


@pytest.mark.parametrize(
    "argv",
    [
        ["M", "--api-key", "k1-aaaaaa", "k2-bbbbbb", "--port", "8000"],
        ["M", "--api-key", "k1-aaaaaa", "k2 with space", "k3-cccccc"],  # the line's end closes the list
        ["M", "--port", "8000", "--api-key", "k1-aaaaaa", "k2-bbbbbb", "--hf-token", "t0k3n-xyz"],
        ["M", "--api-key=k1-aaaaaa", "--seed-token", "s33d-abc", "--s3-secret-access-key", "s3-s3cr3t"],
        ["--api-key", "k1-aaaaaa", "k2-bbbbbb", "--", "M"],
    ],
)
def test_every_value_argparse_reads_as_a_secret_is_hidden_and_the_rest_shown(argv: list[str]) -> None:
    args = vars(_vllm_parser().parse_args(argv))
    secrets = [v for dest in _SECRET_DESTS for v in ([args[dest]] if isinstance(args[dest], str) else args[dest] or [])]
    line = errors.redact("vllm serve " + shlex.join(argv))
    assert secrets and not [secret for secret in secrets if secret in line], line
    assert args["model_tag"] in line
    assert args["port"] is None or str(args["port"]) in line


def test_several_api_keys_each_read_as_stars() -> None:
    assert errors.redact("vllm serve M --api-key k1-aaaaaa k2-bbbbbb --port 8000") == (
        "vllm serve M --api-key *** *** --port 8000"
    )


def test_a_key_after_an_equals_sign_is_one_and_the_next_word_is_shown() -> None:
    # '--api-key=k1 M': argparse takes the one value after '=' and 'M' is the model (vllm/snapshot/runtime.py
    # make_manifest redacts so: 'redact_api_keys = not separator')
    args = _vllm_parser().parse_args(["--api-key=k1-aaaaaa", "M"])
    assert (args.api_key, args.model_tag) == (["k1-aaaaaa"], "M")
    assert errors.redact("--api-key=k1-aaaaaa M") == "--api-key=*** M"


def test_a_single_value_option_hides_its_value_only() -> None:
    assert errors.redact("vllm serve --seed-token s33d-abc M") == "vllm serve --seed-token *** M"


def test_argparse_s_usage_and_help_show_each_secret_option_s_metavar() -> None:
    parser = _vllm_parser()
    for text in (parser.format_usage(), parser.format_help()):
        assert "API_KEY [API_KEY ...]" in text and "[HF_TOKEN]" in text  # argparse's own spelling (Python 3.9-3.13)
        assert errors.redact(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "[--api-key API_KEY ...]",  # the usage form of a nargs='+' option with the repeated metavar left out
        "  --seed-token SEED_TOKEN  Shared secret for daemon-to-daemon requests.",
        "  --s3-secret-access-key S3_SECRET_ACCESS_KEY",
    ],
)
def test_a_metavar_is_no_secret(text: str) -> None:
    assert errors.redact(text) == text


def test_an_option_after_a_single_value_in_the_same_run_of_words_is_searched_too() -> None:
    # a usage line's brackets put '[--seed-token' where a word follows --hf-token's one value (the ']' that closes
    # the brackets is the text's, not the value's: secrets67)
    assert errors.redact("[--hf-token t0k3n-xyz] [--seed-token s33d-abc]") == "[--hf-token ***] [--seed-token ***]"
    assert errors.redact("--max-tokens 64 [--seed-token s33d-abc]") == "--max-tokens 64 [--seed-token ***]"


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["vllm", "serve", "M", "--api-key", "k1-aaaaaa", "k2-bbbbbb", "--port", "8000"], ["M", "--port", "8000"]),
        (["--hf-token", "t0k3n-xyz", "M"], ["M"]),
        (["--seed-token", "SEED_TOKEN"], ["SEED_TOKEN"]),  # a metavar, as a help line's argv would hold it
    ],
)
def test_an_argv_written_as_a_list_hides_each_value_argparse_reads_as_a_secret(
    argv: list[str], shown: list[str]
) -> None:
    # a recorded command as JSON (boot.json's "command", a report.json's, an MCP reply's: indented or not) and as a
    # Python list's repr; written so, the option and its value are two quoted items, which the line rule never saw
    args = vars(_vllm_parser().parse_args([word for word in argv if word not in ("vllm", "serve")]))
    secrets = [v for dest in _SECRET_DESTS for v in ([args[dest]] if isinstance(args[dest], str) else args[dest] or [])]
    for text in (json.dumps(argv), json.dumps({"command": argv}, indent=2), repr(argv)):
        redacted = errors.redact(text)
        assert not [s for s in secrets if s in redacted and s not in shown], redacted
        assert all(word in redacted for word in shown), redacted


def test_prose_after_a_secret_option_is_no_list_of_keys() -> None:
    # schemas.common's refusal of a URL with a query: '... as vllm serve --api-key expects) (got ...)'; the run of
    # keys took '(got' and the URL as keys (tests/unit/cli/test_bad_input_qa56.py failed on it)
    line = "(sent as a bearer token, as vllm serve --api-key expects) (got 'http://h:8000/?***')"
    assert errors.redact(line).endswith(" (got 'http://h:8000/?***')")
    assert errors.redact("--api-key k1-aaaaaa k2-bbbbbb, then --port") == "--api-key *** k2-bbbbbb, then --port"
