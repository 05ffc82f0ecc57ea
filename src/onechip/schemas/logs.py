"""The engine log as an agent reads it: the request of `logs` and `summarize_logs`, and the distilled
summary (the boot's verdict, boot timeline, memory lines, warnings, errors, known traps) that `summarize_logs` and
`onechip logs FILE` return."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from onechip.schemas.common import ResultModel
from onechip.schemas.inputs import RequestModel

LineKind = Literal["timeline", "memory", "warning", "error", "trap"]


class LogsRequest(RequestModel):
    """The request of `logs`: the last lines of the engine log `up` started (redacted), or of one of its replicas."""

    lines: int = Field(
        default=200, ge=1, le=5000, description="How many lines to return: the last ones, or a page from `offset`."
    )
    offset: int | None = Field(
        default=None,
        ge=0,
        description="0-based number of the first line to return, a page of `lines` lines from it (the next page: "
        "first_line + the lines returned; total_lines says where the log ends). Default: the last `lines` lines.",
    )
    replica: int | None = Field(
        default=None,
        ge=0,
        description="Replica K's log, 0-based, of a set `up --replicas N` started (default: the engine's, with "
        "replicas the router's).",
    )


class LogTail(ResultModel):
    """The last lines of the engine log, redacted."""

    lines: list[str] = Field(default_factory=list, description="Log lines, oldest first, secrets replaced by ***.")
    total_lines: int = Field(default=0, description="Lines in the whole log.")
    first_line: int = Field(
        default=0, description="0-based number of the first line returned (the `offset` of this page)."
    )
    note: str = Field(
        default="",
        description="What the lines cannot say: that the engine's log writer is gone (its log grows no more).",
    )


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


BootOutcome = Literal["started", "KV cache allocated", "did not start", "unknown"]


class BootVerdict(ResultModel):
    """What the boot a log holds came to, and what it ran with: the boot-log grammar's reading of it (its last boot:
    vllm.bootlog.parse_boot_log, the one plan --against reads), nothing parsed apart."""

    outcome: BootOutcome = Field(
        description="'started' (the engine logged it was ready: 'init engine ... took' or 'Application startup "
        "complete'), 'KV cache allocated' (no ready line, but the KV cache size or concurrency line, which vLLM "
        "prints once its start-up check of the pool passed, and no error: an excerpt that stops there), 'did not "
        "start' (it logged why not: `cause`), 'unknown' (the log ends before any of these)."
    )
    cause: str | None = Field(
        default=None,
        description="Why the boot did not start, one line with what to change (bootlog.failure_cause); for a started "
        "engine, the error it logged after.",
    )
    boots_in_log: int = Field(
        default=1, description="Boots the log holds (restarts, logs pasted together); this verdict is of the last."
    )
    model: str | None = Field(default=None, description="The model the log names (its args or engine config).")
    max_model_len: int | None = Field(
        default=None, description="The length the engine served or was refused at, tokens (auto-fit's where it fit)."
    )
    tensor_parallel_size: int | None = Field(default=None, description="Tensor-parallel size the log names.")
    data_parallel_size: int | None = Field(
        default=None,
        description="Data-parallel size the log names (each DP rank an engine core with its own KV cache: the figures "
        "are one core's).",
    )
    data_parallel_rank: int | None = Field(
        default=None,
        description="The data-parallel rank of the engine core whose KV cache lines these are ('EngineCore_DP3'), "
        "where it is not 0 (every core of 0.10 - 0.17 is tagged, DP 1's 'EngineCore_DP0' too).",
    )
    kv_cache_tokens: int | None = Field(default=None, description="KV cache size the engine logged, tokens.")
    kv_cache_gib: float | None = Field(
        default=None, description="KV cache memory the engine logged, GiB (per GPU; a TPU's 'total_hbm_avail')."
    )
    max_concurrency: float | None = Field(
        default=None, description="The engine's 'Maximum concurrency' at max_concurrency_context tokens, x."
    )
    max_concurrency_context: int | None = Field(
        default=None, description="Tokens per request the concurrency is stated for."
    )
    engine_version: str | None = Field(default=None, description="vLLM version the log printed.")
    device_name: str | None = Field(
        default=None, description="The card the log names (a kernel config file's, nvidia-smi's, a TPU type)."
    )
    platform: str | None = Field(
        default=None,
        description="The platform the log shows vLLM ran on, by the lines only it prints (vllm.bootlog.PLATFORMS: "
        "'Platform plugin metal is activated' is Apple Metal via vllm-metal, though its token line says 'CPU').",
    )


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
    boot: BootVerdict | None = Field(
        default=None,
        description="The boot's verdict; None for a log of more than vllm.log_summary.MAX_BOOT_LOG_CHARS characters "
        "(64 Mi: summarized, its boot not read).",
    )
    explanation: str | None = Field(default=None, description="The served model's reading (explain=true).")
    explained_by: str | None = Field(default=None, description="Model and URL that wrote the explanation.")
