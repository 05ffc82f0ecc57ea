"""sim's figures and bench's statistics read a cell the same way: one definition of TTFT, TPOT and which
samples count (schemas/figures.py), so a failed request moves neither."""

from __future__ import annotations

import pytest

from onechip.bench import stats
from onechip.schemas.bench import CellResult, RequestSample
from onechip.sim.figures import figures


def _sample(stream: int, t_send: float, ttft_s: float, tokens: int, **extra: object) -> RequestSample:
    first, last = t_send + ttft_s, t_send + ttft_s + 0.01 * (tokens - 1)
    times = [first + 0.01 * i for i in range(tokens)]
    fields: dict[str, object] = dict(context_tokens=8, clients=2, rep=0, stream=stream, seq=0, t_send=t_send,
                                     t_first=first, t_last=last, t_done=last, completion_tokens=tokens,
                                     chunk_times=times, chunk_tokens=[1] * tokens)  # fmt: skip
    return RequestSample(**(fields | extra))


def test_a_failed_request_counts_in_neither_bench_nor_sim() -> None:
    samples = [
        _sample(0, 0.0, 0.10, 8),
        _sample(1, 0.0, 0.20, 8),
        _sample(0, 0.2, 0.30, 8),
        # cut after its first tokens: bench drops it from TTFT/TPOT and its tokens from tok/s
        _sample(1, 0.3, 5.00, 3, status="failed", error="stream ended without a final usage chunk"),
    ]
    cell = stats.summarize_cell(CellResult(context_tokens=8, clients=2, status="ok"), {0: samples}, 8)
    got = figures(samples)
    assert got.ttft_ms == pytest.approx(cell.ttft_ms.median) == pytest.approx(200.0)  # of 100, 200, 300 ms
    assert got.tpot_ms == pytest.approx(cell.tpot_ms.median) == pytest.approx(10.0)
