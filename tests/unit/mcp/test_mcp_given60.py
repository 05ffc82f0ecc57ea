"""An MCP call says and judges what was sent, as the CLI does what was typed (helper mcpb60): an error names the
tool's argument where the CLI's words name its positional argument ('MODEL is empty'); an argument sent equal to its
default is given (a resume with `contexts` sent is refused as `--resume DIR --contexts ...` is); 100,000 `sets` items
read the environment's secrets once per parse, not once per item."""

from __future__ import annotations

import json
import re

import anyio
from mcp import Client
from test_mcp_server import call

from fakes.vllm_server import FakeVllm
from onechip import errors
from onechip.mcp.server import build_server
from onechip.vllm.flag_table import parse_sets


def test_an_error_names_the_model_argument_not_the_clis_MODEL() -> None:
    # planner.source refuses a blank model with 'MODEL is empty: ...', MODEL being the CLI's usage-line argument
    # (cli.options: an argument's metavar is its name in upper case); the plan tool's argument is `model`
    said = call("plan", {"model": " ", "chip": "cpu"})
    assert said.is_error and said.content[0].text.startswith("model is empty: give a local checkpoint directory")


def test_parse_sets_reads_the_secrets_once_not_once_an_item(monkeypatch) -> None:
    # errors._secret_values reads the whole environment (~40 us with 40 variables): looks_secret took it again for
    # each item, 100,000 items of an MCP `plan` 44 s on the helper's machine; a parse takes them once
    reads: list[int] = []
    secrets = errors._secret_values
    monkeypatch.setattr(errors, "_secret_values", lambda: reads.append(1) or secrets())
    monkeypatch.setenv("VLLM_API_KEY", "s3cr3t-value")
    assert len(parse_sets([f"VLLM_X{i}=1" for i in range(1_000)])) == 1_000
    assert len(reads) == 1
    reads.clear()  # and still by source: the variable's value is refused wherever it stands
    try:
        parse_sets(["VLLM_X=1", "served-model-name=s3cr3t-value"])
    except errors.ConfigError as exc:
        assert "a secret never goes on the command line" in str(exc)
    else:
        raise AssertionError("a secret variable's value was taken as a --set value")
    assert len(reads) == 1


def test_a_resume_judges_an_argument_sent_at_its_default_as_sent(tmp_path) -> None:
    # `bench --resume DIR --contexts 128,1024` of a run measured at 64 is refused (runner.config_difference); over MCP
    # contexts [128, 1024], BenchConfig's default, was read as not sent and the saved grid measured again
    out = tmp_path / "run"
    args = {"contexts": [64], "clients": [1], "reps": 1, "output_tokens": 2, "requests_per_client": 1}

    async def go(url):
        async with Client(build_server()) as client:
            first = await client.call_tool("bench", {"base_url": url, "out_dir": str(out), **args})
            resumed = await client.call_tool("bench", {"resume": True, "out_dir": str(out), "contexts": [128, 1024]})
            return first, resumed

    with FakeVllm(itl_s=0.001) as srv:
        first, resumed = anyio.run(go, srv.url)
        sent = len(srv.chat_requests)
    assert not first.is_error, first.content[0].text
    assert resumed.is_error and resumed.content[0].text == f"cannot resume {out}: contexts was 64, now 128,1024"
    assert json.loads((out / "summary.json").read_text())["config"]["contexts"] == [64] and sent > 0


# the command line's forms of a value: a comma-separated list ('comma-separated', 'Comma list: ...'), a token count or
# vLLM integer with a suffix ('8k is 8,000 and 8K 8,192', '32k = 32,000'), which JSON arguments never take (a JSON
# array, a JSON integer: schemas.inputs.split_commas, human_int)
CLI_FORMS = re.compile(r"\bcomma\b|comma-separated|on the command line|\b\d+(?:\.\d+)?[kKmMgGtT]\b", re.I)


def test_no_published_description_tells_an_agent_the_command_lines_forms() -> None:
    async def go():
        async with Client(build_server()) as client:
            return (await client.list_tools()).tools

    said = [
        (tool.name, name, prop["description"])
        for tool in anyio.run(go)
        for name, prop in tool.input_schema.get("properties", {}).items()
        if CLI_FORMS.search(prop.get("description", ""))
    ]
    assert said == []


def test_the_command_lines_help_says_its_forms(run, monkeypatch) -> None:
    # what the descriptions no longer say, --help says, from each field's type: a list is comma-separated (the CLI
    # reads it as text: cli.options), a token count and a vLLM integer take vLLM's suffixes
    monkeypatch.setenv("COLUMNS", "400")  # each option's help on one line
    _, bench, _ = run("bench", "--help")
    rows = {" ".join(line.strip("│ ").split()).split(" ")[0]: line for line in bench.splitlines()}
    assert "Comma-separated; 8k is 8,000 and 8K 8,192" in " ".join(rows["--contexts"].split())
    assert "Comma-separated." in rows["--clients"]
    _, plan, _ = run("plan", "--help")
    line = next(x for x in plan.splitlines() if "--max-model-len" in x)
    assert "8k = 8,000, 8K = 8,192" in " ".join(line.split())
