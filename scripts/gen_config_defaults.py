"""Write src/onechip/catalog/config_defaults.json: the defaults of each modelled model type's config class in
transformers, for the fields the planner reads (issue 27).

A published config.json may leave a field to its class default (google/gemma-3-4b-it states no head_dim and
no head counts); transformers fills it when vLLM loads the config, so the engine serves those defaults. The
planner never imports transformers (5 s, 470 MiB); it reads this table, and tests/unit/planner/
test_config_defaults.py regenerates it from the installed transformers and compares when the versions agree.

Read from each class: the dataclass field default (transformers 5 configs are dataclasses). A default of None
is no default (the class derives it, e.g. Llama's head_dim = hidden_size // heads, or has none): the planner's
own rule, or its one-line refusal, holds. Gemma 3's `sliding_window_pattern` is not a field: __post_init__ reads
it from the kwargs with 6 as default, so the generator takes it from an instance (`_sliding_window_pattern`).
Wrappers (gemma3, llama4, mllama, qwen3_vl, ...) name the model type of their `text_config` default.
`refuses_indivisible_hidden_size` marks a class that refuses a hidden_size num_attention_heads does not divide,
head_dim stated or not (probed on the class: _refuses_indivisible_hidden_size), which vLLM then fails to load.
`window_needs_flag` marks a class that keeps sliding_window only when use_sliding_window is true (Qwen2/Qwen3).
`tie_word_embeddings` is the class's default for that field (GPT2Config: true, LlamaConfig: false), which a file
that leaves it out is served with; absent where the class has no such dataclass field.

Run: python scripts/gen_config_defaults.py (with the pinned transformers installed)
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "onechip" / "catalog" / "config_defaults.json"
sys.path.insert(0, str(ROOT / "src"))

from onechip.planner.config import DEFAULTED_FIELDS, MODELLED, NESTED_FIELDS  # noqa: E402

# Wrappers whose text model is one of the modelled types (vision-language and multimodal configs).
WRAPPERS = (
    "gemma3", "gemma3n", "gemma4", "llama4", "mllama", "llava", "llava_next", "mistral3", "qwen3_vl", "qwen3_vl_moe",
    "qwen2_vl", "qwen2_5_vl", "glm4v", "glm4v_moe",
)  # fmt: skip


def _aliases(cls: type) -> dict[str, str]:
    """The class's attribute_map for the fields the planner reads: {standard name: the name the file gives it}
    (GPT2Config: num_attention_heads -> n_head), which transformers reads for the standard name; and where the map
    names the field the planner reads as the attribute behind another name, that name, which transformers sets it
    from (PreTrainedConfig.__setattr__: Step3p7TextConfig's file-side num_attention_groups sets num_key_value_heads)."""
    mapping = getattr(cls, "attribute_map", {})
    out = {name: source for name, source in mapping.items() if name in DEFAULTED_FIELDS}
    for alias, real in mapping.items():
        if real in DEFAULTED_FIELDS and alias not in DEFAULTED_FIELDS and real not in out:
            out[real] = alias
    return out


def _field_defaults(cls: type) -> dict[str, Any]:
    """Dataclass field defaults of the fields the planner reads; a field under another name is keyed by the name the
    planner reads (GPT-2's n_head 12 is num_attention_heads')."""
    if not dataclasses.is_dataclass(cls):
        return {}
    named = {source: name for name, source in _aliases(cls).items()}
    out: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        value = field.default
        name = field.name if field.name in DEFAULTED_FIELDS else named.get(field.name, field.name)
        if name in DEFAULTED_FIELDS and type(value) is int:
            out[name] = value
    return out


def _tie_word_embeddings(cls: type) -> bool | None:
    """The dataclass field default of tie_word_embeddings (a bool), None where the class has no such field."""
    if not dataclasses.is_dataclass(cls):
        return None
    field = next((f for f in dataclasses.fields(cls) if f.name == "tie_word_embeddings"), None)
    return field.default if field is not None and isinstance(field.default, bool) else None


def _sub_config_defaults(cls: type) -> dict[str, dict[str, int]]:
    """The dataclass field defaults of the nested fields the planner reads (NESTED_FIELDS), from the class's
    sub-config classes (DbrxConfig.sub_configs: attn_config DbrxAttentionConfig, ffn_config DbrxFFNConfig)."""
    out: dict[str, dict[str, int]] = {}
    for part, sub in getattr(cls, "sub_configs", {}).items():
        wanted = {own for (name, own) in NESTED_FIELDS if name == part}
        if wanted and dataclasses.is_dataclass(sub):
            found = {f.name: f.default for f in dataclasses.fields(sub) if f.name in wanted and type(f.default) is int}
            if found:
                out[part] = found
    return out


def _rope_defaults(cls: type) -> dict[str, float] | None:
    """The two RoPE bases of a class whose default_theta is {'global', 'local'} (transformers 5.19 Gemma3TextConfig
    .convert_rope_params_to_dict: full_attention's rope_theta = kwargs.pop('rope_theta', default_theta['global']),
    sliding_attention's = kwargs.pop('rope_local_base_freq', default_theta['local'])): vLLM's Gemma 3 builds one RoPE
    per base (planner.gpu_memory.rotary_cache_bytes sliding_default_rope). A single default_theta is left out: one
    base makes no second cache."""
    theta = getattr(cls, "default_theta", None)
    if not isinstance(theta, dict) or set(theta) != {"global", "local"}:
        return None
    return {"rope_theta": float(theta["global"]), "rope_local_base_freq": float(theta["local"])}


def _refuses_indivisible_hidden_size(cls: type) -> bool:
    """The class refuses a hidden_size num_attention_heads does not divide, head_dim given or not (LlamaConfig's
    validate_architecture: 'The hidden size (577) is not a multiple of the number of attention heads (9).'): probed
    on the class itself, 576 / 9 heads accepted and 577 refused, with and without head_dim 64."""
    probe = {"num_attention_heads": 9, "num_key_value_heads": 9}
    try:
        cls(hidden_size=576, **probe)
    except Exception:  # noqa: BLE001 (a class that refuses the baseline cannot be probed this way)
        return False
    for head_dim in ({}, {"head_dim": 64}):
        try:
            cls(hidden_size=577, **probe, **head_dim)
        except Exception as exc:  # noqa: BLE001 (transformers raises its own validation error types)
            if "multiple of the number of attention heads" not in str(exc):
                return False
        else:
            return False
    return True


def _window_needs_flag(cls: type) -> bool:
    """The class keeps a sliding_window only when use_sliding_window is true (Qwen2/Qwen3Config.__post_init__:
    'self.sliding_window = self.sliding_window if self.use_sliding_window else None'; Qwen2Moe's 'else 0', which vLLM
    reads as no window), probed on the class."""
    if not dataclasses.is_dataclass(cls) or "use_sliding_window" not in {f.name for f in dataclasses.fields(cls)}:
        return False
    try:
        return cls(use_sliding_window=False, sliding_window=64).sliding_window in (None, 0)
    except Exception:  # noqa: BLE001 (a class that refuses the probe is not known to gate the window)
        return False


def build() -> dict[str, Any]:
    """The config_defaults.json document from the installed transformers."""
    import transformers
    from transformers import CONFIG_MAPPING

    classes: dict[str, Any] = {}
    for model_type in sorted(MODELLED | set(WRAPPERS)):
        if model_type not in CONFIG_MAPPING:
            continue
        cls = CONFIG_MAPPING[model_type]
        entry: dict[str, Any] = {
            "class": cls.__name__,
            "defaults": _field_defaults(cls),
            "source": "src/" + cls.__module__.replace(".", "/") + ".py",
        }
        entry["refuses_indivisible_hidden_size"] = _refuses_indivisible_hidden_size(cls)
        entry["window_needs_flag"] = _window_needs_flag(cls)
        if _aliases(cls):
            entry["aliases"] = _aliases(cls)
        if _sub_config_defaults(cls):
            entry["sub_config_defaults"] = _sub_config_defaults(cls)
        if _rope_defaults(cls) is not None:
            entry["rope_defaults"] = _rope_defaults(cls)
        if _tie_word_embeddings(cls) is not None:
            entry["tie_word_embeddings"] = _tie_word_embeddings(cls)
        text_cls = getattr(cls, "sub_configs", {}).get("text_config")
        if text_cls is not None and getattr(text_cls, "model_type", ""):
            entry["text_model_type"] = text_cls.model_type
        if model_type in ("gemma3", "gemma3_text") and text_cls is None:
            entry["defaults"]["sliding_window_pattern"] = cls()._sliding_window_pattern
        classes[model_type] = entry
    return {
        "schema_version": "1",
        "description": (
            "Generated by scripts/gen_config_defaults.py from transformers' config classes: each model type's "
            "class and the defaults its dataclass fields give the fields the planner reads (a None default is no "
            "default). A config.json that leaves such a field out is served with this value (transformers fills "
            "it when vLLM loads the config). Do not edit by hand."
        ),
        "transformers_version": transformers.__version__,
        "source": f"huggingface/transformers v{transformers.__version__}, src/transformers/models/*/configuration_*.py",
        "date": "2026-12-01",
        "model_types": classes,
        # every model type the installed transformers defines: a config.json whose model_type is none of them loads
        # only through its repository's own code (auto_map), which vLLM runs only with --trust-remote-code
        "transformers_model_types": sorted(CONFIG_MAPPING.keys()),
        **_tokenizer_lists(),
    }


def _tokenizer_lists() -> dict[str, list[str]]:
    """What AutoTokenizer.from_pretrained loads without the repository's code (models/auto/tokenization_auto.py):
    the model types whose config class has a tokenizer registered (TOKENIZER_MAPPING) or whose auto_map it skips
    (MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS), and the tokenizer_class names
    tokenizer_class_from_name resolves (the mapping's classes, the backends and the tokenizer classes transformers
    exports). A tokenizer_config.json whose auto_map names an AutoTokenizer and which is neither loads only with
    trust_remote_code ('requires you to execute the tokenizer file'; planner.source.tokenizer_remote_code)."""
    import transformers
    from transformers import CONFIG_MAPPING
    from transformers.models.auto.tokenization_auto import (
        MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS,
        TOKENIZER_MAPPING,
        TOKENIZER_MAPPING_NAMES,
        tokenizer_class_from_name,
    )

    names = {n for n in TOKENIZER_MAPPING_NAMES.values() if isinstance(n, str)}
    names |= {n for n in dir(transformers) if n.endswith(("Tokenizer", "TokenizerFast", "Backend"))}
    found = set()
    for name in sorted(names):
        try:
            if tokenizer_class_from_name(name) is not None:
                found.add(name)
        except Exception:  # noqa: BLE001, S112 (a class whose dependency is missing is not loadable here)
            continue
    with_tokenizer = [
        t for t in CONFIG_MAPPING.keys() if t in MODELS_WITH_INCORRECT_HUB_TOKENIZER_CLASS
    ]  # auto_map skipped
    for model_type in CONFIG_MAPPING.keys():
        try:
            if CONFIG_MAPPING[model_type] in TOKENIZER_MAPPING:
                with_tokenizer.append(model_type)
        except Exception:  # noqa: BLE001, S112
            continue
    return {"tokenizer_model_types": sorted(set(with_tokenizer)), "tokenizer_classes": sorted(found)}


if __name__ == "__main__":
    OUT.write_text(json.dumps(build(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT}", file=sys.stderr)
