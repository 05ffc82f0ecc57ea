"""A stream whose finish_reason comes twice (helper qa67b, 2026-12-07): with the last tokens, then again in a chunk
without output well after (a proxy repeating the upstream's last chunk, as llama-done-twice repeats [DONE]). The answer
finished at the first; the second is no step of it. bench67's EOS rule (client._Timing.time_stop_step) took the second
for the EOS's step whenever usage counts more tokens than chunks (any stream carrying several tokens a chunk) and ended
E2E and TPOT there: E2E 150 ms where the server's tokens took 50."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_bench_known_timings import W_ITL_S, W_TIMEOUT_S, W_TTFT_S, Wire, bench

from fakes.vllm_server import FakeVllm

LATE_S = 0.100  # the repeated finish chunk this long after the first


def test_a_repeated_finish_chunk_after_the_answer_finished_ends_nothing(tmp_path: Path) -> None:
    wire = Wire(plan=(2, 2, 2), finish="stop")  # 6 tokens in 3 chunks, finish "stop" on the last, usage at the end

    def finish_twice(number: int, body: dict[str, Any]) -> list[Any]:
        writes = wire(number, body)
        at, tail, flag = writes.pop()  # the final usage and [DONE]
        return [*writes, (at + LATE_S, wire.event({}, "stop"), False), (at + LATE_S, tail, flag)]

    with FakeVllm(wire_script=finish_twice) as srv:
        cell, _, measured = bench(srv, tmp_path, request_timeout_s=W_TIMEOUT_S)
    assert cell.status == "ok" and {s.completion_tokens for s in measured} == {6}
    last_content_ms = (W_TTFT_S + 2 * W_ITL_S) * 1000  # 50 ms: the first finish came with these tokens
    assert cell.e2e_ms.median < last_content_ms + LATE_S * 1000 / 2  # 150 ms before: ended at the repeat
