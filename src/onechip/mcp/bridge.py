"""How a job's request model becomes an MCP tool's input, and how a job runs under an MCP tool call.

- `signature_of(model)`: one keyword parameter per request field, carrying the field's type, range,
  description and validators, so the SDK publishes the model's own JSON Schema as the tool's
  `inputSchema` (what an agent sees is what the CLI validates). The request itself is then built with
  schemas.inputs.build_request, so a refused value is the CLI's one-line ConfigError.
- `run_job(ctx, job)`: the job runs in a worker thread (the core's jobs are synchronous and start their
  own event loops); each ProgressEvent becomes an MCP progress notification. A cancelled call raises
  KeyboardInterrupt in the job's thread once, at once (an asynchronous exception, delivered at its next Python
  instruction, so a job that reports no progress for minutes, a boot or one long request, stops too), or as it
  starts when it had not yet; the core treats it as one Ctrl-C: bench keeps every finished request on disk and
  raises Interrupted (resume continues it), `up` stops the engine it was starting, demo stops its engine (and
  deletes its TPU) in a cleanup whose progress events are dropped, never a second interrupt. The interrupt may land
  in a task of the job's own event loop that nobody awaits (aiohttp's write_bytes in a bench), which keeps it as its
  exception: asyncio's report of it is not logged (InterruptedTaskFilter).
"""

from __future__ import annotations

import ctypes
import inspect
import json
import logging
import threading
import types
import typing
from collections.abc import Callable, Iterable
from typing import Annotated, Any, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from onechip.errors import (
    OnechipError,
    error_line,
    internal_error_line,
    one_line,
    os_error_line,
    redact,
    redacted_json,
)
from onechip.progress import ProgressEvent, ProgressFn

T = TypeVar("T")


def signature_of(
    model: type[BaseModel],
    drop: Iterable[str] = (),
    extra: Iterable[inspect.Parameter] = (),
    words: Callable[[str], str] = str,
) -> list[inspect.Parameter]:
    """Keyword parameters for every field of `model` (less `drop`), then `extra`; a required field has no
    default. An optional one whose type takes no null is published nullable with the default null, its own default
    said in its description ('Default (left out or null): [128, 1024].'): a client that fills in every published
    default then sends what leaving the arguments out does, and one it sends equal to its default is given, as a flag
    typed at its default is (server._given). One whose type takes null (None has a meaning of its own: the engine's
    default) keeps its default. `words` rewrites each description: the server passes schemas.inputs.as_parameters, so
    a description the CLI's --help shares ('unless --duration-s') names the tool's arguments ('unless duration_s'), as
    its errors and results do."""
    params = []
    for name, field in model.model_fields.items():
        if name in drop:
            continue
        described = None if field.description is None else words(field.description)
        # a field's type and constraints as one annotation, built at run time
        kind: Any = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation  # type: ignore[name-defined]
        default = inspect.Parameter.empty if field.is_required() else field.get_default(call_default_factory=True)
        if default is not inspect.Parameter.empty and not admits_null(field.annotation):
            said = json.dumps(default, default=str)
            described = f"{described or ''} Default (left out or null): {said}.".lstrip()
            kind, default = kind | None, None
        annotation = Annotated[kind, Field(description=described)]
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
    return params + list(extra)


def admits_null(annotation: Any) -> bool:
    """True when a field typed `annotation` takes None (Optional, a union with None, Annotated over one)."""
    if annotation is None or annotation is type(None):
        return True
    if typing.get_origin(annotation) is typing.Annotated:
        return admits_null(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(admits_null(a) for a in typing.get_args(annotation))
    return False


def result(model: BaseModel, summary: str, words: Callable[[str], str] = str) -> CallToolResult:
    """A tool result: `summary` as text, one line as a refusal's (errors.one_line: a value it echoes, such as an
    out_dir with a newline or a terminal escape, does not break it), `model` as structured content; both redacted.
    `words` rewrites the summary and every `verdict` and warning `message` in the content (the server passes
    schemas.inputs.as_parameters, so what a result tells the caller to change names the tool's arguments, as its
    errors do)."""
    data = _told(redacted_json(model.model_dump_json()), words)
    return CallToolResult(content=[TextContent(type="text", text=words(one_line(summary)))], structured_content=data)


def _told(data: T, words: Callable[[str], str], keys: tuple[str, ...] = ("verdict",)) -> T:
    """`data` (parsed JSON) with each string under a `keys` key passed through `words`, at any depth: every
    'verdict', and the 'message' of each item under 'warnings' (a plan's; an API's own message is left as said)."""
    if isinstance(data, dict):
        return {  # type: ignore[return-value]
            k: words(v) if k in keys and isinstance(v, str)
            else _told(v, words, ("verdict", "message") if k == "warnings" else ("verdict",))
            for k, v in data.items()
        }  # fmt: skip
    if isinstance(data, list):
        return [_told(v, words, keys) for v in data]  # type: ignore[return-value]
    return data


def refusal(
    message: str, done: BaseModel | None = None, exit_code: int = 1, words: Callable[[str], str] = str
) -> CallToolResult:
    """A tool error result (isError) with one redacted line (errors.one_line): what was refused and why. Its
    whitespace runs are one space, so a value the caller sent with a newline in it (a path, a chip) does not break
    the line, and a control character shows escaped; it is not cut (a gate's preview names every command it would
    run, however many replicas). `done`: the result of a job that failed in part or whose verdict the CLI exits 10 on
    (PartialFailure), the structured content, redacted and its verdicts and warnings passed through `words` as a
    result's are, with "error" (the line) and "exit_code" (the CLI's) added, as `cloud down --json` prints it."""
    text = one_line(message)
    data = (
        None
        if done is None
        else {**_told(redacted_json(done.model_dump_json()), words), "error": text, "exit_code": exit_code}
    )
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True, structured_content=data)


class PartialFailure(ToolError):
    """A job that failed after doing part of its work, or ran to a verdict the CLI exits 10 on: its error carries
    its result model as `result` (errors.CloudDownError's deleted, failed, unreachable; DoesNotFit's plan;
    ChecksNotPassed's report). `done` is that result, `exit_code` the error's, so the tool error still gives the agent
    the result the CLI's --json prints (refusal)."""

    def __init__(self, line: str, done: BaseModel, exit_code: int) -> None:
        super().__init__(line)
        self.done, self.exit_code = done, exit_code


def _progress_sink(ctx: Context | None, stop: threading.Event) -> ProgressFn:
    """A ProgressFn for the worker thread: forwards each event as an MCP progress notification (progress
    counts events, since a job's own `done` restarts per stage), none once `stop` (the call was cancelled: its
    job got its one interrupt from run_job, and the events of its cleanup have no one to go to). It raised
    KeyboardInterrupt there: a cancelled demo's cleanup, which reports its stage 'down', was itself interrupted
    and left its engine running (and its TPU billing) and its run.json saying 'running'."""
    count = 0

    def on_progress(event: ProgressEvent) -> None:
        nonlocal count
        if stop.is_set() or ctx is None:
            return
        count += 1
        share = f" ({event.done:g}/{event.total:g})" if event.done is not None and event.total else ""
        message = redact(f"{event.stage}: {event.message}{share}")
        try:
            anyio.from_thread.run(ctx.report_progress, count, None, message)
        except RuntimeError:  # the call was abandoned and its event loop is gone: nobody to tell
            return

    return on_progress


class _Interruptible:
    """The worker thread running one job, and a way to raise KeyboardInterrupt in it while (and only while)
    the job runs: `running` is changed and read under `lock`, so the exception never lands in the thread
    pool's own code after the job has returned."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread_id: int | None = None

    def interrupt(self) -> None:
        with self.lock:
            if self.thread_id is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self.thread_id), ctypes.py_object(KeyboardInterrupt)
                )


class InterruptedTaskFilter(logging.Filter):
    """Drops asyncio's record of a KeyboardInterrupt a task kept ('Task exception was never retrieved', logged at
    ERROR with its traceback when the task is collected): in the server that is run_job's interrupt of a cancelled
    call, delivered in the job's thread wherever it was, and the job's own handling of it (a bench keeps its requests)
    is what the call says. Every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], KeyboardInterrupt))


# the job threads running now (run_job), counted so a server stopped by a signal lets its interrupted jobs keep what
# they measured and stop the engines they were starting before the process leaves (wait_for_jobs)
_jobs = threading.Condition()
_running = [0]


def wait_for_jobs(timeout_s: float) -> bool:
    """Wait up to `timeout_s` seconds for every job thread to return; whether they all did."""
    with _jobs:
        return _jobs.wait_for(lambda: _running[0] == 0, timeout_s)


async def run_job(ctx: Context | None, job: Callable[[ProgressFn], T]) -> T:
    """Run `job(on_progress)` in a worker thread; OnechipError -> ToolError with its one-line message, PartialFailure
    when the error carries what the job did (its `result`).
    On cancellation the job is interrupted as by Ctrl-C (see the module docstring)."""
    stop = threading.Event()
    on_progress = _progress_sink(ctx, stop)
    running = _Interruptible()

    def work() -> T:
        with _jobs:
            _running[0] += 1
        started = False
        try:
            try:
                try:
                    with running.lock:  # a call cancelled before its job started: that job never starts
                        if stop.is_set():
                            raise KeyboardInterrupt
                        running.thread_id = threading.get_ident()
                    started = True
                    return job(on_progress)
                finally:
                    with running.lock:
                        running.thread_id = None
            except KeyboardInterrupt:  # also one delivered while the finally above waited for the lock
                # a job that measures says what it kept itself (Interrupted: bench.run_grid, or the tool's
                # paths.ctrl_c_says_what_is_kept); one interrupted here kept nothing it could name
                raise ToolError("cancelled" if started else "cancelled before it started; nothing was done") from None
        finally:  # no interrupt lands here: thread_id is None
            with _jobs:
                _running[0] -= 1
                _jobs.notify_all()

    try:
        return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    except anyio.get_cancelled_exc_class():
        stop.set()
        running.interrupt()
        raise
    except ToolError:
        raise
    except Exception as exc:  # noqa: BLE001 (the server's edge: every failure is the client's one line)
        if isinstance(done := getattr(exc, "result", None), BaseModel):  # it failed in part: what it did is kept
            raise PartialFailure(failure_line(exc), done, getattr(exc, "exit_code", 1)) from None
        raise ToolError(failure_line(exc)) from None


def failure_line(exc: BaseException) -> str:
    """One redacted line for a failed job: an OnechipError's own message, an OSError's path and reason
    (errors.os_error_line), a MemoryError as the guard that stopped it, anything else as its type and first
    line (a bug, still told to the client rather than "Error executing tool"); at most errors.MAX_LINE_CHARS."""
    if isinstance(exc, OnechipError):
        text = str(exc)
    elif isinstance(exc, OSError):
        text = os_error_line(exc)
    elif isinstance(exc, MemoryError):
        text = "out of memory: the job needed more than this server may hold ($ONECHIP_MCP_MEMORY_GIB); it stopped"
    else:
        text = internal_error_line(exc)
    return error_line(text)
