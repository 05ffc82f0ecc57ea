"""vLLM 0.34 sizes the KV cache after warmup by default on CUDA and ROCm (the extensible KV cache: vllm/config/cache.py
CacheConfig.enable_extensible_kv_cache, 'If unspecified, enabled on CUDA and ROCm unless kv_cache_memory_bytes is
set', resolved_gpu_memory_utilization 1.0 when it is on; absent from the 0.33.0 sdist). onechip plans the profiled
sizing, so a plan for 0.34+ on such a card says so, with the flag that keeps it (the 0.34.0 sdist's own hint:
'Disable it with --no-enable-extensible-kv-cache')."""

from __future__ import annotations

from pathlib import Path

from onechip.planner import plan_model


def _said(plan: object) -> list[str]:
    return [w.message for w in plan.warnings if w.code == "extensible-kv-cache"]  # type: ignore[attr-defined]


def test_a_plan_for_034_on_an_nvidia_card_says_the_engine_sizes_the_pool_otherwise(tiny_llama: Path) -> None:
    said = _said(plan_model(str(tiny_llama), "h100", engine_version="0.34.0", max_model_len=4096))
    assert len(said) == 1 and "--no-enable-extensible-kv-cache" in said[0] and "defaults to 1.0" in said[0]
    given = _said(plan_model(str(tiny_llama), "h100", engine_version="0.34.0", max_model_len=4096, utilization=0.9))
    assert len(given) == 1 and "defaults to 1.0" not in given[0]


def test_no_note_before_034_nor_where_the_pool_is_pinned(tiny_llama: Path) -> None:
    assert _said(plan_model(str(tiny_llama), "h100", engine_version="0.33.0", max_model_len=4096)) == []
    pinned = plan_model(str(tiny_llama), "h100", engine_version="0.34.0", max_model_len=4096,
                        kv_cache_memory_bytes=4 << 30)  # fmt: skip
    assert _said(pinned) == []
