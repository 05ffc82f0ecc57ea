"""Models vLLM serves through its Transformers backend build no RoPE cos/sin cache of vLLM's.

The backend instantiates the transformers model class (AutoModel.from_config under init_on_device_without_buffers,
vllm/model_executor/models/transformers/base.py; transformers.py before 0.13.0) and swaps in vLLM's linear,
attention and norm layers; nothing in it calls get_rope or registers a cos_sin_cache (the 0.10.1, 0.11.0, 0.13.0,
0.17.0, 0.20.0, 0.24.0, 0.27.1, 0.28.0 and 0.32.0 sdists). The transformers rotary embedding it keeps holds only
inv_freq (rotary_dim / 2 float32 values) and computes cos and sin per forward. Which architectures the release
serves that way: engines.json transformers_backend_rules (registry.py _TRANSFORMERS_SUPPORTED_MODELS, which
_VLLM_MODELS unpacks after the native classes, so it wins)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from factories import BOOTLOGS, sized_checkpoint
from onechip.planner import plan_model
from onechip.planner.gpu_memory import rotary_cache_bytes

# the fixture leaves max_position_embeddings out; 32,768 is SmolLM3Config's default (catalog/config_defaults.json)
SMOLLM3 = json.loads((BOOTLOGS / "configs" / "HuggingFaceTB--SmolLM3-3B.json").read_text(encoding="utf-8"))
SMOLLM3 |= {"max_position_embeddings": 32768}
WEIGHTS = 6_150_000_000


def _budget_weights(tmp_path: Path, architecture: str, version: str) -> int:
    config = {**SMOLLM3, "architectures": [architecture]}
    path = sized_checkpoint(tmp_path / f"{architecture}-{version}", config, WEIGHTS)
    plan = plan_model(str(path), "h100", max_model_len=8192, engine_version=version)
    assert plan.memory_budget is not None
    return plan.memory_budget.weights_bytes


@pytest.mark.parametrize("version", ["0.10.1", "0.32.0"])
def test_smollm3_on_the_transformers_backend_holds_no_rope_cache(tmp_path: Path, version: str) -> None:
    rope = rotary_cache_bytes(SMOLLM3, dtype_bytes=2)
    assert rope == 32768 * 128 * 2  # 8 MiB: what a native class would hold (positions x head_dim x bf16)
    # the same checkpoint under a native class (LlamaForCausalLM reads the same geometry) holds the cache
    native = _budget_weights(tmp_path, "LlamaForCausalLM", version)
    assert _budget_weights(tmp_path, "SmolLM3ForCausalLM", version) == native - rope


def test_a_class_moved_to_the_backend_keeps_its_cache_before_the_move(tmp_path: Path) -> None:
    # Starcoder2ForCausalLM is native up to 0.24.x and in _TRANSFORMERS_SUPPORTED_MODELS from 0.25.0 (registry.py)
    rope = rotary_cache_bytes(SMOLLM3, dtype_bytes=2)
    for version, held in (("0.24.0", rope), ("0.25.0", 0)):
        native = _budget_weights(tmp_path, "LlamaForCausalLM", version)
        assert _budget_weights(tmp_path, "Starcoder2ForCausalLM", version) == native - rope + held
