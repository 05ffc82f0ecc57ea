"""Published configs planned through the CLI for the first time (planfuzz68b), each figure derived from vLLM's source
for the release named, not read off the planner; configs under tests/fixtures/bootlogs/configs name the public copies
they were built from.

Weights are each model's parameter count (transformers on the meta device, scripts/gen_inventory.py's way), given as
one bf16 tensor (factories.sized_checkpoint).

- GLM-4.6 (vllm/model_executor/models/glm4_moe.py, 0.32.0 sdist): Glm4MoeForCausalLM 352,797,814,784 parameters
  without its MTP layer; 92 layers of 8 KV heads x head_dim 128; model.layers.92.* is the MTP layer, skipped by the
  target's load_weights (models/utils.py skip_spec_layers) as GLM-4.5-Air's layer 46 (test_published_configs68).
- Hunyuan-A13B (registry.py _TRANSFORMERS_SUPPORTED_MODELS, 0.32.0: the Transformers backend, one Attention of
  num_key_value_heads x head_dim a layer, models/transformers/base.py): HunYuanMoEV1ForCausalLM 80,393,183,232
  parameters; 32 layers x 8 KV heads x 128. No vLLM RoPE cache (the backend keeps transformers' rotary embedding,
  and rotary_cache_bytes counts none for 'dynamic' scaling anyway).
- OLMo-3 7B (the Transformers backend in 0.32.0, a layer's window from layer_types, base.py): Olmo3ForCausalLM
  7,298,011,136 parameters; 24 sliding layers (window 4,096) and 8 full ones, 32 KV heads x 128 each, so four KV
  cache groups of 8 layers (vllm/v1/core/kv_cache_utils.py: the group size is the smallest layer count of a kind).
- ERNIE-4.5-21B-A3B (vllm/model_executor/models/ernie45_moe.py, 0.32.0): head_dim = config head_dim or
  hidden_size // heads = 2,560 // 20 = 128 (the published file's head_dim is null), 4 KV heads, 28 layers;
  Ernie4_5_MoeForCausalLM 21,825,437,888 parameters (transformers, head_dim 128); the RoPE cache of
  131,072 x 128 in bf16 on every GPU (get_rope, default scaling); 20 query heads: TP 8 refused as the engine does.
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


GLM46_PARAMS = 352_797_814_784


@pytest.mark.parametrize(("chip", "fits"), [("h100", False), ("h200", True), ("b200", True)])
def test_glm46_caches_one_kv_head_a_gpu_at_tp8_and_skips_its_mtp_layer(tmp_path: Path, chip: str, fits: bool) -> None:
    directory = sized_checkpoint(tmp_path / "m", _config("zai-org--GLM-4.6.json"), 2 * GLM46_PARAMS)
    mtp = {"dtype": "BF16", "shape": [5120, 10240], "data_offsets": [0, 5120 * 10240 * 2]}
    header = json.dumps({"model.layers.92.eh_proj.weight": mtp}).encode()
    (directory / "model-mtp.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    plan = plan_model(str(directory), chip, "vllm-gpu", engine_version="0.32.0", tensor_parallel_size=8)
    # 8 KV heads over 8 GPUs: one a GPU, 92 layers x 128 x (K + V) x 2 B, summed over the 8 GPUs
    assert plan.kv_bytes_per_token == 8 * 92 * 1 * 128 * 2 * 2
    # the MTP layer's 100 MiB are not counted; every GPU holds the RoPE cos/sin cache [202,752, 128 x 0.5] in bf16
    rope = 202752 * (128 // 2) * 2
    assert plan.memory_budget.weights_bytes == 2 * GLM46_PARAMS // 8 + rope  # 82.17 GiB a GPU
    assert plan.fits is fits  # over the H100's 72.85 GiB cap; under the H200's and B200's


HUNYUAN_PARAMS = 80_393_183_232


def test_hunyuan_a13b_as_transformers_serves_it(tmp_path: Path) -> None:
    """The published file as transformers' HunYuanMoEV1Config reads it (model_type hunyuan_v1_moe and head_dim 128,
    as a Hunyuan-A13B test fixture gives them: search-index file id 57983092879); the rest is Tencent's file."""
    config = {**_config("tencent--Hunyuan-A13B-Instruct.json"), "model_type": "hunyuan_v1_moe", "head_dim": 128}
    path = sized_checkpoint(tmp_path / "m", config, 2 * HUNYUAN_PARAMS)
    plans = {tp: plan_model(str(path), "h100", "vllm-gpu", engine_version="0.32.0", tensor_parallel_size=tp)
             for tp in (2, 4)}  # fmt: skip
    assert {tp: plan.kv_bytes_per_token for tp, plan in plans.items()} == {tp: 32 * 8 * 128 * 2 * 2 for tp in (2, 4)}
    assert [plan.memory_budget.weights_bytes for plan in plans.values()] == [2 * HUNYUAN_PARAMS // tp for tp in (2, 4)]
    assert [plan.fits for plan in plans.values()] == [False, True]  # 74.9 GiB a GPU at TP 2 over the 72.85 GiB cap


def test_hunyuan_a13b_remote_code_file_is_refused_in_one_line(tmp_path: Path) -> None:
    """Tencent's original file names model_type 'hunyuan' (its remote HunYuanConfig), which transformers does not
    register: refused by name, not planned as another family."""
    path = sized_checkpoint(tmp_path / "m", _config("tencent--Hunyuan-A13B-Instruct.json"), 2 * HUNYUAN_PARAMS)
    with pytest.raises(ConfigError, match=r"field 'model_type' = 'hunyuan' \(HunYuanMoEV1ForCausalLM\)"):
        plan_model(str(path), "h100", "vllm-gpu", engine_version="0.32.0", tensor_parallel_size=4)


OLMO3_PARAMS = 7_298_011_136


def test_olmo3_caches_its_sliding_layers_in_groups_of_eight(tmp_path: Path) -> None:
    plan = _plan68b(tmp_path, "allenai--Olmo-3-1025-7B.json", 2 * OLMO3_PARAMS, max_model_len=65536)
    sliding = [layer.index for layer in plan.layers if layer.sliding_window == 4096]
    assert sliding == [i for i in range(32) if i % 4 != 3]
    assert plan.kv_bytes_per_token == 32 * 32 * 128 * 2 * 2
    # 4 groups of 8 layers share a block of 16 tokens: 8 x 16 x 32 x 128 x 2 x 2 = 2 MiB a block
    budget = plan.memory_budget
    assert (budget.kv_groups, budget.group_layers, budget.block_bytes) == (4, 8, 8 * 16 * 32 * 128 * 2 * 2)
    assert plan.num_blocks == budget.kv_cache_bytes // budget.block_bytes
    assert plan.kv_tokens == plan.num_blocks // 4 * 16  # a token takes a slot in each of the 4 groups
    assert plan.memory_budget.weights_bytes == 2 * OLMO3_PARAMS  # yarn RoPE: no cos/sin cache counted


ERNIE_PARAMS = 21_825_437_888


def test_ernie45_21b_head_dim_null_is_hidden_over_heads(tmp_path: Path) -> None:
    plan = _plan68b(tmp_path, "baidu--ERNIE-4.5-21B-A3B-PT.json", 2 * ERNIE_PARAMS, max_model_len=32768)
    assert plan.kv_bytes_per_token == 28 * 4 * (2560 // 20) * 2 * 2
    assert plan.memory_budget.weights_bytes == 2 * ERNIE_PARAMS + 131072 * 128 * 2
    with pytest.raises(ConfigError, match=r"num_attention_heads 20 is not divisible by it"):
        _plan68b(tmp_path / "tp8", "baidu--ERNIE-4.5-21B-A3B-PT.json", 2 * ERNIE_PARAMS, tensor_parallel_size=8)


def _plan68b(tmp_path: Path, name: str, weights_bytes: int, **kwargs):  # type: ignore[no-untyped-def]
    path = sized_checkpoint(tmp_path / "m", _config(name), weights_bytes)
    return plan_model(str(path), "h100", "vllm-gpu", engine_version="0.32.0", **kwargs)


# Qwen/Qwen3-Omni-30B-A3B-Instruct's thinker as vLLM builds it; the text fields as test_planner_models_users_bring's
# QWEN3_OMNI (checked against a public copy there), the vision encoder's as a port's dataclass mirroring the
# published config (search-index file id 11713329152: depth 27, out_hidden_size 2048, spatial_merge_size 2,
# deepstack_visual_indexes [8, 16, 24])
QWEN3_OMNI_THINKER = {
    "architectures": ["Qwen3OmniMoeForConditionalGeneration"], "model_type": "qwen3_omni_moe",
    "torch_dtype": "bfloat16",
    "thinker_config": {
        "model_type": "qwen3_omni_moe_thinker", "audio_token_id": 151675, "image_token_id": 151655,
        "video_token_id": 151656,
        "text_config": {"model_type": "qwen3_omni_moe_text", "head_dim": 128, "hidden_size": 2048,
                        "intermediate_size": 768, "max_position_embeddings": 65536, "moe_intermediate_size": 768,
                        "num_attention_heads": 32, "num_experts": 128, "num_experts_per_tok": 8,
                        "num_hidden_layers": 48, "num_key_value_heads": 4, "vocab_size": 152064,
                        "rope_theta": 1000000, "rope_scaling": {"mrope_interleaved": True,
                                                                "mrope_section": [24, 20, 20], "rope_type": "default"}},
        "vision_config": {"model_type": "qwen3_omni_moe_vision_encoder", "depth": 27, "hidden_size": 1152,
                          "out_hidden_size": 2048, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
                          "in_channels": 3, "deepstack_visual_indexes": [8, 16, 24]},
        "audio_config": {"model_type": "qwen3_omni_moe_audio_encoder", "d_model": 1280, "encoder_layers": 32,
                         "output_dim": 2048},
    },
}  # fmt: skip


def test_qwen3_omni_thinker_holds_its_deepstack_buffers(tmp_path: Path) -> None:
    """Qwen3OmniMoeThinkerForConditionalGeneration.__init__ makes deepstack_num_level = len(vision_config.
    deepstack_visual_indexes) zero tensors of [max_num_batched_tokens, text hidden_size] in the model dtype when the
    vision tower is built (vllm/model_executor/models/qwen3_omni_moe_thinker.py lines 1697-1718, 0.32.0 sdist), as
    Qwen3-VL does: 3 x 8,192 x 2,048 x 2 B = 96 MiB on an H100 (8,192 batched tokens under 160 GiB). A config whose
    list is empty builds none."""
    weights = []
    for levels in ([8, 16, 24], []):
        config = json.loads(json.dumps(QWEN3_OMNI_THINKER))
        config["thinker_config"]["vision_config"]["deepstack_visual_indexes"] = levels
        path = sized_checkpoint(tmp_path / str(len(levels)), config, 2 * 10**9)
        plan = plan_model(str(path), "h100", "vllm-gpu", engine_version="0.32.0", max_model_len=32768)
        assert plan.kv_bytes_per_token == 48 * 4 * 128 * 2 * 2
        weights.append(plan.memory_budget.weights_bytes)
    assert weights[0] - weights[1] == 3 * 8192 * 2048 * 2


@pytest.mark.parametrize(
    ("version", "kv_cache_dtype", "per_layer", "block"),
    [("0.32.0", "auto", 576 * 2 + 132, 16), ("0.32.0", "fp8", 576 + 132, 16), ("0.34.0", "auto", 576 * 2 + 132, 64)],
)
def test_deepseek_v32_exp_on_mi300x_as_rocm_caches_it(
    tmp_path: Path, version: str, kv_cache_dtype: str, per_layer: int, block: int
) -> None:
    """vLLM serves DSA on ROCm (vllm/models/deepseek_v32/__init__.py: amd.model on is_rocm()) with
    ROCM_AITER_MLA_SPARSE, the only sparse backend rocm.py _get_backend_priorities gives (0.32.0 and 0.34.0 sdists):
    supported_kv_cache_dtypes auto / float16 / bfloat16 / fp8 / fp8_e4m3, kept as they are (mla_attention.py
    _canonicalize_sparse_mla_kv_cache_dtype rewrites FLASHMLA_SPARSE's and SM120's only): 576 x 2 B under 'auto',
    576 x 1 B under fp8; the indexer's K cache as on CUDA (vllm/models/deepseek_v32/attention.py: 128 + 128 // 128 x 4
    = 132 uint8). Kernel blocks [1, MultipleOf(16)] for both the sparse backend and the indexer on ROCm
    (indexer.py DeepseekV32IndexerBackend), so update_block_size_for_backend keeps CacheConfig.DEFAULT_BLOCK_SIZE:
    16 in 0.32.0, 64 in 0.34.0."""
    plan = _plan(tmp_path, V32, 671_877_929_216, "mi300x", engine_version=version, tensor_parallel_size=8,
                 max_model_len=32768, kv_cache_dtype=kv_cache_dtype)  # fmt: skip
    assert plan.kv_bytes_per_token == 8 * 61 * per_layer
    assert plan.memory_budget.min_block_size == block
    assert plan.fits  # 78.2 GiB of weights a GPU under MI300X's 192 GB


def test_deepseek_v32_exp_on_mi300x_on_a_release_not_read_is_refused_in_words(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError,
        match=r"0\.34\.x on NVIDIA cards and 0\.32\.0 - 0\.33\.x and 0\.34\.x on AMD cards only, not vLLM 0\.30\.0",
    ):
        _plan(tmp_path, V32, 671_877_929_216, "mi300x", engine_version="0.30.0", tensor_parallel_size=8,
              max_model_len=32768)  # fmt: skip


V32 = "deepseek-ai--DeepSeek-V3.2-Exp.json"


def _plan(tmp_path: Path, name: str, weights_bytes: int, chip: str, **kwargs):  # type: ignore[no-untyped-def]
    path = sized_checkpoint(tmp_path / "m", _config(name), weights_bytes)
    return plan_model(str(path), chip, "vllm-gpu", **kwargs)


LLAMA_NVFP4 = {
    "modelopt producer": {"quant_method": "modelopt", "producer": {"name": "modelopt"}, "quant_algo": "NVFP4"},
    "modelopt quant_algo": {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4"}},
    "compressed-tensors": {
        "quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16, "symmetric": True}}},
    },
}  # fmt: skip


@pytest.mark.parametrize("form", sorted(LLAMA_NVFP4))
def test_nvfp4_weights_on_vllm_cpu_are_refused_in_one_line(tmp_path: Path, form: str) -> None:
    """vLLM builds every NVFP4 linear layer (ModelOpt's ModelOptNvFp4Config: 'modelopt' with a quant_algo holding
    FP4, override_quantization_method; compressed-tensors' CompressedTensorsW4A4Fp4) through init_nvfp4_linear_kernel,
    which picks from _POSSIBLE_NVFP4_KERNELS[current_platform._enum]: CUDA and ROCm only, so on a CPU the list is
    empty and the engine raises 'Failed to find a kernel that can implement the NVFP4 linear layer.' as it builds the
    model (vllm/model_executor/kernels/linear/__init__.py, 0.27.1, 0.32.0, 0.33.0 and 0.34.0 sdists). It was planned as
    fitting."""
    config = {**_config("meta-llama--Llama-3.1-8B-Instruct.json"), "quantization_config": LLAMA_NVFP4[form]}
    path = sized_checkpoint(tmp_path / "m", config, 5_700_000_000)
    with pytest.raises(ConfigError, match=r"NVFP4 weights on vllm-cpu: .*'Failed to find a kernel that can implement"):
        plan_model(str(path), "cpu", "vllm-cpu", max_model_len=4096)
    assert plan_model(str(path), "h100", "vllm-gpu", max_model_len=4096).fits  # CUDA has NVFP4 kernels
