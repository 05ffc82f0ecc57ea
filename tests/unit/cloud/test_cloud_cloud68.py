"""Cloud pass 68 against scenarios another fake API may run: Retry-After in each HTTP-date form RFC 9110 names,
waits past a call's deadline said as the API asked them, two `cloud up`s of one home claiming one name at once, a zone
that has no such accelerator type, and the API's clock apart from this machine's."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
import test_cloud_qa62
from test_cloud_failures import OK, P, ours, up

from onechip.cloud import provision, records
from onechip.cloud.tpu_api import TpuApi
from onechip.errors import BusyError
from onechip.retry_after import retry_after_s
from onechip.schemas.cloud import CloudResource

script = test_cloud_qa62.script  # the scripted fake API's fixture, found by its name here
SENT = "Sun, 06 Nov 1994 08:49:37 GMT"  # RFC 9110 section 5.6.7's example instant, in its IMF-fixdate form


@pytest.mark.parametrize(
    "later",
    [
        "Sun, 06 Nov 1994 08:51:37 GMT",  # IMF-fixdate
        "Sunday, 06-Nov-94 08:51:37 GMT",  # obsolete RFC 850 form
        "Sun Nov  6 08:51:37 1994",  # obsolete asctime form: no zone written, and UTC all the same
        "Sun, 06 Nov 1994 08:51:37 -0000",  # RFC 5322's 'no zone known' offset: an HTTP-date is UTC (5.6.7)
    ],
)
def test_retry_after_reads_all_three_http_date_forms(later):
    # Before: the asctime form and '-0000' parsed to a naive time, read as no Retry-After at all (None), so the
    # client retried after its own backoff; RFC 9110 section 5.6.7: a recipient MUST accept all three forms, UTC
    assert retry_after_s(httpx.Headers({"Retry-After": later, "Date": SENT})) == 120.0


@pytest.mark.parametrize(
    ("asked", "said"),
    [("1234567", "1234567 s"), ("86400", "86400 s"), ("Sun, 06 Nov 1994 09:49:37 GMT", "3600 s")],
)
def test_a_retry_after_past_the_deadline_is_said_as_the_api_asked_it(monkeypatch, asked, said):
    # Before: '(the next in 1.23457e+06 s would pass the 30 s deadline ...)': the wait rounded to 6 digits, and said
    # as our own next try, not as the API's Retry-After
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")
    busy = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "try later"}}
    answer = httpx.Response(503, headers={"Retry-After": asked, "Date": SENT}, json=busy)
    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(lambda r: answer)), poll_s=0.01,
                 on_retry=lambda line: None)  # fmt: skip
    with pytest.raises(Exception) as info:
        tpu.list_nodes(OK)
    line = str(info.value)
    assert "\n" not in line and f"the API asked to wait {said} (its Retry-After or RetryInfo)" in line, line
    assert "e+" not in line, line


def test_a_second_up_of_this_home_while_the_first_claims_the_name_is_refused_and_touches_nothing(fast):
    # Two `onechip cloud up` at once, one home, one name: the second read the first's node (CREATING, labelled with
    # this home's owner id) as one of its own to resume, and waited on it; had it timed out or been stopped it would
    # have deleted the first's TPU as its own. Now the name is claimed under a lock the first holds to its end.
    fast.create_s = fast.wait_s = 2.0  # the first still waits on its TPU while the second starts
    first: dict = {}
    thread = threading.Thread(
        target=lambda: first.setdefault("result", up(zones=[OK], timeout_s=30.0, valid_until_s="60s"))
    )
    thread.start()
    started = time.monotonic()
    while not any(m == "POST" for m, _, _ in fast.requests) and time.monotonic() - started < 10:
        time.sleep(0.01)
    with pytest.raises(BusyError) as info:
        up(zones=[OK], timeout_s=0.2)
    thread.join(30)
    said = str(info.value)
    assert "\n" not in said and "onechip-v5e-1" in said and P in said, said
    posts = [p for m, p, _ in fast.requests if m == "POST"]
    assert len(posts) == 1 and not any(m == "DELETE" for m, _, _ in fast.requests), fast.requests  # the first's create
    assert first["result"].resource.state == "READY" and not first["result"].reused
    assert ours(fast) == {(OK, first["result"].resource.kind, "onechip-v5e-1")}
    assert {r.name for r in records.load_all()} == {"onechip-v5e-1"}


# --- a zone with no such accelerator type


def _no_type(zone: str) -> dict:
    """Google's NOT_FOUND for a resource a request names that the API has not (AIP-193's stock wording, as for an
    unknown location: fakes.tpu_api UNKNOWN_ZONE): here the zone's acceleratorTypes entry for the chip."""
    name = f"projects/{P}/locations/{zone}/acceleratorTypes/v5litepod-1"
    return {"error": {"code": 404, "status": "NOT_FOUND", "message": f"Resource '{name}' was not found"}}


@pytest.mark.parametrize("where", ["create", "operation", "resource-info"])
def test_a_zone_without_the_accelerator_type_is_unsupported_and_the_next_zone_tried(script, where):
    # Before: the create's NOT_FOUND ('acceleratorTypes/v5litepod-1 was not found') read as 'not-found', which stops
    # `up` at the first zone: no other zone was tried, as if the project were wrong, though check_zone had just read
    # the zone itself. A NOT_FOUND naming the zone's acceleratorTypes is that zone's 'unsupported': the next is tried.
    from test_cloud_cloud67 import QR2, Z2, _ready_node  # noqa: F401
    from test_cloud_qa62 import NODES, Z, _op
    from test_cloud_qa66 import _spot

    nodes2 = f"/v2/projects/{P}/locations/{Z2}/nodes"
    if where == "create":
        script.answers[("POST", NODES)] = [(404, _no_type(Z))]
    elif where == "resource-info":  # gRPC's stock text; the resource named only in google.rpc.ResourceInfo
        info = {"@type": "type.googleapis.com/google.rpc.ResourceInfo", "resourceType": "acceleratorType",
                "resourceName": _no_type(Z)["error"]["message"].split("'")[1]}  # fmt: skip
        error = {"code": 404, "status": "NOT_FOUND", "message": "Requested entity was not found.", "details": [info]}
        script.answers[("POST", NODES)] = [(404, {"error": error})]
    else:
        script.answers[("POST", NODES)] = [(200, _op("op-1", done=True, error=_no_type(Z)["error"]))]
        script.states[f"{NODES}/n"] = [None]
    script.answers[("POST", nodes2)] = [(200, _op("op-2", done=True, response={}))]
    script.states[f"{nodes2}/n"] = [dict(_ready_node("n"), name=f"projects/{P}/locations/{Z2}/nodes/n")]
    result = provision.up(script.api, _spot([Z, Z2]), lambda e: None)
    assert [a.outcome for a in result.attempts] == ["unsupported", "available"], result.attempts
    assert "acceleratorTypes/v5litepod-1" in result.attempts[0].message or where == "resource-info"
    assert result.resource.zone == Z2 and [r.zone for r in records.load_all()] == [Z2]


# --- clock skew: the API's times against this machine's clock


@pytest.mark.parametrize("ahead_s", [600.0, -600.0])
def test_status_bills_from_the_api_s_create_time_by_the_api_s_clock(monkeypatch, ahead_s):
    # A READY node the API created 60 s ago by its own clock, this machine's clock `ahead_s` behind it (NTP off, a
    # VM resumed). Before: its createTime was set against this machine's clock: 10 min behind, createTime lay 9 min
    # in the future and nothing was billed ($0 and a negative elapsed); 10 min ahead, 11 min were billed for 1. Now
    # the API's own Date header (RFC 9110 section 6.6.1: when the answer was made, by the server's clock) says
    # where 'now' is on the clock createTime was written by.
    from email.utils import format_datetime

    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.scenario.test")
    zone = OK
    node = f"projects/{P}/locations/{zone}/nodes/n"

    def answer(request: httpx.Request) -> httpx.Response:
        server_now = datetime.now(UTC) + timedelta(seconds=ahead_s)
        made = (server_now - timedelta(seconds=60)).isoformat().replace("+00:00", "Z")
        body = {"name": node, "state": "READY", "createTime": made, "acceleratorType": "v5litepod-1",
                "labels": {"created-by": "onechip"}, "schedulingConfig": {"spot": True}}  # fmt: skip
        return httpx.Response(200, json=body, headers={"Date": format_datetime(server_now, usegmt=True)})

    resource = _spot_node(zone, usd_per_hour=3600.0)
    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(answer)), poll_s=0.01)
    st = provision.status(tpu, resource)
    assert st.usd_so_far is not None and 59 <= st.usd_so_far <= 63, st  # $1 a second: 60 s billed, +- Date's 1 s


def test_a_no_such_type_refusal_quoting_a_token_never_shows_it(script):
    # the refusal's text goes on to the attempt (`up --json`, the probe's stored observations): redacted where it enters
    from test_cloud_cloud67 import Z2, _ready_node
    from test_cloud_qa62 import NODES, Z, _op
    from test_cloud_qa66 import _spot

    token = "ya29.a0AfB_FAKEaccessTOKEN0123456789abcdef"
    refusal = _no_type(Z)
    refusal["error"]["message"] += f" (request Authorization: Bearer {token})"
    nodes2 = f"/v2/projects/{P}/locations/{Z2}/nodes"
    script.answers[("POST", NODES)] = [(404, refusal)]
    script.answers[("POST", nodes2)] = [(200, _op("op-2", done=True, response={}))]
    script.states[f"{nodes2}/n"] = [dict(_ready_node("n"), name=f"projects/{P}/locations/{Z2}/nodes/n")]
    result = provision.up(script.api, _spot([Z, Z2]), lambda e: None)
    assert result.attempts[0].outcome == "unsupported" and token not in result.model_dump_json()


def test_cloud_up_cli_while_another_holds_the_name_is_one_line_exit_8(fast, run):
    with records.claimed(P, "onechip-v5e-1"):  # another `cloud up` of this home, mid-claim
        rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--provisioning", "spot", "--no-limit", "--yes")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 8 and len(errors) == 1 and "onechip-v5e-1" in errors[0] and "Traceback" not in err, (rc, out, err)
    assert not any(m == "POST" for m, _, _ in fast.requests) and records.load_all() == []


@pytest.mark.parametrize(("date_behind_s", "age", "api_behind_s"), [
    (3 * 3600, "10800", 0),  # a cache's copy 3 h old, its Age said: the API's clock is this machine's
    (3 * 3600 + 600, "10800", 600),  # the same copy of an API 10 min behind: the API's clock, not the copy's
    (600, "junk", 600),  # an Age that is no delta-seconds (RFC 9111 section 1.2.2) is not read: Date alone
    (600, "", 600),  # no Age: an answer the server made just now
])  # fmt: skip
def test_the_api_s_clock_is_read_from_date_plus_age(monkeypatch, date_behind_s, age, api_behind_s):
    # A cache's answer carries the origin's Date (when the API made it) and an Age (RFC 9111 section 5.1: its
    # estimate of the time since then): the API's now is Date + Age (section 4.2.3, corrected_age_value). Before,
    # a proxy's 3-h-old copy set the API's clock 3 h behind: status billed a node granted 1 h ago nothing.
    from email.utils import format_datetime

    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.scenario.test")

    def answer(request: httpx.Request) -> httpx.Response:
        made = datetime.now(UTC) - timedelta(seconds=date_behind_s)
        headers = {"Date": format_datetime(made, usegmt=True)} | ({"Age": age} if age else {})
        return httpx.Response(200, json={"nodes": []}, headers=headers)

    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(answer)), poll_s=0.01)
    tpu.list_nodes(OK)
    behind_s = (datetime.now(UTC) - tpu.now()).total_seconds()
    assert abs(behind_s - api_behind_s) <= 2, behind_s  # Date's 1-s resolution and the answer's travel


@pytest.mark.parametrize(
    ("date", "age"), [("Fri, 31 Dec 9999 23:59:59 GMT", ""), ("Fri, 31 Dec 9999 23:59:58 GMT", "9")]
)
def test_a_date_at_the_end_of_time_is_no_clock(monkeypatch, date, age):
    # Before: TpuApi.now raised OverflowError ('date value out of range') once a second had passed after an answer
    # dated 9999-12-31T23:59:59 (a junk or fuzzed Date, RFC 9110's grammar allows it), so `cloud status` died with an
    # internal error; with an Age past it, the read itself did. Now such a clock is not taken: this machine's is.
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.scenario.test")

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"nodes": []}, headers={"Date": date} | ({"Age": age} if age else {}))

    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(answer)), poll_s=0.01)
    tpu.list_nodes(OK)
    time.sleep(1.1)  # past the Date's last second
    assert abs((tpu.now() - datetime.now(UTC)).total_seconds()) <= 2


def test_a_second_set_of_one_name_while_the_first_is_at_its_second_tpu_touches_nothing(fast):
    # `cloud up --replicas 2` twice at once, one home, one set name. Each TPU's claim is held only through its own
    # `up`: with the first at its second TPU, the second set resumed the first's TPU 0 as its own, found TPU 1 claimed,
    # and then deleted TPU 0 as 'a TPU of the set already granted' (up_set's partial-set rule), under the first.
    # Now the set's name is claimed for the whole set: the second stops before it reads or sends anything.
    from onechip import api
    from onechip.schemas.cloud import CloudUpRequest

    inside, second_done = threading.Event(), threading.Event()
    at_second: list[bool] = []

    def first_progress(event) -> None:
        if "TPU 2 of 2" in event.message:
            at_second.append(True)
        elif at_second and not inside.is_set():  # inside the second TPU's `up`, its name claimed
            inside.set()
            second_done.wait(30)

    request = CloudUpRequest.model_validate({"project": P, "zones": [OK], "provisioning": "spot", "no_limit": True,
                                             "replicas": 2, "timeout_s": 10.0})  # fmt: skip
    first: dict = {}
    thread = threading.Thread(target=lambda: first.setdefault("result", api.cloud_up(request, first_progress)))
    thread.start()
    assert inside.wait(30)
    try:
        with pytest.raises(BusyError) as info:
            api.cloud_up(request)
    finally:
        second_done.set()
        thread.join(30)
    assert "\n" not in str(info.value) and "onechip-v5e-1" in str(info.value), info.value
    assert not any(m == "DELETE" for m, _, _ in fast.requests), fast.requests
    assert [r.name for r in first["result"].resources] == ["onechip-v5e-1-0", "onechip-v5e-1-1"]
    assert {name for _, _, name in ours(fast)} == {"onechip-v5e-1-0", "onechip-v5e-1-1"}


@pytest.mark.parametrize("where", ["message", "resource-info"])
def test_a_node_the_api_no_longer_has_stays_gone_not_unsupported(monkeypatch, where):
    # the acceleratorTypes 404 rule (191ba279) reads NOT_FOUND as 'unsupported' only when it names the zone's
    # acceleratorTypes/TYPE: a GET of a deleted node, whose 404 names the node (AIP-193, in its message or its
    # google.rpc.ResourceInfo), is the node gone: status bills nothing more and says how to drop the record
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.scenario.test")
    node = f"projects/{P}/locations/{OK}/nodes/n"
    said = f"Resource '{node}' was not found" if where == "message" else "Requested entity was not found."
    info = [{"@type": "type.googleapis.com/google.rpc.ResourceInfo", "resourceName": node}]
    error = {"code": 404, "status": "NOT_FOUND", "message": said} | ({"details": info} if where != "message" else {})

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(404, json={"error": error})

    resource = _spot_node(OK, usd_per_hour=1.0)
    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(answer)), poll_s=0.01)
    st = provision.status(tpu, resource)
    assert not st.exists and st.resource.state == provision.GONE and st.ended and st.ended.startswith("gone:"), st


def _spot_node(zone: str, usd_per_hour: float) -> CloudResource:
    """The record of a spot v5e-1 node 'n' in `zone`, created 2026-12-07, with no --max-hours."""
    return CloudResource(name="n", kind="node", node_id="n", project=P, zone=zone, chip="v5e-1",
                         accelerator_type="v5litepod-1", runtime_version="v2-alpha-tpuv5-lite", provisioning="spot",
                         created_at="2026-12-07T00:00:00+00:00", usd_per_hour=usd_per_hour, no_limit=True)  # fmt: skip
