"""The Billing Catalog (cloudbilling v1 services.skus.list: {"skus": [Sku], "nextPageToken"}; Sku.pricingInfo[].
pricingExpression.tieredRates[] {startUsageAmount, unitPrice: Money {currencyCode, units, nanos}}, discovery document
googleapis/google-api-go-client cloudbilling/v1/cloudbilling-api.json) answering every SKU in another currency than
the USD asked: a read that prices no chip is never stored over the last one that did."""

from __future__ import annotations

import copy

import pytest

from fakes.billing_catalog import RECORDED, FakeBillingCatalog
from onechip.cloud import billing
from onechip.errors import CloudError


@pytest.fixture
def fake(monkeypatch):
    with FakeBillingCatalog() as catalog:
        monkeypatch.setenv(billing.ENDPOINT_ENV, catalog.url)
        yield catalog


def test_an_answer_priced_all_in_another_currency_keeps_the_last_read(fake):
    # a server that answers EUR whatever currencyCode asks (currencyConversionRate 0.92): every chip's SKU is skipped
    # (billing._currency: never converted), so the read prices nothing. Was: stored over the last good read, and
    # every price fell back to prices.json
    first = billing.refresh()
    euros = copy.deepcopy(RECORDED)
    for entry in euros:
        for info in entry["pricingInfo"]:
            info["currencyConversionRate"] = 0.92
            for tier in info["pricingExpression"]["tieredRates"]:
                tier["unitPrice"]["currencyCode"] = "EUR"
    fake.skus = euros
    with pytest.raises(CloudError) as info:
        billing.refresh()
    said = str(info.value)
    assert "priced in EUR, not USD" in said and f"the read of {first.read_at[:10]} still prices" in said, said
    assert billing.stored_read() == first
