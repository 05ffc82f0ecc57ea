"""Huawei Ascend NPUs under vllm-ascend (issue 27, 'every card'): chip names, sizes from Huawei's CANN platform files
and measured runtime totals, vllm-ascend 0.18.0's block size and pool rule, and the corpus's vllm-ascend boot log
(tests/fixtures/bootlogs, ascend-qwen3-vl-8b-len16384-v0180) planned from its logged pool."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from factories import plan_app, sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import default_engine_rules, plan_model
from onechip.planner.rules import accelerator, engine_rules
from onechip.schemas.common import GIB

BOOTLOGS = Path(__file__).resolve().parents[2] / "fixtures" / "bootlogs"
CORPUS = {e["name"]: e for e in json.loads((BOOTLOGS / "corpus.json").read_text(encoding="utf-8"))}
ROW = "ascend-qwen3-vl-8b-len16384-v0180"


@pytest.mark.parametrize(
    ("spellings", "key"),
    [
        (["Ascend 910B", "910B", "ascend910b", "910B3", "Huawei Ascend 910B1", "ascend-910b2", "atlas-800i-a2"],
         "ascend-910b"),
        (["910B4", "Ascend 910B4", "ascend910b4"], "ascend-910b4"),
        (["Ascend 910C", "910c", "atlas-a3", "Atlas 800I A3"], "ascend-910c"),
        (["Atlas 300I Duo", "atlas-300i-duo", "310P", "Ascend 310P3"], "ascend-310p3-duo"),
    ],
)  # fmt: skip
def test_the_names_people_write_resolve_to_an_ascend_key(spellings: list[str], key: str) -> None:
    for name in spellings:
        acc = accelerator(name)
        assert (acc.resolved_as or acc.name) == key, name
        assert acc.kind == "npu" and default_engine_rules(name) == "vllm-ascend", name


def test_sizes_from_cann_platform_config_and_the_measured_runtime_total() -> None:
    # CANN data/platform_config: Ascend910B2.ini / Ascend910B1.ini memory_size=68719476736, Ascend910B4.ini
    # memory_size=34359738368; torch_npu total memory 65,452,113,920 B (vllm-project/vllm-ascend#4404: 'total memory:
    # 65452113920'; #8621: '(27.18/60.96 GiB)')
    b, b4, c = accelerator("ascend-910b"), accelerator("ascend-910b4"), accelerator("ascend-910c")
    assert b.memory_nominal_bytes == c.memory_nominal_bytes == 68_719_476_736
    assert b4.memory_nominal_bytes == 34_359_738_368
    assert b.memory_visible_bytes == c.memory_visible_bytes == 65_452_113_920
    assert round(b.memory_visible_bytes / GIB, 2) == 60.96
    # the 910B4 is not measured: the huawei-hbm rule (the 64 GiB parts' share, 0.9525) with its range
    assert b4.memory_visible_bytes == round(34_359_738_368 * 0.9525)
    assert b4.memory_visible_range_bytes is not None and "huawei-hbm" in (b4.memory_visible_source or "")
    assert "bfloat16" not in accelerator("310P").native_formats  # vllm-ascend's 310P guide serves --dtype float16


def test_vllm_ascend_block_size_and_utilization() -> None:
    # vllm-project/vllm-ascend@v0.18.0 vllm_ascend/utils.py refresh_block_size: None -> 128, and any other size is
    # reset to 128 under prefix caching or chunked prefill; gpu_memory_utilization is vLLM's 0.9
    rules = engine_rules("vllm-ascend")
    assert rules.block_size_for(16_384, None) == 128
    assert rules.default_utilization == 0.9 and rules.release == "0.18.0"
    # another --block-size would be planned in blocks the engine does not make (it was: 165,128 blocks x 16)
    assert rules.block_size_reset_to == 128
    with pytest.raises(ConfigError, match=r"^--block-size 16: vllm-ascend resets it to 128 .*drop --block-size$"):
        plan_model("gemma-4-E2B-it", "910B", max_model_len=8192, block_size=16)
    assert plan_model("gemma-4-E2B-it", "910B", max_model_len=8192, block_size=128).block_size == 128


def test_corpus_log_given_its_pool_without_a_block_size(tmp_path: Path) -> None:
    # 'Available KV cache memory: 34.65 GiB', 'GPU KV cache size: 252,288 tokens', 'Maximum concurrency for 16,384
    # tokens per request: 15.40x': Qwen3-VL-8B's 147,456 B/token in blocks of 128 (the engine's default, not passed)
    entry = CORPUS[ROW]
    logged = entry["logged"]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "qwen3vl", config, int(logged["model_weights_gib"] * GIB))
    plan = plan_model(str(path), "Ascend 910B", max_model_len=16_384, max_num_batched_tokens=16_384,
                      kv_cache_memory_bytes=int(logged["available_kv_cache_gib"] * GIB))  # fmt: skip
    assert plan.engine == "vllm-ascend" and plan.block_size == 128
    assert plan.kv_bytes_per_token == 147_456
    assert plan.kv_tokens_logged == logged["kv_cache_tokens"] == 252_288
    assert round(plan.max_concurrency, 2) == logged["max_concurrency"] and plan.fits
    assert "pool-upper-bound" not in {w.code for w in plan.warnings}  # the pool is given


def test_whole_budget_subtracts_the_weights_and_says_it_is_an_upper_bound(tmp_path: Path) -> None:
    # vllm_ascend/worker/worker.py@v0.18.0: available = total x utilization - (weights + peak activation + non-torch);
    # the last two are not modelled on an NPU, so the plan's pool is cap - weights and it warns
    entry = CORPUS[ROW]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    weights = int(entry["logged"]["model_weights_gib"] * GIB)
    path = sized_checkpoint(tmp_path / "qwen3vl", config, weights)
    plan = plan_model(str(path), "910B3", max_model_len=16_384, multimodal=False)
    assert plan.cap_bytes == int(65_452_113_920 * 0.9)
    assert plan.kv_pool_bytes == plan.cap_bytes - plan.weights_bytes
    # the logged pool (34.65 GiB) is below that bound: activation and non-torch memory are left out
    assert plan.kv_pool_bytes / GIB > entry["logged"]["available_kv_cache_gib"]
    assert "pool-upper-bound" in {w.code for w in plan.warnings}


def test_tensor_parallel_spans_npus_like_gpus(tmp_path: Path) -> None:
    entry = CORPUS[ROW]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "qwen3vl", config, 17_534_339_512)
    plan = plan_model(str(path), "ascend-910c", max_model_len=16_384, tensor_parallel_size=2)
    assert plan.devices == 2 and plan.memory_bytes == 2 * 65_452_113_920


@pytest.mark.parametrize("name", ["ascend-910b", "Ascend 910B", "910B3", "atlas-800i-a2", "ascend910b"])
def test_cli_plans_on_the_names_people_write(name: str) -> None:
    result = CliRunner().invoke(
        plan_app(), ["plan", "gemma-4-E2B-it", "--chip", name, "--max-model-len", "8192", "--json"], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert (plan["chip"], plan["engine"], plan["block_size"]) == ("ascend-910b", "vllm-ascend", 128)


def test_cli_refuses_a_bad_npu_name_in_one_line(run) -> None:
    code, _, err = run("plan", "gemma-4-E2B-it", "--chip", "ascend-910z")
    assert code != 0 and "unknown chip 'ascend-910z'" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


def test_another_engine_on_an_npu_is_refused() -> None:
    with pytest.raises(ConfigError, match="does not run on"):
        plan_model("gemma-4-E2B-it", "910B3", "vllm-gpu", max_model_len=8192)


def test_the_310p_worker_halves_its_pool(tmp_path: Path) -> None:
    # vllm-ascend@v0.18.0 vllm_ascend/_310p/worker_310p.py: available = (requested - non_kv_cache_memory - ...) // 2
    entry = CORPUS[ROW]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "qwen3vl", config, 17_534_339_512)
    plan = plan_model(str(path), "Atlas 300I Duo", max_model_len=8192, dtype="float16", multimodal=False)
    assert plan.kv_pool_bytes == (plan.cap_bytes - plan.weights_bytes) // 2
    assert "divided by 2" in next(w.message for w in plan.warnings if w.code == "pool-upper-bound")


def test_a_given_pool_is_planned_but_vllm_ascend_0180_does_not_read_it(tmp_path: Path) -> None:
    # vllm-ascend@v0.18.0 NPUWorker.determine_available_memory never reads kv_cache_memory_bytes (PR #8289 added it,
    # first in v0.19.1rc1): the plan says so when --kv-cache-memory is given
    entry = CORPUS[ROW]
    config = json.loads((BOOTLOGS / entry["config_file"]).read_text(encoding="utf-8"))
    path = sized_checkpoint(tmp_path / "qwen3vl", config, 17_534_339_512)
    plan = plan_model(str(path), "910B", max_model_len=16_384, kv_cache_memory_bytes=20 * GIB)
    codes = {w.code for w in plan.warnings}
    assert "kv-cache-memory-ignored" in codes and "pool-upper-bound" not in codes


def test_a_chip_known_only_by_its_nominal_size_says_so() -> None:
    plan = plan_model("gemma-4-E2B-it", "Atlas 300I Duo", max_model_len=8192, dtype="float16")
    assert "memory-nominal" in {w.code for w in plan.warnings}
    assert "memory-nominal" not in {w.code for w in plan_model("gemma-4-E2B-it", "910B", max_model_len=8192).warnings}


def test_up_launches_vllm_serve_on_the_host_and_refuses_the_container() -> None:
    from onechip.engines.replicas import pins
    from onechip.schemas.serve import ServeTarget
    from onechip.vllm import flags

    plan = plan_model("gemma-4-E2B-it", "910B", max_model_len=8192)
    command = flags.serve_command(plan, ServeTarget(kind="vllm", launcher=["vllm", "serve"]))
    assert command.argv[:2] == ["vllm", "serve"] and "--max-model-len" in command.argv
    with pytest.raises(ConfigError, match="Huawei Ascend NPU.*--engine vllm"):
        flags.serve_command(plan, ServeTarget(kind="vllm-docker", image="quay.io/ascend/vllm-ascend:v0.18.0"))
    # vllm-ascend@v0.18.0 vllm_ascend/platform.py: device_control_env_var = "ASCEND_RT_VISIBLE_DEVICES"
    assert pins("vllm-ascend", 2, 1, 1) == {"ASCEND_RT_VISIBLE_DEVICES": "1"}


def test_another_vllm_ascend_release_is_planned_under_the_0180_rules_and_says_so() -> None:
    plan = plan_model("gemma-4-E2B-it", "910B", max_model_len=8192, engine_version="0.23.0")
    said = next(w.message for w in plan.warnings if w.code == "engine-version")
    assert "0.23.0" in said and "read at 0.18.0" in said
    assert "engine-version" not in {w.code for w in plan_model("gemma-4-E2B-it", "910B", max_model_len=8192).warnings}


def test_bfloat16_on_the_310p_is_said_to_be_served_float16_by_its_guide() -> None:
    # vllm-ascend@v0.18.0 docs/source/tutorials/hardwares/310p.md serves with '--dtype float16'
    plan = plan_model("gemma-4-E2B-it", "310P", max_model_len=8192)
    assert plan.dtype == "bfloat16" and "dtype-not-native" in {w.code for w in plan.warnings}
    fp16 = plan_model("gemma-4-E2B-it", "310P", max_model_len=8192, dtype="float16")
    assert "dtype-not-native" not in {w.code for w in fp16.warnings}


def test_a_tensor_parallel_size_that_does_not_divide_the_heads_is_refused_as_on_gpus() -> None:
    # vLLM's ModelConfig.verify_with_parallel_config runs on every platform; vllm-ascend's
    # AscendVocabParallelEmbedding pads the vocabulary to DEFAULT_VOCAB_PADDING_SIZE (64) and divides it by TP
    # (engines.json vllm-ascend tp_sharding_source). Gemma 4 E2B has 8 attention heads.
    assert engine_rules("vllm-ascend").tp_vocab_padding == 64
    with pytest.raises(ConfigError, match=r"num_attention_heads 8 is not divisible by it"):
        plan_model("gemma-4-E2B-it", "910B3", max_model_len=8192, tensor_parallel_size=3)
    assert plan_model("gemma-4-E2B-it", "910B3", max_model_len=8192, tensor_parallel_size=2).fits


@pytest.mark.parametrize("version", ["0.26.1rc1.dev125+ga7a204cc6", "0.8.5.post1", "0.10.1.1", "v0.18.0", "0.9"])
def test_version_texts_pip_writes_are_taken(version: str) -> None:
    from onechip.schemas.requests import version_text

    assert version_text(f" {version} ") == version.removeprefix("v")  # the image tag's 'v0.18.0' is release 0.18.0


def test_a_version_written_with_leading_zeros_is_the_release_pip_reads() -> None:
    # PEP 440 integer normalization ('an integer version of 00 would normalize to 0'): `--engine-version 0.019.0` was
    # planned as 0.19.0 but its image tagged vllm/vllm-openai:v0.019.0, which does not exist
    from onechip.schemas.requests import version_text

    assert version_text("0.019.0") == "0.19.0"
    assert version_text("v00.6.03.post1") == "0.6.3.post1"
    assert version_text("0.26.1rc01.dev125+g0a7a204cc6") == "0.26.1rc01.dev125+g0a7a204cc6"  # the release part only
