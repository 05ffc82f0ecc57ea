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
def _spawned(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    """`onechip mcp` on pipes, its home in `tmp_path`; killed at the end."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "ONECHIP_HOME": str(tmp_path / "home")}
    with subprocess.Popen(
        [sys.executable, "-m", "onechip", "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, env=env, cwd=tmp_path,
    ) as server:  # fmt: skip
        try:
            yield server
        finally:
            server.kill()


@contextmanager
def _server(tmp_path: Path) -> Iterator[_Wire]:
    with _spawned(tmp_path) as server:
        wire = _Wire(server)
        wire.request({"id": 1, "method": "initialize", "params": HELLO})
        assert wire.answer()[1]["id"] == 1
        wire.request({"method": "notifications/initialized"})
        yield wire


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
    """What CheckedLines hands the SDK's transport (each line as the SDK reads it) and what it answers, for one
    line."""
    import io

    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    from onechip.mcp.stdio import CheckedLines

    async def go() -> tuple[list[Any], list[Any]]:
        write, answers = anyio.create_memory_object_stream[SessionMessage](1)
        lines = CheckedLines(io.StringIO(line + "\n"))
        lines.answer_on(write)
        served = [jsonrpc_message_adapter.validate_json(text, by_name=False) async for text in lines]
        write.close()
        async with answers:
            return served, [item.message.model_dump(mode="json") async for item in answers]

    return anyio.run(go)


def test_a_lone_surrogate_in_json_the_sdk_cannot_read_for_another_fault_is_a_parse_error():
    """pydantic's parser stops at 200 nested arrays ('recursion limit exceeded'), Python's does not: with its lone
    surrogate replaced the line is still no JSON to the SDK, so it is a parse error, not an invalid request."""
    deep = "[" * 300 + '"\\ud800"' + "]" * 300
    parse_error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error", "data": None}}
    assert _through_the_stream(deep) == ([], [parse_error])
    served, answers = _through_the_stream('{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"\\udc00": 1}}')
    assert answers == [] and served[0].params == {"\ufffd": 1}  # a key's surrogate too


INVALID_REQUEST = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}


def test_a_request_whose_id_is_no_request_id_is_answered_invalid_with_id_null(tmp_path):
    """mcp 2.3.0's parser reads a method with an id that is no RequestId (mcp_types.jsonrpc: a strict integer or a
    string) as a notification, which is never answered: the client waited for ever. JSON-RPC 2.0 section 4: an id
    is a string, a number or null; MCP (basic/index, 2025-06-18): 'Unlike base JSON-RPC, the ID MUST NOT be null';
    the SDK's type takes no fraction, not even 1.0. None of them can be echoed as the id the client sent, so each is
    answered -32600 with id null (section 5: the id could not be detected). A lone surrogate in an id is no string
    UTF-8 can carry back: the answer names id null too, not U+FFFD, which the client never sent."""
    ids = ["true", "1.5", "1.0", "1e2", "[]", "{}", "null", "[1]", '{"n": 1}', '"\\ud800"', '"r-\\udc00"']
    with _server(tmp_path) as wire:
        for request_id, sent_id in enumerate(ids, start=300):
            wire.send('{"jsonrpc": "2.0", "id": ' + sent_id + ', "method": "ping"}')
            assert wire.answer()[1] == INVALID_REQUEST, sent_id
            _pings_back(wire, request_id)
        wire.request({"method": "notifications/cancelled", "params": {"requestId": 12345}})  # a notification: no answer
        _pings_back(wire, 400)


def test_a_blank_line_is_no_message_and_gets_no_answer(tmp_path):
    """mcp 2.3.0's stdio server hands a blank line to its parser, which refuses it, and drops the refusal unanswered
    (jsonrpc_dispatcher._dispatch, no on_stream_exception): a blank line is no message, so it gets no answer here
    either, where it was answered -32700 with id null."""
    with _server(tmp_path) as wire:
        for blank in ["", "   ", "\t", "\r", " \r"]:
            wire.send(blank)
        _pings_back(wire, 1)  # the next line out answers the ping, not a blank line


def test_crlf_a_bom_a_request_with_a_result_and_a_10_mb_line(tmp_path):
    """A CRLF line end is JSON whitespace: served. A BOM before a line: RFC 8259 section 8.1, senders MUST NOT add
    one, parsers MAY ignore it; the SDK's parser refuses it, so it is answered -32700. A request that also carries
    a result is read as the request (the SDK's parser ignores members a message does not have). A 10 MB line is
    read whole."""
    with _server(tmp_path) as wire:
        wire.send('{"jsonrpc": "2.0", "id": 1, "method": "ping"}\r')
        assert wire.answer()[1] == {"jsonrpc": "2.0", "id": 1, "result": {}}
        wire.send('\ufeff{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
        assert wire.answer()[1] == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        wire.request({"id": 3, "method": "ping", "result": {}})
        assert wire.answer()[1] == {"jsonrpc": "2.0", "id": 3, "result": {}}
        wire.request({"id": 4, "method": "ping", "params": {"_meta": {"note": "x" * 10_000_000}}})
        assert wire.answer()[1] == {"jsonrpc": "2.0", "id": 4, "result": {}}


def test_initialize_initialized_and_pings_written_in_one_burst_are_all_answered_then_stdin_closed_ends_it(tmp_path):
    """Every line written at once, before the server has started reading, with stdin left open: each request is
    answered (the SDK answers what is in flight only while stdin is open: see onechip.mcp.stdio). Then the end of
    stdin ends the server, exit 0."""
    burst = [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO}]
    burst += [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    burst += [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(1, 9)]
    with _spawned(tmp_path) as server:
        wire = _Wire(server)
        wire.send("\n".join(json.dumps(line) for line in burst))
        assert sorted(wire.answer()[1]["id"] for _ in range(9)) == list(range(9))
        assert server.stdin is not None
        server.stdin.close()  # how a client shuts a stdio server down (MCP 2025-06-18 basic/lifecycle)
        assert server.wait(timeout=ANSWER_S) == 0


def test_what_the_line_check_hands_on_and_answers():
    """The SDK never sees a line answered here; a line it reads as it is, it gets as it is."""
    ping = '{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    assert _through_the_stream(ping)[1] == []
    invalid = {**INVALID_REQUEST, "error": {**INVALID_REQUEST["error"], "data": None}}
    for sent_id in ["true", "1.0", "null", '"\\ud800"']:
        assert _through_the_stream('{"jsonrpc": "2.0", "id": ' + sent_id + ', "method": "ping"}') == ([], [invalid])
    notified = _through_the_stream('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    assert notified[1] == [] and notified[0][0].method == "notifications/initialized"
    # a surrogate in a response's id: no id to resolve, and a response is never answered with its id
    assert _through_the_stream('{"jsonrpc": "2.0", "id": "\\udc00", "result": {}}') == ([], [invalid])
    assert _through_the_stream("  \r") == ([], [])


def test_a_bom_at_the_start_of_the_stream_is_no_part_of_the_first_message(tmp_path):
    """safety68: a client that writes its stream as UTF-8 with a BOM (PowerShell 5's default for a pipe, .NET's
    Encoding.UTF8) starts it with EF BB BF; RFC 8259 section 8.1, parsers MAY ignore one. Before, the initialize
    that followed was answered -32700 and the session never began; the stream is now read as UTF-8 less its BOM, as
    Python's utf-8-sig codec reads one: a BOM before a later line is still a parse error (test above)."""
    with _spawned(tmp_path) as server:
        wire = _Wire(server)
        assert server.stdin is not None
        server.stdin.write(
            b"\xef\xbb\xbf"
            + json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}).encode()
            + b"\r\n"
        )
        server.stdin.flush()
        assert wire.answer()[1]["id"] == 1
        wire.request({"method": "notifications/initialized"})
        _pings_back(wire, 2)


def test_bytes_that_are_no_utf8_are_read_as_u_fffd_and_the_server_goes_on(tmp_path):
    """safety68: invalid UTF-8 inside a string is served with U+FFFD in its place (the SDK's own stdin reader
    replaces it too); outside a string, the line is no JSON: -32700, id null. The server answers the next ping."""
    with _server(tmp_path) as wire:
        assert wire.server.stdin is not None
        wire.server.stdin.write(
            b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "pl\xff\xfean"}}\n'
        )
        wire.server.stdin.flush()
        answer = wire.answer()[1]
        assert answer["id"] == 5 and answer["result"]["content"][0]["text"].startswith("no tool 'pl\ufffd\ufffdan'")
        wire.server.stdin.write(b'{"jsonrpc": "2.0", "id": 6, \xc3"method": "ping"}\n')
        wire.server.stdin.flush()
        assert wire.answer()[1] == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
        _pings_back(wire, 7)


def test_a_request_after_the_cancellation_of_a_running_tool_is_answered(tmp_path):
    """safety68: a `check` waiting on a server that accepts and never answers, cancelled by the client
    (notifications/cancelled, MCP 2025-06-18 utilities/cancellation: the receiver 'SHOULD NOT send a response for the
    cancelled request'); the requests after it are answered, a tools/call too, and the cancelled one never is."""
    import socket

    with socket.create_server(("127.0.0.1", 0)) as silent, _server(tmp_path) as wire:
        port = silent.getsockname()[1]
        args = {"base_url": f"http://127.0.0.1:{port}", "only": ["smoke"], "request_timeout_s": 120}
        wire.request({"id": 50, "method": "tools/call", "params": {"name": "check", "arguments": args}})
        silent.settimeout(ANSWER_S)
        held, _ = silent.accept()  # the check is running: its first request is waiting on this connection
        with held:
            wire.request({"method": "notifications/cancelled", "params": {"requestId": 50, "reason": "user"}})
            _pings_back(wire, 51)
            wire.request({"id": 52, "method": "tools/call", "params": {"name": "nope", "arguments": {}}})
            raw, answer = wire.answer()
            assert answer["id"] == 52 and answer["result"]["isError"] is True
            _pings_back(wire, 53)
            assert wire.lines.empty()  # no answer to 50
