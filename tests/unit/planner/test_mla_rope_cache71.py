"""The RoPE cos/sin cache of DeepSeek-V2/V3's MLA attention (issue 27, planfix71), read in vLLM's own source:
deepseek_v2.py DeepseekV2MLAAttention turns any non-default RoPE into 'deepseek_yarn' and calls
get_rope(qk_rope_head_dim, max_position=max_position_embeddings, rope_parameters, is_neox_style=False); get_rope
builds DeepseekScalingRotaryEmbedding(head_size, rotary_dim, original_max_position, ...), whose
_compute_cos_sin_cache makes torch.arange(max_position_embeddings * scaling_factor) rows of rotary_dim (0.5.0 -
0.34.0 sdists). From 0.14.0 the class sets use_flashinfer (enabled(), dtype fp16/bf16, CUDA, has_flashinfer(),
head_size in [64, 128, 256, 512]) and RotaryEmbeddingBase then skips cache.to(dtype): the cache stays float32.
enabled() is the rotary_embedding custom op, on only where compilation custom_ops holds 'all' (compilation mode
NONE: --enforce-eager, config/vllm.py of the 0.19.0 sdist). Every expected value is rows x rotary_dim x bytes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from factories import BOOTLOGS
from onechip.planner.core import rope_cache_rule
from onechip.planner.gpu_memory import vllm_rope_cache_bytes
from onechip.planner.rules import engine_rules


def _r1() -> dict[str, Any]:
    """DeepSeek-R1's config: yarn factor 40, original 4,096, 163,840 positions, qk_rope_head_dim 64."""
    return json.loads((BOOTLOGS / "configs" / "deepseek-ai--DeepSeek-R1.json").read_text(encoding="utf-8"))


def _bytes(text: dict[str, Any], version: str, *, custom_op: bool, arch: str = "DeepseekV3ForCausalLM") -> int:
    rule = rope_cache_rule(engine_rules("vllm-gpu"), version)
    return vllm_rope_cache_bytes(text, dtype_bytes=2, architectures=[arch], rule=rule, rotary_custom_op=custom_op)


@pytest.mark.parametrize("version", ["0.8.5", "0.13.0", "0.19.0", "0.34.0"])
def test_deepseek_yarn_cache_in_the_model_dtype_when_compiled(version: str) -> None:
    """Compiled (custom_ops 'none'): the cache is .to(dtype), 4,096 x 40 rows x 64 x 2 B = 20 MiB."""
    assert _bytes(_r1(), version, custom_op=False) == 4096 * 40 * 64 * 2


@pytest.mark.parametrize(("version", "bytes_per"), [("0.13.0", 2), ("0.14.0", 4), ("0.19.0", 4), ("0.34.0", 4)])
def test_deepseek_yarn_cache_float32_with_the_flashinfer_op_from_0_14(version: str, bytes_per: int) -> None:
    """--enforce-eager on a CUDA card: the rotary op is on, and from 0.14.0 FlashInfer's path keeps it float32."""
    assert _bytes(_r1(), version, custom_op=True) == 4096 * 40 * 64 * bytes_per


def test_v32_indexer_holds_a_second_cache() -> None:
    """DeepSeek-V3.2 (index_topk): indexer_rope_emb = get_rope(..., is_neox_style=not indexer_rope_interleave), a
    second key beside the attention's is_neox_style=False (deepseek_v2.py, 0.19.0 sdist)."""
    v32 = json.loads((BOOTLOGS / "configs" / "deepseek-ai--DeepSeek-V3.2-Exp.json").read_text(encoding="utf-8"))
    assert _bytes(v32, "0.19.0", custom_op=False, arch="DeepseekV32ForCausalLM") == 2 * 4096 * 40 * 64 * 2
    assert _bytes(v32 | {"indexer_rope_interleave": True}, "0.19.0", custom_op=False) == 4096 * 40 * 64 * 2


def test_mla_without_scaling_keeps_a_plain_cache() -> None:
    """rope_type 'default': get_rope's RotaryEmbedding, max_position_embeddings rows of qk_rope_head_dim."""
    plain = {k: v for k, v in _r1().items() if k != "rope_scaling"}
    assert _bytes(plain, "0.19.0", custom_op=True) == 163840 * 64 * 2


def test_other_mla_classes_stay_unmodelled() -> None:
    """A latent-cache config of a class not in the rule (its attention's get_rope not read): 0, as before."""
    assert _bytes(_r1(), "0.19.0", custom_op=False, arch="SomeOtherMlaForCausalLM") == 0


def _qwen25_vl_yarn() -> dict[str, Any]:
    """A Qwen2.5-VL text config with the YaRN the model card gives for long inputs (factor 4, original 32,768)."""
    scaling = {"type": "yarn", "mrope_section": [16, 24, 24], "factor": 4.0, "original_max_position_embeddings": 32768}
    return {"hidden_size": 3584, "num_attention_heads": 28, "max_position_embeddings": 128000, "rope_scaling": scaling}


@pytest.mark.parametrize(
    ("version", "rows"), [("0.10.0", 32768 * 4), ("0.11.0", 32768 * 4 * 4), ("0.34.0", 32768 * 4 * 4)]
)
def test_yarn_mrope_cache_by_release(version: str, rows: int) -> None:
    """get_rope's yarn branch: MRotaryEmbedding(original_max_position, scaling_factor=factor) from 0.11.0, its cache
    original x 4 (cache_max_position_num) x factor rows (mrope.py); before, YaRN: original x factor."""
    rule = rope_cache_rule(engine_rules("vllm-gpu"), version)
    arch = ["Qwen2_5_VLForConditionalGeneration"]
    got = vllm_rope_cache_bytes(
        _qwen25_vl_yarn(), dtype_bytes=2, architectures=arch, rule=rule, mrope_positions_factor=4
    )
    assert got == rows * 128 * 2
