"""A loopback fake of the Cloud Billing Catalog's `services.skus.list`, in the response shape of the cloudbilling
v1 discovery document (googleapis/google-api-go-client cloudbilling/v1/cloudbilling-api.json@b6686ec):

    GET /v1/services/6F81-5844-456A/skus?currencyCode=USD&pageSize=N[&pageToken=T]
        -> {"skus": [Sku, ...], "nextPageToken": "T" | ""}

It serves `page_size` SKUs a page whatever pageSize asks (a real server may send fewer), so paging is exercised;
`faults` answers the next requests with those HTTP statuses (a 503 mid-read; Google's error body) or, for a
string, HTTP 200 with "truncated" (the page's JSON cut in half), "html" (a proxy's page) or "empty" (no body);
any other service, or a currency other than USD, gets Google's error body. Every request's path with its query
and headers is kept in `requests`.

`RECORDED` holds SKU descriptions as the live catalog writes them, each with where it was read; their ids are
the recorded ones where the source gives one (hail-is/hail batch/batch/cloud/gcp/driver/pricing.py@8b1f1e2)
and otherwise test ids (TEST-...). The rates are test values chosen to differ from catalog/prices.json, so a
test can tell a catalog read from the file; they are not real prices.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

SERVICE = "6F81-5844-456A"


def sku(sku_id: str, description: str, regions: list[str], usd: float, usage_type: str = "OnDemand",
        group: str = "TPU", unit: str = "h") -> dict[str, Any]:  # fmt: skip
    """A Sku as services.skus.list returns it (every field the discovery document lists)."""
    units, nanos = int(usd), round((usd - int(usd)) * 1e9)
    return {
        "name": f"services/{SERVICE}/skus/{sku_id}",
        "skuId": sku_id,
        "description": description,
        "category": {"serviceDisplayName": "Compute Engine", "resourceFamily": "Compute",
                     "resourceGroup": group, "usageType": usage_type},
        "serviceRegions": regions,
        "pricingInfo": [{
            "summary": "",
            "pricingExpression": {
                "usageUnit": unit, "displayQuantity": 1, "usageUnitDescription": "hour", "baseUnit": "s",
                "baseUnitDescription": "second", "baseUnitConversionFactor": 3600,
                "tieredRates": [{"startUsageAmount": 0,
                                 "unitPrice": {"currencyCode": "USD", "units": str(units), "nanos": nanos}}],
            },
            "currencyConversionRate": 1,
            "effectiveTime": "2026-12-01T08:00:00.000Z",
        }],
        "serviceProviderName": "Google",
        "geoTaxonomy": {"type": "REGIONAL" if len(regions) == 1 else "MULTI_REGIONAL", "regions": regions},
    }  # fmt: skip


# Descriptions: v5e on-demand/spot/flex-start as issue #26 quotes the seed rigs' patterns; the v6e set and its
# decoys (Capacity Optimized, Reserved ... in Calendar Mode, Commitment v1) as a rig's test records the live
# us-east5 catalog of 2026-08-07, spelt for V5e in Las Vegas here; L4 ids and descriptions from hail's list.
RECORDED = [
    sku("TEST-V5E-OD", "TpuV5e running in Las Vegas", ["us-west4"], 1.3125),
    sku(
        "TEST-V5E-SP",
        "TpuV5e attached to Spot Preemptible VMs running in Las Vegas",
        ["us-west4"],
        0.4942,
        usage_type="Preemptible",
    ),
    sku("TEST-V5E-DWS", "DWS Defined Duration V5e running in Las Vegas", ["us-west4"], 0.6625),
    sku("TEST-V5E-CO", "Capacity Optimized TpuV5e running in Las Vegas", ["us-west4"], 0.0101),
    sku("TEST-V5E-RES", "Reserved V5e TPU in Las Vegas in Calendar Mode", ["us-west4"], 0.0202),
    sku(
        "TEST-V5E-1Y",
        "Commitment v1: TpuV5e running in Las Vegas for 1 Year",
        ["us-west4"],
        0.0303,
        usage_type="Commit1Yr",
    ),
    sku("TEST-V5E-AM", "TpuV5e running in Americas", ["us-central1", "us-west4", "us-east5"], 9.99),
    sku("TEST-V6E-OD", "TpuV6e running in Columbus", ["us-east5"], 2.75),
    sku("TEST-V6E-DWS", "DWS Defined Duration V6e running in Columbus", ["us-east5"], 1.375),
    sku("6E7A-3CB4-0441", "Nvidia L4 GPU running in Las Vegas", ["us-west4"], 0.7125, group="GPU"),
    sku(
        "25E8-AAEC-A70B",
        "Nvidia L4 GPU attached to Spot Preemptible VMs running in Las Vegas",
        ["us-west4"],
        0.2875,
        usage_type="Preemptible",
        group="GPU",
    ),
    sku("TEST-G2-CORE", "G2 Instance Core running in Las Vegas", ["us-west4"], 0.0245, group="CPU"),
]


@dataclass
class FakeBillingCatalog:
    """Start with `with FakeBillingCatalog() as catalog:`; `catalog.url` is the base URL."""

    skus: list[dict[str, Any]] = field(default_factory=lambda: list(RECORDED))
    page_size: int = 5
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    # what the next requests are answered with, in order, before any SKU page (see the module docstring)
    faults: list[int | str] = field(default_factory=list)

    def __enter__(self) -> FakeBillingCatalog:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's spelling)
                fake.requests.append((self.path, dict(self.headers)))
                fault = fake.faults.pop(0) if fake.faults else None
                if isinstance(fault, str):
                    page = json.dumps({"skus": fake.skus[: fake.page_size], "nextPageToken": "x"}).encode()
                    body = {"truncated": page[: len(page) // 2], "html": b"<html>Sign in</html>", "empty": b""}
                    return self._send(200, {}, body[fault], "text/html" if fault == "html" else "application/json")
                if fault is not None:
                    status = fault
                    name = "UNAVAILABLE" if status >= 500 else "UNKNOWN"
                    error = {"code": status, "message": f"injected HTTP {status}", "status": name}
                    return self._send(status, {"error": error})
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                if url.path != f"/v1/services/{SERVICE}/skus":
                    return self._send(404, {"error": {"code": 404, "message": "Service not found.",
                                                      "status": "NOT_FOUND"}})  # fmt: skip
                if query.get("currencyCode") != "USD":
                    return self._send(400, {"error": {"code": 400, "message": "Invalid currency code.",
                                                      "status": "INVALID_ARGUMENT"}})  # fmt: skip
                start = int(query.get("pageToken") or 0)
                end = start + fake.page_size
                nxt = str(end) if end < len(fake.skus) else ""
                self._send(200, {"skus": fake.skus[start:end], "nextPageToken": nxt})

            def _send(self, status: int, body: dict[str, Any], raw: bytes | None = None,
                      kind: str = "application/json") -> None:  # fmt: skip
                data = json.dumps(body).encode() if raw is None else raw
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
