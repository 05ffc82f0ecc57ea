"""Prices: lookup by chip, region and pricing model, and staleness. The prices are the freshest of the last
Cloud Billing Catalog read (`onechip prices refresh`, cloud.billing) and `catalog/prices.json`.

Unknown keys raise ConfigError with one line listing what the catalog knows.
"""

from __future__ import annotations

from datetime import date

from onechip import catalog
from onechip.cloud import billing
from onechip.cloud.billing import utc_today
from onechip.errors import ConfigError
from onechip.schemas.cost import Price, PriceRow, PriceTable
from onechip.schemas.inputs import shown

PRICING_MODELS = ("spot", "flex-start", "on-demand", "1y", "3y", "local")


def all_prices() -> list[Price]:
    """Every price onechip has, the freshest per chip, region and pricing model (cloud.billing.known_prices).
    Raises ConfigError if prices.json is malformed."""
    return billing.known_prices()


def unusable_read() -> list[str]:
    """[why the stored catalog read is not used] when one is stored but cannot be read (billing.read_stored: damaged,
    another onechip's), else []: cost and advise priced from prices.json alone without a word, where prices said it.
    Raises ConfigError as billing.stored_read does."""
    why = billing.read_stored()[1]
    return [why] if why else []


def stale_after_days() -> int:
    """Days after which a price counts as stale (catalog `stale_after_days`)."""
    return catalog.prices().stale_after_days


def price_age_days(price: Price, today: date) -> int:
    """Whole days from the date `price` was read to `today`. Raises ConfigError on a bad date."""
    try:
        read = date.fromisoformat(price.date)
    except ValueError:
        raise ConfigError(
            f"price for {price.chip}/{price.region}/{price.pricing} has a bad date {price.date!r}"
        ) from None
    return (today - read).days


def is_stale(price: Price, today: date) -> bool:
    """True when `price` was read more than `stale_after_days()` days before `today`."""
    return price_age_days(price, today) > stale_after_days()


def parse_pricing(text: str | list[str] | None) -> list[str] | None:
    """'spot,flex-start' or ['spot', 'flex-start'] (any case) -> validated list; None stays None (= every model).

    Raises ConfigError naming the known pricing models for an unknown one, or for an empty entry ('spot,,3y', an
    MCP call's ["spot", ""]: dropped, it priced one model less than asked).
    """
    if text is None:
        return None
    items = text.split(",") if isinstance(text, str) else list(text)
    names = [item.strip().lower() for item in items]  # 'ON-DEMAND' as regions and chips are: any case
    if "" in names:
        raise ConfigError(f"pricing {text!r} has an empty entry; give pricing models from: {', '.join(PRICING_MODELS)}")
    for name in names:
        if name not in PRICING_MODELS:
            raise ConfigError(f"unknown pricing model {name!r}; known: {', '.join(PRICING_MODELS)}")
    return list(dict.fromkeys(names)) or None  # 'spot,SPOT' prices spot once


def why_no_price(chip: str) -> str:
    """' (why)' for a chip with no price, from its accelerators.json `price_note` (TPU7x: no public list price);
    '' when it has none."""
    entry = catalog.accelerators().accelerators.get(chip)
    return f" ({entry.price_note})" if entry is not None and entry.price_note else ""


def billed_as(chip: str) -> tuple[str, int]:
    """(prices.json key, chips billed) of catalog chip `chip`: a slice with an accelerators.json `price_chip`
    (v5e-4) is billed as its chips x its one-chip sibling's per-chip-hour price (4, 'v5e-1'); any other chip
    as its own entries, once. `cost` and `advise` both price a chip through this."""
    entry = catalog.accelerators().accelerators.get(chip)
    if entry is None or entry.price_chip is None:
        return chip, 1
    return entry.price_chip, entry.chips


def slice_prices(chip: str, pricing: list[str] | None = None, region: str | None = None) -> list[Price]:
    """find_prices for `chip` billed as billed_as says: a slice's prices are its chips x its sibling's, each
    saying so in its note ('4 × v5e-1 at $0.5779 per chip-hour'), under the slice's own key. Raises what
    find_prices raises (naming the sibling when that has no price)."""
    key, chips = billed_as(chip)
    prices = find_prices(key, pricing, region)
    if key == chip and chips == 1:
        return prices
    return [
        p.model_copy(
            update={
                "chip": chip,
                "usd_per_chip_hour": p.usd_per_chip_hour * chips,
                "note": "; ".join(
                    x for x in (f"{chips} × {key} at ${p.usd_per_chip_hour:.4f} per chip-hour", p.note) if x
                ),
            }
        )
        for p in prices
    ]


def find_prices(chip: str, pricing: list[str] | None = None, region: str | None = None) -> list[Price]:
    """Catalog prices for `chip`, optionally narrowed to `region` and to the `pricing` models, in the
    order the pricing models were asked for (catalog order when `pricing` is None).

    Raises ConfigError when the chip, the region for that chip, or a requested pricing model for that
    chip and region is not in the catalog; the message lists what is known, and for a chip with no price at all
    why it has none (its accelerators.json `price_note`).
    """
    prices = all_prices()
    chips = sorted({p.chip for p in prices})
    mine = [p for p in prices if p.chip == chip]
    if not mine:
        raise ConfigError(f"no prices for chip {shown(chip)}{why_no_price(chip)}; known chips: {', '.join(chips)}")
    if region is not None:
        regions = sorted({p.region for p in mine})
        mine = [p for p in mine if p.region == region]
        if not mine:
            raise ConfigError(f"no prices for {chip} in region {shown(region)}; known regions: {', '.join(regions)}")
    wanted = parse_pricing(pricing)
    if wanted is None:
        return mine
    known = [p.pricing for p in mine]
    missing = [name for name in wanted if name not in known]
    if missing:
        where = f"{chip} in {region}" if region else chip
        raise ConfigError(f"no {', '.join(missing)} price for {where}; known: {', '.join(dict.fromkeys(known))}")
    return [p for name in wanted for p in mine if p.pricing == name]


def price_table(chip: str | None = None, region: str | None = None, today: date | None = None) -> PriceTable:
    """Every price onechip would use (narrowed to `chip` / `region`), each with its read date, source, age and
    stale flag, and the combinations the last catalog read found no SKU for. A price the last read has no SKU
    for (a prices.json entry the catalog no longer lists) keeps its own source and says so in its note."""
    day = today or utc_today()
    read, unusable = billing.read_stored()
    gaps = [g for g in (read.missing if read else []) if chip in (None, g.chip) and region in (None, g.region)]
    gone = {(g.chip, g.region, g.pricing): g for g in gaps}
    rows = []
    for price in all_prices():
        if chip not in (None, price.chip) or region not in (None, price.region):
            continue
        row = PriceRow(**price.model_dump(), age_days=price_age_days(price, day), stale=is_stale(price, day))
        if (price.chip, price.region, price.pricing) in gone and read is not None:
            row.note = f"the catalog read of {read.read_at[:10]} has no SKU for it; {row.note}".rstrip("; ")
        rows.append(row)
    priced = {(r.chip, r.region, r.pricing) for r in rows}
    summary = read.model_copy(update={"skus": []}) if read else None
    return PriceTable(today=day.isoformat(), stale_after_days=stale_after_days(), read=summary,
                      store=str(billing.store_path()), unusable_read=unusable, prices=rows,
                      missing=[g for key, g in gone.items() if key not in priced])  # fmt: skip
