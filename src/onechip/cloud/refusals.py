"""Telling the TPU API's refusals apart: stockout vs quota vs unsupported provisioning model vs expiry.

They look alike from outside (the seed survey: 'a flex-start request without quota queues as PENDING, which
looks exactly like a stockout'), so each is read from the gRPC code first, then its details, and the API's
own message only where the code cannot tell (stockout vs quota share RESOURCE_EXHAUSTED; a zone that does
not offer a model answers INVALID_ARGUMENT like any bad field):

    unsupported   INVALID_ARGUMENT (3) 'FLEX_START provisioning model is not supported for accelerator type
                  "v5litepod-1"' - the zone does not offer that model for the chip, whatever the quota (seed);
                  or 'Cloud TPU received a bad request. the accelerator v4-128 was not found in zone us-central2-b'
                  - the zone has no such TPU type (skypilot-org/skypilot#3840, a create's CREATION_FAILED); or
                  NOT_FOUND (5) naming projects/P/locations/Z/acceleratorTypes/TYPE, in its message (AIP-193's
                  'Resource ... was not found') or its google.rpc.ResourceInfo detail: the zone's entry for the type
    quota         RESOURCE_EXHAUSTED (8) with a google.rpc.QuotaFailure detail, or whose message names a quota
                  ('Quota limit ... exceeded'); spot has its own quota (TPUV5sPreemptibleLitepod..., seed); also
                  PERMISSION_DENIED (7) with either (Compute Engine answers 403 QUOTA_EXCEEDED), not a permission
    stockout      RESOURCE_EXHAUSTED (8) otherwise: 'There is no more capacity in the zone ...' / 'stockout'; an HTTP
                  429 only with a capacity reason (`_no_capacity`: Compute Engine's ZONE_RESOURCE_POOL_EXHAUSTED
                  and its wordings, cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-
                  availability), else it is a rate limit: Google's 429 RESOURCE_EXHAUSTED is 'either out of
                  resource quota or reaching rate limiting' (cloud.google.com/apis/design/errors)
    expired       DEADLINE_EXCEEDED (4), whatever its wording: a queued resource that reached its valid-until
    inaccessible  PERMISSION_DENIED (7) 'Location us-east1-d is not found or access is unauthorized.': the zone is not
                  usable by this project (not offered to it, or no such location), not a refusal of the credentials;
                  GCP failover moves to the next zone on it (skypilot-org/skypilot, sky/backends FailoverCloudError-
                  HandlerV2._gcp_handler, which quotes googleapiclient's HttpError 403 with that message); that sentence
                  alone: not one whose google.rpc.ErrorInfo reason names a cause of the caller's (PERMISSION_REASONS:
                  a permission it lacks, the API off or billing disabled in the project), which every zone answers alike
    conflict      ALREADY_EXISTS (6): the name is taken in that zone
    rate-limit    RESOURCE_EXHAUSTED whose ErrorInfo reason is RATE_LIMIT_EXCEEDED, or 'Quota exceeded for quota
                  metric ... per minute', or a bare HTTP 429 (no quota, no capacity reason), or a 403 whose
                  errors[].reason is rateLimitExceeded / userRateLimitExceeded (the older JSON APIs' body): too many
                  requests, not too many chips; sent again after a pause (at least its Retry-After), within the
                  call's retries
An error with no code of its own (a Compute Engine operation's {"errors": [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED",
"message"}]}) is read by those entries' codes, and said in their messages.
"""

from __future__ import annotations

import re

from onechip.errors import CloudError, one_line, redact
from onechip.schemas.cloud import valid_project

GRPC_CODES = {
    "OK": 0, "CANCELLED": 1, "UNKNOWN": 2, "INVALID_ARGUMENT": 3, "DEADLINE_EXCEEDED": 4, "NOT_FOUND": 5,
    "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9,
    "ABORTED": 10, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": 13, "UNAVAILABLE": 14,
    "UNAUTHENTICATED": 16,
}  # fmt: skip
_STATUS_OF = {code: name for name, code in GRPC_CODES.items()}
_HTTP_STATUS = {400: 3, 401: 16, 403: 7, 404: 5, 409: 6, 412: 9, 429: 8, 500: 13, 503: 14, 504: 4}


def classify(code: int | None, status: str, message: str) -> str:
    """The refusal's reason (see the module docstring) from gRPC `code`, its `status` name and `message`."""
    text = message.lower()
    status = status or _STATUS_OF.get(code or -1, "")
    if "provisioning model is not supported" in text or "is not supported for accelerator type" in text:
        return "unsupported"
    if "accelerator" in text and "not found in zone" in text:  # the zone has no such TPU type at all
        return "unsupported"
    if (code == 5 or status == "NOT_FOUND") and "/acceleratortypes/" in text:
        return (
            "unsupported"  # NOT_FOUND naming the zone's acceleratorTypes/TYPE (AIP-193's 'Resource ... was not found')
        )
    if code == 8 or status == "RESOURCE_EXHAUSTED":
        return "quota" if "quota" in text else "stockout"
    if code == 4 or status == "DEADLINE_EXCEEDED":
        return "expired"
    if code == 6 or status == "ALREADY_EXISTS":
        return "conflict"
    if code is None and ("stockout" in text or "no more capacity" in text):
        return "stockout"
    if code is None and ("expired" in text or "valid until" in text):
        return "expired"
    if code == 5 or status == "NOT_FOUND":
        return "not-found"
    if code == 9 or status == "FAILED_PRECONDITION":
        return "precondition"
    if (code == 7 or status == "PERMISSION_DENIED") and _location_refused(text):
        return "inaccessible"
    if code in (7, 16) or status in ("PERMISSION_DENIED", "UNAUTHENTICATED"):
        # a 403 'Quota ... exceeded' or 'Insufficient regional quota' (Compute's ways), not 'requires a quota project'
        # (ADC without one)
        exceeded = "quota" in text and any(word in text for word in ("exceeded", "limit", "insufficient"))
        return "quota" if exceeded and code != 16 and status != "UNAUTHENTICATED" else "auth"
    return "other"


_LOCATION_REFUSED = re.compile(r"\blocation \S+ (?:is )?not found or (?:access (?:is )?)?unauthorized")


def _location_refused(text: str) -> bool:
    """A 403's lower-cased message in the words Google's APIs refuse a location with ('Location us-east1-d is not
    found or access is unauthorized.'): of the zone asked for, not of the project's permissions. The sentence, not its
    words apart: a permission refusal may hold 'location', 'not found' and 'unauthorized' in other places."""
    return _LOCATION_REFUSED.search(text) is not None


# google.rpc.ErrorInfo reasons that put a refusal on the caller or the project, whatever the message's words (the
# reason is 'the proximate cause of the error', googleapis google/rpc/error_details.proto): IAM's missing permission
# (domain iam.googleapis.com) and Service Infrastructure's credential and project causes (google/api/
# error_reason.proto).
PERMISSION_REASONS = {
    "IAM_PERMISSION_DENIED", "SERVICE_DISABLED", "BILLING_DISABLED", "USER_PROJECT_DENIED", "CONSUMER_SUSPENDED",
    "CONSUMER_INVALID", "SECURITY_POLICY_VIOLATED", "ACCESS_TOKEN_EXPIRED", "ACCESS_TOKEN_SCOPE_INSUFFICIENT",
    "ACCOUNT_STATE_INVALID", "ACCESS_TOKEN_TYPE_UNSUPPORTED", "CREDENTIALS_MISSING", "API_KEY_INVALID",
    "API_KEY_SERVICE_BLOCKED",
}  # fmt: skip


def from_status(error: dict[str, object], where: str) -> CloudError:
    """A CloudError from a google.rpc.Status JSON ({"code": 8, "message": ..., "status"?: ...}), e.g. the
    `error` of a finished long-running operation or of a failed queued resource. Its message, the server's text, is
    redacted here (errors.redact), where it enters: it goes on to progress lines, `--json` attempts, the probe's
    observations stored in onechip's home, not only to the error line the CLI redacts."""
    code = error.get("code")
    code = int(code) if isinstance(code, int | float | str) and str(code).lstrip("-").isdigit() else None
    status = str(error.get("status") or _STATUS_OF.get(code if code is not None else -1, ""))
    legacy = _entries(error)
    said = error.get("message") or "; ".join(str(e.get("message") or e.get("code") or "") for e in legacy)
    message = redact(" ".join(str(said or "no message").split()))
    reason = classify(code, status, message)
    message += redact(_said_in_details(error.get("details"), message))
    reasons = _reasons(error)
    missing = [str(d.get("resourceName", "")) for d in _detail(error.get("details"), "google.rpc.ResourceInfo")]
    if reason == "not-found" and any("/acceleratorTypes/" in name for name in missing):
        reason = "unsupported"  # its ResourceInfo names the missing resource: the zone's entry for the TPU type
    if reason == "inaccessible" and reasons & PERMISSION_REASONS:
        reason = "auth"  # the location's words over a permission the caller lacks: no other zone answers otherwise
    if reason in ("other", "auth", "stockout") and code != 16 and reasons & QUOTA_REASONS:
        reason = "quota"  # a quota by its reason, whatever the wording ('Insufficient regional quota ...')
    elif reason == "other" and code is None and reasons & set(CAPACITY_REASONS):
        reason = "stockout"  # no code to read (a Compute Engine operation's error): its errors[] code
    elif (
        reason == "quota"
        and reasons & set(CAPACITY_REASONS)
        and not reasons & QUOTA_REASONS
        and not _detail(error.get("details"), "google.rpc.QuotaFailure")
    ):
        # the zone's capacity by its reason, under RESOURCE_EXHAUSTED's stock text ('Resource has been exhausted (e.g.
        # check quota).', GENERIC_429), whose 'quota' named none: it was said as quota, capacity as a quota to raise;
        # never where a quota reason or QuotaFailure names one too (both refused it: the quota is the one to raise)
        reason = "stockout"
    if reason in ("stockout", "auth") and code != 16 and _detail(error.get("details"), "google.rpc.QuotaFailure"):
        reason = "quota"
    if reason in ("quota", "stockout", "auth") and code != 16 and _rate_limited(error.get("details"), message, reasons):
        reason = "rate-limit"
    return CloudError(f"{where}: {message}", reason=reason, code=code, status=status)


def from_http(http_status: int, body: object, where: str) -> CloudError:
    """A CloudError from an HTTP error answer: Google's {"error": {"code": 429, "message", "status"}} body
    (its `code` is the HTTP status; the gRPC code comes from `status`), or any other body."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return CloudError(f"{where}: HTTP {http_status}", reason=classify(None, "", ""), code=None)
    status = str(error.get("status") or "")
    code = GRPC_CODES.get(status, _HTTP_STATUS.get(http_status))
    refusal = from_status({**error, "code": code, "status": status}, where)
    details, said = error.get("details"), " ".join(str(error.get("message") or "").lower().split()).rstrip(".")
    bare = said in ("", GENERIC_429) and not _detail(details, "google.rpc.QuotaFailure")
    if http_status == 429 and (bare or refusal.reason == "stockout") and not _no_capacity(details, str(refusal)):
        refusal.reason = "rate-limit"  # a bare 429 (no stockout or quota reason) refused the rate, not the zone
    return refusal


def _detail(details: object, kind: str) -> list[dict[str, object]]:
    """The entries of a Status's `details` of type `kind` (e.g. google.rpc.QuotaFailure: the API's own word
    that a quota refused)."""
    if not isinstance(details, list):
        return []
    return [d for d in details if isinstance(d, dict) and str(d.get("@type", "")).endswith(kind)]


# The longest detail value shown: a quota's id or metric, a service's title or activation URL run to tens of characters
# (cloud.google.com/docs/quotas); past this bound of ours a value is the server's text, cut so one line stays short
MAX_DETAIL_CHARS = 120
# A service name as Service Usage names one: its DNS name ('tpu.googleapis.com', google/api/serviceusage/v1
# resources.proto); only such a name, and a project in its shape, is put in the `gcloud services enable` command
_SERVICE = re.compile(r"[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)+")


def _service(name: str) -> bool:
    """Is `name` a service's DNS name (_SERVICE), at most 253 characters (RFC 1035's longest name)?"""
    return len(name) <= 253 and bool(_SERVICE.fullmatch(name))


def _shown(value: object) -> str:
    """A detail's value as one short line (errors.one_line: whitespace runs one space), cut at MAX_DETAIL_CHARS."""
    flat = one_line(str(value))
    return flat if len(flat) <= MAX_DETAIL_CHARS else flat[:MAX_DETAIL_CHARS] + "..."


def _said_in_details(details: object, message: str) -> str:
    """What a Status's details name that its `message` may not (a server may give only a stock message), to follow
    it on its line: the quota a google.rpc.QuotaFailure refused (each violation's quotaId and quotaMetric, else its
    description; Service Control's ErrorInfo metadata quota_metric / quota_limit), and, for ErrorInfo reason
    SERVICE_DISABLED, the API to enable (metadata service, serviceTitle, activationUrl, consumer: google/api/
    error_reason.proto), with its `gcloud services enable` command where the service is a DNS name (_SERVICE) and the
    consumer's project in its shape; for ErrorInfo reason IAM_PERMISSION_DENIED, the permission its metadata names
    (Google's IAM errors: {"reason": "IAM_PERMISSION_DENIED", "domain": "iam.googleapis.com", "metadata":
    {"permission": "logging.buckets.create"}}, as quoted from googleapi's 403 in public Terraform logs; a message in
    the location's words names none). Each value _shown; '' when they name nothing the message does not already
    say."""
    quotas: list[str] = []
    for failure in _detail(details, "google.rpc.QuotaFailure"):
        violations = failure.get("violations")
        for v in violations if isinstance(violations, list) else []:
            if isinstance(v, dict):
                named = [_shown(v[k]) for k in ("quotaId", "quotaMetric") if v.get(k)]
                quotas += named or ([_shown(v["description"])] if v.get("description") else [])
    enable = denied = ""
    for info in _detail(details, "google.rpc.ErrorInfo"):
        meta = info.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        quotas += [_shown(meta[k]) for k in ("quota_metric", "quota_limit") if meta.get(k)]
        permission = _shown(meta.get("permission") or "")
        if str(info.get("reason", "")).upper() == "IAM_PERMISSION_DENIED" and permission and permission not in message:
            denied = f" (permission {permission} denied to the credentials' account: grant it, or a role holding it)"
        service = str(meta.get("service") or "")
        if str(info.get("reason", "")).upper() == "SERVICE_DISABLED" and _service(service) and not enable:
            project = str(meta.get("consumer") or "").removeprefix("projects/")
            where = f" --project {project}" if valid_project(project) else ""
            url = f": {_shown(meta['activationUrl'])}" if meta.get("activationUrl") else ""
            title = f"{_shown(meta['serviceTitle'])} ({service})" if meta.get("serviceTitle") else service
            enable = f"; enable {title} in the project{url}, or `gcloud services enable {service}{where}`"
    new = [q for q in dict.fromkeys(quotas) if q not in message]
    return (f" (quota: {', '.join(new)})" if new else "") + denied + enable


GENERIC_429 = "resource has been exhausted (e.g. check quota)"  # RESOURCE_EXHAUSTED's stock text: names no quota
CAPACITY_REASONS = ("ZONE_RESOURCE_POOL_EXHAUSTED", "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS", "STOCKOUT")
CAPACITY_WORDS = ("stockout", "no more capacity", "does not have enough resources", "currently unavailable in the")


def _no_capacity(details: object, message: str) -> bool:
    """A refusal for want of chips in the zone: an ErrorInfo reason of CAPACITY_REASONS, or the wording of the
    TPU API ('There is no more capacity in the zone', 'stockout') or of Compute Engine's resource availability
    errors ('The zone ... does not have enough resources available', 'A ... VM instance ... is currently
    unavailable in the ZONE zone': cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-
    availability)."""
    if any(str(d.get("reason", "")).upper() in CAPACITY_REASONS for d in _detail(details, "google.rpc.ErrorInfo")):
        return True
    return any(word in message.lower() for word in (*CAPACITY_WORDS, "zone_resource_pool_exhausted"))


def _reasons(error: dict[str, object]) -> set[str]:
    """The machine-readable reasons an error body gives, upper-cased: its ErrorInfo details' `reason`, and the
    `reason` and `code` of each entry of `errors` (the error body of Google's older JSON APIs, whose 403 says
    rateLimitExceeded / userRateLimitExceeded / quotaExceeded there: cloud.google.com/compute/docs/api/
    how-tos/api-rate-limits; and a Compute Engine operation's error.errors[].code, e.g. ZONE_RESOURCE_POOL_EXHAUSTED,
    QUOTA_EXCEEDED, with no code or message of its own)."""
    found = {str(d.get("reason", "")) for d in _detail(error.get("details"), "google.rpc.ErrorInfo")}
    for entry in _entries(error):
        found |= {str(entry.get("reason") or ""), str(entry.get("code") or "")}
    return {r.upper() for r in found if r}


def _entries(error: dict[str, object]) -> list[dict[str, object]]:
    """The objects of an error's `errors` list (the older JSON APIs' body; see `_reasons`), [] when it has none."""
    entries = error.get("errors")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


RATE_REASONS = {"RATE_LIMIT_EXCEEDED", "RATELIMITEXCEEDED", "USERRATELIMITEXCEEDED"}
QUOTA_REASONS = {"QUOTA_EXCEEDED", "QUOTAEXCEEDED"}  # errors[].code of an operation / errors[].reason of a 403


def _rate_limited(details: object, message: str, reasons: set[str] | frozenset[str] = frozenset()) -> bool:
    """A refusal of the request rate, not of chips: an ErrorInfo with reason RATE_LIMIT_EXCEEDED (Google
    Cloud APIs' error model, cloud.google.com/apis/design/errors), an older API's 403 whose errors[].reason is
    rateLimitExceeded or userRateLimitExceeded (`reasons`, from `_reasons`), or Service Control's 'Quota exceeded
    for quota metric ... per minute' wording (and its older 'quota group ... Queries per 100 seconds'). Nothing was
    made; the same request may be sent again later."""
    if any(d.get("reason") == "RATE_LIMIT_EXCEEDED" for d in _detail(details, "google.rpc.ErrorInfo")):
        return True
    if reasons & RATE_REASONS:
        return True
    text = message.lower()
    per = ("per minute", "per 100 seconds", "per second")  # Service Control's request-rate limits, old and new
    return ("quota metric" in text or "quota group" in text) and any(p in text for p in per)


_DURATION = re.compile(r"(\d+(?:\.\d{1,9})?)s")  # google.protobuf.Duration in JSON: '3s', '0.5s', '1.000000001s'
# google/protobuf/duration.proto: Duration.seconds 'Must be from -315,576,000,000 to +315,576,000,000 inclusive' (about
# 10,000 years); a retryDelay of more digits is read as that (float() reads 400 digits as inf: the retry line's
# int(inf) was an OverflowError)
DURATION_MAX_S = 315_576_000_000


def retry_delay_s(error: object) -> float | None:
    """Seconds a google.rpc.Status's RetryInfo detail asks to wait before the same request is sent again (its
    retryDelay: 'Clients should wait at least this long between retrying the same request', googleapis
    google/rpc/error_details.proto), the longest when several, at most DURATION_MAX_S; None when it gives none or
    none that reads."""
    details = error.get("details") if isinstance(error, dict) else None
    delays = [
        _DURATION.fullmatch(str(d.get("retryDelay", "")).strip()) for d in _detail(details, "google.rpc.RetryInfo")
    ]
    return max((min(float(m.group(1)), DURATION_MAX_S) for m in delays if m), default=None)
