"""The MCP tools as an agent meets them (helper cliqa61): their lines name the tool's arguments and say an SLO as the
CLI takes it."""

from __future__ import annotations

from pathlib import Path

from test_mcp_server import call
from test_mcp_simulate_find_max import plan_here  # noqa: F401 (the fixture)

from fakes.vllm_server import FakeVllm


def test_a_search_summary_says_its_slo_as_the_cli_takes_it(plan_here: dict) -> None:  # noqa: F811
    # the line read "... meet {'tpot_ms': 20.0} at p50": a Python dict, where --slo takes tpot_ms=20
    args = {**plan_here, "find_max": "clients", "slo": {"tpot_ms": 20, "ttft_ms": 500}, "out_dir": "s"}
    result = call("simulate_find_max", args)
    assert not result.is_error, result.content[0].text
    line = result.content[0].text
    assert " meet tpot_ms=20,ttft_ms=500 at p" in line and "{" not in line, line


def test_a_resume_against_another_server_names_base_url(tmp_path: Path) -> None:
    # 'cannot resume D: URL was http://..., now http://...': bench's CLI argument, where the tool takes base_url
    out = tmp_path / "run"
    small = {"contexts": [16], "clients": [1], "reps": 1, "output_tokens": 2, "requests_per_client": 1,
             "warmup_requests": 0, "out_dir": str(out)}  # fmt: skip
    with FakeVllm(ttft_s=0.001, itl_s=0.001) as first:
        done = call("bench", {"base_url": first.url, **small})
        assert not done.is_error, done.content[0].text
    with FakeVllm(ttft_s=0.001, itl_s=0.001) as other:
        again = call("bench", {"base_url": other.url, "resume": True, **small})
    text = again.content[0].text
    assert again.is_error and f"base_url was {first.url}, now {other.url}" in text, text
    assert "URL was" not in text
