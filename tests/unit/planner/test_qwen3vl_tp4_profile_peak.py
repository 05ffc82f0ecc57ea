"""What vLLM 0.11.0's profile_run holds at its peak on each rank of a TP 4 Qwen3-VL-30B-A3B boot, and what the log
(tests/fixtures/bootlogs/rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110.log, issue 27) leaves for the rest.

Order of allocations (vllm/v1/worker/gpu_model_runner.py profile_run, 0.11.0 sdist): the dummy video batch
(batched_dummy_mm_inputs, a local until profile_run returns), the encoder forward, the outputs copied into zeros of
[encoder budget, width] that encoder_cache['tmp'] keeps (the loop variable `output` still holding the original, until
`output = self._dummy_sampler_run(...)` rebinds it after the warm-up returns), then _dummy_run and
_dummy_sampler_run; encoder_cache.clear() comes last. So the encoder's 2.67 GiB are alive at the sampler's peak.
The sampler warm-up runs on every rank with the whole vocabulary: LogitsProcessor._gather_logits all-gathers under
V1 (vllm/platforms/interface.py use_all_gather: 'envs.VLLM_USE_V1 or ...'), and each worker samples."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from onechip.planner.gpu_memory import (
    cublas_workspace_rule,
    deepstack_buffer_bytes,
    encoder_profile_bytes,
    select_rule,
    tp_rule_for_chips,
)
from onechip.planner.rules import accelerator, engine_rules
from onechip.schemas.common import GIB

ROOT = Path(__file__).resolve().parents[3]
BOOTLOGS = ROOT / "tests" / "fixtures" / "bootlogs"
ROW = "rtx3090x4-qwen3-vl-30b-a3b-tp4-len65536-v0110"
ROWS, VOCAB = 256, 151936  # max_num_seqs on a < 70 GiB card; Qwen3-VL's vocab (config text_config.vocab_size)


def _entry() -> dict[str, Any]:
    corpus = json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))
    entries = corpus if isinstance(corpus, list) else corpus["entries"]
    return next(e for e in entries if e["name"] == ROW)


def _config() -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / "Qwen--Qwen3-VL-30B-A3B-Instruct.json").read_text(encoding="utf-8"))


def sort_warm_up_bytes(dtype_bytes: int) -> int:
    """Bytes per (row x vocab) element at the sort of the 0.11.0 sort-based top-k/top-p warm-up, counted from the
    sources (not fitted): the model-dtype logits _dummy_sampler_run holds; Sampler.forward's fp32 copy
    (vllm/v1/sample/sampler.py 'logits = logits.to(torch.float32)', none for an fp32 model); apply_top_k_top_p's
    'logits.sort(dim=-1)' outputs, fp32 values and int64 indices (vllm/v1/sample/ops/topk_topp_sampler.py); and
    inside the sort (torch aten/src/ATen/native/cuda/SortStable.cu launch_stable_sort_kernel: a vocab above 4,096 and
    128 or more rows take segmented_sort_pairs) the int64 reverse_indices it allocates and the temporary storage of
    CUB DeviceSegmentedRadixSort::SortPairs, which torch calls with separate in and out buffers (aten/src/ATen/cuda/
    cub.cuh segmented_sort_pairs, not the DoubleBuffer form), so CUB adds an alternate key and value buffer (fp32,
    int64)."""
    return dtype_bytes + (0 if dtype_bytes == 4 else 4) + (4 + 8) + 8 + (4 + 8)


def test_the_sort_warm_up_is_the_source_count() -> None:
    # engines.json 0.11.0 - 0.15.x takes the source count (until 2026-12-03 the 37.77 B fitted on the 0.10.1
    # gpt-oss-120b log, 1,024 x 201,088, which the 0.9.1 - 0.10.x rule keeps, within 0.6% of it)
    rule = select_rule(engine_rules("vllm-gpu").memory_rules, "0.11.0")
    assert sort_warm_up_bytes(2) == 38
    assert rule.sampler_bytes_per_seq_vocab == sort_warm_up_bytes(2)
    old = select_rule(engine_rules("vllm-gpu").memory_rules, "0.10.2")
    assert abs(old.sampler_bytes_per_seq_vocab - sort_warm_up_bytes(2)) / sort_warm_up_bytes(2) < 0.01


def test_log_weights_leave_out_the_deepstack_buffers_the_planner_adds_back() -> None:
    # qwen3_vl.py 0.11.0 Qwen3VLForConditionalGeneration.__init__: deepstack_num_level zero tensors of
    # [max_num_batched_tokens, hidden] on the GPU, inside 'Model loading took 14.7708 GiB'; so is the M-RoPE cos/sin
    # cache (engines.json mrope_cache_rules, 0.11.0: 4 x 262,144 positions x 128 rotary dims x 2 B)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    # the log's own figure, not the checkpoint bytes the corpus also gives (the with-the-log's-weights path)
    entry, config = {**_entry(), "weights_total_bytes": None}, _config()
    buffers = deepstack_buffer_bytes(config, dtype_bytes=2, max_num_batched_tokens=2048)
    assert buffers == 3 * 2048 * 2048 * 2
    mrope = 4 * 262_144 * 128 * 2
    weights, how = planner_accuracy.weights_of(entry, 4, config)
    assert how == "logged x TP"
    assert weights == int((14.7708 * GIB - buffers - mrope) * 4)


def test_the_log_leaves_under_a_tenth_of_a_gib_beside_the_source_counted_peak() -> None:
    # requested 0.9 x the RTX 3090's 23.58 GiB, less the logged weights and the logged 2.31 GiB pool (6,297 blocks x
    # 16 x 24,576 B): non-torch + torch peak = 4.14 GiB; the peak the sources count per rank is the encoder's
    # 2.67 GiB, the sort at 38 B x 256 x 151,936 (1.38 GiB) and the dummy forward's held hidden states
    # ([2,048, 2,048], the 256 logit rows and their rand_like): 4.06 GiB, so 0.08 GiB is left for non-torch memory
    # (the planner's 0.11.0 rule: 0.13 GiB at TP 1 + 0.42 GiB at TP >= 2, both measured on H100s, + the base)
    entry, config = _entry(), _config()
    requested = int(accelerator("rtx3090").memory_visible_bytes * 0.9)
    pool = entry["logged"]["num_gpu_blocks"] * 16 * 48 * 128 * 2 * 2
    rest = requested - entry["logged"]["model_weights_gib"] * GIB - pool
    rule = [r for r in engine_rules("vllm-gpu").encoder_profile_rules if r.min_version == "0.11.0"][0]
    kw = {"dtype_bytes": 2, "max_num_batched_tokens": 2048, "max_num_seqs": 256, "max_model_len": 65536}
    encoder = encoder_profile_bytes(config, profile_rule=rule, **kw)
    held = (2048 * 2048 + 2 * ROWS * 2048) * 2
    # torch's cuBLAS workspace on a compute capability 8.6 card (':4096:2:16:8', allocated at the first GEMM)
    workspace = 4096 * 1024 * 2 + 16 * 1024 * 8
    peak = encoder + ROWS * VOCAB * sort_warm_up_bytes(2) + held + workspace
    assert 4.06 < peak / GIB < 4.07
    left = (rest - peak) / GIB
    assert 0.06 < left < 0.10
    memory = select_rule(engine_rules("vllm-gpu").memory_rules, "0.11.0")
    # on the H100 boards its TP >= 2 figure was measured on, the rule would leave 0.55 GiB more than the log does
    planned = (memory.non_torch_bytes + memory.non_torch_tp_extra_bytes + memory.activation_base_bytes) / GIB
    assert planned - left > 0.5
    # on these PCIe RTX 3090s it takes the whole term measured at TP 4 off the H100 boards (tp_rule_for_chips:
    # vllm-project/vllm#29070, 4x A30, 0.11.1.dev12, 'non-torch forward increase memory: 0.09GiB') and the card's
    # cuBLAS workspace (cublas_workspace_rule): 0.09 GiB of non-torch memory against the 0.06 - 0.10 GiB the log
    # leaves, where the TP 1 figure + the no-peer-access footprint planned 0.22 (0.12 - 0.17 over)
    off, _ = tp_rule_for_chips(memory, engine_rules("vllm-gpu").nccl_transports, ("rtx3090", None))
    off = cublas_workspace_rule(off, 80)  # catalog: Ampere as 8.0; 8.6 takes the same default
    assert off.activation_base_bytes == workspace
    planned = (off.non_torch_bytes + off.non_torch_tp_extra_bytes) / GIB
    assert abs(planned - left) < 0.04
    shm = next(t for t in engine_rules("vllm-gpu").nccl_transports if t.transport == "shm").fixed_bytes
    assert 0.12 < (memory.non_torch_bytes + shm) / GIB - left < 0.17


def test_the_row_plans_the_tp4_log_total(tmp_path: Path) -> None:
    # the whole plan of the row (benchmarks/planner_accuracy.py, the log's weights): non-torch 0.09 GiB, the TP 4
    # total of vllm-project/vllm#29070 (engines.json tp_non_torch_off_boards_bytes), not 0.13 GiB at TP 1 + the H100
    # figure's 0.42 or the no-peer-access footprint's 0.09
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    plan = planner_accuracy.predict(_entry(), tmp_path)["plan"]
    memory = select_rule(engine_rules("vllm-gpu").memory_rules, "0.11.0")
    assert plan.memory_budget.non_torch_bytes == memory.tp_non_torch_off_boards_bytes
    (line,) = [w for w in plan.warnings if w.code == "nccl-transport"]
    assert "-0.04 GiB per GPU" in line.message
