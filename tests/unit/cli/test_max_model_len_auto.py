"""--max-model-len auto / -1, as `vllm serve --max-model-len` takes them (vLLM's auto-fit: human_readable_int_or_auto,
vllm/utils/argparse_utils.py of the 0.34.0 sdist), is planned as `--set max-model-len=auto` is (PlanRequest
_auto_fit_length). Found by the plan break pass of 2026-12-05: both were refused ('Input should be a valid integer',
'Input should be greater than or equal to 1'), on the command line and over MCP, while the --set spelling planned."""

from __future__ import annotations

import json

import anyio
import pytest
from mcp import Client

from factories import one_error_line
from onechip.mcp.server import build_server

pytestmark = pytest.mark.usefixtures("offline_home")

LLAMA = (
    "Llama-3.1-8B-Instruct"  # 131,072 positions: one request of them does not fit an L4's pool, so auto-fit lowers it
)
FIGURES = ("max_model_len", "kv_pool_bytes", "num_blocks", "kv_tokens", "verdict", "serve_command")


def _figures(run, *argv: str) -> dict:
    code, out, err = run("plan", LLAMA, "--chip", "l4", "--json", *argv)
    assert code == 0, err
    plan = json.loads(out)
    return {key: plan[key] for key in FIGURES}


@pytest.mark.parametrize("value", ["auto", "AUTO", "-1", " auto "])
def test_the_option_is_planned_as_the_set_spelling(run, value: str) -> None:
    asked = _figures(run, "--max-model-len", value)
    assert asked == _figures(run, "--set", "max-model-len=auto")
    assert asked["max_model_len"] < 131_072  # auto-fit lowered it, as vLLM does


def test_an_mcp_plan_with_max_model_len_minus_one_is_the_auto_fit(run) -> None:
    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool("plan", {"model": LLAMA, "chip": "l4", "max_model_len": -1})

    result = anyio.run(go)
    assert not result.is_error, result.content[0].text
    assert result.structured_content["max_model_len"] == _figures(run, "--set", "max-model-len=auto")["max_model_len"]


def test_auto_beside_a_set_length_is_refused_as_any_two_lengths_are(run) -> None:
    line = one_error_line(run, "plan", LLAMA, "--chip", "l4", "--max-model-len", "auto", "--set", "max-model-len=4096")
    assert line == "--max-model-len auto and --set max-model-len=4096 disagree"
