"""What the catalog knows about getting a chip: the API's spelling of a chip key, zone observations (with
sources and dates, newest probes first), and the hourly price quoted before anything is created.

`v5e` is `v5litepod` to the API (seed: '"v5e-1" is fine in prose and is never valid in a CLI argument'):
onechip takes its own chip keys or Google's names (`chip_key`) and spells them here, from catalog/cloud_tpu.json.
"""

from __future__ import annotations

from datetime import date

from onechip import catalog
from onechip.cloud import billing
from onechip.errors import ConfigError
from onechip.planner.chips import google_tpu
from onechip.planner.rules import accelerator
from onechip.schemas.cloud import Provisioning, Quote, ZoneOffer


def chip_key(chip: str) -> str:
    """onechip's key for a Cloud TPU chip named as onechip or Google names it ('v5litepod-4', 'TPU v6e-4',
    'trillium-4' -> v5e-4, v6e-4, v6e-4), resolved as `plan --chip` resolves it (planner.chips.google_tpu).
    Raises ConfigError for a chip catalog/cloud_tpu.json cannot spell."""
    chips = catalog.cloud_tpu().chips
    key = google_tpu(chip) or chip
    if key in chips:
        return key
    raise ConfigError(f"--chip {chip}: not a Cloud TPU chip onechip knows ({', '.join(sorted(chips))})")


def tpu_type(chip: str) -> tuple[str, str]:
    """(accelerator type, runtime version) for a chip (`chip_key`): 'v5e-1' -> ('v5litepod-1',
    'v2-alpha-tpuv5-lite'). Raises ConfigError as chip_key does."""
    entry = catalog.cloud_tpu().chips[chip_key(chip)]
    return entry.accelerator_type, entry.runtime_version


def region_of(zone: str) -> str:
    """'us-west4-a' -> 'us-west4'."""
    return zone.rsplit("-", 1)[0]


def catalog_offers() -> list[ZoneOffer]:
    """The catalog's zone observations (cloud_tpu.json), each with its source and date."""
    return [ZoneOffer.model_validate(entry.model_dump()) for entry in catalog.cloud_tpu().zones]


def offers(observed: list[ZoneOffer], chip: str | None = None, provisioning: str | None = None) -> list[ZoneOffer]:
    """Observations for `chip` / `provisioning` (None = all): `observed` (probes, newest first) then the
    catalog's; an older observation of the same chip, zone and model is dropped for a newer one."""
    seen: set[tuple[str, str, str]] = set()
    out: list[ZoneOffer] = []
    for offer in [*sorted(observed, key=lambda o: o.date, reverse=True), *catalog_offers()]:
        key = (offer.chip, offer.zone, offer.provisioning)
        if key in seen or (chip and offer.chip != chip) or (provisioning and offer.provisioning != provisioning):
            continue
        seen.add(key)
        out.append(offer)
    return out


def default_zones(observed: list[ZoneOffer], chip: str, provisioning: str) -> list[str]:
    """Zones to try when none are given: those seen 'available' for chip + provisioning, newest first."""
    return [o.zone for o in offers(observed, chip, provisioning) if o.outcome == "available"]


def quote(chip: str, provisioning: Provisioning, zone: str | None, limit_s: float | None, tpus: int = 1) -> Quote:
    """The hourly burn of `tpus` TPUs of `chip` at the freshest price onechip has (cloud.billing.known_prices:
    the last Cloud Billing Catalog read, else prices.json; the zone's region first, else any region, said so):
    every chip of them at the per-chip-hour price of the chip accelerators.json names as its `price_chip` (a
    slice: its one-chip sibling, as `advise` prices it), its source and read date (stale ones flagged), and
    what stops the billing. Nothing is hard-coded."""
    entry = accelerator(chip)
    key = entry.price_chip or chip
    chips = entry.chips * tpus
    prices = [p for p in billing.known_prices() if p.chip == key and p.pricing == provisioning]
    region = region_of(zone) if zone else None
    exact = [p for p in prices if p.region == region]
    price = next(iter(exact or prices), None)
    stops = provisioning == "flex-start"
    note = (
        "stops billing on its own after the max run duration (queued resource)"
        if stops
        else "bills until deleted: nothing stops it but `onechip cloud down`"
    )
    if price is None:
        return Quote(chip=chip, provisioning=provisioning, stops_itself=stops, limit_s=limit_s, note=note,
                     chips=chips, tpus=tpus, price_source=f"no catalog price for {key} {provisioning}")  # fmt: skip
    where = "" if price.region == region else f" (no {region} price; {price.region}'s)"
    age = (billing.utc_today() - date.fromisoformat(price.date)).days
    stale = f"; stale: read {age} days ago" if age > catalog.prices().stale_after_days else ""
    per_chip = "" if key == chip else f"; {key}'s per-chip price"
    return Quote(
        chip=chip, provisioning=provisioning, region=price.region, usd_per_chip_hour=price.usd_per_chip_hour,
        usd_per_hour=round(price.usd_per_chip_hour * chips, 6), chips=chips, tpus=tpus,
        price_source=f"{price.source}, read {price.date}{where}{stale}{per_chip}", stops_itself=stops,
        limit_s=limit_s, note=note,
    )  # fmt: skip
