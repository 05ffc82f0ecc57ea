"""Retry-After, the wait a busy or rate-limiting HTTP answer asks for: read by the cloud layer's API calls and by the
check client's busy retries (vllm.wire), so it lives below both."""

from __future__ import annotations

import email.utils
import math
from datetime import UTC, datetime

import httpx


def retry_after_s(headers: httpx.Headers) -> float | None:
    """Seconds the answer's Retry-After asks to wait, in either of its forms (RFC 9110 section 10.2.3: delay-seconds,
    or an HTTP-date, whole seconds from now rounded up; one already past is 0), else None: also for a header that is
    neither (a latin-1 '²' passes str.isdigit, a 20-digit year overflows the date parser)."""
    text = headers.get("retry-after", "").strip()
    if text.isascii() and text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return float(max(0, math.ceil((when - datetime.now(UTC)).total_seconds()))) if when.tzinfo else None
