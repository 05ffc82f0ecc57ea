"""Hybrid (Mamba / linear-attention) and attention-free models at pipeline parallel > 1 on vLLM GPUs.

vLLM's rule, read in vllm/v1/core/kv_cache_utils.py get_kv_cache_configs (0.19.0, 0.20.0, 0.25.0, 0.27.1 sdists;
kv_cache_planning.py in 0.34.0): the KV specs of every stage are merged, get_kv_cache_groups groups the whole
model's layers (each spec's layers[i::num_groups]), _project_kv_cache_groups_to_worker keeps each group's layers on
one stage (an empty group stays), and get_kv_cache_config_from_groups sizes a stage's pool with group_size = the
most layers one projected group has: num_blocks = pool // page // group_size. The hybrid attention block and the
padded state page are set once per model (vllm/platforms/interface.py _align_hybrid_block_size, 0.34.0: the
attention page of model_config.get_num_kv_heads(parallel_config), divided by TP, not by PP), so every stage has the
PP 1 block and page. A request takes pages in every group (_max_memory_usage_bytes_from_groups), so the pages per
request are the PP 1 figure. Stages split the decoder layers as vllm/distributed/utils.py get_pp_indices does.

Every plan here gives --kv-cache-memory (bytes per GPU), so the pool per GPU is that figure on every stage and the
numbers below are the allocator's alone.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from factories import BOOTLOGS
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.schemas.common import GIB

POOL = 8 * GIB


def _config(name: str) -> dict[str, Any]:
    return json.loads((BOOTLOGS / "configs" / name).read_text(encoding="utf-8"))


def _checkpoint(directory: Path, config: dict[str, Any], prefix: str = "model.layers") -> Path:
    """config.json and a header announcing 8 GiB of bf16 spread over the decoder layers (`prefix`.i)."""
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    layers = config["num_hidden_layers"]
    per = 8 * GIB // layers // 2 * 2
    header = {
        f"{prefix}.{i}.mixer.weight": {"dtype": "BF16", "shape": [per // 2], "data_offsets": [i * per, (i + 1) * per]}
        for i in range(layers)
    }
    raw = json.dumps(header).encode()
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    return directory


def _plan(path: Path, pp: int, tp: int = 1, **kw: Any) -> Any:
    args: dict[str, Any] = {"engine_version": "0.34.0", "max_model_len": 32768, "enable_prefix_caching": False,
                            "kv_cache_memory_bytes": POOL, "tensor_parallel_size": tp, **kw}  # fmt: skip
    return plan_model(str(path), "h100", "vllm-gpu", pipeline_parallel_size=pp, **args)


# AI21-Jamba-1.5-Mini: 32 layers, attention where i % 8 == 4 (4, 12, 20, 28), Mamba1 mixers elsewhere (28).
# Mamba1 state at TP 1 (mamba_utils.mamba1_state_shape, bf16): conv 8,192 x 3 + SSM 8,192 x 16 = 155,648 elements
# x 2 B = 311,296 B. Attention: 8 KV heads x 128 x 2 (K, V) x 2 B = 4,096 B per token. 0.34.0 'none' mode: alignment
# max(16, block 64) = 64, block = 64 x cdiv(311,296, 64 x 4,096) = 128, page = 128 x 4,096 = 524,288 B.
# Whole-model groups: 4 attention vs 28 Mamba layers (28 >= 1.5 x 4): group_size 4, 1 attention group and 7 Mamba
# groups (Mamba list[i::7]). PP 1: 8 GiB // 524,288 // 4 = 4,096 blocks.
# PP 2 (layers 0-15, 16-31): each stage holds 2 attention layers and Mamba list positions 0-13 / 14-27, so 2 layers
# of each Mamba group: group_size 2, 8 GiB // 524,288 // 2 = 8,192 blocks. PP 4 (8 layers each): 1 attention layer
# and Mamba positions 7k .. 7k + 6, one per Mamba group: group_size 1, 16,384 blocks. Pages per request at 32,768:
# cdiv(32,768, 128) = 256 attention pages + 1 per Mamba group x 7 = 263, whatever the PP.
@pytest.mark.parametrize(("pp", "group_layers", "blocks"), [(1, 4, 4096), (2, 2, 8192), (4, 1, 16384)])
def test_jamba_stages_take_the_whole_model_groups(tmp_path: Path, pp: int, group_layers: int, blocks: int) -> None:
    plan = _plan(_checkpoint(tmp_path / "j", _config("ai21labs--AI21-Jamba-1.5-Mini.json")), pp)
    budget = plan.memory_budget
    assert budget is not None
    assert {layer.state_bytes for layer in plan.layers if layer.state_bytes} == {311_296}
    assert budget.min_block_size == 128 and budget.kv_groups == 8 and budget.group_layers == group_layers
    assert budget.block_bytes == 524_288 * group_layers
    assert plan.num_blocks == POOL // 524_288 // group_layers == blocks
    assert budget.blocks_per_request == 256 + 7
    assert plan.max_concurrency == pytest.approx(blocks / 263)


# Falcon-H1-7B: 44 layers, each an attention layer and a Mamba2 mixer (two vLLM layers, two specs of 44 each: equal
# counts, so group_size 44 and two groups). PP 2 splits 22 / 22, PP 4 11 / 11 / 11 / 11: group_size 22, 11.
# TP 2 halves the attention (2 KV heads -> 1 per rank) and the state alike, so the hybrid block is the PP 1 TP 2 one.
@pytest.mark.parametrize(("pp", "tp"), [(2, 1), (4, 1), (2, 2)])
def test_falcon_h1_parallel_hybrid_per_stage(tmp_path: Path, pp: int, tp: int) -> None:
    path = _checkpoint(tmp_path / "f", _config("tiiuae--Falcon-H1-7B-Instruct.partial.json"))
    whole, staged = _plan(path, 1, tp), _plan(path, pp, tp)
    assert whole.memory_budget is not None and staged.memory_budget is not None
    page = whole.memory_budget.block_bytes // 44
    assert whole.memory_budget.group_layers == 44 and whole.memory_budget.kv_groups == 2
    assert staged.memory_budget.min_block_size == whole.memory_budget.min_block_size  # one block per model
    assert staged.memory_budget.group_layers == 44 // pp and staged.memory_budget.block_bytes == page * (44 // pp)
    assert staged.num_blocks == POOL // page // (44 // pp)
    assert staged.memory_budget.blocks_per_request == whole.memory_budget.blocks_per_request


# Qwen3-Next-80B-A3B: 48 layers, full attention every 4th (12), Gated DeltaNet elsewhere (36): group_size 12, one
# attention group and 3 GDN groups (GDN list[i::3]). PP 2 x TP 2: each stage 6 attention layers and 18 GDN layers,
# 6 of each GDN group: group_size 6. PP 4: 3 and 9 (3 per group): group_size 3. The page is the PP 1 page at that TP.
@pytest.mark.parametrize(("pp", "tp", "group_layers"), [(2, 2, 6), (4, 1, 3), (4, 2, 3)])
def test_qwen3_next_gdn_stages(tmp_path: Path, pp: int, tp: int, group_layers: int) -> None:
    path = _checkpoint(tmp_path / "q", _config("Qwen--Qwen3-Next-80B-A3B-Instruct.json"))
    whole, staged = _plan(path, 1, tp), _plan(path, pp, tp)
    assert whole.memory_budget is not None and staged.memory_budget is not None
    page = whole.memory_budget.block_bytes // 12
    assert (whole.memory_budget.kv_groups, staged.memory_budget.kv_groups) == (4, 4)
    assert staged.memory_budget.min_block_size == whole.memory_budget.min_block_size
    assert staged.memory_budget.group_layers == group_layers
    assert staged.num_blocks == POOL // page // group_layers
    assert staged.memory_budget.blocks_per_request == whole.memory_budget.blocks_per_request


# NVIDIA-Nemotron-3-Nano-30B-A3B: 52 layers 'MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME': attention at 5,
# 12, 19, 26, 33, 42 (6), Mamba2 at the 23 'M' (the 'E' MoE layers hold no cache). Groups: group_size 6, 1 attention
# group and cdiv(23, 6) = 4 Mamba groups (list[i::4]: 6, 6, 6, 5 layers). PP 4 splits 13 layers each; per stage the
# attention group and the 4 Mamba groups hold 2 | 2, 2, 1, 1 (layers 0-12: attention 5, 12, Mamba positions 0-5),
# 1 | 1, 1, 2, 2 (13-25), 2 | 2, 1, 1, 1 (26-38) and 1 | 1, 2, 2, 1 (39-51): group_size 2 on each, 8 GiB // page // 2.
# Grouping each stage's own layers instead would give stage 13-25 one attention and six Mamba layers: 7 groups of 1.
def test_nemotron_h_stages_with_few_attention_layers(tmp_path: Path) -> None:
    config = _config("nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B.json")
    pattern = config["hybrid_override_pattern"]
    assert [i for i, c in enumerate(pattern) if c == "*"] == [5, 12, 19, 26, 33, 42] and pattern.count("M") == 23
    path = _checkpoint(tmp_path / "n", config, prefix="backbone.layers")
    whole, staged = _plan(path, 1), _plan(path, 4)
    assert whole.memory_budget is not None and staged.memory_budget is not None
    page = whole.memory_budget.block_bytes // 6
    assert (whole.memory_budget.kv_groups, staged.memory_budget.kv_groups) == (5, 5)
    assert staged.memory_budget.group_layers == 2 and staged.num_blocks == POOL // page // 2
    assert staged.memory_budget.blocks_per_request == whole.memory_budget.blocks_per_request


# An attention-free model at PP 2: FalconMambaForCausalLM is served by MambaForCausalLM, which implements SupportsPP
# (vllm/model_executor/models/mamba.py, 0.19.0 - 0.34.0): one group of every layer, projected: group_size = the
# stage's layers. Falcon-Mamba-7B: 64 layers of 311,296 B (8,192 x 3 + 8,192 x 16 elements x 2 B): PP 2 holds 32 a
# stage, 8 GiB // 311,296 // 32 = 862 state slots (PP 1: // 64 = 431).
def test_attention_free_mamba_at_pp2(tmp_path: Path) -> None:
    config = {"architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba", "hidden_size": 4096,
              "num_hidden_layers": 64, "expand": 2, "conv_kernel": 4, "state_size": 16, "intermediate_size": 8192,
              "vocab_size": 65024, "torch_dtype": "bfloat16", "max_position_embeddings": 32768}  # fmt: skip
    path = _checkpoint(tmp_path / "m", config, prefix="backbone.layers")
    assert _plan(path, 1).state_slots == POOL // 311_296 // 64 == 431
    assert _plan(path, 2).state_slots == POOL // 311_296 // 32 == 862


# What vLLM refuses: Mamba2ForCausalLM and Zamba2ForCausalLM do not implement SupportsPP (0.19.0 - 0.34.0), so
# ModelConfig.verify_with_parallel_config raises 'Pipeline parallelism is not supported for this model.'
def test_a_class_without_supports_pp_is_refused(tmp_path: Path) -> None:
    config = {"architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "hidden_size": 4096,
              "num_hidden_layers": 64, "expand": 2, "conv_kernel": 4, "state_size": 128, "n_groups": 8,
              "num_heads": 128, "head_dim": 64, "vocab_size": 32768, "torch_dtype": "bfloat16"}  # fmt: skip
    path = _checkpoint(tmp_path / "c", config, prefix="backbone.layers")
    assert _plan(path, 1).state_slots > 0
    with pytest.raises(ConfigError, match=r"Mamba2ForCausalLM does not implement SupportsPP") as err:
        _plan(path, 2)
    assert "\n" not in str(err.value)


def test_unread_release_and_mtp_are_refused_as_not_modelled(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path / "q", _config("Qwen--Qwen3-Next-80B-A3B-Instruct.json"))
    with pytest.raises(ConfigError, match=r"planned from vLLM 0\.19\.0 on"):
        _plan(path, 2, engine_version="0.17.0")
    with pytest.raises(ConfigError, match=r"MTP layers is not modelled"):
        _plan(path, 2, num_speculative_tokens=2)
