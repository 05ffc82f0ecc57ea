"""An fp8 KV cache or FP8 weights on an NVIDIA card without FP8 compute (compute capability below 8.9; the catalog's
Ampere cards), planned where vLLM's source says the engine serves them and refused where it stops at start-up
(engines.json fp8_without_native and the fp8_kv_cache v0_fallbacks; sources read in the vllm 0.8.5 - 0.34.0 sdists).

Triton compiles e4m3 (fp8e4nv) only from compute capability 8.9: vllm#26431 (RTX 3090, 'KV Cache Quantization not
working on v1 (rtx3090) "type fp8e4nv not supported in this architecture"', 2025-10-08, vLLM 0.11.0) and vllm#26646
(the same with --kv-cache-dtype fp8_e5m2); vllm#17581 (Qwen3 FP8 on 0.8.5, RTX 3090 / A6000)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model

CONFIGS = BOOTLOGS / "configs"
LLAMA = json.loads((CONFIGS / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
QWEN3_235B_FP8 = json.loads((CONFIGS / "Qwen--Qwen3-235B-A22B-FP8.json").read_text(encoding="utf-8"))
PHI2 = json.loads((CONFIGS / "microsoft--phi-2.json").read_text(encoding="utf-8"))  # head size 2,560 / 32 = 80
MIXTRAL = json.loads((CONFIGS / "mistralai--Mixtral-8x7B-Instruct-v0.1.json").read_text(encoding="utf-8"))
V2_LITE = json.loads((CONFIGS / "deepseek-ai--DeepSeek-V2-Lite-Chat.json").read_text(encoding="utf-8"))  # MLA
GPT_OSS_20B = json.loads((CONFIGS / "openai--gpt-oss-20b.json").read_text(encoding="utf-8"))  # sinks, head size 64
FAILS = r"type fp8e4nv not supported in this architecture"


def _llama(tmp_path: Path) -> str:
    directory = tmp_path / "llama"
    if not directory.exists():
        sized_checkpoint(directory, LLAMA, 16_060_522_496)  # its bf16 safetensors total (issue 12)
    return str(directory)


def _codes(plan) -> set[str]:
    return {w.code for w in plan.warnings}


@pytest.mark.parametrize("kv", ["fp8", "fp8_e5m2"])
def test_vllm_0110_refuses_an_fp8_kv_cache_on_ampere(tmp_path: Path, kv: str) -> None:
    # vllm 0.11.0 platforms/cuda.py: 'if (has_sink or use_fp8_kv_cache) and not cls.is_device_capability(90): return
    # TRITON_ATTN'; triton_attn.py views the cache as float8_e4m3fn whatever the variant (vllm#26646: fp8_e5m2 too)
    with pytest.raises(ConfigError, match=rf"--kv-cache-dtype {kv} on rtx3090 .*{FAILS}.*--engine-version 0\.11\.1"):
        plan_model(_llama(tmp_path), "rtx3090", max_model_len=8192, engine_version="0.11.0", kv_cache_dtype=kv)


def test_cards_with_fp8_take_it_on_vllm_0110(tmp_path: Path) -> None:
    # the same Triton kernels compile on Ada (8.9, the L40S), and Hopper (9.0) keeps FlashAttention 3
    for chip in ("l40s", "h100"):
        plan = plan_model(_llama(tmp_path), chip, max_model_len=8192, engine_version="0.11.0", kv_cache_dtype="fp8")
        assert not _codes(plan) & {"fp8-kv-flashinfer"}, chip


def test_from_0111_flashinfer_serves_it_and_the_plan_says_what_would_fail(tmp_path: Path) -> None:
    # 0.11.1+ _get_backend_priorities: FLASH_ATTN (fp8 only on FlashAttention 3), then FLASHINFER (head sizes 64, 128,
    # 256), which flashinfer-python, a requirement of the CUDA build, makes importable
    plan = plan_model(_llama(tmp_path), "a100-80gb", max_model_len=8192, engine_version="0.12.0", kv_cache_dtype="fp8")
    (note,) = [w for w in plan.warnings if w.code == "fp8-kv-flashinfer"]
    assert "FlashInfer takes this model's head sizes" in note.message and "without flashinfer-python" in note.message
    with pytest.raises(ConfigError, match=r"--no-flashinfer.*install flashinfer-python"):
        plan_model(_llama(tmp_path), "a100-80gb", max_model_len=8192, engine_version="0.12.0", kv_cache_dtype="fp8",
                   flashinfer=False)  # fmt: skip


def test_a_head_size_flashinfer_does_not_take_falls_to_triton_and_is_refused(tmp_path: Path) -> None:
    path = str(sized_checkpoint(tmp_path / "phi2", PHI2, 5_559_367_680))  # phi-2's bf16 safetensors, ~2.78B x 2 B
    with pytest.raises(ConfigError, match=r"FlashInfer takes head sizes 64, 128, 256, not \[80\]"):
        plan_model(path, "a100-80gb", max_model_len=2048, engine_version="0.12.0", kv_cache_dtype="fp8")
    # 0.17.0 - 0.32.x were not read (FlashInfer's head sizes changed between 0.16.0 and 0.33.0): warned, not refused
    plan = plan_model(path, "a100-80gb", max_model_len=2048, engine_version="0.24.0", kv_cache_dtype="fp8")
    assert "fp8-kv-flashinfer" in _codes(plan)


def test_vllm_08_to_010_runs_an_fp8_kv_cache_on_v0_where_v1_has_no_fp8_attention(tmp_path: Path) -> None:
    # _is_v1_supported_oracle: '# No Fp8 KV cache so far.' -> V0 unless FlashAttention 3 (Hopper) or, from 0.10.0,
    # data-centre Blackwell (cuda.py is_kv_cache_dtype_supported: 'All Blackwell backends support fp8')
    def rule(chip: str, version: str) -> str:
        plan = plan_model(_llama(tmp_path), chip, max_model_len=8192, engine_version=version, kv_cache_dtype="fp8")
        assert plan.memory_budget is not None
        return plan.memory_budget.rule_versions

    assert "V0" in rule("a100-80gb", "0.9.2") and "V0" in rule("a100-80gb", "0.10.1") and "V0" in rule("l40s", "0.10.1")
    assert "V0" not in rule("h100", "0.9.2") and "V0" not in rule("b200", "0.10.1")
    assert "V0" in rule("b200", "0.9.2")


def test_a_b300_is_compute_capability_103_which_vllm_010_does_not_count_as_blackwell(tmp_path: Path) -> None:
    # NVIDIA's CUDA GPUs page: B300 (Blackwell Ultra, GPU database architecture 'Blackwell Ultra') is compute
    # capability 10.3, sm_103; B200 is 10.0. vllm 0.10.x cuda.py is_kv_cache_dtype_supported tests
    # 'cls.is_device_capability(100)', an exact match (platforms/interface.py: to_int() == capability), so a B300's
    # fp8 KV cache goes to V0 where a B200's stays on V1. Before, 'Blackwell Ultra' had no capability: unjudged, V1
    from onechip.planner.rules import accelerator

    assert accelerator("B300").compute_capability == 103 and accelerator("b200").compute_capability == 100
    plan = plan_model(_llama(tmp_path), "B300", max_model_len=8192, engine_version="0.10.1", kv_cache_dtype="fp8")
    assert plan.memory_budget is not None and "V0" in plan.memory_budget.rule_versions


def test_block_fp8_weights_before_090_are_refused_and_marlin_takes_them_after(tmp_path: Path) -> None:
    # vllm 0.8.5 fp8.py: 'if self.block_quant: # Marlin doesn't support block-wise fp8' -> Triton block-FP8 GEMM;
    # 0.9.0 drops it. Qwen3-235B-A22B-FP8's quantization_config: weight_block_size [128, 128]
    path = str(sized_checkpoint(tmp_path / "q", QWEN3_235B_FP8, 236_000_000_000))
    with pytest.raises(
        ConfigError, match=rf"a block-quantized FP8 checkpoint on a100-80gb .*{FAILS}.*0\.9\.0 or later"
    ):
        plan_model(path, "a100-80gb", max_model_len=4096, engine_version="0.8.5", tensor_parallel_size=4)
    plan = plan_model(path, "a100-80gb", max_model_len=4096, engine_version="0.9.2", tensor_parallel_size=4)
    assert "fp8-weight-only" in _codes(plan)


def test_fp8_experts_before_090_are_refused(tmp_path: Path) -> None:
    # vllm 0.8.5 Fp8MoEMethod.apply: fused_experts(..., use_fp8_w8a8=True), no Marlin path (vllm#17764)
    path = str(sized_checkpoint(tmp_path / "m", MIXTRAL, 93_405_585_408))
    with pytest.raises(ConfigError, match=rf"FP8 mixture-of-experts weights on a100-80gb .*{FAILS}"):
        plan_model(path, "a100-80gb", max_model_len=4096, engine_version="0.8.5", quantization="fp8")
    assert "fp8-weight-only" in _codes(
        plan_model(path, "a100-80gb", max_model_len=4096, engine_version="0.9.2", quantization="fp8")
    )


def _v2_lite(tmp_path: Path) -> str:
    directory = tmp_path / "v2lite"
    if not directory.exists():
        sized_checkpoint(directory, V2_LITE, 31_412_968_448)  # 15,706,484,224 bf16 parameters
    return str(directory)


# (release, what the engine raises on Ampere / Turing for an MLA model's fp8 KV cache), engines.json fp8_without_native
# mla_kv_cache: V0 then V1 TritonMLAImpl.__init__ (vllm/attention/backends/triton_mla.py, v1/attention/backends/mla/
# triton_mla.py, 0.8.5 - 0.11.0 sdists); platforms/cuda.py get_attn_backend_cls, no MLA backend below 9.0 with fp8
# (0.11.1, 0.12.0, 0.16.0); the Triton MLA decode kernel on float8_e4m3fn (0.18.0 - 0.20.0); TritonMLAImpl's SM89
# check (0.26.0, 0.33.0, 0.34.0)
MLA_FAILS = [
    ("0.8.5", "TritonMLA with FP8 KV cache not yet supported"),
    ("0.9.2", "TritonMLA with FP8 KV cache not yet supported"),
    ("0.10.2", "TritonMLA V1 with FP8 KV cache not yet supported"),
    ("0.11.0", "TritonMLA V1 with FP8 KV cache not yet supported"),
    ("0.12.0", "No valid attention backend found"),
    ("0.16.0", "No valid attention backend found"),
    ("0.20.0", FAILS),
    ("0.34.0", r"native FP8 \(fp8e4nv\) requires SM89\+"),
]


@pytest.mark.parametrize(("version", "error"), MLA_FAILS)
@pytest.mark.parametrize("chip", ["a100-80gb", "t4"])
def test_an_mla_models_fp8_kv_cache_is_refused_below_89_in_every_release_read(
    tmp_path: Path, version: str, error: str, chip: str
) -> None:
    with pytest.raises(ConfigError, match=rf"--kv-cache-dtype fp8 of an MLA model on {chip} .*{error}") as raised:
        plan_model(_v2_lite(tmp_path), chip, max_model_len=4096, engine_version=version, kv_cache_dtype="fp8")
    # no release read serves it on these cards, so no later --engine-version is offered
    assert "--engine-version" not in str(raised.value) and "--kv-cache-dtype auto" in str(raised.value)


def test_an_mla_models_fp8_kv_cache_is_not_judged_where_flashmla_takes_it(tmp_path: Path) -> None:
    # FlashMLA (compute capability 9.0, is_flashmla_supported / supports_compute_capability) takes fp8 on Hopper
    plan = plan_model(_v2_lite(tmp_path), "h100", max_model_len=4096, engine_version="0.12.0", kv_cache_dtype="fp8")
    assert plan.memory_budget is not None


def test_vllm_0102_keeps_an_mla_model_with_an_fp8_kv_cache_on_v1(tmp_path: Path) -> None:
    # 0.10.2 cuda.py is_kv_cache_dtype_supported(kv_cache_dtype, model_config): '# Only FlashMLA and CUTLASS_MLA
    # support fp8', the MLA default being FLASHMLA below 10.0 whatever the card, so the oracle stays on V1; 0.10.1.1
    # (no model_config) falls back to V0 as for any model. On the L40S (Ada, FP8 compute) this rule is the only judge.
    def rule(model: str, version: str) -> str:
        plan = plan_model(model, "l40s", max_model_len=4096, engine_version=version, kv_cache_dtype="fp8")
        assert plan.memory_budget is not None
        return plan.memory_budget.rule_versions

    assert "V0" not in rule(_v2_lite(tmp_path), "0.10.2") and "V0" in rule(_v2_lite(tmp_path), "0.10.1")
    assert "V0" in rule(_llama(tmp_path), "0.10.2")


@pytest.mark.parametrize("version", ["0.11.1", "0.12.0", "0.24.0", "0.34.0"])
def test_attention_sinks_with_an_fp8_kv_cache_fall_to_triton_and_are_refused(tmp_path: Path, version: str) -> None:
    # FlashAttention takes sinks only as FlashAttention 3 (fa_utils.flash_attn_supports_sinks), FlashInfer only on
    # its TRTLLM path (flashinfer.py supports_sink: 10.x; 9.0 / 12.x in 0.33.0), so gpt-oss's first valid backend
    # on Ampere is TRITON_ATTN, which compiles the cache as e4m3 (0.11.1 - 0.32) or refuses fp8 below 8.9 (0.33.0+)
    path = str(sized_checkpoint(tmp_path / "oss", GPT_OSS_20B, 13_761_264_768))
    with pytest.raises(ConfigError, match=r"GptOssForCausalLM has attention sinks, which FlashInfer does not take"):
        plan_model(path, "a100-80gb", max_model_len=8192, engine_version=version, kv_cache_dtype="fp8")


@pytest.mark.parametrize("version", ["0.12.0", "0.16.0", "0.20.0", "0.34.0"])
def test_block_fp8_weights_stay_on_marlin_in_every_release_read_from_090(tmp_path: Path, version: str) -> None:
    # Fp8LinearMethod.use_marlin below 8.9 (0.9.0 - 0.18.0); MarlinFP8ScaledMMLinearKernel ahead of
    # TritonFp8BlockScaledMMKernel in kernels/linear/__init__.py _POSSIBLE_FP8_BLOCK_KERNELS (0.20.0 - 0.34.0).
    # vllm#39610's '_w8a8_triton_block_scaled_mm' failures on Ampere were nightlies between 0.19.1 and 0.20.0
    path = str(sized_checkpoint(tmp_path / "q", QWEN3_235B_FP8, 236_000_000_000))
    plan = plan_model(path, "a100-80gb", max_model_len=4096, engine_version=version, tensor_parallel_size=4)
    assert "fp8-weight-only" in _codes(plan)


@pytest.mark.parametrize("version", ["0.11.1", "0.16.0", "0.20.0", "0.23.0"])
def test_a_t4_takes_an_fp8_kv_cache_on_flashinfer_before_0240(tmp_path: Path, version: str) -> None:
    # flashinfer.py supports_compute_capability: 'capability >= DeviceCapability(7, 5)' in the 0.11.1 - 0.23.0 sdists,
    # and FlashAttention needs 8.0: a T4 (Turing, 7.5) was not judged at all (the entries named capability 8.0 only)
    plan = plan_model(_llama(tmp_path), "t4", max_model_len=4096, engine_version=version, kv_cache_dtype="fp8")
    assert "fp8-kv-flashinfer" in _codes(plan)


@pytest.mark.parametrize("chip", ["t4", "v100-32gb"])
def test_from_0240_an_fp8_kv_cache_below_80_is_refused_as_triton_refuses_it(tmp_path: Path, chip: str) -> None:
    # 0.24.0 raised FlashInfer's floor to 8.0 ('broken on SM75 (Turing)', flashinfer-ai/flashinfer#3620), and
    # triton_attn.py TritonAttentionImpl refuses an fp8 cache below 8.9 (0.24.0 - 0.34.0 sdists); was planned silently
    for version in ("0.24.0", "0.32.0"):
        with pytest.raises(ConfigError, match="FP8 KV cache is not supported by the Triton attention backend"):
            plan_model(_llama(tmp_path), chip, max_model_len=4096, engine_version=version, kv_cache_dtype="fp8")


def test_a_v100_has_no_backend_for_an_fp8_kv_cache_before_0240_either(tmp_path: Path) -> None:
    # compute capability 7.0: below FlashInfer's floor (7.5) and FlashAttention's (8.0), so TRITON_ATTN takes the
    # fp8 cache and Triton's e4m3 (fp8e4nv) compile fails below 8.9 (vllm#26431)
    with pytest.raises(ConfigError, match=FAILS):
        plan_model(_llama(tmp_path), "v100-32gb", max_model_len=4096, engine_version="0.20.0", kv_cache_dtype="fp8")
