"""QA pass 69a on what cloud69 merged: a wait the API asks for that no float holds."""

from __future__ import annotations

import httpx
import pytest

from onechip.cloud.tpu_api import TpuApi
from onechip.errors import CloudError
from onechip.retry_after import retry_after_s

P, OK = "proj-1", "us-west4-a"
DIGITS = "9" * 400  # delay-seconds is 1*DIGIT (RFC 9110 section 10.2.3): no length bound; float() reads it as inf


@pytest.mark.parametrize(
    ("retry_after", "delay", "said"),
    [
        (DIGITS, None, "2147483648 s (its Retry-After or RetryInfo), about 24,855 days 3 h,"),
        ("30", f"{DIGITS}s", "315576000000 s (its Retry-After or RetryInfo), about 3,652,500 days,"),
        ("30", f"{DIGITS}.5s", "315576000000 s (its Retry-After or RetryInfo), about 3,652,500 days,"),
    ],
)
def test_a_wait_past_any_clock_is_said_as_the_capped_wait_not_a_traceback(monkeypatch, retry_after, delay, said):
    # Before: float('9' * 400) is inf, and seconds_words / duration_words (int(inf)) raised OverflowError out of the
    # retry loop: a traceback where the far-ahead wait (cloud69) is said in one line. Now a Retry-After past 2^31 s is
    # read as 2^31 s (RFC 9111 section 1.2.2's bound on delta-seconds, as TpuApi reads an Age), a RetryInfo past
    # google.protobuf.Duration's range as its most (315,576,000,000 s).
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")
    error: dict = {"code": 503, "status": "UNAVAILABLE", "message": "try later"}
    if delay:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}]
    answer = httpx.Response(503, headers={"Retry-After": retry_after}, json={"error": error})
    tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(lambda r: answer)), poll_s=0.01,
                 on_retry=lambda line: None)  # fmt: skip
    with pytest.raises(CloudError) as info:
        tpu.list_nodes(OK)
    line = str(info.value)
    assert "\n" not in line and f"the API asked to wait {said} would pass the 30 s deadline" in line, line


def test_the_bench_and_check_clients_read_such_a_retry_after_as_a_finite_wait():
    assert retry_after_s({"retry-after": DIGITS}) == 2**31


def test_an_age_of_more_digits_than_python_converts_is_read_as_the_cap(monkeypatch):
    # Before: int() of an Age over 4,300 digits raised ValueError (Python's integer-string limit) out of every answer's
    # clock reading: any call through such a cache was a traceback. An Age past 2^31 s is 2^31 s (RFC 9111 section
    # 1.2.2), read as an Age of 2147483648 is.
    monkeypatch.setenv("ONECHIP_TPU_API_ENDPOINT", "http://127.0.0.1:9")
    offsets = []
    for age in ("9" * 5000, str(2**31)):
        headers = {"Date": "Sun, 06 Nov 1994 08:49:37 GMT", "Age": age}
        answer = httpx.Response(200, headers=headers, json={"nodes": []})
        tpu = TpuApi(P, http=httpx.Client(transport=httpx.MockTransport(lambda r, a=answer: a)), poll_s=0.01)
        assert tpu.list_nodes(OK) == []
        offsets.append(tpu.clock_offset_s)
    assert abs(offsets[0] - offsets[1]) < 60, offsets
