"""The MCP server as an agent meets it (helper mcp63): a refused call never echoes a value the caller sent in another
argument, nor one a secret-named key or a private key's PEM block holds, and a missing argument is refused as the CLI
refuses it. One regression test per finding, each failing before its fix."""

from __future__ import annotations

import json
import re

import anyio
import pytest
from mcp import Client

from onechip.mcp.server import build_server
from onechip.mcp.tools import TOOLS
from onechip.schemas.inputs import flag_of

# a value no shape rule knows (errors._SECRET_PATTERNS): only not echoing it keeps it out of a refusal
PLAIN_SECRET = "pw-Q7XZ-not-a-known-shape"
# a service-account key's secret part as Google writes it (the key file's "private_key", a PKCS #8 PEM block)
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
PEM = f"-----BEGIN PRIVATE KEY-----\n{PEM_BODY}\n-----END PRIVATE KEY-----\n"


def calls(*pairs: tuple[str, dict]) -> list:
    async def go():
        async with Client(build_server()) as client:
            return [await client.call_tool(name, args) for name, args in pairs]

    return anyio.run(go)


def whole(result) -> str:
    """Everything the client got: every text and the structured content."""
    return " ".join(c.text for c in result.content) + json.dumps(result.structured_content)


# (tool, its request model's required field, the other arguments: each valid, one of them carrying the secret)
MISSING = [
    ("check", "base_url", {"model": PLAIN_SECRET}),
    ("advise", "model", {"pricing": PLAIN_SECRET}),
    ("plan", "chip", {"model": PLAIN_SECRET}),
    ("plan", "model", {"chip": "l4", "router_host": PLAIN_SECRET}),
]


@pytest.mark.parametrize(("tool", "missing", "args"), MISSING)
def test_a_missing_argument_is_named_and_the_others_are_not_echoed(tool, missing, args) -> None:
    # pydantic's 'missing' error carries the whole input as its value: the line read "Invalid value for 'base_url':
    # Field required (got {'model': 'pw-...'})", every other argument echoed. Now click's own words for it, as
    # `onechip check` says "Missing argument 'URL'", naming the argument as the tool calls it
    (result,) = calls((tool, args))
    assert result.is_error and result.content[0].text == f"Missing argument '{missing}'"
    assert PLAIN_SECRET not in whole(result)


@pytest.mark.parametrize(
    ("command", "tool", "missing"), [("check", "check", "base_url"), ("advise", "advise", "model")]
)
def test_a_missing_argument_means_what_the_cli_says(run, command, tool, missing) -> None:
    # parity: the CLI's line names the same field (its flag_of: 'URL', 'MODEL'), in the same words
    code, _, err = run(command)
    model = next(s.request for s in TOOLS if s.name == tool)
    said = re.search(r"Missing argument '([^']+)'", err)
    assert code == 2 and said is not None and said.group(1) == flag_of(model, missing)
    (result,) = calls((tool, {}))
    assert result.content[0].text == f"Missing argument '{missing}'"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("bench", {"base_url": "http://127.0.0.1:9", "slo": {"private_key": PLAIN_SECRET}}),  # a nested key's value
        ("advise", {"model": "m", "workload": {"client_secret": PLAIN_SECRET}}),  # an extra nested key's value
        ("check", {"base_url": "http://127.0.0.1:9", "model": {"private_key": PLAIN_SECRET}}),  # an object given whole
        ("plan", {"model": "m", "chip": "l4", "image": json.dumps({"private_key": PLAIN_SECRET})}),  # JSON text
        ("plan", {"model": "m", "chip": "l4", "image": PEM}),  # a PEM private key (RFC 7468's PRIVATE KEY label)
    ],
)
def test_a_secret_named_key_or_a_private_key_is_not_echoed(tool, args) -> None:
    # each was refused echoing the secret part: 'slo.private_key': ... (got 'pw-...'), or the PEM's base64 body cut at
    # 80 characters. A value under a key named as a secret (errors' word rule) and a PEM block's body are redacted
    (result,) = calls((tool, args))
    assert result.is_error, whole(result)
    assert PLAIN_SECRET not in whole(result) and PEM_BODY[:20] not in whole(result), whole(result)


def test_a_modality_limit_under_a_secret_named_key_is_not_echoed() -> None:
    # limit_mm_per_prompt's own check named the key and echoed its value: 'private_key: a count is a whole number
    # >= 0, got 'pw-...'' (schemas.inputs.read_mm_limits)
    (result,) = calls(("plan", {"model": "m", "chip": "l4", "limit_mm_per_prompt": {"private_key": PLAIN_SECRET}}))
    assert result.is_error and "a count is a whole number >= 0" in result.content[0].text
    assert PLAIN_SECRET not in whole(result)


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "m", "--chip", "l4", "--contexts", "a" * 5_000],  # split_commas: not integers
        ["plan", "m", "--chip", "l4", "--contexts", " ,," + " " * 5_000],  # _entries: lists nothing
        ["advise", "m", "--slo", "a" * 5_000],  # key_values: not key=value
        ["advise", "m", "--slo", "ttft_ms=5,ttft_ms=6" + "0" * 5_000],  # key_values: a key twice
    ],
)
def test_a_refused_comma_list_is_cut_on_the_cli_as_over_mcp(run, argv) -> None:
    # the CLI's comma-list and key=value refusals echoed the value whole (repr: a 5,000-character line), where every
    # other refused value is cut (schemas.inputs.shown, as MCP's refusal of the same value is)
    code, _, err = run(*argv)
    assert code == 2 and len(err.splitlines()) == 1 and len(err) < 400, len(err)
    assert "characters)" in err  # shown's cut says the value's length


def test_cloud_up_names_only_the_engine_argument_given_without_a_model(tmp_path) -> None:
    # 'hf_token_file/ssh_options are for the engines model starts' named ssh_options, which the tool does not take
    # (mcp.tools.NOT_MCP_INPUTS): the refusal names what was given
    token = tmp_path / "hf"
    token.write_text("x" * 37)
    (result,) = calls(("cloud_up", {"hf_token_file": str(token)}))
    assert result.is_error and result.content[0].text == "hf_token_file is for the engines model starts"
