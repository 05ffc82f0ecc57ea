"""`onechip prices` and `onechip prices refresh`: the prices onechip uses, each with its date and source, and a
fresh read of the Cloud Billing Catalog."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from onechip import api
from onechip.cli.options import options_from
from onechip.cli.render import console, live_progress, print_json, print_whole, titled_table
from onechip.schemas.cost import PriceTable
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import PricesRequest

# What `onechip prices [refresh]` exits with (errors.OnechipError.exit_code of each error class it raises)
EXIT_CODES = (
    "Exit codes: 0 done (refresh also when it skipped SKUs not priced in USD: each is named); 2 bad input (a flag, a "
    "chip or region with no price, an API key a header cannot carry, a key file that cannot be read); 3 google-auth "
    "is not installed (and no API key); 7 the Cloud Billing Catalog refused or failed (credentials, an outage past "
    "its deadline, the whole read past $ONECHIP_BILLING_DEADLINE_S, an answer that is not the catalog's): nothing "
    "is stored and the last read still prices. With --json, stdout holds the JSON alone; on an error it holds "
    '{"error": the line, "exit_code": N}.'
)
prices_app = typer.Typer(
    help="The prices cost, advise and cloud up use: date, source, staleness; `refresh` reads the catalog.",
    epilog=EXIT_CODES,
    no_args_is_help=False,
    invoke_without_command=True,
)
JSON = Annotated[bool, typer.Option("--json", help="Print the PriceTable as JSON.")]


def register(app: typer.Typer) -> None:
    app.add_typer(prices_app, name="prices")


@prices_app.callback()
@options_from(PricesRequest)
def show(ctx: typer.Context, as_json: JSON = False, **fields: Any) -> None:
    """The freshest price per chip, region and pricing model, with its read date and source."""
    if ctx.invoked_subcommand is not None:
        return
    _print(api.prices(build_request(PricesRequest, fields)), as_json)


@prices_app.command("refresh", epilog=EXIT_CODES)
@options_from(PricesRequest)
def refresh(as_json: JSON = False, **fields: Any) -> None:
    """Read every page of Compute Engine's SKUs from the Cloud Billing Catalog and store the prices."""
    request = build_request(PricesRequest, fields)
    with live_progress(transient=True) as on_progress:
        table = api.prices_refresh(request, on_progress)
    _print(table, as_json)


def _print(table: PriceTable, as_json: bool) -> None:
    if as_json:
        print_json(table)
        return
    read = table.read
    if read is not None:
        console.print(f"catalog read {read.read_at} from {read.endpoint}: {read.skus_read:,} SKUs in {read.pages} "
                      f"pages, {len(read.prices)} prices (stored in {table.store})", highlight=False)  # fmt: skip
        for line in read.skipped:
            console.print(f"[yellow]skipped[/] {escape(line)}", highlight=False)
    elif table.unusable_read:
        console.print(f"[yellow]warning[/] {escape(table.unusable_read)}", highlight=False)
    else:
        console.print("no catalog read stored: prices.json only (run `onechip prices refresh`)")
    names = read.region_names if read else {}
    out = titled_table(f"prices on {table.today} (USD per chip-hour)")
    for name in ("chip", "region", "pricing", "$/chip-h", "read", "source"):
        out.add_column(name, justify="right" if name == "$/chip-h" else "left", overflow="fold")
    for p in table.prices:
        where = f"{p.region} ({names[p.region]})" if p.region in names else p.region
        said = f"'{p.sku_description}'"  # the SKU, and what its source says after it (the other SKUs that matched)
        source = f"SKU {p.sku_id} {said}{p.source.partition(said)[2]}" if p.sku_id else p.source
        read_on = p.date + (f" [yellow]stale ({p.age_days} d)[/]" if p.stale else "")
        out.add_row(p.chip, where, p.pricing, f"{p.usd_per_chip_hour:.4f}", read_on, source)
    print_whole(out)
    if table.billed_as:
        console.print(table.billed_as, highlight=False)
    gaps: dict[tuple[str, str], list[str]] = {}
    for g in table.missing:
        gaps.setdefault((g.chip, g.region), []).append(g.pricing)
    for (chip, region), names_ in gaps.items():
        console.print(f"{chip} {region}: none for {', '.join(names_)} (the catalog has no SKU for it)")
    console.print(f"SKU = Cloud Billing Catalog services/{read.service if read else '6F81-5844-456A'}/skus/ID; "
                  f"stale = read more than {table.stale_after_days} days ago", highlight=False)  # fmt: skip
