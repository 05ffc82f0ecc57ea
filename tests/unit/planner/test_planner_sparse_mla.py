"""A sparse-attention MLA model (DeepSeek-V3.2, GLM-5: config index_topk) as vLLM 0.11.0 - 0.17.x caches it on
NVIDIA cards (engines.json sparse_mla), read in the vllm sdists on PyPI:

- every decoder layer caches its MLA latent, kv_lora_rank + qk_rope_head_dim = 576 elements per token
  (MLAAttentionSpec), or 656 B in the 'fp8_ds_mla' format (kv_cache_interface.py page_size_bytes: block x 656);
- beside it, the lightning indexer's K cache, DeepseekV32IndexerCache(head_dim = index_head_dim + index_head_dim // 128
  x 4, dtype uint8) (deepseek_v2.py): 128 + 1 x 4 = 132 B per token per layer;
- both are full-attention specs of one block size, so kv_cache_utils.get_kv_cache_groups makes one
  UniformTypeKVCacheSpecs group: num_blocks = pool // (sum over layers of block x bytes);
- platforms/cuda.py check_and_update_config: 'if use_sparse and cache_config.block_size != 64' -> 64 (FlashMLASparse),
  on every NVIDIA card and over a --block-size;
- models/config.py DeepseekV32ForCausalLM.verify_and_update_config: an fp8 cache becomes 'fp8_ds_mla'; in 0.11.0 the
  default 'auto' does too, from 0.11.1 'auto' stays bf16.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from factories import DSA_LIKE, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model

POOL = 8 * 2**30  # an explicit pool: the blocks follow from the bytes per token and block size alone


def _plan(tmp_path: Path, version: str | None, kv: str = "auto", chip: str = "h100", **extra: object):
    name = f"dsa-{extra.get('architectures', ['v32'])[0]}"  # type: ignore[index]
    path = tmp_path / name
    if not path.exists():
        config = {**DSA_LIKE, **extra}
        sized_checkpoint(path, config, 2 * 2**30)
    return plan_model(str(path), chip, "vllm-gpu", max_model_len=4096, multimodal=False, engine_version=version,
                      kv_cache_memory_bytes=POOL, kv_cache_dtype=kv)  # fmt: skip


def test_fp8_cache_is_fp8_ds_mla_plus_the_indexer_at_block_64(tmp_path) -> None:
    """--kv-cache-dtype fp8 at 0.12.0 on an H100: 4 layers x (656 + 132) = 3,152 B per token; one group of 4 layers,
    page 64 x 788 B each: 8 GiB // (4 x 64 x 788 = 201,728 B) = 42,581 blocks = 2,725,184 tokens. Before, model_type
    deepseek_v32 was refused as unmodelled, and a deepseek_v3 config with index_topk was planned as dense MLA:
    4 x 576 x 1 = 2,304 B (no indexer, no fp8_ds_mla scales)."""
    plan = _plan(tmp_path, "0.12.0", "fp8")
    assert (plan.kv_bytes_per_token, plan.block_size) == (3_152, 64)
    assert (plan.num_blocks, plan.kv_tokens) == (42_581, 2_725_184)
    assert {layer.indexer_bytes_per_token for layer in plan.layers} == {132}
    note = next(w for w in plan.warnings if w.code == "sparse-mla-cache")
    assert "FLASHMLA_SPARSE" in note.message and "fp8_ds_mla, 656 B" in note.message and "= 132 B" in note.message


def test_auto_cache_is_bf16_from_0_11_1_and_fp8_ds_mla_in_0_11_0(tmp_path) -> None:
    """'auto' (bf16 model): 0.11.1 - 0.17.x keep it bf16, 4 x (576 x 2 + 132) = 5,136 B; 8 GiB // (4 x 64 x 1,284 =
    328,704 B) = 26,132 blocks = 1,672,448 tokens. 0.11.0 turns 'auto' into fp8_ds_mla: 3,152 B, as fp8 above."""
    for version in ("0.11.1", "0.17.1"):
        plan = _plan(tmp_path, version)
        want = (5_136, 64, 26_132, 1_672_448)
        assert (plan.kv_bytes_per_token, plan.block_size, plan.num_blocks, plan.kv_tokens) == want
    assert _plan(tmp_path, "0.11.0").kv_bytes_per_token == 3_152
    assert _plan(tmp_path, "0.17.1", "bfloat16").kv_bytes_per_token == 5_136


def test_the_sparse_block_is_64_on_a_b200_too(tmp_path) -> None:
    """The dense MLA rules would give a B200 128 (CUTLASS_MLA) at 0.14.0; the sparse check forces 64."""
    assert _plan(tmp_path, "0.14.0", chip="b200").block_size == 64


@pytest.mark.parametrize("version", ["0.11.1", "0.14.0", "0.17.1"])
def test_an_ampere_card_has_no_sparse_backend(tmp_path, version) -> None:
    """FlashMLASparseBackend.supports_compute_capability: 'capability.major in [9, 10]', checked by
    get_attn_backend_cls from 0.11.1 (FlashInferMLASparse: 10 only): an A100 (8.0) stops with 'No valid attention
    backend found'. Before, it was planned with blocks of 64."""
    with pytest.raises(
        ConfigError, match=r"no sparse MLA backend for compute capability 8\.0 .*'No valid attention"
    ) as err:
        _plan(tmp_path, version, chip="a100-80gb")
    assert "\n" not in str(err.value)


def test_tensor_parallel_replicates_both_caches(tmp_path) -> None:
    """The latent and the indexer cache (num_kv_heads 1, not split) are on every rank: TP 2 doubles the total."""
    path = tmp_path / "tp"
    sized_checkpoint(path, DSA_LIKE, 2 * 2**30)
    plan = plan_model(str(path), "h100", "vllm-gpu", max_model_len=4096, multimodal=False, engine_version="0.12.0",
                      kv_cache_memory_bytes=POOL, kv_cache_dtype="fp8", tensor_parallel_size=2)  # fmt: skip
    assert plan.kv_bytes_per_token == 2 * 3_152


def test_glm5_fp8_has_no_sparse_backend(tmp_path) -> None:
    """GlmMoeDsaForCausalLM (registered from 0.16.0) is not in MODELS_CONFIG_MAP: 'fp8' stays 'fp8', which
    FlashMLASparse (auto, bfloat16, fp8_ds_mla) and FlashInferMLASparse (auto, bfloat16) refuse."""
    glm = {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa"}
    assert _plan(tmp_path, "0.16.0", **glm).kv_bytes_per_token == 5_136
    with pytest.raises(ConfigError, match="no sparse MLA backend for --kv-cache-dtype fp8"):
        _plan(tmp_path, "0.16.0", "fp8", **glm)


@pytest.mark.parametrize("version", ["0.18.0", "0.25.0", None])
def test_releases_not_read_are_refused_in_one_line(tmp_path, version) -> None:
    """0.18.0 on picks the sparse backend and its block another way (update_block_size_for_backend): not read, so not
    planned; the refusal names the range read. None: the newest rules' release (0.32.0)."""
    with pytest.raises(ConfigError, match=r"read for vLLM 0\.11\.0 - 0\.17\.x on NVIDIA cards only") as err:
        _plan(tmp_path, version)
    assert "\n" not in str(err.value)


def test_amd_cards_are_refused(tmp_path) -> None:
    """vllm/platforms/cuda.py's sparse rule is NVIDIA's; ROCm's sparse path was not read."""
    with pytest.raises(ConfigError, match="NVIDIA cards only"):
        _plan(tmp_path, "0.14.0", chip="mi300x")
