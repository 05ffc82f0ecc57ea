"""Cloud pass 69: failure paths left by pass 68. A `cloud down` of a TPU an `up` (or another down) of this home holds,
the API's clock from answers a cache may have served, a wait the API asks for far ahead, a multislice queued resource
whose nodeCount is not the API's, and record times that are this machine's clock."""

from __future__ import annotations

import os
import re
import threading
import time

import pytest
import test_cloud_qa62
from test_cloud_failures import OK, P, ours, up

from onechip import api
from onechip.cloud import records
from onechip.errors import BusyError
from onechip.schemas.cloud import CloudNameRequest

script = test_cloud_qa62.script  # the scripted fake API's fixture, found by its name here

# --- item 1: `cloud down` takes the claim `cloud up` holds


def test_down_of_a_tpu_an_up_of_this_home_holds_is_refused_naming_it_and_deletes_nothing(fast):
    # Before: `cloud down` took no lock: it deleted the TPU while the `up` that claims it still waited on it (that up
    # then failed 'deleted outside this run', or saved the record again of a TPU gone). Now down takes the same claim
    # (records.claimed) and stops at once, naming the process that holds it.
    up(zones=[OK], provisioning="spot", no_limit=True)
    assert ours(fast) == {(OK, "node", "onechip-v5e-1")}
    with records.claimed(P, "onechip-v5e-1"):  # what a running `cloud up` of that name holds, to its end
        with pytest.raises(BusyError) as info:
            api.cloud_down(CloudNameRequest(project=P, name="onechip-v5e-1"))
    said = str(info.value)
    assert "\n" not in said and "onechip-v5e-1" in said and f"pid {os.getpid()}" in said, said
    assert "nothing was deleted" in said, said
    assert not any(m == "DELETE" for m, _, _ in fast.requests), fast.requests
    assert ours(fast) == {(OK, "node", "onechip-v5e-1")}
    assert [r.name for r in records.load_all()] == ["onechip-v5e-1"]  # its record kept


def test_an_up_while_a_down_of_that_name_runs_is_refused(fast):
    # the claim is held for the whole down (its delete waited on): an up (or a second down) of the name stops at once
    up(zones=[OK], provisioning="spot", no_limit=True)
    fast.delete_s = 8.0  # the delete runs on while the down waits on it (2 s lost the race on a loaded machine)
    done: dict = {}
    thread = threading.Thread(
        target=lambda: done.setdefault("down", api.cloud_down(CloudNameRequest(project=P, name="onechip-v5e-1")))
    )
    thread.start()
    started = time.monotonic()
    while not any(m == "DELETE" for m, _, _ in fast.requests) and time.monotonic() - started < 10:
        time.sleep(0.01)
    with pytest.raises(BusyError) as second:
        api.cloud_down(CloudNameRequest(project=P, name="onechip-v5e-1"))
    with pytest.raises(BusyError):
        up(zones=[OK], provisioning="spot", no_limit=True)
    thread.join(30)
    assert f"pid {os.getpid()}" in str(second.value), second.value
    assert [m for m, _, _ in fast.requests].count("DELETE") == 1, fast.requests
    assert [m for m, _, _ in fast.requests].count("POST") == 1, fast.requests  # the first up's create alone
    assert done["down"].deleted and ours(fast) == set() and records.load_all() == []


def test_the_preview_of_a_down_is_refused_before_anyone_is_asked(fast, run):
    # the CLI shows what it would delete and asks; a down it would then refuse is said before the question
    up(zones=[OK], provisioning="spot", no_limit=True)
    with records.claimed(P, "onechip-v5e-1"):
        rc, out, err = run("cloud", "down", "--project", P, "--name", "onechip-v5e-1")
    assert rc == BusyError.exit_code and f"pid {os.getpid()}" in err and "Traceback" not in err, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert not any(m == "DELETE" for m, _, _ in fast.requests) and len(records.load_all()) == 1


# --- item 3: a wait the API asks for far ahead


@pytest.mark.parametrize(
    ("retry_after", "delay", "said"),
    [
        (
            "Fri, 31 Dec 2066 23:59:59 GMT",
            None,
            "2276953822 s (its Retry-After or RetryInfo), about 26,353 days 15 h, would",
        ),
        ("30", "2299620000.5s", "2299620001 s (its Retry-After or RetryInfo), about 26,615 days 23 h, would"),
        ("7200", None, "7200 s (its Retry-After or RetryInfo), about 2 h 0 min, would"),
    ],
)
def test_a_wait_asked_far_ahead_is_said_in_whole_seconds_and_days(monkeypatch, retry_after, delay, said):
    # Before: a RetryInfo retryDelay of '2299620000.5s' was said '2.29962e+09 s' (a float's exponent), and a
    # Retry-After date in 2066 only as '2276953822 s'. The wait passes the call's deadline: refused as the API's wait.
    import httpx

    from onechip.cloud.tpu_api import TpuApi

    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")
    error: dict = {"code": 503, "status": "UNAVAILABLE", "message": "try later"}
    if delay:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
    headers = {"Retry-After": retry_after, "Date": "Sun, 06 Nov 1994 08:49:37 GMT"}  # RFC 9110's example instant
    answer = httpx.Response(503, headers=headers, json={"error": error})
    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(lambda r: answer)), poll_s=0.01,
                 on_retry=lambda line: None)  # fmt: skip
    with pytest.raises(Exception) as info:
        tpu.list_nodes(OK)
    line = str(info.value)
    assert "\n" not in line and f"the API asked to wait {said}" in line, line
    assert "e+" not in line and "would pass the 30 s deadline" in line, line


# --- item 4: a multislice queued resource whose nodeCount is not the API's

# QueuedResource.Tpu.NodeSpec.MultiNodeParams (TPU API v2alpha1; google-cloud-tpu 1.18.4,
# cloud.google.com/python/docs/reference/tpu/1.18.4/google.cloud.tpu_v2alpha1.types.QueuedResource.Tpu.NodeSpec.
# MultiNodeParams): 'This field must be populated in case of multi-node requests instead of node_id'; node_count
# 'Required ... This needs to be > 1'. A spec with multiNodeParams is a multi-node request whatever its count says; a
# count of 0 is what proto3's JSON leaves out, so 0 and missing read the same.
BAD_COUNTS = [0, 1, "1", None]


def _odd_multislice(count) -> dict:
    from test_cloud_cloud67 import _multislice

    body = _multislice()
    params = body["tpu"]["nodeSpec"][0]["multiNodeParams"]
    params.pop("nodeCount")
    if count is not None:
        params["nodeCount"] = count
    return body


@pytest.mark.parametrize("count", BAD_COUNTS)
def test_a_multislice_queued_resource_with_a_count_the_api_does_not_take_is_never_one_node(count):
    # Before: nodeCount 0 / missing named no node and 1 named ms-0 alone, so the request read as one node's: status
    # read a node under its own name (404: 'no IP'), and `up` resumed it as the chip asked for
    from onechip.cloud import provision

    body = _odd_multislice(count)
    line = provision.multislice_line(body)
    assert "multislice" in line and "nodeCount" in line and "\n" not in line, line
    assert provision.qr_node_ids(body) == []  # its nodes cannot be named from a count the API does not take


@pytest.mark.parametrize("count", BAD_COUNTS)
def test_up_does_not_resume_a_multislice_queued_resource_whose_count_is_odd(script, count):
    from test_cloud_cloud67 import QR, _flex

    from onechip.cloud import provision
    from onechip.errors import ConfigError

    script.made.add(f"{QR}/q")
    script.states[f"{QR}/q"] = [_odd_multislice(count)]
    with pytest.raises(ConfigError) as info:
        provision.up(script.api, _flex(), lambda e: None)
    assert "multislice" in str(info.value) and "\n" not in str(info.value), info.value
    assert not any(m in ("POST", "DELETE") for m, _ in script.sent), script.sent


@pytest.mark.parametrize("count", BAD_COUNTS)
def test_down_by_zone_takes_the_nodes_of_a_multislice_with_an_odd_count_as_its_own(script, count):
    # its nodes PREFIX-0, PREFIX-1 (labelled as its node spec is) were listed as nodes of their own and deleted apart
    from test_cloud_cloud67 import NODES, PARENT, QR, Z, _ready_node

    from onechip.cloud import provision

    listing = {"queuedResources": [dict(_odd_multislice(count), name=f"{PARENT}/queuedResources/q")]}
    script.answers[("GET", QR)] = [(200, listing)]
    script.answers[("GET", NODES)] = [(200, {"nodes": [_ready_node("ms-0"), _ready_node("ms-1")]})]
    chosen = provision.targets(script.api, CloudNameRequest(project=P, zones=[Z]), [])
    assert [(r.kind, r.name) for r in chosen] == [("queued-resource", "q")], chosen


# --- item 2: the API's clock from answers a cache may have served without an Age


def _api_with_dates(monkeypatch, behind_s: list[float]):
    """A TpuApi whose k-th answer carries a Date `behind_s[k]` s behind this machine's clock, and no Age."""
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    import httpx

    from onechip.cloud.tpu_api import TpuApi

    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.scenario.test")
    left = list(behind_s)

    def answer(request: httpx.Request) -> httpx.Response:
        made = datetime.now(UTC) - timedelta(seconds=left.pop(0))
        return httpx.Response(200, json={"nodes": []}, headers={"Date": format_datetime(made, usegmt=True)})

    return TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(answer)), poll_s=0.01)


def _behind_s(tpu) -> float:
    from datetime import UTC, datetime

    return (datetime.now(UTC) - tpu.now()).total_seconds()


def test_one_answer_a_cache_served_without_an_age_does_not_swing_the_api_s_clock(monkeypatch):
    # RFC 9111 section 5.1: 'lack of an Age header field does not imply the origin was contacted' (an HTTP/1.0 cache
    # sends none). The API's clock 600 s behind this machine's, then one answer a cache kept 3 h, no Age. Before: the
    # offset was the last answer's alone, so the API's clock jumped 3 h back (a node granted 1 h ago billed $0) and
    # back again at the next answer. Now the median of the last answers: one stale copy among them moves nothing.
    tpu = _api_with_dates(monkeypatch, [600, 600, 600, 600 + 3 * 3600, 600])
    for _ in range(3):
        tpu.list_nodes(OK)
    assert abs(_behind_s(tpu) - 600) < 3, _behind_s(tpu)
    tpu.list_nodes(OK)  # the cache's copy
    assert abs(_behind_s(tpu) - 600) < 3, _behind_s(tpu)
    tpu.list_nodes(OK)
    assert abs(_behind_s(tpu) - 600) < 3, _behind_s(tpu)


def test_a_clock_that_really_moved_is_taken_within_a_few_answers(monkeypatch):
    # this machine's clock stepped (NTP, a VM resumed): the API's answers all say so from then on
    tpu = _api_with_dates(monkeypatch, [0, 0, 0, 900, 900, 900])
    for _ in range(6):
        tpu.list_nodes(OK)
    assert abs(_behind_s(tpu) - 900) < 3, _behind_s(tpu)


def test_the_second_answer_a_cache_served_does_not_swing_it_either(monkeypatch):
    # of two answers, the one with the later Date: a cache's copy only ever carries an older one
    tpu = _api_with_dates(monkeypatch, [600, 600 + 3 * 3600])
    tpu.list_nodes(OK)
    tpu.list_nodes(OK)
    assert abs(_behind_s(tpu) - 600) < 3, _behind_s(tpu)


# --- item 6: records whose created_at is this machine's clock


def _ahead_api(monkeypatch, ahead_s: float):
    """A TpuApi whose answers (a READY spot node 'n', createTime 60 s ago by the API's clock) are dated `ahead_s` s
    ahead of this machine's clock."""
    from datetime import UTC, datetime, timedelta
    from email.utils import format_datetime

    import httpx

    from onechip.cloud.tpu_api import TpuApi

    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.scenario.test")

    def answer(request: httpx.Request) -> httpx.Response:
        server_now = datetime.now(UTC) + timedelta(seconds=ahead_s)
        node = {"name": f"projects/{P}/locations/{OK}/nodes/n", "state": "READY", "acceleratorType": "v5litepod-1",
                "labels": {"created-by": "onechip"}, "schedulingConfig": {"spot": True},
                "createTime": (server_now - timedelta(seconds=60)).isoformat()}  # fmt: skip
        return httpx.Response(200, json=node, headers={"Date": format_datetime(server_now, usegmt=True)})

    return TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(answer)), poll_s=0.01)


def _old_record(tmp_path):
    """A record as an onechip before 2026-12-07 wrote it (no `times_by`): created_at by this machine's clock."""
    from test_cloud_cloud68 import _spot_node

    from onechip.schemas.cloud import CloudResource

    text = _spot_node(OK, usd_per_hour=1.0).model_dump(mode="json")
    text.pop("times_by", None)
    return CloudResource.model_validate(text)


def test_an_old_record_s_times_are_said_to_be_this_machine_s_clock_where_status_shows_them(monkeypatch, tmp_path):
    # Before cloud68 created_at / granted_at were stamped by this machine's clock; status now reads them against the
    # API's: with this machine 10 min behind the API's, such a record's elapsed time (and a node's $ so far) is 10 min
    # off, and nothing said so. It is not rewritten (the skew then is not known); status says it.
    from onechip.cloud import provision

    old = _old_record(tmp_path)
    assert old.times_by == "unsaid"
    st = provision.status(_ahead_api(monkeypatch, 600.0), old)
    said = [w for w in st.warnings if "clock" in w]
    assert len(said) == 1 and "created_at" in said[0] and "\n" not in said[0], st.warnings
    assert re.search(r"\b(599|600) s behind the API's", said[0]), said  # the Date's whole seconds: 599.x or 600
    assert st.resource.times_by == "unsaid" and st.resource.created_at == old.created_at  # not rewritten


def test_a_record_made_now_says_whose_clock_and_status_says_nothing_of_it(monkeypatch):
    from test_cloud_cloud68 import _spot_node

    from onechip.cloud import provision

    made = _spot_node(OK, usd_per_hour=1.0)
    assert made.times_by == "api"
    st = provision.status(_ahead_api(monkeypatch, 600.0), made)
    assert not [w for w in st.warnings if "clock" in w], st.warnings


def test_an_old_record_is_not_flagged_when_this_machine_s_clock_is_the_api_s(monkeypatch, tmp_path):
    from onechip.cloud import provision

    st = provision.status(_ahead_api(monkeypatch, 0.0), _old_record(tmp_path))
    assert not [w for w in st.warnings if "clock" in w], st.warnings


# --- item 5: a queued resource's node not there yet costs no second read of the queued resource in one poll


def test_a_granted_requests_node_not_there_yet_is_not_read_twice_in_one_poll(script):
    # The queued resource just read ACTIVE, its node 404 (a create's lag): the same poll read the queued resource
    # again (`_still_granted`) at once, a GET whose answer it had from a moment before. Each later poll reads it.
    from test_cloud_cloud67 import NODES, QR, _flex, _op, _qr, _ready_node

    from onechip.cloud import provision

    script.answers[("POST", QR)] = [(200, _op("op-1", done=True, response={}))]
    script.states[f"{QR}/q"] = [_qr("WAITING_FOR_RESOURCES"), _qr("ACTIVE")]
    script.states[f"{NODES}/q-node"] = [None, None, _ready_node("q-node")]
    provision.up(script.api, _flex(), lambda e: None)
    after = [p.rsplit("/", 1)[-1] for m, p in script.sent[[m for m, _ in script.sent].index("POST") :] if m == "GET"]
    # read ACTIVE, its node 404 (that poll read nothing more), then each poll: its node (404), the request, its node
    assert after == ["q", "q", "q-node", "q-node", "q", "q-node"], after


def test_status_of_a_multislice_request_reads_no_node(script):
    # status says it reads none of a multislice request's nodes; it read one all the same, under the request's own
    # name (onechip's one-node default), a GET that could only answer 404, in every status and down
    from test_cloud_cloud67 import QR, Z, _multislice

    from onechip.cloud import provision

    script.made.add(f"{QR}/q")
    script.states[f"{QR}/q"] = [_multislice("ACTIVE")]
    st = provision.status(script.api, provision._from_api(script.api, Z, _multislice("ACTIVE"), "queued-resource"))
    assert any("multislice" in w for w in st.warnings), st.warnings
    assert [p for m, p in script.sent if "/nodes" in p] == [], script.sent
