"""The Cloud Billing Catalog read: paging, credentials kept out of URLs and errors, and the anchored matching of
recorded SKU descriptions (tests/fakes/billing_catalog.py) to chip, region and pricing model, with no guessing."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from datetime import UTC, datetime

import httpx
import pytest

from fakes.billing_catalog import RECORDED, SERVICE, FakeBillingCatalog, sku
from onechip.cloud import billing, offers
from onechip.cloud.auth import NO_ADC, REAUTH
from onechip.errors import CloudError, ConfigError

READ_AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def fake(monkeypatch):
    with FakeBillingCatalog() as catalog:
        monkeypatch.setenv(billing.ENDPOINT_ENV, catalog.url)
        yield catalog


def _by_key(prices):
    return {(p.chip, p.region, p.pricing): p for p in prices}


def test_every_page_is_read_in_usd(fake):
    base, pages, skus = billing.list_skus(SERVICE)
    assert (base, pages, len(skus)) == (fake.url, 3, len(RECORDED))  # 12 SKUs, 5 a page
    queries = [path.split("?", 1)[1] for path, _ in fake.requests]
    assert all("currencyCode=USD" in q and "pageSize=5000" in q for q in queries)
    assert ["pageToken=5" in queries[1], "pageToken=10" in queries[2], "pageToken" in queries[0]] == [1, 1, 0]
    assert all("x-goog-api-key" not in {k.lower() for k in headers} for _, headers in fake.requests)


def test_on_demand_is_the_plain_sku_never_reserved_commitment_or_capacity_optimized():
    prices, _, _, _, _ = billing.match([billing.Sku.model_validate(s) for s in RECORDED], READ_AT)
    got = _by_key(prices)
    # the fake's rates (tests/fakes/billing_catalog.py), each from the SKU whose whole description matches
    assert {m: (got["v5e-1", "us-west4", m].sku_id, got["v5e-1", "us-west4", m].usd_per_chip_hour)
            for m in ("on-demand", "spot", "flex-start", "1y")} == {
        "on-demand": ("TEST-V5E-OD", 1.3125), "spot": ("TEST-V5E-SP", 0.4942),
        "flex-start": ("TEST-V5E-DWS", 0.6625), "1y": ("TEST-V5E-1Y", 0.0303),
    }  # fmt: skip
    assert got["v5e-1", "us-west4", "spot"].preemptible and got["v5e-1", "us-west4", "flex-start"].stops_itself
    assert got["v5e-1", "us-west4", "on-demand"].date == "2026-12-01"
    assert "TEST-V5E-OD" in got["v5e-1", "us-west4", "on-demand"].source


def test_a_combination_with_no_sku_is_none_never_borrowed():
    prices, gaps, kept, names, _ = billing.match([billing.Sku.model_validate(s) for s in RECORDED], READ_AT)
    got = _by_key(prices)
    missing = {(g.chip, g.region, g.pricing) for g in gaps}
    assert ("v6e-1", "us-east5", "spot") in missing and ("v6e-1", "us-east5", "spot") not in got
    assert ("v5e-1", "us-west4", "3y") in missing  # the fake has no 3-year SKU
    assert ("l4", "us-west4", "flex-start") in missing
    # a region only a multi-region SKU covers is priced by it, and says so
    assert "multi-region SKU (Americas" in got["v5e-1", "us-central1", "on-demand"].note
    assert names == {"us-west4": "Las Vegas", "us-east5": "Columbus"}  # as the catalog names them
    assert {k.sku_id for k in kept} >= {"6E7A-3CB4-0441", "25E8-AAEC-A70B"}  # hail's recorded L4 SKU ids
    assert not any(p.sku_id == "TEST-G2-CORE" for p in prices)  # a VM core SKU is no GPU price


def _in(currency: str, entry: dict, tier: int = 0) -> dict:
    entry["pricingInfo"][-1]["pricingExpression"]["tieredRates"][tier]["unitPrice"]["currencyCode"] = currency
    return entry


def test_a_sku_in_another_currency_is_skipped_and_named_and_the_usd_ones_still_price(fake, run, tmp_path, monkeypatch):
    # Before: one matching SKU priced in JPY failed the whole refresh ('SKU X is priced in JPY, not USD'), exit 1,
    # nothing stored: every USD price of the read was lost with it. We ask for USD; PricingInfo.currencyConversionRate
    # (cloudbilling v1 discovery document) converts USD into the currency asked, 1 here, never JPY into USD.
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    tokyo = _in("JPY", sku("TEST-V5E-TYO", "TpuV5e running in Tokyo", ["asia-northeast1"], 180.0))
    vegas = _in("EUR", sku("AAAA-V5E-EUR", "TpuV5e running in Las Vegas", ["us-west4"], 9.0))
    fake.skus = [tokyo, vegas, *RECORDED]
    code, out, err = run("prices", "refresh", "--json")
    assert code == 0, err
    read = billing.stored_read()
    assert read is not None and read.skipped == [
        "SKU TEST-V5E-TYO 'TpuV5e running in Tokyo': priced in JPY, not USD",
        "SKU AAAA-V5E-EUR 'TpuV5e running in Las Vegas': priced in EUR, not USD",
    ]
    got = _by_key(read.prices)
    assert (got["v5e-1", "us-west4", "on-demand"].sku_id, got["v5e-1", "us-west4", "on-demand"].usd_per_chip_hour) == (
        "TEST-V5E-OD",
        1.3125,
    )  # the USD SKU, never the EUR one's 9.0 read as dollars
    assert ("v5e-1", "asia-northeast1", "on-demand") not in got
    gap = next(g for g in read.missing if (g.chip, g.region, g.pricing) == ("v5e-1", "asia-northeast1", "on-demand"))
    # the skip said 'the catalog gives no exchange rate', but each PricingInfo carries currencyConversionRate (the
    # fake's: 1, a USD request's): the line says why that rate does not convert this one
    assert gap.reason == ("SKU TEST-V5E-TYO 'TpuV5e running in Tokyo': priced in JPY, not USD (skipped: onechip asks "
                          "for USD, and PricingInfo.currencyConversionRate converts USD into the currency asked, "
                          "never JPY into USD)")  # fmt: skip
    code, out, err = run("prices")
    assert code == 0 and "skipped SKU TEST-V5E-TYO 'TpuV5e running in Tokyo': priced in JPY, not USD" in " ".join(
        out.split()
    ), out


def test_an_endless_paging_is_refused(monkeypatch):
    def again(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"skus": [], "nextPageToken": "same"})

    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://catalog.test")
    with pytest.raises(CloudError, match=r"at http://catalog.test: paging does not end \(page 2: its nextPageToken "
                       "repeats one already followed"):  # fmt: skip
        billing.list_skus(SERVICE, http=httpx.Client(transport=httpx.MockTransport(again)))

    tokens = iter(range(10**6))

    def fresh(request: httpx.Request) -> httpx.Response:  # a new token on every page, never the last page
        return httpx.Response(200, json={"skus": [], "nextPageToken": f"t{next(tokens)}"})

    # Before: a server that never stops paging with fresh tokens was said to repeat its token, at the page cap
    monkeypatch.setattr(billing, "MAX_PAGES", 20)
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE, http=httpx.Client(transport=httpx.MockTransport(fresh)))
    assert str(info.value).endswith("paging does not end (page 20: 20 pages read)")


def test_the_api_key_goes_in_a_header_and_never_into_a_url_or_an_error(monkeypatch, tmp_path):
    secret = "AIzaSyTEST-not-a-real-key-0123456789"
    seen: list[httpx.Request] = []

    def google(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:
            return httpx.Response(200, json={"skus": RECORDED[:2], "nextPageToken": "p2"})
        return httpx.Response(403, json={"error": {"code": 403, "message": "API key not valid.",
                                                   "status": "PERMISSION_DENIED"}})  # fmt: skip

    monkeypatch.delenv(billing.ENDPOINT_ENV, raising=False)
    monkeypatch.delenv(billing.KEY_ENV, raising=False)
    key_file = tmp_path / "key"
    key_file.write_text(secret + "\n")
    monkeypatch.setenv(billing.KEY_FILE_ENV, str(key_file))
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE, http=httpx.Client(transport=httpx.MockTransport(google)))
    assert [r.headers["x-goog-api-key"] for r in seen] == [secret, secret]
    assert all(str(r.url).startswith(billing.BILLING_URL) and secret not in str(r.url) for r in seen)
    assert secret not in str(info.value) and "API key not valid" in str(info.value)
    monkeypatch.setenv(billing.KEY_FILE_ENV, str(tmp_path / "absent"))
    with pytest.raises(ConfigError, match="cannot read"):
        billing.list_skus(SERVICE, http=httpx.Client(transport=httpx.MockTransport(google)))


def test_a_key_file_that_is_a_fifo_or_not_text_is_one_line(monkeypatch, tmp_path):
    # the key file was read with read_text: a FIFO waited for a writer without end, and bytes that are not UTF-8
    # were 'internal error (UnicodeDecodeError ...)' (exit 1), as the other token files were before paths.open_regular
    monkeypatch.delenv(billing.ENDPOINT_ENV, raising=False)
    monkeypatch.delenv(billing.KEY_ENV, raising=False)
    fifo, binary = tmp_path / "fifo", tmp_path / "binary"
    os.mkfifo(fifo)
    # a writer for whoever opens it, so a reader that reads it gets a key (and the test fails) instead of waiting
    writer = threading.Thread(target=_feed, args=(fifo, b"AIzaSyTEST\n"), daemon=True)
    writer.start()
    binary.write_bytes(b"AIza\xff\n")
    for path, why in ((fifo, "not a regular file"), (binary, "not UTF-8 text")):
        monkeypatch.setenv(billing.KEY_FILE_ENV, str(path))
        with pytest.raises(ConfigError) as info:
            billing.list_skus(SERVICE, http=httpx.Client(transport=httpx.MockTransport(lambda r: httpx.Response(403))))
        assert str(info.value) == f"{billing.KEY_FILE_ENV} {path}: cannot read: {why}"
    if writer.is_alive():  # still waiting for a reader: one that opens without waiting lets it finish
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join(5)
        os.close(fd)


def _feed(path, data: bytes) -> None:
    with contextlib.suppress(OSError), path.open("wb") as sink:  # BrokenPipeError: the reader refused it
        sink.write(data)


def test_refresh_stores_the_read_and_prices_use_the_freshest(fake, monkeypatch):
    read = billing.refresh()
    stored = json.loads(billing.store_path().read_text())
    assert stored["skus_read"] == len(RECORDED) and stored["pages"] == 3 and stored["endpoint"] == fake.url
    assert {s["sku_id"]: s["description"] for s in stored["skus"]}["TEST-V5E-OD"] == "TpuV5e running in Las Vegas"
    assert read.read_at[:10] == billing.utc_today().isoformat()
    known = _by_key(billing.known_prices())
    assert known["v5e-1", "us-west4", "spot"].usd_per_chip_hour == 0.4942  # prices.json says 0.5779
    assert known["v5e-1", "us-west4", "3y"].source.startswith(f"{billing.SNAPSHOT}: seed article")  # the file's
    quote = offers.quote("v5e-1", "flex-start", "us-west4-a", None)
    assert quote.usd_per_hour == 0.6625 and "TEST-V5E-DWS" in quote.price_source
    assert f"read {billing.utc_today().isoformat()}" in quote.price_source
    old = known["v5e-1", "us-west4", "spot"].model_copy(update={"date": "2020-01-01"})
    monkeypatch.setattr(billing, "known_prices", lambda: [old])
    assert "; stale: read" in offers.quote("v5e-1", "spot", "us-west4-a", None).price_source  # > 90 days


@pytest.mark.parametrize("answer", [[], [RECORDED[-1]]], ids=["no SKU", "no chip's SKU"])
def test_an_answer_with_no_chips_sku_is_refused_and_the_last_read_kept(fake, answer):
    # Before: a catalog answering no SKU (or only a CPU one) was stored as the read, exit 0: it replaced the last good
    # read, and every price fell back to prices.json
    first = billing.refresh()
    fake.skus = answer
    with pytest.raises(CloudError) as info:
        billing.refresh()
    assert info.value.reason == "bad-endpoint" and str(info.value) == (
        f"{fake.url} does not answer like the Cloud Billing Catalog (services/{SERVICE}/skus answered {len(answer)} "
        f"SKUs, none of a chip catalog/billing_skus.json names: nothing stored, the read of {first.read_at[:10]} still "
        f"prices); check {billing.ENDPOINT_ENV} or the network"
    )
    assert billing.stored_read() == first
    billing.store_path().unlink()
    with pytest.raises(CloudError, match="nothing stored, prices.json prices"):
        billing.refresh()
    assert billing.stored_read() is None


def test_a_failed_read_stores_nothing(monkeypatch):
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    with pytest.raises(CloudError, match=r"page 1 of the Cloud Billing Catalog: no answer from http://127.0.0.1:9 "
                                         r"\(ConnectError\); tried 7 times"):  # fmt: skip
        billing.refresh()
    assert billing.stored_read() is None


def test_a_503_mid_read_is_read_again_and_a_429_that_persists_is_one_line(fake, monkeypatch):
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    fake.faults = [503, 429]  # page 1 answers at the third try
    _, pages, skus = billing.list_skus(SERVICE)
    assert len(skus) == len(RECORDED) and len(fake.requests) == pages + 2
    fake.faults = [429] * 7
    with pytest.raises(CloudError) as info:
        billing.refresh()
    assert info.value.reason == "transient" and "\n" not in str(info.value) and "HTTP 429" in str(info.value)
    assert billing.stored_read() is None


def test_units_are_read_as_a_string_or_a_number():
    """proto3's JSON mapping writes int64 as a string; a parser takes a number too (a fake or proxy may send one)."""
    as_number = sku("N", "TpuV5e running in Las Vegas", ["us-west4"], 1.3125)
    as_number["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["units"] = 1
    as_string = sku("S", "TpuV5e running in Las Vegas", ["us-west4"], 2.5)
    for raw, usd in ((as_number, 1.3125), (as_string, 2.5)):
        page = billing.ListSkusResponse.model_validate({"skus": [raw]})
        assert billing._rate(page.skus[0])[0] == pytest.approx(usd)  # noqa: SLF001


def test_no_credentials_is_one_line_naming_every_way_to_give_them(monkeypatch):
    def no_adc(use_adc: bool | None = None) -> None:
        raise CloudError("no Google credentials", reason="auth", status=NO_ADC)

    for name in (billing.ENDPOINT_ENV, billing.KEY_ENV, billing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(billing, "Credentials", no_adc)
    with pytest.raises(CloudError, match=f"set {billing.KEY_ENV} or {billing.KEY_FILE_ENV}") as info:
        billing.list_skus(SERVICE)
    assert info.value.reason == "auth" and "\n" not in str(info.value)


@pytest.mark.parametrize("kind", ["missing", "directory", "not credentials"])
def test_a_credentials_file_google_auth_refuses_is_said_not_taken_for_no_credentials(monkeypatch, tmp_path, kind):
    # Before: GOOGLE_APPLICATION_CREDENTIALS naming a missing file, a directory or a file that is not credentials
    # failed `prices refresh` with 'no credentials for the Cloud Billing Catalog ... run gcloud auth
    # application-default login', hiding the setting to fix; TPU calls said it (auth._adc)
    named = {"missing": tmp_path / "gone.json", "directory": tmp_path, "not credentials": tmp_path / "c.json"}[kind]
    (tmp_path / "c.json").write_text('{"type": "service_account"}')
    for name in (billing.ENDPOINT_ENV, billing.KEY_ENV, billing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(named))
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE)
    said = str(info.value)
    assert info.value.reason == "auth" and "\n" not in said
    assert "GOOGLE_APPLICATION_CREDENTIALS" in said and "no credentials" not in said
    assert f"set {billing.KEY_ENV} or {billing.KEY_FILE_ENV}" in said


def test_each_retry_is_told_and_an_unresolvable_host_is_not_retried(monkeypatch):
    # Before: offline, `prices refresh` retried 6 times in silence (5+10+20+40+60+60 s = 3 min 15 s of backoff)
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")  # discard port: refused, retried
    told: list[str] = []
    with pytest.raises(CloudError, match="tried 7 times"):
        billing.refresh(on_retry=told.append)
    assert told == [  # the same failure each try: said once (tpu_api.Outage), not 6 times
        "services/6F81-5844-456A/skus page 1 of the Cloud Billing Catalog: no answer from http://127.0.0.1:9 "
        "(ConnectError); retry 1 of 6 in 0.01 s"
    ]
    # '.invalid' never resolves (RFC 2606): offline as far as this name goes; one try, one line, nothing told
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://catalog.invalid")
    told.clear()
    with pytest.raises(CloudError) as info:
        billing.refresh(on_retry=told.append)
    assert info.value.reason == "offline" and told == [] and billing.stored_read() is None
    assert str(info.value) == (
        "services/6F81-5844-456A/skus page 1 of the Cloud Billing Catalog: cannot resolve catalog.invalid (offline, "
        "or no DNS); nothing was sent - check the network and run it again"
    )


def test_a_page_read_through_an_outage_says_it_once_on_a_change_each_minute_and_when_it_clears(monkeypatch):
    # Before: `prices refresh` told every retry of a page (4 lines here, and no word when the page came). Now the
    # page's retries are one outage, as `up`'s wait tells one (tpu_api.Outage): said at 0 s, again at 61 s (a minute,
    # OUTAGE_REMIND_S, after the first), at the change to 429 (65 s) and when the page answers (73 s). A fake clock:
    # each pause passes its seconds; the backoff from 1 s (1, 2, 4, 8 s), the second 503's Retry-After of 60 s.
    from types import SimpleNamespace

    from onechip.cloud import tpu_api

    clock = [0.0]
    tick = lambda s: clock.__setitem__(0, clock[0] + s)  # noqa: E731
    monkeypatch.setattr(tpu_api, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=tick))
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "1")
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "600")
    page = {"skus": RECORDED[:2], "nextPageToken": ""}
    answers = [httpx.Response(503, json={}), httpx.Response(503, headers={"Retry-After": "60"}, json={}),
               httpx.Response(503, json={}), httpx.Response(429, json={}), httpx.Response(200, json=page)]  # fmt: skip
    http = httpx.Client(transport=httpx.MockTransport(lambda request: answers.pop(0)))
    told: list[str] = []
    _, pages, skus = billing.list_skus(SERVICE, http=http, on_retry=told.append)
    assert (pages, len(skus), answers) == (1, 2, [])
    failed = "services/6F81-5844-456A/skus page 1 of the Cloud Billing Catalog: HTTP {} from http://127.0.0.1:9"
    assert told == [
        f"{failed.format(503)}; retry 1 of 6 in 1 s",
        f"{failed.format(503)}, 61 s into the outage; retry 3 of 6 in 4 s",
        f"{failed.format(429)}, 65 s into the outage; retry 4 of 6 in 8 s",
        "the API answers again, 73 s into the outage",
    ]


def _slow_catalog(monkeypatch, slow_s: float, fail_from: int = 10**6) -> httpx.Client:
    """A catalog on a fake clock (billing's and tpu_api's) whose every answer takes `slow_s` and never ends paging
    (a fresh token each page, 2 SKUs a page); from page `fail_from` on it answers 503."""
    from types import SimpleNamespace

    from onechip.cloud import tpu_api

    clock = [0.0]
    fake_time = SimpleNamespace(monotonic=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s))
    monkeypatch.setattr(tpu_api, "time", fake_time)
    monkeypatch.setattr(billing, "time", fake_time)
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "1")
    pages = [0]

    def answer(request: httpx.Request) -> httpx.Response:
        clock[0] += slow_s
        pages[0] += "pageToken" not in str(request.url) or f"pageToken=t{pages[0]}" in str(request.url)
        if pages[0] >= fail_from:
            return httpx.Response(503, json={})
        return httpx.Response(200, json={"skus": RECORDED[:2], "nextPageToken": f"t{pages[0]}"})

    return httpx.Client(transport=httpx.MockTransport(answer))


def test_a_slow_catalog_of_many_pages_stops_at_one_deadline_for_the_whole_read_naming_the_page(monkeypatch):
    # Before: each page had its own 30 s deadline and nothing bounded the read: 25 s a page over MAX_PAGES pages held
    # `prices refresh` for ~7 hours. Now one deadline (READ_DEADLINE_S, $ONECHIP_BILLING_DEADLINE_S) bounds them all.
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE, http=_slow_catalog(monkeypatch, 25.0))
    assert str(info.value) == (
        f"services/{SERVICE}/skus at http://127.0.0.1:9: not read within the {billing.READ_DEADLINE_S:g} s deadline "
        "($ONECHIP_BILLING_DEADLINE_S): page 25 unanswered after 24 pages, 48 SKUs read; nothing stored"
    )
    assert info.value.reason == "transient"
    # overridden; a page failing as the deadline nears names it, never the per-call deadline's variable
    monkeypatch.setenv(billing.READ_DEADLINE_ENV, "100")
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE, http=_slow_catalog(monkeypatch, 20.0, fail_from=5))
    assert str(info.value).endswith(
        "not read within the 100 s deadline ($ONECHIP_BILLING_DEADLINE_S): page 5 unanswered after 4 pages, 8 SKUs "
        "read; nothing stored"
    )


@pytest.mark.parametrize("key", ["AIzaFAKEclé0123456789", "AIzaFAKE 0123456789", "AIzaFAKE\t0123456789"])
def test_a_key_a_header_cannot_carry_is_one_line_that_never_quotes_it(monkeypatch, run, tmp_path, key):
    # Before: 'clé' was "internal error (UnicodeEncodeError ...)"; a tab inside was an invalid header, retried as
    # if the catalog had not answered
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.delenv(billing.ENDPOINT_ENV, raising=False)
    monkeypatch.delenv(billing.KEY_FILE_ENV, raising=False)
    monkeypatch.setenv(billing.KEY_ENV, key)
    code, out, err = run("prices", "refresh")
    assert (
        code == 2
        and out == ""
        and err.strip().splitlines()[-1]
        == (f"error: {billing.KEY_ENV} is not an API key: it holds a space or a character that is not printable ASCII")
    ), err
    assert key not in err and "0123456789" not in err


def test_a_page_cut_short_is_read_again_and_an_answer_not_the_catalogs_names_the_endpoint(fake, monkeypatch):
    # Before: a cut-short page was "page 1: not a ListSkusResponse" at once (the TPU API's reads retry one), and
    # neither that nor an HTML or empty page named the endpoint
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    fake.faults = ["truncated", "empty"]
    _, pages, skus = billing.list_skus(SERVICE)
    assert len(skus) == len(RECORDED) and len(fake.requests) == pages + 2
    fake.faults = ["html"]
    with pytest.raises(CloudError) as info:
        billing.refresh()
    assert info.value.reason == "bad-endpoint" and str(info.value) == (
        f"{fake.url} does not answer like the Cloud Billing Catalog (services/{SERVICE}/skus page 1 answered an HTML "
        f"page); check {billing.ENDPOINT_ENV} or the network"
    )
    assert billing.stored_read() is None


def test_a_negative_rate_is_a_gap_not_a_price(fake):
    # Before: a SKU whose rate was -5 USD/h was stored as the price, and cost came out negative
    fake.skus = [sku("NEG", "TpuV5e running in Las Vegas", ["us-west4"], 1.0)]
    fake.skus[0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0]["unitPrice"]["units"] = "-5"
    fake.skus.append(
        sku(
            "SPOT",
            "TpuV5e attached to Spot Preemptible VMs running in Las Vegas",
            ["us-west4"],
            0.4942,
            usage_type="Preemptible",
        )
    )  # a read that prices no chip at all is not stored (qa66)
    read = billing.refresh()
    assert not [p for p in read.prices if p.chip == "v5e-1" and p.pricing == "on-demand"]
    gap = next(g for g in read.missing if (g.chip, g.region, g.pricing) == ("v5e-1", "us-west4", "on-demand"))
    assert gap.reason == "SKU NEG has no hourly rate (unit 'h', USD -5.0)"
    fake.skus.pop()  # the negative rate alone: nothing priced, nothing stored, its reason said
    with pytest.raises(CloudError, match=r"none priced a chip \(SKU NEG has no hourly rate"):
        billing.refresh()
    assert billing.stored_read() == read


def test_a_zero_rate_is_a_gap_not_a_free_chip(fake):
    # Before: a SKU whose only rate was $0/h was stored as the on-demand price: cost said $0.000 per million output
    # tokens and $0 a month for a v5e, and advise ranked it first
    fake.skus = [sku("FREE", "TpuV5e running in Las Vegas", ["us-west4"], 0.0),
                 sku("SPOT", "TpuV5e attached to Spot Preemptible VMs running in Las Vegas", ["us-west4"], 0.4942,
                     usage_type="Preemptible")]  # fmt: skip
    read = billing.refresh()
    assert {(p.pricing, p.usd_per_chip_hour) for p in read.prices if p.chip == "v5e-1"} == {("spot", 0.4942)}
    gap = next(g for g in read.missing if (g.chip, g.region, g.pricing) == ("v5e-1", "us-west4", "on-demand"))
    assert gap.reason == "SKU FREE is priced at $0 an hour: no chip-hour is free"
    # a multi-region SKU with a rate prices the region instead, as it does for a SKU with no hourly rate
    fake.skus.append(sku("AM", "TpuV5e running in Americas", ["us-west4", "us-east5"], 1.5))
    price = _by_key(billing.refresh().prices)[("v5e-1", "us-west4", "on-demand")]
    assert (price.sku_id, price.usd_per_chip_hour) == ("AM", 1.5)


def test_a_top_ranked_sku_without_an_hourly_rate_gives_way_to_one_with_it():
    """Before: only the top-ranked SKU (the region's own) was rated: one with no rate (no tiers) made the price a
    gap though the multi-region SKU that also matched has one; now the first SKU with an hourly rate prices it, and
    none with one is still a gap naming the top-ranked."""
    regional = sku("REG", "TpuV5e running in Las Vegas", ["us-west4"], 1.0)
    regional["pricingInfo"][0]["pricingExpression"]["tieredRates"] = []
    americas = sku("AM", "TpuV5e running in Americas", ["us-central1", "us-west4"], 2.5)
    prices, gaps, kept, _, _ = billing.match([billing.Sku.model_validate(s) for s in (regional, americas)], READ_AT)
    got = _by_key(prices)[("v5e-1", "us-west4", "on-demand")]
    assert (got.sku_id, got.usd_per_chip_hour) == ("AM", 2.5) and got.note.startswith("multi-region SKU (Americas")
    assert ("v5e-1", "us-west4", "on-demand") not in {(g.chip, g.region, g.pricing) for g in gaps}
    assert [k.sku_id for k in kept if k.sku_id in ("REG", "AM")] == ["AM"]
    _, gaps, _, _, _ = billing.match([billing.Sku.model_validate(regional)], READ_AT)
    gap = next(g for g in gaps if (g.chip, g.region, g.pricing) == ("v5e-1", "us-west4", "on-demand"))
    assert gap.reason == "SKU REG has no hourly rate (unit 'h', USD None)"


def test_a_tiered_sku_is_quoted_at_its_dearest_tier_never_its_free_first_one(fake):
    """TierRate (cloudbilling v1): 'usage is priced at this rate only after this amount' (startUsageAmount), and
    usage adds up over the account's month: a SKU free for its first 10 h then $1.3125/h is no $0/h TPU."""
    tiered = sku("TEST-V5E-TIER", "TpuV5e running in Las Vegas", ["us-west4"], 1.3125)
    rates = tiered["pricingInfo"][0]["pricingExpression"]["tieredRates"]
    paid = rates[0]
    rates[:] = [{"startUsageAmount": 0, "unitPrice": {"currencyCode": "USD", "units": "0", "nanos": 0}},
                dict(paid, startUsageAmount=10)]  # fmt: skip
    fake.skus = [tiered]
    read = billing.refresh()
    price = _by_key(read.prices)[("v5e-1", "us-west4", "on-demand")]
    assert price.usd_per_chip_hour == pytest.approx(1.3125)
    rates[1]["unitPrice"]["currencyCode"] = "EUR"  # a later tier in another currency is skipped as the first is
    fake.skus = [tiered, RECORDED[1]]  # with a spot price: a read that prices no chip is not stored (qa66)
    read = billing.refresh()
    assert ("v5e-1", "us-west4", "on-demand") not in _by_key(read.prices)
    assert read.skipped == ["SKU TEST-V5E-TIER 'TpuV5e running in Las Vegas': priced in EUR, not USD"]


def test_a_sku_whose_usage_type_is_another_model_never_prices_this_one():
    # Before: several SKUs that share the on-demand description (a commitment's and a spot one's, told apart only by
    # category.usageType) were ranked by SKU id, so on-demand v5e in us-west4 was priced at the commitment's $0.0007/h.
    # Now a SKU whose usageType names another pricing model is not taken for this one.
    twins = [
        sku("AAAA-COMMIT", "TpuV5e running in Las Vegas", ["us-west4"], 0.0007, usage_type="Commit1Yr"),
        sku("AAAB-SPOT", "TpuV5e running in Las Vegas", ["us-west4"], 0.0008, usage_type="Preemptible"),
        sku(
            "AAAC-SPOT",
            "TpuV5e attached to Spot Preemptible VMs running in Las Vegas",
            ["us-west4"],
            0.0009,
            usage_type="",
        ),
    ]
    prices, _, _, _, _ = billing.match([billing.Sku.model_validate(s) for s in [*twins, *RECORDED]], READ_AT)
    got = _by_key(prices)
    assert (got["v5e-1", "us-west4", "on-demand"].sku_id, got["v5e-1", "us-west4", "on-demand"].usd_per_chip_hour) == (
        "TEST-V5E-OD", 1.3125)  # fmt: skip
    spot = got["v5e-1", "us-west4", "spot"]  # no usageType says nothing against AAAC-SPOT: it is weighed, not dropped
    assert spot.sku_id == "TEST-V5E-SP" and "also AAAC-SPOT at $0.0009/h" in spot.source


def test_two_skus_of_one_rank_quote_the_dearest_and_say_the_other():
    # Before: two SKUs with the same description in the same region took the lower SKU id's rate ($0.05, AAAA-DUP)
    # and nothing said another SKU priced it at $1.3125; now the dearest is quoted (as a tiered rate is) and the
    # source, which cost prints per line and puts in --json, names the other's id and rate
    dup = sku("AAAA-DUP", "TpuV5e running in Las Vegas", ["us-west4"], 0.05)
    prices, _, kept, _, _ = billing.match([billing.Sku.model_validate(s) for s in [dup, *RECORDED]], READ_AT)
    got = _by_key(prices)[("v5e-1", "us-west4", "on-demand")]
    assert (got.sku_id, got.usd_per_chip_hour) == ("TEST-V5E-OD", 1.3125)
    assert got.source.endswith("'TpuV5e running in Las Vegas' (the dearest of 2 SKUs matching here; also "
                               "AAAA-DUP at $0.0500/h)")  # fmt: skip
    # one SKU alone (or a multi-region one that the region's own outranks) is not said to have a rival
    assert "dearest" not in _by_key(prices)[("v5e-1", "us-west4", "spot")].source
    assert "AAAA-DUP" not in {r.sku_id for r in kept}


def test_the_prices_table_names_the_other_skus_that_matched(fake, run):
    # Before: `prices` showed "SKU TEST-V5E-OD 'TpuV5e running in Las Vegas'" alone, where cost named the other SKU
    fake.skus = [sku("AAAA-DUP", "TpuV5e running in Las Vegas", ["us-west4"], 0.05), *RECORDED]
    code, out, err = run("prices", "refresh", "--chip", "v5e-1", "--region", "us-west4")
    assert code == 0, err
    assert "(the dearest of 2 SKUs matching here; also AAAA-DUP at $0.0500/h)" in " ".join(out.replace("│", "").split())


class _Adc:
    """Application Default Credentials as billing sees them (cloud.auth.Credentials): a bearer header, a refresh."""

    def __init__(self, use_adc: bool | None = None):
        self.token, self.refreshes = "ya29.expired-token-0123456789", 0

    def headers(self, method: str, url: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def refresh(self) -> bool:
        self.refreshes += 1
        self.token = f"ya29.fresh-token-{self.refreshes}-0123456789"
        return True


def test_a_401_under_adc_refreshes_the_token_once_and_reads_on(monkeypatch):
    # Before: a catalog page answered 401 (an access token revoked or expired early) failed `prices refresh` with
    # 'auth' at once, where every TPU API call refreshes the token once and sends again (google-auth's
    # AuthorizedSession). Now a page does the same: one refresh, the page sent again; a second 401 stands.
    for name in (billing.ENDPOINT_ENV, billing.KEY_ENV, billing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    made: list[_Adc] = []
    monkeypatch.setattr(billing, "Credentials", lambda use_adc=None: made.append(_Adc()) or made[-1])
    refused: set[str] = {"Bearer ya29.expired-token-0123456789"}
    error = {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                       "status": "UNAUTHENTICATED"}}  # fmt: skip

    def answer(request: httpx.Request) -> httpx.Response:
        if request.headers.get("Authorization") in refused:
            return httpx.Response(401, json=error)
        return httpx.Response(200, json={"skus": RECORDED[:2]})

    _, pages, skus = billing.list_skus(SERVICE, http=httpx.Client(transport=httpx.MockTransport(answer)))
    assert (pages, len(skus), made[0].refreshes) == (1, 2, 1)
    refused.add("Bearer ya29.fresh-token-1-0123456789")
    refused.add("Bearer ya29.fresh-token-2-0123456789")
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE, http=httpx.Client(transport=httpx.MockTransport(answer)))
    assert info.value.reason == "auth" and made[1].refreshes == 1  # refreshed once, then the 401 stands
    # as the TPU API's 401 does, it says how to sign in again (before: the catalog's refusal alone); no token in it
    assert str(info.value).endswith(f"the credentials were refused: {REAUTH}") and "ya29" not in str(info.value)


def test_a_401_to_an_api_key_names_the_keys_variables_never_the_key(monkeypatch):
    """An API key has no token to refresh: its 401 stands at once and says where the key comes from, not ADC's
    sign-in (which would not change the key that is sent)."""
    for name in (billing.ENDPOINT_ENV, billing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(billing.KEY_ENV, "AIzaTestKey0123456789")
    error = {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                       "status": "UNAUTHENTICATED"}}  # fmt: skip
    client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(401, json=error)))
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE, http=client)
    said = str(info.value)
    assert said.endswith(f"refused: check {billing.KEY_ENV} or {billing.KEY_FILE_ENV}") and "AIza" not in said


def test_a_key_google_calls_not_valid_names_the_keys_variables_never_the_key(monkeypatch):
    """Google refuses a key that is not one with 400 INVALID_ARGUMENT and ErrorInfo reason API_KEY_INVALID
    (cloud.google.com/apis/design/errors); the line said the catalog's message alone, not which variable to fix."""
    for name in (billing.ENDPOINT_ENV, billing.KEY_FILE_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(billing.KEY_ENV, "AIzaTestKey0123456789")
    error = {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                       "status": "INVALID_ARGUMENT",
                       "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                                    "domain": "googleapis.com"}]}}  # fmt: skip
    client = httpx.Client(transport=httpx.MockTransport(lambda request: httpx.Response(400, json=error)))
    with pytest.raises(CloudError) as info:
        billing.list_skus(SERVICE, http=client)
    said = str(info.value)
    assert said.endswith(f"the API key was refused: check {billing.KEY_ENV} or {billing.KEY_FILE_ENV}"), said
    assert "AIza" not in said and "\n" not in said
