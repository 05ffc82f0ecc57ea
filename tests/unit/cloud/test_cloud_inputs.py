"""The cloud request models (durations, cost guard, the demo's host options), refusal classes from the APIs'
own messages, and the price quote from the catalog."""

from __future__ import annotations

import pytest

from onechip import api
from onechip.cloud import offers, refusals
from onechip.errors import ConfigError
from onechip.planner import chips
from onechip.schemas.cloud import CloudUpRequest, CloudZonesRequest, api_duration, parse_duration
from onechip.schemas.inputs import build_request
from onechip.schemas.requests import DemoRequest


@pytest.mark.parametrize(("text", "seconds"), [("4h", 14400), ("1h30m", 5400), ("90s", 90), ("90", 90),
                                               ("7d", 604800), ("0.5h", 1800)])  # fmt: skip
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


def test_api_duration_is_protobuf_json():
    assert api_duration(14400.0) == "14400s"  # the seed's 'maxRunDuration: 14400s'


def test_bad_duration_names_the_flag():
    with pytest.raises(ConfigError, match="--max-run-duration.*4h, 30m"):
        build_request(CloudUpRequest, {"max_run_duration_s": "four hours"})


@pytest.mark.parametrize(
    ("code", "status", "message", "reason"),
    [
        (3, "INVALID_ARGUMENT", 'FLEX_START provisioning model is not supported for accelerator type "v5litepod-1"',
         "unsupported"),
        (8, "", 'There is no more capacity in the zone "us-west4-a"; you can try in another zone', "stockout"),
        (8, "RESOURCE_EXHAUSTED", "Quota limit 'TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI' has been "
         "exceeded.", "quota"),
        (None, "", "reason: stockout", "stockout"),
        (4, "", "Queued resource request expired before capacity was available.", "expired"),
        (9, "FAILED_PRECONDITION", "Cannot delete a queued resource in state PROVISIONING.", "precondition"),
        (5, "NOT_FOUND", "not found", "not-found"),
        (7, "PERMISSION_DENIED", "caller lacks tpu.nodes.create", "auth"),
    ],
)  # fmt: skip
def test_refusals_told_apart_by_code_and_message(code, status, message, reason):
    assert refusals.classify(code, status, message) == reason


def test_http_error_body_maps_to_grpc_code():
    body = {"error": {"code": 429, "message": "Quota limit 'X' has been exceeded", "status": "RESOURCE_EXHAUSTED"}}
    error = refusals.from_http(429, body, "POST nodes")
    assert (error.code, error.reason) == (8, "quota")


def test_quote_prefers_the_zones_region_and_says_when_it_cannot():
    quote = offers.quote("v6e-1", "spot", "us-east5-b", None)
    assert quote.region == "us-east5" and quote.usd_per_hour == 1.4033
    other = offers.quote("v6e-1", "on-demand", "us-central1-b", None)
    assert other.usd_per_hour is not None and "no us-central1 price" in other.price_source
    # a slice is priced per chip at its one-chip sibling's price (accelerators.json price_chip, as advise does):
    # prices.json v6e-1 europe-west4 spot $1.782/chip-hour (seed survey) x 8 chips
    slice_quote = offers.quote("v6e-8", "spot", "europe-west4-a", None)
    assert (slice_quote.chips, slice_quote.usd_per_chip_hour) == (8, 1.782)
    assert slice_quote.usd_per_hour == pytest.approx(8 * 1.782) and "v6e-1's per-chip price" in slice_quote.price_source
    # N one-chip TPUs: N chips
    assert offers.quote("v6e-1", "spot", "us-east5-b", None, tpus=3).usd_per_hour == pytest.approx(3 * 1.4033)


def test_demo_host_options():
    assert not DemoRequest().on_host()
    with pytest.raises(ConfigError, match="--keep needs --cloud gcp or --engine"):
        build_request(DemoRequest, {"keep": True})
    with pytest.raises(ConfigError, match="needs --model and --chip"):
        build_request(DemoRequest, {"cloud": "gcp", "chip": "v5e-1"})
    with pytest.raises(ConfigError, match="bills until deleted"):
        build_request(DemoRequest, {"cloud": "gcp", "chip": "v5e-1", "model": "m", "provisioning": "spot"})
    with pytest.raises(ConfigError, match="drop --host"):
        build_request(DemoRequest, {"cloud": "gcp", "chip": "v5e-1", "model": "m", "host": "me@h"})
    request = build_request(DemoRequest, {"engine": "vllm-docker", "host": "me@h", "chip": "l4", "model": "m"})
    assert request.on_host() and request.max_run_duration_s == 14400


def test_headers_come_from_google_auth_with_the_quota_project(monkeypatch):
    """User credentials with a quota project: google-auth's before_request adds x-goog-user-project,
    which the hand-built Authorization header used to drop (issue 24)."""
    import httpx
    from google.oauth2.credentials import Credentials as UserCredentials

    from onechip.cloud import auth
    from onechip.cloud.tpu_api import TpuApi

    monkeypatch.delenv("ONECHIP_TPU_API_ENDPOINT", raising=False)
    creds = UserCredentials(token="ya29.test-token", quota_project_id="billing-proj")
    monkeypatch.setattr(auth, "_adc", lambda: (creds, "proj-1"))
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"name": "projects/proj-1/locations/us-west4-a/nodes/n", "state": "READY"})

    tpu = TpuApi(None, http=httpx.Client(transport=httpx.MockTransport(answer)))
    assert tpu.get_node("us-west4-a", "n")["state"] == "READY"
    (request,) = seen
    assert request.headers["authorization"] == "Bearer ya29.test-token"
    assert request.headers["x-goog-user-project"] == "billing-proj"
    assert str(request.url) == "https://tpu.googleapis.com/v2/projects/proj-1/locations/us-west4-a/nodes/n"


@pytest.mark.parametrize(
    ("code", "message", "details", "reason"),
    [
        (4, "Deadline exceeded.", None, "expired"),  # by code, whatever the wording (issue 24)
        (8, "Resource exhausted.", [{"@type": "type.googleapis.com/google.rpc.QuotaFailure"}], "quota"),
        (6, "already exists", None, "conflict"),
    ],
)
def test_refusals_by_code_and_details(code, message, details, reason):
    error = refusals.from_status({"code": code, "message": message, "details": details}, "x")
    assert error.reason == reason


@pytest.mark.parametrize(
    ("name", "key"),
    # Google's names (cloud.google.com/tpu/docs/v5e: 'v5litepod-N' is N v5e chips; v6e is Trillium), as plan --chip
    # reads them (planner.chips.google_tpu), and onechip's own keys
    [
        ("v5litepod-4", "v5e-4"),
        ("v5litepod-1", "v5e-1"),
        ("TPU v6e-4", "v6e-4"),
        ("trillium-8", "v6e-8"),
        ("v5e-4", "v5e-4"),
    ],  # fmt: skip
)
def test_cloud_chip_takes_googles_names_as_plan_does(name, key):
    assert offers.chip_key(name) == key == chips.find(name)[1]
    assert offers.tpu_type(name) == offers.tpu_type(key)


def test_cloud_jobs_resolve_the_chip_before_anything_reads_it(offline_home):
    quote = api.cloud_quote(CloudUpRequest(chip="v5litepod-4", zones=["us-west4-a"]))
    assert (quote.chip, quote.chips) == ("v5e-4", 4)
    assert {z.chip for z in api.cloud_zones(CloudZonesRequest(chip="trillium-1"))} == {"v6e-1"}


@pytest.mark.parametrize("name", ["v5e-3", "v5litepod-3", "l4", "bogus"])
def test_a_chip_cloud_cannot_get_names_the_ones_it_can(name):
    with pytest.raises(ConfigError, match=r"not a Cloud TPU chip onechip knows \(v5e-1, v5e-4, v6e-1, v6e-4, v6e-8\)"):
        offers.chip_key(name)
