"""A sparse-attention MLA model (DeepSeek-V3.2, GLM-5: config index_topk) as vLLM 0.11.0 - 0.34.x caches it on
NVIDIA cards (engines.json sparse_mla), read in the vllm sdists on PyPI:

- every decoder layer caches its MLA latent, kv_lora_rank + qk_rope_head_dim = 576 elements per token
  (MLAAttentionSpec), or 656 B in the 'fp8_ds_mla' format (kv_cache_interface.py page_size_bytes: block x 656);
- beside it, the lightning indexer's K cache, DeepseekV32IndexerCache(head_dim = index_head_dim + index_head_dim // 128
  x 4, dtype uint8) (deepseek_v2.py): 128 + 1 x 4 = 132 B per token per layer;
- both are full-attention specs of one block size, so kv_cache_utils.get_kv_cache_groups makes one
  UniformTypeKVCacheSpecs group: num_blocks = pool // (sum over layers of block x bytes);
- 0.11.0 - 0.17.x: platforms/cuda.py check_and_update_config: 'if use_sparse and cache_config.block_size != 64' -> 64
  (FlashMLASparse), over a --block-size; models/config.py DeepseekV32ForCausalLM.verify_and_update_config: an fp8
  cache becomes 'fp8_ds_mla'; in 0.11.0 the default 'auto' does too, from 0.11.1 'auto' stays bf16;
- 0.18.0 on: the sparse backend is the first of cuda.py _get_backend_priorities that validates; FLASHMLA_SPARSE (9.x,
  10.x) turns 'fp8' into fp8_ds_mla (mla_attention.py, any class), FLASHINFER_MLA_SPARSE (10.x; before FLASHMLA_SPARSE
  at <= 16 heads per GPU in 0.18.x, for every fp8 cache from 0.19.0) keeps fp8 at 576 x 1 B; the block is 64 where
  --block-size is not given (update_block_size_for_backend: the indexer's DeepseekV32IndexerBackend takes [64]), a
  given multiple of 64 is kept; from 0.24.0 a layer IndexCache skips (index_topk_freq / index_topk_pattern, 0.34.0
  indexer_types) builds no indexer; from 0.32.0 GLM-5's 'auto' is fp8_e4m3 on 10.x;
- 0.30.0 on: FLASHINFER_MLA_SPARSE_SM90 (9.x, after FLASHMLA_SPARSE at head size 576; kv_lora_rank 512, qk_rope_head_dim
  0 or 64) serves the fp8_e4m3 FLASHMLA_SPARSE does not take, kept plain at 576 x 1 B.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from factories import DSA_LIKE, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model

POOL = 8 * 2**30  # an explicit pool: the blocks follow from the bytes per token and block size alone


def _plan(tmp_path: Path, version: str | None, kv: str = "auto", chip: str = "h100", tp: int = 1,
          block: int | None = None, **extra: object):  # fmt: skip
    path = tmp_path / f"dsa-{hashlib.sha256(repr(sorted(extra.items())).encode()).hexdigest()[:12]}"
    if not path.exists():
        config = {**DSA_LIKE, **extra}
        sized_checkpoint(path, config, 2 * 2**30)
    return plan_model(str(path), chip, "vllm-gpu", max_model_len=4096, multimodal=False, engine_version=version,
                      kv_cache_memory_bytes=POOL, kv_cache_dtype=kv, tensor_parallel_size=tp,
                      block_size=block)  # fmt: skip


def _figures(plan) -> tuple[int, int, int, int]:
    return plan.kv_bytes_per_token, plan.block_size, plan.num_blocks, plan.kv_tokens


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


@pytest.mark.parametrize("version", ["0.35.0", "0.36.0"])
def test_releases_not_read_are_refused_in_one_line(tmp_path, version) -> None:
    """Releases after 0.34.x were not read: not planned; the refusal names the range read."""
    with pytest.raises(ConfigError, match=r"read for vLLM 0\.11\.0 - 0\.34\.x on NVIDIA cards and .* on AMD") as err:
        _plan(tmp_path, version)
    assert "\n" not in str(err.value)


def test_amd_cards_before_032_are_refused(tmp_path) -> None:
    """vllm/platforms/cuda.py's sparse rules are NVIDIA's; ROCm's sparse path (ROCM_AITER_MLA_SPARSE) was read for
    0.32.0 - 0.34.x only (engines.json sparse_mla, manufacturer AMD; planned in test_published_configs68b)."""
    with pytest.raises(ConfigError, match=r"0\.32\.0 - 0\.33\.x and 0\.34\.x on AMD cards only, not vLLM 0\.14\.0"):
        _plan(tmp_path, "0.14.0", chip="mi300x")


@pytest.mark.parametrize(("chip", "engine"), [("v6e-1", "vllm-tpu"), ("cpu", "vllm-cpu")])
def test_a_tpu_or_cpu_refusal_names_the_nvidia_releases_read(tmp_path, chip, engine) -> None:
    """The range read is vllm-gpu's (engines.json sparse_mla_read); vllm-tpu and vllm-cpu have no sparse_mla rules of
    their own, and the refusal of DeepSeek-V3.2's published config (search-index file id 62736905881) on a v6e-1 read
    'were read for vLLM no release on NVIDIA cards only ... with an --engine-version in no release'."""
    path = tmp_path / "dsa"
    sized_checkpoint(path, DSA_LIKE, 2 * 2**30)
    with pytest.raises(
        ConfigError,
        match=r"read for vLLM 0\.11\.0 - 0\.34\.x on NVIDIA cards and 0\.32\.0 - 0\.33\.x and 0\.34\.x on AMD "
        r"cards only, not " + engine,
    ) as err:
        plan_model(str(path), chip, engine, max_model_len=4096, multimodal=False)
    assert "no release" not in str(err.value)
    assert str(err.value).endswith("with an --engine-version in those (engines.json sparse_mla)")


GLM5 = {"architectures": ["GlmMoeDsaForCausalLM"], "model_type": "glm_moe_dsa", "qk_nope_head_dim": 192}


@pytest.mark.parametrize("version", [None, "0.18.0", "0.25.0", "0.32.0", "0.34.0"])
def test_hopper_fp8_is_fp8_ds_mla_from_0_18_0_a_plan_without_a_version_included(tmp_path, version) -> None:
    """On an H100 (9.0) FLASHMLA_SPARSE is the sparse backend that takes 'fp8' (FLASH_ATTN_MLA_SPARSE, first from
    0.25.0, takes bf16 only), and mla_attention.py turns it into fp8_ds_mla: 4 x (656 + 132) = 3,152 B per token;
    no --block-size, so update_block_size_for_backend sets 64 (the indexer's kernel block; DEFAULT_BLOCK_SIZE 16 is
    no multiple of it); 8 GiB // (64 x 3,152 = 201,728 B) = 42,581 blocks = 2,725,184 tokens (the 'capacity' line of
    0.32.0: 42,581 / cdiv(4,096, 64) x 4,096, the same). None plans the rules' release, 0.32.0. Before, every
    release from 0.18.0 was refused."""
    plan = _plan(tmp_path, version, "fp8")
    assert _figures(plan) == (3_152, 64, 42_581, 2_725_184)
    note = next(w for w in plan.warnings if w.code == "sparse-mla-cache")
    assert "backend FLASHMLA_SPARSE" in note.message and "fp8_ds_mla, 656 B" in note.message
    assert "\n" not in note.message


@pytest.mark.parametrize("version", ["0.19.0", "0.25.0", "0.32.0", "0.34.0"])
def test_blackwell_fp8_is_plain_fp8_under_flashinfer_from_0_19_0(tmp_path, version) -> None:
    """On a B200 (10.0) _get_backend_priorities puts FLASHINFER_MLA_SPARSE first for a quantized cache (0.19.0 on),
    which takes 'fp8' at qk_nope_head_dim 128 and keeps it: 576 x 1 + 132 = 708 B per layer, 4 x 708 = 2,832 B per
    token; 8 GiB // (64 x 2,832 = 181,248 B) = 47,393 blocks = 3,033,152 tokens."""
    plan = _plan(tmp_path, version, "fp8", chip="b200")
    assert _figures(plan) == (2_832, 64, 47_393, 3_033_152)
    note = next(w for w in plan.warnings if w.code == "sparse-mla-cache")
    assert "backend FLASHINFER_MLA_SPARSE" in note.message and "fp8, 576 x 1 B" in note.message


def test_0_18_blackwell_takes_flashinfer_only_at_16_heads_per_gpu_or_fewer(tmp_path) -> None:
    """0.18.x orders the sparse backends by attention heads per GPU alone: at 16 (DSA_LIKE, TP 1)
    FLASHINFER_MLA_SPARSE first, plain fp8, 2,832 B; at 32 heads FLASHMLA_SPARSE first, fp8_ds_mla, 3,152 B; 32 heads
    over TP 2 are 16 per GPU again: 2 x 2,832 = 5,664 B over both ranks (each holds every layer's latent and indexer).
    0.19.0 takes FLASHINFER_MLA_SPARSE for fp8 at 32 heads too."""
    assert _plan(tmp_path, "0.18.0", "fp8", chip="b200").kv_bytes_per_token == 2_832
    assert _plan(tmp_path, "0.18.0", "fp8", chip="b200", num_attention_heads=32).kv_bytes_per_token == 3_152
    assert _plan(tmp_path, "0.18.0", "fp8", chip="b200", tp=2, num_attention_heads=32).kv_bytes_per_token == 5_664
    assert _plan(tmp_path, "0.19.0", "fp8", chip="b200", num_attention_heads=32).kv_bytes_per_token == 2_832


def test_glm5_default_cache_is_fp8_e4m3_on_blackwell_from_0_32_0(tmp_path) -> None:
    """GlmMoeDsaForCausalLM.verify_and_update_config (0.32.0 on): 'auto' on 10.x becomes fp8_e4m3, which
    FLASHINFER_MLA_SPARSE takes at qk_nope_head_dim 192: 2,832 B, 47,393 blocks; a plan without --engine-version
    (0.32.0) included. 0.31.0 keeps bf16: 4 x (576 x 2 + 132) = 5,136 B, 8 GiB // (64 x 5,136 = 328,704 B) = 26,132
    blocks; so does an H100. GLM-5's fp8 on an H100, refused at 0.16.0 - 0.17.x (no class conversion), is fp8_ds_mla
    from 0.18.0 (the backend's): 3,152 B."""
    plan = _plan(tmp_path, None, chip="b200", **GLM5)
    assert _figures(plan) == (2_832, 64, 47_393, 3_033_152)
    assert "fp8_e4m3" in next(w for w in plan.warnings if w.code == "sparse-mla-cache").message
    assert _figures(_plan(tmp_path, "0.31.0", chip="b200", **GLM5)) == (5_136, 64, 26_132, 1_672_448)
    assert _plan(tmp_path, None, **GLM5).kv_bytes_per_token == 5_136
    assert _plan(tmp_path, "0.18.0", "fp8", **GLM5).kv_bytes_per_token == 3_152


def test_index_cache_layers_build_no_indexer_from_0_24_0(tmp_path) -> None:
    """index_topk_freq 2 (offset 2): layer i skips when max(i - 1, 0) % 2 != 0, so layer 2 of 0 - 3 reuses layer 1's
    top-k and, from 0.24.0, builds no indexer: 4 x 656 + 3 x 132 = 3,020 B; the latents of 788 and 656 B stay one
    UniformTypeKVCacheSpecs group: 8 GiB // (64 x 3,020 = 193,280 B) = 44,442 blocks = 2,844,288 tokens. 0.23.0
    builds every layer's indexer (3,152 B). 0.34.0 reads indexer_types first: 'shared' layers 1 and 2 build none,
    4 x 656 + 2 x 132 = 2,888 B, 8 GiB // 184,832 B = 46,474 blocks = 2,974,336 tokens; 0.32.0 ignores the key.
    Before, the differing layers were refused ('KV page sizes ... cannot be unified') or, before 0.18.0, not told."""
    assert _plan(tmp_path, "0.23.0", "fp8", index_topk_freq=2).kv_bytes_per_token == 3_152
    plan = _plan(tmp_path, "0.24.0", "fp8", index_topk_freq=2)
    assert _figures(plan) == (3_020, 64, 44_442, 2_844_288)
    assert [layer.indexer_bytes_per_token for layer in plan.layers] == [132, 132, 0, 132]
    types = {"indexer_types": ["full", "shared", "shared", "full"]}
    assert _figures(_plan(tmp_path, "0.34.0", "fp8", **types)) == (2_888, 64, 46_474, 2_974_336)
    assert _plan(tmp_path, "0.32.0", "fp8", **types).kv_bytes_per_token == 3_152
    with pytest.raises(ConfigError, match="'indexer_types' must list 'full' or 'shared' once per hidden layer"):
        _plan(tmp_path, "0.34.0", indexer_types=["full", "shared"])


@pytest.mark.parametrize("entry", [["shared"], {"kind": "shared"}])
def test_an_indexer_type_that_is_no_string_is_refused_in_one_line(tmp_path, entry) -> None:
    """indexer_types with a list or object among its entries (0.34.0 compute_skip_topk_layers takes
    set(indexer_types), which raises TypeError at start-up): one ConfigError line. Before, the planner's own set()
    raised the TypeError, and the CLI answered 'internal error (TypeError: unhashable type: 'list')'."""
    with pytest.raises(ConfigError, match="'indexer_types' must list 'full' or 'shared' once per hidden layer"):
        _plan(tmp_path, "0.34.0", indexer_types=["full", entry, "full", "full"])


def test_a_given_block_size_is_kept_from_0_18_0_if_a_multiple_of_64(tmp_path) -> None:
    """0.18.0 on, a --block-size goes to backend selection and is kept where supports_block_size takes it (block % 64
    == 0 for FLASHMLA_SPARSE and the indexer): 128, 5,136 B, 8 GiB // (128 x 5,136 = 657,408 B) = 13,066 blocks =
    1,672,448 tokens. 16 leaves no sparse backend: refused in one line. 0.17.1 still forces 64 over it."""
    assert _figures(_plan(tmp_path, "0.32.0", block=128)) == (5_136, 128, 13_066, 1_672_448)
    with pytest.raises(ConfigError, match=r"--block-size 16: vLLM 0\.32\.0 .* multiple of 64") as err:
        _plan(tmp_path, "0.32.0", block=16)
    assert "\n" not in str(err.value)
    assert _plan(tmp_path, "0.17.1", block=16).block_size == 64


def test_cards_and_caches_without_a_sparse_backend_are_refused(tmp_path) -> None:
    """An A100 (8.0) has none in 0.32.0 ('No valid attention backend found'); an RTX PRO 6000 (12.0) has
    FLASHINFER_MLA_SPARSE_SM120 from 0.24.0 only with a FlashInfer a plan cannot see: refused, saying so. fp8_e4m3 is
    no FLASHMLA_SPARSE dtype, so an H100 refuses it before 0.30.0 (0.29.0: no FLASHINFER_MLA_SPARSE_SM90 yet); a B200's
    FLASHINFER_MLA_SPARSE takes it (2,832 B)."""
    with pytest.raises(ConfigError, match=r"compute capability 8\.0 .*'No valid attention backend found'"):
        _plan(tmp_path, "0.32.0", chip="a100-80gb")
    with pytest.raises(ConfigError, match="FLASHINFER_MLA_SPARSE_SM120"):
        _plan(tmp_path, "0.32.0", chip="rtx-pro-6000")
    with pytest.raises(ConfigError, match="no sparse MLA backend for --kv-cache-dtype fp8_e4m3"):
        _plan(tmp_path, "0.29.0", "fp8_e4m3")
    assert _plan(tmp_path, "0.32.0", "fp8_e4m3", chip="b200").kv_bytes_per_token == 2_832


@pytest.mark.parametrize("version", [None, "0.30.0", "0.31.0", "0.33.0", "0.34.0"])
@pytest.mark.parametrize("chip", ["h100", "h200"])
def test_hopper_fp8_e4m3_is_plain_fp8_under_flashinfer_sm90_from_0_30_0(tmp_path, version, chip) -> None:
    """From 0.30.0 the 9.x sparse tail of _get_backend_priorities ends with FLASHINFER_MLA_SPARSE_SM90 (head size
    kv_lora_rank + qk_rope_head_dim = 576: after FLASH_ATTN_MLA_SPARSE and FLASHMLA_SPARSE, which take no
    fp8_e4m3), which takes 'fp8_e4m3' at kv_lora_rank 512 and qk_rope_head_dim 64, and
    _canonicalize_sparse_mla_kv_cache_dtype leaves it plain: 576 x 1 + 132 = 708 B per layer, 4 x 708 = 2,832 B per
    token; 8 GiB // (64 x 2,832 = 181,248 B) = 47,393 blocks = 3,033,152 tokens (None: the rules' 0.32.0). GLM-5 too
    (on 9.x its 'auto' stays bf16; qk_nope_head_dim 192 is not checked by this backend). Before, the H100 and H200
    were refused: 'no sparse MLA backend for --kv-cache-dtype fp8_e4m3'."""
    for extra in ({}, GLM5):
        plan = _plan(tmp_path, version, "fp8_e4m3", chip=chip, **extra)
        assert _figures(plan) == (2_832, 64, 47_393, 3_033_152)
        note = next(w for w in plan.warnings if w.code == "sparse-mla-cache")
        assert "backend FLASHINFER_MLA_SPARSE_SM90" in note.message and "fp8_e4m3, 576 x 1 B" in note.message


def test_hopper_fp8_stays_fp8_ds_mla_and_sm90_needs_kv_lora_rank_512(tmp_path) -> None:
    """'fp8' on an H100 at 0.33.0: FLASHMLA_SPARSE comes before FLASHINFER_MLA_SPARSE_SM90 at head size 576 and takes
    it as fp8_ds_mla: 4 x (656 + 132) = 3,152 B, not 2,832; 'auto' goes to FLASH_ATTN_MLA_SPARSE, bf16: 5,136 B.
    FLASHINFER_MLA_SPARSE_SM90's supports_combination refuses kv_lora_rank != 512 (and qk_rope_head_dim not 0 or 64):
    fp8_e4m3 with kv_lora_rank 448 (head size 512) or qk_rope_head_dim 32 finds no sparse backend, refused in one
    line naming the condition."""
    assert _plan(tmp_path, "0.33.0", "fp8").kv_bytes_per_token == 3_152
    assert _plan(tmp_path, "0.33.0").kv_bytes_per_token == 5_136
    for extra in ({"kv_lora_rank": 448}, {"qk_rope_head_dim": 32}):
        with pytest.raises(ConfigError, match=r"fp8_e4m3 .*FLASHINFER_MLA_SPARSE_SM90 takes .*kv_lora_rank 512") as err:
            _plan(tmp_path, "0.33.0", "fp8_e4m3", **extra)
        assert "\n" not in str(err.value)
