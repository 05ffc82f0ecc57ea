"""Prices from the source: Compute Engine's SKUs in the Cloud Billing Catalog, read, matched and stored.

    GET https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus?currencyCode=USD&pageSize=5000
        -> {"skus": [Sku...], "nextPageToken": "..."}   (every page: about 32,000 SKUs, no server-side filter)

The request and the response follow the cloudbilling v1 discovery document (catalog/billing_skus.json
`api_source`). Each chip's SKU descriptions are rules in catalog/billing_skus.json, matched whole (anchored),
so 'Reserved ... in Calendar Mode' and 'Commitment v1: ...' SKUs never price on-demand; the SKU's
serviceRegions say where it applies (a single-region SKU wins over a multi-region one, which is said). A
chip, region and pricing model with no SKU is recorded as missing, never guessed.

Credentials: an API key from ONECHIP_BILLING_API_KEY or the file ONECHIP_BILLING_API_KEY_FILE names (sent in
the x-goog-api-key header, never in a URL, argv, log or error), else Application Default Credentials
(google-auth, the `cloud` extra). ONECHIP_BILLING_API_ENDPOINT points the read at a test server; no
credentials are read then.

The read is stored as $ONECHIP_HOME/prices/billing_catalog.json (a BillingRead: read time, each matched SKU's
id and description, the prices and the gaps). `known_prices` is what every price user reads: the stored read
and catalog/prices.json, the freshest entry per chip, region and pricing model.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from contextlib import nullcontext
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from onechip import catalog
from onechip.cloud.auth import NO_ADC, REAUTH, Credentials
from onechip.errors import CloudError, ConfigError, remember_secret
from onechip.paths import onechip_home, read_home_file, read_key_file, write_text_atomic
from onechip.schemas.common import TEST_SERVER_HINT, server_url_from_env, stored_by_newer, written_by_newer
from onechip.schemas.cost import BillingRead, Price, PriceGap, SkuRecord

if TYPE_CHECKING:
    import httpx

BILLING_URL = "https://cloudbilling.googleapis.com"
ENDPOINT_ENV = "ONECHIP_BILLING_API_ENDPOINT"
KEY_ENV = "ONECHIP_BILLING_API_KEY"
# Google APIs refuse a key that is not one with HTTP 400 INVALID_ARGUMENT, 'API key not valid. Please pass a valid API
# key.', its google.rpc.ErrorInfo reason API_KEY_INVALID (cloud.google.com/apis/design/errors, ErrorInfo): a 400 that
# said nothing of the key's variables, where a 401 to a key does
API_KEY_INVALID = "API_KEY_INVALID"
KEY_FILE_ENV = "ONECHIP_BILLING_API_KEY_FILE"
PAGE_SIZE = 5000  # the discovery document's default page size for services.skus.list
MAX_PAGES = 1000  # 32,000 SKUs are ~7 pages; a server that never stops paging is refused
REQUEST_TIMEOUT_S = 120.0  # one page's wait (a 5,000-SKU page is megabytes), within the call's deadline
# the whole read, every page and its retries: each page may take the TPU API's call deadline (tpu_api.DEADLINE_ENV,
# 30 s), and the ~7 pages of Compute Engine's 32,000 SKUs so take 210 s at worst: 600 s is that with room, where a
# slow server of many pages held `prices refresh` for MAX_PAGES x 30 s (over 8 hours) with no end said
READ_DEADLINE_ENV = "ONECHIP_BILLING_DEADLINE_S"
READ_DEADLINE_S = 600.0
SOURCE = "Cloud Billing Catalog"
CATALOG = ("the Cloud Billing Catalog", ENDPOINT_ENV)  # tpu_api.not_the_api's words for an answer that is not its


# --- the wire (cloudbilling v1 discovery document), read leniently


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Money(_Wire):
    currency_code: str = Field(default="USD", alias="currencyCode", description="ISO 4217 code.")
    # int64 is a JSON string in proto3's JSON mapping ("1"), and a parser also takes a number (1): both read
    units: int = Field(default=0, description="Whole units (int64: a string or a number on the wire).")
    nanos: int = Field(default=0, description="Nano (1e-9) units of the amount; the sign of `units` when both set.")

    def amount(self) -> float:
        return self.units + self.nanos / 1e9


class TierRate(_Wire):
    start_usage_amount: float = Field(default=0.0, alias="startUsageAmount", description="Tier start.")
    unit_price: Money = Field(default_factory=Money, alias="unitPrice", description="Price per usage unit.")


class PricingExpression(_Wire):
    usage_unit: str = Field(default="", alias="usageUnit", description="e.g. 'h'.")
    tiered_rates: list[TierRate] = Field(default_factory=list, alias="tieredRates", description="Tiers.")


class PricingInfo(_Wire):
    effective_time: str = Field(default="", alias="effectiveTime", description="When the rate took effect.")
    pricing_expression: PricingExpression = Field(
        default_factory=PricingExpression, alias="pricingExpression", description="The formula."
    )


class Category(_Wire):
    resource_family: str = Field(default="", alias="resourceFamily", description="e.g. 'Compute'.")
    resource_group: str = Field(default="", alias="resourceGroup", description="e.g. 'TPU', 'GPU'.")
    usage_type: str = Field(default="", alias="usageType", description="e.g. 'OnDemand', 'Preemptible'.")


class Sku(_Wire):
    sku_id: str = Field(default="", alias="skuId", description="e.g. 'AA95-CD31-42FE'.")
    description: str = Field(default="", description="Human-readable description.")
    category: Category = Field(default_factory=Category, description="Category hierarchy.")
    service_regions: list[str] = Field(default_factory=list, alias="serviceRegions", description="Regions.")
    pricing_info: list[PricingInfo] = Field(default_factory=list, alias="pricingInfo", description="Timeline.")


class ListSkusResponse(_Wire):
    skus: list[Sku] = Field(default_factory=list, description="One page of SKUs.")
    next_page_token: str = Field(default="", alias="nextPageToken", description="Empty on the last page.")


# --- reading


def _api_key() -> str | None:
    """The API key from ONECHIP_BILLING_API_KEY, else from the file ONECHIP_BILLING_API_KEY_FILE names. Raises
    ConfigError (never quoting the key) for one an HTTP header cannot carry: not printable ASCII, or with a space
    inside ('clé' was an internal UnicodeEncodeError, a pasted 'KEY other' an 'invalid header' retried as no answer)."""
    key = os.environ.get(KEY_ENV, "").strip()
    path = os.environ.get(KEY_FILE_ENV, "").strip()
    said = KEY_ENV
    if not key and path:
        key, said = read_key_file(Path(path), KEY_FILE_ENV)[0].strip(), f"the file {KEY_FILE_ENV} names"
    if key:
        remember_secret(key)
    if key and not (key.isascii() and key.isprintable() and " " not in key):
        raise ConfigError(f"{said} is not an API key: it holds a space or a character that is not printable ASCII")
    return key or None


Headers = Callable[[str, str], dict[str, str]]


def _headers() -> tuple[str, Headers, Callable[[], bool]]:
    """(base URL, a function of (method, URL) giving the headers of each request, a function that gets a new access
    token now and says whether it did: Credentials.refresh under ADC, nothing to refresh for an API key)."""
    override = server_url_from_env(ENDPOINT_ENV, TEST_SERVER_HINT)
    if override:
        return override, lambda method, url: {}, lambda: False
    key = _api_key()
    if key:
        return BILLING_URL, lambda method, url: {"x-goog-api-key": key}, lambda: False
    try:
        credentials = Credentials(use_adc=True)
        return BILLING_URL, credentials.headers, credentials.refresh
    except CloudError as exc:
        if exc.reason != "auth":
            raise
        if exc.status != NO_ADC:  # a credentials file refused says which and why (it was said as none at all)
            raise exc.reworded(f"{exc}; or set {KEY_ENV} or {KEY_FILE_ENV} (an API key)") from None
        raise CloudError(
            f"no credentials for the Cloud Billing Catalog: set {KEY_ENV} or {KEY_FILE_ENV} (an API key), run "
            f"`gcloud auth application-default login`, or point {ENDPOINT_ENV} at a test server",
            reason="auth",
        ) from None


def list_skus(
    service: str,
    *,
    http: httpx.Client | None = None,
    on_page: Callable[[int, int], None] | None = None,
    on_retry: Callable[[str], None] | None = None,
    on_wait: Callable[[str, float], None] | None = None,
) -> tuple[str, int, list[Sku]]:
    """(base URL, pages, every SKU of `service`), USD, following nextPageToken to the end; `on_retry` is told a
    page's retries as one outage (tpu_api.Outage), `on_wait` each retry as it waits (tpu_api.retrying). Every page
    is read within one deadline for the whole read ($ONECHIP_BILLING_DEADLINE_S, READ_DEADLINE_S). Raises
    CloudError (the API refused, unreachable or offline, an answer that is not a SKU page, endless paging, the
    deadline passed: 'transient', naming the page it reached)."""
    import httpx  # only a read needs it: cost, which reads the stored prices, then loads no HTTP client (or its CLI)

    from onechip.cloud import tpu_api  # with httpx: only a read loads them

    total_s = tpu_api.env_seconds(READ_DEADLINE_ENV, READ_DEADLINE_S)
    page_s = tpu_api.env_seconds(tpu_api.DEADLINE_ENV, 30.0)
    end_s = time.monotonic() + total_s
    base, headers, refresh = _headers()
    # a client made here is closed when the read ends, an interrupted one too: no socket is left to the GC
    with nullcontext(http) if http is not None else httpx.Client(timeout=REQUEST_TIMEOUT_S) as client:
        url = f"{base}/v1/services/{service}/skus"
        skus: list[Sku] = []
        token, seen, pages = "", set(), 0
        while True:
            params: dict[str, Any] = {"currencyCode": "USD", "pageSize": PAGE_SIZE}
            if token:
                params["pageToken"] = token
            where = f"services/{service}/skus page {pages + 1}"
            left_s = end_s - time.monotonic()
            try:
                if left_s <= 0:
                    raise CloudError(f"{where}: not asked", reason="transient")
                told = on_retry or (lambda line: None)
                data = _get(client, url, params, headers, where, base, told, on_wait, refresh,
                            deadline_s=min(page_s, left_s))  # fmt: skip
            except CloudError as exc:
                if exc.reason not in ("transient", "rate-limit") or left_s >= page_s:
                    raise
                raise exc.reworded(
                    f"services/{service}/skus at {base}: not read within the {total_s:g} s deadline "
                    f"(${READ_DEADLINE_ENV}): page {pages + 1} unanswered after {pages} pages, "
                    f"{len(skus):,} SKUs read; nothing stored"
                ) from None
            pages += 1
            try:
                page = ListSkusResponse.model_validate(data)
            except ValidationError:
                raise tpu_api.not_the_api(base, f"{where} is not a ListSkusResponse", CATALOG) from None
            skus += page.skus
            if on_page:
                on_page(pages, len(skus))
            token = page.next_page_token
            if not token:
                return base, pages, skus
            if token in seen or pages >= MAX_PAGES:  # a page cap reached was said as a token repeated
                why = "its nextPageToken repeats one already followed" if token in seen else f"{MAX_PAGES} pages read"
                raise CloudError(f"services/{service}/skus at {base}: paging does not end (page {pages}: {why})")
            seen.add(token)


def _get(client: httpx.Client, url: str, params: dict[str, Any], headers: Headers, where: str, base: str,
         on_retry: Callable[[str], None], on_wait: Callable[[str, float], None] | None = None,
         refresh: Callable[[], bool] = lambda: False, deadline_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    """One page's JSON object; no answer, HTTP 5xx, a rate limit (429, or a 403 whose reason says so: refusals) and
    a body cut short tried again with the TPU API's backoff and deadline (tpu_api.retrying: RETRIES,
    ONECHIP_CLOUD_DEADLINE_S, or `deadline_s`: what is left of the whole read's): a read changes nothing. The
    retries are told to `on_retry` as one outage (tpu_api.Outage: once, on a change, every OUTAGE_REMIND_S, and when
    the page answers again; each retry was a line); a host name that does not resolve (offline) is not retried.
    Raises CloudError ('offline' at once, 'transient' once the retries or the deadline are spent, 'bad-endpoint',
    the catalog's refusal: tpu_api.answer_json). A 401 gets a new token (`refresh`) and is sent again once, as
    TpuApi does (google-auth's AuthorizedSession: an access token revoked or expired early failed `prices refresh`
    with 'auth' where every TPU API call went on); a 401 that stands says how to sign in again, as TpuApi's does
    (auth.REAUTH; the API key's variables where a key was sent), never the token."""
    from onechip.cloud import tpu_api

    def once(end_s: float) -> dict[str, Any]:
        for fresh in (False, True):
            sent = headers("GET", url)
            answer = tpu_api.send(client, "GET", url, where=f"{where} of the Cloud Billing Catalog", base=base,
                                  end_s=end_s, timeout_s=REQUEST_TIMEOUT_S, params=params,
                                  headers=sent)  # fmt: skip
            if answer.status_code != 401 or fresh or (not refresh() and "x-goog-api-key" in sent):
                break  # a key cannot change: its 401 stands; a test endpoint's is sent again as a refreshed one
        try:
            return tpu_api.answer_json(answer, where, base, CATALOG)
        except CloudError as exc:  # a 401 that stands (after the refresh, or with nothing to refresh)
            if answer.status_code == 401 and exc.reason == "auth":
                fix = f"check {KEY_ENV} or {KEY_FILE_ENV}" if "x-goog-api-key" in sent else REAUTH
                raise exc.reworded(f"{exc}; the credentials were refused: {fix}") from None
            if answer.status_code == 400 and "x-goog-api-key" in sent and API_KEY_INVALID in answer.text:
                raise exc.reworded(f"{exc}; the API key was refused: check {KEY_ENV} or {KEY_FILE_ENV}") from None
            raise

    again = ("transient", "rate-limit")  # a 403 rateLimitExceeded as a 429 (send): the rate was refused, not the read
    return tpu_api.retrying(once, lambda exc: exc.reason in again or exc.status == "BAD_JSON",
                            base_s=tpu_api.env_poll_s(), on_retry=on_retry, once_said=True,
                            on_wait=on_wait, deadline_s=deadline_s)  # fmt: skip


# --- matching


def _pattern(template: str) -> re.Pattern[str]:
    """'TpuV5e running in {place}' -> ^TpuV5e running in (?P<place>.+)$ (the whole description, nothing else)."""
    head, _, tail = template.partition("{place}")
    return re.compile(re.escape(head) + "(?P<place>.+?)" + re.escape(tail) + r"\Z")


def _currency(sku: Sku) -> str:
    """The currency of `sku`'s latest rate when it is not USD ('EUR'), else ''. The request asks for USD
    (currencyCode=USD), and PricingInfo.currencyConversionRate is 'from USD to the currency specified in the request',
    surcharge for billing in it included (cloudbilling v1 discovery document): 1 for USD, never a rate from another
    currency into USD, so such a SKU is converted never (its price read as dollars, or divided by that rate, would be
    a guess)."""
    tiers = _latest(sku).pricing_expression.tiered_rates if sku.pricing_info else []
    return next((t.unit_price.currency_code for t in tiers if t.unit_price.currency_code != "USD"), "")


def _latest(sku: Sku) -> PricingInfo:
    """`sku`'s PricingInfo of the latest effectiveTime (PricingInfo.effectiveTime: 'The timestamp from which this
    pricing was effective'), the last of equals; one whose time does not parse counts as the earliest. Google's
    discovery document calls pricingInfo 'a timeline ... in chronological order', but a server that lists it newest
    first priced the chip at its oldest rate (the last entry was taken). Raises IndexError on none."""
    oldest = datetime.min.replace(tzinfo=UTC)

    def when(k: int) -> tuple[datetime, int]:
        try:
            moment = datetime.fromisoformat(sku.pricing_info[k].effective_time.replace("Z", "+00:00"))
        except ValueError:
            return oldest, k
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)), k

    return sku.pricing_info[max(range(len(sku.pricing_info)), key=when)]


def _rate(sku: Sku) -> tuple[float | None, str, str]:
    """(USD per usage unit of the latest rate's dearest tier, usage unit, effective time); None without one, or
    for a rate in another currency (`_currency`; `match` skips such a SKU and says so).
    A tier prices usage only past its startUsageAmount (TierRate, cloudbilling v1), and usage adds up over the
    billing account's month, which onechip cannot see: an hour may fall in any tier, so the quote is the dearest
    (a free or cheaper first tier priced a TPU at $0/h)."""
    if not sku.pricing_info:
        return None, "", ""
    info = _latest(sku)
    tiers = info.pricing_expression.tiered_rates
    if not tiers or _currency(sku):
        return None, info.pricing_expression.usage_unit, info.effective_time
    dearest = max(t.unit_price.amount() for t in tiers)
    return dearest, info.pricing_expression.usage_unit, info.effective_time


# The pricing models a SKU's category.usageType may price (cloudbilling v1 Category.usageType: 'how the SKU is
# consumed', e.g. "OnDemand", "Preemptible", "Commit1Mo", "Commit1Yr"); a type not here (or none) says nothing.
USAGE_MODELS = {"OnDemand": {"on-demand", "flex-start"}, "Preemptible": {"spot"}, "Commit1Yr": {"1y"},
                "Commit3Yr": {"3y"}}  # fmt: skip


def _fits(sku: Sku, pricing: str) -> bool:
    """Can `sku` price `pricing`? Not when its usageType names another model: a commitment or spot SKU that shares
    the on-demand description priced on-demand at its own rate (the lower SKU id won)."""
    usage = sku.category.usage_type
    if usage in USAGE_MODELS:
        return pricing in USAGE_MODELS[usage]
    return not usage.startswith("Commit")  # a term this table does not name (Commit1Mo) prices none of these


def _record(sku: Sku) -> SkuRecord:
    usd, unit, when = _rate(sku)
    return SkuRecord(
        sku_id=sku.sku_id, description=sku.description, service_regions=sku.service_regions,
        usage_type=sku.category.usage_type, usd_per_unit=usd, usage_unit=unit, effective_time=when,
    )  # fmt: skip


def match(
    skus: list[Sku], read_at: datetime
) -> tuple[list[Price], list[PriceGap], list[SkuRecord], dict[str, str], list[str]]:
    """(prices, gaps, the matched SKUs, region -> place word, the matching SKUs skipped) for every chip in
    catalog/billing_skus.json, in every region some SKU of that chip is offered in. A SKU priced in another
    currency is skipped and named ("SKU X 'description': priced in EUR, not USD"): one such SKU failed the whole
    read, where the USD ones price as ever. Prices are USD per hour of a per-hour SKU ('h'): of the
    SKUs that fit, one with an hourly rate above $0 (a $0 one priced a chip free: $0/M tokens, ranked first by
    advise): the fewest regions first (the region's own before a multi-region one), then the dearest (its source
    names the other rates of that rank), then the lowest SKU id; a gap only when none has one."""
    rules = catalog.billing_skus()
    day = read_at.date().isoformat()
    prices: list[Price] = []
    gaps: list[PriceGap] = []
    kept: dict[str, SkuRecord] = {}
    names: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for chip, rule in rules.chips.items():
        found: dict[str, list[tuple[Sku, str]]] = {}
        for pricing, templates in rule.templates.items():
            patterns = [_pattern(t) for t in templates]
            found[pricing] = [(s, m["place"]) for s in skus for p in patterns if (m := p.match(s.description))]
            for s, _ in found[pricing]:
                if currency := _currency(s):
                    skipped[s.sku_id] = f"SKU {s.sku_id} '{s.description}': priced in {currency}, not USD"
        regions = sorted({r for hits in found.values() for s, _ in hits for r in s.service_regions})
        for region in regions:
            for pricing, hits in found.items():
                here = sorted((h for h in hits if region in h[0].service_regions and _fits(h[0], pricing)
                               and h[0].sku_id not in skipped),
                              key=lambda h: (len(h[0].service_regions), h[0].sku_id))  # fmt: skip
                rated = [(h, usd) for h in here for usd, unit in [_rate(h[0])[:2]]
                         if usd is not None and unit == "h" and 0 < usd < math.inf]  # fmt: skip
                # the fewest regions, then the dearest: two SKUs of one rank (the same description twice) took the
                # lower id's rate, the other unsaid; the dearest is quoted, as a tiered rate is, and the rest said
                best = min(rated, key=lambda r: (len(r[0][0].service_regions), -r[1]), default=None)
                if best is None:
                    why = "no SKU described as " + " or ".join(repr(t) for t in rule.templates[pricing])
                    if here:  # a negative rate is no price (it was stored, and costs came out negative), nor is $0
                        usd, unit = _rate(here[0][0])[:2]
                        why = f"SKU {here[0][0].sku_id} has no hourly rate (unit {unit!r}, USD {usd})"
                        if usd == 0 and unit == "h":
                            why = f"SKU {here[0][0].sku_id} is priced at $0 an hour: no chip-hour is free"
                    elif foreign := [h[0] for h in hits if region in h[0].service_regions
                                     and _fits(h[0], pricing) and h[0].sku_id in skipped]:  # fmt: skip
                        why = (f"{skipped[foreign[0].sku_id]} (skipped: onechip asks for USD, and PricingInfo."
                               f"currencyConversionRate converts USD into the currency asked, never "
                               f"{_currency(foreign[0])} into USD)")  # fmt: skip
                    gaps.append(PriceGap(chip=chip, region=region, pricing=pricing, reason=why))
                    continue
                (sku, place), usd = best
                rivals = [f"{h[0].sku_id} at ${rate:.4f}/h" for h, rate in rated
                          if len(h[0].service_regions) == len(sku.service_regions) and rate != usd]  # fmt: skip
                said = f" (the dearest of {len(rivals) + 1} SKUs matching here; also {', '.join(rivals)})"
                rival = said if rivals else ""
                kept[sku.sku_id] = _record(sku)
                if len(sku.service_regions) == 1:
                    names[region] = place
                note = rule.note
                if len(sku.service_regions) > 1:
                    note = f"multi-region SKU ({place}: {len(sku.service_regions)} regions); {note}"
                prices.append(Price(
                    chip=chip, region=region, pricing=pricing, usd_per_chip_hour=usd,
                    stops_itself=pricing == "flex-start", preemptible=pricing == "spot",
                    source=f"{SOURCE} services/{rules.service}/skus/{sku.sku_id} '{sku.description}'{rival}",
                    date=day, note=note,
                    sku_id=sku.sku_id, sku_description=sku.description,
                ))  # fmt: skip
    return prices, gaps, list(kept.values()), names, list(skipped.values())


# --- the store


def utc_today() -> date:
    """Today's date in UTC: what a price's age is judged against. A read is dated by its UTC read time (`refresh`),
    so the local date (date.today()) put a read of today at -1 or 1 days old in a zone far from UTC (TZ=Etc/GMT+12
    before noon UTC, Pacific/Kiritimati after 10:00 UTC), and a price stale a day early or late."""
    return datetime.now(UTC).date()


def store_path() -> Path:
    """$ONECHIP_HOME/prices/billing_catalog.json."""
    return onechip_home() / "prices" / "billing_catalog.json"


def refresh(
    *,
    http: httpx.Client | None = None,
    on_page: Callable[[int, int], None] | None = None,
    on_retry: Callable[[str], None] | None = None,
    on_wait: Callable[[str, float], None] | None = None,
) -> BillingRead:
    """Read every page of Compute Engine's SKUs, match them and store the read (see the module docstring);
    `on_retry` is told a page's retries as one outage (tpu_api.Outage), `on_wait` each as it waits. Raises
    CloudError (the catalog; 'bad-endpoint' for an answer in which no SKU is a chip's: Compute Engine's has
    hundreds, and storing it lost the last read), ConfigError (no key file, the store cannot be written, or a newer
    onechip wrote it: then nothing is read)."""
    path = store_path()
    _refuse_newer(path)  # before the read, which takes minutes, and again before the write
    service = catalog.billing_skus().service
    base, pages, skus = list_skus(service, http=http, on_page=on_page, on_retry=on_retry, on_wait=on_wait)
    read_at = datetime.now(UTC)
    prices, gaps, kept, names, skipped = match(skus, read_at)
    if not prices:  # an answer that priced nothing was stored over the last read: every price fell back to the file
        from onechip.cloud import tpu_api

        last = stored_read()
        still = f"the read of {last.read_at[:10]} still prices" if last else "prices.json prices"
        # its chips' SKUs all skipped or without a rate (every one in EUR, a server that answers its own currency
        # whatever currencyCode asks): the first reason said
        what = f"none priced a chip ({(skipped or [gaps[0].reason])[0]})" if gaps else (
            "none of a chip catalog/billing_skus.json names")  # fmt: skip
        raise tpu_api.not_the_api(base, f"services/{service}/skus answered {len(skus):,} SKUs, {what}: nothing "
                                  f"stored, {still}", CATALOG)  # fmt: skip
    read = BillingRead(read_at=read_at.isoformat(timespec="seconds"), endpoint=base, service=service, pages=pages,
                       skus_read=len(skus), skus=kept, prices=prices, missing=gaps, region_names=names,
                       skipped=skipped, kept=_still_live(prices, _last_read()))  # fmt: skip
    _refuse_newer(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, read.model_dump_json(indent=1))
    except OSError as exc:
        raise ConfigError(f"cannot store the catalog read at {path}: {exc.strerror or exc}") from None
    return read


def _refuse_newer(path: Path) -> None:
    """Raise ConfigError when a newer onechip stored the read at `path`: another onechip's, never written over."""
    if (newer := stored_by_newer(path)) is not None:
        raise ConfigError(f"cannot store the catalog read at {path}: it {written_by_newer(newer)}; upgrade onechip to "
                          "refresh it")  # fmt: skip


def _last_read() -> BillingRead | None:
    """The stored read a new one replaces (stored_read), None also where it is no regular file: the new read is
    stored over it (write_text_atomic renames over any file), as before its prices were kept (_still_live)."""
    try:
        return stored_read()
    except ConfigError:
        return None


LAST_LIVE = "last live price, read"  # leads the source of a price kept from an earlier read (_still_live)


def _still_live(prices: list[Price], last: BillingRead | None) -> list[Price]:
    """The prices of `last` (the stored read, with those it kept) for each chip, region and pricing model `prices` (a
    new read's) has none of, each as that read made it, its source led by LAST_LIVE and the time it was read (once:
    one kept again keeps its first words). A read that priced some chips and not others replaced the last read
    wholesale, and the chips it missed fell back to prices.json's older snapshot."""
    if last is None:
        return []
    priced = {(p.chip, p.region, p.pricing) for p in prices}
    kept: dict[tuple[str, str, str], Price] = {}
    for price in [*last.prices, *last.kept]:
        key = (price.chip, price.region, price.pricing)
        if key not in priced and key not in kept:
            source = (
                price.source if price.source.startswith(LAST_LIVE) else f"{LAST_LIVE} {last.read_at}: {price.source}"
            )
            kept[key] = price.model_copy(update={"source": source})
    return list(kept.values())


def stored_read() -> BillingRead | None:
    """The last stored read, or None when there is none (or it cannot be read: then it is not used, and
    read_stored says why). Raises ConfigError when it is not a regular file (paths.read_home_file: a FIFO there is
    never waited on)."""
    return read_stored()[0]


def read_stored() -> tuple[BillingRead | None, str]:
    """(the stored read, '') or (None, why it is not used, in one line; '' when there is none): `prices` said 'no
    catalog read stored' of a damaged one, or of one another onechip wrote, and priced from prices.json without a
    word. Raises ConfigError as stored_read does."""
    path = store_path()
    try:
        return BillingRead.model_validate_json(read_home_file(path)), ""
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
    except ValidationError as exc:
        invalid_json = any(error["type"] == "json_invalid" for error in exc.errors())
        why = "not JSON" if invalid_json else "not a catalog read this onechip reads"
    except ValueError:
        why = "not UTF-8 text"
    return None, (
        f"the catalog read stored at {path} cannot be read ({why}), so prices.json alone prices: run `onechip prices "
        "refresh` to read the catalog again"
    )


def file_prices() -> list[Price]:
    """catalog/prices.json's entries. Raises ConfigError if the file is malformed."""
    return list(catalog.prices().prices)


SNAPSHOT = "onechip's price snapshot (catalog/prices.json)"  # what a price not from a catalog read is, said first


def known_prices() -> list[Price]:
    """Every price onechip has, the freshest per (chip, region, pricing model): the stored catalog read and
    catalog/prices.json (a read of the same date wins over the file), and the last live price an earlier read made of
    one the stored read did not price (BillingRead.kept: its source says so, its note why). File order, read prices
    after. A file
    price's source starts with SNAPSHOT: offline, or where the read has none, cost printed the seed's
    "'Live rates from the Cloud Billing Catalog for us-west4'" with nothing saying it was no catalog read."""
    read = stored_read()
    best: dict[tuple[str, str, str], Price] = {}
    snapshot = [p.model_copy(update={"source": f"{SNAPSHOT}: {p.source}"}) for p in file_prices()]
    for price in [*snapshot, *(_kept_rows(read) if read else []), *(read.prices if read else [])]:
        key = (price.chip, price.region, price.pricing)
        if key not in best or price.date >= best[key].date:
            best[key] = price
    return list(best.values())


def _kept_rows(read: BillingRead) -> list[Price]:
    """`read`'s kept prices, each note led by why `read` did not price it (its gap's reason, PriceGap)."""
    why = {(g.chip, g.region, g.pricing): g.reason for g in read.missing}
    rows = []
    for price in read.kept:
        reason = why.get((price.chip, price.region, price.pricing), "no SKU of the chip offered in the region")
        said = f"the catalog read of {read.read_at} did not price it ({reason})"
        rows.append(price.model_copy(update={"note": f"{said}; {price.note}" if price.note else said}))
    return rows
