"""A server's usage that counts tokens below zero is no measurement: the request fails with the count named, so its
cell is summarised (a failed request) instead of the bench stopping on a rep of negative tok/s, which the stored
RepResult refuses (its rates are >= 0: schemas/bench.py Measured)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fakes.vllm_server import FakeVllm
from onechip.bench import stats
from onechip.bench.client import StreamOutcome, _Timing
from onechip.schemas.bench import CellResult, RequestSample


def _fold(events: list[dict[str, Any]]) -> StreamOutcome:
    """The outcome of one stream whose chunks are `events`, 0.1 s apart, ended by [DONE]."""
    timing = _Timing(StreamOutcome(t_send=0.0))
    for k, event in enumerate(events):
        timing.chunk(event, 0.1 * (k + 1))
    timing.done = True
    out = timing.finish()
    out.t_done = 0.1 * (len(events) + 1)
    return out


def _content(text: str, usage: dict[str, int] | None = None) -> dict[str, Any]:
    return {"choices": [{"delta": {"content": text}}], **({"usage": usage} if usage else {})}


def test_a_negative_completion_count_fails_the_request_and_the_cell_is_summarised() -> None:
    # the final usage chunk of an OpenAI stream (stream_options.include_usage) with a count no generation gives
    out = _fold([_content("a"), _content("b"), {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": -5}}])
    assert out.error == "usage.completion_tokens -5: the server's usage counts no tokens below 0"
    sample = RequestSample(context_tokens=3, clients=1, rep=0, stream=0, seq=0, status="failed",
                           **out.model_dump())  # fmt: skip
    cell = stats.summarize_cell(CellResult(context_tokens=3, clients=1, status="ok"), {0: [sample]}, 2)
    assert cell.requests_failed == 1 and cell.output_tok_per_s == 0.0  # was a ValidationError: -12.5 tok/s


def test_a_negative_cached_count_fails_the_request_not_the_report() -> None:
    # usage.prompt_tokens_details.cached_tokens -2 made the cell's cached_share -0.67, which bench wrote (its summary
    # is a model_copy, never validated) and `report` then refused: 'cached_share: Input should be greater than or equal
    # to 0'
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": -2}}
    out = _fold([_content("a"), _content("b"), {"choices": [], "usage": usage}])
    assert out.error == "usage.prompt_tokens_details.cached_tokens -2: the server's usage counts no tokens below 0"
    assert out.cached_tokens is None


def test_a_continuous_count_that_falls_counts_no_chunk() -> None:
    # continuous usage 2 then 1 then 4: a chunk of -1 tokens was kept; the chunks' counts are dropped (finish spreads
    # the final count over the chunks, as for a server without per-chunk usage)
    usage = [{"prompt_tokens": 3, "completion_tokens": n} for n in (2, 1, 4)]
    out = _fold([_content(t, u) for t, u in zip("abc", usage, strict=True)])
    assert out.error is None and out.completion_tokens == 4 and out.chunk_tokens == []


def test_a_stored_ok_line_with_a_count_below_zero_reads_as_the_client_records_it_now() -> None:
    # an older onechip kept the server's counts and stored the answer as 'ok': `bench --resume` summarised -3 tokens
    # (or, at -1,000,000, stopped on an internal error: RepResult whole_run_tok_per_s < 0); read now, the line is the
    # failed request the client records for the same usage, its stored counts kept
    for usage in (
        {"prompt_tokens": 3, "completion_tokens": -3},
        {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": -2}},
    ):
        live = _fold([_content("a"), _content("b"), {"choices": [], "usage": usage}])
        cached = usage.get("prompt_tokens_details", {}).get("cached_tokens")  # type: ignore[attr-defined]
        older = {"t_send": 0.0, "t_first": 0.1, "t_last": 0.2, "t_done": 0.3, "chunk_times": [0.1, 0.2],
                 "prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"],
                 "cached_tokens": cached, "context_tokens": 3, "clients": 1, "rep": 0, "stream": 0, "seq": 0,
                 "status": "ok"}  # fmt: skip
        stored = RequestSample.model_validate_json(json.dumps(older))
        assert (stored.status, stored.error) == ("failed", live.error)
        assert (stored.completion_tokens, stored.cached_tokens) == (usage["completion_tokens"], cached)
    # per-chunk counts of a cumulative count that fell (2, 1, 4): the older client stored [2, -1, 3]; the client
    # now keeps none and spreads the final 4 over the chunks
    usage_by_chunk = [{"prompt_tokens": 3, "completion_tokens": n} for n in (2, 1, 4)]
    live = _fold([_content(t, u) for t, u in zip("abc", usage_by_chunk, strict=True)])
    older = {**live.model_dump(), "chunk_tokens": [2, -1, 3], "context_tokens": 3, "clients": 1, "rep": 0,
             "stream": 0, "seq": 0}  # fmt: skip
    stored = RequestSample.model_validate_json(json.dumps(older))
    assert stored.status == "ok" and stored.chunk_tokens == live.chunk_tokens == []


def _event(obj: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


@pytest.mark.parametrize(
    ("last", "said"),
    [
        # each stopped bench on an internal error (AttributeError; a ValidationError of the stored line for 1e30)
        ({"choices": [], "usage": [1]}, "usage is not an object of counts: [1]"),
        ({"choices": "nope"}, "choices is not a list of objects: 'nope'"),
        ({"choices": [], "usage": {"prompt_tokens": 1e30, "completion_tokens": 4}},
         "usage.prompt_tokens 1e+30 is not a count of tokens (a whole number up to 67,108,864)"),
        ({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": "4"}},
         "usage.completion_tokens '4' is not a count of tokens (a whole number up to 67,108,864)"),
        ({"choices": [{"delta": {}, "finish_reason": 5}]}, "finish_reason is not text: 5"),
    ],
)  # fmt: skip
def test_a_chunk_of_a_shape_no_server_sends_is_one_line_not_an_internal_error(run, tmp_path, last, said) -> None:
    events = _event({"choices": [{"index": 0, "delta": {"content": "a "}}]}) + _event(last) + b"data: [DONE]\n\n"
    with FakeVllm(wire_script=lambda n, b: [(0.0, events, True)]) as srv:
        code, _, err = run("bench", srv.url, "--contexts", "16", "--clients", "1", "--reps", "1", "--out",
                           str(tmp_path / "run"))  # fmt: skip
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 6 and "Traceback" not in err and len(lines) == 1, err
    assert lines[0] == f"error: probe request to {srv.url} failed: unparsable stream chunk: {said}"


def test_a_final_count_below_the_continuous_counts_drops_the_chunks_counts() -> None:
    # continuous usage 1, 2, 3 on the content chunks, then the usage-only final chunk says 2 (qa68a: a count that falls
    # at the end): the chunks' counts (1, 1, 1) were kept beside completion_tokens 2, and tokens_between counted 3
    # tokens of a 2-token request in a window holding it. Counts that add up past the request's are dropped (finish
    # spreads the final count, as for a count that falls mid-stream)
    usage = [{"prompt_tokens": 3, "completion_tokens": n} for n in (1, 2, 3)]
    final = {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    out = _fold([*(_content(t, u) for t, u in zip("abc", usage, strict=True)), final])
    assert out.error is None and out.completion_tokens == 2 and out.chunk_tokens == []
    sample = RequestSample(context_tokens=3, clients=1, rep=0, stream=0, seq=0, status="ok", **out.model_dump())
    assert stats.tokens_between(sample, 0.0, 9.0) == pytest.approx(2)
