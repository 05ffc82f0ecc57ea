"""The Cloud TPU API over REST (httpx), and Secret Manager's `versions:access`: one client for every call.

    v2       projects/P/locations/Z/nodes               spot and on-demand TPU VMs (create ?nodeId=)
    v2alpha1 projects/P/locations/Z/queuedResources     flex-start: {"provisioningModel": "FLEX_START",
                                                        "runDuration": {"maxRunDuration": "14400s"}}, which
                                                        the Python client (google-cloud-tpu) does not expose
    v2       projects/P/locations/Z/operations/ID       long-running operations ({"done", "error"|"response"})
    v1       projects/P/secrets/S/versions/latest:access (secretmanager.googleapis.com) payload.data, base64

Where flex-start's fields sit in the v2alpha1 body (top-level provisioningModel and runDuration) follows the
issue and the seed's describe output ('provisioningModel: FLEX_START', 'maxRunDuration: 14400s'), and the
v2alpha1 discovery document's QueuedResource (provisioningModel enum with FLEX_START, runDuration.maxRunDuration;
googleapis/google-api-go-client tpu/v2alpha1/tpu-api.json at 123f55c3); v2's Node.schedulingConfig has no
FLEX_START. It has not been checked against a live API from this project (provision.queued_resource_body).

Every call goes through `TpuApi.call`, which classifies what failed by where and how, never by wording:

    offline       no answer because the API's host name did not resolve (socket.gaierror: offline, no DNS):
                  nothing was sent, and seconds of backoff do not mend it, so it is not retried (it was retried
                  for ~3 min 20 s before)
    transient     no answer (timeout, connection), HTTP 5xx, or 429 on a read or a delete (the API's read
                  rate limit): retried with exponential backoff (at least the wait the answer asks for:
                  `asked_wait_s`, its Retry-After or RetryInfo), each retry told through `on_retry`, all within
                  one deadline per call (ONECHIP_CLOUD_DEADLINE_S, 30 s:
                  each try waits at most what is left, and a pause that would pass it is not taken; a dead
                  endpoint was retried for 3 min 16 s, one that never answers for 10 min). A create is retried
                  too: it names its resource (nodeId, queuedResourceId), so a retry cannot make a second one
                  (AIP-133: ALREADY_EXISTS, which on a retry means the first try landed), and a queued resource's
                  carries a requestId (AIP-155). A poll (an operation, a resource's state) reads through an outage
                  until its own deadline (`through_outages`), not just one call's
    rate-limit    a 429 whose ErrorInfo says RATE_LIMIT_EXCEEDED (requests per minute, not chips): the API
                  refused it, so nothing was made and even a create is sent again, with the same backoff; also a
                  quota or RESOURCE_EXHAUSTED refusal of a read or a delete (it uses no chips: never a zone's
                  quota or stockout, which would delete a granted TPU and move on)
    401           the access token was refused: refreshed once (google-auth) and the request sent again, as
                  google-auth's AuthorizedSession does (under an endpoint override, sent again as it is); a second
                  401 is 'auth'
    bad-endpoint  an answer that is not the TPU API's: HTML, a body that is empty or not JSON (a read retries
                  it first: it may be cut short), a JSON body of the wrong shape, an HTTP error without Google's
                  error body; said in one line naming the base URL (`answer_json`, the Billing Catalog's too)
    refusals      any other HTTP error: Google's {"error": {"code", "status", "message"}} body, read by
                  cloud.refusals (a 429 on a create is RESOURCE_EXHAUSTED: a quota, a stockout when it gives a
                  capacity reason, else a rate limit, sent again)

Lists follow `nextPageToken` to the last page. One environment variable (ONECHIP_TPU_API_ENDPOINT, see
cloud.auth) points every call at a test server; headers come from google-auth (cloud.auth). Request bodies
carry no secret: the HF token never goes into metadata or a create body (the seed: a TPU VM's metadata is
readable from the VM).
"""

from __future__ import annotations

import base64
import difflib
import json
import math
import os
import re
import socket
import statistics
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import httpx

from onechip.cloud import refusals
from onechip.cloud.auth import ENDPOINT_ENV, REAUTH, Credentials, endpoint_override
from onechip.errors import CloudError, ConfigError, redact, remember_secret
from onechip.retry_after import delta_seconds, duration_words, http_date, retry_after_s, seconds_words

TPU_URL = "https://tpu.googleapis.com"
SECRETS_URL = "https://secretmanager.googleapis.com"
POLL_ENV = "ONECHIP_CLOUD_POLL_S"  # seconds between polls (default 5; tests against the fake use 0.05)
TIMEOUT_ENV = "ONECHIP_CLOUD_TIMEOUT_S"  # seconds one request may take (default 60; tests shorten it)
DEADLINE_ENV = "ONECHIP_CLOUD_DEADLINE_S"  # seconds one call may take, all its tries and pauses (default 30)
CONNECT_S = 10.0  # a connection not made in this long is a failed try (Google's front ends answer in < 1 s)
RETRIES = 6  # a transient failure is tried again this many times, waiting backoff_s (capped at 60 s)
FIRST_RETRY_S = 1.0  # the first retry's pause (Google Cloud's retry strategy: 1 s, then doubling; backoff_s)
MAX_PAGES = 1000  # a list that pages on past this is not the TPU API (a page token that never ends)
# an operation the API just named may answer NOT_FOUND this long (its reads may lag its writes, as a resource just
# created may: provision.CREATE_GRACE_S, the same 60 s). Waited only while the resource it acts on says nothing either
# (wait_operation's `settled`): then the operation alone can tell a create that made nothing (code 8, a stockout)
OPERATION_GRACE_S = 60.0
# an answer's Date is whole seconds (RFC 9110 section 5.6.7, IMF-fixdate): an offset from this machine's clock within
# it is the Date's truncation and the answer's travel, not a clock that is off (`TpuApi.now`)
DATE_RESOLUTION_S = 1.0
# the API's clock is the median offset of this many last answers (`TpuApi._saw_clock`): RFC 9111 section 5.1, 'lack
# of an Age header field does not imply the origin was contacted' (an HTTP/1.0 cache sends none), so one answer a cache
# kept reads as the API's clock behind by its age; two such among five move nothing, and a clock that really moved
# (this machine's stepped) is taken by the third answer that says so (the upper median: of an even count, the
# fresher). Our choice, not a standard's: enough to outvote a stray copy, few enough to follow a step in three polls
CLOCK_SAMPLES = 5
Json = dict[str, Any]
T = TypeVar("T")


def env_poll_s() -> float:
    """Seconds between polls, and the base of the retry backoff: $ONECHIP_CLOUD_POLL_S, else 5."""
    return env_seconds(POLL_ENV, 5.0)


def env_seconds(name: str, default_s: float) -> float:
    """$`name` as seconds, else `default_s`. Raises ConfigError for a value that is not a positive, finite number
    ('abc' and a negative pause were internal errors: float() and time.sleep refused them)."""
    text = os.environ.get(name) or ""
    if not text:
        return default_s
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ConfigError(f"${name} must be a positive number of seconds, got {text!r}")
    return seconds


def backoff_s(base_s: float, attempt: int) -> float:
    """The pause before retry `attempt` + 1 (0-based): min(base_s, FIRST_RETRY_S) x 2^attempt, at most 60 s
    (Google Cloud's truncated exponential backoff, which starts at 1 s: cloud.google.com/storage/docs/retry-strategy
    and the IAM/Compute 'Retry failed requests' pages; a 5-s poll interval as the base fitted three tries in the
    default 30-s deadline, this five)."""
    return min(60.0, min(base_s, FIRST_RETRY_S) * 2**attempt)


def unresolved_host(exc: httpx.HTTPError) -> str | None:
    """The host name a request could not resolve (a socket.gaierror under httpx's ConnectError), else None."""
    cause: BaseException | None = exc
    for _ in range(8):  # httpx.ConnectError <- httpcore.ConnectError <- socket.gaierror
        if cause is None:
            return None
        if isinstance(cause, socket.gaierror):
            return exc.request.url.host if exc.request is not None else "the API's host"
        cause = cause.__cause__ or cause.__context__
    return None


def offline_error(where: str, host: str) -> CloudError:
    """The one line for a request whose host did not resolve: nothing was sent, and it is not retried."""
    return CloudError(
        f"{where}: cannot resolve {host} (offline, or no DNS); nothing was sent - check the network and run it again",
        reason="offline",
    )


def retry_line(failure: str, attempt: int, pause_s: float) -> str:
    """What a caller is told before retry `attempt` + 1 (0-based) of RETRIES: the failure, the try, the pause."""
    return f"{failure}; {next_try(attempt, pause_s)}"


def next_try(attempt: int, pause_s: float) -> str:
    return f"retry {attempt + 1} of {RETRIES} in {seconds_words(pause_s)} s"


@dataclass
class Answer:
    """An HTTP answer read whole within a deadline: status, headers, body text."""

    status_code: int
    headers: httpx.Headers
    text: str


def send(http: httpx.Client, method: str, url: str, *, where: str, base: str, end_s: float, timeout_s: float,
         **kw: Any) -> Answer:  # fmt: skip
    """One request, read whole by monotonic time `end_s`: each wait (connect: CONNECT_S at most, each read:
    `timeout_s`) is at most what is left, and a body still arriving at `end_s` is cut off (a server that trickles
    bytes). The one place a failed exchange becomes a CloudError: 'offline' (the host did not resolve),
    'transient' (no answer in time, HTTP 5xx, a 429 on anything but a POST: `retry_after_s` as `asked_wait_s`),
    'rate-limit' (a POST's 429 without Google's error body: the rate was refused, so nothing was made; as its
    Retry-After). Other answers, errors included, are returned."""
    left_s = max(end_s - time.monotonic(), 0.001)
    timeout = httpx.Timeout(min(timeout_s, left_s), connect=min(CONNECT_S, timeout_s, left_s))
    try:
        with http.stream(method, url, timeout=timeout, **kw) as reply:
            body = bytearray()
            for chunk in reply.iter_bytes():
                body += chunk
                if time.monotonic() > end_s:
                    raise httpx.ReadTimeout("the deadline passed while the body arrived", request=reply.request)
            answer = Answer(reply.status_code, reply.headers, body.decode(reply.encoding or "utf-8", "replace"))
    except httpx.HTTPError as exc:
        if (host := unresolved_host(exc)) is not None:
            raise offline_error(where, host) from None
        raise CloudError(f"{where}: no answer from {base} ({type(exc).__name__})", reason="transient") from None
    code = answer.status_code
    if code >= 500 or (code == 429 and method != "POST"):
        error = CloudError(f"{where}: HTTP {code} from {base}", reason="transient", code=code)
        error.retry_after_s = asked_wait_s(answer)
        raise error
    if code == 429 and _google_error(answer.text) is None:  # a bare 429 (a front end's page, no body): nothing made
        error = CloudError(f"{where}: HTTP 429 (too many requests) from {base}", reason="rate-limit", code=code)
        error.retry_after_s = asked_wait_s(answer)
        raise error
    return answer


def _google_error(text: str) -> Json | None:
    """The `error` object of Google's error body ({"error": {...}}, which cloud.refusals reads), else None."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return error if isinstance(error, dict) else None


def asked_wait_s(answer: Answer) -> float | None:
    """Seconds an error answer asks to wait before the request is sent again: the longer of its Retry-After header
    (RFC 9110) and its Google error body's RetryInfo retryDelay (refusals.retry_delay_s: how Google's APIs say it,
    often with no header), None when it asks for neither."""
    asked = (retry_after_s(answer.headers), refusals.retry_delay_s(_google_error(answer.text)))
    return max((s for s in asked if s is not None), default=None)


def retrying(once: Callable[[float], T], again: Callable[[CloudError], bool], *, base_s: float,
             on_retry: Callable[[str], None], deadline_s: float | None = None,
             once_said: bool = False, on_wait: Callable[[str, float], None] | None = None) -> T:  # fmt: skip
    """`once(end_s)` (end_s: the call's deadline in time.monotonic seconds), tried again while `again(error)` says
    so: at most RETRIES more times, each after backoff_s (or the error's Retry-After, when longer), told to
    `on_retry` first, all within `deadline_s` ($ONECHIP_CLOUD_DEADLINE_S, 30 s). With `once_said`, the retries are
    told as an outage (`Outage`: once, on a change, every OUTAGE_REMIND_S, and when it answers again), not each;
    `on_wait` is given every retry's line and the time.monotonic() second it is due, as its pause begins (a status,
    which the CLI's heartbeat repeats with the time left). Raises the last CloudError, which says how often and how
    long it was tried when it was tried more than once or the deadline stopped it."""
    total_s = deadline_s if deadline_s is not None else env_seconds(DEADLINE_ENV, 30.0)
    outage = Outage(on_retry) if once_said else None
    started = time.monotonic()
    for attempt in range(RETRIES + 1):
        try:
            value = once(started + total_s)
        except CloudError as exc:
            if not again(exc):
                raise
            pause_s = max(backoff_s(base_s, attempt), exc.retry_after_s or 0.0)
            spent_s = time.monotonic() - started
            if attempt == RETRIES or spent_s + pause_s >= total_s:
                asked = exc.retry_after_s is not None and exc.retry_after_s >= pause_s  # the API's wait, not ours
                wait = f"{seconds_words(pause_s)} s"
                about = f", about {said}," if (said := duration_words(pause_s)) else ""
                whose = f"the API asked to wait {wait} (its Retry-After or RetryInfo){about}" if asked else \
                    f"the next in {wait}"  # fmt: skip
                why = "" if attempt == RETRIES else f" ({whose} would pass the {total_s:g} s deadline, " \
                      f"${DEADLINE_ENV})"  # fmt: skip
                tries = "once" if attempt == 0 else f"{attempt + 1} times"
                raise exc.reworded(f"{exc}; tried {tries} over {spent_s:.1f} s{why}") from None
            if outage is None:
                on_retry(retry_line(str(exc), attempt, pause_s))
            else:
                outage.failed(exc, next_try(attempt, pause_s))
            if on_wait is not None:
                on_wait(retry_line(str(exc), attempt, pause_s), time.monotonic() + pause_s)
            time.sleep(pause_s)
            continue
        if outage is not None:
            outage.answered()
        return value
    raise AssertionError("unreachable")  # pragma: no cover


OUTAGE = ("transient", "rate-limit", "unsent", "offline")  # failures that say nothing about the resource polled
OUTAGE_REMIND_S = 60.0  # an outage that lasts is said again this often, with how long it has lasted


class Outage:
    """Failures told as one outage to `tell`: at the first, then only when the failure changes (its reason, code or
    status), every OUTAGE_REMIND_S while it lasts, and when an answer comes again, each time with how long it has
    lasted (`through_outages`; `retrying(once_said=True)`: the Billing Catalog's page reads)."""

    def __init__(self, tell: Callable[[str], None]):
        self.tell = tell
        self.began: float | None = None
        self.said: tuple[str, int | None, str] | None = None
        self.said_at = 0.0

    def failed(self, exc: CloudError, then: str) -> bool:
        """Tell 'failure; `then`' when it is due (see the class); True when told."""
        now = time.monotonic()
        self.began = now if self.began is None else self.began
        kind = (exc.reason, exc.code, exc.status)
        if kind == self.said and now - self.said_at < OUTAGE_REMIND_S:
            return False
        lasted = "" if self.said is None else f", {now - self.began:.0f} s into the outage"
        self.tell(f"{exc}{lasted}; {then}")
        self.said, self.said_at = kind, now
        return True

    def answered(self) -> None:
        """An answer came: the all-clear, when an outage was told; the next failure starts a new one."""
        if self.began is not None:
            self.tell(f"the API answers again, {time.monotonic() - self.began:.0f} s into the outage")
        self.began, self.said = None, None


def through_outages(read: Callable[[], T], end_s: float, pause_s: float, on_outage: Callable[[str], None],
                    hush: Callable[[bool], None] = lambda quiet: None) -> T:  # fmt: skip
    """`read()`, read again after `pause_s` (or the failure's Retry-After, when longer) while it fails for an outage
    (OUTAGE: no answer, 5xx, a rate limit, no token, no DNS: each call already spent its own retries and deadline)
    and the poll's own deadline `end_s`
    (time.monotonic seconds) is not reached. A poll of a resource that takes minutes to hours (a queued resource
    waits up to --valid-until) must not stop at one call's 30-s deadline: the resource is unchanged by our failure
    to read it. The outage is told to `on_outage` as `Outage` says (once, on a change, every OUTAGE_REMIND_S, when
    it clears); `hush(True)` is called once it is said (the reads' own retry lines repeat it) and `hush(False)` at
    the end. Offline, a wait said one line per poll (every 5 s) up to its deadline, hours for a queued resource.
    Raises the read's CloudError past `end_s` or for any other failure."""
    outage = Outage(on_outage)
    try:
        while True:
            try:
                value = read()
            except CloudError as exc:
                wait_s = max(pause_s, exc.retry_after_s or 0.0)  # at least what the API asked for (asked_wait_s)
                if exc.reason not in OUTAGE or time.monotonic() + wait_s >= end_s:
                    raise
                if outage.failed(exc, f"polling on (the wait's deadline is {end_s - time.monotonic():.0f} s away)"):
                    hush(True)
                time.sleep(wait_s)
                continue
            outage.answered()
            return value
    finally:
        hush(False)


class TpuApi:
    """REST calls for one project. `http` may be given (tests: httpx.MockTransport; its owner closes it); otherwise a
    client with a timeout of ONECHIP_CLOUD_TIMEOUT_S (60 s), closed by `close()` or on leaving `with TpuApi(...)`: its
    pooled sockets are not left to the garbage collector (an unclosed socket's ResourceWarning). `poll_s` is the pause
    between polls and the base of the retry backoff; `deadline_s` bounds each call, all its tries together
    (ONECHIP_CLOUD_DEADLINE_S, 30 s)."""

    def __init__(
        self,
        project: str | None,
        *,
        http: httpx.Client | None = None,
        poll_s: float | None = None,
        on_retry: Callable[[str], None] | None = None,
        deadline_s: float | None = None,
    ):
        self.credentials = Credentials()
        self.clock_offset_s = 0.0  # the API's clock less this machine's, from its answers' Date (`now`)
        self._offsets_s: deque[float] = deque(maxlen=CLOCK_SAMPLES)  # the last answers' offsets (`_saw_clock`)
        override = endpoint_override()
        self.tpu_url = override or TPU_URL
        self.secrets_url = override or SECRETS_URL
        resolved = project or self.credentials.project
        if not resolved:
            raise CloudError("give --project (no project in the Application Default Credentials)", reason="auth")
        self.project = resolved
        self.timeout_s = env_seconds(TIMEOUT_ENV, 60.0)
        self._owns_http = http is None
        self.http = http or httpx.Client(timeout=self.timeout_s)
        self.poll_s = poll_s if poll_s is not None else env_poll_s()
        self.deadline_s = deadline_s  # None: $ONECHIP_CLOUD_DEADLINE_S, read by `retrying`
        self.on_retry = on_retry or (lambda line: None)  # told each retry's failure and pause (retry_line)

    def close(self) -> None:
        """Close the HTTP client this API made (one given to it is its owner's to close)."""
        if self._owns_http:
            self.http.close()

    def __enter__(self) -> TpuApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def parent(self, zone: str) -> str:
        return f"projects/{self.project}/locations/{zone}"

    def now(self) -> datetime:
        """Now by the API's clock, the clock its times (a node's createTime) are written by: this machine's, moved by
        how far the last answer's Date header (RFC 9110 section 6.6.1: when the server made it) was from it, when
        farther than DATE_RESOLUTION_S. A machine 10 min behind billed a node made 1 min ago nothing (its createTime
        lay 9 min ahead); one 10 min ahead, 11 min."""
        try:
            return datetime.now(UTC) + timedelta(seconds=self.clock_offset_s)
        except OverflowError:  # a Date near year 9999 (junk): no clock a time can be read on, so this machine's
            return datetime.now(UTC)

    def _saw_clock(self, headers: httpx.Headers) -> None:
        """Keep the API's clock offset (`now`) from an answer's Date, when it has one that reads, plus its Age where a
        cache on the way says one: Date is when the API made the answer, Age the cache's estimate of the time since
        (RFC 9111 sections 5.1 and 4.2.3; delta-seconds, section 1.2.2: digits, at most 2^31). A proxy's 3-h-old copy
        set the API's clock 3 h behind (a node granted 1 h ago billed nothing). The offset kept is the median of the
        last CLOCK_SAMPLES answers' (one a cache kept and sent without an Age swung it 3 h, then back)."""
        sent = http_date(headers.get("date", ""))
        age_s = delta_seconds(headers.get("age", ""))  # at most DELAY_CAP_S: an Age of 10^30 s is no overflow
        if sent is not None and age_s is not None:
            try:
                sent += timedelta(seconds=age_s)
            except OverflowError:  # past year 9999: junk, as a Date that reads as no date
                sent = None
        if sent is not None:
            self._offsets_s.append((sent - datetime.now(UTC)).total_seconds())
            offset_s = statistics.median_high(self._offsets_s)  # of two, the later Date: a cache only makes one older
            self.clock_offset_s = offset_s if abs(offset_s) > DATE_RESOLUTION_S else 0.0

    def through_outages(self, read: Callable[[], T], end_s: float, on_outage: Callable[[str], None]) -> T:
        """`through_outages` at this API's poll pause; its reads' retries are not told once the outage is said."""
        told = self.on_retry

        def hush(quiet: bool) -> None:
            self.on_retry = (lambda line: None) if quiet else told

        return through_outages(read, end_s, self.poll_s, on_outage, hush)

    def call(self, method: str, url: str, *, params: Json | None = None, body: Json | None = None,
             retry: bool = True) -> Json:  # fmt: skip
        """One call, its JSON object answer; transient failures (and a truncated answer to a read) retried
        with backoff within the call's deadline (`retrying`), except a POST (sent once, but for a rate limit and
        one the token step kept from leaving; a create retries as `_create`). `retry` False: one try (within the
        call's deadline), for a caller that sends again itself. Raises CloudError (reason 'transient' or 'unsent'
        once the retries or the deadline are spent, 'offline', 'bad-endpoint', 'auth', or the API's refusal)."""

        def again(exc: CloudError) -> bool:
            transient = exc.reason == "transient" or (exc.status == "BAD_JSON" and method == "GET")
            # a rate limit refused the request, and an unsent one never left: even a create is sent again
            return retry and ((transient and method != "POST") or exc.reason in ("rate-limit", "unsent"))

        return retrying(lambda end_s: self._once(method, url, params, body, end_s), again, base_s=self.poll_s,
                        on_retry=self.on_retry, deadline_s=self.deadline_s)  # fmt: skip

    def _once(self, method: str, url: str, params: Json | None, body: Json | None, end_s: float) -> Json:
        """One try by `end_s`; a 401 refreshes the token once and sends again (a 401 made nothing), as
        google-auth's AuthorizedSession does; under an endpoint override (no token to refresh) it is sent again all
        the same, so a test server's 401 for a token that expired mid-poll is met as Google's is."""
        where = f"{method} {url.split('/projects/', 1)[-1].split('?')[0]}"
        base = url.split("/v1/")[0].split("/v2")[0]
        for fresh in (False, True):
            try:
                if fresh:
                    self.credentials.refresh()  # nothing to refresh under an endpoint override: sent again as it is
                headers = self.credentials.headers(method, url)
            except CloudError as exc:  # the token step failed before the request left: nothing was made
                if exc.reason != "transient":
                    raise
                raise CloudError(f"{where}: not sent: {exc}", reason="unsent") from None
            answer = send(self.http, method, url, where=where, base=base, end_s=end_s, timeout_s=self.timeout_s,
                          params=params, json=body, headers=headers)  # fmt: skip
            self._saw_clock(answer.headers)
            if answer.status_code != 401:
                break
        try:
            return answer_json(answer, where, base)
        except CloudError as exc:  # a 401 that stands (after a refresh, or with no credentials to refresh)
            if answer.status_code == 401 and exc.reason == "auth":
                raise exc.reworded(f"{exc}; the credentials were refused: {REAUTH}") from None
            if method != "POST" and exc.reason in ("quota", "stockout"):
                exc.reason = "rate-limit"  # a read or a delete uses no chips: its quota is one of requests
            if exc.reason == "not-found" and (m := _ZONE_LIST.search(url.split("?")[0])):
                raise exc.reworded(unknown_zone(m.group(1), self.project, str(exc))) from None
            raise

    def _create(self, url: str, ident: str, params: Json, body: Json) -> Json | None:
        """POST a create of the resource `ident` (named in `params`: nodeId or queuedResourceId, and a requestId
        where the method takes one), sent again after a failure that may have left it unanswered (no answer,
        5xx), within the call's retries and deadline: the id makes a second resource impossible (AIP-133,
        google.aip.dev/133: a create whose user-specified id exists fails ALREADY_EXISTS) and a requestId makes
        the API answer the same request once (AIP-155, google.aip.dev/155). After an unanswered try, ALREADY_EXISTS
        says the first try landed (even while a read of `ident` does not show it yet); another refusal (a quota the
        first try now uses) is checked by reading `ident`: there, the first try landed. Returns the operation, or
        None when it landed so (the caller reads the resource). Raises as `call`. Retries spent on refusals that made
        nothing (a rate limit, a token not got) after an unanswered try say nothing of whether it landed, so `ident` is
        read then too (the rate limit stood, and the record of a TPU that landed and billed was dropped as 'refused:
        nothing was made'); that read failing raises 'transient', as a create without an answer does."""
        unanswered = False

        def once(end_s: float) -> Json | None:
            nonlocal unanswered
            try:
                return self._once("POST", url, params, body, end_s)
            except CloudError as exc:
                if unanswered and not again(exc) and (exc.reason == "conflict" or self._exists(f"{url}/{ident}")):
                    return None
                unanswered = unanswered or exc.reason == "transient"
                raise

        def again(exc: CloudError) -> bool:
            return exc.reason in ("transient", "rate-limit", "unsent")

        try:
            made = retrying(once, again, base_s=self.poll_s, on_retry=self.on_retry, deadline_s=self.deadline_s)
        except CloudError as exc:
            if not unanswered or exc.reason not in ("rate-limit", "unsent"):
                raise  # nothing went unanswered; or the caller reads it (transient), or `once` did (a refusal)
            try:
                landed = self._exists(f"{url}/{ident}")
            except CloudError as lookup:
                said = f"{exc}; an earlier try went unanswered, and whether it made {ident} cannot be read ({lookup})"
                raise CloudError(said, reason="transient", code=exc.code, status=exc.status) from None
            if not landed:
                raise
            made = None
        return None if made is None else _operation(made, self.tpu_url)

    def _exists(self, url: str) -> bool:
        """Does the API have the resource at `url`? Raises CloudError for any answer but the resource or NOT_FOUND."""
        try:
            self.call("GET", url)
        except CloudError as exc:
            if exc.reason == "not-found":
                return False
            raise
        return True

    def _list(self, url: str, key: str, retry: bool = True) -> list[Json]:
        """Every item of a list call, page after page (`nextPageToken`); `retry` False: each page one try. Raises
        CloudError 'transient' for a page whose `unreachable` names locations (ListNodesResponse,
        ListQueuedResourcesResponse: 'Locations that could not be reached'; AIP-217, google.aip.dev/217: a partial list
        answers 200 and says what it left out): read as complete, it was empty, and `cloud down --zone Z` said
        'nothing to delete' while a TPU there billed on."""
        items: list[Json] = []
        token = ""
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = self.call("GET", url, params={"pageToken": token} if token else None, retry=retry)
            found = page.get(key, [])
            if not isinstance(found, list) or not all(isinstance(i, dict) and isinstance(i.get("name"), str)
                                                      for i in found):  # fmt: skip
                raise not_the_api(self.tpu_url, f"its {key} list is not a list of named resources")
            if unreachable := page.get("unreachable"):
                missed = ", ".join(map(str, unreachable)) if isinstance(unreachable, list) else str(unreachable)
                # what to do about it is the caller's to say: a list without --zone hides nothing (a note)
                raise CloudError(
                    f"GET {url.split('/projects/', 1)[-1]}: the API could not reach {redact(missed)} "
                    "(its answer's `unreachable`), so the list is incomplete",
                    reason="transient",
                )
            items += found
            token = str(page.get("nextPageToken") or "")
            if not token:
                return items
            if token in seen:
                raise not_the_api(self.tpu_url, f"its {key} list gives the page token {token[:40]!r} twice")
            seen.add(token)
        raise not_the_api(self.tpu_url, f"its {key} list pages on past {MAX_PAGES} pages")

    # --- nodes (v2): spot and on-demand

    def create_node(self, zone: str, node_id: str, node: Json) -> Json | None:
        """POST a node named `node_id` (v2 nodes.create takes no requestId: the nodeId alone makes a retry safe);
        returns the long-running operation, None when a retry found the first try made it (`_create`)."""
        return self._create(f"{self.tpu_url}/v2/{self.parent(zone)}/nodes", node_id, {"nodeId": node_id}, node)

    def get_node(self, zone: str, node_id: str, retry: bool = True) -> Json:
        """GET a node. `retry` False: one try (`call`)."""
        url = f"{self.tpu_url}/v2/{self.parent(zone)}/nodes/{node_id}"
        return _named(self.call("GET", url, retry=retry), self.tpu_url)

    def delete_node(self, zone: str, node_id: str, retry: bool = True) -> Json:
        """DELETE a node; returns the long-running operation. `retry` False: one try (`call`)."""
        url = f"{self.tpu_url}/v2/{self.parent(zone)}/nodes/{node_id}"
        return _operation(self.call("DELETE", url, retry=retry), self.tpu_url)

    def list_nodes(self, zone: str, retry: bool = True) -> list[Json]:
        return self._list(f"{self.tpu_url}/v2/{self.parent(zone)}/nodes", "nodes", retry)

    def check_zone(self, zone: str) -> None:
        """Raise CloudError (`unknown_zone`'s line) when the API has no zone `zone`: one page of one node of its list
        (a read, billed nothing), whose NOT_FOUND can only be the zone's. Other failures raise as `call`."""
        self.call("GET", f"{self.tpu_url}/v2/{self.parent(zone)}/nodes", params={"pageSize": 1})

    # --- queued resources (v2alpha1): flex-start

    def create_queued_resource(self, zone: str, qr_id: str, body: Json) -> Json | None:
        """POST a queued resource named `qr_id` with a requestId (v2alpha1 queuedResources.create: 'Idempotent
        request UUID'), the same on every retry; returns as `create_node`."""
        params = {"queuedResourceId": qr_id, "requestId": str(uuid.uuid4())}
        return self._create(f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources", qr_id, params, body)

    def get_queued_resource(self, zone: str, qr_id: str, retry: bool = True) -> Json:
        """GET a queued resource. `retry` False: one try (`call`)."""
        url = f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources/{qr_id}"
        item = _named(self.call("GET", url, retry=retry), self.tpu_url)
        if not isinstance(item.get("state", {}), dict):
            raise not_the_api(self.tpu_url, "a queued resource's state is not an object")
        return item

    def delete_queued_resource(self, zone: str, qr_id: str, retry: bool = True) -> Json:
        """Delete a queued resource and its node (force=true). A request in PROVISIONING cannot be deleted:
        the API answers FAILED_PRECONDITION (reason 'precondition'). `retry` False: one try (`call`)."""
        url = f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources/{qr_id}"
        return _operation(self.call("DELETE", url, params={"force": "true"}, retry=retry), self.tpu_url)

    def list_queued_resources(self, zone: str, retry: bool = True) -> list[Json]:
        return self._list(f"{self.tpu_url}/v2alpha1/{self.parent(zone)}/queuedResources", "queuedResources", retry)

    # --- operations

    def wait_operation(self, operation: Json, version: str, timeout_s: float,
                       on_tick: Callable[[float], None] | None = None, what: str = "",
                       outage_end_s: float | None = None, since_s: float | None = None,
                       settled: Callable[[], bool] | None = None) -> Json:  # fmt: skip
        """Poll a long-running operation of API `version` ('v2' or 'v2alpha1': the operation's name does not
        say) until done, through outages (`through_outages`) within `timeout_s`, and not past `outage_end_s`
        (time.monotonic seconds: a bound on outages shared with other waits, a `cloud down`'s), when given; return its
        `response`. `timeout_s` (and the seconds `on_tick` is given) count from `since_s` (time.monotonic seconds: a
        `cloud down`'s start, whose deletes share one bound); None: now. A poll answered NOT_FOUND is polled again
        for OPERATION_GRACE_S from this call (one 404 stopped an `up` whose TPU was made), unless `settled()` says the
        resource it acts on tells the rest (a create's TPU is there, a delete's gone or DELETING: the caller reads it;
        waiting the grace first delayed that read 60 s). Raises CloudError from its
        `error` (e.g. code 8 stockout), when it is not done within `timeout_s`, or when a poll fails (NOT_FOUND past the
        grace), naming `what` it does ('create of node N in ZONE') before the operation's id (an error named
        'operations/operation-1' alone: not which TPU, nor where)."""
        started = time.monotonic()
        since_s = started if since_s is None else since_s
        url = f"{self.tpu_url}/{version}/{operation['name']}"
        short = str(operation.get("name", "")).rsplit("/", 1)[-1] or "operation"
        where = f"{what} (operation {short})" if what else str(operation.get("name", "operation"))
        while not operation.get("done"):
            elapsed = time.monotonic() - since_s
            if elapsed > timeout_s:
                raise CloudError(f"{where}: not done after {timeout_s:.0f} s")
            if on_tick is not None:
                on_tick(elapsed)
            time.sleep(self.poll_s)
            end_s = min(since_s + timeout_s, outage_end_s if outage_end_s is not None else math.inf)
            try:
                answer = self.through_outages(lambda: self.call("GET", url), end_s, self.on_retry)
            except CloudError as exc:
                if (exc.reason == "not-found" and time.monotonic() - started <= OPERATION_GRACE_S
                        and not (settled is not None and settled())):  # fmt: skip
                    continue  # not readable yet: polled again, after the pause at the loop's top
                raise (exc.reworded(f"{where}: {exc}") if what else exc) from None
            operation = _operation(answer, self.tpu_url)
        if isinstance(operation.get("error"), dict):
            raise refusals.from_status(dict(operation["error"]), where)
        return dict(operation.get("response") or {})

    # --- Secret Manager

    def access_secret(self, name: str, version: str = "latest") -> str:
        """The payload of secret `name` (a bare name in this project, or projects/P/secrets/S), decoded.
        The value is returned only; it is never logged or put in an error."""
        path = name if name.startswith("projects/") else f"projects/{self.project}/secrets/{name}"
        data = self.call("GET", f"{self.secrets_url}/v1/{path}/versions/{version}:access")
        try:
            value = base64.b64decode(str(data["payload"]["data"])).decode().strip()
        except (KeyError, TypeError, ValueError):
            raise CloudError(f"secret {name}: the answer holds no readable payload") from None
        remember_secret(value)  # errors.redact scrubs it from every line this process prints from now on
        return value


TPU_API = ("the Cloud TPU API", ENDPOINT_ENV)  # (what an answer should be from, the variable that points elsewhere)


def not_the_api(base: str, what: str, api: tuple[str, str] = TPU_API) -> CloudError:
    """The one line for an endpoint that does not answer like Google's API `api` (its name, its endpoint variable)."""
    return CloudError(
        f"{base} does not answer like {api[0]} ({what}); check {api[1]} or the network",
        reason="bad-endpoint",
    )


def answer_json(answer: Answer, where: str, base: str, api: tuple[str, str] = TPU_API) -> Json:
    """The JSON object of a successful answer. Raises CloudError: the API's refusal for an HTTP error with Google's
    {"error": {...}} body (cloud.refusals); 'bad-endpoint' for HTML, a body that is empty or does not parse
    (status BAD_JSON on a success: a read tries again, it may have been cut short; Google's API always sends an
    object, '{}' at least), a non-object, or an HTTP error without Google's body (a proxy's)."""
    code = answer.status_code
    ok = 200 <= code < 300  # a redirect (to a sign-in page) is not followed: it is not the API's answer either
    said = "" if ok else f"HTTP {code} with "
    text = answer.text
    if text.lstrip()[:1] == "<" or "html" in answer.headers.get("content-type", ""):
        raise not_the_api(base, f"{where} answered {said}an HTML page", api)
    try:
        data = json.loads(text)
    except ValueError:
        body = "a body that is not JSON or is cut short" if text.strip() else "an empty body"
        error = not_the_api(base, f"{where} answered {said}{body}", api)
        error.status = "BAD_JSON" if ok else ""
        raise error from None
    if not isinstance(data, dict):
        raise not_the_api(base, f"{where} answered {said}JSON that is not an object", api)
    if not ok:
        if not isinstance(data.get("error"), dict):
            raise not_the_api(base, f"{where} answered HTTP {code} without Google's error body", api)
        refusal = refusals.from_http(code, data, where)
        refusal.retry_after_s = asked_wait_s(answer)  # a rate limit's is waited before it is sent again
        raise refusal
    return data


# a zone's own collection (a list, a create): a 404 there can only be the zone's (its parent), never a resource's
_ZONE_LIST = re.compile(r"/projects/[^/]+/locations/([^/]+)/(?:nodes|queuedResources)$")


def unknown_zone(zone: str, project: str, refusal: str) -> str:
    """The one line for a zone the API has not ('us-central1-z', 'uscentral1-a': NOT_FOUND on its nodes or queued
    resources, which printed the API's bare 404 message): the zone, the API's words, the catalog zone it is
    likely a typo of, and how to list the zones that are."""
    from onechip.cloud import offers

    known = sorted({o.zone for o in offers.catalog_offers()})
    near = difflib.get_close_matches(zone, known, n=1, cutoff=0.8)
    guess = f" (did you mean {near[0]}?)" if near else ""
    return (
        f"zone {zone!r} is not a Cloud TPU zone of project {project}{guess}: {refusal}; list the zones with "
        f"`gcloud compute tpus locations list --project {project}` (`onechip cloud zones` names those seen to "
        "offer a chip)"
    )


def _named(item: Json, base: str) -> Json:
    """A node or queued resource: it has a name (and a string state for a node, when it has one)."""
    if not isinstance(item.get("name"), str) or not isinstance(item.get("state", ""), str | dict):
        raise not_the_api(base, "a resource without a name or state")
    return item


def _operation(op: Json, base: str) -> Json:
    """A long-running operation: a name, and `done` a boolean when present."""
    if not isinstance(op.get("name"), str) or not isinstance(op.get("done", False), bool):
        raise not_the_api(base, "an operation without a name")
    return op
