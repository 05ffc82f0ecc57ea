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
    exception is read here before it goes on; the tasks it awaited through gather were read by gather."""
    tasks: list[asyncio.Task[Any]] = []

    async def tracked() -> T:
        if (task := asyncio.current_task()) is not None:
            tasks.append(task)
        return await main

    try:
        return asyncio.run(tracked())
    finally:
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()  # read, so asyncio does not log it as unseen: it is on its way up now
