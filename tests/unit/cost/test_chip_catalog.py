"""One chip catalog for plan, cost, simulate and advise: every priced chip is plannable, and every plannable
chip says where its price comes from (its own prices, a sibling's per-chip price, or why there is none)."""

from __future__ import annotations

from onechip import catalog
from onechip.cost.prices import all_prices
from onechip.planner import rules


def test_every_priced_chip_is_plannable():
    known = set(rules.known_accelerators())
    assert {p.chip for p in all_prices()} <= known


def test_every_plannable_chip_names_its_price_source():
    priced = {p.chip for p in all_prices()}
    missing = []
    for chip in rules.known_accelerators():
        entry = rules.accelerator(chip)
        key = entry.price_chip or chip
        if entry.price_chip is not None:
            assert entry.price_chip in priced, f"{chip}: price_chip {entry.price_chip} has no price"
        if key not in priced and not entry.price_note:
            missing.append(chip)
    assert not missing, f"chips with neither a price nor a price_note: {missing}"


def test_slices_price_from_their_one_chip_sibling():
    accelerators = catalog.accelerators().accelerators
    for chip in ("v5e-4", "v5e-8", "v6e-4", "v6e-8"):
        entry = rules.accelerator(chip)
        sibling = rules.accelerator(entry.price_chip or "")
        assert entry.chips > 1 and sibling.chips == 1
        assert accelerators[chip].bandwidth_bytes_per_s == accelerators[sibling.name].bandwidth_bytes_per_s


def test_the_surveys_list_prices_are_there_with_dates():
    by_chip = {(p.chip, p.pricing): p for p in all_prices()}
    assert by_chip[("mi300x", "on-demand")].usd_per_chip_hour == 1.99
    assert by_chip[("rtx-pro-6000", "on-demand")].usd_per_chip_hour == 4.50
    assert by_chip[("b200", "flex-start")].usd_per_chip_hour == 8.055
    assert all(p.date for p in all_prices())
