"""Prices and what they make of measured throughput: $/M output tokens, monthly cost, restart cost,
and the spot-vs-flex-start break-even (`cost.json` in a run directory holds one `CostReport`).

The arithmetic lives in `onechip.cost`; these models only carry its results.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from onechip.schemas.common import Measured, ResultModel, StoredResult

HOURS_PER_MONTH = 730.0  # the seed article's "24/7" month: 365 x 24 / 12


class Price(ResultModel):
    """One catalog price: USD per chip-hour for a chip, region and pricing model."""

    chip: str = Field(description="Accelerator catalog key, e.g. 'v5e-1'.")
    region: str = Field(description="Cloud region, e.g. 'us-west4'; 'us' where the source names no region.")
    pricing: str = Field(description="'spot', 'flex-start', 'on-demand', '1y', '3y', 'local'.")
    # what a catalog lists (prices.refresh keeps only 0 <= rate < inf): a stored read edited to a negative or NaN
    # price was used, and every `cost` and `advise` of the chip stopped on 'a price cannot be negative'
    usd_per_chip_hour: Measured = Field(description="USD per chip-hour.")
    stops_itself: bool = Field(default=False, description="Billing ends on its own (max run duration).")
    preemptible: bool = Field(default=False, description="The provider may take the chip back while running.")
    source: str = Field(description="Where the price was read (seed article section, vendor page).")
    date: str = Field(description="ISO date the price was read.")
    note: str = Field(default="", description="Caveats: rounding in the source, region not named, ...")
    sku_id: str = Field(default="", description="Cloud Billing Catalog SKU id the price was read from, if any.")
    sku_description: str = Field(default="", description="That SKU's description, e.g. 'TpuV5e running in Las Vegas'.")


class CostLine(ResultModel):
    """One pricing model applied to one throughput."""

    chip: str = Field(default="", description="Accelerator catalog key.")
    region: str = Field(default="", description="Region of the price.")
    pricing: str = Field(description="Pricing model, as in Price.pricing.")
    # what cost.arithmetic computes (a price not below 0, a positive finite tok/s): a stored line outside it was
    # edited, and `report --format serving-report` stopped on an internal error
    usd_per_chip_hour: Measured = Field(description="USD per chip-hour.")
    output_tok_per_s: Annotated[float, Field(gt=0, allow_inf_nan=False)] = Field(
        description="Aggregate output tokens per second the price is spread over."
    )
    usd_per_mtok: Measured = Field(description="USD per million output tokens at this throughput.")
    monthly_usd: Measured = Field(description="USD for running one chip 24/7 for 730 h.")
    stops_itself: bool = Field(description="Billing ends on its own (flex-start max run duration).")
    preemptible: bool = Field(default=False, description="The provider may take the chip back.")
    price_date: str = Field(description="ISO date the price was read.")
    price_age_days: int | None = Field(default=None, description="Days between price_date and today.")
    stale: bool = Field(default=False, description="Price read more than 90 days before today.")
    source: str = Field(default="", description="Where the price was read.")


class CellCost(ResultModel):
    """$/M output tokens for one measured benchmark cell under each pricing model."""

    context_tokens: int = Field(description="Prompt tokens of the cell.")
    clients: int = Field(description="Concurrent streams of the cell.")
    status: str = Field(description="Cell status: 'ok', 'infeasible', 'failed'.")
    output_tok_per_s: float | None = Field(default=None, description="Median aggregate tok/s; None if not ok.")
    usd_per_mtok: dict[str, float] = Field(
        default_factory=dict, description="Pricing model -> USD per million output tokens."
    )


class RestartCost(ResultModel):
    """What one restart (boot to healthy) costs at a price: the chip bills while nothing is served."""

    kind: str = Field(description="'cold' (no compile cache) or 'warm' (compile cache mounted).")
    boot_s: float = Field(description="Seconds from start to healthy.")
    pricing: str = Field(description="Pricing model the boot is billed at.")
    region: str = Field(default="", description="Region of the price.")
    usd_per_chip_hour: float = Field(description="USD per chip-hour of that pricing model.")
    usd: float = Field(description="boot_s / 3600 x usd_per_chip_hour.")


class BreakEven(ResultModel):
    """Spot is cheaper than flex-start only while preemptions come less often than `hours`."""

    kind: str = Field(description="Restart kind the break-even assumes: 'cold' or 'warm'.")
    region: str = Field(default="", description="Region of the spot and flex-start prices compared.")
    restart_usd: float = Field(description="Cost of one restart at the spot price.")
    premium_usd_per_hour: float = Field(description="Flex-start minus spot, USD per chip-hour.")
    hours: float | None = Field(
        description="restart_usd / premium_usd_per_hour; None when flex-start is not dearer than spot "
        "(then spot never wins)."
    )


class CostReport(StoredResult):
    """Everything `onechip cost` computes; stored as `cost.json` in a run directory."""

    chip: str = Field(description="Accelerator catalog key the prices are for.")
    billed_as: str | None = Field(
        default=None,
        description="The one-chip sibling a slice is priced as (v5e-4: 'v5e-1', cost.prices.billed_as): every "
        "line's usd_per_chip_hour is then the whole slice's, billed_chips x the sibling's; None = the chip's own.",
    )
    billed_chips: int = Field(default=1, ge=1, description="Chips billed at the billed_as price (1: the chip's own).")
    region: str | None = Field(default=None, description="Region asked for; None = every region in the catalog.")
    today: str = Field(description="ISO date staleness was judged against.")
    output_tok_per_s: float | None = Field(default=None, description="Throughput the lines are for, if one.")
    output_tok_per_s_from: str | None = Field(
        default=None,
        description="What output_tok_per_s is: 'given' (--output-tok-per-s), or the run's cell it was taken from and "
        "its definition ('the best ok cell, 1,024 ctx x 4 clients, steady window'); None in an older cost.json.",
    )
    lines: list[CostLine] = Field(default_factory=list, description="One line per price.")
    cells: list[CellCost] = Field(
        default_factory=list, description="Per cell of a run, measured or (predicted) simulated."
    )
    predicted: bool = Field(
        default=False, description="True when the run priced is a prediction (onechip simulate), not a measurement."
    )
    restarts: list[RestartCost] = Field(default_factory=list, description="Cold and warm restart cost.")
    break_even: list[BreakEven] = Field(default_factory=list, description="Spot vs flex-start break-even.")
    warnings: list[str] = Field(default_factory=list, description="Stale prices and other caveats.")


class PriceGap(ResultModel):
    """A chip, region and pricing model the Cloud Billing Catalog has no SKU for: no price, none guessed."""

    chip: str = Field(description="Accelerator catalog key.")
    region: str = Field(description="Region, as the catalog's serviceRegions name it.")
    pricing: str = Field(description="Pricing model with no SKU there.")
    reason: str = Field(description="Which descriptions were looked for.")


class SkuRecord(ResultModel):
    """One SKU kept from a catalog read: what a price was computed from, as the catalog gave it."""

    sku_id: str = Field(description="The SKU's id, e.g. 'AA95-CD31-42FE'.")
    description: str = Field(description="The SKU's description, e.g. 'TpuV5e running in Las Vegas'.")
    service_regions: list[str] = Field(default_factory=list, description="Regions the SKU is offered in.")
    usage_type: str = Field(default="", description="category.usageType: 'OnDemand', 'Preemptible', 'Commit1Yr'.")
    usd_per_unit: float | None = Field(default=None, description="Latest rate's dearest tier, USD per unit.")
    usage_unit: str = Field(default="", description="pricingExpression.usageUnit, e.g. 'h'.")
    effective_time: str = Field(default="", description="pricingInfo.effectiveTime of the rate used.")


class BillingRead(StoredResult):
    """One `onechip prices refresh`: what was read from the Cloud Billing Catalog and the prices made of it
    (stored as $ONECHIP_HOME/prices/billing_catalog.json)."""

    read_at: str = Field(description="UTC time the last page was read (ISO 8601).")
    endpoint: str = Field(description="Base URL read (Google's, or ONECHIP_BILLING_API_ENDPOINT's test server).")
    service: str = Field(description="Service id read, e.g. '6F81-5844-456A' (Compute Engine).")
    pages: int = Field(description="Pages read (nextPageToken followed to the end).")
    skus_read: int = Field(description="SKUs read in all.")
    skus: list[SkuRecord] = Field(default_factory=list, description="The SKUs whose description matched a rule.")
    prices: list[Price] = Field(default_factory=list, description="USD per chip-hour made from them.")
    missing: list[PriceGap] = Field(default_factory=list, description="Combinations with no SKU.")
    region_names: dict[str, str] = Field(
        default_factory=dict, description="Region -> the place word the catalog writes for it ('Las Vegas')."
    )
    skipped: list[str] = Field(
        default_factory=list,
        description="SKUs matching a chip's rule that were skipped (priced in another currency than USD), with why.",
    )
    kept: list[Price] = Field(
        default_factory=list,
        description="The last live price of each chip, region and pricing model an earlier read priced and this one "
        "did not (no usable SKU in this answer), as that read made it: its date, and its source led by when it was "
        "read; prices.json's older snapshot never stands in for it.",
    )


class PriceRow(Price):
    """A price as `onechip prices` shows it: with its age and whether it is past the staleness limit."""

    age_days: int | None = Field(default=None, description="Days between the read date and today.")
    stale: bool = Field(default=False, description="Read more than stale_after_days before today.")


class PriceTable(ResultModel):
    """`onechip prices`: every price onechip would use (the freshest per chip, region and pricing model),
    where each was read and when, and the combinations the last catalog read found no SKU for."""

    today: str = Field(description="ISO date staleness was judged against.")
    stale_after_days: int = Field(description="Days after which a price counts as stale.")
    read: BillingRead | None = Field(default=None, description="The last catalog read (without its SKUs), if any.")
    store: str = Field(default="", description="Path of the stored catalog read.")
    unusable_read: str = Field(
        default="", description="Why a catalog read stored at `store` is not used (damaged, or written by another "
        "onechip), in one line; '' when none is stored or it is used."
    )  # fmt: skip
    prices: list[PriceRow] = Field(default_factory=list, description="Freshest price per chip/region/pricing.")
    missing: list[PriceGap] = Field(default_factory=list, description="No SKU in the last read (and none kept).")
    billed_as: str = Field(
        default="", description="How the chip asked for is billed, where it is a slice billed per chip of its one-chip "
        "sibling ('v5e-8 is billed as 8 x v5e-1 per chip-hour'); '' otherwise."
    )  # fmt: skip
