"""KV caches stored with per-token-head scales (--kv-cache-dtype int8_per_token_head / fp8_per_token_head, vLLM 0.20+):
one byte an element plus a float32 K and V scale per token and KV head (vllm/v1/kv_cache_interface.py
AttentionSpec.page_size_bytes, 0.20.0 - 0.27.1 sdists).

The expected figures are the boot logs' own lines (tests/fixtures/bootlogs, club-3090 issue 602 and PR 594: one card
pair, one checkpoint and one compose, int8_per_token_head and fp8 KV).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from factories import corpus_entry
from onechip.errors import ConfigError
from onechip.planner import rules

ROOT = Path(__file__).resolve().parents[3]
INT8_PTH = "rtx3090x2-qwen36-27b-fp8-mtp3-kvint8pth-tp2-v0240"
FP8 = "rtx3090x2-qwen36-27b-fp8-mtp3-kvfp8-tp2-v0240"


def _accuracy() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    return planner_accuracy


@pytest.mark.parametrize("name", [INT8_PTH, FP8])
def test_given_the_logged_pool_the_token_line_is_the_logs(name: str, tmp_path: Path) -> None:
    # 'GPU KV cache size: 289,661 tokens' (5.23 GiB, int8_per_token_head: 200 pages of 1,584 tokens, 181 a request)
    # and 300,220 (5.33 GiB, fp8: 205 pages of 1,600 tokens, 179 a request); without the scales the int8 row would
    # read 294,362 (+1.6%)
    entry = corpus_entry(name)
    row = _accuracy().predict(entry, tmp_path, given_pool=True)
    assert row["predicted"] == entry["logged"]["kv_cache_tokens"]
    assert row["fits"] is True


def test_the_scales_are_eight_bytes_per_token_and_head() -> None:
    scale = rules.kv_scale_bytes_per_head
    assert scale("int8_per_token_head") == scale("fp8_per_token_head") == 8
    assert scale("fp8") == scale("auto") == 0


def test_an_unknown_kv_dtype_is_still_refused() -> None:
    with pytest.raises(ConfigError, match="int4_per_token_head"):
        rules.kv_element_bytes("int4_per_token_head", "bfloat16", None)  # type: ignore[arg-type]


def test_a_release_before_the_dtype_is_refused(tmp_path: Path) -> None:
    entry = corpus_entry(INT8_PTH)
    entry = {**entry, "vllm_version": "0.19.1"}
    row = _accuracy().predict(entry, tmp_path, given_pool=True)
    assert "0.20.0+" in str(row.get("error") or row.get("skip") or row)


# fp8_per_token_head on an A100 (compute capability 8.0, no FP8): only the Triton backend lists the per-token-head
# dtypes (supported_kv_cache_dtypes of vllm/v1/attention/backends/triton_attn.py; flash_attn.py and flashinfer.py list
# none, 0.22.0, 0.25.0 and 0.34.0 sdists), and TritonAttentionImpl refuses an fp8 KV below 8.9 ('FP8 KV cache is not
# supported by the Triton attention backend ... requires SM89+', 0.34.0). It was planned with the 'fp8-kv-flashinfer'
# warning that FlashInfer would serve it; a plain 'fp8' KV keeps that warning.
def test_fp8_per_token_head_on_an_a100_is_refused_as_the_triton_backend_refuses_it(tmp_path: Path) -> None:
    from factories import smollm2_checkpoint
    from onechip.planner import plan_model

    path = smollm2_checkpoint(tmp_path / "m")
    with pytest.raises(ConfigError, match=r"only the Triton backend does; the engine stops at start-up \('FP8 KV") as e:
        plan_model(str(path), "a100-80gb", "vllm-gpu", engine_version="0.34.0", kv_cache_dtype="fp8_per_token_head")
    assert "\n" not in str(e.value) and "--kv-cache-dtype auto" in str(e.value)
    plain = plan_model(str(path), "a100-80gb", "vllm-gpu", engine_version="0.34.0", kv_cache_dtype="fp8")
    assert "fp8-kv-flashinfer" in {w.code for w in plain.warnings}


# A per-token-head KV on an AMD card: ROCm's first backend for a model without MLA, ROCM_ATTN, lists no per-token-head
# dtype in supported_kv_cache_dtypes (nor do ROCM_AITER_FA and ROCM_AITER_UNIFIED_ATTN); TRITON_ATTN, last in
# vllm/platforms/rocm.py _get_backend_priorities, lists both, so vLLM serves it there on every ROCm card (no check in
# TritonAttentionImpl refuses it off CUDA). TRITON_ATTN declares [MultipleOf(16)] and so takes 0.34.0's
# DEFAULT_BLOCK_SIZE of 64 (get_preferred_block_size), where ROCM_ATTN's get_preferred_block_size returns 16; before
# 0.34.0 the default is 16 either way (vllm/config/cache.py, 0.20.0 - 0.33.0 sdists).
@pytest.mark.parametrize("chip", ["mi210", "mi250x", "mi300x", "mi355x", "rx7900xtx"])
@pytest.mark.parametrize("kv", sorted(rules.PER_TOKEN_HEAD_KV_DTYPES))
def test_a_per_token_head_kv_on_rocm_takes_the_triton_backends_block(chip: str, kv: str, tmp_path: Path) -> None:
    from factories import smollm2_checkpoint
    from onechip.planner import plan_model

    path = smollm2_checkpoint(tmp_path / "m")
    assert plan_model(str(path), chip, "vllm-gpu", engine_version="0.34.0", kv_cache_dtype=kv).block_size == 64
    # fp8 keeps ROCM_ATTN's 16 on CDNA; on RDNA 3 / 4 0.34.0 prefers TRITON_ATTN by gfx id, planned at the fewer
    # KV tokens of both (test_planner_rdna_attention_backend)
    fp8 = plan_model(str(path), chip, "vllm-gpu", engine_version="0.34.0", kv_cache_dtype="fp8").block_size
    assert fp8 == (64 if chip == "rx7900xtx" else 16)
    assert plan_model(str(path), chip, "vllm-gpu", engine_version="0.33.0", kv_cache_dtype=kv).block_size == 16
