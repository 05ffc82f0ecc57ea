"""Step3 (Step3TextForCausalLM, model_type step3_text; Step3VLForConditionalGeneration, step3_vl), which the planner
refused as unmodelled until 2026-12-06 though vLLM serves it.

No copy of stepfun-ai/step3's config.json was found; the fields below are the Hub model card's table (search: 'Step3
model card', stepfun-ai/step3-fp8 README.md: 61 layers, hidden 7168, 64 query heads, head dimension 256, low-rank query
dimension 2048, 48 experts, 3 selected, 65536 max context), which vLLM's own Step3TextConfig repeats as its defaults
(vllm/transformers_utils/configs/step3_vl.py, 0.34.0 sdist). Expected figures are worked by hand from
vllm/model_executor/models/step3_text.py of the same sdist, lines named.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factories import one_element_checkpoint
from onechip.planner import plan_model
from onechip.planner.source import config_from_dict
from onechip.schemas.plan import Plan

STEP3_TEXT = {"architectures": ["Step3TextForCausalLM"], "model_type": "step3_text", "hidden_size": 7168,
              "num_attention_heads": 64, "num_attention_groups": 1, "num_hidden_layers": 61, "head_dim": 256,
              "share_q_dim": 2048, "moe_num_experts": 48, "moe_top_k": 3, "max_seq_len": 65536,
              "torch_dtype": "bfloat16"}  # fmt: skip
_NAMES = ["model.embed_tokens.weight", "model.layers.0.self_attn.qkv_proj.weight", "lm_head.weight"]


def _plan(tmp_path: Path, config: dict[str, Any], **kwargs: Any) -> Plan:
    tmp_path.mkdir(exist_ok=True)
    directory = one_element_checkpoint(tmp_path / "ckpt", config, _NAMES)
    return plan_model(str(directory), "h100", "vllm-gpu", engine_version="0.34.0", **kwargs)


# Step3TextDecoderLayer (lines 234-246) builds Step3TextAttention with num_kv_heads=1 whatever the file says and
# head_dim=config.head_dim; its K and V come out of a ReplicatedLinear (lines 172-178) and Attention gets
# self.num_kv_heads = 1 on every rank (lines 201-207): each of TP ranks caches the one head of 256, K and V, bf16
STEP3_LAYER_BYTES = 1 * 2 * 256 * 2


def test_step3_caches_one_replicated_kv_head_of_256(tmp_path: Path) -> None:
    plan = _plan(tmp_path / "tp1", STEP3_TEXT, max_model_len=8192)
    assert {(x.attention_type, x.kv_heads, x.head_dim) for x in plan.layers} == {("full", 1, 256)}
    assert plan.kv_bytes_per_token == 61 * STEP3_LAYER_BYTES == 62_464
    # num_attention_groups is not read for the cache: 4 there still caches the one head
    assert (
        _plan(tmp_path / "groups", {**STEP3_TEXT, "num_attention_groups": 4}, max_model_len=8192).kv_bytes_per_token
        == 62_464
    )
    # at TP 4 each rank holds the head (bytes over all ranks)
    plan4 = _plan(tmp_path / "tp4", STEP3_TEXT, max_model_len=8192, tensor_parallel_size=4)
    assert plan4.kv_bytes_per_token == 4 * 61 * STEP3_LAYER_BYTES


def test_step3_length_is_max_seq_len_and_class_defaults_fill_the_rest(tmp_path: Path) -> None:
    # vLLM derives max_model_len from max_seq_len among its keys (model_arch_config_convertor.py
    # derive_max_model_len_and_key, lines 375-405); Step3TextConfig's defaults (step3_vl.py lines 41-56) fill a file
    # that leaves head_dim and max_seq_len out: 256 and 65536
    lean = {k: v for k, v in STEP3_TEXT.items() if k not in ("head_dim", "max_seq_len")}
    config = config_from_dict(lean, "config.json")
    assert config.text["head_dim"] == 256 and config.text["max_seq_len"] == 65536
    assert _plan(tmp_path, STEP3_TEXT).max_model_len == 65536


def test_step3_vl_reads_its_text_config(tmp_path: Path) -> None:
    # Step3VLConfig builds text_config as Step3TextConfig (step3_vl.py lines 163-168), and step3_vl.py builds its
    # language model as Step3TextForCausalLM over it
    text = {k: v for k, v in STEP3_TEXT.items() if k not in ("architectures", "torch_dtype")}
    vl = {"architectures": ["Step3VLForConditionalGeneration"], "model_type": "step3_vl", "text_config": text,
          "torch_dtype": "bfloat16"}  # fmt: skip
    config = config_from_dict(vl, "config.json")
    assert config.family == "step3_text" and config.text["num_key_value_heads"] == 1


def test_step3_vl_weighs_its_downsamplers_and_projector_as_the_tower(tmp_path: Path) -> None:
    # step3_vl.py builds vision_model, vit_downsampler, vit_downsampler2 and vit_large_projector inside
    # _mark_tower_model (lines 536-559), and maps 'model.' / 'lm_head.' to its language model (lines 497-501)
    from onechip.planner.weights import VISION_TOWER, component_of

    for name in ("vision_model.embeddings.patch_embedding.weight", "vit_downsampler.weight",
                 "vit_downsampler2.weight", "vit_large_projector.weight"):  # fmt: skip
        assert component_of(name) == VISION_TOWER
