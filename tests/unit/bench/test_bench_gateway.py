"""`onechip bench` through a gateway whose backend died (a router in front of replicas, one killed): the gateway
answers the bench's own control requests (/v1/models, /tokenize) 5xx until it stops routing to the dead one. Measured
here with vllm-router 0.1.17 and a SIGKILLed replica: 502 to /tokenize and /version, 500 to /v1/models, for ~0.4 s.
Before, one such answer ended the run (test_replicas' replica killed mid-bench failed ~2 runs in 10 under load)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes.vllm_server import FakeVllm
from onechip import api
from onechip.bench import runner
from onechip.bench.runner import load_samples
from onechip.errors import EndpointError
from onechip.schemas.bench import BenchConfig


def _config(url: str) -> BenchConfig:
    return BenchConfig(
        base_url=url, contexts=[16], clients=[2], reps=1, output_tokens=4, requests_per_client=2, warmup_requests=0
    )


@pytest.mark.parametrize(("path", "status"), [("/tokenize", 502), ("/tokenize", 503), ("/tokenize", 504),
                                              ("/v1/models", 500), ("/v1/models", 502)])  # fmt: skip
def test_a_gateway_error_on_a_control_request_is_sent_again_and_the_run_goes_on(
    tmp_path: Path, path: str, status: int
) -> None:
    """One `status` to `path` (the fake's first answer there; a router's to a replica just killed): asked again, the
    run measures its 2 x 2 requests, all ok. Before: 'HTTP 502 from .../tokenize' ended the run (the prompt fit's
    count: PromptBuilder.count re-raised it), and a 500 to /v1/models ended it before it measured anything."""
    with FakeVllm(fail_first={path: [status]}) as srv:
        run = api.bench(_config(srv.url), out_dir=tmp_path)
        left = srv.fail_first[path]
    cell = run.cells[0]
    assert left == []  # the failure was answered, and the request sent again
    assert cell.status == "ok" and (cell.requests_sent, cell.requests_ok, cell.requests_failed) == (4, 4, 0)
    assert len(load_samples(tmp_path / "requests.jsonl")) == 4


def test_a_gateway_that_stays_down_still_ends_the_run_saying_so(tmp_path: Path, monkeypatch) -> None:
    """/tokenize answering 502 past the wait (cut to 1 s here: waits of 0.5 s and 0.5 s, 3 tries) is no hiccup:
    the run ends with the gateway's answer and how long it was asked, as before with its first 502."""
    monkeypatch.setattr(runner, "GATEWAY_WAIT_S", 1.0)
    with FakeVllm(fail_first={"/tokenize": [502] * 10}) as srv:
        with pytest.raises(EndpointError, match=r"HTTP 502 from .*/tokenize: .*\(3 tries over 1 s\)"):
            api.bench(_config(srv.url), out_dir=tmp_path)
        left = len(srv.fail_first["/tokenize"])
    assert left == 10 - 3


def test_the_chat_probe_answered_gateway_errors_past_its_three_tries_is_asked_again(tmp_path: Path) -> None:
    """The probe's chat request (request 1) through vllm-router to a replica just killed was answered 500 ('Request
    failed: error sending request for url .../v1/chat/completions', measured) three times in 2 s: its PROBE_ATTEMPTS
    (3 tries, 0.6 s of waits) ended the run. Gateway errors are now asked again for GATEWAY_WAIT_S: here the 5th try
    is answered, and the run measures its 2 x 2 requests."""
    with FakeVllm(fail_status={1: 500, 2: 502, 3: 503, 4: 504}) as srv:
        run = api.bench(_config(srv.url), out_dir=tmp_path)
    cell = run.cells[0]
    assert cell.status == "ok" and (cell.requests_sent, cell.requests_ok, cell.requests_failed) == (4, 4, 0)
