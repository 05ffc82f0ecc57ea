"""Progress reporting from the core to whatever shell runs it (the CLI draws it with rich).

The core never prints; it calls a `ProgressFn` with `ProgressEvent`s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    stage: str  # 'install', 'boot', 'plan', 'check', 'bench', 'cost', 'report'
    message: str
    done: float | None = None  # units of work finished (requests, seconds, probes)
    total: float | None = None  # total units, when known
    # a status, not news (a retry an outage line already announced): shown live and repeated by a plain log's
    # heartbeat, never a line of its own
    quiet: bool = False
    until: float | None = None  # time.monotonic() when what the message waits on is due: a heartbeat says what is left


ProgressFn = Callable[[ProgressEvent], None]


def no_progress(event: ProgressEvent) -> None:
    """The default sink: drop the event."""
