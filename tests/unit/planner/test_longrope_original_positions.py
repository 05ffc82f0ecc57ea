"""The max_model_len vLLM serves a LongRoPE model when none is given: `getattr(hf_config,
'original_max_position_embeddings', derived_max_model_len)` (vllm/config/model.py _get_and_verify_max_len, 0.12.0,
0.26.0 and 0.34.0 sdists; 0.11.0 served the derived length), an attribute of the loaded config. Phi-3 / Phi-4-mini
files state it at the top level, not inside rope_scaling, and transformers' Phi3Config declares it (default 4096) and
copies it into rope_parameters over the file's
('Phi3 ... save `original_max_position_embeddings` field ... outside rope parameters ... we give priority to
`self.original_max_position_embeddings`', modeling_rope_utils.standardize_rope_params, transformers 5.19.0 wheel).

Until 2026-12-06 the planner read the field inside rope_scaling only, and planned Phi-4-mini-instruct at its 131,072
positions where vLLM serves 4,096.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from factories import sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.core import model_positions
from onechip.planner.source import config_from_dict

# microsoft/Phi-4-mini-instruct's config.json geometry and RoPE fields, as a public test trims it ('Trimmed from
# phi-4-mini/config.json. phi3 keeps `original_max_position_embeddings` at the top level', search-index file id
# 70214471913), its 48-entry factor lists (rotary dim 128 x 0.75 / 2) as ones; the same top-level placement is in
# Phi-3-vision-128k-instruct's config.json (search-index file id 14987825177)
PHI4_MINI: dict[str, Any] = {
    "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192,
    "num_hidden_layers": 32, "num_attention_heads": 24, "num_key_value_heads": 8, "vocab_size": 200064,
    "max_position_embeddings": 131072, "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.75,
    "rope_scaling": {"type": "longrope", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48},
    "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
}  # fmt: skip


def _positions(config: dict[str, Any]) -> tuple[int, int]:
    text = config_from_dict(config, "config.json").text
    got = model_positions(text, "phi3", "0.34.0")
    assert got is not None
    return got.limit, got.default


def test_the_top_level_original_positions_are_the_default_length() -> None:
    # LongRoPE positions are already scaled: the limit stays 131,072; the default is the top-level 4,096
    assert _positions(PHI4_MINI) == (131072, 4096)


def test_phi3_config_class_default_and_priority_over_rope_scaling() -> None:
    # a phi3 file that leaves the field out gets Phi3Config's default, 4096 (configuration_phi3.py, transformers
    # 5.19.0), which standardize_rope_params also writes over a value inside rope_scaling (8192 here)
    lean = {k: v for k, v in PHI4_MINI.items() if k != "original_max_position_embeddings"}
    assert _positions(lean) == (131072, 4096)
    inside = lean | {"rope_scaling": PHI4_MINI["rope_scaling"] | {"original_max_position_embeddings": 8192}}
    assert _positions(inside) == (131072, 4096)


def test_the_plan_serves_the_original_positions(tmp_path: Path) -> None:
    path = sized_checkpoint(tmp_path / "phi4", PHI4_MINI, 7_672_000_000)
    planned = plan_model(str(path), "h100", engine_version="0.34.0")
    assert planned.max_model_len == 4096
    said = [w.message for w in planned.warnings if w.code == "longrope-default-length"]
    assert len(said) == 1 and "--max-model-len up to its max_position_embeddings 131072" in said[0]
    # a stated --max-model-len up to the limit is still served
    assert plan_model(str(path), "h100", engine_version="0.34.0", max_model_len=131072).max_model_len == 131072


def test_the_legacy_su_type_is_longrope() -> None:
    # Phi3Config.convert_rope_params_to_dict reads the legacy 'su' type as 'longrope' (transformers 5.19.0), as
    # Phi-3-mini-128k-instruct's first config.json named it
    su = PHI4_MINI | {"rope_scaling": {"type": "su", "long_factor": [1.0] * 48, "short_factor": [1.0] * 48}}
    assert _positions(su) == (131072, 4096)


def test_a_repository_config_class_keeps_the_top_level_field() -> None:
    # microsoft/Phi-4-multimodal-instruct's model_type phi4mm is its repository's Phi4MMConfig (transformers defines no
    # phi4mm: catalog/config_defaults.json transformers_model_types), which keeps the top-level field it is given as an
    # attribute (PretrainedConfig), the one vLLM's getattr reads; the file states 4096 there as Phi-4-mini does
    text = PHI4_MINI | {"architectures": ["Phi4MMForCausalLM"], "model_type": "phi4mm"}
    got = model_positions(text, "phi4mm", "0.34.0")
    assert got is not None and (got.limit, got.default) == (131072, 4096)


def test_before_0_12_0_vllm_serves_the_whole_positions() -> None:
    # vLLM 0.11.0's _get_and_verify_max_len (vllm/config/model.py of its sdist): 'if max_model_len is None:
    # max_model_len = int(derived_max_model_len)', no LongRoPE branch; 0.12.0's sdist has 'For LongRoPE, default to
    # original_max_position_embeddings'. A plan for 0.11.0 defaults to the 131,072 positions, one for 0.12.0 to 4,096
    text = config_from_dict(PHI4_MINI, "config.json").text
    older, newer = (model_positions(text, "phi3", version) for version in ("0.11.0", "0.12.0"))
    assert older is not None and (older.limit, older.default) == (131072, 131072)
    assert newer is not None and (newer.limit, newer.default) == (131072, 4096)
