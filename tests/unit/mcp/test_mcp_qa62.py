"""The MCP server as an agent finds it (helper cliqa62): a verdict the CLI exits 10 on is a tool error that keeps
its result. One regression test per finding, each failing before its fix."""

from __future__ import annotations

import anyio
from mcp import Client

from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.mcp.server import build_server
from onechip.schemas.requests import PlanRequest

# gemma-4-E4B-it on one v5e chip at its own 131,072-token length: the KV pool holds 4,864 tokens (the plan's verdict)
UNFIT = {"model": "gemma-4-E4B-it", "chip": "v5e-1"}


def call(name: str, args: dict):
    async def go():
        async with Client(build_server()) as client:
            return await client.call_tool(name, args)

    return anyio.run(go)


def test_a_plan_that_does_not_fit_is_a_tool_error_keeping_the_plan_and_the_longest_length(monkeypatch, tmp_path):
    # the plan tool returned 'does not fit' as an ordinary result (isError false) where `onechip plan` exits 10: an
    # agent reading isError, as the MCP spec tells it to, went on to `up`. Now a tool error (isError, as cloud_down's
    # partial failure) whose structured content is still the plan, with error and exit_code (the CLI's 10)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    expected = api.plan(PlanRequest(**UNFIT))
    longest = expected.longest_fit_max_model_len
    assert not expected.fits and longest is not None
    got = call("plan", UNFIT)
    line = got.content[0].text
    assert got.is_error, line
    data = got.structured_content
    assert data is not None and data["fits"] is False and data["longest_fit_max_model_len"] == longest
    assert data["exit_code"] == 10 and data["error"] == line
    # the line names the tool's argument, not the CLI's flag (as every MCP error does)
    assert line.endswith(f"give max_model_len {longest}, the longest length that fits"), line
    assert "does not fit" in line and "\n" not in line
    fitting = call("plan", {**UNFIT, "max_model_len": longest})
    assert not fitting.is_error and fitting.structured_content["fits"] is True


def test_a_check_verdict_not_allowed_is_a_tool_error_keeping_the_report_and_allow_opens_it():
    # `allow` was published ('Verdicts besides pass that still exit 0 ... exit 10 otherwise') and did nothing over MCP:
    # a failed check came back as an ordinary result whatever it said. Now a verdict not allowed is a tool error with
    # the report as structured content and exit_code 10, as `onechip check` exits 10; `allow` makes it a result
    with FakeVllm([Reply("  ")] * 40, model="s") as srv:  # blank answers: determinism fails (checks tests)
        failed = call("check", {"base_url": srv.url, "only": ["determinism"]})
        allowed = call("check", {"base_url": srv.url, "only": ["determinism"], "allow": ["fail"]})
    line = failed.content[0].text
    assert failed.is_error, line
    assert failed.structured_content["results"][0]["verdict"] == "fail"
    assert failed.structured_content["exit_code"] == 10
    assert line.startswith("checks did not pass: determinism fail (allow fail accepts them); s"), line
    assert not allowed.is_error, allowed.content[0].text
