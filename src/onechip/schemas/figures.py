"""The figures every layer reads the same way from RequestSamples (times in seconds on the client's monotonic
clock): TTFT, TPOT and E2E latency, which samples count, the steady window with the tokens inside it, and the
whole run (vllm bench serve's span).
bench/stats.py summarises them over a cell; sim/figures.py judges a simulated cell by them; they live here,
below both, so neither re-derives them (a simulated request is a RequestSample too).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from onechip.schemas.bench import RequestSample


def counted(samples: Iterable[RequestSample]) -> list[RequestSample]:
    """The samples a figure is taken over: measured (not warm-up) and answered (status 'ok'); a failed
    request has no latency, and its partial tokens are not output."""
    return [s for s in samples if not s.warmup and s.status == "ok"]


def ttft_ms(s: RequestSample) -> float | None:
    """Time to first content chunk, ms (the role-only chunk does not count; the client never records it)."""
    return (s.t_first - s.t_send) * 1000.0 if s.t_first is not None else None


def tpot_ms(s: RequestSample) -> float | None:
    """Time per output token after the first, ms: (t_last - t_first) / (completion_tokens - 1).

    Tokens come from the server's usage. None when fewer than two tokens were generated.
    """
    if s.t_first is None or s.t_last is None or not s.completion_tokens or s.completion_tokens < 2:
        return None
    return (s.t_last - s.t_first) * 1000.0 / (s.completion_tokens - 1)


def e2e_ms(s: RequestSample) -> float | None:
    """End-to-end latency, ms: the last token chunk's arrival - t_send (t_last), as vllm bench serve's E2EL
    ("Only token chunks advance the request end; the trailing usage chunk carries no token", vllm/benchmarks/lib/
    endpoint_request_func.py, 0.34.0 sdist), so TPOT = (E2E - TTFT) / (tokens - 1). A finish_reason, usage or
    [DONE] event after the last token ends the request (t_done: the next closed-loop send, the windows) but adds
    nothing here: against a server that sleeps before each of them, E2E read 80 ms where its tokens took 60. One
    exception, where vllm bench serve ends one step early: a finish chunk without output at the step of an EOS that
    usage counts (llama.cpp's server, Ollama, SGLang) is that token's (bench.client `_Timing.time_stop_step`)."""
    return (s.t_last - s.t_send) * 1000.0 if s.t_last is not None else None


def measured_window(samples: Sequence[RequestSample], open_loop: bool = False) -> tuple[float, float] | None:
    """(start, end) in which every stream was busy with measured requests that answered (`counted`).

    start = latest first counted send over streams; end = earliest last counted t_done over streams.
    Open loop, or when streams never overlap: (first counted send, last t_done). None without samples.
    A failed request bounds nothing: its tokens are not output, and one refused at once (an HTTP 500) as its
    stream's last request ended the window 1 ms after it opened: 0 tok/s for a cell whose 3 other streams answered.
    """
    measured = [s for s in counted(samples) if s.t_done is not None]
    if not measured:
        return None
    first_send: dict[int, float] = {}
    last_done: dict[int, float] = {}
    for s in measured:
        done = s.t_done if s.t_done is not None else s.t_send  # never None here: `measured` filtered on it
        first_send[s.stream] = min(first_send.get(s.stream, s.t_send), s.t_send)
        last_done[s.stream] = max(last_done.get(s.stream, done), done)
    start, end = max(first_send.values()), min(last_done.values())
    if open_loop or end <= start:
        start, end = min(first_send.values()), max(last_done.values())
    return (start, end) if end > start else None


def tokens_between(s: RequestSample, start: float, end: float) -> float:
    """Completion tokens of `s` produced in [start, end]: the first chunk's at its arrival, each later chunk's
    spread evenly over the gap since the chunk before (the decode steps that made them ran in that gap), so a
    chunk whose gap straddles an edge counts by the share of the gap inside.

    Why spread: the window's end is one stream's completion (measured_window), and streams that run in
    lock-step get their last tokens in the same instant; the client stamps each stream's read one after
    another (one event loop) and the server writes them one after another, so counted at their stamps the other
    streams' last chunks fell just after the end, every time: (clients - 1) chunks lost per repetition, 4% of
    the tokens at 4 clients x 3 requests x 6 tokens. The start edge (a send) has no such loss: the first
    tokens come a TTFT later. Chunks that arrived in one read (equal stamps) are one chunk of their tokens together,
    spread over the gap before that read: k one-token events in one write count as one event of k tokens. Counted at
    their arrival, a stream whose last events came in one read just after the window's end lost all but the first
    (4 clients, 1 + 5 tokens a request: 36 of 48 in the window, tok/s steady below the whole run's; timing71).
    The first read's chunks (no gap before them: the prefill) count at their arrival.

    Per-chunk counts when known; otherwise usage.completion_tokens is spread evenly over the content chunks
    (chunk count places tokens in time; it never counts them). Tokens usage counts beyond the per-chunk counts (the
    EOS's step in a finish chunk without output, bench.client `_Timing.time_stop_step`) are made in the step ending at
    t_last when it is after the last chunk, else with the last chunk: a window holding the request holds all of them.
    """
    times = s.chunk_times
    if s.status != "ok" or not s.completion_tokens or not times:
        return 0.0
    per: list[float] = [s.completion_tokens / len(times)] * len(times)  # spread evenly: no per-chunk counts
    if len(s.chunk_tokens) == len(times):
        per = [*s.chunk_tokens]
        if (left := s.completion_tokens - sum(per)) > 0 and s.t_last is not None and s.t_last > times[-1]:
            times, per = [*times, s.t_last], [*per, left]
        elif left > 0:
            per[-1] += left
    total, read, before = 0.0, times[0], None  # the stamp of the read a chunk came in, and of the read before it
    for b, k in zip(times, per, strict=True):
        if b > read:
            before, read = read, b
        if before is None or b < read:  # the first read (or a stamp out of order): at its arrival
            total += k if start <= b <= end else 0.0
        else:
            total += k * max(0.0, min(b, end) - max(before, start)) / (b - before)
    return total


def whole_run(samples: Sequence[RequestSample]) -> tuple[float, int, int]:
    """(duration s, output tokens, ok requests) over the whole run, as vllm bench serve, GuideLLM and AIPerf
    count it: every measured ok request's completion tokens over last measured completion - first measured
    send (ramp and drain included). (0, 0, 0) without measured samples."""
    measured = [s for s in samples if not s.warmup and s.t_done is not None]
    ok = [s for s in measured if s.status == "ok"]
    if not measured:
        return 0.0, 0, 0
    start = min(s.t_send for s in measured)
    end = max(s.t_done for s in measured if s.t_done is not None)
    return max(end - start, 0.0), sum(s.completion_tokens or 0 for s in ok), len(ok)
