"""`prices` and `prices refresh`: the prices onechip uses, with their dates and sources, read afresh from the
Cloud Billing Catalog on request."""

from __future__ import annotations

from onechip import catalog, planner
from onechip import cost as cost_layer
from onechip.cloud import billing
from onechip.errors import ConfigError
from onechip.progress import ProgressEvent, ProgressFn, no_progress
from onechip.schemas.cost import PriceTable
from onechip.schemas.requests import PricesRequest


def prices(request: PricesRequest, on_progress: ProgressFn = no_progress) -> PriceTable:
    """The freshest price per chip, region and pricing model (the stored catalog read, else prices.json), with
    each one's read date, source and age, and what the last read found no SKU for. Raises ConfigError for a
    malformed prices.json, and for a chip or region no price of onechip's knows (instead of an empty table)."""
    chip = planner.rules.chip_key(request.chip) if request.chip else None  # 'tpu7x', 'H100': the catalog's keys
    billed, count = cost_layer.billed_as(chip) if chip else (None, 1)  # a slice: its one-chip sibling's rows
    table = cost_layer.price_table(billed, request.region, request.today)
    if chip and billed != chip:
        table.billed_as = f"{chip} is billed as {count} x {billed} per chip-hour"
        chip = billed
    if (chip or request.region) and not (table.prices or table.missing):
        billing = f"; {table.billed_as}" if table.billed_as else ""  # the slice asked for, named
        known = cost_layer.all_prices()
        chips, regions = {p.chip for p in known}, {p.region for p in known}
        if chip and request.region in regions and chip in chips:  # each known, not together: 'us-west4' was blamed
            where = sorted({p.region for p in known if p.chip == chip})
            raise ConfigError(
                f"no price for chip {chip!r} in region {request.region!r} (--chip, --region); {chip} is priced in: "
                f"{', '.join(where)}{billing}"
            )
        what, given, names = (
            ("chip", chip, chips) if chip and chip not in chips else ("region", request.region, regions)
        )
        why = cost_layer.why_no_price(chip) if what == "chip" and chip else ""
        raise ConfigError(f"no price for {what} {given!r} (--{what}){why}; known: {', '.join(sorted(names))}{billing}")
    return table


def prices_refresh(request: PricesRequest, on_progress: ProgressFn = no_progress) -> PriceTable:
    """Read every page of Compute Engine's SKUs from the Cloud Billing Catalog (ONECHIP_BILLING_API_ENDPOINT:
    a test server), store the read under $ONECHIP_HOME/prices, then `prices(request)`. Raises CloudError (the
    catalog refused or could not be reached; nothing stored then), MissingDependencyError (no key and no
    google-auth), ConfigError."""

    if request.chip:  # a chip no read can price is refused before the catalog is asked (or credentials looked for)
        billed = cost_layer.billed_as(planner.rules.chip_key(request.chip))[0]
        read = catalog.billing_skus().chips
        if billed not in read and billed not in {p.chip for p in cost_layer.all_prices()}:
            # not prices()' line: a catalog chip's price_note says to run `onechip prices refresh`, this very command
            raise ConfigError(
                f"no Cloud Billing Catalog read prices chip {billed!r} (--chip): the SKUs it reads are for "
                f"{', '.join(sorted(read))}; add its price to prices.json with its source and date"
            )

    def page(pages: int, skus: int) -> None:
        on_progress(ProgressEvent("prices", f"page {pages}: {skus:,} SKUs read", done=pages))

    # said before the first page: an unreachable catalog is retried with backoff for up to $ONECHIP_CLOUD_DEADLINE_S
    # (30 s), and the CLI's heartbeat repeats the last line it was given ("still running") only once there is one;
    # the retries an outage line does not print are quiet events, so the heartbeat repeats the one waited on now
    on_progress(ProgressEvent("prices", "reading the Cloud Billing Catalog (every page of Compute Engine's SKUs)"))
    billing.refresh(
        on_page=page,
        on_retry=lambda line: on_progress(ProgressEvent("prices", line)),
        on_wait=lambda line, due: on_progress(ProgressEvent("prices", line, quiet=True, until=due)),
    )
    return prices(request, on_progress)
