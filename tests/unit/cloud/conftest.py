"""The loopback fake TPU API (tests/fakes/tpu_api.py) behind ONECHIP_TPU_API_ENDPOINT, a fresh onechip home,
and fast polls: no test here can reach Google or needs credentials."""

from __future__ import annotations

import pytest

from fakes.clock import SleepClock
from fakes.tpu_api import FakeTpuApi, Zone
from onechip.cloud import provision, tpu_api

TOKEN = "hf_FAKEcloudTokenabcdefghij0123456789"


@pytest.fixture
def fake_api(monkeypatch, tmp_path):
    """A FakeTpuApi with three zones: us-west4-a grants everything, europe-west4-a refuses flex-start for
    v5litepod-1 (the seed's message) and is stocked out for spot, us-central1-b is out of spot quota."""
    zones = {
        "us-west4-a": Zone(),
        "europe-west4-a": Zone(flex="unsupported", spot="stockout", on_demand="stockout"),
        "us-central1-b": Zone(flex="never", spot="quota", on_demand="quota"),
    }
    with FakeTpuApi(zones=zones, secrets={"hf-token": TOKEN}) as api:
        monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", api.url)
        monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.05")
        monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
        monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
        monkeypatch.setenv("HOME", str(tmp_path))  # no gcloud key of the real user is read
        yield api


@pytest.fixture
def short_deadline(monkeypatch):
    """Each call's retries within 0.5 s, not 30 s (test files that use it: pytestmark usefixtures)."""
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "0.5")


@pytest.fixture
def fast(fake_api, monkeypatch):
    """The fake at its quickest (test_cloud_failures and test_cloud_mcp keep
    their own `fast`: the first with a foreign node, the second with the default timeouts)."""
    fake_api.create_s = fake_api.wait_s = fake_api.provisioning_s = 0.02
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    monkeypatch.setenv("ONECHIP_CLOUD_TIMEOUT_S", "10")
    monkeypatch.setattr(provision, "QUEUE_GRACE_S", 0.2)
    monkeypatch.setattr(provision, "CREATE_GRACE_S", 0.5)
    return fake_api


@pytest.fixture
def fake_clock(fast, monkeypatch, short_deadline):
    """`fast`, with provision's and tpu_api's waits on a clock that moves only when they sleep (fakes.clock.SleepClock),
    at the default call deadline (30 s, replacing `short_deadline`'s, which a file may ask for too) and poll (5 s): a
    wait of minutes (a `down`'s DOWN_WAIT_S) runs in the time its calls take, and no call's real timeout (what is left
    of its deadline) is a fraction of a second a loaded machine can pass."""
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "5")
    return SleepClock(monkeypatch, provision, tpu_api)


@pytest.fixture
def ctrl_c_in_delete(fast, monkeypatch):
    """Call it to arm a Ctrl-C while a delete is waited on: the fake's delete operation runs on (30 s) and the first
    sleep after a DELETE was sent raises KeyboardInterrupt. The call returns the real sleep, to put back."""

    def arm():
        fast.delete_s = 30.0  # the delete's operation runs on while we wait
        real_sleep = provision.time.sleep

        def sleep(seconds):
            if any(m == "DELETE" for m, _, _ in fast.requests):
                raise KeyboardInterrupt  # Ctrl-C while the delete is waited on
            real_sleep(seconds)

        monkeypatch.setattr(provision.time, "sleep", sleep)
        return real_sleep

    return arm
