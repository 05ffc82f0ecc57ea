"""Transports: stdio end to end (a real `python -m onechip mcp` subprocess lists its tools and runs plan
and cost), streamable HTTP bound to 127.0.0.1 without a token, and a bearer token required elsewhere."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import uuid4

import anyio
import httpx
import pytest
from mcp import Client, StdioServerParameters

from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.errors import ConfigError
from onechip.mcp.server import SessionIdRedactor, bearer_guard, build_server, http_app
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


@pytest.mark.parametrize(("sig", "said"), [(signal.SIGTERM, "terminated (SIGTERM)"), (signal.SIGINT, "interrupted")])
def test_a_stdio_server_stopped_by_a_signal_exits_with_stdin_still_open_and_keeps_what_it_measured(tmp_path, sig, said):
    """The SDK reads stdin in a worker thread that is no daemon and returns only at EOF: SIGTERM with the client still
    holding stdin open said 'terminated (SIGTERM)' and then waited on that thread for ever, and SIGINT (Ctrl-C), which
    asyncio.run turns into a cancellation of the server's task, waited in the SDK's stdio teardown without a word, so
    a host that stops its server with a signal had to SIGKILL it. It exits 128 + the signal's number once the
    interrupted bench has kept its requests."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "ONECHIP_HOME": str(tmp_path / "home")}
    out = tmp_path / "run"
    grid = {"contexts": [64], "clients": [1], "reps": 1, "output_tokens": 8, "requests_per_client": 200,
            "warmup_requests": 0, "out_dir": str(out)}  # fmt: skip
    stderr = tmp_path / "stderr"
    with FakeVllm(ttft_s=0.02, itl_s=0.01) as srv, stderr.open("wb") as err, subprocess.Popen(
        [sys.executable, "-m", "onechip", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err,
        env=env, cwd=tmp_path,
    ) as server:  # fmt: skip
        try:
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
            bench = {"name": "bench", "arguments": {"base_url": srv.url, **grid}}
            for message in (
                {"id": 1, "method": "initialize", "params": hello},
                {"method": "notifications/initialized"},
                {"id": 2, "method": "tools/call", "params": bench},
            ):
                server.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
                server.stdin.flush()
            deadline = time.monotonic() + 60
            while not (out / "requests.jsonl").is_file() or len((out / "requests.jsonl").read_text().splitlines()) < 3:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.05)
            server.send_signal(sig)  # stdin stays open, as a host that signals its server leaves it
            rc = server.wait(30)
        finally:
            if server.poll() is None:
                server.kill()
    assert rc == 128 + sig, stderr.read_text()[-2000:]
    assert said in stderr.read_text()
    assert len((out / "requests.jsonl").read_text().splitlines()) >= 3
    assert (out / "summary.json").is_file()  # the interrupted bench wrote its summary before the process left


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


@contextmanager
def _serving(app) -> Iterator[str]:
    """`app` served by uvicorn on 127.0.0.1 (port 0) in a thread; yields its /mcp URL."""
    import threading
    import time

    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    # started is set once it listens; 100 polls (5 s at least) fell through to an IndexError on a slow start
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start listening"
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _tool_names(url: str, headers: dict[str, str]) -> list[str]:
    """The tools listed over streamable HTTP by the SDK's own client."""

    async def go():
        import httpx2  # the MCP SDK's own HTTP client package
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers=headers) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                return [t.name for t in (await client.list_tools()).tools]

    return anyio.run(go)


def test_streamable_http_with_a_bearer_token_end_to_end():
    token = "tok-" + "q" * 20
    with _serving(http_app(build_server(read_only=True), "0.0.0.0", token)) as url:
        assert httpx.post(url, json={}).status_code == 401
        assert "plan" in _tool_names(url, {"Authorization": f"Bearer {token}"})


def test_http_session_ids_are_not_logged(caplog):
    """The SDK's session manager logged each new session's id at INFO ("Created new transport with session ID:
    ..."), on `onechip mcp --http`'s stderr: the id is all a client on 127.0.0.1 needs to join that session. A
    client of the 2025-06-18 protocol opens a session with `initialize` (MCP spec, streamable HTTP: the server
    sends its id in the Mcp-Session-Id header)."""
    caplog.set_level(logging.INFO)
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "test", "version": "0"}}}  # fmt: skip
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-06-18"}
    with _serving(http_app(build_server(read_only=True), "127.0.0.1", None)) as url:
        opened = httpx.post(url, json=initialize, headers=headers)
        session_id = opened.headers.get("mcp-session-id")
        closed = httpx.delete(url, headers={**headers, "Mcp-Session-Id": session_id or ""})
    assert opened.status_code == 200 and session_id, opened.text
    assert closed.status_code == 200, closed.text
    assert session_id not in caplog.text, caplog.text


def test_a_crashed_sessions_id_is_not_logged(caplog):
    """The SDK logs a crashing HTTP session at ERROR with its id ('Session {session_id} crashed', mcp 2.3.0
    streamable_http_manager.py, through logger.exception), above the WARNING its loggers are raised to: the id is
    redacted, the line and its traceback kept."""
    http_app(build_server(read_only=True), "127.0.0.1", None)
    http_app(build_server(read_only=True), "127.0.0.1", None)  # a second app adds no second filter
    session_id = uuid4().hex  # as the SDK makes one
    sdk = logging.getLogger("mcp.server.streamable_http_manager")
    assert sum(isinstance(f, SessionIdRedactor) for f in sdk.filters) == 1
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        sdk.exception(f"Session {session_id} crashed")
    assert session_id not in caplog.text, caplog.text
    (record,) = [r for r in caplog.records if r.name == sdk.name]
    assert record.levelno == logging.ERROR and record.getMessage() == "Session <session id> crashed"
    assert record.exc_info is not None  # the traceback still says what crashed


def test_the_server_logs_no_line_per_http_request(caplog):
    """httpx logs each request at INFO ('HTTP Request: GET <url> "HTTP/1.1 200 OK"'), and the SDK's server sets the
    root logger to INFO on stderr (mcp configure_logging): a tool that read the Hub or a server logged a line per
    request. build_server raises httpx and httpcore to WARNING."""
    for name in ("httpx", "httpcore"):
        logging.getLogger(name).setLevel(logging.NOTSET)  # as a fresh process has them
    caplog.set_level(logging.INFO)
    build_server(read_only=True)
    with httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(200))) as client:
        assert client.get("http://127.0.0.1:9/v1/models").status_code == 200
    assert "HTTP Request" not in caplog.text, caplog.text
    assert [logging.getLogger(n).level for n in ("httpx", "httpcore")] == [logging.WARNING] * 2
