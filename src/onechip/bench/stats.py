"""Pure summaries of raw request samples: distributions, per-request latencies, windows, rep aggregates.

No I/O and no clock: every function takes `RequestSample`s (times in seconds, monotonic clock) and returns
numbers. Percentiles use linear interpolation between closest ranks (numpy's default, "type 7"). The
per-request figures (TTFT, TPOT, E2E) are defined once in schemas/figures.py, which sim reads too.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from onechip.schemas.bench import (
    LATE_SEND_MS,
    SLIPPED_SHARE,
    CellResult,
    Dist,
    RepResult,
    RequestSample,
    TurnResult,
)

# one definition with sim (schemas/figures.py): the per-request figures and the steady window
from onechip.schemas.figures import e2e_ms, measured_window, tokens_between, tpot_ms, ttft_ms, whole_run


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of sorted values, linear interpolation. Raises ValueError if empty."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def dist(values: Iterable[float]) -> Dist:
    """Count, mean, median, p90, p99 of `values` (same unit in, same unit out); an empty Dist for none."""
    v = sorted(values)
    if not v:
        return Dist()
    return Dist(
        n=len(v),
        mean=statistics.fmean(v),
        median=percentile(v, 50),
        p90=percentile(v, 90),
        p99=percentile(v, 99),
    )


def cv(values: Sequence[float]) -> float | None:
    """Coefficient of variation: sample stdev / mean. None for fewer than two values or a zero mean."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else None


def slip_ms(s: RequestSample) -> float | None:
    """Open loop: how late the request was sent, ms: t_send - t_intended (None closed loop)."""
    return (s.t_send - s.t_intended) * 1000.0 if s.t_intended is not None else None


def ttft_from_intended_ms(s: RequestSample) -> float | None:
    """Open loop: TTFT timed from the intended send, ms, so the wait for a late send is counted (the
    coordinated-omission correction). None closed loop or without a first chunk."""
    if s.t_intended is None or s.t_first is None:
        return None
    return (s.t_first - s.t_intended) * 1000.0


def e2e_from_intended_ms(s: RequestSample) -> float | None:
    """Open loop: E2E (figures.e2e_ms: to the last token chunk) timed from the intended send, ms."""
    e2e = e2e_ms(s)
    return None if s.t_intended is None or e2e is None else e2e + (s.t_send - s.t_intended) * 1000.0


def schedule_slip(measured: Sequence[RequestSample]) -> dict[str, object]:
    """Open loop: slip distribution (ms), share of sends more than LATE_SEND_MS late, and whether that share
    reaches SLIPPED_SHARE (the cell is marked). Empty for a closed loop."""
    slips = [v for v in (slip_ms(s) for s in measured) if v is not None]
    if not slips:
        return {}
    late = sum(1 for v in slips if v > LATE_SEND_MS) / len(slips)
    ok = [s for s in measured if s.status == "ok"]
    return {
        "slip_ms": dist(slips),
        "late_share": late,
        "schedule_slipped": late >= SLIPPED_SHARE,
        "ttft_from_intended_ms": dist(v for v in (ttft_from_intended_ms(s) for s in ok) if v is not None),
        "e2e_from_intended_ms": dist(v for v in (e2e_from_intended_ms(s) for s in ok) if v is not None),
    }


def cached_share(samples: Iterable[RequestSample]) -> float | None:
    """Prompt tokens served from the prefix cache / prompt tokens, over requests reporting both (usage)."""
    pairs = [(s.cached_tokens, s.prompt_tokens) for s in samples if s.cached_tokens is not None and s.prompt_tokens]
    total = sum(p for _, p in pairs)
    return sum(c for c, _ in pairs) / total if total else None


def turn_results(measured: Sequence[RequestSample]) -> list[TurnResult]:
    """Agent workload: per-turn statistics over the successful measured requests (the failed ones counted), turn
    order."""
    out = []
    for turn in sorted({s.turn for s in measured if s.turn is not None}):
        ok = [s for s in measured if s.turn == turn and s.status == "ok"]
        out.append(
            TurnResult(
                turn=turn,
                requests=len(ok),
                requests_failed=sum(1 for s in measured if s.turn == turn and s.status == "failed"),
                prompt_tokens=dist(s.prompt_tokens for s in ok if s.prompt_tokens is not None),
                cached_tokens=dist(s.cached_tokens for s in ok if s.cached_tokens is not None),
                cached_share=cached_share(ok),
                ttft_ms=dist(v for v in (ttft_ms(s) for s in ok) if v is not None),
                tpot_ms=dist(v for v in (tpot_ms(s) for s in ok) if v is not None),
                e2e_ms=dist(v for v in (e2e_ms(s) for s in ok) if v is not None),
            )
        )
    return out


def itl_ms(s: RequestSample) -> list[float]:
    """Inter-token latencies of one request, ms, by the convention in `schemas.bench.ITL_CONVENTION`.

    With per-chunk token counts (continuous usage), the gap before a chunk carrying k tokens becomes k samples
    of gap/k; tokens the first content chunk carried beyond one are spread over no gap and are not counted
    (they arrived together with the first token). Without counts, each chunk gap is one sample.
    """
    times = s.chunk_times
    out: list[float] = []
    per_chunk = s.chunk_tokens if len(s.chunk_tokens) == len(times) else None
    for i in range(1, len(times)):
        gap_ms = (times[i] - times[i - 1]) * 1000.0
        k = per_chunk[i] if per_chunk is not None else 1
        if k <= 0:
            continue
        out.extend([gap_ms / k] * k)
    return out


def chunk_itl_ms(s: RequestSample) -> list[float]:
    """Gaps between consecutive content chunks of one request, ms: one sample per gap, however many tokens
    the chunk carried (vllm bench serve's ITL)."""
    return [(b - a) * 1000.0 for a, b in zip(s.chunk_times, s.chunk_times[1:], strict=False)]


def request_share(s: RequestSample, start: float, end: float) -> float:
    """The share of `s`'s output tokens that arrived in [start, end]: a request counts fractionally at the
    window's edges, so requests/s and tok/s are counted the same way."""
    return tokens_between(s, start, end) / s.completion_tokens if s.completion_tokens else 0.0


def ended_early(s: RequestSample, output_tokens: int) -> bool:
    """True when `s` made fewer completion tokens than the max_tokens sent (`output_tokens`, or the trace entry's
    own). A count made here (re-tokenized text, one per chunk: completion_tokens_from) is no proof of that: with
    finish_reason "length" the server says it reached max_tokens (OpenAI's chat API reference), so it did not
    end early (4 chunks of 4 tokens counted 4 of 16 read as ended early)."""
    if s.completion_tokens_from != "usage" and s.finish_reason == "length":
        return False
    return (s.completion_tokens or 0) < (s.output_tokens_target or output_tokens)


def over_max_tokens(s: RequestSample, output_tokens: int) -> bool:
    """True when the server's usage reports more completion tokens than the max_tokens sent (`output_tokens`,
    or the trace entry's own). Only a usage count is judged: a count made here (re-tokenized text, chunks) can
    differ from what was generated without the server being at fault."""
    limit = s.output_tokens_target or output_tokens
    return s.completion_tokens_from == "usage" and (s.completion_tokens or 0) > limit


SLO_METRICS = {"ttft_ms": ttft_ms, "tpot_ms": tpot_ms, "e2e_ms": e2e_ms}


def slo_value(name: str, s: RequestSample) -> float | None:
    """SLO metric `name` (SLO_METRICS) of `s`, ms. An open-loop request's TTFT and E2E run from its intended
    send time: the user waited from then, and a late send must not hide that wait (coordinated omission)."""
    if s.t_intended is not None and name in ("ttft_ms", "e2e_ms"):
        return ttft_from_intended_ms(s) if name == "ttft_ms" else e2e_from_intended_ms(s)
    return SLO_METRICS[name](s)


def meets_slo(s: RequestSample, slo: dict[str, float]) -> bool:
    """True when `s` succeeded and each SLO metric (ms, upper bound; `slo_value`) is within its limit. A metric
    that cannot be computed (e.g. TPOT of a one-token answer) does not fail the request."""
    if s.status != "ok":
        return False
    for name, limit in slo.items():
        value = slo_value(name, s)
        if value is not None and value > limit:
            return False
    return True


def rep_result(
    rep: int, samples: Sequence[RequestSample], slo: dict[str, float] | None = None, open_loop: bool = False
) -> RepResult:
    """Aggregate throughput of one repetition, by both definitions: completion tokens arrived in the steady
    window / window seconds (`measured_window`; requests counted by their share of tokens in it, goodput's
    too: those meeting every SLO in `slo`), and the whole-run figure (`whole_run`)."""
    measured = [s for s in samples if not s.warmup]
    ok = sum(1 for s in measured if s.status == "ok")
    window = measured_window(samples, open_loop)
    whole_s, whole_tokens, _ = whole_run(samples)
    whole: dict[str, Any] = {
        "whole_run_s": whole_s,
        "whole_run_output_tokens": whole_tokens,
        "whole_run_tok_per_s": whole_tokens / whole_s if whole_s > 0 else 0.0,
    }
    if window is None:
        return RepResult(
            rep=rep,
            window_s=0.0,
            output_tokens=0,
            output_tok_per_s=0.0,
            requests_ok=ok,
            requests_failed=len(measured) - ok,
            **whole,
        )
    start, end = window
    tokens = sum(tokens_between(s, start, end) for s in samples)
    # counted as requests/s counts (request_share), so goodput is requests/s when every request meets the SLOs:
    # counting the ends inside the window gave 2.0/s against 1.97 requests/s (tests/unit/bench/test_bench_stats.py)
    goodput = sum(request_share(s, start, end) for s in measured if meets_slo(s, slo)) / (end - start) if slo else None
    in_window = sum(1 for s in measured if s.status == "ok" and s.t_done is not None and start <= s.t_done <= end)
    return RepResult(
        rep=rep,
        window_s=end - start,
        output_tokens=round(tokens),
        output_tok_per_s=tokens / (end - start),
        requests_ok=ok,
        requests_failed=len(measured) - ok,
        requests_in_window=in_window,
        request_share_in_window=sum(request_share(s, start, end) for s in measured),
        goodput_per_s=goodput,
        **whole,
    )


def summarize_cell(
    cell: CellResult,
    samples_by_rep: Mapping[int, Sequence[RequestSample]],
    output_tokens: int,
    slo: dict[str, float] | None = None,
    open_loop: bool = False,
) -> CellResult:
    """Fill `cell`'s statistics from its raw samples (warm-up excluded). Returns a new CellResult.

    `output_tokens` is the requested length (max_tokens); requests with fewer completion tokens count as ended
    early, those whose usage reports more as over max_tokens.
    `slo` (ms upper bounds by SLO_METRICS name) adds goodput. requests_sent / requests_ok count the measured
    requests of every rep (bench's cells and simulate's predicted ones alike: policy comparisons read them).
    """
    reps = [rep_result(r, samples_by_rep[r], slo, open_loop) for r in sorted(samples_by_rep)]
    goodputs = [r.goodput_per_s for r in reps if r.goodput_per_s is not None]
    measured = [s for r in sorted(samples_by_rep) for s in samples_by_rep[r] if not s.warmup]
    ok = [s for s in measured if s.status == "ok"]
    failed = [s for s in measured if s.status == "failed"]
    tpots = [t for t in (tpot_ms(s) for s in ok) if t is not None]
    rates = [r.output_tok_per_s for r in reps]
    # a TPOT of 0 (every token arrived in one network read) has no finite per-stream rate
    stream_rates = [1000.0 / t for t in tpots if t > 0]
    req_rates = [r.request_share_in_window / r.window_s for r in reps if r.window_s > 0]
    whole_rates = [r.whole_run_tok_per_s for r in reps if r.whole_run_s > 0]
    whole_req_rates = [whole_run(samples_by_rep[r.rep])[2] / r.whole_run_s for r in reps if r.whole_run_s > 0]
    return cell.model_copy(
        update={
            "reps": reps,
            "requests_sent": len(measured),
            "requests_ok": len(ok),
            "output_tok_per_s": statistics.median(rates) if rates else None,
            "cv_output_tok_per_s": cv(rates),
            "per_stream_tok_per_s": statistics.median(stream_rates) if stream_rates else None,
            "request_rate_per_s": statistics.median(req_rates) if req_rates else None,
            "whole_run_tok_per_s": statistics.median(whole_rates) if whole_rates else None,
            "whole_run_request_rate_per_s": statistics.median(whole_req_rates) if whole_req_rates else None,
            "goodput_per_s": statistics.median(goodputs) if goodputs else None,
            "ttft_ms": dist(v for v in (ttft_ms(s) for s in ok) if v is not None),
            "tpot_ms": dist(tpots),
            "itl_ms": dist(x for s in ok for x in itl_ms(s)),
            "itl_chunk_ms": dist(x for s in ok for x in chunk_itl_ms(s)),
            "e2e_ms": dist(v for v in (e2e_ms(s) for s in ok) if v is not None),
            "prompt_tokens_actual": dist(s.prompt_tokens for s in ok if s.prompt_tokens is not None),
            "requests_failed": len(failed),
            "requests_ended_early": sum(1 for s in ok if ended_early(s, output_tokens)),
            "requests_over_max_tokens": sum(1 for s in ok if over_max_tokens(s, output_tokens)),
            "first_error": failed[0].error if failed else None,
            "requests_asked_wait": sum(1 for s in measured if s.retry_after_s is not None),
            "asked_wait_s": sum(s.retry_after_s or 0.0 for s in measured),
            "waited_s": sum(s.waited_s for s in measured),
            "turns": turn_results(measured),
            "cached_share": cached_share(ok),
            **schedule_slip(measured),
        }
    )
