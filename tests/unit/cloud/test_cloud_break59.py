"""Break pass 59: the fake TPU API's scenarios the earlier passes did not cover."""

from __future__ import annotations

import pytest

from fakes.tpu_api import Fault
from onechip.cloud import tpu_api
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
