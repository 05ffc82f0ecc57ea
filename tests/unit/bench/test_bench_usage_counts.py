"""A server's usage that counts tokens below zero is no measurement: the request fails with the count named, so its
cell is summarised (a failed request) instead of the bench stopping on a rep of negative tok/s, which the stored
RepResult refuses (its rates are >= 0: schemas/bench.py Measured)."""

from __future__ import annotations

from typing import Any

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
