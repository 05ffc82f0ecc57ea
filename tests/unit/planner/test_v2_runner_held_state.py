"""What the V2 model runner keeps on the GPU beside the weights after vLLM's init snapshot, and the TP >= 2 term of
0.26.0 and later off the cards whose profiling window opens all-reduce workspaces (issue 27, the RTX PRO 6000
Qwen3-32B rows).

- PenaltiesState (vllm/v1/worker/gpu/sample/penalties.py of the 0.22.0 - 0.34.0 sdists) allocates
  `output_bin_counts` torch.zeros(max_num_reqs, vocab_size, int32) and `prompt_bin_mask` torch.zeros(max_num_reqs,
  cdiv(vocab_size, 32), int32) when the Sampler is built: in GPUModelRunner.__init__ (0.22.x - 0.23.x) or in
  load_model after its DeviceMemoryProfiler block (0.24.0 - 0.34.0), only on the last PP rank of a generate model
  (vllm/v1/worker/gpu/model_runner.py). Both come after the worker's init MemorySnapshot (gpu_worker.py init_device
  builds the runner after taking it) and outside 'Model loading took'. From 0.27.0 memory_profiling counts them in
  total_consumed (vllm/utils/mem_utils.py: non_kv_cache_memory = total_consumed + transient_peak_headroom), so the
  KV pool loses them; before, it summed the non-torch increase, the torch peak over the profile's start and the load
  delta, which hold none of them.
- From 0.26.0, on CUDA, the NCCL communicators exist before the init snapshot and CudaCommunicator.all_gather runs on
  pynccl; what the profiling window still opens at TP >= 2 is the FlashInfer all-reduce + RMSNorm fusion workspace
  (vllm/config/vllm.py enable_allreduce_rms_fusion: capability 9.0 or family 10.x, 0.27.1 sdist) and torch symmetric
  memory (all_reduce_utils.py SYMM_MEM_ALL_REDUCE_MAX_SIZES: 9.0 and 10.x). Off those capabilities the 0.19.0 H100
  TP >= 2 figure holds nothing of this window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from factories import BOOTLOGS, corpus_entry, sized_checkpoint
from onechip.planner import plan_model

ROW = "rtxpro6000x2-qwen3-32b-tp2-util0426-len32768-v0271"
RULE_NON_TORCH = 268_435_456  # engines.json memory_rules 0.26.0 - 0.27.x non_torch_bytes (0.25 GiB)
TP_EXTRA_0_19_H100 = 1_954_210_120  # the same rules' non_torch_tp_extra_bytes (1.82 GiB)
VOCAB = 151_936  # configs/Qwen--Qwen3-32B.json vocab_size
# 1,024 sequences: get_batch_defaults of the 0.27.1 sdist for a card of 70 GiB or more (the RTX PRO 6000: 94.97 GiB)
PENALTY_STATE = 1024 * VOCAB * 4 + 1024 * -(-VOCAB // 32) * 4  # output_bin_counts + prompt_bin_mask


def _qwen3_32b(tmp_path: Path) -> Path:
    entry = corpus_entry(ROW)
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    return sized_checkpoint(tmp_path / "qwen3-32b", config, entry["weights_total_bytes"])


def _budget(model: Path, version: str, chip: str = "rtx-pro-6000", **fields: Any) -> Any:
    fields.setdefault("max_model_len", 32768)
    plan = plan_model(str(model), chip, "vllm-gpu", utilization=0.9, engine_version=version, **fields)
    assert plan.memory_budget is not None
    return plan.memory_budget


def test_the_v2_runner_holds_the_penalty_state_beside_the_weights(tmp_path: Path) -> None:
    model = _qwen3_32b(tmp_path)
    for version in ("0.27.0", "0.27.1", "0.28.0"):  # total_consumed counts them from 0.27.0
        budget = _budget(model, version)
        assert "on the V2 model runner" in budget.rule_versions
        assert budget.non_torch_bytes == RULE_NON_TORCH + PENALTY_STATE, version
    # 0.22.0 - 0.26.x run it on the V2 runner too (Qwen3ForCausalLM, dense), but their memory_profiling sums the
    # non-torch increase, the torch peak over the profile's start and the load delta: the state is counted nowhere
    for version in ("0.22.1", "0.26.0"):
        budget = _budget(model, version)
        assert "on the V2 model runner" in budget.rule_versions and budget.non_torch_bytes == RULE_NON_TORCH, version
    # 0.21.0 serves it on the V1 runner, whose sampler keeps no per-slot vocabulary state
    v1 = _budget(model, "0.21.0")
    assert "on the V2 model runner" not in v1.rule_versions and v1.non_torch_bytes == RULE_NON_TORCH


def test_the_penalty_state_scales_with_max_num_seqs(tmp_path: Path) -> None:
    budget = _budget(_qwen3_32b(tmp_path), "0.27.1", max_num_seqs=256)
    assert budget.non_torch_bytes == RULE_NON_TORCH + PENALTY_STATE // 4


def test_only_the_last_pipeline_stage_holds_it(tmp_path: Path) -> None:
    # PP 2 with --enforce-eager (no cold compile on the first stage) binds on the last stage, which holds the state
    # and the sampler warm-up; the first stage's pool is larger by what the last holds apart
    budget = _budget(_qwen3_32b(tmp_path), "0.27.1", pipeline_parallel_size=2, enforce_eager=True)
    assert budget.non_torch_bytes == RULE_NON_TORCH + PENALTY_STATE


def test_tp2_off_hopper_and_blackwell_datacenter_takes_no_window_term_from_0_26(tmp_path: Path) -> None:
    model = _qwen3_32b(tmp_path)
    tp1 = _budget(model, "0.27.1").non_torch_bytes
    # the RTX PRO 6000 is compute capability 12.0: neither the FlashInfer fusion workspace nor symmetric memory
    assert _budget(model, "0.27.1", tensor_parallel_size=2).non_torch_bytes == tp1
    # an H100 (9.0) keeps the 0.19.0 figure, measured there
    h100_tp1 = _budget(model, "0.27.1", chip="h100").non_torch_bytes
    assert (
        _budget(model, "0.27.1", chip="h100", tensor_parallel_size=2).non_torch_bytes == h100_tp1 + TP_EXTRA_0_19_H100
    )
    # before 0.26.0 torch.distributed's communicator opens inside the window (the logits all_gather): the figure holds
    assert _budget(model, "0.25.0", tensor_parallel_size=2).non_torch_bytes == RULE_NON_TORCH + TP_EXTRA_0_19_H100


def test_an_amd_card_takes_its_measured_non_torch_range_alone(tmp_path: Path) -> None:
    # engines.json rocm_rules measured consumed memory less the weights on MI300X V2 boots (0.31.1): the state is in it
    model = _qwen3_32b(tmp_path)
    assert (
        _budget(model, "0.31.1", chip="mi300x").non_torch_bytes
        == _budget(model, "0.31.1", chip="mi300x", max_num_seqs=256).non_torch_bytes
    )


def test_the_unsized_nccl_buffers_stay_in_the_range(tmp_path: Path) -> None:
    # off 9.0 / 10.x the estimate drops the 0.19.0 figure, but what NCCL connects at first use inside the window is
    # not sized from sources: the KV range's low end still takes the whole figure
    model = _qwen3_32b(tmp_path)
    tp1, tp2 = _budget(model, "0.27.1"), _budget(model, "0.27.1", tensor_parallel_size=2)
    assert (tp2.kv_cache_bytes - tp2.kv_cache_low_bytes) - (tp1.kv_cache_bytes - tp1.kv_cache_low_bytes) == (
        TP_EXTRA_0_19_H100
    )
