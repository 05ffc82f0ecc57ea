"""Retry-After, the wait a busy or rate-limiting HTTP answer asks for: read by the cloud layer's API calls, by the
check client's busy retries (vllm.wire) and by the bench's streamed requests (bench.client), so it lives below all."""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping
from datetime import UTC, datetime

# RFC 9111 section 1.2.2: a delta-seconds past what a recipient can hold is taken as 2^31 (2,147,483,648 s, about 68
# years); Retry-After's delay-seconds (RFC 9110 section 10.2.3), an Age and a RetryInfo retryDelay are read under it:
# float() reads 400 digits as inf (int(inf) then raised OverflowError in seconds_words) and int() refuses more than
# 4,300 (Python's integer-string limit: ValueError)
DELAY_CAP_S = 2**31


def delta_seconds(text: str) -> float | None:
    """`text` as delta-seconds (RFC 9111 section 1.2.2: ASCII digits), at most DELAY_CAP_S; None for anything else
    (a latin-1 '²' passes str.isdigit)."""
    text = text.strip()
    return min(float(text), DELAY_CAP_S) if text.isascii() and text.isdigit() else None


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Seconds the answer's Retry-After asks to wait (`headers` looked up case-insensitively, as httpx's and aiohttp's
    are), in either of its forms (RFC 9110 section 10.2.3: delay-seconds, or an HTTP-date, whole seconds rounded up;
    one already past is 0; delay-seconds at most DELAY_CAP_S), else None: also for a header that is neither (a
    latin-1 '²' passes str.isdigit, a 20-digit year overflows the date parser). An HTTP-date is counted from the
    answer's own Date (RFC 9110 section 6.6.1: when the server sent it, by the server's clock, the clock the
    Retry-After date is on), else from now: counted from this machine's clock, a client whose clock ran ahead of the
    server's read the wait as 0 and sent again at once."""
    text = headers.get("retry-after", "").strip()
    if (delay_s := delta_seconds(text)) is not None:
        return delay_s
    when, sent = http_date(text), http_date(headers.get("date", ""))
    if when is None:
        return None
    return float(max(0, math.ceil((when - (sent or datetime.now(UTC))).total_seconds())))


def seconds_words(seconds: float) -> str:
    """A wait as a line says it: whole seconds in full ('1234567', where '{:g}' said '1.23457e+06', another wait),
    a fraction of a second (a backoff's 0.04) as '{:g}' writes it, and a wait of 1,000 s or more that is no whole
    number rounded up to whole seconds (a RetryInfo retryDelay of '2299620000.5s' was said '2.29962e+09': '{:g}' keeps
    six digits, then writes an exponent)."""
    if seconds == int(seconds):
        return f"{seconds:.0f}"
    return f"{math.ceil(seconds)}" if seconds >= 1000 else f"{seconds:g}"


def duration_words(seconds: float) -> str:
    """A wait of an hour or more in days, hours and minutes as a person reads it ('26,616 days', '14 days 6 h',
    '1 h 0 min'), '' for a shorter one (its seconds say it): a Retry-After date decades ahead was said only as
    '2276953822 s'."""
    if seconds < 3600:
        return ""
    days, rest = divmod(int(seconds), 86400)
    hours, minutes = rest // 3600, rest % 3600 // 60
    if days:
        return f"{days:,} day{'s' * (days != 1)}" + (f" {hours} h" if hours else "")
    return f"{hours} h {minutes} min"


def http_date(text: str) -> datetime | None:
    """An HTTP-date (aware, UTC), or None for text that is not one. One with no zone (the asctime form) or RFC 5322's
    '-0000' (which email.utils reads as naive) is UTC: RFC 9110 section 5.6.7, a recipient MUST accept all three
    forms, and an HTTP-date is always UTC (before, both were read as no Retry-After)."""
    try:
        when = email.utils.parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
