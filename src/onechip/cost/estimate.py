"""Turn throughput and boot times into a CostReport using the price catalog.

`cost_lines` prices one throughput; `cell_costs` prices every cell of a benchmark summary;
`restart_costs` and `break_evens` price preemptions; `estimate` assembles all of it.
A bench summary comes in as a `BenchRun` (summary.json loaded by `onechip.report.rundir`, leniently).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from onechip.cost import arithmetic
from onechip.cost.prices import (
    billed_as,
    is_stale,
    price_age_days,
    slice_prices,
    stale_after_days,
    unusable_read,
    utc_today,
)
from onechip.errors import ConfigError
from onechip.schemas.bench import BenchRun
from onechip.schemas.common import plural
from onechip.schemas.cost import BreakEven, CellCost, CostLine, CostReport, Price, RestartCost


def _today(today: date | str | None) -> date:
    if today is None:
        return utc_today()
    if isinstance(today, str):
        try:
            return date.fromisoformat(today)
        except ValueError:
            raise ConfigError(f"today must be an ISO date (YYYY-MM-DD), got {today!r}") from None
    return today


def _line(price: Price, output_tok_per_s: float, today: date) -> CostLine:
    return CostLine(
        chip=price.chip,
        region=price.region,
        pricing=price.pricing,
        usd_per_chip_hour=price.usd_per_chip_hour,
        output_tok_per_s=output_tok_per_s,
        usd_per_mtok=arithmetic.usd_per_mtok(price.usd_per_chip_hour, output_tok_per_s),
        monthly_usd=arithmetic.monthly_usd(price.usd_per_chip_hour),
        stops_itself=price.stops_itself,
        preemptible=price.preemptible,
        price_date=price.date,
        price_age_days=price_age_days(price, today),
        stale=is_stale(price, today),
        source=price.source,
    )


def cost_lines(
    chip: str,
    output_tok_per_s: float,
    pricing: list[str] | str | None = None,
    region: str | None = None,
    today: date | str | None = None,
) -> list[CostLine]:
    """One CostLine per catalog price of `chip` (narrowed by `pricing` models and `region`) for an
    aggregate throughput of `output_tok_per_s` output tokens per second.

    `today` (date or ISO string; default: today in UTC, prices.utc_today) judges staleness (> 90 days).
    Raises ConfigError for an unknown chip/region/pricing model or a non-positive throughput.
    """
    day = _today(today)
    prices = slice_prices(chip, pricing=_as_list(pricing), region=region)
    return [_line(price, output_tok_per_s, day) for price in prices]


def _as_list(pricing: list[str] | str | None) -> list[str] | None:
    if pricing is None or isinstance(pricing, list):
        return pricing
    return [p for p in pricing.split(",") if p.strip()]


def line_label(line: CostLine | Price, multi_region: bool) -> str:
    """'spot', or 'spot (us-east5)' when the lines span several regions."""
    return f"{line.pricing} ({line.region})" if multi_region else line.pricing


def _usd_by_label(prices: list[Price], output_tok_per_s: float) -> dict[str, float]:
    multi = len({p.region for p in prices}) > 1
    return {line_label(p, multi): arithmetic.usd_per_mtok(p.usd_per_chip_hour, output_tok_per_s) for p in prices}


def cell_costs(bench: BenchRun, prices: Iterable[Price]) -> list[CellCost]:
    """$/M output tokens (USD per million output tokens) for every cell of a bench summary, per price,
    keyed by pricing model ('spot (us-east5)' when the prices span regions).

    Cells that are not 'ok' or have no positive tok/s are kept, with no prices (never dropped).
    """
    prices = list(prices)
    out = []
    for cell in bench.cells:
        tok_s = cell.output_tok_per_s
        priced = cell.status == "ok" and tok_s is not None and tok_s > 0
        out.append(
            CellCost(
                context_tokens=cell.context_tokens,
                clients=cell.clients,
                status=cell.status,
                output_tok_per_s=tok_s,
                usd_per_mtok=_usd_by_label(prices, tok_s) if priced and tok_s is not None else {},
            )
        )
    return out


def best_cell_words(bench: BenchRun, tok_s: float) -> str:
    """What the throughput `estimate` took from `bench` (best_output_tok_per_s, `tok_s`) is: the cell and the
    tok/s definition (CellResult.output_tok_per_s: the steady window, not the whole run), so a price is never read
    as the run's whole-run or average figure."""
    cell = next(c for c in bench.cells if c.status == "ok" and c.output_tok_per_s == tok_s)
    kind = "predicted" if bench.prediction is not None else "measured"
    return f"the best {kind} cell, {cell.context_tokens:,} ctx x {plural(cell.clients, 'client')}, steady window"


def best_output_tok_per_s(bench: BenchRun) -> float | None:
    """Highest median aggregate output tok/s among the 'ok' cells of a bench summary; None if none."""
    values = [c.output_tok_per_s for c in bench.cells if c.status == "ok"]
    numbers = [v for v in values if v is not None and v > 0]
    return max(numbers) if numbers else None


def restart_costs(
    prices: Iterable[Price], cold_boot_s: float | None = None, warm_boot_s: float | None = None
) -> list[RestartCost]:
    """Cost of one cold and/or one warm restart at each price (boot time billed, nothing served)."""
    out = []
    for kind, boot_s in (("cold", cold_boot_s), ("warm", warm_boot_s)):
        if boot_s is None:
            continue
        for price in prices:
            out.append(
                RestartCost(
                    kind=kind,
                    boot_s=boot_s,
                    pricing=price.pricing,
                    region=price.region,
                    usd_per_chip_hour=price.usd_per_chip_hour,
                    usd=arithmetic.restart_usd(boot_s, price.usd_per_chip_hour),
                )
            )
    return out


def break_evens(
    prices: Iterable[Price], cold_boot_s: float | None = None, warm_boot_s: float | None = None
) -> list[BreakEven]:
    """Spot-vs-flex-start break-even for each region that has both prices and each boot time given.

    A preemption on spot costs one restart billed at the spot price (seed article: 857 s cold
    -> $0.1376; flex-start premium $0.0221/h -> 6.2 h).
    """
    prices = list(prices)
    out = []
    for region in dict.fromkeys(p.region for p in prices):
        spot = next((p for p in prices if p.region == region and p.pricing == "spot"), None)
        flex = next((p for p in prices if p.region == region and p.pricing == "flex-start"), None)
        if spot is None or flex is None:
            continue
        premium = flex.usd_per_chip_hour - spot.usd_per_chip_hour
        for kind, boot_s in (("cold", cold_boot_s), ("warm", warm_boot_s)):
            if boot_s is None:
                continue
            restart = arithmetic.restart_usd(boot_s, spot.usd_per_chip_hour)
            out.append(
                BreakEven(
                    kind=kind,
                    region=region,
                    restart_usd=restart,
                    premium_usd_per_hour=premium,
                    hours=arithmetic.break_even_hours(restart, spot.usd_per_chip_hour, flex.usd_per_chip_hour),
                )
            )
    return out


def _stale_warnings(prices: list[Price], day: date) -> list[str]:
    """One warning per (chip, region, read date) group of prices older than the staleness limit."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for price in prices:
        if is_stale(price, day):
            groups.setdefault((price.chip, price.region, price.date), []).append(price.pricing)
    out = []
    for (chip, region, read), names in groups.items():
        age = (day - date.fromisoformat(read)).days
        out.append(
            f"{chip} {region} {', '.join(names)} price{'s' if len(names) > 1 else ''} read {read}, "
            f"{age} days ago (> {stale_after_days()} days): check the current rate before relying on it"
        )
    return out


def estimate(
    chip: str,
    output_tok_per_s: float | None = None,
    bench: BenchRun | None = None,
    pricing: list[str] | str | None = None,
    region: str | None = None,
    cold_boot_s: float | None = None,
    warm_boot_s: float | None = None,
    today: date | str | None = None,
    measured_on: str | None = None,
) -> CostReport:
    """The whole cost picture for `chip`.

    Throughput comes from `output_tok_per_s`, else from the best 'ok' cell of `bench`; with `bench`
    every cell is priced too. Restarts are priced at the preemptible (spot) prices, where a preemption
    forces them, or at every price when the chip has no spot price. `measured_on` is the chip the
    throughput was measured on; when it is not `chip` the report says the figures are hypothetical.
    Raises ConfigError when there is no throughput at all or a catalog key is unknown.
    """
    day = _today(today)
    prices = slice_prices(chip, pricing=_as_list(pricing), region=region)
    key, chips = billed_as(chip)
    tok_s, tok_from = output_tok_per_s, "given" if output_tok_per_s is not None else None
    if tok_s is None and bench is not None:
        tok_s = best_output_tok_per_s(bench)
        tok_from = best_cell_words(bench, tok_s) if tok_s is not None else None
    if tok_s is None and bench is None:
        raise ConfigError("give a throughput (--output-tok-per-s) or a run with a bench summary (--run)")
    warnings = [*unusable_read(), *_stale_warnings(prices, day)]
    if measured_on is not None and measured_on != chip:
        warnings.append(f"throughput was measured on {measured_on}, priced as {chip}: the figures are hypothetical")
    if tok_s is None:
        warnings.append("the bench summary has no 'ok' cell with a positive tok/s: nothing to price per token")
    return CostReport(
        chip=chip,
        billed_as=key if key != chip else None,
        billed_chips=chips,
        region=region,
        today=day.isoformat(),
        output_tok_per_s=tok_s,
        output_tok_per_s_from=tok_from,
        lines=[_line(p, tok_s, day) for p in prices] if tok_s is not None else [],
        cells=cell_costs(bench, prices) if bench is not None else [],
        restarts=restart_costs([p for p in prices if p.preemptible] or prices, cold_boot_s, warm_boot_s),
        break_even=break_evens(prices, cold_boot_s, warm_boot_s),
        warnings=warnings,
    )
