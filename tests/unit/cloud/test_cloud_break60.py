"""Break pass 60: one zone that cannot be read among several, a zone the project may not use, a probe cancelled."""

from __future__ import annotations

import pytest

from fakes.tpu_api import Fault
from onechip.cloud import records

P = "proj-1"
OK = "us-west4-a"
FAR = "us-east1-d"  # granted everything too (the fake's default Zone)


def _two_nodes(run) -> None:
    for name, zone in (("near", OK), ("far", FAR)):
        rc, out, err = run("cloud", "up", "--project", P, "--zone", zone, "--name", name, "--provisioning", "spot",
                           "--no-limit", "--yes")  # fmt: skip
        assert rc == 0, (out, err)


# conftest: the waits on a clock that moves only when they sleep, at the default deadline and poll: a down that reads
# a zone through an outage for its whole bound (DOWN_WAIT_S) takes no real minutes, and no call's real timeout is a
# fraction of a second (0.5 s before: a loaded machine's late answer failed a zone that answered, a flaky status)
pytestmark = pytest.mark.usefixtures("fake_clock")


def test_status_without_zone_reads_every_recorded_zone_and_names_the_one_it_could_not_list(fast, run):
    # ListNodesResponse.unreachable names a location the list could not reach (TPU API v2; AIP-217). Before: status
    # without --zone listed each recorded zone, threw the list away, and one such zone failed the whole command
    # (exit 7, one error line, no TPU shown), the other zone's TPU billing unseen
    _two_nodes(run)
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "status", "--project", P)
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert "near (node) in us-west4-a: READY" in out, (out, err)  # the zone that answers is reported
    assert "far (node) in us-east1-d" in out, (out, err)  # its record is still read, by its own GET
    # without --zone only recorded TPUs are taken, and far's was read by its own GET: the failed list hid nothing, so
    # the command exits 0 (it exited 7, 'run it again', which finds nothing new) with a note naming the zone
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert rc == 0 and not said, (rc, out, err)
    assert len(notes) == 1 and f"zone {FAR} (project {P}) could not be listed" in notes[0], notes


def test_down_without_zone_exits_0_when_it_deleted_every_recorded_tpu_of_a_zone_it_could_not_list(fast, run):
    # the zone's list fails (ListNodesResponse.unreachable), its recorded TPU's own DELETE does not: without --zone
    # nothing unrecorded is taken, so every TPU down had to delete is gone; it exited 7 ('run it again')
    _two_nodes(run)
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "down", "--project", P, "--yes")
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert rc == 0 and "deleted node near (us-west4-a)" in out and "deleted node far (us-east1-d)" in out, (out, err)
    assert len(notes) == 1 and f"zone {FAR} (project {P}) could not be listed" in notes[0], notes
    assert not fast.nodes and records.load_all() == []


def test_down_with_zone_still_exits_7_when_that_zone_could_not_be_listed(fast, run):
    # with --zone the list is what finds a labelled TPU not recorded here: one failed may hide one that bills
    _two_nodes(run)
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "down", "--project", P, "--zone", FAR, "--yes")
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 7 and len(said) == 1 and f"zone {FAR} (project {P}) could not be listed" in said[0], (rc, out, err)


def test_down_without_zone_deletes_what_it_reaches_and_keeps_the_record_of_a_zone_that_fails(fast, run):
    # the zone's every request fails (HTTP 503): before, `cloud down` stopped at that zone's list and deleted nothing,
    # the reachable TPU billing on
    _two_nodes(run)
    fast.faults.append(Fault("GET", f"/locations/{FAR}/", 503, times=10**6))
    fast.faults.append(Fault("DELETE", f"/locations/{FAR}/", 503, times=10**6))
    rc, out, err = run("cloud", "down", "--project", P, "--yes")
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 7 and len(said) == 1, (rc, out, err)
    assert "deleted node near (us-west4-a)" in said[0] and FAR in said[0], said  # what went, and where it failed
    assert f"onechip cloud down --name far --zone {FAR} --project {P} --yes" in said[0], said
    assert list(fast.nodes) == [f"projects/{P}/locations/{FAR}/nodes/far"]  # the reachable one is gone
    assert [r.name for r in records.load_all()] == ["far"]  # the one not deleted stays on record


def test_status_without_zone_shows_the_zones_that_answer_when_one_fails_every_request(fast, run):
    _two_nodes(run)
    fast.faults.append(Fault("GET", f"/locations/{FAR}/", 503, times=10**6))
    rc, out, err = run("cloud", "status", "--project", P)
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert "near (node) in us-west4-a: READY" in out, (out, err)
    assert "far (node) in us-east1-d" in out and "could not be read" in out, (out, err)
    assert rc == 7 and len(said) == 1 and FAR in said[0] and "far" in said[0], said


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_up_moves_past_a_zone_the_project_may_not_use_and_names_it(fast, run, method):
    # Google's 403 PERMISSION_DENIED 'Location us-east1-d is not found or access is unauthorized.' is of that zone,
    # not of the credentials: skypilot's GCP failover blocks the zone alone and goes on (FailoverCloudErrorHandlerV2).
    # Before: `up` stopped there (exit 7, reason auth) with the next --zone never tried. Met at the zone check (GET)
    # or at the create (POST), it moves on as a stockout does, and the summary names it
    fast.faults.append(Fault(method, f"/locations/{FAR}/", "location-403", times=10**6))
    rc, out, err = run("cloud", "up", "--project", P, "--zone", f"{FAR},{OK}", "--provisioning", "spot", "--no-limit",
                       "--yes", "--json")  # fmt: skip
    assert rc == 0, (out, err)
    assert list(fast.nodes) == [f"projects/{P}/locations/{OK}/nodes/onechip-v5e-1"]
    assert f"{FAR}: " in err and "not usable for this project" in err, err
    import json

    attempts = json.loads(out)["attempts"]
    assert [(a["zone"], a["outcome"]) for a in attempts] == [(FAR, "inaccessible"), (OK, "available")], attempts


def test_up_where_no_zone_may_be_used_names_each_in_one_line(fast, run):
    fast.faults.append(Fault("POST", "/locations/", "location-403", times=10**6))
    rc, out, err = run("cloud", "up", "--project", P, "--zone", f"{FAR},{OK}", "--provisioning", "spot", "--no-limit",
                       "--yes")  # fmt: skip
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 7 and len(said) == 1, (out, err)
    assert f"{FAR}: inaccessible" in said[0] and f"{OK}: inaccessible" in said[0], said
    assert not fast.nodes and records.load_all() == []


def test_ctrl_c_while_a_probe_waits_on_its_create_deletes_its_tpu_and_says_so(fast, run, monkeypatch):
    from onechip.cloud import provision

    fast.create_s = 3600.0  # the node stays CREATING
    real_sleep = provision.time.sleep
    pressed = []

    def sleep(seconds):
        if any(m == "POST" for m, _, _ in fast.requests) and not pressed:
            pressed.append(seconds)
            raise KeyboardInterrupt  # Ctrl-C while the create is waited on
        real_sleep(seconds)

    monkeypatch.setattr(provision.time, "sleep", sleep)
    rc, out, err = run("cloud", "probe", "--project", P, "--zone", OK, "--provisioning", "spot", "--yes")
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 130 and pressed and len(said) == 1, (rc, out, err)
    assert "was deleted; nothing of it bills" in said[0], said
    assert not fast.nodes and records.load_all() == []


@pytest.mark.parametrize("kind", ["spot", "flex-start"])
def test_a_delete_rate_limited_past_one_calls_deadline_is_sent_again_within_the_deletes_own_wait(fast, run, kind):
    # google.rpc.RetryInfo asks for 2 s (retryDelay), past the call's 0.5-s deadline (a per-minute rate limit asks up
    # to 60 s, past the default 30 s). The refused delete made nothing and the TPU bills on; before, `down` gave up at
    # once ('1 may still exist', exit 7), though a delete waits up to DELETE_WAIT_S for the API (PROVISIONING,
    # DELETING). Now it is sent again after the wait asked for, within that bound
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--provisioning", kind, "--yes",
                       *(["--no-limit"] if kind == "spot" else []))  # fmt: skip
    assert rc == 0, (out, err)
    fast.retry_after_s = 2
    fast.faults.append(Fault("DELETE", "/(nodes|queuedResources)/", "retry-info", times=1))
    rc, out, err = run("cloud", "down", "--project", P, "--yes")
    assert rc == 0 and "may still exist" not in err, (out, err)
    assert [m for m, _, _ in fast.requests].count("DELETE") == 2  # refused once, then sent again
    assert not fast.nodes and not fast.queued and records.load_all() == []
