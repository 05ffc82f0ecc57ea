"""`plan --against LOG` where the boot was served with another value of an input the plan sizes memory with: the KV
cache's element type, the quantization, max_num_seqs (and the length, tensor parallel size and utilization) as vLLM's
'non-default args' line or, where the log has none, the command line pasted before it gives them (vllm/engine/
arg_utils.py add_cli_args of the 0.34.0 sdist: --kv-cache-dtype, --quantization / -q, --max-num-seqs). Before, a plan
made for a bf16 KV cache against an fp8 boot reported its KV tokens 100% off as if the planner were wrong, and a command
line's fp8 beside a pool line that agreed read as agreeing; the log is now said to be of another deployment, naming
the input and the figure it moves."""

from __future__ import annotations

import json
from pathlib import Path

from factories import sized_checkpoint
from onechip.planner import plan_model
from onechip.vllm.bootlog import crosscheck, read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
LLAMA = json.loads((BOOTLOGS / "configs" / "meta-llama--Llama-3.1-8B-Instruct.json").read_text(encoding="utf-8"))
LLAMA_8B_BYTES = 16_060_522_496  # safetensors total of meta-llama/Llama-3.1-8B-Instruct (its model card index)
# llm-d-planner's accuracy run (corpus.json): vLLM 0.19.0 on an H100 80GB, 'non-default args: {... 'max_model_len':
# 8192, 'gpu_memory_utilization': 0.95, 'kv_cache_dtype': 'fp8', ...}', 'GPU KV cache size: 952,032 tokens'
H100_FP8_KV = (BOOTLOGS / "h100-llama31-8b-kvfp8-v0190.log").read_text(encoding="utf-8")


def _llama(tmp_path: Path, **fields: object):
    path = sized_checkpoint(tmp_path / "llama", LLAMA, LLAMA_8B_BYTES)
    return plan_model(
        str(path), "h100", "vllm-gpu", max_model_len=8192, utilization=0.95, engine_version="0.19.0", **fields
    )


def test_a_bf16_kv_plan_against_an_fp8_kv_boot_names_the_input_not_a_planner_error(tmp_path: Path) -> None:
    plan = _llama(tmp_path)
    result = crosscheck(plan, read_boot_log(H100_FP8_KV, plan.engine, plan.model))
    assert "other-deployment" in result.flags and not result.agrees
    assert result.note.startswith(
        "the log is of another deployment than the plan: kv_cache_dtype fp8, planned auto (bfloat16): it moves the KV "
        "bytes per token, so the KV tokens and concurrency"
    ), result.note


def test_an_fp8_kv_plan_against_the_same_boot_is_one_deployment(tmp_path: Path) -> None:
    plan = _llama(tmp_path, kv_cache_dtype="fp8")
    result = crosscheck(plan, read_boot_log(H100_FP8_KV, plan.engine, plan.model))
    assert "other-deployment" not in result.flags and "kv_cache_dtype" not in result.note, result.note


def _smollm(**fields: object):
    return plan_model("SmolLM2-135M-Instruct", "h100", "vllm-gpu", max_model_len=2048, utilization=0.9, **fields)


def _pool_line(plan) -> str:
    """The plan's own pool as 0.19.0's worker prints it, so that only the served inputs can differ."""
    assert plan.memory_budget is not None
    return (
        f"INFO [gpu_worker.py:436] Available KV cache memory: {plan.memory_budget.kv_cache_bytes / 1024**3:.2f} GiB\n"
    )


def _against(plan, command: str):
    return crosscheck(plan, read_boot_log(command + "\n" + _pool_line(plan), plan.engine, plan.model))


def test_the_kv_dtype_of_a_pasted_command_line_is_compared(tmp_path: Path) -> None:
    plan = _smollm()
    # the pool in GiB is the same whatever the KV element: only the command says the boot is another deployment
    result = _against(plan, "$ vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --kv-cache-dtype fp8")
    assert "other-deployment" in result.flags, result.note
    assert "kv_cache_dtype fp8, planned auto (bfloat16)" in result.note
    # fp8 is fp8_e4m3 (vllm/config/cache.py CacheDType: 'fp8 (=fp8_e4m3)'), and bfloat16 is what auto serves here
    assert (
        "other-deployment"
        not in _against(_smollm(kv_cache_dtype="fp8"), "vllm serve m --kv-cache-dtype fp8_e4m3").flags
    )
    assert "other-deployment" not in _against(plan, "vllm serve m --kv-cache-dtype bfloat16").flags


def test_max_num_seqs_of_a_command_line_and_of_the_args_line_is_compared() -> None:
    plan = _smollm()
    result = _against(plan, "vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --max-num-seqs 64")
    assert "max_num_seqs 64, planned the engine's default" in result.note, result.note
    assert "other-deployment" in result.flags
    same = _smollm(max_num_seqs=64)
    assert (
        "other-deployment"
        not in _against(same, "vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --max-num-seqs=64").flags
    )
    # corpus gpu-qwen3-vl-8b-len4096-eager-dev15312's own line: "non-default args: {..., 'max_num_seqs': 5, ...}"
    args = "INFO 04-22 23:58:13 [utils.py:233] non-default args: {'max_model_len': 2048, 'max_num_seqs': 5}"
    assert "max_num_seqs 5, planned 64" in _against(same, args).note


def test_an_online_quantization_the_plan_has_not_is_compared() -> None:
    plan = _smollm()  # an unquantized checkpoint: --quantization fp8 quantizes its weights as they load
    result = _against(plan, "vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --quantization fp8")
    assert "quantization fp8, planned none: it moves the weights, so the KV pool" in result.note, result.note
    assert "other-deployment" not in _against(_smollm(quantization="fp8"), "vllm serve m -q fp8").flags


def test_the_log_line_wins_over_the_command_line_wherever_it_stands() -> None:
    plan = _smollm()
    # the args line after the command (the usual order) and before it (a paste that quotes the command last)
    args = "INFO 04-22 23:58:13 [utils.py:233] non-default args: {'max_model_len': 2048, 'kv_cache_dtype': 'auto'}"
    for text in (
        f"vllm serve m --kv-cache-dtype fp8 --max-model-len 4096\n{args}",
        f"{args}\nvllm serve m --kv-cache-dtype fp8 --max-model-len 4096",
    ):
        result = _against(plan, text)
        assert "other-deployment" not in result.flags, result.note


def _tiny(tmp_path: Path, quant: dict[str, object], **fields: object):
    from factories import SMOLLM2_CONFIG, smollm2_checkpoint

    path = smollm2_checkpoint(tmp_path / "ckpt", {**SMOLLM2_CONFIG, "quantization_config": quant})
    return plan_model(str(path), "h100", "vllm-gpu", max_model_len=2048, utilization=0.9, **fields)


def test_auto_on_a_modelopt_fp8_kv_checkpoint_is_the_fp8_kv_cache_a_plan_asked_for(tmp_path: Path) -> None:
    # vLLM resolves --kv-cache-dtype auto to the checkpoint's kv_cache_quant_algo (resolve_kv_cache_dtype_string,
    # vllm/utils/torch_utils.py of the 0.34.0 sdist: 'FP8' -> fp8_e4m3), so a boot with 'auto' holds the fp8 KV cache
    # the plan sized by asking for fp8 outright: one deployment, not a bf16 one
    modelopt = {"quant_method": "modelopt", "quant_algo": "FP8", "kv_cache_quant_algo": "FP8"}
    plan = _tiny(tmp_path, modelopt, kv_cache_dtype="fp8")
    args = "INFO 04-22 23:58:13 [utils.py:233] non-default args: {'max_model_len': 2048, 'kv_cache_dtype': 'auto'}"
    result = _against(plan, args)
    assert "kv_cache_dtype" not in result.note, result.note
    # and a boot asking bfloat16 outright is another deployment (twice the KV bytes per token)
    bf16 = args.replace("'auto'", "'bfloat16'")
    assert "kv_cache_dtype bfloat16, planned fp8" in _against(plan, bf16).note


def test_a_quantized_checkpoint_served_by_its_own_method_is_one_deployment(tmp_path: Path) -> None:
    # an AWQ checkpoint planned with '--quantization awq' and served with '--quantization awq_marlin': vLLM loads the
    # checkpoint's own weights by its quantization_config either way (awq_marlin is the kernel AWQMarlinConfig
    # offers for that config, vllm/model_executor/layers/quantization/awq_marlin.py of the 0.34.0 sdist), so the flag
    # moves no weights (_served_inputs' own rule for a quantized checkpoint)
    awq = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
    plan = _tiny(tmp_path, awq, quantization="awq")
    args = "INFO 04-22 23:58:13 [utils.py:233] non-default args: {'max_model_len': 2048, 'quantization': 'awq_marlin'}"
    result = _against(plan, args)
    assert "quantization" not in result.note, result.note
