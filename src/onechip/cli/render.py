"""Shared terminal rendering of the core's ProgressEvents: a rich live line on a terminal, plain lines
elsewhere (CI logs, a pipe), where a live line would show nothing until the job ends."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TextIO

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from onechip.errors import one_line, redacted_json
from onechip.progress import ProgressEvent, ProgressFn

UNKNOWN_WIDTH = 80  # columns: rich's own for a terminal that reports no size (rich.console.Console.size, 'width or 80')
MIN_WIDTH = 50  # columns: the narrowest click lays its own help out in (click.formatting.HelpFormatter, 'max(..., 50)')
# columns: the widest a terminal reports, struct winsize's ws_col being an unsigned short (TIOCGWINSZ, ioctl_tty(2))
MAX_COLUMNS = 2**16 - 1


def new_console(*, stderr: bool = False) -> Console:
    """A rich Console on stdout (or stderr), reading the terminal's width as rich does, except COLUMNS=0 (a script's
    `COLUMNS=$(tput cols)` where the terminal reports no size, as under `docker exec` before it is sized): rich took
    it as 0 columns and printed no text at all, so `plan` showed no budget, command or verdict and a refused input
    exited 2 without its error line; it is read as unknown (UNKNOWN_WIDTH). A width under MIN_WIDTH (COLUMNS=5) is
    MIN_WIDTH: rich cut every word to that many letters a line ('Usa', 'ge:'); the terminal wraps the longer lines. One
    over MAX_COLUMNS (COLUMNS=99999999999), which no terminal reports, is MAX_COLUMNS: rich, which takes any COLUMNS,
    laid --help's panels out that wide and ran out of memory."""
    made = Console(stderr=stderr)
    made.width = UNKNOWN_WIDTH if made.width < 1 else min(max(made.width, MIN_WIDTH), MAX_COLUMNS)
    return made


console = new_console()


def said(text: object) -> str:
    """Text onechip did not write (a cloud API's error, a server's message, an engine's or ssh's words, a progress
    message quoting one) as a rich markup string shows it: one line, redacted (errors.one_line: a token or a signed
    URL's signature as '***', a terminal escape sequence as '\\x1b'), its markup escaped (a '[bold]' in it is text, a
    '[/x]' no MarkupError). The one way such text reaches a console.print, a table cell or a progress line; plain
    output (typer.echo) takes errors.one_line alone."""
    return escape(one_line(str(text)))


def print_json(
    data: BaseModel | Sequence[BaseModel], added: dict[str, Any] | None = None, indent: int | None = 2
) -> None:
    """`data` (a result, or a list of them) as JSON on stdout, redacted as one document (errors.redacted_json, as an MCP
    tool's structured content is): a secret in a field its source did not redact (an API's message, a path, a note)
    is '***' in it. `added`: keys put after the result's (an error object's "error" and "exit_code"); `indent` None:
    one line."""
    text = (
        data.model_dump_json()
        if isinstance(data, BaseModel)
        else "[" + ",".join(d.model_dump_json() for d in data) + "]"
    )
    document = redacted_json(text)
    if added:
        document = {**document, **added}
    typer.echo(json.dumps(document, indent=indent, ensure_ascii=False, separators=None if indent else (",", ":")))


def print_written(where: str, as_json: bool) -> None:
    """Where a command wrote its run (`where`: 'runs/<run-id>/summary.json, ...'): dim on stdout, or a plain line
    on stderr under --json (stdout holds the JSON alone): without --out each run goes to a new runs/<run-id>/,
    which a script needs to pass on to cost, report or --resume, and the JSON does not hold it."""
    if as_json:
        print(where, file=sys.stderr)
    else:
        console.print(f"[dim]{where}[/]")


PLAIN_EVERY_S = 10.0  # a plain line at least this often while a job runs, so a CI log shows it is alive


@contextmanager
def live_progress(transient: bool = False) -> Iterator[ProgressFn]:
    """Yield a ProgressFn that shows one line per stage: spinner, stage, message, bar, elapsed. Off a
    terminal it prints plain lines to stderr instead (see plain_progress)."""
    if not console.is_terminal:
        with plain_progress(sys.stderr) as on_plain:
            yield on_plain
        return
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

    def on_progress(event: ProgressEvent) -> None:
        if event.stage not in tasks:
            tasks[event.stage] = progress.add_task(said(event.message), stage=event.stage, total=None)
        task = tasks[event.stage]
        total = event.total if event.total else None
        progress.update(task, description=said(event.message), completed=event.done or 0, total=total)

    with progress:
        try:
            yield on_progress
        except BaseException:
            progress.live.transient = True  # an error's line is the last word: no stale spinner above it
            raise


def _topic(event: ProgressEvent) -> str:
    """What a message is about: its text before the first ':' ('smoke', 'context 128 x 1 clients, rep 1/2')."""
    return event.message.split(":", 1)[0]


def _counted(event: ProgressEvent) -> bool:
    """Whether `done` counts things (a whole number), not a time or other quantity that moves by itself."""
    return event.done is None or float(event.done).is_integer()


class PlainProgress:
    """Plain progress lines, `[stage] message (done/total) [elapsed]`: one at once for a new stage, a new
    step (a whole `done`, a count of requests or probes, moved) or a new topic (the text before ':'), else at
    most one per `every_s`; `tick` repeats the last event when nothing was printed for `every_s` (a job waiting on
    a slow or silent server), with the time left to its `until`. A quiet event is never printed at once: it is what
    the heartbeat repeats (the retry an outage line announced went stale: 'retry 1 of 6 in 1 s' was repeated
    through retry 2's 60-s wait). A fractional `done` is a quantity that moves on its own, the seconds of a boot or
    a create waited against its timeout: it is no step (a 30 s boot printed 60 lines) and shows rounded."""

    def __init__(
        self, write: Callable[[str], None], every_s: float = PLAIN_EVERY_S, clock: Callable[[], float] = time.monotonic
    ):
        self.write, self.every_s, self.clock = write, every_s, clock
        self.started = clock()
        self.last_at: float | None = None
        self.last: ProgressEvent | None = None

    def line(self, event: ProgressEvent) -> str:
        step = ""
        if event.done is not None and event.total:
            step = f" ({event.done:g}/{event.total:g})" if _counted(event) else f" ({event.done:.0f}/{event.total:.0f})"
        return f"[{event.stage}] {one_line(event.message)}{step} [{self.clock() - self.started:.0f} s]"

    def __call__(self, event: ProgressEvent) -> None:
        last, now = self.last, self.clock()
        self.last = event
        if event.quiet:  # the heartbeat repeats it: what it waits on now, not the line printed before it
            return
        new_step = (
            last is None
            or event.stage != last.stage
            or (event.done != last.done and _counted(event))
            or _topic(event) != _topic(last)
        )
        if new_step or self.last_at is None or now - self.last_at >= self.every_s:
            self.write(self.line(event))
            self.last_at = now

    def tick(self) -> None:
        last = self.last
        if last is not None and self.last_at is not None and self.clock() - self.last_at >= self.every_s:
            left = f", {max(0.0, last.until - self.clock()):.0f} s left" if last.until is not None else ""
            self.write(f"{self.line(last)} still running{left}")
            self.last_at = self.clock()


@contextmanager
def plain_progress(stream: TextIO, every_s: float = PLAIN_EVERY_S) -> Iterator[ProgressFn]:
    """A PlainProgress writing to `stream`, with a daemon heartbeat that calls `tick` every second."""
    lock = threading.Lock()

    def write(text: str) -> None:
        with lock:
            print(text, file=stream, flush=True)

    plain = PlainProgress(write, every_s)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(1.0):
            plain.tick()

    heart = threading.Thread(target=beat, name="onechip-progress", daemon=True)
    heart.start()
    try:
        yield plain
    finally:
        stop.set()
        heart.join()


def print_whole(table: Table, out: Console | None = None) -> None:
    """Print `table` no narrower than the least widths of its columns: below them (an 80-column or piped console)
    rich drops the rightmost columns whole, and advise lost its $/h and $/M columns to a 24-character chip name. A
    wider table's lines pass the console's width, which a terminal wraps and a pipe or file keeps (rich's own print
    caps `width` at the console's, so a console of that width prints it). out: the console to print on (default
    the module's)."""
    out = out or console
    least = _uncut_width(table, out)
    if least <= out.width:
        out.print(table)
        return
    wide = Console(file=out.file, width=least, force_terminal=out.is_terminal, no_color=out.no_color)
    wide.print(table, crop=False)


_RICH_PRIVATE = ("_measure_column", "_calculate_column_widths", "_extra_width")  # what _uncut_width calls


def _uncut_width(table: Table, out: Console) -> int:
    """The least width (characters) at which rich gives each column of `table` at least its longest word: rich shrinks
    the widest columns first, below that word, which it then cuts ('…'), so at the table's measured minimum (the sum
    of those words) plan's layer table still read 'slidi…' and 'B/tok…' on a 40-column terminal. Found by bisection
    between that minimum and the table's natural width (rich's Table._calculate_column_widths, a private method). A
    title's width (titled_table's min_width) is no least width: rich caps it at the console and wraps the title, where
    taking it printed `cost --run`'s 87-character title over a 90-column table on an 80-column terminal."""
    measured = Measurement.get(out, out.options.update(width=10_000), table)
    wide = out.options.update_width(10_000)
    if not all(hasattr(table, name) for name in _RICH_PRIVATE):  # rich is not pinned: a release may rename them
        return measured.minimum
    words = [table._measure_column(out, wide, column).minimum for column in table.columns]  # noqa: SLF001

    def uncut(width: int) -> bool:
        options = out.options.update_width(width - table._extra_width)  # noqa: SLF001 (as Table renders itself)
        return all(w >= m for w, m in zip(table._calculate_column_widths(out, options), words, strict=True))  # noqa: SLF001

    low = sum(words) + table._extra_width  # noqa: SLF001 (rich's own minimum, before it clamps to min_width)
    high = max(low, measured.maximum)
    while low < high:
        mid = (low + high) // 2
        low, high = (low, mid) if uncut(mid) else (mid + 1, high)
    return low


def titled_table(title: str, *headers: str, **options: object) -> Table:
    """A rich Table at least as wide as its title (rich still caps it at the terminal's width), so a title
    longer than the columns beneath it is not wrapped mid-phrase."""
    return Table(*headers, title=title, min_width=len(title), **options)  # type: ignore[arg-type]
