"""Shared terminal rendering: a rich live progress line fed by the core's ProgressEvents."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from onechip.progress import ProgressEvent, ProgressFn

console = Console()


@contextmanager
def live_progress(transient: bool = False) -> Iterator[ProgressFn]:
    """Yield a ProgressFn that shows one line per stage: spinner, stage, message, bar, elapsed."""
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold cyan]{task.fields[stage]:<6}[/]"),
        TextColumn("{task.description}"),
        BarColumn(bar_width=24),
        TimeElapsedColumn(),
        console=console,
        transient=transient,
    )
    tasks: dict[str, TaskID] = {}
    started: dict[str, float] = {}

    def on_progress(event: ProgressEvent) -> None:
        if event.stage not in tasks:
            started[event.stage] = time.monotonic()
            tasks[event.stage] = progress.add_task(event.message, stage=event.stage, total=None)
        task = tasks[event.stage]
        total = event.total if event.total else None
        progress.update(task, description=event.message, completed=event.done or 0, total=total)

    with progress:
        yield on_progress
