"""Over stdio the server answers every line a client sends: mcp 2.3.0's stdio transport hands a line its JSON-RPC
parser rejects to the dispatcher as an exception, which logs it at debug level and drops it, so the client waited
for ever (found by qa66a with the official client). JSON-RPC 2.0 section 5.1: a parse error is answered -32700
with id null, an invalid request -32600; a line whose only fault is a lone surrogate escape (JavaScript's
JSON.stringify writes one for an emoji cut in half) is served with U+FFFD in its place. A real `python -m onechip
mcp` subprocess, spoken to line by line."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio

SRC = Path(__file__).parents[3] / "src"
SECRET = "sk-mcpparse66-DO-NOT-ECHO"
ANSWER_S = 30.0  # a server that drops a line never answers: the test fails after this, instead of hanging
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


class _Wire:
    """The server's stdin and stdout, one JSON-RPC line each way."""

    def __init__(self, server: subprocess.Popen[bytes]) -> None:
        self.server = server
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.server.stdout is not None
        for line in self.server.stdout:
            self.lines.put(line)

    def send(self, line: str) -> None:
        assert self.server.stdin is not None
        self.server.stdin.write(line.encode() + b"\n")
        self.server.stdin.flush()

    def request(self, message: dict[str, Any]) -> None:
        self.send(json.dumps({"jsonrpc": "2.0", **message}))

    def answer(self) -> tuple[bytes, dict[str, Any]]:
        try:
            raw = self.lines.get(timeout=ANSWER_S)
        except queue.Empty:
            raise AssertionError(f"no answer in {ANSWER_S} s") from None
        return raw, json.loads(raw)


@contextmanager
def _server(tmp_path: Path) -> Iterator[_Wire]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "ONECHIP_HOME": str(tmp_path / "home")}
    with subprocess.Popen(
        [sys.executable, "-m", "onechip", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, cwd=tmp_path,
    ) as server:  # fmt: skip
        try:
            wire = _Wire(server)
            wire.request({"id": 1, "method": "initialize", "params": HELLO})
            assert wire.answer()[1]["id"] == 1
            wire.request({"method": "notifications/initialized"})
            yield wire
        finally:
            server.kill()


def _pings_back(wire: _Wire, request_id: int) -> None:
    wire.request({"id": request_id, "method": "ping"})
    assert wire.answer()[1] == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def test_a_line_that_is_no_json_or_no_request_is_answered_without_its_content_and_the_server_goes_on(tmp_path):
    cut = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"token": SECRET}})[:-7]
    invalid = [  # JSON, but no JSON-RPC message: (line, the id the answer carries)
        (json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": SECRET}), 7),  # params not an object
        (json.dumps({"jsonrpc": "2.0", "id": "r-8", "method": 5, "params": {"token": SECRET}}), "r-8"),
        (json.dumps({"token": SECRET}), None),
        (json.dumps([{"jsonrpc": "2.0", "id": 10, "method": "ping"}]), None),  # a batch: MCP 2025-06-18 has none
        (json.dumps({"jsonrpc": "2.0", "id": True, "method": 5}), None),  # no valid id to answer it with
        (json.dumps({"jsonrpc": "2.0", "id": 11, "result": SECRET}), None),  # a response: never answered by its id
    ]
    with _server(tmp_path) as wire:
        for request_id, line in enumerate([f"not json {SECRET}", cut, "{"], start=100):
            wire.send(line)
            raw, answer = wire.answer()
            assert answer == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
            assert SECRET.encode() not in raw
            _pings_back(wire, request_id)
        for request_id, (line, answered_id) in enumerate(invalid, start=200):
            wire.send(line)
            raw, answer = wire.answer()
            assert answer == {
                "jsonrpc": "2.0",
                "id": answered_id,
                "error": {"code": -32600, "message": "Invalid Request"},
            }
            assert SECRET.encode() not in raw
            _pings_back(wire, request_id)


def test_a_request_with_a_lone_surrogate_is_served_with_the_replacement_character(tmp_path):
    """JSON.stringify("\\ud83d") is the six characters \\ud83d: pydantic's parser refuses them ('lone leading
    surrogate in hex escape'); Python's accepts them, and U+FFFD stands in for the half emoji."""
    half_emoji = json.dumps("😀")[1:7]  # "\ud83d", as JSON.stringify writes the first half of U+1F600
    assert half_emoji == "\\ud83d"
    with _server(tmp_path) as wire:
        wire.send('{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"_meta": {"note": "' + half_emoji + '"}}}')
        assert wire.answer()[1] == {"jsonrpc": "2.0", "id": 3, "result": {}}
        wire.send('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "plan' + half_emoji + '"}}')
        answer = wire.answer()[1]
        assert answer["id"] == 4 and answer["result"]["isError"] is True
        assert answer["result"]["content"][0]["text"].startswith("no tool 'plan\ufffd'; the tools: plan,")
        # a whole emoji, escaped as its surrogate pair, was served before and still is: nothing is replaced
        pair = json.dumps("😀")[1:-1]
        wire.send('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "plan' + pair + '"}}')
        assert wire.answer()[1]["result"]["content"][0]["text"].startswith("no tool 'plan😀'")
        _pings_back(wire, 6)


def _through_the_stream(line: str) -> tuple[list[Any], list[Any]]:
    """What AnsweringReadStream hands the server and what it answers for one line, refused as the SDK's stdio
    transport refuses it (its parse error on the read stream)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    from onechip.mcp.stdio import AnsweringReadStream

    async def go() -> tuple[list[Any], list[Any]]:
        into, inner = anyio.create_memory_object_stream[SessionMessage | Exception](1)
        write, answers = anyio.create_memory_object_stream[SessionMessage](1)
        try:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError as exc:
            await into.send(exc)
        into.close()
        async with AnsweringReadStream(inner, write) as lines:
            served = [item async for item in lines]
        write.close()
        async with answers:
            return [item.message for item in served], [item.message.model_dump(mode="json") async for item in answers]

    return anyio.run(go)


def test_a_lone_surrogate_in_json_the_sdk_cannot_read_for_another_fault_is_a_parse_error():
    """pydantic's parser stops at 200 nested arrays ('recursion limit exceeded'), Python's does not: with its lone
    surrogate replaced the line is still no JSON to the SDK, so it is a parse error, not an invalid request."""
    deep = "[" * 300 + '"\\ud800"' + "]" * 300
    parse_error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error", "data": None}}
    assert _through_the_stream(deep) == ([], [parse_error])
    served, answers = _through_the_stream('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"\\udc00": 1}}')
    assert answers == [] and served[0].params == {"\ufffd": 1}  # a key's surrogate too
