"""Running a coroutine from synchronous code: asyncio.run, and a stop inside it retrieved from the run's task."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_to_end(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(`main`): its result, or what it raises. Must not be called from a running event loop.

    A KeyboardInterrupt (or SystemExit) raised inside a task's step (a progress callback's, or the CLI's SIGTERM
    handler or a second Ctrl-C landing in whatever frame runs) is stored in that task as well as raised out of the loop
    (asyncio.Task.__step, CPython 3.11-3.13), and it reaches the run's main task as asyncio.run stops. Nothing reads
    that task's exception, and asyncio logs 'Task exception was never retrieved' and the interrupt's traceback when
    the task is collected, at interpreter exit at the latest, under the caller's own one-line message. The main task's
    exception is read here before it goes on; the tasks it awaited through gather were read by gather. A stop that a
    task group wrapped in a BaseExceptionGroup goes up as itself (_stop_in)."""
    tasks: list[asyncio.Task[Any]] = []

    async def tracked() -> T:
        if (task := asyncio.current_task()) is not None:
            tasks.append(task)
        return await main

    try:
        return asyncio.run(tracked())
    except BaseExceptionGroup as group:
        raise _stop_in(group) or group from None
    finally:
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()  # read, so asyncio does not log it as unseen: it is on its way up now


def _stop_in(group: BaseExceptionGroup) -> BaseException | None:
    """The first KeyboardInterrupt or SystemExit among `group`'s leaves, None if it holds none. An anyio task group
    (the MCP SDK's client, under the agent check) raises what its body raised wrapped in a BaseExceptionGroup
    (anyio 4 TaskGroup.__aexit__), a Ctrl-C too, which the callers' `except KeyboardInterrupt` then did not take:
    the stop is what goes up, as asyncio's own TaskGroup raises it (CPython 3.11+, `_base_error`)."""
    stops, _ = group.split((KeyboardInterrupt, SystemExit))
    stop: BaseException | None = stops
    while isinstance(stop, BaseExceptionGroup):
        stop = stop.exceptions[0]
    return stop
