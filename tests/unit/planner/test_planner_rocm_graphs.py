"""HIP graphs and non-torch memory on AMD cards (engines.json vllm-gpu rocm_rules).

Mechanism (sources): every graph vLLM captures on ROCm is a hipGraphExec with device memory of its own (ROCm/pytorch
#2286, AMD: 'hipGraph requires memory each time one is captured'; ROCm clr hip_graph_internal.cpp
GraphExec::CaptureAQLPackets allocates a kernel-argument pool per instantiated graph), and the piecewise capture
makes one graph per piece per size (vllm/compilation/backends.py split_graph and its CUDAGraphWrapper per piece;
vllm#19579: 'specific to piecewise capture; when doing a fullgraph capture on rocm, the graph size is fine'). The size
per graph and the non-torch range are MEASURED on two MI300X VF logs, scored apart in benchmarks/planner_accuracy.py;
the other MI300X logs of tests/fixtures/bootlogs hold them out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from factories import BOOTLOGS, corpus_entry, smollm2_checkpoint
from onechip import catalog
from onechip.planner import plan_model
from onechip.planner.gpu_memory import cuda_graph_sizes, hip_graph_count, v2_penalty_state_bytes
from onechip.planner.rules import accelerator

GIB = 2**30
MIB = 2**20
FITTED = ("mi300x-gemma4-12b-fp8-aiter-len32768-v0311", "mi300x-gemma4-26b-a4b-fp8-len32768-v0311")
# the logs holding the rule out: 'CUDA graph pool memory: X GiB (actual), Y GiB (estimated)' (Y is subtracted) and
# 'Actual usage is Z GiB for consumed memory (weights + non-torch)' less 'Model loading took W GiB'
HELD_OUT = (
    "mi300x-gemma4-e4b-len32768-v0311",
    "mi300x-gemma4-e4b-w4a16-ple4-len32768-v0311",
    "mi300x-gemma4-e2b-fp8fnuz-len32768-v0311",
    "mi300x-gemma4-26b-a4b-w4a16-len32768-v0311",
)


def _rocm_rule():  # type: ignore[no-untyped-def]
    (rule,) = catalog.engines().engines["vllm-gpu"].rocm_rules
    return rule


def _layers(name: str) -> int:
    config = json.loads((BOOTLOGS / corpus_entry(name)["config_file"]).read_text(encoding="utf-8"))
    return int((config.get("text_config") or config)["num_hidden_layers"])


def _hip_graphs(name: str) -> int:
    # 16,384 batched tokens as logged ('Chunked prefill is enabled with max_num_batched_tokens=16384'), 1,024
    # sequences (the >= 160 GiB defaults), the 512-token capture ceiling: 51 PIECEWISE and 51 FULL sizes
    return hip_graph_count(max_num_seqs=1024, max_num_batched_tokens=16384, max_capture_size=512, layers=_layers(name))


def test_the_capture_sizes_split_into_piecewise_and_full() -> None:
    # the 0.19.0 H100 sweep logs 'Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=51'
    assert cuda_graph_sizes(max_num_seqs=1024, max_num_batched_tokens=8192, max_capture_size=512) == (51, 51)
    assert sum(cuda_graph_sizes(max_num_seqs=1024, max_num_batched_tokens=8192, max_capture_size=512)) == 102
    # the vLLM 0.30.0 L4 log: 7 PIECEWISE + 5 FULL at 16 sequences / 2,048 tokens
    assert cuda_graph_sizes(max_num_seqs=16, max_num_batched_tokens=2048, max_capture_size=512) == (7, 5)


def test_one_hip_graph_per_piece_per_size() -> None:
    # Gemma 4 12B: 48 decoder layers, so 49 pieces between the attention ops; 51 x 49 + 51 FULL graphs
    assert _layers(FITTED[0]) == 48
    assert _hip_graphs(FITTED[0]) == 51 * 49 + 51 == 2550
    assert _hip_graphs(FITTED[1]) == 51 * 31 + 51  # 26B-A4B: 30 layers


def test_the_rule_is_the_two_logs_it_was_measured_on() -> None:
    rule = _rocm_rule()
    per_graph = [corpus_entry(n)["logged"]["cuda_graph_pool_estimated_gib"] * GIB / _hip_graphs(n) for n in FITTED]
    assert [round(b) for b in per_graph] == [2_210_645, 2_243_541]
    assert all(abs(a - b) <= 1 for a, b in zip(sorted(per_graph), rule.hip_graph_bytes, strict=True))
    non_torch = [
        (corpus_entry(n)["logged"]["weights_plus_non_torch_gib"] - corpus_entry(n)["logged"]["model_weights_gib"]) * GIB
        for n in FITTED
    ]
    assert all(abs(a - b) < MIB for a, b in zip(sorted(non_torch), rule.non_torch_bytes, strict=True))
    assert rule.measured_architectures == ["CDNA 3.0"]
    # both are scored apart in the accuracy benchmark
    sys.path.insert(0, str(BOOTLOGS.parents[2] / "benchmarks"))
    try:
        import planner_accuracy
    finally:
        sys.path.pop(0)
    assert all(name in planner_accuracy.FITTED_ON for name in FITTED)
    assert not any(name in planner_accuracy.FITTED_ON for name in HELD_OUT)


@pytest.mark.parametrize("name", HELD_OUT)
def test_held_out_logs_fall_in_the_measured_ranges(name: str) -> None:
    rule = _rocm_rule()
    logged = corpus_entry(name)["logged"]
    low, high = rule.hip_graph_bytes
    graphs = logged["cuda_graph_pool_estimated_gib"] * GIB
    # the graph term within 2% of the range's ends (leave-one-out over all eight MI300X logs: within 1.7%)
    assert _hip_graphs(name) * low * 0.98 <= graphs <= _hip_graphs(name) * high * 1.02
    least, most = rule.non_torch_bytes
    assert least - 0.01 * GIB <= (logged["weights_plus_non_torch_gib"] - logged["model_weights_gib"]) * GIB <= most


def test_a_plan_on_the_mi300x_carries_the_hip_terms_and_their_range() -> None:
    # mi300x-gemma4-e4b-len32768-v0311 (held out): 'CUDA graph pool memory: 4.59 GiB (actual), 4.61 GiB
    # (estimated)', non-torch 16.88 - 14.79 = 2.09 GiB; 'GPU KV cache size: 2,794,448 tokens'
    plan = plan_model(
        "google/gemma-4-E4B-it", "mi300x-vf", "vllm-gpu", max_model_len=32768, utilization=0.9,
        engine_version="0.31.1", multimodal=True, max_num_batched_tokens=16384,
    )  # fmt: skip
    budget = plan.memory_budget
    assert budget is not None
    assert abs(budget.cuda_graph_bytes / GIB - 4.61) < 0.05  # 2,244 HIP graphs x 2.11 - 2.14 MiB
    assert budget.non_torch_bytes == sum(_rocm_rule().non_torch_bytes) // 2  # 2.40 GiB, 1.64 - 3.15
    assert budget.dominant_uncertainty == "non-torch memory"
    assert budget.kv_cache_low_bytes < 149.34 * GIB < budget.kv_cache_high_bytes  # the logged pool in the range
    assert abs(plan.kv_tokens_logged - 2_794_448) / 2_794_448 < 0.01
    (warning,) = [w for w in plan.warnings if w.code == "rocm-terms"]
    assert "1.64 - 3.15 GiB" in warning.message and "measured on CDNA 3.0 cards;" in warning.message


def test_no_hip_terms_on_nvidia_on_v0_or_before_the_ruled_releases(tmp_path: Path) -> None:
    h100 = plan_model("google/gemma-4-E4B-it", "h100", "vllm-gpu", max_model_len=8192, engine_version="0.31.1")
    assert not [w for w in h100.warnings if w.code == "rocm-terms"]
    # the CUDA rule's, and the V2 runner's PenaltiesState at 1,024 sequences (engines.json v2_runner_rules)
    held = v2_penalty_state_bytes({"vocab_size": 262_144}, max_num_seqs=1024)
    assert h100.memory_budget is not None and h100.memory_budget.non_torch_bytes == 268_435_456 + held
    # an RDNA 3 card on a ruled release: the MI300X figures, said not measured there
    xtx = plan_model("google/gemma-4-E4B-it", "RX 7900 XTX", "vllm-gpu", max_model_len=8192, engine_version="0.31.1")
    (warning,) = [w for w in xtx.warnings if w.code == "rocm-terms"]
    assert "not on this RDNA 3.0 card" in warning.message
    # releases before the rule (0.28.0) and the V0 engine (0.4.1) keep the memory rule's own terms
    model = str(smollm2_checkpoint(tmp_path / "smollm2"))
    for version in ("0.28.0", "0.4.1"):
        old = plan_model(model, "radeon-pro-w7900", "vllm-gpu", max_model_len=2048, engine_version=version)
        assert not [w for w in old.warnings if w.code == "rocm-terms"]


# More held-out logs (issue 27): the unquantized and W8A8-INT8 / W4A16 / FP8 arms of the same MI300X dtype sweep
# (xbill9/gemma4-dev gpu-vllm-mi300x-{2b,12b,12b-w8a8,12b-q4w4a16,26b,31b,31b-fp8,31b-q4w4a16} boot.log, vLLM
# 0.31.1rc1); none of them is in FITTED_ON
HELD_OUT_SWEEP = (
    "mi300x-gemma4-e2b-len32768-v0311",
    "mi300x-gemma4-12b-len32768-v0311",
    "mi300x-gemma4-12b-w8a8-int8-len32768-v0311",
    "mi300x-gemma4-12b-w4a16-len32768-v0311",
    "mi300x-gemma4-26b-a4b-len32768-v0311",
    "mi300x-gemma4-31b-len32768-v0311",
    "mi300x-gemma4-31b-fp8-len32768-v0311",
    "mi300x-gemma4-31b-w4a16-len32768-v0311",
)


@pytest.mark.parametrize("name", HELD_OUT_SWEEP)
def test_the_sweep_logs_hold_the_graph_term_out(name: str) -> None:
    rule = _rocm_rule()
    low, high = rule.hip_graph_bytes
    graphs = corpus_entry(name)["logged"]["cuda_graph_pool_estimated_gib"] * GIB
    # the same 2% criterion as the held-out logs above: 35 (E2B), 48 (12B), 30 (26B-A4B) and 60 (31B) layers
    assert _hip_graphs(name) * low * 0.98 <= graphs <= _hip_graphs(name) * high * 1.02


def test_the_sweep_logs_non_torch_spread_past_the_measured_range() -> None:
    # 'Actual usage is Z GiB for consumed memory (weights + non-torch)' less 'Model loading took W GiB': five of the
    # eight fall inside the rule's 1.64 - 3.15 GiB, three do not (the range is left as measured; no source term read)
    least, most = (b / GIB for b in _rocm_rule().non_torch_bytes)
    spread = {
        n: round(
            corpus_entry(n)["logged"]["weights_plus_non_torch_gib"] - corpus_entry(n)["logged"]["model_weights_gib"], 2
        )
        for n in HELD_OUT_SWEEP
    }
    outside = {n: v for n, v in spread.items() if not least - 0.01 <= v <= most}
    assert outside == {
        "mi300x-gemma4-12b-w8a8-int8-len32768-v0311": 1.54,  # 14.19 - 12.65
        "mi300x-gemma4-12b-w4a16-len32768-v0311": 1.6,  # 9.78 - 8.18
        "mi300x-gemma4-26b-a4b-len32768-v0311": 3.58,  # 52.12 - 48.54 (bf16 MoE, TritonExperts)
    }


def test_an_amd_card_before_the_ruled_releases_says_it_is_planned_on_cuda_figures(tmp_path: Path) -> None:
    # The terms stay the memory rule's (test above), but a user planning an MI300X or a W7900 for vLLM 0.28 or
    # the V0 engine must not read the plan as ruled for ROCm: the warning names the releases rocm_rules cover and
    # what ROCm took there (engines.json rocm_rules: 2,210,644 - 2,243,541 B a HIP graph, 1.64 - 3.15 GiB).
    model = str(smollm2_checkpoint(tmp_path / "smollm2"))
    for version, graphs in (("0.28.0", True), ("0.4.1", False)):  # V0 captures its graphs after sizing the pool
        old = plan_model(model, "radeon-pro-w7900", "vllm-gpu", max_model_len=2048, engine_version=version)
        (warning,) = [w for w in old.warnings if w.code == "rocm-not-ruled"]
        assert f"on vLLM {version}: no engines.json rocm_rules cover it (they cover 0.29.0 and later" in warning.message
        assert "1.64 - 3.15 GiB of non-torch memory at TP 1" in warning.message
        assert ("2.11 - 2.14 MiB per captured HIP graph" in warning.message) is graphs
    eager = plan_model(model, "mi300x", "vllm-gpu", max_model_len=2048, engine_version="0.28.0", enforce_eager=True)
    (warning,) = [w for w in eager.warnings if w.code == "rocm-not-ruled"]
    assert "HIP graph" not in warning.message
    # a ruled release, and an NVIDIA card, say nothing of the kind
    for chip, version in (("mi300x", "0.29.0"), ("h100", "0.28.0")):
        plan = plan_model(model, chip, "vllm-gpu", max_model_len=2048, engine_version=version)
        assert not [w for w in plan.warnings if w.code == "rocm-not-ruled"]


def test_an_unruled_amd_release_widens_the_kv_range_by_what_ruled_rocm_took(tmp_path: Path) -> None:
    # The estimate stays on the CUDA figures, but the stated KV range must not be narrower than the warning: its low
    # end is lower by the most non-torch memory a ruled ROCm release measured (engines.json rocm_rules, 3.15 GiB at
    # TP 1) less the memory rule's own figure. An NVIDIA card on the same release keeps its range.
    model = str(smollm2_checkpoint(tmp_path / "smollm2"))
    most = max(_rocm_rule().non_torch_bytes)
    for version in ("0.28.0", "0.4.1"):
        amd = plan_model(model, "radeon-pro-w7900", "vllm-gpu", max_model_len=2048, engine_version=version)
        # the same memory and every other input on a card of no maker: the plan at --chip gpu:<its size>
        size = accelerator("radeon-pro-w7900").memory_bytes / GIB
        # the memory rule's figure: the plan's non-torch less the V2 runner's PenaltiesState where 0.28.0 holds it
        # (SmolLM2: vocab 49,152 at the small-card 256 sequences; the V0 engine has none)
        held = v2_penalty_state_bytes({"vocab_size": 49_152}, max_num_seqs=256) if version == "0.28.0" else 0
        rule_non_torch = amd.memory_budget.non_torch_bytes - held
        nvidia = plan_model(model, f"gpu:{size:.6f}GiB", "vllm-gpu", max_model_len=2048, engine_version=version)
        assert amd.memory_budget.kv_cache_bytes == pytest.approx(nvidia.memory_budget.kv_cache_bytes, abs=2 * MIB)
        widened = nvidia.memory_budget.kv_cache_low_bytes - amd.memory_budget.kv_cache_low_bytes
        assert widened == pytest.approx(most - rule_non_torch, abs=2 * MIB)
        assert amd.memory_budget.dominant_uncertainty.startswith("non-torch memory (no rule measured")
        (warning,) = [w for w in amd.warnings if w.code == "rocm-not-ruled"]
        assert f"the KV range's low end carries up to {(most - rule_non_torch) / GIB:.2f} GiB of it" in warning.message
    # a ruled release takes the ROCm range itself, so nothing is added to its low end
    ruled = plan_model(model, "mi300x", "vllm-gpu", max_model_len=2048, engine_version="0.29.0")
    assert not ruled.memory_budget.dominant_uncertainty.startswith("non-torch memory (no rule measured")
