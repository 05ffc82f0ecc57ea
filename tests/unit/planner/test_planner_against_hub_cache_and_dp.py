"""`plan --against LOG` where the log serves a Hugging Face cache snapshot or runs data parallel: the start of a real
8x B200 boot, vLLM 0.25.0 (vllm-project/vllm#51454, DeepSeek-V4-Flash-0731 at '--data-parallel-size 8'; tests/fixtures/
bootlogs b200x8-deepseek-v4-flash-0731-dp8-ep-v0250-banner). Its model is a snapshot path of the Hub cache,
'.../hub/models--deepseek-ai--DeepSeek-V4-Flash-0731/snapshots/7872f01b...', the folder huggingface_hub names
'models--{owner}--{name}' (file_download.repo_folder_name: 'models' and the repo id's parts joined by
constants.REPO_ID_SEPARATOR '--'; utils/_validators.validate_repo_id refuses '--' in an id, so the folder splits back
into one id), the revision under 'snapshots/'. Before: a path is a checkpoint directory its owner named, so another
model's log was compared with the plan as if it were of the planned deployment, and the data-parallel size was not
read at all (onechip plans one engine of TP x PP GPUs; each DP rank is an engine of its own, whose MoE experts are
spread over the DP ranks under --enable-expert-parallel)."""

from __future__ import annotations

from pathlib import Path

from onechip.planner import plan_model
from onechip.vllm.bootlog import crosscheck, read_boot_log

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
B200_LOG = BOOTLOGS / "b200x8-deepseek-v4-flash-0731-dp8-ep-v0250-banner.log"
B200_ARGS = next(
    line + "\n" for line in B200_LOG.read_text(encoding="utf-8").splitlines() if "non-default args" in line
)


def _plan():
    # at the log's 'gpu_memory_utilization': 0.95, so that only what these tests are about differs
    return plan_model("SmolLM2-135M-Instruct", "b200", "vllm-gpu", max_model_len=2048, utilization=0.95)


def _pool_line(plan) -> str:
    """The plan's own pool as 0.25.0's worker prints it, so that only the deployment can differ."""
    assert plan.memory_budget is not None
    pool_gib = plan.memory_budget.kv_cache_bytes / 1024**3
    return f"INFO [gpu_worker.py:563] Available KV cache memory: {pool_gib:.2f} GiB\n"


def test_a_hub_cache_snapshot_of_another_model_is_another_deployment() -> None:
    plan = _plan()
    result = crosscheck(plan, read_boot_log(B200_ARGS + _pool_line(plan), plan.engine, plan.model))
    assert "other-deployment" in result.flags and not result.agrees
    assert result.note.startswith(
        "the log is of another deployment than the plan: model deepseek-ai/DeepSeek-V4-Flash-0731 (a Hugging Face "
        "cache snapshot), planned SmolLM2-135M-Instruct"
    ), result.note


def test_a_data_parallel_log_is_another_deployment() -> None:
    plan = _plan()
    result = crosscheck(plan, read_boot_log(B200_ARGS + _pool_line(plan), plan.engine, plan.model))
    assert "data_parallel_size 8, planned 1" in result.note, result.note


def test_a_hub_cache_snapshot_of_the_planned_model_at_one_engine_agrees() -> None:
    plan = _plan()
    same = (
        "INFO Initializing a V1 LLM engine (v0.25.0) with config: model='/root/.cache/huggingface/hub/"
        "models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots/12fd25f77366fa6b3b4b768ec3050bf629380bac', "
        "max_seq_len=2048, tensor_parallel_size=1, pipeline_parallel_size=1, data_parallel_size=1, \n"
        "INFO non-default args: {'gpu_memory_utilization': 0.95}\n"
    )
    result = crosscheck(plan, read_boot_log(same + _pool_line(plan), plan.engine, plan.model))
    assert result.agrees and "other-deployment" not in result.flags, result.note
