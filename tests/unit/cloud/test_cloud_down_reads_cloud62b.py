"""`cloud down` through an outage of the whole API, its label reads included: each TPU's read of onechip's label
(provision._ours) rides the outage out under the down's one bound (provision.DOWN_WAIT_S, all its TPUs together), as
its deletes do; past it, exit 7 names each TPU that may still exist with the command that deletes it. A read refused
for another reason (404: gone; 403: refused) is met at once, as before."""

from __future__ import annotations

import pytest

from fakes.clock import SleepClock
from fakes.tpu_api import Fault
from onechip.api import _cloud
from onechip.cloud import provision, records, tpu_api
from onechip.errors import CloudDownError
from onechip.schemas.cloud import CloudNameRequest

P = "proj-1"
OK = "us-west4-a"
FAR = "us-east1-d"  # granted everything too (the fake's default Zone)
POLL_S = 5.0  # tpu_api's default poll (env_poll_s): the pause between reads through an outage
NODE = r"/nodes/[^/]+$"  # a node's own path (GET: its read; DELETE: its delete), not a zone's list


def _four_nodes(run, monkeypatch) -> SleepClock:
    """TPUs a, b (us-west4-a) and c, d (us-east1-d) made, then the default call deadline and poll on the fake clock."""
    for name, zone in (("a", OK), ("b", OK), ("c", FAR), ("d", FAR)):
        rc, out, err = run("cloud", "up", "--project", P, "--zone", zone, "--name", name, "--provisioning", "spot",
                           "--no-limit", "--yes")  # fmt: skip
        assert rc == 0, (out, err)
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")  # tpu_api's default call deadline
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", f"{POLL_S:g}")
    return SleepClock(monkeypatch, provision, tpu_api)


def _timed(
    monkeypatch, clock: SleepClock, outage_end_s: float | None = None, fake=None
) -> list[tuple[str, str, float]]:
    """(method, node, clock second) of every request to a node's own path; with `outage_end_s`, the fake's faults
    are cleared at the first request on or past that clock second (the outage ends then)."""
    seen: list[tuple[str, str, float]] = []
    real_send = tpu_api.send

    def send(http, method, url, **kw):
        if outage_end_s is not None and clock.now >= outage_end_s:
            fake.faults.clear()
        if "/nodes/" in url:
            seen.append((method, url.rsplit("/", 1)[-1], clock.now))
        return real_send(http, method, url, **kw)

    monkeypatch.setattr(tpu_api, "send", send)
    return seen


def test_a_whole_api_outage_is_read_through_for_the_downs_bound_then_exit_7_names_each_tpu(fast, run, monkeypatch):
    # every request answered 503: each TPU's label read failed after one call (15 s of backoff), so 4 TPUs ended in
    # 60 s with exit 7, while an outage of the deletes alone is sent again for the whole bound
    clock = _four_nodes(run, monkeypatch)
    fast.faults += [Fault("GET", "/", 503, times=10**6), Fault("DELETE", "/", 503, times=10**6)]
    seen = _timed(monkeypatch, clock)
    started = clock.now
    rc, out, err = run("cloud", "down", "--project", P, "--yes")
    assert rc == 7, (rc, out, err)  # CloudDownError's exit code (cli: EXIT_CODES)
    # the down's one bound begins as it starts (api.down_deadline): its zone lists, failed too, are within it
    end_s = started + provision.DOWN_WAIT_S
    assert clock.now <= end_s, clock.now - started  # nothing read past the one bound
    for name in "abcd":
        last = max(t for m, n, t in seen if (m, n) == ("GET", name))
        # read again until the next pause (POLL_S) would pass the down's bound: within two pauses of its end
        assert last >= end_s - 2 * POLL_S, (name, last - started)
        node = next(r for r in records.load_all() if r.name == name)
        assert provision.delete_command(node) in err, err  # named with the command that deletes it
    assert not any(m == "DELETE" for m, _, _ in seen), seen  # no label read answered: nothing was deleted
    assert sorted(r.name for r in records.load_all()) == ["a", "b", "c", "d"]  # each still recorded


def test_an_outage_of_reads_and_deletes_that_ends_inside_the_bound_deletes_every_tpu(fast, run, monkeypatch):
    clock = _four_nodes(run, monkeypatch)
    fast.faults += [Fault("GET", NODE, 503, times=10**6), Fault("DELETE", NODE, 503, times=10**6)]
    started = clock.now
    outage_end_s = started + 200.0  # a third of the bound (DOWN_WAIT_S, 600 s)
    seen = _timed(monkeypatch, clock, outage_end_s, fast)
    result = _cloud.cloud_down(CloudNameRequest(project=P), lambda e: None, records.load_all())
    assert sorted(d.split()[1] for d in result.deleted) == ["a", "b", "c", "d"], result
    assert records.load_all() == []
    deletes = {n: t for m, n, t in reversed(seen) if m == "DELETE"}  # each node's first delete
    # all TPUs read through together: every delete is sent within a pause (POLL_S) of the outage's end
    assert sorted(deletes) == ["a", "b", "c", "d"], seen
    assert all(outage_end_s <= t <= outage_end_s + POLL_S for t in deletes.values()), (deletes, outage_end_s)


def test_amid_an_outage_a_read_refused_or_not_found_is_met_at_once_and_the_others_read_through(
    fast, run, monkeypatch
):  # fmt: skip
    clock = _four_nodes(run, monkeypatch)
    fast.nodes.pop(
        f"projects/{P}/locations/{FAR}/nodes/d"
    )  # d gone from the API (deleted elsewhere): its reads answer 404
    fast.faults += [
        Fault("GET", "/nodes/c$", "iam-403", times=10**6),  # c's read refused (PERMISSION_DENIED, IAM)
        Fault("GET", "/nodes/[ab]$", 503, times=10**6),  # a's and b's reads meet an outage
    ]
    started = clock.now
    seen = _timed(monkeypatch, clock, started + 120.0, fast)
    with pytest.raises(CloudDownError) as info:
        _cloud.cloud_down(CloudNameRequest(project=P), lambda e: None, records.load_all())
    result = info.value.result
    assert sorted(d.split()[1] for d in result.deleted) == ["a", "b"], result  # read through the outage, deleted
    assert [f.split()[1] for f in result.failed] == ["c"], result
    assert info.value.reason == "auth", info.value  # refusals: a 403 IAM_PERMISSION_DENIED is the caller's
    assert [n for m, n, _ in seen if m == "GET"].count("c") == 1, seen  # refused once: not read again
    assert any("node d (" in k and "already gone" in k for k in result.kept), result.kept
    assert [r.name for r in records.load_all()] == ["c"]
