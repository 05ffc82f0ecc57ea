"""Break pass 55 on `onechip cloud` and the catalog read, against the loopback fakes: the error bodies of Google's
older JSON APIs (a 403 rate limit, a Compute Engine operation's errors[])."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from fakes.billing_catalog import SERVICE
from fakes.tpu_api import Fault
from onechip import api
from onechip.cloud import billing, provision, records, refusals
from onechip.cloud.tpu_api import TpuApi
from onechip.errors import CloudError
from onechip.schemas.cloud import CloudNameRequest, CloudResource, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"


def up(**kw):
    return api.cloud_up(CloudUpRequest.model_validate({"project": P, "valid_until_s": "1s", "timeout_s": 5.0, **kw}))


@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
def test_a_403_rate_limit_is_sent_again_on_a_create_and_a_poll(fast, provisioning):
    # was: a 403 whose errors[].reason is rateLimitExceeded (the older JSON APIs' rate limit, Compute Engine's 'Rate
    # Limit Exceeded') read as 'auth': `cloud up` stopped at once with 'Rate Limit Exceeded', nothing retried
    fast.faults += [Fault("POST", r"/(nodes|queuedResources)\?", "rate-limit-403", times=2),
                    Fault("GET", r"/(nodes|queuedResources)/onechip-v5e-1$", "rate-limit-403", times=2)]  # fmt: skip
    limit = {"max_hours": 1.0} if provisioning == "spot" else {}
    result = up(zones=[OK], provisioning=provisioning, **limit)
    assert result.resource.state == "READY" and [a.outcome for a in result.attempts] == ["available"]
    assert all(f.times == 0 for f in fast.faults)  # both were met, and read through
    assert len([m for m, _, _ in fast.requests if m == "POST"]) == 3  # sent again twice, one TPU made
    api.cloud_down(CloudNameRequest(project=P))
    assert records.load_all() == [] and not fast.nodes and not fast.queued


def test_a_403_rate_limit_on_a_catalog_page_is_read_again(monkeypatch):
    # was: `prices refresh` failed on a 403 rateLimitExceeded page (read as 'auth'); a page read changes nothing
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    limited = {"error": {"code": 403, "message": "Rate Limit Exceeded", "status": "PERMISSION_DENIED",
                         "errors": [{"message": "Rate Limit Exceeded", "domain": "usageLimits",
                                     "reason": "userRateLimitExceeded"}]}}  # fmt: skip
    answers = [httpx.Response(403, json=limited), httpx.Response(200, json={"skus": [], "nextPageToken": ""})]
    client = httpx.Client(transport=httpx.MockTransport(lambda request: answers.pop(0)))
    assert billing.list_skus(SERVICE, http=client)[1:] == (1, []) and answers == []


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ({"code": "ZONE_RESOURCE_POOL_EXHAUSTED", "message": "The zone 'projects/p/zones/us-west4-a' does not have "
          "enough resources available to fulfill the request. Try a different zone, or try again later."}, "stockout"),
        ({"code": "QUOTA_EXCEEDED", "message": "Quota 'TPUS' exceeded.  Limit: 0.0 in region us-west4."}, "quota"),
        ({"code": "RESOURCE_NOT_READY", "message": "The resource is not ready"}, "other"),
    ],
)  # fmt: skip
def test_an_operation_error_in_compute_engines_shape_keeps_its_message_and_reason(entry, reason):
    # was: an operation error as Compute Engine writes it ({"errors": [{"code": "ZONE_RESOURCE_POOL_EXHAUSTED",
    # "message": ...}]}, no code or message of its own) read 'other' with 'no message': a stockout stopped `up`
    # (no failover) and the API's sentence was lost
    refusal = refusals.from_status({"errors": [entry]}, "operation-1")
    assert refusal.reason == reason and str(refusal) == f"operation-1: {' '.join(entry['message'].split())}"
    assert (reason in provision.FAILOVER) == (reason != "other")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"code": 403, "message": "Forbidden", "status": "PERMISSION_DENIED",
          "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}]},
         "rate-limit"),
        ({"code": 403, "message": "The caller does not have permission", "status": "PERMISSION_DENIED"}, "auth"),
        ({"code": 401, "message": "Request had invalid authentication credentials.", "status": "UNAUTHENTICATED",
          "errors": [{"reason": "rateLimitExceeded"}]}, "auth"),
    ],
)  # fmt: skip
def test_a_403_is_a_rate_limit_only_by_its_reason_and_a_401_never(body, reason):
    assert refusals.from_http(body["code"], {"error": body}, "GET nodes").reason == reason


def test_down_json_prints_the_json_alone_also_when_nothing_is_left(fast, run):
    # was: `cloud down --json --yes` printed the list of what it deletes on stdout before the JSON, and 'nothing to
    # delete: ...' (text, no JSON) when run a second time: a script's json.loads failed on both
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--provisioning", "spot", "--max-hours", "1",
                       "--name", "t1", "--yes", "--json")  # fmt: skip
    assert rc == 0, err
    rc, out, err = run("cloud", "down", "--project", P, "--yes", "--json")
    assert rc == 0, err
    empty = {"deleted": [], "kept": [], "failed": [], "unreachable": [], "held": [], "notes": []}
    assert json.loads(out) == dict(empty, deleted=[f"node t1 ({OK})"])
    assert f"node t1 in {OK} (spot, project {P})" in err  # what it deletes, said on stderr
    rc, out, err = run("cloud", "down", "--project", P, "--yes", "--json")  # run twice: nothing left
    assert rc == 0 and json.loads(out) == empty and "nothing to delete" in err


def test_a_tpu_deleted_outside_onechip_is_gone_in_status_json_not_ready(fast, run):
    # was: `cloud status --json` of a TPU deleted from the console said exists false with state "READY" (its last
    # state) and its last health, which a script reading the state took for a running TPU
    fast.put("node", OK, "t1", "READY")
    fast.nodes[f"projects/{P}/locations/{OK}/nodes/t1"]["health"] = "UNHEALTHY_MAINTENANCE"
    rc, out, err = run("cloud", "status", "--project", P, "--zone", OK, "--json")
    assert rc == 0, err
    assert [(s["exists"], s["resource"]["state"]) for s in json.loads(out)["resources"]] == [(True, "READY")]
    records.save(CloudResource.model_validate(json.loads(out)["resources"][0]["resource"]))
    fast.nodes.clear()  # deleted from the console
    rc, out, err = run("cloud", "status", "--project", P, "--json")
    (gone,) = json.loads(out)["resources"]
    assert rc == 0 and not gone["exists"] and (gone["resource"]["state"], gone["resource"]["health"]) == ("gone", "")
    assert records.load_all()[0].state == "gone"  # as stored with the time it was first seen gone


def _health(fake, monkeypatch, unhealthy_reads: int) -> list[str]:
    """The fake's READY nodes report UNHEALTHY_TENSORFLOW (Node.health) for their first `unhealthy_reads`, then
    HEALTHY; returns the health of each read."""
    real, said = fake._node_view, []  # noqa: SLF001

    def view(node):
        seen = real(node)
        if seen.get("state") == "READY":
            said.append("UNHEALTHY_TENSORFLOW" if len(said) < unhealthy_reads else "HEALTHY")
            seen["health"] = said[-1]
        return seen

    monkeypatch.setattr(fake, "_node_view", view)
    return said


def test_up_waits_for_a_ready_node_to_be_healthy(fast, monkeypatch):
    # was: `cloud up` returned the first READY node whatever its health, so `--model` started its engines on a TPU
    # the API reported UNHEALTHY_TENSORFLOW; now it waits (within --timeout) for the API to report it healthy
    said = _health(fast, monkeypatch, unhealthy_reads=3)
    lines: list[str] = []
    result = api.cloud_up(CloudUpRequest(project=P, zones=[OK], provisioning="spot", max_hours=1.0, timeout_s=5.0),
                          lambda event: lines.append(event.message))  # fmt: skip
    assert said[:4] == ["UNHEALTHY_TENSORFLOW"] * 3 + ["HEALTHY"] and result.resource.health == "HEALTHY"
    assert "onechip-v5e-1 in us-west4-a: READY (UNHEALTHY_TENSORFLOW)" in lines
    api.cloud_down(CloudNameRequest(project=P))


def test_up_of_a_node_that_stays_unhealthy_stops_naming_it_and_how_to_delete_it(fast, monkeypatch):
    _health(fast, monkeypatch, unhealthy_reads=10**6)
    with pytest.raises(CloudError) as info:
        up(zones=[OK], provisioning="spot", max_hours=1.0, timeout_s=0.3)
    said = str(info.value)
    assert said.startswith(f"node onechip-v5e-1 in {OK} is READY but UNHEALTHY_TENSORFLOW (Node.health) after 0 s; ")
    assert said.endswith(f"onechip cloud down --name onechip-v5e-1 --zone {OK} --project {P} --yes")
    (kept,) = records.load_all()  # it bills: recorded, with the time it was granted
    assert kept.granted_at is not None and kept.health == "UNHEALTHY_TENSORFLOW"
    api.cloud_down(CloudNameRequest(project=P))
    assert not fast.nodes


def test_a_401_mid_poll_from_a_test_endpoint_is_sent_again_once_as_a_refreshed_token_is(fast):
    # was: under ONECHIP_TPU_API_ENDPOINT (no token to refresh) a 401 stood at once, so one 401 while the node was
    # polled (a token that expired mid-poll, which Google's API meets with a refresh and a resend) stopped `cloud up`
    # with its TPU left billing; now it is sent again once, and a 401 that stands still says the remedy
    fast.faults.append(Fault("GET", r"/nodes/onechip-v5e-1$", 401, times=1, after=1))
    result = up(zones=[OK], provisioning="spot", max_hours=1.0)
    assert result.resource.state == "READY" and fast.faults[0].times == 0
    fast.faults.append(Fault("GET", r"/nodes/onechip-v5e-1$", 401, times=2))
    with pytest.raises(CloudError) as info:
        provision.fetch(TpuApi(P), "node", OK, "onechip-v5e-1")
    assert info.value.reason == "auth" and "gcloud auth application-default login" in str(info.value)
    assert fast.faults[-1].times == 0  # sent twice, no more
    api.cloud_down(CloudNameRequest(project=P))


def test_a_catalog_page_401_from_a_test_endpoint_is_sent_again_once(monkeypatch):
    monkeypatch.setenv(billing.ENDPOINT_ENV, "http://127.0.0.1:9")
    error = {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                       "status": "UNAUTHENTICATED"}}  # fmt: skip
    answers = [httpx.Response(401, json=error), httpx.Response(200, json={"skus": [], "nextPageToken": ""})]
    client = httpx.Client(transport=httpx.MockTransport(lambda request: answers.pop(0)))
    assert billing.list_skus(SERVICE, http=client)[1] == 1 and answers == []


@pytest.mark.parametrize(
    "body",
    [
        {"code": 403, "message": "Insufficient regional quota to satisfy request: resource \"TPUS\": request requires "
         "8.0 and is short 8.0.", "status": "PERMISSION_DENIED"},
        {"code": 403, "message": "Request denied", "status": "PERMISSION_DENIED",
         "errors": [{"message": "Request denied", "domain": "usageLimits", "reason": "quotaExceeded"}]},
    ],
)  # fmt: skip
def test_a_403_quota_by_compute_engines_wording_or_reason_moves_to_the_next_zone(body):
    # was 'auth': `cloud up` stopped at the first zone out of quota instead of trying the next, as a quota does
    assert refusals.from_http(403, {"error": body}, "POST nodes").reason == "quota"


def test_a_zone_without_the_accelerator_type_moves_up_to_the_next_zone(fast, monkeypatch):
    # was 'other': the TPU API's 'Cloud TPU received a bad request. the accelerator v4-128 was not found in zone
    # us-central2-b' (its words, skypilot-org/skypilot#3840) stopped `cloud up` at that zone, where a zone that does
    # not offer the chip is one to move on from, as one that does not offer its provisioning model is
    from fakes import tpu_api as fake_module

    said = "Cloud TPU received a bad request. the accelerator {type} was not found in zone europe-west4-a [EID: 0x9]"
    monkeypatch.setattr(fake_module, "UNSUPPORTED", said)
    result = up(zones=["europe-west4-a", OK])  # europe-west4-a refuses flex-start's create with that message
    assert [(a.zone, a.outcome) for a in result.attempts] == [("europe-west4-a", "unsupported"), (OK, "available")]
    assert "the accelerator v5litepod-1 was not found in zone europe-west4-a" in result.attempts[0].message
    api.cloud_down(CloudNameRequest(project=P))
    assert not fast.queued and records.load_all() == []


@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
def test_a_bare_429_on_a_create_waits_its_retry_after_and_is_sent_again(fast, provisioning):
    # was: a 429 with no body (a front end's refusal, Retry-After only) on a create read as 'not the Cloud TPU API'
    # ('answered HTTP 429 with an empty body'), so `cloud up` stopped; a 429 made nothing: it is a rate limit
    fast.faults.append(Fault("POST", r"/(nodes|queuedResources)\?", "bare-429", times=1))
    started = time.monotonic()
    limit = {"max_hours": 1.0} if provisioning == "spot" else {}
    result = up(zones=[OK], provisioning=provisioning, **limit)
    assert result.resource.state == "READY" and time.monotonic() - started >= 1.0  # its Retry-After, 1 s
    assert len([m for m, _, _ in fast.requests if m == "POST"]) == 2 and fast.faults[0].times == 0
    api.cloud_down(CloudNameRequest(project=P))


def test_a_read_refused_for_quota_is_polled_through_and_never_deletes_the_tpu(fast):
    # was: a 403 naming a quota on a GET of the node being waited on read as 'quota' (a zone out of chips), so `cloud
    # up` deleted the TPU it had just been granted and moved to the next zone; a read uses no chips: its quota is one
    # of requests, a rate limit, read through
    fast.faults.append(Fault("GET", r"/nodes/onechip-v5e-1$", "quota-403", times=2, after=1))
    result = up(zones=[OK, "asia-east1-c"], provisioning="spot", max_hours=1.0)
    assert [(a.zone, a.outcome) for a in result.attempts] == [(OK, "available")] and fast.faults[0].times == 0
    assert not [p for m, p, _ in fast.requests if m == "DELETE"] and len(fast.nodes) == 1
    api.cloud_down(CloudNameRequest(project=P))


def test_a_429_of_requests_per_100_seconds_is_a_rate_limit_not_a_zones_quota():
    # was 'quota': Service Control's older wording of a request-rate limit moved `cloud up` to the next zone as if
    # this one had no chips, where the project's requests were refused (a rate limit: the same request sent again)
    message = ("Quota exceeded for quota group 'default' and limit 'Queries per 100 seconds' of service "
               "'tpu.googleapis.com' for consumer 'project_number:123'.")  # fmt: skip
    body = {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED"}}
    assert refusals.from_http(429, body, "POST nodes").reason == "rate-limit"
    quota = {"error": {"code": 429, "message": "Quota limit 'TPUV5sLitepodPerProjectPerZoneForTPUAPI' has been "
                       "exceeded. Limit: 0 in zone us-west4-a.", "status": "RESOURCE_EXHAUSTED"}}  # fmt: skip
    assert refusals.from_http(429, quota, "POST nodes").reason == "quota"  # a zone's chips: still a quota
