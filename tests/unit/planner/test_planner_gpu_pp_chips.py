"""Pipeline parallelism on vLLM GPUs and the GPUs added for the boot-log corpus (A100, T4), each against the
vLLM rule or the log (tests/fixtures/bootlogs/corpus.json) it comes from.

Checkpoints here are header-only safetensors files (the planner reads headers, never tensor data).
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS, corpus_entry
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.gpu_memory import rotary_cache_bytes
from onechip.planner.gpu_plan import pp_stage_layers
from onechip.planner.rules import accelerator
from onechip.planner.weights import Tensor, weights_by_stage
from onechip.schemas.common import GIB

LLAMA_8B_BYTES = 16_060_522_496  # issue 12: Llama-3.1-8B bf16 checkpoint bytes


def _config(name: str) -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _layered_checkpoint(directory: Path, config: dict[str, Any], weights_bytes: int) -> Path:
    """config.json and a header announcing `weights_bytes` of bf16 spread evenly over the decoder layers."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    layers = config["num_hidden_layers"]
    per = weights_bytes // layers // 2 * 2
    header = {
        f"model.layers.{i}.mlp.weight": {"dtype": "BF16", "shape": [per // 2], "data_offsets": [i * per, (i + 1) * per]}
        for i in range(layers)
    }
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return directory


# vllm/distributed/utils.py get_pp_indices: num_layers // PP per stage, the remainder added from the
# second-to-last stage backwards (its docstring: the last stage holds the norm, the first the embedding).
@pytest.mark.parametrize(
    ("layers", "pp", "sizes"),
    [(32, 2, [16, 16]), (22, 4, [5, 6, 6, 5]), (5, 3, [2, 2, 1]), (61, 2, [31, 30]), (61, 4, [15, 15, 16, 15])],
)
def test_layers_split_over_stages_as_vllm_splits_them(layers: int, pp: int, sizes: list[int]) -> None:
    stages = pp_stage_layers(layers, pp)
    assert [len(s) for s in stages] == sizes
    assert stages[0].start == 0 and stages[-1].stop == layers


def test_more_stages_than_layers_is_refused() -> None:
    with pytest.raises(ConfigError, match="exceeds the model's 2 layers"):
        pp_stage_layers(2, 3)


def test_weights_follow_their_layers_and_a_tied_embedding_is_built_on_the_last_stage() -> None:
    # vLLM PP model classes: embed_tokens on 'is_first_rank or (tie_word_embeddings and is_last_rank)';
    # norm and lm_head on the last rank; decoder layer i on the stage holding i.
    tensors = [
        Tensor("model.embed_tokens.weight", (100, 10), "BF16"),
        Tensor("model.layers.0.mlp.weight", (10, 10), "BF16"),
        Tensor("model.layers.1.mlp.weight", (10, 10), "BF16"),
        Tensor("model.norm.weight", (10,), "BF16"),
    ]
    stages = pp_stage_layers(2, 2)
    assert weights_by_stage(tensors, "bfloat16", stages) == [2000 + 200, 200 + 20]
    assert weights_by_stage(tensors, "bfloat16", stages, tie_word_embeddings=True) == [2200, 2000 + 220]


# Llama-3.1-8B, PP 2 on two H100s, vLLM 0.19.0 (llm-d-planner sweep): 'GPU KV cache size: 1,075,312 tokens'
# (67,207 blocks of 16 over each stage's 16 layers). Stage PP1 runs the sampler warm-up (its log: activation
# 2.01 GiB against PP0's 1.1 GiB), holds the fewer blocks, and every worker is set to that count.
def test_pipeline_parallel_plans_each_stage_and_takes_the_fewest_blocks(tmp_path: Path) -> None:
    entry = corpus_entry("h100x2-llama31-8b-pp2-v0190")
    config = _config("meta-llama--Llama-3.1-8B-Instruct.json")
    path = _layered_checkpoint(tmp_path / "llama", config, LLAMA_8B_BYTES)
    plan = plan_model(
        str(path), "h100", "vllm-gpu", max_model_len=8192, utilization=0.95, pipeline_parallel_size=2,
        engine_version="0.19.0", multimodal=False,
    )  # fmt: skip
    assert plan.devices == 2 and plan.pipeline_parallel_size == 2
    assert plan.kv_tokens_logged == pytest.approx(entry["logged"]["kv_cache_tokens"], rel=0.005)
    assert plan.kv_tokens_logged % 16 == 0
    assert plan.memory_budget is not None
    # the binding stage is the last one: its activation carries the sampler term, the first stage's does not
    assert plan.memory_budget.activation_peak_bytes > entry["logged"]["activation_peak_gib"] * GIB
    # half the layers' bytes plus the RoPE cache: the log's stage-PP0 'Model loading took 7.51 GiB'
    assert plan.memory_budget.weights_bytes / GIB == pytest.approx(entry["logged"]["model_weights_gib"], abs=0.01)
    assert plan.serve.pipeline_parallel_size is not None and plan.serve.pipeline_parallel_size.value == 2
    tp1 = plan_model(
        str(path), "h100", "vllm-gpu", max_model_len=8192, utilization=0.95, engine_version="0.19.0",
        multimodal=False,
    )  # fmt: skip
    # half the layers per GPU: about twice the blocks (less the sampler's share), never more
    assert tp1.kv_tokens_logged < plan.kv_tokens_logged < 2.3 * tp1.kv_tokens_logged


# The same boot given its pool: the engine sizes the cache from the smallest pool any rank measured (vLLM's
# kv_cache_utils: 'changes the num_blocks of each worker to the smallest among all workers'), stage PP1's here, which
# the log gives as its requested memory less its non-KV total (75.23 - 9.6 = 65.63 GiB); the 'Available KV cache
# memory' it prints is PP0's 66.54.
def test_a_pipeline_boot_given_its_smallest_rank_pool_plans_its_token_line(tmp_path: Path) -> None:
    entry = corpus_entry("h100x2-llama31-8b-pp2-v0190")
    log = (BOOTLOGS / "h100x2-llama31-8b-pp2-v0190.log").read_text(encoding="utf-8")
    pp1 = [line for line in log.splitlines() if line.startswith("(Worker_PP1")]
    requested = next(float(m.group(1)) for line in pp1 if (m := re.search(r"Requested memory: .*, ([\d.]+) GiB", line)))
    non_kv = next(
        float(m.group(1)) for line in pp1 if (m := re.search(r"Total non KV cache memory: ([\d.]+)GiB", line))
    )
    assert round(requested - non_kv, 2) == entry["logged"]["smallest_rank_kv_cache_gib"] == 65.63
    config = _config("meta-llama--Llama-3.1-8B-Instruct.json")
    path = _layered_checkpoint(tmp_path / "llama", config, LLAMA_8B_BYTES)

    def tokens(pool_gib: float) -> int:
        plan = plan_model(
            str(path), "h100", "vllm-gpu", max_model_len=8192, pipeline_parallel_size=2, engine_version="0.19.0",
            kv_cache_memory_bytes=int(pool_gib * GIB), multimodal=False,
        )  # fmt: skip
        return plan.kv_tokens_logged

    logged = entry["logged"]["kv_cache_tokens"]
    per_token = 16 * 8 * 128 * 2 * 2  # a stage's 16 layers x 8 KV heads x 128 x K and V x bf16
    assert abs(tokens(65.63) - logged) <= 0.005 * GIB / per_token  # the pool is printed to 0.01 GiB
    assert tokens(entry["logged"]["available_kv_cache_gib"]) > 1.01 * logged  # PP0's pool: 1.4% too many


def test_pipeline_parallel_off_the_vllm_gpu_engine_is_refused_in_one_line(tmp_path: Path) -> None:
    config = _config("meta-llama--Llama-3.1-8B-Instruct.json")
    path = _layered_checkpoint(tmp_path / "llama", config, LLAMA_8B_BYTES)
    with pytest.raises(ConfigError, match="pipeline_parallel_size 2: planned for vLLM on GPUs only") as err:
        plan_model(str(path), "v6e-4", max_model_len=8192, pipeline_parallel_size=2, multimodal=False)
    assert "\n" not in str(err.value)


# Runtime-visible memory (catalog/accelerators.json memory_visible_source): CUDA deviceQuery 'Total amount
# of global memory' on an A100-SXM4-80GB (84,987,740,160 bytes), an A100 40GB SXM (42,405,855,232) and a
# Tesla T4 under a 12.5 driver (15,642,329,088); never the marketing GB.
@pytest.mark.parametrize(
    ("chip", "visible"),
    [("a100-80gb", 84_987_740_160), ("a100-40gb", 42_405_855_232), ("t4", 15_642_329_088)],
)
def test_new_gpus_carry_the_memory_the_runtime_sees(chip: str, visible: int) -> None:
    acc = accelerator(chip)
    assert acc.memory_bytes == visible


# vLLM get_batch_defaults (tests/engine/test_arg_utils.py test_defaults_with_usage_context): >= 70 GiB cards
# default to 1024 sequences / 8192 tokens unless the device name contains "a100" (256 / 2048). The A100 log
# of gpt-oss-20b at 0.65 (myoceane.fr, vLLM 0.19.0) prints 'Available KV cache memory: 36.56 GiB'.
def test_an_a100_gets_the_small_batch_defaults_and_its_logged_kv_memory(tmp_path: Path) -> None:
    entry = corpus_entry("a100-gpt-oss-20b-len131072-util065-v0190")
    config_path = BOOTLOGS / "configs" / "openai--gpt-oss-20b.json"
    weights = int(entry["logged"]["model_weights_gib"] * GIB)
    plan = _plan_sized(tmp_path / "a", config_path, weights, "a100-80gb", utilization=0.65, max_model_len=131072)
    assert plan.memory_budget is not None
    logged = entry["logged"]["available_kv_cache_gib"] * GIB
    assert plan.memory_budget.kv_cache_bytes == pytest.approx(logged, rel=0.01)
    h100 = _plan_sized(tmp_path / "h", config_path, weights, "h100", utilization=0.65, max_model_len=131072)
    assert h100.memory_budget is not None
    assert h100.memory_budget.activation_peak_bytes > plan.memory_budget.activation_peak_bytes  # 1024 vs 256 seqs


def _plan_sized(directory: Path, config_path: Path, weights: int, chip: str, **fields: Any) -> Any:
    """Plan a checkpoint of `weights` bytes kept as stored (mxfp4: the log's loaded figure) under vLLM 0.19.0."""
    directory.mkdir()
    (directory / "config.json").write_text(config_path.read_text(encoding="utf-8"), encoding="utf-8")
    header = {"model.layers.0.mlp.weight": {"dtype": "U8", "shape": [weights], "data_offsets": [0, weights]}}
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return plan_model(str(directory), chip, "vllm-gpu", engine_version="0.19.0", multimodal=False, **fields)


# vLLM's RoPE cos/sin cache (rotary_embedding.py: [max_position_embeddings, rotary_dim] in the model dtype)
# loads with the weights: vllm #10517's 'Loading model weights took 14.9888 GB' for Llama-3.1-8B's
# 16,060,522,496-byte checkpoint is those bytes + 131,072 x 128 x 2 B.
def test_the_rope_cache_is_what_the_loaded_weights_add_to_the_checkpoint() -> None:
    config = _config("meta-llama--Llama-3.1-8B-Instruct.json")
    cache = rotary_cache_bytes(config, dtype_bytes=2)
    assert cache == 131_072 * 128 * 2
    assert (LLAMA_8B_BYTES + cache) / GIB == pytest.approx(14.9888, abs=0.0001)
    assert rotary_cache_bytes({**config, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, dtype_bytes=2) == 0


def test_an_explicit_kv_pool_larger_than_the_card_does_not_fit(tmp_path: Path) -> None:
    # vLLM skips its profiling when --kv-cache-memory is given (gpu_worker.determine_available_memory), so the
    # pool, the weights and the overheads must fit in the card's visible memory (H100: 79.19 GiB per its logs)
    model = str(
        _layered_checkpoint(tmp_path / "llama", _config("meta-llama--Llama-3.1-8B-Instruct.json"), LLAMA_8B_BYTES)
    )
    fits = plan_model(model, chip="h100", engine="vllm-gpu", max_model_len=8192, kv_cache_memory_bytes=40 * GIB)
    assert fits.fits and fits.binding_limit == "kv-pool"
    over = plan_model(model, chip="h100", engine="vllm-gpu", max_model_len=8192, kv_cache_memory_bytes=70 * GIB)
    assert not over.fits and over.binding_limit == "explicit-pool"
    assert "--kv-cache-memory" in over.verdict and "more than the card holds" in over.verdict


# --set max-model-len=auto with PP: vllm/v1/core/kv_cache_utils.py _auto_fit_max_model_len searches as the start-up
# check counts. 0.14.0 - 0.16.x: one request over the whole model's groups against the smallest worker's memory
# ('min_available_memory = min(available_memory)'), so each token takes a block of 16 tokens on both stages; 0.17.0
# on: each worker's projected groups against its own memory, the minimum over the workers; 0.29.0 on: less the null
# block (get_kv_cache_configs check_memory). Llama-3.1-8B (32 layers, 16 per stage) at 0.35 of two L40S: 131,072
# tokens do not fit a stage. Every block is 16 tokens of one stage's 16 layers.
@pytest.mark.parametrize(
    ("version", "fitted"),
    [
        ("0.16.0", lambda blocks: blocks // 2 * 16),  # the whole model: both stages' blocks against one pool
        ("0.19.0", lambda blocks: blocks * 16),  # each stage's own blocks against its own pool
        ("0.32.0", lambda blocks: (blocks - 1) * 16),  # less the null block
    ],
)
def test_auto_max_model_len_under_pipeline_parallelism_takes_the_binding_stage(
    tmp_path: Path, version: str, fitted: Any
) -> None:
    path = _layered_checkpoint(tmp_path / "llama", _config("meta-llama--Llama-3.1-8B-Instruct.json"), LLAMA_8B_BYTES)
    plan = plan_model(
        str(path), "l40s", "vllm-gpu", utilization=0.35, pipeline_parallel_size=2, engine_version=version,
        multimodal=False, sets=["max-model-len=auto"],
    )  # fmt: skip
    assert plan.fits and plan.max_model_len < 131072
    assert plan.max_model_len == fitted(plan.num_blocks)
    said = [w.message for w in plan.warnings if w.code == "max-model-len-auto-fit"]
    assert len(said) == 1 and f"lowers max_model_len to {plan.max_model_len:,}" in said[0]
    assert "the pipeline stage that binds (of 2)" in said[0]
