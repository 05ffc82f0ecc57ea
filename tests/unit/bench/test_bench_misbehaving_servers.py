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
