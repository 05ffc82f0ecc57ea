"""The agent workload and open-loop slip in the Markdown report, from a run measured against the fake."""

from __future__ import annotations

from pathlib import Path

from fakes.vllm_server import FakeVllm
from onechip.bench import run_grid
from onechip.report.markdown_bench import grids
from onechip.schemas.bench import BenchConfig


def test_agent_turns_and_cached_share_are_reported(tmp_path: Path) -> None:
    with FakeVllm(prefix_cache_block=16) as srv:
        cfg = BenchConfig(
            base_url=srv.url, workload="agent", contexts=[64], clients=[1], reps=1, output_tokens=2, turns=3
        )
        run = run_grid(cfg, tmp_path)
    text = "\n".join(grids(run))
    assert "### Agent sessions: 64-token shared prefix × 1 client" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    turns = [r for r in rows if r.count("|") == 8]
    assert [r.split("|")[1].strip() for r in turns] == ["1", "2", "3"]
    share = run.cells[0].cached_share
    assert share is not None and f"{share:.0%} (usage)" in text


def test_a_slipped_schedule_is_reported(tmp_path: Path) -> None:
    with FakeVllm(ttft_s=0.1) as srv:
        cfg = BenchConfig(
            base_url=srv.url, contexts=[16], clients=[1], reps=1, output_tokens=2, rate_per_s=40.0,
            arrivals="constant", requests_per_client=6, warmup_requests=0,
        )  # fmt: skip
        run = run_grid(cfg, tmp_path)
    text = "\n".join(grids(run))
    assert "Open-loop schedule slipped" in text and "16 ctx at 40 req/s, at most 1 in flight" in text
