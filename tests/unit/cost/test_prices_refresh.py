"""Issue #26's 'done when': against a catalog whose rates differ from prices.json, `onechip prices refresh` then
`onechip cost --chip v5e-1 --output-tok-per-s 1000` prices spot, on-demand and flex-start at the server's rates,
dated today, never from a Reserved or Commitment SKU; `advise` names the date and source of every price it
ranks on and ranks no row on a price without one."""

from __future__ import annotations

import contextlib
import json
import os
import time
from datetime import UTC, date, datetime

import pytest

from fakes import dead_endpoints
from fakes.billing_catalog import FakeBillingCatalog
from onechip import api, catalog
from onechip.api import _predict
from onechip.cloud import billing
from onechip.errors import ConfigError
from onechip.schemas.cost import Price
from onechip.schemas.requests import AdviseRequest, PricesRequest

# tests/fakes/billing_catalog.py's us-west4 V5e rates, and prices.json's for the same keys
SERVER = {"spot": 0.4942, "on-demand": 1.3125, "flex-start": 0.6625}
FILE = {"spot": 0.5779, "on-demand": 1.2, "flex-start": 0.6}


@pytest.fixture
def refreshed(monkeypatch, run):
    with FakeBillingCatalog() as catalog:
        monkeypatch.setenv(billing.ENDPOINT_ENV, catalog.url)
        code, out, err = run("prices", "refresh", "--chip", "v5e-1", "--json")
        assert code == 0, err
        yield json.loads(out)


def test_refresh_then_cost_prices_at_the_servers_rates_dated_today(refreshed, run):
    assert refreshed["read"]["skus_read"] == 12 and refreshed["read"]["pages"] == 3
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "1000", "--region", "us-west4", "--json")
    assert code == 0, err
    lines = {line["pricing"]: line for line in json.loads(out)["lines"]}
    assert {m: lines[m]["usd_per_chip_hour"] for m in SERVER} == SERVER != FILE
    assert {lines[m]["price_date"] for m in SERVER} == {billing.utc_today().isoformat()}
    assert not any(lines[m]["stale"] for m in SERVER)
    for m in SERVER:  # the source names the SKU read; never the decoys that share the region and usage type
        assert "Cloud Billing Catalog services/6F81-5844-456A/skus/" in lines[m]["source"]
        assert not any(word in lines[m]["source"] for word in ("Reserved", "Commitment", "Capacity Optimized"))
    # $/M output tokens = USD per hour / (tok/s x 3600) x 1e6 (cost.arithmetic), at the server's rate
    assert lines["spot"]["usd_per_mtok"] == pytest.approx(0.4942 / 3.6)
    code, out, _ = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "1000", "--region", "us-west4")
    assert "TpuV5e attached to Spot Preemptible VMs running in Las Vegas', read " + billing.utc_today().isoformat() in (
        " ".join(out.split())
    )


def test_cost_json_says_which_figures_are_the_snapshot_and_which_the_catalog_read(run, refreshed):
    # Before: a prices.json line said "seed article ..., cost section: 'Live rates from the Cloud Billing Catalog for
    # us-west4'", read 2026-08-09, beside the read's lines, and offline every line did: nothing said it was no read
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "1000", "--region", "us-west4", "--json")
    assert code == 0, err
    sources = {line["pricing"]: line["source"] for line in json.loads(out)["lines"]}
    assert sources["3y"].startswith(f"{billing.SNAPSHOT}: seed article")
    assert all(sources[m].startswith("Cloud Billing Catalog services/") for m in SERVER)
    billing.store_path().unlink()  # no read stored (offline, or never refreshed): every figure is the snapshot's
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "1000", "--region", "us-west4")
    said = " ".join(out.split())
    assert code == 0 and f"spot us-west4: {billing.SNAPSHOT}: seed article" in said and ", read 2026-08-09" in said


def test_prices_table_shows_dates_sources_and_none(refreshed):
    table = api.prices(PricesRequest(chip="v5e-1", region="us-west4", today=date(2026, 12, 1)))
    rows = {p.pricing: p for p in table.prices}
    assert rows["on-demand"].sku_description == "TpuV5e running in Las Vegas"
    assert rows["3y"].source.startswith(f"{billing.SNAPSHOT}: seed article") and rows["3y"].stale  # 114 days old
    assert "has no SKU for it" in rows["3y"].note  # the read found none; the file's dated price is kept, said
    later = api.prices(PricesRequest(chip="v5e-1", region="us-west4", today=date(2027, 6, 1)))
    assert all(p.stale for p in later.prices)  # every output flags what is past the staleness limit
    v6e = api.prices(PricesRequest(chip="v6e-1", region="us-east5"))
    assert ("v6e-1", "us-east5", "1y") in {(g.chip, g.region, g.pricing) for g in v6e.missing}


def test_advise_ranks_only_on_sourced_dated_prices(refreshed, monkeypatch):
    request = AdviseRequest(model="google/gemma-4-E2B-it", workload={"ctx": 1024, "clients": 16},
                            chips=["v5e-1", "l4"], pricing="spot")  # fmt: skip
    advice = api.advise(request)
    row = next(r for r in advice.rows if r.chip == "v5e-1")
    assert row.usd_per_hour == 0.4942 and row.price_date == billing.utc_today().isoformat() and not row.price_stale
    assert "TpuV5e attached to Spot Preemptible VMs running in Las Vegas" in (row.price_source or "")
    unsourced = Price(chip="v5e-1", region="us-west4", pricing="spot", usd_per_chip_hour=0.01, source="", date="")
    monkeypatch.setattr(_predict.cost_layer, "all_prices", lambda: [unsourced])
    assert isinstance(_predict._advice_price("v5e-1", "spot"), str)  # said, never ranked on
    ranked = api.advise(request.model_copy(update={"chips": ["v5e-1"]}))
    assert ranked.rows[0].usd_per_mtok is None and "no price" in (ranked.rows[0].price_source or "")


def test_a_price_outside_google_cloud_names_a_dated_public_source():
    mi300x = next(p for p in billing.file_prices() if p.chip == "mi300x")
    # DigitalOcean's own pricing page ('AMD MI300X | $1.99 per hour', validated 28 May 2026)
    assert mi300x.source.startswith("DigitalOcean") and "https://docs.digitalocean.com/" in mi300x.source
    assert (mi300x.usd_per_chip_hour, mi300x.date) == (1.99, "2026-05-28")


@pytest.mark.parametrize(("field", "value"), [("chip", "bogus"), ("region", "../../etc")])
def test_a_chip_or_region_with_no_price_is_refused_not_an_empty_table(field: str, value: str) -> None:
    # a new-user test: `prices --chip bogus` printed an empty table and exited 0
    with pytest.raises(ConfigError, match=f"no price for {field} '{value}'"):
        api.prices(PricesRequest(**{field: value}))


def test_a_chip_and_region_each_priced_but_not_together_names_the_pair() -> None:
    # a break-pass find: `prices --chip v6e-1 --region us-west4` said "no price for region 'us-west4'; known: ...,
    # us-west4". prices.json prices v6e-1 (survey seed's us-east5, among others) and v5e-1 in us-west4 (the English
    # seed's spot price), but not v6e-1 there: the pair is named, with the regions v6e-1 is priced in.
    regions = sorted({p.region for p in billing.file_prices() if p.chip == "v6e-1"})
    assert "us-west4" not in regions and any(p.region == "us-west4" for p in billing.file_prices())
    with pytest.raises(ConfigError) as raised:
        api.prices(PricesRequest(chip="v6e-1", region="us-west4"))
    assert str(raised.value) == (
        "no price for chip 'v6e-1' in region 'us-west4' (--chip, --region); v6e-1 is priced in: " + ", ".join(regions)
    )


def test_refresh_of_a_chip_no_read_can_price_is_refused_before_the_catalog_is_asked(monkeypatch, run) -> None:
    # `prices refresh --chip nope` said there were no credentials (or read every page) before 'no price for chip';
    # 'nope' is neither in billing_skus.json's chips (what a read can price) nor in prices.json
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")  # asked, it would fail: it must not be
    code, out, err = run("prices", "refresh", "--chip", "nope")
    assert code != 0 and out == ""
    read = ", ".join(sorted(catalog.billing_skus().chips))  # the chips a read can price
    assert err.splitlines() == [
        f"error: no Cloud Billing Catalog read prices chip 'nope' (--chip): the SKUs it reads are for {read}; add its "
        "price to prices.json with its source and date"
    ], err


def test_refresh_of_a_catalog_chip_no_read_can_price_does_not_say_to_run_refresh(monkeypatch, run) -> None:
    # b300 is in the chip catalog but not in billing_skus.json: the refusal was prices' line, whose catalog price_note
    # says "run `onechip prices refresh`", the command just run
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")
    assert "b300" not in catalog.billing_skus().chips
    code, _, err = run("prices", "refresh", "--chip", "b300")
    assert code != 0 and "prices refresh" not in err and "no Cloud Billing Catalog read prices chip 'b300'" in err


DEAD = {"refused": lambda: contextlib.nullcontext(dead_endpoints.refused()), "silent": dead_endpoints.silent,
        "trickle": dead_endpoints.trickle}  # fmt: skip


@pytest.mark.parametrize("kind", list(DEAD))
def test_refresh_from_a_dead_endpoint_fails_in_one_line_within_the_deadline_and_keeps_the_stored_read(
    refreshed, run, monkeypatch, kind
):
    # Before: 127.0.0.1:9 (refused) was tried 7 times over 3 min 16 s (5+10+20+40+60+60 s of backoff), one that
    # accepts and never answers 7 x 120 s, one that trickles a byte at a time forever. Now every try and pause of
    # a call shares one deadline ($ONECHIP_CLOUD_DEADLINE_S, 30 s; 1 s here), and a body still arriving at it is cut.
    stored = billing.store_path().read_bytes()
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "1")
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.2")  # the backoff: 0.2, 0.4, 0.8 s ...
    with DEAD[kind]() as url:
        monkeypatch.setenv(billing.ENDPOINT_ENV, url)
        started = time.monotonic()
        code, out, err = run("prices", "refresh", "--chip", "v5e-1")
        elapsed_s = time.monotonic() - started
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert code == 7 and out == "" and len(said) == 1 and "Traceback" not in err, err
    assert f"no answer from {url} (" in said[0] and "1 s deadline, $ONECHIP_CLOUD_DEADLINE_S" in said[0], said
    assert elapsed_s < 1 + 10, elapsed_s  # the deadline plus generous slack for a loaded machine
    assert billing.store_path().read_bytes() == stored  # the last good read is kept whole


def test_the_heartbeat_through_a_catalog_outage_repeats_the_retry_waited_on_with_its_time_left(monkeypatch, tmp_path):
    # Five 503s, then the pages: the backoff from 1 s (tpu_api.backoff_s: 1, 2, 4, 8, 16 s) on a fake clock that a
    # heartbeat (PlainProgress.tick, each second as plain_progress's thread) reads. The outage is one line at 0 s
    # (tpu_api.Outage); before, the heartbeat repeated it, 'retry 1 of 6 in 1 s', at 10, 20 and 30 s, while retries
    # 4 and 5 were waited on. Now it repeats the retry waited on, with the time to it.
    from types import SimpleNamespace

    from onechip.cli.render import PlainProgress
    from onechip.cloud import tpu_api

    clock = [0.0]
    lines: list[str] = []
    plain = PlainProgress(lines.append, every_s=10.0, clock=lambda: clock[0])

    def sleep(seconds: float) -> None:
        for _ in range(round(seconds)):
            clock[0] += 1
            plain.tick()

    monkeypatch.setattr(tpu_api, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep))
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path))
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "1")
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "600")
    with FakeBillingCatalog(faults=[503] * 5) as catalog:
        monkeypatch.setenv(billing.ENDPOINT_ENV, catalog.url)
        api.prices_refresh(PricesRequest(chip="v5e-1"), plain)
    failed = f"[prices] services/6F81-5844-456A/skus page 1 of the Cloud Billing Catalog: HTTP 503 from {catalog.url}"
    beats = [line for line in lines if "still running" in line]
    assert beats == [
        f"{failed}; retry 4 of 6 in 8 s [10 s] still running, 5 s left",  # due at 7 + 8 s
        f"{failed}; retry 5 of 6 in 16 s [20 s] still running, 11 s left",  # due at 15 + 16 s
        f"{failed}; retry 5 of 6 in 16 s [30 s] still running, 1 s left",
    ]
    assert f"{failed}; retry 1 of 6 in 1 s [0 s]" in lines  # the outage, said once
    assert "[prices] the API answers again, 31 s into the outage [31 s]" in lines


@pytest.mark.parametrize(
    ("field", "value"), [("usd_per_chip_hour", -1.0), ("usd_per_chip_hour", float("nan")), ("schema_version", "99")]
)
def test_a_stored_read_edited_out_of_range_or_from_a_newer_onechip_is_not_used(refreshed, run, field, value):
    # a negative price in the store stopped every `cost --chip v5e-1` on 'a price cannot be negative, got -1.0
    # USD/chip-hour' without naming the file; a newer schema's read was priced from as if it were ours. Like any
    # home store that cannot be read (billing.stored_read), it is not used: the prices are prices.json's (FILE)
    stored = json.loads(billing.store_path().read_text())
    if field == "schema_version":
        stored[field] = value
    else:
        stored["prices"][0][field] = value
    billing.store_path().write_text(json.dumps(stored))  # json writes NaN as NaN, which the reader takes
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "1000", "--region", "us-west4", "--json")
    assert code == 0, err
    lines = {line["pricing"]: line for line in json.loads(out)["lines"]}
    assert {m: lines[m]["usd_per_chip_hour"] for m in FILE} == FILE
    # Before: cost (and advise) priced from prices.json without a word that the stored read was set aside; only
    # `prices` said it. Now each says which file and why, as prices does
    why = f"the catalog read stored at {billing.store_path()} cannot be read (not a catalog read this onechip reads)"
    assert any(w.startswith(why) for w in json.loads(out)["warnings"])
    advice = api.advise(AdviseRequest(model="google/gemma-4-E2B-it", workload={"ctx": 1024, "clients": 16},
                                      chips=["v5e-1"], reps=1))  # fmt: skip
    assert any(n.startswith(why) for n in advice.notes)


@pytest.fixture
def far_from_utc(monkeypatch):
    """A local zone whose date is not UTC's now: 12 h behind before noon UTC, 14 h ahead after (TZ env var)."""
    zone = "Etc/GMT+12" if datetime.now(UTC).hour < 12 else "Etc/GMT-14"  # POSIX signs: GMT+12 is UTC-12
    before = os.environ.get("TZ")
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    assert date.today() != datetime.now(UTC).date()  # the setup holds: the two dates differ now
    yield zone
    if before is None:  # this process's zone back as it was (monkeypatch restores the variable, not tzset's state)
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def test_a_read_of_today_is_0_days_old_in_a_zone_far_from_utc(far_from_utc, refreshed, run):
    # Before: a read was dated by its UTC time, its age judged against the local date: in UTC-12 before noon UTC a
    # read of today was -1 days old, in UTC+14 after 10:00 UTC 1 day old (prices, cost, advise, cloud up's quote)
    today = datetime.now(UTC).date().isoformat()
    code, out, err = run("prices", "--chip", "v5e-1", "--region", "us-west4", "--json")
    table = json.loads(out)
    assert code == 0 and table["today"] == today and {p["age_days"] for p in table["prices"] if p["sku_id"]} == {0}, (
        far_from_utc,
        out,
    )
    code, out, err = run("cost", "--chip", "v5e-1", "--output-tok-per-s", "1000", "--region", "us-west4", "--json")
    report = json.loads(out)
    assert report["today"] == today and {
        line["price_age_days"] for line in report["lines"] if "Cloud Billing Catalog services" in line["source"]
    } == {0}, far_from_utc


@pytest.mark.parametrize("argv", [("prices", "--help"), ("prices", "refresh", "--help")])
def test_prices_help_documents_the_exit_codes(run, argv):
    # Before: neither help said what `prices refresh` exits with, so a script could not tell a catalog outage (7)
    # from a bad flag (2) or no google-auth (3), nor that a read with SKUs skipped is still 0
    code, out, _ = run(*argv)
    text = " ".join(out.split())
    assert code == 0 and "Exit codes:" in text, out
    for said in ("0 done (refresh also when it skipped SKUs not priced in USD", "2 bad input", "3 google-auth",
                 "7 the Cloud Billing Catalog refused or failed", "$ONECHIP_BILLING_DEADLINE_S"):  # fmt: skip
        assert said in text, (said, text)
