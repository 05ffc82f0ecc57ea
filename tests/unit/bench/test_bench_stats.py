"""bench/stats.py: pure summaries, checked against hand-computed values."""

from __future__ import annotations

import pytest

from onechip.bench import stats
from onechip.schemas.bench import CellResult, RequestSample


def sample(**kw: object) -> RequestSample:
    base: dict[str, object] = dict(context_tokens=8, clients=1, rep=0, stream=0, seq=0, t_send=0.0)
    base.update(kw)
    return RequestSample(**base)  # type: ignore[arg-type]


def test_percentiles_match_numpy_linear_definition() -> None:
    # numpy.percentile([1..10], [50, 90, 99]) = 5.5, 9.1, 9.91 (linear interpolation, "type 7")
    d = stats.dist(range(10, 0, -1))
    assert (d.n, d.mean, d.median) == (10, 5.5, 5.5)
    assert d.p90 == pytest.approx(9.1)
    assert d.p99 == pytest.approx(9.91)
    assert stats.dist([]).n == 0 and stats.dist([]).median is None


def test_cv_is_sample_stdev_over_mean() -> None:
    # stdev([90, 100, 110]) = 10 (sample), mean 100
    assert stats.cv([90.0, 100.0, 110.0]) == pytest.approx(0.1)
    assert stats.cv([5.0]) is None


def test_latencies_from_timestamps() -> None:
    # sent at 0, first content at 0.1 s, last at 0.2 s with 11 tokens: TPOT = 100 ms / 10 = 10 ms; E2E ends at
    # the last token (vllm bench serve's E2EL), not at [DONE] 50 ms later: TPOT = (E2E - TTFT) / 10
    s = sample(t_first=0.1, t_last=0.2, t_done=0.25, completion_tokens=11)
    assert stats.ttft_ms(s) == pytest.approx(100.0)
    assert stats.tpot_ms(s) == pytest.approx(10.0)
    assert stats.e2e_ms(s) == pytest.approx(200.0)
    late = sample(t_intended=-0.05, t_first=0.1, t_last=0.2, t_done=0.25, completion_tokens=11)  # sent 50 ms late
    assert stats.e2e_from_intended_ms(late) == pytest.approx(250.0)
    assert stats.tpot_ms(sample(t_first=0.1, t_last=0.1, completion_tokens=1)) is None


def test_itl_splits_multi_token_chunks_by_usage_delta() -> None:
    # chunks at 0, 20, 40 ms carrying 1, 1, 4 tokens: gaps 20 (1 token) and 20 (4 tokens -> 4 x 5 ms)
    s = sample(chunk_times=[0.0, 0.02, 0.04], chunk_tokens=[1, 1, 4], completion_tokens=6)
    assert stats.itl_ms(s) == pytest.approx([20.0, 5.0, 5.0, 5.0, 5.0])
    # without per-chunk usage each chunk gap is one sample
    s2 = sample(chunk_times=[0.0, 0.02, 0.04], completion_tokens=6)
    assert stats.itl_ms(s2) == pytest.approx([20.0, 20.0])


def test_tokens_between_uses_usage_not_chunk_count() -> None:
    # 3 chunks, usage says 9 tokens and no per-chunk counts: 3 tokens per chunk; the first chunk's at its
    # arrival (1.0, outside [1.5, 3]), the second's spread over (1, 2] (half inside), the third's over (2, 3]
    s = sample(chunk_times=[1.0, 2.0, 3.0], completion_tokens=9)
    assert stats.tokens_between(s, 1.5, 3.0) == pytest.approx(0 + 3 * 0.5 + 3)
    s2 = sample(chunk_times=[1.0, 2.0, 3.0], chunk_tokens=[1, 5, 3], completion_tokens=9)
    assert stats.tokens_between(s2, 1.5, 3.0) == pytest.approx(0 + 5 * 0.5 + 3)
    assert stats.tokens_between(s2, 0.0, 9.0) == 9  # a window holding the whole request holds all its tokens
    same_read = sample(chunk_times=[1.0, 2.0, 2.0], chunk_tokens=[1, 5, 3], completion_tokens=9)
    # one read: its chunks are one chunk of 8 tokens made over (1, 2], as one event of 8 would be (timing71; counted
    # at its arrival, the second chunk's 3 fell wholly inside [2, 3] and the first's 5 wholly outside)
    one_event = sample(chunk_times=[1.0, 2.0], chunk_tokens=[1, 8], completion_tokens=9)
    for start, end in ((2.0, 3.0), (1.5, 3.0), (1.5, 1.75)):
        assert stats.tokens_between(same_read, start, end) == stats.tokens_between(one_event, start, end)
    assert stats.tokens_between(same_read, 1.5, 3.0) == pytest.approx(8 * 0.5)
    assert stats.tokens_between(sample(status="failed", chunk_times=[1.0], completion_tokens=None), 0, 9) == 0


def test_tokens_between_counts_the_eos_step_that_per_chunk_usage_counted_after_the_last_chunk() -> None:
    # per-chunk usage 1, 1, 1, 1 on four chunks 1 s apart, then the EOS's step (a `{}` finish chunk whose usage rose by
    # one, bench.client: t_last there, no chunk) at 5: usage 5. The fifth token was made in (4, 5]: half of it in
    # [1, 4.5], all of it in a window holding the request. It was lost from every window (4 of 5 tokens, 20% low)
    s = sample(chunk_times=[1.0, 2.0, 3.0, 4.0], chunk_tokens=[1] * 4, completion_tokens=5, t_last=5.0)
    assert stats.tokens_between(s, 0.0, 9.0) == 5
    assert stats.tokens_between(s, 1.0, 4.5) == pytest.approx(4 + 0.5)
    # ... a count above the chunks' with no later step (t_last at the last chunk): the last chunk's, over its gap
    s2 = sample(chunk_times=[1.0, 2.0], chunk_tokens=[1, 1], completion_tokens=3, t_last=2.0)
    assert stats.tokens_between(s2, 0.0, 9.0) == 3 and stats.tokens_between(s2, 1.5, 2.0) == pytest.approx(2 * 0.5)


def test_lock_stepped_streams_keep_their_last_tokens_at_the_window_end() -> None:
    # two streams in lock-step, 6 one-token chunks 10 ms apart after a 40 ms TTFT, 3 requests each; stream 1's
    # chunks are stamped 0.3 ms after stream 0's (one event loop reads them in turn), so its last chunk comes
    # after the window's end (stream 0's last t_done, 0.1 ms after its last chunk). Counted at its stamp it
    # was lost, every time: 35 of 36 tokens, 2.8% low. Spread over its 10 ms gap, 0.2 ms of it is outside
    def request(stream: int, seq: int) -> RequestSample:
        lag, t0 = 0.0003 * stream, 0.0905 * seq
        chunks = [t0 + 0.040 + 0.010 * k + lag for k in range(6)]
        return sample(stream=stream, seq=seq, t_send=t0 + lag / 3, t_first=chunks[0], t_last=chunks[-1],
                      t_done=chunks[-1] + 0.0001 + lag, chunk_times=chunks, chunk_tokens=[1] * 6,
                      completion_tokens=6)  # fmt: skip

    samples = [request(stream, seq) for stream in (0, 1) for seq in range(3)]
    start, end = stats.measured_window(samples) or (0.0, 0.0)
    assert (start, end) == (pytest.approx(0.0001), pytest.approx(2 * 0.0905 + 0.090 + 0.0001))
    tokens = sum(stats.tokens_between(s, start, end) for s in samples)
    assert tokens == pytest.approx(36 - 0.0002 / 0.010)


def test_window_is_when_every_stream_is_busy_and_warmup_is_excluded() -> None:
    # stream 0 measured from t=1 to t=5, stream 1 from t=2 to t=6 -> window [2, 5]
    samples = [
        sample(stream=0, seq=0, warmup=True, t_send=0.0, t_done=1.0, chunk_times=[0.5], completion_tokens=100),
        sample(
            stream=0,
            seq=1,
            t_send=1.0,
            t_done=5.0,
            chunk_times=[2.5, 4.5],
            chunk_tokens=[3, 3],
            completion_tokens=6,
        ),
        sample(
            stream=1,
            seq=0,
            t_send=2.0,
            t_done=6.0,
            chunk_times=[3.0, 5.5],
            chunk_tokens=[2, 2],
            completion_tokens=4,
        ),
    ]
    assert stats.measured_window(samples) == (2.0, 5.0)
    rep = stats.rep_result(0, samples)
    # inside [2, 5]: 3 + 3 from stream 0; from stream 1 the first chunk's 2 (at 3.0) and of the second's 2,
    # spread over (3.0, 5.5], the 2 / 2.5 s inside: 2 x 0.8 -> 9.6 tokens over 3 s
    assert rep.output_tokens == 10  # rounded
    assert rep.output_tok_per_s == pytest.approx(9.6 / 3)
    assert (rep.requests_ok, rep.requests_failed, rep.requests_in_window) == (2, 0, 1)
    # fractional at the edges: stream 0 has 6 of 6 tokens inside, stream 1 3.6 of 4 -> 1.9 requests
    assert rep.request_share_in_window == pytest.approx(1.9)
    # whole run: 6 + 4 tokens from the first measured send (1.0) to the last completion (6.0)
    assert (rep.whole_run_s, rep.whole_run_output_tokens) == (5.0, 10)
    assert rep.whole_run_tok_per_s == pytest.approx(2.0)


def test_request_rate_agrees_with_tok_per_s_over_tokens_per_request() -> None:
    # two lock-stepped streams, 4 requests each of 10 tokens, stream 1 a quarter request behind: counting only
    # requests completed inside the window would drop stream 1's last one; the share counts it as 3/4 + ...
    samples = [
        sample(
            stream=k,
            seq=i,
            t_send=i + 0.25 * k,
            t_first=i + 0.25 * k + 0.1,
            t_last=i + 0.25 * k + 1.0,
            t_done=i + 0.25 * k + 1.0,
            completion_tokens=10,
            chunk_times=[i + 0.25 * k + 0.1 * (j + 1) for j in range(10)],
            chunk_tokens=[1] * 10,
        )
        for k in range(2)
        for i in range(4)
    ]
    cell = stats.summarize_cell(CellResult(context_tokens=8, clients=2, status="ok"), {0: samples}, 10)
    assert cell.request_rate_per_s == pytest.approx(cell.output_tok_per_s / 10)
    # whole run: 8 requests x 10 tokens over 0 .. 4.25 s
    assert cell.whole_run_tok_per_s == pytest.approx(80 / 4.25)
    assert cell.whole_run_request_rate_per_s == pytest.approx(8 / 4.25)


def test_summarize_cell_medians_failures_and_early_ends() -> None:
    ok = sample(t_first=0.1, t_last=0.2, t_done=0.2, completion_tokens=11, chunk_times=[0.1, 0.2], prompt_tokens=8)
    short = sample(
        seq=1,
        t_send=0.2,
        t_first=0.3,
        t_last=0.35,
        t_done=0.35,
        completion_tokens=6,
        chunk_times=[0.3, 0.35],
        prompt_tokens=8,
    )
    bad = sample(seq=2, t_send=0.35, t_done=0.4, status="failed", error="HTTP 400: too long")
    cell = stats.summarize_cell(CellResult(context_tokens=8, clients=1, status="ok"), {0: [ok, short, bad]}, 11)
    assert cell.requests_failed == 1 and cell.first_error == "HTTP 400: too long"
    assert cell.requests_ended_early == 1  # 6 < 11 requested
    # TPOTs 10 ms and 10 ms -> per-stream 100 tok/s
    assert cell.tpot_ms.median == pytest.approx(10.0)
    assert cell.per_stream_tok_per_s == pytest.approx(100.0)
    assert cell.prompt_tokens_actual.median == 8


def test_summarize_cell_counts_the_measured_requests_sent_and_ok() -> None:
    """requests_sent / requests_ok are filled where the statistics are (simulate's cells are summarized here too,
    and policy comparisons and the replica table read them): warm-ups are not counted, failures are sent not ok."""
    warm = sample(warmup=True, t_first=0.05, t_last=0.06, t_done=0.06, completion_tokens=2)
    ok = sample(seq=1, t_first=0.1, t_last=0.2, t_done=0.2, completion_tokens=11, chunk_times=[0.1, 0.2])
    bad = sample(seq=2, t_send=0.35, t_done=0.4, status="failed", error="HTTP 500")
    again = sample(rep=1, seq=1, t_first=0.1, t_last=0.2, t_done=0.2, completion_tokens=11, chunk_times=[0.1, 0.2])
    cell = stats.summarize_cell(
        CellResult(context_tokens=8, clients=1, status="ok"), {0: [warm, ok, bad], 1: [again]}, 11
    )
    # measured: ok, bad (rep 0) and again (rep 1); the warm-up is none of them
    assert (cell.requests_sent, cell.requests_ok, cell.requests_failed) == (3, 2, 1)


def test_goodput_counts_requests_meeting_every_slo_in_the_window() -> None:
    # one stream, three measured requests back to back over [0, 3] s; TTFTs 100, 600, 200 ms
    samples = [
        sample(
            seq=i,
            t_send=float(i),
            t_first=i + ttft,
            t_last=i + 0.9,
            t_done=i + 1.0,
            completion_tokens=10,
            chunk_times=[i + ttft, i + 0.9],
        )
        for i, ttft in enumerate([0.1, 0.6, 0.2])
    ]
    # window [0, 3]; TTFT <= 500 ms passes 2 requests -> 2 / 3 s
    rep = stats.rep_result(0, samples, {"ttft_ms": 500})
    assert rep.window_s == 3.0 and rep.goodput_per_s == pytest.approx(2 / 3)
    # TPOT of request 0 = (0.9 - 0.1) / 9 s = 88.9 ms; a 50 ms TPOT bound fails all three
    assert stats.rep_result(0, samples, {"ttft_ms": 500, "tpot_ms": 50}).goodput_per_s == 0
    assert stats.rep_result(0, samples).goodput_per_s is None
    cell = stats.summarize_cell(
        CellResult(context_tokens=8, clients=1, status="ok"), {0: samples}, 10, {"ttft_ms": 500}
    )
    assert cell.goodput_per_s == pytest.approx(2 / 3)


def test_goodput_counts_requests_as_requests_per_second_does_by_their_share_in_the_window() -> None:
    # two streams of 1-s requests, 2 tokens each (one chunk at TTFT, one at the end). Stream 0 sends at 0, 1, 2
    # (TTFT 400 ms); stream 1 sends a warm-up at -0.5, then at 0.5, 1.5, 2.5 (TTFT 500 ms).
    # Window [0.5, 3.0] (stream 1's first measured send, stream 0's last end): 2.5 s.
    # Shares in it (tokens_between / 2): stream 0's first request has its first chunk (0.4) before the window and
    # 0.5 / 0.6 of its second chunk's gap in it: (0.5 / 0.6) / 2 = 5/12; its other two are whole: 2 + 5/12.
    # Stream 1: two whole, the last one's first chunk (3.0) only: 1/2. All: 4 + 11/12 = 59/12 requests.
    s0 = [
        sample(stream=0, seq=i, t_send=float(i), t_first=i + 0.4, t_last=i + 1.0, t_done=i + 1.0,
               completion_tokens=2, chunk_times=[i + 0.4, i + 1.0])
        for i in range(3)
    ]  # fmt: skip
    s1 = [
        sample(stream=1, seq=i, t_send=i - 0.5, t_first=i, t_last=i + 0.5, t_done=i + 0.5, warmup=i == 0,
               completion_tokens=2, chunk_times=[float(i), i + 0.5])
        for i in range(4)
    ]  # fmt: skip
    rep = stats.rep_result(0, s0 + s1, {"e2e_ms": 60_000})  # every request meets it
    assert rep.window_s == pytest.approx(2.5)
    assert rep.request_share_in_window == pytest.approx(59 / 12)
    # goodput with every request good is requests/s: 59/12 / 2.5 s (counting ends in the window gave 5 / 2.5 = 2)
    assert rep.goodput_per_s == pytest.approx(59 / 12 / 2.5)
    # TTFT <= 450 ms: stream 0's requests alone, 2 + 5/12 of them in the window (counting ends gave 3 / 2.5)
    assert stats.rep_result(0, s0 + s1, {"ttft_ms": 450}).goodput_per_s == pytest.approx((2 + 5 / 12) / 2.5)
    cell = stats.summarize_cell(
        CellResult(context_tokens=8, clients=2, status="ok"), {0: s0 + s1}, 2, {"e2e_ms": 60_000}
    )
    assert cell.goodput_per_s == pytest.approx(cell.request_rate_per_s)
