"""Chunks that arrive in one network read, at the steady window's end (timing71).

Found running `onechip bench --clients 4` against the fake (TTFT 50 ms, 8 one-token chunks 10 ms apart): a stall
made each stream's last 5-6 chunks arrive in one read, ~1 ms after the window's end (stream 0's last answer), and
the steady window kept 145 of the 160 tokens: 195 tok/s steady against 214 for the whole run, ramp and drain
included. A chunk was spread over the gap since the chunk before it, but one stamped with the chunk before it (the
same read) counted at its arrival, so the same tokens counted differently as one event of k tokens or k events of
one token in one write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fakes.vllm_server import FakeVllm, WireWrite, count_body, sse_event
from onechip import api
from onechip.bench import stats
from onechip.schemas.bench import BenchConfig, RequestSample


def sample(**kw: Any) -> RequestSample:
    return RequestSample(context_tokens=8, clients=1, rep=0, stream=0, seq=0, t_send=0.0, **kw)


@pytest.mark.parametrize(("start", "end"), [(0.0, 2.5), (1.5, 9.0), (0.0, 2.0), (2.0, 3.0), (0.0, 9.0)])
def test_k_events_in_one_read_count_as_one_event_of_k_tokens(start: float, end: float) -> None:
    """One token at 1 s, then 3 tokens at 3 s: one event of 3 tokens, or 3 one-token events read together. The 3
    were made in (1, 3], whichever way the server wrote them: [0, 2.5] holds 1 + 3 x 0.75 of them, [1.5, 9] 3 x
    0.75 + ... (1 s outside), [0, 2] 1 + 3 x 0.5. Counted at their arrival, the 2 events after the first in the
    read fell outside every window ending before 3 s (1 + 0.75 where 1 + 2.25 were made)."""
    one_event = sample(chunk_times=[1.0, 3.0], chunk_tokens=[1, 3], completion_tokens=4, t_first=1.0, t_last=3.0)
    one_read = sample(chunk_times=[1.0, 3.0, 3.0, 3.0], chunk_tokens=[1] * 4, completion_tokens=4, t_first=1.0,
                      t_last=3.0)  # fmt: skip
    no_counts = sample(chunk_times=[1.0, 3.0, 3.0, 3.0], completion_tokens=4, t_first=1.0, t_last=3.0)
    truth = (1.0 if start <= 1.0 <= end else 0.0) + 3 * max(0.0, min(3.0, end) - max(1.0, start)) / 2
    for s in (one_event, one_read, no_counts):
        assert stats.tokens_between(s, start, end) == pytest.approx(truth)


def test_a_first_read_of_several_events_counts_at_its_arrival() -> None:
    """The first read has no gap before it (the request's prefill): its events count where they arrived."""
    s = sample(chunk_times=[1.0, 1.0, 2.0], chunk_tokens=[1, 1, 1], completion_tokens=3, t_first=1.0, t_last=2.0)
    assert stats.tokens_between(s, 0.0, 1.5) == pytest.approx(2 + 0.5)
    assert stats.tokens_between(s, 1.5, 9.0) == pytest.approx(0.5)


TTFT_S, BURST_S, TOKENS = 0.030, 0.080, 6  # one token at 30 ms, the other 5 in one write at 80 ms


def _burst(number: int, body: dict[str, Any]) -> list[WireWrite]:
    """The role at once, one token at TTFT_S, then TOKENS - 1 one-token events, the finish_reason on the last, the
    final usage and [DONE], all in one write at BURST_S (a server whose writes coalesce, or a client read late)."""
    prompt = count_body(body)
    burst = b"".join(sse_event({"content": "w "}, "length" if k == TOKENS - 2 else None) for k in range(TOKENS - 1))
    burst += sse_event(None, None, (prompt, TOKENS)) + b"data: [DONE]\n\n"
    return [(0.0, sse_event({"role": "assistant", "content": ""}), False), (TTFT_S, sse_event({"content": "w "}), True),
            (BURST_S, burst, True)]  # fmt: skip


def test_lock_stepped_streams_whose_last_events_come_in_one_read_keep_them_in_the_window(tmp_path: Path) -> None:
    """4 clients x 2 requests, each answer 1 token at 30 ms and 5 in one write at 80 ms, in lock-step: the window
    runs from the last first send to the first stream's last answer, where the others' last writes come too, read
    one after another (stamps ~0.1 ms apart). Its tokens are the 48 less what fell after its end: the 5 of a burst
    were made over the 50 ms gap before it, so ~0.1 / 50 of them per stream. Counted at their arrival, 4 of each
    later stream's 5 fell outside: 36 of 48 (25% low), tok/s steady below the whole run's. The bar, 44, is
    the rule's and not the timing's: a loaded machine lags a stream's read by ms (42.2 measured at load 7)."""
    misses = []
    for attempt in range(3):  # a loaded machine can lag one stream's read by ms (test_bench_known_timings.ATTEMPTS)
        with FakeVllm(wire_script=_burst) as srv:
            config = BenchConfig(base_url=srv.url, contexts=[16], clients=[4], reps=1, output_tokens=TOKENS,
                                 requests_per_client=2, warmup_requests=0)  # fmt: skip
            rep = api.bench(config, out_dir=tmp_path / f"a{attempt}").cells[0].reps[0]
        assert (rep.requests_ok, rep.whole_run_output_tokens) == (8, 48)
        if rep.output_tokens >= 44:  # at arrival: 36; 44 leaves 4 tokens to a read lagging up to ~13 ms a stream
            return
        misses.append(rep.output_tokens)
    pytest.fail(f"steady-window tokens of 48 in each attempt: {misses}")
