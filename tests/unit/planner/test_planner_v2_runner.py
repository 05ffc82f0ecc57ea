"""Which models vLLM serves on its V2 model runner by default, release by release (engines.json `v2_runner_rules`,
planner.core._memory_rule), and what that runner's profiling takes differently: no CUDA-graph estimate before
0.29.0 (vllm/v1/worker/gpu/model_runner.py profile_cudagraph_memory returns 0 in the 0.22.0 - 0.28.0 sdists), a
logits-only sampler warm-up before 0.33.0. Each expectation is vllm/config/vllm.py use_v2_model_runner /
_is_default_v2_model_runner_model of the sdist named beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model
from onechip.schemas.common import GIB

GB10 = "gb10-qwen3-0.6b-util060-v0271"
MOE = "h100-qwen3-30b-a3b-moe-v0190"
V2 = "on the V2 model runner"


def _config(name: str) -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _checkpoint(tmp_path: Path, name: str) -> Path:
    entry = corpus_entry(name)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / name, config, entry["weights_total_bytes"])


def _model(tmp_path: Path, config_file: str, **changes: Any) -> Path:
    config = {**_config(config_file), **changes}
    return sized_checkpoint(tmp_path / f"{config_file}-{sorted(changes)}", config, 2 * GIB)


def _budget(model: Path, version: str, chip: str = "gb10", **fields: Any) -> Any:
    fields.setdefault("max_model_len", 4096)
    plan = plan_model(str(model), chip, "vllm-gpu", utilization=0.6, engine_version=version, **fields)
    return plan.memory_budget


def _on_v2(model: Path, version: str, chip: str = "h100", **fields: Any) -> bool:
    budget = _budget(model, version, chip, **fields)
    return V2 in budget.rule_versions


def test_a_dense_model_on_0_25_to_0_28_subtracts_no_cuda_graph_estimate(tmp_path: Path) -> None:
    model = _checkpoint(tmp_path, GB10)
    for version in ("0.25.0", "0.26.0", "0.27.1", "0.28.0"):
        assert _budget(model, version).cuda_graph_bytes == 0, version
    # 0.29.0's V2 runner estimates its graphs (model_runner.py profile_cudagraph_memory: _profile_cudagraph_memory)
    assert _budget(model, "0.29.0").cuda_graph_bytes > 0
    assert _budget(model, "0.30.0").cuda_graph_bytes > 0


def test_the_gb10_boot_leaves_what_the_v2_runner_plans_for_activation_and_graphs(tmp_path: Path) -> None:
    # the 0.27.1 GB10 note: requested 73.01 GiB, 'Actual usage is 3.35 GiB for consumed memory', 69.4 GiB of KV:
    # 0.26 GiB for the transient peak and the graph estimate together (0.01 GiB figures)
    budget = _budget(_checkpoint(tmp_path, GB10), "0.27.1", max_model_len=40960)
    left_gib = 73.01 - 3.35 - 69.4
    planned_gib = (budget.activation_peak_bytes + budget.cuda_graph_bytes) / GIB
    assert abs(planned_gib - left_gib) < 0.05


def test_a_moe_model_on_0_27_keeps_the_v1_runner_and_its_estimate(tmp_path: Path) -> None:
    # Qwen3MoeForCausalLM is MoE and not in 0.27.x's DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES
    budget = _budget(_checkpoint(tmp_path, MOE), "0.27.1", chip="h100")
    assert budget.cuda_graph_bytes > 0 and V2 not in budget.rule_versions


def test_prompt_embeds_keep_the_v1_runner_until_0_29(tmp_path: Path) -> None:
    # 'prompt embeds' is in _get_v2_model_runner_unsupported_features in the 0.22.0 - 0.28.0 sdists, not in 0.29.0's
    model = _checkpoint(tmp_path, GB10)
    assert _budget(model, "0.27.1", enable_prompt_embeds=True).cuda_graph_bytes > 0
    assert _on_v2(model, "0.29.0", enable_prompt_embeds=True)


def test_0_22_runs_only_an_unquantized_dense_qwen3_on_v2(tmp_path: Path) -> None:
    # 0.22.0 / 0.22.1: DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES = {'Qwen3ForCausalLM'}, not is_moe, not is_quantized
    qwen3 = _model(tmp_path, "Qwen--Qwen3-0.6B.json")
    llama = _model(tmp_path, "meta-llama--Llama-3.1-8B-Instruct.json")
    assert _on_v2(qwen3, "0.22.1") and _budget(qwen3, "0.22.1", "h100").cuda_graph_bytes == 0
    assert not _on_v2(llama, "0.22.1") and _budget(llama, "0.22.1", "h100").cuda_graph_bytes > 0
    # 0.21.0: VLLM_USE_V2_MODEL_RUNNER defaults to '0' (vllm/envs.py)
    assert not _on_v2(qwen3, "0.21.0")


def test_0_23_adds_llama_and_mistral_but_not_a_quantized_checkpoint(tmp_path: Path) -> None:
    llama = _model(tmp_path, "meta-llama--Llama-3.1-8B-Instruct.json")
    quantized = _model(tmp_path, "meta-llama--Llama-3.1-8B-Instruct.json", quantization_config={"quant_method": "fp8"})
    assert _on_v2(llama, "0.23.0")
    assert not _on_v2(quantized, "0.23.0")
    # 0.24.0: 'return any(arch in DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES ...)' alone, quantized checkpoints too
    assert _on_v2(quantized, "0.24.0")


def test_0_24_runs_listed_moe_architectures_and_nothing_unlisted(tmp_path: Path) -> None:
    deepseek_v2 = _model(tmp_path, "deepseek-ai--DeepSeek-V2-Lite-Chat.json")
    gemma = _model(tmp_path, "google--gemma-2-9b-it.json")
    assert _on_v2(deepseek_v2, "0.24.0")
    assert not _on_v2(deepseek_v2, "0.23.0")  # MoE: 'not model_config.is_moe'
    assert not _on_v2(gemma, "0.24.0")  # dense but not listed
    assert _on_v2(gemma, "0.25.0")  # 0.25.0: 'or not model_config.is_moe'


def test_a_listed_hybrid_runs_v2_from_0_27(tmp_path: Path) -> None:
    # 0.25.0 / 0.26.0: 'if getattr(model_config, "is_hybrid", False): return False'; 0.27.0: only when not listed
    listed = _model(tmp_path, "Qwen--Qwen3-Next-80B-A3B-Instruct.json", architectures=["Qwen2MoeForCausalLM"])
    assert not _on_v2(listed, "0.26.0", enable_prefix_caching=False)
    assert _on_v2(listed, "0.27.0", enable_prefix_caching=False)
    unlisted = _model(tmp_path, "Qwen--Qwen3-Next-80B-A3B-Instruct.json")
    assert not _on_v2(unlisted, "0.27.0", enable_prefix_caching=False)
    assert _on_v2(unlisted, "0.29.0", enable_prefix_caching=False)


def test_rocm_keeps_its_v1_architectures_on_v1(tmp_path: Path) -> None:
    # 0.29.0: ROCM_DEFAULT_MRV1_ARCHITECTURES = {DeepseekV32ForCausalLM, DeepseekV4ForCausalLM}; 0.32.0 has none
    model = _model(tmp_path, "deepseek-ai--DeepSeek-V2-Lite-Chat.json", architectures=["DeepseekV4ForCausalLM"])
    assert not _on_v2(model, "0.29.0", chip="mi300x")
    assert _on_v2(model, "0.29.0", chip="h100")
    assert _on_v2(model, "0.32.0", chip="mi300x")


def test_mamba_cache_mode_all_keeps_the_v1_runner_in_0_30_and_0_31(tmp_path: Path) -> None:
    # _get_v2_model_runner_unsupported_features: "mamba cache mode 'all'" in the 0.30.0 and 0.31.0 sdists only;
    # granitemoehybrid supports Mamba prefix caching, so prefix caching gives it mode 'all'
    model = _model(tmp_path, "ibm-granite--granite-4.0-h-1b.json")
    assert not _on_v2(model, "0.30.0", enable_prefix_caching=True)
    assert _on_v2(model, "0.30.0", enable_prefix_caching=False)
    assert _on_v2(model, "0.32.0", enable_prefix_caching=True)


def test_from_0_33_the_sampler_warm_up_is_not_logits_only(tmp_path: Path) -> None:
    # 0.33.0 _dummy_sampler_run adds the 'Warmup-param pass' (SamplingParams.for_sampler_warmup: the fp32 pipeline)
    model = _model(tmp_path, "google--gemma-2-9b-it.json")
    assert _on_v2(model, "0.33.0")
    assert (
        _budget(model, "0.33.0", "h100").activation_peak_bytes > _budget(model, "0.32.0", "h100").activation_peak_bytes
    )


@pytest.mark.parametrize("version", ["0.29.0", "0.32.0", "0.34.0"])
def test_every_model_runs_v2_from_0_29(tmp_path: Path, version: str) -> None:
    assert _on_v2(_checkpoint(tmp_path, MOE), version)


def _encoder_delta(model: Path, version: str) -> int:
    kw: dict[str, Any] = dict(engine_version=version, max_model_len=8192, max_num_batched_tokens=8192)
    towers = plan_model(str(model), "h200", "vllm-gpu", **kw).memory_budget
    text = plan_model(str(model), "h200", "vllm-gpu", multimodal=False, **kw).memory_budget
    return towers.activation_peak_bytes - text.activation_peak_bytes


def test_a_v1_vision_model_keeps_the_v1_encoder_profile_after_0_26(tmp_path: Path) -> None:
    # Qwen3VLMoeForConditionalGeneration: MoE, not listed, so V1 in 0.26 - 0.28, whose profile_run keeps the dummy
    # image batch and the outputs (vllm/v1/worker/gpu_model_runner.py); the V2 runner's profile_encoder_cache keeps
    # the outputs only (gpu/mm/encoder_runner.py, from 0.27.0): the towers add as much at 0.28.0 as at 0.21.0
    model = _model(tmp_path, "Qwen--Qwen3-VL-30B-A3B-Instruct.json")
    assert not _on_v2(model, "0.28.0", chip="h200")
    assert _encoder_delta(model, "0.28.0") == _encoder_delta(model, "0.21.0") > 0


def test_an_integrated_gpu_counts_the_runners_host_token_buffers(tmp_path: Path) -> None:
    # vLLM reads free memory on an integrated GPU as psutil's available host memory (vllm/utils/mem_utils.py
    # MemorySnapshot.measure), and gpu_worker.init_device builds the model runner after its init snapshot (0.27.0
    # sdist): the V2 runner's pinned all_token_ids, 256 slots x 40,960 x int32 (vllm/v1/worker/gpu/states.py),
    # joins the consumed memory on the GB10; the same model on a discrete card of the same size does not take it.
    # It is torch.zeros(..., pin_memory=True) (gpu/buffer_utils.py UvaBuffer, 0.27.1), and torch's pinned-host
    # caching allocator pins PowerOf2Ceil(size) (ATen/core/CachingHostAllocator.h): 40 MiB asked, 64 MiB pinned
    model = _checkpoint(tmp_path, GB10)
    unified = _budget(model, "0.27.1", max_model_len=40960)
    discrete = _budget(model, "0.27.1", chip="gpu:121.69GiB", max_model_len=40960, max_num_seqs=256)
    assert 256 * 40960 * 4 == 40 * 2**20
    assert unified.non_torch_bytes - discrete.non_torch_bytes == 64 * 2**20
    # the V1 runner's InputBatch holds int32 token ids and bool flags (vllm/v1/worker/gpu_input_batch.py): 5 B
    v1 = _budget(model, "0.20.0", max_model_len=40960)
    v1_discrete = _budget(model, "0.20.0", chip="gpu:121.69GiB", max_model_len=40960, max_num_seqs=256)
    assert v1.non_torch_bytes - v1_discrete.non_torch_bytes == 256 * 40960 * 5
