"""`onechip mcp`: one MCP server (official SDK 2.x, `MCPServer`) over onechip.api, for an agent doing the
devops: plan, up, status, logs, summarize_logs, down, check, bench, cost, report, demo (mcp.tools.TOOLS).

Each tool's input schema is its job's request model; its output schema the job's result model; the text
beside it one summary line. Errors are tool errors carrying the CLI's one-line message. Transports:
stdio (default; every line is answered, one the SDK's parser refuses with a JSON-RPC error: mcp.stdio), or
streamable HTTP bound to 127.0.0.1; bound to any other address it requires a bearer token (checked in constant
time), which is never printed or logged; nor is an HTTP session id (SESSION_ID_LOGGERS).

Safety: arguments are validated as strict JSON (a boolean is true/false, never "false"); a gated tool runs only on
`confirm: true`; an error, a summary and a verdict name the tool's arguments ('tensor_parallel_size'), never the CLI's
flags for them ('--tensor-parallel-size': schemas.inputs.as_parameters), wherever it was raised; no tool input names a
program to run (see mcp.tools); every failure is a tool error of one line; the server's heap is capped
($ONECHIP_MCP_MEMORY_GIB, default half the RAM) so one job's memory fails that job, not the server.
"""

from __future__ import annotations

import hmac
import inspect
import logging
import math
import os
import re
import signal
from collections.abc import Mapping
from functools import partial
from typing import Any

import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult
from pydantic import create_model, model_validator

from onechip import __version__
from onechip.errors import ConfigError, one_line
from onechip.mcp.bridge import (
    InterruptedTaskFilter,
    PartialFailure,
    admits_null,
    refusal,
    result,
    run_job,
    signature_of,
    wait_for_jobs,
)
from onechip.mcp.stdio import client_lines
from onechip.mcp.tools import NOT_MCP_INPUTS, TOOLS, ToolSpec, refuse_paths, refuse_programs, refuse_set_paths
from onechip.procs import cap_heap, heap_in_use_bytes
from onechip.schemas.common import GIB
from onechip.schemas.inputs import as_parameters, build_request, shown

INSTRUCTIONS = (
    "onechip plans, launches, checks, benchmarks and prices an LLM serving engine on one accelerator. "
    "Typical session: plan -> up -> check -> bench -> cost -> down (up, demo and down need confirm: true). "
    "Read tool errors: they say what to change."
)
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
MEMORY_ENV = "ONECHIP_MCP_MEMORY_GIB"
# how long a stdio server stopped by a signal waits for its interrupted jobs, s: an engine that ignores SIGTERM is
# killed 20 s after it (engines.local.stop_group's grace), with some margin
JOBS_STOP_S = 30.0
UNKNOWN = "onechip_unknown_arguments"  # where the arguments a tool does not take are collected (_Arguments)
NOT_SENT = "\x00onechip-not-sent"  # an argument the caller left out (a required one: build_request names it)
# The SDK's loggers that write an HTTP session's id at INFO ("Created new transport with session ID: ...",
# "Terminating session: ..."): the id is all a client needs to join that session, so it never reaches a log.
SESSION_ID_LOGGERS = ("mcp.server.streamable_http_manager", "mcp.server.streamable_http")
# httpx logs every request at INFO ("HTTP Request: GET <url> ..."), and the SDK's server sets the root logger to INFO
# on stderr: raised to WARNING, a tool that reads the Hub or a server logs no line per request (build_server)
HTTP_CLIENT_LOGGERS = ("httpx", "httpcore")
# The SDK's session ids: uuid4().hex, 32 lower-case hex digits (mcp 2.3.0 streamable_http_manager.py)
_SESSION_ID = re.compile(r"\b[0-9a-f]{32}\b")


class SessionIdRedactor(logging.Filter):
    """A record's HTTP session id (_SESSION_ID) replaced with '<session id>' (the message formatted first): a
    crashing session is logged at ERROR as 'Session <id> crashed' (mcp 2.3.0 streamable_http_manager.py), above
    the WARNING SESSION_ID_LOGGERS are raised to. Every record passes; only its text changes."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = _SESSION_ID.sub("<session id>", message)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def _given(spec: ToolSpec, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The arguments the caller sent (`kwargs` holds no other: _validate_like_the_cli), so a request's 'give A or B'
    rules and a resume judge what was sent, as the CLI judges what was typed: `contexts: [128, 1024]`, its default,
    sent to a resumed bench is refused as `--resume DIR --contexts 128,1024` is, where read as not sent it measured the
    saved grid. Null for an optional field whose type takes none is not sent: it is that argument's published default
    (bridge.signature_of), which a client filling in every default sends. So is an empty list or object sent where
    that is the field's default (`zones: []`); one where the default lists something (`contexts: []`) is sent, and
    refused as listing nothing, as `--contexts ''` is (schemas.inputs.split_commas)."""
    fields = spec.request.model_fields

    def not_sent(k: str, v: Any) -> bool:
        if v is None:  # a required one's null is refused as sent ('should be a valid string (got null)')
            return not fields[k].is_required() and not admits_null(fields[k].annotation)
        default = fields[k].get_default(call_default_factory=True)
        return v in ([], {}) and type(v) is type(default) and v == default

    return {k: v for k, v in kwargs.items() if k not in fields or not not_sent(k, v)}


def _checked(spec: ToolSpec, kwargs: dict[str, Any]) -> Any:
    """The request `kwargs` make for `spec`, refused (ConfigError, one line) when a path lies outside the allowed
    folders or it would run a program other than an engine (see mcp.tools)."""
    refuse_paths(spec.request, kwargs)  # before building: building may read a file (workload_file)
    request = build_request(spec.request, _given(spec, kwargs), strict=True)
    refuse_programs(request)
    refuse_set_paths(request)  # an engine flag's file (--chat-template=/etc/passwd) is a path argument too
    refuse_paths(spec.request, dict(request))  # and the defaults it took
    return request


def _tool_fn(spec: ToolSpec, read_only: bool) -> Any:
    """The async function the SDK registers for `spec`: its signature is the request's fields (less those
    a read-only server drops) plus `confirm` when gated, so the SDK publishes them as the input schema."""
    drop = NOT_MCP_INPUTS + (spec.read_only_without if read_only else ())

    async def tool(ctx: Context, **kwargs: Any) -> CallToolResult:
        unknown = kwargs.pop(UNKNOWN, [])
        kwargs = {k: v for k, v in kwargs.items() if not (isinstance(v, str) and v == NOT_SENT)}
        if unknown:
            return refusal(f"{spec.name} takes no argument {', '.join(map(repr, unknown))}; nothing was done")
        confirm = kwargs.pop("confirm", False)
        if not isinstance(confirm, bool):  # only JSON true opens the gate: "false", "no", 1 are refused
            # shown: cut and redacted, as every refused value is echoed ("x" * 5000 came back whole)
            return refusal(
                f"Invalid value for 'confirm': must be true or false, got {shown(confirm)}; nothing was done"
            )
        try:  # in a worker thread, as the job: checking 200,000 values must not stop the server answering others
            request = await anyio.to_thread.run_sync(_checked, spec, kwargs, abandon_on_cancel=True)
        except ConfigError as exc:
            return refusal(as_parameters(spec.request, str(exc)))
        gate = spec.gate
        try:  # the gate in a worker thread too, as a job: cloud_down's asks the TPU API (a failure is its one line)
            if gate is not None and confirm is not True and await run_job(None, lambda _: gate(request)):
                preview = await run_job(None, lambda _: spec.preview(request))
                return refusal(f"not done: {spec.name} {preview}; call {spec.name} again with confirm: true")
            out = await run_job(ctx, lambda on_progress: spec.job(request, on_progress))
            return result(out, spec.summary(out), lambda text: as_parameters(spec.request, text))
        except PartialFailure as exc:  # failed in part (cloud_down), or a verdict the CLI exits 10 on (plan, check):
            # the line, and the result as its content
            words = partial(as_parameters, spec.request)
            return refusal(words(str(exc)), exc.done, exc.exit_code, words)
        except ToolError as exc:  # the CLI's one-line message, without the SDK's "Error executing tool" prefix,
            return refusal(as_parameters(spec.request, str(exc)))  # naming this tool's arguments, not flags

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    words = partial(as_parameters, spec.request)
    params = [ctx_param, *signature_of(spec.request, drop, spec.parameters(read_only), words)]
    tool.__signature__ = inspect.Signature(params, return_annotation=spec.result)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | {"return": spec.result}
    tool.__name__ = spec.name
    return tool


def _validate_like_the_cli(server: MCPServer, name: str) -> None:
    """Publish the strict schema (with additionalProperties: false) but let the SDK pass values through
    unchecked (unknown names still refused), so build_request judges them and a refused value is the
    CLI's one-line ConfigError (naming the argument), not a multi-line pydantic report."""
    tool = server._tool_manager.get_tool(name)  # noqa: SLF001 (the SDK has no public hook for this)
    if tool is None:
        return
    strict = tool.fn_metadata.arg_model
    strict.model_config["extra"] = "forbid"
    strict.model_rebuild(force=True)
    tool.parameters = strict.model_json_schema(by_alias=True)
    # every argument not sent is NOT_SENT, dropped by the tool (_given): a default would read as sent
    passthrough: dict[str, Any] = {field_name: (Any, NOT_SENT) for field_name in strict.model_fields}
    lenient = create_model(f"{name}Arguments", __base__=_Arguments, **passthrough)
    tool.fn_metadata.arg_model = lenient


class _Arguments(ArgModelBase):
    """What the SDK hands a tool: every value as sent (build_request judges it), and the names the tool does
    not take collected in UNKNOWN, so the tool refuses them in one line (the SDK's own refusal is a
    multi-line pydantic report)."""

    onechip_unknown_arguments: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _collect_unknown(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        known = set(cls.model_fields) - {UNKNOWN}
        return {k: v for k, v in data.items() if k in known} | {UNKNOWN: sorted(set(data) - known)}


class _Server(MCPServer):
    """MCPServer answering a name it does not have in one redacted line (errors.one_line, cut: inputs.shown), which
    the SDK echoed whole and unredacted ('Unknown tool: <name>', logged at INFO; an unknown prompt with an ERROR
    traceback): an unknown tool is a tool error naming the tools there are; a prompt or resource (onechip serves none)
    an MCP error of invalid params. Nothing is logged."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if self._tool_manager.get_tool(name) is None:
            tools = ", ".join(t.name for t in self._tool_manager.list_tools())
            return refusal(f"no tool {shown(name)}; the tools: {tools}")
        return await super().call_tool(name, arguments, context)

    async def run_stdio_async(self) -> None:
        """The SDK's stdio server (MCPServer.run_stdio_async, mcp 2.3.0) reading the client's lines through
        mcp.stdio.CheckedLines, which answers each one the SDK would have dropped (no JSON, no message, an id that is
        no RequestId) with a JSON-RPC error. The low-level server is the SDK's private attribute: an SDK release
        without it runs the SDK's own stdio server."""
        lowlevel = getattr(self, "_lowlevel_server", None)
        if lowlevel is None:
            return await super().run_stdio_async()
        with client_lines() as lines:
            async with stdio_server(stdin=lines) as (read_stream, write_stream):
                lines.answer_on(write_stream)
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        raise MCPError(code=INVALID_PARAMS, message=one_line(f"no prompt {shown(name)}: this server has none"))

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        raise MCPError(code=INVALID_PARAMS, message=one_line(f"no resource {shown(str(uri))}: this server has none"))


def build_server(read_only: bool = False) -> MCPServer:
    """The onechip MCP server; `read_only` registers only the tools that change nothing (see mcp.tools). Raises
    HTTP_CLIENT_LOGGERS to WARNING, so no request is logged on stderr, and filters asyncio's logger so a cancelled
    call's interrupt kept by a task of its job is not logged as a traceback (bridge.InterruptedTaskFilter)."""
    mode = " This server is read-only." if read_only else ""
    server = _Server(name="onechip", version=__version__, instructions=INSTRUCTIONS + mode)
    for name in HTTP_CLIENT_LOGGERS:  # after MCPServer, which configures logging at INFO
        logging.getLogger(name).setLevel(logging.WARNING)
    tasks = logging.getLogger("asyncio")
    if not any(isinstance(f, InterruptedTaskFilter) for f in tasks.filters):  # one, however many servers are built
        tasks.addFilter(InterruptedTaskFilter())
    for spec in TOOLS:
        if not spec.available(read_only):
            continue
        server.add_tool(
            _tool_fn(spec, read_only),
            name=spec.name,
            title=spec.title,
            description=spec.description,
            annotations=spec.annotations(read_only),
            structured_output=True,
        )
        _validate_like_the_cli(server, spec.name)
    return server


def bearer_guard(app: Any, token: str) -> Any:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>` (else 401)."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            sent = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(sent, expected):
                await send(
                    {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"text/plain")]}
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await app(scope, receive, send)

    return guarded


def http_app(server: MCPServer, host: str, token: str | None) -> Any:
    """The streamable-HTTP ASGI app at /mcp; off 127.0.0.1 it needs `token` (ConfigError without one). The SDK's
    SESSION_ID_LOGGERS are raised to WARNING, and what they log above it is redacted (SessionIdRedactor), so no
    session id is logged."""
    if host not in LOCAL_HOSTS and not token:
        raise ConfigError(f"binding to {host} needs a bearer token: set ONECHIP_MCP_TOKEN or give --token-file")
    for name in SESSION_ID_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.WARNING)
        if not any(isinstance(f, SessionIdRedactor) for f in logger.filters):  # one per logger, however many apps
            logger.addFilter(SessionIdRedactor())
    app = server.streamable_http_app(host=host)
    return bearer_guard(app, token) if token else app


def memory_limit_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The heap this server may hold: $ONECHIP_MCP_MEMORY_GIB GiB, else half this machine's RAM. Raises
    ConfigError for a value that is not a positive number."""
    env = os.environ if environ is None else environ
    text = env.get(MEMORY_ENV)
    if text is None:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    try:
        gib = float(text)
    except ValueError:
        gib = 0.0
    if not (gib > 0 and math.isfinite(gib)):
        raise ConfigError(f"${MEMORY_ENV} must be a positive number of GiB, got {text!r}")
    return int(gib * GIB)


def _interrupt(signum: int, frame: object) -> None:
    """Ctrl-C's handler while a stdio server runs: KeyboardInterrupt at once, as SIGTERM's (cli.main). Python's own
    handler would let asyncio.run turn the first Ctrl-C into a cancellation of the server's task, whose stdio teardown
    waits on the SDK's stdin reader until the client's EOF (no word, no exit); asyncio keeps a handler it did not
    set."""
    raise KeyboardInterrupt


class StdioStopped(KeyboardInterrupt):
    """A stdio server stopped by a signal, its jobs done (or JOBS_STOP_S past): its process must leave without
    interpreter shutdown, which would wait on the SDK's stdin reader (an anyio worker thread, no daemon, that returns
    only at EOF) for as long as the client holds stdin open (cli.mcp_cmd leaves with os._exit)."""


def serve(read_only: bool, transport: str, host: str, port: int, token: str | None) -> None:
    """Run the server until the client leaves (stdio) or the process is stopped (http), its heap capped
    (procs.cap_heap; the engines it starts get the old limit back). Raises ConfigError for a cap below what the
    built server already holds: past it every allocation fails, and the first one that is not Python's aborted the
    process ('memory allocation of 1 bytes failed', exit 134) before it served anything. Over stdio, a signal
    (KeyboardInterrupt) waits up to JOBS_STOP_S for the interrupted jobs (a bench keeps its requests, an `up` stops
    the engine it was starting), then raises StdioStopped."""
    limit = memory_limit_bytes()
    server = build_server(read_only)
    held = heap_in_use_bytes()
    if held is not None and limit <= held:
        raise ConfigError(
            f"${MEMORY_ENV} caps the server at {limit / GIB:.3g} GiB, less than the {held / GIB:.3g} GiB it holds "
            "before its first job (VmData); give more"
        )
    cap_heap(limit)
    if transport == "stdio":
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not where it is ignored (a background job)
            signal.signal(signal.SIGINT, _interrupt)
        try:
            server.run("stdio")
        except KeyboardInterrupt:  # SIGTERM or Ctrl-C (cli.main): the cancelled calls' jobs are interrupted
            wait_for_jobs(JOBS_STOP_S)
            raise StdioStopped from None
        return
    import uvicorn

    app = http_app(server, host, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")
