"""Break pass 57 on `onechip cloud`, against the loopback fake TPU API: a stopped node's old address, down's targets
that match nothing, a create operation's error naming its resource, zones checked before anything is created."""

from __future__ import annotations

import pytest

from onechip import api
from onechip.api import _cloud
from onechip.cloud import provision, records
from onechip.schemas.cloud import CloudNameRequest, CloudUpRequest

P = "proj-1"
OK = "us-west4-a"


@pytest.fixture
def fast(fake_api, monkeypatch):
    """The fake at its quickest (as test_cloud_failures' `fast`, without its foreign node)."""
    fake_api.create_s = fake_api.wait_s = fake_api.provisioning_s = 0.02
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "0.01")
    monkeypatch.setenv("ONECHIP_CLOUD_TIMEOUT_S", "10")
    monkeypatch.setattr(provision, "QUEUE_GRACE_S", 0.2)
    monkeypatch.setattr(provision, "CREATE_GRACE_S", 0.5)
    return fake_api


def up(**kw):
    return api.cloud_up(CloudUpRequest.model_validate({"project": P, "valid_until_s": "1s", "timeout_s": 5.0, **kw}))


@pytest.mark.parametrize("state", ["PREEMPTED", "STOPPED"])
def test_a_node_that_stopped_shows_no_ip_and_down_still_stops_the_engines_at_its_last(fast, monkeypatch, state):
    # was: `cloud status` of a preempted / stopped node still showed the external IP it had while READY (kept when the
    # API showed none, and shown whatever the node's state), an address released to the cloud and maybe another VM's
    record = up(zones=[OK], provisioning="spot", max_hours=1.0).resource
    assert record.external_ip == fast.external_ip
    node = fast.nodes[f"projects/{P}/locations/{OK}/nodes/{record.name}"]
    node["state"] = state
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert st.resource.external_ip is None and st.resource.last_external_ip == fast.external_ip
    (saved,) = records.load_all()  # status saved the record (ended_at stamped): the last address is kept in it
    assert saved.external_ip is None and saved.last_external_ip == fast.external_ip
    # an endpoint the API still lists on a node that is not READY is no current address either
    node["networkEndpoints"] = [{"ipAddress": "10.0.0.2", "accessConfig": {"externalIp": "198.51.100.7"}}]
    (st,) = api.cloud_status(CloudNameRequest(project=P))
    assert st.resource.external_ip is None and st.resource.last_external_ip == fast.external_ip
    stopped: list[set[str]] = []
    monkeypatch.setattr(_cloud, "_stop_engines_on", lambda addresses, on_progress: stopped.append(addresses))
    api.cloud_down(CloudNameRequest(project=P))
    assert stopped == [{fast.external_ip}] and not fast.nodes  # the engines started there are stopped first
