"""Pipeline parallel: the intermediate-tensor buffers every stage but the first holds (issue 27, planfix71).
vLLM's V1 model runner allocates them in _dummy_run on a non-first PP rank, 'if self.intermediate_tensors is None:
self.intermediate_tensors = self.model.make_empty_intermediate_tensors(batch_size=self.max_num_tokens, dtype=
self.model_config.dtype, ...)' (vllm/v1/worker/gpu_model_runner.py of the 0.8.5, 0.11.0, 0.19.0 and 0.27.1 sdists),
inside profile_run, so the profiled torch peak, and the pool, pay them; make_empty_intermediate_tensors_factory
(models/utils.py) makes one torch.zeros((batch_size, hidden_size)) per key: 'hidden_states' and 'residual' for most
decoders (llama.py), 'hidden_states' alone for some (gpt2.py, opt.py, ...: engines.json pp_intermediate_tensors)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from factories import corpus_entry
from onechip.schemas.common import GIB

ROOT = Path(__file__).resolve().parents[3]


def _plan(tmp_path: Path, name: str, **override: int):  # noqa: ANN202 (the planner's Plan)
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import planner_accuracy

    entry = corpus_entry(name)
    model, _ = planner_accuracy.model_of(entry, "vllm-gpu", tmp_path, True)
    fields = planner_accuracy.request_of(entry, "h100", "vllm-gpu", "0.19.0") | override
    return planner_accuracy.plan_fields(model, fields)


def test_the_last_pp_stage_pays_two_llama_buffers(tmp_path: Path) -> None:
    """Llama-3.1-8B at PP 4: the binding (last) stage's activation is TP 1's plus 2 x 8,192 x 4,096 x 2 B = 0.125 GiB;
    the log's PP3 prints 'torch peak memory increase: 2.01GiB' (h100x4-llama31-8b-pp4-v0190.log)."""
    pp4 = _plan(tmp_path / "pp4", "h100x4-llama31-8b-pp4-v0190")
    tp1 = _plan(tmp_path / "tp1", "h100x4-llama31-8b-pp4-v0190", pipeline_parallel_size=1)
    buffers = 2 * 8192 * 4096 * 2
    assert pp4.memory_budget.activation_peak_bytes - tp1.memory_budget.activation_peak_bytes == buffers
    assert round(pp4.memory_budget.activation_peak_bytes / GIB, 2) == 2.01


def test_keys_by_model_class() -> None:
    """gpt2.py passes ['hidden_states'] alone; llama.py both keys; granite.py defines its own function (not read)."""
    from onechip.planner.gpu_memory import pp_intermediate_bytes
    from onechip.planner.rules import engine_rules

    rule = engine_rules("vllm-gpu").pp_intermediate_tensors
    assert rule is not None
    text = {"hidden_size": 768}
    sizes = {
        arch: pp_intermediate_bytes(text, architectures=[arch], dtype_bytes=2, max_num_batched_tokens=2048, rule=rule)
        for arch in ("GPT2LMHeadModel", "LlamaForCausalLM", "GraniteForCausalLM")
    }
    assert sizes == {"GPT2LMHeadModel": 2048 * 768 * 2, "LlamaForCausalLM": 2 * 2048 * 768 * 2, "GraniteForCausalLM": 0}


def test_the_plan_says_the_buffers_and_which_stages_hold_them(tmp_path: Path) -> None:
    """qa71b: the buffers sat inside the activation figure, said nowhere; the plan names them, their size and stages."""
    pp4 = _plan(tmp_path, "h100x4-llama31-8b-pp4-v0190")
    said = [w.message for w in pp4.warnings if w.code == "pp-intermediate-tensors"]
    assert len(said) == 1 and "stages 2 - 4" in said[0] and "0.125 GiB" in said[0]


@pytest.mark.parametrize(("version", "why"), [("0.8.5", "V0 engine"), ("0.34.0", "V2 model runner")])
def test_a_runner_whose_buffers_are_not_planned_says_so(tmp_path: Path, version: str, why: str) -> None:
    """qa71b: V0 and the V2 runner's buffers are not planned (engines.json pp_intermediate_tensors): said."""
    plan = _plan(tmp_path, "h100x4-llama31-8b-pp4-v0190", engine_version=version)
    said = [w.message for w in plan.warnings if w.code == "pp-intermediate-unplanned"]
    assert len(said) == 1 and why in said[0] and "stages 2 - 4" in said[0]
    assert not any(w.code == "pp-intermediate-tensors" for w in plan.warnings)
