"""`bench --find-max clients` against a fake server whose latency grows with concurrency by a known law."""

from __future__ import annotations

from pathlib import Path

from fakes.vllm_server import FakeVllm
from onechip.bench import find_max
from onechip.schemas.bench import BenchConfig


def test_the_answer_is_the_largest_load_the_law_allows_and_the_probes_are_the_bisections(tmp_path: Path) -> None:
    # the law: each stream's inter-token gap is 10 ms + 10 ms x the streams running as it starts, so with N clients in
    # a closed loop the slowest request's TPOT is 10 + 10 N ms (N streams run at once). SLO TPOT <= 65 ms at p100:
    # 5 clients (60 ms) meet it, 6 (70 ms) do not, so the answer is 5, found by the bracket 1, 2, 4, 8 (a miss at
    # limit 16) and the bisection 6 (miss), 5 (meets): six probes, none twice. 10 ms per client leaves 5 ms of
    # margin either side for the client's timing on a loaded machine
    with FakeVllm() as srv:
        srv.itl_for = lambda number, body: 0.010 + 0.010 * srv.running
        cfg = BenchConfig(
            base_url=srv.url,
            contexts=[16],
            reps=1,
            output_tokens=9,
            requests_per_client=2,
            find_max="clients",
            slo={"tpot_ms": 65.0},
            slo_percentile=100,
            find_max_limit=16,
        )
        result = find_max(cfg, tmp_path)
    assert result.max_clients == 5
    assert [p.load for p in result.probes] == [1, 2, 4, 8, 6, 5]
    assert [p.meets_slo for p in result.probes] == [True, True, True, False, False, True]
    for p in result.probes:  # the law's TPOT, within 5 ms
        tpot = p.at_percentile_ms["tpot_ms"]
        assert tpot is not None and abs(tpot - (10 + 10 * p.load)) < 5, (p.load, tpot)
    assert result.bound_reason == "6 clients missed the SLOs"
