"""Cloud pass 68 against scenarios another fake API may run: Retry-After in each HTTP-date form RFC 9110 names, and
waits past a call's deadline said as the API asked them."""

from __future__ import annotations

import httpx
import pytest
from test_cloud_failures import OK, P

from onechip.cloud.tpu_api import TpuApi
from onechip.retry_after import retry_after_s

SENT = "Sun, 06 Nov 1994 08:49:37 GMT"  # RFC 9110 section 5.6.7's example instant, in its IMF-fixdate form


@pytest.mark.parametrize(
    "later",
    [
        "Sun, 06 Nov 1994 08:51:37 GMT",  # IMF-fixdate
        "Sunday, 06-Nov-94 08:51:37 GMT",  # obsolete RFC 850 form
        "Sun Nov  6 08:51:37 1994",  # obsolete asctime form: no zone written, and UTC all the same
        "Sun, 06 Nov 1994 08:51:37 -0000",  # RFC 5322's 'no zone known' offset: an HTTP-date is UTC (5.6.7)
    ],
)
def test_retry_after_reads_all_three_http_date_forms(later):
    # Before: the asctime form and '-0000' parsed to a naive time, read as no Retry-After at all (None), so the
    # client retried after its own backoff; RFC 9110 section 5.6.7: a recipient MUST accept all three forms, UTC
    assert retry_after_s(httpx.Headers({"Retry-After": later, "Date": SENT})) == 120.0


@pytest.mark.parametrize(
    ("asked", "said"),
    [("1234567", "1234567 s"), ("86400", "86400 s"), ("Sun, 06 Nov 1994 09:49:37 GMT", "3600 s")],
)
def test_a_retry_after_past_the_deadline_is_said_as_the_api_asked_it(monkeypatch, asked, said):
    # Before: '(the next in 1.23457e+06 s would pass the 30 s deadline ...)': the wait rounded to 6 digits, and said
    # as our own next try, not as the API's Retry-After
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")
    busy = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "try later"}}
    answer = httpx.Response(503, headers={"Retry-After": asked, "Date": SENT}, json=busy)
    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(lambda r: answer)), poll_s=0.01,
                 on_retry=lambda line: None)  # fmt: skip
    with pytest.raises(Exception) as info:
        tpu.list_nodes(OK)
    line = str(info.value)
    assert "\n" not in line and f"the API asked to wait {said} (its Retry-After or RetryInfo)" in line, line
    assert "e+" not in line, line
