"""Read a vLLM boot log into a BootRecord: version, timeline, weight load, KV cache size, warnings, errors.

Line formats (vLLM 0.32.0 CPU build, recorded in tests/data/vllm_cpu_0.32_boot.log):
    (APIServer pid=N) INFO 11-29 09:52:23 [api_utils.py:347]  ... version 0.32.0
    (EngineCore pid=N) INFO 11-29 09:52:54 [core.py:133] Initializing a V1 LLM engine (v0.32.0) with config: ...
    (Worker pid=N) INFO ... Loading weights took 2.44 seconds
    (EngineCore pid=N) INFO ... CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192 tokens per request: 5.69x
    (EngineCore pid=N) INFO ... init engine (profile, create kv cache, warmup model) took 9.68 s
    INFO:     Application startup complete.
GPU builds print `GPU KV cache size: ... tokens` and `Maximum concurrency for ... tokens per request: ...x`
on the same or the next line; both are matched. The token figure is the engine's own derivation; on
hybrid models its meaning changed between versions (issue 3), so callers treat it as reported, not truth.
"""

from __future__ import annotations

import re
from datetime import datetime

from onechip.errors import redact
from onechip.schemas import BootEvent, BootRecord

_STAMP = re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
_LEVEL = re.compile(r"^(?:\([\w-]+ pid=\d+\) )?(WARNING|ERROR|CRITICAL)\b")
_VERSION = [re.compile(r"Initializing a V1 LLM engine \(v([\w.+-]+)\)"), re.compile(r"\bversion (\d+\.\d+[\w.+-]*)")]
_WEIGHT_LOAD = re.compile(r"Loading weights took ([\d.]+) seconds")
_WEIGHTS_GIB = re.compile(r"Model loading took ([\d.]+) GiB|Checkpoint size: ([\d.]+) GiB")
_KV_TOKENS = re.compile(r"\b(?:CPU|GPU|TPU|XPU)? ?KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_FAILURE = re.compile(r"(Traceback \(most recent call last\)|^\w*(?:Error|Exception|Failure): .+)")

# (event name, pattern) in boot order; the first line matching each pattern marks the event.
_EVENTS = [
    ("engine_init", re.compile(r"Initializing a V1 LLM engine")),
    ("weights_loading", re.compile(r"Starting to load model")),
    ("weights_loaded", _WEIGHT_LOAD),
    ("kv_cache_init", _KV_TOKENS),
    ("engine_ready", re.compile(r"init engine \(profile, create kv cache, warmup model\) took")),
    ("server_listening", re.compile(r"Starting vLLM server on|Uvicorn running on")),
    ("startup_complete", re.compile(r"Application startup complete")),
]


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _stamp(line: str, year: int) -> datetime | None:
    match = _STAMP.search(line)
    if not match:
        return None
    month, day, hour, minute, second = (int(g) for g in match.groups())
    return datetime(year, month, day, hour, minute, second)


def parse_boot_log(text: str, record: BootRecord, started: datetime | None = None) -> BootRecord:
    """Fill a copy of `record` with what the log `text` says.

    `started` (naive local wall time of the process start, as the log prints it) anchors the timeline;
    without it the first timestamped line is t=0. Event times have 1 s resolution (the log's).
    Never raises on odd lines; secrets are redacted from kept lines.
    """
    out = record.model_copy(deep=True)
    out.events, out.warnings, out.errors = [], [], []
    seen: set[str] = set()
    t0 = started
    year = (started or datetime.now()).year
    for raw in text.splitlines():
        line = raw.rstrip()
        stamp = _stamp(line, year)
        if t0 is None and stamp is not None:
            t0 = stamp
        level = _LEVEL.match(line)
        if level and level.group(1) == "WARNING":
            out.warnings.append(redact(line))
        elif (level and level.group(1) in ("ERROR", "CRITICAL")) or _FAILURE.search(line):
            out.errors.append(redact(line))
        if out.engine_version is None:
            for pattern in _VERSION:
                if match := pattern.search(line):
                    out.engine_version = match.group(1)
                    break
        if match := _WEIGHT_LOAD.search(line):
            out.weight_load_s = float(match.group(1))
        if match := _WEIGHTS_GIB.search(line):
            out.weights_gib = float(match.group(1) or match.group(2))
        if match := _KV_TOKENS.search(line):
            out.kv_cache_tokens = int(_number(match.group(1)))
        if match := _CONCURRENCY.search(line):
            out.max_concurrency_context = int(_number(match.group(1)))
            out.max_concurrency = float(match.group(2))
        for name, pattern in _EVENTS:
            if name not in seen and pattern.search(line):
                seen.add(name)
                t_s = (stamp - t0).total_seconds() if (stamp and t0) else None
                out.events.append(BootEvent(name=name, t_s=t_s, line=redact(line)[:300]))
    return out
