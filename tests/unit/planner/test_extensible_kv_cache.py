"""vLLM 0.34 sizes the KV cache after warmup by default on CUDA and ROCm (the extensible KV cache: vllm/config/cache.py
CacheConfig.enable_extensible_kv_cache, 'If unspecified, enabled on CUDA and ROCm unless kv_cache_memory_bytes is
set'; vllm/config/vllm.py _resolve_extensible_kv_cache; absent from the 0.33.0 sdist). onechip plans the profiled
sizing, so a plan for 0.34+ on such a card serves with the flag that keeps it (the 0.34.0 sdist's own hint: 'Disable it
with --no-enable-extensible-kv-cache'), and its note says why the flag is there."""

from __future__ import annotations

from pathlib import Path

from onechip.planner import plan_model
from onechip.schemas import Plan
from onechip.schemas.serve import ServeTarget
from onechip.vllm.flags import serve_command

FLAG = "--no-enable-extensible-kv-cache"


def _said(plan: Plan) -> list[str]:
    return [w.message for w in plan.warnings if w.code == "extensible-kv-cache"]


def _argv(plan: Plan) -> list[str]:
    return serve_command(plan, ServeTarget(kind="vllm")).argv


def test_a_plan_for_034_on_an_nvidia_or_amd_card_serves_with_the_profiled_sizing(tiny_llama: Path) -> None:
    for chip in ("h100", "mi300x"):  # CUDA and ROCm: current_platform.is_cuda_alike()
        plan = plan_model(str(tiny_llama), chip, engine_version="0.34.0", max_model_len=4096)
        assert (
            plan.serve.enable_extensible_kv_cache is not None and plan.serve.enable_extensible_kv_cache.value is False
        )
        assert _argv(plan).count(FLAG) == 1
        (said,) = _said(plan)
        assert f"the command carries {FLAG}" in said and "\n" not in said


def test_no_flag_before_034_nor_where_the_pool_is_pinned_nor_off_cuda_and_rocm(tiny_llama: Path) -> None:
    older = plan_model(str(tiny_llama), "h100", engine_version="0.33.0", max_model_len=4096)
    pinned = plan_model(str(tiny_llama), "h100", engine_version="0.34.0", max_model_len=4096,
                        kv_cache_memory_bytes=4 << 30)  # fmt: skip
    tpu = plan_model(str(tiny_llama), "v5e-1", engine_version="0.34.0", max_model_len=4096)
    for plan in (older, pinned, tpu):
        assert plan.serve.enable_extensible_kv_cache is None and FLAG not in _argv(plan) and _said(plan) == []


def test_a_set_that_turns_it_back_on_replaces_the_plans_flag_and_says_so(tiny_llama: Path) -> None:
    plan = plan_model(str(tiny_llama), "h100", engine_version="0.34.0", max_model_len=4096)
    command = serve_command(plan, ServeTarget(kind="vllm", sets=["enable-extensible-kv-cache"]))
    assert FLAG not in command.argv and "--enable-extensible-kv-cache" in command.argv  # vLLM reads the last one
    assert any(w.startswith(f"--set enable-extensible-kv-cache replaces the plan's {FLAG} (") for w in command.warnings)


def test_a_card_known_by_its_memory_only_serves_with_the_profiled_sizing_too(tiny_llama: Path) -> None:
    # gpu:24GiB names no maker: vLLM on it is CUDA or ROCm (on by default) or another platform (off, where False
    # changes nothing); the command went without the flag and 0.34 sized the pool after warmup, not as planned
    plan = plan_model(str(tiny_llama), "gpu:24GiB", engine_version="0.34.0", max_model_len=4096)
    assert _argv(plan).count(FLAG) == 1
    (said,) = _said(plan)
    assert "if it is an NVIDIA or AMD one" in said and f"the command carries {FLAG}" in said
