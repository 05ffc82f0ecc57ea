"""What one host holds and which block sizes the attention backends take, on the vLLM GPU engine.

TP x PP beyond the largest host the catalog names is warned (no source gives a per-card maximum: a GPU key is one
card); the attention heads must divide by TP on every platform (vllm/config/model.py verify_with_parallel_config).
From vLLM 0.18 `--block-size` takes any positive integer, and the attention backend the platform picks declares
the sizes it can use (engines.json kernel_block_sizes, read in the 0.19.0 sdist): none can use it -> refused, a
slower one is picked -> warned, the release not read -> warned.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from factories import SMOLLM2_CONFIG, sized_checkpoint
from onechip import catalog
from onechip.errors import ConfigError
from onechip.planner import plan_model

# Llama-3-8B's attention: 32 query heads, 8 KV heads (divide TP 1 - 32), vocabulary 128,256 (a multiple of 64 x 32)
LLAMA_LIKE = {**SMOLLM2_CONFIG, "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
              "head_dim": 128, "num_hidden_layers": 4, "vocab_size": 128256}  # fmt: skip


def _plan(tmp_path: Path, chip: str, config: dict | None = None, **fields):  # type: ignore[no-untyped-def]
    path = sized_checkpoint(tmp_path / "ckpt", config or LLAMA_LIKE, 2 * 2**30)
    return plan_model(str(path), chip, "vllm-gpu", max_model_len=4096, multimodal=False, **fields)


def _codes(plan, code: str) -> list:  # type: ignore[no-untyped-def]
    return [w for w in plan.warnings if w.code == code]


def test_the_largest_host_is_the_largest_the_catalog_names() -> None:
    # the figure is read from the machine types the catalog prices (a3-ultragpu-8g, a4-highgpu-8g), not chosen
    named = [
        int(found.group(1))
        for chip in catalog.billing_skus().chips.values()
        if (found := re.search(r"-(\d+)g\b", chip.machine_type or ""))
    ]
    assert max(named) == catalog.accelerators().largest_host_gpus


@pytest.mark.parametrize(("tp", "pp", "warned"), [(8, 1, False), (16, 1, True), (4, 4, True), (4, 2, False)])
def test_tp_x_pp_past_the_largest_named_host_is_warned_with_its_source(tmp_path, tp, pp, warned) -> None:
    # `plan --chip w7900 --tensor-parallel-size 16` planned 16 cards on one host without a word
    plan = _plan(tmp_path, "radeon-pro-w7900", tensor_parallel_size=tp, pipeline_parallel_size=pp)
    notes = _codes(plan, "beyond-one-host")
    assert bool(notes) == warned
    if warned:
        assert f"= {tp * pp} radeon-pro-w7900 cards" in notes[0].message
        assert "largest_host_gpus" in notes[0].source and "vllm/config/parallel.py" in notes[0].source


def test_heads_that_do_not_divide_by_tp_are_refused_on_a_gpu_too(tmp_path) -> None:
    # SmolLM2's 9 heads at TP 16: vLLM's ModelConfig.verify_with_parallel_config refuses it on every platform
    with pytest.raises(ConfigError, match=r"must be divisible by tensor parallel size \(16\)"):
        _plan(tmp_path, "radeon-pro-w7900", SMOLLM2_CONFIG, tensor_parallel_size=16)


def test_a_block_size_only_flex_attention_takes_is_warned_on_cuda(tmp_path) -> None:
    # 0.19.0: FLASH_ATTN, FLASHINFER and TRITON_ATTN need multiples of 16; FLEX_ATTENTION takes any (slower)
    plan = _plan(tmp_path, "l4", block_size=8, engine_version="0.19.0")
    (note,) = _codes(plan, "block-size-backend")
    assert "FLEX_ATTENTION" in note.message and "get_supported_kernel_block_sizes" in note.source
    assert plan.serve.block_size.value == 8  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("chip", "fields", "why"),
    [("l4", {"kv_cache_dtype": "fp8"}, "--kv-cache-dtype fp8, not FLEX_ATTENTION's"),
     ("radeon-pro-w7900", {}, "ROCm")],
)  # fmt: skip
def test_a_block_size_no_backend_takes_is_refused(tmp_path, chip, fields, why) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"({why}) takes it")):
        _plan(tmp_path, chip, block_size=24, engine_version="0.19.0", **fields)


@pytest.mark.parametrize(("block", "version"), [(48, "0.19.0"), (256, "0.19.0"), (8, "0.17.0"), (1, "0.11.0")])
def test_multiples_of_16_and_the_older_parser_choices_say_nothing(tmp_path, block, version) -> None:
    # releases before 0.18 take their Literal choices (engines.json block_size_choices: 8 and 1 among them)
    plan = _plan(tmp_path, "l4", block_size=block, engine_version=version)
    assert not _codes(plan, "block-size-backend")


@pytest.mark.parametrize("version", [None, "0.18.0", "0.20.0"])
def test_a_release_whose_backends_were_not_read_is_warned(tmp_path, version) -> None:
    plan = _plan(tmp_path, "l4", block_size=8, **({"engine_version": version} if version else {}))
    (note,) = _codes(plan, "block-size-backend")
    assert "were not read" in note.message and "in 0.19.0 no backend but FLEX_ATTENTION" in note.message


# DeepSeek-V2-Lite's attention (MLA): a 512-wide latent and 64 rope dims cached per token, 16 heads
MLA_LIKE = {"architectures": ["DeepseekV2ForCausalLM"], "model_type": "deepseek_v2", "hidden_size": 2048,
            "num_hidden_layers": 4, "num_attention_heads": 16, "num_key_value_heads": 16, "kv_lora_rank": 512,
            "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128, "vocab_size": 102400,
            "n_routed_experts": 64, "num_experts_per_tok": 6, "max_position_embeddings": 163840,
            "dtype": "bfloat16"}  # fmt: skip


def test_an_mla_model_gets_no_any_size_backend_on_cuda(tmp_path) -> None:
    # the MLA backends of 0.19.0 declare multiples of 16 (FLASH_ATTN_MLA, TRITON_MLA) or 32 - 128: no FLEX fallback
    with pytest.raises(ConfigError, match=re.escape("(MLA) takes it")):
        _plan(tmp_path, "h100", MLA_LIKE, block_size=8, engine_version="0.19.0")
    assert not _codes(_plan(tmp_path / "64", "h100", MLA_LIKE, block_size=64, engine_version="0.19.0"),
                      "block-size-backend")  # fmt: skip
