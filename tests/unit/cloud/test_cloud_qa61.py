"""QA pass 61 on cloud failure paths: what `status --json` and `down --json` carry when a zone cannot be read or a
delete fails, how long a `down` through a whole outage may take, and how the zone lines read."""

from __future__ import annotations

import json

import pytest

from fakes.clock import SleepClock
from fakes.tpu_api import Fault
from onechip.api import _cloud
from onechip.cloud import auth, provision, records, tpu_api
from onechip.errors import CloudDownError, CloudError
from onechip.schemas.cloud import CloudNameRequest, ZoneOffer

P = "proj-1"
OK = "us-west4-a"
FAR = "us-east1-d"  # granted everything too (the fake's default Zone)


pytestmark = pytest.mark.usefixtures("short_deadline")  # conftest: each call's retries within 0.5 s, not 30 s


def _two_nodes(run) -> None:
    for name, zone in (("near", OK), ("far", FAR)):
        rc, out, err = run("cloud", "up", "--project", P, "--zone", zone, "--name", name, "--provisioning", "spot",
                           "--no-limit", "--yes")  # fmt: skip
        assert rc == 0, (out, err)


def test_status_json_carries_the_zone_it_could_not_list(fast, run):
    # with --zone a failed list may hide a labelled TPU that bills: the command exits 7 and said so on stderr alone,
    # stdout holding the list of what answered as if it were all (a caller parsing --json never saw the zone)
    _two_nodes(run)
    fast.unreachable.add(FAR)  # ListNodesResponse.unreachable names it (TPU API v2; AIP-217)
    rc, out, err = run("cloud", "status", "--project", P, "--zone", f"{OK},{FAR}", "--json")
    assert rc == 7, (rc, out, err)
    data = json.loads(out)  # one JSON document
    assert sorted(s["resource"]["name"] for s in data["resources"]) == ["far", "near"]
    (line,) = data["unreachable"]
    assert f"zone {FAR} (project {P}) could not be listed" in line, line
    assert data["exit_code"] == 7 and FAR in data["error"], data  # the error object's fields, as on any error


def test_status_json_carries_the_note_of_a_list_that_hid_nothing(fast, run):
    _two_nodes(run)
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "status", "--project", P, "--json")
    assert rc == 0, (rc, out, err)
    data = json.loads(out)
    assert data["unreachable"] == [] and "error" not in data, data
    (note,) = data["notes"]
    assert f"zone {FAR} (project {P}) could not be listed" in note, note


def test_down_json_on_a_partial_failure_says_what_was_deleted_and_what_was_not(fast, run):
    # it printed only {"error": the line, "exit_code": 7}: what was deleted and what was not, as one line to parse
    _two_nodes(run)
    fast.faults.append(Fault("DELETE", f"/locations/{FAR}/", 400, times=10**6))  # the API refuses far's delete
    rc, out, err = run("cloud", "down", "--project", P, "--yes", "--json")
    assert rc == 7, (rc, out, err)
    data = json.loads(out)
    assert data["deleted"] == [f"node near ({OK})"], data
    (failed,) = data["failed"]
    assert f"node far ({FAR})" in failed and "injected HTTP 400" in failed, failed  # the fake's refusal
    assert provision.delete_command(records.load_all()[0]) in failed, failed  # how to delete it
    assert data["exit_code"] == 7 and "far" in data["error"], data
    assert [r.name for r in records.load_all()] == ["far"]  # it may still exist: its record stays


@pytest.mark.usefixtures("fake_clock")  # conftest: down lists the zone through the outage for its bound
def test_down_json_names_the_zone_it_could_not_list_beside_what_it_deleted(fast, run):
    _two_nodes(run)
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "down", "--project", P, "--zone", f"{OK},{FAR}", "--yes", "--json")
    assert rc == 7, (rc, out, err)
    data = json.loads(out)
    assert sorted(data["deleted"]) == [f"node far ({FAR})", f"node near ({OK})"], data
    (line,) = data["unreachable"]
    assert f"zone {FAR} (project {P}) could not be listed" in line and data["failed"] == [], data


def test_down_through_a_whole_outage_is_bounded_once_not_per_tpu(fast, run, monkeypatch):
    # every delete refused by an outage (HTTP 503; the reads answer): each TPU's delete was sent again for its own
    # 10 minutes, one after another, so 4 TPUs held the command 40 minutes. The bound covers the command
    for name, zone in (("a", OK), ("b", OK), ("c", FAR), ("d", FAR)):
        rc, out, err = run("cloud", "up", "--project", P, "--zone", zone, "--name", name, "--provisioning", "spot",
                           "--no-limit", "--yes")  # fmt: skip
        assert rc == 0, (out, err)
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")  # the default call deadline, on the clock below
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "5")  # the default poll: tens of requests a TPU, not thousands
    fast.faults.append(Fault("DELETE", "/", 503, times=10**6))
    clock = SleepClock(monkeypatch, provision, tpu_api)
    started = clock.now
    with pytest.raises(CloudError) as info:
        _cloud.cloud_down(CloudNameRequest(project=P), targets=records.load_all())
    spent_s = clock.now - started
    # the command's bound (provision.DELETE_WAIT_S), plus one call's deadline and pause past it at most per TPU
    assert spent_s <= provision.DELETE_WAIT_S + 4 * (30 + 60), spent_s
    assert {p.split("/nodes/")[1] for m, p, _ in fast.requests if m == "DELETE"} == {"a", "b", "c", "d"}  # each sent
    said = str(info.value)
    assert all(f"node {n} in" in said for n in "abcd"), said  # each named as one that may still exist
    assert sorted(r.name for r in records.load_all()) == ["a", "b", "c", "d"]


def _three_nodes(run, monkeypatch) -> SleepClock:
    """TPUs a, b (us-west4-a) and c (us-east1-d) made, then the default call deadline and poll on the fake clock."""
    for name, zone in (("a", OK), ("b", OK), ("c", FAR)):
        rc, out, err = run("cloud", "up", "--project", P, "--zone", zone, "--name", name, "--provisioning", "spot",
                           "--no-limit", "--yes")  # fmt: skip
        assert rc == 0, (out, err)
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")  # tpu_api's default call deadline
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "5")  # tpu_api's default poll
    return SleepClock(monkeypatch, provision, tpu_api)


def test_down_of_tpus_whose_deletes_never_finish_is_bounded_once_not_per_tpu(fast, run, monkeypatch):
    # each delete's operation stays RUNNING: down sent a's delete and waited its 10 minutes, then b's, then c's, one
    # after another (1,815 s on this clock). Every delete is sent first, then all are waited for under one bound
    fast.delete_s = 10**6  # the delete operations never finish (within this test)
    clock = _three_nodes(run, monkeypatch)
    started = clock.now
    with pytest.raises(CloudDownError) as info:
        _cloud.cloud_down(CloudNameRequest(project=P), targets=records.load_all())
    spent_s = clock.now - started
    # the command's bound (provision.DELETE_WAIT_S), and the poll (5 s) that went past it
    assert provision.DELETE_WAIT_S <= spent_s <= provision.DELETE_WAIT_S + 5, spent_s
    deletes = [p.split("/nodes/")[1] for m, p, _ in fast.requests if m == "DELETE"]
    assert sorted(deletes) == ["a", "b", "c"], deletes  # each sent once: a running delete is waited on, not resent
    failed = info.value.result.failed
    assert sorted(line.split(" (")[0] for line in failed) == ["node a", "node b", "node c"], failed
    assert all("not done after 600 s" in line for line in failed), failed  # the bound, said as it is
    assert all(provision.delete_command(r) in " ".join(failed) for r in records.load_all())
    assert sorted(r.name for r in records.load_all()) == ["a", "b", "c"]  # they may still exist: recorded


def test_down_of_tpus_whose_deletes_finish_at_different_times_deletes_each(fast, run, monkeypatch):
    # waited one after another, these took 400 + 100 + 550 s; sent together, the longest alone
    fast.delete_s_of = {"a": 400.0, "b": 100.0, "c": 550.0}
    clock = _three_nodes(run, monkeypatch)
    started = clock.now
    result = _cloud.cloud_down(CloudNameRequest(project=P), targets=records.load_all())
    spent_s = clock.now - started
    assert 550 <= spent_s <= 550 + 3 * 5, spent_s  # the longest delete, and a poll (5 s) per TPU at most past it
    assert sorted(result.deleted) == [f"node a ({OK})", f"node b ({OK})", f"node c ({FAR})"] and not result.failed
    assert records.load_all() == [] and not fast.nodes
    assert len([m for m, _, _ in fast.requests if m == "DELETE"]) == 3  # each sent once


def test_down_counts_a_delete_that_finished_while_another_used_up_the_bound_as_done(fast, run, monkeypatch):
    # a's delete never finishes and uses up the bound; b's finished meanwhile (300 s), unread: it is read once then
    fast.delete_s_of = {"a": 10.0**6, "b": 300.0, "c": 10.0**6}
    clock = _three_nodes(run, monkeypatch)
    started = clock.now
    with pytest.raises(CloudDownError) as info:
        _cloud.cloud_down(CloudNameRequest(project=P), targets=records.load_all())
    assert clock.now - started <= provision.DELETE_WAIT_S + 5  # the bound, and the poll (5 s) that went past it
    assert info.value.result.deleted == [f"node b ({OK})"], info.value.result
    assert sorted(r.name for r in records.load_all()) == ["a", "c"]


def test_down_sends_a_nodes_delete_before_it_waits_out_a_provisioning_queued_resource(fast, monkeypatch):
    # the queued resource (listed first) cannot be deleted while PROVISIONING (seed): down waited it out, 300 s, and
    # only then sent the node's delete (200 s more). Every delete is sent first, the refused one sent again after
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "5")
    clock = SleepClock(monkeypatch, provision, tpu_api)
    fast.provisioning_s = 300.0  # PROVISIONING for 300 s, then ACTIVE (the fake's queued resource)
    fast.put("queued-resource", OK, "q", "PROVISIONING")
    fast.put("node", OK, "n", "READY", spot=True)
    fast.delete_s_of = {"n": 200.0}
    lines: list[str] = []
    started = clock.now
    result = _cloud.cloud_down(CloudNameRequest(project=P, zones=[OK]), lambda e: lines.append(e.message))
    spent_s = clock.now - started
    assert 300 <= spent_s <= 300 + 2 * 5, spent_s  # the PROVISIONING wait alone, and a poll (5 s) per TPU past it
    assert sorted(result.deleted) == [f"node n ({OK})", f"queued-resource q ({OK})"] and not result.failed, result
    assert any("queued-resource q is PROVISIONING: the API refuses its delete for now" in line for line in lines)
    assert not fast.nodes and not fast.queued


def test_down_help_says_the_bound_of_the_whole_command(run):
    rc, out, err = run("cloud", "down", "--help")
    assert rc == 0
    assert f"{provision.DELETE_WAIT_S / 60:g} min in all" in " ".join(out.split()), out


def test_the_note_of_a_list_that_hid_nothing_does_not_ask_to_run_it_again(fast, run):
    # the note read '(...; run it again later); without --zone only its recorded resources are taken': advice to
    # run again inside a line that says nothing was missed
    _two_nodes(run)
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "status", "--project", P)
    (note,) = [line for line in err.splitlines() if line.startswith("note:")]
    assert rc == 0 and "again" not in note, note
    rc, out, err = run("cloud", "status", "--project", P, "--zone", f"{OK},{FAR}")
    (said,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 7 and said.count("again") == 1, said  # the advice said once, where it applies


@pytest.mark.usefixtures("fake_clock")  # conftest: down lists the zone through the outage for its bound
def test_down_error_says_run_it_again_once(fast, run):
    _two_nodes(run)
    fast.unreachable.add(FAR)
    rc, out, err = run("cloud", "down", "--project", P, "--zone", f"{OK},{FAR}", "--yes")
    (said,) = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 7 and said.count("again") == 1, said


def test_zones_lines_keep_their_columns_for_an_inaccessible_zone(fake_api, run):
    # the outcome column was 11 wide, one short of 'inaccessible' (schemas.cloud.Outcome's longest): that line's date
    # and source stood one character right of the others
    for zone, outcome in ((OK, "available"), (FAR, "inaccessible")):
        records.observe(ZoneOffer(chip="v5e-1", zone=zone, provisioning="spot", outcome=outcome,
                                  source="onechip cloud probe", date="2026-12-01T00:00:00+00:00"))  # fmt: skip
    rc, out, err = run("cloud", "zones", "--chip", "v5e-1", "--provisioning", "spot")
    assert rc == 0, err
    lines = [line for line in out.splitlines() if "onechip cloud probe" in line]
    assert len(lines) == 2, out
    assert len({line.index("2026-12-01") for line in lines}) == 1, lines


@pytest.mark.parametrize("provisioning", ["spot", "flex-start"])
def test_up_polls_on_through_a_404_of_the_operation_it_was_just_given(fast, run, provisioning):
    # a create's operation read too soon answered 404 once (a read of what the API just named may not see it yet, as
    # a resource just created may not: provision.CREATE_GRACE_S); `up` stopped there, exit 7, its TPU made and left
    fast.faults.append(Fault("GET", "/operations/", 404, times=1))
    limit = ["--no-limit"] if provisioning == "spot" else []
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--provisioning", provisioning, *limit, "--yes")
    assert rc == 0, (rc, out, err)
    assert "ready" in out and "error:" not in err, (out, err)


def test_an_operation_the_api_never_has_fails_once_its_grace_is_spent(fast, monkeypatch):
    clock = SleepClock(monkeypatch, provision, tpu_api)
    started = clock.now
    missing = {"name": f"projects/{P}/locations/{OK}/operations/operation-404"}  # the fake has no such operation
    with pytest.raises(CloudError) as info, tpu_api.TpuApi(P, poll_s=5.0) as tpu:
        tpu.wait_operation(missing, "v2", 3600.0, what="create of node n")
    assert info.value.reason == "not-found" and "create of node n" in str(info.value), info.value
    # polled on for the grace, not the whole hour the wait may take
    assert tpu_api.OPERATION_GRACE_S <= clock.now - started <= tpu_api.OPERATION_GRACE_S + 5.0


class _Token:
    """google-auth credentials as Credentials.headers uses them: a token of no known shape, put on each request."""

    token = "tok-RECOGNISABLE-secret-0123456789"

    def before_request(self, request, method, url, headers):
        headers["authorization"] = f"Bearer {self.token}"


def test_down_json_of_a_delete_whose_refusal_echoes_the_token_never_shows_it(fast, run, monkeypatch):
    # the failed list is new output built from each refusal's line: the token a proxy echoed must stay out of it
    _two_nodes(run)
    monkeypatch.setattr(auth, "endpoint_override", lambda: None)  # credentials read (tpu_api still calls the fake)
    monkeypatch.setattr(auth, "_adc", lambda: (_Token(), P))
    fast.faults.append(Fault("DELETE", f"/locations/{FAR}/", "echo-auth", times=10**6))
    rc, out, err = run("cloud", "down", "--project", P, "--yes", "--json")
    (failed,) = json.loads(out)["failed"]
    assert rc == 7 and "cannot use the credentials Bearer ***" in failed, (out, err)
    assert fast.authorizations[-1] == f"Bearer {_Token.token}"  # it was sent, in the header only
    stored = [p.read_text(errors="replace") for p in records.onechip_home().rglob("*") if p.is_file()]
    assert "RECOGNISABLE" not in out + err + "".join(stored)
