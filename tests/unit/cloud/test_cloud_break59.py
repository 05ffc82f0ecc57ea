"""Break pass 59: the fake TPU API's scenarios the earlier passes did not cover."""

from __future__ import annotations

import pytest

from fakes.tpu_api import Fault
from onechip.cloud import records, tpu_api
from onechip.cloud.tpu_api import TpuApi

P = "proj-1"
OK = "us-west4-a"


@pytest.fixture
def pauses(monkeypatch):
    """The retry pauses tpu_api takes, recorded and not slept (each sleeps 0.01 s)."""
    taken: list[float] = []
    real_sleep = tpu_api.time.sleep

    def sleep(seconds):
        taken.append(seconds)
        real_sleep(0.01)

    monkeypatch.setattr(tpu_api.time, "sleep", sleep)
    return taken


@pytest.mark.parametrize("method", ["POST", "GET"])
def test_a_retry_info_retry_delay_is_waited_before_the_request_is_sent_again(fast, pauses, method):
    # google.rpc.RetryInfo (googleapis google/rpc/error_details.proto): 'Clients should wait at least this long between
    # retrying the same request' (retryDelay, a Duration: '3s'). Before: only a Retry-After header was read, so a
    # rate-limited create (POST) or list (GET) was sent again after the 0.01 s backoff here (1 s by default)
    fast.retry_after_s = 3  # the fake's RetryInfo asks for 3 s; no Retry-After header
    fast.faults.append(Fault(method, r"/nodes", "retry-info", times=1))
    tpu = TpuApi(P)
    if method == "POST":
        tpu.create_node(OK, "n1", {"acceleratorType": "v5litepod-1", "labels": {"created-by": "onechip"}})
    else:
        tpu.list_nodes(OK)
    assert [m for m, _, _ in fast.requests].count(method) == 2  # refused once, then sent again
    assert pauses and pauses[0] >= 3.0, pauses  # the 3 s RetryInfo asked for, not the 0.01 s backoff


@pytest.mark.usefixtures("fake_clock")  # conftest: down reads the zone through the outage for its whole bound
@pytest.mark.parametrize("kind", ["node", "queued-resource"])
def test_a_list_that_could_not_reach_its_zone_is_never_read_as_empty(fast, run, kind):
    # ListNodesResponse / ListQueuedResourcesResponse.unreachable: 'Locations that could not be reached' (TPU API v2,
    # v2alpha1; AIP-217: a partial list answers 200 and names what it could not reach). Before: the field was not read,
    # so `cloud down --zone Z` over a labelled TPU the API could not list said 'nothing to delete' (exit 0) while it
    # billed on, and `cloud status --zone Z` listed nothing
    fast.put(kind, OK, "theirs", "ACTIVE" if kind == "queued-resource" else "READY")  # labelled, not recorded here
    fast.unreachable.add(OK)
    for argv in (["status", "--project", P, "--zone", OK], ["down", "--project", P, "--zone", OK, "--yes"]):
        rc, out, err = run("cloud", *argv)
        said = [line for line in err.splitlines() if line.startswith("error:")]
        assert rc == 7 and len(said) == 1, (argv, rc, out, err)
        assert f"could not reach projects/{P}/locations/{OK}" in said[0] and "incomplete" in said[0], said
        assert "nothing to delete" not in out, out
    assert fast.nodes and (kind == "node" or fast.queued)  # nothing was deleted
    fast.unreachable.clear()  # the zone answers again: the TPU is found by its label and deleted
    rc, out, err = run("cloud", "down", "--project", P, "--zone", OK, "--yes")
    assert rc == 0 and "theirs" in out and not fast.nodes and not fast.queued, (out, err)


@pytest.mark.parametrize("then", ["rate-limit", "retry-info"])
def test_a_create_rate_limited_to_its_deadline_after_a_try_without_an_answer_reads_whether_that_try_landed(
    fast, run, then
):
    # The first try landed but its answer was lost (500 after the backend acted), and every retry was refused as a
    # rate limit (no effect) until the retries ran out. A rate limit to a retry says nothing of the first try, as a
    # quota or stockout to it does not (tpu_api._create reads the node then): before, the rate limit stood, the record
    # was dropped ('refused: nothing was made') and the node billed with nothing saying so, `cloud down` finding
    # nothing. Now the node is read: there, it is ours and waited on until READY
    fast.retry_after_s = 0  # RetryInfo '0s': sent again at once
    fast.faults += [Fault("POST", r"/nodes\?", "lost-500"), Fault("POST", r"/nodes\?", then, times=10**6)]
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--provisioning", "spot", "--no-limit", "--yes")
    assert len(fast.nodes) == 1  # the first try's node, billing
    assert rc == 0 and "READY" in out, (out, err)
    assert [r.node_id for r in records.load_all()] == ["onechip-v5e-1"]
    rc, out, err = run("cloud", "down", "--project", P, "--yes")
    assert rc == 0 and not fast.nodes, (out, err)


def test_a_create_rate_limited_to_its_deadline_after_a_try_that_made_nothing_leaves_nothing_recorded(fast, run):
    # the same, the first try's 500 having made nothing: the node is read, not there, and the rate limit stands
    fast.faults += [Fault("POST", r"/nodes\?", 500), Fault("POST", r"/nodes\?", "rate-limit", times=10**6)]
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--provisioning", "spot", "--no-limit", "--yes")
    said = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 7 and len(said) == 1 and "Quota exceeded for quota metric 'Create requests'" in said[0], err
    assert not fast.nodes and records.load_all() == []
