"""Published configs planned through the CLI for the first time (planfuzz68): DeepSeek-V3.2-Exp (sparse MLA with the
lightning indexer's K cache), Kimi-Linear-48B-A3B (KDA + MLA hybrid) and GLM-4.5-Air (MoE, one MTP layer the target
model does not build). Each figure is derived from vLLM's source, not read off the planner; configs under
tests/fixtures/bootlogs/configs name the public copies they were built from.

Weights are each model's parameter count (transformers 5.19 on the meta device, scripts/gen_inventory.py's way:
DeepseekV32ForCausalLM 671,877,929,216 without its MTP layer, KimiLinearForCausalLM 49,122,675,072,
Glm4MoeForCausalLM 106,852,245,504), given as one tensor (factories.sized_checkpoint): bf16, except DeepSeek-V3.2-Exp's
at one byte a parameter (its checkpoint is block fp8; the scales and bf16 norms are not counted: the verdicts below do
not turn on them).

- DeepSeek-V3.2-Exp (vllm/model_executor/models/deepseek_v2.py and the sparse FlashMLA backend, 0.32.0; engines.json
  sparse_mla): every one of the 61 layers caches one MLA latent of kv_lora_rank + qk_rope_head_dim = 576 elements
  (bf16 under 'auto': 1,152 B; 'fp8_ds_mla' under fp8: 512 fp8 + 4 float32 scales + 64 bf16 = 656 B) plus the
  indexer's K: index_head_dim + index_head_dim // 128 x 4 = 132 B, on every GPU (MLA is not split by TP), block 64.
- Kimi-Linear (vllm/models/kimi_k3/nvidia/model.py, 0.32.0 sdist): KDA layers 1-based in linear_attn_config.kda_layers,
  MLA elsewhere (7 layers); kda_state_shape: conv (3 x 32 x 128) / TP x (4 - 1) in bf16, recurrent 32 / TP x 128 x 128
  in float32; the hybrid page under MLA aligned to 128 tokens (vllm/platforms/interface.py _align_hybrid_block_size).
- GLM-4.5-Air (glm4_moe.py): 46 layers of 8 KV heads x head_dim 128; model.layers.46.* is the MTP layer, skipped by
  the target's load_weights (models/utils.py skip_spec_layers) and built only by the MTP drafter.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model


def _config(name: str) -> dict:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _plan(tmp_path: Path, name: str, weights_bytes: int, chip: str, **kwargs):  # type: ignore[no-untyped-def]
    path = sized_checkpoint(tmp_path / "m", _config(name), weights_bytes)
    return plan_model(str(path), chip, "vllm-gpu", **kwargs)


V32 = "deepseek-ai--DeepSeek-V3.2-Exp.json"


@pytest.mark.parametrize(("kv_cache_dtype", "per_layer"), [("auto", 576 * 2 + 132), ("fp8", 656 + 132)])
def test_deepseek_v32_exp_caches_latent_and_indexer_k_on_every_gpu(
    tmp_path: Path, kv_cache_dtype: str, per_layer: int
) -> None:
    plan = _plan(tmp_path, V32, 671_877_929_216, "h200", engine_version="0.32.0", tensor_parallel_size=8,
                 max_model_len=32768, kv_cache_dtype=kv_cache_dtype)  # fmt: skip
    # the plan's bytes a token are over all TP ranks: 8 GPUs each hold the whole 61-layer latent and indexer K
    assert plan.kv_bytes_per_token == 8 * 61 * per_layer
    assert plan.memory_budget.min_block_size == 64
    assert plan.fits  # 625.7 GiB over 8 x 128.6 GiB caps


def test_deepseek_v32_exp_does_not_fit_eight_h100s(tmp_path: Path) -> None:
    plan = _plan(tmp_path, V32, 671_877_929_216, "h100", engine_version="0.32.0", tensor_parallel_size=8,
                 max_model_len=32768)  # fmt: skip
    assert not plan.fits  # 78.2 GiB of weights a GPU over a 72.85 GiB cap


def test_kimi_linear_is_planned_on_vllm_0320(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "moonshotai--Kimi-Linear-48B-A3B-Instruct.json", 2 * 49_122_675_072, "h100",
                 engine_version="0.32.0", tensor_parallel_size=2, max_model_len=32768)  # fmt: skip
    mla = [layer.index for layer in plan.layers if layer.bytes_per_token]
    assert mla == [3, 7, 11, 15, 19, 23, 26]
    assert plan.kv_bytes_per_token == 7 * 2 * 576 * 2  # one latent a GPU, 2 GPUs
    conv, recurrent = (3 * 32 * 128 // 2) * (4 - 1) * 2, (32 // 2) * 128 * 128 * 4
    assert {layer.state_bytes for layer in plan.layers if not layer.bytes_per_token} == {2 * (conv + recurrent)}
    # 1,085,440 B of state a GPU over 1,152 B a token of one MLA layer: 128 x cdiv(1,085,440, 128 x 1,152) = 1,024
    assert plan.memory_budget.min_block_size == 1024


def test_glm45_air_skips_its_mtp_layer(tmp_path: Path) -> None:
    directory = sized_checkpoint(tmp_path / "m", _config("zai-org--GLM-4.5-Air.json"), 2 * 106_852_245_504)
    mtp = {"dtype": "BF16", "shape": [4096, 8192], "data_offsets": [0, 4096 * 8192 * 2]}
    header = json.dumps({"model.layers.46.eh_proj.weight": mtp}).encode()
    (directory / "model-mtp.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    plans = [plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.32.0", tensor_parallel_size=tp,
                        max_model_len=32768) for tp in (2, 4)]  # fmt: skip
    assert [plan.kv_bytes_per_token for plan in plans] == [46 * 8 * 128 * 2 * 2] * 2
    # the MTP layer's 64 MiB are not counted; every GPU holds the RoPE cos/sin cache, [max_position_embeddings,
    # rotary_dim = head_dim x partial_rotary_factor] in the model dtype (layers/rotary_embedding RotaryEmbedding)
    rope = 131072 * (128 // 2) * 2
    assert [plan.memory_budget.weights_bytes for plan in plans] == [2 * 106_852_245_504 // tp + rope for tp in (2, 4)]
    assert [plan.fits for plan in plans] == [False, True]  # 99.5 GiB a GPU at TP 2, 49.8 at TP 4


def test_kimi_linear_on_vllm_cpu_is_refused_in_words(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "m", _config("moonshotai--Kimi-Linear-48B-A3B-Instruct.json"), 2 * 10**9)
    with pytest.raises(ConfigError, match=r"^Kimi-Linear \(KDA\) is not planned on this engine: no release's KDA"):
        plan_model(str(path), "cpu", "vllm-cpu", max_model_len=4096)


@pytest.mark.parametrize(("tp", "kv_heads_a_gpu"), [(1, 4), (8, 1)])
def test_smollm3_nope_layers_cache_like_any_other(tmp_path: Path, tp: int, kv_heads_a_gpu: int) -> None:
    """SmolLM3's NoPE layers (no_rope_layers 0) skip the rotary embedding only: vLLM builds the same Attention and
    cache on every layer, 36 x 4 KV heads x 128 (hidden 2048 // 16 heads); at TP 8 the 4 KV heads are replicated to one
    a GPU (num_kv_heads = max(1, total // tp), llama.py LlamaAttention)."""
    plan = _plan(tmp_path, "HuggingFaceTB--SmolLM3-3B.json", 2 * 3_075_098_624, "h100", engine_version="0.32.0",
                 tensor_parallel_size=tp, max_model_len=32768)  # fmt: skip
    assert [layer.index for layer in plan.layers if layer.bytes_per_token] == list(range(36))
    assert plan.kv_bytes_per_token == tp * 36 * kv_heads_a_gpu * 128 * 2 * 2
    assert plan.fits


@pytest.mark.parametrize(
    ("name", "weights_bytes"),
    [("Qwen--Qwen3.5-9B.json", 9_000_000_000), ("moonshotai--Kimi-Linear-48B-A3B-Instruct.json", 2 * 49_122_675_072)],
)
def test_a_hybrid_plan_with_no_engine_version_is_the_plan_of_the_pinned_release(
    tmp_path: Path, name: str, weights_bytes: int
) -> None:
    """With no --engine-version every rule is the pinned release's (engines.json vllm-gpu release 0.32.0, the version
    the launch runs); the hybrid rule took the newest one (0.33.0 and later) instead: Qwen3.5-9B on one H100 at 32,768
    planned 0.33's block of 576 tokens where 0.32.0 makes 528, and Kimi-Linear (KDA, read for 0.32.0 only) was
    refused (planfuzz68)."""
    path = sized_checkpoint(tmp_path / "m", _config(name), weights_bytes)
    kwargs = {"tensor_parallel_size": 2, "max_model_len": 32768}
    pinned = plan_model(str(path), "h100", "vllm-gpu", engine_version="0.32.0", **kwargs)
    default = plan_model(str(path), "h100", "vllm-gpu", **kwargs)
    assert default.memory_budget.min_block_size == pinned.memory_budget.min_block_size
    assert (default.kv_tokens, default.kv_tokens_logged) == (pinned.kv_tokens, pinned.kv_tokens_logged)
