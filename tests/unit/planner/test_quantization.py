"""Weights as loaded (issue 27): runtime --quantization fp8 on a bf16 checkpoint, and the checkpoint's own
quantization_config method checked against the methods the engine registers."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from factories import BOOTLOGS, corpus_entry, gpt_oss_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.schemas.common import GIB
from onechip.vllm import flags

LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))


def llama_layout(directory: Path, config: dict) -> Path:
    """A header-only Llama-layout checkpoint (benchmarks/planner_accuracy.py writes the same for the corpus)."""
    sys.path.insert(0, str(BOOTLOGS.parents[2] / "benchmarks"))
    try:
        import planner_accuracy
    finally:
        sys.path.pop(0)
    planner_accuracy.write_layout(directory, config, planner_accuracy.llama_layout(config))
    return directory


def test_the_layout_is_the_checkpoint_of_the_model_card(tmp_path: Path) -> None:
    plan = plan_model(str(llama_layout(tmp_path / "llama", LLAMA)), "h100", max_model_len=8192)
    assert plan.weights_bytes == 16_060_522_496  # Llama-3.1-8B-Instruct's safetensors total (issue 12)


def test_online_fp8_matches_the_h100_log_out_of_sample(tmp_path: Path) -> None:
    # llm-d-planner sweep, vLLM 0.19.0, H100, --quantization fp8 (tests/fixtures/bootlogs/
    # h100-llama31-8b-qfp8-v0190.log): 'Model loading took 8.49 GiB', 'GPU KV cache size: 529,248 tokens'.
    entry = next(e for e in json.loads((BOOTLOGS / "corpus.json").read_text()) if e["name"].endswith("qfp8-v0190"))
    path = llama_layout(tmp_path / "llama", LLAMA)
    plan = plan_model(
        str(path), "h100", max_model_len=8192, utilization=0.95, max_num_seqs=1024, max_num_batched_tokens=8192,
        engine_version="0.19.0", quantization="fp8", multimodal=False,
    )  # fmt: skip
    assert plan.weights_bytes / GIB == pytest.approx(entry["logged"]["model_weights_gib"], abs=0.06)
    logged = entry["logged"]["kv_cache_tokens"]
    assert abs(plan.kv_tokens_logged - logged) / logged < 0.01
    assert plan.serve.quantization is not None and plan.serve.quantization.value == "fp8"
    assert any(f.flag == "--quantization" and f.value == "fp8" for f in flags.plan_flags(plan))  # the command serves it


def test_an_unknown_quant_method_is_refused_as_the_engine_refuses_it(tmp_path: Path) -> None:
    config = {**LLAMA, "quantization_config": {"quant_method": "frobquant"}}
    path = llama_layout(tmp_path / "frob", config)
    with pytest.raises(ConfigError, match=r"'frobquant' is not a method vllm-gpu registers.*Unknown quantization"):
        plan_model(str(path), "h100", max_model_len=8192)


# vLLM's refusal when --quantization names a method the checkpoint's quantization_config is not and no method's
# override_quantization_method claims it for that value (vllm/config/model.py ModelConfig._verify_quantization, 0.34.0)
MISMATCH = (
    "Quantization method specified in the model config ({}) does not match the quantization method specified in "
    "the `quantization` argument ({})"
)


def test_runtime_fp8_on_a_quantized_checkpoint_is_refused_as_vllm_refuses_it(tmp_path: Path) -> None:
    config = {**LLAMA, "quantization_config": {"quant_method": "awq"}}
    path = llama_layout(tmp_path / "awq", config)
    with pytest.raises(ConfigError, match=re.escape(MISMATCH.format("awq", "fp8"))):
        plan_model(str(path), "h100", max_model_len=8192, quantization="fp8")


@pytest.mark.parametrize(
    ("method", "asked"),
    [
        # AutoAWQConfig / AutoGPTQConfig.override_quantization_method claim an awq / gptq checkpoint for these
        # values (vllm/model_executor/layers/quantization/auto_awq.py, auto_gptq.py of the 0.34.0 sdist)
        ("awq", "awq_marlin"), ("awq", "awq"), ("awq", "auto_awq"),
        ("gptq", "gptq_marlin"), ("gptq", "gptq"), ("gptq", "auto_gptq"),
        # no override: accepted because it is the checkpoint's own method
        ("compressed-tensors", "compressed-tensors"), ("fp8", "fp8"), ("bitsandbytes", "bitsandbytes"),
        # MoeWNA16Config claims a 4-bit awq checkpoint for 'moe_wna16' (is_moe_wna16_compatible), MoE or not
        ("awq", "moe_wna16"),
    ],
)  # fmt: skip
def test_the_checkpoints_own_method_asked_again_is_planned_as_the_checkpoint(
    tmp_path: Path, method: str, asked: str
) -> None:
    path = llama_layout(tmp_path / method, {**LLAMA, "quantization_config": {"quant_method": method, "bits": 4}})
    kw = {"max_model_len": 8192, "engine_version": "0.27.1"}  # bitsandbytes is in-tree up to 0.27.1
    plain = plan_model(str(path), "h100", **kw)
    plan = plan_model(str(path), "h100", quantization=asked, **kw)
    assert plan.weights_bytes == plain.weights_bytes  # vLLM loads the checkpoint by its own quantization_config
    assert plan.serve.quantization is not None and plan.serve.quantization.value == asked
    assert any(f.flag == "--quantization" and f.value == asked for f in flags.plan_flags(plan))


@pytest.mark.parametrize(
    ("method", "asked"),
    [("awq", "gptq"), ("gptq", "awq_marlin"), ("compressed-tensors", "fp8"), ("fp8", "compressed-tensors"),
     ("bitsandbytes", "awq"), ("gptq", "auto_awq")],
)  # fmt: skip
def test_another_method_is_refused_with_vllms_error(tmp_path: Path, method: str, asked: str) -> None:
    path = llama_layout(tmp_path / method, {**LLAMA, "quantization_config": {"quant_method": method, "bits": 4}})
    with pytest.raises(ConfigError, match=re.escape(MISMATCH.format(method, asked))):
        plan_model(str(path), "h100", max_model_len=8192, engine_version="0.27.1", quantization=asked)


def test_a_modelopt_checkpoint_is_claimed_whatever_is_asked(tmp_path: Path) -> None:
    # ModelOptFp8Config.override_quantization_method returns 'modelopt' for quant_algo FP8 without reading the
    # user's value (vllm/model_executor/layers/quantization/modelopt.py, 0.32.0 and 0.34.0 sdists)
    quant = {"producer": {"name": "modelopt", "version": "0.19.0"}, "quantization": {"quant_algo": "FP8"}}
    path = llama_layout(tmp_path / "mo", {**LLAMA, "quantization_config": quant})
    plain = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.34.0")
    plan = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.34.0", quantization="fp8")
    assert plan.weights_bytes == plain.weights_bytes


@pytest.mark.parametrize(
    ("algo", "version", "asked", "refused"),
    [
        # the 0.8.5 and 0.9.2 sdists' modelopt.py has no override_quantization_method: a method other than the
        # checkpoint's own is refused (ModelConfig._verify_quantization, vllm/config.py of both)
        ("FP8", "0.9.2", "modelopt_fp4", True), ("FP8", "0.9.2", "fp8", True), ("FP8", "0.9.2", "modelopt", False),
        # from 0.10.0 ModelOptFp8Config claims it ('FP8' in quant_algo until 0.14.0's, quant_algo.upper() == 'FP8' from
        # 0.16.0's), and _verify_quantization sets the argument to the claim: served as modelopt, whatever was asked
        ("FP8", "0.10.0", "modelopt_fp4", False), ("FP8", "0.32.0", "modelopt_fp4", False),
        # a per-channel FP8 algo holds 'FP8' (claimed, 0.10.0 - 0.14.0) but is not 'FP8' (unclaimed from 0.16.0)
        ("FP8_PER_CHANNEL_PER_TOKEN", "0.13.0", "fp8", False), ("FP8_PER_CHANNEL_PER_TOKEN", "0.16.0", "fp8", True),
        # 0.10.0 - 0.13.0 compare the algo as written, 0.14.0 upper-cased
        ("fp8", "0.13.0", "fp8", True), ("fp8", "0.14.0", "fp8", False),
    ],
)  # fmt: skip
def test_a_modelopt_checkpoint_is_claimed_as_the_release_claims_it(
    tmp_path: Path, algo: str, version: str, asked: str, refused: bool
) -> None:
    path = llama_layout(
        tmp_path / "mo", {**LLAMA, "quantization_config": {"quant_method": "modelopt", "quant_algo": algo}}
    )
    kw = {"max_model_len": 8192, "engine_version": version, "quantization": asked}
    if refused:
        with pytest.raises(ConfigError, match=re.escape(MISMATCH.format("modelopt", asked))):
            plan_model(str(path), "h100", **kw)
    else:
        plan = plan_model(str(path), "h100", **kw)
        assert (
            plan.weights_bytes
            == plan_model(str(path), "h100", max_model_len=8192, engine_version=version).weights_bytes
        )


@pytest.mark.parametrize(
    ("quant", "version", "asked", "refused"),
    [
        # 0.17.0 - 0.21.0's _extract_modelopt_quant_algo reads only quant_method 'modelopt' exactly
        # (`.lower() != "modelopt"`: modelopt.py of the 0.17.0, 0.18.0, 0.20.0, 0.21.0 sdists); 0.22.0's on take any
        # 'modelopt*' (`.lower().startswith("modelopt")`: 0.22.0, 0.23.0, 0.24.0, 0.27.1, 0.32.0 sdists). Unclaimed,
        # _verify_quantization compares the checkpoint's own method with the one asked
        ({"quant_method": "modelopt_fp4", "quant_algo": "NVFP4"}, "0.20.0", "modelopt", "modelopt_fp4"),
        ({"quant_method": "modelopt_fp4", "quant_algo": "NVFP4"}, "0.21.0", "modelopt", "modelopt_fp4"),
        ({"quant_method": "modelopt_fp4", "quant_algo": "NVFP4"}, "0.22.0", "modelopt", None),
        ({"quant_method": "modelopt_fp4", "quant_algo": "NVFP4"}, "0.32.0", "modelopt", None),
        # a 'quantization' entry that is no mapping: no algo at all (`return None`, every release that reads it),
        # not the top-level quant_algo beside it
        ({"quant_method": "modelopt", "quantization": None, "quant_algo": "FP8"}, "0.32.0", "fp8", "modelopt"),
        ({"quant_method": "modelopt", "quantization": "FP8", "quant_algo": "FP8"}, "0.20.0", "fp8", "modelopt"),
        ({"quant_method": "modelopt", "quant_algo": "FP8"}, "0.32.0", "fp8", None),
    ],
)  # fmt: skip
def test_a_modelopt_quant_method_is_read_as_the_release_reads_it(
    tmp_path: Path, quant: dict, version: str, asked: str, refused: str | None
) -> None:
    path = llama_layout(tmp_path / "mo", {**LLAMA, "quantization_config": quant})
    kw = {"max_model_len": 8192, "engine_version": version, "quantization": asked}
    if refused:
        with pytest.raises(ConfigError, match=re.escape(MISMATCH.format(refused, asked))):
            plan_model(str(path), "h100", **kw)
    else:
        assert plan_model(str(path), "h100", **kw).serve.quantization is not None


def test_a_method_the_release_does_not_register_is_refused_with_vllms_error(tmp_path: Path) -> None:
    path = llama_layout(tmp_path / "llama", LLAMA)
    with pytest.raises(ConfigError, match=re.escape("('Unknown quantization method: frobquant')")):
        plan_model(str(path), "h100", max_model_len=8192, quantization="frobquant")
    # auto_awq is registered from 0.24.0 (catalog/vllm_registries.json), and claims nothing before
    awq = llama_layout(tmp_path / "awq", {**LLAMA, "quantization_config": {"quant_method": "awq", "bits": 4}})
    with pytest.raises(ConfigError, match=re.escape(MISMATCH.format("awq", "auto_awq"))):
        plan_model(str(awq), "h100", max_model_len=8192, engine_version="0.23.0", quantization="auto_awq")


def test_a_checkpoint_method_asked_of_an_unquantized_checkpoint_is_refused(tmp_path: Path) -> None:
    # vLLM keeps 'awq' and fails at load looking for the checkpoint's quantization config; fp8 alone is online
    path = llama_layout(tmp_path / "llama", LLAMA)
    with pytest.raises(ConfigError, match=r"--quantization awq: the checkpoint has no quantization_config"):
        plan_model(str(path), "h100", max_model_len=8192, quantization="awq")


# --- MXFP4 as loaded (issue 27): gpt-oss checkpoints, whose expert tensors vLLM pads at load ----------------------

GPT_OSS_120B = json.loads((BOOTLOGS / "configs" / "openai--gpt-oss-120b.json").read_text(encoding="utf-8"))
GPT_OSS_120B_TENSOR_BYTES = 65_248_815_744  # configs/openai--gpt-oss-120b.json _source: the published tensor bytes


gpt_oss = gpt_oss_checkpoint  # a header-only gpt-oss checkpoint, as the corpus plans it


def test_the_gpt_oss_layout_is_the_published_checkpoint(tmp_path: Path) -> None:
    plan = plan_model(str(gpt_oss(tmp_path / "g", GPT_OSS_120B)), "a100-80gb", max_model_len=8192, engine="vllm-gpu")
    (note,) = [w for w in plan.warnings if w.code == "mxfp4-loaded-layout"]
    assert "against 60.77 GiB stored" in note.message  # 65,248,815,744 B = 60.77 GiB, the on-disk figure


def test_mxfp4_on_hopper_loads_in_the_marlin_layout_as_the_v0101_log(tmp_path: Path) -> None:
    # vllm#23278 (tests/fixtures/bootlogs/h100pcie-gpt-oss-120b-len131072-refused-v0101.log), Marlin backend:
    # 'Model loading took 65.9651 GiB' for 60.77 GiB on disk; intermediate padded to 128, hidden to 256
    logged = corpus_entry("h100pcie-gpt-oss-120b-len131072-refused-v0101")["logged"]["model_weights_gib"]
    plan = plan_model(str(gpt_oss(tmp_path / "g", GPT_OSS_120B)), "h100", max_model_len=131072, engine_version="0.10.1")
    assert plan.weights_bytes / GIB == pytest.approx(logged, abs=0.1)


def test_mxfp4_on_hopper_loads_in_the_triton_layout_from_v011(tmp_path: Path) -> None:
    # vllm#33155 (vLLM 0.14.1, 'Using Triton backend', 'Model loading took 64.38 GiB'); the vllm/vllm-openai:v0.11.0
    # image logs the same 64.38 GiB (llm-d/llm-d-benchmark config_explorer/empirical-vllm-memory-results.md). From
    # triton_kernels' Hopper layouts the plan gets 64.17 GiB: 0.21 GiB stays unexplained (engines.json source)
    logged = corpus_entry("h100-gpt-oss-120b-len5120-triton-v0141")["logged"]["model_weights_gib"]
    plan = plan_model(str(gpt_oss(tmp_path / "g", GPT_OSS_120B)), "h100", max_model_len=5120, engine_version="0.14.1")
    assert plan.weights_bytes / GIB == pytest.approx(logged, abs=0.25)
    (note,) = [w for w in plan.warnings if w.code == "mxfp4-loaded-layout"]
    assert "Marlin backend would load 65.90 GiB" in note.message  # the layout of an install without triton_kernels


@pytest.mark.parametrize("tp", [1, 2])
def test_gpt_oss_20b_weights_per_gpu_match_the_v0190_logs(tmp_path: Path, tp: int) -> None:
    # llm-d-planner sweep, vLLM 0.19.0, H100: 'Model loading took 13.64 GiB' (TP1), 7.01 GiB per GPU (TP2); the
    # geometry of configs/openai--gpt-oss-20b.json with the checkpoint's own quant_method, mxfp4
    config = json.loads((BOOTLOGS / "configs" / "openai--gpt-oss-20b.json").read_text(encoding="utf-8"))
    config["quantization_config"] = {**config["quantization_config"], "quant_method": "mxfp4"}
    name = "h100-gpt-oss-20b-sampler-oom-v0190" if tp == 1 else "h100x2-gpt-oss-20b-tp2-v0190"
    logged = corpus_entry(name)["logged"]["model_weights_gib"]
    plan = plan_model(str(gpt_oss(tmp_path / "g", config)), "h100", max_model_len=8192, tensor_parallel_size=tp,
                      engine_version="0.19.0")  # fmt: skip
    # planned in the Triton layout (13.38 / 6.91 GiB); the sweep's log does not name its MXFP4 backend, and Marlin's
    # figure (13.67 / 7.06 GiB, named by the plan's note) lands closer: within 0.3 GiB either way
    assert plan.weights_bytes / tp / GIB == pytest.approx(logged, abs=0.3)


def _rocm_expert_bytes_per_rank(config: dict, tp: int, intermediate_multiple: int) -> int:
    """One gpt-oss layer's MXFP4 expert parameters on one rank as vLLM's ROCm Triton path creates them: FusedMoE rounds
    the hidden size up to 256 for mxfp4 on ROCm (fused_moe/layer.py maybe_roundup_hidden_size: 0.11.0, 0.11.1,
    0.11.2, 0.13.0, 0.16.0 - 0.18.0 sdists), Mxfp4MoEMethod.create_weights the intermediate size per rank to
    `intermediate_multiple`; w13 [E, 2I, H/2] and w2 [E, H, I/2] u8, scales [.., /32] u8, both biases float32 after
    process_weights_after_loading."""
    experts, hidden = config["num_local_experts"], -(-config["hidden_size"] // 256) * 256
    inter = -(-config["intermediate_size"] // tp // intermediate_multiple) * intermediate_multiple
    w13 = 2 * inter * (hidden // 2 + hidden // 32 + 4)
    w2 = hidden * (inter // 2 + inter // 32 + 4)
    return experts * (w13 + w2)


@pytest.mark.parametrize(
    ("version", "tp", "intermediate_multiple"),
    [("0.11.0", 1, 256), ("0.13.0", 1, 128), ("0.13.0", 2, 128), ("0.18.0", 1, 128)],
)
def test_mxfp4_on_cdna_loads_as_vllms_rocm_triton_path_creates_it(
    tmp_path: Path, version: str, tp: int, intermediate_multiple: int
) -> None:
    # create_weights' ROCm branch pads the intermediate size to 256 in the 0.11.0 sdist and to get_padding_alignment()
    # (quantization/utils/mxfp4_utils.py: 128 off gfx950) in the 0.11.1 - 0.18.0 sdists; the hidden size is 256 either
    # way (FusedMoE pads it before create_weights, whose own 128 then changes nothing); _swizzle_mxfp4 keeps
    # StridedLayout (views, no padding) for values and scales off gfx950. The stored checkpoint: 13,761,264,768 B
    config = json.loads((BOOTLOGS / "configs" / "openai--gpt-oss-20b.json").read_text(encoding="utf-8"))
    config["quantization_config"] = {**config["quantization_config"], "quant_method": "mxfp4"}
    e, h, i, layers = (
        config[k] for k in ("num_local_experts", "hidden_size", "intermediate_size", "num_hidden_layers")
    )
    stored_experts = layers * e * (2 * i * (h // 2 + h // 32 + 2) + h * (i // 2 + i // 32 + 2))
    loaded = (
        13_761_264_768 - stored_experts + tp * layers * _rocm_expert_bytes_per_rank(config, tp, intermediate_multiple)
    )
    plan = plan_model(str(gpt_oss(tmp_path / "g", config)), "mi300x", max_model_len=8192, tensor_parallel_size=tp,
                      engine_version=version)  # fmt: skip
    assert plan.weights_bytes == loaded


@pytest.mark.parametrize(
    ("name", "tp"),
    [("r9700-gpt-oss-20b-len32768-util098-v0130rc2dev-rocm", 1),
     ("r9700x2-gpt-oss-20b-tp2-len32768-util095-v0112dev-rocm", 2)],
)  # fmt: skip
def test_mxfp4_on_rdna_4_stays_unmodelled_and_says_so(tmp_path: Path, name: str, tp: int) -> None:
    # the R9700 logs load 14.3066 / 7.4551 GiB; the CDNA row's rule (the same ROCm source path) gives 13.68 / 7.07 and
    # the rest is not traced (the logs' known_error), so RDNA has no row: weights as stored, and the plan says so
    config = json.loads((BOOTLOGS / "configs" / "openai--gpt-oss-20b.json").read_text(encoding="utf-8"))
    config["quantization_config"] = {**config["quantization_config"], "quant_method": "mxfp4"}
    entry = corpus_entry(name)
    plan = plan_model(str(gpt_oss(tmp_path / "g", config)), "radeon-ai-pro-r9700", max_model_len=32768,
                      tensor_parallel_size=tp, engine_version=entry["rule_version"])  # fmt: skip
    assert plan.weights_bytes == 13_761_264_768 < entry["logged"]["model_weights_gib"] * tp * GIB
    (note,) = [w for w in plan.warnings if w.code == "mxfp4-layout-not-modelled"]
    assert "weights planned as stored (12.82 GiB)" in note.message


def test_gpt_oss_120b_on_one_h100_at_095_is_refused_as_vllm_refused_it(tmp_path: Path) -> None:
    # vllm#27508 (held out: the 0.8.0 - 0.15.x sampler rule is fitted on vllm#23278 only): 'vllm serve
    # openai/gpt-oss-120b --gpu-memory-utilization 0.95 --max-num-batched-tokens 1024', 'Available KV cache memory:
    # 1.71 GiB', refused: one 131,072-token request does not fit
    logged = corpus_entry("h100-gpt-oss-120b-util095-refused-v011")["logged"]["available_kv_cache_gib"]
    # a conda environment, not the image (corpus engine_args flashinfer false): the sort-based sampler warm-up
    plan = plan_model(str(gpt_oss(tmp_path / "g", GPT_OSS_120B)), "h100", max_model_len=131072, utilization=0.95,
                      max_num_batched_tokens=1024, engine_version="0.11.0", flashinfer=False)  # fmt: skip
    assert not plan.fits and plan.binding_limit == "kv-one-request"
    assert plan.memory_budget is not None
    # that run loaded the experts through Marlin (a conda pip install; 'Available KV cache memory: 1.71 GiB' fits
    # 65.9 GiB of weights), the layout the plan's note names beside its 0.11.0 default (Triton)
    (note,) = [w for w in plan.warnings if w.code == "mxfp4-loaded-layout"]
    marlin_gib = float(note.message.split("Marlin backend would load ")[1].split(" GiB")[0])
    pool_gib = plan.memory_budget.kv_cache_bytes / GIB - (marlin_gib - plan.weights_bytes / GIB)
    assert pool_gib == pytest.approx(logged, abs=0.25)


def test_mxfp4_asked_of_gpt_oss_is_planned_as_the_checkpoint(tmp_path: Path) -> None:
    # the checkpoint's own method; from 0.20.0 GptOssMxfp4Config claims a gpt_oss mxfp4 checkpoint whatever is asked
    # (vllm/model_executor/layers/quantization/mxfp4.py, 0.32.0 and 0.34.0 sdists)
    path = gpt_oss(tmp_path / "g", GPT_OSS_120B)
    plain = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.34.0")
    for asked in ("mxfp4", "gpt_oss_mxfp4"):
        plan = plan_model(str(path), "h100", max_model_len=8192, engine_version="0.34.0", quantization=asked)
        assert plan.weights_bytes == plain.weights_bytes, asked


def test_mxfp4_below_compute_capability_80_is_refused_as_the_engine_refuses_it(tmp_path: Path) -> None:
    # vllm mxfp4.py Mxfp4Config.get_min_capability() == 80; the T4 is 7.5
    with pytest.raises(ConfigError, match=r"Minimum capability: 80\. Current capability: 75\."):
        plan_model(str(gpt_oss(tmp_path / "g", GPT_OSS_120B)), "t4", max_model_len=4096)


def test_fp8_on_a_card_without_fp8_is_planned_weight_only_and_said(tmp_path: Path) -> None:
    # a T4 (7.5) and an A100 (8.0) pass vLLM's fp8 check (Fp8Config 75 at v0.30.0) but have no FP8 compute:
    # fp8.py serves the weights through Marlin, weight-only
    path = llama_layout(tmp_path / "llama", LLAMA)
    for chip in ("t4", "a100-80gb"):
        plan = plan_model(str(path), chip, max_model_len=4096, quantization="fp8")
        assert any(w.code == "fp8-weight-only" for w in plan.warnings), chip
    h100 = plan_model(str(path), "h100", max_model_len=4096, quantization="fp8")
    assert not any(w.code == "fp8-weight-only" for w in h100.warnings)


def test_mxfp4_on_ampere_at_tp4_loads_in_the_marlin_layout(tmp_path: Path) -> None:
    # dennislee22/vLLM-benchmarking (vLLM 0.10.1.1, 4 x A100 80GB, TP4; held out): 'Model loading took 17.2217 GiB'
    # per GPU; 'Available KV cache memory: 45.32 GiB', 'GPU KV cache size: 2,640,144 tokens'
    logged = corpus_entry("a100x4-gpt-oss-120b-tp4-ray-v01011")["logged"]
    path = gpt_oss(tmp_path / "g", GPT_OSS_120B)
    kw = {"max_model_len": 16384, "tensor_parallel_size": 4, "engine_version": "0.10.1"}
    plan = plan_model(str(path), "a100-80gb", kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB), **kw)
    assert plan.weights_bytes / 4 / GIB == pytest.approx(logged["model_weights_gib"], rel=0.005)
    assert abs(plan.kv_tokens_logged - logged["kv_cache_tokens"]) / logged["kv_cache_tokens"] < 0.01


@pytest.mark.parametrize(
    ("version", "launch", "backend"),
    [("0.11.0", "vllm", "Marlin"), ("0.11.0", "vllm-docker", "Triton"), ("0.12.0", "vllm", "Triton")],
)
def test_a_pip_install_before_0_12_has_no_triton_kernels_and_loads_marlin(
    tmp_path: Path, version: str, launch: str, backend: str
) -> None:
    # vllm mxfp4.py get_mxfp4_backend (0.11.0 sdist): Triton on SM 9.0 only when has_triton_kernels(), the optional
    # 'triton_kernels' package that the 0.10.2 - 0.11.x wheels do not carry; 0.12.0 builds vendor it
    # (cmake/external_projects/triton_kernels.cmake). vllm#27508's conda run (0.11.0) fits Marlin's 65.9 GiB.
    plan = plan_model(str(gpt_oss(tmp_path / "g", GPT_OSS_120B)), "h100", max_model_len=8192, engine_version=version,
                      launch=launch)  # fmt: skip
    (note,) = [w for w in plan.warnings if w.code == "mxfp4-loaded-layout"]
    assert f"vLLM's {backend} backend loads them" in note.message


# --- --quantization humming (vLLM 0.20.0 on): HummingConfig.override_quantization_method returns 'humming' whenever
# the user asks it, whatever the checkpoint's quant_method, and _verify_quantization asks it first when asked
# ('if self.quantization == "humming": overrides = ["humming"] + overrides'; quantization/humming.py and
# config/model.py of the 0.20.0, 0.21.0, 0.22.1, 0.23.0, 0.25.0, 0.27.1, 0.32.0, 0.34.0 sdists)


@pytest.mark.parametrize(
    ("method", "version"),
    [("awq", "0.20.0"), ("gptq", "0.21.0"), ("fp8", "0.27.1"), ("compressed-tensors", "0.32.0"), ("awq", "0.34.0")],
)
def test_humming_claims_any_quantized_checkpoint(tmp_path: Path, method: str, version: str) -> None:
    path = llama_layout(tmp_path / method, {**LLAMA, "quantization_config": {"quant_method": method, "bits": 4}})
    kw = {"max_model_len": 8192, "engine_version": version}
    plain = plan_model(str(path), "h100", **kw)
    plan = plan_model(str(path), "h100", quantization="humming", **kw)
    assert plan.weights_bytes == plain.weights_bytes  # the checkpoint's tensors are what loads
    assert plan.serve.quantization is not None and plan.serve.quantization.value == "humming"
    assert any(f.flag == "--quantization" and f.value == "humming" for f in flags.plan_flags(plan))
    assert "humming-layout" in {w.code for w in plan.warnings}


def test_humming_before_its_first_release_is_refused_as_vllm_refuses_it(tmp_path: Path) -> None:
    path = llama_layout(tmp_path / "awq", {**LLAMA, "quantization_config": {"quant_method": "awq", "bits": 4}})
    with pytest.raises(ConfigError, match=re.escape(MISMATCH.format("awq", "humming"))):
        plan_model(str(path), "h100", max_model_len=8192, engine_version="0.19.1", quantization="humming")


def test_humming_on_gpt_oss_mxfp4_is_refused_from_0_21_with_vllms_error(tmp_path: Path) -> None:
    path = gpt_oss(tmp_path / "oss")
    with pytest.raises(ConfigError, match=re.escape("use '--moe-backend humming' instead of '--quantization humming'")):
        plan_model(str(path), "h100", max_model_len=8192, engine_version="0.21.0", quantization="humming")


def test_humming_below_its_minimum_capability_is_refused(tmp_path: Path) -> None:
    # HummingConfig.get_min_capability: 75 (0.20.0 - 0.34.0 sdists); a GPTQ checkpoint alone needs 60
    path = llama_layout(tmp_path / "gptq", {**LLAMA, "quantization_config": {"quant_method": "gptq", "bits": 4}})
    with pytest.raises(ConfigError, match=r"Minimum capability: 75\. Current capability: 70"):
        plan_model(str(path), "v100-32gb", max_model_len=4096, engine_version="0.32.0", quantization="humming")


def test_humming_on_an_unquantized_checkpoint_says_what_it_cannot_know(tmp_path: Path) -> None:
    path = llama_layout(tmp_path / "llama", LLAMA)
    with pytest.raises(ConfigError, match=r"VLLM_HUMMING_ONLINE_QUANT_CONFIG"):
        plan_model(str(path), "h100", max_model_len=8192, engine_version="0.32.0", quantization="humming")


@pytest.mark.parametrize("method", ["bitsandbytes", "fbgemm_fp8", "experts_int8"])
def test_humming_on_a_method_its_package_has_no_weight_schema_for_is_refused(tmp_path: Path, method: str) -> None:
    # vLLM claims the checkpoint for humming whatever its method (above), but HummingConfig.get_layer_weight_schema
    # builds each layer's schema with the humming package's BaseWeightSchema.from_config, which raises 'unsupported
    # weight quant_method: <method>' for a method outside its WEIGHT_SCHEMA_MAP (humming/schema/__init__.py and
    # base.py of the humming-kernels 0.1.6 and 0.1.19 wheels, which vLLM 0.24.0 and 0.34.0 pin): the engine stops
    # as it builds the model
    config = {**LLAMA, "quantization_config": {"quant_method": method, "load_in_4bit": True, "bits": 8}}
    path = llama_layout(tmp_path / method, config)
    with pytest.raises(ConfigError, match=re.escape(f"unsupported weight quant_method: {method}")):
        plan_model(str(path), "h100", max_model_len=8192, engine_version="0.34.0", quantization="humming")
