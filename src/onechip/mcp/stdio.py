"""The read side of the stdio transport as onechip serves it: every line a client sends is answered.

mcp 2.3.0's stdio transport (mcp/server/stdio.py, stdin_reader) puts a line its JSON-RPC parser
(mcp_types.jsonrpc_message_adapter.validate_json) refuses on the read stream as the pydantic ValidationError; the
dispatcher (mcp/shared/jsonrpc_dispatcher.py, _dispatch) hands it to an `on_stream_exception` observer, or without one
logs it at debug level and drops it. Server.run builds its dispatcher without one (mcp/server/runner.py,
serve_dual_era_loop), and nothing passes one through, so a client that sent such a line waited for ever for its
answer. AnsweringReadStream sits between the transport and Server.run and answers the line as JSON-RPC 2.0 says
(https://www.jsonrpc.org/specification, section 5.1), echoing nothing of it but a request's id:

- not JSON: -32700 "Parse error", id null;
- JSON, but no JSON-RPC message (a params that is no object, a batch, which MCP 2025-06-18 dropped): -32600
  "Invalid Request", with the request's id when it is an object naming a method and a valid id, else null;
- JSON whose only fault is a lone surrogate escape ("\\ud83d", which JavaScript's JSON.stringify writes for half an
  emoji): pydantic's parser refuses it, Python's reads it; the request is served with U+FFFD in its place.
"""

from __future__ import annotations

import json
import re
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCMessage, jsonrpc_message_adapter
from pydantic import ValidationError

from onechip import jsontext

if TYPE_CHECKING:  # Server.run's own stream types, from a private module: for the type checker only, so a rename in
    # an SDK release cannot stop `onechip mcp` from starting
    from mcp.shared._stream_protocols import ReadStream, WriteStream

# JSON-RPC 2.0 section 5.1's messages for its codes
PARSE_ERROR_MESSAGE = "Parse error"
INVALID_REQUEST_MESSAGE = "Invalid Request"
# a surrogate code point left in a str Python's parser read: a pair's two escapes it joins into one character, so
# one left is alone, which UTF-8 cannot encode (the SDK's writer would fail on it)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class AnsweringReadStream:
    """The transport's read stream, less the lines its parser refused: each is answered on `write` (the module's
    docstring says how) and is not handed on, but one whose only fault was a lone surrogate, which is handed on as
    the message it is with U+FFFD in the surrogate's place. Anything else, an error included, passes as it came."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item (the SDK's context streams carry one; runner._sender_context)."""
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, ValidationError):
                return item
            message = _meant(item)
            if not isinstance(message, JSONRPCError):
                return SessionMessage(message)
            try:
                await self._write.send(SessionMessage(message))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the client is gone: there is no one to answer

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _meant(refused: ValidationError) -> JSONRPCMessage:
    """The message a line the SDK's parser `refused` stands for: the request it is once its lone surrogates are
    replaced, else the JSON-RPC error that answers it."""
    errors = refused.errors(include_url=False)
    if errors[0]["type"] == "json_invalid":  # its input is the whole line (pydantic's error for JSON it cannot read)
        text = _without_lone_surrogates(errors[0]["input"])
        if text is not None:
            try:
                return jsonrpc_message_adapter.validate_json(text, by_name=False)  # as the SDK's transport does
            except ValidationError as exc:  # still no JSON to it (nested past its limit), or JSON but no message
                errors = exc.errors(include_url=False)
        if errors[0]["type"] == "json_invalid":
            return _error(PARSE_ERROR, PARSE_ERROR_MESSAGE, None)
    return _error(INVALID_REQUEST, INVALID_REQUEST_MESSAGE, _request_id(errors))


def _without_lone_surrogates(line: str) -> str | None:
    """`line` as JSON text with U+FFFD for each lone surrogate its strings held; None where it is no JSON to Python
    either, or held none (then another fault made pydantic's parser refuse it)."""
    try:
        text = json.dumps(jsontext.loads(line), ensure_ascii=False)
    except (ValueError, RecursionError):  # RecursionError: writing what was nested just short of the reader's limit
        return None
    text, replaced = _LONE_SURROGATE.subn("\ufffd", text)
    return text if replaced else None


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
