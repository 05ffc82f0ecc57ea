"""A config.json that leaves sliding_window out gets its class default where vLLM reads a window (issue 27).
transformers 5.19's Olmo3Config, Cohere2Config and Exaone4Config default sliding_window to 4096 and derive
layer_types in __post_init__ (sliding three layers in four); vLLM 0.32.0 reads a layer's window from those
layer_types (the Transformers backend for Olmo3, commandr.py's config.sliding_window + 1, exaone4.py), so the engine
serves 4096-token windows where the planner refused Olmo3 and Cohere2 ('sliding_window' is missing) and planned
EXAONE 4.0 all full. Qwen2Config / Qwen3Config default it too but keep it only under use_sliding_window (their
__post_init__: 'if self.use_sliding_window else None', default False): those files stay as they were planned;
MistralConfig derives no layer_types, so vLLM reads its default 4096 as every layer's window. Shapes: the published
checkpoints' (allenai/Olmo-3-7B-style MHA 32 x 128; CohereForAI c4ai-command-r7b-12-2024's GQA 32 / 8;
EXAONE-4.0-32B's 40 / 8 heads of 128, pattern 4; Qwen2.5-7B's 28 / 4 of 128 with max_window_layers 28; Qwen3-8B's 32
/ 8 of 128; Mistral-7B-v0.3's 32 / 8 of 128), fewer layers.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from factories import plan_app
from onechip.planner.geometry import kv_geometry
from onechip.planner.source import config_from_dict, text_config_of
from onechip.schemas import Plan

OLMO3 = {"architectures": ["Olmo3ForCausalLM"], "model_type": "olmo3", "hidden_size": 4096, "intermediate_size": 11008,
         "num_attention_heads": 32, "num_key_value_heads": 32, "num_hidden_layers": 4, "vocab_size": 100278,
         "max_position_embeddings": 65536, "torch_dtype": "bfloat16"}  # fmt: skip
COHERE2 = {"architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 4, "sliding_window_pattern": 4,
           "max_position_embeddings": 8192, "vocab_size": 256000}  # fmt: skip
EXAONE4 = {"architectures": ["Exaone4ForCausalLM"], "model_type": "exaone4", "hidden_size": 5120, "head_dim": 128,
           "num_attention_heads": 40, "num_key_value_heads": 8, "num_hidden_layers": 4, "sliding_window_pattern": 4,
           "max_position_embeddings": 131072, "vocab_size": 102400}  # fmt: skip
QWEN2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584, "num_attention_heads": 28,
         "num_key_value_heads": 4, "num_hidden_layers": 4, "max_window_layers": 28, "use_sliding_window": False,
         "max_position_embeddings": 32768, "vocab_size": 152064}  # fmt: skip
QWEN3 = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096, "head_dim": 128,
         "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 4, "max_window_layers": 36,
         "use_sliding_window": False, "max_position_embeddings": 40960, "vocab_size": 151936}  # fmt: skip
MISTRAL = {"architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
           "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 4,
           "max_position_embeddings": 32768, "vocab_size": 32768}  # fmt: skip


def _layers(config: dict[str, Any]) -> list[tuple[str, int, int | None]]:
    """(kind, bf16 KV bytes per token, window) per layer, as read_config and the KV geometry give them."""
    text = text_config_of(config_from_dict(config, "config.json"))
    return [(x.attention_type, x.bytes_per_token, x.sliding_window)
            for x in kv_geometry(text, kv_dtype_bytes=2).layers]  # fmt: skip


def _plan_json(tmp_path: Path, config: dict[str, Any]) -> Plan:
    """`onechip plan DIR --chip h100 --max-model-len 8192 --json` on config.json and a header-only checkpoint."""
    directory = tmp_path / "ckpt"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    header = json.dumps({"model.embed_tokens.weight": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}})
    (directory / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header.encode())
    argv = ["plan", str(directory), "--chip", "h100", "--max-model-len", "8192", "--json"]
    result = CliRunner().invoke(plan_app(), argv)
    assert result.exit_code == 0, result.output
    return Plan.model_validate_json(result.output)


@pytest.mark.parametrize(
    ("config", "per_token", "windows"),
    [
        # Olmo3Config: 'sliding_attention' if (i + 1) % 4 != 0; 2 x 32 x 128 x 2 bytes
        (OLMO3, 2 * 32 * 128 * 2, [4096, 4096, 4096, None]),
        # Cohere2Config: sliding unless (i + 1) % sliding_window_pattern == 0; vLLM 0.32.0 commandr.py: window + 1
        (COHERE2, 2 * 8 * 128 * 2, [4097, 4097, 4097, None]),
        # Exaone4Config: sliding_window 4096 (not None), so the pattern 4 holds
        (EXAONE4, 2 * 8 * 128 * 2, [4096, 4096, 4096, None]),
    ],
    ids=["olmo3", "cohere2", "exaone4"],
)
def test_a_left_out_window_is_the_class_default_on_sliding_layers(
    tmp_path: Path, config: dict[str, Any], per_token: int, windows: list[int | None]
) -> None:
    read = config_from_dict(config, "config.json")
    assert read.defaults_applied["sliding_window"] == 4096
    plan = _plan_json(tmp_path, config)
    assert [layer.sliding_window for layer in plan.layers] == windows
    assert {layer.bytes_per_token for layer in plan.layers} == {per_token}
    (warning,) = [w for w in plan.warnings if w.code == "config-class-defaults"]
    assert "sliding_window=4096" in warning.message


def test_exaone4_stating_its_layer_types_gets_the_default_on_its_sliding_layers() -> None:
    types = ["sliding_attention"] * 3 + ["full_attention"]
    assert _layers({**EXAONE4, "layer_types": types}) == [("sliding", 4096, 4096)] * 3 + [("full", 4096, None)]
    # a stated null is no window (Exaone4Config keeps None): every layer full, nothing defaulted
    read = config_from_dict({**EXAONE4, "sliding_window": None}, "config.json")
    assert "sliding_window" not in read.defaults_applied
    assert _layers({**EXAONE4, "sliding_window": None}) == [("full", 4096, None)] * 4


@pytest.mark.parametrize(
    ("config", "per_token"),
    [(QWEN2, 2 * 4 * 128 * 2), (QWEN3, 2 * 8 * 128 * 2)],
    ids=["qwen2", "qwen3"],
)
def test_a_file_without_sliding_turned_on_keeps_every_layer_full(config: dict[str, Any], per_token: int) -> None:
    # Qwen2/Qwen3Config.__post_init__: sliding_window = ... if use_sliding_window else None; the plan is the one
    # before (3584 // 28 = 128 for Qwen2.5)
    read = config_from_dict(config, "config.json")
    assert "sliding_window" not in read.defaults_applied and "sliding_window" not in read.text
    assert _layers(config) == [("full", per_token, None)] * 4
    unstated = {k: v for k, v in config.items() if k != "use_sliding_window"}  # its class default False
    assert _layers(unstated) == [("full", per_token, None)] * 4


def test_qwen3_with_sliding_turned_on_gets_the_default_window() -> None:
    # use_sliding_window true: Qwen3Config keeps sliding_window 4096; with every layer 'sliding_attention' vLLM 0.32.0
    # sets CacheConfig.sliding_window to it (arg_utils.py: 'Only set CacheConfig.sliding_window if the model is all
    # sliding window'), the window each Qwen3 attention layer takes
    config = {**QWEN3, "use_sliding_window": True, "layer_types": ["sliding_attention"] * 4}
    assert config_from_dict(config, "config.json").defaults_applied["sliding_window"] == 4096
    assert _layers(config) == [("sliding", 2 * 8 * 128 * 2, 4096)] * 4


def test_a_mistral_file_without_the_field_slides_every_layer_at_the_class_default() -> None:
    # MistralConfig (transformers 5.19) defaults sliding_window to 4096 and derives no layer_types, so vLLM 0.32.0 sets
    # CacheConfig.sliding_window = model_config.get_sliding_window() (engine/arg_utils.py create_engine_config: 'Only
    # set CacheConfig.sliding_window if the model is all sliding window') and every Mistral attention layer takes it
    # (model_executor/layers/attention/attention.py: no per-layer window, so cache_config.sliding_window). A stated null
    # keeps every layer full.
    read = config_from_dict(MISTRAL, "config.json")
    assert read.defaults_applied.get("sliding_window") == 4096
    assert _layers(MISTRAL) == [("sliding", 2 * 8 * 128 * 2, 4096)] * 4
    assert _layers({**MISTRAL, "sliding_window": None}) == [("full", 2 * 8 * 128 * 2, None)] * 4
