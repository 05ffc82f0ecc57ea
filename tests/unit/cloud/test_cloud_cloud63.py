"""Cloud round 63: a `cloud down --zone` whose zone lists meet an outage rides it out under the down's one bound
(provision.DOWN_WAIT_S), as its label reads and deletes do; past it, exit 7 names the zone and each TPU that may still
bill with the command that deletes it."""

from __future__ import annotations

from fakes.clock import SleepClock
from fakes.tpu_api import Fault
from onechip.cloud import provision, records, tpu_api

P = "proj-1"
OK = "us-west4-a"
POLL_S = 5.0  # tpu_api's default poll (env_poll_s): the pause between reads through an outage
LISTS = r"/locations/[^/]+/(nodes|queuedResources)(\?|$)"  # a zone's lists, not a resource's own path


def _on_the_clock(monkeypatch) -> SleepClock:
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")  # tpu_api's default call deadline
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", f"{POLL_S:g}")
    return SleepClock(monkeypatch, provision, tpu_api)


def _lists_down_until(monkeypatch, clock: SleepClock, fake, end_s: float) -> list[float]:
    """Every zone list answers 503 until clock second `end_s` (the outage ends then); returns each list's clock
    second."""
    fake.faults.append(Fault("GET", LISTS, 503, times=10**6))
    listed: list[float] = []
    real_send = tpu_api.send

    def send(http, method, url, **kw):
        if clock.now >= end_s:
            fake.faults.clear()
        if method == "GET" and url.rstrip("/").endswith(("/nodes", "/queuedResources")):
            listed.append(clock.now)
        return real_send(http, method, url, **kw)

    monkeypatch.setattr(tpu_api, "send", send)
    return listed


def test_down_zone_lists_ride_an_outage_that_ends_inside_the_bound_and_delete_what_they_find(fast, run, monkeypatch):
    # was: the --zone lists before the deletes had one call's retries (15 s of backoff), then the zone was
    # 'could not be listed' and exit 7 with nothing deleted, while the label reads and deletes ride an outage for the
    # down's 600 s: a labelled TPU not recorded here (only the list finds it) billed on
    fast.put("node", OK, "t1", "READY")  # onechip's label, no record here
    clock = _on_the_clock(monkeypatch)
    started = clock.now
    listed = _lists_down_until(monkeypatch, clock, fast, started + 200.0)  # a third of the bound
    rc, out, err = run("cloud", "down", "--project", P, "--zone", OK, "--yes")
    assert rc == 0, (rc, out, err)
    assert "deleted node t1" in " ".join(out.split()), out
    assert not fast.nodes
    assert max(listed) - started >= 200.0, listed  # listed again until the outage ended
    assert clock.now - started <= provision.DOWN_WAIT_S, clock.now - started


def test_down_zone_lists_past_the_bound_exit_7_naming_the_zone_and_each_recorded_tpu(fast, run, monkeypatch):
    rc, out, err = run("cloud", "up", "--project", P, "--zone", OK, "--name", "a", "--provisioning", "spot",
                       "--no-limit", "--yes")  # fmt: skip
    assert rc == 0, err
    (a,) = records.load_all()
    clock = _on_the_clock(monkeypatch)
    started = clock.now
    listed = _lists_down_until(monkeypatch, clock, fast, float("inf"))
    fast.faults.append(Fault("GET", r"/nodes/a$", 503, times=10**6))  # the whole API down: its label read too
    rc, out, err = run("cloud", "down", "--project", P, "--zone", OK, "--yes")
    assert rc == 7, (rc, out, err)  # CloudDownError's exit code (cli: EXIT_CODES)
    said = " ".join(err.split())
    assert f"zone {OK} (project {P}) could not be listed" in said, said
    assert provision.delete_command(a) in said, said  # what may still bill, with the command that deletes it
    end_s = started + provision.DOWN_WAIT_S
    # listed again (one try each, once the outage was met) until the next pause would pass the bound
    assert max(listed) >= end_s - 2 * POLL_S, max(listed) - started
    assert clock.now <= end_s, clock.now - started  # nothing read past the one bound
    assert [r.name for r in records.load_all()] == ["a"]  # still recorded


def test_status_does_not_ride_an_outage_of_the_zone_lists(fast, run, monkeypatch):
    # status is a look, not a cleanup: its lists keep one call's retries and name the zone unreachable
    clock = _on_the_clock(monkeypatch)
    started = clock.now
    _lists_down_until(monkeypatch, clock, fast, float("inf"))
    rc, out, err = run("cloud", "status", "--project", P, "--zone", OK)
    assert clock.now - started <= 2 * 30, clock.now - started  # two lists' call deadlines at most
    assert f"zone {OK}" in " ".join((out + err).split())
