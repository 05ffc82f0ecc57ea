"""`cloud down` once one send met an outage: the others are sent with one try each (provision.down), and `delete`
sends them again under the down's bound. A rate limit (429) on another TPU's first send must still be sent again, and
credentials refused (401, 'auth') must not be sent again (passes as it is)."""

from __future__ import annotations

import pytest
from test_cloud_qa62 import FAR, OK, P, _nodes

from fakes.clock import SleepClock
from fakes.tpu_api import Fault
from onechip.api import _cloud
from onechip.cloud import provision, records, tpu_api
from onechip.errors import CloudDownError
from onechip.schemas.cloud import CloudNameRequest


def test_after_an_outage_a_rate_limited_send_is_sent_again_and_refused_credentials_are_not(fast, run, monkeypatch):
    _nodes(run, (("a", OK), ("b", OK), ("c", FAR), ("d", FAR)))
    monkeypatch.setenv("ONECHIP_CLOUD_DEADLINE_S", "30")  # tpu_api's default call deadline
    monkeypatch.setenv("ONECHIP_CLOUD_POLL_S", "5")  # tpu_api's default poll
    fast.faults += [
        Fault("DELETE", "/nodes/a$", 503, times=6),  # a's call spends its retries: the API is seen down
        Fault("DELETE", "/nodes/b$", 429, times=1),  # b's one try meets a rate limit, once
        Fault("DELETE", "/nodes/c$", 401, times=10**6),  # c's credentials refused, after google-auth's one refresh
    ]
    SleepClock(monkeypatch, provision, tpu_api)
    sends: list[str] = []
    real_send = tpu_api.send

    def send(http, method, url, **kw):
        if method == "DELETE":
            sends.append(url.rsplit("/", 1)[-1])
        return real_send(http, method, url, **kw)

    monkeypatch.setattr(tpu_api, "send", send)
    with pytest.raises(CloudDownError) as failed:
        _cloud.cloud_down(CloudNameRequest(project=P), lambda e: None, records.load_all())
    result = failed.value.result
    assert {d.split()[1] for d in result.deleted} == {"a", "b", "d"}, result
    assert [f.split()[1] for f in result.failed] == ["c"], result
    assert failed.value.reason == "auth"
    # c: one send, sent again once on its 401 as google-auth's AuthorizedSession does (tpu_api.TpuApi._once); never
    # again after 'auth' stands
    assert sends.count("c") == 2, sends
    assert sends.count("b") == 2, sends  # its 429, then the send `delete` made again, answered
