"""The read side of the stdio transport as onechip serves it: every message a client sends is answered.

mcp 2.3.0's stdio transport (mcp/server/stdio.py, stdin_reader) puts a line its JSON-RPC parser
(mcp_types.jsonrpc_message_adapter.validate_json) refuses on the read stream as the pydantic ValidationError; the
dispatcher (mcp/shared/jsonrpc_dispatcher.py, _dispatch) hands it to an `on_stream_exception` observer, or without one
logs it at debug level and drops it. Server.run builds its dispatcher without one (mcp/server/runner.py,
serve_dual_era_loop), and nothing passes one through, so a client that sent such a line waited for ever for its
answer. The parser also reads a method whose id is no RequestId (a strict integer or a string: true, 1.5, 1.0, [],
null) as a notification, which is never answered. CheckedLines is the transport's stdin (its public `stdin`
argument): it reads each line before the SDK does and answers the ones it must as JSON-RPC 2.0 says
(https://www.jsonrpc.org/specification, section 5.1), echoing nothing of them but a request's id:

- not JSON: -32700 "Parse error", id null;
- JSON, but no JSON-RPC message (a params that is no object, a batch, which MCP 2025-06-18 dropped, a request whose
  id is no RequestId: MCP 2025-06-18 basic/index, 'Unlike base JSON-RPC, the ID MUST NOT be null'): -32600
  "Invalid Request", with the request's id when it is an object naming a method and a valid id, else null;
- JSON whose only fault is a lone surrogate escape ("\\ud83d", which JavaScript's JSON.stringify writes for half an
  emoji): pydantic's parser refuses it, Python's reads it; the request is served with U+FFFD in its place, but for
  a surrogate in its id, which no answer can carry back as sent: that id is read as null (-32600, id null);
- a blank line (whitespace only) is no message: the SDK's transport drops it unanswered, and so does this;
- a UTF-8 BOM that starts the stream is no part of the first line (client_lines); one before a later line is a
  parse error; a byte that is no UTF-8 is read as U+FFFD, as the SDK's reader reads it.

When the client closes stdin, the SDK's dispatcher cancels the requests still in flight (jsonrpc_dispatcher.py,
JSONRPCDispatcher.run: tg.cancel_scope.cancel() once the read stream ends), which are never answered: closing stdin
is how an MCP client shuts a stdio server down (MCP 2025-06-18 basic/lifecycle, Shutdown), so a client that wants
its answers reads them before it closes stdin.
"""

from __future__ import annotations

import io
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError
from pydantic_core import from_json

from onechip import jsontext

# JSON-RPC 2.0 section 5.1's messages for its codes
PARSE_ERROR_MESSAGE = "Parse error"
INVALID_REQUEST_MESSAGE = "Invalid Request"
# a surrogate code point left in a str Python's parser read: a pair's two escapes it joins into one character, so
# one left is alone, which UTF-8 cannot encode (the SDK's writer would fail on it)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _Answers(Protocol):
    """Where answers are written: the SDK's write stream (anything with its `send`)."""

    async def send(self, item: SessionMessage, /) -> None: ...


class CheckedLines(anyio.AsyncFile[str]):
    """The client's lines, as the SDK's stdio transport reads its `stdin` (AsyncFile.__aiter__ calls readline), less
    the blank ones and the ones answered here (the module's docstring says which); one whose only fault was a lone
    surrogate is handed on as the message it is with U+FFFD in the surrogate's place. Answers go to the stream
    given to `answer_on`, which the transport opens only once it reads this."""

    def __init__(self, wire: TextIO) -> None:
        super().__init__(wire)
        self._answers: _Answers | None = None
        self._bound = anyio.Event()

    def answer_on(self, answers: _Answers) -> None:
        self._answers = answers
        self._bound.set()

    async def readline(self) -> str:
        while True:
            line = await super().readline()
            if not line:  # the end of the stream
                return line
            if line.isspace():  # no message
                continue
            meant = _meant(line)
            if meant is None:
                return line
            if isinstance(meant, str):
                return meant
            await self._bound.wait()
            assert self._answers is not None
            try:
                await self._answers.send(SessionMessage(meant))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client is gone: there is no one to answer


@contextmanager
def client_lines() -> Iterator[CheckedLines]:
    """The client's lines on stdin (fd 0), read from a descriptor of their own while fd 0 points at the null device,
    as mcp 2.3.0's stdio_server does with the stdin it opens itself (and skips for one it is given): a handler or
    a child that reads stdin reads nothing, not the client's messages. fd 0 is the client's again on exit. The
    descriptor is never closed: the reading thread may still wait on it (the SDK leaves its own open for this)."""
    wire_fd = os.dup(0)  # not inherited by children (PEP 446)
    null_fd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_fd, 0)
    os.close(null_fd)
    # UTF-8, an undecodable byte replaced, as the SDK's transport reads stdin; a BOM that starts the stream dropped
    # (utf-8-sig: PowerShell 5 and .NET's Encoding.UTF8 write one; RFC 8259 section 8.1, parsers MAY ignore it): the
    # first line, the client's initialize, was answered -32700 and the session never began
    try:
        yield CheckedLines(io.TextIOWrapper(os.fdopen(wire_fd, "rb", closefd=False), "utf-8-sig", errors="replace"))
    finally:
        os.dup2(wire_fd, 0)


def _meant(line: str) -> str | JSONRPCError | None:
    """What `line` stands for: None, the message it is, to hand on as it is; a str, the text to hand on instead (its
    lone surrogates replaced); a JSONRPCError, the answer to write, nothing handed on."""
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)  # as the SDK's transport does
    except ValidationError as refused:
        errors = refused.errors(include_url=False)
        if errors[0]["type"] != "json_invalid":  # pydantic's error for JSON it cannot read: its input is the line
            return _error(INVALID_REQUEST, INVALID_REQUEST_MESSAGE, _request_id(errors))
        text = _without_lone_surrogates(line)
        if text is None:
            return _error(PARSE_ERROR, PARSE_ERROR_MESSAGE, None)
        answer = _meant(text)  # no lone surrogate is left in it: a second refusal is answered
        return text if answer is None else answer
    if isinstance(message, JSONRPCNotification) and "id" in from_json(line):  # a method with an id no RequestId
        return _error(INVALID_REQUEST, INVALID_REQUEST_MESSAGE, None)
    return None


def _without_lone_surrogates(line: str) -> str | None:
    """`line` as JSON text with U+FFFD for each lone surrogate its strings held, and an id that held one as null;
    None where it is no JSON to Python either, or held none (then another fault made pydantic's parser refuse it)."""
    try:
        value = jsontext.loads(line)
        nulled = isinstance(value, dict) and isinstance(value.get("id"), str) and _LONE_SURROGATE.search(value["id"])
        if nulled:
            value["id"] = None
        text = json.dumps(value, ensure_ascii=False)
    except (ValueError, RecursionError):  # RecursionError: writing what was nested just short of the reader's limit
        return None
    text, replaced = _LONE_SURROGATE.subn("\ufffd", text)
    return text if replaced or nulled else None


def _request_id(errors: list[Any]) -> int | str | None:
    """The id to answer an invalid request with, from the errors the union of JSON-RPC messages gave its JSON value:
    an error that names a member alone (loc: the member) holds the whole value as its input, and so does one of a
    field a member misses (loc: the member and the field; pydantic's 'missing' holds the object missing it). A value
    that is an object naming a method is a request, whose id, a string or an integer (MCP's RequestId), is answered;
    any other is answered with null (JSON-RPC 2.0 section 5: an id that cannot be detected is null), as is a
    response, which is never answered with its id."""
    for error in errors:
        loc = error["loc"]
        if len(loc) == 1 or (error["type"] == "missing" and len(loc) == 2):
            value = error["input"]
            break
    else:
        return None
    if not isinstance(value, dict) or "method" not in value:
        return None
    request_id = value.get("id")
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return request_id
    return None


def _error(code: int, message: str, request_id: int | str | None) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))
