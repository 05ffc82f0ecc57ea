"""The engine log as an agent reads it: the request of `logs` and `summarize_logs`, and the distilled
summary (boot timeline, memory lines, warnings, errors, known traps) that `summarize_logs` returns."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from onechip.schemas.common import ResultModel
from onechip.schemas.inputs import RequestModel

LineKind = Literal["timeline", "memory", "warning", "error", "trap"]


class LogsRequest(RequestModel):
    """The request of `logs`: the last lines of the engine log `up` started (redacted)."""

    lines: int = Field(default=200, ge=1, le=5000, description="How many of the last log lines to return.")


class LogTail(ResultModel):
    """The last lines of the engine log, redacted."""

    lines: list[str] = Field(default_factory=list, description="Log lines, oldest first, secrets replaced by ***.")
    total_lines: int = Field(default=0, description="Lines in the whole log.")


class SummarizeLogsRequest(RequestModel):
    """The request of `summarize_logs`: which log, and whether the served model explains it."""

    path: Path | None = Field(
        default=None, description="A vLLM log file to read (default: the log of the engine `up` started)."
    )
    explain: bool = Field(
        default=False,
        description="Also ask the running engine's own model to explain the summary (one chat request).",
    )
    max_lines: int = Field(
        default=80, ge=10, le=2000, description="Most non-error lines kept; error lines are never dropped."
    )


class LogLine(ResultModel):
    """One kept log line and why it was kept."""

    number: int = Field(description="1-based line number in the log.")
    kind: LineKind = Field(description="timeline | memory | warning | error | trap.")
    text: str = Field(description="The line, redacted.")
    trap: str | None = Field(default=None, description="For kind 'trap': the known trap and what to change.")


class LogSummary(ResultModel):
    """The engine log distilled by rules (onechip.vllm.log_summary); error lines are always all kept."""

    source: str = Field(description="The log file read.")
    total_lines: int = Field(description="Lines in the log.")
    lines: list[LogLine] = Field(default_factory=list, description="Kept lines, in log order.")
    counts: dict[str, int] = Field(default_factory=dict, description="Kept lines per kind (before any cut).")
    dropped: int = Field(default=0, description="Non-error lines left out to stay under max_lines.")
    dropped_errors: int = Field(
        default=0,
        description="Error and trap lines left out from the middle beyond the 2,000 kept (a crash loop; "
        "vllm.log_summary.MAX_ERROR_LINES); 0 for any boot log.",
    )
    traps: list[str] = Field(default_factory=list, description="Known traps found, one line each with the fix.")
    explanation: str | None = Field(default=None, description="The served model's reading (explain=true).")
    explained_by: str | None = Field(default=None, description="Model and URL that wrote the explanation.")
