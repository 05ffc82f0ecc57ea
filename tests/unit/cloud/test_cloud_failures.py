"""`onechip cloud` on the failure paths, against the loopback fake TPU API (issue 24, and issue 25's cloud
items): every state of both state enums, every error class at every step of up / status / down, the three
scenarios of issue 24, Ctrl-C at any point; after each, nothing of onechip's is untracked and `down` deletes
exactly what onechip created (a foreign node placed beside it survives every run)."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from fakes import dead_endpoints
from fakes.clock import SleepClock
from fakes.tpu_api import Fault
from onechip import api
from onechip.cloud import provision, records, tpu_api
from onechip.errors import CloudError, Interrupted, OnechipError
from onechip.schemas.cloud import CloudNameRequest, CloudStatus, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"
FOREIGN = f"projects/{P}/locations/{OK}/nodes/someone-elses"

# The full state enums of the TPU API's discovery documents (googleapis/google-api-go-client
# tpu/v2alpha1/tpu-api.json at 123f55c3: QueuedResourceState.state, Node.state), copied here so that a
# state missing from provision's tables fails this test.
QR_STATES = ["STATE_UNSPECIFIED", "CREATING", "ACCEPTED", "PROVISIONING", "FAILED", "DELETING", "ACTIVE",
             "SUSPENDING", "SUSPENDED", "WAITING_FOR_RESOURCES"]  # fmt: skip
NODE_STATES = ["STATE_UNSPECIFIED", "CREATING", "READY", "RESTARTING", "REIMAGING", "DELETING", "REPAIRING",
               "STOPPED", "STOPPING", "STARTING", "PREEMPTED", "TERMINATED", "HIDING", "HIDDEN", "UNHIDING",
               "UNKNOWN"]  # fmt: skip
ERRORS = [400, 403, 404, 409, 429, 500, 503, "timeout", "html", "truncated", "shape", "empty", "retry-after"]


@pytest.fixture
def fast(fake_api, monkeypatch):
    """The fake at its quickest: short waits and polls, short grace periods. The client's timeout stays a bound on
    a hang (10 s): at 0.3 s, a loaded machine's late answer to a one-time fault (a 403) was given up on, the fault
    spent, and the test read on past it (flaky); a test of an answer that never comes shortens it (`gives_up_fast`)."""
    fake_api.create_s = fake_api.wait_s = fake_api.provisioning_s = 0.02
    fake_api.hang_s = 30.0  # a "timeout" fault answers once the client gave up: this bounds a client that never does
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    monkeypatch.setenv("ONECHIP_CLOUD_TIMEOUT_S", "10")
    monkeypatch.setattr(provision, "QUEUE_GRACE_S", 0.2)
    monkeypatch.setattr(provision, "CREATE_GRACE_S", 0.5)
    fake_api.nodes[FOREIGN] = {"name": FOREIGN, "state": "READY", "acceleratorType": "v5litepod-1", "labels": {}}
    return fake_api


def gives_up_fast(kind: object, monkeypatch) -> None:
    """A "timeout" fault is answered only once the client gave up: give up after 0.3 s, not `fast`'s 10 s."""
    if kind == "timeout":
        monkeypatch.setenv("ONECHIP_CLOUD_TIMEOUT_S", "0.3")


def up(**kw):
    return api.cloud_up(CloudUpRequest.model_validate({"project": P, "valid_until_s": "1s", "timeout_s": 1.0, **kw}))


def ours(fake) -> set[tuple[str, str, str]]:
    """(zone, kind, name) of every labelled resource the fake holds (a queued resource's node goes with it)."""
    found = set()
    qr_nodes = set()
    for key, qr in fake.queued.items():
        if qr["_spec"]["node"].get("labels", {}).get("created-by") == "onechip":
            found.add((key.split("/")[3], "queued-resource", key.rsplit("/", 1)[-1]))
            qr_nodes.add(f"{qr['_spec']['parent']}/nodes/{qr['_spec']['nodeId']}")
    for key, node in fake.nodes.items():
        if key not in qr_nodes and node.get("labels", {}).get("created-by") == "onechip":
            found.add((key.split("/")[3], "node", key.rsplit("/", 1)[-1]))
    return found


def assert_tracked_then_down(fake) -> None:
    """Everything of ours in the fake is recorded; `cloud down` then deletes it all, and only it."""
    fake.faults.clear()
    recorded = {(r.zone, r.kind, r.name) for r in records.load_all()}
    assert ours(fake) <= recorded, f"untracked: {ours(fake) - recorded}"
    api.cloud_down(CloudNameRequest(project=P))
    assert ours(fake) == set()
    assert FOREIGN in fake.nodes  # never ours, never deleted
    assert records.load_all() == []


def test_state_tables_hold_every_state_of_both_enums():
    assert sorted(provision.QR_PHASE) == sorted(QR_STATES)
    assert sorted(provision.NODE_PHASE) == sorted(NODE_STATES)


@pytest.mark.parametrize("state", QR_STATES)
def test_up_over_a_queued_resource_of_ours_in_every_state(fast, state):
    fast.put("queued-resource", OK, "onechip-v5e-1", state)
    try:
        result = up(zones=[OK])
    except CloudError as exc:
        assert provision.phase("queued-resource", state) == "waiting", exc  # a wait that timed out, said
        assert "may exist" in str(exc) and "onechip cloud down" in str(exc)
    else:
        assert result.resource.state == "READY"
        creates = [p for m, p, _ in fast.requests if m == "POST"]
        # alive (waiting or ready): resumed, no second create; ended: deleted, then created again
        assert result.reused == (provision.phase("queued-resource", state) in ("waiting", "ready") and not creates)
        if provision.phase("queued-resource", state) in ("ended", "deleting"):
            assert len(creates) == 1
    assert_tracked_then_down(fast)


@pytest.mark.parametrize("state", NODE_STATES)
def test_up_over_a_node_of_ours_in_every_state(fast, state):
    fast.put("node", OK, "onechip-v5e-1", state, spot=True)
    try:
        result = up(zones=[OK], provisioning="spot", max_hours=1.0)
    except CloudError as exc:
        assert provision.phase("node", state) == "waiting", exc
        assert "may exist" in str(exc)
    else:
        assert result.resource.state == "READY"
        ended = provision.phase("node", state) in ("ended", "deleting")
        assert result.reused is not ended
    assert_tracked_then_down(fast)


def test_a_foreign_resource_with_the_name_is_refused_in_one_line(fast, run):
    fast.put("queued-resource", OK, "demo-qr", "ACTIVE", labelled=False)
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--name", "demo-qr", "--yes")
    assert rc == 2 and err.count("\n") == 1
    assert "already has a TPU queued-resource named demo-qr that onechip did not create" in err
    assert not [m for m, _, _ in fast.requests if m in ("POST", "DELETE")]


# --- every error class at every step

UP_STEPS = {  # step of `up` -> (method, path regex) of its requests
    "create": ("POST", r"/queuedResources\?"),
    "poll": ("GET", r"/queuedResources/onechip-v5e-1$"),
    "operation": ("GET", r"/operations/"),
    "node": ("GET", r"/nodes/onechip-v5e-1-node$"),
    "cleanup": ("DELETE", r"/queuedResources/"),
    "cleanup-check": ("GET", r"/queuedResources/onechip-v5e-1$"),
}
SPOT_STEPS = {"create": ("POST", r"/nodes\?"), "operation": ("GET", r"/operations/"),
              "poll": ("GET", r"/nodes/onechip-v5e-1$")}  # fmt: skip
LATER_STEPS = {  # status and down
    "list-queued": ("GET", r"/queuedResources(\?|$)"),
    "list-nodes": ("GET", r"/nodes(\?|$)"),
    "get": ("GET", r"/queuedResources/onechip-v5e-1$"),
    "delete": ("DELETE", r"/queuedResources/onechip-v5e-1"),
}


@pytest.mark.parametrize("error", ERRORS)
@pytest.mark.parametrize("step", list(UP_STEPS))
def test_flex_up_with_an_error_at_every_step(fast, step, error, monkeypatch):
    """us-central1-b is stocked out for flex (FAILED, code 8, after the wait: its request is cleaned up),
    us-west4-a grants it; one error at `step`."""
    gives_up_fast(error, monkeypatch)
    fast.zones["us-central1-b"].flex = "stockout"
    method, path = UP_STEPS[step]
    fast.faults.append(Fault(method, path, error, times=1))
    try:
        result = up(zones=["us-central1-b", OK])
        assert result.resource.zone == OK
    except OnechipError as exc:
        assert "\n" not in str(exc) and "Traceback" not in str(exc)
    assert_tracked_then_down(fast)


@pytest.mark.parametrize("error", ERRORS)
@pytest.mark.parametrize("step", list(SPOT_STEPS))
def test_spot_up_with_an_error_at_every_step(fast, step, error, monkeypatch):
    gives_up_fast(error, monkeypatch)
    method, path = SPOT_STEPS[step]
    fast.faults.append(Fault(method, path, error, times=1))
    try:
        up(zones=["europe-west4-a", OK], provisioning="spot", max_hours=1.0)
    except OnechipError as exc:
        assert "\n" not in str(exc)
    assert_tracked_then_down(fast)


@pytest.mark.parametrize("error", ERRORS)
@pytest.mark.parametrize("step", list(LATER_STEPS))
def test_status_and_down_with_an_error_at_every_step(fast, step, error, monkeypatch):
    gives_up_fast(error, monkeypatch)
    up(zones=[OK])
    method, path = LATER_STEPS[step]
    for job in (api.cloud_status, api.cloud_down):
        fast.faults[:] = [Fault(method, path, error, times=1)]
        try:
            job(CloudNameRequest(project=P))
        except OnechipError as exc:
            assert "\n" not in str(exc)
        recorded = {(r.zone, r.kind, r.name) for r in records.load_all()}
        assert ours(fast) <= recorded
    assert_tracked_then_down(fast)


def test_a_read_error_that_persists_stops_up_and_keeps_the_record(fast):
    fast.faults.append(Fault("GET", rf"{OK}/queuedResources/onechip-v5e-1$", 503, times=1000, after=1))  # not claim's
    with pytest.raises(CloudError) as info:
        up(zones=[OK, "us-central1-b"])
    assert info.value.reason == "transient"
    assert "may exist in us-west4-a" in str(info.value) and "onechip cloud down --name onechip-v5e-1" in str(info.value)
    assert not any("us-central1-b" in p for m, p, _ in fast.requests if m == "POST")  # no failover on a read error
    assert_tracked_then_down(fast)


# --- the three scenarios of issue 24


def test_429_while_polling_is_retried_and_abandons_nothing(fast):
    fast.faults.append(Fault("GET", r"/queuedResources/onechip-v5e-1$", 429, times=3))
    result = up(zones=[OK, "us-central1-b"])
    assert result.resource.zone == OK and [a.outcome for a in result.attempts] == ["available"]
    assert len([p for m, p, _ in fast.requests if m == "POST"]) == 1  # one create: no failover, nothing orphaned
    assert_tracked_then_down(fast)


def test_failed_at_valid_until_with_code_4_tries_the_next_zone(fast):
    result = up(zones=["us-central1-b", OK])  # us-central1-b: FAILED with code 4 at valid-until
    assert [(a.zone, a.outcome, a.code) for a in result.attempts] == [("us-central1-b", "expired", 4),
                                                                     (OK, "available", None)]  # fmt: skip
    assert not [k for k in fast.queued if "us-central1-b" in k]  # the failed request was deleted
    assert_tracked_then_down(fast)


def test_flex_start_stockout_in_the_create_operation_fails_over(fast):
    fast.zones["us-central1-b"].flex = "op-stockout"
    result = up(zones=["us-central1-b", OK])
    assert [(a.outcome, a.code) for a in result.attempts] == [("stockout", 8), ("available", None)]
    assert_tracked_then_down(fast)


def test_a_suspended_run_whose_name_is_used_again(fast, run):
    fast.run_s = 0.2  # the run ends: the queued resource turns SUSPENDED, its node deleted
    up(zones=[OK], name="demo-qr")
    (qr,) = fast.queued.values()
    for _ in range(100):  # the fake moves on when asked
        if qr["state"]["state"] == "SUSPENDED":
            break
        (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert qr["state"]["state"] == "SUSPENDED"
    fast.run_s = None
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--name", "demo-qr", "--valid-until", "1m",
                       "--yes", "--json")  # fmt: skip
    assert rc == 0, err
    assert "deleting queued-resource demo-qr in us-west4-a (SUSPENDED)" in err
    assert json.loads(out)["reused"] is False
    assert len([p for m, p, _ in fast.requests if m == "POST"]) == 2
    assert [r.name for r in records.load_all()] == ["demo-qr"]
    assert_tracked_then_down(fast)


# --- Ctrl-C anywhere


@pytest.mark.parametrize("nth", [1, 2, 3, 5, 8, 13])
def test_ctrl_c_at_any_point_then_down_deletes_what_onechip_made(fast, monkeypatch, nth):
    fast.zones["us-central1-b"].flex = "stockout"
    calls = [0]
    real_sleep = provision.time.sleep

    def sleep(seconds):
        calls[0] += 1
        if calls[0] == nth:
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr(provision.time, "sleep", sleep)
    try:
        up(zones=["us-central1-b", OK])
    except Interrupted as exc:
        assert "onechip cloud down" in str(exc)
    monkeypatch.setattr(provision.time, "sleep", real_sleep)
    assert_tracked_then_down(fast)


def test_a_sequence_of_failed_ups_and_ctrl_c_then_one_down(fast, monkeypatch):
    """Failures in a row, each leaving something different behind; one `down` deletes all of ours."""
    fast.zones["us-central1-b"].flex = "stockout"
    fast.faults.append(Fault("GET", rf"{OK}/queuedResources/first$", 503, times=1000, after=1))
    with pytest.raises(CloudError):  # a read that keeps failing: stops, recorded
        up(zones=[OK], name="first")
    fast.faults.clear()
    fast.faults.append(Fault("GET", r"/nodes/second$", "html", times=1000, after=1))
    with pytest.raises(CloudError):  # spot node created, then the endpoint turns into a web page
        up(zones=["asia-east1-c"], name="second", provisioning="spot", max_hours=1.0)
    fast.faults.clear()
    real_sleep = provision.time.sleep

    def interrupt(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(provision.time, "sleep", interrupt)
    with pytest.raises(Interrupted):  # Ctrl-C while the stocked-out zone's request waits
        up(zones=["us-central1-b", OK], name="third")
    monkeypatch.setattr(provision.time, "sleep", real_sleep)
    assert {name for _, _, name in ours(fast)} == {"first", "second", "third"}
    assert_tracked_then_down(fast)


# --- status and down see every zone, every page, both record layouts


def test_down_sees_every_page_and_every_zone_used(fast):
    fast.page_size = 1
    up(zones=[OK])
    up(zones=["asia-east1-c"], name="second", provisioning="on-demand", no_limit=True)
    fast.put("node", OK, "made-by-onechip-elsewhere", "READY")  # labelled, no record here
    fast.put("node", OK, "and-another", "READY")
    # without --zone only what this onechip recorded: a label can be copied, or be another user's onechip
    # in the same project (a new-user test deleted such a TPU with `cloud down --yes`)
    targets = {(t.zone, t.name) for t in api.cloud_down_targets(CloudNameRequest(project=P))}
    assert targets == {(OK, "onechip-v5e-1"), ("asia-east1-c", "second")}
    # a zone named with --zone is swept for every labelled resource, across pages
    swept = CloudNameRequest(project=P, zones=[OK, "asia-east1-c"])
    targets = {(t.zone, t.name) for t in api.cloud_down_targets(swept)}
    assert targets == {(OK, "onechip-v5e-1"), ("asia-east1-c", "second"), (OK, "made-by-onechip-elsewhere"),
                       (OK, "and-another")}  # fmt: skip
    assert any("pageToken=" in p for m, p, _ in fast.requests if m == "GET")
    result = api.cloud_down(swept)
    assert len(result.deleted) == 4 and ours(fast) == set() and FOREIGN in fast.nodes


def test_two_zones_one_name_are_two_records(fast):
    up(zones=[OK], provisioning="spot", max_hours=1.0)
    up(zones=["asia-east1-c"], provisioning="on-demand", max_hours=1.0)
    assert sorted(r.zone for r in records.load_all()) == ["asia-east1-c", OK]
    assert_tracked_then_down(fast)


def test_an_old_record_file_is_still_read_and_deleted(fast):
    result = up(zones=[OK])
    for path in (records.onechip_home() / "cloud" / "resources").rglob("*.json"):
        path.unlink()
    old = records.onechip_home() / "cloud" / "resources" / "onechip-v5e-1.json"
    old.write_text(result.resource.model_dump_json(), encoding="utf-8")
    assert [r.name for r in records.load_all()] == ["onechip-v5e-1"]
    api.cloud_down(CloudNameRequest())
    assert not old.exists() and not fast.queued


def test_status_of_a_request_never_granted_has_no_deadline_and_no_ip(fast, run, monkeypatch):
    fast.zones[OK].flex = "never"  # a refused read stops up while the request waits (an outage is polled through)
    # on the clock that moves only when the waits sleep: on a loaded machine the 1-s valid-until passed before the
    # refused read, and the request, expired, was deleted (a flaky status)
    SleepClock(monkeypatch, provision, tpu_api)
    fast.faults.append(Fault("GET", r"/queuedResources/onechip-v5e-1$", 403, times=1000, after=2))
    with pytest.raises(CloudError):
        up(zones=[OK])
    fast.faults.clear()
    rc, out, err = run("cloud", "status")
    assert rc == 0, err
    text = " ".join(out.split())
    assert "WAITING_FOR_RESOURCES" in text and "no IP yet" in text
    assert "billing ends" not in text and "IP None" not in text
    assert_tracked_then_down(fast)


# --- an endpoint that is not the TPU API


@pytest.mark.parametrize("kind", ["html", "truncated", "shape", "empty"])
def test_an_endpoint_that_is_not_the_tpu_api_is_said_in_one_line(fast, run, kind):
    up(zones=[OK])
    fast.faults.append(Fault("GET", r".", kind, times=10_000))
    for argv in (["status"], ["down", "--yes"], ["up", "--project", P, "--zone", OK, "--name", "other", "--yes"]):
        rc, out, err = run("cloud", *argv)
        assert rc == 7, (argv, out, err)
        # a cut-short body is read again: status, down and up tell each retry as a progress line before the one
        # error line (status and down were silent before)
        told = [line for line in err.splitlines() if "; retry " in line]
        said = [line for line in err.splitlines() if "; retry " not in line]
        assert len(said) == 1 and "does not answer like the Cloud TPU API" in said[0], (argv, err)
        assert not told or kind in ("truncated", "empty"), (argv, err)  # an empty 200 is read again, as a cut one
    assert_tracked_then_down(fast)


# --- names and bounds (issue 25)


@pytest.mark.parametrize(
    "argv",
    [
        ["--name", "../../engine"],
        ["--zone", "../../q/locations/us-west4-a", "--project", "pppppp"],
        ["--project", "p"],
        ["--project", "../x"],
        ["--name", "UPPER"],
        ["--provisioning", "spot", "--max-hours", "1e308"],
        ["--valid-until", "1e308"],
    ],
)
def test_bad_names_and_unbounded_durations_are_refused_before_any_call(fast, run, argv):
    home = records.onechip_home()
    rc, out, err = run("cloud", "up", *(["--project", P] if "--project" not in argv else []),
                       *(["--zone", OK] if "--zone" not in argv else []), *argv, "--yes")  # fmt: skip
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert fast.requests == [] and not (home / "engine.json").exists()


def test_status_with_a_zone_that_is_not_one(fast, run):
    up(zones=[OK])
    rc, out, err = run("cloud", "status", "--zone", "bogus-zone-9")
    assert rc == 2 and "not a zone (like us-west4-a) (got 'bogus-zone-9')" in err
    rc, out, err = run("cloud", "status", "--zone", "asia-east2-c")
    assert rc == 0
    assert "nothing of onechip's in asia-east2-c; it has 1 elsewhere: onechip-v5e-1 (us-west4-a)" in " ".join(
        out.split()
    )
    assert_tracked_then_down(fast)


def test_status_says_what_is_elsewhere_from_the_records_it_read(fast, run, monkeypatch):
    """`cloud status --zone Z` finding nothing named what onechip has elsewhere from a second read of every record
    file (api.cloud_recorded); it is now CloudStatuses.elsewhere, from the one read status made (MCP returns it)."""
    up(zones=[OK])
    reads = []
    read_all = records.read_all
    monkeypatch.setattr(records, "read_all", lambda: reads.append(1) or read_all())
    rc, out, err = run("cloud", "status", "--zone", "asia-east2-c")
    assert rc == 0, err
    assert "it has 1 elsewhere: onechip-v5e-1 (us-west4-a)" in " ".join(out.split())
    assert len(reads) == 1
    statuses = api.cloud_statuses(CloudNameRequest(zones=["asia-east2-c"]))
    assert statuses.resources == [] and [(r.name, r.zone) for r in statuses.elsewhere] == [("onechip-v5e-1", OK)]
    assert api.cloud_statuses(CloudNameRequest()).elsewhere == []  # no filter: nothing is outside it
    assert_tracked_then_down(fast)


@pytest.mark.parametrize(
    "fields",
    [{"no_limit": "no"}, {"no_limit": 0}, {"max_hours": True}, {"max_hours": "2"}, {"max_run_duration_s": True},
     {"timeout_s": "60"}, {"name": "../../engine"}, {"zones": ["../../q/locations/us-west4-a"]}],
)  # fmt: skip
def test_cloud_up_request_types_are_strict(fields):
    base = {"project": P, "zones": [OK], "provisioning": "spot", "max_hours": 1.0}
    with pytest.raises(ValueError):
        CloudUpRequest.model_validate({**base, **fields})


def test_a_record_with_a_huge_max_hours_does_not_break_status(fast):
    result = up(zones=[OK], provisioning="spot", max_hours=1.0)
    resource = result.resource.model_copy(update={"max_hours": 1e308})
    records.save(resource)
    (st,) = api.cloud_status(CloudNameRequest())
    assert st.exists and st.deadline is not None
    assert_tracked_then_down(fast)


def test_refused_create_needs_no_cleanup(fast):
    with pytest.raises(ValueError, match="not a TPU resource name"):
        up(zones=[OK], name="Bad")
    assert fast.requests == []


# --- the real API's semantics: slow deletes, rate limits, 401s, conflicts, paging, partial downs


def test_deletes_that_take_time_are_waited_out_at_failover_and_down(fast):
    """The real API's delete is an operation: the resource shows DELETING until it is done, then is gone."""
    fast.delete_s = 0.15
    fast.zones["us-central1-b"].flex = "stockout"
    result = up(zones=["us-central1-b", OK])  # the FAILED request in us-central1-b is deleted (slowly) first
    assert result.resource.zone == OK
    assert not [k for k in fast.queued if "us-central1-b" in k]
    assert any(m == "GET" and "/operations/" in p for m, p, _ in fast.requests)  # the delete was waited on
    assert_tracked_then_down(fast)


def test_a_rate_limited_create_is_sent_again_and_makes_one_tpu(fast):
    fast.faults.append(Fault("POST", r"/queuedResources\?", "rate-limit", times=2))
    result = up(zones=[OK, "us-central1-b"])
    assert result.resource.zone == OK and [a.outcome for a in result.attempts] == ["available"]
    assert len([p for m, p, _ in fast.requests if m == "POST"]) == 3 and len(fast.queued) == 1
    assert_tracked_then_down(fast)


def test_a_rate_limit_that_persists_is_no_quota_and_no_failover(fast, monkeypatch):
    monkeypatch.setattr("onechip.cloud.tpu_api.RETRIES", 2)
    fast.faults.append(Fault("POST", r"/nodes\?", "rate-limit", times=100))
    with pytest.raises(CloudError) as info:
        up(zones=[OK, "asia-east1-c"], provisioning="spot", max_hours=1.0)
    assert info.value.reason == "rate-limit" and "per minute" in str(info.value)
    assert not any("asia-east1-c" in p for m, p, _ in fast.requests if m == "POST")  # the project's limit, not a zone's
    assert records.load_all() == [] and ours(fast) == set()  # refused: nothing made, nothing recorded


class _StubCredentials:
    """google-auth credentials as TpuApi sees them: before_request puts the token on, refresh gets a new one."""

    def __init__(self, refresh_error: Exception | None = None):
        self.token, self.refreshes, self.refresh_error = "ya29.first-token-0123456789", 0, refresh_error

    def before_request(self, request, method, url, headers):
        headers["authorization"] = f"Bearer {self.token}"

    def refresh(self, request):
        self.refreshes += 1
        if self.refresh_error is not None:
            raise self.refresh_error
        self.token = f"ya29.new-token-{self.refreshes}-0123456789"


def _api_with(creds):
    from onechip.cloud.tpu_api import TpuApi

    tpu = TpuApi(P)
    tpu.credentials._creds = creds  # noqa: SLF001 (ADC stands in for the endpoint override's none)
    return tpu


def test_a_401_refreshes_the_token_once_and_sends_again(fast):
    creds = _StubCredentials()
    fast.faults.append(Fault("POST", r"/nodes\?", 401, times=1))
    provision.up(_api_with(creds), CloudUpRequest(project=P, zones=[OK], provisioning="spot", max_hours=1.0),
                 lambda e: None)  # fmt: skip
    assert creds.refreshes == 1 and len([m for m, _, _ in fast.requests if m == "POST"]) == 2
    fast.faults.append(Fault("GET", r"/nodes/onechip-v5e-1$", 401, times=2))  # refused twice: said, once
    with pytest.raises(CloudError) as info:
        provision.fetch(_api_with(creds), "node", OK, "onechip-v5e-1")
    assert info.value.reason == "auth" and creds.refreshes == 2
    # a 401 that stands (google.rpc UNAUTHENTICATED: the credentials are invalid or expired, Cloud APIs' error model)
    # names the remedy, where it said only the API's message
    assert str(info.value).endswith("; the credentials were refused: run `gcloud auth application-default login` "
                                    "(or check GOOGLE_APPLICATION_CREDENTIALS)"), str(info.value)  # fmt: skip
    assert_tracked_then_down(fast)


def test_a_refresh_refused_is_one_line_without_the_token(fast):
    from google.auth.exceptions import RefreshError

    raw = {
        "error": "invalid_grant",
        "access_token": "ya29.leaked-0123456789",
        "refresh_token": "1//0gLEAKED0123456789abc",
    }
    error = RefreshError("invalid_grant: Token has been expired or revoked. ya29.leaked-0123456789\nmore", raw)
    fast.faults.append(Fault("GET", r"/nodes", 401, times=1))
    with pytest.raises(CloudError) as info:
        provision.fetch(_api_with(_StubCredentials(error)), "node", OK, "x")
    said = str(info.value)
    assert info.value.reason == "auth" and "\n" not in said and "gcloud auth application-default login" in said
    assert "ya29." not in said and "1//" not in said and "Token has been expired or revoked" in said


def test_a_page_token_given_twice_is_not_the_api(fast):
    fast.page_size = 1
    fast.put("node", OK, "a", "READY")
    fast.put("node", OK, "b", "READY")
    real = fast._page  # noqa: SLF001

    def stuck(key, items, query):
        page = real(key, items, query)
        return {**page, "nextPageToken": "1"} if "nextPageToken" in page or query.get("pageToken") else page

    fast._page = stuck  # noqa: SLF001
    with pytest.raises(CloudError) as info:
        api.cloud_down_targets(CloudNameRequest(project=P, zones=[OK]))
    assert info.value.reason == "bad-endpoint" and "page token '1' twice" in str(info.value)
    assert len([p for m, p, _ in fast.requests if "pageToken" in p]) < 5


def test_a_conflict_on_create_with_our_own_keeps_its_record(fast):
    """claim_name did not see it (the API answered 404 once), the create says ALREADY_EXISTS: it is ours, of the
    chip and model asked, and READY, so it is used (a second up had to resume it: provision._resume_taken), stays
    recorded, and down deletes it."""
    spot = {"provisioning": "spot", "max_hours": 1.0}
    up(zones=[OK], **spot)
    fast.faults.append(Fault("GET", r"/nodes/onechip-v5e-1$", 404, times=1))
    assert up(zones=[OK], **spot).resource.state == "READY"
    assert len(ours(fast)) == 1  # the API's TPU, not a second one
    assert [r.name for r in records.load_all()] == ["onechip-v5e-1"]
    assert [m for m, _, _ in fast.requests].count("POST") == 2 and "DELETE" not in [m for m, _, _ in fast.requests]
    assert_tracked_then_down(fast)


def test_a_404_read_too_soon_never_deletes_the_node_of_our_queued_resource(fast):
    up(zones=[OK])
    fast.faults.append(Fault("GET", r"/queuedResources/onechip-v5e-1$", 404, times=1))
    assert up(zones=[OK]).reused
    assert not [m for m, _, _ in fast.requests if m in ("DELETE", "POST")][1:]  # the one create, no delete
    assert_tracked_then_down(fast)


def test_a_conflict_on_create_with_a_foreign_one_records_nothing(fast, run):
    fast.put("node", OK, "theirs", "READY", labelled=False)
    fast.faults.append(Fault("GET", r"/nodes/theirs$", 404, times=1))
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--name", "theirs", "--provisioning", "spot",
                       "--max-hours", "1", "--yes")  # fmt: skip
    assert rc == 2 and err.count("\n") == 1 and "onechip did not create" in err, err
    assert records.load_all() == [] and f"projects/{P}/locations/{OK}/nodes/theirs" in fast.nodes
    assert not [m for m, _, _ in fast.requests if m == "DELETE"]


def test_down_goes_on_past_a_delete_it_is_refused_and_names_what_is_left(fast, run):
    up(zones=[OK], name="first", provisioning="spot", max_hours=1.0)
    up(zones=[OK], name="second", provisioning="spot", max_hours=1.0)
    fast.faults.append(Fault("DELETE", r"/nodes/first$", 403, times=100))
    rc, out, err = run("cloud", "down", "--yes")
    errors = [line for line in err.splitlines() if not line.startswith("  ")]  # progress lines are indented
    assert rc == 7 and len(errors) == 1 and "Traceback" not in err, err
    assert "deleting node second" in err and "deleted node second (us-west4-a); 1 may still exist" in errors[0]
    assert "onechip cloud down --name first --zone us-west4-a --project proj-1 --yes" in err
    assert {name for _, _, name in ours(fast)} == {"first"} and [r.name for r in records.load_all()] == ["first"]
    assert_tracked_then_down(fast)


def test_ctrl_c_during_down_names_what_is_left(fast, monkeypatch):
    fast.delete_s = 0.3
    up(zones=[OK], name="first", provisioning="spot", max_hours=1.0)
    up(zones=[OK], name="second", provisioning="spot", max_hours=1.0)
    real_sleep = provision.time.sleep

    def interrupt(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(provision.time, "sleep", interrupt)
    monkeypatch.setattr("onechip.cloud.tpu_api.time.sleep", interrupt)
    with pytest.raises(Interrupted) as info:
        api.cloud_down(CloudNameRequest(project=P))
    assert "2 may still exist" in str(info.value) and "onechip cloud down --name second" in str(info.value)
    monkeypatch.setattr(provision.time, "sleep", real_sleep)
    monkeypatch.setattr("onechip.cloud.tpu_api.time.sleep", real_sleep)
    assert_tracked_then_down(fast)


def test_a_spot_node_preempted_before_ready_moves_on_and_after_is_warned(fast):
    fast.create_s = 0.3
    key = f"projects/{P}/locations/{OK}/nodes/onechip-v5e-1"
    real = fast._advance  # noqa: SLF001

    def preempt_first():  # the first zone's node is preempted while CREATING (the operation is done first)
        real()
        node = fast.nodes.get(key)
        if node is not None and node["state"] == "CREATING" and node.get("_seen", 0) > 2:
            node["state"] = "PREEMPTED"
        elif node is not None:
            node["_seen"] = node.get("_seen", 0) + 1

    fast._advance = preempt_first  # noqa: SLF001
    fast.faults.append(Fault("GET", r"/operations/", 200, times=0))
    result = up(zones=[OK, "asia-east1-c"], provisioning="spot", max_hours=1.0)
    assert [a.outcome for a in result.attempts][-1] == "available"
    fast._advance = real  # noqa: SLF001
    for node in fast.nodes.values():
        if node.get("labels", {}).get("created-by") == "onechip":
            node["state"] = "PREEMPTED"
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert any(
        w.startswith("PREEMPTED: the cloud took its chips back (spot capacity); it does not run and will not run again")
        and "delete it: onechip cloud down" in w
        for w in st.warnings
    ), st.warnings
    assert_tracked_then_down(fast)


def _status_from_now(monkeypatch: pytest.MonkeyPatch, hours: float) -> CloudStatus:
    """`cloud status` of the one recorded TPU, read as if `hours` from now; later reads in the test stay there."""
    later = datetime.now(UTC) + timedelta(hours=hours)
    real_status = provision.status
    monkeypatch.setattr(provision, "status", lambda tpu, r, now=None: real_status(tpu, r, now or later))
    (status,) = api.cloud_status(CloudNameRequest(project=P))
    return status


@pytest.mark.parametrize(("max_hours", "ago_h"), [(None, 0.5), (1.0, 2.0)])
def test_a_preempted_spot_tpu_is_said_not_to_run_nor_bill_its_chips_once(fast, max_hours, ago_h):
    # Before: a spot TPU preempted (no --max-hours) read "no limit: it bills until deleted" and "PREEMPTED: it will not
    # run again"; with --max-hours passed, "it is still billing". A preempted TPU stays PREEMPTED and is deleted and
    # created anew to run again (cloud.google.com/tpu/docs/preemptible, tpu/docs/spot-compute); a stopped VM's machine
    # does not bill, its disks and static addresses do (Compute Engine API, compute.instances.stop).
    limit = {"max_hours": max_hours} if max_hours else {"no_limit": True}
    record = up(zones=[OK], provisioning="spot", **limit).resource
    record.granted_at = (datetime.now(UTC) - timedelta(hours=ago_h)).isoformat(timespec="seconds")
    records.save(record)
    fast.nodes[f"projects/{P}/locations/{OK}/nodes/{record.name}"]["state"] = "PREEMPTED"
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert st.warnings == [
        "PREEMPTED: the cloud took its chips back (spot capacity); it does not run and will not run again, and its "
        "chips no longer bill (a disk or static address it holds does until it is deleted); delete it: "
        f"{provision.delete_command(st.resource)}, and run `onechip cloud up` again for a new one"
    ]
    assert_tracked_then_down(fast)


def test_the_cost_of_a_preempted_tpu_stops_where_status_first_saw_it_ended(fast, monkeypatch):
    # Before: '$ so far' of a PREEMPTED spot TPU kept growing with the clock, beside the warning that its chips no
    # longer bill. The API gives no time a node stopped (Node, TPU API v2), so the first status that sees it ended
    # records that time (CloudResource.ended_at) and bills up to it; a node running again clears it.
    record = up(zones=[OK], provisioning="spot", no_limit=True).resource
    granted = datetime.now(UTC) - timedelta(hours=1)
    record.granted_at = granted.isoformat(timespec="seconds")
    records.save(record)
    node = fast.nodes[f"projects/{P}/locations/{OK}/nodes/{record.name}"]
    node["state"] = "PREEMPTED"
    (first,) = api.cloud_status(CloudNameRequest(project=P))
    assert first.resource.ended_at is not None and first.usd_so_far is not None
    second = _status_from_now(monkeypatch, hours=5)
    assert second.resource.ended_at == first.resource.ended_at
    assert second.usd_so_far == pytest.approx(first.usd_so_far, abs=0.01)  # not 5 more hours
    node["state"] = "READY"
    (running,) = api.cloud_status(CloudNameRequest(project=P))
    assert running.resource.ended_at is None and running.usd_so_far > first.usd_so_far + 4 * record.usd_per_hour
    node["state"] = "PREEMPTED"
    assert_tracked_then_down(fast)


def test_a_project_the_api_refuses_does_not_hide_or_keep_billing_another_projects_tpus(fast):
    # Before: with TPUs in two projects, a 403 on one project's listing made `cloud status` and `cloud down` fail
    # for both: the other project's TPU was neither shown nor deleted (found by the cloud break pass).
    ours_ = up(zones=[OK], provisioning="spot", max_hours=1.0, name="ours").resource
    theirs = up(zones=[OK], provisioning="spot", max_hours=1.0, name="locked", project="proj-2").resource
    fast.faults.append(Fault("GET", r"/projects/proj-2/", 403, times=1000))
    lines: list[str] = []
    statuses = api.cloud_status(CloudNameRequest(), lambda e: lines.append(e.message))
    by_name = {st.resource.name: st for st in statuses}
    assert by_name["ours"].exists and by_name["ours"].resource.state == "READY" and not by_name["ours"].warnings
    assert any("it may still exist and bill" in w for w in by_name["locked"].warnings)
    assert any(line.startswith("project proj-2: ") for line in lines), lines
    with pytest.raises(CloudError) as info:
        api.cloud_down(CloudNameRequest())
    assert f"onechip cloud down --name locked --zone {OK} --project proj-2 --yes" in str(info.value)
    assert "ours" in str(info.value)  # also deleted
    assert f"projects/{P}/locations/{OK}/nodes/{ours_.name}" not in fast.nodes
    assert [r.name for r in records.load_all()] == [theirs.name]
    fast.faults.clear()
    api.cloud_down(CloudNameRequest())
    assert records.load_all() == []


def test_a_secret_read_from_secret_manager_is_redacted_from_then_on(fast):
    from onechip.cloud.tpu_api import TpuApi
    from onechip.errors import redact

    plain = "a-password-of-no-known-shape-7c1e"  # no pattern catches it: only having been read does
    fast.secrets["db"] = plain
    assert redact(f"boom {plain}") == f"boom {plain}"
    assert TpuApi(P).access_secret("db") == plain
    assert redact(f"boom {plain}") == "boom ***"


def test_a_queued_resource_failed_for_another_reason_is_an_attempt_and_the_next_zone_is_tried(fast):
    fast.zones["us-central1-b"].flex = "internal"  # FAILED with code 13: it was a pydantic traceback
    result = up(zones=["us-central1-b", OK])
    assert [(a.outcome, a.code) for a in result.attempts] == [("failed", 13), ("available", None)]
    assert not [k for k in fast.queued if "us-central1-b" in k]
    assert_tracked_then_down(fast)


def test_a_probe_whose_granted_tpu_cannot_be_deleted_says_what_is_left(fast, run):
    fast.faults.append(Fault("DELETE", r"/nodes/onechip-probe-", 403, times=100))
    rc, out, err = run("cloud", "probe", "--project", P, "--zone", OK, "--provisioning", "spot", "--yes")
    errors = [line for line in err.splitlines() if not line.startswith("  ")]  # progress lines are indented
    assert rc == 7 and len(errors) == 1 and "Traceback" not in err, err
    (probe,) = [r for r in records.load_all() if r.name.startswith("onechip-probe-")]
    assert f"node {probe.name} may exist in {OK}: onechip cloud down --name {probe.name}" in err
    assert_tracked_then_down(fast)


def test_the_access_token_never_reaches_output_records_or_errors(fast, run, monkeypatch):
    """Every request carries the bearer token (google-auth's header); none of stdout, stderr, an error line
    or a file under ONECHIP_HOME holds it, on the way up, status, a refused create and down."""
    from onechip.cloud import auth

    token = "ya29.a0AfB_byC-not-a-real-token-0123456789abcdef"
    monkeypatch.setattr(auth.Credentials, "headers", lambda self, method, url: {"Authorization": f"Bearer {token}"})
    said = []
    for argv in (["up", "--project", P, "--zone", OK, "--yes", "--json"], ["status", "--json"],
                 ["up", "--project", P, "--zone", "us-central1-b", "--name", "q", "--provisioning", "spot",
                  "--max-hours", "1", "--yes"], ["down", "--yes"]):  # fmt: skip
        said += run("cloud", *argv)[1:]
    fast.faults.append(Fault("GET", r".", 401, times=10))
    said += run("cloud", "status", "--project", P, "--zone", OK)[1:]  # lists the zone: refused
    assert "onechip-v5e-1" in said[0] and "Quota limit" in said[5] and "injected HTTP 401" in said[-1]
    home = records.onechip_home()
    stored = [p.read_text(encoding="utf-8", errors="replace") for p in home.rglob("*") if p.is_file()]
    assert not [text for text in said + stored if token in text or "ya29." in text]
    with fast.lock:  # the token did travel, in the header only: never in a path or a body
        assert fast.authorizations and set(fast.authorizations) == {f"Bearer {token}"}
        assert token not in fast.sent_text()


# --- demo --cloud gcp: what its provisioning left when it failed or was interrupted


def _demo(tmp_path, **kw):
    from onechip.schemas.requests import DemoRequest

    request = DemoRequest.model_validate({"cloud": "gcp", "model": "google/gemma-4-E2B-it", "chip": "v5e-1",
                                          "project": P, "zones": [OK], "valid_until_s": "1s",
                                          "out_dir": str(tmp_path / "run"), **kw})  # fmt: skip
    return api.demo(request)


@pytest.mark.parametrize("keep", [False, True])
def test_a_demo_whose_provisioning_fails_deletes_what_it_created(fast, tmp_path, monkeypatch, keep):
    """The message follows what the cleanup confirmed: deleted (it said "may exist" after deleting it), or
    kept with --keep, where it may exist indeed (and the run.json records the same line)."""
    up(zones=["asia-east1-c"], provisioning="spot", max_hours=1.0)  # the user's own, same name, another zone
    monkeypatch.setattr("onechip.cloud.tpu_api.RETRIES", 1)
    fast.faults.append(Fault("GET", rf"{OK}/queuedResources/onechip-v5e-1$", 403, after=1))  # up stops (not an outage)
    with pytest.raises(CloudError) as info:
        _demo(tmp_path, keep=keep)
    said = str(info.value)
    assert "queuedResources/onechip-v5e-1: injected HTTP 403" in said.split(";")[0], said  # the failure itself, first
    if keep:
        assert "may exist in us-west4-a" in said and "kept queued-resource onechip-v5e-1 (us-west4-a)" in said
    else:
        assert "may exist" not in said and "onechip cloud down" not in said, said
        assert said.endswith("; the demo deleted queued-resource onechip-v5e-1 (us-west4-a)"), said
    assert json.loads((tmp_path / "run" / "run.json").read_text())["error"] == said
    fast.faults.clear()
    left = {(zone, name) for zone, _, name in ours(fast)}
    assert ("asia-east1-c", "onechip-v5e-1") in left  # created before the demo: never touched
    assert ((OK, "onechip-v5e-1") in left) is keep  # the demo's own request: deleted unless --keep
    assert_tracked_then_down(fast)


def test_a_demo_whose_cleanup_fails_says_both_and_how_to_delete(fast, tmp_path, monkeypatch):
    # provisioning fails, then the demo's delete is refused: the first failure stays first, the delete's
    # refusal and its command follow (the request may exist, so saying so is right here)
    monkeypatch.setattr("onechip.cloud.tpu_api.RETRIES", 1)
    fast.faults.append(Fault("GET", rf"{OK}/queuedResources/onechip-v5e-1$", 403, after=1))
    fast.faults.append(Fault("DELETE", r"/queuedResources/onechip-v5e-1", 403, times=100))
    with pytest.raises(CloudError) as info:
        _demo(tmp_path)
    said = str(info.value)
    assert "queuedResources/onechip-v5e-1: injected HTTP 403" in said.split(";")[0], said
    assert "the demo's delete failed" in said and "may still exist" in said and "onechip cloud down --name" in said
    fast.faults.clear()
    assert_tracked_then_down(fast)


def test_a_demo_interrupted_while_its_request_waits_deletes_it(fast, tmp_path, monkeypatch):
    fast.zones[OK].flex = "never"
    real_sleep = provision.time.sleep
    calls = [0]

    def sleep(seconds):
        calls[0] += 1
        if calls[0] == 3:
            raise KeyboardInterrupt
        real_sleep(seconds)

    monkeypatch.setattr(provision.time, "sleep", sleep)
    with pytest.raises(Interrupted) as info:
        _demo(tmp_path)
    assert str(info.value).endswith("; the demo deleted queued-resource onechip-v5e-1 (us-west4-a)"), info.value
    monkeypatch.setattr(provision.time, "sleep", real_sleep)
    assert ours(fast) == set() and records.load_all() == []


def test_each_retry_of_a_call_is_a_progress_line(fast):
    # Before: retries were silent (the CLI's heartbeat repeated the last line for minutes)
    fast.faults.append(Fault("POST", r"/queuedResources\?", "rate-limit", times=2))
    events = []
    request = CloudUpRequest.model_validate({"project": P, "valid_until_s": "1s", "timeout_s": 1.0, "zones": [OK]})
    api.cloud_up(request, events.append)
    told = [e.message for e in events if e.stage == "cloud" and "; retry " in e.message]
    assert (
        len(told) == 2 and told[0].endswith("; retry 1 of 6 in 0.01 s") and told[1].endswith("retry 2 of 6 in 0.02 s")
    )
    assert_tracked_then_down(fast)


def test_a_host_that_does_not_resolve_is_one_line_at_once(monkeypatch):
    from onechip.cloud.tpu_api import TpuApi

    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://tpu.invalid")  # RFC 2606: never resolves
    told: list[str] = []
    tpu = TpuApi(P, poll_s=0.01, on_retry=told.append)
    with pytest.raises(CloudError) as info:
        tpu.get_node(OK, "n")
    assert info.value.reason == "offline" and told == []
    assert str(info.value).endswith(": cannot resolve tpu.invalid (offline, or no DNS); nothing was sent - check "
                                    "the network and run it again")  # fmt: skip


def test_status_and_down_tell_each_retry_as_cloud_up_does(fast, run):
    # Before: cloud status and cloud down retried in silence (their TpuApi had no on_retry) while prices refresh
    # and cloud up told each retry; now every cloud job gives its client the same progress callback
    request = CloudUpRequest.model_validate({"project": P, "valid_until_s": "1s", "timeout_s": 1.0, "zones": [OK]})
    api.cloud_up(request)
    fast.faults.append(Fault("GET", r"/(nodes|queuedResources)", "rate-limit", times=1))
    events: list = []
    assert api.cloud_status(CloudNameRequest(project=P), events.append)
    told = [e.message for e in events if e.stage == "cloud" and "; retry " in e.message]
    assert len(told) == 1 and told[0].endswith("; retry 1 of 6 in 0.01 s"), told
    fast.faults.append(Fault("GET", r"/(nodes|queuedResources)", "rate-limit", times=1))
    code, _, err = run("cloud", "status", "--project", P)
    assert code == 0 and err.count("; retry 1 of 6 in 0.01 s") == 1, err
    fast.faults.append(Fault("DELETE", r"/(nodes|queuedResources)/", "rate-limit", times=1))
    code, _, err = run("cloud", "down", "--project", P, "--yes")
    assert code == 0 and err.count("; retry 1 of 6 in 0.01 s") == 1, err
    assert ours(fast) == set() and records.load_all() == []


def test_down_says_when_it_waits_for_a_delete_or_reads_a_gone_resource_again(fast, run):
    # Before: after "deleting node N" down waited for the API's delete (minutes on the real API, up to
    # DELETE_WAIT_S) in silence, and paused a poll before dropping a record whose resource was not found, unsaid
    node = up(provisioning="spot", max_hours=1.0, zones=[OK]).resource
    gone = node.model_copy(update={"name": "gone-one", "node_id": "gone-one"})
    records.save(gone)  # recorded, but the API has no such node
    fast.delete_s = 0.3  # the node shows DELETING until its delete operation is done
    code, _, err = run("cloud", "down", "--project", P, "--yes")
    assert code == 0, err
    lines = err.splitlines()
    assert f"  node gone-one ({OK}): not found; reading it again in 0.01 s before its record is dropped" in lines
    waits = [line for line in lines if line.startswith(f"  {node.name} in {OK}: waiting for the API to delete it")]
    assert len(waits) == 1, err  # said once, not once a poll
    assert ours(fast) == set() and records.load_all() == []


def test_the_demos_token_read_tells_each_retry_and_never_the_token(fast, tmp_path):
    # Before: demo --cloud read the HF token from Secret Manager (and deleted its TPU) through a TpuApi without
    # on_retry, so a rate-limited read waited in silence while cloud up, status and down told each retry
    from onechip.api._demo_host import _demo_token_file
    from onechip.schemas.requests import DemoRequest

    fast.faults.append(Fault("GET", r"/secrets/hf-token/", "rate-limit", times=1))
    events: list = []
    request = DemoRequest(cloud="gcp", model="google/gemma-4-E2B-it", chip="v5e-1", hf_token_secret="hf-token")
    path = _demo_token_file(request, P, events.append)
    assert path is not None and path.read_text(encoding="utf-8") == fast.secrets["hf-token"] + "\n"
    told = [e.message for e in events if e.stage == "cloud"]
    assert len(told) == 1 and told[0].endswith("; retry 1 of 6 in 0.01 s"), told
    assert fast.secrets["hf-token"] not in told[0]


def test_an_endpoint_that_never_answers_stops_status_and_down_at_the_deadline(fast, run, monkeypatch):
    # Before: each call waited ONECHIP_CLOUD_TIMEOUT_S a try, 7 tries, plus 3 min 15 s of backoff at the defaults
    up(zones=[OK])
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "1")
    monkeypatch.setenv("ONECHIP_CLOUD_TIMEOUT_S", "60")
    # no answer is an outage: `down` reads its labels through it for its whole bound (DOWN_WAIT_S), here 3 s
    monkeypatch.setattr(provision, "DOWN_WAIT_S", 3.0)
    with dead_endpoints.silent() as url:
        monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", url)
        for argv, bound in ((["status", "--project", P], "1 s deadline"),
                            (["down", "--project", P, "--yes"], "within the down's 3 s")):  # fmt: skip
            started = time.monotonic()
            code, _, err = run("cloud", *argv)
            elapsed_s = time.monotonic() - started
            said = [line for line in err.splitlines() if line.startswith("error:")]
            assert code == 7 and len(said) == 1 and f"no answer from {url} (ReadTimeout)" in said[0], (argv, err)
            assert bound in said[0] and elapsed_s < 1 + 3 + 10, (said, elapsed_s)
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", fast.url)
    assert_tracked_then_down(fast)  # nothing was forgotten while the API did not answer


def test_retry_after_is_waited_and_one_past_the_deadline_stops_at_once(fast):
    # Before: Retry-After was ignored (the next try came after the backoff, 0.01 s here)
    from onechip.cloud.tpu_api import TpuApi

    told: list[str] = []
    tpu = TpuApi(P, on_retry=told.append)
    fast.retry_after_s = 1
    fast.faults.append(Fault("GET", r"/nodes$", "retry-after", times=1))
    assert [n["name"] for n in tpu.list_nodes(OK)] == [FOREIGN]
    assert len(told) == 1 and told[0].endswith(f"HTTP 503 from {fast.url}; retry 1 of 6 in 1 s"), told
    fast.retry_after_s = 60  # past the 30 s default deadline: said at once, not slept on
    fast.faults.append(Fault("GET", r"/nodes$", "retry-after", times=1))
    started = time.monotonic()
    with pytest.raises(CloudError) as info:
        tpu.list_nodes(OK)
    assert time.monotonic() - started < 10 and len(told) == 1
    assert info.value.reason == "transient" and re.search(
        r"; tried once over [\d.]+ s \(the API asked to wait 60 s \(its Retry-After or RetryInfo\) would pass the 30 s "
        r"deadline, \$ONECHIP_CLOUD_DEADLINE_S\)$",
        str(info.value),
    )


@contextlib.contextmanager
def _token_endpoint_refusing() -> Iterator[str]:
    """A loopback OAuth token endpoint answering every refresh 400 invalid_grant (a revoked refresh token)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's spelling)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            data = b'{"error": "invalid_grant", "error_description": "Token has been expired or revoked."}'
            self.send_response(400)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("endpoint", ["silent", "refusing"])
def test_a_token_refresh_that_hangs_or_is_refused_is_one_line_without_a_secret(monkeypatch, endpoint):
    # Before: google-auth's Request waited 120 s for a token endpoint that never answers (its default timeout), and
    # TpuApi sent the call again 6 times after it: now each token request waits auth.TOKEN_TIMEOUT_S (0.5 s here)
    # and all of them fit in the call's deadline (1 s here)
    from google.oauth2.credentials import Credentials as UserCredentials

    from onechip.cloud import auth
    from onechip.cloud.tpu_api import TpuApi

    refresh_token = "1//0gFAKErefreshTokenabcdefghij0123456789"
    monkeypatch.setattr(auth, "TOKEN_TIMEOUT_S", 0.5)
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "1")
    monkeypatch.delenv("ONECHIP_TPU_API_ENDPOINT", raising=False)  # Google's URL: the token step fails before it
    server = dead_endpoints.silent() if endpoint == "silent" else _token_endpoint_refusing()
    with server as url:  # what `gcloud auth application-default login` gives, its token endpoint on the loopback
        creds = UserCredentials(token=None, refresh_token=refresh_token, token_uri=f"{url}/token",
                                client_id="123.apps.example", client_secret="FAKE-client-secret")  # fmt: skip
        monkeypatch.setattr(auth, "_adc", lambda: (creds, P))
        started = time.monotonic()
        with pytest.raises(CloudError) as info:
            TpuApi(P, poll_s=0.01).get_node(OK, "n")
        elapsed_s = time.monotonic() - started
    said = str(info.value)
    assert elapsed_s < 1 + 10 and "\n" not in said, (elapsed_s, said)
    assert refresh_token not in said and "FAKE-client-secret" not in said
    if endpoint == "silent":
        assert (
            info.value.reason == "unsent"
            and said.startswith(
                f"GET {P}/locations/{OK}/nodes/n: not sent: Google's token endpoint could not be reached; tried "
            )
            and said.endswith("1 s deadline, $ONECHIP_CLOUD_DEADLINE_S)")
        ), said
    else:
        assert info.value.reason == "auth" and said.startswith("Google credentials could not be refreshed (")
        assert "invalid_grant" in said and "gcloud auth application-default login" in said, said


def test_a_rate_limited_create_waits_its_retry_after_then_is_sent_again(fake_api):
    # Before: a 429 RATE_LIMIT_EXCEEDED on a create was sent again after the backoff (0.01 s here), not its Retry-After
    import httpx

    from onechip.cloud.tpu_api import TpuApi

    answers = [
        httpx.Response(429, headers={"Retry-After": "1"}, json={"error": {
            "code": 429, "message": "Quota exceeded for quota metric 'Create requests' and limit 'Create requests per "
            "minute per project'", "status": "RESOURCE_EXHAUSTED", "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}]}}),
        httpx.Response(200, json={"name": f"projects/{P}/locations/{OK}/operations/operation-1", "done": False}),
    ]  # fmt: skip
    told: list[str] = []
    http = httpx.Client(transport=httpx.MockTransport(lambda request: answers.pop(0)))
    tpu = TpuApi(P, http=http, poll_s=0.01, on_retry=told.append)
    assert tpu.create_node(OK, "n", {})["name"].endswith("/operations/operation-1") and answers == []
    assert len(told) == 1 and told[0].endswith("; retry 1 of 6 in 1 s"), told


def test_a_bare_429_on_create_is_a_rate_limit_sent_again_and_a_capacity_429_moves_on(fast):
    # Before: a 429 RESOURCE_EXHAUSTED without a quota word was a stockout: `up` left the zone (and noted it as out
    # of chips) at a refusal of the request rate. Google: 429 RESOURCE_EXHAUSTED is "either out of resource quota or
    # reaching rate limiting" (cloud.google.com/apis/design/errors); a stockout names the capacity
    # (ZONE_RESOURCE_POOL_EXHAUSTED, 'no more capacity': the fake's STOCKOUT, the TPU API's wording).
    fast.faults.append(Fault("POST", rf"{OK}/nodes\?", 429, times=2))  # "injected HTTP 429", no reason
    result = up(zones=[OK, "asia-east1-c"], provisioning="spot", max_hours=1.0)
    assert [(a.zone, a.outcome) for a in result.attempts] == [(OK, "available")], result.attempts
    assert len([m for m, path, _ in fast.requests if m == "POST" and OK in path]) == 3  # sent again twice
    assert_tracked_then_down(fast)
    fast.faults.append(Fault("POST", rf"{OK}/nodes\?", "stockout-429"))
    result = up(zones=[OK, "asia-east1-c"], provisioning="spot", max_hours=1.0)
    assert [(a.zone, a.outcome) for a in result.attempts] == [(OK, "stockout"), ("asia-east1-c", "available")]
    assert_tracked_then_down(fast)


@pytest.mark.parametrize(
    ("status", "details", "message", "reason"),
    [
        ("RESOURCE_EXHAUSTED", [], "Too many requests", "rate-limit"),
        ("", [], "injected", "rate-limit"),
        ("RESOURCE_EXHAUSTED", [], "Resource has been exhausted (e.g. check quota).", "rate-limit"),  # stock text
        ("RESOURCE_EXHAUSTED", [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"}],
         "Too many requests", "rate-limit"),
        ("RESOURCE_EXHAUSTED", [], "ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/p/zones/z' does not have enough "
         "resources available to fulfill the request. Try a different zone, or try again later.", "stockout"),
        ("RESOURCE_EXHAUSTED", [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                 "reason": "ZONE_RESOURCE_POOL_EXHAUSTED"}], "Request failed", "stockout"),
        ("RESOURCE_EXHAUSTED", [], 'There is no more capacity in the zone "us-west4-a"', "stockout"),
        ("RESOURCE_EXHAUSTED", [], "reason: stockout", "stockout"),
        ("RESOURCE_EXHAUSTED", [], "Quota limit 'TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI' has been "
         "exceeded.", "quota"),
    ],
)  # fmt: skip
def test_a_429_is_a_stockout_only_with_a_capacity_reason(status, details, message, reason):
    # Compute Engine's resource availability errors (ZONE_RESOURCE_POOL_EXHAUSTED and its wording:
    # cloud.google.com/compute/docs/troubleshooting/troubleshooting-resource-availability), the TPU API's 'no more
    # capacity' and 'stockout', and a named quota keep their reasons; anything else at 429 is a rate limit
    from onechip.cloud import refusals

    body = {"error": {"code": 429, "message": message, "status": status, "details": details}}
    assert refusals.from_http(429, body, "POST nodes").reason == reason


def test_a_bare_429_create_waits_its_retry_after_and_a_lasting_one_stops_within_the_retries(fake_api):
    import httpx

    from onechip.cloud.tpu_api import RETRIES, TpuApi

    bare = {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                      "status": "RESOURCE_EXHAUSTED"}}  # fmt: skip
    operation = {"name": f"projects/{P}/locations/{OK}/operations/operation-1", "done": False}
    answers = [httpx.Response(429, headers={"Retry-After": "1"}, json=bare), httpx.Response(200, json=operation)]
    told: list[str] = []
    http = httpx.Client(transport=httpx.MockTransport(lambda request: answers.pop(0)))
    tpu = TpuApi(P, http=http, poll_s=0.01, on_retry=told.append)
    assert tpu.create_node(OK, "n", {})["name"].endswith("/operations/operation-1") and answers == []
    assert len(told) == 1 and told[0].endswith("; retry 1 of 6 in 1 s"), told  # its Retry-After, not 0.01 s
    sent: list[int] = []

    def always(request):
        sent.append(1)
        return httpx.Response(429, json=bare)

    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(always)), poll_s=0.01)
    with pytest.raises(CloudError) as info:
        tpu.create_node(OK, "n", {})
    assert info.value.reason == "rate-limit" and len(sent) == RETRIES + 1 and "tried 7 times" in str(info.value)


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ((302, {"Location": "https://accounts.example/signin"}, b""), "answered HTTP 302 with an empty body"),
        ((403, {"Content-Type": "text/html"}, b"<html>Forbidden</html>"), "answered HTTP 403 with an HTML page"),
        ((404, {}, b""), "answered HTTP 404 with an empty body"),
        ((400, {}, b'{"message": "bad"}'), "answered HTTP 400 without Google's error body"),
    ],
)
def test_an_answer_that_is_no_api_answer_is_one_line_naming_its_status_and_is_not_retried(fake_api, answer, said):
    # Before: a redirect (to a sign-in page) with an empty body read as '{}' (then 'a resource without a name'), and
    # an HTTP error without Google's body did not say which status it was
    import httpx

    from onechip.cloud.tpu_api import TpuApi

    sent: list[httpx.Request] = []
    status, headers, body = answer

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(status, headers=headers, content=body)

    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(reply)), poll_s=0.01)
    with pytest.raises(CloudError) as info:
        tpu.get_node(OK, "n")
    assert info.value.reason == "bad-endpoint" and len(sent) == 1
    assert str(info.value) == (
        f"{fake_api.url} does not answer like the Cloud TPU API (GET {P}/locations/{OK}/nodes/n {said}); check "
        "ONECHIP_TPU_API_ENDPOINT or the network"
    )


@pytest.mark.parametrize(
    ("message", "details", "reason"),
    [
        ("Quota 'TPUV5sLitepodPerProjectPerZoneForTPUAPI' exceeded. Limit: 0 in zone us-west4-a.", [], "quota"),
        ("Permission denied", [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []}], "quota"),
        ("Permission 'tpu.nodes.create' denied on 'projects/proj-1/locations/us-west4-a'", [], "auth"),
        (
            "Your application is authenticating by using local Application Default Credentials. The "
            "tpu.googleapis.com API requires a quota project, which is not set by default.",
            [],
            "auth",
        ),  # fmt: skip
    ],
)
def test_a_403_that_is_a_quota_is_read_as_one_and_a_permission_is_not(message, details, reason):
    # Before: every 403 was 'auth', so a zone out of quota (Compute Engine answers 403 QUOTA_EXCEEDED) stopped `up`
    # instead of moving on to the next zone as a 429 RESOURCE_EXHAUSTED quota does
    from onechip.cloud import refusals

    body = {"error": {"code": 403, "message": message, "status": "PERMISSION_DENIED", "details": details}}
    refusal = refusals.from_http(403, body, "POST nodes")
    assert refusal.reason == reason and str(refusal) == f"POST nodes: {message}"
    assert (reason in provision.FAILOVER) == (reason == "quota")


# --- outages while polling, and a create whose answer was lost (helper audit of 2026-12-04)


@pytest.mark.parametrize("provisioning", ["flex-start", "spot"])
def test_an_outage_longer_than_one_calls_deadline_is_polled_through(fast, monkeypatch, provisioning):
    # Before: each poll was one call, so 503s past its deadline (30 s) stopped `up` with its request still waiting. A
    # queued resource waits in WAITING_FOR_RESOURCES until granted or its valid-until (Cloud TPU, 'Manage queued
    # resources'), and an operation is polled until done (AIP-151): a 5xx (retryable, Cloud's retry strategy page) says
    # nothing about the resource, so the wait polls through it up to its own deadline. On the clock that moves only
    # when the waits sleep (a 0.3-s real deadline flaked under load: a late answer was a second kind of failure, said
    # again), at the default deadline: the 60 503s outlast several calls' retries
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")
    SleepClock(monkeypatch, provision, tpu_api)
    polled = r"/queuedResources/onechip-v5e-1$" if provisioning == "flex-start" else r"/operations/"
    fast.faults.append(Fault("GET", polled, 503, times=60, after=1 if provisioning == "flex-start" else 0))
    told: list[str] = []
    limit = {} if provisioning == "flex-start" else {"max_hours": 1}
    request = {"project": P, "zones": [OK], "provisioning": provisioning, "valid_until_s": "30s", "timeout_s": 30.0}
    result = api.cloud_up(CloudUpRequest.model_validate({**request, **limit}), lambda event: told.append(event.message))
    assert result.resource.state == "READY" and fast.faults[0].times == 0  # every injected 503 was answered
    outages = [line for line in told if line.endswith(" s away)") and "HTTP 503" in line]
    assert outages and "polling on (the wait's deadline is" in outages[0], told
    # said once: the first read's retries, its outage line, then nothing until the API answers again (before: the
    # retries and the outage line of every poll, ~5 lines a poll)
    first = told.index(outages[0])
    assert len(outages) == 1 and not any("HTTP 503" in line for line in told[first + 1 :]), told
    assert len([line for line in told[first:] if line.startswith("the API answers again, ")]) == 1, told
    assert len([m for m, _, _ in fast.requests if m == "POST"]) == 1
    assert_tracked_then_down(fast)


def test_offline_during_the_wait_is_said_once_and_again_when_it_clears(fast, monkeypatch):
    # Before: a laptop offline during `up`'s wait said one line per poll (every 5 s) until the wait's deadline. The
    # host name stops resolving (socket.getaddrinfo raises gaierror, as without a network) for the 20 connections
    # after the create: one line says it, one says the API answers again, and the wait goes on to READY.
    resolve, left = socket.getaddrinfo, [20]

    def offline(*args, **kwargs):
        if any(m == "POST" for m, _, _ in fast.requests) and left[0] > 0:
            left[0] -= 1
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return resolve(*args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", offline)
    told: list[str] = []
    request = {"project": P, "zones": [OK], "provisioning": "flex-start", "valid_until_s": "30s", "timeout_s": 30.0}
    result = api.cloud_up(CloudUpRequest.model_validate(request), lambda event: told.append(event.message))
    assert result.resource.state == "READY" and left == [0]
    said = [line for line in told if "cannot resolve 127.0.0.1 (offline, or no DNS)" in line]
    assert len(said) == 1 and "; polling on (the wait's deadline is" in said[0], told
    assert told[told.index(said[0]) + 1].startswith("the API answers again, "), told
    assert_tracked_then_down(fast)


def test_a_lasting_outage_is_said_again_each_minute_and_when_it_changes(monkeypatch):
    # A fake clock: each pause of 5 s (the default poll) passes 5 s. 30 offline reads (150 s), 2 answered 503, then
    # an answer: the outage is said at 0 s, again at 60 and 120 s (OUTAGE_REMIND_S) with how long it lasted, at the
    # change to 503 (150 s) and when it clears (160 s); before, 32 lines, one per read.
    clock = [0.0]
    tick = lambda s: clock.__setitem__(0, clock[0] + s)  # noqa: E731
    monkeypatch.setattr(tpu_api, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=tick))
    offline = tpu_api.offline_error("GET q", "tpu.example")
    failures = [offline] * 30 + [CloudError("GET q: HTTP 503", reason="transient", code=503)] * 2
    hushed: list[bool] = []

    def read() -> str:
        if failures:
            raise failures.pop(0)
        return "answer"

    told: list[str] = []
    assert tpu_api.through_outages(read, 3600.0, 5.0, told.append, hushed.append) == "answer"
    deadline = "polling on (the wait's deadline is {} s away)"
    assert told == [
        f"{offline}; {deadline.format(3600)}",
        f"{offline}, 60 s into the outage; {deadline.format(3540)}",
        f"{offline}, 120 s into the outage; {deadline.format(3480)}",
        f"GET q: HTTP 503, 150 s into the outage; {deadline.format(3450)}",
        "the API answers again, 160 s into the outage",
    ]
    assert hushed[0] is True and hushed[-1] is False  # the reads' own retry lines hushed once it is said, then no more


def test_an_outage_past_the_waits_deadline_still_stops_up_and_keeps_the_record(fast, monkeypatch):
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "0.2")
    fast.faults.append(Fault("GET", rf"{OK}/queuedResources/onechip-v5e-1$", 503, times=10**6, after=1))
    started = time.monotonic()
    with pytest.raises(CloudError) as info:
        up(zones=[OK])  # valid-until 1 s, timeout 1 s, grace 0.2 s: the wait ends at 2.2 s
    assert info.value.reason == "transient" and time.monotonic() - started < 2.2 + 0.2 + 5
    assert "may exist in us-west4-a" in str(info.value)
    assert_tracked_then_down(fast)


@pytest.mark.parametrize(("kind", "honour"), [(500, True), ("lost-500", True), ("lost-500", False), ("timeout", True)])
def test_a_queued_resource_create_without_an_answer_is_sent_again_with_its_request_id(fast, kind, honour, monkeypatch):
    gives_up_fast(kind, monkeypatch)
    # Before: a create answered 5xx was sent once and `up` stopped. queuedResources.create takes a requestId
    # ('Idempotent request UUID', TPU API v2alpha1 reference; AIP-155: the server executes one request id once) and a
    # queuedResourceId (AIP-133: a create whose id exists fails ALREADY_EXISTS): the retry carries the same requestId,
    # and an ALREADY_EXISTS to it means the first try landed, so it is waited on, never a second request made.
    fast.honour_request_id = honour
    fast.faults.append(Fault("POST", r"/queuedResources\?", kind))
    result = up(zones=[OK])
    assert result.resource.state == "READY" and result.resource.zone == OK
    posts = [p for m, p, _ in fast.requests if m == "POST"]
    ids = {re.search(r"requestId=([0-9a-f-]{36})(&|$)", p).group(1) for p in posts}  # type: ignore[union-attr]
    assert len(posts) == 2 and len(ids) == 1, posts  # one retry, the same request id
    assert len(fast.queued) == 1
    assert_tracked_then_down(fast)


@pytest.mark.parametrize("kind", ["lost-500", "timeout", 503])
def test_a_node_create_without_an_answer_is_sent_again_and_already_exists_means_it_landed(fast, kind, monkeypatch):
    gives_up_fast(kind, monkeypatch)
    # v2 nodes.create takes no requestId (TPU API v2 reference: nodeId only), but the nodeId makes a retry safe
    # (AIP-133: ALREADY_EXISTS); an ALREADY_EXISTS answering our retry is our node, waited on until READY
    fast.faults.append(Fault("POST", r"/nodes\?", kind))
    result = up(zones=[OK], provisioning="spot", max_hours=1.0)
    assert result.resource.state == "READY" and [a.outcome for a in result.attempts] == ["available"]
    assert len([m for m, _, _ in fast.requests if m == "POST"]) == 2
    assert {k for k in fast.nodes if "onechip-v5e-1" in k} == {f"projects/{P}/locations/{OK}/nodes/onechip-v5e-1"}
    assert_tracked_then_down(fast)


def test_already_exists_on_a_retry_is_our_node_even_while_the_api_does_not_show_it_yet(fast):
    # the first try lands but its answer is lost (500), the retry answers ALREADY_EXISTS (AIP-133: our first try) and
    # the next two reads of the node answer NOT_FOUND, as an API that lists what it just made late does: before, the
    # record was dropped and `up` said the name was taken while our node billed; now the node is waited for
    # (provision.CREATE_GRACE_S) and granted
    fast.faults += [
        Fault("POST", r"/nodes\?", "lost-500"),
        Fault("GET", r"/nodes/onechip-v5e-1$", 404, times=2),
    ]
    result = up(zones=[OK], provisioning="spot", max_hours=1.0)
    assert result.resource.state == "READY" and [a.outcome for a in result.attempts] == ["available"]
    assert len([m for m, _, _ in fast.requests if m == "POST"]) == 2
    assert_tracked_then_down(fast)


def test_already_exists_on_a_retry_with_a_foreign_resource_is_refused_and_nothing_recorded(fast, run):
    # the first try answered 503 and made nothing; someone else's node took the name before the retry
    fast.faults.append(Fault("POST", r"/nodes\?", 503))
    original = fast._fault

    def fault(method: str, path: str):  # the foreign node appears as the first (failed) try is answered
        answer = original(method, path)
        if answer == 503:
            fast.put("node", OK, "demo-n", "READY", labelled=False)
        return answer

    fast._fault = fault  # type: ignore[method-assign]
    rc, _, err = run("cloud", "up", "--project", P, "--zone", OK, "--name", "demo-n", "--provisioning", "spot",
                     "--max-hours", "1", "--yes")  # fmt: skip
    assert rc == 2 and "already has a TPU node named demo-n that onechip did not create" in err, err
    assert records.load_all() == []


def test_a_create_that_keeps_failing_is_bounded_and_leaves_nothing_recorded(fast):
    fast.faults.append(Fault("POST", r"/queuedResources\?", 500, times=10**6))
    with pytest.raises(CloudError) as info:
        up(zones=[OK])
    posts = [m for m, _, _ in fast.requests if m == "POST"]
    assert info.value.reason == "transient" and 1 < len(posts) <= 7, posts  # RETRIES + 1 tries at most
    assert "\n" not in str(info.value) and records.load_all() == [] and fast.queued == {}


def test_retry_after_as_an_http_date_is_waited(fake_api, monkeypatch):
    # Before: only Retry-After's delay-seconds form was read; RFC 9110 section 10.2.3 allows an HTTP-date too. Then the
    # date was counted from this machine's clock: the test's 'now + 2 s', formatted to whole seconds and read a moment
    # later, came out 1 or 2 s (0 on a loaded machine: flaky), and a client whose clock ran ahead of the server's read
    # any such wait as 0. Now it is counted from the answer's Date, the server's clock; the waits on a fake clock.
    from email.utils import format_datetime

    import httpx

    from onechip.cloud.tpu_api import TpuApi, retry_after_s

    sent = datetime(2015, 10, 21, 7, 28, tzinfo=UTC)

    def asked(after_s: float, date: datetime | None = sent) -> httpx.Headers:
        said = {"Retry-After": format_datetime(sent + timedelta(seconds=after_s), usegmt=True)}
        return httpx.Headers(said | ({"Date": format_datetime(date, usegmt=True)} if date else {}))

    assert retry_after_s(asked(2)) == 2.0  # 2015: by this machine's clock long past, by the server's 2 s away
    assert retry_after_s(asked(-5)) == 0.0  # before its own Date: at once
    assert retry_after_s(asked(0, date=None)) == 0.0  # no Date: from now, and 2015 is past
    later = datetime.now(UTC) + timedelta(days=1)  # no Date, a day ahead: from now, whole seconds rounded up
    assert 86_000 < (retry_after_s(httpx.Headers({"Retry-After": format_datetime(later, usegmt=True)})) or 0) <= 86_400
    assert retry_after_s(httpx.Headers({"Retry-After": "soon"})) is None
    # neither form: None, not a ValueError ('²' passes str.isdigit) or OverflowError (the year) out of the API call
    for odd in ("\u00b2".encode("latin-1"), b"Wed, 21 Oct 99999999999999999999 07:28:00 GMT"):
        assert retry_after_s(httpx.Headers([(b"Retry-After", odd)])) is None
    clock = [0.0]
    tick = lambda s: clock.__setitem__(0, clock[0] + s)  # noqa: E731
    monkeypatch.setattr(tpu_api, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=tick))
    busy = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "try later"}}
    answers = [httpx.Response(503, headers=asked(2), json=busy), httpx.Response(200, json={"nodes": []})]
    told: list[str] = []
    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(lambda r: answers.pop(0))), poll_s=0.01,
                 on_retry=told.append)  # fmt: skip
    assert tpu.list_nodes(OK) == [] and answers == []
    assert len(told) == 1 and told[0].endswith("; retry 1 of 6 in 2 s") and clock[0] == 2.0, (told, clock)


@pytest.mark.parametrize("landed", [True, False])
def test_a_refusal_after_a_create_without_an_answer_reads_whether_the_first_try_landed(fast, landed):
    # The first try got a 500, the retry RESOURCE_EXHAUSTED (the quota or capacity the first try now holds, when it
    # landed): a refusal to a retry does not say the first made nothing, so the node is read (v2 nodes.get). There: it
    # is ours, waited on; not there: the refusal stands and the next zone is tried, nothing left recorded.
    fast.faults += [
        Fault("POST", rf"{OK}/nodes\?", "lost-500" if landed else 500),
        Fault("POST", rf"{OK}/nodes\?", "stockout-429"),  # a bare 429 is a rate limit, sent again (below)
    ]
    result = up(zones=[OK, "asia-east1-c"], provisioning="spot", max_hours=1.0)
    assert [a.outcome for a in result.attempts] == (["available"] if landed else ["stockout", "available"])
    assert result.resource.zone == (OK if landed else "asia-east1-c") and result.resource.state == "READY"
    assert {r.zone for r in records.load_all()} == {result.resource.zone}
    assert_tracked_then_down(fast)


@pytest.mark.parametrize("state", ["SUSPENDING", "SUSPENDED", "DELETING", "FAILED"])
def test_a_queued_resource_that_ends_while_waiting_is_deleted_and_said_in_one_line(fast, state):
    """A request onechip made turns `state` mid-wait (the API's QueuedResourceState; FAILED here without its
    failedData): it is an attempt that ended, deleted before the next zone, and nothing of ours is left."""
    fast.wait_s = 30.0  # it stays WAITING_FOR_RESOURCES until the turn below

    def turn() -> None:
        for qr in fast.queued.values():
            qr["state"] = {"state": state}

    # GETs of the queued resource: claim_name's (404), the wait's first poll (WAITING), then a 503 as it turns
    fast.faults.append(Fault("GET", r"queuedResources/onechip-v5e-1$", 503, times=1, after=2, then=turn))
    with pytest.raises(CloudError) as info:
        up(zones=[OK])
    said = str(info.value)
    assert "\n" not in said and state in said and info.value.reason == ("failed" if state == "FAILED" else "ended")
    assert ours(fast) == set() and records.load_all() == []
    assert any(m == "DELETE" and "queuedResources/onechip-v5e-1" in p for m, p, _ in fast.requests)


def test_a_poll_through_an_outage_waits_the_retry_after_the_api_asked_for(monkeypatch):
    # Before: a poll read through an outage again every poll pause (5 s), whatever Retry-After its answers asked for:
    # a 503 asking for 120 s (past the call's 30-s deadline, so its own retries stopped at once) was sent again 24
    # times in those 120 s. A fake clock: each pause passes its seconds.
    clock = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        clock[0] += s

    monkeypatch.setattr(tpu_api, "time", SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep))
    busy = CloudError("GET q: HTTP 503", reason="transient", code=503)
    busy.retry_after_s = 120.0
    failures = [busy, busy]

    def read() -> str:
        if failures:
            raise failures.pop(0)
        return "answer"

    assert tpu_api.through_outages(read, 3600.0, 5.0, lambda line: None) == "answer"
    assert slept == [120.0, 120.0]
    failures[:] = [busy]  # a Retry-After past the wait's own deadline ends the wait at once, as a 30-s call does
    clock[0] = 0.0
    with pytest.raises(CloudError, match="HTTP 503"):
        tpu_api.through_outages(read, 60.0, 5.0, lambda line: None)


def test_a_wait_polled_through_503s_asking_retry_after_sends_no_read_sooner(fast, monkeypatch):
    # Before: the call that gave up on a Retry-After past its deadline said its failure without the Retry-After
    # (CloudError.reworded dropped it), so the poll read again at once (every 0.01 s here), not after 1 s
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "0.2")
    fast.retry_after_s = 1
    fast.faults.append(Fault("GET", r"/nodes/someone-elses$", "retry-after", times=2))
    started = time.monotonic()
    node = provision.poll(tpu_api.TpuApi(P), "node", OK, "someone-elses", started + 30, lambda event: None)
    assert node is not None and node["name"] == FOREIGN
    assert time.monotonic() - started >= 2.0  # two answers, each asking 1 s


def test_an_api_message_holding_a_token_is_never_shown_stored_or_printed_as_json(fast, run, monkeypatch):
    # Before: only the one error line was redacted; the API's refusal text went as it was into progress lines (a
    # rate limit's retry), `up --json`'s attempts, the probe table and zones-observed.json (`cloud zones` showed it)
    from fakes import tpu_api as fake_module

    token = "ya29.a0AfB_FAKEaccessTOKEN0123456789abcdef"
    monkeypatch.setattr(fake_module, "STOCKOUT", fake_module.STOCKOUT + f" (request Authorization: Bearer {token})")
    monkeypatch.setattr(fake_module, "RATE_LIMIT", fake_module.RATE_LIMIT + f" token {token}")
    fast.zones["europe-west4-a"].spot = "stockout"
    fast.faults.append(Fault("POST", r"/nodes\?", "rate-limit", times=1))
    spot = ["--project", P, "--provisioning", "spot", "--no-limit", "--yes"]
    said = [run("cloud", "up", *spot, "--zone", f"europe-west4-a,{OK}", "--json")]
    said.append(run("cloud", "probe", *spot[:4], "--zone", "europe-west4-a", "--yes"))
    said += [run("cloud", "zones", "--json"), run("cloud", "zones")]
    stored = (records.onechip_home() / "cloud" / "zones-observed.json").read_text(encoding="utf-8")
    assert [code for code, _, _ in said] == [0, 0, 0, 0], said
    assert "stockout" in said[0][1] and "no more capacity" in stored and "Quota exceeded" in said[0][2]
    assert all(token not in out + err for _, out, err in said) and token not in stored, said
    assert_tracked_then_down(fast)


def test_the_cost_of_a_tpu_deleted_outside_onechip_stops_where_status_first_saw_it_gone(fast, monkeypatch):
    # Before: a recorded TPU the API no longer had (deleted from the console, or by the cloud) showed 'gone' with a
    # '$ so far' that kept growing with the clock, and no word on what to do. Now the first status that sees it gone
    # stamps ended_at (as for PREEMPTED), bills no later than that, and says how to drop the record.
    record = up(zones=[OK], provisioning="spot", no_limit=True).resource
    record.granted_at = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="seconds")
    records.save(record)
    del fast.nodes[f"projects/{P}/locations/{OK}/nodes/{record.name}"]
    (first,) = api.cloud_status(CloudNameRequest(project=P))
    assert not first.exists and first.resource.ended_at is not None
    assert first.usd_so_far == pytest.approx(record.usd_per_hour, abs=0.01)
    assert any(w.startswith("gone: the API no longer has it") for w in first.warnings)
    second = _status_from_now(monkeypatch, hours=5)
    assert second.resource.ended_at == first.resource.ended_at
    assert second.usd_so_far == pytest.approx(first.usd_so_far, abs=0.01)  # not 5 more hours


def test_an_unrecorded_tpu_found_in_the_api_shows_its_own_pricing_model_and_a_price(fast):
    # Before: a labelled TPU found with --zone but not recorded here was shown with the API's chip name
    # ('v5litepod-1'), which no price is keyed by, so '$?' so far; a queued resource of the Spot tier (QueuedResource
    # .spot) read as flex-start, and a node with schedulingConfig.preemptible as on-demand.
    from onechip.cloud import offers

    fast.put("queued-resource", OK, "spot-qr", "WAITING_FOR_RESOURCES")
    fast.queued[f"projects/{P}/locations/{OK}/queuedResources/spot-qr"].update(spot={}, _rule="never")  # it waits
    fast.put("node", OK, "old-node", "READY")
    fast.nodes[f"projects/{P}/locations/{OK}/nodes/old-node"]["schedulingConfig"] = {"preemptible": True}
    fast.nodes[f"projects/{P}/locations/{OK}/nodes/old-node"]["createTime"] = (
        datetime.now(UTC) - timedelta(hours=2)
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    fast.put("node", OK, "od-node", "READY")
    fast.put("queued-resource", OK, "flex-qr", "WAITING_FOR_RESOURCES")  # provisioningModel FLEX_START
    fast.queued[f"projects/{P}/locations/{OK}/queuedResources/flex-qr"].update(runDuration={"maxRunDuration": "3600s"})
    fast.put("queued-resource", OK, "guaranteed-qr", "WAITING_FOR_RESOURCES")
    fast.queued[f"projects/{P}/locations/{OK}/queuedResources/guaranteed-qr"].pop("provisioningModel")
    fast.queued[f"projects/{P}/locations/{OK}/queuedResources/guaranteed-qr"].update(guaranteed={}, _rule="never")
    fast.put("queued-resource", OK, "plain-qr", "WAITING_FOR_RESOURCES")  # no tier, no FLEX_START: on-demand
    fast.queued[f"projects/{P}/locations/{OK}/queuedResources/plain-qr"].pop("provisioningModel")
    fast.queued[f"projects/{P}/locations/{OK}/queuedResources/plain-qr"].update(_rule="never")
    found = {st.resource.name: st for st in api.cloud_status(CloudNameRequest(project=P, zones=[OK]))}
    assert {n: (st.resource.chip, st.resource.provisioning) for n, st in found.items()} == {
        "spot-qr": ("v5e-1", "spot"), "old-node": ("v5e-1", "spot"), "od-node": ("v5e-1", "on-demand"),
        "flex-qr": ("v5e-1", "flex-start"), "guaranteed-qr": ("v5e-1", "on-demand"), "plain-qr": ("v5e-1", "on-demand"),
    }  # fmt: skip
    spot = offers.quote("v5e-1", "spot", OK, None).usd_per_hour
    assert spot and found["old-node"].resource.usd_per_hour == spot
    assert found["old-node"].usd_so_far == pytest.approx(2 * spot, abs=0.01)  # billed from its createTime
    assert found["flex-qr"].resource.max_run_duration_s == 3600  # billing capped at its run, as `up` records one
    assert found["guaranteed-qr"].resource.max_run_duration_s is None
    assert found["spot-qr"].usd_so_far == 0  # queued, never granted: nothing bills yet
    assert any("no limit" in w for w in found["spot-qr"].warnings)  # spot bills until deleted: no run duration


def test_an_access_token_an_answer_echoes_is_never_shown_whatever_its_shape(fast):
    # Before: the access token was kept out of output by its shape alone ('ya29.', 'Authorization: Bearer'): an
    # answer that quoted the request's 'Bearer <token>' (a proxy's) showed a token of any other shape whole, in the
    # error line and in the attempts `up --json` prints. Now each token put on a request is redacted by value.
    creds = _StubCredentials()
    creds.token = "tok-RECOGNISABLE-secret-0123456789"
    fast.faults.append(Fault("GET", r"/nodes/x$", "echo-auth", times=1))
    with pytest.raises(CloudError) as info:
        provision.fetch(_api_with(creds), "node", OK, "x")
    assert fast.authorizations[-1] == f"Bearer {creds.token}"  # it was sent, in the header only
    assert "cannot use the credentials Bearer ***" in str(info.value) and "RECOGNISABLE" not in str(info.value)


def test_a_ready_node_the_api_reports_unhealthy_is_said_so(fast, run):
    # Before: a READY node whose Node.health was UNHEALTHY_MAINTENANCE showed as READY without a word, though what runs
    # on it may fail. Now its health is read with its state (CloudResource.health) and `cloud status` warns until it
    # is HEALTHY again.
    record = up(zones=[OK], provisioning="spot", no_limit=True).resource
    node = fast.nodes[f"projects/{P}/locations/{OK}/nodes/{record.name}"]
    node["health"] = "UNHEALTHY_MAINTENANCE"
    rc, out, err = run("cloud", "status", "--project", P)
    assert rc == 0, err
    assert "warning UNHEALTHY_MAINTENANCE: the API reports its node unhealthy" in " ".join(out.split())
    node["health"] = "HEALTHY"
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert st.resource.health == "HEALTHY" and not any("unhealthy" in w for w in st.warnings)
    assert_tracked_then_down(fast)


@pytest.mark.parametrize("refusal", [400, 409])
def test_a_delete_refused_while_the_resource_is_already_deleting_is_waited_out(fast, run, refusal):
    """A second delete of a node the API is already deleting (an earlier `down` interrupted, a delete from the console)
    may be refused: Google's APIs answer a request that conflicts with an operation in progress with ABORTED (HTTP 409:
    cloud.google.com/apis/design/errors) and Compute Engine with 400 resourceNotReady. Before: any refusal but NOT_FOUND
    or FAILED_PRECONDITION made `down` exit 7 with '1 may still exist', of a resource on its way out; the API's own
    word (DELETING) is now read first, and its end waited for."""
    import httpx

    node = up(provisioning="spot", max_hours=1.0, zones=[OK]).resource
    fast.delete_s = 0.5  # another delete is under way: the node shows DELETING for 0.5 s, then is gone
    path = f"/v2/projects/{P}/locations/{OK}/nodes/{node.node_id}"
    assert httpx.delete(fast.url + path, timeout=10).status_code == 200
    fast.faults.append(Fault("DELETE", rf"/nodes/{node.node_id}$", refusal, times=100))
    code, _, err = run("cloud", "down", "--project", P, "--yes")
    assert code == 0 and "may still exist" not in err, err
    assert ours(fast) == set() and records.load_all() == []


def test_a_tpu_gone_since_is_shown_with_no_ip(fast, run):
    """Before: `cloud status` of a TPU deleted outside onechip (or a flex-start run ended: its node deleted) kept the
    external IP it last had, in the record and on screen ('gone, spot, IP 203.0.113.7'), though the address is
    released and may be another VM's now; `cloud down` then stopped engines over ssh at that address."""
    fast.external_ip = "203.0.113.7"
    node = up(provisioning="spot", max_hours=1.0, zones=[OK]).resource
    assert node.external_ip == fast.external_ip
    fast.nodes.pop(f"projects/{P}/locations/{OK}/nodes/{node.node_id}")  # deleted from the console
    rc, out, err = run("cloud", "status", "--project", P, "--json")
    (gone,) = json.loads(out)["resources"]
    assert rc == 0 and not gone["exists"] and gone["resource"]["external_ip"] is None, out
    assert records.load_all()[0].external_ip is None
    rc, out, err = run("cloud", "status", "--project", P)
    assert rc == 0 and fast.external_ip not in out + err and f"{node.name} (node) in {OK}: gone, spot, no IP," in out


def test_a_failed_demo_deletes_its_request_when_this_machine_is_ahead_of_the_api(fast, tmp_path, monkeypatch):
    # created_at is stamped by the API's clock (TpuApi.now, cloud68), the demo's start was by this machine's: with
    # this machine 10 min ahead, the demo's own request seemed made before the demo and was left queued (billed on
    # grant). What the demo created is what was not recorded before it began.
    fast.clock_offset_s = -600.0
    monkeypatch.setattr("onechip.cloud.tpu_api.RETRIES", 1)
    fast.faults.append(Fault("GET", rf"{OK}/queuedResources/onechip-v5e-1$", 403, after=1))  # up stops (not an outage)
    with pytest.raises(CloudError) as info:
        _demo(tmp_path)
    assert str(info.value).endswith("; the demo deleted queued-resource onechip-v5e-1 (us-west4-a)"), info.value
    fast.faults.clear()
    assert ours(fast) == set() and records.load_all() == []
