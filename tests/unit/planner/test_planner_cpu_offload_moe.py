"""--cpu-offload-gb as a plan input, and the fused-MoE buffers vLLM allocates per call before 0.14.0 (issue 27).
Expected values come from the vLLM sources engines.json `cpu_offload_rules` and `fused_moe_buffers` cite
(vllm/model_executor/models/utils.py maybe_offload_to_cpu, vllm/model_executor/layers/fused_moe/fused_moe.py
fused_experts_impl, read in the 0.7.2 - 0.16.0 sdists) and from the DeepSeek-V2-Lite config's shapes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from onechip.errors import ConfigError
from onechip.planner import calibration, plan_model
from onechip.planner.gpu_memory import moe_call_bytes, select_rule
from onechip.planner.rules import engine_rules
from onechip.planner.weights import offloaded_layers, read_checkpoint_dir
from onechip.schemas.common import GIB
from onechip.schemas.requests import PlanRequest
from onechip.vllm import flags

ROOT = Path(__file__).resolve().parents[3]
BOOTLOGS = ROOT / "tests" / "fixtures" / "bootlogs"
CONFIGS = BOOTLOGS / "configs"
RULES = engine_rules("vllm-gpu")
L40S_ROW = "l40s-deepseek-coder-v2-lite-cpuoffload30-len100000-v0"
R1_ROW = "h200x8-deepseek-r1-tp8-len128000-v073"


def _config(name: str) -> dict[str, Any]:
    data = json.loads((CONFIGS / name).read_text(encoding="utf-8"))
    return {k: v for k, v in data.items() if not k.startswith("_")}


V2_LITE = _config("deepseek-ai--DeepSeek-V2-Lite-Chat.json")
R1 = _config("deepseek-ai--DeepSeek-R1.json")


def _accuracy() -> tuple[Any, list[dict[str, Any]]]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    return planner_accuracy, json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def v2_lite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A header-only DeepSeek-V2-Lite checkpoint laid out from its config (benchmarks/planner_accuracy.py)."""
    planner_accuracy, _ = _accuracy()
    path = tmp_path_factory.mktemp("v2lite")
    # 15,706,484,224 bf16 parameters: 27 MLA layers, layer 0 dense (10,944), 26 of 64 routed + 2 shared experts
    assert planner_accuracy.write_layout(path, V2_LITE, planner_accuracy.deepseek_v2_layout(V2_LITE)) == 31_412_968_448
    return path


def test_fused_moe_buffer_rule_by_release() -> None:
    # fused_experts_impl allocates per call up to 0.13.x (three caches in 0.7.x, cache1/cache3 shared from 0.8.0);
    # from 0.14.0 the unquantized MoE calls the modular kernel and its persistent workspace
    rules = RULES.fused_moe_buffers
    old, mid, new = (select_rule(rules, v) for v in ("0.7.3", "0.10.2", "0.14.0"))
    assert (old.held, old.cache13_shared, old.chunk_tokens) == ("per_call", False, 32_768)
    assert (mid.held, mid.cache13_shared) == ("per_call", True)
    assert select_rule(rules, "0.13.0").held == "per_call"
    assert new.held == "persistent" and select_rule(rules, None).held == "persistent"


def test_per_call_caches_from_the_source_shapes() -> None:
    old, mid = (select_rule(RULES.fused_moe_buffers, v) for v in ("0.7.3", "0.10.2"))
    # V2-Lite, TP 1, 40,000 batched tokens: M = 32,768, topk 6, N = 2 x 1,408, K = 2,048:
    # cache1 M x 6 x 2,816 + cache2 M x 6 x 1,408 + cache3 M x 6 x 2,048, bf16
    assert moe_call_bytes(V2_LITE, old, dtype_bytes=2, tensor_parallel_size=1, tokens=40_000) == (
        32_768 * 6 * (2_816 + 1_408 + 2_048) * 2
    )
    # 0.8.0+: cache13 = M x topk x max(N, K), cache2 M x topk x N / 2
    assert moe_call_bytes(V2_LITE, mid, dtype_bytes=2, tensor_parallel_size=1, tokens=8_192) == (
        8_192 * 6 * (2_816 + 1_408) * 2
    )
    # R1 at TP 8, 32,000 tokens: N = 2 x 2,048 / 8 = 512, K = 7,168, topk 8: 3.78 GiB of caches (the fp8 copy of
    # the input that its quantization_config adds: tests/unit/planner/test_fp8_moe_input.py)
    unquantized = {k: v for k, v in R1.items() if k != "quantization_config"}
    r1 = moe_call_bytes(unquantized, old, dtype_bytes=2, tensor_parallel_size=8, tokens=32_000)
    assert r1 == 32_000 * 8 * (512 + 256 + 7_168) * 2 and round(r1 / GIB, 2) == 3.78
    assert moe_call_bytes({"hidden_size": 4_096}, old, dtype_bytes=2, tensor_parallel_size=1, tokens=8_192) == 0


def test_shared_experts_output_is_held_through_the_v0_routed_call() -> None:
    # vllm 0.7.3 deepseek.py / deepseek_v2.py / qwen2_moe.py compute shared_output before self.experts(...) and add it
    # after: one [tokens, hidden] tensor more at the per-call MoE forward's peak; Mixtral-style blocks have none
    from onechip.planner.gpu_memory import activation_bytes, has_shared_experts

    old = select_rule(RULES.fused_moe_buffers, "0.7.3")
    assert old.shared_output_held and not select_rule(RULES.fused_moe_buffers, "0.10.2").shared_output_held
    assert has_shared_experts(R1) and has_shared_experts(V2_LITE)
    assert has_shared_experts({"shared_expert_intermediate_size": 5_632})  # Qwen1.5-MoE-A2.7B
    assert has_shared_experts({"moe_num_shared_experts": 2})  # Aria
    assert not has_shared_experts({"num_local_experts": 8, "num_experts_per_tok": 2})  # Mixtral
    memory = select_rule(RULES.memory_rules, "0.7.3")
    kw: dict[str, Any] = {
        "dtype_bytes": 2,
        "tensor_parallel_size": 8,
        "max_num_seqs": 1,
        "max_num_batched_tokens": 32_000,
    }
    with_shared = activation_bytes(memory, R1, moe_rule=old, **kw)
    without = activation_bytes(memory, {k: v for k, v in R1.items() if k != "n_shared_experts"}, moe_rule=old, **kw)
    assert with_shared - without == 32_000 * 7_168 * 2


def test_offloaded_layers_of_v2_lite(v2_lite: Path) -> None:
    tensors = read_checkpoint_dir(v2_lite)
    # a 30 GiB budget takes every decoder layer; embeddings and the LM head (2 x 102,400 x 2,048 bf16) stay
    every = offloaded_layers(tensors, budget_bytes=30 * GIB, served_dtype="bfloat16", tensor_parallel_size=1)
    assert every.offloaded_bytes == 31_412_968_448 - 2 * 102_400 * 2_048 * 2 - 2_048 * 2
    # one MoE layer: 64 x 3 x 1,408 x 2,048 experts + 3 x 2,816 x 2,048 shared + router + MLA + norms = 584.8M params
    assert round(every.moe_layer_bytes / GIB, 2) == 1.09
    # layer 0 is dense (first_k_dense_replace 1): MLA + 3 x 10,944 x 2,048
    assert round(every.dense_layer_bytes / GIB, 2) == 0.15
    # the budget is per rank and checked before each parameter: 2 GiB at TP 2 takes 4 GiB of the checkpoint
    part = offloaded_layers(tensors, budget_bytes=2 * GIB, served_dtype="bfloat16", tensor_parallel_size=2)
    assert 2 * GIB <= part.offloaded_bytes < 2 * GIB + 2_048 * 1_408
    assert part.moe_layer_bytes == every.moe_layer_bytes // 2 or part.moe_layer_bytes < every.moe_layer_bytes


def _plan(path: Path, **kwargs: Any) -> Any:
    return plan_model(str(path), "l40s", max_model_len=8_192, enforce_eager=True, **kwargs)


def test_v0_copies_the_largest_offloaded_layer_and_v1_reads_it_in_place(v2_lite: Path) -> None:
    base = _plan(v2_lite, engine_version="0.7.3").memory_budget
    v0 = _plan(v2_lite, engine_version="0.7.3", cpu_offload_gb=10).memory_budget
    assert base.weights_bytes - v0.weights_bytes >= 10 * GIB
    # V0 (uva_offloading False): the layer's state_dict is copied for its forward: a MoE layer's peak is its 3
    # [8,192, 2,048] tensors (V0's forward_hidden_copies) and the shared experts' output (shared_output_held), one
    # call's caches and its weights (1.09 GiB), above the dense layer 0's forward and the sampler warm-up (no
    # activation base on the V0 rule)
    moe_layer = offloaded_layers(
        read_checkpoint_dir(v2_lite), budget_bytes=10 * GIB, served_dtype="bfloat16", tensor_parallel_size=1
    ).moe_layer_bytes
    assert round(moe_layer / GIB, 2) == 1.09
    assert v0.activation_peak_bytes == 8_192 * 4 * 2_048 * 2 + 8_192 * 6 * (2_816 + 1_408 + 2_048) * 2 + moe_layer
    assert v0.activation_peak_bytes > base.activation_peak_bytes
    # V1 from 0.8.3: zero-copy UVA, the peak holds none of it
    base1 = _plan(v2_lite, engine_version="0.9.2").memory_budget
    v1 = _plan(v2_lite, engine_version="0.9.2", cpu_offload_gb=10).memory_budget
    assert v1.activation_peak_bytes == base1.activation_peak_bytes
    assert base1.weights_bytes - v1.weights_bytes == base.weights_bytes - v0.weights_bytes
    # 0.8.0 - 0.8.2: _is_v1_supported_oracle sends --cpu-offload-gb to the V0 engine
    fallback = _plan(v2_lite, engine_version="0.8.2", cpu_offload_gb=10)
    assert "V0 engine" in fallback.memory_budget.rule_versions
    assert any("runs its V0 engine for cpu offload" in w.message for w in fallback.warnings)


def test_the_plan_says_the_offload_and_its_command_carries_it(v2_lite: Path) -> None:
    plan = plan_model(str(v2_lite), "h100", max_model_len=8_192, engine_version="0.7.3", cpu_offload_gb=30)
    assert plan.serve.cpu_offload_gb is not None and plan.serve.cpu_offload_gb.value == 30
    # the plan's flags are what `up` serves (onechip.vllm.flags.plan_flags)
    assert any(f.flag == "--cpu-offload-gb" and float(f.value or 0) == 30 for f in flags.plan_flags(plan))
    (line,) = [w for w in plan.warnings if w.code == "cpu-offload"]
    # more than the decoder layers hold: vLLM offloads them all and starts (the L40S log), so said, not refused
    assert "28.47 GiB" in line.message and "go unused" in line.message and "1.09 GiB" in line.message
    keys = {calibration.deployment_key(PlanRequest(model="m", chip="l40s", **kw), "vllm-gpu", 8_192)
            for kw in ({}, {"cpu_offload_gb": 30})}  # fmt: skip
    assert len(keys) == 2


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf")])
def test_bad_offload_values_are_refused(value: float) -> None:
    with pytest.raises(ValueError, match="cpu_offload_gb"):
        PlanRequest(model="m", chip="l40s", cpu_offload_gb=value)


def test_offload_is_refused_off_the_gpu_engine(v2_lite: Path) -> None:
    with pytest.raises(ConfigError, match="--cpu-offload-gb is planned for vLLM's GPU engine only"):
        plan_model(str(v2_lite), "v5e-1", max_model_len=8_192, cpu_offload_gb=1)


def test_the_l40s_offload_row_from_source(tmp_path: Path) -> None:
    # vllm#15196 (V0 0.7.x, --cpu-offload-gb 30, 40,000 batched tokens): 'PyTorch activation peak memory takes
    # 4.01GiB', KV 14.96 GiB. From source: the dense layer 0's forward (2.90 GiB) against a MoE layer's 3 x
    # [40,000, 2,048] + the shared experts' output DeepseekV2MoE.forward holds through the routed call (0.7.3
    # deepseek_v2.py; engines.json fused_moe_buffers shared_output_held, not fitted on this row) + one call's caches
    # (2.30 GiB) + its copied weights (1.09 GiB) = 4.00 GiB (3.84 before the shared output was counted)
    planner_accuracy, corpus = _accuracy()
    entry = next(e for e in corpus if e["name"] == L40S_ROW)
    row = planner_accuracy.predict(entry, tmp_path, out_of_sample=True)
    budget = row["plan"].memory_budget
    caches = moe_call_bytes(V2_LITE, select_rule(RULES.fused_moe_buffers, "0.7.3"), dtype_bytes=2,
                            tensor_parallel_size=1, tokens=40_000)  # fmt: skip
    copied = budget.activation_peak_bytes - 4 * 40_000 * 2_048 * 2 - caches
    assert round(copied / GIB, 2) == 1.09
    assert round(budget.activation_peak_bytes / GIB, 2) == 4.00
    # 0.80 logged: the MLA attention's RoPE cache (163,840 x 64 x 2 B = 20 MiB, gpu_memory.deepseek_rope_cache_bytes)
    # closes the 0.02 GiB the plan held under it until planfix71
    assert round(budget.weights_bytes / GIB, 2) == 0.80
    assert abs(row["predicted"] - row["logged"]) / row["logged"] < 0.02


def test_r1_row_per_call_moe_is_kept_though_it_uncovers_the_non_torch_miss(tmp_path: Path) -> None:
    # V0 0.7.3 frees the fused-MoE caches before the sampler warms up (12.09 GiB planned with V1's persistent
    # workspace added). The peak is a MoE layer's forward: the layer's input (still referenced by
    # DeepseekV2Model.forward's loop), the residual, the attention output, the shared experts' output
    # (DeepseekV2MoE.forward computes it before self.experts: shared_output_held) = 4 x [32,000, 7,168] bf16, and one
    # call's caches (3.78 GiB) with the fp8 copy of its input (0.22 GiB, fp8_input_copy): 5.71 GiB, above the
    # sampler warm-up (1,024 x 129,280 x 39.16 B + the held hidden states, 5.26 GiB), against 6.37 logged; the rest of
    # the row's error is non-torch memory (known_error)
    planner_accuracy, corpus = _accuracy()
    entry = next(e for e in corpus if e["name"] == R1_ROW)
    row = planner_accuracy.predict(entry, tmp_path)
    old = select_rule(RULES.fused_moe_buffers, "0.7.3")
    calls = moe_call_bytes(R1, old, dtype_bytes=2, tensor_parallel_size=8, tokens=32_000)
    assert row["plan"].memory_budget.activation_peak_bytes == 4 * 32_000 * 7_168 * 2 + calls
    assert round(row["plan"].memory_budget.activation_peak_bytes / GIB, 2) == 5.71
    assert "non-torch" in entry["known_error"] and "+37" in entry["known_error"]
