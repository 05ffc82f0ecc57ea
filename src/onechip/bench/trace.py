"""Trace replay (`bench --workload trace --trace FILE`): recorded requests sent at their recorded times.

A trace is JSONL, one request per line, in the shape the peers accept (AIPerf's and Mooncake's
`{"timestamp": ms, "input_length": tokens, "output_length": tokens}`; GuideLLM/vLLM custom datasets name the
lengths `prompt_tokens` / `output_tokens`): a send time (`timestamp` in milliseconds, or `timestamp_s` in
seconds; absent = all at once), the prompt length in tokens, and the output length in tokens. Text prompts
are not replayed verbatim: each request gets a prompt of its length as the server counts it, unique from its
first token (bench.prompts), so the prefix cache serves nothing a real replay would not.

Send times are offsets from the trace's first timestamp, divided by `trace_speed` (2 = twice as fast). The
run is open loop at those times, with at most `clients` requests in flight; a send that waits for a free slot
is late, and the run's slip says so (the schedule ran past what the server can take).
"""

from __future__ import annotations

import hashlib
import statistics
from pathlib import Path

from pydantic import AliasChoices, Field, ValidationError

from onechip import jsontext
from onechip.errors import ConfigError
from onechip.paths import read_regular
from onechip.schemas.bench import MAX_REQUESTS, MAX_SECONDS, MAX_TOKENS
from onechip.schemas.common import StrictModel, first_problem


class TraceItem(StrictModel):
    """One recorded request."""

    model_config = {"extra": "ignore", "allow_inf_nan": False}  # traces carry more (hash_ids, session ids)

    timestamp_ms: float | None = Field(
        default=None, validation_alias=AliasChoices("timestamp", "timestamp_ms"), description="Send time, ms."
    )
    timestamp_s: float | None = Field(default=None, description="Send time, s (instead of timestamp).")
    input_tokens: int = Field(
        ge=1,
        le=MAX_TOKENS,
        validation_alias=AliasChoices("input_length", "prompt_tokens", "input_tokens"),
        description="Prompt length, tokens.",
    )
    output_tokens: int = Field(
        ge=1,
        le=MAX_TOKENS,
        validation_alias=AliasChoices("output_length", "output_tokens", "max_tokens"),
        description="Output length, tokens.",
    )

    def at_s(self) -> float:
        if self.timestamp_s is not None:
            return self.timestamp_s
        return (self.timestamp_ms or 0.0) / 1000.0


def load_trace(path: Path, sha256: str | None = None) -> list[TraceItem]:
    """The trace's requests in file order. `sha256`: the hex digest the run started with (BenchConfig.input_sha256);
    a run reads its trace again for each repetition, and other bytes then would mix two workloads in one run.
    Raises ConfigError naming the file and line of a bad entry, or when the file is missing, empty, not text,
    longer than MAX_REQUESTS lines, or not the bytes `sha256` names."""
    try:
        data = read_regular(Path(path))
        lines = data.decode("utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"--trace {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--trace {path}: not UTF-8 text (byte {exc.start}); a trace is JSONL") from None
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ConfigError(
            f"--trace {path} changed during the run (not the bytes it started with): restore it to resume, or start a "
            "new run"
        )
    if len(lines) > MAX_REQUESTS:
        raise ConfigError(f"--trace {path}: {len(lines):,} lines; at most {MAX_REQUESTS:,} requests")
    items = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            items.append(TraceItem.model_validate(jsontext.loads(line)))
        except (ValueError, ValidationError) as exc:
            first = (
                str(exc).splitlines()[0]
                if not isinstance(exc, ValidationError)
                else first_problem(exc, root="entry", more=False)
            )
            raise ConfigError(f"--trace {path} line {n}: {first}") from None
    if not items:
        raise ConfigError(f"--trace {path}: no requests in it")
    return items


def offsets_s(items: list[TraceItem], speed: float) -> list[float]:
    """Send offsets (s from the first request), scaled by 1 / speed. Out-of-order timestamps keep file order
    but never send before the earliest. Raises ConfigError when the replay would last past MAX_SECONDS."""
    t0 = min(i.at_s() for i in items)
    offsets = [(i.at_s() - t0) / speed for i in items]
    if max(offsets) > MAX_SECONDS:
        raise ConfigError(
            f"--trace replays over {_seconds_text(max(offsets))} at --trace-speed {speed:g}; at most "
            f"{MAX_SECONDS:,.0f} s"
        )
    return offsets


def _seconds_text(seconds: float) -> str:
    """A length in seconds as a person reads it: whole seconds to 1e9 (~32 years), beyond in two significant figures
    (a timestamp of 1e300 ms printed 298 digits)."""
    return f"{seconds:,.0f} s" if seconds < 1e9 else f"{seconds:.1e} s"


def median_input(items: list[TraceItem]) -> int:
    """The trace's median prompt length, tokens: the cell's context in the summary."""
    return round(statistics.median(i.input_tokens for i in items))
