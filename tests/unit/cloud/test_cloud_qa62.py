"""QA pass 62 on cloud failure paths: scenarios a different fake API would run (queued resource and node state
walks, error and operation shapes, lists without their key, outages), and how long a `down`'s first sends take
through an outage."""

from __future__ import annotations

import re

import httpx
import pytest

from fakes.clock import SleepClock
from fakes.tpu_api import Fault
from onechip.api import _cloud
from onechip.cloud import provision, records, tpu_api
from onechip.cloud.tpu_api import TpuApi
from onechip.errors import CloudError
from onechip.schemas.cloud import CloudNameRequest, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"
FAR = "us-east1-d"  # granted everything too (the fake's default Zone)


def _nodes(run, names_zones) -> None:
    for name, zone in names_zones:
        rc, out, err = run("cloud", "up", "--project", P, "--zone", zone, "--name", name, "--provisioning", "spot",
                           "--no-limit", "--yes")  # fmt: skip
        assert rc == 0, (out, err)


def test_down_through_an_outage_sends_every_first_delete_within_one_calls_deadline(fast, run, monkeypatch):
    # every DELETE answered 503: the first pass sent a's delete with a whole call's retries (30 s of backoff), then
    # b's, c's and d's, so d's delete left 90 s into the down, its share of the bound spent before the shared wait
    _nodes(run, (("a", OK), ("b", OK), ("c", FAR), ("d", FAR)))
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")  # tpu_api's default call deadline
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "5")  # tpu_api's default poll
    fast.faults.append(Fault("DELETE", "/", 503, times=10**6))
    clock = SleepClock(monkeypatch, provision, tpu_api)
    sent_at: dict[str, float] = {}
    real_send = tpu_api.send

    def send(http, method, url, **kw):
        if method == "DELETE":
            sent_at.setdefault(url.rsplit("/", 1)[-1], clock.now)
        return real_send(http, method, url, **kw)

    monkeypatch.setattr(tpu_api, "send", send)
    lines: list[str] = []
    started = clock.now
    with pytest.raises(CloudError):
        _cloud.cloud_down(CloudNameRequest(project=P), lambda e: lines.append(e.message), records.load_all())
    assert sorted(sent_at) == ["a", "b", "c", "d"], sent_at
    # the first send spends its call's retries (1 + 2 + 4 + 8 s of backoff: the next, 16 s, would pass the 30-s
    # deadline); the others, the API seen down, one try each: all are sent within that one call's deadline
    assert max(sent_at.values()) - started <= 30, sent_at
    resent = [line for line in lines if "the delete is sent again" in line]
    assert resent, lines
    # the bound named is the down's, shared by its TPUs (DOWN_WAIT_S), not a delete's own 'for up to 600 s'
    bound = f"the down's {provision.DOWN_WAIT_S:g} s, all its TPUs together"
    assert all(bound in line and "for up to" not in line for line in resent), resent


# --- a scripted fake: another API than tests/fakes/tpu_api.py, answering as proto3's JSON mapping allows (a field
# at its default value omitted: `done` false, `state` STATE_UNSPECIFIED, an empty list), with fields and enum values
# this client does not know, and each resource's states in the order a scenario gives

Z = "us-west4-a"
PARENT = f"projects/{P}/locations/{Z}"
QR = f"/v2alpha1/{PARENT}/queuedResources"
NODES = f"/v2/{PARENT}/nodes"
STOCKOUT = f'There is no more capacity in the zone "{Z}"; you can try in another zone'  # the TPU API's words (seed)


class Script:
    """An httpx handler for the TPU API: `states[path]` lists the resource bodies a GET answers in turn (the last
    repeats; None: 404), `answers[(method, path)]` lists (status, body) answers to any other request in turn (the last
    repeats), a DELETE answers a done operation and makes the resource answer 404, and a list answers {} (proto3
    omits an empty repeated field: no key at all)."""

    def __init__(self) -> None:
        self.states: dict[str, list[dict | None]] = {}
        self.answers: dict[tuple[str, str], list[tuple[int, dict]]] = {}
        self.sent: list[tuple[str, str]] = []
        self.made: set[str] = set()  # what a create made: only those answer their `states`

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        self.sent.append((request.method, path))
        if request.method == "POST" and (ident := request.url.params.get("queuedResourceId")):
            self.made |= {f"{path}/{ident}", f"{NODES}/{ident}-node"}  # its node too, once granted (`states`)
        elif request.method == "POST":
            self.made.add(f"{path}/{request.url.params.get('nodeId')}")
        turns = self.answers.get((request.method, path))
        if turns:
            status, body = turns.pop(0) if len(turns) > 1 else turns[0]
            return httpx.Response(status, json=body)
        if request.method == "DELETE":
            self.states[path] = [None]
            return httpx.Response(200, json=_op("del", done=True))
        if request.method == "GET" and re.search(r"/(nodes|queuedResources)$", path):
            return httpx.Response(200, json={})
        turns = self.states.get(path) if path in self.made or "/operations/" in path else None
        if request.method == "GET" and turns and (body := turns.pop(0) if len(turns) > 1 else turns[0]) is not None:
            return httpx.Response(200, json=body)
        return httpx.Response(404, json={"error": {"code": 404, "message": f"{path} not found", "status": "NOT_FOUND"}})


def _op(ident: str, done: bool = False, **more) -> dict:
    """A long-running operation as the API sends it: `done` omitted while false (proto3), metadata of a type unknown."""
    op = {
        "name": f"{PARENT}/operations/{ident}",
        "metadata": {"@type": "type.googleapis.com/x.OperationMetadata", "apiVersion": "v2alpha1", "newField": 1},
    }
    return {**op, **({"done": True} if done else {}), **more}


def _qr(state: str | None, **state_data) -> dict:
    body = {"name": f"{PARENT}/queuedResources/q", "tpu": {"nodeSpec": [{"parent": PARENT, "nodeId": "q-node", "node": {
        "acceleratorType": "v5litepod-1", "labels": {"created-by": "onechip"}}}]}, "provisioningModel": "FLEX_START",
        "someNewField": {"x": 1}}  # fmt: skip
    if state is not None:
        body["state"] = {"state": state, **state_data}
    return body


@pytest.fixture
def script(monkeypatch, tmp_path):
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.scenario.test")
    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    SleepClock(monkeypatch, provision, tpu_api)  # the waits' minutes on a clock that only sleeps move
    handler = Script()
    with httpx.Client(transport=httpx.MockTransport(handler)) as http, TpuApi(P, http=http, poll_s=5) as api:
        handler.api = api
        yield handler


def _flex(name: str = "q") -> CloudUpRequest:
    return CloudUpRequest.model_validate({"chip": "v5e-1", "project": P, "zones": [Z], "name": name,
                                          "provisioning": "flex-start"})  # fmt: skip


def test_a_queued_resource_accepted_then_waiting_then_failed_stocked_out_is_deleted_and_said(script):
    script.answers[("POST", QR)] = [(200, _op("op-1"))]
    script.states[f"/v2alpha1/{PARENT}/operations/op-1"] = [_op("op-1", done=True, response=_qr("ACCEPTED"))]
    failed = {"failedData": {"error": {"code": 8, "message": STOCKOUT, "details": [{"@type": "x.Unknown"}]}}}
    script.states[f"{QR}/q"] = [_qr("ACCEPTED"), _qr("WAITING_FOR_RESOURCES"), _qr("FAILED", **failed)]
    lines: list[str] = []
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: lines.append(e.message))
    assert info.value.reason == "stockout", info.value
    assert f"{Z}: stockout" in str(info.value) and "no more capacity" in str(info.value), info.value
    assert ("DELETE", f"{QR}/q") in script.sent  # what the failed request left is deleted
    assert records.load_all() == []  # and nothing is left recorded: nothing bills


def test_a_queued_resource_suspended_before_it_was_granted_is_deleted_and_said(script):
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr(None), _qr("ACCEPTED"), _qr("SUSPENDING"), _qr("SUSPENDED")]  # None: no state
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    assert info.value.reason == "ended" and "SUSPENDING before it was granted" in str(info.value), info.value
    assert ("DELETE", f"{QR}/q") in script.sent and records.load_all() == []


def test_a_queued_resource_in_a_state_this_client_does_not_know_is_waited_on_not_deleted(script):
    # an enum value newer than the client (QR_PHASE: 'a state outside these lists counts as waiting'), then ACTIVE
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("SOME_NEW_STATE"), _qr("ACTIVE", activeData={})]
    node = {"name": f"{PARENT}/nodes/q-node", "state": "READY", "labels": {"created-by": "onechip"},
            "acceleratorType": "v5litepod-1", "health": "HEALTHY", "newNodeField": [1],
            "networkEndpoints": [{"ipAddress": "10.0.0.2", "accessConfig": {"externalIp": "203.0.113.7"}}]}  # fmt: skip
    script.states[f"{NODES}/q-node"] = [node]
    result = provision.up(script.api, _flex(), lambda e: None)
    assert result.resource.external_ip == "203.0.113.7" and result.resource.state == "READY"
    assert not any(m == "DELETE" for m, _ in script.sent)


def test_an_operation_that_never_finishes_stops_at_the_timeout_naming_what_to_delete(script):
    script.answers[("POST", QR)] = [(200, _op("op-1"))]
    script.states[f"/v2alpha1/{PARENT}/operations/op-1"] = [_op("op-1")]  # never done
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex().model_copy(update={"timeout_s": 120.0}), lambda e: None)
    said = str(info.value)
    assert "not done after 120 s" in said, said
    (left,) = records.load_all()
    assert provision.delete_command(left) in said, said  # it may exist: said with the command that deletes it


def test_a_create_refused_for_quota_with_a_quota_failure_detail_is_said_and_nothing_is_left(script):
    quota = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Quota exceeded.", "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"subject": "project", "description":
         "TPUV5sLitepodPerProjectPerZoneForTPUAPI"}]}]}}  # fmt: skip
    script.answers[("POST", QR)] = [(429, quota)]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    assert info.value.reason == "quota" and f"{Z}: quota" in str(info.value), info.value
    assert records.load_all() == [] and not any(m == "DELETE" for m, _ in script.sent)


def test_a_list_that_pages_and_an_empty_page_without_its_key(script):
    page1 = {"nodes": [{"name": f"{PARENT}/nodes/a", "labels": {"created-by": "onechip"}}], "nextPageToken": "t1"}
    page2 = {"nextPageToken": "t2"}  # a page with no items (no key) that is not the last
    page3 = {"nodes": [{"name": f"{PARENT}/nodes/b"}], "unknownListField": 3}
    answers = iter([page1, page2, page3])
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url.params.get("pageToken", ""))
        return httpx.Response(200, json=next(answers))

    with httpx.Client(transport=httpx.MockTransport(handler)) as http, TpuApi(P, http=http, poll_s=5) as api:
        found = api.list_nodes(Z)
    assert [n["name"].rsplit("/", 1)[-1] for n in found] == ["a", "b"] and seen == ["", "t1", "t2"]


def test_a_429_then_200_and_a_503_storm_then_an_answer_are_read_through(script):
    rate = {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "Too many requests", "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}]}}  # fmt: skip
    unavailable = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "The service is unavailable."}}
    node = {"name": f"{PARENT}/nodes/n", "state": "READY", "labels": {"created-by": "onechip"}}
    script.answers[("GET", f"{NODES}/n")] = [
        (429, rate),
        (503, unavailable),
        (503, unavailable),
        (500, {}),
        (200, node),
    ]
    assert script.api.get_node(Z, "n")["state"] == "READY"


def test_credentials_that_expire_while_a_queued_resource_waits_name_what_to_delete(script):
    # the token refused mid-wait (a 401 that stands after the one refresh google-auth's AuthorizedSession makes)
    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("ACCEPTED")]
    expired = {"error": {"code": 401, "status": "UNAUTHENTICATED", "message": "Request had invalid authentication "
                         "credentials. Expected OAuth 2 access token."}}  # fmt: skip
    script.answers[("GET", f"{QR}/q")] = [(200, _qr("ACCEPTED")), (200, _qr("WAITING_FOR_RESOURCES")), (401, expired)]
    with pytest.raises(CloudError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    said = str(info.value)
    assert info.value.reason == "auth" and "the credentials were refused" in said, said
    (left,) = records.load_all()  # it may exist, waiting in the queue: recorded, and the line says how to delete it
    assert provision.delete_command(left) in said, said


# --- the Billing Catalog (cloudbilling v1 services.skus.list) as another server may answer it


def test_a_sku_list_over_pages_prices_nanos_only_and_gaps_a_sku_without_tiers(monkeypatch):
    from datetime import UTC, datetime

    from onechip.cloud import billing

    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://billing.scenario.test")
    vegas = {"skuId": "V5E-OD", "description": "TpuV5e running in Las Vegas", "serviceRegions": ["us-west4"],
             "category": {"usageType": "OnDemand", "newCategoryField": "x"}, "geoTaxonomy": {"type": "REGIONAL"},
             "pricingInfo": [{"pricingExpression": {"usageUnit": "h", "tieredRates": [
                 {"unitPrice": {"currencyCode": "USD", "nanos": 875000000}}]}}]}  # fmt: skip
    # units omitted (proto3: 0) and startUsageAmount omitted: $0.875 an hour
    spot = {
        "skuId": "V5E-SP",
        "description": "TpuV5e attached to Spot Preemptible VMs running in Las Vegas",
        "serviceRegions": ["us-west4"],
        "category": {"usageType": "Preemptible"},
        "pricingInfo": [{"pricingExpression": {"usageUnit": "h"}}],
    }  # no tieredRates at all
    pages = {"": {"skus": [vegas], "nextPageToken": "p2"}, "p2": {"nextPageToken": "p3"}, "p3": {"skus": [spot]}}
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        token = request.url.params.get("pageToken", "")
        asked.append(token)
        return httpx.Response(200, json=pages[token])

    with httpx.Client(transport=httpx.MockTransport(handler)) as http:
        _, read_pages, skus = billing.list_skus("svc", http=http)
    assert (read_pages, asked) == (3, ["", "p2", "p3"])
    prices, gaps, *_ = billing.match(skus, datetime(2026, 12, 6, tzinfo=UTC))
    got = {(p.chip, p.region, p.pricing): p.usd_per_chip_hour for p in prices}
    assert got[("v5e-1", "us-west4", "on-demand")] == pytest.approx(0.875)  # nanos alone: 875,000,000e-9 USD
    (gap,) = [g for g in gaps if (g.chip, g.region, g.pricing) == ("v5e-1", "us-west4", "spot")]
    assert "V5E-SP has no hourly rate" in gap.reason, gap  # a SKU with no tiered rate prices nothing, never $0


def test_a_zone_whose_lists_answer_no_key_at_all_holds_nothing(script):
    # ListNodesResponse / ListQueuedResourcesResponse with nothing in them: {} (proto3 omits an empty repeated field)
    assert provision.targets(script.api, CloudNameRequest(project=P, zones=[Z]), []) == []
    assert {("GET", NODES), ("GET", QR)} <= set(script.sent)
