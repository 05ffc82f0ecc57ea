"""Transports: stdio end to end (a real `python -m onechip mcp` subprocess lists its tools and runs plan
and cost), streamable HTTP bound to 127.0.0.1 without a token, and a bearer token required elsewhere."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from onechip import api
from onechip.errors import ConfigError
from onechip.mcp.server import bearer_guard, build_server, http_app
from onechip.mcp.tools import TOOLS
from onechip.schemas.requests import PlanRequest

SRC = Path(__file__).parents[3] / "src"


def test_stdio_end_to_end_lists_tools_and_runs_plan_and_cost(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(SRC), "ONECHIP_HOME": str(tmp_path)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "onechip", "mcp"], env=env, cwd=str(tmp_path))

    async def go():
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            plan = await client.call_tool(
                "plan", {"model": "google/gemma-4-E2B-it", "chip": "v5e-1", "utilization": 0.92}
            )
            cost = await client.call_tool("cost", {"chip": "v5e-1", "output_tok_per_s": 1500, "pricing": ["spot"]})
            return names, plan, cost

    names, plan, cost = anyio.run(go)
    assert names == [spec.name for spec in TOOLS]
    assert not plan.is_error, plan.content[0].text
    # DESIGN.md: Gemma 4 E2B owns 12 x 1,024 + 3 x 2,048 = 18,432 KV bytes per token at bf16
    assert plan.structured_content["kv_bytes_per_token"] == 18_432
    expected = api.plan(PlanRequest(model="google/gemma-4-E2B-it", chip="v5e-1", utilization=0.92))
    assert plan.structured_content == expected.model_dump(mode="json")
    assert not cost.is_error and cost.structured_content["lines"][0]["pricing"] == "spot"


def _asgi_ok(scope, receive, send):
    async def run():
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    return run()


def _get(app, headers=None) -> int:
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return (await client.get("/mcp", headers=headers or {})).status_code

    return anyio.run(go)


def test_bearer_guard_refuses_a_missing_or_wrong_token():
    app = bearer_guard(_asgi_ok, "s3cret-token")
    assert _get(app) == 401
    assert _get(app, {"Authorization": "Bearer wrong"}) == 401
    assert _get(app, {"Authorization": "Bearer s3cret-token"}) == 200


def test_http_off_localhost_needs_a_token():
    server = build_server(read_only=True)
    with pytest.raises(ConfigError, match="needs a bearer token"):
        http_app(server, "0.0.0.0", None)
    assert http_app(server, "127.0.0.1", None) is not None
    guarded = http_app(server, "0.0.0.0", "tok-123456")
    assert _get(guarded) == 401


def test_streamable_http_with_a_bearer_token_end_to_end():
    import threading
    import time

    import uvicorn

    token = "tok-" + "q" * 20
    app = http_app(build_server(read_only=True), "0.0.0.0", token)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(100):
        if server.started:
            break
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"

    async def go():
        import httpx2  # the MCP SDK's own HTTP client package
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return [t.name for t in (await client.list_tools()).tools]

    try:
        assert httpx.post(url, json={}).status_code == 401
        assert "plan" in anyio.run(go)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
