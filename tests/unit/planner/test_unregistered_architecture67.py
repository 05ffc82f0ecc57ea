"""A config.json whose architecture no release of vLLM's model registry names (issue 27: 'a refusal is for what truly
cannot be known'; planfuzz67). FLUX.2's text encoder ships as `architectures: ['Mistral3Model']` over a Ministral 3
text_config (text_encoder/config.json, quoted in public GitHub code found by the string '"architectures":
["Mistral3Model"]': hidden_size 3072, 26 layers, 32 heads, 8 KV heads, head_dim 128): the planner planned it as a
chat model without a word. vLLM 0.32.0 (the wheel in this venv) resolves such a name by its suffix: `--runner auto`
takes '*Model' to the pooling runner with convert 'embed' (vllm/config/model.py _SUFFIX_TO_DEFAULTS,
_get_default_runner_type), and ModelRegistry._normalize_arch swaps the suffix for the first registered one
(Mistral3ForConditionalGeneration), so the engine serves embeddings, not chat; a name no suffix swap registers goes to
the Transformers backend or is refused ('Model architectures [...] are not supported for now',
vllm/model_executor/models/registry.py inspect_model_cls, _raise_for_unsupported).
"""

from __future__ import annotations

from pathlib import Path

from factories import one_element_checkpoint
from onechip.planner import plan_model

MINISTRAL3_TEXT = {
    "model_type": "ministral3", "hidden_size": 3072, "num_hidden_layers": 26, "num_attention_heads": 32,
    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9216, "max_position_embeddings": 262144,
    "vocab_size": 131072, "rms_norm_eps": 1e-5, "tie_word_embeddings": True,
}  # fmt: skip
MISTRAL3 = {
    "architectures": ["Mistral3Model"], "model_type": "mistral3", "text_config": MINISTRAL3_TEXT,
    "vision_config": {"model_type": "pixtral", "hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16,
                      "head_dim": 64, "image_size": 1540, "patch_size": 14, "intermediate_size": 4096},
    "image_token_index": 10, "spatial_merge_size": 2, "torch_dtype": "bfloat16",
}  # fmt: skip
NAMES = [
    "language_model.model.embed_tokens.weight", "language_model.model.layers.0.self_attn.q_proj.weight",
    "vision_tower.transformer.layers.0.attention.q_proj.weight", "multi_modal_projector.linear_1.weight",
]  # fmt: skip


def _notes(plan: object) -> list[str]:
    return [w.message for w in plan.warnings if w.code == "architecture-release"]  # type: ignore[attr-defined]


def test_a_model_suffix_is_said_to_be_served_as_embeddings(tmp_path: Path) -> None:
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m", MISTRAL3, NAMES)), "h100", "vllm-gpu",
                      engine_version="0.32.0", max_model_len=8192)  # fmt: skip
    # the KV geometry is still the text_config's: 26 x 8 x 128 x (K, V) x 2 B
    assert plan.kv_bytes_per_token == 26 * 8 * 128 * 2 * 2
    [note] = _notes(plan)
    assert "Mistral3Model" in note and "no release read" in note
    assert "pooling" in note and "Mistral3ForConditionalGeneration" in note


def test_a_name_no_suffix_swap_registers_is_said_unknown(tmp_path: Path) -> None:
    config = {**MISTRAL3, "architectures": ["Mistral3Frobnicator"]}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m", config, NAMES)), "h100", "vllm-gpu",
                      engine_version="0.32.0", max_model_len=8192)  # fmt: skip
    [note] = _notes(plan)
    assert "Mistral3Frobnicator" in note and "Transformers backend" in note and "not known" in note


def test_a_registered_architecture_gets_no_such_note(tmp_path: Path) -> None:
    config = {**MISTRAL3, "architectures": ["Mistral3ForConditionalGeneration"]}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m", config, NAMES)), "h100", "vllm-gpu",
                      engine_version="0.32.0", max_model_len=8192)  # fmt: skip
    assert _notes(plan) == []


def test_a_name_after_a_registered_one_is_never_read_and_gets_no_note(tmp_path: Path) -> None:
    # qa67a: vLLM 0.32.0 serves the first architecture it resolves and stops there (registry.py inspect_model_cls:
    # 'for arch in architectures: ... return (model_info, arch)'), and `--runner auto` is the first registered one's
    # too (config/model.py _get_default_runner_type returns at the first registered or suffix-matched name): a
    # registered name first is served as text generation, and an unregistered one after it is never read. The note
    # said it served embeddings.
    config = {**MISTRAL3, "architectures": ["Mistral3ForConditionalGeneration", "Mistral3Model"]}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m", config, NAMES)), "h100", "vllm-gpu",
                      engine_version="0.32.0", max_model_len=8192)  # fmt: skip
    assert _notes(plan) == []


def test_a_name_before_a_registered_one_is_still_said(tmp_path: Path) -> None:
    # the unregistered name first sets the runner (its '*Model' suffix: pooling) and is resolved first
    config = {**MISTRAL3, "architectures": ["Mistral3Model", "Mistral3ForConditionalGeneration"]}
    plan = plan_model(str(one_element_checkpoint(tmp_path / "m", config, NAMES)), "h100", "vllm-gpu",
                      engine_version="0.32.0", max_model_len=8192)  # fmt: skip
    [note] = _notes(plan)
    assert "Mistral3Model" in note and "pooling" in note
