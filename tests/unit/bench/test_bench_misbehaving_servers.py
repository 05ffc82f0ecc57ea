"""`onechip bench` against servers that misbehave in ways the fake is configured for (tests/fakes/vllm_server.py):
each request is recorded, ok or failed with its reason, and the figures come from the successful ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.vllm_server import FakeVllm, Reply
from onechip import api
from onechip.bench.runner import load_samples
from onechip.schemas.bench import BenchConfig

# OpenAI-compatible servers that predate vLLM's stream_options (or proxies that validate the OpenAI schema of an
# older release) answer 400 to a body carrying it; vLLM's own answer to an unknown field is a 400 of this shape
REFUSED = "1 validation error for ChatCompletionRequest\nstream_options\n  Extra inputs are not permitted"


def _refuse_stream_options(body: dict[str, Any]) -> Reply | None:
    """A 400 to any body carrying stream_options; None (the fake's generated stream) to the others."""
    return Reply(status=400, error=REFUSED) if "stream_options" in body else None


def test_a_server_refusing_stream_options_is_measured_without_them(tmp_path: Path) -> None:
    """Every way of asking for usage refused: the run is measured without stream_options, output tokens counted
    as for a server that sends no usage (its /tokenize of the text: 6 "tok" words each, the fake's rule), and the
    notes say why; it used to end at the probe ('probe request ... failed: HTTP 400')."""
    with FakeVllm(replies=_refuse_stream_options) as srv:
        config = BenchConfig(
            base_url=srv.url, contexts=[16], clients=[2], reps=1, output_tokens=6, requests_per_client=3,
            warmup_requests=0,
        )  # fmt: skip
        run = api.bench(config, out_dir=tmp_path)
        measured = [s for s in load_samples(tmp_path / "requests.jsonl") if not s.warmup]
        bodies = list(srv.chat_requests)
    cell = run.cells[0]
    assert cell.status == "ok" and (cell.requests_sent, cell.requests_ok, cell.requests_failed) == (6, 6, 0)
    assert {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {(6, "tokenize")}
    assert cell.reps[0].whole_run_output_tokens == 6 * 6  # 2 streams x 3 requests x 6 tokens
    measured_bodies = [b for b in bodies if "Request" in str(b["messages"])]
    assert len(measured_bodies) == 6 and not any("stream_options" in b for b in measured_bodies)
    assert any(n.startswith("server rejected stream_options") for n in run.notes)


def test_counting_a_usage_less_answer_does_not_hold_its_streams_next_request(tmp_path: Path) -> None:
    """A server that sends no usage has each answer's text counted by its /tokenize, here 100 ms late (a busy API
    server): each closed-loop stream still sends its next request when the last answer ends, so the cell's
    requests/s is the server's, clients / E2E (2 / ~0.1 s: TTFT 50 ms + 5 gaps of 10 ms), where waiting for the
    count made it clients / (E2E + 100 ms), half of it."""
    server = {"ttft_s": 0.05, "itl_s": 0.01, "usage": "never", "tokenize_s": 0.1}
    with FakeVllm(**server) as srv:  # type: ignore[arg-type]
        config = BenchConfig(
            base_url=srv.url, contexts=[16], clients=[2], reps=1, output_tokens=6, requests_per_client=4,
            warmup_requests=0,
        )  # fmt: skip
        run = api.bench(config, out_dir=tmp_path)
    measured = [s for s in load_samples(tmp_path / "requests.jsonl") if not s.warmup]
    cell = run.cells[0]
    assert cell.requests_ok == 8 and {(s.completion_tokens, s.completion_tokens_from) for s in measured} == {
        (6, "tokenize")
    }
    for stream in (0, 1):
        mine = sorted((s for s in measured if s.stream == stream), key=lambda s: s.seq)
        idle_s = [b.t_send - (a.t_done or 0.0) for a, b in zip(mine, mine[1:], strict=False)]
        assert max(idle_s) < 0.05, idle_s  # never the 100 ms /tokenize
    e2e_s = (cell.e2e_ms.mean or 0.0) / 1000
    assert cell.request_rate_per_s is not None and cell.request_rate_per_s > 0.8 * 2 / e2e_s


def test_a_server_refusing_vllms_extras_with_422_is_measured_without_them(tmp_path: Path) -> None:
    """A FastAPI server that validates the body against its own model answers 422 Unprocessable Entity to fields it
    does not know (FastAPI's RequestValidationError handler), where vLLM answers 400: either refuses the body, not the
    endpoint, so the probe goes on without min_tokens/ignore_eos; it used to end the run at the probe ('HTTP 422')."""

    def refuse_extras(body: dict[str, Any]) -> Reply | None:
        return Reply(status=422, error="min_tokens: extra fields not permitted") if "min_tokens" in body else None

    with FakeVllm(replies=refuse_extras) as srv:
        config = BenchConfig(
            base_url=srv.url, contexts=[16], clients=[1], reps=1, output_tokens=6, requests_per_client=2,
            warmup_requests=0,
        )  # fmt: skip
        run = api.bench(config, out_dir=tmp_path)
        bodies = list(srv.chat_requests)
    assert run.cells[0].status == "ok" and run.cells[0].requests_ok == 2
    assert not any("min_tokens" in b for b in bodies if "Request" in str(b["messages"]))
    assert any(n.startswith("server rejected min_tokens/ignore_eos") for n in run.notes)


def test_a_request_lost_to_a_keep_alive_close_is_sent_again_on_a_new_connection(tmp_path: Path) -> None:
    """A server that closes a reused connection as the next request arrives (uvicorn's keep-alive timeout, vLLM's
    VLLM_HTTP_TIMEOUT_KEEP_ALIVE 5 s, against an agent thinking 5 s or an open loop at 0.2 req/s) never saw that
    request: it is sent again once on a new connection (RFC 9112 section 9.3.1: a request that was never applied
    may be retried), so every request answers, with the set timings. Each stream's later requests used to fail
    ('ServerDisconnectedError: Server disconnected'), counted as the server's failures."""
    with FakeVllm(ttft_s=0.05, itl_s=0.01, drop_reused=True) as srv:
        config = BenchConfig(
            base_url=srv.url, contexts=[16], clients=[2], reps=1, output_tokens=4, requests_per_client=3,
        )  # fmt: skip
        run = api.bench(config, out_dir=tmp_path)
        chats = len(srv.chat_requests)
    cell = run.cells[0]
    assert cell.status == "ok" and (cell.requests_sent, cell.requests_ok, cell.requests_failed) == (6, 6, 0)
    assert chats == 1 + 2 * (1 + 3)  # the probe, then 2 streams x (1 warm-up + 3 measured): each answered once
    assert cell.ttft_ms.median is not None and cell.ttft_ms.median >= 50.0 - 0.1  # the fake's ttft_s, never less
